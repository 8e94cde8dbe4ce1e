//! Typed records for writing (SPEC §7.5): one constructor per event type this workspace writes,
//! each serialising `data` with serde in the reference's key order, so a host never spells an
//! event type or a key by hand. [`Record::into_event`] gives the envelope a store appends.
//!
//! The bytes are exactly what the reference writes: keys in its order, optional keys left out
//! rather than written as `null`, and `surfaceOp: "append"` on the message-producing events
//! (`user/message`, `assistant/message`, `tool/result`).

use serde::{Deserialize, Serialize, Serializer};
use serde_json::Value;
use serde_json::value::RawValue;
use user_questions::{CallId, ErrorCode, UserMessage};

use crate::envelope::LogEvent;

/// One event to write, typed. See the [module docs](self).
#[derive(Clone, Debug)]
pub enum Record {
    /// `request/header`: the request snapshot with the tool list the model is offered.
    RequestHeader(RequestHeaderRecord),
    /// `turn/start`.
    TurnStart(TurnRecord),
    /// `step/start`.
    StepStart(StepRecord),
    /// `step/end`.
    StepEnd(StepRecord),
    /// `tool/call`: the raw arguments the model sent.
    ToolCall(ToolCallRecord),
    /// `tool/result`, newest layout (§7.7 layout A).
    ToolResult(ToolResultRecord),
    /// `user/message`: the message is the `data`.
    UserMessage(UserMessage),
    /// `assistant/message`.
    AssistantMessage(AssistantMessageRecord),
    /// `agent/inbox/spliced`: an edit of an inbox queue, logged before it takes effect.
    InboxSpliced(InboxSpliceRecord),
    /// `turn/end`.
    TurnEnd(TurnEndRecord),
    /// `session/end-seed`: a fork's cut marker (`inherited: true`) or a resume marker.
    EndSeed(EndSeedRecord),
    /// Any other event, kept verbatim: its type and its `data` text.
    Other {
        /// The event type.
        event_type: String,
        /// The `data` object, as JSON text.
        data: Box<RawValue>,
    },
}

/// `data` of `request/header`: `{"header":{"config":…,"tools":[…]},"reason":…}`.
#[derive(Clone, Debug, Serialize)]
pub struct RequestHeaderRecord {
    /// The request snapshot.
    pub header: RequestSnapshot,
    /// `initial` for the first request of a log, `resume` for the first after reopening.
    pub reason: &'static str,
}

/// The `header` of a `request/header`.
#[derive(Clone, Debug, Serialize)]
pub struct RequestSnapshot {
    /// The provider configuration, e.g. `{"provider":…,"model":…}`.
    pub config: Value,
    /// The tool definitions the model is offered, as the tool crate serialises them.
    pub tools: Vec<Value>,
}

/// `data` of `turn/start`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct TurnRecord {
    /// The turn.
    pub turn: u64,
}

/// `data` of `step/start` and `step/end`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StepRecord {
    /// The turn.
    pub turn: u64,
    /// The step within the turn.
    pub step: u64,
}

/// `data` of `tool/call`.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCallRecord {
    /// The turn.
    pub turn: u64,
    /// The step.
    pub step: u64,
    /// The call id.
    pub call_id: CallId,
    /// The tool's name.
    pub name: String,
    /// The raw JSON text the model sent.
    pub arguments: String,
}

/// `data` of `tool/result` in the newest layout:
/// `{turn?, step?, message:{id, role:"tool", toolCallId, content:[{type:"text",text}], isError},
/// error?, meta?}`.
#[derive(Clone, Debug, Serialize)]
pub struct ToolResultRecord {
    /// The turn; left out when unknown (a repaired call without a readable turn).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub turn: Option<u64>,
    /// The step; left out when unknown.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub step: Option<u64>,
    /// The tool message.
    pub message: ToolMessage,
    /// `{name, code}` of a typed error.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorRecord>,
    /// Metadata the model never reads, e.g. `{"provenance":…}` (SPEC §9.1).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub meta: Option<Value>,
}

/// The `message` of a [`ToolResultRecord`].
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolMessage {
    /// The message id.
    pub id: String,
    /// Always `tool`.
    pub role: &'static str,
    /// The call the result is for.
    pub tool_call_id: CallId,
    /// One text block.
    pub content: [TextBlock; 1],
    /// Whether the call failed.
    pub is_error: bool,
}

