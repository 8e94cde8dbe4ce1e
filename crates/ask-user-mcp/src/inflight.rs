//! The tools/call in flight on the current task, as the elicitation answerer sees it, and what
//! it needs from the MCP session the call belongs to.

use std::sync::{Arc, Weak};

use rmcp::model::ElicitRequestParams;
use rmcp::service::RequestHandle;
use rmcp::{RoleServer, ServiceError};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;
use user_questions::{AnswerBatch, CallId, Provenance, async_trait};

/// What the elicitation answerer needs from the MCP session of a call: where a form answered
/// after its window goes.
#[async_trait]
pub(crate) trait FormSession: Send + Sync {
    /// Submits `batch` as the late answer of `call_id`, whose pending result is logged: it waits
    /// in the session's durable inbox for the companion tool.
    async fn submit_late(
        self: Arc<Self>,
        call_id: CallId,
        batch: AnswerBatch,
        provenance: Provenance,
    );
}

tokio::task_local! {
    /// The tools/call whose tool execution is being polled. The seam runs the waterfall inside
    /// the caller's future, so an answerer sees the MCP request it answers for, blocking calls
    /// (which carry no wait key) included.
    pub(crate) static CALL: Arc<InFlight>;
}

/// The tools/call in flight on the current task, if any.
pub(crate) fn current_call() -> Option<Arc<InFlight>> {
    CALL.try_with(Arc::clone).ok()
}

/// A tools/call of this session that is running: the way to its handler task, which sends the
/// elicitation requests so that they belong to the request in flight.
pub(crate) struct InFlight {
    /// The session the call belongs to.
    pub(crate) session: Weak<dyn FormSession>,
    /// The call id the host gave the call.
    pub(crate) call_id: CallId,
    /// Boxed: a channel allocates room for 32 messages when it is made, and every call that
    /// waits holds one (32 boxes are 256 bytes; 32 requests were some 8 KB per waiting call).
    pub(crate) forms: mpsc::UnboundedSender<Box<FormSend>>,
    pub(crate) form_mode: bool,
    /// The field shapes the client understands.
    pub(crate) form_style: crate::form::FormStyle,
    /// The session's id, as lifecycle events name it.
    pub(crate) session_id: user_questions::SessionId,
    /// Cancelled once the call's request is over (its result logged, or its logging failed).
    pub(crate) done: CancellationToken,
    /// Cancelled when the client gave up on a timed call without saying a person cancelled it
    /// (`notifications/cancelled` on a timeout): the call then ends as its window closing does
    /// (`limit.rs`).
    pub(crate) gave_up: CancellationToken,
    /// Whether the client knows the `mode` of an elicitation request (protocol 2025-11-25 and
    /// later); older clients get the request without it.
    pub(crate) elicitation_mode: bool,
    /// The form's answer given already, in the round before this one (a multi round-trip
    /// request of the 2026-07-28 revision): the form answerer takes it instead of sending the
    /// form. Taken once.
    pub(crate) prepared: std::sync::Mutex<Option<PreparedForm>>,
    /// The task the call runs as (the tasks extension): its form goes on the task, for
    /// `tasks/update` to answer, instead of an `elicitation/create` request.
    pub(crate) task: Option<Arc<crate::tasks::TaskEntry>>,
}

/// A form answered in an earlier round ([`InFlight::prepared`]).
pub(crate) struct PreparedForm {
    /// The digest of the form that was answered: the form of this call must be that one.
    pub(crate) form: String,
    /// The client's answer to it.
    pub(crate) answer: rmcp::model::ElicitResult,
}

pub(crate) struct FormSend {
    pub(crate) params: ElicitRequestParams,
    pub(crate) reply: oneshot::Sender<Result<RequestHandle<RoleServer>, ServiceError>>,
}

impl InFlight {
    /// Whether the call is one of `session`'s.
    pub(crate) fn belongs_to(&self, session: &Arc<dyn FormSession>) -> bool {
        std::ptr::addr_eq(self.session.as_ptr(), Arc::as_ptr(session))
    }

    /// Sends an elicitation request from the call's handler task and returns its handle.
    pub(crate) async fn send_form(
        &self,
        params: ElicitRequestParams,
    ) -> Option<RequestHandle<RoleServer>> {
        let (reply, handle) = oneshot::channel();
        self.forms.send(Box::new(FormSend { params, reply })).ok()?;
        match handle.await {
            Ok(Ok(handle)) => Some(handle),
            Ok(Err(error)) => {
                tracing::warn!(%error, "the elicitation request could not be sent");
                None
            }
            Err(_) => None,
        }
    }
}
