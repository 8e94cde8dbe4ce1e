//! Delivery over HTTP, at least once: retried with exponential backoff on a timeout, a
//! connection error, a 5xx, 408 or 429; given up on any other 4xx.

use reqwest::header::HeaderMap;
use reqwest::{Client, StatusCode};

use crate::config::RetryPolicy;
pub(crate) use crate::config::redacted_url;

/// How a delivery ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Delivered {
    /// A 2xx, after this many attempts.
    Yes {
        /// Attempts made.
        attempts: u32,
    },
    /// Refused for good (a 4xx other than 408 and 429), or out of attempts.
    No {
        /// Attempts made.
        attempts: u32,
        /// The last status, when there was a response.
        status: Option<u16>,
    },
}

/// The HTTP client every backend uses: rustls with the built-in web PKI roots, no proxy from
/// the environment (a body carries one-time answer links), no redirects (a webhook that moved is
/// a configuration to fix).
///
/// Never a default client instead when this one cannot be built: that one would read proxies
/// from the environment and follow redirects.
pub(crate) fn client() -> Result<Client, reqwest::Error> {
    Client::builder()
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .user_agent(concat!("ask-user-notify/", env!("CARGO_PKG_VERSION")))
        .build()
}

fn retryable(status: StatusCode) -> bool {
    status.is_server_error()
        || status == StatusCode::REQUEST_TIMEOUT
        || status == StatusCode::TOO_MANY_REQUESTS
}

/// Posts `body` to `url`, with the headers `headers` makes for each attempt (1-based).
pub(crate) async fn post(
    client: &Client,
    url: &str,
    body: &str,
    policy: &RetryPolicy,
    mut headers: impl FnMut(u32) -> HeaderMap,
) -> Delivered {
    let mut backoff = policy.first_backoff;
    let mut status = None;
    let attempts = policy.attempts.max(1);
    for attempt in 1..=attempts {
        let request = client
            .post(url)
            .headers(headers(attempt))
            .body(body.to_owned())
            .send();
        match tokio::time::timeout(policy.timeout, request).await {
            Ok(Ok(response)) if response.status().is_success() => {
                return Delivered::Yes { attempts: attempt };
            }
            Ok(Ok(response)) => {
                status = Some(response.status().as_u16());
                if !retryable(response.status()) {
                    return Delivered::No {
                        attempts: attempt,
                        status,
                    };
                }
            }
            Ok(Err(error)) => {
                tracing::debug!(error = %error.without_url(), attempt, "a notification delivery failed");
            }
            Err(_elapsed) => {
                tracing::debug!(attempt, "a notification delivery timed out");
            }
        }
        if attempt < attempts {
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(policy.max_backoff);
        }
    }
    Delivered::No { attempts, status }
}
