//! `ask-user answer`: answer a question from the shell, in its window (through the machine's
//! inbox, racing the other surfaces) or late, as a person would from another surface.
//!
//! Where the call stands and what each refusal says is `ask_user_terminal::shell::ShellAnswer`'s;
//! here are the arguments, the desk, what is printed and the exit status. The answer goes to the
//! desk of the session (`LogDesk` for a log, `PgDesk` with `--pg`). For a log, the desk opens it
//! for write (resume repair first, so a call interrupted by a crash becomes continued), queues
//! the answer through `LateAnswers::answer` (identity, continued check, `REPLY_QUEUED`,
//! validation, reservation, delivery to the agent's durable inbox) and admits the reply in a turn of its own: success is reported only once that `user/message` is fsynced, so
//! the projection has settled the question. In a database the answer goes to the ledger (the
//! first answer wins) and a worker, or `--admit` here, admits it.

use ask_user_terminal::sanitize::visible;
use std::path::PathBuf;

use clap::{ArgGroup, Args};

use ask_user_inbox::Rendezvous;
use ask_user_pg::admit_here;
use ask_user_terminal::shell::{
    AnswerTo, RefusalKind, ShellAnswer, ShellAnswered, ShellRefusal, TypedAnswerError,
    batch_from_flags, batch_from_json, reply_text,
};
use pending_answer::NoSessions;
use user_questions::{CallId, Provenance};

use super::desk::{Access, Picked};
use super::{CliError, Exit, read_input};
use crate::host::JournalError;

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
    let program = super::invoked();
    let answer = ShellAnswer {
        call_id: CallId::from(args.targets.last().map_or("", String::as_str)),
        batch,
        from_flags: args.answers.is_none(),
        provenance: Provenance::human(ANSWERER),
        program: &program,
    };
    let (picked, socket, log);
    let given = match args.targets.as_slice() {
        [session, _] => {
            log = PathBuf::from(session);
            picked = Some(super::desk::pick(
                &pg,
                std::slice::from_ref(&log),
                Access::Write,
            )?);
            let in_database = matches!(picked, Some(Picked::Database(_)));
            let to = AnswerTo::Session {
                name: session,
                in_database,
            };
            answer.give(picked.as_ref().map_or(&NoSessions, Picked::desk), to)
        }
        [_] if pg.pg.is_none() => {
            let dir = super::state_dir(args.state_dir.clone(), file)?;
            socket = Rendezvous::new(&dir).socket();
            picked = super::desk::state_dir(Some(dir), file)?.map(Picked::Logs);
            let to = AnswerTo::Call { inbox: &socket };
            answer.give(picked.as_ref().map_or(&NoSessions, Picked::desk), to)
        }
        _ => {
            return Err(CliError::usage(
                "with --pg, name the session and the call id",
            ));
        }
    };
    let call = visible(answer.call_id.as_str());
    match given.await.map_err(refused)? {
        ShellAnswered::InWindow => eprintln!("call {call}: answered in its window"),
        ShellAnswered::Admitted { reply, settled } => {
            if let Some(text) = reply_text(&reply) {
                println!("{text}");
            }
            let settled = if settled {
                "; the question is settled"
            } else {
                ""
            };
            eprintln!("call {call}: reply admitted{settled}");
        }
        // Queued for a live session (no desk of a command does that) or recorded in a ledger:
        // whoever runs the session admits it.
        ShellAnswered::Accepted { session, answer_id } => {
            eprintln!("call {call}: answer {} accepted", visible(&answer_id));
            match &picked {
                Some(Picked::Database(db)) if args.admit => {
                    let store = db.store().clone();
                    let said = tokio::task::spawn_blocking(move || admit_here(&store, &session));
                    let said = said.await;
                    eprintln!(
                        "{}",
                        said.map_err(|e| CliError::failure("INTERNAL", e.to_string()))?
                    );
                }
                _ => eprintln!("a worker (`ask-user worker --pg …`) admits it into the session"),
            }
        }
    }
    Ok(Exit::Ok)
}

/// The command's failure for a refused answer (a reply admitted instead is printed first).
pub(super) fn refused(refusal: ShellRefusal) -> CliError {
    if let Some(text) = refusal.admitted.as_deref().and_then(reply_text) {
        println!("{text}");
    }
    // A journal that could not deliver names its own code.
    let journal = (refusal.undelivered.as_ref()).and_then(|e| e.downcast_ref::<JournalError>());
    let code = journal.map_or(refusal.code, |e| e.code().to_owned());
    let exit = match refusal.kind {
        RefusalKind::NotContinued => Exit::NotContinued,
        RefusalKind::BadAnswer => Exit::BadAnswer,
        RefusalKind::ReplyQueued => Exit::ReplyQueued,
        RefusalKind::AlreadyAnswered => Exit::AlreadyAnswered,
        RefusalKind::AnsweredElsewhere => Exit::AnsweredElsewhere,
        RefusalKind::NotDurable => Exit::NotDurable,
        RefusalKind::InWindowElsewhere => Exit::InWindowElsewhere,
        RefusalKind::Usage => Exit::Usage,
        RefusalKind::Store => Exit::Log,
        RefusalKind::Internal => Exit::Failure,
    };
    CliError::new(code, refusal.message, exit)
}

impl From<pending_answer::DeskError> for CliError {
    /// As a refusal of the shell's answer would say it (`ShellRefusal`'s kinds).
    fn from(error: pending_answer::DeskError) -> Self {
        refused(error.into())
    }
}
