//! The session-event model (SPEC §7.3–§7.5): one decoded log event with its `seq`, its optional
//! `time`, and a typed body for the event types the fold (and the late-answer crate) reads. Every
//! other type is kept as [`EventBody::Other`] with its type name.
//!
//! Bodies are normalised: the three `tool/result` layouts of §7.7 become one [`ToolResult`], and
//! `tool/code-dispatch` reads exactly as `tool/ptc-dispatch`. First text blocks are read once,
//! when the event is decoded (pending JSON and answer batches), so applying a result to the fold
//! does no parsing; what a tool list or a call's arguments declare for one tool (the timed
//! `ask_user_question` schema, its questions) is kept as text for the projection to read. The host's own
//! bookkeeping events (`turn/start`, `step/start`, `step/end`, `agent/inbox/spliced`) have typed
//! bodies too, so resume repair and inbox restore read the same decoded events as the fold.

use user_questions::{CallId, ErrorCode, MessageSource, Provenance, UserMessage};

use crate::readers::TextReading;

/// One decoded log event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SessionEvent {
    /// The event's `seq` (§7.3): explicit when the record carried one, else the expected value.
    pub seq: u64,
    /// Wall-clock Unix milliseconds at append, when the record carried an integer `time`.
    pub time: Option<i64>,
    /// The typed body.
    pub body: EventBody,
}

/// The body of a [`SessionEvent`].
///
/// Non-exhaustive: most readers read a few kinds (the fold, late answers, inbox restore, resume
/// repair), so a new kind touches only this crate and the readers that read it; every reader
/// outside it matches what it needs and lets the rest go.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum EventBody {
    /// `request/header`.
    RequestHeader(RequestHeader),
    /// `tool/call`.
    ToolCall(ToolCall),
    /// `tool/result`, in any of the layouts A, B, C (§7.7).
    ToolResult(ToolResult),
    /// `tool/ptc-dispatch`, or its older name `tool/code-dispatch`.
    Dispatch(Dispatch),
    /// `user/message`.
    UserMessage(UserMessageEvent),
    /// `turn/start`.
    TurnStart(TurnStart),
    /// `step/start`.
    StepStart(StepRef),
    /// `step/end`.
    StepEnd(StepRef),
    /// `agent/inbox/spliced`: an edit of the agent's inbox queues.
    InboxSpliced(InboxSplice),
    /// `turn/end`.
    TurnEnd(TurnEnd),
    /// `session/end-seed`: a fork's cut marker (`inherited: true`) or a resume marker.
    EndSeed(EndSeed),
    /// Any other event type, including the `assistant/chunk` members of packed rows (§7.4).
    Other(OtherEvent),
}

/// `request/header`, reduced to the tools the model was offered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RequestHeader {
    /// The JSON text of `header.tools` as logged (any JSON value; the last of a repeated key),
    /// when present. What it declares (the timed `ask_user_question` schema, §8.3) is the
    /// projection's to read.
    pub tools: Option<String>,
    /// `header.config.model`, when it is a string: the model the requests go to (for an MCP
    /// session, the client's name and version: all its server knows of the model).
    pub model: Option<String>,
}

/// `tool/call`, reduced to what the fold reads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolCall {
    /// `callId`, when it is a string.
    pub call_id: Option<CallId>,
    /// `name`, when it is a string.
    pub name: Option<String>,
    /// `arguments`, the text the model sent, when it is a string (escaped lone surrogates as
    /// U+FFFD). What it asks is the reader's to parse: the projection reads an
    /// `ask_user_question` call's questions from it (§8.5).
    pub arguments: Option<String>,
    /// `turn`, when it is a non-negative integer.
    pub turn: Option<u64>,
    /// `step`, when it is a non-negative integer.
    pub step: Option<u64>,
}

/// `tool/result`, normalised from layout A, B or C (§7.7).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolResult {
    /// The layout the record used; `None` when it matched none of A–C (the event is ignored).
    pub layout: Option<ResultLayout>,
    /// The call the result is for, when the layout gives a string.
    pub call_id: Option<CallId>,
    /// What the first text block holds.
    pub text: TextReading,
    /// `isError` is the boolean `true`.
    pub is_error: bool,
    /// The `data.error` key.
    pub error: ResultError,
    /// A well-formed `data.meta.provenance` (§9.1).
    pub provenance: Option<Provenance>,
}

/// The `tool/result` layouts of §7.7.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ResultLayout {
    /// Newest: `data.message.toolCallId` is a string.
    Message,
    /// Nested: a `tool-result` block in `data.message.content`.
    Nested,
    /// Flat: `data.callId`, `data.content`, `data.isError`.
    Flat,
}

