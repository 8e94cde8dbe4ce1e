//! Replaying a session log into the projection (SPEC §8.1, §7.2).
//!
//! [`Replay`] drives the fold over decoded records and decides a fork's inherited prefix. For
//! format versions 0 and 1 the header fixes it. For versions 2 and later it is the `seq` of the
//! **last** `session/end-seed {"inherited":true}` marker, which a single forward pass cannot know
//! in advance, so the cut is deferred: events are folded as if unseeded, and each inherited marker
//! at `seq` S resets the state to `init(S)`. In a log whose `seq`s increase (every log our writers
//! produce), every event before the marker has a `seq` below S, so the reset gives exactly the fold
//! of the events at or above the cut, in one pass, without buffering or seeking. A marker that is
//! not above every earlier `seq` (possible only after a backwards `seq` jump) still resets, and is
//! reported.

use std::io::{self, BufRead};

use session_log::{
    CutRule, DecodedRecord, EventBody, LogFinding, LogScanner, OpenError, ScanPosition, ScanReport,
    Scanned, SessionEvent, SessionHeader,
};

use crate::state::UserQuestionsState;

/// The fold driver for replay: applies decoded records in log order and decides the inherited
/// prefix from the header and the end-seed markers (see the module docs).
#[derive(Clone, Debug)]
pub struct Replay {
    state: UserQuestionsState,
    rule: CutRule,
    marker_seen: bool,
    max_seq: Option<u64>,
    findings: Vec<LogFinding>,
    resumed: bool,
}

impl Replay {
    /// A replay from the start of a log.
    pub fn new(header: &SessionHeader) -> Self {
        let rule = header.cut_rule();
        let inherited = match rule {
            CutRule::Fixed(n) => n,
            CutRule::Markers { .. } => 0,
        };
        Self {
            state: crate::fold::init(header, inherited),
            rule,
            marker_seen: false,
            max_seq: None,
            findings: if header.version.is_none() {
                vec![LogFinding::VersionMissing]
            } else {
                Vec::new()
            },
            resumed: false,
        }
    }

    /// A replay resumed from a checkpoint's state at `at`. Findings about the log as a whole
    /// (`VersionMissing`, `SeededWithoutMarker`) belong to full replays and are not repeated.
    pub fn resume(header: &SessionHeader, state: UserQuestionsState, at: ScanPosition) -> Self {
        Self {
            marker_seen: state.inherited_event_count() > 0,
            state,
            rule: header.cut_rule(),
            max_seq: at.expected_seq.checked_sub(1),
            findings: Vec::new(),
            resumed: true,
        }
    }

    /// The state so far.
    pub fn state(&self) -> &UserQuestionsState {
        &self.state
    }

    /// The log findings so far.
    pub fn findings(&self) -> &[LogFinding] {
        &self.findings
    }

    /// Applies one decoded record read from `line`; returns whether the state changed.
    pub fn apply_record(&mut self, line: u64, record: &DecodedRecord) -> bool {
        if let Some(event) = record.event() {
            return self.apply_event(line, event);
        }
        // A packed row stands for chunk events, which the fold ignores; they only count for `seq`.
        if record.event_count() > 0 {
            let last = record.next_seq() - 1;
            self.max_seq = Some(self.max_seq.map_or(last, |m| m.max(last)));
        }
        false
    }

    /// Applies one event read from `line`; returns whether the state changed.
    pub fn apply_event(&mut self, line: u64, event: &SessionEvent) -> bool {
        let mut changed = false;
        if let (EventBody::EndSeed(marker), CutRule::Markers { seeded }) = (&event.body, self.rule)
            && marker.inherited
        {
            if seeded {
                if self.max_seq.is_some_and(|m| m >= event.seq) {
                    self.findings.push(LogFinding::MarkerOutOfOrder {
                        line,
                        seq: event.seq,
                    });
                }
                self.state = UserQuestionsState::new(event.seq);
                self.marker_seen = true;
                changed = true;
            } else {
                self.findings.push(LogFinding::UnseededMarker {
                    line,
                    seq: event.seq,
                });
            }
        }
        self.max_seq = Some(self.max_seq.map_or(event.seq, |m| m.max(event.seq)));
        self.state.apply_in_place(event) || changed
    }

    /// Ends the replay: the state and the log findings.
    pub fn finish(mut self) -> (UserQuestionsState, Vec<LogFinding>) {
        if self.rule == (CutRule::Markers { seeded: true }) && !self.marker_seen && !self.resumed {
            self.findings.push(LogFinding::SeededWithoutMarker);
        }
        (self.state, self.findings)
    }
}

/// A folded log.
#[derive(Clone, Debug)]
pub struct FoldedLog {
    /// The header record.
    pub header: SessionHeader,
    /// The projection state after the last complete record.
    pub state: UserQuestionsState,
    /// Line-level findings and the end position.
    pub report: ScanReport,
    /// Log-level findings.
    pub findings: Vec<LogFinding>,
}

/// Folds a whole log from a reader (replay). Streams line by line: memory does not grow with the
/// log, only with the longest line and the state.
pub fn fold_log<R: BufRead>(reader: R) -> Result<FoldedLog, OpenError> {
    let (header, mut scanner) = LogScanner::open(reader)?;
    let mut replay = Replay::new(&header);
    while let Some(scanned) = scanner.next_line()? {
        if let Scanned::Record(record) = scanned {
            replay.apply_record(record.line, &record.record);
        }
    }
    let (state, findings) = replay.finish();
    Ok(FoldedLog {
        header,
        state,
        report: scanner.into_report(),
        findings,
    })
}

/// Continues a fold from a checkpoint: `reader` is positioned at `at.byte_offset` and `state` is
/// the state there. The result equals a full fold of the log.
pub fn resume_fold<R: BufRead>(
    reader: R,
    header: SessionHeader,
    state: UserQuestionsState,
    at: ScanPosition,
) -> io::Result<FoldedLog> {
    let mut scanner = LogScanner::resume(reader, at);
    let mut replay = Replay::resume(&header, state, at);
    while let Some(scanned) = scanner.next_line()? {
        if let Scanned::Record(record) = scanned {
            replay.apply_record(record.line, &record.record);
        }
    }
    let (state, findings) = replay.finish();
    Ok(FoldedLog {
        header,
        state,
        report: scanner.into_report(),
        findings,
    })
}
