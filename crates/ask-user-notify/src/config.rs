//! What to notify, where, and when: a JSON file or flags. Secrets never print.

use std::fmt;
use std::time::Duration;

use base64::Engine as _;
use serde::Deserialize;

/// A Standard Webhooks signing secret, `whsec_` and the base64 of the key. Its `Debug` and
/// `Display` never show the key.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret {
    key: Vec<u8>,
}

impl Secret {
    /// Reads `whsec_<base64>`.
    ///
    /// # Errors
    ///
    /// Without the prefix, with a key that is not base64, or with an empty key. The error never
    /// quotes the secret.
    pub fn parse(text: &str) -> Result<Self, ConfigError> {
        let encoded = text
            .strip_prefix("whsec_")
            .ok_or_else(|| ConfigError::new("a webhook secret starts with whsec_"))?;
        let key = base64::engine::general_purpose::STANDARD
            .decode(encoded)
            .map_err(|_| ConfigError::new("the webhook secret after whsec_ is not base64"))?;
        if key.is_empty() {
            return Err(ConfigError::new("the webhook secret is empty"));
        }
        Ok(Self { key })
    }

    /// The key bytes the signature is made with.
    pub(crate) fn key(&self) -> &[u8] {
        &self.key
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("whsec_…(redacted)")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("whsec_…(redacted)")
    }
}

impl<'de> Deserialize<'de> for Secret {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Self::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// A configuration that cannot be used. Its message never quotes a secret.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("notification configuration: {message}")]
pub struct ConfigError {
    message: String,
}

impl ConfigError {
    pub(crate) fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
        }
    }
}

/// A webhook: a JSON `POST` to `url`, signed with `secret`. Its `Debug` shows the URL's host
/// only.
#[derive(Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WebhookConfig {
    /// Where to post (`http://` or `https://`).
    pub url: String,
    /// The signing secret.
    pub secret: Secret,
}

/// An ntfy topic: `server` (default `https://ntfy.sh`), `topic`, and the access `token` of a
/// server that requires one. Its `Debug` shows the server's host only, never the topic or the
/// token.
#[derive(Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NtfyConfig {
    /// The topic; on a public server, a secret of its own: anyone who knows it reads it.
    pub topic: String,
    /// The server's base URL.
    #[serde(default = "default_ntfy_server")]
    pub server: String,
    /// An access token (`tk_…`), sent as `Authorization: Bearer`; never printed.
    #[serde(default)]
    pub token: Option<String>,
}

impl fmt::Debug for WebhookConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WebhookConfig")
            .field("url", &redacted(&self.url))
            .field("secret", &self.secret)
            .finish()
    }
}

impl fmt::Debug for NtfyConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NtfyConfig")
            .field("server", &redacted(&self.server))
            .finish_non_exhaustive()
    }
}

fn default_ntfy_server() -> String {
    "https://ntfy.sh".to_owned()
}

/// How a delivery is retried: `attempts` in all, waiting `first_backoff`, then twice as long
/// each time up to `max_backoff`; each attempt given `timeout`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts in all (at least 1).
    pub attempts: u32,
    /// The wait before the second attempt.
    pub first_backoff: Duration,
    /// The longest wait between attempts.
    pub max_backoff: Duration,
    /// How long one attempt may take.
    pub timeout: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            attempts: 6,
            first_backoff: Duration::from_secs(1),
            max_backoff: Duration::from_mins(1),
            timeout: Duration::from_secs(10),
        }
    }
}

/// What to notify, where, and when.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NotifyConfig {
    /// Notify when a question is still unclaimed and unanswered this long after it opened
    /// (default 10 s; for a timed question at most half its window).
    #[serde(default = "default_after", with = "seconds")]
    pub notify_after: Duration,
    /// Put the question prose (`question`, `detail`) into payloads. Off by default: payloads
    /// carry ids, headers and option labels only (what a title and buttons need).
    #[serde(default)]
    pub include_text: bool,
    /// Webhooks to post every notification to.
    #[serde(default)]
    pub webhooks: Vec<WebhookConfig>,
    /// An ntfy topic to push to.
    #[serde(default)]
    pub ntfy: Option<NtfyConfig>,
    /// Ring the terminal's bell and send an OSC 9 desktop notification on the card's terminal.
    #[serde(default)]
    pub terminal: bool,
    /// Notify even when a surface claims the question within `notify_after`. A claim means a
    /// surface shows the question (a terminal card claims as it opens; a page while it is open),
    /// which is no proof that a person is there: set this to be told anyway.
    #[serde(default)]
    pub ignore_claims: bool,
    /// How deliveries are retried (not in the file: the defaults).
    #[serde(skip)]
    pub retry: RetryPolicy,
}

