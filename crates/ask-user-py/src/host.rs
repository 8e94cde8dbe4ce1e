//! `ask_user._native.Host`: one live session of an [`ask_user_host::Host`], over the JSONL store
//! of a state directory, PostgreSQL, or memory.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

use ask_user_host::{Host, HostRuntime, SessionOptions};
use ask_user_pg::LiveLedger;
use pyo3::prelude::*;
use serde_json::{Value, json};
use session_log::{JsonlStore, MemoryStore};
use tokio_util::sync::CancellationToken;
use tool_ask_user::{AskUserConfig, ToolDefinition, ToolOutcome};
use user_questions::{AnswerBatch, AnswerItem, CallId, Provenance, UserMessage};
use user_questions_projection::Standing;

use crate::answerer::{self, EVENT_LOOP, Registration};
use crate::error;

/// The tool's configuration for a mode and a timeout in seconds, read and checked as the
/// tool reads its JSON configuration.
pub(crate) fn config(mode: &str, timeout: i64) -> PyResult<AskUserConfig> {
    AskUserConfig::from_json(&json!({"mode": mode, "timeout": timeout}).to_string())
        .map_err(error::config)
}

/// `{"name", "description", "parameters"}`.
pub(crate) fn definition_json(definition: &ToolDefinition) -> String {
    json!({
        "name": definition.name,
        "description": definition.description,
        "parameters": definition.parameters,
    })
    .to_string()
}

/// A message the model reads, as `{"id", "kind", "callId", "text"}`.
fn message_json(message: &UserMessage) -> Value {
    json!({
        "id": message.id,
        "kind": message.source.kind,
        "callId": message.source.call_id.as_ref().map(CallId::as_str),
        "text": message.text(),
    })
}

fn messages_json(messages: &[UserMessage]) -> String {
    Value::Array(messages.iter().map(message_json).collect()).to_string()
}

/// A call's result as `{"text", "isError", "pending", "value", "error"}`.
fn outcome_json(outcome: &ToolOutcome) -> String {
    json!({
        "text": outcome.text,
        "isError": outcome.is_error,
        "pending": outcome.is_pending(),
        "value": outcome.value,
        "error": outcome.error,
    })
    .to_string()
}

/// One live session. See `ask_user.Host` for the API people use.
#[pyclass(name = "Host", module = "ask_user._native", frozen)]
pub struct PyHost {
    pub(crate) host: Arc<Host>,
    pub(crate) runtime: HostRuntime,
    /// The cancellation of each call running now.
    calls: Arc<Mutex<HashMap<String, CancellationToken>>>,
    /// The database's ledger wired into the session, when it lives in PostgreSQL.
    _ledger: Option<LiveLedger>,
}

impl PyHost {
    fn new(runtime: HostRuntime, host: Host, ledger: Option<LiveLedger>) -> Self {
        Self {
            host: Arc::new(host),
            runtime,
            calls: Arc::default(),
            _ledger: ledger,
        }
    }

    fn calls(&self) -> std::sync::MutexGuard<'_, HashMap<String, CancellationToken>> {
        self.calls.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[pymethods]
impl PyHost {
    /// A session in memory: nothing survives the process.
    #[staticmethod]
    fn in_memory(mode: &str, timeout: i64, session: &str) -> PyResult<Self> {
        let config = config(mode, timeout)?;
        let _enter = crate::bridge::runtime().enter();
        let runtime =
            HostRuntime::new(MemoryStore::new(), Some(config)).map_err(|e| error::host(&e))?;
        let host = runtime
            .create(session, SessionOptions::named(session))
            .map_err(|e| error::host(&e))?;
        Ok(Self::new(runtime, host, None))
    }

    /// The session `session` in the JSONL log `<state_dir>/<session>.jsonl`, created or opened
    /// (resume repair closes what a process that died left open); or, with `postgres`, in that
    /// database (the tables in `schema`), the ledger wired in.
    #[staticmethod]
    #[pyo3(signature = (session, state_dir, mode, timeout, postgres=None, schema=None))]
    fn open(
        py: Python<'_>,
        session: &str,
        state_dir: PathBuf,
        mode: &str,
        timeout: i64,
        postgres: Option<String>,
        schema: Option<String>,
    ) -> PyResult<Self> {
        let config = config(mode, timeout)?;
        let session = session.to_owned();
        py.detach(move || {
            let _enter = crate::bridge::runtime().enter();
            let options = SessionOptions::named(session.as_str());
            if let Some(url) = postgres {
                let schema = schema.as_deref().unwrap_or(ask_user_pg::DEFAULT_SCHEMA);
                let store = ask_user_pg::connect(&url, schema, true)
                    .map_err(|e| error::ask_error(e.code(), &e))?;
                let runtime =
                    HostRuntime::new(store.clone(), Some(config)).map_err(|e| error::host(&e))?;
                let (host, _resumed) = runtime
                    .open_or_create(&session, options)
                    .map_err(|e| error::host(&e))?;
                let ledger = store.attach_live(&url, &session, &host, ask_user_pg::LIVE_POLL);
                return Ok(Self::new(runtime, host, Some(ledger)));
            }
            std::fs::create_dir_all(&state_dir)
                .map_err(|e| error::ask_error("STORE", format!("{}: {e}", state_dir.display())))?;
            let runtime = HostRuntime::new(JsonlStore::new(state_dir), Some(config))
                .map_err(|e| error::host(&e))?;
            let (host, _resumed) = runtime
                .open_or_create(&format!("{session}.jsonl"), options)
                .map_err(|e| error::host(&e))?;
            Ok(Self::new(runtime, host, None))
        })
    }

