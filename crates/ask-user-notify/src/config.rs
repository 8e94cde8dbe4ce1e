//! What to notify, where, and when: a configuration file's `[notify]`, a JSON file, flags over
//! either. Secrets never print.

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

    /// The secret of [`WEBHOOK_SECRET_ENV`], when it is set and not empty.
    ///
    /// # Errors
    ///
    /// It is not a secret (the message names the variable, never the value).
    pub fn from_env() -> Result<Option<Self>, ConfigError> {
        match std::env::var(WEBHOOK_SECRET_ENV) {
            Ok(text) if !text.is_empty() => Self::parse(&text)
                .map(Some)
                .map_err(|e| ConfigError::new(format!("{WEBHOOK_SECRET_ENV}: {e}"))),
            _ => Ok(None),
        }
    }

    /// The secret as `whsec_<base64>` again, to hand to a process this one starts through its
    /// environment ([`WEBHOOK_SECRET_ENV`]), never its command line, which the process list
    /// shows.
    #[must_use]
    pub fn expose(&self) -> String {
        let encoded = base64::engine::general_purpose::STANDARD.encode(&self.key);
        format!("whsec_{encoded}")
    }
}

/// The environment variable a webhook secret may come from instead of a flag: how an inbox
/// started in the background is handed it.
pub const WEBHOOK_SECRET_ENV: &str = "ASK_USER_WEBHOOK_SECRET";

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

/// A configuration that cannot be used. Its message never quotes a secret; [`ConfigError::key`]
/// names the key that is wrong, when one is.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("notification configuration: {message}")]
pub struct ConfigError {
    key: Option<String>,
    message: String,
}

impl ConfigError {
    pub(crate) fn new(message: impl Into<String>) -> Self {
        Self {
            key: None,
            message: message.into(),
        }
    }

    fn at(key: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            key: Some(key.into()),
            message: message.into(),
        }
    }

    /// The path of the key that is wrong, from the configuration's top (`ntfy.server`,
    /// `webhooks[0].url`; `ntfy` for an ntfy server given without a topic), if the error is
    /// about one.
    pub fn key(&self) -> Option<&str> {
        self.key.as_deref()
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
            .field("url", &redacted_url(&self.url))
            .field("secret", &self.secret)
            .finish()
    }
}

impl fmt::Debug for NtfyConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NtfyConfig")
            .field("server", &redacted_url(&self.server))
            .finish_non_exhaustive()
    }
}

/// The ntfy server when none is named.
pub const DEFAULT_NTFY_SERVER: &str = "https://ntfy.sh";

fn default_ntfy_server() -> String {
    DEFAULT_NTFY_SERVER.to_owned()
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

/// What to notify, where, and when: the one form of the settings, the `[notify]` table of
/// `ask-user`'s configuration file (its keys below) and the JSON file of `--notify-config`, which
/// takes the same keys and, from its first version, the camelCase names of [`JSON_NAMES`](Self::JSON_NAMES).
/// Each value is checked as it is read (`after`, a webhook's secret), the URLs and the topic by
/// [`NotifyConfig::check`]. Unknown keys are refused.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NotifyConfig {
    /// `after`: notify when a question is still unclaimed and unanswered this long after it
    /// opened, 0 to 86400 seconds, a fraction allowed (default 10 s; for a timed question at most
    /// half its window).
    #[serde(
        rename = "after",
        alias = "notifyAfter",
        default = "default_after",
        deserialize_with = "after"
    )]
    pub notify_after: Duration,
    /// `text`: put the question prose (`question`, `detail`) into payloads. Off by default:
    /// payloads carry ids, headers and option labels only (what a title and buttons need).
    #[serde(rename = "text", alias = "includeText", default)]
    pub include_text: bool,
    /// `bell`: ring the terminal's bell and send an OSC 9 desktop notification on the card's
    /// terminal.
    #[serde(rename = "bell", alias = "terminal", default)]
    pub terminal: bool,
    /// `ignore_claims`: notify even when a surface claims the question within `notify_after`. A
    /// claim means a surface shows the question (a terminal card claims as it opens; a page while
    /// it is open), which is no proof that a person is there: set this to be told anyway.
    #[serde(alias = "ignoreClaims", default)]
    pub ignore_claims: bool,
    /// `ntfy`: an ntfy topic to push to.
    #[serde(default)]
    pub ntfy: Option<NtfyConfig>,
    /// `webhooks`: webhooks to post every notification to.
    #[serde(default)]
    pub webhooks: Vec<WebhookConfig>,
    /// How deliveries are retried (not in the file: the defaults).
    #[serde(skip)]
    pub retry: RetryPolicy,
}

/// The longest `after`: a day.
pub const MAX_NOTIFY_AFTER: Duration = Duration::from_hours(24);

