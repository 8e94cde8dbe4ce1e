//! The JSONL file store (SPEC §7, §9.6): one file per session log, created with its header,
//! opened read-only or for write (with the open report), appended durably; and the projection
//! checkpoint next to it, replaced atomically.

use std::fs::{self, File, OpenOptions, TryLockError};
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use super::anchor::{self, AnchorMismatch, LogAnchor, READ_BUFFER};
use super::file::{self, LogFile};
use super::generic::{self, BackendWriter, LogBackend, OwnedLog};
use super::{LogVisitor, OpenReport, ResumePoint, StoreError};
use crate::envelope::{LogEvent, NewSession};
use crate::event::SessionEvent;
use crate::repair::{RepairReport, repair_interrupted};
use crate::scan::{ScanPosition, TornTail};

/// The largest checkpoint document read (64 MiB): far more than any projection state.
const MAX_CHECKPOINT_LEN: u64 = 64 << 20;

/// What follows the log's file name in its checkpoint's name.
pub const CHECKPOINT_SUFFIX: &str = ".userQuestions.checkpoint.json";

/// The checkpoint file of `log`: `<log name>.userQuestions.checkpoint.json` in the same directory.
pub fn checkpoint_path(log: &Path) -> PathBuf {
    let mut name = log.file_name().unwrap_or_default().to_os_string();
    name.push(CHECKPOINT_SUFFIX);
    file::parent_dir(log).join(name)
}

/// Session logs as JSONL files in one directory: the log `name` is the file `<dir>/<name>`, its
/// checkpoint `<dir>/<name>.userQuestions.checkpoint.json`. See the [store docs](super).
#[derive(Clone, Debug)]
pub struct JsonlStore {
    dir: PathBuf,
    /// A log given by its path ([`JsonlStore::for_file`]): its name in the store and its path
    /// exactly as given, so that a file name that is not UTF-8 still names it.
    file: Option<(String, PathBuf)>,
}

impl JsonlStore {
    /// A store over the directory `dir` (it must exist).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self {
            dir: dir.into(),
            file: None,
        }
    }

    /// The store holding the file `path`, and the file's name in it: how a command that is given
    /// a log's path reaches it through the store. The name maps back to `path` exactly as given
    /// (a bare file name stays bare, a file name that is not UTF-8 is still that file).
    pub fn for_file(path: &Path) -> Result<(Self, String), StoreError> {
        let name = file::file_name(path)
            .map_err(|e| StoreError::io("name", path, e))?
            .to_string_lossy()
            .into_owned();
        let dir = path.parent().unwrap_or_else(|| Path::new(""));
        let store = Self {
            dir: dir.to_path_buf(),
            file: Some((name.clone(), path.to_path_buf())),
        };
        Ok((store, name))
    }

    /// The store's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The names of the logs in the store's directory (its `*.jsonl` regular files), sorted.
    pub fn log_names(&self) -> Result<Vec<String>, StoreError> {
        let entries =
            std::fs::read_dir(&self.dir).map_err(|e| StoreError::io("list", &self.dir, e))?;
        let mut names: Vec<String> = entries
            .filter_map(Result::ok)
            .filter(|entry| entry.file_type().is_ok_and(|t| t.is_file()))
            .filter_map(|entry| entry.file_name().into_string().ok())
            .filter(|name| Path::new(name).extension().is_some_and(|e| e == "jsonl"))
            .collect();
        names.sort();
        Ok(names)
    }

    /// The file of the log `name`.
    pub fn path(&self, name: &str) -> PathBuf {
        match &self.file {
            Some((file_name, path)) if file_name == name => path.clone(),
            _ => self.dir.join(name),
        }
    }

    fn open_read(&self, name: &str) -> Result<(File, PathBuf, u64), StoreError> {
        let path = self.path(name);
        regular_file(&path)?;
        let file = File::open(&path).map_err(|e| StoreError::io("open", &path, e))?;
        let len = file
            .metadata()
            .map_err(|e| StoreError::io("stat", &path, e))?
            .len();
        Ok((file, path, len))
    }
}

impl LogBackend for JsonlStore {
    type Owned = FileLog<File>;
    type Reader = BufReader<File>;

    fn length(&self, name: &str) -> Result<u64, StoreError> {
        let path = self.path(name);
        regular_file(&path)?;
        std::fs::metadata(&path)
            .map(|meta| meta.len())
            .map_err(|e| StoreError::io("stat", &path, e))
    }

    fn location(&self, name: &str) -> PathBuf {
        self.path(name)
    }

