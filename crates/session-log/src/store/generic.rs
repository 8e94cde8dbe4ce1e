//! The one store: every [`LogBackend`] is a [`SessionStore`]. A backend keeps the bytes of its
//! logs (a directory of files, byte buffers, database rows) and the ownership of a log's writer
//! (a file lock, a flag, a lease); what a store does with them, it does here, once: the scan of an
//! open or a read with its [`Tracker`] and findings, the format check, the torn tail handed to the
//! backend to cut, opens at a resume point, anchors, the batch check of an append and the
//! writer's bookkeeping ([`BackendWriter`]).
//!
//! A new backend implements [`LogBackend`] and [`OwnedLog`], runs the store contract suite
//! (`ask-user-testkit`'s `store_contract`), and never parses a record or counts a `seq` itself.

use std::io::{self, BufRead};
use std::path::{Path, PathBuf};

use super::anchor::{self, AnchorMismatch, LogAnchor, RecordSpan};
use super::backend::{
    advance, check_writable, encode_batch, open_report, scan_at_resume_point, scan_log, scan_on,
};
use super::{
    LogVisitor, OpenFrom, OpenReport, OpenedAtCheckpoint, ResumePlan, ResumePoint, SessionStore,
    SessionWriter, StoreError, not_at_checkpoint, stale_checkpoint, unread_checkpoint,
};
use crate::envelope::{LogEvent, NewSession};
use crate::event::SessionEvent;
use crate::header::SessionHeader;
use crate::scan::{ScanPosition, ScanReport, Scanned, TornTail};
use crate::unfinished::{Interrupted, Tracker};

/// Where a store keeps the bytes of its logs, by name. Every `LogBackend` is a [`SessionStore`]
/// (this module implements the contract once, over these few operations).
///
/// The bytes of a log are exactly a JSONL file's: the header line, then one line per record.
pub trait LogBackend: Send + Sync {
    /// The hold of a log's one writer (a lock, a lease): taken by [`acquire`](Self::acquire),
    /// given back when dropped.
    type Owned: OwnedLog;
    /// A reader of a log's bytes from an offset.
    type Reader: BufRead;

    /// Where the log `name` lives, for messages (a path, `memory:<name>`, `pg:<name>`).
    fn location(&self, name: &str) -> PathBuf;

    /// The file that holds the log `name`, for a store of files; `None` otherwise.
    fn file_path(&self, name: &str) -> Option<PathBuf> {
        let _ = name;
        None
    }

    /// Whether a log of this name exists.
    fn exists(&self, name: &str) -> Result<bool, StoreError>;

    /// The names of every log, sorted (byte order). A checkpoint or a sidecar is not a log.
    fn list(&self) -> Result<Vec<String>, StoreError>;

    /// The byte length of the log `name` (what a change watcher compares). The default reads it
    /// with the header ([`head`](LogBackend::head)); a backend that knows it more cheaply says so.
    fn length(&self, name: &str) -> Result<u64, StoreError> {
        self.head(name).map(|(_, length)| length)
    }

    /// Creates the log `name` holding only `header_line` (line end included), durable before it
    /// returns; [`StoreError::Exists`] if there is one.
    fn create(&self, name: &str, header_line: &[u8]) -> Result<(), StoreError>;

    /// Takes the ownership of the log `name` for write: [`StoreError::Locked`] while another
    /// writer holds it.
    fn acquire(&self, name: &str) -> Result<Self::Owned, StoreError>;

    /// The log's bytes from `offset` (a line boundary) to its end as it is now, read without
    /// ownership and changing nothing.
    fn reader(&self, name: &str, offset: u64) -> Result<Self::Reader, StoreError>;

    /// The log's header line (line end included) and its length in bytes.
    fn head(&self, name: &str) -> Result<(Vec<u8>, u64), StoreError>;

    /// The line (line end included) that ends exactly at `end` and starts at or after `start`
    /// (the search goes back no further), or `None` when no line ends there.
    fn line_ending_at(
        &self,
        name: &str,
        start: u64,
        end: u64,
    ) -> Result<Option<Vec<u8>>, StoreError>;

    /// The number of physical lines (line ends) before `byte_offset`.
    fn line_of(&self, name: &str, byte_offset: u64) -> Result<u64, StoreError>;

    /// Whether a writer holds the log now. Never modifies it.
    fn is_writing(&self, name: &str) -> Result<bool, StoreError>;

    /// The checkpoint document saved for the log, if any.
    fn load_checkpoint(&self, name: &str) -> Result<Option<Vec<u8>>, StoreError>;

