//! Installing the bridge's hooks in an agent's settings: added idempotently, the file as it was
//! kept in the state directory, and removed exactly (the file byte for byte as before when
//! nothing else changed it since).
//!
//! Claude Code: `PermissionRequest` (the bridge, [`ASK_TIMEOUT_SECS`]) and `PostToolUse` (the
//! withdrawal, [`WITHDRAW_TIMEOUT_SECS`]), each `{"matcher":"*","hooks":[{"type":"command",…}]}`
//! in `hooks` of `~/.claude/settings.json`, or of the folder's `.claude/settings.local.json`.

use std::io;
use std::path::{Path, PathBuf};

use native_asks::Agent;
use serde_json::{Map, Value, json};

/// How long Claude Code lets the bridge wait for a person: a day. Its own dialog stays on screen
/// beside it all along, so the keyboard is never held up; the hook is only how long a phone or
/// the page can still answer.
pub const ASK_TIMEOUT_SECS: u64 = 86_400;

/// How long the withdrawing hook may take (it connects to local sockets and ends).
pub const WITHDRAW_TIMEOUT_SECS: u64 = 30;

/// The events the bridge's hooks are installed for, each with its timeout.
const EVENTS: [(&str, u64); 2] = [
    ("PermissionRequest", ASK_TIMEOUT_SECS),
    ("PostToolUse", WITHDRAW_TIMEOUT_SECS),
];

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
        /// `(event, command)` of every bridge hook found.
        found: Vec<(String, String)>,
    },
}

/// Why the settings cannot be changed.
#[derive(Debug, thiserror::Error)]
pub enum HooksError {
    /// The agent has no hooks the bridge can use this way.
    #[error("{0} hooks are not installed this way yet")]
    Unsupported(&'static str),
    /// The file is not a JSON object.
    #[error("{path} is not a JSON object ({reason}); fix or move it first")]
    NotJson {
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
        if agent != Agent::ClaudeCode {
            return Err(HooksError::Unsupported(agent.display()));
        }
        let settings = match scope {
            Scope::User => home
                .ok_or(HooksError::NoHome)?
                .join(".claude/settings.json"),
            Scope::Project => folder.join(".claude/settings.local.json"),
        };
        let key = crate::withdraw::hash(&settings.display().to_string());
        let record = state_dir
            .join("hooks")
            .join(format!("{}-{key}.json", agent.name()));
        Ok(Self {
            agent,
            settings,
            record,
        })
    }

    /// The settings file.
    pub fn settings(&self) -> &Path {
        &self.settings
    }

    /// Adds the bridge's hooks running `program` (`ask-user`, or its path): idempotent.
    ///
    /// # Errors
    ///
    /// The file is not a JSON object, or cannot be read or written.
    pub fn install(&self, program: &str) -> Result<HooksReport, HooksError> {
        let before = self.read()?;
        let mut settings = parse(&self.settings, before.as_deref())?;
        if !self.found(&settings).is_empty() {
            return Ok(HooksReport::AlreadyInstalled);
        }
        let command = format!("{program} hook {}", self.agent.name());
        let Some(hooks) = hooks_of(&mut settings) else {
            return Ok(HooksReport::NotInstalled);
        };
        for (event, timeout) in EVENTS {
            let entry = json!({"matcher": "*", "hooks": [{"type": "command", "command": command, "timeout": timeout}]});
            match hooks.entry(event).or_insert_with(|| json!([])) {
                Value::Array(groups) => groups.push(entry),
                other => *other = json!([entry]),
            }
        }
        let written = render(&settings, before.as_deref());
        // What was there, kept before anything is written: uninstall brings it back.
        let record = json!({"settings": self.settings, "before": before, "written": written});
        write(
            &self.record,
            &serde_json::to_string_pretty(&record).unwrap_or_default(),
        )?;
        write(&self.settings, &written)?;
        Ok(HooksReport::Installed)
    }

    /// Removes the bridge's hooks: the file as it was before the install when nothing else
    /// changed it since, else only the entries the bridge added.
    ///
    /// # Errors
    ///
    /// The file is not a JSON object, or cannot be read or written.
    pub fn uninstall(&self) -> Result<HooksReport, HooksError> {
        let now = self.read()?;
        let mut settings = parse(&self.settings, now.as_deref())?;
        if self.found(&settings).is_empty() {
            return Ok(HooksReport::NotInstalled);
        }
        let record: Option<Value> = std::fs::read_to_string(&self.record)
            .ok()
            .and_then(|text| serde_json::from_str(&text).ok());
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
                self.remove(&mut settings);
                write(&self.settings, &render(&settings, now.as_deref()))?;
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
    pub fn status(&self) -> Result<HooksReport, HooksError> {
        let settings = parse(&self.settings, self.read()?.as_deref())?;
        let found = self.found(&settings);
        Ok(if found.is_empty() {
            HooksReport::NotInstalled
        } else {
            HooksReport::Status { found }
        })
    }

    fn read(&self) -> Result<Option<String>, HooksError> {
        match std::fs::read_to_string(&self.settings) {
            Ok(text) => Ok(Some(text)),
            Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(error) => Err(io_error(&self.settings)(error)),
        }
    }

    fn ours(&self, hook: &Value) -> bool {
        let suffix = format!(" hook {}", self.agent.name());
        hook.get("command")
            .and_then(Value::as_str)
            .is_some_and(|c| c.ends_with(&suffix))
    }

    fn found(&self, settings: &Value) -> Vec<(String, String)> {
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
    fn remove(&self, settings: &mut Value) {
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

fn parse(path: &Path, text: Option<&str>) -> Result<Value, HooksError> {
    let Some(text) = text.filter(|t| !t.trim().is_empty()) else {
        return Ok(Value::Object(Map::new()));
    };
    match serde_json::from_str::<Value>(text) {
        Ok(value @ Value::Object(_)) => Ok(value),
        Ok(_) => Err(HooksError::NotJson {
            path: path.display().to_string(),
            reason: "not an object".into(),
        }),
        Err(error) => Err(HooksError::NotJson {
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
