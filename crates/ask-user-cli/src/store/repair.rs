//! Resume repair (SPEC §7.6): after a crash, every logged `tool/call` without a `tool/result` gets
//! a synthetic `TOOL_OUTCOME_UNKNOWN` result, and the step and turn the process was in are closed
//! (`step/end`, `turn/end` with `reason.kind: "interrupted"`). Append-only: nothing is rewritten.
//!
//! The store tracks what is unfinished while it reads a log (and while a writer appends), so
//! knowing what to repair costs no extra pass. A timed `ask_user_question` call interrupted this
//! way becomes *continued* in the projection (§8.7) and answerable late.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;

use serde::Serialize;
use serde::de::{Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use user_questions_projection::{EventBody, SessionEvent, TOOL_OUTCOME_UNKNOWN};

use super::StoreError;
use super::event::LogEvent;
use super::file::LogFile;
use super::log::LogWriter;

/// The text of the synthetic result (gist G21), in our own words.
pub const TOOL_OUTCOME_UNKNOWN_TEXT: &str = "The outcome of this tool call is unknown: the process \
stopped after the call was logged and before its result was logged. Only read-only or idempotent \
operations are safe to repeat. If the call may have had side effects, verify the external state \
or ask the person before repeating it; never repeat it blindly.";

/// `error.name` of the synthetic result.
pub const TOOL_OUTCOME_UNKNOWN_ERROR_NAME: &str = "ToolOutcomeUnknownError";

/// A logged `tool/call` with no `tool/result` after it (yet).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpenCall {
    /// `callId`.
    pub call_id: String,
    /// `name`, when it is a string.
    pub name: Option<String>,
    /// The call's `seq`.
    pub seq: u64,
    /// Its 1-based physical line.
    pub line: u64,
    /// `data.turn`, when it is a non-negative integer.
    pub turn: Option<u64>,
    /// `data.step`, when it is a non-negative integer.
    pub step: Option<u64>,
}

/// A step that was started and not ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct StepRef {
    /// `turn`.
    pub turn: u64,
    /// `step`.
    pub step: u64,
}

/// A `tool/call` without a string `callId`: no result can ever name it, so it cannot be repaired.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UnidentifiedCall {
    /// Its 1-based physical line.
    pub line: u64,
    /// Its `seq`.
    pub seq: u64,
}

/// What a log leaves unfinished at its end: calls without results, steps and turns without ends.
/// In a log no process is writing (the writer holds the lock), all of it was interrupted.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Interrupted {
    /// Calls without a result, in log order.
    pub calls: Vec<OpenCall>,
    /// Steps started and not ended, in the order they started.
    pub steps: Vec<StepRef>,
    /// Turns started and not ended, in the order they started.
    pub turns: Vec<u64>,
    /// Calls that carry no string `callId`.
    pub unidentified_calls: Vec<UnidentifiedCall>,
}

impl Interrupted {
    /// Whether the log left nothing unfinished that repair would append for.
    pub fn is_empty(&self) -> bool {
        self.calls.is_empty() && self.steps.is_empty() && self.turns.is_empty()
    }
}

/// Tracks unfinished work while records are read or written, in log order.
#[derive(Clone, Debug, Default)]
pub(crate) struct Tracker {
    calls: HashMap<String, OpenCall>,
    steps: Vec<StepRef>,
    turns: Vec<u64>,
    unidentified: Vec<UnidentifiedCall>,
}