    /// Replaces the log's checkpoint document atomically and returns where it lives.
    fn save_checkpoint(&self, name: &str, document: &[u8]) -> Result<PathBuf, StoreError>;

    /// Whether an open for write may start at a checkpointed point
    /// ([`SessionStore::open_from`]); a backend that must see every line when it opens a log (a
    /// database folding its own index of the log) says no, and is always opened whole.
    fn resumes(&self) -> bool {
        true
    }
}

/// A writer's hold on one log: what the backend does under ownership.
pub trait OwnedLog {
    /// What the backend folds from the lines an open for write scans (`()`: nothing).
    type Fold: LogVisitor;

    /// A fresh fold for the open's scan.
    fn fold(&self) -> Self::Fold;

    /// The open's scan is done: `fold` has seen every line it read. Called after the torn tail
    /// was cut, before the writer is handed out; an error fails the open (ownership is given
    /// back).
    fn opened(&mut self, header: &SessionHeader, fold: Self::Fold) -> Result<(), StoreError> {
        let _ = (header, fold);
        Ok(())
    }

    /// Saves the torn tail `torn` somewhere (a sidecar) and cuts the log to `torn.byte_offset`;
    /// returns where the tail was saved.
    fn cut_torn_tail(&mut self, torn: TornTail) -> Result<PathBuf, StoreError>;

    /// Appends `batch` (one line per event of `events`, which read back as `written`) at `at`,
    /// the log's end as the writer knows it: durable before `Ok`. On an error nothing of the
    /// batch stays in the log, or the hold refuses every later append
    /// ([`refusal`](Self::refusal)).
    fn append(
        &mut self,
        at: ScanPosition,
        batch: &str,
        events: &[LogEvent],
        written: &[SessionEvent],
    ) -> Result<(), StoreError>;

    /// Why every append is refused now (a failed rollback poisoned the hold, another writer
    /// took the log over), or `None`.
    fn refusal(&self) -> Option<StoreError>;
}

/// The one writer of one log of a [`LogBackend`]: the backend's hold, and where the log ends.
pub struct BackendWriter<O> {
    owned: O,
    location: PathBuf,
    header: SessionHeader,
    position: ScanPosition,
    tracker: Tracker,
}

impl<O> std::fmt::Debug for BackendWriter<O> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BackendWriter")
            .field("location", &self.location)
            .field("position", &self.position)
            .finish_non_exhaustive()
    }
}

impl<O: OwnedLog> BackendWriter<O> {
    /// Appends `events` as one durable batch (SPEC §9.6): the first `seq` must be
    /// [`next_seq`](Self::next_seq) and the batch contiguous, each event one line that reads back
    /// as itself. Nothing of a refused or failed batch stays in the log. An empty batch writes
    /// nothing. Returns the events as the log reader decodes them.
    pub fn append(&mut self, events: &[LogEvent]) -> Result<Vec<SessionEvent>, StoreError> {
        if let Some(refusal) = self.owned.refusal() {
            return Err(refusal);
        }
        let Some((batch, written)) = encode_batch(self.position.expected_seq, events)? else {
            return Ok(Vec::new());
        };
        self.owned.append(self.position, &batch, events, &written)?;
        advance(
            &mut self.position,
            &mut self.tracker,
            &written,
            batch.len() as u64,
        );
        Ok(written)
    }

    /// The `seq` the next appended event must carry: one past the last record read or written
    /// (§7.3), which after skipped lines or gaps is not the number of events.
    pub fn next_seq(&self) -> u64 {
        self.position.expected_seq
    }

    /// Where the log ends: its length in bytes, its physical lines, the next `seq`, and the
    /// events it holds (a packed row counts one per member).
    pub fn position(&self) -> ScanPosition {
        self.position
    }

    /// Where the log lives.
    pub fn path(&self) -> &Path {
        &self.location
    }

    /// The header record.
    pub fn header(&self) -> &SessionHeader {
        &self.header
    }

    /// What the log leaves unfinished now, counting what this writer appended.
    pub fn interrupted(&self) -> Interrupted {
        self.tracker.interrupted()
    }

    /// Whether the writer refuses every append (a failed rollback poisoned it, or the log was
    /// taken over).
    pub fn is_poisoned(&self) -> bool {
        self.owned.refusal().is_some()
    }

    /// The same writer over another hold (the file wrapped, say): position and state carry over.
    pub(crate) fn map_owned<P>(self, wrap: impl FnOnce(O) -> P) -> BackendWriter<P> {
        BackendWriter {
            owned: wrap(self.owned),
            location: self.location,
            header: self.header,
            position: self.position,
            tracker: self.tracker,
        }
    }
}

