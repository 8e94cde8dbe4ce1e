#![doc = include_str!("../README.md")]

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use ask_user_host::{Host, HostError, ToolResult, ToolSpec};
use rig_agent::agent::{
    AgentHook, DispatchAction, DispatchEvent, HookContext, OutcomeAction, OutcomeEvent, RunSettled,
    SettledOutcome,
};
use rig_agent::bus::Dispatcher;
use rig_agent::tool::{
    DynamicTool, IntoToolOutput, Tool, ToolContext, ToolExecutionError, ToolOutput,
};
use rig_core::completion::Message;
use rig_core::effect::{EffectId, EffectKind};
use rig_core::error::{ErrorKind, ErrorReport};
use rig_core::message::{AssistantContent, ToolName};
use serde_json::Value;
use serde_json::value::RawValue;
use user_questions::{CallId, CancellationToken, UserMessage};

pub use rig_agent;
pub use rig_core;

/// How a tool of the application could not be wrapped.
#[derive(Debug, thiserror::Error)]
pub enum AdapterError {
    /// The host could not log the change of tools.
    #[error(transparent)]
    Host(#[from] HostError),
    /// A tool's name is empty.
    #[error("a tool needs a name")]
    EmptyToolName,
}

/// `ask_user_question` and the application's other tools for a rig agent, over one [`Host`]
/// (one session, so one agent: the calls it records are told apart by rig's per-agent dispatch
/// ids). Clones share the host.
///
/// Give the agent [`AskUser::tool`] (or [`AskUser::dynamic_tool`]), the other tools wrapped by
/// [`AskUser::record`] / [`AskUser::record_fn`], and [`AskUser::hook`]; before each prompt,
/// [`AskUser::begin_turn`] and its messages appended to the history.
#[derive(Clone)]
pub struct AskUser {
    inner: Arc<Inner>,
}

struct Inner {
    host: Arc<Host>,
    cancel: CancellationToken,
    calls: Mutex<Calls>,
    others: Mutex<Vec<ToolSpec>>,
    /// How many `ask_user_question` calls are running in their tasks ([`AskUser::idle`]).
    running: tokio::sync::watch::Sender<usize>,
    minted: AtomicU64,
}

/// What the hook learnt of the calls before they run.
#[derive(Default)]
struct Calls {
    /// The provider's call id of each tool dispatch, by the dispatch's id on the agent's bus.
    by_dispatch: HashMap<EffectId, String>,
    /// The model's raw argument text of each call, by the provider's call id.
    arguments: HashMap<String, String>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl AskUser {
    /// The adapter over `host`, whose tool (legacy or timed) is the one the model is offered.
    pub fn new(host: Arc<Host>) -> Self {
        Self::with_cancel(host, CancellationToken::new())
    }

    /// The same, with `cancel` the parent of every call's token: cancelling it cancels the calls
    /// in flight, which are logged as cancelled.
    pub fn with_cancel(host: Arc<Host>, cancel: CancellationToken) -> Self {
        Self {
            inner: Arc::new(Inner {
                host,
                cancel,
                calls: Mutex::default(),
                others: Mutex::default(),
                running: tokio::sync::watch::Sender::new(0),
                minted: AtomicU64::new(0),
            }),
        }
    }

    /// The host.
    pub fn host(&self) -> &Arc<Host> {
        &self.inner.host
    }

    /// `ask_user_question` as a rig tool: the host's tool's name, description and JSON schema,
    /// run through [`Host::call_tool`] in a task of its own (see [`AskTool`]).
    pub fn tool(&self) -> AskTool {
        AskTool {
            inner: Arc::clone(&self.inner),
        }
    }

    /// `ask_user_question` as a rig [`DynamicTool`] (the same definition and call as
    /// [`AskUser::tool`]; rig hands a dynamic tool parsed arguments, which this serialises back
    /// when the hook did not see the model's own text).
    pub fn dynamic_tool(&self) -> DynamicTool {
        let definition = self.inner.host.tool().definition();
        let inner = Arc::clone(&self.inner);
        DynamicTool::new_with_context(
            rig_agent::tool::tool_name::<AskTool>(),
            definition.description.clone(),
            definition.parameters.clone(),
            move |context, arguments| {
                let (call_id, raw) = inner.resolve(context, &arguments.to_string());
                Box::pin(ask(Arc::clone(&inner), call_id, raw))
            },
        )
    }

    /// The hook that records the agent's run in the host's log: every model call is a step
    /// (`step/start`, `request/header` when first or changed, the assistant's text), every tool
    /// call keeps the provider's call id and the model's raw argument text, and a run that ends
    /// ends the turn (`completed`, or `error`). Add it to the agent (`AgentBuilder::add_hook`)
    /// or to each prompt.
    pub fn hook(&self) -> RecordingHook {
        RecordingHook {
            inner: Arc::clone(&self.inner),
        }
    }

    /// Another rig tool of the application, recorded: each call's `tool/call` and `tool/result`
    /// are in the log ([`Host::record_tool_call`]), and the host is told of the tool, so the
    /// `request/header` lists it.
    pub fn record<T: Tool>(&self, tool: T) -> Result<Recorded<T>, AdapterError> {
        self.add_spec(ToolSpec::new(
            T::NAME,
            tool.description(),
            tool.parameters(),
        ))?;
        Ok(Recorded {
            tool,
            inner: Arc::clone(&self.inner),
        })
    }

    /// A tool of the application given as a closure over the raw argument text, run through
    /// [`Host::run_tool`]: the [`ToolResult`] it gives is what the log records and the model
    /// reads. The host is told of `spec`.
    pub fn record_fn<F, Fut>(&self, spec: ToolSpec, run: F) -> Result<DynamicTool, AdapterError>
    where
        F: Fn(String) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ToolResult> + Send + 'static,
    {
        let name = ToolName::new(spec.name.clone()).map_err(|_| AdapterError::EmptyToolName)?;
        self.add_spec(spec.clone())?;
        let inner = Arc::clone(&self.inner);
        let run = Arc::new(run);
        Ok(DynamicTool::new_with_context(
            name,
            spec.description.clone(),
            spec.parameters.clone(),
            move |context, arguments| {
                let (call_id, raw) = inner.resolve(context, &arguments.to_string());
                let inner = Arc::clone(&inner);
                let run = Arc::clone(&run);
                let name = spec.name.clone();
                Box::pin(async move {
                    let work = run(raw.clone());
                    let result = inner
                        .host
                        .run_tool(&call_id, &name, &raw, work)
                        .await
                        .map_err(host_error)?;
                    model_output(&result.text, result.is_error)
                })
            },
        ))
    }

    fn add_spec(&self, spec: ToolSpec) -> Result<(), HostError> {
        let specs = {
            let mut others = lock(&self.inner.others);
            others.retain(|s| s.name != spec.name);
            others.push(spec);
            others.clone()
        };
        self.inner.host.set_tools(specs)
    }

    /// Starts the host's next turn, to be called before each prompt: the late replies queued
    /// since (answers to questions that went pending) are claimed, admitted by the turn's first
    /// step (which settles their questions in the log), and come back as user messages: append
    /// them to the history the prompt is given. A late reply's text is the `answer_to_pending_question` message.
    pub fn begin_turn(&self) -> Result<Vec<Message>, HostError> {
        begin_turn(&self.inner.host)
    }

    /// Ends the turn in the log, for a prompt that did not run to its end (its future dropped:
    /// await [`AskUser::idle`] first, so the calls it cancelled have logged their results). A
    /// run that ends on its own is ended by the hook.
    pub fn end_turn(&self, reason: &str) -> Result<(), HostError> {
        self.inner.host.end_turn(reason)
    }

    /// Resolves once every `ask_user_question` call started so far has logged its result (a
    /// call whose future rig dropped finishes in its own task, cancelled).
    pub async fn idle(&self) {
        let mut running = self.inner.running.subscribe();
        // The sender lives as long as `self`: the wait ends only at zero.
        let _ = running.wait_for(|n| *n == 0).await;
    }
}

impl Inner {
    /// The call id and raw argument text of the call `context` belongs to: the provider's id
    /// and text as the hook saw them, or, without the hook, an id minted here and rig's
    /// arguments (`rig_arguments`, its serialisation of the parsed object).
    fn resolve(&self, context: &ToolContext, rig_arguments: &str) -> (CallId, String) {
        let dispatch = context
            .scope::<Dispatcher>()
            .and_then(|dispatcher| dispatcher.parent());
        let mut calls = lock(&self.calls);
        let known = dispatch.and_then(|id| calls.by_dispatch.remove(&id));
        if let Some(call_id) = known {
            let raw = calls
                .arguments
                .remove(&call_id)
                .filter(|raw| same_json(raw, rig_arguments))
                .unwrap_or_else(|| rig_arguments.to_owned());
            (CallId::from(call_id.as_str()), raw)
        } else {
            // No hook saw the model call this one belongs to: its step is begun here (under the
            // lock, so concurrent calls share it), for the call to be in one. A step that cannot
            // be begun (no open turn) leaves the call's own order error to say so.
            if !self.host.step_open() {
                let _ = self.host.begin_step();
            }
            drop(calls);
            let n = self.minted.fetch_add(1, Ordering::Relaxed) + 1;
            let id = format!("rig-{}-{n}", self.host.session_id());
            (CallId::from(id.as_str()), rig_arguments.to_owned())
        }
    }
}

/// Whether two JSON texts are the same value (the model's text and rig's serialisation of it:
/// a hook that patched the arguments makes them differ, and the tool runs with the patch).
fn same_json(a: &str, b: &str) -> bool {
    match (
        serde_json::from_str::<Value>(a),
        serde_json::from_str::<Value>(b),
    ) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

fn host_error(error: HostError) -> ToolExecutionError {
    ToolExecutionError::other(error.to_string()).with_source(error)
}

/// The text the model reads, as rig's tool output: the text itself, or for an error a failure
/// whose model output is that same text (rig marks the result `is_error`).
fn model_output(text: &str, is_error: bool) -> Result<ToolOutput, ToolExecutionError> {
    if is_error {
        Err(ToolExecutionError::other(text).with_model_output(ToolOutput::text(text)))
    } else {
        Ok(ToolOutput::text(text))
    }
}

/// One `ask_user_question` call, cancel safe: it runs in a task of its own with a child token of
/// the adapter's; dropping this future cancels that token (a drop guard), and the task logs the
/// call's cancelled result instead of leaving a `tool/call` without one.
async fn ask(
    inner: Arc<Inner>,
    call_id: CallId,
    raw: String,
) -> Result<ToolOutput, ToolExecutionError> {
    let cancel = inner.cancel.child_token();
    let guard = cancel.clone().drop_guard();
    let host = Arc::clone(&inner.host);
    // Counted from before the spawn until the task's end, however it ends (the count drops with
    // the task's future).
    let running = Running::start(&inner.running);
    let task = tokio::spawn(async move {
        let _running = running;
        host.call_tool(&call_id, &raw, cancel).await
    });
    let joined = task.await;
    drop(guard.disarm());
    match joined {
        Ok(Ok(outcome)) => model_output(&outcome.text, outcome.is_error),
        Ok(Err(error)) => Err(host_error(error)),
        Err(error) => Err(ToolExecutionError::other(format!(
            "the ask_user_question call's task ended: {error}"
        ))),
    }
}

/// One running `ask_user_question` task in [`Inner::running`]'s count, until dropped.
struct Running(tokio::sync::watch::Sender<usize>);

impl Running {
    fn start(count: &tokio::sync::watch::Sender<usize>) -> Self {
        count.send_modify(|n| *n += 1);
        Self(count.clone())
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.0.send_modify(|n| *n -= 1);
    }
}

/// `ask_user_question` as a typed rig tool ([`AskUser::tool`]): its description and parameters
/// are the host's tool's (legacy or timed), read when rig asks. Its arguments stay JSON text
/// (`Box<RawValue>`): the host parses and validates them, and logs the model's own text.
#[derive(Clone)]
pub struct AskTool {
    inner: Arc<Inner>,
}

impl Tool for AskTool {
    const NAME: &'static str = user_questions::TOOL_NAME;
    type Args = Box<RawValue>;
    type Output = ToolOutput;
    type Error = ToolExecutionError;

    fn description(&self) -> String {
        self.inner.host.tool().definition().description.clone()
    }

    fn parameters(&self) -> Value {
        self.inner.host.tool().definition().parameters.clone()
    }

    fn call(
        &self,
        context: &mut ToolContext,
        args: Self::Args,
    ) -> impl Future<Output = Result<ToolOutput, ToolExecutionError>> + Send {
        let (call_id, raw) = self.inner.resolve(context, args.get());
        ask(Arc::clone(&self.inner), call_id, raw)
    }
}

/// Another rig tool of the application, recorded in the host's log ([`AskUser::record`]): the
/// same name, description and parameters; each call is logged as `tool/call` (the provider's id,
/// the model's raw text) and `tool/result` (the text the model reads). The tool runs in rig's
/// future: a call rig drops is logged as `TOOL_OUTCOME_UNKNOWN` (the host's rule for a dropped
/// call).
pub struct Recorded<T> {
    tool: T,
    inner: Arc<Inner>,
}

impl<T> Recorded<T> {
    /// The wrapped tool.
    pub fn inner(&self) -> &T {
        &self.tool
    }
}

impl<T: Tool + 'static> Tool for Recorded<T> {
    const NAME: &'static str = T::NAME;
    type Args = Box<RawValue>;
    type Output = ToolOutput;
    type Error = ToolExecutionError;

    fn description(&self) -> String {
        self.tool.description()
    }

    fn parameters(&self) -> Value {
        self.tool.parameters()
    }

    async fn call(
        &self,
        context: &mut ToolContext,
        args: Self::Args,
    ) -> Result<ToolOutput, ToolExecutionError> {
        let (call_id, raw) = self.inner.resolve(context, args.get());
        let call = self
            .inner
            .host
            .record_tool_call(&call_id, T::NAME, &raw)
            .map_err(host_error)?;
        let outcome = match serde_json::from_str::<T::Args>(args.get()) {
            Ok(parsed) => self
                .tool
                .call(context, parsed)
                .await
                .map_err(|error| self.tool.map_error(error))
                .and_then(IntoToolOutput::into_tool_output),
            Err(error) => Err(ToolExecutionError::invalid_args(format!(
                "failed to parse tool arguments: {error}"
            ))
            .with_source(error)),
        };
        let logged = match &outcome {
            Ok(output) => ToolResult::ok(output.render()),
            Err(error) => ToolResult {
                text: error.model_output().render(),
                is_error: true,
                error: None,
                meta: None,
            },
        };
        call.finish(logged).map_err(host_error)?;
        outcome
    }
}

/// The hook of [`AskUser::hook`].
#[derive(Clone)]
pub struct RecordingHook {
    inner: Arc<Inner>,
}

impl RecordingHook {
    /// A model call is about to go out: the previous step ends, a new one starts, and the
    /// request header is logged (once, and again when the tools or the model changed).
    fn begin_step(&self) -> Result<(), HostError> {
        let host = &self.inner.host;
        host.end_step()?;
        host.begin_step()?;
        host.log_request_header()
    }

