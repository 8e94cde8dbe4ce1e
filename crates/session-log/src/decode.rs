//! Decoding one storage record (SPEC §7.3, §7.4, §7.7, §7.8) in a single pass.
//!
//! The envelope is read with a hand-written visitor so that repeated keys keep the last value and
//! key order does not matter. When `type` comes before `data` (as every writer puts it), `data` is
//! decoded directly by the body reader for that type, and for the types the fold ignores it is
//! skipped with [`IgnoredAny`](serde::de::IgnoredAny): one scan of the line, no allocation for the
//! skipped parts. When `data` comes first, it is kept as a [`RawValue`] and decoded once the type is
//! known; when a repeated `type` changes the type after `data` was decoded, the line is read again
//! in that slower order. The body readers never fail on valid JSON: a value of the wrong type just
//! does not match, as in the reference's JavaScript reader.

use std::borrow::Cow;
use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess};
use serde_json::value::RawValue;
use user_questions::{CallId, ErrorCode, MessageSource};

use crate::event::{
    Dispatch, DispatchKind, EndSeed, EventBody, InboxSplice, OtherEvent, RequestHeader,
    ResultError, ResultLayout, SessionEvent, SourceInfo, StepRef, ToolCall, ToolResult, TurnEnd,
    TurnStart, UserMessageEvent,
};
use crate::lenient::{Int, IsTrue, Lenient, Shape, Str, Unsigned, key, skip, value};
use crate::readers::{self, TextReading};
use crate::text::{fix_lone_surrogates, is_json_ws, may_have_surrogate_escape};

/// Why a complete line is not a record (SPEC §9.6). Such a line is skipped and consumes no `seq`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CorruptReason {
    /// The line is empty or only whitespace.
    Blank,
    /// The line is not one JSON value (a syntax error, or trailing characters after the value).
    NotJson(String),
    /// The line is JSON but not an object (`null`, an array, a number, …).
    NotObject,
    /// The object has no `type`, or its `type` is not a string.
    NoType,
    /// An explicit `seq` (or a packed row's `seq0`) that is not a non-negative integer.
    BadSeq,
    /// A packed chunk row without `data`, or without its `texts`/`args` array (§7.4).
    MalformedPackedRow,
    /// The line is longer than the reader keeps in memory; it was skipped unread.
    TooLong {
        /// The limit in bytes.
        limit: u64,
    },
}

impl fmt::Display for CorruptReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Blank => f.write_str("blank line"),
            Self::NotJson(message) => write!(f, "not JSON: {message}"),
            Self::NotObject => f.write_str("not a JSON object"),
            Self::NoType => f.write_str("no string `type`"),
            Self::BadSeq => f.write_str("`seq` is not a non-negative integer"),
            Self::MalformedPackedRow => f.write_str("malformed packed chunk row"),
            Self::TooLong { limit } => write!(f, "longer than {limit} bytes; skipped unread"),
        }
    }
}

/// The packed chunk row types of §7.4.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum PackedType {
    Text,
    Reasoning,
    ToolCall,
}

/// One decoded record: a single event, or a packed row standing for several `assistant/chunk`
/// events.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DecodedRecord {
    explicit_seq: bool,
    inner: Inner,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Inner {
    Single(SessionEvent),
    Packed {
        seq0: u64,
        count: u64,
        time0: Option<i64>,
    },
}

/// The event type of the members of a packed row.
pub const CHUNK_EVENT_TYPE: &str = "assistant/chunk";

impl DecodedRecord {
    /// The `seq` of the record's first event.
    pub fn first_seq(&self) -> u64 {
        match &self.inner {
            Inner::Single(event) => event.seq,
            Inner::Packed { seq0, .. } => *seq0,
        }
    }

    /// How many events the record stands for (1, or the member count of a packed row).
    pub fn event_count(&self) -> u64 {
        match &self.inner {
            Inner::Single(_) => 1,
            Inner::Packed { count, .. } => *count,
        }
    }

    /// The expected `seq` after this record: its last `seq` + 1 (§7.3).
    pub fn next_seq(&self) -> u64 {
        self.first_seq().saturating_add(self.event_count())
    }

    /// Whether the record carried an explicit `seq` (or `seq0`).
    pub fn has_explicit_seq(&self) -> bool {
        self.explicit_seq
    }

    /// The record as if decoded with `expected_seq`: a record without an explicit `seq` takes it
    /// (one decoded ahead of its turn, with a placeholder, gets its real `seq` this way).
    #[must_use]
    pub(crate) fn with_expected_seq(mut self, expected_seq: u64) -> Self {
        if !self.explicit_seq {
            match &mut self.inner {
                Inner::Single(event) => event.seq = expected_seq,
                Inner::Packed { seq0, .. } => *seq0 = expected_seq,
            }
        }
        self
    }