impl<O: OwnedLog + Send> SessionWriter for BackendWriter<O> {
    fn append(&mut self, events: &[LogEvent]) -> Result<Vec<SessionEvent>, StoreError> {
        BackendWriter::append(self, events)
    }

    fn next_seq(&self) -> u64 {
        BackendWriter::next_seq(self)
    }

    fn position(&self) -> ScanPosition {
        BackendWriter::position(self)
    }

    fn header(&self) -> &SessionHeader {
        BackendWriter::header(self)
    }

    fn location(&self) -> &Path {
        BackendWriter::path(self)
    }

    fn interrupted(&self) -> Interrupted {
        BackendWriter::interrupted(self)
    }

    fn is_poisoned(&self) -> bool {
        BackendWriter::is_poisoned(self)
    }
}

/// Shows every line of an open's scan to the caller's visitor and to the backend's fold.
struct Tee<'a, F> {
    visitor: &'a mut dyn LogVisitor,
    fold: &'a mut F,
}

impl<F: LogVisitor> LogVisitor for Tee<'_, F> {
    fn header(&mut self, header: &SessionHeader) {
        self.fold.header(header);
        self.visitor.header(header);
    }

    fn resumed(&mut self, header: &SessionHeader, at: ScanPosition) {
        self.fold.resumed(header, at);
        self.visitor.resumed(header, at);
    }

    fn line(&mut self, scanned: &Scanned<'_>) {
        self.fold.line(scanned);
        self.visitor.line(scanned);
    }
}

/// Creates the log `name` with `session`'s header and opens its writer (the header is its only
/// line).
pub fn create<B: LogBackend>(
    backend: &B,
    name: &str,
    session: &NewSession,
) -> Result<BackendWriter<B::Owned>, StoreError> {
    backend.create(name, session.header_line().as_bytes())?;
    Ok(open(backend, name, &mut ())?.0)
}

/// Opens the log `name` for write (SPEC §9.6): takes its ownership, scans it once (the caller's
/// `visitor` and the backend's fold see every line), refuses a newer format before anything is
/// changed, hands a torn tail to the backend to save and cut, and reports.
pub fn open<B: LogBackend>(
    backend: &B,
    name: &str,
    visitor: &mut dyn LogVisitor,
) -> Result<(BackendWriter<B::Owned>, OpenReport), StoreError> {
    // From here on this open owns the log; a failure (or a visitor that panics) drops the hold,
    // which gives the ownership back.
    let owned = backend.acquire(name)?;
    open_whole(backend, owned, name, visitor)
}

/// [`open`] under the ownership `owned` has taken.
fn open_whole<B: LogBackend>(
    backend: &B,
    owned: B::Owned,
    name: &str,
    visitor: &mut dyn LogVisitor,
) -> Result<Opened<B::Owned>, StoreError> {
    let location = backend.location(name);
    let mut fold = owned.fold();
    let reader = backend.reader(name, 0)?;
    let (header, scan, tracker) = scan_log(
        &location,
        reader,
        &mut Tee {
            visitor,
            fold: &mut fold,
        },
    )?;
    opened(owned, fold, location, header, scan, tracker, None)
}

/// A writer a generic open made, with what its scan reported.
type Opened<O> = (BackendWriter<O>, OpenReport);

/// An open at a resume point under a hold: the writer, or the mismatch with the hold given back.
type HeldOpen<O> = Result<Opened<O>, (AnchorMismatch, O)>;

/// Opens the log `name` for write at a checkpointed point ([`SessionStore::open_from`]):
/// `Ok(Err(_))` when the anchor or the resume point does not fit (ownership is given back and
/// nothing changed), `Ok(Ok(None))` when the backend does not resume.
#[allow(clippy::type_complexity)]
pub fn open_from<B: LogBackend>(
    backend: &B,
    name: &str,
    anchor: &LogAnchor,
    resume: &ResumePoint,
    visitor: &mut dyn LogVisitor,
) -> Result<Result<Option<Opened<B::Owned>>, AnchorMismatch>, StoreError> {
    if !backend.resumes() {
        return Ok(Ok(None));
    }
    let owned = backend.acquire(name)?;
    Ok(open_held(backend, owned, name, anchor, resume, visitor)?
        .map(Some)
        .map_err(|(mismatch, _given_back)| mismatch))
}