    fn file_path(&self, name: &str) -> Option<PathBuf> {
        Some(self.path(name))
    }

    fn exists(&self, name: &str) -> Result<bool, StoreError> {
        let path = self.path(name);
        path.try_exists()
            .map_err(|e| StoreError::io("look for", &path, e))
    }

    fn list(&self) -> Result<Vec<String>, StoreError> {
        self.log_names()
    }

    /// Writes the header to a temporary file next to the log and `fsync`s it, links it to the
    /// log's name without replacing anything ([`StoreError::Exists`] if a log is there), removes
    /// the temporary name and `fsync`s the directory (SPEC §9.6). Temporary files left by an
    /// interrupted create are removed first.
    fn create(&self, name: &str, header_line: &[u8]) -> Result<(), StoreError> {
        let path = self.path(name);
        file::remove_leftover_temps(&path)
            .map_err(|e| StoreError::io("remove leftover temporary files for", &path, e))?;
        match file::publish_new(&path, header_line) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                Err(StoreError::Exists { path: path.clone() })
            }
            Err(e) => Err(StoreError::io("create", &path, e)),
        }
    }

    fn acquire(&self, name: &str) -> Result<FileLog<File>, StoreError> {
        let path = self.path(name);
        Ok(FileLog {
            file: lock_for_write(&path)?,
            path,
            poisoned: false,
        })
    }

    fn reader(&self, name: &str, offset: u64) -> Result<BufReader<File>, StoreError> {
        let (mut file, path, _) = self.open_read(name)?;
        if offset > 0 {
            file.seek(SeekFrom::Start(offset))
                .map_err(|e| StoreError::io("seek", &path, e))?;
        }
        Ok(BufReader::with_capacity(READ_BUFFER, file))
    }

    fn head(&self, name: &str) -> Result<(Vec<u8>, u64), StoreError> {
        let (file, path, len) = self.open_read(name)?;
        let mut line = Vec::new();
        BufReader::new(file)
            .read_until(b'\n', &mut line)
            .map_err(|e| StoreError::io("read", &path, e))?;
        Ok((line, len))
    }

    fn line_ending_at(
        &self,
        name: &str,
        start: u64,
        end: u64,
    ) -> Result<Option<Vec<u8>>, StoreError> {
        let (mut file, path, _) = self.open_read(name)?;
        anchor::line_ending_at(&mut file, start, end).map_err(|e| StoreError::io("read", &path, e))
    }

    fn line_of(&self, name: &str, byte_offset: u64) -> Result<u64, StoreError> {
        let (mut file, path, _) = self.open_read(name)?;
        anchor::count_lines(&mut file, byte_offset).map_err(|e| StoreError::io("read", &path, e))
    }

    fn is_writing(&self, name: &str) -> Result<bool, StoreError> {
        writer_is_live(&self.path(name))
    }

    fn load_checkpoint(&self, name: &str) -> Result<Option<Vec<u8>>, StoreError> {
        let path = checkpoint_path(&self.path(name));
        let len = match fs::metadata(&path) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(StoreError::io("read", &path, e)),
            Ok(metadata) => {
                regular_file(&path)?;
                metadata.len()
            }
        };
        // A checkpoint is small (the state of the open questions); one far larger than any
        // state is not read into memory: it reads as stale.
        let capacity = usize::try_from(len.min(MAX_CHECKPOINT_LEN) + 1).unwrap_or(0);
        let mut bytes = Vec::with_capacity(capacity);
        File::open(&path)
            .and_then(|file| file.take(MAX_CHECKPOINT_LEN + 1).read_to_end(&mut bytes))
            .map_err(|e| StoreError::io("read", &path, e))?;
        if bytes.len() as u64 > MAX_CHECKPOINT_LEN {
            return Err(StoreError::io(
                "read",
                &path,
                io::Error::new(io::ErrorKind::InvalidData, "the checkpoint is too large"),
            ));
        }
        Ok(Some(bytes))
    }

    fn save_checkpoint(&self, name: &str, document: &[u8]) -> Result<PathBuf, StoreError> {
        write_checkpoint(&self.path(name), document)
    }
}

/// Writes the checkpoint document of `log` atomically (temporary file, `fsync`, rename over the
/// target, directory `fsync`) and returns its path.
pub fn write_checkpoint(log: &Path, document: &[u8]) -> Result<PathBuf, StoreError> {
    stage_checkpoint(log, document)?.commit()
}

