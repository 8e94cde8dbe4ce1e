//! `ask-user answer`: answer a question from the shell, in its window (through the machine's
//! inbox, racing the other surfaces) or late, as a person would from another surface.
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

use ask_user_inbox::{InWindowRefusal, Rendezvous, answer_in_window, connect};
use pending_answer::{
    Accepted, DeskState, LateRefusal, NotWaiting, QuestionDesk, Queued, Submission,
};
use user_questions::{AnswerBatch, CallId, Provenance, Question, UserMessage};

use super::desk::{Access, Picked};
use super::{CliError, Exit, read_input};
use crate::host::{JournalError, LogDesk};
use ask_user_terminal::listing::model_text;
use ask_user_terminal::shell::{
    TypedAnswerError, answer_problems, batch_from_flags, batch_from_json, in_question_order,
};

/// The provenance name of answers given with this command.
pub const ANSWERER: &str = user_questions::surface_names::SHELL;

/// Arguments of `answer`.
#[derive(Debug, Args)]
#[command(group(ArgGroup::new("batch").required(true).multiple(true).args(["pick", "custom", "skip", "answers"])))]
pub struct AnswerArgs {
    /// `[LOG] CALL_ID`: the session log (with `--pg`: the session's name) and the call id. With
    /// the call id alone, the session is the one of the state directory (`--state-dir`, default
    /// `ask-user mcp`'s) whose log has that call: in its window it is answered through the
    /// machine's inbox (the first answer of any surface wins), after it late.
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
    pg: ask_user_pg::PgArgs,
    /// With `--pg`: admit the answer here when no worker holds the session.
    #[arg(long, requires = "pg")]
    admit: bool,
}

pub(super) async fn run(args: &AnswerArgs, file: &super::config::Config) -> Result<Exit, CliError> {
    let pg = args.pg.filled(
        args.targets.len() == 2 || args.state_dir.is_some(),
        file.pg()?,
    );
    let batch = match &args.answers {
        Some(path) => batch_from_json(&read_input(path)?),
        None => batch_from_flags(&args.pick, &args.custom, &args.skip),
    }
    .map_err(|e| match e {
        TypedAnswerError::Usage(message) => CliError::usage(message),
        TypedAnswerError::Input(message) => CliError::input(message),
    })?;
    let from_flags = args.answers.is_none();
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
            let Some(desk) = by_call_id(args, file, &call_id, &batch, from_flags).await? else {
                return Ok(Exit::Ok);
            };
            let session = session_of(&desk.0, &call_id, desk.1).await?;
            (session, Picked::Logs(desk.0), call_id)
        }
        _ => {
            return Err(CliError::usage(
                "with --pg, name the session and the call id",
            ));
        }
    };
    // The call's questions, as the desk reads them, order the flags' items.
    let given = batch.clone();
    let compose = move |stored: Option<&[Question]>| match stored {
        Some(stored) if from_flags => in_question_order(&given, stored),
        _ => given,
    };
    let submission = Submission::composed(
        session.clone(),
        call_id.clone(),
        compose,
        Provenance::human(ANSWERER),
    );
    let answered = picked.desk().submit(submission).await;
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
                        .map_err(|e| CliError::failure("INTERNAL", e.to_string()))?;
                }
                Picked::Database(_) | Picked::Logs(_) => {
                    eprintln!("a worker (`ask-user worker --pg …`) admits it into the session");
                }
            }
            Ok(Exit::Ok)
        }
        Err(refusal @ LateRefusal::BadAnswer(_)) => {
            let every = every_problem(picked.desk(), &session, &call_id, batch, from_flags).await;
            Err(every.map_or_else(
                || refused(refusal, &call_id, false),
                |every| CliError::new("BAD_ANSWER", every, Exit::BadAnswer),
            ))
        }
        Err(refusal) => Err(refused(
            refusal,
            &call_id,
            matches!(picked, Picked::Database(_)),
        )),
    }
}