/// Opens the log `name` for write at its checkpoint when it can
/// ([`SessionStore::open_at_checkpoint`]): takes the ownership first and reads the checkpoint
/// document under it (a backend whose hold reads the document with it serves it from there),
/// then opens as [`open_from`] does; and when it does not resume there, opens the whole log as
/// [`open`] does, under the same ownership. With the mismatch that made a checkpoint stale.
#[allow(clippy::type_complexity)]
pub fn open_at_checkpoint<B: LogBackend>(
    backend: &B,
    name: &str,
    plan: &mut dyn ResumePlan,
) -> Result<(Opened<B::Owned>, Option<AnchorMismatch>), StoreError> {
    let owned = backend.acquire(name)?;
    let path = backend.location(name);
    let mut stale = None;
    let document = if backend.resumes() {
        backend
            .load_checkpoint(name)
            .unwrap_or_else(|error| unread_checkpoint(&path, &error))
    } else {
        None
    };
    let owned = match document.as_deref().and_then(|d| plan.resume_at(d)) {
        Some((anchor, resume, visitor)) => {
            match open_held(backend, owned, name, &anchor, &resume, visitor) {
                Ok(Ok(opened)) => return Ok((opened, None)),
                Ok(Err((mismatch, owned))) => {
                    stale_checkpoint(&path, &mismatch);
                    stale = Some(mismatch);
                    owned
                }
                // The hold is gone with the failed open: the open from the start takes it again.
                Err(error) => {
                    not_at_checkpoint(&path, error)?;
                    backend.acquire(name)?
                }
            }
        }
        None => owned,
    };
    Ok((open_whole(backend, owned, name, plan.whole_log())?, stale))
}

/// [`open_from`] under the ownership `owned` has taken, which a mismatch gives back.
fn open_held<B: LogBackend>(
    backend: &B,
    owned: B::Owned,
    name: &str,
    anchor: &LogAnchor,
    resume: &ResumePoint,
    visitor: &mut dyn LogVisitor,
) -> Result<HeldOpen<B::Owned>, StoreError> {
    let location = backend.location(name);
    // Checked under the writer's ownership: nobody changes the log between the check and the
    // scan.
    let resolved = resolve_anchor(backend, name, anchor)?;
    let mut fold = owned.fold();
    let tail = |at: ScanPosition| backend.reader(name, at.byte_offset);
    let scanned = scan_at_resume_point(
        &location,
        resolved,
        resume,
        tail,
        &mut Tee {
            visitor,
            fold: &mut fold,
        },
    )?;
    match scanned {
        Ok((header, scan, tracker, at)) => {
            opened(owned, fold, location, header, scan, tracker, Some(at)).map(Ok)
        }
        Err(mismatch) => Ok(Err((mismatch, owned))),
    }
}

/// The writer of a log its open has just scanned (from the start, or resumed at `resumed_at`).
fn opened<O: OwnedLog>(
    mut owned: O,
    fold: O::Fold,
    location: PathBuf,
    header: SessionHeader,
    scan: ScanReport,
    tracker: Tracker,
    resumed_at: Option<ScanPosition>,
) -> Result<(BackendWriter<O>, OpenReport), StoreError> {
    // Before anything is changed (a torn tail cut): a newer writer's log is left as it is.
    check_writable(&location, &header)?;
    let torn_tail_saved_to = match scan.torn_tail {
        Some(torn) => Some(owned.cut_torn_tail(torn)?),
        None => None,
    };
    owned.opened(&header, fold)?;
    let report = open_report(
        &location,
        header.clone(),
        scan,
        &tracker,
        torn_tail_saved_to,
        resumed_at,
    );
    let writer = BackendWriter {
        owned,
        location,
        header,
        position: report.scan.end,
        tracker,
    };
    Ok((writer, report))
}

/// Reads the log `name` without ownership, changing nothing.
pub fn read<B: LogBackend>(
    backend: &B,
    name: &str,
    visitor: &mut dyn LogVisitor,
) -> Result<OpenReport, StoreError> {
    let location = backend.location(name);
    let (header, scan, tracker) = scan_log(&location, backend.reader(name, 0)?, visitor)?;
    Ok(open_report(&location, header, scan, &tracker, None, None))
}

/// Checks `anchor` against the log `name` ([`SessionStore::resolve_anchor`]).
#[allow(clippy::type_complexity)]
pub fn resolve_anchor<B: LogBackend>(
    backend: &B,
    name: &str,
    anchor: &LogAnchor,
) -> Result<Result<(SessionHeader, ScanPosition), AnchorMismatch>, StoreError> {
    let (header, length) = backend.head(name)?;
    anchor::resolve_anchor(&header, length, anchor, |start, end| {
        backend
            .line_ending_at(name, start, end)
            .map_err(io::Error::other)
    })
    .map_err(|e| StoreError::io("read", &backend.location(name), e))
}

