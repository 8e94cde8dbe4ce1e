//! `ask-user answer`: answer a continued question late, as a person would from another surface.
//!
//! The answer goes to the desk of the session (`LogDesk` for a log, `PgDesk` with `--pg`). For a
//! log, the desk opens it for write (resume repair first, so a call interrupted by a crash becomes
//! continued), queues the answer through `LateAnswers::answer` (identity, continued check,
//! `REPLY_QUEUED`, validation, reservation, delivery to the agent's durable inbox) and admits the
//! reply in a turn of its own: success is reported only once that `user/message` is fsynced, so
//! the projection has settled the question. In a database the answer goes to the ledger (the
//! first answer wins) and a worker, or `--admit` here, admits it.

use ask_user_terminal::sanitize::visible;
use std::path::PathBuf;

use clap::{ArgGroup, Args};
use std::sync::{Arc, Mutex};

use pending_answer::{Accepted, LateRefusal, NotWaiting, QuestionDesk as _, Queued, Submission};
use user_questions::sync::lock_unpoisoned;
use user_questions::{AnswerBatch, AnswerItem, CallId, Provenance, Question, UserMessage};

use super::desk::{Access, Picked};
use super::{CliError, Exit, read_input};
use crate::host::{JournalError, LogDesk};
use ask_user_terminal::listing::model_text;

/// The provenance name of answers given with this command.
pub const ANSWERER: &str = user_questions::surface_names::SHELL;

/// Arguments of `answer`.
#[derive(Debug, Args)]
#[command(group(ArgGroup::new("batch").required(true).multiple(true).args(["pick", "custom", "skip", "answers"])))]
pub struct AnswerArgs {
    /// `[LOG] CALL_ID`: the session log (with `--pg`: the session's name) and the call id of the
    /// continued question. With the call id alone, the session is the one of the state
    /// directory (`--state-dir`, default `ask-user mcp`'s) whose log has that call open or
    /// continued.
    #[arg(required = true, num_args = 1..=2, value_names = ["LOG", "CALL_ID"])]
    targets: Vec<String>,
    /// The state directory searched for a call id given alone (default: `ask-user mcp`'s).
    #[arg(long, value_name = "DIR", conflicts_with = "pg")]
    state_dir: Option<PathBuf>,
    /// Select an option: `ID=LABEL` (repeat for several labels of a multi-select question).
    #[arg(long, value_name = "ID=LABEL")]
    pick: Vec<String>,
    /// Give free text: `ID=TEXT`.
    #[arg(long, value_name = "ID=TEXT")]
    custom: Vec<String>,
    /// Skip a question: empty `selected`, no `custom`.
    #[arg(long, value_name = "ID")]
    skip: Vec<String>,
    /// Read the answers from a file (`{"answers":[…]}` or `[…]`), or `-` for stdin.
    #[arg(long, conflicts_with_all = ["pick", "custom", "skip"])]
    answers: Option<PathBuf>,
    #[command(flatten)]
    pg: super::pg::PgArgs,
    /// With `--pg`: admit the answer here when no worker holds the session.
    #[arg(long, requires = "pg")]
    admit: bool,
}

