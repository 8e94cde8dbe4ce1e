//! Small helpers the session, the companion and the forms share.

use rmcp::model::{
    CallToolResult, ClientResult, ContentBlock, CustomRequest, ElicitRequest, ElicitRequestParams,
    ServerRequest,
};
use serde_json::Value;

/// `bytes` as lowercase hex.
pub(crate) fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes
        .iter()
        .fold(String::with_capacity(bytes.len() * 2), |mut out, b| {
            let _ = write!(out, "{b:02x}");
            out
        })
}

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

/// Whether a client result is the elicitation result. A result read back as a custom one (the
/// answer to a request sent without `mode`) is read as an elicitation result too.
pub(crate) fn elicit_result(result: ClientResult) -> Option<rmcp::model::ElicitResult> {
    match result {
        ClientResult::ElicitResult(result) => Some(result),
        ClientResult::CustomResult(custom) => custom.result_as().ok(),
        _ => None,
    }
}

/// Whether a client of protocol `version` (`YYYY-MM-DD`) knows the `mode` of an elicitation
/// request: 2025-11-25 added it (with URL elicitation).
pub(crate) fn knows_elicitation_mode(version: &str) -> bool {
    version >= "2025-11-25"
}

/// The `elicitation/create` request for `params`. rmcp always writes the 2025-11-25 field
/// `mode`; a client of an older protocol (`with_mode` false) gets the request as its own revision
/// spells it, without `mode`, like the official SDKs send it.
pub(crate) fn elicit_request(params: ElicitRequestParams, with_mode: bool) -> ServerRequest {
    if with_mode {
        return ServerRequest::ElicitRequest(ElicitRequest::new(params));
    }
    match serde_json::to_value(&params) {
        Ok(Value::Object(mut fields)) => {
            fields.remove("mode");
            ServerRequest::CustomRequest(CustomRequest::new(
                "elicitation/create",
                Some(Value::Object(fields)),
            ))
        }
        // Parameters of our own type always serialise to an object; if they ever did not, the
        // request goes as rmcp writes it.
        _ => ServerRequest::ElicitRequest(ElicitRequest::new(params)),
    }
}
