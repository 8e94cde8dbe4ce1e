//! The host's side: an answerer at the front of the host's waterfall that hands every question
//! of its sessions to the inbox and races the rest of the waterfall (the client's form) for it,
//! and the link that keeps a connection to the inbox, linking again when it went.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use futures::future::BoxFuture;
use pending_answer::{QuestionDesk, Submission};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::{Notify, mpsc, oneshot};
use tokio_util::sync::CancellationToken;
use user_questions::sync::lock_unpoisoned as lock;
use user_questions::{
    AnswerBatch, AnswerPath, AnswerRequest, Answered, Answerer, AnswererError, AnswererGuard,
    CallId, ErrorCode, Next, Provenance, Question, QuestionEventKind, Received, RegisterOptions,
    SessionId, UserQuestionError, UserQuestions, WaitKey, WeakUserQuestions, async_trait,
};

use crate::wire::{Over, Reader, ToHost, ToInbox, WireLate, Writer};

/// The registration name of the link's answerer in a host's seam.
pub const LINK_ANSWERER: &str = "inbox";

/// A host's session as the inbox shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LinkedSession {
    /// The session's name in the store both the host and the inbox's fallback read (a log's
    /// name in the state directory).
    pub name: String,
    /// The client the session serves (an MCP client's name).
    pub client: Option<String>,
    /// The client's working directory, when known.
    pub cwd: Option<String>,
}

/// What the link needs of its host.
pub trait LinkedHost: Send + Sync + 'static {
    /// The session of an asking agent's session `id`, as the inbox shows it; `None`: the
    /// question is not handed to the inbox.
    fn session(&self, id: &SessionId) -> Option<LinkedSession>;

    /// The host's question desk, which names its sessions as [`LinkedSession::name`] does: an
    /// answer the inbox gave after a question's window (or as it closed) is submitted there,
    /// and the desk waits for the call's continuation itself.
    fn desk(&self) -> Arc<dyn QuestionDesk>;
}

/// Opens a connection to the inbox (starting it first when none runs, if the caller can).
pub type Connect = Arc<dyn Fn() -> BoxFuture<'static, std::io::Result<Stream>> + Send + Sync>;

/// A connection to the inbox.
pub type Stream = Box<dyn AsyncReadWrite>;

/// Any byte stream both ways (a Unix socket, a test's in-memory pair).
pub trait AsyncReadWrite: AsyncRead + AsyncWrite + Send + Unpin + 'static {}
impl<T: AsyncRead + AsyncWrite + Send + Unpin + 'static> AsyncReadWrite for T {}

/// How soon a waiting question's session is first looked at again for what its host learnt of
/// it (the client's folder, which `roots/list` brings within moments); each later look waits
/// twice as long, up to [`RELABEL_AT_MOST`], so a question that waits long costs no steady
/// wake-ups.
pub const RELABEL_EVERY: Duration = Duration::from_secs(1);

/// The longest pause between two looks at a waiting question's session.
pub const RELABEL_AT_MOST: Duration = Duration::from_mins(1);

/// The host's link to the inbox: registered in the host's seam, connected until dropped.
pub struct InboxLink {
    inner: Arc<LinkInner>,
    _answerer: AnswererGuard,
    stop: CancellationToken,
}

impl std::fmt::Debug for InboxLink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InboxLink")
            .field("connected", &self.is_connected())
            .finish_non_exhaustive()
    }
}

