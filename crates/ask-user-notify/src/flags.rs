//! The notification flags (`--notify-config`, `--notify-webhook`, `--ntfy`, `--bell`, …) as a
//! clap flag group, read over a [`NotifyConfig`]: the settings' third form, beside the
//! configuration file's `[notify]` table and the JSON file, owned here with them. Behind the
//! `clap` feature.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use clap::Args;
use user_questions::UserQuestions;

use crate::{
    Links, MAX_NOTIFY_AFTER, Notifier, NotifyConfig, NotifyOverrides, Secret, WebhookConfig,
    backends,
};

/// The notification flags.
#[derive(Clone, Debug, Default, Args)]
pub struct NotifyArgs {
    /// Notifications from a JSON file, instead of the configuration file's `[notify]`: its keys
    /// (`{"after","text","bell","ignore_claims","ntfy","webhooks"}`, or the older
    /// `notifyAfter`, `includeText`, `terminal`, `ignoreClaims`); the flags below add to it.
    #[arg(long, value_name = "FILE")]
    pub notify_config: Option<PathBuf>,
    /// Post a signed JSON notification (Standard Webhooks) to URL; needs --webhook-secret (or
    /// `ASK_USER_WEBHOOK_SECRET` in the environment).
    #[arg(long, value_name = "URL")]
    pub notify_webhook: Vec<String>,
    /// The `whsec_…` secret the webhooks are signed with (never printed; a file via
    /// --notify-config, or `ASK_USER_WEBHOOK_SECRET`, keeps it out of the shell's history and
    /// the process list).
    #[arg(long, value_name = "SECRET", value_parser = Secret::parse)]
    pub webhook_secret: Option<Secret>,
    /// Push to this ntfy topic (with answer buttons when --web serves the question).
    #[arg(long, value_name = "TOPIC")]
    pub ntfy: Option<String>,
    /// The ntfy server (default: the configuration file's, else `https://ntfy.sh`); with a
    /// topic from --ntfy or the configuration file.
    #[arg(long, value_name = "URL")]
    pub ntfy_server: Option<String>,
    /// Notify when nobody has claimed or answered a question after this many seconds
    /// (default 10; for a timed question at most half its window).
    #[arg(long, value_name = "SECONDS")]
    pub notify_after: Option<f64>,
    /// Put the question text into notifications (off by default: ids, headers and labels only).
    #[arg(long)]
    pub notify_text: bool,
    /// Ring the terminal's bell, with an OSC 9 desktop notification.
    #[arg(long)]
    pub bell: bool,
    /// Notify even when a page shows the question (an open page claims it; that is no proof that
    /// a person is there). Always so when an interactive terminal card shows it, since the card
    /// claims every timed question as it opens.
    #[arg(long)]
    pub notify_ignore_claims: bool,
}

/// Why the flags cannot be used. Its message never quotes a secret.
#[derive(Debug, thiserror::Error)]
pub enum FlagsError {
    /// The flags, or the settings under them, are wrong (`BAD_CONFIG`).
    #[error("{0}")]
    Config(String),
    /// The `--notify-config` file cannot be read (`BAD_INPUT`).
    #[error("{0}")]
    Input(String),
    /// The notification client cannot be built (`NOTIFY_UNAVAILABLE`).
    #[error("cannot start the notification client: {0}")]
    Unavailable(String),
}

impl FlagsError {
    /// The stable code.
    pub fn code(&self) -> &'static str {
        match self {
            Self::Config(_) => "BAD_CONFIG",
            Self::Input(_) => "BAD_INPUT",
            Self::Unavailable(_) => "NOTIFY_UNAVAILABLE",
        }
    }
}

/// The webhooks' secret: the flag's, else the environment's.
fn webhook_secret(given: Option<&Secret>) -> Result<Option<Secret>, FlagsError> {
    match given {
        Some(given) => Ok(Some(given.clone())),
        None => Secret::from_env().map_err(|e| FlagsError::Config(e.to_string())),
    }
}

/// A file's text, or stdin's for `-`.
fn read_file(path: &Path) -> Result<String, FlagsError> {
    if path.as_os_str() == "-" {
        return std::io::read_to_string(std::io::stdin())
            .map_err(|e| FlagsError::Input(format!("cannot read stdin: {e}")));
    }
    std::fs::read_to_string(path)
        .map_err(|e| FlagsError::Input(format!("cannot read {}: {e}", path.display())))
}

