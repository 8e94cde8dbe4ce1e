//! One MCP session's state ([`Conn`]): its identity (one root agent, one JSONL log, the call ids
//! it gives), its answerers, and the lease on its log.
//!
//! The session's log is held open only while a request of the session runs, so `ask-user answer`
//! can answer a pending question from another shell between calls. While any request runs, the
//! session has one open turn and step, which every concurrent call shares; the last request to
//! finish ends them, refreshes the checkpoint and gives the log up. A late answer (a form
//! answered after its window, or one from the server's desk) holds the log without a turn, only
//! for the inbox edit that queues it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use ask_user_host::{Host, HostError, ModelInfo, SessionOptions, ToolSpec, new_session_id};
use pending_answer::{DeskError, DeskErrorKind, LateRefusal, Queued, when_continued};
use rmcp::model::Implementation;
use user_questions::sync::lock_unpoisoned;
use user_questions::{AnswerBatch, AnswererGuard, CallId, Provenance, RegisterOptions, SessionId};

use crate::answerer::FormAnswerer;
use crate::cancels::CancelBook;
use crate::companion::{ANSWER_TOOL_DESCRIPTION, ANSWER_TOOL_NAME, answer_tool_parameters};
use crate::inflight::FormSession;
use crate::limit::ClientLimit;
use crate::mrtr::FormRound;
use crate::roots::Roots;
use crate::state::{McpSessionInfo, ServerInner};

/// How long a late form answer waits for a session log that cannot be opened (another process
/// holds it for write, `ask-user answer` in another shell say; a database down for a moment). A
/// file lock's release or a database's return wakes nobody here, so the open is tried again,
/// with a growing pause.
const LOG_WAIT: std::time::Duration = std::time::Duration::from_mins(10);

/// One MCP session. See the [module docs](self).
pub(crate) struct Conn {
    server: Arc<ServerInner>,
    /// The session log's name in the state directory.
    log: String,
    session_id: SessionId,
    agent_id: String,
    slot: Mutex<Slot>,
    /// The session's UUID as call ids carry it (`call_<uuid>_<n>`), so a later server finds the
    /// log of a call from its id alone.
    call_prefix: String,
    next_call: AtomicU64,
    /// Explicit `notifications/cancelled` of this session's timed calls.
    cancels: CancelBook,
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
    /// The client's roots, asked once per session: its working directory.
    roots: Roots,
}

