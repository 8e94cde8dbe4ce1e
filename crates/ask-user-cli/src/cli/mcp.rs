//! `ask-user mcp`: serve `ask_user_question` to an MCP client, over stdio (what IDE
//! configurations start) or streamable HTTP on loopback. See the `ask-user-mcp` crate README for
//! each client's configuration.

use std::net::SocketAddr;
use std::path::PathBuf;

use ask_user_mcp::{AskUserMcp, HTTP_PATH, McpOptions, default_state_dir};
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
    /// Serve streamable HTTP at `http://ADDR/mcp` instead of stdio (loopback only).
    #[arg(long, value_name = "ADDR")]
    http: Option<SocketAddr>,
    #[command(flatten)]
    pg: super::pg::PgArgs,
}

/// `--pg` of `mcp`, which names no session itself (the other commands' help says how a name
/// replaces a log path).
const MCP_PG_HELP: &str = "Keep the MCP sessions in this PostgreSQL database (a libpq connection string or `postgres://` URL; no TLS) instead of log files in the state directory: any worker resumes them, and an answer given there from anywhere reaches a question in its window";

pub(super) async fn run(args: McpArgs) -> Result<Exit, CliError> {
    let config = args.tool.config()?;
    // With --pg the sessions live in the database: no state directory is needed.
    let state_dir = match args.state_dir.or_else(default_state_dir) {
        Some(dir) => dir,
        None if args.pg.pg.is_some() => PathBuf::new(),
        None => {
            return Err(CliError::new(
                "BAD_USAGE",
                "no state directory: set --state-dir (neither XDG_STATE_HOME nor HOME is set)",
                Exit::Usage,
            ));
        }
    };
    let options = McpOptions::new(&state_dir).with_tool(config);
    let (server, where_) = if let Some(url) = &args.pg.pg {
        let server = super::pg::mcp_server(url, &args.pg.pg_schema, options)?;
        (server, "the database".to_owned())
    } else {
        let server = AskUserMcp::new(options)
            .map_err(|e| CliError::new("STATE_DIR", e.to_string(), Exit::Log))?;
        (server, state_dir.display().to_string())
    };
    let outcome = match args.http {
        None => server.serve_stdio().await,
        Some(addr) => {
            let listener = AskUserMcp::bind_http(addr, false)
                .await
                .map_err(|e| CliError::new("BAD_ADDRESS", e.to_string(), Exit::Usage))?;
            let local = listener
                .local_addr()
                .map_err(|e| CliError::new("BAD_ADDRESS", e.to_string(), Exit::Usage))?;
            // The address line is for the person (or a test) starting the server; stdout stays
            // free of anything else.
            eprintln!("serving MCP at http://{local}{HTTP_PATH} (logs in {where_})");
            let cancel = CancellationToken::new();
            let stop = cancel.clone();
            tokio::spawn(async move {
                if tokio::signal::ctrl_c().await.is_ok() {
                    stop.cancel();
                }
            });
            server.serve_http(listener, cancel).await
        }
    };
    outcome.map_err(|e| CliError::new("MCP_TRANSPORT", e.to_string(), Exit::Failure))?;
    Ok(Exit::Ok)
}
