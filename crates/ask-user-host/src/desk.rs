//! Question desks over what a host holds: the sessions this process runs ([`LiveDesk`]) and
//! session logs in any [`SessionStore`] ([`LogDesk`]), opened for write only to take an answer.
//!
//! Both implement [`QuestionDesk`] (the contract of `pending-answer`): a surface or a command
//! lists their questions and answers one without knowing where the session lives.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex, Weak};

use pending_answer::{
    Accepted, DeskError, DeskQuestion, DeskSession, DeskState, LateRefusal, QuestionDesk,
    SessionView,
};
use session_log::{EventBody, JsonlStore, LogVisitor, Scanned, SessionHeader, SessionStore};
use user_questions::sync::lock_unpoisoned;
use user_questions::{AnswerBatch, CallId, InMemoryAgentRegistry, Provenance, Question};
use user_questions_projection::{ActiveState, Replay, UserQuestionsState};

use crate::checkpoint::{CHECKPOINT_LAG, CheckpointPolicy, load_projection};
use crate::host::{Host, HostError, HostRuntime, Resumed, SessionOptions};

/// The sessions this process runs, each named by its session id: their questions come from
/// their live projections, and a late answer is queued in the session's durable inbox for its own
/// loop to admit ([`Accepted::Queued`]). Hosts are held weakly: a session that ended leaves the
/// desk.
#[derive(Default)]
pub struct LiveDesk {
    hosts: Mutex<Vec<Weak<Host>>>,
}

impl std::fmt::Debug for LiveDesk {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LiveDesk")
            .field("sessions", &self.live().len())
            .finish()
    }
}

impl LiveDesk {
    /// A desk over `hosts`.
    pub fn of<'a>(hosts: impl IntoIterator<Item = &'a Arc<Host>>) -> Arc<Self> {
        let desk = Self::default();
        for host in hosts {
            desk.add(host);
        }
        Arc::new(desk)
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
            .find(|host| host.session_id().as_str() == session)
    }
}

impl QuestionDesk for LiveDesk {
    fn sessions(&self) -> Result<Vec<DeskSession>, DeskError> {
        Ok(self
            .live()
            .iter()
            .map(|host| {
                let state = host.projection();
                let session = host.session_id().as_str().to_owned();
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
                        answered: host.queued_reply(&active.call_id).is_some(),
                        asked_at_ms: None,
                    })
                    .collect();
                DeskSession {
                    session,
                    questions,
                    settled: Some(state.view().settled.len()),
                    writing: true,
                }
            })
            .collect())
    }

    fn views(&self, session: Option<&str>) -> Result<Vec<SessionView>, DeskError> {
        if let Some(session) = session
            && self.host(session).is_none()
        {
            return Err(unknown_session(session));
        }
        Ok(self
            .live()
            .iter()
            .filter(|host| session.is_none_or(|s| host.session_id().as_str() == s))
            .map(|host| SessionView {
                session: host.session_id().as_str().to_owned(),
                view: host.projection().view().clone(),
            })
            .collect())
    }

    fn answer(
        &self,
        session: &str,
        call_id: &CallId,
        answers: AnswerBatch,
        provenance: Provenance,
    ) -> Result<Accepted, LateRefusal> {
        let host = self
            .host(session)
            .ok_or_else(|| LateRefusal::UnknownSession(session.to_owned()))?;
        host.answer_late(call_id, answers, provenance)
            .map(Accepted::Queued)
    }
}

/// What a [`LogDesk`] calls after it opened a log for write to take an answer: the log's name on
/// the desk and what the open found (restored messages, repairs), for a command to report.
pub type OpenHook = Box<dyn Fn(&str, &Resumed) + Send + Sync>;

/// Session logs in stores, read without a lock, and opened for write only to take an answer:
/// the answer is queued and admitted in a turn of its own ([`Accepted::Admitted`]), so the
/// question is settled when [`answer`](QuestionDesk::answer) returns. A log that cannot be read
/// is left out of a listing of several (with a warning) and is the error of a listing of one. This is what a command or a
/// page does with logs no process runs (`ask-user answer`, `ask-user serve LOG…`).
///
/// Opening a log for write runs resume repair first, so a call its host left open (a crash in the
/// window) is answered as a continued one. A reply an earlier host queued and never admitted is
/// admitted instead of the new answer, which is refused as `REPLY_QUEUED`
/// ([`LateRefusal::ReplyQueued`] with `settled_by`).
pub struct LogDesk {
    source: Source,
    on_open: Option<OpenHook>,
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
        let source = match &self.source {
            Source::Logs(logs) => logs.iter().map(|l| l.label.clone()).collect::<Vec<_>>(),
            Source::Store(_) => vec!["(every log of a store)".to_owned()],
        };
        f.debug_struct("LogDesk")
            .field("logs", &source)
            .field("on_open", &self.on_open.is_some())
            .finish()
    }
}

impl LogDesk {
    /// The JSONL logs at `paths`, each named by its path as given.
    pub fn files<P: AsRef<Path>>(
        paths: impl IntoIterator<Item = P>,
    ) -> Result<Self, session_log::StoreError> {
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
        Ok(Self {
            source: Source::Logs(logs),
            on_open: None,
        })
    }

    /// Every log of `store`, named as the store lists them, listed anew on every look (a log
    /// created later is shown too).
    pub fn store(store: Arc<dyn SessionStore>) -> Self {
        Self {
            source: Source::Store(store),
            on_open: None,
        }
    }

