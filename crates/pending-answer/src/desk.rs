//! The question desk: the open and continued questions a person can see, wherever their sessions
//! live, and the one way to answer them.
//!
//! A surface (the web page, a command, an inbox) is given one [`QuestionDesk`] and never knows
//! whether the questions come from sessions this process runs, from logs on disk or from a
//! database ledger: the desk lists them ([`QuestionDesk::sessions`]) and takes an answer for any
//! of them ([`QuestionDesk::answer`]), returning what it did ([`Accepted`]) or a typed refusal
//! ([`LateRefusal`]). The implementations live with the data: live hosts and logs in any store in
//! `ask-user-host`, the ledger in `ask-user-pg`.

use std::fmt;
use std::sync::Arc;

use user_questions::{AnswerBatch, CallId, Provenance, Question, UserMessage};
use user_questions_projection::UserQuestionsView;

use crate::outcome::{DeskError, LateRefusal, Queued};

/// Where a question a desk shows stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeskState {
    /// In its foreground window: its own call waits for the answer.
    Open,
    /// Continued (its call ended pending): it takes a late answer.
    Continued,
}

impl DeskState {
    /// `open` or `continued`, as listings print it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Open => "open",
            Self::Continued => "continued",
        }
    }
}

/// One open or continued question of a session, as a desk lists it.
#[derive(Clone, Debug, PartialEq)]
pub struct DeskQuestion {
    /// The session, as the desk names it (what [`QuestionDesk::answer`] takes): a session id, a
    /// log's path, a database session's name.
    pub session: String,
    /// The call.
    pub call_id: CallId,
    /// The questions as the call asked them.
    pub questions: Vec<Question>,
    /// Open or continued.
    pub state: DeskState,
    /// Whether an answer given on this desk can reach the question: always for a continued one;
    /// for an open one only when its host takes answers from where the desk puts them (a
    /// ledger), or when its host is gone and answering repairs the session first
    /// ([`interrupted`](Self::interrupted)).
    pub answerable: bool,
    /// The call is open in the log but no writer has the log: its host stopped in the window.
    /// Answering it opens the session, whose resume repair continues the call first.
    pub interrupted: bool,
    /// An answer for it is in flight (queued or recorded, not yet admitted).
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
    /// Queued as the late reply of a session this process runs; that session's own loop admits
    /// it in its next turn, which settles the question.
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

/// The questions a person can see and the way to answer them. See the [module docs](self).
///
/// The methods may block (they read logs or ask a database): async callers run them off their
/// runtime's worker threads (`spawn_blocking`).
pub trait QuestionDesk: Send + Sync {
    /// Every session of the desk with its open and continued questions, oldest session first.
    fn sessions(&self) -> Result<Vec<DeskSession>, DeskError>;

    /// The questions an answer given on this desk reaches, across every session: the continued
    /// ones, and open ones whose host takes answers from where the desk puts them
    /// ([`DeskQuestion::answerable`]). What a surface shows beside its own cards, asked often, so a
    /// desk answers it as cheaply as it can (from checkpoints, say). The default filters
    /// [`sessions`](Self::sessions).
    fn answerable(&self) -> Result<Vec<DeskQuestion>, DeskError> {
        Ok(self
            .sessions()?
            .into_iter()
            .flat_map(|session| session.questions)
            .filter(|q| q.state == DeskState::Continued || q.answerable)
            .collect())
    }

    /// The projection view of every session, or only of `session` (an error with the code
    /// `UNKNOWN_SESSION` when the desk has no such session). Cheaper than
    /// [`sessions`](Self::sessions) where a checkpoint answers.
    fn views(&self, session: Option<&str>) -> Result<Vec<SessionView>, DeskError>;

    /// The questions `call_id` of `session` asked, if the call is open or continued there; for a
    /// command that builds an answer from flags. The default reads [`views`](Self::views) of the
    /// session.
    fn questions_of(
        &self,
        session: &str,
        call_id: &CallId,
    ) -> Result<Option<Vec<Question>>, DeskError> {
        Ok(self
            .views(Some(session))?
            .into_iter()
            .flat_map(|session| session.view.active)
            .find(|active| &active.call_id == call_id)
            .map(|active| active.questions))
    }

    /// Answers `call_id` of `session` with `answers`, given by `provenance`: what was done with
    /// it, or why not. The batch is checked against the stored questions (SPEC §9.2) before
    /// anything is kept.
    fn answer(
        &self,
        session: &str,
        call_id: &CallId,
        answers: AnswerBatch,
        provenance: Provenance,
    ) -> Result<Accepted, LateRefusal>;

    /// [`answer`](Self::answer) with the batch `compose` makes, once, from the questions the call
    /// asked (`None` when it is not open or continued there): for a command that orders the
    /// items of flags by the stored questions, so a desk that must read the whole session to
    /// answer reads it once. The default asks [`questions_of`](Self::questions_of), then answers.
    fn answer_with(
        &self,
        session: &str,
        call_id: &CallId,
        compose: &mut dyn FnMut(Option<&[Question]>) -> AnswerBatch,
        provenance: Provenance,
    ) -> Result<Accepted, LateRefusal> {
        let questions = self.questions_of(session, call_id).map_err(|error| {
            if error.code() == "UNKNOWN_SESSION" {
                LateRefusal::UnknownSession(session.to_owned())
            } else {
                LateRefusal::Unavailable(error)
            }
        })?;
        self.answer(session, call_id, compose(questions.as_deref()), provenance)
    }
}

impl<T: QuestionDesk + ?Sized> QuestionDesk for Arc<T> {
    fn sessions(&self) -> Result<Vec<DeskSession>, DeskError> {
        (**self).sessions()
    }

    fn answerable(&self) -> Result<Vec<DeskQuestion>, DeskError> {
        (**self).answerable()
    }

    fn views(&self, session: Option<&str>) -> Result<Vec<SessionView>, DeskError> {
        (**self).views(session)
    }

    fn questions_of(
        &self,
        session: &str,
        call_id: &CallId,
    ) -> Result<Option<Vec<Question>>, DeskError> {
        (**self).questions_of(session, call_id)
    }

    fn answer(
        &self,
        session: &str,
        call_id: &CallId,
        answers: AnswerBatch,
        provenance: Provenance,
    ) -> Result<Accepted, LateRefusal> {
        (**self).answer(session, call_id, answers, provenance)
    }

    fn answer_with(
        &self,
        session: &str,
        call_id: &CallId,
        compose: &mut dyn FnMut(Option<&[Question]>) -> AnswerBatch,
        provenance: Provenance,
    ) -> Result<Accepted, LateRefusal> {
        (**self).answer_with(session, call_id, compose, provenance)
    }
}

impl fmt::Debug for dyn QuestionDesk {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("QuestionDesk")
    }
}