impl Conn {
    /// A new session: a fresh session id, and a log named after the time and the session's UUID.
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
        Self::with_identity(server, log, session_id, call_prefix)
    }

    /// The session of a form's first round, for its second: its log, session id and call ids as
    /// round one sealed them (`call_<uuid>_<n>`). It asks no roots: the revision has no
    /// server-to-client requests.
    pub(crate) fn for_round(server: &Arc<ServerInner>, round: &FormRound) -> Arc<Self> {
        let session_id = SessionId::from(round.session.clone());
        let prefix = crate::auth::call_parts(&round.call).map_or_else(
            || {
                session_id
                    .as_str()
                    .trim_start_matches("session-")
                    .replace('-', "")
            },
            |(uuid, _)| uuid.to_owned(),
        );
        let conn = Self::with_identity(Arc::clone(server), round.log.clone(), session_id, prefix);
        conn.roots.mark_asked();
        Arc::new(conn)
    }

    /// A session of this identity: its log, its session id and the UUID its call ids carry.
    fn with_identity(
        server: Arc<ServerInner>,
        log: String,
        session_id: SessionId,
        call_prefix: String,
    ) -> Self {
        Self {
            server,
            log,
            agent_id: session_id.as_str().to_owned(),
            session_id,
            slot: Mutex::new(Slot::default()),
            call_prefix,
            next_call: AtomicU64::new(1),
            cancels: CancelBook::default(),
            fetching: Mutex::new(()),
            answerer: Mutex::new(Vec::new()),
            client: Mutex::new(None),
            client_name: Mutex::new(None),
            roots: Roots::default(),
        }
    }

    /// The process-wide state the session belongs to.
    pub(crate) fn server(&self) -> &Arc<ServerInner> {
        &self.server
    }

    /// The session log's name in the state directory.
    pub(crate) fn log(&self) -> &str {
        &self.log
    }

    /// The session's id, as lifecycle events and desks name it.
    pub(crate) fn session_id(&self) -> &SessionId {
        &self.session_id
    }

    /// The book of this session's timed calls that a client's cancellation reaches.
    pub(crate) fn cancels(&self) -> &CancelBook {
        &self.cancels
    }

    /// Held while the companion tool fetches, so two fetches never race for one queued reply.
    pub(crate) fn one_fetch_at_a_time(&self) -> MutexGuard<'_, ()> {
        lock_unpoisoned(&self.fetching)
    }

    /// Whether `call_id` is one this session gave (it carries the session's UUID).
    pub(crate) fn owns(&self, call_id: &CallId) -> bool {
        crate::auth::call_parts(call_id.as_str()).is_some_and(|(uuid, _)| uuid == self.call_prefix)
    }

    /// A fresh call id for a request of `principal` (empty: none): `call_<session uuid>_<n>`,
    /// with the principal's owner tag after the UUID when there is one
    /// ([`crate::auth::owner_tag`]).
    pub(crate) fn new_call_id(&self, principal: &str) -> CallId {
        let n = self.next_call.fetch_add(1, Ordering::Relaxed);
        let tag = crate::auth::owner_tag(&self.call_prefix, principal).unwrap_or_default();
        CallId::from(format!("call_{}{tag}_{n}", self.call_prefix))
    }

    /// What the inbox shows of this session.
    pub(crate) fn info(&self) -> McpSessionInfo {
        McpSessionInfo {
            log: self.log.clone(),
            client: lock_unpoisoned(&self.client_name).clone(),
            // The client's first root; else the server's own working directory, which clients
            // set to the project they run in (a stateless client is never asked for roots).
            cwd: self.roots.cwd().or_else(|| {
                std::env::current_dir()
                    .ok()
                    .map(|dir| dir.display().to_string())
            }),
        }
    }

    /// Remembers the client's name and version (`clientInfo`: `claude-code 2.1.328`) once the
    /// session knows them.
    pub(crate) fn note_client(&self, client: Option<&Implementation>) {
        let mut known = lock_unpoisoned(&self.client_name);
        if known.is_none()
            && let Some(info) = client
        {
            *known = Some(match info.version.trim() {
                "" => info.name.clone(),
                version => format!("{} {version}", info.name),
            });
        }
    }

    /// Registers this session's answerers once: the elicitation answerer, named after the
    /// client, and in timed mode the client's time limit at the front of the waterfall.
    pub(crate) fn ensure_answerer(self: &Arc<Self>, client: Option<&Implementation>) {
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

impl AsRef<Roots> for Conn {
    fn as_ref(&self) -> &Roots {
        &self.roots
    }
}

/// The lease on the session's log: who holds the open host, and the turn.
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
    /// The session's open host.
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
            // The model is the client's: its name and version, as the client gave them, are all
            // this server knows. The log's header keeps where the session runs: both are what
            // `ask-user pending` shows of a session after its server is gone.
            let info = self.info();
            let client = (info.client.as_deref().map(client_label))
                .or_else(|| lock_unpoisoned(&self.client).clone());
            let options = SessionOptions {
                session_id: self.session_id.clone(),
                agent_id: self.agent_id.clone(),
                owner: None,
                model: ModelInfo::new("mcp", client.unwrap_or_else(|| "unknown".to_owned())),
                cwd: info.cwd,
            };
            let host = Arc::new(runtime.open_or_create(&self.log, options)?.0);
            // The model sees the companion tool beside the ask tool: the log's request header
            // lists it too.
            if runtime.tool().takes_late_answers() {
                host.set_tools([ToolSpec::new(
                    ANSWER_TOOL_NAME,
                    ANSWER_TOOL_DESCRIPTION,
                    answer_tool_parameters(),
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
                // Queuing appends to the log and syncs it: off the runtime's workers.
                tokio::task::spawn_blocking(move || {
                    active.host().late().queue(&call_id, batch, provenance)
                })
                .await?
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
            // Opening a log reads it (and may repair it): off the runtime's workers.
            let conn = Arc::clone(self);
            let entered = tokio::task::spawn_blocking(move || conn.enter(false)).await?;
            match entered {
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
