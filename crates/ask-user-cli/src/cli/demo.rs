//! `ask-user demo`: the whole path, run by a person.
//!
//! A scripted model (no LLM) asks a realistic two-question batch through the timed tool. The
//! person answers in the terminal card within the window, or lets it pass: then the tool result
//! is `pending`, the model visibly goes on with independent work, and the card stays answerable.
//! A late submission goes through `LateAnswers` into the agent's durable inbox, a new turn admits
//! it as the follow-up user message, and the projection settles the question. Every event is in
//! a JSONL session log whose path is printed at the end; the model-facing JSON is shown at each
//! step.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use ask_user_terminal::listing::json_line;
use clap::Args;
use user_questions::{
    AnswerBatch, CallId, CancellationToken, ContentBlock, RegisterOptions, ScriptedAnswerer,
};

use super::ask::interrupt_on_ctrl_c;
use super::{CliError, Exit};
use crate::host::{Host, HostOptions, LogTarget};
use crate::store::now_ms;
use crate::terminal::{TerminalAnswerer, TerminalOptions, is_interactive_terminal};

/// The demo's tool call id.
pub const DEMO_CALL_ID: &str = "call_demo_1";

/// The model's arguments: one single-select question with a recommended option, one
/// multi-select question.
pub const DEMO_ARGUMENTS: &str = r#"{"questions":[{"id":"db","header":"Database","question":"Which database should the new orders service use?","options":[{"label":"PostgreSQL (Recommended)","description":"Relational with strong consistency; the team already runs it in production."},{"label":"SQLite","description":"Embedded file database: simplest to operate, one writer at a time."},{"label":"DynamoDB","description":"Managed key-value store: scales without tuning, no joins."}]},{"id":"checks","header":"CI checks","question":"Which checks should run on every pull request?","multi_select":true,"options":[{"label":"Unit tests","description":"Fast: under a minute."},{"label":"Lint","description":"Formatting and static analysis."},{"label":"Integration tests","description":"Start a database container: about five minutes."},{"label":"Docs build","description":"Catches broken links in the handbook."}]}]}"#;

/// Work the scripted model does while the question is pending: none of it depends on the answer.
const INDEPENDENT_WORK: [&str; 3] = [
    "creating the service's workspace layout",
    "writing the README skeleton",
    "adding the HTTP health-check endpoint",
];

/// Arguments of `demo`.
#[derive(Debug, Args)]
pub struct DemoArgs {
    /// The foreground window in seconds before the question goes pending.
    #[arg(long, default_value_t = 30)]
    window: i64,
    /// The session log to write (default: a new file in the temporary directory).
    #[arg(long)]
    log: Option<PathBuf>,
    /// Answer from a scripted-answer file, before the terminal card is asked.
    #[arg(long)]
    answers: Option<PathBuf>,
    #[command(flatten)]
    web: super::web::WebArgs,
    #[command(flatten)]
    notify: super::notify::NotifyArgs,
    /// Run the session in a database instead of a log file (`--pg URL`): answers given there
    /// from any shell or page (`ask-user answer --pg …`) reach this demo while it runs.
    #[command(flatten)]
    pg: super::pg::PgArgs,
}

