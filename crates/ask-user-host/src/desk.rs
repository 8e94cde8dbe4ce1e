//! Question desks over what a host holds: the sessions this process runs ([`LiveDesk`]) and
//! session logs in any [`SessionStore`] ([`LogDesk`]), opened for write only to take an answer.
//!
//! Both implement [`QuestionDesk`] (the contract of `pending-answer`): a surface or a command
//! lists their questions and submits an answer without knowing where the session lives. Their
//! blocking work (a log read, an append and its sync) runs off the caller's task, on tokio's
//! blocking threads.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use pending_answer::{
    Accepted, Answers, ChangeSignal, DeskChanges, DeskError, DeskErrorKind, DeskQuestion,
    DeskSession, DeskState, LateRefusal, QuestionDesk, SessionView, Submission, when_continued,
};
use session_log::{
    EventBody, JsonlStore, LogVisitor, Scanned, SessionHeader, SessionStore, StoreError,
};
use user_questions::sync::lock_unpoisoned;
use user_questions::{CallId, InMemoryAgentRegistry, Provenance, async_trait};
use user_questions_projection::{ActiveState, Replay, Standing, UserQuestionsState};

use crate::checkpoint::{CHECKPOINT_LAG, CheckpointPolicy, load_projection};
use crate::host::{Host, HostError, HostRuntime, Resumed, SessionOptions};

/// How often a [`LogDesk`] looks at its store for logs that changed, while a surface watches it.
pub const LOG_WATCH_EVERY: Duration = Duration::from_secs(2);

/// The sessions this process runs, each named by its session id: their questions come from
/// their live projections, and a late answer is queued in the session's durable inbox for its own
/// loop to admit ([`Accepted::Queued`]). Hosts are held weakly: a session that ended leaves the
/// desk. Its changes are its runtime's ([`HostRuntime::changes`]).
#[derive(Default)]
pub struct LiveDesk {
    hosts: Mutex<Vec<Weak<Host>>>,
    /// Sessions named by their name in the store instead ([`LiveDesk::of_named`]).
    by_store_name: bool,
}

impl std::fmt::Debug for LiveDesk {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LiveDesk")
            .field("sessions", &self.live().len())
            .finish()
    }
}

impl LiveDesk {
    /// A desk over `hosts` (sessions of one runtime).
    pub fn of<'a>(hosts: impl IntoIterator<Item = &'a Arc<Host>>) -> Arc<Self> {
        let desk = Self::default();
        for host in hosts {
            desk.add(host);
        }
        Arc::new(desk)
    }

    /// A desk over `hosts` naming each session by its name in its store (a log's file name), as
    /// [`LogDesk`] and the machine's inbox name them: the desk a host linked to the inbox gives
    /// it, so that an answer the inbox takes late reaches the live session.
    pub fn of_named<'a>(hosts: impl IntoIterator<Item = &'a Arc<Host>>) -> Arc<Self> {
        let desk = Self {
            by_store_name: true,
            ..Self::default()
        };
        for host in hosts {
            desk.add(host);
        }
        Arc::new(desk)
    }

    /// How the desk names `host`'s session.
    fn name_of(&self, host: &Host) -> String {
        if self.by_store_name {
            host.name().to_owned()
        } else {
            host.session_id().as_str().to_owned()
        }
    }

    /// Shows the questions of `host` too.
    pub fn add(&self, host: &Arc<Host>) {
        let mut hosts = lock_unpoisoned(&self.hosts);
        hosts.retain(|host| host.strong_count() > 0);
        hosts.push(Arc::downgrade(host));
    }

    fn live(&self) -> Vec<Arc<Host>> {
        lock_unpoisoned(&self.hosts)
            .iter()
            .filter_map(Weak::upgrade)
            .collect()
    }

    fn host(&self, session: &str) -> Option<Arc<Host>> {
        self.live()
            .into_iter()
            .find(|host| self.name_of(host) == session)
    }

    /// One live session's questions as the desk lists them.
    fn session_of(&self, host: &Host) -> DeskSession {
        let state = host.projection();
        let session = self.name_of(host);
        let waiting = host.late().waiting();
        let questions = state
            .view()
            .active
            .iter()
            .map(|active| DeskQuestion {
                session: session.clone(),
                call_id: active.call_id.clone(),
                questions: active.questions.clone(),
                state: desk_state(active.state),
                answerable: active.state == ActiveState::Continued,
                interrupted: false,
                answered: waiting
                    .iter()
                    .any(|m| pending_answer::is_reply_for(m, &active.call_id)),
                asked_at_ms: None,
            })
            .collect();
        DeskSession {
            session,
            questions,
            settled: Some(state.view().settled.len()),
            writing: true,
            agent: None,
            folder: None,
        }
    }
}