impl Drop for InboxLink {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

struct LinkInner {
    host: Arc<dyn LinkedHost>,
    out: Mutex<Option<mpsc::UnboundedSender<ToInbox>>>,
    connected: AtomicBool,
    /// The link reached an inbox once: questions are handed over (and wait for it) from then on.
    reached: AtomicBool,
    open: Mutex<HashMap<(String, CallId), OpenQuestion>>,
    sessions: Mutex<HashMap<String, LinkedSession>>,
    /// The sessions seen asking, by id, for events that come after their host forgot them.
    known: Mutex<HashMap<SessionId, LinkedSession>>,
    next_ask: AtomicU64,
    /// Messages handed to the current connection's writer and not written yet.
    unsent: AtomicUsize,
    /// Told when a question is taken off the inbox or the writer catches up ([`InboxLink::close`]).
    changed: Notify,
}

struct OpenQuestion {
    questions: Vec<Question>,
    timed: bool,
    asked_at_ms: i64,
    /// When the window closes (wall-clock Unix ms), for the inbox to show the time left.
    ends_at_ms: Option<i64>,
    answer: Option<oneshot::Sender<(AnswerBatch, Provenance)>>,
}

impl InboxLink {
    /// Registers the link's answerer at the front of `seam`'s waterfall and starts linking to
    /// the inbox through `connect`, again whenever the connection goes (after 1 s, then up to
    /// 5 s apart).
    ///
    /// # Panics
    ///
    /// Outside a Tokio runtime.
    pub fn start(seam: &UserQuestions, host: Arc<dyn LinkedHost>, connect: Connect) -> Self {
        let inner = Arc::new(LinkInner {
            host,
            out: Mutex::new(None),
            connected: AtomicBool::new(false),
            reached: AtomicBool::new(false),
            open: Mutex::new(HashMap::new()),
            sessions: Mutex::new(HashMap::new()),
            known: Mutex::new(HashMap::new()),
            next_ask: AtomicU64::new(1),
            unsent: AtomicUsize::new(0),
            changed: Notify::new(),
        });
        let answerer = seam.register(
            Arc::new(LinkAnswerer {
                inner: Arc::downgrade(&inner),
                seam: seam.downgrade(),
            }),
            RegisterOptions::global(LINK_ANSWERER).prepended(),
        );
        let stop = CancellationToken::new();
        tokio::spawn(relay_events(
            Arc::downgrade(&inner),
            seam.subscribe(),
            stop.clone(),
        ));
        tokio::spawn(keep_linked(Arc::downgrade(&inner), connect, stop.clone()));
        Self {
            inner,
            _answerer: answerer,
            stop,
        }
    }

    /// Whether a connection to the inbox is up now.
    pub fn is_connected(&self) -> bool {
        self.inner.connected.load(Ordering::SeqCst)
    }

