//! One `ask_user_question` call: how it is taken ([`ask`]) and how it runs in its session
//! ([`run_call`]).
//!
//! In the stateless era (2026-07-28), a blocking call to a client that shows forms is asked
//! through a multi round-trip request (`mrtr.rs`): the first round returns the form, and the
//! second, which brings the answer back, runs the call. A timed call to a client that takes tasks
//! runs as a task (`tasks.rs`). Every other call runs at once, on its own request.
//!
//! A call runs `Host::call_tool` inside the task-local that names it (`inflight.rs`), so the
//! session's form answerer sends its form on the call's own request; the call's handler sends
//! that form and the progress notifications itself. A blocking call ends with its request; a
//! timed one only as a client's `notifications/cancelled` says (`cancels.rs`).

use std::sync::{Arc, Mutex};

use ask_user_host::HostError;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock,
    ProgressNotificationParam,
};
use rmcp::service::{ElicitationMode, PeerRequestOptions, RequestContext};
use rmcp::{ErrorData as McpError, RoleServer};
use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tool_ask_user::ToolOutcome;
use tracing::Instrument as _;
use user_questions::{CallId, TOOL_NAME};

use crate::cancels::CallCancel;
use crate::inflight::{CALL, InFlight};
use crate::session::Conn;
use crate::util::{elicit_request, error_result, knows_elicitation_mode};

/// The first version of the stateless era: no `initialize`, no server-to-client requests.
const STATELESS_ERA: &str = "2026-07-28";

/// Whether the request is one of the stateless revision (2026-07-28 or later).
pub(crate) fn is_stateless(context: &RequestContext<RoleServer>) -> bool {
    context
        .protocol_version()
        .is_some_and(|version| version.as_str() >= STATELESS_ERA)
}

/// `ask_user_question` in session `conn`: in the stateless era, a blocking call to a client that
/// shows forms is asked through a multi round-trip request (`mrtr.rs`); every other call runs at
/// once.
pub(crate) async fn ask(
    conn: &Arc<Conn>,
    request: CallToolRequestParams,
    context: RequestContext<RoleServer>,
) -> Result<CallToolResponse, McpError> {
    let arguments = Value::Object(request.arguments.clone().unwrap_or_default()).to_string();
    let stateless = is_stateless(&context);
    let timed = conn.server().runtime().tool().takes_late_answers();
    if stateless && !timed {
        if let Some(state) = request.request_state.as_deref() {
            // Boxed: held inline it would make every waiting call's task larger.
            return Box::pin(form_round_two(
                conn,
                state,
                request.input_responses.as_ref(),
                arguments,
                context,
            ))
            .await;
        }
        if request.input_responses.is_some() {
            return Err(McpError::invalid_params(
                "inputResponses without requestState: send back the requestState of the form's round",
                None,
            ));
        }
        if shows_forms(&context)
            && let Some(round) = form_round_one(conn, &arguments, &context)?
        {
            return Ok(round.into());
        }
    }
    if stateless
        && timed
        && context
            .client_capabilities()
            .is_some_and(|capabilities| capabilities.supports_tasks())
    {
        return Ok(start_task(Arc::clone(conn), arguments, context).into());
    }
    let run = Run {
        stateless,
        ..Run::default()
    };
    Ok(run_call(conn, arguments, context, run).await.into())
}

/// A timed call as a task (the tasks extension): it runs in the background, and the task is
/// returned at once for the client to poll.
fn start_task(
    conn: Arc<Conn>,
    arguments: String,
    context: RequestContext<RoleServer>,
) -> rmcp::model::CreateTaskResult {
    let call_id = conn.new_call_id(&principal(&context));
    let task = conn.server().tasks.start(call_id.as_str());
    let created = task.detailed().task;
    let run = Run {
        stateless: true,
        call_id: Some(call_id),
        prepared: None,
        task: Some(Arc::clone(&task)),
    };
    tokio::spawn(async move {
        let result = run_call(&conn, arguments, context, run).await;
        task.finish(&result);
    });
    rmcp::model::CreateTaskResult::new(created)
}

