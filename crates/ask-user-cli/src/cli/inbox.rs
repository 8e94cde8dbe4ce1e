//! `ask-user inbox`: one page and one notification stream for every MCP session of the machine
//! (the sessions of one state directory). Each `ask-user mcp` with a surface configured hands
//! its sessions' questions to it over a socket in the state directory, starting it when none
//! runs (`ask_user_inbox`); the page also lists the continued questions of every log there.
//!
//! The page's address and token are kept in `inbox.json` in the state directory (mode 0600), so
//! a bookmark keeps working across restarts; `inbox.lock` makes sure one inbox runs per
//! directory.

use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use ask_user_inbox::{Inbox, SOCKET_NAME};
use ask_user_web::{WebOptions, WebSurface};
use clap::Args;
use pending_answer::QuestionDesk;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use super::notify::NotifyArgs;
use super::{CliError, Exit};
use crate::host::LogDesk;

/// The page's default address: a fixed port, so the first bookmark is the one that stays.
pub(crate) const DEFAULT_ADDR: SocketAddr =
    SocketAddr::new(std::net::IpAddr::V4(Ipv4Addr::LOCALHOST), 8766);

/// Arguments of `inbox`.
#[derive(Debug, Args)]
pub struct InboxArgs {
    /// Print the URL (with its token) of the inbox that runs for the state directory, or say
    /// that none runs; start nothing.
    #[arg(long)]
    pub url: bool,
    /// The state directory whose sessions the inbox shows (default: `ask-user mcp`'s).
    #[arg(long, value_name = "DIR")]
    pub state_dir: Option<PathBuf>,
    /// Where to serve the page (default: where it was served last, else 127.0.0.1:8766). An
    /// address other than loopback serves other machines too: only when given here.
    #[arg(long, value_name = "ADDR")]
    pub addr: Option<SocketAddr>,
    /// The page's address as another device reaches it (a phone pressing a notification's
    /// answer button), e.g. `http://192.168.1.20:8766`; default: the address served.
    #[arg(long, value_name = "URL")]
    pub web_public_url: Option<String>,
    #[command(flatten)]
    pub notify: NotifyArgs,
    /// Show the sessions of this database instead (`ask-user mcp --pg` keeps its MCP
    /// sessions there): what `ask-user serve --pg` does, answers going to the database's ledger.
    #[command(flatten)]
    pub pg: super::pg::PgArgs,
}

/// What `inbox.json` keeps: where the page was served, its token, and the inbox's process id.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Address {
    pub(crate) addr: SocketAddr,
    pub(crate) token: String,
    #[serde(default)]
    pub(crate) pid: u32,
    /// Whether the page is served over TLS (`https://`).
    #[serde(default)]
    pub(crate) tls: bool,
}

impl Address {
    fn path(state_dir: &Path) -> PathBuf {
        state_dir.join("inbox.json")
    }

    /// The address kept in `state_dir`, if it can be read.
    pub(crate) fn load(state_dir: &Path) -> Option<Self> {
        let text = std::fs::read_to_string(Self::path(state_dir)).ok()?;
        serde_json::from_str(&text).ok()
    }

    /// `http://ADDR/`, or `https://` over TLS.
    fn base(&self) -> String {
        let scheme = if self.tls { "https" } else { "http" };
        format!("{scheme}://{}/", self.addr)
    }

    /// The page's URL with its token.
    pub(crate) fn url(&self) -> String {
        format!("{}?token={}", self.base(), self.token)
    }

    fn save(&self, state_dir: &Path) -> std::io::Result<()> {
        use std::io::Write as _;
        use std::os::unix::fs::OpenOptionsExt as _;
        let path = Self::path(state_dir);
        let temp = state_dir.join(format!(".inbox.json.{}", std::process::id()));
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&temp)?;
        file.write_all(
            serde_json::to_string(self)
                .map_err(std::io::Error::other)?
                .as_bytes(),
        )?;
        file.sync_all()?;
        std::fs::rename(&temp, &path)
    }
}

/// The socket of the inbox of `state_dir`.
pub(crate) fn socket(state_dir: &Path) -> PathBuf {
    state_dir.join(SOCKET_NAME)
}

/// The page's address without its token (`http://ADDR/`), as kept in `state_dir`: what a line
/// that may end in a log file says.
pub(crate) fn page_address(state_dir: &Path) -> Option<String> {
    Address::load(state_dir).map(|a| a.base())
}

