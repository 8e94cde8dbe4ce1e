//! `--notify-*`, `--ntfy` and `--bell` for `demo` and `ask`: tell the person that a question is
//! waiting (`ask-user-notify`), with answer buttons when the page (`--web`) serves it.

use std::path::PathBuf;
use std::sync::Arc;

use ask_user_notify::{
    Links, MAX_NOTIFY_AFTER, Notifier, NotifyConfig, NotifyOverrides, Secret, WebhookConfig,
    backends,
};
use clap::Args;
use user_questions::UserQuestions;

use super::{CliError, Exit};

/// The notification flags.
#[derive(Clone, Debug, Args)]
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

/// The webhooks' secret: the flag's, else the environment's.
fn webhook_secret(given: Option<&Secret>) -> Result<Option<Secret>, CliError> {
    match given {
        Some(given) => Ok(Some(given.clone())),
        None => {
            Secret::from_env().map_err(|e| CliError::new("BAD_CONFIG", e.to_string(), Exit::Usage))
        }
    }
}

impl NotifyArgs {
    /// The configuration the flags make over the `--notify-config` file, else over `file` (the
    /// configuration file's `[notify]`); `None` when they name nothing to notify.
    fn config(
        &self,
        file: &NotifyConfig,
        terminal_card: bool,
    ) -> Result<Option<NotifyConfig>, CliError> {
        let bad = |message: String| CliError::new("BAD_CONFIG", message, Exit::Usage);
        let base = match &self.notify_config {
            Some(path) => {
                let text = super::read_input(path)?;
                NotifyConfig::from_json(&text).map_err(|e| bad(e.to_string()))?
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
            // A terminal card claims every timed question as it shows it: with one on screen, a
            // claim says nothing about whether a person is there.
            ignore_claims: self.notify_ignore_claims || terminal_card,
        };
        let config = base.merge(overrides).map_err(|e| match e.key() {
            Some("ntfy") => bad("--ntfy-server needs a topic: --ntfy TOPIC, or the configuration file's [notify.ntfy] topic".to_owned()),
            _ => bad(e.to_string()),
        })?;
        Ok((!config.is_empty()).then_some(config))
    }

    /// Whether the flags name something to notify (or a file that may).
    pub(crate) fn any(&self) -> bool {
        self.notify_config.is_some()
            || !self.notify_webhook.is_empty()
            || self.ntfy.is_some()
            || self.bell
    }

    /// Checks what the flags make over `file` (for a command that hands them to another
    /// process, which would fail where nobody reads it).
    pub(crate) fn check(&self, file: &NotifyConfig) -> Result<(), CliError> {
        self.config(file, false).map(|_| ())
    }

    /// The flags again, for an inbox started in the background, and the webhooks' secret to
    /// hand it through its environment.
    pub(crate) fn forwarded(&self) -> (Vec<std::ffi::OsString>, Option<String>) {
        let mut args: Vec<std::ffi::OsString> = Vec::new();
        if let Some(path) = &self.notify_config {
            args.push("--notify-config".into());
            args.push(
                std::path::absolute(path)
                    .unwrap_or_else(|_| path.clone())
                    .into(),
            );
        }
        for url in &self.notify_webhook {
            args.push("--notify-webhook".into());
            args.push(url.into());
        }
        if let Some(topic) = &self.ntfy {
            args.push("--ntfy".into());
            args.push(topic.into());
        }
        if let Some(server) = &self.ntfy_server {
            args.push("--ntfy-server".into());
            args.push(server.into());
        }
        if let Some(secs) = self.notify_after {
            args.push("--notify-after".into());
            args.push(secs.to_string().into());
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
    /// the page when there is one; `terminal_card` when an interactive terminal card shows them.
    pub(crate) fn start(
        &self,
        file: &NotifyConfig,
        seam: &UserQuestions,
        links: Option<Arc<dyn Links>>,
        terminal_card: bool,
    ) -> Result<Option<Notifier>, CliError> {
        let Some(config) = self.config(file, terminal_card)? else {
            return Ok(None);
        };
        let backends = backends(&config).map_err(|e| {
            CliError::failure(
                "NOTIFY_UNAVAILABLE",
                format!("cannot start the notification client: {e}"),
            )
        })?;
        Ok(Some(Notifier::start(seam, config, links, backends)))
    }
}
