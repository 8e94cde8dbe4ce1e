//! `ask-user pending`: the open and continued questions of a session log. Read only: it takes no
//! write lock, never truncates a torn tail and never writes a checkpoint.

use ask_user_terminal::sanitize::{json_visible, visible};
use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use clap::Args;
use user_questions_projection::{ActiveState, EventBody, Replay, Scanned, SessionHeader};

use super::{CliError, Exit};
use crate::host::{CheckpointPolicy, load_projection};
use crate::store::{JsonlStore, LogVisitor, now_ms, read_log_with, writer_is_live};

/// Arguments of `pending`.
#[derive(Debug, Args)]
pub struct PendingArgs {
    /// The session log (with `--pg`: the session's name; without it, every session).
    #[arg(required_unless_present = "pg")]
    log: Option<PathBuf>,
    /// Print the projection view `{"active":[…],"settled":[…]}` as JSON.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    pg: super::pg::PgArgs,
}

/// `--json`: the projection view from the log's checkpoint and the lines after it when the
/// checkpoint verifies (else a refold), read only: no lock, no checkpoint written.
fn print_view(log: &Path) -> Result<Exit, CliError> {
    let (store, name) = JsonlStore::for_file(log)?;
    let load = load_projection(&store, &name, CheckpointPolicy::ReadOnly)?;
    let text = serde_json::to_string(load.state.view())
        .map_err(|e| CliError::new("INTERNAL", e.to_string(), Exit::Failure))?;
    println!("{}", json_visible(&text));
    Ok(Exit::Ok)
}

/// One read-only scan: the fold, and when each call was logged (for ages).
#[derive(Default)]
struct Listing {
    replay: Option<Replay>,
    times: HashMap<String, i64>,
}

impl LogVisitor for Listing {
    fn header(&mut self, header: &SessionHeader) {
        self.replay = Some(Replay::new(header));
    }

    fn line(&mut self, line: &Scanned<'_>) {
        let Scanned::Record(record) = line else {
            return;
        };
        if let Some(replay) = &mut self.replay {
            replay.apply_record(record.line, &record.record);
        }
        if let Some(event) = record.record.event()
            && let EventBody::ToolCall(call) = &event.body
            && let (Some(call_id), Some(time)) = (&call.call_id, event.time)
        {
            self.times.insert(call_id.as_str().to_owned(), time);
        }
    }
}

pub(super) fn run(args: &PendingArgs) -> Result<Exit, CliError> {
    if let Some(url) = &args.pg.pg {
        let session = args.log.as_deref().map(|p| p.to_string_lossy());
        return pending_pg(url, &args.pg.pg_schema, session.as_deref(), args.json);
    }
    let Some(log) = &args.log else {
        return Err(CliError::new(
            "BAD_USAGE",
            "the session log is missing",
            Exit::Usage,
        ));
    };
    if args.json {
        return print_view(log);
    }
    // One scan, no lock, no checkpoint written; findings (a torn tail left as it is, unreadable
    // lines) are reported by the store as warnings.
    let mut listing = Listing::default();
    let report = read_log_with(log, &mut listing)?;
    // `read_log_with` fails before any line when the header is unreadable, so a replay exists.
    let state = listing.replay.map_or_else(
        || user_questions_projection::UserQuestionsState::new(0),
        |replay| replay.finish().0,
    );
    let times = listing.times;
    let view = state.view();

    let live = writer_is_live(log)?;
    let now = now_ms();
    let mut rows = Vec::new();
    for entry in &view.active {
        let state = match entry.state {
            ActiveState::Continued => "continued".to_owned(),
            ActiveState::Open => {
                let unfinished = report
                    .interrupted
                    .calls
                    .iter()
                    .any(|c| c.call_id == entry.call_id.as_str());
                if unfinished && !live {
                    "open, interrupted".to_owned()
                } else {
                    "open".to_owned()
                }
            }
        };
        let age = times
            .get(entry.call_id.as_str())
            .map_or_else(|| "-".to_owned(), |t| format_age(now.saturating_sub(*t)));
        // Call ids and questions come from a model through the log: never raw on a terminal.
        // Each question's labels under it, as `--pick ID=LABEL` takes them.
        let questions: Vec<String> = entry.questions.iter().map(question_cell).collect();
        rows.push([
            visible(entry.call_id.as_str()).into_owned(),
            state,
            age,
            questions.join("\n"),
        ]);
    }
    print!("{}", table(["CALL ID", "STATE", "AGE", "QUESTIONS"], &rows));
    println!(
        "{} active, {} settled{}",
        view.active.len(),
        view.settled.len(),
        if live {
            " (a writer has the log open)"
        } else {
            ""
        }
    );
    Ok(Exit::Ok)
}