/// Listens on `socket`, the owner's alone: it is bound in a fresh directory only the owner can
/// enter, made the owner's alone, and only then moved to its place, so nobody connects to it
/// before its mode is set. (Whoever connects can answer every question.) A socket left there
/// is a dead inbox's: the caller holds the lock.
fn listen_privately(state_dir: &Path, socket: &Path) -> Result<tokio::net::UnixListener, CliError> {
    use std::os::unix::fs::{DirBuilderExt as _, PermissionsExt as _};
    let fail = |what| io_error("INBOX_SOCKET", what);
    let private = state_dir.join(format!(".inbox-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&private);
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(&private)
        .map_err(fail("cannot make the inbox socket's directory"))?;
    let staged = private.join(SOCKET_NAME);
    let bound = tokio::net::UnixListener::bind(&staged)
        .map_err(fail("cannot listen on the inbox socket"))
        .and_then(|listener| {
            std::fs::set_permissions(&staged, std::fs::Permissions::from_mode(0o600))
                .map_err(fail("cannot protect the inbox socket"))?;
            let _ = std::fs::remove_file(socket);
            std::fs::rename(&staged, socket)
                .map_err(fail("cannot put the inbox socket in place"))?;
            Ok(listener)
        });
    let _ = std::fs::remove_dir_all(&private);
    bound
}

/// The URL of the inbox that runs for `state_dir`, if one answers on its socket.
pub(crate) async fn running_url(state_dir: &Path) -> Option<String> {
    ask_user_inbox::connect(&socket(state_dir)).await.ok()?;
    Address::load(state_dir).map(|a| a.url())
}

fn state_dir_of(given: Option<PathBuf>, file: &super::config::Config) -> Result<PathBuf, CliError> {
    super::state_dir(given, file).ok_or_else(|| {
        CliError::new(
            "BAD_USAGE",
            "no state directory: set --state-dir (neither XDG_STATE_HOME nor HOME is set)",
            Exit::Usage,
        )
    })
}

fn io_error(code: &'static str, what: &str) -> impl Fn(std::io::Error) -> CliError {
    move |error| CliError::new(code, format!("{what}: {error}"), Exit::Failure)
}

pub(super) async fn run(args: InboxArgs, file: &super::config::Config) -> Result<Exit, CliError> {
    let pg = args.pg.filled(args.state_dir.is_some(), file);
    if pg.pg.is_some() && !args.url {
        // A database's sessions are answered through its ledger from any process: its page is
        // the one `serve --pg` serves.
        return super::web::serve_desk(&pg, &[], args.addr, file).await;
    }
    let state_dir = state_dir_of(args.state_dir.clone(), file)?;
    if args.url {
        if let Some(url) = running_url(&state_dir).await {
            println!("{url}");
            return Ok(Exit::Ok);
        }
        eprintln!(
            "no inbox runs for {} (start one with `{} inbox`)",
            super::visible(&state_dir.display().to_string()),
            super::invoked()
        );
        return Ok(Exit::Failure);
    }
    std::fs::create_dir_all(&state_dir).map_err(io_error("STATE_DIR", "the state directory"))?;
    // One inbox per state directory: the lock is held for as long as this one runs.
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(state_dir.join("inbox.lock"))
        .map_err(io_error("STATE_DIR", "the inbox lock"))?;
    if lock.try_lock().is_err() {
        // Said without the token: this may be an inbox started in the background, whose
        // stderr is a file.
        match running_url(&state_dir).await {
            Some(_) => eprintln!(
                "an inbox runs for this state directory already: {} (`{} inbox --url` prints its address with the token)",
                page_address(&state_dir).unwrap_or_default(),
                super::invoked()
            ),
            None => eprintln!("an inbox is starting for this state directory already"),
        }
        return Ok(Exit::Ok);
    }
    let socket = socket(&state_dir);
    let listener = listen_privately(&state_dir, &socket)?;

    let store = crate::store::JsonlStore::new(state_dir.clone());
    let fallback: Arc<dyn QuestionDesk> = Arc::new(LogDesk::store(Arc::new(store)));
    let inbox = Inbox::new(fallback)
        .map_err(|e| CliError::new("INTERNAL", e.to_string(), Exit::Failure))?;
    let saved = Address::load(&state_dir);
    let (surface, server) = serve_page(&inbox, &args, saved.as_ref(), file).await?;
    let address = Address {
        addr: server.local_addr(),
        token: surface.token().to_owned(),
        pid: std::process::id(),
        tls: server.base_url().starts_with("https:"),
    };
    address
        .save(&state_dir)
        .map_err(io_error("STATE_DIR", "cannot keep the page's address"))?;
    let _guard = surface.register(inbox.seam());
    let public_url = args
        .web_public_url
        .as_deref()
        .or(file.web.public_url.as_deref());
    let _notifier = args.notify.start(
        &file.notify,
        inbox.seam(),
        Some(surface.links(&server, public_url)),
        false,
    )?;

    // The page follows the inbox's desk: its changes (a host linked or went, a question
    // continued, a log answered from a shell) and its labels (where each session runs).
    let stop = CancellationToken::new();
    let serving = {
        let inbox = inbox.clone();
        let stop = stop.clone();
        tokio::spawn(async move { inbox.serve(listener, stop).await })
    };
    eprintln!(
        "inbox › every MCP session of {} on one page (Ctrl-C to stop):",
        super::visible(&state_dir.display().to_string())
    );
    println!("{}", address.url());
    wait_for_stop().await;
    stop.cancel();
    let _ = serving.await;
    server.stop().await;
    let _ = std::fs::remove_file(&socket);
    drop(lock);
    Ok(Exit::Ok)
}

/// The page, on the address asked for, else the one it had, else the default; when the one it
/// had (or the default) is taken, a free port.
async fn serve_page(
    inbox: &Inbox,
    args: &InboxArgs,
    saved: Option<&Address>,
    file: &super::config::Config,
) -> Result<(WebSurface, ask_user_web::WebServer), CliError> {
    // Where it served last, on loopback: an address beyond loopback serves others only when
    // asked for each time (by the flag or the configuration file).
    let kept = saved.map(|s| SocketAddr::new(DEFAULT_ADDR.ip(), s.addr.port()));
    let addr = args.addr.or(file.web.addr).or(kept).unwrap_or(DEFAULT_ADDR);
    let options = WebOptions {
        loopback_only: addr.ip().is_loopback(),
        token: saved.map(|s| s.token.clone()),
        // Each host's own window decides: the inbox's cards show no countdown.
        countdowns: false,
        tls: super::web::load_tls(file.web_tls.as_ref())?,
        ..WebOptions::default()
    };
    let surface = WebSurface::new(inbox.seam(), Some(inbox.desk()), options)
        .map_err(|e| CliError::new("WEB", e.to_string(), Exit::Failure))?;
    match surface.bind(addr).await {
        Ok(server) => Ok((surface, server)),
        Err(error) if args.addr.is_none() => {
            tracing::warn!(%error, %addr, "the page's address is taken; serving on a free port");
            let server = surface
                .bind(SocketAddr::new(addr.ip(), 0))
                .await
                .map_err(io_error("WEB_BIND", "cannot serve the page"))?;
            Ok((surface, server))
        }
        Err(error) => Err(CliError::new(
            "WEB_BIND",
            format!("cannot serve the page on {addr}: {error}"),
            Exit::Failure,
        )),
    }
}

/// Ctrl-C or `SIGTERM`.
async fn wait_for_stop() {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        () = async {
            match term.as_mut() {
                Some(term) => { term.recv().await; }
                None => std::future::pending().await,
            }
        } => {}
    }
}

/// How a host reaches the inbox of `state_dir`: its socket, and when nothing answers there, a
/// new inbox started in the background (`ask-user inbox --state-dir DIR` with `inbox_args`, its
/// stderr appended to `inbox.log` there), at most once every [`RESPAWN_EVERY`].
pub(crate) fn connector(
    state_dir: PathBuf,
    inbox_args: Vec<std::ffi::OsString>,
    secret: Option<String>,
) -> ask_user_inbox::Connect {
    let last_start: Arc<std::sync::Mutex<Option<std::time::Instant>>> = Arc::default();
    Arc::new(move || {
        let state_dir = state_dir.clone();
        let inbox_args = inbox_args.clone();
        let secret = secret.clone();
        let last_start = Arc::clone(&last_start);
        Box::pin(async move {
            let socket = socket(&state_dir);
            if let Ok(stream) = ask_user_inbox::connect(&socket).await {
                return Ok(stream);
            }
            let start = {
                let mut last = user_questions::sync::lock_unpoisoned(&last_start);
                let due = last.is_none_or(|at| at.elapsed() >= RESPAWN_EVERY);
                if due {
                    *last = Some(std::time::Instant::now());
                }
                due
            };
            if start {
                start_inbox(&state_dir, &inbox_args, secret.as_deref())?;
            }
            // A new inbox binds its socket within moments.
            for _ in 0..50 {
                tokio::time::sleep(Duration::from_millis(100)).await;
                if let Ok(stream) = ask_user_inbox::connect(&socket).await {
                    return Ok(stream);
                }
            }
            Err(std::io::Error::new(
                std::io::ErrorKind::NotConnected,
                format!("no inbox answers on {}", socket.display()),
            ))
        })
    })
}

/// How often a host starts an inbox at most when none answers.
pub(crate) const RESPAWN_EVERY: Duration = Duration::from_secs(10);

/// Starts `ask-user inbox` for `state_dir` in a process group of its own (it outlives this
/// process), its stderr appended to `inbox.log` in the state directory.
fn start_inbox(
    state_dir: &Path,
    inbox_args: &[std::ffi::OsString],
    secret: Option<&str>,
) -> std::io::Result<()> {
    use std::os::unix::process::CommandExt as _;
    std::fs::create_dir_all(state_dir)?;
    let log = {
        use std::os::unix::fs::OpenOptionsExt as _;
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .mode(0o600)
            .open(state_dir.join("inbox.log"))?
    };
    let mut command = std::process::Command::new(std::env::current_exe()?);
    command
        .arg("inbox")
        .arg("--state-dir")
        .arg(state_dir)
        .args(inbox_args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(log)
        .process_group(0);
    if let Some(secret) = secret {
        command.env(super::notify::WEBHOOK_SECRET_ENV, secret);
    }
    let mut child = command.spawn()?;
    tracing::info!(pid = child.id(), "started the inbox");
    // Reaped when it ends (an inbox that found another one running ends at once).
    std::thread::spawn(move || {
        let _ = child.wait();
    });
    Ok(())
}
