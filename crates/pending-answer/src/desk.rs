//! The question desk: the open and continued questions a person can see, wherever their sessions
//! live, and the one way back for an answer given to them.
//!
//! A surface (the web page, the terminal card, an MCP form, the inbox) or a command is given one
//! [`QuestionDesk`] and never knows whether the questions come from sessions this process runs,
//! from logs in a store, from a database ledger or from another process: the desk lists them
//! ([`QuestionDesk::sessions`]), says where a call stands ([`QuestionDesk::find`]), takes a person's
//! answer ([`QuestionDesk::submit`], returning what it did, [`Accepted`], or a typed
//! [`LateRefusal`]), and says when its questions changed ([`QuestionDesk::changes`]). The
//! implementations live with the data: live hosts and logs in any store in `ask-user-host`, the
//! ledger in `ask-user-pg`, an MCP server's sessions in `ask-user-mcp`, the machine's inbox in
//! `ask-user-inbox`.
//!
//! The desk is async and owns its waiting: a submission for a call whose window just closed waits
//! for the call's continuation itself ([`when_continued`](crate::when_continued)), and a desk whose
//! work blocks (a log read, a database round trip) moves it off the caller's task itself.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use user_questions::{AnswerBatch, CallId, Provenance, Question, UserMessage, async_trait};
use user_questions_projection::UserQuestionsView;

use crate::outcome::{DeskError, LateRefusal, Queued};

/// Where a question a desk shows stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeskState {
    /// In its foreground window: its own call waits for the answer.
    Open,
    /// Continued (its call ended pending): it takes a late answer.
    Continued,
    /// Settled: nothing takes an answer any more. Only [`QuestionDesk::find`] reports it.
    Settled,
}

impl DeskState {
    /// `open`, `continued` or `settled`, as listings print it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Open => "open",
            Self::Continued => "continued",
            Self::Settled => "settled",
        }
    }
}

/// One question of a session, as a desk lists it: open or continued in a listing, or any of the
/// three from [`QuestionDesk::find`].
#[derive(Clone, Debug, PartialEq)]
pub struct DeskQuestion {
    /// The session, as the desk names it (what a [`Submission`] names): a session id, a log's
    /// name or path, a database session's name.
    pub session: String,
    /// The call.
    pub call_id: CallId,
    /// The questions as the call asked them (empty for a settled call a desk no longer keeps the
    /// questions of).
    pub questions: Vec<Question>,
    /// Open, continued or settled.
    pub state: DeskState,
    /// Whether an answer given on this desk can reach the question: always for a continued one;
    /// for an open one only when its host takes answers from where the desk puts them (a
    /// ledger, an inbox's link), or when its host is gone and answering repairs the session
    /// first ([`interrupted`](Self::interrupted)); never for a settled one.
    pub answerable: bool,
    /// The call is open in the log but no writer has the log: its host stopped in the window.
    /// Answering it opens the session, whose resume repair continues the call first.
    pub interrupted: bool,
    /// A reply for it is in flight (queued or recorded, not yet admitted): the call's reply state.
    pub answered: bool,
    /// When the call was logged (wall-clock Unix ms), when the desk knows.
    pub asked_at_ms: Option<i64>,
}

/// A session with its open and continued questions.
#[derive(Clone, Debug, PartialEq)]
pub struct DeskSession {
    /// The session, as the desk names it.
    pub session: String,
    /// Its open and continued questions, in ask order.
    pub questions: Vec<DeskQuestion>,
    /// How many questions are settled, when the desk knows.
    pub settled: Option<usize>,
    /// A writer holds the session now (a host runs it).
    pub writing: bool,
    /// Who asks in it, when the desk knows: the model its requests go to as its log records it
    /// (for an MCP session, the client's name and version).
    pub agent: Option<String>,
    /// Where it runs (the project folder), when the desk knows.
    pub folder: Option<String>,
}

/// The projection view of one session (SPEC §8.2 `questions`), for listings like
/// `ask-user pending --json`.
#[derive(Clone, Debug, PartialEq)]
pub struct SessionView {
    /// The session, as the desk names it.
    pub session: String,
    /// Its view.
    pub view: UserQuestionsView,
}

/// What a desk did with an answer.
#[derive(Clone, Debug, PartialEq)]
pub enum Accepted {
    /// Queued as the late reply of a session a process runs; that session's own loop (or its
    /// model, through a companion tool) admits it, which settles the question.
    Queued(Queued),
    /// Queued and admitted in a turn of its own: the question is settled (`settled` says whether
    /// the projection shows it so), and `reply` is the message the model reads.
    Admitted {
        /// The admitted reply.
        reply: Box<UserMessage>,
        /// The projection settled the call.
        settled: bool,
    },
    /// Recorded (first answer wins) as answer `answer_id` where the session's host takes it: in
    /// its window by the host running the call, late by whoever admits the session's answers.
    Recorded {
        /// The answer's id (the message id it is admitted under).
        answer_id: String,
    },
}

/// Makes an answer batch, once, from the questions a call asked (`None` when the call is not
/// open or continued in the session).
pub type Compose = Box<dyn FnOnce(Option<&[Question]>) -> AnswerBatch + Send>;

