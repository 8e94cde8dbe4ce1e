//! The inbox's side: a seam of its own in which every linked host's question is asked again, so
//! the surfaces registered there (the page, notifications) show it, race for it and answer it;
//! the host's own outcome (its form answered, its window closed, its request gone) is the last
//! answerer of that seam's waterfall. What becomes of a question after its window (continued,
//! settled) is the host's to say, and is relayed into the inbox's seam as the host says it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use pending_answer::{
    Accepted, ChangeSignal, DeskChanges, DeskError, DeskErrorKind, DeskQuestion, DeskSession,
    LateRefusal, QuestionDesk, SessionView, Submission,
};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;
use user_questions::sync::lock_unpoisoned as lock;
use user_questions::sync::lock_unpoisoned;
use user_questions::{
    AgentHandle, AnswerBatch, AnswerPath, AnswerRequest, Answered, Answerer, AnswererError,
    AnswererGuard, AskRequest, CallId, ErrorCode, HostBindings, InMemoryAgent,
    InMemoryAgentRegistry, InMemorySession, MAX_TIMEOUT_MS, Next, Provenance, QuestionEvent,
    QuestionEventKind, RegisterOptions, SessionId, TimedAskRequest, TimedOutcome,
    UserQuestionError, UserQuestions, UserQuestionsConfig, WaitKey, async_trait,
};

use crate::shell::{ShellAnswerer, ShellHold};
use crate::wire::{Over, Reader, ToHost, ToInbox, WireLate, Writer};

/// The name the hosts' own outcomes answer under in the inbox's seam.
pub const HOST_ANSWERER: &str = "inbox-host";

/// How long the inbox's desk waits for a linked host's word on a late answer it forwarded (the
/// host's own desk may wait for the call's continuation first).
pub const LATE_WITHIN: std::time::Duration = std::time::Duration::from_secs(30);

/// The most connections the inbox keeps at once (linked hosts, hooks, shells); one more is told
/// `TOO_MANY_LINKS` and closed.
pub const MAX_LINKS: usize = 128;

/// The most sessions one link keeps with nothing of theirs in the inbox's seam: past it, the
/// least recently announced one is forgotten (a long-lived server whose every call is a session
/// of its own, in the stateless era, does not grow the inbox without end). A late answer to a
/// forgotten session goes to the logs.
pub const MAX_IDLE_SESSIONS_PER_LINK: usize = 1024;

/// Who is at the other end of a link, as the unix socket's peer credentials say; unknown over
/// other streams (a test's in-memory pair).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Peer {
    /// The peer's process.
    pub pid: Option<u32>,
    /// The peer's user.
    pub uid: Option<u32>,
}

impl Peer {
    /// The credentials of `stream`'s peer.
    pub fn of(stream: &tokio::net::UnixStream) -> Self {
        stream.peer_cred().map_or_else(
            |_| Self::default(),
            |cred| Self {
                pid: cred.pid().and_then(|pid| u32::try_from(pid).ok()),
                uid: Some(cred.uid()),
            },
        )
    }
}

/// Whether the process `pid` still runs (one of another user's counts as running).
fn process_runs(pid: u32) -> bool {
    let Ok(raw) = i32::try_from(pid) else {
        return false;
    };
    !matches!(
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(raw), None),
        Err(nix::errno::Errno::ESRCH)
    )
}

/// A session a linked host runs (or ran: its host may be gone), as the inbox knows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InboxSession {
    /// Its name: the log's name in the hosts' store, what the page and the desk call it.
    pub name: String,
    /// The MCP client (or other program) the session serves, when its host said.
    pub client: Option<String>,
    /// The client's working directory, when its host knew it.
    pub cwd: Option<String>,
    /// A host is linked for it now.
    pub linked: bool,
}

impl InboxSession {
    /// `client · cwd`, what a page shows beside the session's questions.
    pub fn label(&self) -> Option<String> {
        match (&self.client, &self.cwd) {
            (Some(client), Some(cwd)) => Some(format!("{client} · {cwd}")),
            (Some(one), None) | (None, Some(one)) => Some(one.clone()),
            (None, None) => None,
        }
    }
}

/// One inbox for the hosts of a machine. See the crate docs.
///
/// Cloning gives another handle to the same inbox.
#[derive(Clone)]
pub struct Inbox {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Inbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = lock(&self.inner.state);
        f.debug_struct("Inbox")
            .field("links", &state.links.len())
            .field("sessions", &state.sessions.len())
            .field("questions", &state.questions.len())
            .finish_non_exhaustive()
    }
}

