//! One MCP session: its `ServerHandler`, its host session (one root agent, one JSONL log), its
//! calls in flight and its elicitation answerer.
//!
//! The session's log is held open only while a request of the session runs, so `ask-user answer`
//! can answer a pending question from another shell between calls. While any request runs, the
//! session has one open turn and step, which every concurrent call shares; the last request to
//! finish ends them, refreshes the checkpoint and gives the log up.

use std::borrow::Cow;
use std::sync::{Arc, Mutex, MutexGuard};

use ask_user_host::{Host, HostError, ModelInfo, SessionOptions, new_session_id};
use pending_answer::LateRefusal;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, DiscoverResult,
    ElicitRequest, Implementation, ListToolsResult, PaginatedRequestParams,
    ProgressNotificationParam, ProtocolVersion, ServerCapabilities, ServerConfig, ServerRequest,
};
use rmcp::service::{ElicitationMode, PeerRequestOptions, RequestContext};
use rmcp::{ErrorData as McpError, Peer, RoleServer, ServerHandler};
use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tool_ask_user::ToolOutcome;
use tracing::Instrument as _;
use user_questions::sync::lock_unpoisoned;
use user_questions::{AnswerBatch, AnswererGuard, CallId, Provenance, RegisterOptions, TOOL_NAME};

use crate::answerer::FormAnswerer;
use crate::companion::{ANSWER_TOOL_NAME, LATE_ANSWER_HINT, read_call_id};
use crate::inflight::{CALL, FormSession, InFlight};
use crate::late;
use crate::state::ServerInner;
use crate::util::{error_result, quote};

/// The highest protocol version served: the last one with server-to-client requests, which
/// `elicitation/create` needs.
pub const MAX_PROTOCOL_VERSION: ProtocolVersion = ProtocolVersion::V_2025_11_25;

/// The `ServerHandler` of one MCP session. Made by `AskUserMcp::connection`.
#[derive(Clone)]
pub struct McpConnection {
    pub(crate) inner: Arc<Conn>,
}

impl std::fmt::Debug for McpConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpConnection")
            .field("log", &self.inner.log)
            .finish_non_exhaustive()
    }
}

pub(crate) struct Conn {
    pub(crate) server: Arc<ServerInner>,
    /// The session log's name in the state directory.
    pub(crate) log: String,
    session_id: user_questions::SessionId,
    agent_id: String,
    slot: Mutex<Slot>,
    /// The session's UUID as call ids carry it (`call_<uuid>_<n>`), so a later server finds the
    /// log of a call from its id alone.
    call_prefix: String,
    next_call: std::sync::atomic::AtomicU64,
    /// Explicit `notifications/cancelled` of this session's timed calls.
    cancels: Mutex<CancelBook>,
    /// One companion fetch at a time, so two of them never race for one queued reply.
    fetching: Mutex<()>,
    answerer: Mutex<Option<AnswererGuard>>,
    /// The client's name (`clientInfo.name`), once a request told it.
    client: Mutex<Option<String>>,
}

/// The tokens a client's `notifications/cancelled` cancels, by request id. A cancellation may be
/// handled before its request's handler has started; those are remembered (a few) for it.
#[derive(Default)]
struct CancelBook {
    live: std::collections::HashMap<rmcp::model::RequestId, CancellationToken>,
    early: std::collections::VecDeque<rmcp::model::RequestId>,
}

/// How many cancellations of not-yet-started requests are remembered.
const EARLY_CANCELS: usize = 64;

#[derive(Default)]
struct Slot {
    host: Option<Arc<Host>>,
    /// What the options' session hook wired into the open host (dropped before it).
    hooked: Option<Box<dyn Send>>,
    /// Requests holding the host.
    users: usize,
    /// Those of them that run in the session's turn; the turn is open while there are any.
    in_turn: usize,
}

/// A request of the session in progress: the host is open while one exists, and its turn is
/// open while one that runs in it exists.
pub(crate) struct Active {
    conn: Arc<Conn>,
    host: Option<Arc<Host>>,
    in_turn: bool,
}

impl Active {
    pub(crate) fn host(&self) -> &Host {
        // Set from construction until drop.
        self.host.as_deref().unwrap_or_else(|| unreachable!())
    }
}

impl Drop for Active {
    fn drop(&mut self) {
        drop(self.host.take());
        self.conn.leave(self.in_turn);
    }
}

