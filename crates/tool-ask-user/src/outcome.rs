//! What a tool call returns (SPEC §3.3, §5.6, §5.7): the one text block the model reads, the
//! structured value, error info for typed errors, and provenance metadata for answers; and the
//! `tool/result` event data a host logs for it (SPEC §7.5).
//!
//! Rendering is exact: compact JSON (`serde_json`), key order as the SPEC gives it (answers items
//! `id, selected, custom`; pending `pending, callId, message`); errors are `Error: <message>`.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio_util::sync::CancellationToken;
use user_questions::{Answered, AskError, CallId, ErrorCode, UserQuestionError};

use crate::config::LateAnswerRoute;
use crate::pending::PendingResult;

/// The outcome of one tool call, ready for the model and for the log.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolOutcome {
    /// Whether the call failed.
    pub is_error: bool,
    /// The single text block the model reads: compact JSON, or `Error: <message>`.
    pub text: String,
    /// The structured result (answers or pending value); `None` for errors.
    pub value: Option<Value>,
    /// `{name, code}` for typed errors; `None` for successes, foreign errors and the uncoded
    /// "no live agent" error.
    pub error: Option<ErrorInfo>,
    /// Non-model-facing metadata: `{"provenance":{…}}` on answers only (SPEC §9.1).
    pub meta: Option<Value>,
}

/// Error info of a typed error result: `{"name":…,"code":…}` (SPEC §3.3).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorInfo {
    /// `UserQuestionError`, `ToolArgsError` or `AbortError`.
    pub name: String,
    /// The stable code, e.g. `NO_PROVIDER`; serialised as its string.
    pub code: ErrorCode,
}

impl ToolOutcome {
    /// The answers result: `{"answers":[…]}` with `meta.provenance`.
    pub fn answered(answered: &Answered) -> Self {
        let value = match serde_json::to_value(&answered.answers) {
            Ok(value) => value,
            Err(error) => return Self::render_failure(&error),
        };
        let meta = match serde_json::to_value(&answered.provenance) {
            Ok(provenance) => {
                let mut meta = serde_json::Map::new();
                meta.insert("provenance".to_owned(), provenance);
                Value::Object(meta)
            }
            Err(error) => return Self::render_failure(&error),
        };
        Self {
            is_error: false,
            text: value.to_string(),
            value: Some(value),
            error: None,
            meta: Some(meta),
        }
    }

    /// The pending result of a timed call: `{"pending":true,"callId":…,"message":…}`, no metadata;
    /// its notice says a late answer arrives as a user message ([`crate::PENDING_NOTICE`]).
    pub fn pending(call_id: &CallId) -> Self {
        Self::pending_via(call_id, LateAnswerRoute::UserMessage)
    }

    /// The pending result of a timed call whose late answer reaches the model by `route`: the same
    /// value, with the notice of that route ([`crate::PENDING_NOTICE`] or
    /// [`crate::PENDING_NOTICE_COMPANION`]).
    pub fn pending_via(call_id: &CallId, route: LateAnswerRoute) -> Self {
        match serde_json::to_value(PendingResult::new(call_id, route)) {
            Ok(value) => Self {
                is_error: false,
                text: value.to_string(),
                value: Some(value),
                error: None,
                meta: None,
            },
            Err(error) => Self::render_failure(&error),
        }
    }

    /// Whether this is the pending result of a timed call (`{"pending":true,…}`): the call
    /// ended without an answer and its question stays answerable late.
    pub fn is_pending(&self) -> bool {
        !self.is_error
            && self
                .value
                .as_ref()
                .and_then(|value| value.get("pending"))
                .is_some_and(|pending| pending == true)
    }

    /// The answer batch of an answered result (`{"answers":[…]}`), as the model reads it;
    /// `None` for a pending or an error result.
    pub fn answers(&self) -> Option<user_questions::AnswerBatch> {
        if self.is_error {
            return None;
        }
        let answers = self.value.as_ref()?.get("answers")?.clone();
        serde_json::from_value(answers)
            .ok()
            .map(|answers| user_questions::AnswerBatch { answers })
    }

