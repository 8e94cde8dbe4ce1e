//! A client's time limit: what a timed call does when the client cuts it off.
//!
//! MCP gives a client one way to stop waiting for a tool call, `notifications/cancelled`, and no
//! way to say why beyond its free-text `reason`. Codex cuts a call off at its `tool_timeout_sec`
//! (60 s by default), Claude Code at `MCP_TOOL_TIMEOUT`, the TypeScript SDK's clients at their
//! request timeout; a person cancels the turn with Escape. To a server both are the same
//! notification. A timed question cut off by a clock must not be lost, so the session reads the
//! reason ([`person_cancelled`]) and:
//!
//! * a reason that says a person cancelled the turn (it mentions `user`, `interrupt` or `abort`,
//!   in any case) withdraws the call: `ASK_ABORTED`, as before;
//! * any other reason, or none (a timeout, a request the client abandoned), ends the call as its
//!   window closing does: the call returns its pending result (which the client no longer reads),
//!   the host logs it and announces the call continued, and the question stays answerable. The
//!   model gets the answer later from `ask_user_question_answer`, with the call id or, since it
//!   may never have seen it, without one.
//!
//! [`ClientLimit`] is the answerer that does the second: it sits at the front of the session's
//! waterfall, passes every request on, and ends a timed call of its session with `ASK_TIMED_OUT`
//! (which the seam turns into the pending result) the moment the session says the client gave
//! up ([`InFlight::gave_up`]). A timed call nobody can answer (`NO_PROVIDER`) is held here until
//! its window closes, as the seam would hold it, so the client's giving up ends that one too. A
//! call without a window (`timeout: -1`) cannot go pending: the client giving up withdraws it.
//! Blocking (legacy) calls never reach this rule: they end with their request, however it ends.

use std::sync::Weak;

use user_questions::{
    AnswerRequest, Answered, Answerer, AnswererError, ErrorCode, Next, UserQuestionError, WaitKey,
    async_trait,
};

use crate::inflight::{FormSession, InFlight, current_call};

/// Whether the `reason` of a client's `notifications/cancelled` says a person cancelled the call
/// (the turn was interrupted, the user aborted it): it mentions `user`, `interrupt` or `abort`,
/// in any case. Claude Code's Escape sends `MCP error -32001: user-cancel`, and a TypeScript
/// client aborted without a reason sends `AbortError: This operation was aborted`; the timeouts
/// of the TypeScript SDK (`MCP error -32001: Request timed out`) and of rmcp (`request timeout`,
/// `request abandoned by the caller`) do not, and neither does a cancellation without a reason.
pub(crate) fn person_cancelled(reason: Option<&str>) -> bool {
    let Some(reason) = reason else {
        return false;
    };
    let reason = reason.to_lowercase();
    ["user", "interrupt", "abort"]
        .iter()
        .any(|word| reason.contains(word))
}

/// The answerer at the front of a timed session's waterfall that ends its timed calls pending when
/// the client gives up on them (module docs).
pub(crate) struct ClientLimit {
    conn: Weak<dyn FormSession>,
}

impl ClientLimit {
    pub(crate) fn new(conn: Weak<dyn FormSession>) -> Self {
        Self { conn }
    }
}

/// How a call the client gave up on ends: a timed one as its window closing ends it (the seam
/// turns `ASK_TIMED_OUT` into the pending result), one without a window withdrawn.
fn given_up(timed: bool) -> AnswererError {
    if timed {
        UserQuestionError::ask_timed_out().into()
    } else {
        UserQuestionError::ask_aborted().into()
    }
}

#[async_trait]
impl Answerer for ClientLimit {
    async fn answer(
        &self,
        request: &AnswerRequest,
        next: Next<'_>,
    ) -> Result<Answered, AnswererError> {
        let Some(conn) = self.conn.upgrade() else {
            return next.run().await;
        };
        let Some(call) = current_call().filter(|c: &std::sync::Arc<InFlight>| c.belongs_to(&conn))
        else {
            return next.run().await;
        };
        drop(conn);
        let timed = matches!(request.wait, Some(WaitKey::Timed { .. }));
        let gave_up = call.gave_up.clone();
        if gave_up.is_cancelled() {
            return Err(given_up(timed));
        }
        tokio::select! {
            biased;
            result = next.run() => match result {
                // Nobody can answer: the seam would hold a timed call until its window closes.
                // Hold it here instead, so that the client giving up ends it as well.
                Err(AnswererError::Question(error))
                    if timed && error.error_code() == &ErrorCode::NoProvider =>
                {
                    tokio::select! {
                        biased;
                        () = request.cancel.cancelled() => Err(error.into()),
                        () = gave_up.cancelled() => Err(given_up(true)),
                    }
                }
                other => other,
            },
            () = gave_up.cancelled() => Err(given_up(timed)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::person_cancelled;

    #[test]
    fn only_a_reason_that_names_a_person_withdraws() {
        for reason in [
            "McpError: MCP error -32001: user-cancel",
            "User requested cancellation",
            "the user pressed escape",
            "AbortError: This operation was aborted",
            "Turn interrupted",
        ] {
            assert!(person_cancelled(Some(reason)), "{reason}");
        }
        for reason in [
            "McpError: MCP error -32001: Request timed out",
            "request timeout",
            "maximum total timeout exceeded",
            "request abandoned by the caller",
            "timed out awaiting tools/call after 60s",
            "",
        ] {
            assert!(!person_cancelled(Some(reason)), "{reason}");
        }
        assert!(!person_cancelled(None));
    }
}