fn default_after() -> Duration {
    Duration::from_secs(10)
}

mod seconds {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer};

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let secs = f64::deserialize(d)?;
        if !(secs.is_finite() && (0.0..=86_400.0).contains(&secs)) {
            return Err(serde::de::Error::custom(
                "notifyAfter is a number of seconds from 0 to 86400",
            ));
        }
        Ok(Duration::from_secs_f64(secs))
    }
}

impl Default for NotifyConfig {
    fn default() -> Self {
        Self {
            notify_after: default_after(),
            include_text: false,
            webhooks: Vec::new(),
            ntfy: None,
            terminal: false,
            ignore_claims: false,
            retry: RetryPolicy::default(),
        }
    }
}

impl NotifyConfig {
    /// Reads a configuration file's JSON text:
    /// `{"notifyAfter":10,"includeText":false,"webhooks":[{"url","secret"}],"ntfy":{"topic","server"},"terminal":false}`.
    ///
    /// # Errors
    ///
    /// Unknown keys, wrong types, a bad secret or URL; the message never quotes a secret.
    pub fn from_json(text: &str) -> Result<Self, ConfigError> {
        let config: Self =
            serde_json::from_str(text).map_err(|e| ConfigError::new(redact(&e.to_string())))?;
        config.check()?;
        Ok(config)
    }

    /// Checks the URLs and the topic.
    ///
    /// # Errors
    ///
    /// A URL that is not `http(s)://`, an empty topic or one with characters ntfy refuses.
    pub fn check(&self) -> Result<(), ConfigError> {
        for hook in &self.webhooks {
            check_url(&hook.url, "webhook URL")?;
        }
        if let Some(ntfy) = &self.ntfy {
            check_url(&ntfy.server, "ntfy server")?;
            let ok = (1..=64).contains(&ntfy.topic.len())
                && ntfy
                    .topic
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
            if !ok {
                return Err(ConfigError::new(
                    "an ntfy topic is 1 to 64 letters, digits, '-' or '_'",
                ));
            }
        }
        Ok(())
    }

    /// Whether anything is configured to notify.
    pub fn is_empty(&self) -> bool {
        self.webhooks.is_empty() && self.ntfy.is_none() && !self.terminal
    }
}

fn check_url(url: &str, what: &str) -> Result<(), ConfigError> {
    let ok = reqwest::Url::parse(url)
        .is_ok_and(|u| matches!(u.scheme(), "http" | "https") && u.host().is_some());
    if ok {
        Ok(())
    } else {
        Err(ConfigError::new(format!(
            "the {what} must be an http:// or https:// URL"
        )))
    }
}

/// serde's messages may quote the offending value: never let a secret through.
fn redact(message: &str) -> String {
    if message.contains("whsec_") {
        "the file is not a valid configuration (a value near a secret is wrong)".to_owned()
    } else {
        message.to_owned()
    }
}

/// `url` fit for a log line: its scheme, host and port only (a path, a query or user info may
/// hold a credential: a Slack-style webhook path, an ntfy password).
pub(crate) fn redacted(url: &str) -> String {
    match reqwest::Url::parse(url) {
        Ok(u) => match (u.host_str(), u.port()) {
            (Some(host), Some(port)) => format!("{}://{host}:{port}/…", u.scheme()),
            (Some(host), None) => format!("{}://{host}/…", u.scheme()),
            (None, _) => "(an URL)".to_owned(),
        },
        Err(_) => "(an URL)".to_owned(),
    }
}