struct Inner {
    seam: UserQuestions,
    registry: Arc<InMemoryAgentRegistry>,
    fallback: Arc<dyn QuestionDesk>,
    state: Mutex<State>,
    /// Ticked when a host linked or went, or a session or question changed; the fallback's own
    /// changes are forwarded into it while anyone watches.
    changes: ChangeSignal,
    /// Whether the fallback's changes are forwarded now.
    forwarding: Mutex<bool>,
    /// The questions as a shell answers them in their window.
    shell: Arc<ShellHold>,
    /// Agents waiting at their own terminals, for the notifiers.
    attention: tokio::sync::broadcast::Sender<crate::Attention>,
    _host_answerer: AnswererGuard,
    _shell_answerer: AnswererGuard,
}

type Key = (String, CallId);

/// How many attentions wait for a slow notifier before the oldest are dropped.
const ATTENTION_QUEUE: usize = 64;

#[derive(Default)]
struct State {
    next_link: u64,
    links: HashMap<u64, LinkEntry>,
    sessions: HashMap<String, SessionEntry>,
    questions: HashMap<Key, QuestionEntry>,
    /// Late answers sent to a host, waiting for its word: the link each went to, and where the
    /// word goes.
    late: HashMap<u64, (u64, oneshot::Sender<WireLate>)>,
    next_late: u64,
    next_seen: u64,
}

/// A connection: where its messages go, and who is at its end.
struct LinkEntry {
    tx: mpsc::UnboundedSender<ToHost>,
    peer: Peer,
}

struct SessionEntry {
    /// The link that speaks for it now.
    link: Option<u64>,
    /// The process that announced it: another process takes the session over only once this
    /// one has ended (a new hook of the same agent session, a restarted server).
    pid: Option<u32>,
    /// When its link last announced it (the inbox's own count).
    seen: u64,
    client: Option<String>,
    cwd: Option<String>,
    agent: AgentHandle,
}

struct QuestionEntry {
    link: u64,
    timed: bool,
    /// When the host's window of a timed question closes (wall-clock Unix ms), as it said.
    ends_at_ms: Option<i64>,
    /// To the host answerer, once the host tells how the window ended.
    verdict: Option<oneshot::Sender<Verdict>>,
    /// Taken by the host answerer when the inbox's ask reaches it.
    verdict_rx: Option<oneshot::Receiver<Verdict>>,
    /// The host's own outcome answered the inbox's ask (nothing goes back).
    from_host: bool,
}

impl State {
    /// Whether `link` may speak for `session` (and take it if no live link holds it): a
    /// session belongs to the link that announced it while that link lasts, and to its process
    /// after; another process takes it over only once that one has ended. An unknown session is
    /// anyone's.
    fn may_claim(&self, link: u64, session: &str) -> bool {
        let Some(entry) = self.sessions.get(session) else {
            return true;
        };
        if entry.link == Some(link) {
            return true;
        }
        let pid = self.links.get(&link).and_then(|l| l.peer.pid);
        let same_process = pid.is_some() && pid == entry.pid;
        match entry.link {
            // The same process linked again before its old link was seen to close.
            Some(other) if self.links.contains_key(&other) => same_process,
            _ => same_process || entry.pid.is_none_or(|owner| !process_runs(owner)),
        }
    }

    /// Whether `link` speaks for `session` now.
    fn holds(&self, link: u64, session: &str) -> bool {
        self.sessions
            .get(session)
            .is_some_and(|entry| entry.link == Some(link))
    }

    /// Forgets the least recently announced idle sessions of `link` beyond
    /// [`MAX_IDLE_SESSIONS_PER_LINK`], never `keep` (the one announced now).
    fn trim(&mut self, link: u64, keep: &str, registry: &InMemoryAgentRegistry) {
        let busy: std::collections::HashSet<&str> =
            self.questions.keys().map(|(s, _)| s.as_str()).collect();
        let mut idle: Vec<(u64, String)> = (self.sessions.iter())
            .filter(|(name, e)| {
                e.link == Some(link) && *name != keep && !busy.contains(name.as_str())
            })
            .map(|(name, e)| (e.seen, name.clone()))
            .collect();
        if idle.len() < MAX_IDLE_SESSIONS_PER_LINK {
            return;
        }
        idle.sort_unstable();
        let over = idle.len() + 1 - MAX_IDLE_SESSIONS_PER_LINK;
        for (_, name) in idle.into_iter().take(over) {
            if let Some(entry) = self.sessions.remove(&name) {
                registry.exit(entry.agent.id());
            }
        }
    }