/// A call named by its id alone: answered in its window through the inbox (`None`), else the
/// state directory's desk and whether the call was open when this began.
async fn by_call_id(
    args: &AnswerArgs,
    file: &super::config::Config,
    call_id: &CallId,
    batch: &AnswerBatch,
    from_flags: bool,
) -> Result<Option<(LogDesk, bool)>, CliError> {
    let desk = super::desk::state_dir(args.state_dir.clone(), file)?
        .ok_or_else(|| unknown_call(call_id))?;
    let dir = super::state_dir(args.state_dir.clone(), file)?;
    let found = desk.find(call_id).await?;
    if found.is_empty() {
        return Err(unknown_call(call_id));
    }
    let was_open = found.iter().any(|q| q.state == DeskState::Open);
    if was_open && in_window(&desk, &dir, call_id, batch, from_flags).await? {
        return Ok(None);
    }
    Ok(Some((desk, was_open)))
}

/// A question open in its window at a host linked to the state directory's inbox (an agent's
/// own prompt, an MCP call) is answered there, as the page would: first answer wins. `false`
/// when no such question waits there (no inbox runs, its host is not linked, another surface
/// answered first, or its window closed): the caller looks at where the call stands now.
async fn in_window(
    desk: &LogDesk,
    dir: &std::path::Path,
    call_id: &CallId,
    batch: &AnswerBatch,
    from_flags: bool,
) -> Result<bool, CliError> {
    let found = desk.find(call_id).await?;
    let open: Vec<_> = (found.iter())
        .filter(|q| q.state == DeskState::Open)
        .collect();
    let ([question], Ok(stream)) = (
        open.as_slice(),
        connect(&Rendezvous::new(dir).socket()).await,
    ) else {
        return Ok(false);
    };
    let batch = if from_flags {
        in_question_order(batch, &question.questions)
    } else {
        batch.clone()
    };
    let answered = answer_in_window(
        stream,
        &question.session,
        call_id,
        batch.clone(),
        Provenance::human(ANSWERER),
    );
    match answered.await {
        Ok(()) => eprintln!("call {}: answered in its window", visible(call_id.as_str())),
        Err(InWindowRefusal::NotWaiting { .. }) => return Ok(false),
        Err(InWindowRefusal::BadAnswer { message, .. }) => {
            let every = answer_problems(call_id, &question.questions, &batch);
            return Err(CliError::new(
                "BAD_ANSWER",
                every.unwrap_or(message),
                Exit::BadAnswer,
            ));
        }
        Err(refusal @ InWindowRefusal::Unreachable(_)) => {
            return Err(CliError::log("INBOX_UNREACHABLE", refusal.to_string()));
        }
    }
    Ok(true)
}

