//! The tool's configuration (SPEC §2.1): which definition to register, the default wait of the
//! timed one, and how its late answers reach the model.
//!
//! A host reads [`AskUserConfig`] from its preset file with serde; the timeout range is checked
//! when the tool or its definition is built, so a config written in Rust is checked the same way.

use serde::Deserialize;

/// The default wait of the timed tool, in seconds.
pub const DEFAULT_TIMEOUT_SECS: i64 = 120;

/// The largest tool timeout, in seconds: the seam's largest wait (2^31 − 1 ms) in whole seconds.
pub const MAX_TIMEOUT_SECS: i64 = 2_147_483;

/// The timeout value that means "wait indefinitely".
pub const INDEFINITE_TIMEOUT: i64 = -1;

/// The name of the companion tool through which a model fetches late answers where no user message
/// can reach it (an MCP server's `ask_user_question_answer`). The texts of
/// [`LateAnswerRoute::CompanionTool`] name it; the host that offers the tool registers it under
/// this name.
pub const ANSWER_TOOL_NAME: &str = "ask_user_question_answer";

/// How a timed call's late answer reaches the model, which the timed definition's texts and its
/// pending result say. It changes only those words (the `timeout` description and the pending
/// notice): the schema's shape, the arguments accepted and the execution are the same. The legacy
/// definition, which never goes pending, ignores it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LateAnswerRoute {
    /// The host puts the late reply into the conversation as a user message
    /// (`answer_to_pending_question`): a host that runs the agent's turns. The default.
    #[default]
    UserMessage,
    /// The model fetches it later by calling the companion tool [`ANSWER_TOOL_NAME`] with the
    /// call id: a host that cannot put a message into the client's conversation (an MCP server).
    CompanionTool,
}

impl LateAnswerRoute {
    /// The config and tracing name: `user_message` or `companion_tool`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::UserMessage => "user_message",
            Self::CompanionTool => "companion_tool",
        }
    }
}

/// Which `ask_user_question` definition is registered. Exactly one is, never both.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum AskUserMode {
    /// The blocking tool: it waits for an answer or an error and never reports pending.
    #[default]
    #[cfg_attr(feature = "clap", value(help = "The blocking tool (the default)"))]
    Legacy,
    /// The timed tool: it waits for a foreground window, then reports pending.
    #[cfg_attr(
        feature = "clap",
        value(help = "Returns pending after a window; the question stays answerable")
    )]
    Timed,
}

impl AskUserMode {
    /// The config and tracing name: `legacy` or `timed`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Legacy => "legacy",
            Self::Timed => "timed",
        }
    }
}

impl std::fmt::Display for AskUserMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The tool's configuration (SPEC §2.1). No configuration at all means [`AskUserConfig::LEGACY`].
///
/// `timeout` must be `-1` or in `1..=2147483` seconds in both modes; legacy mode ignores a valid
/// value. [`AskUserConfig::validate`] checks it, and building the tool or its definition calls it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AskUserConfig {
    /// `"legacy"` (default) or `"timed"`.
    #[serde(default)]
    pub mode: AskUserMode,
    /// The timed tool's default wait in seconds (default 120); `-1` waits indefinitely.
    #[serde(default = "default_timeout")]
    pub timeout: i64,
    /// How a timed call's late answer reaches the model (default `"user_message"`;
    /// `"companion_tool"` for an MCP server). Legacy mode ignores it.
    #[serde(default)]
    pub late_answers: LateAnswerRoute,
}

fn default_timeout() -> i64 {
    DEFAULT_TIMEOUT_SECS
}

impl Default for AskUserConfig {
    /// Equals the value read from `{}`: legacy mode, timeout 120.
    fn default() -> Self {
        Self::LEGACY
    }
}

impl AskUserConfig {
    /// The default configuration: the legacy tool.
    pub const LEGACY: Self = Self {
        mode: AskUserMode::Legacy,
        timeout: DEFAULT_TIMEOUT_SECS,
        late_answers: LateAnswerRoute::UserMessage,
    };

    /// The timed tool whose calls wait `seconds` by default (not yet checked: `-1`, or
    /// `1..=2147483`); late answers arrive as user messages. The unit is in the name because the
    /// seam's own waits ([`ask_timed`](user_questions::UserQuestions::ask_timed)) are in
    /// milliseconds.
    pub const fn timed_secs(seconds: i64) -> Self {
        Self {
            mode: AskUserMode::Timed,
            timeout: seconds,
            late_answers: LateAnswerRoute::UserMessage,
        }
    }

    /// The timed tool whose calls wait `window` by default, in whole seconds (a fraction of a
    /// second is dropped; a window longer than [`MAX_TIMEOUT_SECS`] fails
    /// [`validate`](Self::validate)); late answers arrive as user messages.
    pub fn timed_for(window: std::time::Duration) -> Self {
        Self::timed_secs(i64::try_from(window.as_secs()).unwrap_or(i64::MAX))
    }

    /// The timed tool whose calls wait indefinitely by default (`timeout: -1`).
    pub const fn timed_indefinitely() -> Self {
        Self::timed_secs(INDEFINITE_TIMEOUT)
    }

    /// This configuration with late answers reaching the model by `route`.
    #[must_use]
    pub const fn with_late_answers(mut self, route: LateAnswerRoute) -> Self {
        self.late_answers = route;
        self
    }

    /// Reads a configuration from JSON text and checks it.
    pub fn from_json(text: &str) -> Result<Self, ConfigError> {
        let config: Self =
            serde_json::from_str(text).map_err(|error| ConfigError::Invalid(format!("{error}")))?;
        config.validate()?;
        Ok(config)
    }

    /// Checks the timeout range (both modes).
    pub fn validate(&self) -> Result<(), ConfigError> {
        if is_valid_timeout(self.timeout) {
            Ok(())
        } else {
            Err(ConfigError::Timeout {
                timeout: self.timeout,
            })
        }
    }
}

/// Whether `seconds` is a valid tool timeout: `-1`, or `1..=2147483`.
pub fn is_valid_timeout(seconds: i64) -> bool {
    seconds == INDEFINITE_TIMEOUT || (1..=MAX_TIMEOUT_SECS).contains(&seconds)
}

/// A tool configuration that cannot be used. The tool is not built and nothing is registered.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// The timeout is neither `-1` nor in `1..=2147483`.
    #[error(
        "invalid ask_user_question timeout {timeout}: use -1 (wait indefinitely) or a whole number of seconds from 1 to 2147483"
    )]
    Timeout {
        /// The rejected value.
        timeout: i64,
    },
    /// The configuration text does not parse (unknown key, unknown mode, wrong type, not JSON).
    #[error("invalid ask_user_question config: {0}")]
    Invalid(String),
}