    /// Forgets `session` when no link speaks for it and none of its questions is in the
    /// inbox's seam: its continued questions stay listed from the logs. Its agent leaves the
    /// inbox's registry with it.
    fn forget_if_idle(&mut self, session: &str, registry: &InMemoryAgentRegistry) {
        let idle = self.sessions.get(session).is_some_and(|e| e.link.is_none())
            && !self.questions.keys().any(|(s, _)| s == session);
        if idle && let Some(entry) = self.sessions.remove(session) {
            registry.exit(entry.agent.id());
        }
    }
}

/// Logs a message a link sent about a session (or a call) another link owns, and drops it.
fn refused(link: u64, what: &str, session: &str) {
    tracing::warn!(
        link,
        message = what,
        session = %user_questions::sanitize::visible(session),
        "a link spoke for a session it does not own; refused"
    );
}

/// How a question's window ended at its host, for the inbox's ask.
enum Verdict {
    Answered(AnswerBatch, Provenance),
    Pending,
    Gone,
    Failed(Option<String>, String),
}

impl Inbox {
    /// An inbox whose questions, beyond those of linked hosts in their window, are `fallback`'s
    /// (the hosts' store read as logs, say): continued questions, and those of hosts that are
    /// gone. Late answers go to the linked host of their session, else to `fallback`.
    ///
    /// # Errors
    ///
    /// When the seam refuses its configuration (it does not: the default is used).
    ///
    /// # Panics
    ///
    /// Outside a Tokio runtime.
    pub fn new(fallback: Arc<dyn QuestionDesk>) -> Result<Self, user_questions::ConfigError> {
        let registry = InMemoryAgentRegistry::new();
        let bindings = HostBindings::with_registry(Arc::clone(&registry) as _);
        let seam = UserQuestions::new(UserQuestionsConfig::default(), bindings)?;
        let inner = Arc::new_cyclic(|weak: &Weak<Inner>| {
            let answerer = HostOutcome {
                inner: weak.clone(),
            };
            let guard = seam.register(Arc::new(answerer), RegisterOptions::global(HOST_ANSWERER));
            let shell = Arc::new(ShellHold::default());
            let shell_guard = seam.register(
                Arc::new(ShellAnswerer(Arc::clone(&shell))),
                RegisterOptions::global(user_questions::surface_names::SHELL).prepended(),
            );
            Inner {
                seam: seam.clone(),
                registry,
                fallback,
                state: Mutex::new(State::default()),
                changes: ChangeSignal::new(),
                forwarding: Mutex::new(false),
                shell,
                attention: tokio::sync::broadcast::channel(ATTENTION_QUEUE).0,
                _host_answerer: guard,
                _shell_answerer: shell_guard,
            }
        });
        Ok(Self { inner })
    }

    /// The inbox's seam: register the surfaces that show its questions here (prepended, so
    /// they race the hosts' own outcomes), and follow its events to notify.
    pub fn seam(&self) -> &UserQuestions {
        &self.inner.seam
    }

    /// The inbox as a question desk: the fallback's questions, answered through the linked host
    /// of their session when there is one (one request over its link; its reply waits in that
    /// session for its model), else through the fallback. Its changes are the inbox's (a host
    /// linked or went, a question continued or settled) and the fallback's; its labels say
    /// where each session runs. What the page is given.
    pub fn desk(&self) -> Arc<dyn QuestionDesk> {
        Arc::new(InboxDesk {
            inner: Arc::clone(&self.inner),
        })
    }

    /// The sessions the inbox heard of since it started.
    pub fn sessions(&self) -> Vec<InboxSession> {
        let state = lock(&self.inner.state);
        let mut sessions: Vec<InboxSession> = state
            .sessions
            .iter()
            .map(|(name, entry)| InboxSession {
                name: name.clone(),
                client: entry.client.clone(),
                cwd: entry.cwd.clone(),
                linked: entry.link.is_some(),
            })
            .collect();
        sessions.sort_by(|a, b| a.name.cmp(&b.name));
        sessions
    }

    /// Agents' hooks telling that their agent waits for its person at its own terminal
    /// ([`tell_attention`](crate::tell_attention)), each cut to
    /// [`MAX_ATTENTION`](crate::MAX_ATTENTION): for the notifiers to pass on.
    pub fn attention(&self) -> tokio::sync::broadcast::Receiver<crate::Attention> {
        self.inner.attention.subscribe()
    }

    /// Calls `heard` with each [`attention`](Self::attention) while the returned handle is held
    /// (a notifier announcing them); the attentions missed while `heard` lagged behind are
    /// skipped.
    pub fn follow_attention(
        &self,
        heard: impl Fn(crate::Attention) + Send + 'static,
    ) -> tokio_util::task::AbortOnDropHandle<()> {
        use tokio::sync::broadcast::error::RecvError;
        let mut attention = self.attention();
        tokio_util::task::AbortOnDropHandle::new(tokio::spawn(async move {
            loop {
                match attention.recv().await {
                    Ok(attention) => heard(attention),
                    Err(RecvError::Lagged(_)) => {}
                    Err(RecvError::Closed) => return,
                }
            }
        }))
    }

