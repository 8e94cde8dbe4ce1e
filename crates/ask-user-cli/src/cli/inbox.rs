//! `ask-user inbox`: one page and one notification stream for every MCP session of the machine
//! (the sessions of one state directory). Each `ask-user mcp` with a surface configured hands
//! its sessions' questions to it over a socket in the state directory, starting it when none
//! runs; the page also lists the continued questions of every log there. The meeting place (the
//! socket, the lock, the kept address) is `ask_user_inbox::Rendezvous`; starting the process is
//! this binary's.

use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;

use ask_user_inbox::{Address, Inbox, Rendezvous};
use ask_user_web::{WebOptions, WebSurface};
use clap::Args;
use pending_answer::QuestionDesk;
use tokio_util::sync::CancellationToken;
use tokio_util::task::AbortOnDropHandle;

use super::{CliError, Exit};
use crate::host::LogDesk;
use ask_user_notify::NotifyArgs;

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
    #[arg(long, alias = "web-addr", value_name = "ADDR")]
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
    pub pg: ask_user_pg::PgArgs,
}

fn io_error(code: &'static str, what: &str) -> impl Fn(std::io::Error) -> CliError {
    move |error| CliError::failure(code, format!("{what}: {error}"))
}

pub(super) async fn run(args: InboxArgs, file: &super::config::Config) -> Result<Exit, CliError> {
    let pg = args.pg.filled(args.state_dir.is_some(), file.pg()?);
    if pg.pg.is_some() && !args.url {
        // A database's sessions are answered through its ledger from any process: its page is
        // the one `serve --pg` serves.
        return super::web::serve_desk(&pg, &[], args.addr, file).await;
    }
    let state_dir = super::state_dir(args.state_dir.clone(), file)?;
    let rendezvous = Rendezvous::new(&state_dir);
    if args.url {
        if let Some(running) = rendezvous.running().await {
            println!("{}", running.url());
            return Ok(Exit::Ok);
        }
        eprintln!(
            "no inbox runs for {} (start one with `{} inbox`)",
            super::visible(&state_dir.display().to_string()),
            super::invoked()
        );
        return Ok(Exit::Failure);
    }
    // Only its owner reads what the state directory keeps (tightened, with a warning, if not).
    session_log::private_dir(&state_dir).map_err(io_error("STATE_DIR", "the state directory"))?;
    // One inbox per state directory: the lock is held for as long as this one runs.
    let Some(lock) = rendezvous
        .lock()
        .map_err(io_error("STATE_DIR", "the inbox lock"))?
    else {
        // Said without the token: this may be an inbox started in the background, whose
        // stderr is a file.
        match rendezvous.running().await {
            Some(running) => eprintln!(
                "an inbox runs for this state directory already: {} (`{} inbox --url` prints its address with the token)",
                running.base(),
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
    for unused in file.unused_surfaces() {
        eprintln!("inbox › {}", super::visible(&unused));
    }
    let notifier = args.notify.start(
        &file.notify,
        inbox.seam(),
        Some(server.links(public_url)),
        false,
    )?;
    // Bridges killed outright (`SIGKILL`) leave an ask nobody waits on: its card goes.
    let _sweeping = AbortOnDropHandle::new(tokio::spawn(ask_user_bridge::sweep_every(
        state_dir.clone(),
        SWEEP_EVERY,
    )));
    // An agent waiting at its own terminal (its hook told the inbox): a notification.
    let _attention = notifier.map(|notifier| {
        inbox.follow_attention(move |a| notifier.announce(&a.agent, &a.session, &a.text()))
    });

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
        // Restarted, it serves the kept address and token again: open pages wait for it.
        returns: true,
        tls: file.web.server_tls()?,
        ..WebOptions::default()
    };
    let surface = WebSurface::new(inbox.seam(), Some(inbox.desk()), options)
        .map_err(|e| CliError::failure("WEB", e.to_string()))?;
    let server = if args.addr.is_none() {
        surface.bind_or_free_port(addr).await
    } else {
        surface.bind(addr).await
    };
    let server = server.map_err(|e| super::web::bind_error(addr, &e))?;
    Ok((surface, server))
}

/// How a host reaches the inbox of `state_dir`: its socket, and when nothing answers there, a
/// new inbox started in the background (`ask-user inbox --state-dir DIR`, reading the same
/// configuration file, with `inbox_args` and the webhooks' `secret` in its environment:
/// `Rendezvous::spawn`), at most once every `RESPAWN_EVERY`.
pub(crate) fn connector(
    state_dir: PathBuf,
    loaded: &super::config::Loaded,
    mut inbox_args: Vec<std::ffi::OsString>,
    secret: Option<String>,
) -> ask_user_inbox::Connect {
    if let Some(path) = loaded.explicit_path() {
        let path = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
        inbox_args.splice(0..0, ["--config".into(), path.into()]);
    }
    let rendezvous = Rendezvous::new(&state_dir);
    let starter = rendezvous.clone();
    rendezvous.connector(Arc::new(move || {
        let mut command = std::process::Command::new(std::env::current_exe()?);
        command.arg("inbox").arg("--state-dir").arg(&state_dir);
        command.args(&inbox_args);
        if let Some(secret) = &secret {
            command.env(ask_user_notify::WEBHOOK_SECRET_ENV, secret);
        }
        starter.spawn(command)
    }))
}

/// How often the inbox ends the asks of native-ask bridges killed outright.
const SWEEP_EVERY: std::time::Duration = std::time::Duration::from_secs(2);
