//! `ask-user demo`: the whole path, run by a person. The scripted model is the host crate's
//! (`ask_user_host::demo::ScriptedModel`: it asks a two-question batch through the timed tool,
//! works on while the question is pending, and admits a late answer in a new turn); here are the
//! surfaces a person answers on (the terminal card, `--web`'s page, notifications), the session
//! (a new log file, or `--pg` a new session in a database), and what is printed at each step.

use std::path::PathBuf;
use std::sync::Arc;

use ask_user_terminal::listing::{answer_hint, json_line};
use clap::Args;
use user_questions::CancellationToken;

use super::surfaces::{Surfaces, read_script};
use super::{CliError, Exit};
use crate::host::demo::{DEMO_CALL_ID, Played, ScriptedModel, Shown};
use crate::host::{Host, HostOptions, LogTarget};
use crate::store::now_ms;
use crate::terminal::is_interactive_terminal;

/// Arguments of `demo`.
#[derive(Debug, Args)]
pub struct DemoArgs {
    /// The foreground window in seconds before the question goes pending (as `--timeout` of
    /// `ask` and `mcp`; `--window` is an older name of it).
    #[arg(
        long = "timeout",
        alias = "window",
        value_name = "SECS",
        default_value_t = 30
    )]
    window: i64,
    /// The session log to write (default: a new file in the temporary directory).
    #[arg(long)]
    log: Option<PathBuf>,
    /// Answer from a scripted-answer file, before the terminal card is asked.
    #[arg(long)]
    answers: Option<PathBuf>,
    #[command(flatten)]
    web: ask_user_web::WebArgs,
    #[command(flatten)]
    notify: ask_user_notify::NotifyArgs,
    /// Run the session in a database instead of a log file (`--pg URL`): answers given there
    /// from any shell or page (`ask-user answer --pg …`) reach this demo while it runs.
    #[command(flatten)]
    pg: ask_user_pg::PgArgs,
}

pub(super) async fn run(args: DemoArgs, file: &super::config::Config) -> Result<Exit, CliError> {
    let demo = Demo::start(&args, file).await?;
    let show = |shown: Shown<'_>| demo.show(shown);
    let model = ScriptedModel::new(&demo.host, demo.cancel.clone(), &show);
    demo.say(format!("session log: {}", demo.path.display()));
    if let Some(web) = &demo.surfaces.web {
        demo.say(format!(
            "web   › answer on the page too (first answer wins):\n        {}",
            web.url()
        ));
    }
    let wait = |_: &[_]| {
        let place = match (demo.surfaces.interactive, demo.surfaces.web.is_some()) {
            (false, false) => return false,
            (true, true) => "in the card and on the page",
            (false, true) => "on the page",
            (true, false) => "in the card",
        };
        demo.say(format!("host  › the question is still open {place}; answer it now (Ctrl-C to stop and answer later)"));
        true
    };
    let (questions, waited, admitted) = match model.play(demo.wait_until_ready(), wait).await? {
        Played::Stopped => return demo.finish(Exit::ToolError).await,
        Played::Answered => return demo.finish(Exit::Ok).await,
        Played::Pending {
            questions,
            waited,
            admitted,
        } => (questions, waited, admitted),
    };
    // Placeholders where the person must choose, and the choices under them: a hint never
    // answers for the person, not even with the recommended option.
    let command = format!(
        "{} answer {} {DEMO_CALL_ID}",
        super::invoked(),
        demo.session_arg
    );
    let later = answer_hint(&command, &questions).replace('\n', "\n        ");
    if !waited {
        demo.say(format!(
            "host  › the question stays answerable; answer it later with:\n        {later}"
        ));
    } else if !admitted {
        demo.say(format!(
            "host  › stopped; answer later with:\n        {later}"
        ));
    }
    demo.finish(Exit::Ok).await
}

/// One demo run: the host, its surfaces and the Ctrl-C listener.
struct Demo {
    host: Arc<Host>,
    surfaces: Surfaces,
    cancel: CancellationToken,
    path: PathBuf,
    /// The session as the commands name it: the log's path, or `--pg <URL> NAME`.
    session_arg: String,
    /// A script answers first: nobody needs time to read.
    scripted: bool,
    window: i64,
    _interrupt: tokio_util::task::AbortOnDropHandle<()>,
    /// With `--pg`: the ledger's answers delivered to this live session, and the runtime the
    /// session runs in.
    _pg: Option<(ask_user_pg::LiveLedger, crate::host::HostRuntime)>,
}