    /// Calls `hook` after every open for write, with the log's name and what the open found.
    #[must_use]
    pub fn on_open(mut self, hook: impl Fn(&str, &Resumed) + Send + Sync + 'static) -> Self {
        self.on_open = Some(Box::new(hook));
        self
    }

    fn logs(&self) -> Result<Vec<DeskLog>, DeskError> {
        match &self.source {
            Source::Logs(logs) => Ok(logs
                .iter()
                .map(|log| DeskLog {
                    label: log.label.clone(),
                    store: Arc::clone(&log.store),
                    name: log.name.clone(),
                })
                .collect()),
            Source::Store(store) => Ok(store
                .list()
                .map_err(|e| DeskError::from_error(e.code(), e))?
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

    /// One log's session: a read-only scan (no lock, nothing written) that folds the projection
    /// and notes when each call was logged.
    fn session_of(log: &DeskLog) -> Result<DeskSession, DeskError> {
        let mut listing = Listing::default();
        let report = log
            .store
            .read(&log.name, &mut listing)
            .map_err(|e| DeskError::from_error(e.code(), e))?;
        let writing = log
            .store
            .is_writing(&log.name)
            .map_err(|e| DeskError::from_error(e.code(), e))?;
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
        })
    }

    /// Opens `log` for write (one read of it) and answers with the batch `compose` makes from the
    /// call's questions there.
    fn answer_in(
        &self,
        log: &DeskLog,
        call_id: &CallId,
        compose: &mut dyn FnMut(Option<&[Question]>) -> AnswerBatch,
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
            .active(call_id)
            .map(|active| active.questions.clone());
        let answers = compose(questions.as_deref());
        let outcome = match host.answer_late(call_id, answers, provenance) {
            // Nobody else runs this session: admit the reply now, so the question settles.
            Ok(queued) => match host.admit_in_own_turn(&queued.message_id) {
                Ok(Some(reply)) => Ok(Accepted::Admitted {
                    reply: Box::new(reply),
                    settled: host.is_settled(call_id),
                }),
                Ok(None) => Err(LateRefusal::Unavailable(DeskError::new(
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
            }) => match host.admit_queued(call_id) {
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
        }
        outcome
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
        .map_err(|e| DeskError::from_error(e.code(), e))
}

impl QuestionDesk for LogDesk {
    /// One read-only scan of each log (the calls' ages and which open calls were interrupted
    /// need every line).
    fn sessions(&self) -> Result<Vec<DeskSession>, DeskError> {
        each_log(self.logs()?, |log| Self::session_of(&log))
    }

    /// The continued questions of each log, from its checkpoint and the lines after it: what a
    /// page looks up on every connect costs the lines since the checkpoint, not the whole log.
    /// A call open in a log no writer holds (its host died in the window) is listed too, as
    /// interrupted: answering it repairs the log first, which continues the call.
    fn answerable(&self) -> Result<Vec<DeskQuestion>, DeskError> {
        let per_log = each_log(self.logs()?, |log| {
            let state = load(&log)?;
            let view = state.view();
            let any_open = view.active.iter().any(|a| a.state == ActiveState::Open);
            // Only asked when it matters: an open call is interrupted only without a writer.
            let orphaned = any_open
                && !log
                    .store
                    .is_writing(&log.name)
                    .map_err(|e| DeskError::from_error(e.code(), e))?;
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
                return Err(unknown_session(session));
            }
        }
        each_log(logs, |log| {
            Ok(SessionView {
                view: load(&log)?.view().clone(),
                session: log.label,
            })
        })
    }

    fn answer(
        &self,
        session: &str,
        call_id: &CallId,
        answers: AnswerBatch,
        provenance: Provenance,
    ) -> Result<Accepted, LateRefusal> {
        let mut answers = Some(answers);
        let log = self.log(session)?;
        self.answer_in(
            &log,
            call_id,
            &mut |_| answers.take().unwrap_or_default(),
            provenance,
        )
    }

    fn answer_with(
        &self,
        session: &str,
        call_id: &CallId,
        compose: &mut dyn FnMut(Option<&[Question]>) -> AnswerBatch,
        provenance: Provenance,
    ) -> Result<Accepted, LateRefusal> {
        let log = self.log(session)?;
        self.answer_in(&log, call_id, compose, provenance)
    }
}

fn desk_state(state: ActiveState) -> DeskState {
    match state {
        ActiveState::Open => DeskState::Open,
        ActiveState::Continued => DeskState::Continued,
    }
}

fn unknown_session(session: &str) -> DeskError {
    DeskError::new("UNKNOWN_SESSION", format!("no session {session:?}"))
}

fn unavailable(error: HostError) -> LateRefusal {
    LateRefusal::Unavailable(DeskError::from_error(error.code(), error))
}

/// One read-only scan: the fold, and when each call was logged.
#[derive(Default)]
struct Listing {
    replay: Option<Replay>,
    times: HashMap<String, i64>,
}

impl LogVisitor for Listing {
    fn header(&mut self, header: &SessionHeader) {
        self.replay = Some(Replay::new(header));
    }

    fn line(&mut self, line: &Scanned<'_>) {
        let Scanned::Record(record) = line else {
            return;
        };
        if let Some(replay) = &mut self.replay {
            replay.apply_record(record.line, &record.record);
        }
        if let Some(event) = record.record.event()
            && let EventBody::ToolCall(call) = &event.body
            && let (Some(call_id), Some(time)) = (&call.call_id, event.time)
        {
            self.times.insert(call_id.as_str().to_owned(), time);
        }
    }
}