impl NotifyConfig {
    /// The `[notify]` table in a printout of the settings in effect (`ask-user config`), the
    /// topic, tokens and secrets masked and the credentials of URLs left out.
    pub fn print(&self, out: &mut settings_file::Printout<'_>) {
        use settings_file::{MASK, quote};
        out.table("notify");
        out.set("after", self.notify_after.as_secs_f64().to_string());
        out.set("text", self.include_text.to_string());
        out.set("bell", self.terminal.to_string());
        out.set("ignore_claims", self.ignore_claims.to_string());
        if let Some(ntfy) = &self.ntfy {
            out.table("notify.ntfy");
            out.set("topic", quote(MASK));
            out.set("server", quote(&redacted_url(&ntfy.server)));
            let token = ntfy.token.as_ref().map(|_| quote(MASK));
            out.entry("token", token, "no token");
        } else {
            out.line("");
            out.line("# [notify.ntfy]: not set (no ntfy notifications)");
        }
        if self.webhooks.is_empty() {
            out.line("");
            out.line("# [[notify.webhooks]]: none");
        }
        for (i, hook) in self.webhooks.iter().enumerate() {
            out.table(&format!("notify.webhooks[{i}]"));
            out.set("url", quote(&redacted_url(&hook.url)));
            out.set("secret", quote(MASK));
        }
    }
}

fn default_after() -> Duration {
    Duration::from_secs(10)
}

fn after<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Duration, D::Error> {
    NotifyConfig::after_secs(f64::deserialize(deserializer)?)
        .ok_or_else(|| serde::de::Error::custom("`after` is 0 to 86400 seconds"))
}

impl Default for NotifyConfig {
    fn default() -> Self {
        Self {
            notify_after: default_after(),
            include_text: false,
            terminal: false,
            ignore_claims: false,
            ntfy: None,
            webhooks: Vec::new(),
            retry: RetryPolicy::default(),
        }
    }
}

/// What a command line sets over a [`NotifyConfig`] ([`NotifyConfig::merge`]): each ntfy field
/// replaces the configuration's, webhooks are added, booleans only turn a setting on. Its `Debug`
/// never shows the topic or a webhook's URL path.
#[derive(Clone, Default)]
pub struct NotifyOverrides {
    /// The ntfy topic (`--ntfy`).
    pub ntfy_topic: Option<String>,
    /// The ntfy server (`--ntfy-server`).
    pub ntfy_server: Option<String>,
    /// Webhooks added to the configuration's.
    pub webhooks: Vec<WebhookConfig>,
    /// `after` (see [`NotifyConfig::after_secs`]).
    pub notify_after: Option<Duration>,
    /// Turns `text` on.
    pub include_text: bool,
    /// Turns `bell` on.
    pub terminal: bool,
    /// Turns `ignore_claims` on.
    pub ignore_claims: bool,
}

impl fmt::Debug for NotifyOverrides {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NotifyOverrides")
            .field(
                "ntfy_server",
                &self.ntfy_server.as_deref().map(redacted_url),
            )
            .field("webhooks", &self.webhooks)
            .field("notify_after", &self.notify_after)
            .field("include_text", &self.include_text)
            .field("terminal", &self.terminal)
            .field("ignore_claims", &self.ignore_claims)
            .finish_non_exhaustive()
    }
}