    /// How many hosts are linked now.
    pub fn links(&self) -> usize {
        lock(&self.inner.state).links.len()
    }

    /// Serves linked hosts on `listener` until `stop`.
    pub async fn serve(&self, listener: tokio::net::UnixListener, stop: CancellationToken) {
        loop {
            tokio::select! {
                () = stop.cancelled() => return,
                accepted = listener.accept() => match accepted {
                    Ok((stream, _)) => {
                        let inbox = self.clone();
                        let stop = stop.clone();
                        let peer = Peer::of(&stream);
                        tokio::spawn(async move {
                            tokio::select! {
                                () = inbox.serve_link_from(stream, peer) => {}
                                () = stop.cancelled() => {}
                            }
                        });
                    }
                    Err(error) => {
                        tracing::warn!(%error, "a host could not be accepted");
                        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                    }
                },
            }
        }
    }

    /// Serves one linked host on `stream` until it goes: its questions in their window are then
    /// left to the fallback (a host that died left them open in its log; answering repairs them).
    /// The peer is unknown: see [`serve_link_from`](Self::serve_link_from).
    pub async fn serve_link<S>(&self, stream: S)
    where
        S: AsyncRead + AsyncWrite + Send + 'static,
    {
        self.serve_link_from(stream, Peer::default()).await;
    }

    /// [`serve_link`](Self::serve_link) for `peer`: a link speaks only for the sessions it
    /// announced (and its process, once it links again), and hears only their answers. Another
    /// user's process, or one connection more than [`MAX_LINKS`], is told why and closed.
    pub async fn serve_link_from<S>(&self, stream: S, peer: Peer)
    where
        S: AsyncRead + AsyncWrite + Send + 'static,
    {
        let (read, write) = tokio::io::split(stream);
        let (tx, mut rx) = mpsc::unbounded_channel::<ToHost>();
        let refusal = if peer
            .uid
            .is_some_and(|uid| uid != nix::unistd::getuid().as_raw())
        {
            Some(("OTHER_USER", "this inbox serves its own user's agents only"))
        } else {
            None
        };
        let linked = {
            let mut state = lock(&self.inner.state);
            if let Some(refusal) = refusal {
                Err(refusal)
            } else if state.links.len() >= MAX_LINKS {
                Err((
                    "TOO_MANY_LINKS",
                    "the inbox has as many connections as it takes; try again later",
                ))
            } else {
                state.next_link += 1;
                let link = state.next_link;
                state.links.insert(link, LinkEntry { tx, peer });
                Ok(link)
            }
        };
        let link = match linked {
            Ok(link) => link,
            Err((code, message)) => {
                tracing::warn!(code, uid = ?peer.uid, pid = ?peer.pid, "a connection was refused");
                let refused = ToHost::Refused {
                    code: code.to_owned(),
                    message: message.to_owned(),
                };
                let _ = Writer::new(write).send(&refused).await;
                return;
            }
        };
        let writer = tokio::spawn(async move {
            let mut writer = Writer::new(write);
            while let Some(message) = rx.recv().await {
                if let Err(error) = writer.send(&message).await {
                    tracing::debug!(%error, "a linked host went away");
                    return;
                }
            }
        });
        // However this ends (the host went, or the future is dropped), the link goes with it.
        let _linked = Linked {
            inner: Arc::clone(&self.inner),
            link,
            writer,
        };
        let mut reader = Reader::<_, ToInbox>::new(read);
        while let Some(message) = reader.next().await {
            self.inner.on_message(link, message);
        }
    }
}

/// One linked host's connection: dropping it stops its writer and unlinks it.
struct Linked {
    inner: Arc<Inner>,
    link: u64,
    writer: tokio::task::JoinHandle<()>,
}

impl Drop for Linked {
    fn drop(&mut self) {
        self.writer.abort();
        self.inner.unlink(self.link);
    }
}

impl Inner {
    fn changed(&self) {
        self.changes.tick();
    }

    fn publish(&self, session: &str, call: &CallId, kind: QuestionEventKind) {
        self.seam.publish(QuestionEvent {
            ask_id: None,
            call_id: Some(call.clone()),
            agent_id: None,
            session_id: Some(SessionId::from(session)),
            at_ms: user_questions::now_unix_ms(),
            kind,
        });
    }