    /// Whether this is a packed chunk row.
    pub fn is_packed(&self) -> bool {
        matches!(self.inner, Inner::Packed { .. })
    }

    /// The single event, when the record is not a packed row.
    pub fn event(&self) -> Option<&SessionEvent> {
        match &self.inner {
            Inner::Single(event) => Some(event),
            Inner::Packed { .. } => None,
        }
    }

    /// The record's events. A packed row yields `assistant/chunk` events with `seq0 + k`; the
    /// first carries `time0` and the others no time (their deltas are not kept).
    pub fn into_events(self) -> impl Iterator<Item = SessionEvent> {
        let (single, packed) = match self.inner {
            Inner::Single(event) => (Some(event), None),
            Inner::Packed { seq0, count, time0 } => (None, Some((seq0, count, time0))),
        };
        single
            .into_iter()
            .chain(packed.into_iter().flat_map(|(seq0, count, time0)| {
                (0..count).map(move |k| SessionEvent {
                    seq: seq0.saturating_add(k),
                    time: if k == 0 { time0 } else { None },
                    body: EventBody::Other(OtherEvent {
                        event_type: CHUNK_EVENT_TYPE.to_owned(),
                    }),
                })
            }))
    }
}

impl SessionEvent {
    /// Decodes one record's JSON text (SPEC §7.3). `expected_seq` is the value a record without an
    /// explicit `seq` gets. A packed chunk row (§7.4) decodes to several events.
    pub fn from_record(line: &str, expected_seq: u64) -> Result<DecodedRecord, CorruptReason> {
        decode_str(line, expected_seq)
    }
}

/// Decodes a record given as UTF-8 text.
pub(crate) fn decode_str(line: &str, expected_seq: u64) -> Result<DecodedRecord, CorruptReason> {
    if line.bytes().all(is_json_ws) {
        return Err(CorruptReason::Blank);
    }
    match decode_once(line, expected_seq) {
        Err(CorruptReason::NotJson(message)) if may_have_surrogate_escape(line) => {
            match fix_lone_surrogates(line) {
                Cow::Owned(fixed) => decode_once(&fixed, expected_seq),
                Cow::Borrowed(_) => Err(CorruptReason::NotJson(message)),
            }
        }
        other => other,
    }
}

fn decode_once(line: &str, expected_seq: u64) -> Result<DecodedRecord, CorruptReason> {
    let envelope = match parse_envelope(line, false)? {
        envelope if envelope.redecode => parse_envelope(line, true)?,
        envelope => envelope,
    };
    envelope.finish(expected_seq)
}

fn parse_envelope(line: &str, force_raw: bool) -> Result<Envelope<'_>, CorruptReason> {
    let mut de = serde_json::Deserializer::from_str(line);
    let envelope = Lenient(EnvelopeShape { force_raw })
        .deserialize(&mut de)
        .map_err(|e| CorruptReason::NotJson(e.to_string()))?;
    de.end()
        .map_err(|e| CorruptReason::NotJson(e.to_string()))?;
    envelope.ok_or(CorruptReason::NotObject)
}

/// What the body readers work on: the kind of record, from its `type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    RequestHeader,
    ToolCall,
    ToolResult,
    Dispatch(DispatchKind),
    UserMessage,
    TurnStart,
    StepStart,
    StepEnd,
    InboxSpliced,
    TurnEnd,
    EndSeed,
    Packed(PackedType),
    Other,
}

impl Kind {
    fn of(event_type: &str) -> Self {
        match event_type {
            "request/header" => Self::RequestHeader,
            "tool/call" => Self::ToolCall,
            "tool/result" => Self::ToolResult,
            "tool/ptc-dispatch" => Self::Dispatch(DispatchKind::Ptc),
            "tool/code-dispatch" => Self::Dispatch(DispatchKind::Code),
            "user/message" => Self::UserMessage,
            "turn/start" => Self::TurnStart,
            "step/start" => Self::StepStart,
            "step/end" => Self::StepEnd,
            "agent/inbox/spliced" => Self::InboxSpliced,
            "turn/end" => Self::TurnEnd,
            "session/end-seed" => Self::EndSeed,
            "text-chunks" => Self::Packed(PackedType::Text),
            "reasoning-chunks" => Self::Packed(PackedType::Reasoning),
            "tool-call-chunks" => Self::Packed(PackedType::ToolCall),
            _ => Self::Other,
        }
    }
}

#[derive(Clone, Copy, Default)]
enum SeqSlot {
    #[default]
    Absent,
    Valid(u64),
    Invalid,
}

struct SeqShape;

impl Shape<'_> for SeqShape {
    type Out = SeqSlot;
    fn fallback(self) -> SeqSlot {
        SeqSlot::Invalid
    }
    fn unsigned(self, value: u64) -> SeqSlot {
        SeqSlot::Valid(value)
    }
}