/// Every problem of a refused answer, named against the questions the call asked (the seam
/// names the first; a person fixing the command wants them all).
async fn every_problem(
    desk: &dyn QuestionDesk,
    session: &str,
    call_id: &CallId,
    batch: AnswerBatch,
    from_flags: bool,
) -> Option<String> {
    let found = desk.find(call_id).await.unwrap_or_default();
    let stored = found.into_iter().find(|q| q.session == session)?.questions;
    let submitted = if from_flags {
        in_question_order(&batch, &stored)
    } else {
        batch
    };
    answer_problems(call_id, &stored, &submitted)
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
fn refused(refusal: LateRefusal, call_id: &CallId, in_database: bool) -> CliError {
    match refusal {
        LateRefusal::NotWaiting(NotWaiting::Settled) => already_answered(call_id),
        LateRefusal::NotWaiting(NotWaiting::Open) => in_window_elsewhere(call_id),
        LateRefusal::NotWaiting(NotWaiting::Closing) => CliError::new(
            "NOT_DURABLE",
            format!(
                "call {call_id} {}: try again in a moment; if this lasts, its server could not write its log",
                NotWaiting::Closing.reason()
            ),
            Exit::NotDurable,
        ),
        LateRefusal::NotWaiting(why) => {
            let place = if in_database {
                "of this session"
            } else {
                "in this log"
            };
            let unknown = (why == NotWaiting::Unknown)
                .then(|| format!(" {place} (legacy calls never take late answers)"));
            let message = format!(
                "call {call_id} {}{}",
                why.reason(),
                unknown.unwrap_or_default()
            );
            CliError::new("NOT_WAITING", message, Exit::NotContinued)
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
            CliError::new(error.code(), error.message(), Exit::BadAnswer)
        }
        LateRefusal::UnknownSession(session) => CliError::log(
            "UNKNOWN_SESSION",
            format!(
                "no session {session:?}{}",
                if in_database { " in the database" } else { "" }
            ),
        ),
        LateRefusal::NotLive(error) => CliError::failure(error.code(), error.message()),
        LateRefusal::NoAgent => CliError::failure("INTERNAL", LateRefusal::NoAgent.to_string()),
        LateRefusal::Undelivered(error) => {
            let code = error
                .downcast_ref::<JournalError>()
                .map_or("DELIVERY_FAILED", JournalError::code);
            CliError::log(code, error.to_string())
        }
        LateRefusal::Unavailable(error) => error.into(),
    }
}

/// The session of the state directory whose log has `call_id` where a late answer reaches it:
/// the one, or an error saying where the call stands instead (`was_open`: it was in its window
/// when this command began, so a settled call was answered elsewhere meanwhile).
async fn session_of(desk: &LogDesk, call_id: &CallId, was_open: bool) -> Result<String, CliError> {
    match desk.sessions_answering(call_id).await?.as_slice() {
        [one] => Ok(one.clone()),
        [] => {
            let found = desk.find(call_id).await?;
            let state = |state| found.iter().any(|q| q.state == state);
            Err(if state(DeskState::Open) {
                in_window_elsewhere(call_id)
            } else if state(DeskState::Settled) && was_open {
                answered_elsewhere(call_id)
            } else if state(DeskState::Settled) {
                already_answered(call_id)
            } else {
                unknown_call(call_id)
            })
        }
        several => Err(CliError::new(
            "AMBIGUOUS",
            format!(
                "call {} is continued in several sessions: {}; name the log too",
                visible(call_id.as_str()),
                visible(&several.join(", "))
            ),
            Exit::Usage,
        )),
    }
}

/// `UNKNOWN_CALL`: no session has the call.
fn unknown_call(call_id: &CallId) -> CliError {
    CliError::new(
        "UNKNOWN_CALL",
        format!(
            "no session of the state directory has call {} (`{} pending` lists the questions that wait)",
            visible(call_id.as_str()),
            super::invoked()
        ),
        Exit::NotContinued,
    )
}

/// `ALREADY_ANSWERED`: the call is settled.
fn already_answered(call_id: &CallId) -> CliError {
    CliError::new(
        "ALREADY_ANSWERED",
        format!(
            "call {} is answered already: its answer reached the model, and this one was not used",
            visible(call_id.as_str())
        ),
        Exit::AlreadyAnswered,
    )
}

/// `ANSWERED_ELSEWHERE`: in its window, another surface answered first.
fn answered_elsewhere(call_id: &CallId) -> CliError {
    CliError::new(
        "ANSWERED_ELSEWHERE",
        format!(
            "call {} was answered elsewhere first (the client's form, the page or a phone): the first answer wins, and this one was not used",
            visible(call_id.as_str())
        ),
        Exit::AnsweredElsewhere,
    )
}

/// `IN_WINDOW_ELSEWHERE`: in its window at a process no inbox reaches.
fn in_window_elsewhere(call_id: &CallId) -> CliError {
    CliError::new(
        "IN_WINDOW_ELSEWHERE",
        format!(
            "call {} is in its window at a process this shell cannot reach (no inbox runs for the state directory, or its server is not linked to it): answer it in the client's own form, or here once its window closes; with `{} inbox` running, the questions asked from then on are answered here in their windows too",
            visible(call_id.as_str()),
            super::invoked()
        ),
        Exit::InWindowElsewhere,
    )
}
