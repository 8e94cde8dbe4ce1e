//! `ask-user answer`: answer a continued question late, as a person would from another surface.
//!
//! The log is opened for write (resume repair first, so a call interrupted by a crash becomes
//! continued), the answer goes through `LateAnswers::answer` (identity, continued check,
//! `REPLY_QUEUED`, validation, reservation, delivery to the agent's durable inbox), and then the
//! command admits the reply in a turn of its own: `turn/start`, the inbox claim, the
//! `user/message`, `turn/end`. Success is reported only once that `user/message` is fsynced: the
//! projection has settled the question.

use ask_user_terminal::sanitize::visible;
use std::path::PathBuf;

use clap::{ArgGroup, Args};
use user_questions::{AnswerBatch, AnswerItem, AskError, CallId, ErrorCode, Provenance, Question};

use super::model_text;
use super::{CliError, Exit, read_input, report_resume};
use crate::host::{Host, HostOptions, JournalError, LogTarget};

/// The provenance name of answers given with this command.
pub const ANSWERER: &str = "ask-user-cli";

/// Arguments of `answer`.
#[derive(Debug, Args)]
#[command(group(ArgGroup::new("batch").required(true).multiple(true).args(["pick", "custom", "skip", "answers"])))]
pub struct AnswerArgs {
    /// The session log (with `--pg`: the session's name).
    log: PathBuf,
    /// The call id of the continued question.
    call_id: String,
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

pub(super) fn run(args: &AnswerArgs) -> Result<Exit, CliError> {
    let call_id = CallId::from(args.call_id.as_str());
    if let Some(url) = &args.pg.pg {
        let session = args.log.to_string_lossy();
        let (store, questions) =
            super::pg::stored_questions(url, &args.pg.pg_schema, &session, &call_id)?;
        let batch = match &args.answers {
            Some(path) => batch_from_file(&read_input(path)?)?,
            None => batch_from_flags(args, &questions)?,
        };
        let provenance = Provenance::human(ANSWERER);
        return super::pg::answer(&store, &session, &call_id, &batch, &provenance, args.admit);
    }
    if !args.log.exists() {
        return Err(CliError::new(
            "LOG_IO",
            format!("no session log at {}", args.log.display()),
            Exit::Log,
        ));
    }
    let (host, resumed) = Host::open(HostOptions::new(None, LogTarget::Open(args.log.clone())))?;
    report_resume(&resumed);
    let state = host.projection();
    let questions = state.active(call_id.as_str()).map(|e| e.questions.clone());
    let batch = match &args.answers {
        Some(path) => batch_from_file(&read_input(path)?)?,
        None => batch_from_flags(args, questions.as_deref().unwrap_or_default())?,
    };

    let submitted = batch.clone();
    let accepted =
        host.late_answers()
            .answer(&host.agent(), &call_id, batch, Provenance::human(ANSWERER));
    match accepted {
        Ok(true) => {}
        Ok(false) => {
            let why = if state.active(call_id.as_str()).is_some() {
                "is open, not pending: only its own tool call can answer it"
            } else if state.view().settled.iter().any(|s| s.call_id == call_id) {
                "is already settled"
            } else {
                "is not a pending timed question in this log (legacy calls never take late answers)"
            };
            return Err(CliError::new(
                "NOT_CONTINUED",
                format!("call {call_id} {why}"),
                Exit::NotContinued,
            ));
        }
        Err(AskError::Question(error)) if error.is(&ErrorCode::ReplyQueued) => {
            return Err(admit_queued_reply(&host, &call_id, &error));
        }
        Err(AskError::Question(error)) if error.is(&ErrorCode::BadAnswer) => {
            // The seam names the first problem; a person fixing the command wants them all.
            if let Some(questions) = &questions {
                check_batch(&call_id, questions, &submitted, host.seam().limits())?;
            }
            return Err(CliError::new(
                error.code(),
                error.message(),
                Exit::BadAnswer,
            ));
        }
        Err(AskError::Question(error)) => {
            let exit = match error.error_code() {
                ErrorCode::BadAnswer => Exit::BadAnswer,
                _ => Exit::Failure,
            };
            return Err(CliError::new(error.code(), error.message(), exit));
        }
        Err(AskError::Foreign(error)) => {
            let code = error
                .downcast_ref::<JournalError>()
                .map_or("DELIVERY_FAILED", JournalError::code);
            return Err(CliError::new(code, error.to_string(), Exit::Log));
        }
    }

    // Admit the reply in a turn of its own (SPEC §4.8: a late answer forms its own turn).
    let reservation = host
        .late_answers()
        .reservation(&host.session(), &call_id)
        .ok_or_else(|| {
            CliError::new(
                "INTERNAL",
                "the accepted reply has no reservation",
                Exit::Failure,
            )
        })?;
    admit(&host, &call_id, &reservation.message_id)?;
    Ok(Exit::Ok)
}

/// Admits the queued reply `message_id` for `call_id` in a turn of its own and prints it.
fn admit(host: &Host, call_id: &CallId, message_id: &str) -> Result<(), CliError> {
    let reply = admit_reply(host, message_id)?
        .ok_or_else(|| CliError::new("INTERNAL", "the reply is not queued", Exit::Failure))?;
    let settled = host
        .projection()
        .view()
        .settled
        .iter()
        .any(|s| &s.call_id == call_id);
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
    Ok(())
}

/// Admits the queued reply `message_id` in a turn of its own, and refreshes the checkpoint once
/// the log has grown past it by the host's lag; `None` when no such reply is queued.
pub(super) fn admit_reply(
    host: &Host,
    message_id: &str,
) -> Result<Option<user_questions::UserMessage>, crate::host::HostError> {
    let Some(reply) = host.admit_in_own_turn(message_id)? else {
        return Ok(None);
    };
    host.checkpoint_if_behind(crate::host::CHECKPOINT_LAG)?;
    Ok(Some(reply))
}

/// `REPLY_QUEUED`: a reply for this call already waits in the session's durable inbox (an
/// earlier session accepted it and stopped before admitting it). This command is the session's
/// host now, so it admits that reply, which settles the question with the first answer given;
/// the new answer is not used. It still reports `REPLY_QUEUED` (exit 5).
fn admit_queued_reply(
    host: &Host,
    call_id: &CallId,
    error: &user_questions::UserQuestionError,
) -> CliError {
    let queued = host
        .host_agent()
        .next_turn()
        .into_iter()
        .find(|m| m.reply_call_id() == Some(call_id));
    let Some(queued) = queued else {
        return CliError::new(error.code(), error.message(), Exit::ReplyQueued);
    };
    match admit(host, call_id, &queued.id) {
        Ok(()) => CliError::new(
            error.code(),
            format!(
                "a reply to call {call_id} was already queued by an earlier session; it has been admitted now and settles the question, so this answer was not used"
            ),
            Exit::ReplyQueued,
        ),
        Err(failure) => failure,
    }
}

/// Every problem of the batch at once (the seam reports only the first), with what would fit:
/// the valid labels of a question whose label is wrong, the flag that skips an unanswered one.
fn check_batch(
    call_id: &CallId,
    questions: &[Question],
    batch: &AnswerBatch,
    limits: &user_questions::QuestionLimits,
) -> Result<(), CliError> {
    use user_questions::AnswerViolation;
    let violations = user_questions::answer_violations(questions, batch, limits);
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
                    super::shell_word(id)
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

/// Builds the batch from `--pick`, `--custom` and `--skip`, items in the order of the stored
/// questions, then any other ids in the order given (the seam's validator names those).
fn batch_from_flags(args: &AnswerArgs, questions: &[Question]) -> Result<AnswerBatch, CliError> {
    let mut items: Vec<AnswerItem> = questions
        .iter()
        .map(|q| AnswerItem::skipped(q.id.clone()))
        .collect();
    let mut mentioned: Vec<String> = Vec::new();
    let mut item = |id: &str, items: &mut Vec<AnswerItem>| -> usize {
        if !mentioned.iter().any(|m| m == id) {
            mentioned.push(id.to_owned());
        }
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
    // Questions nobody mentioned stay out, so the validator reports them as unanswered.
    items.retain(|i| mentioned.contains(&i.id));
    Ok(AnswerBatch { answers: items })
}