// The slot lives on the stack for one record; boxing the large variant would allocate per line.
#[allow(clippy::large_enum_variant)]
enum DataSlot<'de> {
    Absent,
    Raw(&'de RawValue),
    Decoded(Kind, Body<'de>),
}

struct Envelope<'de> {
    event_type: Option<Cow<'de, str>>,
    seq: SeqSlot,
    seq0: SeqSlot,
    time: Option<i64>,
    time0: Option<i64>,
    data: DataSlot<'de>,
    redecode: bool,
}

struct EnvelopeShape {
    force_raw: bool,
}

impl<'de> Shape<'de> for EnvelopeShape {
    type Out = Option<Envelope<'de>>;

    fn fallback(self) -> Self::Out {
        None
    }

    fn object<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Out, A::Error> {
        let mut envelope = Envelope {
            event_type: None,
            seq: SeqSlot::Absent,
            seq0: SeqSlot::Absent,
            time: None,
            time0: None,
            data: DataSlot::Absent,
            redecode: false,
        };
        while let Some(k) = key(&mut map)? {
            match &*k {
                "type" => {
                    envelope.event_type = value(&mut map, Str)?;
                    let changed = match (&envelope.data, &envelope.event_type) {
                        (DataSlot::Decoded(kind, _), Some(t)) => *kind != Kind::of(t),
                        (DataSlot::Decoded(_, _), None) => true,
                        _ => false,
                    };
                    envelope.redecode |= changed;
                }
                "seq" => envelope.seq = value(&mut map, SeqShape)?,
                "seq0" => envelope.seq0 = value(&mut map, SeqShape)?,
                "time" => envelope.time = value(&mut map, Int)?,
                "time0" => envelope.time0 = value(&mut map, Int)?,
                "data" => {
                    envelope.data = match (&envelope.event_type, self.force_raw) {
                        (Some(t), false) => {
                            let kind = Kind::of(t);
                            DataSlot::Decoded(kind, map.next_value_seed(BodySeed(kind))?)
                        }
                        _ => DataSlot::Raw(map.next_value::<&'de RawValue>()?),
                    };
                }
                _ => skip(&mut map)?,
            }
        }
        Ok(Some(envelope))
    }
}

impl Envelope<'_> {
    fn finish(self, expected_seq: u64) -> Result<DecodedRecord, CorruptReason> {
        let event_type = self.event_type.ok_or(CorruptReason::NoType)?;
        let kind = Kind::of(&event_type);
        let body = match self.data {
            DataSlot::Absent => None,
            DataSlot::Decoded(_, body) => Some(body),
            DataSlot::Raw(raw) => {
                let mut de = serde_json::Deserializer::from_str(raw.get());
                Some(
                    BodySeed(kind)
                        .deserialize(&mut de)
                        .map_err(|e| CorruptReason::NotJson(e.to_string()))?,
                )
            }
        };
        if let Kind::Packed(_) = kind {
            let seq0 = match self.seq0 {
                SeqSlot::Absent => None,
                SeqSlot::Valid(seq0) => Some(seq0),
                SeqSlot::Invalid => return Err(CorruptReason::BadSeq),
            };
            if let SeqSlot::Invalid = self.seq {
                return Err(CorruptReason::BadSeq);
            }
            let Some(Body::Packed(Some(count))) = body else {
                return Err(CorruptReason::MalformedPackedRow);
            };
            return Ok(DecodedRecord {
                explicit_seq: seq0.is_some(),
                inner: Inner::Packed {
                    seq0: seq0.unwrap_or(expected_seq),
                    count,
                    time0: self.time0,
                },
            });
        }
        let (seq, explicit_seq) = match self.seq {
            SeqSlot::Absent => (expected_seq, false),
            SeqSlot::Valid(seq) => (seq, true),
            SeqSlot::Invalid => return Err(CorruptReason::BadSeq),
        };
        let body = match body {
            Some(body) => body.into_event_body(kind, &event_type),
            None => Body::absent(kind).into_event_body(kind, &event_type),
        };
        Ok(DecodedRecord {
            explicit_seq,
            inner: Inner::Single(SessionEvent {
                seq,
                time: self.time,
                body,
            }),
        })
    }
}