    fn on_message(self: &Arc<Self>, link: u64, message: ToInbox) {
        match message {
            // The pid a peer says is only logged: its credentials decide what it owns.
            ToInbox::Hello { pid } => tracing::info!(pid, link, "a host linked"),
            ToInbox::Session {
                session,
                client,
                cwd,
            } => {
                if self.session(&session, Some(link), client, cwd).is_none() {
                    refused(link, "session", &session);
                    return;
                }
                self.changed();
            }
            ToInbox::Open {
                session,
                call,
                questions,
                timed,
                asked_at_ms: _,
                ends_at_ms,
            } => self.open(link, session, call, questions, timed, ends_at_ms),
            ToInbox::Over { session, call, how } => {
                let verdict = match how {
                    Over::Answered {
                        answers,
                        provenance,
                    } => Verdict::Answered(answers, provenance),
                    Over::Pending => Verdict::Pending,
                    Over::Failed { code, message } => Verdict::Failed(code, message),
                };
                self.verdict(link, &(session, call), verdict);
            }
            // The host made the pending result durable: relayed as it comes (a card that turns
            // continued before the inbox's own ask ended pending stays so).
            ToInbox::Continued { session, call } => {
                if !lock(&self.state).holds(link, &session) {
                    refused(link, "continued", &session);
                    return;
                }
                self.publish(&session, &call, QuestionEventKind::Continued);
                self.changed();
            }
            ToInbox::Settled {
                session,
                call,
                provenance,
            } => self.settled(link, &session, &call, provenance),
            ToInbox::LateReply { id, result } => self.late_reply(link, id, result),
            ToInbox::Attention { id, attention } => {
                let attention = attention.cut();
                tracing::info!(
                    agent = %user_questions::sanitize::visible(&attention.agent),
                    link,
                    "an agent waits at its own terminal"
                );
                let notifiers = self.attention.send(attention).unwrap_or(0);
                if let Some(to) = lock(&self.state).links.get(&link) {
                    let _ = to.tx.send(ToHost::Noted { id, notifiers });
                }
            }
            ToInbox::Answer {
                id,
                session,
                call,
                answers,
                provenance,
            } => {
                let key = (session, call);
                let result = self.shell.answer(&self.seam, &key, &answers, provenance);
                if let Some(to) = lock(&self.state).links.get(&link) {
                    let _ = to.tx.send(ToHost::Answered { id, result });
                }
            }
        }
    }

    /// A late reply was admitted at the host: the question is settled (the link's own only).
    fn settled(&self, link: u64, session: &str, call: &CallId, provenance: Provenance) {
        {
            let mut state = lock(&self.state);
            if !state.holds(link, session) {
                drop(state);
                refused(link, "settled", session);
                return;
            }
            state.questions.remove(&(session.to_owned(), call.clone()));
        }
        self.publish(
            session,
            call,
            QuestionEventKind::Answered {
                path: AnswerPath::Late,
                provenance,
            },
        );
        self.changed();
    }

    /// What became of the late answer `id`: the word of the link it went to, and no other's.
    fn late_reply(&self, link: u64, id: u64, result: WireLate) {
        let waiter = {
            let mut state = lock(&self.state);
            match state.late.get(&id) {
                Some((to, _)) if *to == link => state.late.remove(&id),
                Some(_) => {
                    drop(state);
                    tracing::warn!(
                        link,
                        id,
                        "a late reply from a link it was not sent to; refused"
                    );
                    return;
                }
                None => return,
            }
        };
        if let Some((_, waiter)) = waiter {
            let _ = waiter.send(result);
        }
    }

    /// The session's entry (made with an agent of its own in the inbox's registry), updated;
    /// `None` when `link` may not speak for it ([`State::may_claim`]).
    fn session(
        &self,
        name: &str,
        link: Option<u64>,
        client: Option<String>,
        cwd: Option<String>,
    ) -> Option<AgentHandle> {
        let mut state = lock(&self.state);
        if let Some(link) = link
            && !state.may_claim(link, name)
        {
            return None;
        }
        let pid = link
            .and_then(|link| state.links.get(&link))
            .and_then(|l| l.peer.pid);
        state.next_seen += 1;
        let seen = state.next_seen;
        let known = state.sessions.contains_key(name);
        let entry = state.sessions.entry(name.to_owned()).or_insert_with(|| {
            let agent: AgentHandle = InMemoryAgent::new(
                format!("inbox:{name}"),
                InMemorySession::new(name.to_owned()),
                [],
            );
            self.registry.enter_root(Arc::clone(&agent));
            SessionEntry {
                link: None,
                pid: None,
                seen: 0,
                client: None,
                cwd: None,
                agent,
            }
        });
        if link.is_some() {
            entry.link = link;
            entry.pid = pid;
            entry.seen = seen;
        }
        if client.is_some() {
            entry.client = client;
        }
        if cwd.is_some() {
            entry.cwd = cwd;
        }
        let agent = Arc::clone(&entry.agent);
        if let Some(link) = link.filter(|_| !known) {
            state.trim(link, name, &self.registry);
        }
        Some(agent)
    }