pub(super) async fn run(args: DemoArgs, file: &super::config::Config) -> Result<Exit, CliError> {
    let demo = Demo::start(&args, file).await?;
    let outcome = demo.ask().await?;
    if demo.cancel.is_cancelled() || outcome.is_error {
        demo.host.end_turn(if demo.cancel.is_cancelled() {
            "aborted"
        } else {
            "completed"
        })?;
        let exit = if demo.cancel.is_cancelled() {
            Exit::Interrupted
        } else {
            Exit::ToolError
        };
        return demo.finish(exit).await;
    }
    if let Some(batch) = outcome.answers() {
        demo.host.begin_step()?;
        demo.decide(&batch)?;
        demo.host.end_turn("completed")?;
        return demo.finish(Exit::Ok).await;
    }
    demo.independent_work().await?;
    // Placeholders where the person must choose, and the choices under them: a hint never
    // answers for the person, not even with the recommended option.
    let questions = demo
        .host
        .projection()
        .active(&user_questions::CallId::from(DEMO_CALL_ID))
        .map(|a| a.questions.clone());
    let later = ask_user_terminal::listing::answer_hint(
        &format!(
            "{} answer {} {DEMO_CALL_ID}",
            super::invoked(),
            demo.session_arg
        ),
        &questions.unwrap_or_default(),
    )
    .replace('\n', "\n        ");
    if !demo.answerable() || demo.cancel.is_cancelled() {
        demo.say(format!(
            "host  › the question stays answerable; answer it later with:\n        {later}"
        ));
        let exit = if demo.cancel.is_cancelled() {
            Exit::Interrupted
        } else {
            Exit::Ok
        };
        return demo.finish(exit).await;
    }
    let place = match (demo.interactive, demo.web.is_some()) {
        (true, true) => "in the card and on the page",
        (false, true) => "on the page",
        _ => "in the card",
    };
    demo.say(format!(
        "host  › the question is still open {place}; answer it now (Ctrl-C to stop and answer later)"
    ));
    tokio::select! {
        () = demo.cancel.cancelled() => {
            // An answer submitted just before Ctrl-C is queued: admit it rather than leave it.
            if demo.host.late().waiting().is_empty() {
                demo.say(format!("host  › stopped; answer later with:\n        {later}"));
            } else {
                demo.admit_late_reply()?;
            }
            return demo.finish(Exit::Interrupted).await;
        }
        () = demo.host.wait_for_input() => {}
    }
    demo.admit_late_reply()?;
    demo.finish(Exit::Ok).await
}

/// One demo run: the host, the terminal card and the Ctrl-C listener.
struct Demo {
    host: Arc<Host>,
    terminal: Arc<TerminalAnswerer>,
    cancel: CancellationToken,
    path: PathBuf,
    /// The session as the commands name it: the log's path, or `--pg <URL> NAME`.
    session_arg: String,
    interactive: bool,
    /// A script answers first: nobody needs time to read.
    scripted: bool,
    window: i64,
    /// The page, with `--web`: it races the terminal card.
    web: Option<super::web::WebRun>,
    /// Notifications, with `--ntfy`, `--notify-webhook`, `--bell` or `--notify-config`.
    _notifier: Option<ask_user_notify::Notifier>,
    _guards: Vec<user_questions::AnswererGuard>,
    _interrupt: super::AbortOnDrop,
    /// With `--pg`: the ledger's answers delivered to this live session, and the runtime the
    /// session runs in.
    _pg: Option<(ask_user_pg::LiveLedger, crate::host::HostRuntime)>,
}

impl Demo {
    async fn start(args: &DemoArgs, file: &super::config::Config) -> Result<Self, CliError> {
        if args.window < 1 {
            return Err(CliError::usage(
                "--window needs a positive number of seconds",
            ));
        }
        let interactive = is_interactive_terminal();
        if !interactive && args.answers.is_none() && !args.web.web {
            return Err(CliError::new(
                "NO_TERMINAL",
                "the demo needs a terminal to show its question card (or --web to answer on a page, or --answers FILE to run headless)",
                Exit::Usage,
            ));
        }
        let script = args
            .answers
            .as_ref()
            .map(|path| {
                ScriptedAnswerer::from_path(path).map_err(|e| CliError::input(e.to_string()))
            })
            .transpose()?;
        let config = tool_ask_user::AskUserConfig::timed_secs(args.window);
        let (host, path, session_arg, pg) = open_session(args, config, file)?;
        let host = Arc::new(host);
        let mut guards = Vec::new();
        if let Some(script) = script {
            let name = script.name().to_owned();
            guards.push(
                host.seam()
                    .register(Arc::new(script), RegisterOptions::global(name)),
            );
        }
        // Late answers from the card go to the session's desk, into the agent's durable inbox.
        let web = super::web::plan(&host, &args.web, file)?;
        let terminal = TerminalAnswerer::new(
            host.seam(),
            TerminalOptions::new().with_desk(crate::host::LiveDesk::of([&host])),
        );
        guards.push(terminal.register(host.seam()));
        let web = match web {
            Some(plan) => Some(plan.serve().await?),
            None => None,
        };
        // The page's address stays in reach under the card, which hides the lines printed before.
        terminal.set_status(web.as_ref().map(super::web::WebRun::status));
        let notifier = args.notify.start(
            &file.notify,
            host.seam(),
            web.as_ref().map(|w| w.links(args.web.public_url(file))),
            interactive,
        )?;
        let cancel = CancellationToken::new();
        Ok(Self {
            web,
            _notifier: notifier,
            _interrupt: interrupt_on_ctrl_c(cancel.clone()),
            host,
            terminal,
            cancel,
            path,
            session_arg,
            interactive,
            scripted: args.answers.is_some(),
            window: args.window,
            _guards: guards,
            _pg: pg,
        })
    }