#[async_trait]
impl QuestionDesk for LiveDesk {
    async fn sessions(&self) -> Result<Vec<DeskSession>, DeskError> {
        Ok(self
            .live()
            .iter()
            .map(|host| self.session_of(host))
            .collect())
    }

    async fn views(&self, session: Option<&str>) -> Result<Vec<SessionView>, DeskError> {
        if let Some(session) = session
            && self.host(session).is_none()
        {
            return Err(DeskError::unknown_session(session));
        }
        Ok(self
            .live()
            .iter()
            .filter(|host| session.is_none_or(|s| self.name_of(host) == s))
            .map(|host| SessionView {
                session: self.name_of(host),
                view: host.projection().view().clone(),
            })
            .collect())
    }

    async fn find(&self, call_id: &CallId) -> Result<Vec<DeskQuestion>, DeskError> {
        let mut found = Vec::new();
        for host in self.live() {
            let state = host.projection();
            let question = match state.standing(call_id) {
                Standing::Unknown => continue,
                Standing::Settled(_) => DeskQuestion {
                    session: self.name_of(&host),
                    call_id: call_id.clone(),
                    questions: Vec::new(),
                    state: DeskState::Settled,
                    answerable: false,
                    interrupted: false,
                    answered: false,
                    asked_at_ms: None,
                },
                Standing::Open(_) | Standing::Continued(_) => {
                    match self
                        .session_of(&host)
                        .questions
                        .into_iter()
                        .find(|q| &q.call_id == call_id)
                    {
                        Some(question) => question,
                        None => continue,
                    }
                }
            };
            found.push(question);
        }
        Ok(found)
    }

    /// Queued in the session's inbox through its live host (`LateReplies::queue`), once the call
    /// is continued: an answer given as its window closed waits for that.
    async fn submit(&self, submission: Submission) -> Result<Accepted, LateRefusal> {
        let Submission {
            session,
            call_id,
            answers,
            provenance,
        } = submission;
        let host = self
            .host(&session)
            .ok_or_else(|| LateRefusal::UnknownSession(session.clone()))?;
        let questions = host
            .projection()
            .standing(&call_id)
            .active()
            .map(|active| active.questions.clone());
        let batch = answers.into_batch(questions.as_deref());
        let seam = host.seam().clone();
        let session_id = host.session_id();
        let queued = when_continued(&seam, &session_id, &call_id, || {
            let (host, call_id, batch, provenance) = (
                Arc::clone(&host),
                call_id.clone(),
                batch.clone(),
                provenance.clone(),
            );
            // The append and its sync block: off the caller's task.
            async move {
                tokio::task::spawn_blocking(move || host.late().queue(&call_id, batch, provenance))
                    .await?
            }
        })
        .await?;
        Ok(Accepted::Queued(queued))
    }

    fn changes(&self) -> DeskChanges {
        self.live()
            .first()
            .map_or_else(DeskChanges::never, |host| host.runtime().changes())
    }
}

/// What a [`LogDesk`] calls after it opened a log for write to take an answer: the log's name on
/// the desk and what the open found (restored messages, repairs), for a command to report.
pub type OpenHook = Box<dyn Fn(&str, &Resumed) + Send + Sync>;

/// Session logs in stores, read without a lock, and opened for write only to take an answer:
/// the answer is queued and admitted in a turn of its own ([`Accepted::Admitted`]), so the
/// question is settled when [`submit`](QuestionDesk::submit) returns. A log that cannot be read
/// is left out of a listing of several (with a warning) and is the error of a listing of one.
/// This is what a command or a page does with logs no process runs (`ask-user answer`,
/// `ask-user serve LOG…`, the inbox's own listing of a state directory).
///
/// Opening a log for write runs resume repair first, so a call its host left open (a crash in the
/// window) is answered as a continued one. A reply an earlier host queued and never admitted is
/// admitted instead of the new answer, which is refused as `REPLY_QUEUED`
/// ([`LateRefusal::ReplyQueued`] with `settled_by`).
///
/// Its changes: while a surface watches it ([`changes`](QuestionDesk::changes)), it looks at the
/// store's logs every [`LOG_WATCH_EVERY`] (their names and lengths: an answer from a shell, a
/// session started or grown) and ticks when they changed, and after every answer it takes.
#[derive(Clone)]
pub struct LogDesk {
    inner: Arc<Inner>,
}