impl NotifyArgs {
    /// The configuration the flags make over the `--notify-config` file, else over `file` (the
    /// configuration file's `[notify]`); `None` when they name nothing to notify.
    /// `terminal_card`: an interactive terminal card shows the questions, and claims every timed
    /// one as it shows it, so claims are ignored.
    ///
    /// # Errors
    ///
    /// A file that cannot be read or is invalid, a webhook without a secret, `--notify-after`
    /// out of range, an ntfy server without a topic, and what [`NotifyConfig::merge`] finds.
    pub fn config(
        &self,
        file: &NotifyConfig,
        terminal_card: bool,
    ) -> Result<Option<NotifyConfig>, FlagsError> {
        let bad = FlagsError::Config;
        let base = match &self.notify_config {
            Some(path) => {
                NotifyConfig::from_json(&read_file(path)?).map_err(|e| bad(e.to_string()))?
            }
            None => file.clone(),
        };
        let mut webhooks = Vec::new();
        if !self.notify_webhook.is_empty() {
            let secret = webhook_secret(self.webhook_secret.as_ref())?
                .ok_or_else(|| bad("--notify-webhook needs --webhook-secret".to_owned()))?;
            webhooks = (self.notify_webhook.iter())
                .map(|url| WebhookConfig {
                    url: url.clone(),
                    secret: secret.clone(),
                })
                .collect();
        }
        let notify_after = match self.notify_after {
            Some(secs) => Some(NotifyConfig::after_secs(secs).ok_or_else(|| {
                let max = MAX_NOTIFY_AFTER.as_secs();
                bad(format!("--notify-after is 0 to {max} seconds"))
            })?),
            None => None,
        };
        let overrides = NotifyOverrides {
            ntfy_topic: self.ntfy.clone(),
            ntfy_server: self.ntfy_server.clone(),
            webhooks,
            notify_after,
            include_text: self.notify_text,
            terminal: self.bell,
            ignore_claims: self.notify_ignore_claims || terminal_card,
        };
        let config = base.merge(overrides).map_err(|e| match e.key() {
            Some("ntfy") => bad("--ntfy-server needs a topic: --ntfy TOPIC, or the configuration file's [notify.ntfy] topic".to_owned()),
            _ => bad(e.to_string()),
        })?;
        Ok((!config.is_empty()).then_some(config))
    }

    /// Whether the flags name something to notify (or a file that may).
    pub fn any(&self) -> bool {
        self.notify_config.is_some()
            || !self.notify_webhook.is_empty()
            || self.ntfy.is_some()
            || self.bell
    }

    /// The channels notified with these flags over the settings `file`, as a person reads them
    /// (`ntfy`, `2 webhook(s)`).
    pub fn channels(&self, file: &NotifyConfig) -> Vec<String> {
        let mut channels = Vec::new();
        if self.ntfy.is_some() || file.ntfy.is_some() {
            channels.push("ntfy".to_owned());
        }
        let webhooks = self.notify_webhook.len() + file.webhooks.len();
        if webhooks > 0 {
            channels.push(format!("{webhooks} webhook(s)"));
        }
        channels
    }

    /// The flags again, for a process this one starts (an inbox in the background), and the
    /// webhooks' secret to hand it through its environment ([`crate::WEBHOOK_SECRET_ENV`]), never
    /// its command line.
    pub fn forwarded(&self) -> (Vec<OsString>, Option<String>) {
        let mut args: Vec<OsString> = Vec::new();
        let mut pass = |flag: &str, value: OsString| args.extend([flag.into(), value]);
        if let Some(path) = &self.notify_config {
            let path = std::path::absolute(path).unwrap_or_else(|_| path.clone());
            pass("--notify-config", path.into());
        }
        for url in &self.notify_webhook {
            pass("--notify-webhook", url.into());
        }
        if let Some(topic) = &self.ntfy {
            pass("--ntfy", topic.into());
        }
        if let Some(server) = &self.ntfy_server {
            pass("--ntfy-server", server.into());
        }
        if let Some(secs) = self.notify_after {
            pass("--notify-after", secs.to_string().into());
        }
        for (on, flag) in [
            (self.notify_text, "--notify-text"),
            (self.notify_ignore_claims, "--notify-ignore-claims"),
        ] {
            if on {
                args.push(flag.into());
            }
        }
        let secret = webhook_secret(self.webhook_secret.as_ref())
            .ok()
            .flatten()
            .map(|secret| secret.expose());
        (args, secret)
    }