    /// Waits until the link is connected (for a command that reports where the inbox is).
    pub async fn connected(&self) {
        while !self.is_connected() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Unlinks once the inbox has been told how every question handed to it ended (the host's
    /// seam's last events relayed and written), waiting at most `within`: a host that ends right
    /// after its last call leaves no card behind. Dropping the link instead cuts at once.
    pub async fn close(self, within: Duration) {
        let inner = &self.inner;
        let told = async {
            loop {
                let changed = inner.changed.notified();
                let unsent = inner.unsent.load(Ordering::SeqCst);
                if lock(&inner.open).is_empty() && (unsent == 0 || !self.is_connected()) {
                    return;
                }
                changed.await;
            }
        };
        let _ = tokio::time::timeout(within, told).await;
    }
}

impl LinkInner {
    fn send(&self, message: ToInbox) {
        if let Some(out) = lock(&self.out).as_ref() {
            self.unsent.fetch_add(1, Ordering::SeqCst);
            if out.send(message).is_err() {
                self.unsent.fetch_sub(1, Ordering::SeqCst);
            }
        }
    }

    /// Announces `session` once per connection.
    fn announce(&self, session: &LinkedSession) {
        let new = lock(&self.sessions)
            .insert(session.name.clone(), session.clone())
            .as_ref()
            != Some(session);
        if new {
            self.send(session_message(session));
        }
    }

    fn remove(&self, key: &(String, CallId)) -> Option<OpenQuestion> {
        let removed = lock(&self.open).remove(key);
        self.changed.notify_waiters();
        removed
    }

    /// Takes the question off the inbox, telling it how its window ended (once). Sent under
    /// the lock of what is open, so a connection's first snapshot and this never cross.
    fn over(&self, key: &(String, CallId), how: Over) {
        let mut open = lock(&self.open);
        if open.remove(key).is_some() {
            self.send(ToInbox::Over {
                session: key.0.clone(),
                call: key.1.clone(),
                how,
            });
        }
        drop(open);
        self.changed.notify_waiters();
    }

    /// The session of `id`: the host's word, else what it said while the session asked (an
    /// HTTP host's session can be gone while its call's window still runs).
    fn session_of(&self, id: &SessionId) -> Option<LinkedSession> {
        match self.host.session(id) {
            Some(session) => {
                lock(&self.known).insert(id.clone(), session.clone());
                Some(session)
            }
            None => lock(&self.known).get(id).cloned(),
        }
    }

    /// Hands a question to the inbox: what is open gets it (re-sent on every new connection),
    /// and the inbox is told now, under the same lock.
    fn hand_over(
        self: &Arc<Self>,
        session: &str,
        call: CallId,
        questions: &[Question],
        timed: bool,
        keyed: bool,
        ends_at_ms: Option<i64>,
    ) -> Handed {
        let key = (session.to_owned(), call);
        let (tx, rx) = oneshot::channel();
        let asked_at_ms = user_questions::now_unix_ms();
        let mut open = lock(&self.open);
        open.insert(
            key.clone(),
            OpenQuestion {
                questions: questions.to_vec(),
                timed,
                asked_at_ms,
                ends_at_ms,
                answer: Some(tx),
            },
        );
        self.send(ToInbox::Open {
            session: key.0.clone(),
            call: key.1.clone(),
            questions: questions.to_vec(),
            timed,
            asked_at_ms,
            ends_at_ms,
        });
        drop(open);
        Handed {
            inner: Arc::clone(self),
            key,
            keyed,
            over: false,
            answer: Some(rx),
        }
    }

    /// An answer from the inbox: to the question's answerer while it waits, else to the host's
    /// desk (a late answer: the desk takes it once the call is continued).
    fn on_answer(
        self: &Arc<Self>,
        session: String,
        call: CallId,
        answers: AnswerBatch,
        provenance: Provenance,
    ) {
        let key = (session, call);
        let waiting = lock(&self.open).get_mut(&key).and_then(|q| q.answer.take());
        let (answers, provenance) = match waiting {
            Some(tx) => match tx.send((answers, provenance)) {
                Ok(()) => return,
                Err(unsent) => unsent,
            },
            None => (answers, provenance),
        };
        self.submit_late(key.0, key.1, answers, provenance);
    }

    /// An answer the inbox gave once the window closed: submitted to the host's desk, which
    /// takes it once the call is continued, or says why not (logged: the inbox heard nothing
    /// back for it).
    fn submit_late(
        &self,
        session: String,
        call: CallId,
        answers: AnswerBatch,
        provenance: Provenance,
    ) {
        let desk = self.host.desk();
        tokio::spawn(async move {
            let submission = Submission::new(session, call.clone(), answers, provenance);
            if let Err(refusal) = desk.submit(submission).await {
                tracing::warn!(%refusal, call_id = %call, "the inbox's answer came as the window closed and was refused");
            }
        });
    }

    fn on_message(self: &Arc<Self>, message: ToHost) {
        match message {
            ToHost::Answer {
                session,
                call,
                answers,
                provenance,
            } => self.on_answer(session, call, answers, provenance),
            ToHost::Late {
                id,
                session,
                call,
                answers,
                provenance,
            } => {
                let desk = self.host.desk();
                let inner = Arc::clone(self);
                tokio::spawn(async move {
                    let submission = Submission::new(session, call, answers, provenance);
                    let outcome = desk.submit(submission).await;
                    inner.send(ToInbox::LateReply {
                        id,
                        result: WireLate::from_outcome(&outcome),
                    });
                });
            }
            // The inbox closes the connection after this; the link tries again later.
            ToHost::Refused { code, message } => tracing::warn!(
                code = %user_questions::sanitize::visible(&code),
                message = %user_questions::sanitize::visible(&message),
                "the inbox refused the link"
            ),
            // A shell's word: never sent to a host.
            ToHost::Answered { .. } | ToHost::Noted { .. } => {}
        }
    }
}

fn session_message(session: &LinkedSession) -> ToInbox {
    ToInbox::Session {
        session: session.name.clone(),
        client: session.client.clone(),
        cwd: session.cwd.clone(),
    }
}

/// Connects, says hello, hands over what is open, and serves the connection; again when it goes.
async fn keep_linked(inner: Weak<LinkInner>, connect: Connect, stop: CancellationToken) {
    let mut pause = Duration::from_secs(1);
    loop {
        let stream = tokio::select! {
            () = stop.cancelled() => return,
            stream = connect() => stream,
        };
        match stream {
            Ok(stream) => {
                pause = Duration::from_secs(1);
                let Some(link) = inner.upgrade() else { return };
                tokio::select! {
                    () = stop.cancelled() => return,
                    () = serve(link, stream) => {}
                }
            }
            Err(error) => tracing::debug!(%error, "the inbox cannot be reached yet"),
        }
        tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep(pause) => {}
        }
        pause = (pause * 2).min(Duration::from_secs(5));
    }
}

async fn serve(inner: Arc<LinkInner>, stream: Stream) {
    let (read, write) = tokio::io::split(stream);
    let (tx, mut rx) = mpsc::unbounded_channel::<ToInbox>();
    {
        // What the inbox must know first: who this is, its sessions, and what is open now. The
        // connection is made the current one under the lock of what is open, so whatever
        // changes next (a window closing, a new question) is sent after this, never lost.
        let open = lock(&inner.open);
        let queue = |message: ToInbox| {
            if tx.send(message).is_ok() {
                inner.unsent.fetch_add(1, Ordering::SeqCst);
            }
        };
        queue(ToInbox::Hello {
            pid: std::process::id(),
        });
        for session in lock(&inner.sessions).values() {
            queue(session_message(session));
        }
        for ((session, call), open) in open.iter() {
            queue(ToInbox::Open {
                session: session.clone(),
                call: call.clone(),
                questions: open.questions.clone(),
                timed: open.timed,
                asked_at_ms: open.asked_at_ms,
                ends_at_ms: open.ends_at_ms,
            });
        }
        *lock(&inner.out) = Some(tx);
    }
    inner.connected.store(true, Ordering::SeqCst);
    inner.reached.store(true, Ordering::SeqCst);
    let written = Arc::clone(&inner);
    let writer = tokio::spawn(async move {
        let mut writer = Writer::new(write);
        while let Some(message) = rx.recv().await {
            let sent = writer.send(&message).await;
            let _ = (written.unsent).fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                Some(n.saturating_sub(1))
            });
            written.changed.notify_waiters();
            if sent.is_err() {
                return;
            }
        }
    });
    let _connection = Connection {
        inner: Arc::clone(&inner),
        writer,
    };
    let mut reader = Reader::<_, ToHost>::new(read);
    while let Some(message) = reader.next().await {
        inner.on_message(message);
    }
}

