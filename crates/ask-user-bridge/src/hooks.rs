//! Installing the bridge's hooks in an agent's settings: added idempotently, the file as it was
//! kept in the state directory, and removed exactly (the file byte for byte as before when
//! nothing else changed it since).
//!
//! Claude Code: `PermissionRequest` (the bridge, [`ASK_TIMEOUT_SECS`]), `PostToolUse` (the
//! withdrawal, [`WITHDRAW_TIMEOUT_SECS`]) and `Notification` (idle at its prompt: the person is
//! told, [`NOTIFY_TIMEOUT_SECS`]), each `{"matcher":"*","hooks":[{"type":"command",…}]}`
//! in `hooks` of `~/.claude/settings.json`, or of the folder's `.claude/settings.local.json`.
//!
//! Gemini CLI: `Notification` (its hooks cannot approve: the person is told a confirmation
//! waits) in `~/.gemini/settings.json`, or the folder's `.gemini/settings.json`, in Claude
//! Code's shape with a `name` and the timeout in milliseconds.
//!
//! Codex: `[[hooks.PermissionRequest]]` ([`CODEX_HOOK_TIMEOUT_SECS`]) in `~/.codex/config.toml`
//! (or `$CODEX_HOME/config.toml`, [`Hooks::at`]), or the folder's `.codex/config.toml`, and
//! Codex's trust of it (`[hooks.state."KEY"] trusted_hash`, [`Hooks::trust`]), without which
//! Codex does not run it.

use std::io;
use std::path::{Path, PathBuf};

use native_asks::Agent;
use serde_json::{Map, Value, json};
use toml_edit::DocumentMut;

use crate::codex_app::ListedHook;
use crate::codex_config;

/// How long Claude Code lets the bridge wait for a person: a day. Its own dialog stays on screen
/// beside it all along, so the keyboard is never held up; the hook is only how long a phone or
/// the page can still answer.
pub const ASK_TIMEOUT_SECS: u64 = 86_400;

/// How long the withdrawing hook may take (it connects to local sockets and ends).
pub const WITHDRAW_TIMEOUT_SECS: u64 = 30;

/// How long Codex lets the bridge's hook run: the window of its prompt
/// ([`CODEX_WINDOW`](crate::CODEX_WINDOW)) and a margin. Codex's own prompt waits for the hook,
/// so this is how long the person at the terminal may wait before the terminal asks.
pub const CODEX_HOOK_TIMEOUT_SECS: u64 = 90;

/// How long a notification's hook may take (it tells the inbox and ends).
pub const NOTIFY_TIMEOUT_SECS: u64 = 30;

/// The hook entries the bridge adds to a JSON settings file, by event: Claude Code's
/// (`timeout` in seconds) or Gemini CLI's (`timeout` in milliseconds, and a `name`).
fn json_entries(agent: Agent, command: &str) -> Vec<(&'static str, Value)> {
    let entry = |timeout: u64| json!({"matcher": "*", "hooks": [{"type": "command", "command": command, "timeout": timeout}]});
    match agent {
        Agent::ClaudeCode => vec![
            ("PermissionRequest", entry(ASK_TIMEOUT_SECS)),
            ("PostToolUse", entry(WITHDRAW_TIMEOUT_SECS)),
            ("Notification", entry(NOTIFY_TIMEOUT_SECS)),
        ],
        Agent::Gemini => vec![(
            "Notification",
            json!({"matcher": "*", "hooks": [{"name": "ask-user", "type": "command", "command": command, "timeout": NOTIFY_TIMEOUT_SECS * 1000}]}),
        )],
        Agent::Codex => Vec::new(),
    }
}

/// Which settings file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// The person's settings (`~/.claude/settings.json`).
    User,
    /// The folder's own settings, kept out of version control (`.claude/settings.local.json`).
    Project,
}

/// One agent's settings file, and where the bridge keeps what it changed.
#[derive(Clone, Debug)]
pub struct Hooks {
    agent: Agent,
    settings: PathBuf,
    record: PathBuf,
}