    fn open(
        self: &Arc<Self>,
        link: u64,
        session: String,
        call: CallId,
        questions: Vec<user_questions::Question>,
        timed: bool,
        ends_at_ms: Option<i64>,
    ) {
        let Some(agent) = self.session(&session, Some(link), None, None) else {
            refused(link, "open", &session);
            return;
        };
        let key = (session, call);
        {
            let mut state = lock(&self.state);
            if let Some(entry) = state.questions.get_mut(&key) {
                // Sent again by a host that linked again: the ask runs already.
                entry.link = link;
                return;
            }
            let (tx, rx) = oneshot::channel();
            state.questions.insert(
                key.clone(),
                QuestionEntry {
                    link,
                    timed,
                    ends_at_ms: ends_at_ms.filter(|_| timed),
                    verdict: Some(tx),
                    verdict_rx: Some(rx),
                    from_host: false,
                },
            );
        }
        let inner = Arc::clone(self);
        tokio::spawn(async move { inner.ask(key, agent, questions, timed).await });
        self.changed();
    }

    /// Asks the question in the inbox's seam and sends what its surfaces answered to the host.
    async fn ask(
        self: Arc<Self>,
        key: Key,
        agent: AgentHandle,
        questions: Vec<user_questions::Question>,
        timed: bool,
    ) {
        let outcome = if timed {
            // The host's window decides (its form may hold it): this one never closes first.
            self.seam
                .ask_timed(
                    TimedAskRequest::new(questions, agent),
                    key.1.clone(),
                    MAX_TIMEOUT_MS,
                )
                .await
        } else {
            let request =
                AskRequest::new(questions)
                    .with_agent(agent)
                    .with_wait(WaitKey::Indefinite {
                        call_id: key.1.clone(),
                    });
            self.seam.ask(request).await.map(TimedOutcome::Answered)
        };
        match outcome {
            Ok(TimedOutcome::Answered(answered)) => {
                let entry = lock(&self.state).questions.remove(&key);
                if let Some(entry) = entry.filter(|e| !e.from_host) {
                    self.deliver(
                        &key,
                        Some(entry.link),
                        answered.answers,
                        answered.provenance,
                    )
                    .await;
                }
            }
            // The seam said pending; the host says continued when its result is durable.
            Ok(TimedOutcome::Pending { .. }) => {
                lock(&self.state).questions.remove(&key);
            }
            Err(error) => {
                tracing::debug!(%error, call_id = %key.1, "an inbox question ended");
                lock(&self.state).questions.remove(&key);
            }
        }
        lock(&self.state).forget_if_idle(&key.0, &self.registry);
        self.changed();
    }

    /// An answer given in the inbox to a question in its window: to the host that asked, or,
    /// when it is gone, through the fallback (which repairs the call its host left open).
    async fn deliver(
        self: &Arc<Self>,
        key: &Key,
        question_link: Option<u64>,
        answers: AnswerBatch,
        provenance: Provenance,
    ) {
        // To the link that opened the question, while it speaks for the session.
        let link = {
            let state = lock(&self.state);
            (state.sessions.get(&key.0).and_then(|s| s.link))
                .filter(|link| Some(*link) == question_link)
                .and_then(|link| state.links.get(&link))
                .map(|l| l.tx.clone())
        };
        let message = ToHost::Answer {
            session: key.0.clone(),
            call: key.1.clone(),
            answers: answers.clone(),
            provenance: provenance.clone(),
        };
        if link.is_some_and(|tx| tx.send(message).is_ok()) {
            return;
        }
        let (session, call) = key.clone();
        let answered = self
            .fallback
            .submit(Submission::new(session, call, answers, provenance))
            .await;
        match answered {
            Ok(_) => {
                tracing::info!(call_id = %key.1, "answered in the log of a host that is gone");
            }
            Err(refusal) => {
                tracing::warn!(%refusal, call_id = %key.1, "the answer could not reach its question");
            }
        }
    }

    /// How the window of `key` ended, as the link that opened it says.
    fn verdict(&self, link: u64, key: &Key, verdict: Verdict) {
        let sender = {
            let mut state = lock(&self.state);
            let Some(entry) = state.questions.get_mut(key) else {
                return;
            };
            if entry.link != link {
                drop(state);
                refused(link, "over", &key.0);
                return;
            }
            if matches!(verdict, Verdict::Answered(..)) {
                entry.from_host = true;
            }
            entry.verdict.take()
        };
        if let Some(sender) = sender {
            let _ = sender.send(verdict);
        }
    }