/// The answers of a [`Submission`].
pub enum Answers {
    /// This batch, as given.
    Batch(AnswerBatch),
    /// The batch this makes from the questions the call asked: for a command that orders the
    /// items of its flags by the stored questions, so a desk that reads the session to take the
    /// answer reads it once.
    Compose(Compose),
}

impl Answers {
    /// The batch, composed from `questions` when it is to be.
    pub fn into_batch(self, questions: Option<&[Question]>) -> AnswerBatch {
        match self {
            Self::Batch(batch) => batch,
            Self::Compose(compose) => compose(questions),
        }
    }
}

impl fmt::Debug for Answers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Batch(batch) => f.debug_tuple("Batch").field(batch).finish(),
            Self::Compose(_) => f.write_str("Compose(..)"),
        }
    }
}

/// A person's answer handed to a desk: the call of a session, the answers and who gave them.
#[derive(Debug)]
pub struct Submission {
    /// The session, as the desk names it.
    pub session: String,
    /// The call answered.
    pub call_id: CallId,
    /// The answers, checked against the stored questions (SPEC §9.2) before anything is kept.
    pub answers: Answers,
    /// Who answered, e.g. `{"answerer": "web", "answeredBy": "human"}` (SPEC §9.1).
    pub provenance: Provenance,
}

impl Submission {
    /// The answer `answers` to `call_id` of `session`, given by `provenance`.
    pub fn new(
        session: impl Into<String>,
        call_id: CallId,
        answers: AnswerBatch,
        provenance: Provenance,
    ) -> Self {
        Self {
            session: session.into(),
            call_id,
            answers: Answers::Batch(answers),
            provenance,
        }
    }

    /// The answer `compose` makes from the call's stored questions ([`Answers::Compose`]).
    pub fn composed(
        session: impl Into<String>,
        call_id: CallId,
        compose: impl FnOnce(Option<&[Question]>) -> AnswerBatch + Send + 'static,
        provenance: Provenance,
    ) -> Self {
        Self {
            session: session.into(),
            call_id,
            answers: Answers::Compose(Box::new(compose)),
            provenance,
        }
    }
}

/// The questions a person can see and the one way back for their answers. See the
/// [module docs](self).
///
/// Every method is cancel safe in the sense that dropping its future leaves the desk usable; a
/// submission dropped before it returns may or may not have been taken (look again with
/// [`find`](Self::find)).
#[async_trait]
pub trait QuestionDesk: Send + Sync {
    /// Every session of the desk with its open and continued questions, oldest session first.
    async fn sessions(&self) -> Result<Vec<DeskSession>, DeskError>;

    /// The questions an answer given on this desk reaches, across every session: the continued
    /// ones, and open ones whose host takes answers from where the desk puts them
    /// ([`DeskQuestion::answerable`]). What a surface shows beside its own cards, asked often, so
    /// a desk answers it as cheaply as it can (from checkpoints, say). The default filters
    /// [`sessions`](Self::sessions).
    async fn answerable(&self) -> Result<Vec<DeskQuestion>, DeskError> {
        Ok(self
            .sessions()
            .await?
            .into_iter()
            .flat_map(|session| session.questions)
            .filter(|q| q.state == DeskState::Continued || q.answerable)
            .collect())
    }

    /// The projection view of every session, or only of `session` (an error of kind
    /// [`UnknownSession`](crate::DeskErrorKind::UnknownSession) when the desk has no such
    /// session). Cheaper than [`sessions`](Self::sessions) where a checkpoint answers.
    async fn views(&self, session: Option<&str>) -> Result<Vec<SessionView>, DeskError>;

    /// Where `call_id` stands in every session of the desk that has it: open, continued (with
    /// its reply state, [`DeskQuestion::answered`]) or settled. What a surface or a command asks
    /// to learn which session holds a call. The default looks through
    /// [`sessions`](Self::sessions), which lists no settled call.
    async fn find(&self, call_id: &CallId) -> Result<Vec<DeskQuestion>, DeskError> {
        Ok(self
            .sessions()
            .await?
            .into_iter()
            .flat_map(|session| session.questions)
            .filter(|q| &q.call_id == call_id)
            .collect())
    }

    /// The sessions an answer to `call_id` reaches ([`DeskQuestion::answerable`]), each once,
    /// from [`find`](Self::find): which session to submit to when a person names the call
    /// alone (none, one, or several to choose between).
    async fn sessions_answering(&self, call_id: &CallId) -> Result<Vec<String>, DeskError> {
        let mut sessions: Vec<String> = (self.find(call_id).await?.into_iter())
            .filter(|q| q.answerable)
            .map(|q| q.session)
            .collect();
        sessions.dedup();
        Ok(sessions)
    }

    /// Takes a person's answer: what was done with it, or why not. The batch is checked against
    /// the stored questions (SPEC §9.2) before anything is kept. A call whose window closed a
    /// moment ago, whose pending result is not durable yet, is waited for (at most
    /// [`CONTINUED_WITHIN`](crate::CONTINUED_WITHIN)): the caller never holds, polls or retries.
    async fn submit(&self, submission: Submission) -> Result<Accepted, LateRefusal>;