/// A decoded `data`, still borrowing from the line.
enum Body<'de> {
    RequestHeader(HeaderParts<'de>),
    ToolCall(ToolCallData<'de>),
    ToolResult(ResultData<'de>),
    Dispatch(DispatchData<'de>),
    UserMessage(MessageData<'de>),
    TurnStart(Option<u64>),
    Step(TurnStepData),
    InboxSpliced(SpliceData<'de>),
    TurnEnd(Option<u64>),
    EndSeed(bool),
    Packed(Option<u64>),
    Other,
}

impl Body<'_> {
    /// The body of a record without `data` (or with a `data` that is not an object).
    fn absent(kind: Kind) -> Self {
        match kind {
            Kind::RequestHeader => Self::RequestHeader((None, None)),
            Kind::ToolCall => Self::ToolCall(ToolCallData::default()),
            Kind::ToolResult => Self::ToolResult(ResultData::default()),
            Kind::Dispatch(_) => Self::Dispatch(DispatchData::default()),
            Kind::UserMessage => Self::UserMessage(MessageData::default()),
            Kind::TurnStart => Self::TurnStart(None),
            Kind::StepStart | Kind::StepEnd => Self::Step(TurnStepData::default()),
            Kind::InboxSpliced => Self::InboxSpliced(SpliceShape.fallback()),
            Kind::TurnEnd => Self::TurnEnd(None),
            Kind::EndSeed => Self::EndSeed(false),
            Kind::Packed(_) => Self::Packed(None),
            Kind::Other => Self::Other,
        }
    }

    fn into_event_body(self, kind: Kind, event_type: &str) -> EventBody {
        match (self, kind) {
            (Self::RequestHeader((tools, model)), _) => EventBody::RequestHeader(RequestHeader {
                tools: tools.map(|raw| raw.get().to_owned()),
                model: model.map(Cow::into_owned),
            }),
            (Self::ToolCall(data), _) => EventBody::ToolCall(data.into_event()),
            (Self::ToolResult(data), _) => EventBody::ToolResult(data.into_event()),
            (Self::Dispatch(data), Kind::Dispatch(dispatch_kind)) => {
                EventBody::Dispatch(data.into_event(dispatch_kind))
            }
            (Self::UserMessage(data), _) => EventBody::UserMessage(data.into_event()),
            (Self::TurnStart(turn), _) => EventBody::TurnStart(TurnStart { turn }),
            (Self::Step(data), Kind::StepStart) => EventBody::StepStart(data.into_ref()),
            (Self::Step(data), Kind::StepEnd) => EventBody::StepEnd(data.into_ref()),
            (Self::InboxSpliced(data), _) => EventBody::InboxSpliced(data.into_event()),
            (Self::TurnEnd(turn), _) => EventBody::TurnEnd(TurnEnd { turn }),
            (Self::EndSeed(inherited), _) => EventBody::EndSeed(EndSeed { inherited }),
            (Self::Dispatch(_) | Self::Step(_) | Self::Packed(_) | Self::Other, _) => {
                EventBody::Other(OtherEvent {
                    event_type: event_type.to_owned(),
                })
            }
        }
    }
}

struct BodySeed(Kind);

impl<'de> DeserializeSeed<'de> for BodySeed {
    type Value = Body<'de>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Body<'de>, D::Error> {
        Ok(match self.0 {
            Kind::RequestHeader => {
                Body::RequestHeader(Lenient(HeaderData).deserialize(deserializer)?)
            }
            Kind::ToolCall => Body::ToolCall(Lenient(ToolCallShape).deserialize(deserializer)?),
            Kind::ToolResult => Body::ToolResult(Lenient(ResultShape).deserialize(deserializer)?),
            Kind::Dispatch(_) => Body::Dispatch(Lenient(DispatchShape).deserialize(deserializer)?),
            Kind::UserMessage => {
                Body::UserMessage(Lenient(MessageShape).deserialize(deserializer)?)
            }
            Kind::TurnStart => Body::TurnStart(Lenient(TurnShape).deserialize(deserializer)?),
            Kind::StepStart | Kind::StepEnd => {
                Body::Step(Lenient(TurnStepShape).deserialize(deserializer)?)
            }
            Kind::InboxSpliced => {
                Body::InboxSpliced(Lenient(SpliceShape).deserialize(deserializer)?)
            }
            Kind::TurnEnd => Body::TurnEnd(Lenient(TurnShape).deserialize(deserializer)?),
            Kind::EndSeed => Body::EndSeed(Lenient(EndSeedShape).deserialize(deserializer)?),
            Kind::Packed(packed) => {
                Body::Packed(Lenient(PackedShape(packed)).deserialize(deserializer)?)
            }
            Kind::Other => {
                <IgnoredAny as serde::Deserialize>::deserialize(deserializer)?;
                Body::Other
            }
        })
    }
}

// ---------------------------------------------------------------------------------------------
// request/header: `header.tools`, kept as it is (the projection reads what it declares).

struct HeaderData;

/// `header.tools` as logged and `header.config.model`, when a string.
type HeaderParts<'de> = (Option<&'de RawValue>, Option<Cow<'de, str>>);

impl<'de> Shape<'de> for HeaderData {
    type Out = HeaderParts<'de>;
    fn fallback(self) -> Self::Out {
        (None, None)
    }
    fn object<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Out, A::Error> {
        let mut parts = (None, None);
        while let Some(k) = key(&mut map)? {
            match &*k {
                "header" => parts = value(&mut map, HeaderObject)?,
                _ => skip(&mut map)?,
            }
        }
        Ok(parts)
    }
}

struct HeaderObject;

impl<'de> Shape<'de> for HeaderObject {
    type Out = HeaderParts<'de>;
    fn fallback(self) -> Self::Out {
        (None, None)
    }
    fn object<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Out, A::Error> {
        let (mut tools, mut model) = (None, None);
        while let Some(k) = key(&mut map)? {
            match &*k {
                "tools" => tools = Some(map.next_value::<&'de RawValue>()?),
                "config" => model = value(&mut map, ConfigModel)?,
                _ => skip(&mut map)?,
            }
        }
        Ok((tools, model))
    }
}

/// `config.model`, when a string.
struct ConfigModel;

impl<'de> Shape<'de> for ConfigModel {
    type Out = Option<Cow<'de, str>>;
    fn fallback(self) -> Self::Out {
        None
    }
    fn object<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Out, A::Error> {
        let mut model = None;
        while let Some(k) = key(&mut map)? {
            match &*k {
                "model" => model = value(&mut map, Str)?,
                _ => skip(&mut map)?,
            }
        }
        Ok(model)
    }
}

// ---------------------------------------------------------------------------------------------
// tool/call

#[derive(Default)]
struct ToolCallData<'de> {
    call_id: Option<Cow<'de, str>>,
    name: Option<Cow<'de, str>>,
    arguments: Option<&'de RawValue>,
    turn: Option<u64>,
    step: Option<u64>,
}

impl ToolCallData<'_> {
    fn into_event(self) -> ToolCall {
        ToolCall {
            call_id: self.call_id.map(|c| CallId::from(c.into_owned())),
            name: self.name.map(Cow::into_owned),
            // The arguments text, when it is a string (any other value reads as none).
            arguments: self.arguments.and_then(crate::lenient::raw_string),
            turn: self.turn,
            step: self.step,
        }
    }
}

struct ToolCallShape;

impl<'de> Shape<'de> for ToolCallShape {
    type Out = ToolCallData<'de>;
    fn fallback(self) -> Self::Out {
        ToolCallData::default()
    }
    fn object<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Out, A::Error> {
        let mut data = ToolCallData::default();
        while let Some(k) = key(&mut map)? {
            match &*k {
                "callId" => data.call_id = value(&mut map, Str)?,
                "name" => data.name = value(&mut map, Str)?,
                "arguments" => data.arguments = Some(map.next_value::<&'de RawValue>()?),
                "turn" => data.turn = value(&mut map, Unsigned)?,
                "step" => data.step = value(&mut map, Unsigned)?,
                _ => skip(&mut map)?,
            }
        }
        Ok(data)
    }
}

// ---------------------------------------------------------------------------------------------
// Content arrays: the first text block (§8.5) and, at the top level of a message, the first
// `tool-result` block (layout B). Nested blocks never read their own `content`, so the depth of
// what is interpreted stays bounded whatever the input nests.

/// The first text block of a content array: not found yet, or found with its raw `text` value
/// (absent, or any JSON value; a non-string carries no JSON). Once found, later text blocks are
/// never read.
#[derive(Clone, Copy, Default)]
enum FirstText<'de> {
    #[default]
    NotFound,
    Found(Option<&'de RawValue>),
}

/// What one pass over a content array keeps.
#[derive(Default)]
struct ContentScan<'de> {
    first_text: FirstText<'de>,
    first_tool_result: Option<NestedResult<'de>>,
}

impl ContentScan<'_> {
    fn reading(&self) -> TextReading {
        reading(self.first_text)
    }
}

fn reading(first_text: FirstText<'_>) -> TextReading {
    match first_text {
        FirstText::Found(Some(raw)) => TextReading::read_raw(raw).unwrap_or_default(),
        FirstText::Found(None) | FirstText::NotFound => TextReading::default(),
    }
}

#[derive(Default)]
struct NestedResult<'de> {
    tool_call_id: Option<Cow<'de, str>>,
    /// The first text block of the nested block's own `content`.
    first_text: FirstText<'de>,
    is_error: bool,
}

struct Content {
    /// Whether `tool-result` blocks are looked for (only in `data.message.content`).
    results: bool,
}

impl<'de> Shape<'de> for Content {
    type Out = ContentScan<'de>;
    fn fallback(self) -> Self::Out {
        ContentScan::default()
    }
    fn array<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Out, A::Error> {
        let mut scan = ContentScan::default();
        while let Some(block) = seq.next_element_seed(Lenient(BlockShape {
            results: self.results,
        }))? {
            let Some(block) = block else { continue };
            match block.kind.as_deref() {
                Some("text") if matches!(scan.first_text, FirstText::NotFound) => {
                    scan.first_text = FirstText::Found(block.text);
                }
                Some("tool-result") if self.results && scan.first_tool_result.is_none() => {
                    scan.first_tool_result = Some(NestedResult {
                        tool_call_id: block.tool_call_id,
                        first_text: block.first_text,
                        is_error: block.is_error,
                    });
                }
                _ => {}
            }
        }
        Ok(scan)
    }
}

struct Block<'de> {
    kind: Option<Cow<'de, str>>,
    text: Option<&'de RawValue>,
    tool_call_id: Option<Cow<'de, str>>,
    /// For a top-level `tool-result` block: the first text block of its `content`.
    first_text: FirstText<'de>,
    is_error: bool,
}

