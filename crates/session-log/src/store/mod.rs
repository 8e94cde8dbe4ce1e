//! The storage seam (SPEC §9.6): [`SessionStore`] holds session logs by name, and a
//! [`SessionWriter`] is the single writer of one of them. Every [`LogBackend`] (the few
//! operations on a store's bytes and a writer's hold) is a `SessionStore`: the scanning, the
//! anchors, opens at a resume point, the batch check and the writer's bookkeeping are written
//! once (`generic`). Two backends here:
//!
//! * [`JsonlStore`]: one JSONL file per session in a directory (format §7), with every durability
//!   rule of §9.6: the header published atomically (temporary file, `fsync`, no-replace link,
//!   directory `fsync`); an exclusive advisory lock per writer; `sync_data` before an append is
//!   acknowledged; a failed batch truncated away, and a writer that cannot truncate poisoned; a
//!   torn tail saved to a sidecar before it is cut; checkpoints replaced atomically.
//! * [`MemoryStore`]: the same contract over byte buffers in memory, for tests and for hosts
//!   that need no durability.
//!
//! Both read through the one [`LogScanner`](crate::LogScanner), so every store agrees on what a
//! record, a `seq` and a finding are. A checkpoint is an opaque document to a store; what it
//! checks is the [`LogAnchor`] the document names (the log's identity, length and last record).
//!
//! A new backend implements [`LogBackend`] and [`OwnedLog`] and never parses a record itself;
//! [`backend`] holds the helpers the generic store is built from (the scan, the batch check, the
//! reports), for a store that needs them elsewhere (an import).
//!
//! The contract every implementation must meet is one test suite (`ask-user-testkit`'s
//! `store_contract`), run against each store.

mod anchor;
pub mod backend;
mod file;
mod generic;
mod jsonl;
mod memory;

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::envelope::{LogEvent, NewSession};
use crate::event::SessionEvent;
use crate::header::{HeaderError, SessionHeader};
use crate::scan::{OpenError, ScanPosition, ScanReport, Scanned};
use crate::unfinished::Interrupted;

pub use anchor::{AnchorMismatch, LogAnchor, RecordSpan, sha256_hex};
pub use file::LogFile;
pub use generic::{BackendWriter, LogBackend, OwnedLog};
pub use jsonl::{
    CHECKPOINT_SUFFIX, FileLog, JsonlStore, LogWriter, StagedCheckpoint, checkpoint_path, read_log,
    read_log_with, stage_checkpoint, write_checkpoint, writer_is_live,
};
pub use memory::{MemoryHold, MemoryStore};

/// Session logs by name. See the [module docs](self).
///
/// A name is what the store maps to a log: a file name in the store's directory for
/// [`JsonlStore`], any string for [`MemoryStore`]. Every method is synchronous; none holds a lock
/// across a call into the caller's visitor other than the log's own.
pub trait SessionStore: Send + Sync {
    /// Where the log `name` lives, for messages (a path, or `memory:<name>`).
    fn location(&self, name: &str) -> PathBuf;

    /// The file that holds the log `name`, for a store of files (what a person can pass to the
    /// `ask-user` commands); `None` for a store that keeps no files.
    fn file_path(&self, name: &str) -> Option<PathBuf> {
        let _ = name;
        None
    }

    /// Whether a log of this name exists.
    fn exists(&self, name: &str) -> Result<bool, StoreError>;

    /// The names of every log the store holds, sorted. A checkpoint or a sidecar is not a log;
    /// [`JsonlStore`](crate::JsonlStore) lists the regular files named `*.jsonl` of its directory
    /// (a log created under another name is read and written, but not listed).
    fn list(&self) -> Result<Vec<String>, StoreError>;

    /// The byte length of the log `name`: what grows with every append, for a watcher that tells
    /// a surface the store's logs changed.
    fn length(&self, name: &str) -> Result<u64, StoreError>;

    /// Creates a new log whose only line is `session`'s header record and returns its writer
    /// ([`StoreError::Exists`] if there is one already). The header is durable before it returns.
    fn create(
        &self,
        name: &str,
        session: &NewSession,
    ) -> Result<Box<dyn SessionWriter>, StoreError>;

