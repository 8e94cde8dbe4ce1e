//! The in-memory store: the [`SessionStore`] contract over byte buffers. Each log is exactly the
//! bytes a JSONL file would hold, read by the same scanner, so findings, positions and anchors
//! are the file store's. "Durable" means "in this process's memory": nothing survives the
//! process, which is what tests and throw-away sessions want.

use std::collections::HashMap;
use std::io::Cursor;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use super::StoreError;
use super::anchor;
use super::generic::{LogBackend, OwnedLog};
use crate::envelope::LogEvent;
use crate::event::SessionEvent;
use crate::scan::{ScanPosition, TornTail};

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
                &LogBackend::location(self, name),
                std::io::Error::new(std::io::ErrorKind::NotFound, "no such session log"),
            )
        })
    }

    /// Runs `f` over the log's bytes under its lock: for reads that call no visitor.
    fn with_bytes<T>(
        &self,
        name: &str,
        f: impl FnOnce(&[u8]) -> std::io::Result<T>,
    ) -> Result<T, StoreError> {
        let log = self.existing(name)?;
        let guard = lock(&log);
        f(&guard.bytes).map_err(|e| StoreError::io("read", &self.location(name), e))
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

impl LogBackend for MemoryStore {
    type Owned = MemoryHold;
    type Reader = Cursor<Vec<u8>>;

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

    fn create(&self, name: &str, header_line: &[u8]) -> Result<(), StoreError> {
        let mut logs = lock(&self.logs);
        if logs.contains_key(name) {
            return Err(StoreError::Exists {
                path: LogBackend::location(self, name),
            });
        }
        let log = MemoryLog {
            bytes: header_line.to_vec(),
            ..MemoryLog::default()
        };
        logs.insert(name.to_owned(), Arc::new(Mutex::new(log)));
        Ok(())
    }

    fn acquire(&self, name: &str) -> Result<MemoryHold, StoreError> {
        let log = self.existing(name)?;
        {
            let mut guard = lock(&log);
            if guard.writer {
                return Err(StoreError::Locked {
                    path: LogBackend::location(self, name),
                });
            }
            guard.writer = true;
        }
        Ok(MemoryHold {
            log,
            name: name.to_owned(),
        })
    }

    /// A copy of the bytes from `offset` on, so that no lock is held while a visitor runs (a
    /// visitor may append to the same store).
    fn reader(&self, name: &str, offset: u64) -> Result<Cursor<Vec<u8>>, StoreError> {
        self.copy_from(name, offset).map(Cursor::new)
    }

    fn head(&self, name: &str) -> Result<(Vec<u8>, u64), StoreError> {
        self.with_bytes(name, |bytes| {
            let end = memchr::memchr(b'\n', bytes).map_or(bytes.len(), |at| at + 1);
            Ok((bytes[..end].to_vec(), bytes.len() as u64))
        })
    }

    fn line_ending_at(
        &self,
        name: &str,
        start: u64,
        end: u64,
    ) -> Result<Option<Vec<u8>>, StoreError> {
        self.with_bytes(name, |bytes| {
            anchor::line_ending_at(&mut Cursor::new(bytes), start, end)
        })
    }

    fn line_of(&self, name: &str, byte_offset: u64) -> Result<u64, StoreError> {
        self.with_bytes(name, |bytes| {
            anchor::count_lines(&mut Cursor::new(bytes), byte_offset)
        })
    }

    fn is_writing(&self, name: &str) -> Result<bool, StoreError> {
        Ok(lock(&*self.existing(name)?).writer)
    }

    fn load_checkpoint(&self, name: &str) -> Result<Option<Vec<u8>>, StoreError> {
        Ok(lock(&*self.existing(name)?).checkpoint.clone())
    }

    fn save_checkpoint(&self, name: &str, document: &[u8]) -> Result<PathBuf, StoreError> {
        lock(&*self.existing(name)?).checkpoint = Some(document.to_vec());
        Ok(PathBuf::from(format!("memory:{name}.checkpoint")))
    }
}

/// The ownership of one in-memory log; dropping it gives the ownership back.
#[derive(Debug)]
pub struct MemoryHold {
    log: Arc<Mutex<MemoryLog>>,
    name: String,
}

impl Drop for MemoryHold {
    fn drop(&mut self) {
        lock(&self.log).writer = false;
    }
}

impl OwnedLog for MemoryHold {
    type Fold = ();

    fn fold(&self) {}

    fn cut_torn_tail(&mut self, torn: TornTail) -> Result<PathBuf, StoreError> {
        let mut guard = lock(&self.log);
        let start = usize::try_from(torn.byte_offset)
            .unwrap_or(usize::MAX)
            .min(guard.bytes.len());
        let tail = guard.bytes.split_off(start);
        guard.torn_tails.push((torn.byte_offset, tail));
        Ok(PathBuf::from(format!(
            "memory:{}.torn-{}",
            self.name, torn.byte_offset
        )))
    }

    fn append(
        &mut self,
        _at: ScanPosition,
        batch: &str,
        _events: &[LogEvent],
        _written: &[SessionEvent],
    ) -> Result<(), StoreError> {
        lock(&self.log).bytes.extend_from_slice(batch.as_bytes());
        Ok(())
    }

    fn refusal(&self) -> Option<StoreError> {
        None
    }
}
