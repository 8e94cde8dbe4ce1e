//! The webhook backend: Standard Webhooks (`webhook-id`, `webhook-timestamp`,
//! `webhook-signature: v1,<base64 HMAC-SHA256>`), the same id on every retry.

use async_trait::async_trait;
use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderValue};

use crate::backend::Backend;
use crate::config::{RetryPolicy, WebhookConfig};
use crate::http::{self, Delivered};
use crate::notice::Notice;
use crate::sign;

/// Posts every notification, resolutions included, to one URL.
pub struct Webhook {
    config: WebhookConfig,
    retry: RetryPolicy,
    client: reqwest::Client,
}

impl std::fmt::Debug for Webhook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Webhook")
            .field("url", &http::redacted_url(&self.config.url))
            .field("secret", &self.config.secret)
            .finish_non_exhaustive()
    }
}

impl Webhook {
    /// A webhook backend.
    ///
    /// # Errors
    ///
    /// When the HTTP client cannot be built (its TLS backend fails to start).
    pub fn new(config: WebhookConfig, retry: RetryPolicy) -> Result<Self, reqwest::Error> {
        Ok(Self {
            config,
            retry,
            client: http::client()?,
        })
    }

    /// Delivers one notification and says how it went.
    pub async fn send(&self, notice: &Notice) -> Delivered {
        let body = notice.payload().to_string();
        let secret = &self.config.secret;
        http::post(
            &self.client,
            &self.config.url,
            &body,
            &self.retry,
            |_attempt| {
                // Each attempt is signed with its own time, under the notification's one id.
                let timestamp = unix_seconds();
                let mut headers = HeaderMap::new();
                headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
                let signature = sign::signature(secret, &notice.id, timestamp, &body);
                for (name, value) in [
                    ("webhook-id", notice.id.clone()),
                    ("webhook-timestamp", timestamp.to_string()),
                    ("webhook-signature", signature),
                ] {
                    if let Ok(value) = HeaderValue::from_str(&value) {
                        headers.insert(name, value);
                    }
                }
                headers
            },
        )
        .await
    }
}

fn unix_seconds() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

#[async_trait]
impl Backend for Webhook {
    fn takes_resolutions(&self) -> bool {
        true
    }

    async fn deliver(&self, notice: &Notice) {
        if let Delivered::No { attempts, status } = self.send(notice).await {
            tracing::warn!(
                url = %http::redacted_url(&self.config.url),
                attempts,
                status,
                id = %notice.id,
                "a webhook was not delivered"
            );
        }
    }
}
