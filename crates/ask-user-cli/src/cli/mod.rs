//! The `ask-user` command line: `demo`, `ask`, `pending`, `answer`, `schema` and `mcp`.
//!
//! Every command reports a failure as one line on stderr, `error[CODE]: message`, and exits
//! with a status that tells the failures apart ([`Exit`]). Model-facing JSON goes to stdout.

mod answer;
mod ask;
mod config;
mod demo;
mod desk;
mod hook;
mod inbox;
mod mcp;
mod pending;
mod pg;
mod schema;
mod surfaces;
mod web;

use std::path::{Path, PathBuf};

use ask_user_notify::FlagsError;
use ask_user_terminal::listing::shell_word;
use ask_user_terminal::sanitize::visible;
use clap::{Parser, Subcommand};
use tokio_util::sync::CancellationToken;
use tokio_util::task::AbortOnDropHandle;

use crate::host::HostError;

/// Exit statuses of `ask-user`; each one's number is the process exit status.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Exit {
    /// Success: an answer, a pending result, a listing, a settled late answer.
    Ok = 0,
    /// An unexpected failure.
    Failure = 1,
    /// Bad command-line usage (clap's own status).
    Usage = 2,
    /// `answer`: no session has the call, or it takes no answer (a legacy call, or one that
    /// ended without an answer): `UNKNOWN_CALL`, `NOT_WAITING`.
    NotContinued = 3,
    /// `answer`: the answers do not fit the questions (`BAD_ANSWER`).
    BadAnswer = 4,
    /// `answer`: a reply for the call is already queued (`REPLY_QUEUED`).
    ReplyQueued = 5,
    /// The session log cannot be used (missing, not a session log, locked, I/O).
    Log = 6,
    /// `ask`: the tool returned an error result (printed on stdout as the model reads it).
    ToolError = 7,
    /// An input file (arguments, answers, script) is unreadable or invalid.
    Input = 8,
    /// `answer`: the question is settled already (`ALREADY_ANSWERED`).
    AlreadyAnswered = 9,
    /// `answer`: the question was in its window and another surface answered it first
    /// (`ANSWERED_ELSEWHERE`).
    AnsweredElsewhere = 10,
    /// `answer`: its window closed but its pending result is not in the log (yet), so it takes
    /// no late answer (`NOT_DURABLE`).
    NotDurable = 11,
    /// `answer`: the question is in its window at a process no inbox reaches
    /// (`IN_WINDOW_ELSEWHERE`).
    InWindowElsewhere = 12,
    /// Interrupted (Ctrl-C).
    Interrupted = 130,
}

impl Exit {
    /// The process exit status.
    pub fn code(self) -> u8 {
        self as u8
    }
}

/// A command's failure: printed as `error[CODE]: message`, exits with `exit`.
#[derive(Debug)]
pub struct CliError {
    /// The stable code.
    pub code: String,
    /// The message.
    pub message: String,
    /// The exit status.
    pub exit: Exit,
}

impl CliError {
    pub(crate) fn new(code: impl Into<String>, message: impl Into<String>, exit: Exit) -> Self {
        Self {
            code: code.into(),
            message: message.into(),
            exit,
        }
    }

    /// `BAD_INPUT`: an input file is unreadable or invalid.
    pub(crate) fn input(message: impl Into<String>) -> Self {
        Self::new("BAD_INPUT", message, Exit::Input)
    }

    /// `BAD_USAGE`: the command line asks for what cannot be done.
    pub(crate) fn usage(message: impl Into<String>) -> Self {
        Self::new("BAD_USAGE", message, Exit::Usage)
    }

    /// An unexpected failure.
    pub(crate) fn failure(code: impl Into<String>, message: impl Into<String>) -> Self {
        Self::new(code, message, Exit::Failure)
    }

    /// The session log or database cannot be used.
    pub(crate) fn log(code: impl Into<String>, message: impl Into<String>) -> Self {
        Self::new(code, message, Exit::Log)
    }
}

impl From<HostError> for CliError {
    fn from(error: HostError) -> Self {
        let exit = match &error {
            HostError::Config(_) | HostError::AgentIdTaken(_) | HostError::DuplicateCallId(_) => {
                Exit::Usage
            }
            HostError::Order(_) => Exit::Failure,
            HostError::Store(_) | HostError::Journal(_) => Exit::Log,
        };
        Self::new(error.code(), error.to_string(), exit)
    }
}

impl From<FlagsError> for CliError {
    fn from(error: FlagsError) -> Self {
        let exit = match &error {
            FlagsError::Config(_) => Exit::Usage,
            FlagsError::Input(_) => Exit::Input,
            FlagsError::Unavailable(_) => Exit::Failure,
        };
        Self::new(error.code(), error.to_string(), exit)
    }
}

