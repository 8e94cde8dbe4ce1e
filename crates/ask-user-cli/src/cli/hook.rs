//! `ask-user hook AGENT`, what an agent's hook runs (the bridge of native asks, SPEC §9.7), and
//! `ask-user hooks install|uninstall|status AGENT`, which puts it in the agent's settings, and
//! `ask-user codex PROMPT`, a Codex turn whose prompts the inbox answers.

use std::io::Read as _;
use std::path::PathBuf;

use ask_user_bridge::{
    BridgeOptions, CodexArgs, HookArgs, HooksArgs, HooksPlaces, REACH_WITHIN, TurnNote,
};
use ask_user_terminal::sanitize::visible;
use native_asks::{HookEvent, MAX_HOOK_INPUT};
use tokio_util::sync::CancellationToken;

use super::{CliError, Exit};

/// `hook`: reads the agent's hook input on stdin; for a permission prompt, asks the inbox and
/// prints the decision of the first answer, or nothing (the agent's own dialog decides).
pub(super) async fn hook(args: HookArgs, loaded: &super::config::Loaded) -> Result<Exit, CliError> {
    let mut text = String::new();
    (std::io::stdin().take(MAX_HOOK_INPUT as u64 + 1))
        .read_to_string(&mut text)
        .map_err(|e| CliError::input(format!("cannot read the hook's input: {e}")))?;
    let event = HookEvent::read(args.agent, &text).map_err(|e| CliError::input(e.to_string()))?;
    let state_dir = super::state_dir(args.state_dir.clone(), &loaded.config)?;
    let connect = super::inbox::connector(state_dir.clone(), loaded, Vec::new(), None);
    let (reach_within, stop) = (REACH_WITHIN, CancellationToken::new());
    // The agent ends the hook (SIGTERM) when its own dialog settled the prompt.
    let _stopping = super::cancel_on_stop(stop.clone());
    let window = args.window();
    let options = BridgeOptions {
        state_dir,
        connect,
        reach_within,
        window,
    };
    let run = (ask_user_bridge::run_hook(event, &options, &stop).await)
        .map_err(|e| CliError::log("BRIDGE", e.to_string()))?;
    run.stdout.iter().for_each(|out| println!("{out}"));
    run.stderr
        .iter()
        .for_each(|err| eprintln!("{}", visible(err)));
    Ok(Exit::Ok)
}

/// `hooks`: installs, uninstalls or reports the bridge's hooks in the agent's settings.
pub(super) async fn hooks(
    args: &HooksArgs,
    file: &super::config::Config,
) -> Result<Exit, CliError> {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let codex_home = std::env::var_os("CODEX_HOME").map(PathBuf::from);
    let folder = std::env::current_dir().map_err(|e| CliError::failure("CWD", e.to_string()))?;
    let state_dir = super::state_dir(args.state_dir.clone(), file)?;
    let escape = |text: &str| visible(text).into_owned();
    let program = super::invoked();
    let places = HooksPlaces {
        home: home.as_deref(),
        codex_home: codex_home.as_deref(),
        folder: &folder,
        state_dir: &state_dir,
    };
    let said = (args.run(&places, &program, &escape).await)
        .map_err(|e| CliError::log("SETTINGS", e.to_string()))?;
    println!("{said}");
    Ok(Exit::Ok)
}

/// `codex`: one Codex turn through its app-server; its prompts are answered from the inbox,
/// what its model says goes to stdout, what happens to stderr.
pub(super) async fn codex(
    args: CodexArgs,
    loaded: &super::config::Loaded,
) -> Result<Exit, CliError> {
    let cwd = std::env::current_dir().map_err(|e| CliError::failure("CWD", e.to_string()))?;
    let state_dir = super::state_dir(args.state_dir.clone(), &loaded.config)?;
    let connect = super::inbox::connector(state_dir.clone(), loaded, Vec::new(), None);
    let options = BridgeOptions {
        state_dir,
        connect,
        reach_within: REACH_WITHIN,
        window: None,
    };
    let stop = CancellationToken::new();
    let _stopping = super::cancel_on_stop(stop.clone());
    let mut note = |note: TurnNote| match note {
        TurnNote::Said(_) => println!("{}", note.line()),
        _ => eprintln!("{}", note.line()),
    };
    let ended = (ask_user_bridge::run_turn(&args.turn(cwd), &options, &mut note, &stop).await)
        .map_err(|e| CliError::failure("CODEX", e.to_string()))?;
    eprintln!("codex: the turn {}", visible(&ended.status));
    Ok(match ended.status.as_str() {
        "completed" => Exit::Ok,
        "stopped" | "interrupted" => Exit::Interrupted,
        _ => Exit::Failure,
    })
}
