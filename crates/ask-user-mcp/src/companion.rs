//! The companion tool of timed mode, `ask_user_question_answer`: the path a model takes to a late
//! answer, since MCP cannot put a user message into the client's conversation.
//!
//! It is model-facing, so its bytes are catalogued like `ask_user_question`'s (`cargo xtask
//! catalog`), with a description budget and a token budget.

use serde_json::{Value, json};

/// The companion tool's name.
pub const ANSWER_TOOL_NAME: &str = "ask_user_question_answer";

/// The companion tool's description.
pub const ANSWER_TOOL_DESCRIPTION: &str = "The person's late answer to a pending ask_user_question call once given, else the pending result again. Call it later, not in a loop.";

/// The second text block of a pending result over MCP: where the late answer comes from here.
pub const LATE_ANSWER_HINT: &str = "Here no user message arrives by itself: call ask_user_question_answer with this callId later to get the answer.";

/// The companion tool's parameters schema.
pub fn answer_tool_parameters() -> Value {
    json!({
        "type": "object",
        "properties": {
            "callId": {
                "type": "string",
                "description": "The callId of the pending result."
            }
        },
        "required": ["callId"],
        "additionalProperties": false
    })
}

/// The companion tool's definition as the catalog and `tools/list` show it:
/// `{"name","description","parameters"}`.
pub fn answer_tool_definition() -> Value {
    json!({
        "name": ANSWER_TOOL_NAME,
        "description": ANSWER_TOOL_DESCRIPTION,
        "parameters": answer_tool_parameters(),
    })
}

/// Reads the companion's arguments: exactly `{"callId": <non-empty string>}`.
pub(crate) fn read_call_id(
    arguments: Option<&serde_json::Map<String, Value>>,
) -> Result<String, String> {
    let Some(arguments) = arguments else {
        return Err("the arguments need \"callId\", the callId of the pending result".to_owned());
    };
    if let Some(extra) = arguments.keys().find(|k| k.as_str() != "callId") {
        return Err(format!(
            "unknown argument {}: the only argument is \"callId\"",
            crate::util::quote(extra)
        ));
    }
    match arguments.get("callId") {
        Some(Value::String(id)) if !id.is_empty() && id.len() <= user_questions::MAX_ID_BYTES => {
            Ok(id.clone())
        }
        Some(Value::String(id)) if id.is_empty() => Err("\"callId\" is empty".to_owned()),
        Some(Value::String(_)) => Err("\"callId\" is too long to be a call id".to_owned()),
        Some(_) => Err("\"callId\" must be a string".to_owned()),
        None => Err("the arguments need \"callId\", the callId of the pending result".to_owned()),
    }
}

/// What the tool catalog shows for this crate: plain data, read by `cargo xtask catalog`, which
/// takes name, description and parameters from [`answer_tool_definition`].
#[derive(Clone, Copy, Debug)]
pub struct AnswerToolCatalog {
    /// The crate name, also the catalog anchor.
    pub crate_name: &'static str,
    /// The variant id the tool is catalogued under (`default`: it has one definition).
    pub variant_id: &'static str,
    /// The variant label shown in headings and the tool map.
    pub variant_label: &'static str,
    /// Repository-relative path of the file that defines the tool.
    pub source_path: &'static str,
    /// What the tool needs from the host.
    pub requires: &'static [&'static str],
    /// What the tool writes to, or changes in, the session log and its projections.
    pub writes: &'static [&'static str],
    /// The crate's note paragraph.
    pub note: &'static str,
}
