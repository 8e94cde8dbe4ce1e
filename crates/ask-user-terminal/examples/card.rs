//! Shows a question card in this terminal and prints the outcome as the model would read it.
//!
//! ```text
//! cargo run -p ask-user-terminal --example card -- QUESTIONS.json [--timed MS | --indefinite] [--call-id ID]
//! ```
//!
//! `QUESTIONS.json` holds questions in the service vocabulary:
//! `[{"id":…,"question":…,"header":…,"options":[{"label":…,"description":…}],"multiSelect":…}]`.
//!
//! It builds a user-questions seam with an in-memory agent registry and one root agent, registers
//! the terminal answerer, and asks:
//!
//! * by default a blocking, unkeyed request (closing the card cancels it);
//! * with `--indefinite`, a request keyed by the call id with no window (closing hides the card);
//! * with `--timed MS`, a timed request with a window of `MS` milliseconds.
//!
//! It prints one line on stdout: `{"answers":[…]}`, `{"pending":true,"callId":"…"}` or
//! `Error: <message>`. After a pending outcome the card stays answerable; when the person submits
//! it, the late answer is printed as `late: {"answers":[…]}`. While stdout is the terminal the
//! card is on, lines are printed through the answerer so they do not tear the card.
//!
//! Exit status: 0 for an answer or a pending outcome, 1 for an error outcome, 2 for bad usage or
//! an unreadable questions file. Without a terminal it shows nothing and fails closed, like any
//! headless run.

use std::io::IsTerminal;
use std::process::ExitCode;
use std::sync::Arc;

use ask_user_terminal::{TerminalAnswerer, TerminalOptions};
use pending_answer::{
    Accepted, DeskError, DeskSession, LateRefusal, QuestionDesk, Queued, SessionView, Submission,
};
use tokio::sync::mpsc;
use user_questions::{
    AgentHandle, AskRequest, CallId, HostBindings, InMemoryAgent, InMemoryAgentRegistry,
    InMemorySession, Question, QuestionEvent, QuestionEventKind, TimedAskRequest, TimedOutcome,
    UserQuestions, UserQuestionsConfig, WaitKey,
};

enum Mode {
    Blocking,
    Indefinite,
    Timed(i64),
}

struct Args {
    questions: Vec<Question>,
    mode: Mode,
    call_id: CallId,
}

const USAGE: &str = "usage: card QUESTIONS.json [--timed MS | --indefinite] [--call-id ID]";

fn parse_args() -> Result<Args, String> {
    let mut path = None;
    let mut mode = Mode::Blocking;
    let mut call_id = CallId::from("call_card");
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--timed" => {
                let ms = args.next().ok_or("--timed needs milliseconds")?;
                let ms = ms
                    .parse()
                    .map_err(|_| format!("--timed needs whole milliseconds, not {ms:?}"))?;
                mode = Mode::Timed(ms);
            }
            "--indefinite" => mode = Mode::Indefinite,
            "--call-id" => call_id = CallId::from(args.next().ok_or("--call-id needs an id")?),
            "-h" | "--help" => return Err(USAGE.to_owned()),
            _ if path.is_none() && !arg.starts_with("--") => path = Some(arg),
            _ => return Err(format!("unexpected argument {arg:?}\n{USAGE}")),
        }
    }
    let path = path.ok_or(USAGE)?;
    let text =
        std::fs::read_to_string(&path).map_err(|error| format!("cannot read {path}: {error}"))?;
    let questions = serde_json::from_str(&text)
        .map_err(|error| format!("{path} is not a JSON list of questions: {error}"))?;
    Ok(Args {
        questions,
        mode,
        call_id,
    })
}

