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
//! When the log before the anchor read clean (no corrupt, lossy or gap line, no unreadable inbox
//! edit), the document also carries `"open":{"log":{"lines":…,"unfinished":{…}},"host":{…}}`:
//! what a writer opening the log there needs ([`OpenState`]: the physical line count, what the log
//! leaves unfinished, and the host's inbox, last turn and call ids).
//! [`HostRuntime::open`](crate::HostRuntime::open) then reads only the lines after the anchor: the store checks the
//! anchor under the writer's ownership, and anything that does not fit means a full scan. A
//! checkpoint without `open` (written for a log with findings, or by an older version) still
//! serves readers.
//!
//! Findings made after resuming are numbered from the checkpoint and rebased to physical line
//! numbers only when there is one to report, by counting the line ends before `byteLength` once
//! (or from the `open` line count): a clean resume never reads the prefix.

use std::borrow::Cow;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use session_log::{
    AnchorMismatch, CorruptLine, LogAnchor, LogFinding, LogVisitor, LossyLine, RecordSpan,
    ResumePlan, ResumePoint, ScanPosition, ScanReport, Scanned, SeqGap, SessionHeader,
    SessionStore, StoreError, TornTail, Tracker,
};
use user_questions_projection::{
    PROJECTION_KEY, Replay, RestoreError, STATE_VERSION, UserQuestionsState, restore,
};

use crate::agent::Restore;

/// How far a log may grow past its checkpoint before a host that opened it at the checkpoint
/// writes a fresh one (256 KiB): reading that much costs less than writing and syncing the
/// checkpoint again, and what a reader folds after the checkpoint stays bounded by it.
pub const CHECKPOINT_LAG: u64 = 256 << 10;

/// A projection checkpoint: the state after the record its anchor ends at, and what a writer
/// reopening the log there needs.
#[derive(Clone, Debug, PartialEq)]
pub struct Checkpoint {
    /// Where in which log it was taken.
    pub anchor: LogAnchor,
    /// The projection state there.
    pub state: UserQuestionsState,
    /// What opening the log for write there needs; `None` when the log before the anchor did not
    /// read clean (it is then always opened from its start).
    pub open: Option<OpenState>,
}

/// What a host opening a log for write at a checkpoint needs besides the projection state: what
/// the open scan would have computed up to the anchor.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OpenState {
    /// The store's part: physical lines and what is unfinished.
    pub log: ResumePoint,
    /// The host's part: the inbox, the last turn, the call ids.
    pub host: Restore,
}

/// The projection checkpoint document (SPEC §9.6) as it is written and read: the one type every
/// reader of a checkpoint goes through (the host's open and load, a store that keeps where a
/// writer can resume, `PostgreSQL`'s ledger), so the document has one owner.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CheckpointDocument<'a> {
    #[serde(borrow)]
    key: Cow<'a, str>,
    state_version: serde_json::Number,
    log: LogAnchor,
    #[serde(borrow)]
    state: &'a RawValue,
    /// What a writer resumes at ([`OpenState`]), kept unread until a writer asks for it.
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    open: Option<&'a RawValue>,
}

impl<'a> CheckpointDocument<'a> {
    /// Reads a checkpoint document and checks that it is the projection's at this build's state
    /// version; the anchor is not checked against any log here.
    pub fn read(bytes: &'a [u8]) -> Result<Self, StaleReason> {
        let doc: Self =
            serde_json::from_slice(bytes).map_err(|e| StaleReason::Unreadable(e.to_string()))?;
        if doc.key != PROJECTION_KEY {
            return Err(StaleReason::Key {
                found: doc.key.into_owned(),
            });
        }
        if doc.state_version.as_u64() != Some(u64::from(STATE_VERSION)) {
            return Err(StaleReason::StateVersion {
                found: doc.state_version.to_string(),
            });
        }
        Ok(doc)
    }

    /// Where in which log it was taken.
    pub fn anchor(&self) -> &LogAnchor {
        &self.log
    }

    /// The projection state it holds, restored.
    pub fn state(&self) -> Result<UserQuestionsState, StaleReason> {
        restore(self.state.get()).map_err(StaleReason::State)
    }