pub(super) async fn run(args: &AnswerArgs, file: &super::config::Config) -> Result<Exit, CliError> {
    let pg = args
        .pg
        .filled(args.targets.len() == 2 || args.state_dir.is_some(), file);
    let (session, picked, call_id) = match args.targets.as_slice() {
        [log, call] => {
            let log = PathBuf::from(log);
            let picked = super::desk::pick(&pg, std::slice::from_ref(&log), Access::Write)?;
            (
                log.display().to_string(),
                picked,
                CallId::from(call.as_str()),
            )
        }
        [call] if pg.pg.is_none() => {
            let call_id = CallId::from(call.as_str());
            let desk = super::desk::state_dir(args.state_dir.clone(), file)?
                .ok_or_else(|| not_continued(&call_id))?;
            let session = session_of(&desk, &call_id).await?;
            (session, Picked::Logs(desk), call_id)
        }
        _ => {
            return Err(CliError::new(
                "BAD_USAGE",
                "with --pg, name the session and the call id",
                Exit::Usage,
            ));
        }
    };
    let batch = match &args.answers {
        Some(path) => batch_from_file(&read_input(path)?)?,
        None => batch_from_flags(args)?,
    };
    // The call's questions, as the desk read them, order the flags' items and name every problem
    // of a bad answer.
    let seen: Arc<Mutex<(Option<Vec<Question>>, AnswerBatch)>> =
        Arc::new(Mutex::new((None, batch.clone())));
    let from_flags = args.answers.is_none();
    let compose = {
        let seen = Arc::clone(&seen);
        move |stored: Option<&[Question]>| {
            let submitted = match stored {
                Some(stored) if from_flags => in_question_order(&batch, stored),
                _ => batch,
            };
            *lock_unpoisoned(&seen) = (stored.map(<[Question]>::to_vec), submitted.clone());
            submitted
        }
    };
    let submission = Submission::composed(
        session.clone(),
        call_id.clone(),
        compose,
        Provenance::human(ANSWERER),
    );
    let answered = picked.desk().submit(submission).await;
    let (questions, submitted) = lock_unpoisoned(&seen).clone();
    match answered {
        Ok(Accepted::Admitted { reply, settled }) => {
            print_admitted(&call_id, &reply, settled);
            Ok(Exit::Ok)
        }
        // Queued for a live session (no desk of a command does that) or recorded in a ledger:
        // whoever runs the session admits it.
        Ok(
            Accepted::Queued(Queued {
                message_id: answer_id,
                ..
            })
            | Accepted::Recorded { answer_id },
        ) => {
            eprintln!(
                "call {}: answer {} accepted",
                visible(call_id.as_str()),
                visible(&answer_id)
            );
            match &picked {
                Picked::Database(db) if args.admit => {
                    let store = db.store().clone();
                    tokio::task::spawn_blocking(move || super::pg::admit_here(&store, &session))
                        .await
                        .map_err(|e| CliError::new("INTERNAL", e.to_string(), Exit::Failure))?;
                }
                Picked::Database(_) | Picked::Logs(_) => {
                    eprintln!("a worker (`ask-user worker --pg …`) admits it into the session");
                }
            }
            Ok(Exit::Ok)
        }
        Err(refusal) => {
            let in_database = matches!(picked, Picked::Database(_));
            Err(refused(
                refusal,
                &call_id,
                in_database,
                questions.as_deref(),
                &submitted,
            ))
        }
    }
}

/// Prints an admitted reply: the text the model reads on stdout, what happened on stderr.
fn print_admitted(call_id: &CallId, reply: &UserMessage, settled: bool) {
    if let Some(text) = reply
        .content
        .iter()
        .find_map(user_questions::ContentBlock::as_text)
    {
        println!("{}", model_text(text));
    }
    eprintln!(
        "call {}: reply admitted{}",
        visible(call_id.as_str()),
        if settled {
            "; the question is settled"
        } else {
            ""
        }
    );
}