    /// Ticks whenever the desk's questions may have changed (a question asked, continued,
    /// answered or settled, a session gone): a surface that shows them looks again then. The
    /// default never ticks.
    fn changes(&self) -> DeskChanges {
        DeskChanges::never()
    }

    /// A person is looking at the desk's questions now (`true`), or nobody is any more: a desk
    /// over questions whose windows run elsewhere may hold those windows open while someone
    /// looks (the ledger's remote claims). The default does nothing.
    fn looking(&self, looking: bool) {
        let _ = looking;
    }

    /// Where `session` runs, to show beside its questions (an MCP client's name and its folder,
    /// say), when the desk knows. The default knows nothing.
    fn label(&self, session: &str) -> Option<String> {
        let _ = session;
        None
    }

    /// How long the foreground window of `call_id` in `session` has left, when its window runs
    /// elsewhere and the desk knows its end (the machine's inbox, told by the host that keeps
    /// it). A surface shows it as the time left; it never closes a window itself. The default
    /// knows nothing.
    fn window_left(&self, session: &str, call_id: &CallId) -> Option<Duration> {
        let _ = (session, call_id);
        None
    }
}

#[async_trait]
impl<T: QuestionDesk + ?Sized> QuestionDesk for Arc<T> {
    async fn sessions(&self) -> Result<Vec<DeskSession>, DeskError> {
        (**self).sessions().await
    }

    async fn answerable(&self) -> Result<Vec<DeskQuestion>, DeskError> {
        (**self).answerable().await
    }

    async fn views(&self, session: Option<&str>) -> Result<Vec<SessionView>, DeskError> {
        (**self).views(session).await
    }

    async fn find(&self, call_id: &CallId) -> Result<Vec<DeskQuestion>, DeskError> {
        (**self).find(call_id).await
    }

    async fn submit(&self, submission: Submission) -> Result<Accepted, LateRefusal> {
        (**self).submit(submission).await
    }

    fn changes(&self) -> DeskChanges {
        (**self).changes()
    }

    fn looking(&self, looking: bool) {
        (**self).looking(looking);
    }

    fn label(&self, session: &str) -> Option<String> {
        (**self).label(session)
    }

    fn window_left(&self, session: &str, call_id: &CallId) -> Option<Duration> {
        (**self).window_left(session, call_id)
    }
}

/// A desk with no sessions that takes no answer (every submission is `UnknownSession`): for a
/// surface or an inbox whose every question comes from a live host, and for tests and fuzzing.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoSessions;

#[async_trait]
impl QuestionDesk for NoSessions {
    async fn sessions(&self) -> Result<Vec<DeskSession>, DeskError> {
        Ok(Vec::new())
    }

    async fn views(&self, _session: Option<&str>) -> Result<Vec<SessionView>, DeskError> {
        Ok(Vec::new())
    }

    async fn submit(&self, submission: Submission) -> Result<Accepted, LateRefusal> {
        Err(LateRefusal::UnknownSession(submission.session))
    }
}

impl fmt::Debug for dyn QuestionDesk {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("QuestionDesk")
    }
}

/// A desk's change signal as one subscriber sees it ([`QuestionDesk::changes`]).
#[derive(Debug)]
pub struct DeskChanges {
    receiver: Option<watch::Receiver<u64>>,
}

impl DeskChanges {
    /// Changes that never come (a desk whose questions change only through its own
    /// submissions, whose callers know).
    pub fn never() -> Self {
        Self { receiver: None }
    }

    /// Waits for the next change since the last one this subscriber saw: `true` then, `false`
    /// once the desk is gone and nothing will change any more (at once for [`never`](Self::never)).
    /// Cancel safe.
    pub async fn changed(&mut self) -> bool {
        match &mut self.receiver {
            Some(receiver) => receiver.changed().await.is_ok(),
            None => false,
        }
    }
}

/// The sending side of a desk's change signal: an implementation ticks it, subscribers wait on
/// [`DeskChanges`]. Ticks coalesce: a subscriber that looks again after several sees one.
#[derive(Debug)]
pub struct ChangeSignal {
    sender: watch::Sender<u64>,
}

impl Default for ChangeSignal {
    fn default() -> Self {
        Self {
            sender: watch::channel(0).0,
        }
    }
}

impl ChangeSignal {
    /// A signal nobody has subscribed to yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Tells every subscriber that the questions may have changed.
    pub fn tick(&self) {
        self.sender.send_modify(|n| *n = n.wrapping_add(1));
    }

    /// A new subscriber, which sees the ticks from now on.
    pub fn subscribe(&self) -> DeskChanges {
        DeskChanges {
            receiver: Some(self.sender.subscribe()),
        }
    }

    /// How many subscribers wait on the signal now.
    pub fn subscribers(&self) -> usize {
        self.sender.receiver_count()
    }

    /// Resolves once every subscriber is gone (a follower that feeds the signal stops then).
    pub async fn unwatched(&self) {
        self.sender.closed().await;
    }
}
