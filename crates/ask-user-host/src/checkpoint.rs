//! The projection checkpoint cache (SPEC §9.6): the `userQuestions` state at a record boundary of
//! a log, keyed by the projection's state version and by the log's identity, length and last
//! record, so that a host gets the projection of a long log by reading only what was appended
//! since.
//!
//! Content, exactly (no line end):
//! `{"key":"userQuestions","stateVersion":2,"log":{"sessionId":"…","headerHash":"…","eventCount":n,"byteLength":b,"lastRecordHash":"…"},"state":{…}}`,
//! hashes being lowercase hex SHA-256 of the header line and of the last record's line (each with
//! its line end). The store keeps it (the JSONL store next to the log, as
//! `<log name>.userQuestions.checkpoint.json`) and checks its `log` anchor against the log; the
//! document and the fold are this module's.
//!
//! The checkpoint stores no line number. Findings made after resuming are numbered from the
//! checkpoint and rebased to physical line numbers only when there is one to report, by counting
//! the line ends before `byteLength` once: a clean resume never reads the prefix.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use session_log::{
    AnchorMismatch, CorruptLine, LogAnchor, LogFinding, LogVisitor, LossyLine, RecordSpan,
    ScanPosition, ScanReport, Scanned, SeqGap, SessionHeader, SessionStore, StoreError, TornTail,
};
use user_questions_projection::{
    PROJECTION_KEY, Replay, RestoreError, STATE_VERSION, UserQuestionsState, restore,
};

/// A projection checkpoint: the state after the record its anchor ends at.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Checkpoint {
    /// Where in which log it was taken.
    pub anchor: LogAnchor,
    /// The projection state there.
    pub state: UserQuestionsState,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct DocumentOut<'a> {
    key: &'static str,
    state_version: u32,
    log: &'a LogAnchor,
    state: &'a RawValue,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct DocumentIn<'a> {
    key: String,
    state_version: serde_json::Number,
    log: LogAnchor,
    #[serde(borrow)]
    state: &'a RawValue,
}

impl Checkpoint {
    /// The checkpoint document.
    pub fn to_json(&self) -> Result<String, StoreError> {
        let state = RawValue::from_string(self.state.to_json())?;
        Ok(serde_json::to_string(&DocumentOut {
            key: PROJECTION_KEY,
            state_version: STATE_VERSION,
            log: &self.anchor,
            state: &state,
        })?)
    }

    /// Saves the checkpoint of the log `name` in `store` (atomically: a reader sees the old
    /// checkpoint or this one) and returns where it lives.
    pub fn save(&self, store: &dyn SessionStore, name: &str) -> Result<PathBuf, StoreError> {
        store.save_checkpoint(name, self.to_json()?.as_bytes())
    }
}

/// Why a checkpoint was discarded (SPEC §9.6).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum StaleReason {
    /// The file could not be read, or is not a checkpoint document of the expected shape.
    #[error("unreadable checkpoint: {0}")]
    Unreadable(String),
    /// It is for another projection.
    #[error("checkpoint of another projection ({found:?})")]
    Key {
        /// Its `key`.
        found: String,
    },
    /// It was written by another version of the fold.
    #[error("checkpoint of state version {found}, the fold is at {STATE_VERSION}")]
    StateVersion {
        /// Its `stateVersion`, as written.
        found: String,
    },
    /// Its `log` anchor does not fit the log (another session or header, past the end, not at a
    /// record end, another record).
    #[error(transparent)]
    Log(AnchorMismatch),
    /// The state fails restore validation (§8.6).
    #[error("the checkpoint's state is invalid: {0}")]
    State(RestoreError),
}

/// How the projection state was obtained.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ProjectionSource {
    /// From a valid checkpoint, folding on from `byte_length`.
    Checkpoint {
        /// Where the checkpoint ended.
        byte_length: u64,
        /// Events before it.
        event_count: u64,
    },
    /// By folding the whole log.
    Refold(RefoldReason),
}

/// Why the whole log was folded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RefoldReason {
    /// There was no checkpoint file.
    NoCheckpoint,
    /// The checkpoint was stale and discarded.
    Stale(StaleReason),
}

impl From<AnchorMismatch> for StaleReason {
    fn from(mismatch: AnchorMismatch) -> Self {
        Self::Log(mismatch)
    }
}

/// Whether [`load_projection`] may write a fresh checkpoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CheckpointPolicy {
    /// Only read: never create or replace the checkpoint file.
    ReadOnly,
    /// Write a fresh checkpoint when the log has records the checkpoint does not cover.
    Refresh,
}