struct Inner {
    source: Source,
    on_open: Option<OpenHook>,
    changes: ChangeSignal,
    /// Whether a task watches the store for the change signal now.
    watching: Mutex<bool>,
}

enum Source {
    /// These logs, each named by its label.
    Logs(Vec<DeskLog>),
    /// Every log of the store, named as the store names it (listed anew on every look).
    Store(Arc<dyn SessionStore>),
}

struct DeskLog {
    label: String,
    store: Arc<dyn SessionStore>,
    name: String,
}

impl std::fmt::Debug for LogDesk {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let source = match &self.inner.source {
            Source::Logs(logs) => logs.iter().map(|l| l.label.clone()).collect::<Vec<_>>(),
            Source::Store(_) => vec!["(every log of a store)".to_owned()],
        };
        f.debug_struct("LogDesk")
            .field("logs", &source)
            .field("on_open", &self.inner.on_open.is_some())
            .finish()
    }
}

impl LogDesk {
    fn with_source(source: Source) -> Self {
        Self {
            inner: Arc::new(Inner {
                source,
                on_open: None,
                changes: ChangeSignal::new(),
                watching: Mutex::new(false),
            }),
        }
    }

    /// The JSONL logs at `paths`, each named by its path as given.
    pub fn files<P: AsRef<Path>>(paths: impl IntoIterator<Item = P>) -> Result<Self, StoreError> {
        let mut logs = Vec::new();
        for path in paths {
            let path = path.as_ref();
            let (store, name) = JsonlStore::for_file(path)?;
            logs.push(DeskLog {
                label: path.display().to_string(),
                store: Arc::new(store),
                name,
            });
        }
        Ok(Self::with_source(Source::Logs(logs)))
    }

    /// Every log of `store`, named as the store lists them, listed anew on every look (a log
    /// created later is shown too).
    pub fn store(store: Arc<dyn SessionStore>) -> Self {
        Self::with_source(Source::Store(store))
    }

    /// Calls `hook` after every open for write, with the log's name and what the open found.
    #[must_use]
    pub fn on_open(self, hook: impl Fn(&str, &Resumed) + Send + Sync + 'static) -> Self {
        let source = match &self.inner.source {
            Source::Logs(logs) => Source::Logs(logs.iter().map(DeskLog::clone_log).collect()),
            Source::Store(store) => Source::Store(Arc::clone(store)),
        };
        Self {
            inner: Arc::new(Inner {
                source,
                on_open: Some(Box::new(hook)),
                changes: ChangeSignal::new(),
                watching: Mutex::new(false),
            }),
        }
    }

    /// Runs `work` on the desk off the caller's task (logs are read and written with blocking
    /// I/O).
    async fn blocking<T: Send + 'static>(
        &self,
        work: impl FnOnce(&Inner) -> T + Send + 'static,
    ) -> Result<T, tokio::task::JoinError> {
        let inner = Arc::clone(&self.inner);
        tokio::task::spawn_blocking(move || work(&inner)).await
    }

    /// Looks at the store's logs every [`LOG_WATCH_EVERY`] while anyone watches the desk, and
    /// ticks its change signal when they changed.
    fn watch(&self) {
        {
            let mut watching = lock_unpoisoned(&self.inner.watching);
            if *watching || tokio::runtime::Handle::try_current().is_err() {
                return;
            }
            *watching = true;
        }
        let inner = Arc::downgrade(&self.inner);
        tokio::spawn(async move {
            let mut seen = None;
            loop {
                let Some(desk) = inner.upgrade() else { return };
                if desk.changes.subscribers() == 0 {
                    *lock_unpoisoned(&desk.watching) = false;
                    return;
                }
                let look = Arc::clone(&desk);
                let signature = tokio::task::spawn_blocking(move || look.signature())
                    .await
                    .ok()
                    .flatten();
                if signature.is_some() && seen.is_some() && signature != seen {
                    desk.changes.tick();
                }
                if signature.is_some() {
                    seen = signature;
                }
                drop(desk);
                tokio::time::sleep(LOG_WATCH_EVERY).await;
            }
        });
    }
}

