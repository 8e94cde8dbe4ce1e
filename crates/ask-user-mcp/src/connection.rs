//! One MCP session: its `ServerHandler`, its host session (one root agent, one JSONL log), its
//! calls in flight and its elicitation answerer.
//!
//! The session's log is held open only while a request of the session runs, so `ask-user answer`
//! can answer a pending question from another shell between calls. While any request runs, the
//! session has one open turn and step, which every concurrent call shares; the last request to
//! finish ends them, refreshes the checkpoint and gives the log up.
//!
//! A client's `notifications/cancelled` of a timed call withdraws it only when its reason says a
//! person cancelled it; any other cancellation (a client's timeout) ends the call pending, as its
//! window closing would (`limit.rs` has the rule and why). A blocking call ends with its request.

use std::borrow::Cow;
use std::sync::{Arc, Mutex, MutexGuard};

use ask_user_host::{Host, HostError, ModelInfo, SessionOptions, ToolSpec, new_session_id};
use pending_answer::{DeskError, DeskErrorKind, LateRefusal, Queued, when_continued};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, CustomRequest,
    DiscoverResult, Implementation, ListToolsResult, PaginatedRequestParams,
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
use crate::companion::{ANSWER_TOOL_NAME, read_call_id};
use crate::inflight::{CALL, FormSession, InFlight};
use crate::late;
use crate::limit::{ClientLimit, person_cancelled};
use crate::state::{McpSessionInfo, ServerInner};
use crate::util::{elicit_request, error_result, knows_elicitation_mode, quote};

/// The highest protocol version served: 2026-07-28, the stateless revision (forms through multi
/// round-trip requests). Clients of the handshake era get every version up to 2025-11-25 by
/// `initialize`, with forms through `elicitation/create`.
pub const MAX_PROTOCOL_VERSION: ProtocolVersion = ProtocolVersion::V_2026_07_28;

/// The first version of the stateless era: no `initialize`, no server-to-client requests.
const STATELESS_ERA: &str = "2026-07-28";

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
    /// The session's answerers, registered on its first call: the form, and in timed mode the
    /// client's time limit at the front of the waterfall.
    answerer: Mutex<Vec<AnswererGuard>>,
    /// The client's name fit for a provenance name, once a tool call told it.
    client: Mutex<Option<String>>,
    /// The client's name (`clientInfo.name`) as it gave it, once any request or notification of
    /// the session told it.
    client_name: Mutex<Option<String>>,
    /// The client's first root as a path, once it answered `roots/list`.
    cwd: Mutex<Option<String>>,
    /// Whether `roots/list` was sent (once per session, on its first tool call).
    roots_asked: std::sync::atomic::AtomicBool,
}

/// What a client's `notifications/cancelled` does to a timed call: `cancel` withdraws it
/// (`ASK_ABORTED`), `gave_up` ends it pending (`limit.rs`).
#[derive(Clone, Default)]
pub(crate) struct CallCancel {
    pub(crate) cancel: CancellationToken,
    pub(crate) gave_up: CancellationToken,
}

impl CallCancel {
    /// Applies a client's cancellation with this `reason`: a person's withdraws the call, any
    /// other ends it as its window closing does.
    fn apply(&self, reason: Option<&str>) {
        if person_cancelled(reason) {
            self.cancel.cancel();
        } else {
            self.gave_up.cancel();
        }
    }
}

/// The timed calls a client's `notifications/cancelled` reaches, by request id. A cancellation may
/// be handled before its request's handler has started; those are remembered (a few, with their
/// reasons) for it.
#[derive(Default)]
struct CancelBook {
    live: std::collections::HashMap<rmcp::model::RequestId, CallCancel>,
    early: std::collections::VecDeque<(rmcp::model::RequestId, Option<String>)>,
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
            // The model sees the companion tool beside the ask tool: the log's request header
            // lists it too.
            if runtime.tool().takes_late_answers() {
                host.set_tools([ToolSpec::new(
                    crate::companion::ANSWER_TOOL_NAME,
                    crate::companion::ANSWER_TOOL_DESCRIPTION,
                    crate::companion::answer_tool_parameters(),
                )])?;
            }
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
            // The tool's late answers go through the companion: the turn claims no reply.
            let begun = host
                .begin_turn()
                .and_then(|_| host.begin_step())
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

