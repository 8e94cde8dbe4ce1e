//! The pending result value of a timed call (SPEC §5.6) and its notice (gist G20).
//!
//! Two modules need it and neither may import the other: the timed definition puts its schema in
//! the output schema (`timed.rs`), and the rendering builds it (`outcome.rs`). The legacy tool never
//! returns it.

use schemars::JsonSchema;
use serde::Serialize;
use user_questions::CallId;

/// The pending notice (gist G20): the `message` of the pending result.
pub const PENDING_NOTICE: &str = "No answer yet: not skipped, not permission. Do only independent work; any late answer arrives as a user message (answer_to_pending_question) with this callId and the questions.";

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
    pub(crate) fn new(call_id: &'a CallId) -> Self {
        Self {
            pending: true,
            call_id: call_id.as_str(),
            message: PENDING_NOTICE,
        }
    }
}
