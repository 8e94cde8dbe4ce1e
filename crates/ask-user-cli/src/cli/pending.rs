//! `ask-user pending`: the open and continued questions of a session log. Read only: it takes no
//! write lock, never truncates a torn tail and never writes a checkpoint.

use ask_user_terminal::listing::{format_age, question_cell, table};
use ask_user_terminal::sanitize::{json_visible, visible};
use std::path::PathBuf;

use clap::Args;
use pending_answer::{DeskQuestion, DeskSession, DeskState, QuestionDesk as _};

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
    pg: super::pg::PgArgs,
}

pub(super) async fn run(
    args: &PendingArgs,
    file: &super::config::Config,
) -> Result<Exit, CliError> {
    let session = args.log.as_ref().map(|p| p.display().to_string());
    let logs: Vec<PathBuf> = args.log.iter().cloned().collect();
    let pg = args
        .pg
        .filled(args.log.is_some() || args.state_dir.is_some(), file);
    if pg.pg.is_none() && logs.is_empty() {
        let mut questions: Vec<DeskQuestion> =
            match super::desk::state_dir(args.state_dir.clone(), file)? {
                Some(desk) => desk
                    .sessions()
                    .await?
                    .into_iter()
                    .flat_map(|s| s.questions)
                    .collect(),
                None => Vec::new(),
            };
        // Newest first: the question a person just heard of leads.
        questions.sort_by_key(|q| std::cmp::Reverse(q.asked_at_ms));
        print_session_table(&questions, args.json, true);
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
            .map_err(|e| CliError::new("INTERNAL", e.to_string(), Exit::Failure))?;
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
            print_log_table(sessions.first());
            Ok(Exit::Ok)
        }
        Picked::Database(_) => {
            if let Some(session) = &session
                && sessions.is_empty()
            {
                // An unknown session is an error; a known one without questions an empty list.
                desk.views(Some(session)).await?;
            }
            let questions: Vec<DeskQuestion> =
                sessions.into_iter().flat_map(|s| s.questions).collect();
            print_session_table(&questions, args.json, false);
            Ok(Exit::Ok)
        }
    }
}

/// The open and continued questions of one log: call id, state, age and questions.
fn print_log_table(session: Option<&DeskSession>) {
    let now = now_ms();
    let mut rows = Vec::new();
    for question in session.iter().flat_map(|s| &s.questions) {
        let state = match (question.state, question.interrupted) {
            (DeskState::Continued, _) => "continued",
            (DeskState::Settled, _) => "settled",
            (DeskState::Open, true) => "open, interrupted",
            (DeskState::Open, false) => "open",
        };
        let age = question
            .asked_at_ms
            .map_or_else(|| "-".to_owned(), |t| format_age(now.saturating_sub(t)));
        // Call ids and questions come from a model through the log: never raw on a terminal.
        // Each question's labels under it, as `--pick ID=LABEL` takes them.
        let cells: Vec<String> = question.questions.iter().map(question_cell).collect();
        rows.push([
            visible(question.call_id.as_str()).into_owned(),
            state.to_owned(),
            age,
            cells.join("\n"),
        ]);
    }
    print!("{}", table(["CALL ID", "STATE", "AGE", "QUESTIONS"], &rows));
    let writing = session.is_some_and(|s| s.writing);
    println!(
        "{} active, {} settled{}",
        rows.len(),
        session.and_then(|s| s.settled).unwrap_or(0),
        if writing {
            " (a writer has the log open)"
        } else {
            ""
        }
    );
}

/// The open and continued questions of several sessions (a database's, a state directory's),
/// as a table (with `ages`, an AGE column) or (`--json`) as
/// `{"questions":[{session, callId, state, answered, askedAtMs, questions}]}`.
fn print_session_table(questions: &[DeskQuestion], json: bool, ages: bool) {
    if json {
        let rows: Vec<serde_json::Value> = questions
            .iter()
            .map(|q| {
                serde_json::json!({
                    "session": q.session,
                    "callId": q.call_id,
                    "state": q.state.as_str(),
                    "answered": q.answered,
                    "askedAtMs": q.asked_at_ms,
                    "questions": q.questions,
                })
            })
            .collect();
        let text = serde_json::json!({ "questions": rows }).to_string();
        println!("{}", json_visible(&text));
        return;
    }
    let now = now_ms();
    let rows: Vec<[String; 5]> = questions
        .iter()
        .map(|q| {
            let state = match (q.state, q.answered, q.interrupted) {
                (state, true, _) => format!("{}, answered (admission waits)", state.as_str()),
                (DeskState::Open, false, true) => "open, interrupted".to_owned(),
                (state, false, _) => state.as_str().to_owned(),
            };
            let cells: Vec<String> = q.questions.iter().map(question_cell).collect();
            let age = q
                .asked_at_ms
                .map_or_else(|| "-".to_owned(), |t| format_age(now.saturating_sub(t)));
            [
                visible(&q.session).into_owned(),
                visible(q.call_id.as_str()).into_owned(),
                state,
                age,
                cells.join("\n"),
            ]
        })
        .collect();
    if ages {
        print!(
            "{}",
            table(["SESSION", "CALL ID", "STATE", "AGE", "QUESTIONS"], &rows)
        );
    } else {
        let rows: Vec<[String; 4]> = rows
            .into_iter()
            .map(|[session, call, state, _, cells]| [session, call, state, cells])
            .collect();
        print!(
            "{}",
            table(["SESSION", "CALL ID", "STATE", "QUESTIONS"], &rows)
        );
    }
    // An empty table says so itself, in the same words as a log's.
    if !questions.is_empty() {
        println!("{} open or continued", questions.len());
    }
}
