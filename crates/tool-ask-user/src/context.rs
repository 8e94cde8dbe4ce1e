//! The execution context a host passes with each call: [`ToolContext`] (SPEC §5.3).

use std::fmt;

use tokio_util::sync::CancellationToken;
use user_questions::{AgentHandle, CallId};

/// What the host knows about one execution: the call id, the calling agent (when there is one)
/// and the call's cancellation token.
#[derive(Clone)]
pub struct ToolContext {
    /// The model's tool-call id, or the sub-call id of a programmatic dispatch.
    pub call_id: CallId,
    /// The exact calling agent; `None` for an agentless execution.
    pub agent: Option<AgentHandle>,
    /// Cancelled when the call or its turn is cancelled.
    pub cancel: CancellationToken,
}

impl ToolContext {
    /// An agentless context with a fresh token.
    pub fn new(call_id: impl Into<CallId>) -> Self {
        Self {
            call_id: call_id.into(),
            agent: None,
            cancel: CancellationToken::new(),
        }
    }

    /// Names the calling agent.
    #[must_use]
    pub fn with_agent(mut self, agent: AgentHandle) -> Self {
        self.agent = Some(agent);
        self
    }

    /// Uses this token for the call.
    #[must_use]
    pub fn with_cancel(mut self, cancel: CancellationToken) -> Self {
        self.cancel = cancel;
        self
    }
}

impl fmt::Debug for ToolContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolContext")
            .field("call_id", &self.call_id)
            .field("agent", &self.agent.as_ref().map(|a| a.id().clone()))
            .field("cancelled", &self.cancel.is_cancelled())
            .finish()
    }
}
