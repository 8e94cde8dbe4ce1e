//! The web answering surface in the binary: `--web` for `demo` and `ask` (the page races the
//! terminal card, first answer wins), and `ask-user serve LOG…` (the continued questions of
//! existing logs, for late answers).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use ask_user_web::WebSurface;
use clap::Args;
use pending_answer::QuestionDesk;
use user_questions::{HostBindings, UserQuestions, UserQuestionsConfig};

use super::desk::{Access, Picked};
use super::{CliError, Exit};

impl From<ask_user_web::TlsError> for CliError {
    /// The configuration file's certificate or key cannot be served.
    fn from(error: ask_user_web::TlsError) -> Self {
        Self::new("BAD_TLS", error.to_string(), Exit::Usage)
    }
}

/// The page cannot be served at `addr`.
pub(crate) fn bind_error(addr: SocketAddr, error: &std::io::Error) -> CliError {
    CliError::failure(
        "WEB_BIND",
        format!("cannot serve the page on {addr}: {error}"),
    )
}

pub(crate) fn no_surface(error: &std::io::Error) -> CliError {
    CliError::failure("WEB", error.to_string())
}

/// Arguments of `serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// The session logs whose continued questions to serve.
    #[arg(required_unless_present = "pg", conflicts_with = "pg")]
    logs: Vec<PathBuf>,
    /// Serve the continued questions of every session in this database instead; answers go to
    /// its ledger (the first answer wins) and its workers admit them.
    #[command(flatten)]
    pg: ask_user_pg::PgArgs,
    /// Where to serve the page (default 127.0.0.1 on a free port). An address other than
    /// loopback serves other machines too: only when given here.
    #[arg(long, value_name = "ADDR")]
    addr: Option<SocketAddr>,
}

pub(super) async fn serve(args: ServeArgs, file: &super::config::Config) -> Result<Exit, CliError> {
    let pg = args.pg.filled(!args.logs.is_empty(), file.pg()?);
    serve_desk(&pg, &args.logs, args.addr, file).await
}

/// The page of `logs`' continued questions, or with `pg` of a database's sessions, until Ctrl-C.
pub(super) async fn serve_desk(
    pg: &ask_user_pg::PgArgs,
    logs: &[PathBuf],
    addr: Option<SocketAddr>,
    file: &super::config::Config,
) -> Result<Exit, CliError> {
    let picked = super::desk::pick(pg, logs, Access::Write)?;
    // Each log named must be one (as `pending` says of a file that is not): a page over files
    // that are not logs would only ever be empty.
    for log in logs {
        crate::host::LogDesk::files([log])
            .map_err(|e| CliError::log(e.code(), e.to_string()))?
            .views(None)
            .await?;
    }
    // No question is asked here: a seam only to check answers against (the desk checks late
    // answers again when it takes them).
    let seam = UserQuestions::new(UserQuestionsConfig::default(), HostBindings::default())
        .map_err(|e| CliError::failure("INTERNAL", e.to_string()))?;
    let (options, addr) = file.web.options_at(addr.or(file.web.addr))?;
    // The cards follow the desk's changes (the ledger, the logs); a database's desk claims the
    // questions open elsewhere while a page looks.
    let (desk, database): (Arc<dyn QuestionDesk>, _) = match picked {
        Picked::Logs(desk) => (Arc::new(desk), None),
        Picked::Database(desk) => (Arc::new(desk.clone()), Some(desk)),
    };
    let surface = WebSurface::new(&seam, Some(desk), options).map_err(|e| no_surface(&e))?;
    let server = (surface.bind(addr).await).map_err(|e| bind_error(addr, &e))?;
    eprintln!("web   › answer the continued questions at {}", server.url());
    eprintln!("        (Ctrl-C to stop)");
    let _ = tokio::signal::ctrl_c().await;
    if let Some(database) = database {
        // Its claims are released on the way out.
        database.close().await;
    }
    Ok(Exit::Ok)
}
