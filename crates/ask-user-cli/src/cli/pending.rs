//! `ask-user pending`: the open and continued questions of a session log. Read only: it takes no
//! write lock, never truncates a torn tail and never writes a checkpoint.

use ask_user_terminal::sanitize::json_visible;
use ask_user_terminal::shell::{Listed, log_table, sessions_json, sessions_table};
use std::path::PathBuf;

use clap::Args;
use pending_answer::{DeskSession, QuestionDesk as _};

use super::desk::{Access, Picked};
use super::{CliError, Exit};
use crate::store::now_ms;

/// Arguments of `pending`.
#[derive(Debug, Args)]
pub struct PendingArgs {
    /// The session log (with `--pg`: the session's name). Without it, every session: of the
    /// database with `--pg`, else of the state directory `ask-user mcp` writes (newest first).
    log: Option<PathBuf>,
    /// The state directory listed without a log (default: `ask-user mcp`'s).
    #[arg(long, value_name = "DIR", conflicts_with_all = ["log", "pg"])]
    state_dir: Option<PathBuf>,
    /// Print the projection view `{"active":[…],"settled":[…]}` as JSON.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    pg: ask_user_pg::PgArgs,
}

pub(super) async fn run(
    args: &PendingArgs,
    file: &super::config::Config,
) -> Result<Exit, CliError> {
    let session = args.log.as_ref().map(|p| p.display().to_string());
    let logs: Vec<PathBuf> = args.log.iter().cloned().collect();
    let pg = args
        .pg
        .filled(args.log.is_some() || args.state_dir.is_some(), file.pg()?);
    if pg.pg.is_none() && logs.is_empty() {
        let sessions = match super::desk::state_dir(args.state_dir.clone(), file)? {
            Some(desk) => desk.sessions().await?,
            None => Vec::new(),
        };
        let mut listed = Listed::all(&sessions);
        // Newest first: the question a person just heard of leads.
        listed.sort_by_key(|l| std::cmp::Reverse(l.question.asked_at_ms));
        print_sessions(&listed, args.json, true);
        return Ok(Exit::Ok);
    }
    // Read only: no lock, no schema created or migrated, no checkpoint written.
    let picked = super::desk::pick(&pg, &logs, Access::Read)?;
    let desk = picked.desk();
    if let (Some(session), true) = (&session, args.json) {
        // The projection view of the session: its checkpoint and the lines after it when the
        // checkpoint verifies, else a refold.
        let views = desk.views(Some(session)).await?;
        let view = views.first().map(|v| &v.view);
        let text = serde_json::to_string(&view)
            .map_err(|e| CliError::failure("INTERNAL", e.to_string()))?;
        println!("{}", json_visible(&text));
        return Ok(Exit::Ok);
    }
    // One scan per log, no lock, no checkpoint written; findings (a torn tail left as it is,
    // unreadable lines) are reported by the store as warnings.
    let sessions: Vec<DeskSession> = desk
        .sessions()
        .await?
        .into_iter()
        .filter(|s| session.as_ref().is_none_or(|name| *name == s.session))
        .collect();
    match picked {
        Picked::Logs(_) => {
            print!("{}", log_table(sessions.first(), now_ms()));
            Ok(Exit::Ok)
        }
        Picked::Database(_) => {
            if let Some(session) = &session
                && sessions.is_empty()
            {
                // An unknown session is an error; a known one without questions an empty list.
                desk.views(Some(session)).await?;
            }
            print_sessions(&Listed::all(&sessions), args.json, false);
            Ok(Exit::Ok)
        }
    }
}

/// The questions of several sessions: a table, or with `json` one JSON line.
fn print_sessions(listed: &[Listed<'_>], json: bool, ages: bool) {
    if json {
        println!("{}", sessions_json(listed));
    } else {
        print!("{}", sessions_table(listed, ages, now_ms()));
    }
}