    /// The model answered: its text is logged, and each tool call's raw argument text is kept
    /// for the call's `tool/call`.
    fn model_answered(&self, choice: &[AssistantContent]) -> Result<(), HostError> {
        let mut text = String::new();
        {
            let mut calls = lock(&self.inner.calls);
            for block in choice {
                match block {
                    AssistantContent::Text(block) => text.push_str(&block.text),
                    AssistantContent::ToolCall(call) => {
                        let raw = call.native.as_ref().and_then(|native| {
                            native.item["function"]["arguments"]
                                .as_str()
                                .map(str::to_owned)
                        });
                        if let Some(raw) = raw {
                            calls.arguments.insert(call.id.to_string(), raw);
                        }
                    }
                    _ => {}
                }
            }
        }
        if text.is_empty() {
            Ok(())
        } else {
            self.inner.host.assistant_text(&text)
        }
    }
}

/// A failure to log stops the run: the log would no longer be the agent's history.
fn stop(error: &HostError) -> ErrorReport {
    ErrorReport::new(
        ErrorKind::Cancelled,
        format!("the session log could not be written: {error}"),
    )
}

impl AgentHook for RecordingHook {
    fn name(&self) -> Option<String> {
        Some("ask-user-rig".to_owned())
    }

    async fn on_dispatch(&self, _ctx: &HookContext, event: DispatchEvent<'_>) -> DispatchAction {
        match event.kind {
            EffectKind::Completion { .. } => {
                if let Err(error) = self.begin_step() {
                    return DispatchAction::Deny(stop(&error));
                }
            }
            EffectKind::ToolCall { .. } => {
                if let Some(call_id) = event.call_id {
                    lock(&self.inner.calls)
                        .by_dispatch
                        .insert(event.id, call_id.to_string());
                }
            }
            _ => {}
        }
        DispatchAction::Proceed
    }