impl From<crate::store::StoreError> for CliError {
    fn from(error: crate::store::StoreError) -> Self {
        let mut message = error.to_string();
        if matches!(error, crate::store::StoreError::Locked { .. }) {
            // Who holds it, most likely, and what to do.
            message.push_str(
                " (a running `demo`, `ask`, `serve` or `mcp` session): answer where it runs (its card or page), or once it has ended",
            );
        }
        Self::new(error.code(), message, Exit::Log)
    }
}

const AFTER_HELP: &str = "\
Exit status: 0 success; 1 unexpected failure; 2 usage; 3 the call takes no answer (UNKNOWN_CALL,
NOT_WAITING); 4 BAD_ANSWER; 5 REPLY_QUEUED; 6 the session log cannot be used; 7 the tool returned
an error result; 8 an input file is invalid; 9 ALREADY_ANSWERED; 10 ANSWERED_ELSEWHERE; 11
NOT_DURABLE; 12 IN_WINDOW_ELSEWHERE; 130 interrupted.

Which to run: `demo` tries the whole path in this terminal (`demo --web` on a page instead);
`mcp` serves your agents (Claude Code, Codex, …); `inbox` is the one page and notification stream
for all of them (`mcp` starts it when a surface is configured); `serve` puts the pending
questions of log files you name on a page; `pending` and `answer` work from the shell.

Start with `ask-user demo`.";

/// Ask a human from an LLM agent, and get the answer back, even late.
#[derive(Debug, Parser)]
#[command(
    name = "ask-user",
    version,
    about = "Ask a human from an LLM agent, and get the answer back to the model, even late.",
    after_help = AFTER_HELP
)]
pub struct Cli {
    /// More logging on stderr (-v: info, -vv: debug).
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
    /// Read the configuration from FILE instead of `$XDG_CONFIG_HOME/ask-user/config.toml`
    /// (else `~/.config/ask-user/config.toml`); see `ask-user config`.
    #[arg(long, global = true, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// The command.
    #[command(subcommand)]
    pub command: Command,
}