impl DeskLog {
    fn clone_log(&self) -> Self {
        Self {
            label: self.label.clone(),
            store: Arc::clone(&self.store),
            name: self.name.clone(),
        }
    }
}

impl Inner {
    fn logs(&self) -> Result<Vec<DeskLog>, DeskError> {
        match &self.source {
            Source::Logs(logs) => Ok(logs.iter().map(DeskLog::clone_log).collect()),
            Source::Store(store) => Ok(store
                .list()
                .map_err(store_error)?
                .into_iter()
                .map(|name| DeskLog {
                    label: name.clone(),
                    store: Arc::clone(store),
                    name,
                })
                .collect()),
        }
    }

    fn log(&self, session: &str) -> Result<DeskLog, LateRefusal> {
        self.logs()
            .map_err(LateRefusal::Unavailable)?
            .into_iter()
            .find(|log| log.label == session)
            .ok_or_else(|| LateRefusal::UnknownSession(session.to_owned()))
    }

    /// The names and lengths of the logs: what changes when any log does. `None` when the store
    /// cannot be listed now.
    fn signature(&self) -> Option<Vec<(String, u64)>> {
        let logs = self.logs().ok()?;
        Some(
            logs.into_iter()
                .map(|log| {
                    let length = log.store.length(&log.name).unwrap_or(0);
                    (log.label, length)
                })
                .collect(),
        )
    }

    /// One log's session: a read-only scan (no lock, nothing written) that folds the projection
    /// and notes when each call was logged.
    fn session_of(log: &DeskLog) -> Result<DeskSession, DeskError> {
        let mut listing = Listing::default();
        let report = log
            .store
            .read(&log.name, &mut listing)
            .map_err(store_error)?;
        let writing = log.store.is_writing(&log.name).map_err(store_error)?;
        // A read fails before any line when the header is unreadable, so a replay exists.
        let state = listing
            .replay
            .map_or_else(|| UserQuestionsState::new(0), |replay| replay.finish().0);
        let questions = state
            .view()
            .active
            .iter()
            .map(|active| {
                let unfinished = report
                    .interrupted
                    .calls
                    .iter()
                    .any(|c| c.call_id == active.call_id.as_str());
                let interrupted = active.state == ActiveState::Open && unfinished && !writing;
                DeskQuestion {
                    session: log.label.clone(),
                    call_id: active.call_id.clone(),
                    questions: active.questions.clone(),
                    state: desk_state(active.state),
                    answerable: active.state == ActiveState::Continued || interrupted,
                    interrupted,
                    answered: false,
                    asked_at_ms: listing.times.get(active.call_id.as_str()).copied(),
                }
            })
            .collect();
        Ok(DeskSession {
            session: log.label.clone(),
            questions,
            settled: Some(state.view().settled.len()),
            writing,
            agent: listing.model,
            folder: listing.cwd,
        })
    }

    fn sessions(&self) -> Result<Vec<DeskSession>, DeskError> {
        each_log(self.logs()?, |log| Self::session_of(&log))
    }

    /// The continued questions of each log, from its checkpoint and the lines after it, and the
    /// calls open in a log no writer holds (interrupted: answering repairs the log first).
    fn answerable(&self) -> Result<Vec<DeskQuestion>, DeskError> {
        let per_log = each_log(self.logs()?, |log| {
            let state = load(&log)?;
            let view = state.view();
            let any_open = view.active.iter().any(|a| a.state == ActiveState::Open);
            // Only asked when it matters: an open call is interrupted only without a writer.
            let orphaned = any_open && !log.store.is_writing(&log.name).map_err(store_error)?;
            Ok(view
                .active
                .iter()
                .filter(|active| active.state == ActiveState::Continued || orphaned)
                .map(|active| {
                    let interrupted = active.state == ActiveState::Open;
                    DeskQuestion {
                        session: log.label.clone(),
                        call_id: active.call_id.clone(),
                        questions: active.questions.clone(),
                        state: desk_state(active.state),
                        answerable: true,
                        interrupted,
                        answered: false,
                        asked_at_ms: None,
                    }
                })
                .collect::<Vec<_>>())
        })?;
        Ok(per_log.into_iter().flatten().collect())
    }

