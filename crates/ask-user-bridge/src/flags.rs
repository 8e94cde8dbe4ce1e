//! The arguments of the bridge's commands, `ask-user hook AGENT` and `ask-user hooks ACTION
//! AGENT`, and what they say. Behind the `clap` feature.

use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};
use native_asks::Agent;

use crate::{Hooks, HooksError, HooksReport, Scope};

fn agent(name: &str) -> Result<Agent, String> {
    Agent::from_name(name).ok_or_else(|| format!("`{name}` is `claude-code`, `codex` or `gemini`"))
}

/// The arguments of `hook`: what an agent's hook runs.
#[derive(Debug, Args)]
pub struct HookArgs {
    /// The agent whose hook this is: `claude-code`, `codex` or `gemini`.
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
            (None, Agent::ClaudeCode | Agent::Gemini) => None,
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
    /// The agent: `claude-code`, `codex` or `gemini`.
    #[arg(value_parser = agent)]
    pub agent: Agent,
    /// This folder's settings (`.claude/settings.local.json`, `.codex/config.toml`) instead of
    /// yours.
    #[arg(long)]
    pub project: bool,
    /// The state directory, where the file as it was is kept (default: `ask-user mcp`'s).
    #[arg(long, value_name = "DIR")]
    pub state_dir: Option<PathBuf>,
    /// The Codex program asked for the hook's trust (its `app-server`'s `hooks/list`).
    #[arg(long, value_name = "PROGRAM", default_value = "codex")]
    pub codex: PathBuf,
}

/// Where the `hooks` command looks.
#[derive(Clone, Debug)]
pub struct HooksPlaces<'a> {
    /// The person's home folder.
    pub home: Option<&'a Path>,
    /// Codex's home (`$CODEX_HOME`), when set: its `config.toml` is the person's.
    pub codex_home: Option<&'a Path>,
    /// The project folder (`--project`, and where Codex is asked from).
    pub folder: &'a Path,
    /// The state directory.
    pub state_dir: &'a Path,
}

impl HooksArgs {
    /// Does what the arguments say to the agent's settings in `places`, installing `program` as
    /// the hook's command (and, for Codex, recording Codex's trust of it, as Codex's
    /// `app-server` computes it); what to tell the person, every path and command escaped by
    /// `escape`.
    ///
    /// # Errors
    ///
    /// What [`Hooks`] finds.
    pub async fn run(
        &self,
        places: &HooksPlaces<'_>,
        program: &str,
        escape: &dyn Fn(&str) -> String,
    ) -> Result<String, HooksError> {
        let scope = if self.project {
            Scope::Project
        } else {
            Scope::User
        };
        let (folder, state_dir) = (places.folder, places.state_dir);
        let mut hooks = Hooks::of(self.agent, scope, places.home, folder, state_dir)?;
        if let (Agent::Codex, Scope::User, Some(codex_home)) =
            (self.agent, scope, places.codex_home)
        {
            hooks = hooks.at(codex_home.join("config.toml"), state_dir);
        }
        let settings = escape(&hooks.settings().display().to_string());
        let agent = self.agent.display();
        let codex = escape(&self.codex.display().to_string());
        let listed = async || match self.agent {
            Agent::Codex => Some(crate::codex_app::hooks_list(&self.codex, folder).await),
            Agent::ClaudeCode | Agent::Gemini => None,
        };
        Ok(match self.action {
            HooksAction::Install => {
                let report = hooks.install(program)?;
                let done = match report {
                    HooksReport::Installed => {
                        let answer = escape(program);
                        match self.agent {
                            Agent::ClaudeCode => format!(
                                "installed in {settings}: {agent}'s permission prompts and questions reach the inbox (its page, a phone, `{answer} answer`) while its own dialog stays on screen; the first answer wins; when it waits for your input, your phone is told"
                            ),
                            Agent::Codex => format!(
                                "installed in {settings}: {agent}'s permission prompts reach the inbox (its page, a phone, `{answer} answer`); Codex's own prompt waits for them up to 60 s, then asks at the terminal"
                            ),
                            Agent::Gemini => format!(
                                "installed in {settings}: when {agent} waits for your confirmation, your phone and webhooks are told (its hooks cannot approve: answer at its terminal)"
                            ),
                        }
                    }
                    _ => format!("already installed in {settings}"),
                };
                match listed().await {
                    None => done,
                    Some(Ok(listed)) => {
                        let trusted = hooks.trust(&listed)?;
                        let now = hooks.status(Some(&listed))?;
                        let running = matches!(&now, HooksReport::Status { found } if found.iter().all(|f| f.trust.as_deref() != Some("untrusted")));
                        if trusted.is_empty() && running {
                            format!("{done}\nCodex already trusts it")
                        } else {
                            format!(
                                "{done}\ntrusted for Codex, as you asked by installing it (`{codex} app-server` computed its hash; Codex runs it from its next session; `/hooks` in Codex shows it)"
                            )
                        }
                    }
                    Some(Err(error)) => format!(
                        "{done}\nnot trusted yet: Codex runs it only once trusted, and {} — run this again where `{codex}` runs (or name it with --codex), or trust it in Codex's `/hooks`",
                        escape(&error.to_string())
                    ),
                }
            }
            HooksAction::Uninstall => match hooks.uninstall()? {
                HooksReport::Uninstalled { restored: true } => {
                    format!("uninstalled: {settings} is as it was")
                }
                HooksReport::Uninstalled { restored: false } => format!(
                    "uninstalled: the bridge's hooks are out of {settings}; what else changed there since is kept"
                ),
                _ => format!("not installed in {settings}"),
            },
            HooksAction::Status => {
                let listed = listed().await.and_then(Result::ok);
                match hooks.status(listed.as_deref())? {
                    HooksReport::Status { found } => (found.iter())
                        .map(|hook| {
                            let trust = (hook.trust.as_deref())
                                .map(|t| format!(" ({agent}: {t})"))
                                .unwrap_or_default();
                            format!(
                                "{} in {settings}: {}{trust}",
                                hook.event,
                                escape(&hook.command)
                            )
                        })
                        .collect::<Vec<_>>()
                        .join("\n"),
                    _ => format!("not installed in {settings}"),
                }
            }
        })
    }
}

/// The arguments of `codex`: a Codex turn run through its app-server, its prompts answered from
/// the inbox.
#[derive(Debug, Args)]
pub struct CodexArgs {
    /// What to ask Codex to do.
    pub prompt: String,
    /// The Codex program.
    #[arg(long, value_name = "PROGRAM", default_value = "codex")]
    pub codex: PathBuf,
    /// A Codex configuration override for this turn (`-c key=value`, as `codex -c`).
    #[arg(short = 'c', long = "codex-config", value_name = "KEY=VALUE")]
    pub overrides: Vec<String>,
    /// The state directory (default: `ask-user mcp`'s): the inbox of its sessions shows the
    /// prompts.
    #[arg(long, value_name = "DIR")]
    pub state_dir: Option<PathBuf>,
}

impl CodexArgs {
    /// The turn to run in `cwd`.
    pub fn turn(&self, cwd: PathBuf) -> crate::CodexTurn {
        crate::CodexTurn {
            codex: self.codex.clone(),
            args: (self.overrides.iter())
                .flat_map(|o| ["-c".to_owned(), o.clone()])
                .collect(),
            cwd,
            prompt: self.prompt.clone(),
        }
    }
}