/// What installing, uninstalling or looking found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HooksReport {
    /// The hooks were added (the file as it was is kept).
    Installed,
    /// They were there already: nothing changed.
    AlreadyInstalled,
    /// They were removed; `restored` when the file is back byte for byte as it was.
    Uninstalled {
        /// The file is the one from before the install, byte for byte.
        restored: bool,
    },
    /// None of the bridge's hooks are in the file.
    NotInstalled,
    /// Installed, with the command each event runs.
    Status {
        /// Every bridge hook found.
        found: Vec<FoundHook>,
    },
}

/// A bridge hook found in an agent's settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FoundHook {
    /// The event (`PermissionRequest`, …).
    pub event: String,
    /// The command it runs.
    pub command: String,
    /// Whether the agent runs it: `None` for an agent that runs every configured hook (Claude
    /// Code); for Codex, its trust (`trusted`, `untrusted`, `modified`) as Codex reports it, or
    /// as the file records it when Codex was not asked.
    pub trust: Option<String>,
}

/// Why the settings cannot be changed.
#[derive(Debug, thiserror::Error)]
pub enum HooksError {
    /// The file is not a JSON object (Claude Code) or a TOML document (Codex).
    #[error("{path} cannot be read ({reason}); fix or move it first")]
    Malformed {
        /// The file.
        path: String,
        /// serde's word.
        reason: String,
    },
    /// Reading or writing failed.
    #[error("{path}: {error}")]
    Io {
        /// The file.
        path: String,
        /// The error.
        error: io::Error,
    },
    /// No home folder to find the person's settings in.
    #[error("HOME is not set: name the folder with --project")]
    NoHome,
}

fn io_error(path: &Path) -> impl Fn(io::Error) -> HooksError + '_ {
    move |error| HooksError::Io {
        path: path.display().to_string(),
        error,
    }
}

impl Hooks {
    /// `agent`'s settings for `scope` (`home`: the person's home folder; `folder`: the project),
    /// with what the bridge changed kept under `state_dir`.
    ///
    /// # Errors
    ///
    /// An agent whose hooks are not installed this way, or no home folder for [`Scope::User`].
    pub fn of(
        agent: Agent,
        scope: Scope,
        home: Option<&Path>,
        folder: &Path,
        state_dir: &Path,
    ) -> Result<Self, HooksError> {
        let (user, project) = match agent {
            Agent::ClaudeCode => (".claude/settings.json", ".claude/settings.local.json"),
            Agent::Codex => (".codex/config.toml", ".codex/config.toml"),
            Agent::Gemini => (".gemini/settings.json", ".gemini/settings.json"),
        };
        let settings = match scope {
            Scope::User => home.ok_or(HooksError::NoHome)?.join(user),
            Scope::Project => folder.join(project),
        };
        Ok(Self {
            agent,
            settings,
            record: PathBuf::new(),
        }
        .kept_in(state_dir))
    }

    /// The same agent's settings in `settings` instead (Codex's `$CODEX_HOME/config.toml`).
    #[must_use]
    pub fn at(self, settings: PathBuf, state_dir: &Path) -> Self {
        Self { settings, ..self }.kept_in(state_dir)
    }

    fn kept_in(self, state_dir: &Path) -> Self {
        let key = crate::withdraw::hash(&self.settings.display().to_string());
        let record = (state_dir.join("hooks")).join(format!("{}-{key}.json", self.agent.name()));
        Self { record, ..self }
    }

    /// The settings file.
    pub fn settings(&self) -> &Path {
        &self.settings
    }

    /// The agent.
    pub fn agent(&self) -> Agent {
        self.agent
    }