impl Conn {
    fn slot(&self) -> MutexGuard<'_, Slot> {
        lock_unpoisoned(&self.slot)
    }

    /// Starts a request: opens (or creates) the session's log when no other request holds it,
    /// and with `turn` its turn and step when none is open.
    pub(crate) fn enter(self: &Arc<Self>, turn: bool) -> Result<Active, HostError> {
        let mut slot = self.slot();
        let host = if let Some(host) = &slot.host {
            Arc::clone(host)
        } else {
            let runtime = self.server.runtime();
            // The model is the client's: its name, as the client gave it, is all this server knows.
            let client = lock_unpoisoned(&self.client).clone();
            let options = SessionOptions {
                session_id: self.session_id.clone(),
                agent_id: self.agent_id.clone(),
                owner: None,
                model: ModelInfo::new("mcp", client.unwrap_or_else(|| "unknown".to_owned())),
            };
            let host = Arc::new(runtime.open_or_create(&self.log, options)?.0);
            slot.hooked = self
                .server
                .options()
                .on_open
                .as_ref()
                .map(|hook| (hook.0)(&self.log, &host));
            slot.host = Some(Arc::clone(&host));
            host
        };
        if turn && slot.in_turn == 0 {
            let begun = host
                .begin_turn_keeping_inbox()
                .and_then(|()| host.begin_step())
                .and_then(|()| host.log_request_header());
            if let Err(error) = begun {
                if slot.users == 0 {
                    slot.hooked = None;
                    slot.host = None;
                }
                return Err(error);
            }
        }
        slot.users += 1;
        slot.in_turn += usize::from(turn);
        Ok(Active {
            conn: Arc::clone(self),
            host: Some(host),
            in_turn: turn,
        })
    }

    fn leave(&self, in_turn: bool) {
        let mut slot = self.slot();
        slot.users = slot.users.saturating_sub(1);
        if in_turn {
            slot.in_turn = slot.in_turn.saturating_sub(1);
            if slot.in_turn == 0
                && let Some(host) = &slot.host
                && let Err(error) = host.end_turn("completed")
            {
                tracing::warn!(%error, log = %self.log, "the turn could not be ended");
            }
        }
        if slot.users > 0 {
            return;
        }
        if let Some(host) = slot.host.take() {
            drop(slot.hooked.take());
            if let Err(error) = host.checkpoint() {
                tracing::warn!(%error, log = %self.log, "the checkpoint could not be refreshed");
            }
            // Dropped here, under the slot lock: the log is free before the next request opens it.
            drop(host);
        }
    }

    /// Registers this session's elicitation answerer once, named after the client.
    fn ensure_answerer(self: &Arc<Self>, peer: &Peer<RoleServer>) {
        let mut answerer = lock_unpoisoned(&self.answerer);
        if answerer.is_some() {
            return;
        }
        let client = peer
            .peer_info()
            .map(|info| info.client_info.name.clone())
            .unwrap_or_default();
        *lock_unpoisoned(&self.client) = Some(client_label(&client));
        let name = format!(
            "{}{}",
            user_questions::surface_names::FORM_PREFIX,
            client_label(&client)
        );
        let seam = self.server.runtime().seam();
        let session: std::sync::Weak<Conn> = Arc::downgrade(self);
        let form = FormAnswerer::new(session, seam, name.clone());
        let options = RegisterOptions::scoped(name, format!("agent:{}", self.agent_id));
        *answerer = Some(seam.register(Arc::new(form), options));
    }

    /// Submits a late answer to a call of this session: the reply waits in the session's durable
    /// inbox until the companion tool admits it. Queuing it opens the session's log when no
    /// request holds it, but no turn: only the inbox edit is logged. The person has closed the
    /// form, so an answer is not given up when the log cannot be opened at once (another process
    /// holds it, the database is down for a moment): the open is tried again, with a growing
    /// pause, for up to [`LOG_WAIT`]. (That the call is continued was awaited before: the form
    /// task submits only after the host announced it.)
    async fn submit_late_now(
        self: &Arc<Self>,
        call_id: &CallId,
        batch: AnswerBatch,
        provenance: Provenance,
    ) {
        let started = tokio::time::Instant::now();
        let mut pause = std::time::Duration::from_millis(20);
        let active = loop {
            match self.enter(false) {
                Ok(active) => break active,
                Err(error) if started.elapsed() < LOG_WAIT => {
                    tracing::debug!(%error, %call_id, "the session log cannot be opened yet; the late answer waits");
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(std::time::Duration::from_secs(5));
                }
                Err(error) => {
                    tracing::error!(%error, %call_id, "a late answer from the form is lost: the session log cannot be used");
                    return;
                }
            }
        };
        match active.host().answer_late(call_id, batch, provenance) {
            Ok(_) => tracing::info!(%call_id, "late answer from the form queued"),
            Err(LateRefusal::NotWaiting(why)) => tracing::warn!(
                %call_id,
                why = why.reason(),
                "the form was answered, but the question no longer waits; the answer is not used"
            ),
            Err(refusal) => {
                tracing::warn!(%refusal, %call_id, "the late answer from the form was refused");
            }
        }
    }

    /// The token that cancels the timed call of request `id`: only the client's explicit
    /// `notifications/cancelled` cancels it (a dropped connection lets its window run out, so the
    /// question stays answerable).
    fn cancel_token(&self, id: &rmcp::model::RequestId) -> CancellationToken {
        let token = CancellationToken::new();
        let mut book = lock_unpoisoned(&self.cancels);
        if let Some(at) = book.early.iter().position(|early| early == id) {
            book.early.remove(at);
            token.cancel();
        } else {
            book.live.insert(id.clone(), token.clone());
        }
        token
    }

    fn forget_cancel(&self, id: &rmcp::model::RequestId) {
        lock_unpoisoned(&self.cancels).live.remove(id);
    }

    fn cancelled(&self, id: &rmcp::model::RequestId) {
        let mut book = lock_unpoisoned(&self.cancels);
        if let Some(token) = book.live.remove(id) {
            token.cancel();
        } else {
            if book.early.len() == EARLY_CANCELS {
                book.early.pop_front();
            }
            book.early.push_back(id.clone());
        }
    }

    /// Whether `call_id` is one this session gave (it carries the session's UUID).
    fn owns(&self, call_id: &CallId) -> bool {
        call_id
            .as_str()
            .strip_prefix("call_")
            .and_then(|rest| rest.strip_prefix(self.call_prefix.as_str()))
            .is_some_and(|rest| rest.starts_with('_'))
    }

    /// A fresh call id: `call_<session uuid>_<n>`.
    fn new_call_id(&self) -> CallId {
        let n = self
            .next_call
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        CallId::from(format!("call_{}_{n}", self.call_prefix))
    }
}

