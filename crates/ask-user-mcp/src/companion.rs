//! The companion tool of timed mode, `ask_user_question_answer`: the path a model takes to a late
//! answer, since MCP cannot put a user message into the client's conversation.
//!
//! With a `callId` it answers for that call: the late reply (admitted now, which settles the
//! question), the reply admitted before, or the pending result again. Without one it hands over
//! every late reply waiting in its session, in the order they were queued, so a model that never
//! saw a call's id (the client cut the call off before its pending result arrived) still gets its
//! answers.
//!
//! It is model-facing, so its bytes are catalogued like `ask_user_question`'s (`cargo xtask
//! catalog`), with a description budget and a token budget; so are the pending result it repeats
//! and its "nothing is waiting" text.

use serde_json::{Value, json};

/// The companion tool's name: the name the texts of the timed definition over MCP give it.
pub const ANSWER_TOOL_NAME: &str = tool_ask_user::ANSWER_TOOL_NAME;

/// The companion tool's description.
pub const ANSWER_TOOL_DESCRIPTION: &str = "The person's late answer to a pending ask_user_question call once given, else the pending result again; without callId, every late answer waiting. Call it later, not in a loop.";

/// What a call without `callId` returns when no late reply waits in the session. When questions
/// of the session are still pending, [`nothing_waiting`] names their call ids after it.
pub const NOTHING_WAITING: &str = "No late answer is waiting.";

/// The companion's text for a call without `callId` when no late reply waits: [`NOTHING_WAITING`],
/// then the call ids of the session's questions that are still pending, if any (a model that lost
/// a call id learns it here), and when to ask again.
pub fn nothing_waiting(pending: &[&str]) -> String {
    if pending.is_empty() {
        format!("{NOTHING_WAITING} No question of this session is pending.")
    } else {
        format!(
            "{NOTHING_WAITING} Still pending: {}. Ask again later, not in a loop.",
            pending.join(", ")
        )
    }
}

/// The companion tool's parameters schema: `callId` is optional.
pub fn answer_tool_parameters() -> Value {
    json!({
        "type": "object",
        "properties": {
            "callId": {
                "type": "string",
                "description": "The callId of the pending result."
            }
        },
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

/// Reads the companion's arguments: `{}` (or none, or `"callId": null`) asks for every reply
/// waiting; `{"callId": <non-empty string>}` for that call's.
pub(crate) fn read_call_id(
    arguments: Option<&serde_json::Map<String, Value>>,
) -> Result<Option<String>, String> {
    let Some(arguments) = arguments else {
        return Ok(None);
    };
    if let Some(extra) = arguments.keys().find(|k| k.as_str() != "callId") {
        return Err(format!(
            "unknown argument {}: the only argument is \"callId\"",
            crate::util::quote(extra)
        ));
    }
    match arguments.get("callId") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(id)) if !id.is_empty() && id.len() <= user_questions::MAX_ID_BYTES => {
            Ok(Some(id.clone()))
        }
        Some(Value::String(id)) if id.is_empty() => Err(
            "\"callId\" is empty: give the callId of the pending result, or omit it to get every late answer waiting"
                .to_owned(),
        ),
        Some(Value::String(_)) => Err("\"callId\" is too long to be a call id".to_owned()),
        Some(_) => Err("\"callId\" must be a string".to_owned()),
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

#[cfg(test)]
mod tests {
    use super::*;

    fn args(value: &Value) -> serde_json::Map<String, Value> {
        value.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn call_id_is_optional() {
        assert_eq!(read_call_id(None), Ok(None));
        assert_eq!(read_call_id(Some(&args(&json!({})))), Ok(None));
        assert_eq!(
            read_call_id(Some(&args(&json!({"callId": null})))),
            Ok(None)
        );
        assert_eq!(
            read_call_id(Some(&args(&json!({"callId": "call_1"})))),
            Ok(Some("call_1".to_owned()))
        );
        for (bad, fragment) in [
            (json!({"callId": ""}), "omit it"),
            (json!({"callId": 7}), "must be a string"),
            (json!({"call_id": "call_1"}), "unknown argument"),
        ] {
            let error = read_call_id(Some(&args(&bad))).unwrap_err();
            assert!(error.contains(fragment), "{error}");
        }
    }

    #[test]
    fn nothing_waiting_names_the_pending_calls() {
        assert_eq!(
            nothing_waiting(&[]),
            "No late answer is waiting. No question of this session is pending."
        );
        assert_eq!(
            nothing_waiting(&["call_a", "call_b"]),
            "No late answer is waiting. Still pending: call_a, call_b. Ask again later, not in a loop."
        );
    }
}