    /// Registers this session's answerers once: the elicitation answerer, named after the
    /// client, and in timed mode the client's time limit at the front of the waterfall.
    fn ensure_answerer(self: &Arc<Self>, client: Option<&Implementation>) {
        let mut answerers = lock_unpoisoned(&self.answerer);
        if !answerers.is_empty() {
            return;
        }
        let client = client.map(|info| info.name.clone()).unwrap_or_default();
        *lock_unpoisoned(&self.client) = Some(client_label(&client));
        let name = format!(
            "{}{}",
            user_questions::surface_names::FORM_PREFIX,
            client_label(&client)
        );
        let seam = self.server.runtime().seam();
        let scope = format!("agent:{}", self.agent_id);
        let session: std::sync::Weak<Conn> = Arc::downgrade(self);
        let form = FormAnswerer::new(session.clone(), seam, name.clone());
        answerers.push(seam.register(Arc::new(form), RegisterOptions::scoped(name, scope.clone())));
        if self.server.runtime().tool().takes_late_answers() {
            let limit = ClientLimit::new(session);
            answerers.push(
                seam.register(
                    Arc::new(limit),
                    RegisterOptions::scoped(
                        format!("mcp-client-limit:{}", client_label(&client)),
                        scope,
                    )
                    .prepended(),
                ),
            );
        }
    }

    /// Remembers the client's name (`clientInfo.name`) once the session knows it.
    fn note_client(&self, client: Option<&Implementation>) {
        let mut known = lock_unpoisoned(&self.client_name);
        if known.is_none()
            && let Some(info) = client
        {
            *known = Some(info.name.clone());
        }
    }

    /// What the inbox shows of this session.
    pub(crate) fn info(&self) -> McpSessionInfo {
        McpSessionInfo {
            log: self.log.clone(),
            client: lock_unpoisoned(&self.client_name).clone(),
            cwd: lock_unpoisoned(&self.cwd).clone(),
        }
    }

    /// The session's id, as lifecycle events and desks name it.
    pub(crate) fn session_id(&self) -> &user_questions::SessionId {
        &self.session_id
    }

    /// Asks a client that declared the `roots` capability for its roots, once per session, and
    /// keeps the first `file://` root as the session's working directory. Only the request is sent
    /// here, from the request's handler (so over HTTP it travels on that request's stream); its
    /// answer is awaited on a task of its own, so the call is not delayed.
    async fn ask_roots_once(self: &Arc<Self>, peer: &Peer<RoleServer>) {
        let declared = peer
            .peer_info()
            .is_some_and(|info| info.capabilities.roots.is_some());
        if !declared
            || self
                .roots_asked
                .swap(true, std::sync::atomic::Ordering::Relaxed)
        {
            return;
        }
        let request = ServerRequest::CustomRequest(CustomRequest::new("roots/list", None));
        let handle = match peer
            .send_request_with_option(request, PeerRequestOptions::no_options())
            .await
        {
            Ok(handle) => handle,
            Err(error) => {
                tracing::debug!(%error, "roots/list could not be sent");
                return;
            }
        };
        let session = Arc::downgrade(self);
        tokio::spawn(async move {
            let answer = tokio::time::timeout(ROOTS_WAIT, handle.await_response()).await;
            let result = match answer {
                Ok(Ok(result)) => result,
                Ok(Err(error)) => {
                    tracing::debug!(%error, "the client did not list its roots");
                    return;
                }
                Err(_) => {
                    tracing::debug!("the client did not answer roots/list in time");
                    return;
                }
            };
            let cwd = serde_json::to_value(&result)
                .ok()
                .and_then(|value| first_file_root(&value));
            if let (Some(cwd), Some(session)) = (cwd, session.upgrade()) {
                *lock_unpoisoned(&session.cwd) = Some(cwd);
            }
        });
    }

