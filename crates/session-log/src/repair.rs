//! Resume repair (SPEC §7.6): after a crash, every logged `tool/call` without a `tool/result` gets
//! a synthetic `TOOL_OUTCOME_UNKNOWN` result, and the step and turn the process was in are closed
//! (`step/end`, `turn/end` with `reason.kind: "interrupted"`). Append-only: nothing is rewritten.
//! What is owed comes from the writer's [`Tracker`](crate::Tracker). A timed `ask_user_question`
//! call interrupted this way becomes *continued* in the projection (§8.7) and answerable late.

use user_questions::ErrorCode;

use crate::record::{Record, StepRecord, ToolResultRecord};
use crate::store::{SessionWriter, StoreError};
use crate::unfinished::{OpenCall, UnidentifiedCall};

/// The text of the synthetic result (gist G21), in our own words.
pub const TOOL_OUTCOME_UNKNOWN_TEXT: &str = "The outcome of this tool call is unknown: the process \
stopped after the call was logged and before its result was logged. Only read-only or idempotent \
operations are safe to repeat. If the call may have had side effects, verify the external state \
or ask the person before repeating it; never repeat it blindly.";

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
    pub closed_steps: Vec<StepRecord>,
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
pub fn repair_interrupted(writer: &mut dyn SessionWriter) -> Result<RepairReport, StoreError> {
    close_interrupted(writer, &ErrorCode::ToolOutcomeUnknown, &|seq, call| {
        result(
            seq,
            call,
            TOOL_OUTCOME_UNKNOWN_TEXT,
            &ErrorCode::ToolOutcomeUnknown,
        )
    })
}

/// Closes what a process left unfinished as [`repair_interrupted`] does, but ends each call with
/// an error result of `code` and `text` instead of `TOOL_OUTCOME_UNKNOWN`: for a log whose calls
/// nobody can continue (an ask whose only waiter is gone). A timed `ask_user_question` call ended
/// this way leaves the projection's active questions (§8.7) rather than becoming continued.
/// Call it right after opening the log for write, as [`repair_interrupted`]; idempotent.
///
/// # Errors
///
/// The append fails.
pub fn abandon_interrupted(
    writer: &mut dyn SessionWriter,
    code: &ErrorCode,
    text: &str,
) -> Result<RepairReport, StoreError> {
    close_interrupted(writer, code, &|seq, call| result(seq, call, text, code))
}

type ResultOf<'a> = dyn Fn(u64, &OpenCall) -> Result<crate::LogEvent, serde_json::Error> + 'a;

fn close_interrupted(
    writer: &mut dyn SessionWriter,
    code: &ErrorCode,
    result_of: &ResultOf<'_>,
) -> Result<RepairReport, StoreError> {
    let interrupted = writer.interrupted();
    let location = writer.location().display().to_string();
    let mut report = RepairReport {
        unidentified_calls: interrupted.unidentified_calls.clone(),
        ..RepairReport::default()
    };
    for call in &report.unidentified_calls {
        tracing::warn!(
            path = %location,
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
        events.push(result_of(seq, &call)?);
        report.results.push(RepairedCall {
            call,
            result_seq: seq,
        });
        seq += 1;
    }
    for step in interrupted.steps.iter().rev() {
        events.push(Record::step_end(step.turn, step.step).into_event(seq)?);
        report.closed_steps.push(*step);
        seq += 1;
    }
    for turn in interrupted.turns.iter().rev() {
        events.push(Record::turn_end(*turn, "interrupted").into_event(seq)?);
        report.closed_turns.push(*turn);
        seq += 1;
    }
    writer.append(&events)?;
    for repaired in &report.results {
        tracing::warn!(
            path = %location,
            call_id = %repaired.call.call_id,
            call_seq = repaired.call.seq,
            result_seq = repaired.result_seq,
            "resume repair: tool call had no result; appended {}",
            code.as_str()
        );
    }
    for step in &report.closed_steps {
        tracing::warn!(path = %location, turn = step.turn, step = step.step,
            "resume repair: closed an interrupted step");
    }
    for turn in &report.closed_turns {
        tracing::warn!(path = %location, turn,
            "resume repair: closed an interrupted turn");
    }
    Ok(report)
}

/// The synthetic `tool/result` for `call`, newest layout (§7.5): an error of `code` with `text`.
fn result(
    seq: u64,
    call: &OpenCall,
    text: &str,
    code: &ErrorCode,
) -> Result<crate::LogEvent, serde_json::Error> {
    let record = ToolResultRecord::new(
        call.turn,
        call.step,
        format!("interrupted-tool-result-{}-{seq}", call.call_id),
        call.call_id.as_str().into(),
        text,
        true,
    )
    .with_error(code.error_name(), code.clone());
    Ok(Record::ToolResult(record)
        .into_event(seq)?
        .with_source_event_seqs(vec![call.seq]))
}