    /// Adds the bridge's hooks running `program` (`ask-user`, or its path): idempotent.
    ///
    /// # Errors
    ///
    /// The file is not a JSON object, or cannot be read or written.
    pub fn install(&self, program: &str) -> Result<HooksReport, HooksError> {
        let before = self.read()?;
        let mut settings = self.parse(before.as_deref())?;
        if !self.found(&settings).is_empty() {
            return Ok(HooksReport::AlreadyInstalled);
        }
        let command = format!("{program} hook {}", self.agent.name());
        if !settings.add(self.agent, &command) {
            return Ok(HooksReport::NotInstalled);
        }
        let written = settings.render(before.as_deref());
        // What was there, kept before anything is written: uninstall brings it back.
        let record = json!({"settings": self.settings, "before": before, "written": written});
        write(
            &self.record,
            &serde_json::to_string_pretty(&record).unwrap_or_default(),
        )?;
        write(&self.settings, &written)?;
        Ok(HooksReport::Installed)
    }

    /// Records Codex's trust of the bridge's hooks of this file that `listed` (Codex's
    /// `hooks/list`) names, at the hash Codex computed; the keys trusted, which uninstalling
    /// forgets. Nothing for an agent without trust (Claude Code).
    ///
    /// # Errors
    ///
    /// The file is not TOML, or cannot be read or written.
    pub fn trust(&self, listed: &[ListedHook]) -> Result<Vec<String>, HooksError> {
        if self.agent != Agent::Codex {
            return Ok(Vec::new());
        }
        let now = self.read()?;
        let Settings::Toml(mut doc) = self.parse(now.as_deref())? else {
            return Ok(Vec::new());
        };
        let ours = (listed.iter())
            .filter(|hook| hook.source_path == self.settings && self.is_ours(&hook.command))
            .filter(|hook| {
                codex_config::trusted(&doc, &hook.key).as_ref() != Some(&hook.current_hash)
            })
            .collect::<Vec<_>>();
        if ours.is_empty() {
            return Ok(Vec::new());
        }
        for hook in &ours {
            codex_config::trust(&mut doc, &hook.key, &hook.current_hash);
        }
        let written = Settings::Toml(doc).render(now.as_deref());
        let keys = ours.iter().map(|hook| hook.key.clone()).collect::<Vec<_>>();
        // The record follows: the file as the bridge left it, and the keys it trusted.
        if let Some(mut record) = self.record()
            && record.get("written").and_then(Value::as_str) == now.as_deref()
        {
            record["written"] = json!(written);
            let trusted = record["trusted"].as_array().cloned().unwrap_or_default();
            let trusted = trusted.into_iter().chain(keys.iter().map(|k| json!(k)));
            record["trusted"] = Value::Array(trusted.collect());
            write(
                &self.record,
                &serde_json::to_string_pretty(&record).unwrap_or_default(),
            )?;
        }
        write(&self.settings, &written)?;
        Ok(keys)
    }

    fn record(&self) -> Option<Value> {
        let text = std::fs::read_to_string(&self.record).ok()?;
        serde_json::from_str(&text).ok()
    }

    /// Removes the bridge's hooks: the file as it was before the install when nothing else
    /// changed it since, else only the entries the bridge added.
    ///
    /// # Errors
    ///
    /// The file is not a JSON object, or cannot be read or written.
    pub fn uninstall(&self) -> Result<HooksReport, HooksError> {
        let now = self.read()?;
        let mut settings = self.parse(now.as_deref())?;
        if self.found(&settings).is_empty() {
            return Ok(HooksReport::NotInstalled);
        }
        let record = self.record();
        let unchanged = record
            .as_ref()
            .and_then(|r| r.get("written"))
            .and_then(Value::as_str)
            == now.as_deref();
        let before = record.as_ref().and_then(|r| r.get("before"));
        let restored = match before {
            Some(Value::String(before)) if unchanged => {
                write(&self.settings, before)?;
                true
            }
            Some(Value::Null) if unchanged => {
                std::fs::remove_file(&self.settings).map_err(io_error(&self.settings))?;
                true
            }
            _ => {
                let trusted = (record.as_ref())
                    .and_then(|r| r.get("trusted"))
                    .and_then(Value::as_array)
                    .map(|keys| keys.iter().filter_map(Value::as_str).map(str::to_owned))
                    .map(Iterator::collect::<Vec<_>>)
                    .unwrap_or_default();
                self.remove(&mut settings, &trusted);
                write(&self.settings, &settings.render(now.as_deref()))?;
                false
            }
        };
        let _ = std::fs::remove_file(&self.record);
        Ok(HooksReport::Uninstalled { restored })
    }