    /// Starts notifying about `seam`'s questions as the flags say over `file`, with `links` from
    /// the page when there is one; `terminal_card` as in [`NotifyArgs::config`]. `None` when
    /// nothing is to be notified.
    ///
    /// # Errors
    ///
    /// What [`NotifyArgs::config`] finds, and a notification client that cannot be built.
    pub fn start(
        &self,
        file: &NotifyConfig,
        seam: &UserQuestions,
        links: Option<Arc<dyn Links>>,
        terminal_card: bool,
    ) -> Result<Option<Notifier>, FlagsError> {
        let Some(config) = self.config(file, terminal_card)? else {
            return Ok(None);
        };
        let backends = backends(&config).map_err(|e| FlagsError::Unavailable(e.to_string()))?;
        Ok(Some(Notifier::start(seam, config, links, backends)))
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use clap::Parser;

    use super::*;

    #[derive(Parser)]
    struct Command {
        #[command(flatten)]
        notify: NotifyArgs,
    }

    fn flags(args: &[&str]) -> NotifyArgs {
        Command::parse_from(std::iter::once("test").chain(args.iter().copied())).notify
    }

    const SECRET: &str = "whsec_c3VwZXItc2VjcmV0LWtleS0x";

    #[test]
    fn no_flag_over_an_empty_file_notifies_nobody() {
        assert!(!flags(&[]).any());
        assert!(
            flags(&[])
                .config(&NotifyConfig::default(), false)
                .unwrap()
                .is_none()
        );
    }

    #[test]
    fn the_flags_add_to_the_files_settings() {
        let file = NotifyConfig::from_json(r#"{"ntfy":{"topic":"from-file"},"after":5}"#).unwrap();
        let config = flags(&["--ntfy", "from-flag", "--notify-text"])
            .config(&file, false)
            .unwrap()
            .unwrap();
        let ntfy = config.ntfy.unwrap();
        assert_eq!(ntfy.topic, "from-flag");
        assert_eq!(ntfy.server, crate::DEFAULT_NTFY_SERVER);
        assert_eq!(config.notify_after, Duration::from_secs(5));
        assert!(config.include_text);
        assert!(!config.ignore_claims);
    }

    #[test]
    fn a_terminal_card_makes_claims_ignored() {
        let config = flags(&["--bell"]).config(&NotifyConfig::default(), true);
        assert!(config.unwrap().unwrap().ignore_claims);
    }

    #[test]
    fn a_bad_flag_is_a_config_error_that_names_it() {
        let file = NotifyConfig::default();
        let after = flags(&["--bell", "--notify-after", "90000"]).config(&file, false);
        let error = after.unwrap_err();
        assert_eq!(error.code(), "BAD_CONFIG");
        assert_eq!(error.to_string(), "--notify-after is 0 to 86400 seconds");
        let server = flags(&["--ntfy-server", "https://ntfy.example"]).config(&file, false);
        assert!(
            server
                .unwrap_err()
                .to_string()
                .starts_with("--ntfy-server needs a topic"),
            "a server without a topic"
        );
        let topic = flags(&["--ntfy", "bad topic!"]).config(&file, false);
        assert_eq!(topic.unwrap_err().code(), "BAD_CONFIG");
    }

    #[test]
    fn an_unreadable_notify_config_is_bad_input() {
        let error = flags(&["--notify-config", "/nonexistent/notify.json"])
            .config(&NotifyConfig::default(), false)
            .unwrap_err();
        assert_eq!(error.code(), "BAD_INPUT");
        assert!(error.to_string().contains("/nonexistent/notify.json"));
    }

    #[test]
    fn forwarded_flags_carry_the_webhook_secret_apart_from_the_command_line() {
        let given = flags(&[
            "--notify-webhook",
            "https://hooks.example/x",
            "--webhook-secret",
            SECRET,
            "--notify-after",
            "2.5",
            "--notify-ignore-claims",
        ]);
        let config = given
            .config(&NotifyConfig::default(), false)
            .unwrap()
            .unwrap();
        assert_eq!(config.webhooks.len(), 1);
        let (args, secret) = given.forwarded();
        let args: Vec<String> = args
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            args,
            [
                "--notify-webhook",
                "https://hooks.example/x",
                "--notify-after",
                "2.5",
                "--notify-ignore-claims"
            ]
        );
        assert!(!args.iter().any(|a| a.contains("whsec_")));
        assert_eq!(secret.as_deref(), Some(SECRET));
        // What was forwarded reads back as the same configuration.
        let again = flags(&args.iter().map(String::as_str).collect::<Vec<_>>());
        assert_eq!(again.notify_after, Some(2.5));
        assert!(again.notify_ignore_claims);
    }
}
