//! The durable session store of the reference host (SPEC §9.6): one JSONL file per session
//! (format §7), and a checkpoint cache of the `userQuestions` projection next to it.
//!
//! * [`LogWriter::create`] writes a new log's header atomically (temporary file, `fsync`,
//!   no-replace link, directory `fsync`). [`LogWriter::open`] takes the exclusive lock, scans the
//!   log, saves a torn tail to a sidecar and truncates it; [`read_log`] scans without a lock and
//!   without touching anything. Both return an [`OpenReport`] and log every finding as a `tracing`
//!   warning. [`LogWriter::append`] checks `seq`s and makes each batch durable before it returns.
//! * [`repair_interrupted`] is resume repair (§7.6): a `TOOL_OUTCOME_UNKNOWN` result for every call
//!   without one, then `step/end` and `turn/end` (`interrupted`) for what was left open.
//!   [`LogWriter::open_repaired`] opens and repairs in one call.
//! * [`load_projection`] gives the projection state of a log file: from a valid checkpoint plus the
//!   lines after it, or by a full refold when there is none or it is stale; it can write a fresh
//!   checkpoint ([`Checkpoint`], written atomically).
//!
//! Reading is the projection crate's [`LogScanner`](user_questions_projection::LogScanner): the
//! store adds files, `fsync`, locks, sidecars and checkpoints, and interprets only the envelope.
//! Everything here is synchronous `std::fs`.

mod checkpoint;
mod event;
mod file;
mod log;
mod repair;

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

use user_questions_projection::{HeaderError, OpenError};

pub use checkpoint::{
    CHECKPOINT_SUFFIX, Checkpoint, CheckpointPolicy, CheckpointWrite, ProjectionLoad,
    ProjectionSource, RefoldReason, StagedCheckpoint, StaleReason, checkpoint_path,
    load_projection, sha256_hex,
};
pub use event::{LogEvent, NewSession, SESSION_FORMAT_VERSION, now_ms};
pub use file::LogFile;
pub use log::{LogVisitor, LogWriter, OpenReport, read_log, read_log_with, writer_is_live};
pub use repair::{
    Interrupted, OpenCall, RepairReport, RepairedCall, StepRef, TOOL_OUTCOME_UNKNOWN_ERROR_NAME,
    TOOL_OUTCOME_UNKNOWN_TEXT, UnidentifiedCall, repair_interrupted,
};

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
        }
    }

    pub(crate) fn io(op: &'static str, path: &Path, source: io::Error) -> Self {
        Self::Io {
            op,
            path: path.to_owned(),
            source,
        }
    }

    pub(crate) fn open(path: &Path, error: OpenError) -> Self {
        match error {
            OpenError::Header(source) => Self::Header {
                path: path.to_owned(),
                source,
            },
            OpenError::Io(source) => Self::io("read", path, source),
        }
    }
}