    /// The session's id.
    #[getter]
    fn session_id(&self) -> String {
        self.host.session_id().to_string()
    }

    /// The session's name in its store (a log's file name).
    #[getter]
    fn name(&self) -> String {
        self.host.name().to_owned()
    }

    /// The log file, for a JSONL session.
    #[getter]
    fn log_path(&self) -> Option<PathBuf> {
        self.host.log_path()
    }

    /// `"timed"` or `"legacy"`.
    #[getter]
    fn mode(&self) -> &'static str {
        self.runtime.tool().mode().as_str()
    }

    /// The tool's definition as JSON.
    fn definition(&self) -> String {
        definition_json(self.runtime.tool().definition())
    }

    /// Starts a turn: the late replies it claimed, as JSON, which its first step admits.
    fn begin_turn(&self, py: Python<'_>) -> PyResult<String> {
        let messages = py
            .detach(|| self.host.begin_turn())
            .map_err(|e| error::host(&e))?;
        Ok(messages_json(&messages))
    }

    /// Starts a turn that claims no late reply (`take_late` takes them).
    fn begin_turn_unclaimed(&self, py: Python<'_>) -> PyResult<()> {
        py.detach(|| self.host.begin_turn_unclaimed())
            .map_err(|e| error::host(&e))
    }

    /// Starts a step.
    fn begin_step(&self, py: Python<'_>) -> PyResult<()> {
        py.detach(|| self.host.begin_step())
            .map_err(|e| error::host(&e))
    }

    /// Logs the request header (once; again when the tools change).
    fn log_request_header(&self, py: Python<'_>) -> PyResult<()> {
        py.detach(|| self.host.log_request_header())
            .map_err(|e| error::host(&e))
    }

    /// Whether a step is open.
    fn step_open(&self) -> bool {
        self.host.step_open()
    }

    /// Ends the step.
    fn end_step(&self, py: Python<'_>) -> PyResult<()> {
        py.detach(|| self.host.end_step())
            .map_err(|e| error::host(&e))
    }

    /// Ends the turn with `reason` (`completed`, `error`, `cancelled`).
    fn end_turn(&self, py: Python<'_>, reason: &str) -> PyResult<()> {
        py.detach(|| self.host.end_turn(reason))
            .map_err(|e| error::host(&e))
    }

    /// Logs the assistant's text of the step.
    fn assistant_text(&self, py: Python<'_>, text: &str) -> PyResult<()> {
        py.detach(|| self.host.assistant_text(text))
            .map_err(|e| error::host(&e))
    }