struct BlockShape {
    results: bool,
}

impl<'de> Shape<'de> for BlockShape {
    type Out = Option<Block<'de>>;
    fn fallback(self) -> Self::Out {
        None
    }
    fn object<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Out, A::Error> {
        let mut block = Block {
            kind: None,
            text: None,
            tool_call_id: None,
            first_text: FirstText::NotFound,
            is_error: false,
        };
        while let Some(k) = key(&mut map)? {
            match &*k {
                "type" => block.kind = value(&mut map, Str)?,
                "text" => block.text = Some(map.next_value::<&'de RawValue>()?),
                "toolCallId" if self.results => block.tool_call_id = value(&mut map, Str)?,
                "content" if self.results => {
                    block.first_text = value(&mut map, Content { results: false })?.first_text;
                }
                "isError" if self.results => block.is_error = value(&mut map, IsTrue)?,
                _ => skip(&mut map)?,
            }
        }
        Ok(Some(block))
    }
}

// ---------------------------------------------------------------------------------------------
// tool/result, layouts A, B, C (§7.7)

#[derive(Default)]
struct ResultData<'de> {
    message: Option<MessageParts<'de>>,
    call_id: Option<Cow<'de, str>>,
    content: ContentScan<'de>,
    is_error: bool,
    error: ResultError,
    provenance: Option<&'de RawValue>,
}

