//! The session log file (SPEC §7, §9.6): creating it with its header, opening it read-only or for
//! write (with the open report), and appending durably.
//!
//! Reading goes through the projection crate's [`LogScanner`], so the store, the projection and
//! every other reader agree on what a record, a `seq` and a finding are.

use std::fs::{self, File, OpenOptions, TryLockError};
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use user_questions_projection::{
    LogScanner, ScanPosition, ScanReport, Scanned, SessionEvent, SessionHeader, TornTail,
};

use super::StoreError;
use super::event::{LogEvent, NewSession};
use super::file::{self, LogFile};
use super::repair::{Interrupted, RepairReport, Tracker, repair_interrupted};

/// The buffer size for scanning logs: large enough that reading costs few system calls.
pub(crate) const READ_BUFFER: usize = 1 << 16;

/// What opening a log found (SPEC §9.6). Every finding is also a `tracing` warning.
#[derive(Clone, Debug)]
pub struct OpenReport {
    /// The header record.
    pub header: SessionHeader,
    /// Corrupt lines (skipped, never deleted), lossy lines, seq gaps, the torn tail, and where
    /// the last complete line ended (`end`: byte offset, physical lines, expected next `seq`,
    /// decoded events).
    pub scan: ScanReport,
    /// Where an open for write saved the torn tail before truncating it
    /// (`<log name>.torn-<byte offset>`); `None` when there was none or the open was read-only.
    pub torn_tail_saved_to: Option<PathBuf>,
    /// What the log leaves unfinished (calls without results, open steps and turns). For a log no
    /// process is writing, that is what resume repair would append for.
    pub interrupted: Interrupted,
}

impl OpenReport {
    /// Whether the scan found nothing to report (a log left unfinished is not a finding).
    pub fn is_clean(&self) -> bool {
        self.scan.is_clean()
    }
}

/// Sees every complete line while a log is opened, in one pass with the open's own scan: a host
/// can fold the projection (e.g. with `Replay`) or collect events without reading the file twice.
pub trait LogVisitor {
    /// The header record, before any line.
    fn header(&mut self, header: &SessionHeader) {
        let _ = header;
    }

    /// One complete line after the header: a record, or a corrupt line that is skipped.
    fn line(&mut self, scanned: &Scanned<'_>);
}

/// How often, and how long apart, opening for write retries a lock held by someone else before it
/// reports [`StoreError::Locked`].
const LOCK_ATTEMPTS: u32 = 5;
const LOCK_RETRY: std::time::Duration = std::time::Duration::from_millis(20);

/// Whether a writer holds the log now (its exclusive advisory lock), found by trying a shared
/// lock for an instant (a writer opening at that moment retries). Never modifies the log. A log nobody writes to cannot be in the middle of
/// a tool call: a call without a result there was interrupted.
pub fn writer_is_live(path: &Path) -> Result<bool, StoreError> {
    let io_error = |op, source| StoreError::Io {
        op,
        path: path.to_path_buf(),
        source,
    };
    let file = File::open(path).map_err(|e| io_error("open", e))?;
    match file.try_lock_shared() {
        Ok(()) => {
            file.unlock().map_err(|e| io_error("unlock", e))?;
            Ok(false)
        }
        Err(TryLockError::WouldBlock) => Ok(true),
        Err(TryLockError::Error(e)) => Err(io_error("lock", e)),
    }
}

/// The visitor that looks at nothing.
impl LogVisitor for () {
    fn line(&mut self, _: &Scanned<'_>) {}
}

/// Opens a log read-only (SPEC §9.6): no lock, nothing modified; a torn tail is reported and left
/// in place.
pub fn read_log(path: &Path) -> Result<OpenReport, StoreError> {
    read_log_with(path, &mut ())
}

/// [`read_log`], showing every line to `visitor` during the scan.
pub fn read_log_with(path: &Path, visitor: &mut dyn LogVisitor) -> Result<OpenReport, StoreError> {
    let file = File::open(path).map_err(|e| StoreError::io("open", path, e))?;
    let (header, scan, tracker) = scan(path, BufReader::with_capacity(READ_BUFFER, file), visitor)?;
    let report = OpenReport {
        header,
        scan,
        torn_tail_saved_to: None,
        interrupted: tracker.interrupted(),
    };
    warn_findings(path, &report);
    Ok(report)
}

/// The single writer of one log (SPEC §9.6). It holds an exclusive advisory lock on the log for as
/// long as it lives; appends are durable (`sync_data`) before they are acknowledged.
///
/// `F` is the file it writes through: [`File`] unless [`LogWriter::map_file`] wrapped it.
#[derive(Debug)]
pub struct LogWriter<F: LogFile = File> {
    file: F,
    path: PathBuf,
    header: SessionHeader,
    position: ScanPosition,
    tracker: Tracker,
    poisoned: bool,
}

impl LogWriter<File> {
    /// Creates a new log whose only line is `session`'s header record (SPEC §9.6): the header is
    /// written to a temporary file next to `path` and `fsync`ed, linked to `path` without
    /// replacing anything ([`StoreError::Exists`] if a log is already there), the temporary name
    /// removed and the directory `fsync`ed. Temporary files left by an interrupted create are
    /// removed first. Returns the writer, holding the lock.
    pub fn create(path: &Path, session: &NewSession) -> Result<Self, StoreError> {
        file::remove_leftover_temps(path)
            .map_err(|e| StoreError::io("remove leftover temporary files for", path, e))?;
        match file::publish_new(path, session.header_line().as_bytes()) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                return Err(StoreError::Exists {
                    path: path.to_owned(),
                });
            }
            Err(e) => return Err(StoreError::io("create", path, e)),
        }
        let (writer, _report) = Self::open(path)?;
        Ok(writer)
    }