/// The commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the whole path: a scripted model asks two questions through the timed tool; answer in
    /// the terminal card in time, or let the window pass and answer late.
    #[command(
        after_help = "Example:\n  ask-user demo\n  ask-user demo --timeout 10 --log demo.jsonl\n  ask-user demo --web          # on a page instead of the terminal"
    )]
    Demo(demo::DemoArgs),
    /// Run one `ask_user_question` call from the model's arguments and print the tool result as
    /// the model reads it.
    #[command(
        after_help = "Example:\n  echo '{\"questions\":[{\"id\":\"go\",\"question\":\"Ship it?\",\"options\":[{\"label\":\"yes\"},{\"label\":\"no\"}]}]}' \\\n    | ask-user ask --mode timed --timeout 60 --log session.jsonl -"
    )]
    Ask(ask::AskArgs),
    /// List the open and continued questions of the state directory's logs (`ask-user mcp`'s),
    /// or of one session log (read only).
    #[command(
        after_help = "Example:\n  ask-user pending session.jsonl\n  ask-user pending session.jsonl --json"
    )]
    Pending(pending::PendingArgs),
    /// Answer a question from the shell: in its window (through the machine's inbox, racing the
    /// other surfaces) or late (the reply is admitted into its log).
    #[command(
        override_usage = "ask-user answer CALL_ID [--state-dir DIR] (--pick ID=LABEL… | --custom ID=TEXT… | --skip ID… | --answers FILE)\n       ask-user answer LOG CALL_ID (--pick …)\n       ask-user answer --pg URL SESSION CALL_ID (--pick …) [--admit]",
        after_help = "Example: a question `ask-user pending` lists, in its window or late,\n  ask-user answer call_2c5cf5dbe5584b2793ec8eb0f0e11c4b_1 --pick db=SQLite\nOn the demo's own log (`ask-user demo --log demo.jsonl`, the window let pass),\n  ask-user answer demo.jsonl call_demo_1 --pick db=LABEL --pick checks=LABEL --pick checks=LABEL --custom checks=TEXT\nwith LABEL one of the question's labels, as `ask-user pending demo.jsonl` lists them (quoted for the shell when it has spaces: --pick ID='two words')."
    )]
    Answer(answer::AnswerArgs),
    /// Print the tool schema the model sees.
    #[command(
        after_help = "Example:\n  ask-user schema\n  ask-user schema --mode timed --timeout 45"
    )]
    Schema(schema::SchemaArgs),
    /// Serve `ask_user_question` to an MCP client (Claude Code, Cursor, VS Code, Codex), over
    /// stdio or streamable HTTP; its user answers in the client's own form.
    #[command(
        after_help = "Example:\n  claude mcp add --transport stdio ask-user -- ask-user mcp --mode timed\n  ask-user mcp --http 127.0.0.1:8765"
    )]
    Mcp(mcp::McpArgs),
    /// Serve the continued (pending) questions of session logs on a web page, to answer them
    /// late from a browser; each answer is admitted into its log.
    #[command(
        after_help = "Example:\n  ask-user serve demo.jsonl\n  ask-user serve logs/*.jsonl --addr 127.0.0.1:8766"
    )]
    Serve(web::ServeArgs),
    /// Admit the answers given to sessions in a database (`--pg`), for every session no other
    /// process holds; run one or several, on any machines.
    #[command(
        after_help = "Example:\n  ask-user worker --pg 'host=db.internal user=ask dbname=agents'\n  ask-user answer --pg 'host=db.internal user=ask dbname=agents' SESSION CALL --pick scope='Tool only'"
    )]
    Worker(ask_user_pg::WorkerArgs),
    /// Write a session of a database (`--pg`) as its JSONL log, byte for byte what the file store holds.
    #[command(
        after_help = "Example:\n  ask-user export --pg postgres://localhost/agents s1 -o s1.jsonl"
    )]
    Export(ask_user_pg::ExportArgs),
    /// Put a JSONL session log into a database (`--pg`) as a session, in one transaction.
    #[command(
        after_help = "Example:\n  ask-user import --pg postgres://localhost/agents s1.jsonl --name s1"
    )]
    Import(ask_user_pg::ImportArgs),
    /// Print the configuration in effect (the configuration file, the environment variables it
    /// names, the built-in defaults) and where each value came from; secrets are masked.
    #[command(
        after_help = "Example:\n  ask-user config\n  ask-user --config ./ask-user.toml config"
    )]
    Config(config::ConfigArgs),
    /// One page and one notification stream for every MCP session of the machine: run the
    /// inbox in the foreground and print its URL (`ask-user mcp` starts it when a surface is
    /// configured and none runs), or with `--url` print the URL of the one that runs.
    #[command(
        after_help = "Example:\n  ask-user inbox\n  ask-user inbox --url\n  ask-user inbox --ntfy my-topic --web-public-url http://192.168.1.20:8766"
    )]
    Inbox(inbox::InboxArgs),
    /// Run by an agent's hook (Claude Code, Codex): its own permission prompt goes to the inbox,
    /// racing its dialog; prints the first answer's decision, or nothing.
    #[command(after_help = "Installed by `ask-user hooks install claude-code`.")]
    Hook(ask_user_bridge::HookArgs),
    /// Put the bridge's hooks in an agent's settings, take them out exactly, or say whether
    /// they are there.
    #[command(
        after_help = "Example:\n  ask-user hooks install claude-code\n  ask-user hooks uninstall claude-code"
    )]
    Hooks(ask_user_bridge::HooksArgs),
    /// Run a Codex turn through Codex's app-server, as its client: every approval and question
    /// Codex asks goes to the inbox (the page, a phone, `ask-user answer`); what its model says
    /// is printed.
    #[command(
        after_help = "Example:\n  ask-user codex \"run the tests and fix what fails\"\n  ask-user codex -c model=gpt-5.5 \"add a README\""
    )]
    Codex(ask_user_bridge::CodexArgs),
}

/// The tool mode (`--mode`, the configuration file's `mode`): `tool_ask_user`'s, whose flags
/// these are ([`ToolArgs`]).
pub use tool_ask_user::{AskUserMode as Mode, ToolArgs};

impl From<tool_ask_user::ConfigError> for CliError {
    fn from(error: tool_ask_user::ConfigError) -> Self {
        Self::new("BAD_CONFIG", error.to_string(), Exit::Usage)
    }
}

/// Cancels `cancel` on Ctrl-C or `SIGTERM` ([`stopped`]): a call then ends with `ASK_ABORTED`,
/// its result logged; until the returned guard is dropped.
pub(crate) fn cancel_on_stop(cancel: CancellationToken) -> AbortOnDropHandle<()> {
    AbortOnDropHandle::new(tokio::spawn(async move {
        stopped().await;
        cancel.cancel();
    }))
}