impl Tracker {
    /// Observes one event read from (or written to) `line`; `raw` is the record's text, read
    /// again only for the `turn`/`step` of the few event types that need it.
    pub(crate) fn observe(&mut self, line: u64, event: &SessionEvent, raw: &[u8]) {
        match &event.body {
            EventBody::ToolCall(call) => match &call.call_id {
                Some(call_id) => {
                    let TurnStep { turn, step } = turn_step(raw);
                    self.calls.insert(
                        call_id.as_str().to_owned(),
                        OpenCall {
                            call_id: call_id.as_str().to_owned(),
                            name: call.name.clone(),
                            seq: event.seq,
                            line,
                            turn,
                            step,
                        },
                    );
                }
                None => self.unidentified.push(UnidentifiedCall {
                    line,
                    seq: event.seq,
                }),
            },
            EventBody::ToolResult(result) => {
                if let Some(call_id) = &result.call_id {
                    self.calls.remove(call_id.as_str());
                }
            }
            EventBody::TurnEnd(end) => {
                if let Some(turn) = end.turn {
                    // A turn's end also ends whatever steps of it were left open.
                    self.turns.retain(|t| *t != turn);
                    self.steps.retain(|s| s.turn != turn);
                }
            }
            EventBody::Other(other) => match other.event_type.as_str() {
                "turn/start" => {
                    if let Some(turn) = turn_step(raw).turn
                        && !self.turns.contains(&turn)
                    {
                        self.turns.push(turn);
                    }
                }
                "step/start" => {
                    if let TurnStep {
                        turn: Some(turn),
                        step: Some(step),
                    } = turn_step(raw)
                    {
                        let step = StepRef { turn, step };
                        if !self.steps.contains(&step) {
                            self.steps.push(step);
                        }
                    }
                }
                "step/end" => {
                    if let TurnStep {
                        turn: Some(turn),
                        step: Some(step),
                    } = turn_step(raw)
                    {
                        self.steps.retain(|s| *s != StepRef { turn, step });
                    }
                }
                _ => {}
            },
            EventBody::RequestHeader(_)
            | EventBody::Dispatch(_)
            | EventBody::UserMessage(_)
            | EventBody::EndSeed(_) => {}
        }
    }

    /// What is unfinished now.
    pub(crate) fn interrupted(&self) -> Interrupted {
        let mut calls: Vec<OpenCall> = self.calls.values().cloned().collect();
        calls.sort_by_key(|c| (c.seq, c.line));
        Interrupted {
            calls,
            steps: self.steps.clone(),
            turns: self.turns.clone(),
            unidentified_calls: self.unidentified.clone(),
        }
    }
}

/// A call that received a synthetic result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RepairedCall {
    /// The call.
    pub call: OpenCall,
    /// The `seq` of its synthetic `tool/result`.
    pub result_seq: u64,
}

/// What [`repair_interrupted`] appended.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RepairReport {
    /// Calls that received a `TOOL_OUTCOME_UNKNOWN` result, in log order.
    pub results: Vec<RepairedCall>,
    /// Steps closed with `step/end`.
    pub closed_steps: Vec<StepRef>,
    /// Turns closed with `turn/end` (`reason.kind: "interrupted"`).
    pub closed_turns: Vec<u64>,
    /// Calls without a string `callId`, which cannot be repaired (reported on every repair).
    pub unidentified_calls: Vec<UnidentifiedCall>,
}

impl RepairReport {
    /// Whether nothing was appended.
    pub fn is_empty(&self) -> bool {
        self.results.is_empty() && self.closed_steps.is_empty() && self.closed_turns.is_empty()
    }
}

