#![doc = include_str!("../README.md")]

mod backend;
mod config;
#[cfg(feature = "clap")]
mod flags;
mod http;
mod notice;
mod ntfy;
mod policy;
pub mod sign;
mod terminal;
mod webhook;

use std::sync::Arc;

pub use backend::{Backend, Links};
pub use config::{
    ConfigError, DEFAULT_NTFY_SERVER, MAX_NOTIFY_AFTER, NotifyConfig, NotifyOverrides, NtfyConfig,
    RetryPolicy, Secret, WEBHOOK_SECRET_ENV, WebhookConfig, redacted_url,
};
#[cfg(feature = "clap")]
pub use flags::{FlagsError, NotifyArgs};
pub use http::Delivered;
pub use notice::{Button, Notice, NoticeKind, NoticeQuestion};
pub use ntfy::Ntfy;
pub use policy::{Notifier, NotifyStats};
pub use terminal::TerminalBell;
pub use webhook::Webhook;

/// The backends `config` names: its webhooks, its ntfy topic, the terminal bell.
///
/// # Errors
///
/// When the HTTP client of a webhook or ntfy backend cannot be built.
pub fn backends(config: &NotifyConfig) -> Result<Vec<Arc<dyn Backend>>, reqwest::Error> {
    let mut backends: Vec<Arc<dyn Backend>> = Vec::new();
    for hook in &config.webhooks {
        backends.push(Arc::new(Webhook::new(hook.clone(), config.retry)?));
    }
    if let Some(ntfy) = &config.ntfy {
        backends.push(Arc::new(Ntfy::new(ntfy.clone(), config.retry)?));
    }
    // The bell only where stderr is a terminal: escape codes in a log file help nobody.
    if config.terminal && std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        backends.push(Arc::new(TerminalBell::default()));
    }
    Ok(backends)
}