/// The `data.error` key of a `tool/result`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum ResultError {
    /// No `error` key.
    #[default]
    Absent,
    /// An `error` key with any value (even `null`); `code` when it is an object with a string
    /// `code`.
    Present {
        /// `error.code`, read with [`ErrorCode::parse`].
        code: Option<ErrorCode>,
    },
}

impl ResultError {
    /// An error with a code.
    pub fn code(code: ErrorCode) -> Self {
        Self::Present { code: Some(code) }
    }
}

/// `tool/ptc-dispatch` (or `tool/code-dispatch`): a programmatic sub-call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dispatch {
    /// Which record type it was read from.
    pub kind: DispatchKind,
    /// `subCallId`, when it is a string.
    pub sub_call_id: Option<CallId>,
    /// `name`, when it is a string.
    pub name: Option<String>,
    /// `isError` is the boolean `true`.
    pub is_error: bool,
    /// What the first text block of `content` holds.
    pub text: TextReading,
    /// The JSON text of the `arguments` object, when it is an object.
    pub arguments: Option<String>,
}

/// The record type of a [`Dispatch`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DispatchKind {
    /// `tool/ptc-dispatch`.
    Ptc,
    /// `tool/code-dispatch`, the older name.
    Code,
}

/// `user/message`, reduced to its id, its source, and (for a late reply) its answer batch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UserMessageEvent {
    /// `id`, when it is a string.
    pub id: Option<String>,
    /// `source`, when it is an object.
    pub source: Option<SourceInfo>,
    /// For a reply source (`kind == "user-question-reply"`): what the first text block holds.
    /// Other messages are not read, so this is the default for them.
    pub text: TextReading,
}

impl UserMessageEvent {
    /// The call a late reply answers: `source.callId` when the source kind is
    /// `user-question-reply` and the call id is a string.
    pub fn reply_call_id(&self) -> Option<&CallId> {
        let source = self.source.as_ref()?;
        if source.kind.as_deref() == Some(MessageSource::REPLY_KIND) {
            source.call_id.as_ref()
        } else {
            None
        }
    }
}

/// The parts of a message `source` that the fold and the late-answer crate read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SourceInfo {
    /// `kind`, when it is a string.
    pub kind: Option<String>,
    /// `callId`, when it is a string.
    pub call_id: Option<CallId>,
    /// `outcome`, when it is a string (never inspected by the fold).
    pub outcome: Option<String>,
    /// A well-formed `provenance` (§9.1).
    pub provenance: Option<Provenance>,
}

/// `turn/start`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TurnStart {
    /// `turn`, when it is a non-negative integer.
    pub turn: Option<u64>,
}

/// The `turn` and `step` of a `step/start` or `step/end`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StepRef {
    /// `turn`, when it is a non-negative integer.
    pub turn: Option<u64>,
    /// `step`, when it is a non-negative integer.
    pub step: Option<u64>,
}

/// `agent/inbox/spliced`: `queue[start..start + removedCount]` of the `target` queue is replaced by
/// `inserted`. Read leniently: a key of the wrong shape makes the splice unreadable
/// ([`InboxSplice::edit`] is `None`) without making the record corrupt. The inserted messages are
/// kept as JSON text and read only when [`InboxSplice::edit`] is asked for, so a fold that never
/// looks at inboxes never parses them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InboxSplice {
    /// `target` (`next-turn` or `next-step`), when it is a string.
    pub target: Option<String>,
    /// `start` and `removedCount` when both are absent (0) or non-negative integers, and the
    /// target, if present, is a string.
    counts: Option<(u64, u64)>,
    /// The `inserted` value's JSON text, when present.
    inserted: Option<String>,
}

impl InboxSplice {
    /// A splice as read: `counts` is `None` when a key had the wrong shape.
    pub(crate) fn new(
        target: Option<String>,
        counts: Option<(u64, u64)>,
        inserted: Option<String>,
    ) -> Self {
        Self {
            target,
            counts,
            inserted,
        }
    }

    /// The edit, when every present key has its type: `start` and `removedCount` non-negative
    /// integers (absent: 0), `inserted` an array of messages the seam's lenient reader accepts
    /// (absent: empty). A message that does not read makes the whole edit unreadable rather than
    /// silently dropping one message.
    pub fn edit(&self) -> Option<SpliceEdit> {
        let (start, removed_count) = self.counts?;
        let inserted = match &self.inserted {
            None => Vec::new(),
            Some(text) => serde_json::from_str::<Vec<UserMessage>>(text).ok()?,
        };
        Some(SpliceEdit {
            start,
            removed_count,
            inserted,
        })
    }
}