/// The first half of an atomic checkpoint write: removes temporary files an interrupted write left
/// for this checkpoint, then writes `document` to a new temporary file next to it and `fsync`s it.
/// Until [`StagedCheckpoint::commit`], the previous checkpoint is untouched.
pub fn stage_checkpoint(log: &Path, document: &[u8]) -> Result<StagedCheckpoint, StoreError> {
    let target = checkpoint_path(log);
    file::remove_leftover_temps(&target)
        .map_err(|e| StoreError::io("remove leftover temporary files for", &target, e))?;
    let temp = file::write_temp(&target, document)
        .map_err(|e| StoreError::io("write a temporary file for", &target, e))?;
    Ok(StagedCheckpoint { temp, target })
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

/// How often, and how long apart, opening for write retries a lock held by someone else before it
/// reports [`StoreError::Locked`].
const LOCK_ATTEMPTS: u32 = 5;
const LOCK_RETRY: std::time::Duration = std::time::Duration::from_millis(20);

/// Refuses a path that is not a regular file (after following symbolic links) before it is opened:
/// opening a FIFO blocks, and a device such as `/dev/zero` never ends.
fn regular_file(path: &Path) -> Result<(), StoreError> {
    let metadata = fs::metadata(path).map_err(|e| StoreError::io("open", path, e))?;
    let file_type = metadata.file_type();
    if file_type.is_file() {
        return Ok(());
    }
    let kind = if file_type.is_dir() {
        "a directory"
    } else {
        special_kind(file_type)
    };
    Err(StoreError::NotAFile {
        path: path.to_owned(),
        kind,
    })
}

#[cfg(unix)]
fn special_kind(file_type: fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if file_type.is_fifo() {
        "a FIFO"
    } else if file_type.is_char_device() {
        "a character device"
    } else if file_type.is_block_device() {
        "a block device"
    } else if file_type.is_socket() {
        "a socket"
    } else {
        "not a regular file"
    }
}

#[cfg(not(unix))]
fn special_kind(_: fs::FileType) -> &'static str {
    "not a regular file"
}