    /// Opens a log for write with exclusive ownership ([`StoreError::Locked`] while another writer
    /// holds it): scans it once, showing every line to `visitor`, saves a torn tail aside and cuts
    /// it. It does not repair (see [`repair_interrupted`](crate::repair_interrupted)).
    fn open(
        &self,
        name: &str,
        visitor: &mut dyn LogVisitor,
    ) -> Result<(Box<dyn SessionWriter>, OpenReport), StoreError>;

    /// Opens a log for write as [`SessionStore::open`] does, but from a checkpointed point of it
    /// instead of from its start: under the writer's ownership, `anchor` is checked against the
    /// log (every stale condition of SPEC §9.6) and `resume` against the anchor; if both fit,
    /// `visitor` is told where the scan resumes ([`LogVisitor::resumed`]) and sees only the lines
    /// after the anchor, and the writer continues from `resume` as if it had read the log before.
    /// The open report's findings are those of the lines after the anchor
    /// ([`OpenReport::resumed_at`] says where they start).
    ///
    /// [`OpenFrom::Stale`] when the anchor or the resume point does not fit (nothing was scanned
    /// or changed, and ownership is given back: open the whole log instead), and
    /// [`OpenFrom::Unsupported`] from a store that always reads the whole log (the default).
    fn open_from(
        &self,
        name: &str,
        anchor: &LogAnchor,
        resume: &ResumePoint,
        visitor: &mut dyn LogVisitor,
    ) -> Result<OpenFrom, StoreError> {
        let _ = (name, anchor, resume, visitor);
        Ok(OpenFrom::Unsupported)
    }

    /// Opens a log for write at its checkpoint when it can: as [`SessionStore::open_from`] does
    /// with the anchor and resume point `plan` reads from the log's checkpoint document, and as
    /// [`SessionStore::open`] does (showing every line to [`ResumePlan::whole_log`]) when there
    /// is no document (or it cannot be read: a warning), `plan` declines it, it does not fit the
    /// log ([`OpenedAtCheckpoint::stale`]) or the store cannot resume. Refused while another
    /// writer holds the log ([`StoreError::Locked`]).
    ///
    /// A mismatch, an unreadable document and a failed open at the checkpoint are warnings too.
    /// The default reads the document ([`SessionStore::load_checkpoint`]), then opens. A store
    /// that owns its logs by a [`LogBackend`] takes the ownership first, reads the document under
    /// it when it resumes at all (a database's lease reads it in the same statement), and reads
    /// the whole log under the same ownership when it does not resume.
    fn open_at_checkpoint(
        &self,
        name: &str,
        plan: &mut dyn ResumePlan,
    ) -> Result<OpenedAtCheckpoint, StoreError> {
        let path = self.location(name);
        let document = self
            .load_checkpoint(name)
            .unwrap_or_else(|error| unread_checkpoint(&path, &error));
        let mut stale = None;
        if let Some((anchor, resume, visitor)) = document.as_deref().and_then(|d| plan.resume_at(d))
        {
            match self.open_from(name, &anchor, &resume, visitor) {
                Ok(OpenFrom::Resumed { writer, report }) => {
                    return Ok(OpenedAtCheckpoint {
                        writer,
                        report,
                        stale: None,
                    });
                }
                Ok(OpenFrom::Stale(mismatch)) => {
                    stale_checkpoint(&path, &mismatch);
                    stale = Some(mismatch);
                }
                Ok(OpenFrom::Unsupported) => {}
                Err(error) => not_at_checkpoint(&path, error)?,
            }
        }
        let (writer, report) = self.open(name, plan.whole_log())?;
        Ok(OpenedAtCheckpoint {
            writer,
            report,
            stale,
        })
    }

    /// Reads a log without taking ownership and without changing anything (a torn tail is
    /// reported and left), showing every line to `visitor`.
    fn read(&self, name: &str, visitor: &mut dyn LogVisitor) -> Result<OpenReport, StoreError>;