/// The readable part of an [`InboxSplice`].
#[derive(Clone, Debug, PartialEq)]
pub struct SpliceEdit {
    /// `start`.
    pub start: u64,
    /// `removedCount`.
    pub removed_count: u64,
    /// `inserted`.
    pub inserted: Vec<UserMessage>,
}

/// `turn/end`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TurnEnd {
    /// `turn`, when it is a non-negative integer.
    pub turn: Option<u64>,
}

/// `session/end-seed`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EndSeed {
    /// `data.inherited` is the boolean `true`: the marker of a fork's cut (§7.2).
    pub inherited: bool,
}

/// An event of a type the fold ignores.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OtherEvent {
    /// The event's `type`.
    pub event_type: String,
}

impl SessionEvent {
    /// An event with the given seq, no time and a body.
    pub fn new(seq: u64, body: EventBody) -> Self {
        Self {
            seq,
            time: None,
            body,
        }
    }

    /// The event type name as it appears in logs (`tool/code-dispatch` for an older dispatch).
    pub fn event_type(&self) -> &str {
        match &self.body {
            EventBody::RequestHeader(_) => "request/header",
            EventBody::ToolCall(_) => "tool/call",
            EventBody::ToolResult(_) => "tool/result",
            EventBody::Dispatch(d) => match d.kind {
                DispatchKind::Ptc => "tool/ptc-dispatch",
                DispatchKind::Code => "tool/code-dispatch",
            },
            EventBody::UserMessage(_) => "user/message",
            EventBody::TurnStart(_) => "turn/start",
            EventBody::StepStart(_) => "step/start",
            EventBody::StepEnd(_) => "step/end",
            EventBody::InboxSpliced(_) => "agent/inbox/spliced",
            EventBody::TurnEnd(_) => "turn/end",
            EventBody::EndSeed(_) => "session/end-seed",
            EventBody::Other(o) => &o.event_type,
        }
    }

    /// A `request/header` event offering `tools` (the JSON text of `header.tools`).
    pub fn request_header(seq: u64, tools: &str) -> Self {
        Self::new(
            seq,
            EventBody::RequestHeader(RequestHeader {
                tools: Some(tools.to_owned()),
                model: None,
            }),
        )
    }

    /// A `tool/call` event; `arguments` is the raw JSON text the model sent.
    pub fn tool_call(seq: u64, call_id: &str, name: &str, arguments: &str) -> Self {
        Self::new(
            seq,
            EventBody::ToolCall(ToolCall {
                call_id: Some(CallId::from(call_id)),
                name: Some(name.to_owned()),
                arguments: Some(arguments.to_owned()),
                turn: None,
                step: None,
            }),
        )
    }

    /// A newest-layout `tool/result` event with one text block.
    pub fn tool_result(seq: u64, call_id: &str, text: &str, is_error: bool) -> Self {
        Self::new(
            seq,
            EventBody::ToolResult(ToolResult {
                layout: Some(ResultLayout::Message),
                call_id: Some(CallId::from(call_id)),
                text: TextReading::read(text),
                is_error,
                error: ResultError::Absent,
                provenance: None,
            }),
        )
    }

    /// A late-reply `user/message` with one text block.
    pub fn reply(
        seq: u64,
        message_id: &str,
        call_id: &str,
        text: &str,
        provenance: Option<Provenance>,
    ) -> Self {
        Self::new(
            seq,
            EventBody::UserMessage(UserMessageEvent {
                id: Some(message_id.to_owned()),
                source: Some(SourceInfo {
                    kind: Some(MessageSource::REPLY_KIND.to_owned()),
                    call_id: Some(CallId::from(call_id)),
                    outcome: Some("answered".to_owned()),
                    provenance,
                }),
                text: TextReading::read(text),
            }),
        )
    }

    /// A `turn/end` event.
    pub fn turn_end(seq: u64, turn: u64) -> Self {
        Self::new(seq, EventBody::TurnEnd(TurnEnd { turn: Some(turn) }))
    }

    /// An event of a type the fold ignores.
    pub fn other(seq: u64, event_type: &str) -> Self {
        Self::new(
            seq,
            EventBody::Other(OtherEvent {
                event_type: event_type.to_owned(),
            }),
        )
    }

    /// Sets the `turn` and `step` of a `tool/call` event (other events are returned unchanged).
    #[must_use]
    pub fn in_step(mut self, turn: u64, step: u64) -> Self {
        if let EventBody::ToolCall(call) = &mut self.body {
            call.turn = Some(turn);
            call.step = Some(step);
        }
        self
    }

    /// Sets the time.
    #[must_use]
    pub fn at(mut self, time: i64) -> Self {
        self.time = Some(time);
        self
    }
}
