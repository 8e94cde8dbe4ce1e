//! MCP over streamable HTTP as a test speaks it by hand, in the stateless revision.

use serde_json::{Value, json};

/// The stateless revision's protocol version.
pub const STATELESS_VERSION: &str = "2026-07-28";

/// The `_meta` every request of the stateless revision carries: protocol version, the client
/// `name`, and capabilities of a client that shows forms.
pub fn stateless_meta(name: &str) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": STATELESS_VERSION,
        "io.modelcontextprotocol/clientInfo": {"name": name, "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
    })
}

/// The JSON-RPC message of a streamable HTTP reply's body: the first `data:` of an event
/// stream, else the body itself; `None` when that is not JSON.
pub fn reply_message(body: &str) -> Option<Value> {
    let json = body
        .lines()
        .find_map(|line| {
            line.strip_prefix("data:")
                .map(str::trim)
                .filter(|d| !d.is_empty())
        })
        .unwrap_or(body);
    serde_json::from_str(json).ok()
}