    /// Runs the tool call `call_id` with the model's argument text: an awaitable of the result
    /// as JSON. Python answerers run on `event_loop`. [`Self::cancel_call`] cancels it, which
    /// withdraws the question and logs the call cancelled.
    fn call_tool<'py>(
        &self,
        py: Python<'py>,
        call_id: String,
        arguments: String,
        event_loop: Py<PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        {
            // Taken now (its token replaced below), so that a second call of the id is refused.
            let mut calls = self.calls();
            if calls.contains_key(&call_id) {
                return Err(error::ask_error(
                    "DUPLICATE_CALL_ID",
                    format!("the call {call_id:?} is running"),
                ));
            }
            calls.insert(call_id.clone(), CancellationToken::new());
        }
        let host = Arc::clone(&self.host);
        let calls = Arc::clone(&self.calls);
        let event_loop = Arc::new(event_loop);
        let bound_loop = event_loop.bind(py).clone();
        // The future's token is the call's: cancelling the asyncio future, or `cancel_call`,
        // withdraws the question, and the call is logged cancelled before the future ends.
        let taken = call_id.clone();
        let future = crate::bridge::future(py, &bound_loop, move |token| {
            calls
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .insert(call_id.clone(), token.clone());
            EVENT_LOOP.scope(event_loop, async move {
                let id = CallId::from(call_id.as_str());
                let outcome = host.call_tool(&id, &arguments, token).await;
                calls
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .remove(&call_id);
                outcome
                    .map(|outcome| Some(outcome_json(&outcome)))
                    .map_err(|e| error::parts(e.code(), &e))
            })
        });
        if future.is_err() {
            self.calls().remove(&taken);
        }
        future
    }

    /// The calls running now.
    fn running(&self) -> Vec<String> {
        let mut running: Vec<String> = self.calls().keys().cloned().collect();
        running.sort();
        running
    }

    /// Cancels the running call `call_id`: `False` when none runs.
    fn cancel_call(&self, call_id: &str) -> bool {
        self.calls()
            .get(call_id)
            .map(CancellationToken::cancel)
            .is_some()
    }

    /// Where the call stands: `open`, `continued`, `settled` or `unknown`.
    fn standing(&self, call_id: &str) -> &'static str {
        match self.host.projection().standing(&CallId::from(call_id)) {
            Standing::Open(_) => "open",
            Standing::Continued(_) => "continued",
            Standing::Settled(_) => "settled",
            Standing::Unknown => "unknown",
        }
    }

    /// The open and continued questions, as JSON `[{"callId", "state", "questions"}]`.
    fn active(&self) -> String {
        let state = self.host.projection();
        let active: Vec<Value> = state
            .view()
            .active
            .iter()
            .map(|question| {
                json!({
                    "callId": question.call_id.as_str(),
                    "state": match question.state {
                        user_questions_projection::ActiveState::Open => "open",
                        user_questions_projection::ActiveState::Continued => "continued",
                    },
                    "questions": question.questions,
                })
            })
            .collect();
        Value::Array(active).to_string()
    }

    /// The answers a settled call got, as JSON, and who gave them.
    fn settled(&self, call_id: &str) -> Option<String> {
        let state = self.host.projection();
        match state.standing(&CallId::from(call_id)) {
            Standing::Settled(settled) => Some(
                json!({"answers": settled.answers, "provenance": settled.provenance}).to_string(),
            ),
            _ => None,
        }
    }

    /// Queues a late answer (JSON answer items) to a continued call, given by `answerer`.
    fn queue_late(
        &self,
        py: Python<'_>,
        call_id: &str,
        answers: &str,
        answerer: &str,
    ) -> PyResult<()> {
        let items: Vec<AnswerItem> =
            serde_json::from_str(answers).map_err(|e| error::bad_json("answers", &e))?;
        py.detach(|| {
            self.host.late().queue(
                &CallId::from(call_id),
                AnswerBatch::new(items),
                Provenance::human(answerer),
            )
        })
        .map(|_| ())
        .map_err(|e| error::refusal(&e))
    }

    /// The late replies not admitted yet, as JSON.
    fn waiting(&self) -> String {
        messages_json(&self.host.late().waiting())
    }

    /// Takes waiting replies (one call's, or all) into the current step, admitted: JSON.
    #[pyo3(signature = (call_id=None))]
    fn take_late(&self, py: Python<'_>, call_id: Option<&str>) -> PyResult<String> {
        let call_id = call_id.map(CallId::from);
        let messages = py
            .detach(|| self.host.late().take(call_id.as_ref()))
            .map_err(|e| error::host(&e))?;
        Ok(messages_json(&messages))
    }

    /// Settles a waiting reply in a turn of its own: JSON, or `None` when nothing waits.
    fn settle(&self, py: Python<'_>, call_id: &str) -> PyResult<Option<String>> {
        let message = py
            .detach(|| self.host.late().settle(&CallId::from(call_id)))
            .map_err(|e| error::host(&e))?;
        Ok(message.map(|m| message_json(&m).to_string()))
    }

    /// An awaitable that completes when the session's inbox may have something new.
    fn wait_for_input<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let host = Arc::clone(&self.host);
        let event_loop = crate::bridge::running_loop(py)?;
        crate::bridge::future(py, &event_loop, move |cancelled| async move {
            tokio::select! {
                () = host.wait_for_input() => {}
                () = cancelled.cancelled() => {}
            }
            Ok(None)
        })
    }

    /// Registers `answerer` (an async callable) in the session's waterfall under `name`, after
    /// those registered before it.
    fn add_answerer(&self, answerer: Py<PyAny>, name: &str) -> PyResult<Registration> {
        answerer::register(&self.runtime, answerer, name)
    }

    /// Registers a rule answering every question with `answers` (JSON answer items): the
    /// benchmark's answerer, the same as `rust_round_trips` uses.
    fn _add_fixed_answerer(&self, answers: &str) -> PyResult<Registration> {
        let items: Vec<AnswerItem> =
            serde_json::from_str(answers).map_err(|e| error::bad_json("answers", &e))?;
        Ok(answerer::fixed_on(self.runtime.seam(), items))
    }

    /// Links the session to the machine's inbox for `state_dir` (see `ask_user.Host.link_inbox`).
    fn link_inbox(&self, state_dir: PathBuf) -> crate::inbox::PyInboxLink {
        crate::inbox::link(&self.host, &self.runtime, state_dir)
    }
}
