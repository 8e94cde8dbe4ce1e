//! Where a machine's inbox and its hosts meet: a state directory, with the inbox's socket, the
//! lock that keeps one inbox per directory, and the page's kept address and token, and the way a
//! host reaches the inbox there (starting one when none answers).
//!
//! * `inbox.sock`: the socket, the owner's alone (mode 0600, bound where nobody else can reach it
//!   first): whoever connects can answer every question.
//! * `inbox.lock`: held for as long as an inbox runs for the directory.
//! * `inbox.json`: where the page was served, its token and the inbox's process id (mode 0600),
//!   so a bookmark keeps working across restarts.
//!
//! * `inbox.log`: the stderr of an inbox started in the background ([`Rendezvous::spawn`]).
//!
//! What an inbox process is (the program and its arguments) is the caller's ([`Starter`]);
//! [`Rendezvous::spawn`] starts the command it is given so that it outlives its starter.

use std::fs::File;
use std::io;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use user_questions::sync::lock_unpoisoned as lock;

use crate::link::{Connect, Stream};

/// The inbox's socket in a state directory.
pub const SOCKET_NAME: &str = "inbox.sock";

/// The lock an inbox holds for its state directory.
pub const LOCK_NAME: &str = "inbox.lock";

/// Where the page's address and token are kept.
pub const ADDRESS_NAME: &str = "inbox.json";

/// Where an inbox started in the background writes its stderr.
pub const LOG_NAME: &str = "inbox.log";

/// How often a host starts an inbox at most when none answers.
pub const RESPAWN_EVERY: Duration = Duration::from_secs(10);

/// How long a host waits for an inbox it started to bind its socket.
pub const STARTED_WITHIN: Duration = Duration::from_secs(5);

/// Starts an inbox for the state directory in the background (a process of the caller's).
pub type Starter = Arc<dyn Fn() -> io::Result<()> + Send + Sync>;

/// Connects to the inbox listening at `socket`.
///
/// # Errors
///
/// When nothing listens there.
pub async fn connect(socket: &Path) -> io::Result<Stream> {
    let stream = tokio::net::UnixStream::connect(socket).await?;
    Ok(Box::new(stream))
}

/// What `inbox.json` keeps: where the page was served, its token, and the inbox's process id.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Address {
    /// Where the page is served.
    pub addr: SocketAddr,
    /// The page's capability token.
    pub token: String,
    /// The inbox's process id.
    #[serde(default)]
    pub pid: u32,
    /// Whether the page is served over TLS (`https://`).
    #[serde(default)]
    pub tls: bool,
}

impl Address {
    /// `http://ADDR/`, or `https://` over TLS: the page without its token (what a line that may
    /// end in a log file says).
    pub fn base(&self) -> String {
        let scheme = if self.tls { "https" } else { "http" };
        format!("{scheme}://{}/", self.addr)
    }

    /// The page's URL with its token.
    pub fn url(&self) -> String {
        format!("{}?token={}", self.base(), self.token)
    }
}

/// An inbox's hold on its state directory: one inbox runs per directory while it lives.
#[derive(Debug)]
pub struct InboxLock {
    _file: File,
}

/// A state directory as the meeting place of an inbox and its hosts. See the
/// [module docs](self).
#[derive(Clone, Debug)]
pub struct Rendezvous {
    dir: PathBuf,
}

impl Rendezvous {
    /// The meeting place in `dir`.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    /// The state directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The inbox's socket.
    pub fn socket(&self) -> PathBuf {
        self.dir.join(SOCKET_NAME)
    }

    /// Takes the directory's inbox lock (making the directory): `None` when another inbox holds
    /// it.
    ///
    /// # Errors
    ///
    /// When the directory or the lock file cannot be made.
    pub fn lock(&self) -> io::Result<Option<InboxLock>> {
        private_dir(&self.dir)?;
        let file = {
            use std::os::unix::fs::OpenOptionsExt as _;
            std::fs::OpenOptions::new()
                .create(true)
                .truncate(false)
                .write(true)
                .mode(0o600)
                .open(self.dir.join(LOCK_NAME))?
        };
        Ok(file.try_lock().is_ok().then_some(InboxLock { _file: file }))
    }

