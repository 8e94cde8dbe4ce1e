//! The in-memory store: the [`SessionStore`] contract over byte buffers. Each log is exactly the
//! bytes a JSONL file would hold, read by the same scanner, so findings, positions and anchors
//! are the file store's. "Durable" means "in this process's memory": nothing survives the
//! process, which is what tests and throw-away sessions want.

use std::collections::HashMap;
use std::convert::Infallible;
use std::io::Cursor;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use super::anchor::{self, AnchorMismatch, LogAnchor, RecordSpan};
use super::{
    LogVisitor, OpenFrom, OpenReport, ResumePoint, SessionStore, SessionWriter, StoreError,
    backend::{
        advance, check_writable, encode_batch, open_report, scan_at_resume_point, scan_log, scan_on,
    },
};
use crate::envelope::{LogEvent, NewSession};
use crate::event::SessionEvent;
use crate::header::SessionHeader;
use crate::scan::{ScanPosition, ScanReport};
use crate::unfinished::{Interrupted, Tracker};

/// Session logs in memory. Cloning gives another handle to the same logs. See the
/// [module docs](self).
#[derive(Clone, Debug, Default)]
pub struct MemoryStore {
    logs: Arc<Mutex<HashMap<String, Arc<Mutex<MemoryLog>>>>>,
}

#[derive(Debug, Default)]
struct MemoryLog {
    bytes: Vec<u8>,
    writer: bool,
    checkpoint: Option<Vec<u8>>,
    torn_tails: Vec<(u64, Vec<u8>)>,
}

// No critical section here can leave a log half changed (each edit is one `Vec` operation after
// every check), so the data behind a poisoned lock is still valid.
use user_questions::sync::lock_unpoisoned as lock;

impl MemoryStore {
    /// Takes the log's ownership, runs `scan` over its bytes and makes the writer of what it
    /// scanned; ownership is given back when `scan` fails, panics or finds the point stale.
    #[allow(clippy::type_complexity)]
    fn open_scanned<E>(
        &self,
        name: &str,
        scan: impl FnOnce(
            &Path,
            &[u8],
        ) -> Result<
            Result<(SessionHeader, ScanReport, Tracker, Option<ScanPosition>), E>,
            StoreError,
        >,
    ) -> Result<Result<(Box<dyn SessionWriter>, OpenReport), E>, StoreError> {
        let log = self.existing(name)?;
        let location = self.location(name);
        let bytes = {
            let mut guard = lock(&log);
            if guard.writer {
                return Err(StoreError::Locked { path: location });
            }
            guard.writer = true;
            guard.bytes.clone()
        };
        // From here on this open owns the log; a failure gives the ownership back.
        let release = |log: &Mutex<MemoryLog>| lock(log).writer = false;
        // A visitor that panics unwinds through this guard, which gives the ownership back too.
        let owned = OwnershipGuard(Some(&log));
        let scanned = scan(&location, bytes.as_slice());
        owned.keep();
        let (header, scan, tracker, resumed_at) = match scanned.and_then(|scanned| match scanned {
            Ok(scanned) => check_writable(&location, &scanned.0).map(|()| Ok(scanned)),
            Err(stale) => Ok(Err(stale)),
        }) {
            Ok(Ok(scanned)) => scanned,
            Ok(Err(mismatch)) => {
                release(&log);
                return Ok(Err(mismatch));
            }
            Err(error) => {
                release(&log);
                return Err(error);
            }
        };
        let torn_tail_saved_to = scan.torn_tail.map(|torn| {
            let mut guard = lock(&log);
            let start = usize::try_from(torn.byte_offset)
                .unwrap_or(usize::MAX)
                .min(guard.bytes.len());
            let tail = guard.bytes.split_off(start);
            guard.torn_tails.push((torn.byte_offset, tail));
            PathBuf::from(format!("memory:{name}.torn-{}", torn.byte_offset))
        });
        let report = open_report(
            &location,
            header.clone(),
            scan,
            &tracker,
            torn_tail_saved_to,
            resumed_at,
        );
        let writer = MemoryWriter {
            log,
            location,
            header,
            position: report.scan.end,
            tracker,
        };
        Ok(Ok((Box::new(writer), report)))
    }
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// The bytes of the log `name`, as a JSONL file of it would hold them.
    pub fn bytes(&self, name: &str) -> Option<Vec<u8>> {
        self.log(name).map(|log| lock(&log).bytes.clone())
    }