/// A `{"type":"text","text":…}` content block.
#[derive(Clone, Debug, Serialize)]
pub struct TextBlock {
    /// Always `text`.
    #[serde(rename = "type")]
    pub block_type: &'static str,
    /// The text.
    pub text: String,
}

impl TextBlock {
    /// A text block.
    pub fn new(text: impl Into<String>) -> Self {
        Self {
            block_type: "text",
            text: text.into(),
        }
    }
}

/// The `error` of a [`ToolResultRecord`]: `{"name":…,"code":…}` (SPEC §3.3).
#[derive(Clone, Debug, Serialize)]
pub struct ErrorRecord {
    /// The error name, e.g. `UserQuestionError`.
    pub name: String,
    /// The code, written as its `SCREAMING_SNAKE` text.
    #[serde(serialize_with = "code_text")]
    pub code: ErrorCode,
}

fn code_text<S: Serializer>(code: &ErrorCode, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(code.as_str())
}

impl ToolResultRecord {
    /// A result with one text block and no error or metadata.
    pub fn new(
        turn: Option<u64>,
        step: Option<u64>,
        message_id: impl Into<String>,
        call_id: CallId,
        text: impl Into<String>,
        is_error: bool,
    ) -> Self {
        Self {
            turn,
            step,
            message: ToolMessage {
                id: message_id.into(),
                role: "tool",
                tool_call_id: call_id,
                content: [TextBlock::new(text)],
                is_error,
            },
            error: None,
            meta: None,
        }
    }

    /// Sets `error`.
    #[must_use]
    pub fn with_error(mut self, name: impl Into<String>, code: ErrorCode) -> Self {
        self.error = Some(ErrorRecord {
            name: name.into(),
            code,
        });
        self
    }

    /// Sets `meta`.
    #[must_use]
    pub fn with_meta(mut self, meta: Option<Value>) -> Self {
        self.meta = meta;
        self
    }
}

/// `data` of `assistant/message`: `{turn, step, message:{role:"assistant", content:[…]}}`.
#[derive(Clone, Debug, Serialize)]
pub struct AssistantMessageRecord {
    /// The turn.
    pub turn: u64,
    /// The step.
    pub step: u64,
    /// The message.
    pub message: AssistantMessage,
}

/// The `message` of an [`AssistantMessageRecord`].
#[derive(Clone, Debug, Serialize)]
pub struct AssistantMessage {
    /// Always `assistant`.
    pub role: &'static str,
    /// The content blocks.
    pub content: Vec<TextBlock>,
}

/// The inbox queue a splice edits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InboxTarget {
    /// `next-turn`: messages a new turn claims.
    NextTurn,
    /// `next-step`: messages the next step of the running turn claims.
    NextStep,
}

impl InboxTarget {
    /// The name as logged.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::NextTurn => "next-turn",
            Self::NextStep => "next-step",
        }
    }

    /// Reads a logged name.
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "next-turn" => Some(Self::NextTurn),
            "next-step" => Some(Self::NextStep),
            _ => None,
        }
    }
}

impl Serialize for InboxTarget {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

/// `data` of `agent/inbox/spliced`: `queue[start..start + removedCount]` is replaced by
/// `inserted`. `removedCount` is left out when it is 0, as the reference writes an append.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct InboxSpliceRecord {
    /// The queue.
    pub target: InboxTarget,
    /// Where the edit starts.
    pub start: usize,
    /// How many messages it removes.
    #[serde(skip_serializing_if = "is_zero")]
    pub removed_count: usize,
    /// The messages it inserts.
    pub inserted: Vec<UserMessage>,
}

#[allow(clippy::trivially_copy_pass_by_ref)] // serde's `skip_serializing_if` passes a reference.
fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// `data` of `turn/end`: `{turn, reason:{kind}}`.
#[derive(Clone, Debug, Serialize)]
pub struct TurnEndRecord {
    /// The turn.
    pub turn: u64,
    /// Why it ended.
    pub reason: TurnEndReason,
}

/// The `reason` of a `turn/end`.
#[derive(Clone, Debug, Serialize)]
pub struct TurnEndReason {
    /// `completed`, `aborted`, `interrupted`, …
    pub kind: String,
}

/// `data` of `session/end-seed`.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct EndSeedRecord {
    /// Whether it marks a fork's inherited prefix (§7.2).
    pub inherited: bool,
}

impl Record {
    /// `turn/start`.
    pub fn turn_start(turn: u64) -> Self {
        Self::TurnStart(TurnRecord { turn })
    }