/// A form's first round: the form the call's form answerer would send, and the state sealed
/// for the second; nothing is written. `None` when the call has no form to show (arguments
/// the call refuses, questions no form holds): it then runs at once, as it would.
fn form_round_one(
    conn: &Conn,
    arguments: &str,
    context: &RequestContext<RoleServer>,
) -> Result<Option<rmcp::model::InputRequiredResult>, McpError> {
    let Some(key) = conn.server().state_key.as_ref() else {
        return Ok(None);
    };
    let Ok(questions) = conn.server().runtime().tool().questions(arguments) else {
        return Ok(None);
    };
    let style = context
        .protocol_version()
        .map_or(crate::form::FormStyle::Titled, |version| {
            crate::form::FormStyle::for_protocol(version.as_str())
        });
    let Some(params) = crate::answerer::form_params(&questions, style) else {
        return Ok(None);
    };
    let round = crate::mrtr::FormRound {
        v: 1,
        log: conn.log().to_owned(),
        session: conn.session_id().as_str().to_owned(),
        call: conn.new_call_id(&principal(context)).as_str().to_owned(),
        form: crate::mrtr::form_digest(&params),
        until_ms: 0,
    };
    let principal = principal(context);
    let binding = crate::mrtr::Binding {
        tool: TOOL_NAME,
        arguments,
        principal: &principal,
    };
    crate::mrtr::input_required(key, &round, params, &binding, std::time::SystemTime::now())
        .map(Some)
        .map_err(|error| McpError::internal_error(error.to_string(), None))
}

/// A form's second round: the state opened (refused, with nothing written, when it is not
/// this call's, has expired or was used), then the call run with the answer given.
async fn form_round_two(
    conn: &Arc<Conn>,
    state: &str,
    responses: Option<&rmcp::model::InputResponses>,
    arguments: String,
    context: RequestContext<RoleServer>,
) -> Result<CallToolResponse, McpError> {
    let refused =
        |error: crate::mrtr::RoundError| McpError::invalid_params(error.to_string(), None);
    let key = conn
        .server()
        .state_key
        .as_ref()
        .ok_or_else(|| refused(crate::mrtr::RoundError::NoKey))?;
    let principal = principal(&context);
    let binding = crate::mrtr::Binding {
        tool: TOOL_NAME,
        arguments: &arguments,
        principal: &principal,
    };
    let (round, answer) = crate::mrtr::open(
        key,
        state,
        responses,
        &binding,
        std::time::SystemTime::now(),
    )
    .map_err(refused)?;
    let conn = if round.log == conn.log() {
        Arc::clone(conn)
    } else {
        Conn::for_round(conn.server(), &round)
    };
    let call_id = CallId::from(round.call.clone());
    // One second round of a call at a time: a duplicate sent meanwhile is told it was used.
    let Some(_running) = RoundRuns::start(conn.server(), &round.call) else {
        return Err(refused(crate::mrtr::RoundError::Used(round.call)));
    };
    match knows_call(&conn, &call_id) {
        Ok(false) => {}
        Ok(true) => return Err(refused(crate::mrtr::RoundError::Used(round.call))),
        Err(error) => {
            return Ok(error_result(&format!("the session log cannot be used: {error}")).into());
        }
    }
    let prepared = crate::inflight::PreparedForm {
        form: round.form,
        answer,
    };
    let run = Run {
        stateless: true,
        call_id: Some(call_id),
        prepared: Some(prepared),
        task: None,
    };
    Ok(run_call(&conn, arguments, context, run).await.into())
}

/// A form's second round running in this process, taken off the server's set when it ends.
struct RoundRuns<'a> {
    server: &'a crate::state::ServerInner,
    call: String,
}