    /// Puts a log in place as the given bytes (a log copied from elsewhere, or one with a torn
    /// tail or corrupt lines, as a crash or another writer could leave it). An existing log of
    /// that name has its bytes replaced in place, behind the back of a writer it may have (as a
    /// foreign process could do to a file), and keeps its checkpoint.
    pub fn insert_bytes(&self, name: &str, bytes: Vec<u8>) {
        let mut logs = lock(&self.logs);
        if let Some(log) = logs.get(name) {
            lock(log).bytes = bytes;
        } else {
            let log = MemoryLog {
                bytes,
                ..MemoryLog::default()
            };
            logs.insert(name.to_owned(), Arc::new(Mutex::new(log)));
        }
    }

    /// The torn tails cut from the log `name` by opens for write: each one's byte offset and bytes.
    pub fn torn_tails(&self, name: &str) -> Vec<(u64, Vec<u8>)> {
        self.log(name)
            .map(|log| lock(&log).torn_tails.clone())
            .unwrap_or_default()
    }

    fn log(&self, name: &str) -> Option<Arc<Mutex<MemoryLog>>> {
        lock(&self.logs).get(name).cloned()
    }

    fn existing(&self, name: &str) -> Result<Arc<Mutex<MemoryLog>>, StoreError> {
        self.log(name).ok_or_else(|| {
            StoreError::io(
                "open",
                &self.location(name),
                std::io::Error::new(std::io::ErrorKind::NotFound, "no such session log"),
            )
        })
    }

    /// Runs `f` over the log's bytes under its lock: for reads that call no visitor.
    fn with_bytes<T>(
        &self,
        name: &str,
        f: impl FnOnce(&Path, &[u8]) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let log = self.existing(name)?;
        let guard = lock(&log);
        f(&self.location(name), &guard.bytes)
    }

    /// A copy of the log's bytes from `start` on, so that no lock is held while a visitor runs
    /// (a visitor may append to the same store).
    fn copy_from(&self, name: &str, start: u64) -> Result<Vec<u8>, StoreError> {
        let log = self.existing(name)?;
        let guard = lock(&log);
        let start = usize::try_from(start)
            .unwrap_or(usize::MAX)
            .min(guard.bytes.len());
        Ok(guard.bytes[start..].to_vec())
    }
}

impl SessionStore for MemoryStore {
    fn location(&self, name: &str) -> PathBuf {
        PathBuf::from(format!("memory:{name}"))
    }

    fn exists(&self, name: &str) -> Result<bool, StoreError> {
        Ok(self.log(name).is_some())
    }

    fn list(&self) -> Result<Vec<String>, StoreError> {
        let mut names: Vec<String> = lock(&self.logs).keys().cloned().collect();
        names.sort();
        Ok(names)
    }

    fn create(
        &self,
        name: &str,
        session: &NewSession,
    ) -> Result<Box<dyn SessionWriter>, StoreError> {
        {
            let mut logs = lock(&self.logs);
            if logs.contains_key(name) {
                return Err(StoreError::Exists {
                    path: self.location(name),
                });
            }
            let log = MemoryLog {
                bytes: session.header_line().into_bytes(),
                ..MemoryLog::default()
            };
            logs.insert(name.to_owned(), Arc::new(Mutex::new(log)));
        }
        let (writer, _) = self.open(name, &mut ())?;
        Ok(writer)
    }

    fn open(
        &self,
        name: &str,
        visitor: &mut dyn LogVisitor,
    ) -> Result<(Box<dyn SessionWriter>, OpenReport), StoreError> {
        let opened = self.open_scanned(name, |location, bytes| {
            let (header, scan, tracker) = scan_log(location, bytes, visitor)?;
            Ok(Ok::<_, Infallible>((header, scan, tracker, None)))
        })?;
        // A scan from the start always fits.
        Ok(match opened {
            Ok(opened) => opened,
            Err(never) => match never {},
        })
    }

    fn open_from(
        &self,
        name: &str,
        anchor: &LogAnchor,
        resume: &ResumePoint,
        visitor: &mut dyn LogVisitor,
    ) -> Result<OpenFrom, StoreError> {
        let opened = self.open_scanned(name, |location, bytes| {
            let resolved = anchor::resolve(&mut Cursor::new(bytes), bytes.len() as u64, anchor)
                .map_err(|e| StoreError::io("read", location, e))?;
            let tail = |at: ScanPosition| {
                Ok(bytes
                    .get(usize::try_from(at.byte_offset).unwrap_or(usize::MAX)..)
                    .unwrap_or_default())
            };
            Ok(
                scan_at_resume_point(location, resolved, resume, tail, visitor)?
                    .map(|(header, scan, tracker, at)| (header, scan, tracker, Some(at))),
            )
        })?;
        Ok(match opened {
            Ok((writer, report)) => OpenFrom::Resumed { writer, report },
            Err(mismatch) => OpenFrom::Stale(mismatch),
        })
    }