    /// Where its anchor ends (`log.byteLength`) when a writer can resume there (it has an `open`
    /// member); `None` otherwise.
    pub fn resume_end(&self) -> Option<u64> {
        self.open.is_some().then_some(self.log.byte_length)
    }

    /// Its `open` member, when it reads as one. One that does not read leaves the projection
    /// checkpoint valid: only a writer's open then reads the whole log.
    fn open_state(&self) -> Option<OpenState> {
        match serde_json::from_str(self.open?.get()) {
            Ok(open) => Some(open),
            Err(error) => {
                tracing::warn!(%error, "the checkpoint's open state is unreadable; a writer opens the whole log");
                None
            }
        }
    }
}

impl Checkpoint {
    /// The checkpoint document.
    pub fn to_json(&self) -> Result<String, StoreError> {
        let state = RawValue::from_string(self.state.to_json())?;
        let open = self
            .open
            .as_ref()
            .map(serde_json::value::to_raw_value)
            .transpose()?;
        Ok(serde_json::to_string(&CheckpointDocument {
            key: Cow::Borrowed(PROJECTION_KEY),
            state_version: STATE_VERSION.into(),
            log: self.anchor.clone(),
            state: &state,
            open: open.as_deref(),
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
        Ok(Some(bytes)) => validate(store, name, &bytes, policy == CheckpointPolicy::Refresh)?
            .map_err(RefoldReason::Stale),
    };

    let track_open = policy == CheckpointPolicy::Refresh;
    let (header, source, outcome) = match valid {
        Ok(valid) => {
            let at = valid.at;
            // The line count of `open` makes line numbers physical from the start.
            let physical = valid.open.is_some();
            let mut fold = FoldVisitor::new(Replay::resume(&valid.header, valid.state, at), at);
            if track_open && let Some(open) = valid.open {
                fold.open = Some(OpenTrack::resume(open));
            }
            let report = store.scan_from(name, at, &mut fold)?;
            let mut outcome = fold.finish(report);
            if !physical && outcome.has_numbered_findings() {
                outcome.rebase_lines(store.line_of(name, at.byte_offset)?);
            }
            (
                valid.header,
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
            if track_open {
                fold.open = Some(OpenTrack::default());
            }
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
        CheckpointPolicy::Refresh => refresh(store, name, &outcome),
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

/// A checkpoint that fits its log: the log's header, the state, the position to resume at (line
/// numbers counted from there, or physical ones when `open` gave the line count), and what a
/// writer needs there, when asked for and present.
struct Valid {
    header: SessionHeader,
    state: UserQuestionsState,
    at: ScanPosition,
    open: Option<OpenState>,
}

/// Checks a checkpoint document against the log (every stale condition of §9.6); with
/// `want_open`, also reads its `open` member and checks it against the anchor.
fn validate(
    store: &dyn SessionStore,
    name: &str,
    bytes: &[u8],
    want_open: bool,
) -> Result<Result<Valid, StaleReason>, StoreError> {
    let doc = match CheckpointDocument::read(bytes) {
        Ok(doc) => doc,
        Err(stale) => return Ok(Err(stale)),
    };
    let (header, mut at) = match store.resolve_anchor(name, &doc.log)? {
        Ok(resolved) => resolved,
        Err(mismatch) => return Ok(Err(mismatch.into())),
    };
    let state = match doc.state() {
        Ok(state) => state,
        Err(stale) => return Ok(Err(stale)),
    };
    let open = want_open
        .then(|| doc.open_state())
        .flatten()
        .filter(|open| {
            let position = ScanPosition {
                line: open.log.lines,
                ..at
            };
            open.log.fits(position).is_ok()
        });
    if let Some(open) = &open {
        at.line = open.log.lines;
    }
    Ok(Ok(Valid {
        header,
        state,
        at,
        open,
    }))
}

/// A writer's open ([`SessionStore::open_at_checkpoint`]): from the document the store reads
/// (under the writer's ownership where it can), the fold seeded with its state, and the anchor
/// and resume point the store checks; a fresh fold for an open of the whole log otherwise. It
/// declines a document a writer cannot resume at: another state version, no `open` member, or
/// a state that does not restore.
#[derive(Default)]
pub(crate) struct OpenPlan {
    fold: Option<OpenFold>,
}

impl OpenPlan {
    /// The fold the open showed its lines to.
    pub(crate) fn into_fold(self) -> OpenFold {
        self.fold.unwrap_or_else(OpenFold::new)
    }
}

impl ResumePlan for OpenPlan {
    fn resume_at(&mut self, bytes: &[u8]) -> Option<(LogAnchor, ResumePoint, &mut dyn LogVisitor)> {
        let doc = CheckpointDocument::read(bytes).ok()?;
        let open = doc.open_state()?;
        let state = doc.state().ok()?;
        let mut fold = FoldVisitor::refold();
        fold.seed = Some(state);
        let point = open.log.clone();
        fold.open = Some(OpenTrack::resume(open));
        let fold = self.fold.insert(OpenFold { fold });
        Some((doc.log, point, fold.visitor()))
    }

    fn whole_log(&mut self) -> &mut dyn LogVisitor {
        self.fold.insert(OpenFold::new()).visitor()
    }
}

/// A fold that runs inside a store's open scan, so opening a log for write reads it once: the
/// lines the open shows are folded as they pass (with the inbox restore and what is unfinished),
/// then the lines appended after it (resume repair) are read on, and a fresh checkpoint is
/// written (SPEC §9.6's cache, kept for readers and for the next open).
pub(crate) struct OpenFold {
    fold: FoldVisitor,
}

impl OpenFold {
    /// A fold for an open that reads the log from its start.
    pub(crate) fn new() -> Self {
        let mut fold = FoldVisitor::refold();
        fold.open = Some(OpenTrack::default());
        Self { fold }
    }

    /// What the store's open shows its lines to.
    pub(crate) fn visitor(&mut self) -> &mut dyn LogVisitor {
        &mut self.fold
    }

    /// The projection and the inbox restore after the open scan (`open`: what it reported), and
    /// whatever was appended since, with the byte length the log's checkpoint now covers. The
    /// checkpoint is refreshed unless the open resumed at one that is less than
    /// [`CHECKPOINT_LAG`] behind.
    ///
    /// `writer_end` is where the writer now appends: when it is where the open scan ended, nothing
    /// was appended since (the writer owns the log), and the log is not read again.
    pub(crate) fn finish(
        mut self,
        store: &dyn SessionStore,
        name: &str,
        open: &ScanReport,
        writer_end: u64,
    ) -> Result<(UserQuestionsState, Restore, u64), StoreError> {
        if let Some(track) = &mut self.fold.open {
            track.note_findings(open);
        }
        let tail = if writer_end == open.end.byte_offset {
            ScanReport {
                end: open.end,
                ..ScanReport::default()
            }
        } else {
            store.scan_from(name, open.end, &mut self.fold)?
        };
        let mut outcome = self.fold.finish(tail);
        // The open already warned of its line findings; the log-level ones are the fold's.
        warn_findings(&store.location(name), &outcome, true);
        let log_end = outcome.report.end.byte_offset;
        let covered = match outcome.resumed_at {
            Some(at) if log_end.saturating_sub(at) < CHECKPOINT_LAG => at,
            _ => match refresh(store, name, &outcome) {
                CheckpointWrite::Written(_) | CheckpointWrite::UpToDate => log_end,
                _ => outcome.resumed_at.unwrap_or(0),
            },
        };
        let restore = outcome
            .open
            .take()
            .map(|track| track.restore)
            .unwrap_or_default();
        Ok((outcome.state, restore, covered))
    }
}

/// What a writer's open would compute, followed over the lines a fold reads: the inbox restore,
/// what is unfinished, and whether every line read clean.
#[derive(Default)]
struct OpenTrack {
    restore: Restore,
    tracker: Tracker,
    /// Whether every line so far read clean; `false` until the track starts (at the header or at
    /// a clean checkpoint).
    clean: bool,
}

impl OpenTrack {
    fn resume(open: OpenState) -> Self {
        Self {
            tracker: Tracker::resume(&open.log.unfinished),
            restore: open.host,
            clean: true,
        }
    }

    fn line(&mut self, scanned: &Scanned<'_>) {
        match scanned {
            Scanned::Record(record) => {
                if record.lossy || record.gap.is_some() {
                    self.clean = false;
                }
                if let Some(event) = record.record.event() {
                    self.tracker.observe(record.line, event);
                }
                self.restore.line(scanned);
            }
            Scanned::Corrupt(_) => self.clean = false,
        }
    }

    /// Marks the track unclean when `report` has a line finding.
    fn note_findings(&mut self, report: &ScanReport) {
        if !report.corrupt_lines.is_empty()
            || !report.lossy_lines.is_empty()
            || !report.seq_gaps.is_empty()
        {
            self.clean = false;
        }
    }

    /// The open state after the last record, which ends line `lines`, if everything read clean.
    fn state(&self, lines: u64) -> Option<OpenState> {
        (self.clean && self.restore.unreadable_edits == 0).then(|| OpenState {
            log: ResumePoint {
                lines,
                unfinished: self.tracker.interrupted(),
            },
            host: self.restore.clone(),
        })
    }
}

/// Folds the lines a store shows, remembering where the last record ended (and, when asked, what
/// a writer's open would compute).
struct FoldVisitor {
    replay: Option<Replay>,
    /// The state a scan resumed by the store starts from, until the store says where
    /// ([`LogVisitor::resumed`]).
    seed: Option<UserQuestionsState>,
    last_record: Option<(ScanPosition, RecordSpan)>,
    open: Option<OpenTrack>,
    /// Where the fold started when not at the header: the checkpoint's byte length.
    resumed_at: Option<u64>,
}

impl FoldVisitor {
    /// A fold resumed at the checkpoint position `at`.
    fn new(replay: Replay, at: ScanPosition) -> Self {
        Self {
            replay: Some(replay),
            seed: None,
            last_record: None,
            open: None,
            resumed_at: Some(at.byte_offset),
        }
    }

    /// A fold from the start: the replay begins at the header.
    fn refold() -> Self {
        Self {
            replay: None,
            seed: None,
            last_record: None,
            open: None,
            resumed_at: None,
        }
    }

    fn finish(mut self, report: ScanReport) -> FoldOutcome {
        let (state, findings) = match self.replay {
            Some(replay) => replay.finish(),
            None => (UserQuestionsState::new(0), Vec::new()),
        };
        // A finding the visitor never saw as a line (a header with invalid UTF-8) counts too.
        if let Some(open) = &mut self.open {
            open.note_findings(&report);
        }
        FoldOutcome {
            state,
            report,
            findings,
            last_record: self.last_record,
            open: self.open,
            resumed_at: self.resumed_at,
        }
    }
}

impl LogVisitor for FoldVisitor {
    fn header(&mut self, header: &SessionHeader) {
        self.replay = Some(Replay::new(header));
        if let Some(open) = &mut self.open {
            *open = OpenTrack {
                clean: true,
                ..OpenTrack::default()
            };
        }
    }

    fn resumed(&mut self, header: &SessionHeader, at: ScanPosition) {
        if let Some(state) = self.seed.take() {
            self.replay = Some(Replay::resume(header, state, at));
            self.resumed_at = Some(at.byte_offset);
        }
    }

    fn line(&mut self, scanned: &Scanned<'_>) {
        if let Some(open) = &mut self.open {
            open.line(scanned);
        }
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
    open: Option<OpenTrack>,
    /// Where the fold started when it resumed at a checkpoint (which then covers everything
    /// before the first record folded).
    resumed_at: Option<u64>,
}

impl FoldOutcome {
    /// The open state at the last record, when it was followed and everything read clean.
    fn open_state(&self) -> Option<OpenState> {
        let lines = self.last_record.map_or(1, |(end, _)| end.line);
        self.open.as_ref()?.state(lines)
    }

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
fn refresh(store: &dyn SessionStore, name: &str, outcome: &FoldOutcome) -> CheckpointWrite {
    if outcome.last_record.is_none() && outcome.resumed_at.is_some() {
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
        open: outcome.open_state(),
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