    /// An error result for a seam error: typed errors carry `{name, code}`, foreign ones do not.
    pub fn error(error: &AskError) -> Self {
        match error {
            AskError::Question(typed) => Self::typed_error(typed),
            AskError::Foreign(foreign) => Self::uncoded_error(foreign),
        }
    }

    /// An error result for a typed error: `Error: <message>` with `{name, code}`; the name follows
    /// the code (`ToolArgsError` for `INVALID_ARGS`, `AbortError` for `ABORTED`, else
    /// `UserQuestionError`).
    pub fn typed_error(error: &UserQuestionError) -> Self {
        Self {
            is_error: true,
            text: format!("Error: {}", error.message()),
            value: None,
            error: Some(ErrorInfo {
                name: error.error_code().error_name().to_owned(),
                code: error.error_code().clone(),
            }),
            meta: None,
        }
    }

    /// An error result with no error info: `Error: <Display>` (foreign errors, gist E-T2).
    pub fn uncoded_error(message: impl fmt::Display) -> Self {
        Self {
            is_error: true,
            text: format!("Error: {message}"),
            value: None,
            error: None,
            meta: None,
        }
    }

    /// The runtime's result for a call cancelled after its body succeeded (gist E-ABORT, code
    /// `ABORTED`, name `AbortError`).
    pub fn aborted() -> Self {
        Self::typed_error(&UserQuestionError::new(
            ErrorCode::Aborted,
            "The tool call was aborted.",
        ))
    }

    /// The tool runtime's obligation E-ABORT (SPEC §5.7): if `cancel` is cancelled once the body
    /// has returned, a successful result (answers or pending) becomes [`ToolOutcome::aborted`];
    /// an error result is kept as it is. A host calls this right after `execute` returns, with the
    /// same token it gave the call.
    #[must_use]
    pub fn abort_if_cancelled(self, cancel: &CancellationToken) -> Self {
        if cancel.is_cancelled() && !self.is_error {
            Self::aborted()
        } else {
            self
        }
    }

    /// The `data` of the `tool/result` event a host logs for this outcome (SPEC §5.7, §7.5):
    /// `{"turn","step","message":{"id","role":"tool","toolCallId","content":[{"type":"text","text"}],"isError"},"error"?,"meta"?}`.
    pub fn tool_result_data<'a>(
        &'a self,
        turn: u64,
        step: u64,
        message_id: &'a str,
        call_id: &'a CallId,
    ) -> ToolResultData<'a> {
        ToolResultData {
            turn,
            step,
            message: ResultMessage {
                id: message_id,
                role: "tool",
                tool_call_id: call_id.as_str(),
                content: [TextBlock {
                    kind: "text",
                    text: &self.text,
                }],
                is_error: self.is_error,
            },
            error: self.error.as_ref(),
            meta: self.meta.as_ref(),
        }
    }

    /// Rendering a value built from our own types cannot fail; if it ever did, the call fails with
    /// an uncoded error rather than a panic.
    fn render_failure(error: &serde_json::Error) -> Self {
        Self::uncoded_error(format_args!("the result could not be rendered: {error}"))
    }
}

/// The `data` object of a `tool/result` event, serialised in the SPEC's key order. Build it with
/// [`ToolOutcome::tool_result_data`]; serialise it with `serde_json`.
#[derive(Clone, Debug, Serialize)]
pub struct ToolResultData<'a> {
    turn: u64,
    step: u64,
    message: ResultMessage<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<&'a ErrorInfo>,
    #[serde(skip_serializing_if = "Option::is_none")]
    meta: Option<&'a Value>,
}

#[derive(Clone, Debug, Serialize)]
struct ResultMessage<'a> {
    id: &'a str,
    role: &'static str,
    #[serde(rename = "toolCallId")]
    tool_call_id: &'a str,
    content: [TextBlock<'a>; 1],
    #[serde(rename = "isError")]
    is_error: bool,
}

#[derive(Clone, Debug, Serialize)]
struct TextBlock<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    text: &'a str,
}