    fn views(&self, session: Option<&str>) -> Result<Vec<SessionView>, DeskError> {
        let mut logs = self.logs()?;
        if let Some(session) = session {
            logs.retain(|log| log.label == session);
            if logs.is_empty() {
                return Err(DeskError::unknown_session(session));
            }
        }
        each_log(logs, |log| {
            Ok(SessionView {
                view: load(&log)?.view().clone(),
                session: log.label,
            })
        })
    }

    /// The call in each log that has it, from its checkpoint and the lines after it.
    fn find(&self, call_id: &CallId) -> Result<Vec<DeskQuestion>, DeskError> {
        let per_log = each_log(self.logs()?, |log| {
            let state = load(&log)?;
            let (state_of, questions) = match state.standing(call_id) {
                Standing::Unknown => return Ok(None),
                Standing::Settled(_) => (DeskState::Settled, Vec::new()),
                Standing::Open(active) => (DeskState::Open, active.questions.clone()),
                Standing::Continued(active) => (DeskState::Continued, active.questions.clone()),
            };
            let interrupted = state_of == DeskState::Open
                && !log.store.is_writing(&log.name).map_err(store_error)?;
            Ok(Some(DeskQuestion {
                session: log.label,
                call_id: call_id.clone(),
                questions,
                state: state_of,
                answerable: state_of == DeskState::Continued || interrupted,
                interrupted,
                answered: false,
                asked_at_ms: None,
            }))
        })?;
        Ok(per_log.into_iter().flatten().collect())
    }

    /// Opens `log` for write (one read of it) and takes the answer: queued, then admitted in a
    /// turn of its own.
    fn submit(
        &self,
        log: &DeskLog,
        call_id: &CallId,
        answers: Answers,
        provenance: Provenance,
    ) -> Result<Accepted, LateRefusal> {
        let runtime =
            HostRuntime::with_registry(Arc::clone(&log.store), None, InMemoryAgentRegistry::new())
                .map_err(unavailable)?;
        let (host, resumed) = runtime
            .open(&log.name, SessionOptions::default())
            .map_err(unavailable)?;
        if let Some(hook) = &self.on_open {
            hook(&log.label, &resumed);
        }
        let questions = host
            .projection()
            .standing(call_id)
            .active()
            .map(|active| active.questions.clone());
        let batch = answers.into_batch(questions.as_deref());
        let outcome = match host.late().queue(call_id, batch, provenance) {
            // Nobody else runs this session: admit the reply now, so the question settles.
            Ok(_) => match host.late().settle(call_id) {
                Ok(Some(reply)) => Ok(Accepted::Admitted {
                    reply: Box::new(reply),
                    settled: host.projection().is_settled(call_id),
                }),
                Ok(None) => Err(LateRefusal::Unavailable(DeskError::new(
                    DeskErrorKind::Internal,
                    "INTERNAL",
                    "the accepted reply is not queued",
                ))),
                Err(error) => Err(unavailable(error)),
            },
            // A reply an earlier host queued and never admitted waits in the durable inbox: this
            // desk is the session's host now, so it admits that first answer, which settles the
            // question; the new one is not used.
            Err(LateRefusal::ReplyQueued {
                call_id: queued_for,
                message_id,
                settled_by: None,
            }) => match host.late().settle(call_id) {
                Ok(Some(reply)) => Err(LateRefusal::ReplyQueued {
                    call_id: queued_for,
                    message_id: Some(reply.id.clone()),
                    settled_by: Some(Box::new(reply)),
                }),
                Ok(None) => Err(LateRefusal::ReplyQueued {
                    call_id: queued_for,
                    message_id,
                    settled_by: None,
                }),
                Err(error) => Err(unavailable(error)),
            },
            Err(refusal) => Err(refusal),
        };
        if outcome.is_ok() || matches!(outcome, Err(LateRefusal::ReplyQueued { .. })) {
            // The log grew: a reader or the next open reads less from a fresh checkpoint.
            if let Err(error) = host.checkpoint_if_behind(CHECKPOINT_LAG) {
                tracing::warn!(%error, log = %log.label, "the checkpoint could not be refreshed");
            }
            self.changes.tick();
        }
        outcome
    }
}