    /// Submits a late answer from the form to a call of this session: the reply waits in the
    /// session's durable inbox until the companion tool admits it. The person has closed the
    /// form, so an answer is not given up when the log cannot be opened at once (another process
    /// holds it, the database is down for a moment): the open is tried again for up to
    /// [`LOG_WAIT`].
    async fn submit_late_now(
        self: &Arc<Self>,
        call_id: &CallId,
        batch: AnswerBatch,
        provenance: Provenance,
    ) {
        match self.queue_late(call_id, batch, provenance, LOG_WAIT).await {
            Ok(_) => tracing::info!(%call_id, "late answer from the form queued"),
            Err(LateRefusal::Unavailable(error)) => {
                tracing::error!(%error, %call_id, "a late answer from the form is lost: the session log cannot be used");
            }
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

    /// Queues a late answer to the call `call_id` of this session through its live host, once
    /// the call is continued (an answer given as its window closed waits for that:
    /// [`when_continued`]): the log is opened without a turn (only the inbox edit is logged) and
    /// the reply waits in the durable inbox for the companion tool. An open that fails (another
    /// process holds the log, a database down for a moment) is tried again, with a growing
    /// pause, for up to `open_within` (nothing waits for a lock's release otherwise); then the
    /// refusal is [`LateRefusal::Unavailable`] with the store's code.
    pub(crate) async fn queue_late(
        self: &Arc<Self>,
        call_id: &CallId,
        batch: AnswerBatch,
        provenance: Provenance,
        open_within: std::time::Duration,
    ) -> Result<Queued, LateRefusal> {
        let seam = self.server.runtime().seam().clone();
        when_continued(&seam, &self.session_id, call_id, || {
            let (conn, call_id, batch, provenance) = (
                Arc::clone(self),
                call_id.clone(),
                batch.clone(),
                provenance.clone(),
            );
            async move {
                let active = conn.enter_within(&call_id, open_within).await?;
                active.host().late().queue(&call_id, batch, provenance)
            }
        })
        .await
    }

    /// Opens the session's log without a turn, trying again for up to `within`.
    async fn enter_within(
        self: &Arc<Self>,
        call_id: &CallId,
        within: std::time::Duration,
    ) -> Result<Active, LateRefusal> {
        let started = tokio::time::Instant::now();
        let mut pause = std::time::Duration::from_millis(20);
        loop {
            match self.enter(false) {
                Ok(active) => return Ok(active),
                Err(error) if started.elapsed() < within => {
                    tracing::debug!(%error, %call_id, "the session log cannot be opened yet; the late answer waits");
                    tokio::time::sleep(pause.min(within.saturating_sub(started.elapsed()))).await;
                    pause = (pause * 2).min(std::time::Duration::from_secs(5));
                }
                Err(error) => {
                    return Err(LateRefusal::Unavailable(DeskError::from_error(
                        DeskErrorKind::Store,
                        error.code(),
                        error,
                    )));
                }
            }
        }
    }

    /// What a client's `notifications/cancelled` does to the timed call of request `id`: only
    /// that notification reaches it (a dropped connection lets its window run out, so the
    /// question stays answerable), and its reason decides ([`CallCancel::apply`]).
    fn cancel_tokens(&self, id: &rmcp::model::RequestId) -> CallCancel {
        let tokens = CallCancel::default();
        let mut book = lock_unpoisoned(&self.cancels);
        if let Some(at) = book.early.iter().position(|(early, _)| early == id) {
            if let Some((_, reason)) = book.early.remove(at) {
                tokens.apply(reason.as_deref());
            }
        } else {
            book.live.insert(id.clone(), tokens.clone());
        }
        tokens
    }

    fn forget_cancel(&self, id: &rmcp::model::RequestId) {
        lock_unpoisoned(&self.cancels).live.remove(id);
    }

    fn cancelled(&self, id: &rmcp::model::RequestId, reason: Option<&str>) {
        let mut book = lock_unpoisoned(&self.cancels);
        if let Some(tokens) = book.live.remove(id) {
            tracing::info!(request = %id, reason, person = person_cancelled(reason), "the client cancelled a timed call");
            tokens.apply(reason);
        } else {
            if book.early.len() == EARLY_CANCELS {
                book.early.pop_front();
            }
            book.early
                .push_back((id.clone(), reason.map(str::to_owned)));
        }
    }

    /// Whether the session's log already holds a call `call_id` (a form's second round sent
    /// again): read, not opened, so nothing is written.
    fn knows_call(&self, call_id: &CallId) -> Result<bool, HostError> {
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
        let store = self.server.runtime().store();
        if !store.exists(&self.log).map_err(HostError::from)? {
            return Ok(false);
        }
        let mut find = Find {
            call_id,
            found: false,
        };
        store.read(&self.log, &mut find).map_err(HostError::from)?;
        Ok(find.found)
    }

    /// A session of this identity: its log, its session id and the UUID its call ids carry.
    fn with_identity(
        server: Arc<ServerInner>,
        log: String,
        session_id: user_questions::SessionId,
        call_prefix: String,
    ) -> Self {
        Self {
            server,
            log,
            agent_id: session_id.as_str().to_owned(),
            session_id,
            slot: Mutex::new(Slot::default()),
            call_prefix,
            next_call: std::sync::atomic::AtomicU64::new(1),
            cancels: Mutex::new(CancelBook::default()),
            fetching: Mutex::new(()),
            answerer: Mutex::new(Vec::new()),
            client: Mutex::new(None),
            client_name: Mutex::new(None),
            cwd: Mutex::new(None),
            roots_asked: std::sync::atomic::AtomicBool::new(false),
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

/// How long a session waits for the client's answer to `roots/list`.
const ROOTS_WAIT: std::time::Duration = std::time::Duration::from_secs(30);

/// The first `file://` root of a `roots/list` result, as a path (percent-decoded; a host part,
/// `localhost` say, dropped). `None` when no root is a `file:` URI or its path is not UTF-8.
fn first_file_root(result: &Value) -> Option<String> {
    result
        .get("roots")?
        .as_array()?
        .iter()
        .filter_map(|root| root.get("uri").and_then(Value::as_str))
        .find_map(file_uri_path)
}

/// The path of a `file://` URI, percent-decoded.
fn file_uri_path(uri: &str) -> Option<String> {
    let scheme = uri.get(..7)?;
    if !scheme.eq_ignore_ascii_case("file://") {
        return None;
    }
    let rest = &uri[7..];
    let path = &rest[rest.find('/')?..];
    let path = path.split(['?', '#']).next().unwrap_or(path);
    let bytes = path.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while at < bytes.len() {
        let byte = bytes[at];
        let hex = |b: u8| char::from(b).to_digit(16);
        if byte == b'%'
            && let (Some(high), Some(low)) = (
                bytes.get(at + 1).copied().and_then(hex),
                bytes.get(at + 2).copied().and_then(hex),
            )
        {
            decoded.push(u8::try_from(high * 16 + low).ok()?);
            at += 3;
        } else {
            decoded.push(byte);
            at += 1;
        }
    }
    String::from_utf8(decoded).ok()
}

/// How [`McpConnection::run_call`] runs a call.
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

/// Whether the request is one of the stateless revision (2026-07-28 or later).
fn is_stateless(context: &RequestContext<RoleServer>) -> bool {
    context
        .protocol_version()
        .is_some_and(|version| version.as_str() >= STATELESS_ERA)
}

/// Whether the request's client shows forms (`elicitation` with `form`, or with neither mode:
/// the 2025-06-18 spelling of a form).
fn shows_forms(context: &RequestContext<RoleServer>) -> bool {
    context
        .client_capabilities()
        .and_then(|capabilities| capabilities.elicitation)
        .is_some_and(|elicitation| elicitation.form.is_some() || elicitation.url.is_none())
}

/// Who sent the request, as a form's sealed state is bound to it: the digest of the bearer token
/// it came with over HTTP, else nobody in particular (stdio, or loopback HTTP without tokens).
fn principal(context: &RequestContext<RoleServer>) -> String {
    context
        .extensions
        .get::<axum::http::request::Parts>()
        .and_then(|parts| parts.extensions.get::<crate::auth::Principal>())
        .map(|principal| principal.0.clone())
        .unwrap_or_default()
}

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
            inner: Arc::new(Conn::with_identity(server, log, session_id, call_prefix)),
        }
    }

    /// The session of a form's first round, for its second: its log, session id and call ids as
    /// round one sealed them (`call_<uuid>_<n>`). It asks no roots: the revision has no
    /// server-to-client requests.
    fn for_round(server: &Arc<ServerInner>, round: &crate::mrtr::FormRound) -> Arc<Conn> {
        let session_id = user_questions::SessionId::from(round.session.clone());
        let prefix = round
            .call
            .strip_prefix("call_")
            .and_then(|rest| rest.rsplit_once('_'))
            .map_or_else(
                || {
                    session_id
                        .as_str()
                        .trim_start_matches("session-")
                        .replace('-', "")
                },
                |(uuid, _)| uuid.to_owned(),
            );
        let conn = Conn::with_identity(Arc::clone(server), round.log.clone(), session_id, prefix);
        conn.roots_asked
            .store(true, std::sync::atomic::Ordering::Relaxed);
        Arc::new(conn)
    }

    /// The name of this session's log in the state directory (it exists once a tool was called).
    pub fn log_name(&self) -> &str {
        &self.inner.log
    }

    /// This session's id: its log's, and the one its questions' lifecycle events and desks name
    /// (the key of `AskUserMcp::session_info`).
    pub fn session_id(&self) -> &user_questions::SessionId {
        &self.inner.session_id
    }

    /// `ask_user_question`: in the stateless era, a blocking call to a client that shows forms
    /// is asked through a multi round-trip request (`mrtr.rs`); every other call runs at once.
    async fn ask(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let arguments = Value::Object(request.arguments.clone().unwrap_or_default()).to_string();
        let stateless = is_stateless(&context);
        let timed = self.inner.server.runtime().tool().takes_late_answers();
        if stateless && !timed {
            if let Some(state) = request.request_state.as_deref() {
                // Boxed: held inline it would make every waiting call's task larger.
                return Box::pin(self.form_round_two(
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
                && let Some(round) = self.form_round_one(&arguments, &context)?
            {
                return Ok(round.into());
            }
        }
        let conn = Arc::clone(&self.inner);
        if stateless
            && timed
            && context
                .client_capabilities()
                .is_some_and(|capabilities| capabilities.supports_tasks())
        {
            return Ok(Self::start_task(conn, arguments, context).into());
        }
        let run = Run {
            stateless,
            ..Run::default()
        };
        Ok(Self::run_call(&conn, arguments, context, run).await.into())
    }

    /// A timed call as a task (the tasks extension): it runs in the background, and the task is
    /// returned at once for the client to poll.
    fn start_task(
        conn: Arc<Conn>,
        arguments: String,
        context: RequestContext<RoleServer>,
    ) -> rmcp::model::CreateTaskResult {
        let call_id = conn.new_call_id();
        let task = conn.server.tasks.start(call_id.as_str());
        let created = task.detailed().task;
        let run = Run {
            stateless: true,
            call_id: Some(call_id),
            prepared: None,
            task: Some(Arc::clone(&task)),
        };
        tokio::spawn(async move {
            let result = Self::run_call(&conn, arguments, context, run).await;
            task.finish(&result);
        });
        rmcp::model::CreateTaskResult::new(created)
    }

    /// A form's first round: the form the call's form answerer would send, and the state sealed
    /// for the second; nothing is written. `None` when the call has no form to show (arguments
    /// the call refuses, questions no form holds): it then runs at once, as it would.
    fn form_round_one(
        &self,
        arguments: &str,
        context: &RequestContext<RoleServer>,
    ) -> Result<Option<rmcp::model::InputRequiredResult>, McpError> {
        let conn = &self.inner;
        let Some(key) = conn.server.state_key.as_ref() else {
            return Ok(None);
        };
        let Ok(questions) = conn.server.runtime().tool().questions(arguments) else {
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
            log: conn.log.clone(),
            session: conn.session_id.as_str().to_owned(),
            call: conn.new_call_id().as_str().to_owned(),
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
        &self,
        state: &str,
        responses: Option<&rmcp::model::InputResponses>,
        arguments: String,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let refused =
            |error: crate::mrtr::RoundError| McpError::invalid_params(error.to_string(), None);
        let key = self
            .inner
            .server
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
        let conn = if round.log == self.inner.log {
            Arc::clone(&self.inner)
        } else {
            Self::for_round(&self.inner.server, &round)
        };
        let call_id = CallId::from(round.call.clone());
        match conn.knows_call(&call_id) {
            Ok(false) => {}
            Ok(true) => return Err(refused(crate::mrtr::RoundError::Used(round.call))),
            Err(error) => {
                return Ok(
                    error_result(&format!("the session log cannot be used: {error}")).into(),
                );
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
        Ok(Self::run_call(&conn, arguments, context, run).await.into())
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
        let call_id = call_id.unwrap_or_else(|| conn.new_call_id());
        let timed = conn.server.runtime().tool().takes_late_answers();
        // A blocking call ends with its request, however that ends; a timed one only when the
        // client cancels it, and then as the reason says (withdrawn, or pending).
        let tokens = if let Some(task) = &task {
            // A task's request is over already: `tasks/cancel` withdraws it.
            CallCancel {
                cancel: task.cancel.clone(),
                gave_up: CancellationToken::new(),
            }
        } else if timed {
            conn.cancel_tokens(&context.id)
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
            session_id: conn.session_id.clone(),
            done: CancellationToken::new(),
            gave_up: tokens.gave_up.clone(),
            elicitation_mode: protocol.as_deref().is_some_and(knows_elicitation_mode),
            prepared: Mutex::new(prepared),
            task,
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
        conn.forget_cancel(&context.id);
        in_flight.done.cancel();
        drop(active);
        match outcome {
            Ok(outcome) => Self::result_of(&outcome),
            Err(error) => error_result(&format!("the call could not be logged: {error}")),
        }
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

    /// The companion tool: the model fetches a late reply.
    fn fetch_reply(&self, arguments: Option<&serde_json::Map<String, Value>>) -> CallToolResult {
        let call_id = match read_call_id(arguments) {
            Ok(Some(id)) => CallId::from(id),
            Ok(None) => return self.fetch_all_replies(),
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

    /// The companion without a call id: every late reply waiting in this session.
    fn fetch_all_replies(&self) -> CallToolResult {
        let conn = &self.inner;
        let _one_at_a_time = lock_unpoisoned(&conn.fetching);
        match conn.enter(true) {
            Ok(active) => late::fetch_all(active.host()),
            Err(error) => error_result(&format!("the session log cannot be used: {error}")),
        }
    }
}

impl ServerHandler for McpConnection {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().enable_tasks().build())
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
        // The stateless era's probe: every version served, and the tools.
        Ok(DiscoverResult::from_server_info(
            self.supported_protocol_versions().into_owned(),
            self.get_info(),
        ))
    }

    async fn get_task(
        &self,
        request: rmcp::model::GetTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::GetTaskResult, McpError> {
        let server = &self.inner.server;
        let task = match server.tasks.get(&request.task_id) {
            Some(task) => task.detailed(),
            None => late::task_from_log(server, &CallId::from(request.task_id.clone()))
                .ok_or_else(|| {
                    McpError::invalid_params(
                        format!(
                            "no task {} in this server's sessions",
                            quote(&request.task_id)
                        ),
                        None,
                    )
                })?,
        };
        Ok(rmcp::model::GetTaskResult::new(task))
    }

    async fn update_task(
        &self,
        request: rmcp::model::UpdateTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.inner
            .server
            .tasks
            .update(&request.task_id, &request.input_responses)
            .map_err(|error| McpError::invalid_params(error.to_string(), None))
    }

    async fn cancel_task(
        &self,
        request: rmcp::model::CancelTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        match self.inner.server.tasks.get(&request.task_id) {
            Some(task) => {
                task.cancel.cancel();
                Ok(())
            }
            None => Err(McpError::invalid_params(
                format!("no task {} runs in this server", quote(&request.task_id)),
                None,
            )),
        }
    }

    async fn on_cancelled(
        &self,
        notification: rmcp::model::CancelledNotificationParam,
        _context: rmcp::service::NotificationContext<RoleServer>,
    ) {
        if let Some(id) = &notification.request_id {
            self.inner.cancelled(id, notification.reason.as_deref());
        }
    }

    async fn on_initialized(&self, context: rmcp::service::NotificationContext<RoleServer>) {
        let info = context.peer.peer_info();
        self.inner
            .note_client(info.as_ref().map(|info| &info.client_info));
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        // The request's own client info (the stateless revision's `_meta`), else the handshake's.
        self.inner.note_client(context.client_info().as_ref());
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
        // The request's own client info (the stateless revision's `_meta`), else the handshake's.
        self.inner.note_client(context.client_info().as_ref());
        // The stateless revision has no server-to-client requests: its roots are not asked.
        if !is_stateless(&context) {
            self.inner.ask_roots_once(&context.peer).await;
        }
        match request.name.as_ref() {
            TOOL_NAME => self.ask(request, context).await,
            ANSWER_TOOL_NAME if timed => Ok(self.fetch_reply(request.arguments.as_ref()).into()),
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

    /// A request rmcp could not read as any method it knows: a known method whose params are
    /// not that method's (`tools/call` with `inputResponses` that is not an object, say) is
    /// invalid params, anything else an unknown method. Nothing is done either way.
    async fn on_custom_request(
        &self,
        request: rmcp::model::CustomRequest,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::CustomResult, McpError> {
        Err(not_understood(&request.method))
    }
}

/// The methods a client may send this server (both eras).
const CLIENT_METHODS: &[&str] = &[
    "initialize",
    "ping",
    "server/discover",
    "tools/list",
    "tools/call",
    "tasks/get",
    "tasks/list",
    "tasks/result",
    "tasks/update",
    "tasks/cancel",
    "prompts/list",
    "prompts/get",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "resources/subscribe",
    "resources/unsubscribe",
    "completion/complete",
    "logging/setLevel",
];

/// The error for a request of `method` that could not be read.
fn not_understood(method: &str) -> McpError {
    if CLIENT_METHODS.contains(&method) {
        McpError::invalid_params(
            format!(
                "the params of {method} are not the ones it takes (a field of the wrong type or shape); nothing was done"
            ),
            None,
        )
    } else {
        McpError::new(
            rmcp::model::ErrorCode::METHOD_NOT_FOUND,
            format!("no method {} on this server", quote(method)),
            None,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::{file_uri_path, first_file_root};

    #[test]
    fn a_file_root_is_a_percent_decoded_path() {
        for (uri, path) in [
            ("file:///tmp/my%20project", Some("/tmp/my project")),
            ("file://localhost/home/me/src", Some("/home/me/src")),
            ("FILE:///x", Some("/x")),
            ("file:///tmp/%E2%9C%93?query#part", Some("/tmp/✓")),
            ("file:///tmp/100%", Some("/tmp/100%")),
            ("file:///tmp/%ZZ", Some("/tmp/%ZZ")),
            ("file:///tmp/%FF", None),
            ("file://", None),
            ("https://example.com/x", None),
        ] {
            assert_eq!(file_uri_path(uri).as_deref(), path, "{uri}");
        }
        let roots = serde_json::json!({"roots": [
            {"uri": "https://example.com/x"},
            {"uri": "file:///first", "name": "first"},
            {"uri": "file:///second"},
        ]});
        assert_eq!(first_file_root(&roots).as_deref(), Some("/first"));
        assert_eq!(first_file_root(&serde_json::json!({"roots": []})), None);
    }
}