/// The anchor of the log `name` at `end` ([`SessionStore::anchor_at`]).
pub fn anchor_at<B: LogBackend>(
    backend: &B,
    name: &str,
    end: ScanPosition,
    last: Option<RecordSpan>,
) -> Result<Option<LogAnchor>, StoreError> {
    let location = backend.location(name);
    let (header, _) = backend.head(name)?;
    let last_line = match last {
        None => None,
        Some(span) => {
            let line = backend
                .line_ending_at(name, span.byte_offset, span.byte_offset + span.len as u64)?
                .filter(|line| line.len() == span.len)
                .ok_or_else(|| {
                    StoreError::io(
                        "read",
                        &location,
                        io::Error::new(
                            io::ErrorKind::InvalidData,
                            "no line of that span in the log",
                        ),
                    )
                })?;
            Some(line)
        }
    };
    anchor::anchor_for(&header, end, last_line.as_deref())
        .map_err(|e| StoreError::io("read", &location, e))
}

impl<B: LogBackend> SessionStore for B
where
    B::Owned: Send + 'static,
{
    fn location(&self, name: &str) -> PathBuf {
        LogBackend::location(self, name)
    }

    fn file_path(&self, name: &str) -> Option<PathBuf> {
        LogBackend::file_path(self, name)
    }

    fn exists(&self, name: &str) -> Result<bool, StoreError> {
        LogBackend::exists(self, name)
    }

    fn list(&self) -> Result<Vec<String>, StoreError> {
        LogBackend::list(self)
    }

    fn length(&self, name: &str) -> Result<u64, StoreError> {
        LogBackend::length(self, name)
    }

    fn create(
        &self,
        name: &str,
        session: &NewSession,
    ) -> Result<Box<dyn SessionWriter>, StoreError> {
        Ok(Box::new(create(self, name, session)?))
    }

    fn open(
        &self,
        name: &str,
        visitor: &mut dyn LogVisitor,
    ) -> Result<(Box<dyn SessionWriter>, OpenReport), StoreError> {
        let (writer, report) = open(self, name, visitor)?;
        Ok((Box::new(writer), report))
    }

    fn open_from(
        &self,
        name: &str,
        anchor: &LogAnchor,
        resume: &ResumePoint,
        visitor: &mut dyn LogVisitor,
    ) -> Result<OpenFrom, StoreError> {
        Ok(match open_from(self, name, anchor, resume, visitor)? {
            Ok(Some((writer, report))) => OpenFrom::Resumed {
                writer: Box::new(writer),
                report,
            },
            Ok(None) => OpenFrom::Unsupported,
            Err(mismatch) => OpenFrom::Stale(mismatch),
        })
    }

    fn open_at_checkpoint(
        &self,
        name: &str,
        plan: &mut dyn ResumePlan,
    ) -> Result<OpenedAtCheckpoint, StoreError> {
        let ((writer, report), stale) = open_at_checkpoint(self, name, plan)?;
        Ok(OpenedAtCheckpoint {
            writer: Box::new(writer),
            report,
            stale,
        })
    }

    fn read(&self, name: &str, visitor: &mut dyn LogVisitor) -> Result<OpenReport, StoreError> {
        read(self, name, visitor)
    }

    fn scan_from(
        &self,
        name: &str,
        at: ScanPosition,
        visitor: &mut dyn LogVisitor,
    ) -> Result<ScanReport, StoreError> {
        let reader = self.reader(name, at.byte_offset)?;
        scan_on(&LogBackend::location(self, name), reader, at, visitor)
    }

    fn line_of(&self, name: &str, byte_offset: u64) -> Result<u64, StoreError> {
        LogBackend::line_of(self, name, byte_offset)
    }

    fn is_writing(&self, name: &str) -> Result<bool, StoreError> {
        LogBackend::is_writing(self, name)
    }

    fn resolve_anchor(
        &self,
        name: &str,
        anchor: &LogAnchor,
    ) -> Result<Result<(SessionHeader, ScanPosition), AnchorMismatch>, StoreError> {
        resolve_anchor(self, name, anchor)
    }

    fn anchor_at(
        &self,
        name: &str,
        end: ScanPosition,
        last: Option<RecordSpan>,
    ) -> Result<Option<LogAnchor>, StoreError> {
        anchor_at(self, name, end, last)
    }

    fn load_checkpoint(&self, name: &str) -> Result<Option<Vec<u8>>, StoreError> {
        LogBackend::load_checkpoint(self, name)
    }

    fn save_checkpoint(&self, name: &str, document: &[u8]) -> Result<PathBuf, StoreError> {
        LogBackend::save_checkpoint(self, name, document)
    }
}