/// Resume repair (SPEC §7.6): appends, in one durable batch, a synthetic `tool/result` for every
/// call without a result (`isError: true`, one text block [`TOOL_OUTCOME_UNKNOWN_TEXT`],
/// `error: {"name":"ToolOutcomeUnknownError","code":"TOOL_OUTCOME_UNKNOWN"}`, a fresh
/// `message.id`, the call's `turn` and `step`), then `step/end` for every open step and `turn/end`
/// with `reason.kind: "interrupted"` for every open turn.
///
/// Call it right after opening a log for write, before the host appends anything: under the
/// writer's lock no other process is writing, so whatever the log leaves unfinished was
/// interrupted. Later, the calls the host itself has in flight are not interrupted, and repairing
/// them would be wrong. It is idempotent: a second call finds nothing and appends nothing.
///
/// The synthetic result's `message.id` is `interrupted-tool-result-<callId>-<seq>`, unique in the
/// log because the `seq` is. It carries `sourceEventSeqs: [<call seq>]` and
/// `surfaceOp: "append"`, as the reference host's repair does. When the call has no readable
/// `turn` or `step`, that key is left out rather than invented.
pub fn repair_interrupted<F: LogFile>(
    writer: &mut LogWriter<F>,
) -> Result<RepairReport, StoreError> {
    let interrupted = writer.interrupted();
    let mut report = RepairReport {
        unidentified_calls: interrupted.unidentified_calls.clone(),
        ..RepairReport::default()
    };
    for call in &report.unidentified_calls {
        tracing::warn!(
            path = %writer.path().display(),
            line = call.line,
            seq = call.seq,
            "a tool call without a string callId cannot receive a repair result"
        );
    }
    if interrupted.is_empty() {
        return Ok(report);
    }
    let mut seq = writer.next_seq();
    let mut events = Vec::new();
    for call in interrupted.calls {
        events.push(synthetic_result(seq, &call)?);
        report.results.push(RepairedCall {
            call,
            result_seq: seq,
        });
        seq += 1;
    }
    for step in interrupted.steps.iter().rev() {
        events.push(LogEvent::from_data("step/end", seq, step)?);
        report.closed_steps.push(*step);
        seq += 1;
    }
    for turn in interrupted.turns.iter().rev() {
        events.push(LogEvent::from_data(
            "turn/end",
            seq,
            &serde_json::json!({"turn": turn, "reason": {"kind": "interrupted"}}),
        )?);
        report.closed_turns.push(*turn);
        seq += 1;
    }
    writer.append(&events)?;
    for repaired in &report.results {
        tracing::warn!(
            path = %writer.path().display(),
            call_id = %repaired.call.call_id,
            call_seq = repaired.call.seq,
            result_seq = repaired.result_seq,
            "resume repair: tool call had no result; appended TOOL_OUTCOME_UNKNOWN"
        );
    }
    for step in &report.closed_steps {
        tracing::warn!(path = %writer.path().display(), turn = step.turn, step = step.step,
            "resume repair: closed an interrupted step");
    }
    for turn in &report.closed_turns {
        tracing::warn!(path = %writer.path().display(), turn,
            "resume repair: closed an interrupted turn");
    }
    Ok(report)
}

/// The synthetic `tool/result` for `call`, newest layout (§7.5).
fn synthetic_result(seq: u64, call: &OpenCall) -> Result<LogEvent, serde_json::Error> {
    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Data<'a> {
        #[serde(skip_serializing_if = "Option::is_none")]
        turn: Option<u64>,
        #[serde(skip_serializing_if = "Option::is_none")]
        step: Option<u64>,
        message: Message<'a>,
        error: Error,
    }
    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Message<'a> {
        id: String,
        role: &'static str,
        tool_call_id: &'a str,
        content: [Text; 1],
        is_error: bool,
    }
    #[derive(Serialize)]
    struct Text {
        #[serde(rename = "type")]
        block_type: &'static str,
        text: &'static str,
    }
    #[derive(Serialize)]
    struct Error {
        name: &'static str,
        code: &'static str,
    }
    let data = Data {
        turn: call.turn,
        step: call.step,
        message: Message {
            id: format!("interrupted-tool-result-{}-{seq}", call.call_id),
            role: "tool",
            tool_call_id: &call.call_id,
            content: [Text {
                block_type: "text",
                text: TOOL_OUTCOME_UNKNOWN_TEXT,
            }],
            is_error: true,
        },
        error: Error {
            name: TOOL_OUTCOME_UNKNOWN_ERROR_NAME,
            code: TOOL_OUTCOME_UNKNOWN,
        },
    };
    Ok(LogEvent::from_data("tool/result", seq, &data)?
        .with_source_event_seqs(vec![call.seq])
        .surface_append())
}

/// `data.turn` and `data.step` of a record.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct TurnStep {
    turn: Option<u64>,
    step: Option<u64>,
}

/// Reads `data.turn` and `data.step` from a record's text: repeated keys keep the last value, other
/// keys are skipped without recursion into their values, values of other types read as absent, and
/// text that does not read at all gives neither. (The projection's decoded events do not carry
/// these fields; see the crate README.)
fn turn_step(raw: &[u8]) -> TurnStep {
    let text = String::from_utf8_lossy(raw);
    let mut de = serde_json::Deserializer::from_str(text.trim_end());
    de.deserialize_any(EnvelopeVisitor).unwrap_or_default()
}

struct EnvelopeVisitor;

