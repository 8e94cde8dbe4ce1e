//! How a later event of an agent (its tool ran, its dialog denied) withdraws the bridge still
//! waiting on the same prompt: each waiting bridge listens on a socket of its own in the state
//! directory's `native` folder (the owner's alone), named by a hash of the ask's fingerprint;
//! [`withdraw`] connects to every socket of that hash, and each bridge reached stops asking.
//!
//! Beside each socket, a `.log` file names the bridge's session log. A bridge killed outright
//! (`SIGKILL`) leaves both behind and its log's call open with no writer; [`sweep`] finds such a
//! log (no process holds its write lock any more) and ends its call `ASK_ABORTED`, so no surface
//! shows an ask nobody waits on.

use std::io;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};

use tokio::net::{UnixListener, UnixStream};
use tokio_util::sync::CancellationToken;

use crate::{short_id, waiting_dir};

/// A bridge's socket, listened on until dropped (then removed).
pub(crate) struct Waiting {
    path: PathBuf,
    _task: tokio_util::task::AbortOnDropHandle<()>,
}

impl Waiting {
    /// Listens for [`withdraw`] of `fingerprint`, for the session log `log`: a connection
    /// cancels `cancel`.
    pub(crate) fn listen(
        state_dir: &Path,
        fingerprint: &str,
        log: &str,
        cancel: &CancellationToken,
    ) -> io::Result<Self> {
        let dir = waiting_dir(state_dir);
        std::fs::create_dir_all(&dir)?;
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700))?;
        let path = dir.join(format!("{}-{}.sock", hash(fingerprint), short_id()));
        std::fs::write(path.with_extension("log"), log)?;
        let listener = UnixListener::bind(&path)?;
        let cancel = cancel.clone();
        let task = tokio::spawn(async move {
            if listener.accept().await.is_ok() {
                cancel.cancel();
            }
        });
        Ok(Self {
            path,
            _task: tokio_util::task::AbortOnDropHandle::new(task),
        })
    }
}

impl Drop for Waiting {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
        let _ = std::fs::remove_file(self.path.with_extension("log"));
    }
}

/// What a bridge that went away without a word left of its ask says to the model's log.
pub const ABANDONED_TEXT: &str = "The bridge asking this went away before anyone answered (it was \
killed); the agent's own prompt decided.";

/// Ends the asks of bridges killed outright: for each session log a waiting bridge named in the
/// state directory's `native` folder that no process writes any more, its open call ends
/// `ASK_ABORTED` ([`ABANDONED_TEXT`]) and the bridge's leftovers go. A live bridge holds its
/// log's write lock, so it is never touched. How many logs were ended. Cheap: it looks only at
/// the bridges that waited.
pub fn sweep(state_dir: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(waiting_dir(state_dir)) else {
        return 0;
    };
    let mut ended = 0;
    for entry in entries.flatten() {
        let path = entry.path();
        if path.extension().is_some_and(|e| e == "log") && bury(state_dir, &path) {
            ended += 1;
        }
    }
    ended
}

/// [`sweep`] every `period`, for as long as the future runs (an inbox's task).
pub async fn sweep_every(state_dir: PathBuf, period: std::time::Duration) {
    loop {
        let dir = state_dir.clone();
        let _ = tokio::task::spawn_blocking(move || sweep(&dir)).await;
        tokio::time::sleep(period).await;
    }
}

/// Ends the log the bridge's `.log` file at `named` names, when no process writes it: whether
/// a call was ended. Leftovers go once the log is found unwritten.
fn bury(state_dir: &Path, named: &Path) -> bool {
    let Ok(log) = std::fs::read_to_string(named) else {
        return false;
    };
    let log = log.trim();
    // A name of the state directory's, nothing else.
    let jsonl = Path::new(log).extension().is_some_and(|e| e == "jsonl");
    if log.contains('/') || !jsonl {
        return false;
    }
    // Not there yet (the bridge is starting), or written by its bridge now: left alone.
    if !matches!(session_log::writer_is_live(&state_dir.join(log)), Ok(false)) {
        return false;
    }
    let store = session_log::JsonlStore::new(state_dir.to_path_buf());
    let ended = match session_log::SessionStore::open(&store, log, &mut ()) {
        Ok((mut writer, _)) => session_log::abandon_interrupted(
            writer.as_mut(),
            &user_questions::ErrorCode::AskAborted,
            ABANDONED_TEXT,
        )
        .is_ok_and(|report| !report.results.is_empty()),
        Err(_) => return false,
    };
    let _ = std::fs::remove_file(named.with_extension("sock"));
    let _ = std::fs::remove_file(named);
    ended
}

/// Withdraws every bridge of the state directory waiting on the ask `fingerprint` names
/// ([`NativeAsk::fingerprint`](native_asks::NativeAsk::fingerprint)): the agent settled it
/// itself. Sockets nobody listens on any more (a bridge that was killed) are removed. How many
/// bridges were reached.
pub async fn withdraw(state_dir: &Path, fingerprint: &str) -> usize {
    let prefix = format!("{}-", hash(fingerprint));
    let Ok(entries) = std::fs::read_dir(waiting_dir(state_dir)) else {
        return 0;
    };
    let mut reached = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if !(name.starts_with(&prefix) && name.ends_with(".sock")) {
            continue;
        }
        match UnixStream::connect(entry.path()).await {
            Ok(_) => reached += 1,
            Err(error) if error.kind() == io::ErrorKind::ConnectionRefused => {
                bury(state_dir, &entry.path().with_extension("log"));
                let _ = std::fs::remove_file(entry.path());
            }
            Err(_) => {}
        }
    }
    reached
}

/// A stable 64-bit FNV-1a hash of `text`, in hex: the same in every process and build.
pub(crate) fn hash(text: &str) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in text.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{hash:016x}")
}