    /// `step/start`.
    pub fn step_start(turn: u64, step: u64) -> Self {
        Self::StepStart(StepRecord { turn, step })
    }

    /// `step/end`.
    pub fn step_end(turn: u64, step: u64) -> Self {
        Self::StepEnd(StepRecord { turn, step })
    }

    /// `turn/end` with `reason.kind`.
    pub fn turn_end(turn: u64, reason: impl Into<String>) -> Self {
        Self::TurnEnd(TurnEndRecord {
            turn,
            reason: TurnEndReason {
                kind: reason.into(),
            },
        })
    }

    /// `tool/call`.
    pub fn tool_call(
        turn: u64,
        step: u64,
        call_id: CallId,
        name: impl Into<String>,
        arguments: impl Into<String>,
    ) -> Self {
        Self::ToolCall(ToolCallRecord {
            turn,
            step,
            call_id,
            name: name.into(),
            arguments: arguments.into(),
        })
    }

    /// `request/header` with this provider config and tool list.
    pub fn request_header(config: Value, tools: Vec<Value>, reason: &'static str) -> Self {
        Self::RequestHeader(RequestHeaderRecord {
            header: RequestSnapshot { config, tools },
            reason,
        })
    }

    /// `assistant/message` with one text block.
    pub fn assistant_text(turn: u64, step: u64, text: impl Into<String>) -> Self {
        Self::AssistantMessage(AssistantMessageRecord {
            turn,
            step,
            message: AssistantMessage {
                role: "assistant",
                content: vec![TextBlock::new(text)],
            },
        })
    }

    /// `agent/inbox/spliced`.
    pub fn inbox_splice(
        target: InboxTarget,
        start: usize,
        removed_count: usize,
        inserted: Vec<UserMessage>,
    ) -> Self {
        Self::InboxSpliced(InboxSpliceRecord {
            target,
            start,
            removed_count,
            inserted,
        })
    }

    /// The event type as logged.
    pub fn event_type(&self) -> &str {
        match self {
            Self::RequestHeader(_) => "request/header",
            Self::TurnStart(_) => "turn/start",
            Self::StepStart(_) => "step/start",
            Self::StepEnd(_) => "step/end",
            Self::ToolCall(_) => "tool/call",
            Self::ToolResult(_) => "tool/result",
            Self::UserMessage(_) => "user/message",
            Self::AssistantMessage(_) => "assistant/message",
            Self::InboxSpliced(_) => "agent/inbox/spliced",
            Self::TurnEnd(_) => "turn/end",
            Self::EndSeed(_) => "session/end-seed",
            Self::Other { event_type, .. } => event_type,
        }
    }

    /// Whether the event produces a message (`surfaceOp: "append"`).
    fn produces_message(&self) -> bool {
        match self {
            Self::ToolResult(_) | Self::UserMessage(_) | Self::AssistantMessage(_) => true,
            Self::RequestHeader(_)
            | Self::TurnStart(_)
            | Self::StepStart(_)
            | Self::StepEnd(_)
            | Self::ToolCall(_)
            | Self::InboxSpliced(_)
            | Self::TurnEnd(_)
            | Self::EndSeed(_)
            | Self::Other { .. } => false,
        }
    }

    /// The `data` object as compact JSON text.
    pub fn data(&self) -> Result<Box<RawValue>, serde_json::Error> {
        use serde_json::value::to_raw_value;
        match self {
            Self::RequestHeader(data) => to_raw_value(data),
            Self::TurnStart(data) => to_raw_value(data),
            Self::StepStart(data) | Self::StepEnd(data) => to_raw_value(data),
            Self::ToolCall(data) => to_raw_value(data),
            Self::ToolResult(data) => to_raw_value(data),
            Self::UserMessage(data) => to_raw_value(data),
            Self::AssistantMessage(data) => to_raw_value(data),
            Self::InboxSpliced(data) => to_raw_value(data),
            Self::TurnEnd(data) => to_raw_value(data),
            Self::EndSeed(data) => to_raw_value(data),
            Self::Other { data, .. } => Ok(data.clone()),
        }
    }

    /// The envelope with this `seq`, stamped now; message-producing events carry
    /// `surfaceOp: "append"`.
    pub fn into_event(self, seq: u64) -> Result<LogEvent, serde_json::Error> {
        let event = LogEvent::new(self.event_type(), seq, self.data()?);
        Ok(if self.produces_message() {
            event.surface_append()
        } else {
            event
        })
    }
}