/// The connection in use: dropping it (the inbox went, the link stopped) stops its writer.
struct Connection {
    inner: Arc<LinkInner>,
    writer: tokio::task::JoinHandle<()>,
}

impl Drop for Connection {
    fn drop(&mut self) {
        self.inner.connected.store(false, Ordering::SeqCst);
        *lock(&self.inner.out) = None;
        self.inner.unsent.store(0, Ordering::SeqCst);
        self.inner.changed.notify_waiters();
        self.writer.abort();
    }
}

/// Tells the inbox how the host's seam saw its calls end: pending, continued, cancelled, and
/// late replies admitted.
async fn relay_events(
    inner: Weak<LinkInner>,
    mut events: user_questions::QuestionEvents,
    stop: CancellationToken,
) {
    loop {
        let received = tokio::select! {
            () = stop.cancelled() => return,
            received = events.recv() => received,
        };
        let Some(received) = received else { return };
        let Some(inner) = inner.upgrade() else { return };
        let Received::Event(event) = received else {
            continue;
        };
        let (Some(call), Some(session_id)) = (event.call_id, event.session_id) else {
            continue;
        };
        let Some(session) = inner.session_of(&session_id) else {
            continue;
        };
        let key = (session.name, call);
        match event.kind {
            QuestionEventKind::Pending => inner.over(&key, Over::Pending),
            QuestionEventKind::Cancelled { code } => inner.over(
                &key,
                Over::Failed {
                    code: code.map(|c| c.as_str().to_owned()),
                    message: "The question was closed.".to_owned(),
                },
            ),
            QuestionEventKind::Continued => inner.send(ToInbox::Continued {
                session: key.0,
                call: key.1,
            }),
            QuestionEventKind::Answered {
                path: AnswerPath::Late,
                provenance,
            } => inner.send(ToInbox::Settled {
                session: key.0,
                call: key.1,
                provenance,
            }),
            QuestionEventKind::Answered { .. }
            | QuestionEventKind::Opened { .. }
            | QuestionEventKind::Claimed { .. } => {}
        }
    }
}

/// The link's answerer in the host's seam.
struct LinkAnswerer {
    inner: Weak<LinkInner>,
    /// To read how long a timed question's window has left, without holding it.
    seam: WeakUserQuestions,
}

/// Takes an unkeyed question off the inbox however the answerer's future ends.
struct Handed {
    inner: Arc<LinkInner>,
    key: (String, CallId),
    keyed: bool,
    over: bool,
    /// Where the inbox's answer comes while the answerer waits.
    answer: Option<oneshot::Receiver<(AnswerBatch, Provenance)>>,
}

impl Handed {
    /// The inbox's answer; `None` when its sender went (the question was taken off).
    async fn received(&mut self) -> Option<(AnswerBatch, Provenance)> {
        match self.answer.as_mut() {
            Some(rx) => rx.await.ok(),
            None => std::future::pending().await,
        }
    }
}