    /// Reads on from `at` (a record boundary an earlier scan or a checkpoint gave) to the end,
    /// read-only, showing every line to `visitor`. Line numbers in the report and the visitor are
    /// counted from `at.line` (a checkpoint's position has line 0; see
    /// [`SessionStore::line_of`]).
    fn scan_from(
        &self,
        name: &str,
        at: ScanPosition,
        visitor: &mut dyn LogVisitor,
    ) -> Result<ScanReport, StoreError>;

    /// The number of physical lines before `byte_offset` (to turn line numbers counted from a
    /// checkpoint into physical ones).
    fn line_of(&self, name: &str, byte_offset: u64) -> Result<u64, StoreError>;

    /// Whether a writer holds the log now. Never modifies the log.
    fn is_writing(&self, name: &str) -> Result<bool, StoreError>;

    /// Checks `anchor` against the log (SPEC §9.6): same session, same header, `byte_length`
    /// within the log at the end of the record the anchor hashes. `Ok(Ok((header, position)))`
    /// gives the log's header and where to resume (line 0); `Ok(Err(_))` says why the anchor is
    /// stale.
    fn resolve_anchor(
        &self,
        name: &str,
        anchor: &LogAnchor,
    ) -> Result<Result<(SessionHeader, ScanPosition), AnchorMismatch>, StoreError>;

    /// The anchor of the log at `end` (a scan's end position), whose last record is `last` (`None`:
    /// no record after the header). `Ok(None)` when that position cannot be anchored: its last
    /// record has no explicit `seq` and follows a gap, so the next `seq` could not be recovered.
    fn anchor_at(
        &self,
        name: &str,
        end: ScanPosition,
        last: Option<RecordSpan>,
    ) -> Result<Option<LogAnchor>, StoreError>;

    /// The checkpoint document saved for the log, if any.
    fn load_checkpoint(&self, name: &str) -> Result<Option<Vec<u8>>, StoreError>;

    /// Replaces the log's checkpoint document atomically (a reader sees the old one or the new
    /// one) and returns where it lives.
    fn save_checkpoint(&self, name: &str, document: &[u8]) -> Result<PathBuf, StoreError>;
}

/// The single writer of one log. Appends are durable before they are acknowledged.
pub trait SessionWriter: Send {
    /// Appends `events` as one durable batch (SPEC §9.6). The first `seq` must be
    /// [`SessionWriter::next_seq`] and the batch contiguous; each event must be one record line
    /// that reads back as itself ([`LogEvent::to_line`]). Nothing of a refused or failed batch
    /// stays in the log; a writer that cannot undo a failed batch is poisoned and refuses every
    /// later append. An empty batch writes nothing.
    ///
    /// Returns the appended events as the log reader decodes them, so a host feeds its live
    /// projection exactly what a replay would see.
    fn append(&mut self, events: &[LogEvent]) -> Result<Vec<SessionEvent>, StoreError>;

    /// The `seq` the next appended event must carry.
    fn next_seq(&self) -> u64;

    /// Where the log ends now.
    fn position(&self) -> ScanPosition;

    /// The header record.
    fn header(&self) -> &SessionHeader;

    /// Where the log lives, for messages.
    fn location(&self) -> &Path;

    /// What the log leaves unfinished now, counting what this writer appended.
    fn interrupted(&self) -> Interrupted;

    /// Whether a failed rollback poisoned the writer.
    fn is_poisoned(&self) -> bool;
}

/// What opening a log found (SPEC §9.6). Every finding is also a `tracing` warning.
#[derive(Clone, Debug)]
pub struct OpenReport {
    /// The header record.
    pub header: SessionHeader,
    /// Corrupt lines (skipped, never deleted), lossy lines, seq gaps, the torn tail, and where
    /// the last complete line ended (`end`: byte offset, physical lines, expected next `seq`,
    /// decoded events).
    pub scan: ScanReport,
    /// Where an open for write saved the torn tail before cutting it
    /// (`<log name>.torn-<byte offset>`); `None` when there was none or the open was read-only.
    pub torn_tail_saved_to: Option<PathBuf>,
    /// What the log leaves unfinished (calls without results, open steps and turns). For a log no
    /// process is writing, that is what resume repair would append for.
    pub interrupted: Interrupted,
    /// Where the scan started when the open resumed from a checkpoint
    /// ([`SessionStore::open_from`]): the findings above are of the lines after it only. `None`
    /// when the whole log was read.
    pub resumed_at: Option<ScanPosition>,
}