    /// Which of the bridge's hooks the file holds.
    ///
    /// # Errors
    ///
    /// The file is not a JSON object, or cannot be read.
    /// `listed`: Codex's own `hooks/list`, when it could be asked, for the trust it reports.
    ///
    /// # Errors
    ///
    /// The file is not a JSON object, or cannot be read.
    pub fn status(&self, listed: Option<&[ListedHook]>) -> Result<HooksReport, HooksError> {
        let settings = self.parse(self.read()?.as_deref())?;
        let found = self.found(&settings);
        if found.is_empty() {
            return Ok(HooksReport::NotInstalled);
        }
        let trust = |command: &str| match (&settings, listed) {
            (Settings::Json(_), _) => None,
            (Settings::Toml(_), Some(listed)) => Some(
                (listed.iter())
                    .find(|hook| hook.source_path == self.settings && hook.command == command)
                    .map_or("not listed by Codex", |hook| hook.trust_status.as_str())
                    .to_owned(),
            ),
            (Settings::Toml(doc), None) => {
                let recorded = (doc.get("hooks").and_then(|h| h.get("state")))
                    .and_then(toml_edit::Item::as_table_like)
                    .is_some_and(|state| {
                        state.iter().any(|(key, _)| {
                            key.starts_with(&format!(
                                "{}:permission_request:",
                                self.settings.display()
                            ))
                        })
                    });
                Some(
                    if recorded {
                        "trust recorded"
                    } else {
                        "untrusted"
                    }
                    .to_owned(),
                )
            }
        };
        let found = (found.into_iter())
            .map(|(event, command)| FoundHook {
                trust: trust(&command),
                event,
                command,
            })
            .collect();
        Ok(HooksReport::Status { found })
    }

    fn read(&self) -> Result<Option<String>, HooksError> {
        match std::fs::read_to_string(&self.settings) {
            Ok(text) => Ok(Some(text)),
            Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(error) => Err(io_error(&self.settings)(error)),
        }
    }

    fn parse(&self, text: Option<&str>) -> Result<Settings, HooksError> {
        match self.agent {
            Agent::ClaudeCode | Agent::Gemini => parse(&self.settings, text).map(Settings::Json),
            Agent::Codex => (text.unwrap_or_default().parse::<DocumentMut>())
                .map(Settings::Toml)
                .map_err(|error| HooksError::Malformed {
                    path: self.settings.display().to_string(),
                    reason: error.message().to_owned(),
                }),
        }
    }

    /// Whether `command` is the bridge's hook for this agent.
    fn is_ours(&self, command: &str) -> bool {
        command.ends_with(&format!(" hook {}", self.agent.name()))
    }

    fn ours(&self, hook: &Value) -> bool {
        (hook.get("command").and_then(Value::as_str)).is_some_and(|c| self.is_ours(c))
    }

    fn found(&self, settings: &Settings) -> Vec<(String, String)> {
        match settings {
            Settings::Json(settings) => self.found_json(settings),
            Settings::Toml(doc) => codex_config::found(doc, &|c| self.is_ours(c)),
        }
    }

    fn remove(&self, settings: &mut Settings, trusted: &[String]) {
        match settings {
            Settings::Json(settings) => self.remove_json(settings),
            Settings::Toml(doc) => {
                codex_config::remove(doc, &|c| self.is_ours(c));
                codex_config::untrust(doc, trusted);
            }
        }
    }

