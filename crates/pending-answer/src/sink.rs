//! The late-answer contract between an answering surface and its host (SPEC §4.8).
//!
//! A surface (the terminal card, a web page, an MCP elicitation) knows which call a person
//! answered, the agent that asked, the answers and who gave them; it knows nothing of
//! reservations, projections or inboxes. It hands a [`LateSubmission`] to a [`LateAnswerSink`]
//! and shows the person the [`LateRefusal`] if the answer is not taken. [`LateAnswers`] is the
//! sink a host normally passes, so a surface needs no glue of its own: the submission goes through
//! [`LateAnswers::answer`] unchanged.

use std::fmt;
use std::sync::Arc;

use user_questions::{
    AgentHandle, AnswerBatch, BoxError, CallId, ErrorCode, Provenance, UserMessage,
    UserQuestionError,
};

use crate::desk::DeskError;

use crate::late::LateAnswers;

/// A late answer as a surface submits it: the person answered a question after its timed window
/// had closed (the tool result was already `pending`).
#[derive(Clone)]
pub struct LateSubmission {
    /// The call whose questions were answered.
    pub call_id: CallId,
    /// The agent that asked; `None` when the surface was given a request without one.
    pub agent: Option<AgentHandle>,
    /// The answers, as the surface validated them against the questions it showed (SPEC §9.2).
    pub answers: AnswerBatch,
    /// Who answered, e.g. `{"answerer": "terminal", "answeredBy": "human"}` (SPEC §9.1).
    pub provenance: Provenance,
    /// The session the surface showed the question in, when it shows several (two sessions may
    /// use the same call id); `None`: the agent's.
    pub session: Option<String>,
}

impl fmt::Debug for LateSubmission {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LateSubmission")
            .field("call_id", &self.call_id)
            .field("agent", &self.agent.as_ref().map(|a| a.id().clone()))
            .field("answers", &self.answers)
            .field("provenance", &self.provenance)
            .field("session", &self.session)
            .finish()
    }
}

/// A late answer taken (SPEC §4.8 step 8): its reply message is queued for the agent's next turn
/// and holds the call's reservation until the agent admits it, which settles the question.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Queued {
    /// The call answered.
    pub call_id: CallId,
    /// The id of the queued reply message (a UUID v4 text, or the id the caller gave).
    pub message_id: String,
}

/// Why a call is not waiting for an answer (SPEC §4.8 step 2, "not continued").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NotWaiting {
    /// The session has no such call the projection tracks: an unknown call id, a legacy call, or
    /// a host without projections.
    Unknown,
    /// The call is still in its foreground window: only its own tool call takes its answer.
    Open,
    /// The call is settled already.
    Settled,
    /// The call ended without an answer and without going pending (an error, a cancellation).
    Dropped,
}

impl NotWaiting {
    /// Why, for the person (used in longer messages): "is open, not pending", ….
    pub fn reason(self) -> &'static str {
        match self {
            Self::Unknown => "is not a pending timed question",
            Self::Open => "is open, not pending: only its own tool call can answer it",
            Self::Settled => "is already settled",
            Self::Dropped => "ended without an answer and without going pending",
        }
    }
}

/// Why a late answer was not taken. Its `Display` is written for the person who answered: a
/// surface shows it as it is and keeps the question open.
#[derive(Debug, thiserror::Error)]
pub enum LateRefusal {
    /// The submission names a session the desk does not have.
    #[error("There is no session {0:?}.")]
    UnknownSession(String),
    /// The submission names no agent, so there is no session to deliver the answer to.
    #[error("this question has no agent to answer")]
    NoAgent,
    /// The call is not continued (SPEC §4.8 step 2): nothing waits for this answer any more.
    #[error("This question is no longer waiting for an answer.")]
    NotWaiting(NotWaiting),
    /// `REPLY_QUEUED`: a reply for the call is already in flight (SPEC §4.8 step 3 or 6), the
    /// message (or ledger answer) `message_id` when it is known.
    #[error("{}", UserQuestionError::reply_queued(.call_id).message())]
    ReplyQueued {
        /// The call.
        call_id: CallId,
        /// The reply in flight, when known.
        message_id: Option<String>,
        /// A desk that found the reply in flight waiting in the durable inbox of a session no
        /// host runs (queued before a crash) admitted it now: the question is settled with that
        /// first answer, and this is the reply.
        settled_by: Option<Box<UserMessage>>,
    },
    /// `BAD_ANSWER`: the batch does not fit the stored questions (SPEC §9.2).
    #[error(transparent)]
    BadAnswer(UserQuestionError),
    /// The caller is not the live root of the session (`CALLER_NOT_LIVE`, `DELEGATED_CALLER`), or
    /// the seam is gone (`ASK_ABORTED`).
    #[error(transparent)]
    NotLive(UserQuestionError),
    /// The host could not deliver the reply (the agent's `followup` failed, SPEC §4.8 step 7, or
    /// the session's store failed). Nothing was kept, so the same answer may be submitted again.
    #[error(transparent)]
    Undelivered(BoxError),
    /// A desk could not reach the session's store (a log locked by another writer, a database
    /// down): nothing was kept, the same answer may be submitted again.
    #[error(transparent)]
    Unavailable(DeskError),
}