impl OpenReport {
    /// Whether the scan found nothing to report (a log left unfinished is not a finding).
    pub fn is_clean(&self) -> bool {
        self.scan.is_clean()
    }
}

/// Sees every complete line while a log is scanned, in one pass with the store's own scan: a host
/// folds the projection or restores its inbox without reading the log twice.
pub trait LogVisitor {
    /// The header record, before any line of a scan from the start.
    fn header(&mut self, header: &SessionHeader) {
        let _ = header;
    }

    /// A scan that resumes at `at` instead of starting at the header
    /// ([`SessionStore::open_from`]): called once, before the lines after `at`, with the log's
    /// header. The visitor carries on from the state it had at `at`.
    fn resumed(&mut self, header: &SessionHeader, at: ScanPosition) {
        let _ = (header, at);
    }

    /// One complete line after the header: a record, or a corrupt line that is skipped.
    fn line(&mut self, scanned: &Scanned<'_>);
}

/// What a writer needs to carry on at a checkpointed point of a log without reading the log before
/// it: what a full open scan would have computed there, beside the point's [`LogAnchor`] (which
/// gives the byte length, the event count and, from the record it hashes, the next `seq`).
/// A checkpoint document carries it; [`SessionStore::open_from`] uses it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ResumePoint {
    /// Physical lines before the anchor's `byteLength` (the header counts one).
    pub lines: u64,
    /// What the log before that point leaves unfinished.
    pub unfinished: Interrupted,
}

impl ResumePoint {
    /// Checks that this resume point can belong to `at` (a resolved anchor's position): a line
    /// count past the header, and every unfinished call before it, once. What it cannot check
    /// without reading the log is what the anchor proves (the header and the record at
    /// `byteLength`).
    pub fn fits(&self, at: ScanPosition) -> Result<(), AnchorMismatch> {
        let misfit = |reason: &'static str| Err(AnchorMismatch::ResumePoint { reason });
        if self.lines == 0 || (at.events == 0 && at.expected_seq == 0 && self.lines != 1) {
            return misfit("its line count cannot end there");
        }
        let before =
            |seq: u64, line: u64| seq < at.expected_seq && (2..=self.lines).contains(&line);
        let calls = &self.unfinished.calls;
        if !calls.iter().all(|c| before(c.seq, c.line))
            || !self
                .unfinished
                .unidentified_calls
                .iter()
                .all(|c| before(c.seq, c.line))
        {
            return misfit("an unfinished call lies past it");
        }
        let mut ids: Vec<&str> = calls.iter().map(|c| c.call_id.as_str()).collect();
        ids.sort_unstable();
        if ids.windows(2).any(|w| w[0] == w[1]) {
            return misfit("an unfinished call id appears twice");
        }
        Ok(())
    }
}

/// What an open at a checkpoint ([`SessionStore::open_at_checkpoint`]) makes of the log's
/// checkpoint document, and what it shows the whole log to when it cannot resume there.
pub trait ResumePlan {
    /// The anchor and resume point `document` holds, with the visitor the open shows the lines
    /// after the anchor to (one that starts from the document's state); `None` when the open
    /// cannot resume at this document.
    fn resume_at(
        &mut self,
        document: &[u8],
    ) -> Option<(LogAnchor, ResumePoint, &mut dyn LogVisitor)>;

    /// The visitor an open of the whole log shows every line to (a fresh one: an open that
    /// found its checkpoint stale may have shown some lines to the one `resume_at` gave).
    fn whole_log(&mut self) -> &mut dyn LogVisitor;
}

/// An open at a checkpoint of the log at `path` that failed with `error`: refused while another
/// writer holds the log; anything else (a header that no longer reads, say) is a warning, and the
/// open from the start reports it as it would without a checkpoint.
pub(crate) fn not_at_checkpoint(path: &Path, error: StoreError) -> Result<(), StoreError> {
    if matches!(error, StoreError::Locked { .. }) {
        return Err(error);
    }
    tracing::warn!(path = %path.display(), %error, "the log cannot be opened at its checkpoint; opening it from its start");
    Ok(())
}