    /// A host went: its sessions are the fallback's now, its timed questions continued (their
    /// logs hold them open without a writer; answering repairs them first, through the
    /// fallback), its blocking ones gone.
    fn unlink(&self, link: u64) {
        let (verdicts, continued) = {
            let mut state = lock(&self.state);
            state.links.remove(&link);
            // Late answers that host never took: their waiters learn it now (and go to the logs).
            state.late.retain(|_, (to, _)| *to != link);
            let mut went = Vec::new();
            for (name, session) in &mut state.sessions {
                if session.link == Some(link) {
                    session.link = None;
                    went.push(name.clone());
                }
            }
            // Its sessions with nothing in the inbox's seam are forgotten now, the others once
            // their questions end there.
            for name in went {
                state.forget_if_idle(&name, &self.registry);
            }
            let mut continued = Vec::new();
            let mut verdicts = Vec::new();
            for (key, question) in &mut state.questions {
                if question.link != link {
                    continue;
                }
                if question.timed {
                    continued.push(key.clone());
                }
                verdicts.extend(question.verdict.take());
            }
            (verdicts, continued)
        };
        for verdict in verdicts {
            let _ = verdict.send(Verdict::Gone);
        }
        for (session, call) in continued {
            self.publish(&session, &call, QuestionEventKind::Continued);
        }
        tracing::info!(link, "a host went away");
        self.changed();
    }

    fn take_verdict(&self, key: &Key) -> Option<oneshot::Receiver<Verdict>> {
        lock(&self.state)
            .questions
            .get_mut(key)
            .and_then(|q| q.verdict_rx.take())
    }

    /// Sends a late answer to the linked host of `session` and awaits its word (at most
    /// [`LATE_WITHIN`]); `None` when no host is linked for the session, or it went before it said
    /// anything (the logs take the answer then).
    async fn through_host(
        &self,
        session: &str,
        call_id: &CallId,
        answers: AnswerBatch,
        provenance: Provenance,
    ) -> Option<Result<Accepted, LateRefusal>> {
        let (word, id) = {
            let mut state = lock(&self.state);
            let link = state.sessions.get(session).and_then(|s| s.link)?;
            let tx = state.links.get(&link)?.tx.clone();
            state.next_late += 1;
            let id = state.next_late;
            let (wtx, wrx) = oneshot::channel();
            state.late.insert(id, (link, wtx));
            let sent = tx.send(ToHost::Late {
                id,
                session: session.to_owned(),
                call: call_id.clone(),
                answers,
                provenance,
            });
            if sent.is_err() {
                state.late.remove(&id);
                return None;
            }
            (wrx, id)
        };
        let outcome = tokio::time::timeout(LATE_WITHIN, word).await;
        lock(&self.state).late.remove(&id);
        match outcome {
            Ok(Ok(result)) => Some(result.into_outcome()),
            // The host went before it said anything: the logs take the answer.
            Ok(Err(_)) => None,
            Err(_) => Some(Err(LateRefusal::Unavailable(DeskError::new(
                DeskErrorKind::Unreachable,
                "INBOX_UNREACHABLE",
                "the agent's server did not say in time whether it took the answer; look at the question again before answering again",
            )))),
        }
    }

    /// Forwards the fallback's changes into the inbox's while anyone watches the inbox's desk.
    fn forward_fallback_changes(self: &Arc<Self>) {
        {
            let mut forwarding = lock_unpoisoned(&self.forwarding);
            if *forwarding || tokio::runtime::Handle::try_current().is_err() {
                return;
            }
            *forwarding = true;
        }
        let mut fallback = self.fallback.changes();
        let inner = Arc::downgrade(self);
        tokio::spawn(async move {
            loop {
                let unwatched = {
                    let Some(inner) = inner.upgrade() else { return };
                    async move { inner.changes.unwatched().await }
                };
                tokio::select! {
                    changed = fallback.changed() => {
                        let Some(inner) = inner.upgrade() else { return };
                        if !changed {
                            *lock_unpoisoned(&inner.forwarding) = false;
                            return;
                        }
                        inner.changed();
                    }
                    () = unwatched => {
                        if let Some(inner) = inner.upgrade() {
                            *lock_unpoisoned(&inner.forwarding) = false;
                        }
                        return;
                    }
                }
            }
        });
    }
}

/// The hosts' own outcomes, the last answerer of the inbox's seam.
struct HostOutcome {
    inner: Weak<Inner>,
}