#[derive(Default)]
struct MessageParts<'de> {
    tool_call_id: Option<Cow<'de, str>>,
    content: ContentScan<'de>,
    is_error: bool,
}

impl ResultData<'_> {
    fn into_event(self) -> ToolResult {
        let provenance = self.provenance.and_then(readers::provenance);
        let (layout, call_id, first_text, is_error) = match self.message {
            Some(MessageParts {
                tool_call_id: Some(id),
                content,
                is_error,
            }) => (
                Some(ResultLayout::Message),
                Some(id),
                content.first_text,
                is_error,
            ),
            Some(MessageParts {
                tool_call_id: None,
                content:
                    ContentScan {
                        first_tool_result: Some(nested),
                        ..
                    },
                ..
            }) => (
                Some(ResultLayout::Nested),
                nested.tool_call_id,
                nested.first_text,
                nested.is_error,
            ),
            _ if self.call_id.is_some() => (
                Some(ResultLayout::Flat),
                self.call_id,
                self.content.first_text,
                self.is_error,
            ),
            _ => (None, None, FirstText::NotFound, false),
        };
        ToolResult {
            layout,
            call_id: call_id.map(|c| CallId::from(c.into_owned())),
            text: reading(first_text),
            is_error,
            error: self.error,
            provenance,
        }
    }
}

struct ResultShape;

impl<'de> Shape<'de> for ResultShape {
    type Out = ResultData<'de>;
    fn fallback(self) -> Self::Out {
        ResultData::default()
    }
    fn object<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Out, A::Error> {
        let mut data = ResultData::default();
        while let Some(k) = key(&mut map)? {
            match &*k {
                "message" => data.message = value(&mut map, MessageShapeForResult)?,
                "callId" => data.call_id = value(&mut map, Str)?,
                "content" => data.content = value(&mut map, Content { results: false })?,
                "isError" => data.is_error = value(&mut map, IsTrue)?,
                "error" => data.error = value(&mut map, ErrorShape)?,
                "meta" => data.provenance = value(&mut map, MetaShape)?,
                _ => skip(&mut map)?,
            }
        }
        Ok(data)
    }
}

struct MessageShapeForResult;

impl<'de> Shape<'de> for MessageShapeForResult {
    type Out = Option<MessageParts<'de>>;
    fn fallback(self) -> Self::Out {
        None
    }
    fn object<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Out, A::Error> {
        let mut parts = MessageParts::default();
        while let Some(k) = key(&mut map)? {
            match &*k {
                "toolCallId" => parts.tool_call_id = value(&mut map, Str)?,
                "content" => parts.content = value(&mut map, Content { results: true })?,
                "isError" => parts.is_error = value(&mut map, IsTrue)?,
                _ => skip(&mut map)?,
            }
        }
        Ok(Some(parts))
    }
}

struct ErrorShape;

impl<'de> Shape<'de> for ErrorShape {
    type Out = ResultError;
    fn fallback(self) -> ResultError {
        ResultError::Present { code: None }
    }
    fn object<A: MapAccess<'de>>(self, mut map: A) -> Result<ResultError, A::Error> {
        let mut code = None;
        while let Some(k) = key(&mut map)? {
            match &*k {
                "code" => code = value(&mut map, Str)?.map(|c| ErrorCode::parse(&c)),
                _ => skip(&mut map)?,
            }
        }
        Ok(ResultError::Present { code })
    }
}