/// Prints a line of outcome: through the answerer when stdout is the card's terminal (so a card
/// still on screen is not torn), straight to stdout otherwise.
fn emit(answerer: &TerminalAnswerer, line: String) {
    if std::io::stdout().is_terminal() {
        answerer.note(line);
    } else {
        println!("{line}");
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(args) => args,
        Err(message) => {
            eprintln!("{message}");
            return ExitCode::from(2);
        }
    };

    let registry = InMemoryAgentRegistry::new();
    let agent: AgentHandle = InMemoryAgent::new("root", InMemorySession::new("card"), []);
    registry.enter_root(Arc::clone(&agent));
    let seam = match UserQuestions::new(
        UserQuestionsConfig::default(),
        HostBindings::with_registry(registry),
    ) {
        Ok(seam) => seam,
        Err(error) => {
            eprintln!("{error}");
            return ExitCode::from(2);
        }
    };
    let (late_tx, mut late_rx) = mpsc::unbounded_channel();
    let answerer = TerminalAnswerer::new(
        &seam,
        TerminalOptions::new().with_desk(Arc::new(Forward(late_tx))),
    );
    let _guard = answerer.register(&seam);

    let call_id = args.call_id;
    let outcome = match args.mode {
        Mode::Blocking => seam
            .ask(AskRequest::new(args.questions).with_agent(Arc::clone(&agent)))
            .await
            .map(TimedOutcome::Answered),
        Mode::Indefinite => seam
            .ask(
                AskRequest::new(args.questions)
                    .with_agent(Arc::clone(&agent))
                    .with_wait(WaitKey::Indefinite {
                        call_id: call_id.clone(),
                    }),
            )
            .await
            .map(TimedOutcome::Answered),
        Mode::Timed(ms) => {
            seam.ask_timed(
                TimedAskRequest::new(args.questions, Arc::clone(&agent)),
                call_id.clone(),
                ms,
            )
            .await
        }
    };

    match outcome {
        Ok(TimedOutcome::Answered(reply)) => {
            emit(&answerer, json(&reply.answers));
            ExitCode::SUCCESS
        }
        Ok(TimedOutcome::Pending { call_id }) => {
            // This example is its own host and keeps no log: the pending question takes a late
            // answer at once, which a host announces once its pending result is durable.
            seam.publish(QuestionEvent {
                ask_id: None,
                call_id: Some(call_id.clone()),
                agent_id: None,
                session_id: Some(agent.session().id().clone()),
                at_ms: 0,
                kind: QuestionEventKind::Continued,
            });
            emit(
                &answerer,
                format!("{{\"pending\":true,\"callId\":{}}}", json(&call_id)),
            );
            if answerer.late_calls().contains(&call_id)
                && let Some(answers) = late_rx.recv().await
            {
                emit(&answerer, format!("late: {}", json(&answers)));
            }
            ExitCode::SUCCESS
        }
        Err(error) => {
            emit(&answerer, format!("Error: {error}"));
            ExitCode::FAILURE
        }
    }
}

/// This example's desk: a late answer goes to the channel `main` waits on.
struct Forward(mpsc::UnboundedSender<user_questions::AnswerBatch>);

#[user_questions::async_trait]
impl QuestionDesk for Forward {
    async fn sessions(&self) -> Result<Vec<DeskSession>, DeskError> {
        Ok(Vec::new())
    }

    async fn views(&self, _session: Option<&str>) -> Result<Vec<SessionView>, DeskError> {
        Ok(Vec::new())
    }

    async fn submit(&self, submission: Submission) -> Result<Accepted, LateRefusal> {
        let queued = Queued {
            call_id: submission.call_id.clone(),
            message_id: "late-1".to_owned(),
        };
        self.0
            .send(submission.answers.into_batch(None))
            .map(|()| Accepted::Queued(queued))
            .map_err(|_| {
                LateRefusal::Undelivered("Nobody is waiting for late answers any more.".into())
            })
    }
}

fn json(value: &impl serde::Serialize) -> String {
    serde_json::to_string(value).unwrap_or_else(|error| format!("<unserialisable: {error}>"))
}