    /// Listens on the socket, the owner's alone: it is bound in a fresh directory only the owner
    /// can enter, made the owner's alone, and only then moved to its place, so nobody connects to
    /// it before its mode is set. A socket left there is a dead inbox's: the caller holds the
    /// lock.
    ///
    /// # Errors
    ///
    /// When the socket cannot be bound, protected or put in place (the error says which).
    pub fn listen(&self) -> io::Result<tokio::net::UnixListener> {
        use std::os::unix::fs::{DirBuilderExt as _, PermissionsExt as _};
        let step = |what: &'static str| {
            move |e: io::Error| io::Error::new(e.kind(), format!("{what}: {e}"))
        };
        let private = self.dir.join(format!(".inbox-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&private);
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&private)
            .map_err(step("cannot make the inbox socket's directory"))?;
        let staged = private.join(SOCKET_NAME);
        let bound = tokio::net::UnixListener::bind(&staged)
            .map_err(step("cannot listen on the inbox socket"))
            .and_then(|listener| {
                std::fs::set_permissions(&staged, std::fs::Permissions::from_mode(0o600))
                    .map_err(step("cannot protect the inbox socket"))?;
                let _ = std::fs::remove_file(self.socket());
                std::fs::rename(&staged, self.socket())
                    .map_err(step("cannot put the inbox socket in place"))?;
                Ok(listener)
            });
        let _ = std::fs::remove_dir_all(&private);
        bound
    }

    /// Takes the socket away (an inbox stopping).
    pub fn remove_socket(&self) {
        let _ = std::fs::remove_file(self.socket());
    }

    /// The address kept in the directory, if it can be read.
    pub fn address(&self) -> Option<Address> {
        let text = std::fs::read_to_string(self.dir.join(ADDRESS_NAME)).ok()?;
        serde_json::from_str(&text).ok()
    }

    /// Keeps `address` (mode 0600, replaced whole).
    ///
    /// # Errors
    ///
    /// When it cannot be written.
    pub fn keep(&self, address: &Address) -> io::Result<()> {
        use std::io::Write as _;
        use std::os::unix::fs::OpenOptionsExt as _;
        let temp = self
            .dir
            .join(format!(".{ADDRESS_NAME}.{}", std::process::id()));
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&temp)?;
        file.write_all(
            serde_json::to_string(address)
                .map_err(io::Error::other)?
                .as_bytes(),
        )?;
        file.sync_all()?;
        std::fs::rename(&temp, self.dir.join(ADDRESS_NAME))
    }

    /// Starts `command` (an inbox for this directory) in the background, in a process group of
    /// its own so that it outlives this process, with no stdin or stdout and its stderr appended
    /// to [`LOG_NAME`] in the directory (made the owner's alone); it is reaped when it ends.
    ///
    /// # Errors
    ///
    /// When the directory or the log cannot be made, or the command cannot start.
    pub fn spawn(&self, mut command: std::process::Command) -> io::Result<()> {
        use std::os::unix::fs::OpenOptionsExt as _;
        use std::os::unix::process::CommandExt as _;
        private_dir(&self.dir)?;
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .mode(0o600)
            .open(self.dir.join(LOG_NAME))?;
        command
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(log)
            .process_group(0);
        let mut child = command.spawn()?;
        tracing::info!(pid = child.id(), "started the inbox");
        // Reaped when it ends (an inbox that found another one running ends at once).
        std::thread::spawn(move || {
            let _ = child.wait();
        });
        Ok(())
    }

    /// The address of the inbox that runs for the directory, if one answers on its socket.
    pub async fn running(&self) -> Option<Address> {
        connect(&self.socket()).await.ok()?;
        self.address()
    }

    /// How a host reaches the inbox: its socket, and when nothing answers there, an inbox
    /// started by `start` (at most once every [`RESPAWN_EVERY`]), waited for until it binds its
    /// socket (at most [`STARTED_WITHIN`]).
    pub fn connector(&self, start: Starter) -> Connect {
        let last_start: Arc<Mutex<Option<Instant>>> = Arc::default();
        let socket = self.socket();
        Arc::new(move || {
            let (socket, start, last_start) =
                (socket.clone(), Arc::clone(&start), Arc::clone(&last_start));
            Box::pin(async move {
                if let Ok(stream) = connect(&socket).await {
                    return Ok(stream);
                }
                let due = {
                    let mut last = lock(&last_start);
                    let due = last.is_none_or(|at| at.elapsed() >= RESPAWN_EVERY);
                    if due {
                        *last = Some(Instant::now());
                    }
                    due
                };
                if due {
                    start()?;
                }
                // A new inbox binds its socket within moments; nothing tells when, so the
                // socket is tried a few times a second until it does.
                let started = tokio::time::Instant::now();
                while started.elapsed() < STARTED_WITHIN {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    if let Ok(stream) = connect(&socket).await {
                        return Ok(stream);
                    }
                }
                Err(io::Error::new(
                    io::ErrorKind::NotConnected,
                    format!("no inbox answers on {}", socket.display()),
                ))
            })
        })
    }
}

/// Creates `dir` and its missing parents for their owner alone (`0700`); a directory that exists
/// keeps its mode (the binary makes the state directory private before it starts anything).
fn private_dir(dir: &Path) -> io::Result<()> {
    use std::os::unix::fs::DirBuilderExt as _;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}