#[async_trait]
impl QuestionDesk for LogDesk {
    /// One read-only scan of each log (the calls' ages and which open calls were interrupted
    /// need every line).
    async fn sessions(&self) -> Result<Vec<DeskSession>, DeskError> {
        self.blocking(Inner::sessions).await?
    }

    /// The continued questions of each log, from its checkpoint and the lines after it: what a
    /// page looks up on every connect costs the lines since the checkpoint, not the whole log.
    /// A call open in a log no writer holds (its host died in the window) is listed too, as
    /// interrupted: answering it repairs the log first, which continues the call.
    async fn answerable(&self) -> Result<Vec<DeskQuestion>, DeskError> {
        self.blocking(Inner::answerable).await?
    }

    async fn views(&self, session: Option<&str>) -> Result<Vec<SessionView>, DeskError> {
        let session = session.map(str::to_owned);
        self.blocking(move |inner| inner.views(session.as_deref()))
            .await?
    }

    async fn find(&self, call_id: &CallId) -> Result<Vec<DeskQuestion>, DeskError> {
        let call_id = call_id.clone();
        self.blocking(move |inner| inner.find(&call_id)).await?
    }

    async fn submit(&self, submission: Submission) -> Result<Accepted, LateRefusal> {
        let Submission {
            session,
            call_id,
            answers,
            provenance,
        } = submission;
        self.blocking(move |inner| {
            let log = inner.log(&session)?;
            inner.submit(&log, &call_id, answers, provenance)
        })
        .await?
    }

    fn changes(&self) -> DeskChanges {
        let changes = self.inner.changes.subscribe();
        self.watch();
        changes
    }
}

/// Runs `read` over each of `logs`: with one log, its error is the error; with several, a log that
/// cannot be read (gone, unreadable, of a newer format) is left out with a warning, so it does not
/// hide the others.
fn each_log<T>(
    logs: Vec<DeskLog>,
    mut read: impl FnMut(DeskLog) -> Result<T, DeskError>,
) -> Result<Vec<T>, DeskError> {
    let single = logs.len() == 1;
    let mut read_all = Vec::new();
    for log in logs {
        let label = log.label.clone();
        match read(log) {
            Ok(value) => read_all.push(value),
            Err(error) if !single => {
                tracing::warn!(%error, log = %label, "a session log cannot be read; left out");
            }
            Err(error) => return Err(error),
        }
    }
    Ok(read_all)
}

/// The projection of a log from its checkpoint and the lines after it (a refold when the
/// checkpoint does not verify), read only.
fn load(log: &DeskLog) -> Result<UserQuestionsState, DeskError> {
    load_projection(&*log.store, &log.name, CheckpointPolicy::ReadOnly)
        .map(|load| load.state)
        .map_err(store_error)
}

fn desk_state(state: ActiveState) -> DeskState {
    match state {
        ActiveState::Open => DeskState::Open,
        ActiveState::Continued => DeskState::Continued,
    }
}

/// A store's failure as a desk's.
fn store_error(error: StoreError) -> DeskError {
    DeskError::from_error(DeskErrorKind::Store, error.code(), error)
}

fn unavailable(error: HostError) -> LateRefusal {
    LateRefusal::Unavailable(DeskError::from_error(
        DeskErrorKind::Store,
        error.code(),
        error,
    ))
}

/// One read-only scan: the fold, and when each call was logged.
#[derive(Default)]
struct Listing {
    replay: Option<Replay>,
    times: HashMap<String, i64>,
    /// The header's `cwd`.
    cwd: Option<String>,
    /// The model of the last `request/header`.
    model: Option<String>,
}

impl LogVisitor for Listing {
    fn header(&mut self, header: &SessionHeader) {
        self.replay = Some(Replay::new(header));
        self.cwd.clone_from(&header.cwd);
    }

    fn line(&mut self, line: &Scanned<'_>) {
        let Scanned::Record(record) = line else {
            return;
        };
        if let Some(replay) = &mut self.replay {
            replay.apply_record(record.line, &record.record);
        }
        match record.record.event().map(|event| (event, &event.body)) {
            Some((event, EventBody::ToolCall(call))) => {
                if let (Some(call_id), Some(time)) = (&call.call_id, event.time) {
                    self.times.insert(call_id.as_str().to_owned(), time);
                }
            }
            Some((_, EventBody::RequestHeader(header))) if header.model.is_some() => {
                self.model.clone_from(&header.model);
            }
            _ => {}
        }
    }
}
