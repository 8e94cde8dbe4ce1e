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
    AgentHandle, AnswerBatch, AskError, BoxError, CallId, Provenance, UserQuestionError,
};

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

/// Why a late answer was not taken. Its `Display` is written for the person who answered: a
/// surface shows it as it is and keeps the question open.
#[derive(Debug, thiserror::Error)]
pub enum LateRefusal {
    /// The submission names no agent, so there is no session to deliver the answer to.
    #[error("this question has no agent to answer")]
    NoAgent,
    /// The call is not continued (SPEC §4.8 step 2): unknown, still open, already settled, a
    /// legacy call, or a host without projections. Nothing waits for this answer any more.
    #[error("This question is no longer waiting for an answer.")]
    NotWaiting,
    /// Refused with a typed error of the taxonomy: `REPLY_QUEUED` (a reply for the call is already
    /// in flight), `BAD_ANSWER` (the batch does not fit the stored questions), `CALLER_NOT_LIVE` or
    /// `DELEGATED_CALLER` (identity check), `ASK_ABORTED` (the seam is gone).
    #[error(transparent)]
    Rejected(UserQuestionError),
    /// The host could not deliver the reply (the agent's `followup` failed, SPEC §4.8 step 7). The
    /// reservation was released, so the same answer may be submitted again.
    #[error(transparent)]
    Undelivered(BoxError),
}

impl LateRefusal {
    /// The SPEC §3.2 code of a [`Rejected`](Self::Rejected) refusal, e.g. `REPLY_QUEUED`; `None`
    /// for the refusals that have no code.
    pub fn code(&self) -> Option<&str> {
        match self {
            Self::Rejected(error) => Some(error.code()),
            Self::NoAgent | Self::NotWaiting | Self::Undelivered(_) => None,
        }
    }
}

/// Where an answering surface sends late answers.
///
/// `Ok(())` means the answer was taken (for [`LateAnswers`]: queued as the follow-up reply; the
/// question settles when the agent admits it), so the surface can take the question down. An
/// `Err` means it was not: the surface keeps the question answerable and shows the refusal.
///
/// Implemented by [`LateAnswers`], by `Arc`s of sinks, and by closures
/// `Fn(LateSubmission) -> Result<(), LateRefusal>` (for hosts that forward answers elsewhere, and
/// for tests).
pub trait LateAnswerSink: Send + Sync {
    /// Submits one late answer. Synchronous: it is called on the surface's own task, so it must
    /// return promptly.
    fn submit(&self, submission: LateSubmission) -> Result<(), LateRefusal>;
}

/// The host's own sink: [`LateAnswers::answer`] (SPEC §4.8), its `Ok(false)` reported as
/// [`LateRefusal::NotWaiting`], a typed error as [`LateRefusal::Rejected`] and a failed delivery as
/// [`LateRefusal::Undelivered`].
impl LateAnswerSink for LateAnswers {
    fn submit(&self, submission: LateSubmission) -> Result<(), LateRefusal> {
        let LateSubmission {
            call_id,
            agent,
            answers,
            provenance,
            session: _,
        } = submission;
        let agent = agent.ok_or(LateRefusal::NoAgent)?;
        match self.answer(&agent, &call_id, answers, provenance) {
            Ok(true) => Ok(()),
            Ok(false) => Err(LateRefusal::NotWaiting),
            Err(AskError::Question(error)) => Err(LateRefusal::Rejected(error)),
            // `answer` returns foreign errors only from the delivery (step 7).
            Err(AskError::Foreign(error)) => Err(LateRefusal::Undelivered(error)),
        }
    }
}

impl<T: LateAnswerSink + ?Sized> LateAnswerSink for Arc<T> {
    fn submit(&self, submission: LateSubmission) -> Result<(), LateRefusal> {
        (**self).submit(submission)
    }
}

impl<F> LateAnswerSink for F
where
    F: Fn(LateSubmission) -> Result<(), LateRefusal> + Send + Sync,
{
    fn submit(&self, submission: LateSubmission) -> Result<(), LateRefusal> {
        self(submission)
    }
}