    fn read(&self, name: &str, visitor: &mut dyn LogVisitor) -> Result<OpenReport, StoreError> {
        let bytes = self.copy_from(name, 0)?;
        let location = self.location(name);
        let (header, scan, tracker) = scan_log(&location, bytes.as_slice(), visitor)?;
        let report = open_report(&location, header, scan, &tracker, None, None);
        Ok(report)
    }

    fn scan_from(
        &self,
        name: &str,
        at: ScanPosition,
        visitor: &mut dyn LogVisitor,
    ) -> Result<ScanReport, StoreError> {
        let tail = self.copy_from(name, at.byte_offset)?;
        scan_on(&self.location(name), tail.as_slice(), at, visitor)
    }

    fn line_of(&self, name: &str, byte_offset: u64) -> Result<u64, StoreError> {
        self.with_bytes(name, |location, bytes| {
            anchor::count_lines(&mut Cursor::new(bytes), byte_offset)
                .map_err(|e| StoreError::io("read", location, e))
        })
    }

    fn is_writing(&self, name: &str) -> Result<bool, StoreError> {
        Ok(lock(&*self.existing(name)?).writer)
    }

    fn resolve_anchor(
        &self,
        name: &str,
        anchor: &LogAnchor,
    ) -> Result<Result<(SessionHeader, ScanPosition), AnchorMismatch>, StoreError> {
        self.with_bytes(name, |location, bytes| {
            anchor::resolve(&mut Cursor::new(bytes), bytes.len() as u64, anchor)
                .map_err(|e| StoreError::io("read", location, e))
        })
    }

    fn anchor_at(
        &self,
        name: &str,
        end: ScanPosition,
        last: Option<RecordSpan>,
    ) -> Result<Option<LogAnchor>, StoreError> {
        self.with_bytes(name, |location, bytes| {
            anchor::anchor_at(&mut Cursor::new(bytes), end, last)
                .map_err(|e| StoreError::io("read", location, e))
        })
    }

    fn load_checkpoint(&self, name: &str) -> Result<Option<Vec<u8>>, StoreError> {
        Ok(lock(&*self.existing(name)?).checkpoint.clone())
    }

    fn save_checkpoint(&self, name: &str, document: &[u8]) -> Result<PathBuf, StoreError> {
        lock(&*self.existing(name)?).checkpoint = Some(document.to_vec());
        Ok(PathBuf::from(format!("memory:{name}.checkpoint")))
    }
}

/// Gives a log's ownership back when dropped, unless [`OwnershipGuard::keep`] disarmed it.
struct OwnershipGuard<'a>(Option<&'a Mutex<MemoryLog>>);

impl OwnershipGuard<'_> {
    fn keep(mut self) {
        self.0 = None;
    }
}

impl Drop for OwnershipGuard<'_> {
    fn drop(&mut self) {
        if let Some(log) = self.0 {
            lock(log).writer = false;
        }
    }
}

/// The writer of one in-memory log; dropping it gives up ownership.
struct MemoryWriter {
    log: Arc<Mutex<MemoryLog>>,
    location: PathBuf,
    header: SessionHeader,
    position: ScanPosition,
    tracker: Tracker,
}

impl Drop for MemoryWriter {
    fn drop(&mut self) {
        lock(&self.log).writer = false;
    }
}

impl SessionWriter for MemoryWriter {
    fn append(&mut self, events: &[LogEvent]) -> Result<Vec<SessionEvent>, StoreError> {
        let Some((batch, written)) = encode_batch(self.position.expected_seq, events)? else {
            return Ok(Vec::new());
        };
        lock(&self.log).bytes.extend_from_slice(batch.as_bytes());
        advance(
            &mut self.position,
            &mut self.tracker,
            &written,
            batch.len() as u64,
        );
        Ok(written)
    }

    fn next_seq(&self) -> u64 {
        self.position.expected_seq
    }

    fn position(&self) -> ScanPosition {
        self.position
    }

    fn header(&self) -> &SessionHeader {
        &self.header
    }

    fn location(&self) -> &Path {
        &self.location
    }

    fn interrupted(&self) -> Interrupted {
        self.tracker.interrupted()
    }

    fn is_poisoned(&self) -> bool {
        false
    }
}