/// The checkpoint document of the log at `path` that cannot be read: a warning, and the log is
/// opened from its start.
pub(crate) fn unread_checkpoint(path: &Path, error: &StoreError) -> Option<Vec<u8>> {
    tracing::warn!(path = %path.display(), %error, "the checkpoint cannot be read; the log is opened from its start");
    None
}

/// A checkpoint of the log at `path` that does not fit it: a warning (before the whole log is
/// read instead, so that a failure of that open does not hide it).
pub(crate) fn stale_checkpoint(path: &Path, mismatch: &AnchorMismatch) {
    tracing::warn!(path = %path.display(), reason = %mismatch, "the checkpoint does not fit the log; opening it from its start");
}

/// What [`SessionStore::open_at_checkpoint`] opened.
pub struct OpenedAtCheckpoint {
    /// The writer, at the end of the log.
    pub writer: Box<dyn SessionWriter>,
    /// What the open's scan reported; [`OpenReport::resumed_at`] is where it resumed (`None`:
    /// it read the whole log).
    pub report: OpenReport,
    /// Why the checkpoint the plan resumed at was not used: it does not fit the log (the whole
    /// log was read instead).
    pub stale: Option<AnchorMismatch>,
}

/// What [`SessionStore::open_from`] did.
// Made once per open and moved to the caller; boxing the report would only add an allocation.
#[allow(clippy::large_enum_variant)]
pub enum OpenFrom {
    /// The log was opened for write from the checkpointed point.
    Resumed {
        /// Its writer.
        writer: Box<dyn SessionWriter>,
        /// What the lines after the point showed.
        report: OpenReport,
    },
    /// The anchor or the resume point does not fit the log: nothing was scanned (only the header and
    /// the line the anchor hashes were read) and nothing changed.
    Stale(AnchorMismatch),
    /// This store always opens a log from its start.
    Unsupported,
}

impl fmt::Debug for OpenFrom {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Resumed { report, .. } => f
                .debug_struct("Resumed")
                .field("writer", &"..")
                .field("report", report)
                .finish(),
            Self::Stale(mismatch) => f.debug_tuple("Stale").field(mismatch).finish(),
            Self::Unsupported => f.write_str("Unsupported"),
        }
    }
}

