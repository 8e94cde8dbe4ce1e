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

use user_questions::{AgentHandle, AnswerBatch, CallId, Provenance};

use crate::late::LateAnswers;
use crate::outcome::{LateRefusal, Queued};

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