    /// Whether a person can answer here: at the terminal card or on the page.
    fn answerable(&self) -> bool {
        self.interactive || self.web.is_some()
    }

    /// Prints a line for the person without tearing a card on screen.
    fn say(&self, line: String) {
        self.terminal.note(line);
    }

    /// Turn 1, step 1: the model asks.
    async fn ask(&self) -> Result<tool_ask_user::ToolOutcome, CliError> {
        let host = &self.host;
        self.say(format!("session log: {}", self.path.display()));
        if let Some(web) = &self.web {
            self.say(format!(
                "web   › answer on the page too (first answer wins):\n        {}",
                web.url()
            ));
        }
        host.begin_turn()?;
        host.begin_step()?;
        host.log_request_header()?;
        let intro = "I need two decisions from you before I scaffold the orders service.";
        host.assistant_text(intro)?;
        self.say(format!("model › {intro}"));
        self.say(json_line("model → ask_user_question ", DEMO_ARGUMENTS));
        if self.answerable() {
            self.say(format!(
                "        (answer in the card, or let the {} s window pass and answer later)",
                self.window
            ));
        }
        if self.interactive && !self.scripted {
            // The window starts with the card: let the person read the above first.
            self.say(format!(
                "host  › press Enter when you are ready: the card opens and its {} s window starts",
                self.window
            ));
            let ready = tokio::task::spawn_blocking(|| {
                let mut line = String::new();
                std::io::stdin().read_line(&mut line).map(|_| ())
            });
            tokio::select! {
                () = self.cancel.cancelled() => {}
                _ = ready => {}
            }
        }
        let call_id = CallId::from(DEMO_CALL_ID);
        let outcome = host
            .call_tool(&call_id, DEMO_ARGUMENTS, self.cancel.clone())
            .await?;
        self.say(json_line("tool  → model ", &outcome.text));
        host.end_step()?;
        Ok(outcome)
    }

    /// Pending: the model goes on with work that does not depend on the answer.
    async fn independent_work(&self) -> Result<(), CliError> {
        let host = &self.host;
        host.begin_step()?;
        let note =
            "No answer yet, and that is not a yes. I will do the work that does not depend on it.";
        host.assistant_text(note)?;
        self.say(format!("model › {note}"));
        for work in INDEPENDENT_WORK {
            tokio::select! {
                () = self.cancel.cancelled() => break,
                () = tokio::time::sleep(Duration::from_millis(1200)) => {}
            }
            host.assistant_text(&format!("Done: {work}."))?;
            self.say(format!("model › · {work}"));
        }
        host.end_turn(if self.cancel.is_cancelled() {
            "aborted"
        } else {
            "completed"
        })?;
        Ok(())
    }

