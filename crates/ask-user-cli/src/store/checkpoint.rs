//! The projection checkpoint cache (SPEC §9.6): the `userQuestions` state at a record boundary of
//! a log, keyed by the projection's state version and by the log's identity, length and last
//! record, so that a host gets the projection of a long log by reading only what was appended
//! since.
//!
//! Content, exactly (no line end):
//! `{"key":"userQuestions","stateVersion":2,"log":{"sessionId":"…","headerHash":"…","eventCount":n,"byteLength":b,"lastRecordHash":"…"},"state":{…}}`,
//! hashes being lowercase hex SHA-256 of the header line and of the last record's line (each with
//! its line end). It lives next to the log as `<log name>.userQuestions.checkpoint.json`.
//!
//! The checkpoint stores no line number. Findings made after resuming are numbered from the
//! checkpoint and rebased to physical line numbers only when there is one to report, by counting
//! the line ends before `byteLength` once: a clean resume never reads the prefix.

use std::cmp::Ordering;
use std::fmt::Write as _;
use std::fs::{self, File};
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use sha2::{Digest, Sha256};
use user_questions_projection::{
    CorruptLine, CorruptReason, LogFinding, LogScanner, LossyLine, PROJECTION_KEY, Replay,
    RestoreError, STATE_VERSION, ScanPosition, ScanReport, Scanned, SeqGap, SessionHeader,
    TornTail, UserQuestionsState, restore, seq_after_record,
};

use super::StoreError;
use super::file;
use super::log::READ_BUFFER;

/// What follows the log's file name in its checkpoint's name.
pub const CHECKPOINT_SUFFIX: &str = ".userQuestions.checkpoint.json";

/// The checkpoint file of `log`: `<log name>.userQuestions.checkpoint.json` in the same directory.
pub fn checkpoint_path(log: &Path) -> PathBuf {
    let mut name = log.file_name().unwrap_or_default().to_os_string();
    name.push(CHECKPOINT_SUFFIX);
    file::parent_dir(log).join(name)
}

/// Lowercase hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    let mut hex = String::with_capacity(64);
    for byte in &digest {
        // Writing to a `String` cannot fail.
        let _ = write!(hex, "{byte:02x}");
    }
    hex
}

/// A projection checkpoint: the state after the record that ends at `byte_length`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Checkpoint {
    /// The log's session id (header `id`).
    pub session_id: String,
    /// SHA-256 of the header line.
    pub header_hash: String,
    /// Events in the log before `byte_length` (a packed row counts one per member).
    pub event_count: u64,
    /// The offset just past the last record folded (a line end).
    pub byte_length: u64,
    /// SHA-256 of the line that ends at `byte_length` (the header line when no record precedes).
    pub last_record_hash: String,
    /// The projection state there.
    pub state: UserQuestionsState,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct DocumentOut<'a> {
    key: &'static str,
    state_version: u32,
    log: LogKey,
    state: &'a RawValue,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct DocumentIn<'a> {
    key: String,
    state_version: serde_json::Number,
    log: LogKey,
    #[serde(borrow)]
    state: &'a RawValue,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct LogKey {
    session_id: String,
    header_hash: String,
    event_count: u64,
    byte_length: u64,
    last_record_hash: String,
}

impl Checkpoint {
    /// The checkpoint file's content.
    pub fn to_json(&self) -> Result<String, StoreError> {
        let state = RawValue::from_string(self.state.to_json())?;
        Ok(serde_json::to_string(&DocumentOut {
            key: PROJECTION_KEY,
            state_version: STATE_VERSION,
            log: LogKey {
                session_id: self.session_id.clone(),
                header_hash: self.header_hash.clone(),
                event_count: self.event_count,
                byte_length: self.byte_length,
                last_record_hash: self.last_record_hash.clone(),
            },
            state: &state,
        })?)
    }

    /// The first half of an atomic write: removes temporary files an interrupted write left for
    /// this checkpoint, then writes the content to a new temporary file next to it and `fsync`s
    /// it. Until [`StagedCheckpoint::commit`], the previous checkpoint is untouched.
    pub fn stage(&self, log: &Path) -> Result<StagedCheckpoint, StoreError> {
        let target = checkpoint_path(log);
        let content = self.to_json()?;
        file::remove_leftover_temps(&target)
            .map_err(|e| StoreError::io("remove leftover temporary files for", &target, e))?;
        let temp = file::write_temp(&target, content.as_bytes())
            .map_err(|e| StoreError::io("write a temporary file for", &target, e))?;
        Ok(StagedCheckpoint { temp, target })
    }