impl<'a> RoundRuns<'a> {
    /// `None` when the call's second round runs already.
    fn start(server: &'a crate::state::ServerInner, call: &str) -> Option<Self> {
        let mut rounds = user_questions::sync::lock_unpoisoned(&server.rounds);
        rounds.insert(call.to_owned()).then(|| Self {
            server,
            call: call.to_owned(),
        })
    }
}

impl Drop for RoundRuns<'_> {
    fn drop(&mut self) {
        user_questions::sync::lock_unpoisoned(&self.server.rounds).remove(&self.call);
    }
}

/// Whether the session's log already holds a call `call_id` (a form's second round sent
/// again): read, not opened, so nothing is written.
fn knows_call(conn: &Conn, call_id: &CallId) -> Result<bool, HostError> {
    struct Find<'a> {
        call_id: &'a CallId,
        found: bool,
    }
    impl session_log::LogVisitor for Find<'_> {
        fn line(&mut self, line: &session_log::Scanned<'_>) {
            if let session_log::Scanned::Record(record) = line
                && let Some(event) = record.record.event()
                && let session_log::EventBody::ToolCall(call) = &event.body
                && call.call_id.as_ref() == Some(self.call_id)
            {
                self.found = true;
            }
        }
    }
    let store = conn.server().runtime().store();
    if !store.exists(conn.log()).map_err(HostError::from)? {
        return Ok(false);
    }
    let mut find = Find {
        call_id,
        found: false,
    };
    store.read(conn.log(), &mut find).map_err(HostError::from)?;
    Ok(find.found)
}

/// How [`run_call`] runs a call.
#[derive(Default)]
struct Run {
    /// A request of the stateless revision: no form is sent as a request.
    stateless: bool,
    /// The call's id, given already (a form's first round, a task); else a new one.
    call_id: Option<CallId>,
    /// The form's answer of a form's first round.
    prepared: Option<crate::inflight::PreparedForm>,
    /// The task the call runs as.
    task: Option<Arc<crate::tasks::TaskEntry>>,
}

/// Runs one call of `ask_user_question` in `conn`'s session, as `run` says.
async fn run_call(
    conn: &Arc<Conn>,
    arguments: String,
    context: RequestContext<RoleServer>,
    run: Run,
) -> CallToolResult {
    let Run {
        stateless,
        call_id,
        prepared,
        task,
    } = run;
    conn.ensure_answerer(context.client_info().as_ref());
    let active = match conn.enter(true) {
        Ok(active) => active,
        Err(error) => return error_result(&format!("the session log cannot be used: {error}")),
    };
    let call_id = call_id.unwrap_or_else(|| conn.new_call_id(&principal(&context)));
    let timed = conn.server().runtime().tool().takes_late_answers();
    // A blocking call ends with its request, however that ends; a timed one only when the
    // client cancels it, and then as the reason says (withdrawn, or pending).
    let tokens = if let Some(task) = &task {
        // A task's request is over already: `tasks/cancel` withdraws it.
        CallCancel {
            cancel: task.cancel.clone(),
            gave_up: CancellationToken::new(),
        }
    } else if timed {
        conn.cancels().tokens(&context.id)
    } else {
        CallCancel {
            cancel: context.ct.clone(),
            gave_up: CancellationToken::new(),
        }
    };
    let protocol = context
        .protocol_version()
        .map(|version| version.as_str().to_owned());
    let (forms, mut requests) = mpsc::unbounded_channel();
    let in_flight = Arc::new(InFlight {
        session: Arc::downgrade(conn) as std::sync::Weak<Conn>,
        call_id: call_id.clone(),
        forms,
        form_mode: if stateless {
            prepared.is_some() || (task.is_some() && shows_forms(&context))
        } else {
            context
                .peer
                .supported_elicitation_modes()
                .contains(&ElicitationMode::Form)
        },
        form_style: protocol.as_deref().map_or(
            crate::form::FormStyle::Legacy,
            crate::form::FormStyle::for_protocol,
        ),
        session_id: conn.session_id().clone(),
        done: CancellationToken::new(),
        gave_up: tokens.gave_up.clone(),
        elicitation_mode: protocol.as_deref().is_some_and(knows_elicitation_mode),
        prepared: Mutex::new(prepared),
        task,
    });

    let progress = context.meta.get_progress_token();
    let every = conn.server().options().progress_interval;
    let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
    let mut reported = 0_u32;
    let outcome = {
        let call = CALL.scope(
            Arc::clone(&in_flight),
            active
                .host()
                .call_tool(&call_id, &arguments, tokens.cancel.clone())
                .instrument(tracing::info_span!("tools/call", %call_id)),
        );
        tokio::pin!(call);
        loop {
            tokio::select! {
                biased;
                outcome = &mut call => break outcome,
                // Boxed, as the progress note below: a future held inline makes every
                // waiting call's task as large as the largest of them (some 2 KB each).
                Some(send) = requests.recv() => {
                    Box::pin(deliver_form(&context, *send, in_flight.elicitation_mode)).await;
                }
                _ = ticks.tick(), if progress.is_some() => {
                    reported += 1;
                    if let Some(token) = &progress {
                        let mut note = ProgressNotificationParam::new(token.clone(), f64::from(reported));
                        note.message = Some("waiting for the person to answer".to_owned());
                        if let Err(error) = Box::pin(context.peer.notify_progress(note)).await {
                            tracing::debug!(%error, "a progress notification could not be sent");
                        }
                    }
                }
            }
        }
    };
    conn.cancels().forget(&context.id);
    in_flight.done.cancel();
    drop(active);
    match outcome {
        Ok(outcome) => result_of(&outcome),
        Err(error) => error_result(&format!("the call could not be logged: {error}")),
    }
}

