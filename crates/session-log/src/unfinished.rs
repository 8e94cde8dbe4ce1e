//! What a log leaves unfinished (SPEC §7.6): calls without results, steps and turns without ends,
//! followed from the decoded events alone (`turn`/`step` are part of the typed bodies) while a
//! store reads a log and while a writer appends, so knowing what resume repair owes costs no
//! extra pass and no second parser.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::event::{EventBody, SessionEvent};
use crate::record::StepRecord;

/// A logged `tool/call` with no `tool/result` after it (yet).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
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

/// A `tool/call` without a string `callId`: no result can ever name it, so it cannot be repaired.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UnidentifiedCall {
    /// Its 1-based physical line.
    pub line: u64,
    /// Its `seq`.
    pub seq: u64,
}

/// What a log leaves unfinished at its end: calls without results, steps and turns without ends.
/// In a log no process is writing (the writer holds the lock), all of it was interrupted.
///
/// It serialises (camelCase) so that a checkpoint can carry it: a writer reopened at a
/// checkpoint ([`SessionStore::open_from`](crate::SessionStore::open_from)) starts from it
/// instead of reading the log before that point.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Interrupted {
    /// Calls without a result, in log order.
    pub calls: Vec<OpenCall>,
    /// Steps started and not ended, in the order they started.
    pub steps: Vec<StepRecord>,
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
pub struct Tracker {
    calls: HashMap<String, OpenCall>,
    steps: Vec<StepRecord>,
    turns: Vec<u64>,
    unidentified: Vec<UnidentifiedCall>,
}

impl Tracker {
    /// A tracker that continues from `unfinished`, what a scan of the log up to some point found
    /// unfinished there: observing the lines after that point gives what a scan of the whole log
    /// would.
    pub fn resume(unfinished: &Interrupted) -> Self {
        Self {
            calls: unfinished
                .calls
                .iter()
                .map(|call| (call.call_id.clone(), call.clone()))
                .collect(),
            steps: unfinished.steps.clone(),
            turns: unfinished.turns.clone(),
            unidentified: unfinished.unidentified_calls.clone(),
        }
    }

    /// Observes one event read from (or written to) `line`, in log order.
    pub fn observe(&mut self, line: u64, event: &SessionEvent) {
        match &event.body {
            EventBody::ToolCall(call) => match &call.call_id {
                Some(call_id) => {
                    self.calls.insert(
                        call_id.as_str().to_owned(),
                        OpenCall {
                            call_id: call_id.as_str().to_owned(),
                            name: call.name.clone(),
                            seq: event.seq,
                            line,
                            turn: call.turn,
                            step: call.step,
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
            EventBody::TurnStart(start) => {
                if let Some(turn) = start.turn
                    && !self.turns.contains(&turn)
                {
                    self.turns.push(turn);
                }
            }
            EventBody::StepStart(at) => {
                if let (Some(turn), Some(step)) = (at.turn, at.step) {
                    let step = StepRecord { turn, step };
                    if !self.steps.contains(&step) {
                        self.steps.push(step);
                    }
                }
            }
            EventBody::StepEnd(at) => {
                if let (Some(turn), Some(step)) = (at.turn, at.step) {
                    self.steps.retain(|s| *s != StepRecord { turn, step });
                }
            }
            EventBody::RequestHeader(_)
            | EventBody::Dispatch(_)
            | EventBody::UserMessage(_)
            | EventBody::InboxSpliced(_)
            | EventBody::EndSeed(_)
            | EventBody::Other(_) => {}
        }
    }

    /// What is unfinished now.
    pub fn interrupted(&self) -> Interrupted {
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
