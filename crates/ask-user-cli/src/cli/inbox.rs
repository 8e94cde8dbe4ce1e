//! `ask-user inbox`: one page and one notification stream for every MCP session of the machine
//! (the sessions of one state directory). Each `ask-user mcp` with a surface configured hands
//! its sessions' questions to it over a socket in the state directory, starting it when none
//! runs; the page also lists the continued questions of every log there. The meeting place (the
//! socket, the lock, the kept address) is `ask_user_inbox::Rendezvous`; starting the process is
//! this binary's.

use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use ask_user_inbox::{Address, Inbox, Rendezvous};
use ask_user_web::{WebOptions, WebSurface};
use clap::Args;
use pending_answer::QuestionDesk;
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

/// The URL (with its token) of the inbox that runs for `state_dir`, if one answers.
pub(crate) async fn running_url(state_dir: &Path) -> Option<String> {
    Rendezvous::new(state_dir).running().await.map(|a| a.url())
}

/// The page's address without its token (`http://ADDR/`), as kept in `state_dir`: what a line
/// that may end in a log file says.
pub(crate) fn page_address(state_dir: &Path) -> Option<String> {
    Rendezvous::new(state_dir).address().map(|a| a.base())
}

fn state_dir_of(given: Option<PathBuf>, file: &super::config::Config) -> Result<PathBuf, CliError> {
    super::state_dir(given, file).ok_or_else(|| {
        CliError::usage(
            "no state directory: set --state-dir (neither XDG_STATE_HOME nor HOME is set)",
        )
    })
}

fn io_error(code: &'static str, what: &str) -> impl Fn(std::io::Error) -> CliError {
    move |error| CliError::failure(code, format!("{what}: {error}"))
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
    let rendezvous = Rendezvous::new(&state_dir);
    // One inbox per state directory: the lock is held for as long as this one runs.
    let Some(lock) = rendezvous
        .lock()
        .map_err(io_error("STATE_DIR", "the inbox lock"))?
    else {
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
    };
    let listener = rendezvous
        .listen()
        .map_err(io_error("INBOX_SOCKET", "the inbox socket"))?;

    let store = crate::store::JsonlStore::new(state_dir.clone());
    let fallback: Arc<dyn QuestionDesk> = Arc::new(LogDesk::store(Arc::new(store)));
    let inbox = Inbox::new(fallback).map_err(|e| CliError::failure("INTERNAL", e.to_string()))?;
    let saved = rendezvous.address();
    let (surface, server) = serve_page(&inbox, &args, saved.as_ref(), file).await?;
    let address = Address {
        addr: server.local_addr(),
        token: surface.token().to_owned(),
        pid: std::process::id(),
        tls: server.base_url().starts_with("https:"),
    };
    rendezvous
        .keep(&address)
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
    super::stopped().await;
    stop.cancel();
    let _ = serving.await;
    server.stop().await;
    rendezvous.remove_socket();
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
        .map_err(|e| CliError::failure("WEB", e.to_string()))?;
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
        Err(error) => Err(CliError::failure(
            "WEB_BIND",
            format!("cannot serve the page on {addr}: {error}"),
        )),
    }
}

/// How a host reaches the inbox of `state_dir`: its socket, and when nothing answers there, a
/// new inbox started in the background (`ask-user inbox --state-dir DIR` with `inbox_args`, its
/// stderr appended to `inbox.log` there), at most once every `RESPAWN_EVERY`.
pub(crate) fn connector(
    state_dir: PathBuf,
    inbox_args: Vec<std::ffi::OsString>,
    secret: Option<String>,
) -> ask_user_inbox::Connect {
    let rendezvous = Rendezvous::new(&state_dir);
    rendezvous.connector(Arc::new(move || {
        start_inbox(&state_dir, &inbox_args, secret.as_deref())
    }))
}

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
        command.env(ask_user_notify::WEBHOOK_SECRET_ENV, secret);
    }
    let mut child = command.spawn()?;
    tracing::info!(pid = child.id(), "started the inbox");
    // Reaped when it ends (an inbox that found another one running ends at once).
    std::thread::spawn(move || {
        let _ = child.wait();
    });
    Ok(())
}