/// What [`load_projection`] did about the checkpoint file.
#[derive(Debug)]
pub enum CheckpointWrite {
    /// The policy was [`CheckpointPolicy::ReadOnly`].
    NotRequested,
    /// The checkpoint already covered every record.
    UpToDate,
    /// A fresh checkpoint was written there.
    Written(PathBuf),
    /// The end of this log cannot be checkpointed: its last record has no explicit `seq` and
    /// follows a `seq` gap, so the expected next `seq` could not be recovered from the record, as
    /// §9.6 requires. The log is refolded each time; correctness does not depend on checkpoints.
    NotRecoverable,
    /// Writing failed (also a `tracing` warning); the returned state is still right.
    Failed(StoreError),
}

/// The projection state of a log file, with what was found on the way.
#[derive(Debug)]
pub struct ProjectionLoad {
    /// The header record.
    pub header: SessionHeader,
    /// The `userQuestions` state after the last complete record; equal to a full refold's.
    pub state: UserQuestionsState,
    /// Checkpoint or refold, and why.
    pub source: ProjectionSource,
    /// Corrupt lines in the part that was read (the whole log on a refold, the lines after the
    /// checkpoint otherwise), with physical line numbers.
    pub corrupt_lines: Vec<CorruptLine>,
    /// Lossy lines in the part that was read.
    pub lossy_lines: Vec<LossyLine>,
    /// Seq gaps in the part that was read.
    pub seq_gaps: Vec<SeqGap>,
    /// The torn tail, if the log ends in one (ignored, never modified here).
    pub torn_tail: Option<TornTail>,
    /// Log-level findings of the fold (a refold reports them all; a resumed fold only those made
    /// after the checkpoint).
    pub findings: Vec<LogFinding>,
    /// The offset just past the last complete line.
    pub byte_length: u64,
    /// The expected next `seq` there.
    pub next_seq: u64,
    /// Events in the log (a packed row counts one per member).
    pub event_count: u64,
    /// What happened to the checkpoint file.
    pub checkpoint: CheckpointWrite,
}

/// Gets the projection state of the log `name` in `store` fast (SPEC §9.6): loads its checkpoint
/// if it is valid and folds on over the lines after it; otherwise (no checkpoint, or a stale one:
/// the reason is in [`ProjectionSource::Refold`] and a `tracing` warning) folds the whole log.
/// Either way the state equals a full refold's. With [`CheckpointPolicy::Refresh`] it then saves a
/// fresh checkpoint at the last record when the old one did not cover it; a failure to save is
/// reported in [`ProjectionLoad::checkpoint`], never an error.
///
/// The log itself is only read: no ownership is taken, and a torn tail is reported, not cut.
pub fn load_projection(
    store: &dyn SessionStore,
    name: &str,
    policy: CheckpointPolicy,
) -> Result<ProjectionLoad, StoreError> {
    let location = store.location(name);
    let valid = match store.load_checkpoint(name) {
        Err(StoreError::Io { source, .. }) if source.kind() != std::io::ErrorKind::NotFound => Err(
            RefoldReason::Stale(StaleReason::Unreadable(source.to_string())),
        ),
        // A checkpoint name that leads to a device or a FIFO is never read, and never trusted.
        Err(error @ StoreError::NotAFile { .. }) => Err(RefoldReason::Stale(
            StaleReason::Unreadable(error.to_string()),
        )),
        Err(error) => return Err(error),
        Ok(None) => Err(RefoldReason::NoCheckpoint),
        Ok(Some(bytes)) => validate(store, name, &bytes)?.map_err(RefoldReason::Stale),
    };

    let (header, source, outcome) = match valid {
        Ok((header, state, at)) => {
            let mut fold = FoldVisitor::new(Replay::resume(&header, state, at));
            let report = store.scan_from(name, at, &mut fold)?;
            let mut outcome = fold.finish(report);
            if outcome.has_numbered_findings() {
                outcome.rebase_lines(store.line_of(name, at.byte_offset)?);
            }
            (
                header,
                ProjectionSource::Checkpoint {
                    byte_length: at.byte_offset,
                    event_count: at.events,
                },
                outcome,
            )
        }
        Err(reason) => {
            if let RefoldReason::Stale(stale) = &reason {
                tracing::warn!(
                    path = %location.display(),
                    reason = %stale,
                    "stale projection checkpoint discarded; refolding the log"
                );
            }
            let mut fold = FoldVisitor::refold();
            let report = store.read(name, &mut fold)?;
            let header = report.header.clone();
            (
                header,
                ProjectionSource::Refold(reason),
                fold.finish(report.scan),
            )
        }
    };
    // A refold reads through the store's own read, which already warned of every line finding.
    let lines_warned = matches!(source, ProjectionSource::Refold(_));
    warn_findings(&location, &outcome, lines_warned);

    let checkpoint = match policy {
        CheckpointPolicy::ReadOnly => CheckpointWrite::NotRequested,
        CheckpointPolicy::Refresh => refresh(store, name, &source, &outcome),
    };
    let end = outcome.report.end;
    Ok(ProjectionLoad {
        header,
        state: outcome.state,
        source,
        corrupt_lines: outcome.report.corrupt_lines,
        lossy_lines: outcome.report.lossy_lines,
        seq_gaps: outcome.report.seq_gaps,
        torn_tail: outcome.report.torn_tail,
        findings: outcome.findings,
        byte_length: end.byte_offset,
        next_seq: end.expected_seq,
        event_count: end.events,
        checkpoint,
    })
}