    /// Opens a log for write (SPEC §9.6): takes the exclusive lock ([`StoreError::Locked`] when
    /// another writer holds it), scans the log, and if it ends in a torn tail, copies the tail to
    /// `<log name>.torn-<byte offset>` (`fsync`ed, directory included), then truncates the log to
    /// the last record boundary and `fsync`s it. Corrupt middle lines stay where they are; appends
    /// go after them.
    ///
    /// It does not repair: call [`repair_interrupted`] next (or use [`LogWriter::open_repaired`]).
    pub fn open(path: &Path) -> Result<(Self, OpenReport), StoreError> {
        Self::open_with(path, &mut ())
    }

    /// [`LogWriter::open`], showing every line to `visitor` during the scan.
    pub fn open_with(
        path: &Path,
        visitor: &mut dyn LogVisitor,
    ) -> Result<(Self, OpenReport), StoreError> {
        let file = OpenOptions::new()
            .read(true)
            .append(true)
            .open(path)
            .map_err(|e| StoreError::io("open for write", path, e))?;
        // A reader probing for a live writer (`writer_is_live`) holds a shared lock for an
        // instant; a few short retries tell that apart from a real second writer.
        let mut attempts = 0;
        loop {
            match file.try_lock() {
                Ok(()) => break,
                Err(TryLockError::WouldBlock) if attempts < LOCK_ATTEMPTS => {
                    attempts += 1;
                    std::thread::sleep(LOCK_RETRY);
                }
                Err(TryLockError::WouldBlock) => {
                    return Err(StoreError::Locked {
                        path: path.to_owned(),
                    });
                }
                Err(TryLockError::Error(e)) => return Err(StoreError::io("lock", path, e)),
            }
        }
        let (header, scan, tracker) =
            scan(path, BufReader::with_capacity(READ_BUFFER, &file), visitor)?;
        let torn_tail_saved_to = match scan.torn_tail {
            Some(torn) => Some(cut_torn_tail(path, &file, torn)?),
            None => None,
        };
        let report = OpenReport {
            header: header.clone(),
            scan,
            torn_tail_saved_to,
            interrupted: tracker.interrupted(),
        };
        warn_findings(path, &report);
        let writer = Self {
            file,
            path: path.to_owned(),
            header,
            position: report.scan.end,
            tracker,
            poisoned: false,
        };
        Ok((writer, report))
    }

    /// Opens a log for write and runs resume repair (SPEC §7.6) before returning: what a host does
    /// when it resumes a session.
    pub fn open_repaired(path: &Path) -> Result<(Self, OpenReport, RepairReport), StoreError> {
        let (mut writer, report) = Self::open(path)?;
        let repair = repair_interrupted(&mut writer)?;
        Ok((writer, report, repair))
    }
}