/// How long a late form answer waits for a session log that cannot be opened (another process
/// holds it for write, `ask-user answer` in another shell say; a database down for a moment). A
/// file lock's release or a database's return wakes nobody here, so the open is tried again,
/// with a growing pause.
pub const LOG_WAIT: std::time::Duration = std::time::Duration::from_mins(10);

/// A client name fit for a provenance name: visible characters only, at most 64.
fn client_label(name: &str) -> String {
    let label: String = name.chars().filter(|c| !c.is_control()).take(64).collect();
    if label.trim().is_empty() {
        "client".to_owned()
    } else {
        label
    }
}

#[user_questions::async_trait]
impl FormSession for Conn {
    async fn submit_late(
        self: Arc<Self>,
        call_id: CallId,
        batch: AnswerBatch,
        provenance: Provenance,
    ) {
        self.submit_late_now(&call_id, batch, provenance).await;
    }
}

impl McpConnection {
    pub(crate) fn new(server: Arc<ServerInner>) -> Self {
        let session_id = new_session_id();
        let stamp = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let uuid = session_id
            .as_str()
            .trim_start_matches("session-")
            .to_owned();
        let log = format!("mcp-{stamp}-{uuid}.jsonl");
        let call_prefix = uuid.replace('-', "");
        Self {
            inner: Arc::new(Conn {
                server,
                log,
                agent_id: session_id.as_str().to_owned(),
                session_id,
                slot: Mutex::new(Slot::default()),
                call_prefix,
                next_call: std::sync::atomic::AtomicU64::new(1),
                cancels: Mutex::new(CancelBook::default()),
                fetching: Mutex::new(()),
                answerer: Mutex::new(None),
                client: Mutex::new(None),
            }),
        }
    }

    /// The name of this session's log in the state directory (it exists once a tool was called).
    pub fn log_name(&self) -> &str {
        &self.inner.log
    }

