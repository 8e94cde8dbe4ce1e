//! `ask-user ask`: one `ask_user_question` call, printed as the model reads it.

use ask_user_terminal::sanitize::{visible, visible_lines};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::Arc;

use clap::Args;
use user_questions::{CallId, CancellationToken};

use super::surfaces::{Surfaces, read_script};
use super::{CliError, Exit, ToolArgs, read_input, report_resume};
use crate::host::{Host, HostOptions, LogTarget};
use ask_user_terminal::listing::{model_text, pending_hint};

/// Arguments of `ask`.
#[derive(Debug, Args)]
pub struct AskArgs {
    #[command(flatten)]
    tool: ToolArgs,
    /// Append the call to this session log (created if missing; repaired first if it exists).
    #[arg(long)]
    log: Option<PathBuf>,
    /// Answer from this scripted-answer file (`{"answerer":…,"rules":[…]}`) before the terminal.
    #[arg(long)]
    answers: Option<PathBuf>,
    /// The tool call id (default: a fresh one).
    #[arg(long)]
    call_id: Option<String>,
    /// The model's arguments as JSON text, in a file or `-` for stdin.
    arguments: PathBuf,
    #[command(flatten)]
    web: ask_user_web::WebArgs,
    #[command(flatten)]
    notify: ask_user_notify::NotifyArgs,
}

/// A pending result promises a late answer, which only a session log outlives `ask` for: a timed
/// call without `--log` is refused before it is asked.
fn needs_log(args: &AskArgs, file: &super::config::Config) -> Result<(), CliError> {
    if args.tool.mode(file.mode) == super::Mode::Timed && args.log.is_none() {
        return Err(CliError::usage(
            "ask --mode timed needs --log FILE: a question whose window passes is answered late from its log, and without one the session ends with this process",
        ));
    }
    Ok(())
}

pub(super) async fn run(args: AskArgs, file: &super::config::Config) -> Result<Exit, CliError> {
    needs_log(&args, file)?;
    let arguments = read_input(&args.arguments)?;
    let config = Some(args.tool.config(file.mode, file.timeout)?);
    let log = args
        .log
        .clone()
        .map_or(LogTarget::Memory, LogTarget::OpenOrCreate);
    let script = read_script(args.answers.as_deref())?;
    let (host, resumed) = Host::open(HostOptions::new(config, log))?;
    let host = Arc::new(host);
    report_resume(&resumed);
    let surfaces = Surfaces::wire(&host, script, (&args.web, &args.notify), file, false).await?;
    let (terminal, interactive) = (&surfaces.terminal, surfaces.interactive);
    let web = &surfaces.web;
    if let Some(web) = web {
        // Before the call and on stderr: stdout carries only the model's text.
        eprintln!(
            "web › answer on the page (first answer wins): {}",
            web.url()
        );
    }
    if args.answers.is_none() && !interactive && web.is_none() {
        tracing::warn!("no terminal and no --answers: nobody can answer, so the call fails closed");
    }

    let call_id = CallId::from(
        args.call_id
            .unwrap_or_else(|| format!("call_{}", pending_answer::new_message_id())),
    );
    if let Some(path) = host.log_path() {
        eprintln!(
            "call {} in {}",
            visible(call_id.as_str()),
            visible(&path.display().to_string())
        );
    }
    let cancel = CancellationToken::new();
    let _interrupt = super::cancel_on_stop(cancel.clone());

    // Like any turn of an agent loop, this one admits what was queued for it first (a late reply
    // a crashed session had accepted, for example), so nothing stays stuck in the inbox: the
    // turn claims it and its first step admits it.
    let queued = host.begin_turn()?;
    host.begin_step()?;
    if !queued.is_empty() {
        eprintln!(
            "note: admitted {} message(s) queued for this session",
            queued.len()
        );
    }
    host.log_request_header()?;
    let outcome = host.call_tool(&call_id, &arguments, cancel.clone()).await?;
    host.end_turn(if cancel.is_cancelled() {
        "aborted"
    } else {
        "completed"
    })?;
    host.checkpoint()?;

    // A card gives the screen back asynchronously, and a line written while it still has its
    // alternate screen vanishes with it. So while a card may be showing, lines for the person go
    // through the answerer, which prints them on the normal screen once the card is gone; the
    // outcome does too when stdout is that terminal. Redirected, stdout gets it directly.
    let say = |line: String| {
        if interactive {
            terminal.note(line);
        } else {
            // The same sanitiser the card's notes go through: call ids and paths are not ours.
            eprintln!("{}", visible_lines(&line));
        }
    };
    if let Some(web) = &web {
        web.stop().await;
    }
    if interactive && std::io::stdout().is_terminal() {
        terminal.note(outcome.text.clone());
    } else {
        println!("{}", model_text(&outcome.text));
    }
    if outcome.is_pending()
        && let Some(hint) = hint(&host, &call_id)
    {
        say(hint);
    }
    if cancel.is_cancelled() {
        return Ok(Exit::Interrupted);
    }
    match &outcome.error {
        Some(error) if outcome.is_error => {
            say(format!(
                "error[{}]: the tool returned an error result",
                error.code
            ));
            Ok(Exit::ToolError)
        }
        None if outcome.is_error => Ok(Exit::ToolError),
        _ => Ok(Exit::Ok),
    }
}

/// How to answer a pending call later, from a shell (`listing::pending_hint`).
fn hint(host: &Host, call_id: &CallId) -> Option<String> {
    let log = super::arg(host.log_path()?.display());
    let active = host
        .projection()
        .active(call_id)
        .map(|a| a.questions.clone());
    let questions = active.unwrap_or_default();
    Some(pending_hint(&super::invoked(), &log, call_id, &questions))
}
