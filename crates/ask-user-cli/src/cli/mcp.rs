//! `ask-user mcp`: serve `ask_user_question` to an MCP client, over stdio (what IDE
//! configurations start) or streamable HTTP on loopback. See the `ask-user-mcp` crate README for
//! each client's configuration.

use std::net::SocketAddr;
use std::path::PathBuf;

use ask_user_mcp::{AskUserMcp, HTTP_PATH, McpHttpOptions, McpOptions};
use clap::Args;
use tokio_util::sync::CancellationToken;

use super::{CliError, Exit, ToolArgs};

/// Arguments of `mcp`.
#[derive(Debug, Args)]
#[command(mut_arg("pg", |arg| arg.help(MCP_PG_HELP).long_help(MCP_PG_HELP)))]
pub struct McpArgs {
    #[command(flatten)]
    tool: ToolArgs,
    /// Where the session logs go, one JSONL log per MCP session (default:
    /// `$XDG_STATE_HOME/ask-user/mcp`, else `~/.local/state/ask-user/mcp`).
    #[arg(long, value_name = "DIR")]
    state_dir: Option<PathBuf>,
    /// Serve streamable HTTP at `http://ADDR/mcp` instead of stdio: loopback only, unless the
    /// configuration file gives bearer tokens (`[mcp] tokens`), which every request must then
    /// carry.
    #[arg(long, value_name = "ADDR")]
    http: Option<SocketAddr>,
    /// Serve clients that show forms in the 2026-07-28 era in timed mode too (their forms come
    /// through tasks and stay on screen after the window). By default such clients are offered
    /// the handshake era, where a timed form goes when its window closes; a client that speaks
    /// only 2026-07-28 needs this flag to connect to a timed server.
    #[arg(long)]
    stateless_forms: bool,
    #[command(flatten)]
    http_flags: ask_user_mcp::HttpArgs,
    #[command(flatten)]
    pg: ask_user_pg::PgArgs,
    /// Hand every session's questions to the machine's inbox too (one page and one
    /// notification stream for every agent: `ask-user inbox`), starting it when none runs.
    /// Implied by --web and the notification flags, which the started inbox gets.
    #[arg(long)]
    inbox: bool,
    #[command(flatten)]
    web: ask_user_web::WebArgs,
    #[command(flatten)]
    notify: ask_user_notify::NotifyArgs,
}

/// `--pg` of `mcp`, which names no session itself (the other commands' help says how a name
/// replaces a log path).
const MCP_PG_HELP: &str = "Keep the MCP sessions in this PostgreSQL database (a libpq connection string or `postgres://` URL; TLS with sslmode=require, or verify-full and sslrootcert=CA_FILE) instead of log files in the state directory: any worker resumes them, and an answer given there from anywhere reaches a question in its window";

pub(super) async fn run(
    mut args: McpArgs,
    loaded: &super::config::Loaded,
) -> Result<Exit, CliError> {
    let file = &loaded.config;
    // A state directory given names where the sessions are: the file's database does not.
    args.pg = args.pg.filled(args.state_dir.is_some(), file.pg()?);
    let config = Some(args.tool.config(file.mode, file.timeout)?);
    // With --pg the sessions live in the database: no state directory is needed.
    let state_dir = match super::state_dir(args.state_dir.clone(), file) {
        Err(_) if args.pg.pg.is_some() => PathBuf::new(),
        dir => dir?,
    };
    if args.http.is_some() {
        // Its bearer tokens and TLS: served without them would be served open.
        file.needs("mcp")?;
    }
    let http = (args.http_flags)
        .options(args.http.is_some(), &file.mcp, file.mcp_tls.as_ref())
        .map_err(|e| CliError::new("BAD_TLS", e.to_string(), Exit::Usage))?;
    let options = McpOptions::new(&state_dir)
        .with_tool(config)
        .with_http(http.clone())
        .with_stateless_forms(args.stateless_forms);
    let (server, where_) = if let Some(url) = &args.pg.pg {
        let server = super::pg::mcp_server(url, args.pg.schema(), options)?;
        (server, "the database".to_owned())
    } else {
        let server =
            AskUserMcp::new(options).map_err(|e| CliError::log("STATE_DIR", e.to_string()))?;
        (server, state_dir.display().to_string())
    };
    let link = link_inbox(&args, &server, &state_dir, loaded)?;
    // Said once, on stderr (clients show it in their server logs): where the logs go, which
    // surfaces the questions go to, and the configured ones left out.
    let mut surfaces = vec!["the client's own form (when it shows forms)".to_owned()];
    match &link {
        Some(LinkedInbox::Started(link)) => {
            // Said once the inbox answers (a started one takes a moment). Without the token: a
            // client keeps this line in its logs.
            let _ = tokio::time::timeout(std::time::Duration::from_secs(5), link.connected()).await;
            let page = (ask_user_inbox::Rendezvous::new(&state_dir).running().await)
                .map(|running| running.base());
            surfaces.push(format!(
                "the inbox page {} (`{} inbox --url` prints its address with the token)",
                page.as_deref().map_or_else(
                    || "(not up yet)".to_owned(),
                    |u| super::visible(u).into_owned()
                ),
                super::invoked()
            ));
            surfaces.extend(args.notify.channels(&file.notify));
            surfaces.push(format!("`{} answer CALL_ID` from a shell", super::invoked()));
        }
        Some(LinkedInbox::Joined { .. }) => surfaces.push(format!(
            "the machine's inbox while one runs for the state directory (its page, its notifications, `{} answer CALL_ID` from a shell)",
            super::invoked()
        )),
        None => surfaces.push(format!(
            "the database's ledger (`{} answer --pg …` from any shell)",
            super::invoked()
        )),
    }
    eprintln!(
        "ask-user mcp: logs in {}; questions go to {}; late answers: `{} pending{}` lists them",
        super::visible(&where_),
        surfaces.join(", "),
        super::invoked(),
        if args.pg.pg.is_some() {
            " --pg <URL>"
        } else {
            ""
        }
    );
    for unused in file.unused_surfaces() {
        eprintln!("ask-user mcp: {}", super::visible(&unused));
    }
    let outcome = match args.http {
        None => server.serve_stdio().await,
        Some(addr) => serve_http(&server, addr, &http, &where_).await?,
    };
    outcome.map_err(|e| CliError::failure("MCP_TRANSPORT", e.to_string()))?;
    Ok(Exit::Ok)
}