    async fn ask(
        &self,
        arguments: Option<serde_json::Map<String, Value>>,
        context: RequestContext<RoleServer>,
    ) -> CallToolResult {
        let conn = &self.inner;
        conn.ensure_answerer(&context.peer);
        let arguments = Value::Object(arguments.unwrap_or_default()).to_string();
        let active = match conn.enter(true) {
            Ok(active) => active,
            Err(error) => return error_result(&format!("the session log cannot be used: {error}")),
        };
        let call_id = conn.new_call_id();
        let timed = conn.server.runtime().tool().takes_late_answers();
        // A blocking call ends with its request, however that ends; a timed one only when the
        // client cancels it.
        let cancel = if timed {
            conn.cancel_token(&context.id)
        } else {
            context.ct.clone()
        };
        let (forms, mut requests) = mpsc::unbounded_channel();
        let in_flight = Arc::new(InFlight {
            session: Arc::downgrade(conn) as std::sync::Weak<Conn>,
            call_id: call_id.clone(),
            forms,
            form_mode: context
                .peer
                .supported_elicitation_modes()
                .contains(&ElicitationMode::Form),
            form_style: context
                .peer
                .peer_info()
                .map_or(crate::form::FormStyle::Legacy, |info| {
                    crate::form::FormStyle::for_protocol(info.protocol_version.as_str())
                }),
            session_id: conn.session_id.clone(),
            done: CancellationToken::new(),
        });

        let progress = context.meta.get_progress_token();
        let every = conn.server.options().progress_interval;
        let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
        let mut reported = 0_u32;
        let outcome = {
            let call = CALL.scope(
                Arc::clone(&in_flight),
                active
                    .host()
                    .call_tool(&call_id, &arguments, cancel)
                    .instrument(tracing::info_span!("tools/call", %call_id)),
            );
            tokio::pin!(call);
            loop {
                tokio::select! {
                    biased;
                    outcome = &mut call => break outcome,
                    Some(send) = requests.recv() => {
                        let request = ServerRequest::ElicitRequest(ElicitRequest::new(send.params));
                        let delivered = context
                            .peer
                            .send_request_with_option(request, PeerRequestOptions::no_options())
                            .await;
                        let _ = send.reply.send(delivered);
                    }
                    _ = ticks.tick(), if progress.is_some() => {
                        reported += 1;
                        if let Some(token) = &progress {
                            let mut note = ProgressNotificationParam::new(token.clone(), f64::from(reported));
                            note.message = Some("waiting for the person to answer".to_owned());
                            if let Err(error) = context.peer.notify_progress(note).await {
                                tracing::debug!(%error, "a progress notification could not be sent");
                            }
                        }
                    }
                }
            }
        };
        conn.forget_cancel(&context.id);
        in_flight.done.cancel();
        drop(active);
        match outcome {
            Ok(outcome) => Self::result_of(&outcome),
            Err(error) => error_result(&format!("the call could not be logged: {error}")),
        }
    }

    fn result_of(outcome: &ToolOutcome) -> CallToolResult {
        let mut content = vec![ContentBlock::text(outcome.text.clone())];
        if outcome.is_pending() {
            content.push(ContentBlock::text(LATE_ANSWER_HINT));
        }
        if outcome.is_error {
            CallToolResult::error(content)
        } else {
            CallToolResult::success(content)
        }
    }

    fn answer(&self, arguments: Option<&serde_json::Map<String, Value>>) -> CallToolResult {
        let call_id = match read_call_id(arguments) {
            Ok(id) => CallId::from(id),
            Err(message) => return error_result(&message),
        };
        let conn = &self.inner;
        let _one_at_a_time = lock_unpoisoned(&conn.fetching);
        if conn.owns(&call_id) {
            return match conn.enter(true) {
                Ok(active) => late::fetch(active.host(), &call_id, &conn.log),
                Err(error) => error_result(&format!("the session log cannot be used: {error}")),
            };
        }
        late::fetch_elsewhere(&conn.server, &call_id)
    }
}

impl ServerHandler for McpConnection {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("ask-user", env!("CARGO_PKG_VERSION")))
            .with_protocol_version(MAX_PROTOCOL_VERSION)
            .with_instructions(
                "ask_user_question puts questions to the person using this client and returns their answers.",
            )
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(ProtocolVersion::known_up_to(&MAX_PROTOCOL_VERSION))
    }

    async fn discover(
        &self,
        _context: RequestContext<RoleServer>,
    ) -> Result<DiscoverResult, McpError> {
        // Only handshake-era versions are served. A probe naming a newer version is refused by
        // rmcp before it gets here (`-32022` listing the versions served, which makes clients
        // fall back to `initialize`); any other probe gets "method not found", which does too.
        Err(McpError::method_not_found::<
            rmcp::model::DiscoverRequestMethod,
        >())
    }

    async fn on_cancelled(
        &self,
        notification: rmcp::model::CancelledNotificationParam,
        _context: rmcp::service::NotificationContext<RoleServer>,
    ) {
        if let Some(id) = &notification.request_id {
            self.inner.cancelled(id);
        }
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(
            self.inner.server.tools().to_vec(),
        ))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let timed = self.inner.server.runtime().tool().takes_late_answers();
        match request.name.as_ref() {
            TOOL_NAME => Ok(self.ask(request.arguments, context).await.into()),
            ANSWER_TOOL_NAME if timed => Ok(self.answer(request.arguments.as_ref()).into()),
            other => Err(McpError::invalid_params(
                format!(
                    "unknown tool {}: this server has {}",
                    quote(other),
                    self.inner
                        .server
                        .tools()
                        .iter()
                        .map(|t| t.name.as_ref())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                None,
            )),
        }
    }
}