/// A question and, under it, its labels as `--pick ID=LABEL` takes them. Ids, questions and
/// labels come from a model through the log: never raw on a terminal.
fn question_cell(q: &user_questions::Question) -> String {
    let mut cell = format!("{}: {}", visible(&q.id), visible(&q.question));
    let labels: Vec<String> = q
        .options()
        .iter()
        .map(|o| visible(&o.label).into_owned())
        .collect();
    if labels.is_empty() {
        cell.push_str("\n  (free text: --custom ID=TEXT)");
    } else {
        let kind = if q.is_multi_select() {
            "pick any"
        } else {
            "pick one"
        };
        let _ = write!(cell, "\n  {kind}: {}", labels.join(" | "));
    }
    cell
}

fn format_age(ms: i64) -> String {
    let secs = ms.max(0) / 1000;
    match secs {
        0..60 => format!("{secs}s"),
        60..3600 => format!("{}m {:02}s", secs / 60, secs % 60),
        3600..86_400 => format!("{}h {:02}m", secs / 3600, secs % 3600 / 60),
        _ => format!("{}d {:02}h", secs / 86_400, secs % 86_400 / 3600),
    }
}

/// A plain-text table under `header`; the last column may span several lines.
fn table(header: [&str; 4], rows: &[[String; 4]]) -> String {
    if rows.is_empty() {
        return String::from("no open or continued questions\n");
    }
    let width = |col: usize| {
        rows.iter()
            .map(|r| r[col].chars().count())
            .chain([header[col].len()])
            .max()
            .unwrap_or(0)
    };
    let widths = [width(0), width(1), width(2)];
    let mut out = String::new();
    let mut line = |cells: [&str; 4]| {
        let mut lines = cells[3].lines();
        let first = lines.next().unwrap_or("");
        let _ = writeln!(
            out,
            "{:w0$}  {:w1$}  {:w2$}  {first}",
            cells[0],
            cells[1],
            cells[2],
            w0 = widths[0],
            w1 = widths[1],
            w2 = widths[2]
        );
        for more in lines {
            let _ = writeln!(
                out,
                "{:w$}{more}",
                "",
                w = widths[0] + widths[1] + widths[2] + 6
            );
        }
    };
    line(header);
    for row in rows {
        line([&row[0], &row[1], &row[2], &row[3]]);
    }
    out
}

/// `pending --pg URL [SESSION] [--json]`.
fn pending_pg(
    url: &str,
    schema: &str,
    session: Option<&str>,
    json: bool,
) -> Result<Exit, CliError> {
    // Read only: no schema is created or migrated, no checkpoint written.
    let store = super::pg::connect_read_only(url, schema)?;
    if let Some(session) = session
        && !session_log::SessionStore::exists(&store, session)?
    {
        return Err(CliError::new(
            "UNKNOWN_SESSION",
            format!("no session {session:?} in the database"),
            Exit::Log,
        ));
    }
    if let (Some(session), true) = (session, json) {
        // The projection view of the session, exactly as for a file.
        let load = load_projection(&store, session, CheckpointPolicy::ReadOnly)?;
        let text = serde_json::to_string(load.state.view())
            .map_err(|e| CliError::new("INTERNAL", e.to_string(), Exit::Failure))?;
        println!("{}", json_visible(&text));
        return Ok(Exit::Ok);
    }
    let questions = store
        .questions(session)
        .map_err(|e| super::pg::db_error(&e))?;
    if json {
        let rows: Vec<serde_json::Value> = questions.iter().map(super::pg::question_json).collect();
        let text = serde_json::json!({ "questions": rows }).to_string();
        println!("{}", json_visible(&text));
        return Ok(Exit::Ok);
    }
    let rows: Vec<[String; 4]> = questions
        .iter()
        .map(|q| {
            let state = if q.answered {
                format!("{}, answered (admission waits)", q.state)
            } else {
                q.state.to_string()
            };
            let cells: Vec<String> = q.questions.iter().map(question_cell).collect();
            [
                visible(&q.session).into_owned(),
                visible(q.call_id.as_str()).into_owned(),
                state,
                cells.join("\n"),
            ]
        })
        .collect();
    print!(
        "{}",
        table(["SESSION", "CALL ID", "STATE", "QUESTIONS"], &rows)
    );
    println!("{} open or continued", questions.len());
    Ok(Exit::Ok)
}

#[cfg(test)]
mod tests {
    use super::format_age;

    #[test]
    fn ages_read_naturally() {
        assert_eq!(format_age(-5), "0s");
        assert_eq!(format_age(59_999), "59s");
        assert_eq!(format_age(61_000), "1m 01s");
        assert_eq!(format_age(3_600_000), "1h 00m");
        assert_eq!(format_age(90_000_000), "1d 01h");
    }
}