impl Demo {
    async fn start(args: &DemoArgs, file: &super::config::Config) -> Result<Self, CliError> {
        if args.window < 1 {
            return Err(CliError::usage(
                "--timeout needs a positive number of seconds",
            ));
        }
        if !is_interactive_terminal() && args.answers.is_none() && !args.web.web {
            return Err(CliError::new(
                "NO_TERMINAL",
                "the demo needs a terminal to show its question card (or --web to answer on a page, or --answers FILE to run headless)",
                Exit::Usage,
            ));
        }
        let script = read_script(args.answers.as_deref())?;
        let config = tool_ask_user::AskUserConfig::timed_secs(args.window);
        let (host, path, session_arg, pg) = open_session(args, config, file)?;
        let host = Arc::new(host);
        let surfaces = Surfaces::wire(&host, script, (&args.web, &args.notify), file, true).await?;
        let cancel = CancellationToken::new();
        Ok(Self {
            _interrupt: super::cancel_on_stop(cancel.clone()),
            host,
            surfaces,
            cancel,
            path,
            session_arg,
            scripted: args.answers.is_some(),
            window: args.window,
            _pg: pg,
        })
    }

    /// Whether a person can answer here: at the terminal card or on the page.
    fn answerable(&self) -> bool {
        self.surfaces.interactive || self.surfaces.web.is_some()
    }

    /// Prints a line for the person without tearing a card on screen.
    fn say(&self, line: String) {
        self.surfaces.terminal.note(line);
    }

    /// What the model shows, as a line for the person.
    fn show(&self, shown: Shown<'_>) {
        match shown {
            Shown::Model(text) => self.say(format!("model › {text}")),
            Shown::Json(label, json) => self.say(json_line(label, json)),
        }
    }

    /// Before the call: says how to answer and, at a terminal a person reads, waits for Enter
    /// (the window starts with the card: let the person read the above first).
    async fn wait_until_ready(&self) {
        self.say(format!(
            "host  › session log: {} (held while the demo runs: `{} pending {}` reads it now)",
            super::visible(&self.path.display().to_string()),
            super::invoked(),
            self.session_arg
        ));
        if self.answerable() {
            self.say(format!(
                "        (answer in the card, or let the {} s window pass and answer later)",
                self.window
            ));
        }
        // With a page, the question goes there at once: a page open before it shows it.
        if !self.surfaces.interactive || self.scripted || self.surfaces.web.is_some() {
            return;
        }
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

    /// Ends the run: `exit`, or [`Exit::Interrupted`] after Ctrl-C.
    async fn finish(&self, exit: Exit) -> Result<Exit, CliError> {
        if let Some(web) = &self.surfaces.web {
            web.stop().await;
        }
        self.host.checkpoint()?;
        self.say(format!(
            "session log: {}\n        inspect it with: {} pending {}",
            self.path.display(),
            super::invoked(),
            self.session_arg
        ));
        Ok(if self.cancel.is_cancelled() {
            Exit::Interrupted
        } else {
            exit
        })
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
    let pg = args.pg.filled(false, file.pg()?);
    if let Some(url) = &pg.pg {
        let store = ask_user_pg::connect(url, pg.schema(), true)?;
        let live = (store.start_session(url, "demo", config, ScriptedModel::info()))?;
        let name = live.name;
        // The connection string may hold a password: hints name it `<URL>`.
        let schema = if pg.schema() == ask_user_pg::DEFAULT_SCHEMA {
            String::new()
        } else {
            format!(" --pg-schema {}", super::arg(pg.schema()))
        };
        let session_arg = format!("--pg '<URL>'{schema} {name}");
        let path = PathBuf::from(format!("pg:{name}"));
        return Ok((
            live.host,
            path,
            session_arg,
            Some((live.ledger, live.runtime)),
        ));
    }
    let path = args
        .log
        .clone()
        .unwrap_or_else(|| std::env::temp_dir().join(format!("ask-user-demo-{}.jsonl", now_ms())));
    let (host, _) = Host::open(
        HostOptions::new(Some(config), LogTarget::Create(path.clone()))
            .with_model(ScriptedModel::info()),
    )?;
    let session_arg = super::arg(path.display());
    Ok((host, path, session_arg, None))
}
