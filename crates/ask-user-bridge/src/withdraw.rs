//! How a later event of an agent (its tool ran, its dialog denied) withdraws the bridge still
//! waiting on the same prompt: each waiting bridge listens on a socket of its own in the state
//! directory's `native` folder (the owner's alone), named by a hash of the ask's fingerprint;
//! [`withdraw`] connects to every socket of that hash, and each bridge reached stops asking.

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
    /// Listens for [`withdraw`] of `fingerprint`: a connection cancels `cancel`.
    pub(crate) fn listen(
        state_dir: &Path,
        fingerprint: &str,
        cancel: &CancellationToken,
    ) -> io::Result<Self> {
        let dir = waiting_dir(state_dir);
        std::fs::create_dir_all(&dir)?;
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700))?;
        let path = dir.join(format!("{}-{}.sock", hash(fingerprint), short_id()));
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
    }
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