struct MetaShape;

impl<'de> Shape<'de> for MetaShape {
    type Out = Option<&'de RawValue>;
    fn fallback(self) -> Self::Out {
        None
    }
    fn object<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Out, A::Error> {
        let mut provenance = None;
        while let Some(k) = key(&mut map)? {
            match &*k {
                "provenance" => provenance = Some(map.next_value::<&'de RawValue>()?),
                _ => skip(&mut map)?,
            }
        }
        Ok(provenance)
    }
}

// ---------------------------------------------------------------------------------------------
// tool/ptc-dispatch and tool/code-dispatch

#[derive(Default)]
struct DispatchData<'de> {
    sub_call_id: Option<Cow<'de, str>>,
    name: Option<Cow<'de, str>>,
    is_error: bool,
    content: ContentScan<'de>,
    arguments: Option<&'de RawValue>,
}

impl DispatchData<'_> {
    fn into_event(self, kind: DispatchKind) -> Dispatch {
        Dispatch {
            kind,
            sub_call_id: self.sub_call_id.map(|c| CallId::from(c.into_owned())),
            name: self.name.map(Cow::into_owned),
            is_error: self.is_error,
            text: self.content.reading(),
            // The arguments object's JSON text (a string or any other value reads as none).
            arguments: self
                .arguments
                .filter(|raw| raw.get().starts_with('{'))
                .map(|raw| raw.get().to_owned()),
        }
    }
}

struct DispatchShape;

impl<'de> Shape<'de> for DispatchShape {
    type Out = DispatchData<'de>;
    fn fallback(self) -> Self::Out {
        DispatchData::default()
    }
    fn object<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Out, A::Error> {
        let mut data = DispatchData::default();
        while let Some(k) = key(&mut map)? {
            match &*k {
                "subCallId" => data.sub_call_id = value(&mut map, Str)?,
                "name" => data.name = value(&mut map, Str)?,
                "isError" => data.is_error = value(&mut map, IsTrue)?,
                "content" => data.content = value(&mut map, Content { results: false })?,
                "arguments" => data.arguments = Some(map.next_value::<&'de RawValue>()?),
                _ => skip(&mut map)?,
            }
        }
        Ok(data)
    }
}

// ---------------------------------------------------------------------------------------------
// user/message

#[derive(Default)]
struct MessageData<'de> {
    id: Option<Cow<'de, str>>,
    source: Option<SourceParts<'de>>,
    content: ContentScan<'de>,
}

#[derive(Default)]
struct SourceParts<'de> {
    kind: Option<Cow<'de, str>>,
    call_id: Option<Cow<'de, str>>,
    outcome: Option<Cow<'de, str>>,
    provenance: Option<&'de RawValue>,
}

impl MessageData<'_> {
    fn into_event(self) -> UserMessageEvent {
        let is_reply = self
            .source
            .as_ref()
            .is_some_and(|s| s.kind.as_deref() == Some(MessageSource::REPLY_KIND));
        UserMessageEvent {
            id: self.id.map(Cow::into_owned),
            source: self.source.map(|s| SourceInfo {
                kind: s.kind.map(Cow::into_owned),
                call_id: s.call_id.map(|c| CallId::from(c.into_owned())),
                outcome: s.outcome.map(Cow::into_owned),
                provenance: s.provenance.and_then(readers::provenance),
            }),
            text: if is_reply {
                self.content.reading()
            } else {
                TextReading::default()
            },
        }
    }
}

struct MessageShape;

impl<'de> Shape<'de> for MessageShape {
    type Out = MessageData<'de>;
    fn fallback(self) -> Self::Out {
        MessageData::default()
    }
    fn object<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Out, A::Error> {
        let mut data = MessageData::default();
        while let Some(k) = key(&mut map)? {
            match &*k {
                "id" => data.id = value(&mut map, Str)?,
                "source" => data.source = value(&mut map, SourceShape)?,
                "content" => data.content = value(&mut map, Content { results: false })?,
                _ => skip(&mut map)?,
            }
        }
        Ok(data)
    }
}

struct SourceShape;