impl NotifyConfig {
    /// The `--notify-config` file's names of keys, each with the key it stands for: accepted
    /// beside the keys (files written before the keys were the configuration file's keep
    /// working).
    pub const JSON_NAMES: &'static [(&'static str, &'static str)] = &[
        ("notifyAfter", "after"),
        ("includeText", "text"),
        ("terminal", "bell"),
        ("ignoreClaims", "ignore_claims"),
    ];

    /// The keys whose values are secrets, each with what it is (`webhooks[]`: each webhook): a
    /// configuration file may say where to read them from instead.
    pub const SECRET_KEYS: &'static [(&'static str, &'static str)] = &[
        ("ntfy.topic", "the ntfy topic"),
        ("ntfy.token", "the ntfy token"),
        ("webhooks[].secret", "the webhook secret"),
    ];

    /// `secs` as `after`, when it is one: 0 to 86400 seconds ([`MAX_NOTIFY_AFTER`]).
    pub fn after_secs(secs: f64) -> Option<Duration> {
        (secs.is_finite() && (0.0..=MAX_NOTIFY_AFTER.as_secs_f64()).contains(&secs))
            .then(|| Duration::from_secs_f64(secs))
    }

    /// Reads a `--notify-config` file's JSON text, the keys of [`NotifyConfig`] (or their
    /// [`JSON_NAMES`](Self::JSON_NAMES)):
    /// `{"after":10,"text":false,"bell":false,"ignore_claims":false,"ntfy":{"topic","server","token"},"webhooks":[{"url","secret"}]}`.
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
    /// A URL that is not `http(s)://`, an empty topic or one with characters ntfy refuses; the
    /// error names the key ([`ConfigError::key`]).
    pub fn check(&self) -> Result<(), ConfigError> {
        for (i, hook) in self.webhooks.iter().enumerate() {
            check_url(&hook.url, "webhook URL", &format!("webhooks[{i}].url"))?;
        }
        if let Some(ntfy) = &self.ntfy {
            check_url(&ntfy.server, "ntfy server", "ntfy.server")?;
            let ok = (1..=64).contains(&ntfy.topic.len())
                && ntfy
                    .topic
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
            if !ok {
                return Err(ConfigError::at(
                    "ntfy.topic",
                    "an ntfy topic is 1 to 64 letters, digits, '-' or '_'",
                ));
            }
        }
        Ok(())
    }

    /// This configuration with `overrides` over it, checked: the topic and the server each
    /// replace the configuration's (the server defaults to the configuration's, else
    /// [`DEFAULT_NTFY_SERVER`]); the configuration's ntfy token goes only to its own server;
    /// the webhooks are added; `after` replaces; the booleans only turn a setting on.
    ///
    /// # Errors
    ///
    /// A server with no topic on either side (key `ntfy`), and what [`NotifyConfig::check`]
    /// finds.
    pub fn merge(mut self, overrides: NotifyOverrides) -> Result<Self, ConfigError> {
        self.webhooks.extend(overrides.webhooks);
        let base = self.ntfy.take();
        let topic = overrides
            .ntfy_topic
            .or_else(|| base.as_ref().map(|b| b.topic.clone()));
        match topic {
            Some(topic) => {
                let server = overrides
                    .ntfy_server
                    .or_else(|| base.as_ref().map(|b| b.server.clone()))
                    .unwrap_or_else(default_ntfy_server);
                let token = base.filter(|b| b.server == server).and_then(|b| b.token);
                self.ntfy = Some(NtfyConfig {
                    topic,
                    server,
                    token,
                });
            }
            None if overrides.ntfy_server.is_some() => {
                return Err(ConfigError::at("ntfy", "an ntfy server needs a topic"));
            }
            None => {}
        }
        if let Some(after) = overrides.notify_after {
            self.notify_after = after;
        }
        self.include_text |= overrides.include_text;
        self.terminal |= overrides.terminal;
        self.ignore_claims |= overrides.ignore_claims;
        self.check()?;
        Ok(self)
    }

    /// Whether anything is configured to notify.
    pub fn is_empty(&self) -> bool {
        self.webhooks.is_empty() && self.ntfy.is_none() && !self.terminal
    }
}