    async fn on_outcome(&self, _ctx: &HookContext, event: OutcomeEvent<'_>) -> OutcomeAction {
        if let Some(response) = event.completion()
            && let Err(error) = self.model_answered(&response.choice)
        {
            return OutcomeAction::Replace(Err(stop(&error)));
        }
        OutcomeAction::Proceed
    }

    async fn on_run_settled(&self, _ctx: &HookContext, event: RunSettled<'_>) {
        let reason = match event.outcome {
            SettledOutcome::Response(_) => "completed",
            SettledOutcome::Error(_) => "error",
        };
        // Nothing is left to report a failure to: the next open's resume repair closes the turn.
        let _ = self.inner.host.end_turn(reason);
    }
}

/// A user message of the host (a late reply [`begin_turn`] claimed) as a rig message: its text
/// blocks joined.
pub fn user_message(message: &UserMessage) -> Message {
    let text: Vec<&str> = message.content.iter().filter_map(|b| b.as_text()).collect();
    Message::user(text.join("\n"))
}

/// Starts the host's next turn: the late replies queued since are claimed (the turn's first
/// step, when the model is first called, admits them into the log, which settles their
/// questions), and returned as rig user messages for the history of this turn's prompt
/// ([`AskUser::begin_turn`]).
///
/// # Errors
///
/// The host's, when the turn cannot be logged.
pub fn begin_turn(host: &Host) -> Result<Vec<Message>, HostError> {
    let replies = host.begin_turn()?;
    Ok(replies.iter().map(user_message).collect())
}