impl<F: LogFile> LogWriter<F> {
    /// Appends `events` as one durable batch (SPEC §9.6). The first `seq` must be
    /// [`LogWriter::next_seq`] and the batch contiguous; each event must be one JSON line that
    /// reads back as itself. All lines are written, then `sync_data`; only then is the batch
    /// acknowledged. If writing or syncing fails, the file is truncated back to its length before
    /// the batch (and synced) and the error returned; if that also fails, the writer is poisoned
    /// and refuses every later append, so that no `seq` can ever be written twice. An empty batch
    /// writes nothing.
    ///
    /// Returns the appended events as the log reader decodes them, so a host can feed its live
    /// projection exactly what a replay of the file would see.
    pub fn append(&mut self, events: &[LogEvent]) -> Result<Vec<SessionEvent>, StoreError> {
        if self.poisoned {
            return Err(StoreError::Poisoned {
                path: self.path.clone(),
            });
        }
        let Some(first) = events.first() else {
            return Ok(Vec::new());
        };
        if first.seq != self.position.expected_seq {
            return Err(StoreError::SeqMismatch {
                expected: self.position.expected_seq,
                found: first.seq,
            });
        }
        let mut batch = String::new();
        let mut written = Vec::with_capacity(events.len());
        for (index, event) in events.iter().enumerate() {
            let expected = first.seq.checked_add(index as u64);
            if expected != Some(event.seq) {
                return Err(StoreError::NotContiguous {
                    index,
                    expected: expected.unwrap_or(u64::MAX),
                    found: event.seq,
                });
            }
            let (line, decoded) = event.to_line().map_err(|reason| StoreError::InvalidEvent {
                seq: event.seq,
                reason,
            })?;
            written.push((batch.len()..batch.len() + line.len(), decoded));
            batch.push_str(&line);
        }
        let before = self.position.byte_offset;
        if let Err(source) = self
            .file
            .write_all(batch.as_bytes())
            .and_then(|()| self.file.sync_data())
        {
            let rollback = self
                .file
                .set_len(before)
                .and_then(|()| self.file.sync_data());
            let poisoned = rollback.is_err();
            self.poisoned = poisoned;
            tracing::error!(
                path = %self.path.display(),
                error = %source,
                poisoned,
                "appending to the session log failed"
            );
            return Err(StoreError::AppendFailed {
                path: self.path.clone(),
                source,
                rollback: rollback.err(),
            });
        }
        for (range, event) in &written {
            self.position.line += 1;
            self.tracker.observe(
                self.position.line,
                event,
                &batch.as_bytes()[range.start..range.end],
            );
        }
        self.position.byte_offset = before + batch.len() as u64;
        self.position.expected_seq = first.seq + events.len() as u64;
        self.position.events += events.len() as u64;
        Ok(written.into_iter().map(|(_, event)| event).collect())
    }

    /// The `seq` the next appended event must carry: one past the last record read or written
    /// (§7.3), which after skipped lines or gaps is not the number of events.
    pub fn next_seq(&self) -> u64 {
        self.position.expected_seq
    }

    /// Where the log ends: its length in bytes, its physical lines, the next `seq`, and the events
    /// it holds (a packed row counts one per member).
    pub fn position(&self) -> ScanPosition {
        self.position
    }

    /// The log's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The header record.
    pub fn header(&self) -> &SessionHeader {
        &self.header
    }

    /// What the log leaves unfinished now (calls without results, open steps and turns),
    /// counting what this writer appended.
    pub fn interrupted(&self) -> Interrupted {
        self.tracker.interrupted()
    }

    /// Whether a failed rollback poisoned the writer.
    pub fn is_poisoned(&self) -> bool {
        self.poisoned
    }

    /// Wraps the file the writer writes through (to observe writes, or to inject faults); the
    /// lock, position and state carry over.
    pub fn map_file<G: LogFile>(self, wrap: impl FnOnce(F) -> G) -> LogWriter<G> {
        LogWriter {
            file: wrap(self.file),
            path: self.path,
            header: self.header,
            position: self.position,
            tracker: self.tracker,
            poisoned: self.poisoned,
        }
    }
}

/// Scans a whole log from its start.
fn scan<R: BufRead>(
    path: &Path,
    reader: R,
    visitor: &mut dyn LogVisitor,
) -> Result<(SessionHeader, ScanReport, Tracker), StoreError> {
    let (header, mut scanner) = LogScanner::open(reader).map_err(|e| StoreError::open(path, e))?;
    visitor.header(&header);
    let mut tracker = Tracker::default();
    while let Some(scanned) = scanner
        .next_line()
        .map_err(|e| StoreError::io("read", path, e))?
    {
        if let Scanned::Record(record) = &scanned
            && let Some(event) = record.record.event()
        {
            tracker.observe(record.line, event, record.raw);
        }
        visitor.line(&scanned);
    }
    Ok((header, scanner.into_report(), tracker))
}