fn check_url(url: &str, what: &str, key: &str) -> Result<(), ConfigError> {
    let ok = reqwest::Url::parse(url)
        .is_ok_and(|u| matches!(u.scheme(), "http" | "https") && u.host().is_some());
    if ok {
        Ok(())
    } else {
        Err(ConfigError::at(
            key,
            format!("the {what} must be an http:// or https:// URL"),
        ))
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

/// `url` fit for a log line or a printout: its scheme, host and port only, then `/…` when a
/// path, a query or a fragment follows (a path, a query or user info may hold a credential: a
/// Slack-style webhook path, an ntfy password).
pub fn redacted_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return "(an URL)".to_owned();
    };
    let end = rest.find(['/', '?', '#', '\\']).unwrap_or(rest.len());
    let authority = &rest[..end];
    let host = authority
        .rsplit_once('@')
        .map_or(authority, |(_, host)| host);
    match &rest[end..] {
        tail @ ("" | "/") => format!("{scheme}://{host}{tail}"),
        _ => format!("{scheme}://{host}/…"),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn an_exposed_secret_reads_back_as_itself() {
        let secret = Secret::parse("whsec_c3VwZXItc2VjcmV0LWtleS0x").unwrap();
        assert_eq!(secret.expose(), "whsec_c3VwZXItc2VjcmV0LWtleS0x");
        assert_eq!(Secret::parse(&secret.expose()).unwrap(), secret);
        assert!(!format!("{secret} {secret:?}").contains("c3VwZXI"));
    }

    fn base() -> NotifyConfig {
        NotifyConfig::from_json(
            r#"{"ntfy":{"topic":"base-topic","server":"https://ntfy.example.com","token":"tk_private"}}"#,
        )
        .unwrap()
    }

    fn ntfy(topic: Option<&str>, server: Option<&str>) -> NtfyConfig {
        let overrides = NotifyOverrides {
            ntfy_topic: topic.map(str::to_owned),
            ntfy_server: server.map(str::to_owned),
            ..NotifyOverrides::default()
        };
        base().merge(overrides).unwrap().ntfy.unwrap()
    }

    #[test]
    fn an_override_replaces_one_ntfy_field_and_the_token_goes_only_to_its_own_server() {
        // A topic of the overrides': the base's server and its token stay.
        let merged = ntfy(Some("mine"), None);
        assert_eq!(
            (merged.topic.as_str(), merged.server.as_str()),
            ("mine", "https://ntfy.example.com")
        );
        assert_eq!(merged.token.as_deref(), Some("tk_private"));
        // Another server: the private server's token is not sent there.
        let elsewhere = ntfy(Some("mine"), Some(DEFAULT_NTFY_SERVER));
        assert_eq!(elsewhere.server, DEFAULT_NTFY_SERVER);
        assert_eq!(elsewhere.token, None);
        // The server alone: the base's topic goes to it, without the token.
        let moved = ntfy(None, Some("https://other.example.com"));
        assert_eq!(
            (moved.topic.as_str(), moved.token.as_deref()),
            ("base-topic", None)
        );
        // A topic alone: the default server.
        let fresh = NotifyConfig::default()
            .merge(NotifyOverrides {
                ntfy_topic: Some("t".into()),
                ..NotifyOverrides::default()
            })
            .unwrap()
            .ntfy
            .unwrap();
        assert_eq!(fresh.server, DEFAULT_NTFY_SERVER);
        // A server and no topic anywhere.
        let error = NotifyConfig::default()
            .merge(NotifyOverrides {
                ntfy_server: Some(DEFAULT_NTFY_SERVER.into()),
                ..NotifyOverrides::default()
            })
            .unwrap_err();
        assert_eq!(error.key(), Some("ntfy"));
    }

    #[test]
    fn webhooks_are_added_and_booleans_only_turn_on() {
        let secret = Secret::parse("whsec_c2VjcmV0").unwrap();
        let hook = |url: &str| WebhookConfig {
            url: url.to_owned(),
            secret: secret.clone(),
        };
        let config = NotifyConfig {
            include_text: true,
            webhooks: vec![hook("https://a.example")],
            ..NotifyConfig::default()
        };
        let merged = config
            .merge(NotifyOverrides {
                webhooks: vec![hook("https://b.example")],
                terminal: true,
                notify_after: Some(Duration::ZERO),
                ..NotifyOverrides::default()
            })
            .unwrap();
        assert_eq!(merged.webhooks.len(), 2);
        assert!(merged.include_text && merged.terminal && !merged.ignore_claims);
        assert_eq!(merged.notify_after, Duration::ZERO);
        let bad = NotifyConfig::default().merge(NotifyOverrides {
            webhooks: vec![hook("ftp://x.example")],
            ..NotifyOverrides::default()
        });
        assert_eq!(bad.unwrap_err().key(), Some("webhooks[0].url"));
    }

    #[test]
    fn a_url_shows_its_origin_only() {
        assert_eq!(
            redacted_url("https://hooks.example/T0/B0/XXXX"),
            "https://hooks.example/…"
        );
        assert_eq!(
            redacted_url("https://user:pw@ntfy.example:8443/"),
            "https://ntfy.example:8443/"
        );
        assert_eq!(redacted_url("https://ntfy.sh"), "https://ntfy.sh");
        assert_eq!(
            redacted_url("https://x.example?token=y"),
            "https://x.example/…"
        );
    }

    #[test]
    fn the_json_names_stand_for_the_keys_and_after_is_checked_once() {
        for (json, key) in NotifyConfig::JSON_NAMES {
            let value = if *key == "after" { "0.5" } else { "true" };
            let by_name = NotifyConfig::from_json(&format!(r#"{{"{json}":{value}}}"#)).unwrap();
            let by_key = NotifyConfig::from_json(&format!(r#"{{"{key}":{value}}}"#)).unwrap();
            assert_eq!(format!("{by_name:?}"), format!("{by_key:?}"), "{json}");
            assert_ne!(
                format!("{by_key:?}"),
                format!("{:?}", NotifyConfig::default()),
                "{key}"
            );
        }
        for secs in [-1.0, 86_400.5, f64::NAN, f64::INFINITY] {
            assert_eq!(NotifyConfig::after_secs(secs), None, "{secs}");
        }
        assert_eq!(NotifyConfig::after_secs(86_400.0), Some(MAX_NOTIFY_AFTER));
        let error = NotifyConfig::from_json(r#"{"after":86401}"#).unwrap_err();
        assert!(
            error.to_string().contains("`after` is 0 to 86400 seconds"),
            "{error}"
        );
        let error = NotifyConfig::from_json(r#"{"ntfy":{"topic":"no spaces"}}"#).unwrap_err();
        assert_eq!(error.key(), Some("ntfy.topic"));
    }
}
