//! The arguments of the bridge's commands, `ask-user hook AGENT` and `ask-user hooks ACTION
//! AGENT`, and what they say. Behind the `clap` feature.

use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};
use native_asks::Agent;

use crate::{Hooks, HooksError, HooksReport, Scope};

fn agent(name: &str) -> Result<Agent, String> {
    Agent::from_name(name).ok_or_else(|| format!("`{name}` is `claude-code` or `codex`"))
}

/// The arguments of `hook`: what an agent's hook runs.
#[derive(Debug, Args)]
pub struct HookArgs {
    /// The agent whose hook this is: `claude-code` or `codex`.
    #[arg(value_parser = agent)]
    pub agent: Agent,
    /// The state directory (default: `ask-user mcp`'s): the inbox of its sessions shows the ask.
    #[arg(long, value_name = "DIR")]
    pub state_dir: Option<PathBuf>,
    /// How long the inbox may answer before the agent's own prompt asks (seconds; default: as
    /// long as Claude Code runs the hook, whose dialog races it; 60 for Codex, whose prompt waits
    /// for the hook).
    #[arg(long, value_name = "SECS", value_parser = clap::value_parser!(u64).range(1..))]
    pub window: Option<u64>,
}

impl HookArgs {
    /// The window of [`BridgeOptions::window`](crate::BridgeOptions::window): the flag's, else
    /// the agent's default.
    pub fn window(&self) -> Option<std::time::Duration> {
        match (self.window, self.agent) {
            (Some(secs), _) => Some(std::time::Duration::from_secs(secs)),
            (None, Agent::Codex) => Some(crate::CODEX_WINDOW),
            (None, Agent::ClaudeCode) => None,
        }
    }
}

/// What `hooks` does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum HooksAction {
    /// Add the bridge's hooks (the file as it was is kept, to uninstall exactly).
    Install,
    /// Remove them: the file back byte for byte when nothing else changed it since.
    Uninstall,
    /// Say whether they are installed.
    Status,
}

/// The arguments of `hooks`.
#[derive(Debug, Args)]
pub struct HooksArgs {
    /// What to do.
    pub action: HooksAction,
    /// The agent: `claude-code` (`codex` and `gemini` are not installed this way yet).
    #[arg(value_parser = agent)]
    pub agent: Agent,
    /// This folder's settings (`.claude/settings.local.json`) instead of yours.
    #[arg(long)]
    pub project: bool,
    /// The state directory, where the file as it was is kept (default: `ask-user mcp`'s).
    #[arg(long, value_name = "DIR")]
    pub state_dir: Option<PathBuf>,
}

impl HooksArgs {
    /// Does what the arguments say to the settings of `home` (the person's) or `folder` (the
    /// project's), installing `program` as the hook's command; what to tell the person, every
    /// path and command escaped by `escape`.
    ///
    /// # Errors
    ///
    /// What [`Hooks`] finds.
    pub fn run(
        &self,
        home: Option<&Path>,
        folder: &Path,
        state_dir: &Path,
        program: &str,
        escape: &dyn Fn(&str) -> String,
    ) -> Result<String, HooksError> {
        let scope = if self.project {
            Scope::Project
        } else {
            Scope::User
        };
        let hooks = Hooks::of(self.agent, scope, home, folder, state_dir)?;
        let report = match self.action {
            HooksAction::Install => hooks.install(program)?,
            HooksAction::Uninstall => hooks.uninstall()?,
            HooksAction::Status => hooks.status()?,
        };
        let settings = escape(&hooks.settings().display().to_string());
        let agent = self.agent.display();
        Ok(match report {
            HooksReport::Installed => format!(
                "installed in {settings}: {agent}'s permission prompts and questions reach the inbox (its page, a phone, `{} answer`) while its own dialog stays on screen; the first answer wins",
                escape(program)
            ),
            HooksReport::AlreadyInstalled => format!("already installed in {settings}"),
            HooksReport::Uninstalled { restored: true } => {
                format!("uninstalled: {settings} is as it was")
            }
            HooksReport::Uninstalled { restored: false } => format!(
                "uninstalled: the bridge's hooks are out of {settings}; what else changed there since is kept"
            ),
            HooksReport::NotInstalled => format!("not installed in {settings}"),
            HooksReport::Status { found } => (found.iter())
                .map(|(event, command)| format!("{event} in {settings}: {}", escape(command)))
                .collect::<Vec<_>>()
                .join("\n"),
        })
    }
}