    fn found_json(&self, settings: &Value) -> Vec<(String, String)> {
        let mut found = Vec::new();
        let Some(hooks) = settings.get("hooks").and_then(Value::as_object) else {
            return found;
        };
        for (event, groups) in hooks {
            for group in groups.as_array().into_iter().flatten() {
                for hook in group
                    .get("hooks")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    if self.ours(hook) {
                        let command = hook.get("command").and_then(Value::as_str);
                        found.push((event.clone(), command.unwrap_or_default().to_owned()));
                    }
                }
            }
        }
        found
    }

    /// Takes the bridge's hooks out, and what held only them.
    fn remove_json(&self, settings: &mut Value) {
        let Some(hooks) = settings.get_mut("hooks").and_then(Value::as_object_mut) else {
            return;
        };
        for groups in hooks.values_mut() {
            let Some(list) = groups.as_array_mut() else {
                continue;
            };
            for group in list.iter_mut() {
                if let Some(inner) = group.get_mut("hooks").and_then(Value::as_array_mut) {
                    inner.retain(|hook| !self.ours(hook));
                }
            }
            list.retain(|group| {
                group
                    .get("hooks")
                    .and_then(Value::as_array)
                    .is_none_or(|h| !h.is_empty())
            });
        }
        hooks.retain(|_, groups| groups.as_array().is_none_or(|g| !g.is_empty()));
        if hooks.is_empty()
            && let Some(settings) = settings.as_object_mut()
        {
            settings.remove("hooks");
        }
    }
}

/// An agent's settings, parsed.
enum Settings {
    /// Claude Code's JSON.
    Json(Value),
    /// Codex's TOML, as written (comments and layout kept).
    Toml(DocumentMut),
}

impl Settings {
    /// Adds the bridge's hooks running `command`; `false` when the file's `hooks` cannot hold
    /// them.
    fn add(&mut self, agent: Agent, command: &str) -> bool {
        match self {
            Self::Json(settings) => {
                let Some(hooks) = hooks_of(settings) else {
                    return false;
                };
                for (event, entry) in json_entries(agent, command) {
                    match hooks.entry(event).or_insert_with(|| json!([])) {
                        Value::Array(groups) => groups.push(entry),
                        other => *other = json!([entry]),
                    }
                }
                true
            }
            Self::Toml(doc) => codex_config::add(doc, command, CODEX_HOOK_TIMEOUT_SECS),
        }
    }

    fn render(&self, before: Option<&str>) -> String {
        match self {
            Self::Json(settings) => render(settings, before),
            Self::Toml(doc) => doc.to_string(),
        }
    }
}

fn parse(path: &Path, text: Option<&str>) -> Result<Value, HooksError> {
    let Some(text) = text.filter(|t| !t.trim().is_empty()) else {
        return Ok(Value::Object(Map::new()));
    };
    match serde_json::from_str::<Value>(text) {
        Ok(value @ Value::Object(_)) => Ok(value),
        Ok(_) => Err(HooksError::Malformed {
            path: path.display().to_string(),
            reason: "not an object".into(),
        }),
        Err(error) => Err(HooksError::Malformed {
            path: path.display().to_string(),
            reason: error.to_string(),
        }),
    }
}

/// `hooks` of `settings` as an object (made one when it is missing or is not one).
fn hooks_of(settings: &mut Value) -> Option<&mut Map<String, Value>> {
    let slot = settings
        .as_object_mut()?
        .entry("hooks")
        .or_insert_with(|| json!({}));
    if !slot.is_object() {
        *slot = json!({});
    }
    slot.as_object_mut()
}

/// The settings as the agent writes them (two-space indent), ending in a newline when the file
/// did or is new.
fn render(settings: &Value, before: Option<&str>) -> String {
    let mut text = serde_json::to_string_pretty(settings).unwrap_or_default();
    if before.is_none_or(|b| b.ends_with('\n')) {
        text.push('\n');
    }
    text
}

fn write(path: &Path, text: &str) -> Result<(), HooksError> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(io_error(dir))?;
    }
    let temp = path.with_extension("ask-user-tmp");
    std::fs::write(&temp, text).map_err(io_error(&temp))?;
    std::fs::rename(&temp, path).map_err(io_error(path))
}