/// Saves the torn tail to its sidecar, then truncates the log to the last record boundary. The
/// sidecar is durable (file and directory entry) before the log loses the bytes.
fn cut_torn_tail(path: &Path, mut file: &File, torn: TornTail) -> Result<PathBuf, StoreError> {
    let mut bytes = Vec::new();
    file.seek(SeekFrom::Start(torn.byte_offset))
        .and_then(|_| file.take(torn.len).read_to_end(&mut bytes))
        .map_err(|e| StoreError::io("read the torn tail of", path, e))?;
    if bytes.len() as u64 != torn.len {
        return Err(StoreError::io(
            "read the torn tail of",
            path,
            io::Error::new(io::ErrorKind::UnexpectedEof, "the log shrank while open"),
        ));
    }
    let sidecar = save_sidecar(path, torn.byte_offset, &bytes)?;
    file.set_len(torn.byte_offset)
        .and_then(|()| file.sync_all())
        .map_err(|e| StoreError::io("truncate the torn tail of", path, e))?;
    Ok(sidecar)
}

/// Writes `bytes` to `<log name>.torn-<offset>`, or to `<log name>.torn-<offset>.<n>` when that
/// name holds other bytes (an earlier torn tail at the same offset). A sidecar that already holds
/// exactly these bytes (an open interrupted between saving and truncating) is reused.
fn save_sidecar(path: &Path, offset: u64, bytes: &[u8]) -> Result<PathBuf, StoreError> {
    let name = file::file_name(path).map_err(|e| StoreError::io("name", path, e))?;
    for n in 0..=u32::MAX {
        let mut sidecar_name = name.to_os_string();
        sidecar_name.push(format!(".torn-{offset}"));
        if n > 0 {
            sidecar_name.push(format!(".{n}"));
        }
        let sidecar = file::parent_dir(path).join(sidecar_name);
        file::remove_leftover_temps(&sidecar)
            .map_err(|e| StoreError::io("remove leftover temporary files for", &sidecar, e))?;
        match file::publish_new(&sidecar, bytes) {
            Ok(()) => return Ok(sidecar),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                let existing = fs::read(&sidecar)
                    .map_err(|e| StoreError::io("read the torn-tail sidecar", &sidecar, e))?;
                if existing == bytes {
                    return Ok(sidecar);
                }
            }
            Err(e) => return Err(StoreError::io("save the torn tail to", &sidecar, e)),
        }
    }
    Err(StoreError::io(
        "save the torn tail of",
        path,
        io::Error::new(io::ErrorKind::AlreadyExists, "every sidecar name is taken"),
    ))
}

/// Turns every finding of an open into a `tracing` warning.
fn warn_findings(path: &Path, report: &OpenReport) {
    let path = path.display();
    if report.header.version.is_none() {
        tracing::warn!(%path, "the session header has no version; read as 0");
    }
    for corrupt in &report.scan.corrupt_lines {
        tracing::warn!(
            %path,
            line = corrupt.line,
            byte_offset = corrupt.byte_offset,
            len = corrupt.len,
            reason = %corrupt.reason,
            "corrupt line skipped (kept in the file)"
        );
    }
    for lossy in &report.scan.lossy_lines {
        tracing::warn!(
            %path,
            line = lossy.line,
            byte_offset = lossy.byte_offset,
            "invalid UTF-8 read lossily"
        );
    }
    for gap in &report.scan.seq_gaps {
        tracing::warn!(
            %path,
            line = gap.line,
            expected = gap.expected,
            found = gap.found,
            "seq gap"
        );
    }
    if let Some(torn) = report.scan.torn_tail {
        if let Some(sidecar) = &report.torn_tail_saved_to {
            tracing::warn!(
                %path,
                byte_offset = torn.byte_offset,
                len = torn.len,
                sidecar = %sidecar.display(),
                "torn tail saved to the sidecar and truncated"
            );
        } else {
            tracing::warn!(
                %path,
                byte_offset = torn.byte_offset,
                len = torn.len,
                "torn tail ignored (read-only open)"
            );
        }
    }
}