impl LateRefusal {
    /// The SPEC §3.2 code of a refusal that has one (`REPLY_QUEUED`, `BAD_ANSWER`,
    /// `CALLER_NOT_LIVE`, …); `None` for the refusals that have no code.
    pub fn code(&self) -> Option<&str> {
        match self {
            Self::ReplyQueued { .. } => Some(ErrorCode::ReplyQueued.as_str()),
            Self::BadAnswer(error) | Self::NotLive(error) => Some(error.code()),
            Self::UnknownSession(_)
            | Self::NoAgent
            | Self::NotWaiting(_)
            | Self::Undelivered(_)
            | Self::Unavailable(_) => None,
        }
    }

    /// The refusal as the seam's typed error, for the refusals that have a SPEC code (a
    /// transport that reports `{code, message}` uses it).
    pub fn as_error(&self) -> Option<UserQuestionError> {
        match self {
            Self::ReplyQueued { call_id, .. } => Some(UserQuestionError::reply_queued(call_id)),
            Self::BadAnswer(error) | Self::NotLive(error) => Some(UserQuestionError::new(
                error.error_code().clone(),
                error.message(),
            )),
            Self::UnknownSession(_)
            | Self::NoAgent
            | Self::NotWaiting(_)
            | Self::Undelivered(_)
            | Self::Unavailable(_) => None,
        }
    }

    /// The refusal of a typed error from the seam's checks: `BAD_ANSWER`, `REPLY_QUEUED`, and
    /// anything else (identity, a seam gone) as [`NotLive`](Self::NotLive).
    pub fn from_error(error: UserQuestionError, call_id: &CallId) -> Self {
        match error.error_code() {
            ErrorCode::BadAnswer => Self::BadAnswer(error),
            ErrorCode::ReplyQueued => Self::ReplyQueued {
                call_id: call_id.clone(),
                message_id: None,
                settled_by: None,
            },
            _ => Self::NotLive(error),
        }
    }
}

/// Where an answering surface sends late answers.
///
/// `Ok` means the answer was taken (for [`LateAnswers`]: queued as the follow-up reply; the
/// question settles when the agent admits it), so the surface can take the question down. An
/// `Err` means it was not: the surface keeps the question answerable and shows the refusal.
///
/// Implemented by [`LateAnswers`], by `Arc`s of sinks, and by closures
/// `Fn(LateSubmission) -> Result<Queued, LateRefusal>` (for hosts that forward answers elsewhere,
/// and for tests).
pub trait LateAnswerSink: Send + Sync {
    /// Submits one late answer. Synchronous: it is called on the surface's own task, so it must
    /// return promptly.
    fn submit(&self, submission: LateSubmission) -> Result<Queued, LateRefusal>;
}

/// The host's own sink: [`LateAnswers::answer`] (SPEC §4.8) with the submission's agent; a
/// submission without one is [`LateRefusal::NoAgent`] before any lookup.
impl LateAnswerSink for LateAnswers {
    fn submit(&self, submission: LateSubmission) -> Result<Queued, LateRefusal> {
        let LateSubmission {
            call_id,
            agent,
            answers,
            provenance,
            session: _,
        } = submission;
        let agent = agent.ok_or(LateRefusal::NoAgent)?;
        self.answer(&agent, &call_id, answers, provenance)
    }
}

impl<T: LateAnswerSink + ?Sized> LateAnswerSink for Arc<T> {
    fn submit(&self, submission: LateSubmission) -> Result<Queued, LateRefusal> {
        (**self).submit(submission)
    }
}

impl<F> LateAnswerSink for F
where
    F: Fn(LateSubmission) -> Result<Queued, LateRefusal> + Send + Sync,
{
    fn submit(&self, submission: LateSubmission) -> Result<Queued, LateRefusal> {
        self(submission)
    }
}