/// Sends a form of a call's answerer to the client as an elicitation request on the call's own
/// stream, and hands the request's handle (or why it could not be sent) back to the answerer.
async fn deliver_form(
    context: &RequestContext<RoleServer>,
    send: crate::inflight::FormSend,
    elicitation_mode: bool,
) {
    let request = elicit_request(send.params, elicitation_mode);
    let delivered = context
        .peer
        .send_request_with_option(request, PeerRequestOptions::no_options())
        .await;
    let _ = send.reply.send(delivered);
}

/// The tool's one text block, as the model reads it anywhere; a pending result's notice
/// already says to call the companion later (the tool is worded for it over MCP).
fn result_of(outcome: &ToolOutcome) -> CallToolResult {
    let content = vec![ContentBlock::text(outcome.text.clone())];
    if outcome.is_error {
        CallToolResult::error(content)
    } else {
        CallToolResult::success(content)
    }
}

/// Whether the request's client shows forms (`elicitation` with `form`, or with neither mode:
/// the 2025-06-18 spelling of a form).
fn shows_forms(context: &RequestContext<RoleServer>) -> bool {
    context
        .client_capabilities()
        .is_some_and(|capabilities| declares_forms(&capabilities))
}

/// Whether the capabilities declare forms (`elicitation` with `form`, or with neither mode).
pub(crate) fn declares_forms(capabilities: &rmcp::model::ClientCapabilities) -> bool {
    capabilities
        .elicitation
        .as_ref()
        .is_some_and(|elicitation| elicitation.form.is_some() || elicitation.url.is_none())
}

/// Who sent the request, as a form's sealed state is bound to it: the digest of the bearer token
/// it came with over HTTP, else nobody in particular (stdio, or loopback HTTP without tokens).
pub(crate) fn principal(context: &RequestContext<RoleServer>) -> String {
    context
        .extensions
        .get::<axum::http::request::Parts>()
        .and_then(|parts| parts.extensions.get::<crate::auth::Principal>())
        .map(|principal| principal.0.clone())
        .unwrap_or_default()
}
