//! Small helpers the session, the companion and the forms share.

use rmcp::model::{CallToolResult, ClientResult, ContentBlock};

/// A client's text quoted in a message: JSON-quoted, cut to 64 characters.
pub(crate) fn quote(text: &str) -> String {
    let cut: String = text.chars().take(64).collect();
    let quoted = serde_json::to_string(&cut).unwrap_or_default();
    if cut.len() < text.len() {
        format!("{quoted}…")
    } else {
        quoted
    }
}

/// A tool error result: `Error: <message>`, as the model reads tool errors elsewhere.
pub(crate) fn error_result(message: &str) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(format!("Error: {message}"))])
}

/// Whether a client result is the elicitation result.
pub(crate) fn elicit_result(result: ClientResult) -> Option<rmcp::model::ElicitResult> {
    match result {
        ClientResult::ElicitResult(result) => Some(result),
        _ => None,
    }
}