/// Serves streamable HTTP at `addr` until Ctrl-C; beyond loopback only with bearer tokens.
async fn serve_http(
    server: &AskUserMcp,
    addr: SocketAddr,
    http: &McpHttpOptions,
    where_: &str,
) -> Result<Result<(), ask_user_mcp::ServeError>, CliError> {
    let listener = AskUserMcp::bind_http(addr, !http.bearer_tokens.is_empty())
        .await
        .map_err(|e| CliError::new("BAD_ADDRESS", e.to_string(), Exit::Usage))?;
    let local = listener
        .local_addr()
        .map_err(|e| CliError::new("BAD_ADDRESS", e.to_string(), Exit::Usage))?;
    // The address line is for the person (or a test) starting the server; stdout stays free of
    // anything else.
    let scheme = if http.tls.is_some() { "https" } else { "http" };
    let auth = match http.bearer_tokens.len() {
        0 => String::new(),
        1 => "; every request needs the bearer token of the configuration file".to_owned(),
        n => {
            format!("; every request needs one of the {n} bearer tokens of the configuration file")
        }
    };
    eprintln!("serving MCP at {scheme}://{local}{HTTP_PATH} (logs in {where_}{auth})");
    let cancel = CancellationToken::new();
    let _stop = super::cancel_on_stop(cancel.clone());
    Ok(server.serve_http(listener, cancel).await)
}

/// With a surface asked for (`--inbox`, `--web`, a notification flag), the link to the
/// machine's inbox, which is started with those surfaces when none runs.
fn link_inbox(
    args: &McpArgs,
    server: &AskUserMcp,
    state_dir: &std::path::Path,
    loaded: &super::config::Loaded,
) -> Result<Option<LinkedInbox>, CliError> {
    let flagged = args.inbox || args.web.web || args.notify.any();
    // The configuration file's page or notifications to a phone or a webhook are surfaces too
    // (its bell alone is not: a server in the background has no terminal).
    let file = &loaded.config;
    let configured = file.web.addr.is_some()
        || file.web.public_url.is_some()
        || file.notify.ntfy.is_some()
        || !file.notify.webhooks.is_empty();
    if !(flagged || configured) {
        if args.pg.pg.is_some() {
            return Ok(None);
        }
        // No surface of its own: the sessions still join an inbox that runs for the state
        // directory (started by another agent, a hook or the person), so its page and
        // `ask-user answer` reach them in their windows; none is started.
        let socket = ask_user_inbox::Rendezvous::new(state_dir).socket();
        let join: ask_user_inbox::Connect = std::sync::Arc::new(move || {
            let socket = socket.clone();
            Box::pin(async move { ask_user_inbox::connect(&socket).await })
        });
        return Ok(Some(LinkedInbox::Joined {
            _link: server.link_inbox(join),
        }));
    }
    if args.pg.pg.is_some() {
        if !flagged {
            // The file's surfaces are for the state directory's inbox; a database's sessions
            // have theirs in `ask-user inbox --pg`.
            return Ok(None);
        }
        return Err(CliError::usage(
            "the inbox of a database's sessions is `ask-user inbox --pg` (answers reach them through the database's ledger); --inbox, --web and the notification flags link the sessions of a state directory",
        ));
    }
    // What the started inbox would fail on is said here, where it is read.
    args.notify.config(&file.notify, false)?;
    let mut inbox_args = args.web.forwarded();
    let (notify, secret) = args.notify.forwarded();
    inbox_args.extend(notify);
    let connect = super::inbox::connector(state_dir.to_path_buf(), loaded, inbox_args, secret);
    Ok(Some(LinkedInbox::Started(server.link_inbox(connect))))
}

/// The sessions' link to the machine's inbox.
enum LinkedInbox {
    /// To the inbox the surfaces asked for, started when none runs.
    Started(ask_user_inbox::InboxLink),
    /// To an inbox that runs, whenever one does; none is started.
    Joined {
        /// Held while the server serves.
        _link: ask_user_inbox::InboxLink,
    },
}
