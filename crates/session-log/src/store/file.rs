//! The file operations the log writer needs, as a small trait so that a host (or a test) can wrap
//! the file to observe or inject faults, and the durability helpers: directory `fsync`, temporary
//! names next to a target, no-replace publication and atomic replacement (SPEC §9.6).

use std::ffi::{OsStr, OsString};
use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// What the log writer does to its file: append bytes, truncate back, and make the data durable.
///
/// [`File`] implements it directly. The writer appends through [`Write`] (the file is opened in
/// append mode, so every write lands at the current end), makes a batch durable with
/// [`LogFile::sync_data`], and on a failure truncates with [`LogFile::set_len`].
pub trait LogFile: Write {
    /// Truncates the file to `len` bytes.
    fn set_len(&mut self, len: u64) -> io::Result<()>;
    /// Flushes the file's data, and the metadata needed to read it back (its length), to stable
    /// storage.
    fn sync_data(&mut self) -> io::Result<()>;
}

impl LogFile for File {
    fn set_len(&mut self, len: u64) -> io::Result<()> {
        File::set_len(self, len)
    }

    fn sync_data(&mut self) -> io::Result<()> {
        File::sync_data(self)
    }
}

/// The directory holding `path` (`.` for a bare file name).
pub(crate) fn parent_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    }
}

/// The file name of `path`, or an `InvalidInput` error for paths such as `/` or `..`.
pub(crate) fn file_name(path: &Path) -> io::Result<&OsStr> {
    path.file_name().ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} does not name a file", path.display()),
        )
    })
}

/// Makes the directory entries of `dir` durable (a created, linked, renamed or removed name).
pub(crate) fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

/// `<target name>.tmp-`: the prefix of every temporary file made for `target`.
fn temp_prefix(target: &Path) -> io::Result<OsString> {
    let mut prefix = file_name(target)?.to_os_string();
    prefix.push(".tmp-");
    Ok(prefix)
}

/// A fresh temporary path next to `target`: `<target name>.tmp-<pid>-<nanos>-<counter>`.
fn temp_path(target: &Path) -> io::Result<PathBuf> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let mut name = temp_prefix(target)?;
    name.push(format!(
        "{}-{nanos}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    Ok(parent_dir(target).join(name))
}

/// Removes the temporary files that an interrupted write for `target` left behind. Returns how
/// many were removed. A file that vanishes meanwhile (another process cleaning up) is not an error.
pub(crate) fn remove_leftover_temps(target: &Path) -> io::Result<usize> {
    let prefix = temp_prefix(target)?;
    let mut removed = 0;
    for entry in fs::read_dir(parent_dir(target))? {
        let entry = entry?;
        if entry
            .file_name()
            .as_encoded_bytes()
            .starts_with(prefix.as_encoded_bytes())
        {
            match fs::remove_file(entry.path()) {
                Ok(()) => removed += 1,
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(e),
            }
        }
    }
    Ok(removed)
}

/// Writes `bytes` to a new temporary file next to `target` and `fsync`s it.
pub(crate) fn write_temp(target: &Path, bytes: &[u8]) -> io::Result<PathBuf> {
    let temp = temp_path(target)?;
    let result = (|| {
        // Private from the start: a log, a checkpoint (SPEC: only their owner reads them).
        let mut file = crate::private::private_options()
            .write(true)
            .create_new(true)
            .open(&temp)?;
        file.write_all(bytes)?;
        file.sync_all()
    })();
    match result {
        Ok(()) => Ok(temp),
        Err(e) => {
            // The temporary file is useless now; a failed removal leaves it to the next write.
            let _ = fs::remove_file(&temp);
            Err(e)
        }
    }
}

/// Publishes `bytes` as `target` only if `target` does not exist: a temporary file is written
/// and `fsync`ed, hard-linked to `target` (which fails with `AlreadyExists` instead of replacing,
/// unlike `rename`), its temporary name removed, and the directory `fsync`ed. A reader never
/// sees `target` partly written.
pub(crate) fn publish_new(target: &Path, bytes: &[u8]) -> io::Result<()> {
    let temp = write_temp(target, bytes)?;
    let linked = fs::hard_link(&temp, target);
    // Once linked, `target` is published; a temporary name that cannot be removed is only
    // clutter, and the next write for `target` removes it.
    let _ = fs::remove_file(&temp);
    linked?;
    sync_dir(parent_dir(target))
}

/// Replaces `target` atomically with an already written and `fsync`ed temporary file, then
/// `fsync`s the directory.
pub(crate) fn replace_with(temp: &Path, target: &Path) -> io::Result<()> {
    fs::rename(temp, target)?;
    sync_dir(parent_dir(target))
}