/// The command's failure for a refused answer.
fn refused(
    refusal: LateRefusal,
    call_id: &CallId,
    in_database: bool,
    questions: Option<&[Question]>,
    submitted: &AnswerBatch,
) -> CliError {
    match refusal {
        LateRefusal::NotWaiting(why) => {
            let unknown = if in_database {
                " of this session (legacy calls never take late answers)"
            } else {
                " in this log (legacy calls never take late answers)"
            };
            CliError::new(
                "NOT_CONTINUED",
                format!(
                    "call {call_id} {}{}",
                    why.reason(),
                    if why == NotWaiting::Unknown {
                        unknown
                    } else {
                        ""
                    }
                ),
                Exit::NotContinued,
            )
        }
        // A reply an earlier (crashed) session accepted waited in the durable inbox: the desk,
        // the session's host now, admitted it, which settles the question with that first answer.
        LateRefusal::ReplyQueued {
            settled_by: Some(reply),
            ..
        } => {
            print_admitted(call_id, &reply, true);
            CliError::new(
                "REPLY_QUEUED",
                format!(
                    "a reply to call {call_id} was already queued by an earlier session; it has been admitted now and settles the question, so this answer was not used"
                ),
                Exit::ReplyQueued,
            )
        }
        refusal @ LateRefusal::ReplyQueued { .. } => {
            CliError::new("REPLY_QUEUED", refusal.to_string(), Exit::ReplyQueued)
        }
        LateRefusal::BadAnswer(error) => {
            // The seam names the first problem; a person fixing the command wants them all.
            if let Some(questions) = questions
                && let Err(every) = check_batch(call_id, questions, submitted)
            {
                return every;
            }
            CliError::new(error.code(), error.message(), Exit::BadAnswer)
        }
        LateRefusal::UnknownSession(session) => CliError::new(
            "UNKNOWN_SESSION",
            format!(
                "no session {session:?}{}",
                if in_database { " in the database" } else { "" }
            ),
            Exit::Log,
        ),
        LateRefusal::NotLive(error) => CliError::new(error.code(), error.message(), Exit::Failure),
        LateRefusal::NoAgent => {
            CliError::new("INTERNAL", LateRefusal::NoAgent.to_string(), Exit::Failure)
        }
        LateRefusal::Undelivered(error) => {
            let code = error
                .downcast_ref::<JournalError>()
                .map_or("DELIVERY_FAILED", JournalError::code);
            CliError::new(code, error.to_string(), Exit::Log)
        }
        LateRefusal::Unavailable(error) => error.into(),
    }
}

/// Every problem of the batch at once (the seam reports only the first), with what would fit:
/// the valid labels of a question whose label is wrong, the flag that skips an unanswered one.
fn check_batch(
    call_id: &CallId,
    questions: &[Question],
    batch: &AnswerBatch,
) -> Result<(), CliError> {
    use user_questions::AnswerViolation;
    let limits = user_questions::QuestionLimits::default();
    let violations = user_questions::answer_violations(questions, batch, &limits);
    if violations.is_empty() {
        return Ok(());
    }
    let options_of = |id: &str| -> String {
        let labels: Vec<String> = questions
            .iter()
            .find(|q| q.id == id)
            .map(|q| {
                q.options()
                    .iter()
                    .map(|o| serde_json::to_string(&o.label).unwrap_or_default())
                    .collect()
            })
            .unwrap_or_default();
        if labels.is_empty() {
            "it has no options: answer it with --custom".to_owned()
        } else {
            format!("its options: {}", labels.join(", "))
        }
    };
    let problems: Vec<String> = violations
        .iter()
        .map(|violation| match violation {
            AnswerViolation::UnknownLabel { id, .. } => format!("{violation} ({})", options_of(id)),
            AnswerViolation::Missing { id } => {
                format!(
                    "{violation} (or skip it with --skip {})",
                    ask_user_terminal::listing::shell_word(id)
                )
            }
            AnswerViolation::UnknownId { .. } => {
                let ids: Vec<String> = questions
                    .iter()
                    .map(|q| serde_json::to_string(&q.id).unwrap_or_default())
                    .collect();
                format!("{violation} (the questions are {})", ids.join(", "))
            }
            other => other.to_string(),
        })
        .collect();
    Err(CliError::new(
        "BAD_ANSWER",
        format!(
            "the answer does not fit call {call_id} ({} problem{}): {}",
            problems.len(),
            if problems.len() == 1 { "" } else { "s" },
            problems.join("; ")
        ),
        Exit::BadAnswer,
    ))
}