/// Checks a checkpoint document against the log (every stale condition of §9.6) and returns the
/// log's header, the state and the position to resume at (line numbers counted from there).
fn validate(
    store: &dyn SessionStore,
    name: &str,
    bytes: &[u8],
) -> Result<Result<(SessionHeader, UserQuestionsState, ScanPosition), StaleReason>, StoreError> {
    let doc: DocumentIn<'_> = match serde_json::from_slice(bytes) {
        Ok(doc) => doc,
        Err(e) => return Ok(Err(StaleReason::Unreadable(e.to_string()))),
    };
    if doc.key != PROJECTION_KEY {
        return Ok(Err(StaleReason::Key { found: doc.key }));
    }
    if doc.state_version.as_u64() != Some(u64::from(STATE_VERSION)) {
        return Ok(Err(StaleReason::StateVersion {
            found: doc.state_version.to_string(),
        }));
    }
    let (header, at) = match store.resolve_anchor(name, &doc.log)? {
        Ok(resolved) => resolved,
        Err(mismatch) => return Ok(Err(mismatch.into())),
    };
    Ok(restore(doc.state.get())
        .map(|state| (header, state, at))
        .map_err(StaleReason::State))
}

/// A fold that runs inside a store's open scan, so opening a log for write reads it once: the
/// lines the open shows are folded as they pass, then the lines appended after it (resume
/// repair) are read on, and a fresh checkpoint is written (SPEC §9.6's cache, kept for readers).
pub(crate) struct OpenFold {
    fold: FoldVisitor,
}

impl OpenFold {
    pub(crate) fn new() -> Self {
        Self {
            fold: FoldVisitor::refold(),
        }
    }

    /// What the store's open shows its lines to.
    pub(crate) fn visitor(&mut self) -> &mut dyn LogVisitor {
        &mut self.fold
    }

    /// The projection after the open scan, which ended at `end`, and whatever was appended since;
    /// the checkpoint is refreshed.
    pub(crate) fn finish(
        mut self,
        store: &dyn SessionStore,
        name: &str,
        end: ScanPosition,
    ) -> Result<UserQuestionsState, StoreError> {
        let tail = store.scan_from(name, end, &mut self.fold)?;
        let outcome = self.fold.finish(tail);
        // The open already warned of its line findings; the log-level ones are the fold's.
        warn_findings(&store.location(name), &outcome, true);
        let source = ProjectionSource::Refold(RefoldReason::NoCheckpoint);
        refresh(store, name, &source, &outcome);
        Ok(outcome.state)
    }
}

/// Folds the lines a store shows, remembering where the last record ended.
struct FoldVisitor {
    replay: Option<Replay>,
    last_record: Option<(ScanPosition, RecordSpan)>,
}

impl FoldVisitor {
    fn new(replay: Replay) -> Self {
        Self {
            replay: Some(replay),
            last_record: None,
        }
    }

    /// A fold from the start: the replay begins at the header.
    fn refold() -> Self {
        Self {
            replay: None,
            last_record: None,
        }
    }

    fn finish(self, report: ScanReport) -> FoldOutcome {
        let (state, findings) = match self.replay {
            Some(replay) => replay.finish(),
            None => (UserQuestionsState::new(0), Vec::new()),
        };
        FoldOutcome {
            state,
            report,
            findings,
            last_record: self.last_record,
        }
    }
}

impl LogVisitor for FoldVisitor {
    fn header(&mut self, header: &SessionHeader) {
        self.replay = Some(Replay::new(header));
    }

