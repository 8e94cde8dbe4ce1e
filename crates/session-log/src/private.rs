//! Files only their owner reads: the state directory `0700`, every log, checkpoint, key and lock
//! `0600`, whatever the umask. What exists already with wider modes is tightened, with a warning.

use std::fs;
use std::io;
use std::path::Path;

/// The mode of a private directory.
pub const DIR_MODE: u32 = 0o700;

/// The mode of a private file.
pub const FILE_MODE: u32 = 0o600;

/// Creates `dir` (and its missing parents) readable by its owner alone, and tightens it when it
/// exists with group or other bits (warning once). Returns whether it was tightened.
///
/// # Errors
///
/// The directory cannot be created, or its mode cannot be read or set.
pub fn private_dir(dir: &Path) -> io::Result<bool> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt as _;
        fs::DirBuilder::new()
            .recursive(true)
            .mode(DIR_MODE)
            .create(dir)?;
    }
    #[cfg(not(unix))]
    fs::create_dir_all(dir)?;
    tighten(dir, DIR_MODE)
}

/// Tightens the file at `path` to [`FILE_MODE`] when group or others may touch it (warning
/// once). Returns whether it was tightened.
///
/// # Errors
///
/// Its mode cannot be read or set.
pub fn private_file(path: &Path) -> io::Result<bool> {
    tighten(path, FILE_MODE)
}

/// Sets the mode of `path` to `mode` when it has bits for group or others.
#[cfg(unix)]
fn tighten(path: &Path, mode: u32) -> io::Result<bool> {
    use std::os::unix::fs::PermissionsExt as _;
    let now = fs::metadata(path)?.permissions().mode() & 0o7777;
    // Nothing for group or others (the low six bits).
    if now.trailing_zeros() >= 6 {
        return Ok(false);
    }
    fs::set_permissions(path, fs::Permissions::from_mode(mode))?;
    tracing::warn!(
        path = %user_questions::sanitize::visible(&path.display().to_string()),
        was = format_args!("{now:o}"),
        now = format_args!("{mode:o}"),
        "other users could read this; made private"
    );
    Ok(true)
}

#[cfg(not(unix))]
fn tighten(_: &Path, _: u32) -> io::Result<bool> {
    Ok(false)
}

/// `OpenOptions` that create a file with [`FILE_MODE`] (on unix).
pub(crate) fn private_options() -> fs::OpenOptions {
    let mut options = fs::OpenOptions::new();
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.mode(FILE_MODE);
    }
    options
}