impl<'de> Shape<'de> for SourceShape {
    type Out = Option<SourceParts<'de>>;
    fn fallback(self) -> Self::Out {
        None
    }
    fn object<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Out, A::Error> {
        let mut source = SourceParts::default();
        while let Some(k) = key(&mut map)? {
            match &*k {
                "kind" => source.kind = value(&mut map, Str)?,
                "callId" => source.call_id = value(&mut map, Str)?,
                "outcome" => source.outcome = value(&mut map, Str)?,
                "provenance" => source.provenance = Some(map.next_value::<&'de RawValue>()?),
                _ => skip(&mut map)?,
            }
        }
        Ok(Some(source))
    }
}

// ---------------------------------------------------------------------------------------------
// turn/start, step/start, step/end, agent/inbox/spliced, turn/end, session/end-seed, packed rows

#[derive(Default)]
struct TurnStepData {
    turn: Option<u64>,
    step: Option<u64>,
}

impl TurnStepData {
    fn into_ref(self) -> StepRef {
        StepRef {
            turn: self.turn,
            step: self.step,
        }
    }
}

struct TurnStepShape;

impl<'de> Shape<'de> for TurnStepShape {
    type Out = TurnStepData;
    fn fallback(self) -> Self::Out {
        TurnStepData::default()
    }
    fn object<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Out, A::Error> {
        let mut data = TurnStepData::default();
        while let Some(k) = key(&mut map)? {
            match &*k {
                "turn" => data.turn = value(&mut map, Unsigned)?,
                "step" => data.step = value(&mut map, Unsigned)?,
                _ => skip(&mut map)?,
            }
        }
        Ok(data)
    }
}

/// `agent/inbox/spliced` as read: each key absent, of its type, or of another type (unreadable).
#[derive(Default)]
struct SpliceData<'de> {
    not_object: bool,
    target: Option<Cow<'de, str>>,
    target_invalid: bool,
    start: SeqSlot,
    removed_count: SeqSlot,
    inserted: Option<&'de RawValue>,
}

impl SpliceData<'_> {
    fn into_event(self) -> InboxSplice {
        let count = |slot: SeqSlot| match slot {
            SeqSlot::Absent => Some(0),
            SeqSlot::Valid(n) => Some(n),
            SeqSlot::Invalid => None,
        };
        let readable = !self.not_object && !self.target_invalid && self.target.is_some();
        let counts = match (readable, count(self.start), count(self.removed_count)) {
            (true, Some(start), Some(removed_count)) => Some((start, removed_count)),
            _ => None,
        };
        InboxSplice::new(
            self.target.map(Cow::into_owned),
            counts,
            self.inserted.map(|raw| raw.get().to_owned()),
        )
    }
}

struct SpliceShape;

impl<'de> Shape<'de> for SpliceShape {
    type Out = SpliceData<'de>;
    fn fallback(self) -> Self::Out {
        SpliceData {
            not_object: true,
            ..SpliceData::default()
        }
    }
    fn object<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Out, A::Error> {
        let mut data = SpliceData::default();
        while let Some(k) = key(&mut map)? {
            match &*k {
                "target" => {
                    data.target = value(&mut map, Str)?;
                    data.target_invalid = data.target.is_none();
                }
                "start" => data.start = value(&mut map, SeqShape)?,
                "removedCount" => data.removed_count = value(&mut map, SeqShape)?,
                "inserted" => data.inserted = Some(map.next_value::<&'de RawValue>()?),
                _ => skip(&mut map)?,
            }
        }
        Ok(data)
    }
}

struct TurnShape;

impl<'de> Shape<'de> for TurnShape {
    type Out = Option<u64>;
    fn fallback(self) -> Self::Out {
        None
    }
    fn object<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Out, A::Error> {
        let mut turn = None;
        while let Some(k) = key(&mut map)? {
            match &*k {
                "turn" => turn = value(&mut map, Unsigned)?,
                _ => skip(&mut map)?,
            }
        }
        Ok(turn)
    }
}

struct EndSeedShape;

impl<'de> Shape<'de> for EndSeedShape {
    type Out = bool;
    fn fallback(self) -> bool {
        false
    }
    fn object<A: MapAccess<'de>>(self, mut map: A) -> Result<bool, A::Error> {
        let mut inherited = false;
        while let Some(k) = key(&mut map)? {
            match &*k {
                "inherited" => inherited = value(&mut map, IsTrue)?,
                _ => skip(&mut map)?,
            }
        }
        Ok(inherited)
    }
}

struct PackedShape(PackedType);

impl<'de> Shape<'de> for PackedShape {
    type Out = Option<u64>;
    fn fallback(self) -> Self::Out {
        None
    }
    fn object<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Out, A::Error> {
        let members = match self.0 {
            PackedType::Text | PackedType::Reasoning => "texts",
            PackedType::ToolCall => "args",
        };
        let mut count = None;
        while let Some(k) = key(&mut map)? {
            if k == members {
                count = value(&mut map, CountElements)?;
            } else {
                skip(&mut map)?;
            }
        }
        Ok(count)
    }
}

struct CountElements;

impl<'de> Shape<'de> for CountElements {
    type Out = Option<u64>;
    fn fallback(self) -> Self::Out {
        None
    }
    fn array<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Out, A::Error> {
        let mut count = 0u64;
        while seq.next_element::<IgnoredAny>()?.is_some() {
            count += 1;
        }
        Ok(Some(count))
    }
}