    fn line(&mut self, scanned: &Scanned<'_>) {
        if let Scanned::Record(record) = scanned
            && let Some(replay) = &mut self.replay
        {
            replay.apply_record(record.line, &record.record);
            self.last_record = Some((
                record.after,
                RecordSpan {
                    byte_offset: record.byte_offset,
                    len: record.raw.len(),
                },
            ));
        }
    }
}

/// A fold's result, with where its last record ended.
struct FoldOutcome {
    state: UserQuestionsState,
    report: ScanReport,
    findings: Vec<LogFinding>,
    /// The position after the last record folded, and that record's span.
    last_record: Option<(ScanPosition, RecordSpan)>,
}

impl FoldOutcome {
    fn has_numbered_findings(&self) -> bool {
        !self.report.corrupt_lines.is_empty()
            || !self.report.lossy_lines.is_empty()
            || !self.report.seq_gaps.is_empty()
            || self.findings.iter().any(|f| match f {
                LogFinding::UnseededMarker { .. } | LogFinding::MarkerOutOfOrder { .. } => true,
                LogFinding::VersionMissing | LogFinding::SeededWithoutMarker => false,
            })
    }

    /// Adds `base` to every line number (findings were numbered from a checkpoint).
    fn rebase_lines(&mut self, base: u64) {
        for c in &mut self.report.corrupt_lines {
            c.line += base;
        }
        for l in &mut self.report.lossy_lines {
            l.line += base;
        }
        for g in &mut self.report.seq_gaps {
            g.line += base;
        }
        for f in &mut self.findings {
            match f {
                LogFinding::UnseededMarker { line, .. }
                | LogFinding::MarkerOutOfOrder { line, .. } => {
                    *line += base;
                }
                LogFinding::VersionMissing | LogFinding::SeededWithoutMarker => {}
            }
        }
        self.report.end.line += base;
        if let Some((pos, _)) = &mut self.last_record {
            pos.line += base;
        }
    }
}

/// Saves a fresh checkpoint after the last record, unless the current one already covers it.
fn refresh(
    store: &dyn SessionStore,
    name: &str,
    source: &ProjectionSource,
    outcome: &FoldOutcome,
) -> CheckpointWrite {
    if let (None, ProjectionSource::Checkpoint { .. }) = (outcome.last_record, source) {
        return CheckpointWrite::UpToDate;
    }
    let (end, last) = match outcome.last_record {
        Some((end, span)) => (end, Some(span)),
        None => (ScanPosition::default(), None),
    };
    let anchor = match store.anchor_at(name, end, last) {
        Ok(Some(anchor)) => anchor,
        Ok(None) => return CheckpointWrite::NotRecoverable,
        Err(e) => return failed(e),
    };
    let checkpoint = Checkpoint {
        anchor,
        state: outcome.state.clone(),
    };
    match checkpoint.save(store, name) {
        Ok(path) => CheckpointWrite::Written(path),
        Err(e) => failed(e),
    }
}

fn failed(error: StoreError) -> CheckpointWrite {
    tracing::warn!(error = %error, "writing the projection checkpoint failed");
    CheckpointWrite::Failed(error)
}

/// Turns every finding of a fold into a `tracing` warning (the line findings unless the store
/// already warned of them).
fn warn_findings(log: &std::path::Path, outcome: &FoldOutcome, lines_warned: bool) {
    let path = log.display();
    for finding in &outcome.findings {
        // The store's own read already warned of a header without a version.
        if lines_warned && matches!(finding, LogFinding::VersionMissing) {
            continue;
        }
        tracing::warn!(%path, finding = %finding, "session log finding");
    }
    if lines_warned {
        return;
    }
    for corrupt in &outcome.report.corrupt_lines {
        tracing::warn!(%path, line = corrupt.line, byte_offset = corrupt.byte_offset,
            len = corrupt.len, reason = %corrupt.reason, "corrupt line skipped (kept in the file)");
    }
    for lossy in &outcome.report.lossy_lines {
        tracing::warn!(%path, line = lossy.line, byte_offset = lossy.byte_offset,
            "invalid UTF-8 read lossily");
    }
    for gap in &outcome.report.seq_gaps {
        tracing::warn!(%path, line = gap.line, expected = gap.expected, found = gap.found,
            "seq gap");
    }
    if let Some(torn) = outcome.report.torn_tail {
        tracing::warn!(%path, byte_offset = torn.byte_offset, len = torn.len,
            "torn tail ignored (read-only)");
    }
}