#[async_trait]
impl Answerer for HostOutcome {
    async fn answer(
        &self,
        request: &AnswerRequest,
        next: Next<'_>,
    ) -> Result<Answered, AnswererError> {
        let call = match &request.wait {
            Some(WaitKey::Timed { call_id, .. } | WaitKey::Indefinite { call_id }) => {
                call_id.clone()
            }
            None => return next.run().await,
        };
        let (Some(inner), Some(agent)) = (self.inner.upgrade(), request.agent.as_ref()) else {
            return next.run().await;
        };
        let key = (agent.session().id().as_str().to_owned(), call);
        let Some(verdict) = inner.take_verdict(&key) else {
            return next.run().await;
        };
        drop(inner);
        let timed = matches!(request.wait, Some(WaitKey::Timed { .. }));
        let verdict = tokio::select! {
            verdict = verdict => verdict.unwrap_or(Verdict::Gone),
            () = request.cancel.cancelled() => return Err(UserQuestionError::ask_aborted().into()),
        };
        match verdict {
            Verdict::Answered(answers, provenance) => Ok(Answered {
                answers,
                provenance,
            }),
            Verdict::Pending | Verdict::Gone if timed => {
                Err(UserQuestionError::ask_timed_out().into())
            }
            Verdict::Pending | Verdict::Gone => Err(UserQuestionError::ask_aborted().into()),
            Verdict::Failed(code, message) => Err(UserQuestionError::new(
                code.map_or(ErrorCode::AskAborted, |c| ErrorCode::parse(&c)),
                message,
            )
            .into()),
        }
    }
}

/// The inbox as a question desk.
struct InboxDesk {
    inner: Arc<Inner>,
}

#[async_trait]
impl QuestionDesk for InboxDesk {
    async fn sessions(&self) -> Result<Vec<DeskSession>, DeskError> {
        self.inner.fallback.sessions().await
    }

    async fn answerable(&self) -> Result<Vec<DeskQuestion>, DeskError> {
        self.inner.fallback.answerable().await
    }

    async fn views(&self, session: Option<&str>) -> Result<Vec<SessionView>, DeskError> {
        self.inner.fallback.views(session).await
    }

    async fn find(&self, call_id: &CallId) -> Result<Vec<DeskQuestion>, DeskError> {
        self.inner.fallback.find(call_id).await
    }

    /// To the linked host of the session (one request over its link; its own desk waits for
    /// the call's continuation), else to the fallback.
    async fn submit(&self, submission: Submission) -> Result<Accepted, LateRefusal> {
        let Submission {
            session,
            call_id,
            answers,
            provenance,
        } = submission;
        let answers = match answers {
            pending_answer::Answers::Batch(batch) => batch,
            compose @ pending_answer::Answers::Compose(_) => {
                // Composed from the questions the logs hold.
                let questions = self
                    .inner
                    .fallback
                    .find(&call_id)
                    .await
                    .map_err(LateRefusal::Unavailable)?
                    .into_iter()
                    .find(|q| q.session == session)
                    .map(|q| q.questions);
                compose.into_batch(questions.as_deref())
            }
        };
        match self
            .inner
            .through_host(&session, &call_id, answers.clone(), provenance.clone())
            .await
        {
            // A host that no longer serves the session (an HTTP server's ended session): the
            // logs take the answer.
            Some(Err(LateRefusal::UnknownSession(_))) | None => {}
            Some(outcome) => {
                self.inner.changed();
                return outcome;
            }
        }
        let outcome = self
            .inner
            .fallback
            .submit(Submission::new(session, call_id, answers, provenance))
            .await;
        self.inner.changed();
        outcome
    }

    fn changes(&self) -> DeskChanges {
        let changes = self.inner.changes.subscribe();
        self.inner.forward_fallback_changes();
        changes
    }

    fn looking(&self, looking: bool) {
        self.inner.fallback.looking(looking);
    }

    /// As the question's host said when it handed the question over.
    fn window_left(&self, session: &str, call_id: &CallId) -> Option<Duration> {
        let state = lock(&self.inner.state);
        let ends_at_ms = state
            .questions
            .get(&(session.to_owned(), call_id.clone()))?
            .ends_at_ms?;
        let left = ends_at_ms.saturating_sub(user_questions::now_unix_ms());
        Some(Duration::from_millis(u64::try_from(left).unwrap_or(0)))
    }

    fn label(&self, session: &str) -> Option<String> {
        let state = lock(&self.inner.state);
        let entry = state.sessions.get(session)?;
        InboxSession {
            name: session.to_owned(),
            client: entry.client.clone(),
            cwd: entry.cwd.clone(),
            linked: entry.link.is_some(),
        }
        .label()
    }
}