    /// Writes the checkpoint of `log` atomically (temporary file, `fsync`, rename over the
    /// target, directory `fsync`) and returns its path.
    pub fn write(&self, log: &Path) -> Result<PathBuf, StoreError> {
        self.stage(log)?.commit()
    }
}

/// A checkpoint written to its temporary file, not yet in place. Dropping it without committing
/// leaves the temporary file, as a crash would; the next write removes it.
#[derive(Debug)]
pub struct StagedCheckpoint {
    temp: PathBuf,
    target: PathBuf,
}

impl StagedCheckpoint {
    /// The temporary file.
    pub fn temp_path(&self) -> &Path {
        &self.temp
    }

    /// Renames the temporary file over the checkpoint and `fsync`s the directory.
    pub fn commit(self) -> Result<PathBuf, StoreError> {
        file::replace_with(&self.temp, &self.target)
            .map_err(|e| StoreError::io("replace", &self.target, e))?;
        Ok(self.target)
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
    /// It is for another session.
    #[error("checkpoint of another session ({found:?})")]
    SessionId {
        /// Its `sessionId`.
        found: String,
    },
    /// The log's header is not the one it was taken on.
    #[error("the log's header does not match the checkpoint's headerHash")]
    HeaderHash,
    /// The log is shorter than the checkpoint (e.g. a torn tail was truncated).
    #[error("checkpoint byteLength {byte_length} is past the end of the log ({log_length} bytes)")]
    PastEnd {
        /// Its `byteLength`.
        byte_length: u64,
        /// The log's length.
        log_length: u64,
    },
    /// `byteLength` does not end a line after the header (or `eventCount` is not 0 at the header).
    #[error("checkpoint byteLength {byte_length} is not the end of a record")]
    NotAtRecordEnd {
        /// Its `byteLength`.
        byte_length: u64,
    },
    /// The line ending at `byteLength` is not the record the checkpoint was taken after.
    #[error("the record ending at byteLength does not match the checkpoint's lastRecordHash")]
    LastRecordHash,
    /// The line ending at `byteLength` hashes right but is not a record.
    #[error("the line ending at byteLength is not a record: {0}")]
    NotARecord(CorruptReason),
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

/// Gets the projection state of the log at `log` fast (SPEC §9.6): loads its checkpoint if it is
/// valid and folds on over the lines after it; otherwise (no checkpoint, or a stale one: the
/// reason is in [`ProjectionSource::Refold`] and a `tracing` warning) folds the whole log. Either
/// way the state equals a full refold's. With [`CheckpointPolicy::Refresh`] it then writes a fresh
/// checkpoint at the last record when the old one did not cover it; a failure to write is
/// reported in [`ProjectionLoad::checkpoint`], never an error.
///
/// The log itself is only read: no lock, and a torn tail is reported, not truncated.
pub fn load_projection(log: &Path, policy: CheckpointPolicy) -> Result<ProjectionLoad, StoreError> {
    let mut file = File::open(log).map_err(|e| StoreError::io("open", log, e))?;
    let log_length = file
        .metadata()
        .map_err(|e| StoreError::io("stat", log, e))?
        .len();
    let mut header_line = Vec::new();
    BufReader::new(&file)
        .read_until(b'\n', &mut header_line)
        .map_err(|e| StoreError::io("read", log, e))?;
    let (header, _) =
        LogScanner::open(header_line.as_slice()).map_err(|e| StoreError::open(log, e))?;
    let header_hash = sha256_hex(&header_line);
    let header_end = header_line.len() as u64;

    let ckpt_path = checkpoint_path(log);
    let valid = match fs::read(&ckpt_path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Err(RefoldReason::NoCheckpoint),
        Err(e) => Err(RefoldReason::Stale(StaleReason::Unreadable(e.to_string()))),
        Ok(bytes) => match validate(&bytes, &file, &header, &header_hash, header_end, log_length) {
            Ok(valid) => Ok(valid),
            Err(Invalid::Stale(reason)) => Err(RefoldReason::Stale(reason)),
            Err(Invalid::Io(e)) => return Err(StoreError::io("read", log, e)),
        },
    };

    let (source, outcome) = match valid {
        Ok((state, at)) => {
            file.seek(SeekFrom::Start(at.byte_offset))
                .map_err(|e| StoreError::io("seek", log, e))?;
            let scanner = LogScanner::resume(BufReader::with_capacity(READ_BUFFER, &file), at);
            let replay = Replay::resume(&header, state, at);
            let mut outcome = fold(scanner, replay).map_err(|e| StoreError::io("read", log, e))?;
            if outcome.has_numbered_findings() {
                let base = count_lines(&file, at.byte_offset)
                    .map_err(|e| StoreError::io("read", log, e))?;
                outcome.rebase_lines(base);
            }
            (
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
                    path = %ckpt_path.display(),
                    reason = %stale,
                    "stale projection checkpoint discarded; refolding the log"
                );
            }
            file.seek(SeekFrom::Start(0))
                .map_err(|e| StoreError::io("seek", log, e))?;
            let (_, scanner) = LogScanner::open(BufReader::with_capacity(READ_BUFFER, &file))
                .map_err(|e| StoreError::open(log, e))?;
            let replay = Replay::new(&header);
            let outcome = fold(scanner, replay).map_err(|e| StoreError::io("read", log, e))?;
            (ProjectionSource::Refold(reason), outcome)
        }
    };
    warn_findings(log, &outcome);

    let checkpoint = match policy {
        CheckpointPolicy::ReadOnly => CheckpointWrite::NotRequested,
        CheckpointPolicy::Refresh => refresh(
            log,
            &mut file,
            &header,
            &header_hash,
            header_end,
            &source,
            &outcome,
        ),
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

/// Why a checkpoint could not be used: stale, or the log could not be read.
enum Invalid {
    Stale(StaleReason),
    Io(io::Error),
}

impl From<StaleReason> for Invalid {
    fn from(reason: StaleReason) -> Self {
        Self::Stale(reason)
    }
}

/// Checks a checkpoint against the log (every stale condition of §9.6) and returns its state and
/// the position to resume at (line numbers counted from there).
fn validate(
    bytes: &[u8],
    file: &File,
    header: &SessionHeader,
    header_hash: &str,
    header_end: u64,
    log_length: u64,
) -> Result<(UserQuestionsState, ScanPosition), Invalid> {
    let doc: DocumentIn<'_> =
        serde_json::from_slice(bytes).map_err(|e| StaleReason::Unreadable(e.to_string()))?;
    if doc.key != PROJECTION_KEY {
        return Err(StaleReason::Key { found: doc.key }.into());
    }
    if doc.state_version.as_u64() != Some(u64::from(STATE_VERSION)) {
        return Err(StaleReason::StateVersion {
            found: doc.state_version.to_string(),
        }
        .into());
    }
    let key = doc.log;
    if key.session_id != header.id.as_str() {
        return Err(StaleReason::SessionId {
            found: key.session_id,
        }
        .into());
    }
    if key.header_hash != header_hash {
        return Err(StaleReason::HeaderHash.into());
    }
    if key.byte_length > log_length {
        return Err(StaleReason::PastEnd {
            byte_length: key.byte_length,
            log_length,
        }
        .into());
    }
    let not_at_end = StaleReason::NotAtRecordEnd {
        byte_length: key.byte_length,
    };
    let expected_seq = match key.byte_length.cmp(&header_end) {
        Ordering::Less => return Err(not_at_end.into()),
        Ordering::Equal => {
            if key.event_count != 0 {
                return Err(not_at_end.into());
            }
            if key.last_record_hash != header_hash {
                return Err(StaleReason::LastRecordHash.into());
            }
            0
        }
        Ordering::Greater => {
            let line = line_ending_at(file, header_end, key.byte_length)
                .map_err(Invalid::Io)?
                .ok_or(not_at_end)?;
            if sha256_hex(&line) != key.last_record_hash {
                return Err(StaleReason::LastRecordHash.into());
            }
            seq_after_record(&line, key.event_count).map_err(StaleReason::NotARecord)?
        }
    };
    let state = restore(doc.state.get()).map_err(StaleReason::State)?;
    Ok((
        state,
        ScanPosition {
            byte_offset: key.byte_length,
            line: 0,
            expected_seq,
            events: key.event_count,
        },
    ))
}

/// The line that ends at `end` (its `\n` included), read backwards in blocks; `None` when the byte
/// before `end` is not a `\n`. The line starts after the previous `\n`, and never before `start`
/// (the end of the header).
fn line_ending_at(mut file: &File, start: u64, end: u64) -> io::Result<Option<Vec<u8>>> {
    let mut blocks: Vec<Vec<u8>> = Vec::new();
    let mut pos = end;
    while pos > start {
        let block_start = pos.saturating_sub(READ_BUFFER as u64).max(start);
        let mut block = vec![0; usize::try_from(pos - block_start).unwrap_or(usize::MAX)];
        file.seek(SeekFrom::Start(block_start))?;
        file.read_exact(&mut block)?;
        let search = if pos == end {
            match block.split_last() {
                Some((b'\n', rest)) => rest,
                _ => return Ok(None),
            }
        } else {
            &block[..]
        };
        if let Some(i) = memchr::memrchr(b'\n', search) {
            blocks.push(block[i + 1..].to_vec());
            break;
        }
        blocks.push(block);
        pos = block_start;
    }
    blocks.reverse();
    Ok(Some(blocks.concat()))
}

/// Physical lines before `end`: the line ends in the file's first `end` bytes.
fn count_lines(mut file: &File, end: u64) -> io::Result<u64> {
    file.seek(SeekFrom::Start(0))?;
    let mut reader = file.take(end);
    let mut block = vec![0; READ_BUFFER];
    let mut lines = 0;
    loop {
        let n = reader.read(&mut block)?;
        if n == 0 {
            return Ok(lines);
        }
        lines += memchr::memchr_iter(b'\n', &block[..n]).count() as u64;
    }
}

/// A fold's result, with where its last record ended.
struct FoldOutcome {
    state: UserQuestionsState,
    report: ScanReport,
    findings: Vec<LogFinding>,
    /// The position after the last record folded, and that record's offset and length.
    last_record: Option<(ScanPosition, u64, usize)>,
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
        if let Some((pos, _, _)) = &mut self.last_record {
            pos.line += base;
        }
    }
}

fn fold<R: BufRead>(mut scanner: LogScanner<R>, mut replay: Replay) -> io::Result<FoldOutcome> {
    let mut last_record = None;
    loop {
        let record_at = match scanner.next_line()? {
            None => break,
            Some(Scanned::Record(record)) => {
                replay.apply_record(record.line, &record.record);
                Some((record.byte_offset, record.raw.len()))
            }
            Some(Scanned::Corrupt(_)) => None,
        };
        if let Some((offset, len)) = record_at {
            last_record = Some((scanner.position(), offset, len));
        }
    }
    let (state, findings) = replay.finish();
    Ok(FoldOutcome {
        state,
        report: scanner.into_report(),
        findings,
        last_record,
    })
}

/// Writes a fresh checkpoint after the last record, unless the current one already covers it.
fn refresh(
    log: &Path,
    file: &mut File,
    header: &SessionHeader,
    header_hash: &str,
    header_end: u64,
    source: &ProjectionSource,
    outcome: &FoldOutcome,
) -> CheckpointWrite {
    let (byte_length, event_count, last_record_hash) = match (outcome.last_record, source) {
        (None, ProjectionSource::Checkpoint { .. }) => return CheckpointWrite::UpToDate,
        (None, ProjectionSource::Refold(_)) => (header_end, 0, header_hash.to_owned()),
        (Some((pos, offset, len)), _) => {
            let line = match read_at(file, offset, len) {
                Ok(line) => line,
                Err(e) => return failed(StoreError::io("read", log, e)),
            };
            if seq_after_record(&line, pos.events) != Ok(pos.expected_seq) {
                return CheckpointWrite::NotRecoverable;
            }
            (pos.byte_offset, pos.events, sha256_hex(&line))
        }
    };
    let checkpoint = Checkpoint {
        session_id: header.id.as_str().to_owned(),
        header_hash: header_hash.to_owned(),
        event_count,
        byte_length,
        last_record_hash,
        state: outcome.state.clone(),
    };
    match checkpoint.write(log) {
        Ok(path) => CheckpointWrite::Written(path),
        Err(e) => failed(e),
    }
}

fn failed(error: StoreError) -> CheckpointWrite {
    tracing::warn!(error = %error, "writing the projection checkpoint failed");
    CheckpointWrite::Failed(error)
}

fn read_at(mut file: &File, offset: u64, len: usize) -> io::Result<Vec<u8>> {
    let mut bytes = vec![0; len];
    file.seek(SeekFrom::Start(offset))?;
    file.read_exact(&mut bytes)?;
    Ok(bytes)
}

/// Turns every finding of a fold into a `tracing` warning.
fn warn_findings(log: &Path, outcome: &FoldOutcome) {
    let path = log.display();
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
    for finding in &outcome.findings {
        tracing::warn!(%path, finding = %finding, "session log finding");
    }
}
