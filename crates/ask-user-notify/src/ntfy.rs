//! The ntfy backend: a JSON publish (`topic`, `title`, `message`, `priority`, `tags`, `click`,
//! `actions`) to the server, with `http` action buttons that answer from the lock screen.
//!
//! JSON publishing carries the same fields as the `Title`, `Priority`, `Tags`, `Click` and
//! `Actions` headers, without their limits: labels with commas, semicolons or non-ASCII text
//! need no escaping.

use async_trait::async_trait;
use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderValue};
use serde_json::{Value, json};
use user_questions::sanitize::{visible, visible_lines};

use crate::backend::Backend;
use crate::config::{NtfyConfig, RetryPolicy};
use crate::http::{self, Delivered};
use crate::notice::{Notice, NoticeKind};

/// Pushes waiting and pending questions to an ntfy topic.
pub struct Ntfy {
    config: NtfyConfig,
    retry: RetryPolicy,
    client: reqwest::Client,
}

impl std::fmt::Debug for Ntfy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The topic is a secret on a public server.
        f.debug_struct("Ntfy")
            .field("server", &http::redacted_url(&self.config.server))
            .finish_non_exhaustive()
    }
}

impl Ntfy {
    /// An ntfy backend.
    ///
    /// # Errors
    ///
    /// When the HTTP client cannot be built (its TLS backend fails to start).
    pub fn new(config: NtfyConfig, retry: RetryPolicy) -> Result<Self, reqwest::Error> {
        Ok(Self {
            config,
            retry,
            client: http::client()?,
        })
    }

    /// The JSON message for `notice`.
    pub fn message(&self, notice: &Notice) -> Value {
        let (priority, tags) = match notice.kind {
            NoticeKind::Waiting => (4, ["question"]),
            NoticeKind::Pending => (2, ["hourglass"]),
            NoticeKind::Answered { .. } | NoticeKind::Cancelled { .. } => (1, ["white_check_mark"]),
            NoticeKind::Attention { .. } => (4, ["bell"]),
        };
        let actions: Vec<Value> = notice
            .buttons
            .iter()
            .map(|b| {
                json!({
                    "action": "http",
                    "label": visible(&b.label),
                    "url": b.url,
                    "method": "POST",
                    "headers": {"Content-Type": "application/json"},
                    "body": b.body,
                    "clear": true,
                })
            })
            .collect();
        let mut message = json!({
            "topic": self.config.topic,
            // Model text shows on a lock screen: controls and invisible or bidirectional marks
            // are shown as escapes, never passed on.
            "title": visible(&notice.title()),
            "message": visible_lines(&notice.message()),
            "priority": priority,
            "tags": tags,
        });
        if let Some(url) = notice.open_url.as_ref().or(notice.url.as_ref()) {
            message["click"] = json!(url);
        }
        if !actions.is_empty() {
            message["actions"] = Value::Array(actions);
        }
        message
    }

    /// Delivers one notification and says how it went.
    pub async fn send(&self, notice: &Notice) -> Delivered {
        let body = self.message(notice).to_string();
        // The JSON publish goes to the server's root, as configured (a server under a path
        // behind a proxy keeps its path).
        http::post(
            &self.client,
            &self.config.server,
            &body,
            &self.retry,
            |_| {
                let mut headers = HeaderMap::new();
                headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
                if let Some(token) = &self.config.token
                    && let Ok(mut value) = HeaderValue::from_str(&format!("Bearer {token}"))
                {
                    value.set_sensitive(true);
                    headers.insert(reqwest::header::AUTHORIZATION, value);
                }
                headers
            },
        )
        .await
    }
}

#[async_trait]
impl Backend for Ntfy {
    fn takes_resolutions(&self) -> bool {
        false
    }

    fn wants_buttons(&self) -> bool {
        true
    }

    async fn deliver(&self, notice: &Notice) {
        if let Delivered::No { attempts, status } = self.send(notice).await {
            tracing::warn!(server = %http::redacted_url(&self.config.server), attempts, status, "an ntfy push was not delivered");
        }
    }
}