/// `{"answers":[…]}` or a bare `[…]`.
fn batch_from_file(text: &str) -> Result<AnswerBatch, CliError> {
    let value: serde_json::Value = serde_json::from_str(text)
        .map_err(|e| CliError::input(format!("the answers are not JSON: {e}")))?;
    let items = if value.is_array() {
        value
    } else {
        value.get("answers").cloned().ok_or_else(|| {
            CliError::input("the answers file needs {\"answers\":[…]} or a list of answers")
        })?
    };
    let answers: Vec<AnswerItem> = serde_json::from_value(items).map_err(|e| {
        CliError::input(format!(
            "each answer needs \"id\" and \"selected\" (and optional \"custom\"): {e}"
        ))
    })?;
    Ok(AnswerBatch { answers })
}

fn split(pair: &str, flag: &str) -> Result<(String, String), CliError> {
    pair.split_once('=')
        .map(|(id, value)| (id.to_owned(), value.to_owned()))
        .ok_or_else(|| {
            CliError::new(
                "BAD_USAGE",
                format!("--{flag} needs ID=VALUE, got {pair:?}"),
                Exit::Usage,
            )
        })
}

/// The batch of `--pick`, `--custom` and `--skip`, one item per question id, in the order the ids
/// are first given.
fn batch_from_flags(args: &AnswerArgs) -> Result<AnswerBatch, CliError> {
    let mut items: Vec<AnswerItem> = Vec::new();
    let item = |id: &str, items: &mut Vec<AnswerItem>| -> usize {
        if let Some(at) = items.iter().position(|i| i.id == id) {
            at
        } else {
            items.push(AnswerItem::skipped(id));
            items.len() - 1
        }
    };
    for pick in &args.pick {
        let (id, label) = split(pick, "pick")?;
        let at = item(&id, &mut items);
        items[at].selected.push(label);
    }
    for custom in &args.custom {
        let (id, text) = split(custom, "custom")?;
        let at = item(&id, &mut items);
        if items[at].custom.replace(text).is_some() {
            return Err(CliError::new(
                "BAD_USAGE",
                format!("--custom is given twice for question {id:?}"),
                Exit::Usage,
            ));
        }
    }
    for id in &args.skip {
        let at = item(id, &mut items);
        if !items[at].selected.is_empty() || items[at].custom.is_some() {
            return Err(CliError::new(
                "BAD_USAGE",
                format!("question {id:?} is both skipped and answered"),
                Exit::Usage,
            ));
        }
    }
    Ok(AnswerBatch { answers: items })
}

/// The items of `batch` in the order of the stored questions, then those of any other ids in the
/// order given (the seam's validator names those). Questions nobody mentioned stay out, so the
/// validator reports them as unanswered.
fn in_question_order(batch: &AnswerBatch, questions: &[Question]) -> AnswerBatch {
    let mut answers = batch.answers.clone();
    answers.sort_by_key(|item| {
        questions
            .iter()
            .position(|q| q.id == item.id)
            .unwrap_or(questions.len())
    });
    AnswerBatch { answers }
}

/// The session of the state directory whose log has `call_id` open or continued (an answer
/// reaches it): the one, or an error naming none or several.
async fn session_of(desk: &LogDesk, call_id: &CallId) -> Result<String, CliError> {
    let mut sessions: Vec<String> = desk
        .find(call_id)
        .await?
        .into_iter()
        .filter(|q| q.answerable)
        .map(|q| q.session)
        .collect();
    sessions.dedup();
    match sessions.as_slice() {
        [one] => Ok(one.clone()),
        [] => Err(not_continued(call_id)),
        several => Err(CliError::new(
            "AMBIGUOUS",
            format!(
                "call {} is continued in several sessions: {}; name the log too",
                visible(call_id.as_str()),
                several
                    .iter()
                    .map(|s| visible(s).into_owned())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Exit::Usage,
        )),
    }
}

fn not_continued(call_id: &CallId) -> CliError {
    CliError::new(
        "NOT_WAITING",
        format!(
            "no session of the state directory has call {} continued (`{} pending` lists them)",
            visible(call_id.as_str()),
            super::invoked()
        ),
        Exit::Log,
    )
}