/// Resolves on Ctrl-C or `SIGTERM`: how a server in the foreground or the background is stopped.
pub(crate) async fn stopped() {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
    let term = async {
        match term.as_mut() {
            Some(term) => term.recv().await,
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term => {}
    }
}

/// Runs a command and reports its failure on stderr.
pub async fn run(cli: Cli) -> Exit {
    // Every command reads the file first, once, and is handed what it needs of it: a malformed
    // one stops any command.
    let loaded = match config::load(cli.config.as_deref()) {
        Ok(loaded) => loaded,
        Err(error) => return report(&error),
    };
    let file = &loaded.config;
    let result = match cli.command {
        Command::Demo(args) => demo::run(args, file).await,
        Command::Ask(args) => ask::run(args, file).await,
        Command::Pending(args) => pending::run(&args, file).await,
        Command::Answer(args) => answer::run(&args, file).await,
        Command::Schema(args) => schema::run(&args, file),
        Command::Mcp(args) => mcp::run(args, &loaded).await,
        Command::Serve(args) => web::serve(args, file).await,
        Command::Worker(args) => pg::worker(args).await,
        Command::Export(args) => pg::export(&args),
        Command::Import(args) => pg::import(&args),
        Command::Config(args) => config::run(&args, &loaded),
        Command::Inbox(args) => inbox::run(args, file).await,
        Command::Hook(args) => hook::hook(args, &loaded).await,
        Command::Hooks(args) => hook::hooks(&args, file).await,
        Command::Codex(args) => hook::codex(args, &loaded).await,
    };
    match result {
        Ok(exit) => exit,
        Err(error) => report(&error),
    }
}

/// Reports a failure on stderr; its exit code.
fn report(error: &CliError) -> Exit {
    // A message can quote a model's or a log's text (a label, a call id, a path).
    eprintln!(
        "error[{}]: {}",
        visible(&error.code),
        visible(&error.message)
    );
    error.exit
}

/// Reads `text` as a configuration file named `path`, with no environment (a secret named by
/// an `…_env` key is missing): `Ok` when it is a valid file, else the one-line error a command
/// would report. The reader the fuzz target `config_file` drives; commands read the file
/// themselves.
///
/// # Errors
///
/// The error message, which names the file, the line and the column.
pub fn check_config_text(text: &str, path: &Path) -> Result<(), String> {
    config::parse(text, path, &|_| Err(std::env::VarError::NotPresent))
        .map(|_| ())
        .map_err(|error| error.message)
}

/// The state directory: the flag's, else the configuration file's (`file`), else `ask-user
/// mcp`'s default; an error when none can be found (neither `XDG_STATE_HOME` nor `HOME` is set).
pub(crate) fn state_dir(
    given: Option<PathBuf>,
    file: &config::Config,
) -> Result<PathBuf, CliError> {
    (given.or_else(|| file.state_dir.clone()))
        .or_else(ask_user_mcp::default_state_dir)
        .ok_or_else(|| {
            CliError::usage(
                "no state directory: set --state-dir (neither XDG_STATE_HOME nor HOME is set)",
            )
        })
}

/// Reports a command line that does not parse. Help and version requests are printed as clap
/// prints them; a usage error becomes one line, `error[BAD_USAGE]: …`, like every other failure,
/// naming the help page to read instead of repeating it.
pub fn report_parse_error(error: &clap::Error) -> Exit {
    use clap::error::ErrorKind;
    match error.kind() {
        ErrorKind::DisplayHelp
        | ErrorKind::DisplayVersion
        | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            // Nothing useful is left to report if the help text cannot be written.
            let _ = error.print();
            if error.use_stderr() {
                Exit::Usage
            } else {
                Exit::Ok
            }
        }
        _ => {
            eprintln!(
                "error[BAD_USAGE]: {}",
                visible(&ask_user_terminal::shell::usage_line(
                    &error.render().to_string()
                ))
            );
            Exit::Usage
        }
    }
}

/// Installs the stderr log subscriber: warnings by default, more with `-v`.
pub fn init_tracing(verbose: u8) {
    let level = match verbose {
        0 => tracing::Level::WARN,
        1 => tracing::Level::INFO,
        _ => tracing::Level::DEBUG,
    };
    let _ = tracing_subscriber::fmt()
        .with_max_level(level)
        .with_writer(std::io::stderr)
        .with_target(false)
        .without_time()
        .try_init();
}

/// The command a printed hint starts with, runnable as printed (see
/// [`program_word`](ask_user_terminal::shell::program_word)).
pub(crate) fn invoked() -> String {
    ask_user_terminal::shell::program_word("ask-user")
}

/// A hint's argument: a path or an id, shell-quoted when it needs it.
pub(crate) fn arg(word: impl std::fmt::Display) -> String {
    shell_word(&word.to_string())
}

/// Reads a file, or stdin for `-`.
pub(crate) fn read_input(path: &PathBuf) -> Result<String, CliError> {
    if path.as_os_str() == "-" {
        std::io::read_to_string(std::io::stdin())
            .map_err(|e| CliError::input(format!("cannot read stdin: {e}")))
    } else {
        std::fs::read_to_string(path)
            .map_err(|e| CliError::input(format!("cannot read {}: {e}", path.display())))
    }
}

/// Prints what opening a log restored, on stderr. Findings and repairs are already reported by
/// the store as warnings.
pub(crate) fn report_resume(resumed: &crate::host::Resumed) {
    if resumed.restored_inbox > 0 {
        eprintln!(
            "note: {} queued message(s) restored from the log",
            resumed.restored_inbox
        );
    }
}
