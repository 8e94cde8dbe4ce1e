//! The pending result value of a timed call (SPEC §5.6) and its notices (gist G20).
//!
//! Two modules need it and neither may import the other: the timed definition puts its schema in
//! the output schema (`timed.rs`), and the rendering builds it (`outcome.rs`). The legacy tool never
//! returns it.

use schemars::JsonSchema;
use serde::Serialize;
use user_questions::CallId;

use crate::config::LateAnswerRoute;

/// The pending notice (gist G20): the `message` of the pending result when late answers arrive as
/// user messages ([`LateAnswerRoute::UserMessage`]).
pub const PENDING_NOTICE: &str = "No answer yet: not skipped, not permission. Do only independent work; any late answer arrives as a user message (answer_to_pending_question) with this callId and the questions.";

/// The pending notice when the model fetches late answers with the companion tool
/// ([`LateAnswerRoute::CompanionTool`], an MCP server): nothing arrives by itself, so it says to
/// call `ask_user_question_answer` with this callId later. It is the whole way back: the result
/// needs no second text block.
pub const PENDING_NOTICE_COMPANION: &str = "No answer yet: not skipped, not permission. Do only independent work; later call ask_user_question_answer with this callId to get any late answer.";

/// The pending notice for `route`.
pub(crate) fn notice(route: LateAnswerRoute) -> &'static str {
    match route {
        LateAnswerRoute::UserMessage => PENDING_NOTICE,
        LateAnswerRoute::CompanionTool => PENDING_NOTICE_COMPANION,
    }
}

/// The pending result value (SPEC §5.6): key order `pending, callId, message`.
#[derive(Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct PendingResult<'a> {
    /// True when the foreground wait ended before an answer batch was submitted. The questions can
    /// still be answered; this is not a skipped answer.
    #[schemars(extend("enum" = [true]))]
    pending: bool,
    /// The tool call whose questions are still pending.
    #[serde(rename = "callId")]
    call_id: &'a str,
    /// How to continue while the questions stay answerable.
    message: &'a str,
}

impl<'a> PendingResult<'a> {
    pub(crate) fn new(call_id: &'a CallId, route: LateAnswerRoute) -> Self {
        Self {
            pending: true,
            call_id: call_id.as_str(),
            message: notice(route),
        }
    }
}