/// Opens `path` (a regular file) for reading and appending and takes its exclusive lock
/// ([`StoreError::Locked`] when another writer holds it).
fn lock_for_write(path: &Path) -> Result<File, StoreError> {
    regular_file(path)?;
    // A log made before logs were private (or under another tool) is tightened now.
    crate::private::private_file(path).map_err(|e| StoreError::io("make private", path, e))?;
    let file = OpenOptions::new()
        .read(true)
        .append(true)
        .open(path)
        .map_err(|e| StoreError::io("open for write", path, e))?;
    // A reader probing for a live writer (`writer_is_live`) holds a shared lock for an instant;
    // a few short retries tell that apart from a real second writer.
    let mut attempts = 0;
    loop {
        match file.try_lock() {
            Ok(()) => return Ok(file),
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
}

/// Whether a writer holds the log now (its exclusive advisory lock), found by trying a shared
/// lock for an instant (a writer opening at that moment retries). Never modifies the log. A log nobody writes to cannot be in the middle of
/// a tool call: a call without a result there was interrupted.
pub fn writer_is_live(path: &Path) -> Result<bool, StoreError> {
    let io_error = |op, source| StoreError::Io {
        op,
        path: path.to_path_buf(),
        source,
    };
    regular_file(path)?;
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

/// Opens a log read-only (SPEC §9.6): no lock, nothing modified; a torn tail is reported and left
/// in place.
pub fn read_log(path: &Path) -> Result<OpenReport, StoreError> {
    read_log_with(path, &mut ())
}

/// [`read_log`], showing every line to `visitor` during the scan.
pub fn read_log_with(path: &Path, visitor: &mut dyn LogVisitor) -> Result<OpenReport, StoreError> {
    let (store, name) = JsonlStore::for_file(path)?;
    generic::read(&store, &name, visitor)
}

/// A JSONL log's hold for write: the file, open for appending, with its exclusive advisory lock
/// (released when the file is closed). `F` is the file it writes through: [`File`] unless
/// [`LogWriter::map_file`] wrapped it.
#[derive(Debug)]
pub struct FileLog<F: LogFile = File> {
    file: F,
    path: PathBuf,
    poisoned: bool,
}

impl<F: LogFile> OwnedLog for FileLog<F> {
    type Fold = ();

    fn fold(&self) {}

    fn cut_torn_tail(&mut self, torn: TornTail) -> Result<PathBuf, StoreError> {
        cut_torn_tail(&self.path, &mut self.file, torn)
    }

    /// Writes the batch, then `sync_data`; only then is it acknowledged. If writing or syncing
    /// fails, the file is truncated back to its length before the batch (and synced); if that
    /// also fails, the hold is poisoned and refuses every later append, so that no `seq` can
    /// ever be written twice.
    fn append(
        &mut self,
        at: ScanPosition,
        batch: &str,
        _events: &[LogEvent],
        _written: &[SessionEvent],
    ) -> Result<(), StoreError> {
        let Err(source) = self
            .file
            .write_all(batch.as_bytes())
            .and_then(|()| self.file.sync_data())
        else {
            return Ok(());
        };
        let rollback = self
            .file
            .set_len(at.byte_offset)
            .and_then(|()| self.file.sync_data());
        let poisoned = rollback.is_err();
        self.poisoned = poisoned;
        tracing::error!(
            path = %self.path.display(),
            error = %source,
            poisoned,
            "appending to the session log failed"
        );
        Err(StoreError::AppendFailed {
            path: self.path.clone(),
            source,
            rollback: rollback.err(),
        })
    }

    fn refusal(&self) -> Option<StoreError> {
        self.poisoned.then(|| StoreError::Poisoned {
            path: self.path.clone(),
        })
    }
}

/// The single writer of one JSONL log (SPEC §9.6): it holds an exclusive advisory lock on the log
/// for as long as it lives; appends are durable (`sync_data`) before they are acknowledged. The
/// generic writer of [`JsonlStore`], with the file as its hold.
pub type LogWriter<F = File> = BackendWriter<FileLog<F>>;

impl BackendWriter<FileLog<File>> {
    /// Creates a new log whose only line is `session`'s header record (SPEC §9.6): the header is
    /// published without replacing anything ([`StoreError::Exists`] if a log is already there),
    /// then opened. Returns the writer, holding the lock.
    pub fn create(path: &Path, session: &NewSession) -> Result<Self, StoreError> {
        let (store, name) = JsonlStore::for_file(path)?;
        generic::create(&store, &name, session)
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
        let (store, name) = JsonlStore::for_file(path)?;
        generic::open(&store, &name, visitor)
    }

    /// Opens a log for write from a checkpointed point (SPEC §9.6): takes the lock, checks
    /// `anchor` against the log and `resume` against the anchor, and scans only the lines after
    /// it, as [`SessionStore::open_from`](super::SessionStore::open_from) describes. `Ok(Err(_))`
    /// when they do not fit: the lock is given back and nothing was changed.
    pub fn open_from(
        path: &Path,
        anchor: &LogAnchor,
        resume: &ResumePoint,
        visitor: &mut dyn LogVisitor,
    ) -> Result<Result<(Self, OpenReport), AnchorMismatch>, StoreError> {
        let (store, name) = JsonlStore::for_file(path)?;
        Ok(generic::open_from(&store, &name, anchor, resume, visitor)?
            .map(|opened| opened.unwrap_or_else(|| unreachable!("a JSONL log always resumes"))))
    }

    /// Opens a log for write and runs resume repair (SPEC §7.6) before returning: what a host does
    /// when it resumes a session.
    pub fn open_repaired(path: &Path) -> Result<(Self, OpenReport, RepairReport), StoreError> {
        let (mut writer, report) = Self::open(path)?;
        let repair = repair_interrupted(&mut writer)?;
        Ok((writer, report, repair))
    }
}

impl<F: LogFile> BackendWriter<FileLog<F>> {
    /// Wraps the file the writer writes through (to observe writes, or to inject faults); the
    /// lock, position and state carry over.
    pub fn map_file<G: LogFile>(self, wrap: impl FnOnce(F) -> G) -> LogWriter<G> {
        self.map_owned(|owned| FileLog {
            file: wrap(owned.file),
            path: owned.path,
            poisoned: owned.poisoned,
        })
    }
}

/// Saves the torn tail to its sidecar, then truncates the log to the last record boundary. The
/// sidecar is durable (file and directory entry) before the log loses the bytes.
fn cut_torn_tail<F: LogFile>(
    path: &Path,
    file: &mut F,
    torn: TornTail,
) -> Result<PathBuf, StoreError> {
    let mut bytes = Vec::new();
    File::open(path)
        .and_then(|mut reader| {
            reader.seek(SeekFrom::Start(torn.byte_offset))?;
            reader.take(torn.len).read_to_end(&mut bytes)
        })
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
        .and_then(|()| file.sync_data())
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