    /// A new turn admits the late reply as the follow-up user message; the projection settles it.
    fn admit_late_reply(&self) -> Result<(), CliError> {
        let host = &self.host;
        // The turn claims the reply and its first step admits it.
        let claimed = host.begin_turn()?;
        host.begin_step()?;
        for message in &claimed {
            if let Some(text) = message.content.iter().find_map(ContentBlock::as_text) {
                self.say(json_line("user  → model ", text));
            }
        }
        let view = serde_json::to_string(host.projection().view()).unwrap_or_default();
        self.say(json_line("view  › ", &view));
        match claimed
            .iter()
            .filter_map(pending_answer::read_reply)
            .find_map(|reply| reply.answers)
        {
            Some(batch) => self.decide(&batch)?,
            None => host.assistant_text("Thanks for the reply.")?,
        }
        host.end_turn("completed")?;
        Ok(())
    }

    /// The model's decision from the answers.
    fn decide(&self, batch: &AnswerBatch) -> Result<(), CliError> {
        let reply = decision(batch);
        self.host.assistant_text(&reply)?;
        self.say(format!("model › {reply}"));
        Ok(())
    }

    async fn finish(&self, exit: Exit) -> Result<Exit, CliError> {
        if let Some(web) = &self.web {
            web.stop().await;
        }
        self.host.checkpoint()?;
        self.say(format!(
            "session log: {}\n        inspect it with: {} pending {}",
            self.path.display(),
            super::invoked(),
            self.session_arg
        ));
        Ok(exit)
    }
}

/// The demo's session and how the commands name it: a new log file, or with `--pg` a new
/// session in the database, fed the ledger's answers while it runs.
type Session = (
    Host,
    PathBuf,
    String,
    Option<(ask_user_pg::LiveLedger, crate::host::HostRuntime)>,
);

fn open_session(
    args: &DemoArgs,
    config: tool_ask_user::AskUserConfig,
    file: &super::config::Config,
) -> Result<Session, CliError> {
    let pg = args.pg.filled(false, file);
    if let Some(url) = &pg.pg {
        let store = super::pg::connect(url, pg.schema())?;
        let live = (store.start_session(url, "demo", config, demo_model()))?;
        let name = live.name;
        // The connection string may hold a password: hints name it `<URL>`.
        let schema = if pg.schema() == ask_user_pg::DEFAULT_SCHEMA {
            String::new()
        } else {
            format!(" --pg-schema {}", super::arg(pg.schema()))
        };
        let session_arg = format!("--pg '<URL>'{schema} {name}");
        let path = PathBuf::from(format!("pg:{name}"));
        return Ok((live.host, path, session_arg, Some((live.ledger, live.runtime))));
    }
    let path = args
        .log
        .clone()
        .unwrap_or_else(|| std::env::temp_dir().join(format!("ask-user-demo-{}.jsonl", now_ms())));
    let (host, _) = Host::open(
        HostOptions::new(Some(config), LogTarget::Create(path.clone())).with_model(demo_model()),
    )?;
    let session_arg = super::arg(path.display());
    Ok((host, path, session_arg, None))
}

/// The demo's model, as its `request/header` records it.
fn demo_model() -> crate::host::ModelInfo {
    crate::host::ModelInfo::new("ask-user-demo", "scripted")
}

/// What the scripted model decides from the answers.
fn decision(batch: &AnswerBatch) -> String {
    let pick = |id: &str| {
        batch.answers.iter().find(|a| a.id == id).map(|a| {
            let mut parts = a.selected.clone();
            parts.extend(a.custom.clone());
            parts
        })
    };
    let db = pick("db").unwrap_or_default();
    let checks = pick("checks").unwrap_or_default();
    let db = if db.is_empty() {
        "no database choice (skipped), so I will leave storage behind an interface".to_owned()
    } else {
        db.join(", ")
    };
    let checks = if checks.is_empty() {
        "no required checks".to_owned()
    } else {
        checks.join(", ")
    };
    format!("Thanks. Going with {db}; every pull request will run: {checks}.")
}