/// The visitor that looks at nothing.
impl LogVisitor for () {
    fn line(&mut self, _: &Scanned<'_>) {}
}

/// Why a store operation failed. Findings in a log (corrupt lines, a torn tail, …) are not errors:
/// they are reported in the [`OpenReport`]. A stale checkpoint is not an error either.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A file system operation failed.
    #[error("cannot {op} {}: {source}", path.display())]
    Io {
        /// What was being done (`"open"`, `"read"`, …).
        op: &'static str,
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: io::Error,
    },
    /// The header record is missing or unreadable: the file cannot be identified as a session log.
    #[error("{}: {source}", path.display())]
    Header {
        /// The file.
        path: PathBuf,
        /// What is wrong with the header.
        #[source]
        source: HeaderError,
    },
    /// Creating a log whose file already exists.
    #[error("session log {} already exists", path.display())]
    Exists {
        /// The file.
        path: PathBuf,
    },
    /// Another writer holds the log's lock.
    #[error("session log {} is already open for write by another process", path.display())]
    Locked {
        /// The file.
        path: PathBuf,
    },
    /// The batch does not start at the log's next `seq`. Nothing was written.
    #[error("append refused: the log's next seq is {expected}, the batch starts at {found}")]
    SeqMismatch {
        /// The log's next `seq`.
        expected: u64,
        /// The first event's `seq`.
        found: u64,
    },
    /// The batch's `seq`s are not contiguous. Nothing was written.
    #[error("append refused: event {index} of the batch has seq {found}, expected {expected}")]
    NotContiguous {
        /// The event's index in the batch.
        index: usize,
        /// The `seq` it should carry.
        expected: u64,
        /// The `seq` it carries.
        found: u64,
    },
    /// An event that is not one readable JSON record line. Nothing was written.
    #[error("append refused: the event with seq {seq} is not a valid record: {reason}")]
    InvalidEvent {
        /// The event's `seq`.
        seq: u64,
        /// What is wrong.
        reason: String,
    },
    /// Writing or syncing a batch failed. The batch is not in the log: it was truncated away,
    /// unless `rollback` holds the truncation's own failure, in which case the writer is poisoned.
    #[error("appending to {} failed: {source}{}", path.display(), RollbackNote(rollback.as_ref()))]
    AppendFailed {
        /// The file.
        path: PathBuf,
        /// The write or sync failure.
        #[source]
        source: io::Error,
        /// The failure of truncating back, if that failed too.
        rollback: Option<io::Error>,
    },
    /// An earlier append could not be rolled back; this writer refuses every append.
    #[error(
        "the writer of {} is poisoned: a failed append could not be rolled back; reopen the log",
        path.display()
    )]
    Poisoned {
        /// The file.
        path: PathBuf,
    },
    /// An event could not be serialised.
    #[error("cannot serialise an event: {0}")]
    Json(#[from] serde_json::Error),
    /// Another writer took the log over (this writer's lease ran out and a new owner opened it):
    /// this writer's ownership is gone, the batch was not written, and every later append is
    /// refused. Stores whose ownership is a lease (a database) fence a writer so; a file's lock
    /// cannot be lost.
    #[error(
        "the writer of {} was fenced: another writer took the log over; nothing was written",
        path.display()
    )]
    Fenced {
        /// The log.
        path: PathBuf,
    },
    /// The path names something that is not a regular file (a device, a FIFO, a directory):
    /// refused before anything is read from it, since it may never end.
    #[error("{} is not a regular file ({kind}); a session log is a regular file", path.display())]
    NotAFile {
        /// The path.
        path: PathBuf,
        /// What it is instead.
        kind: &'static str,
    },
    /// The log was written in a newer format than this writer knows: it can be read (tolerantly),
    /// but appending to it could corrupt what the newer writer expects.
    #[error(
        "session log {} has format version {version}, newer than {supported}; it is read only",
        path.display()
    )]
    NewerFormat {
        /// The file.
        path: PathBuf,
        /// The header's `version`.
        version: i64,
        /// The newest version this writer writes.
        supported: i64,
    },
}

/// Appends the rollback failure to an append error's message, when there is one.
struct RollbackNote<'a>(Option<&'a io::Error>);

impl fmt::Display for RollbackNote<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(e) => write!(
                f,
                "; truncating back also failed ({e}), so the writer is poisoned"
            ),
            None => f.write_str("; the partial batch was truncated away"),
        }
    }
}

impl StoreError {
    /// A stable code for each kind of failure, for messages and exit codes.
    pub fn code(&self) -> &'static str {
        match self {
            Self::Io { .. } => "LOG_IO",
            Self::Header { .. } => "LOG_HEADER",
            Self::Exists { .. } => "LOG_EXISTS",
            Self::Locked { .. } => "LOG_LOCKED",
            Self::SeqMismatch { .. } => "SEQ_MISMATCH",
            Self::NotContiguous { .. } => "SEQ_NOT_CONTIGUOUS",
            Self::InvalidEvent { .. } | Self::Json(_) => "INVALID_EVENT",
            Self::AppendFailed { .. } => "APPEND_FAILED",
            Self::Poisoned { .. } => "WRITER_POISONED",
            Self::Fenced { .. } => "WRITER_FENCED",
            Self::NotAFile { .. } => "LOG_NOT_A_FILE",
            Self::NewerFormat { .. } => "LOG_NEWER_FORMAT",
        }
    }

    /// An I/O failure of `op` on `path`.
    pub fn io(op: &'static str, path: &Path, source: io::Error) -> Self {
        Self::Io {
            op,
            path: path.to_owned(),
            source,
        }
    }

    /// A log that could not be opened (its header, or reading it).
    pub fn open(path: &Path, error: OpenError) -> Self {
        match error {
            OpenError::Header(source) => Self::Header {
                path: path.to_owned(),
                source,
            },
            OpenError::Io(source) => Self::io("read", path, source),
        }
    }
}