impl Drop for Handed {
    fn drop(&mut self) {
        if self.over {
            return;
        }
        if self.keyed {
            // The seam's event (pending or cancelled) tells the inbox; an answer that comes
            // meanwhile goes late, and so does one that came just as the future was dropped.
            if let Some(open) = lock(&self.inner.open).get_mut(&self.key) {
                open.answer = None;
            }
            if let Some(mut rx) = self.answer.take() {
                rx.close();
                if let Ok((answers, provenance)) = rx.try_recv() {
                    self.inner.submit_late(
                        self.key.0.clone(),
                        self.key.1.clone(),
                        answers,
                        provenance,
                    );
                }
            }
            return;
        }
        self.inner.over(
            &self.key,
            Over::Failed {
                code: Some(ErrorCode::AskAborted.as_str().to_owned()),
                message: "The question was withdrawn.".to_owned(),
            },
        );
    }
}

#[async_trait]
impl Answerer for LinkAnswerer {
    /// Hands the question to the inbox and races the rest of the waterfall: the inbox's answer
    /// (the page, a phone, a shell) or the rest's (the client's form), whichever comes first.
    /// With nobody else to answer (`NO_PROVIDER`: a client without forms), the inbox alone.
    async fn answer(
        &self,
        request: &AnswerRequest,
        next: Next<'_>,
    ) -> Result<Answered, AnswererError> {
        let Some(inner) = self.inner.upgrade() else {
            return next.run().await;
        };
        let session = request
            .agent
            .as_ref()
            .and_then(|agent| inner.session_of(agent.session().id()));
        let Some(session) = session.filter(|_| inner.reached.load(Ordering::SeqCst)) else {
            return next.run().await;
        };
        let (call, keyed, timed) = match &request.wait {
            Some(WaitKey::Timed { call_id, .. }) => (call_id.clone(), true, true),
            Some(WaitKey::Indefinite { call_id }) => (call_id.clone(), true, false),
            None => (
                CallId::from(format!(
                    "ask-{}-{}",
                    std::process::id(),
                    inner.next_ask.fetch_add(1, Ordering::Relaxed)
                )),
                false,
                false,
            ),
        };
        // The time left as the window opens: the inbox counts it down; the seam here closes it.
        let ends_at_ms = match (&request.agent, self.seam.upgrade()) {
            (Some(agent), Some(seam)) if timed => seam
                .wait_remaining(agent, &call)
                .ok()
                .flatten()
                .map(|left| {
                    let left = i64::try_from(left.as_millis()).unwrap_or(i64::MAX);
                    user_questions::now_unix_ms().saturating_add(left)
                }),
            _ => None,
        };
        inner.announce(&session);
        let mut handed = inner.hand_over(
            &session.name,
            call,
            &request.questions,
            timed,
            keyed,
            ends_at_ms,
        );
        let rest = next.run();
        tokio::pin!(rest);
        let mut rest_done = false;
        // What the host learns of the session later (the client's folder, from `roots/list`)
        // reaches the inbox while the question waits.
        let mut pause = RELABEL_EVERY;
        let relabel = tokio::time::sleep(pause);
        tokio::pin!(relabel);
        let session_id = request.agent.as_ref().map(|a| a.session().id().clone());
        loop {
            tokio::select! {
                biased;
                answer = handed.received() => {
                    let Some((answers, provenance)) = answer else {
                        return Err(UserQuestionError::ask_aborted().into());
                    };
                    handed.over = true;
                    inner.remove(&handed.key);
                    return Ok(Answered { answers, provenance });
                }
                () = request.cancel.cancelled() => {
                    return Err(UserQuestionError::ask_aborted().into());
                }
                () = &mut relabel => {
                    pause = (pause * 2).min(RELABEL_AT_MOST);
                    relabel.as_mut().reset(tokio::time::Instant::now() + pause);
                    if let Some(session) = session_id.as_ref().and_then(|id| inner.session_of(id)) {
                        inner.announce(&session);
                    }
                }
                result = &mut rest, if !rest_done => match result {
                    Ok(answered) => {
                        handed.over = true;
                        inner.over(&handed.key, Over::Answered {
                            answers: answered.answers.clone(),
                            provenance: answered.provenance.clone(),
                        });
                        return Ok(answered);
                    }
                    Err(error) if error.is(&ErrorCode::NoProvider) => rest_done = true,
                    Err(error) => {
                        if !keyed {
                            handed.over = true;
                            inner.over(&handed.key, Over::Failed {
                                code: error.code().map(str::to_owned),
                                message: error.to_string(),
                            });
                        }
                        return Err(error);
                    }
                },
            }
        }
    }
}