impl<'de> Visitor<'de> for EnvelopeVisitor {
    type Value = TurnStep;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a record object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<TurnStep, A::Error> {
        let mut found = TurnStep::default();
        while let Some(key) = map.next_key::<Cow<'de, str>>()? {
            if key == "data" {
                found = map.next_value_seed(DataSeed)?;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(found)
    }
}

struct DataSeed;

impl<'de> serde::de::DeserializeSeed<'de> for DataSeed {
    type Value = TurnStep;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<TurnStep, D::Error> {
        deserializer.deserialize_any(DataVisitor)
    }
}

struct DataVisitor;

impl<'de> Visitor<'de> for DataVisitor {
    type Value = TurnStep;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<TurnStep, A::Error> {
        let mut found = TurnStep::default();
        while let Some(key) = map.next_key::<Cow<'de, str>>()? {
            match key.as_ref() {
                "turn" => found.turn = map.next_value::<MaybeCount>()?.0,
                "step" => found.step = map.next_value::<MaybeCount>()?.0,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(found)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<TurnStep, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(TurnStep::default())
    }

    fn visit_bool<E>(self, _: bool) -> Result<TurnStep, E> {
        Ok(TurnStep::default())
    }

    fn visit_i64<E>(self, _: i64) -> Result<TurnStep, E> {
        Ok(TurnStep::default())
    }

    fn visit_u64<E>(self, _: u64) -> Result<TurnStep, E> {
        Ok(TurnStep::default())
    }

    fn visit_f64<E>(self, _: f64) -> Result<TurnStep, E> {
        Ok(TurnStep::default())
    }

    fn visit_str<E>(self, _: &str) -> Result<TurnStep, E> {
        Ok(TurnStep::default())
    }

    fn visit_unit<E>(self) -> Result<TurnStep, E> {
        Ok(TurnStep::default())
    }
}

/// A non-negative integer, or `None` for any other JSON value.
struct MaybeCount(Option<u64>);

impl<'de> serde::Deserialize<'de> for MaybeCount {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(CountVisitor)
    }
}

struct CountVisitor;

impl<'de> Visitor<'de> for CountVisitor {
    type Value = MaybeCount;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_u64<E>(self, v: u64) -> Result<MaybeCount, E> {
        Ok(MaybeCount(Some(v)))
    }

    fn visit_i64<E>(self, v: i64) -> Result<MaybeCount, E> {
        Ok(MaybeCount(u64::try_from(v).ok()))
    }

    fn visit_f64<E>(self, _: f64) -> Result<MaybeCount, E> {
        Ok(MaybeCount(None))
    }

    fn visit_bool<E>(self, _: bool) -> Result<MaybeCount, E> {
        Ok(MaybeCount(None))
    }

    fn visit_str<E>(self, _: &str) -> Result<MaybeCount, E> {
        Ok(MaybeCount(None))
    }

    fn visit_unit<E>(self) -> Result<MaybeCount, E> {
        Ok(MaybeCount(None))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<MaybeCount, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(MaybeCount(None))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<MaybeCount, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(MaybeCount(None))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check(raw: &str, turn: Option<u64>, step: Option<u64>) {
        assert_eq!(turn_step(raw.as_bytes()), TurnStep { turn, step }, "{raw}");
    }

    #[test]
    fn turn_and_step_are_read_leniently() {
        check(
            r#"{"type":"step/start","data":{"turn":1,"step":2}}"#,
            Some(1),
            Some(2),
        );
        check(
            r#"{"data":{"step":2,"turn":1},"type":"step/start"}"#,
            Some(1),
            Some(2),
        );
        check(r#"{"type":"x","data":{"turn":1,"turn":3}}"#, Some(3), None);
        check(r#"{"type":"x","data":{"turn":"1","step":-1}}"#, None, None);
        check(
            r#"{"type":"x","data":{"turn":[1],"step":{"a":1}}}"#,
            None,
            None,
        );
        check(r#"{"type":"x","data":null}"#, None, None);
        check(r#"{"type":"x","data":[1,2]}"#, None, None);
        check(
            r#"{"type":"x","data":{"turn":1},"data":{"step":4}}"#,
            None,
            Some(4),
        );
        check(
            r#"{"type":"x","data":{"turn":1,"text":"\ud800"},"z":1}"#,
            Some(1),
            None,
        );
        check("{\"type\":\"x\",\"data\":{\"turn\":7}}\r\n", Some(7), None);
        check("not json", None, None);
        let deep = format!(
            r#"{{"type":"x","data":{{"deep":{}{},"turn":2}}}}"#,
            "[".repeat(100_000),
            "]".repeat(100_000)
        );
        check(&deep, Some(2), None);
    }
}
