//! A session's working directory: its client's first `file://` root, asked with `roots/list`
//! once per session, on its first tool call, of a client that declared the `roots` capability.
//! Only the request is sent from the call's handler (over HTTP it travels on that request's
//! stream); its answer is awaited on a task of its own, so the call is not delayed by it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use rmcp::model::{CustomRequest, ServerRequest};
use rmcp::service::PeerRequestOptions;
use rmcp::{Peer, RoleServer};
use serde_json::Value;
use user_questions::sync::lock_unpoisoned;

/// How long a session waits for the client's answer to `roots/list`.
const ROOTS_WAIT: std::time::Duration = std::time::Duration::from_secs(30);

/// What a session knows of its client's roots.
#[derive(Default)]
pub(crate) struct Roots {
    /// Whether `roots/list` was sent (once per session, on its first tool call).
    asked: AtomicBool,
    /// The client's first root as a path, once it answered `roots/list`.
    cwd: Mutex<Option<String>>,
}

impl Roots {
    /// The client's first root as a path, once it answered `roots/list`.
    pub(crate) fn cwd(&self) -> Option<String> {
        lock_unpoisoned(&self.cwd).clone()
    }

    /// Marks `roots/list` as asked: a session that must never send it (the stateless revision has
    /// no server-to-client requests).
    pub(crate) fn mark_asked(&self) {
        self.asked.store(true, Ordering::Relaxed);
    }
}

/// Asks a client that declared the `roots` capability for its roots, once per `session`, and
/// keeps the first `file://` root as the session's working directory (module docs). The answer is
/// kept only while the session lives.
pub(crate) async fn ask_once<S>(session: &Arc<S>, peer: &Peer<RoleServer>)
where
    S: AsRef<Roots> + Send + Sync + 'static,
{
    let declared = peer
        .peer_info()
        .is_some_and(|info| info.capabilities.roots.is_some());
    let roots: &Roots = (**session).as_ref();
    if !declared || roots.asked.swap(true, Ordering::Relaxed) {
        return;
    }
    let request = ServerRequest::CustomRequest(CustomRequest::new("roots/list", None));
    let handle = match peer
        .send_request_with_option(request, PeerRequestOptions::no_options())
        .await
    {
        Ok(handle) => handle,
        Err(error) => {
            tracing::debug!(%error, "roots/list could not be sent");
            return;
        }
    };
    let session = Arc::downgrade(session);
    tokio::spawn(async move {
        let answer = tokio::time::timeout(ROOTS_WAIT, handle.await_response()).await;
        let result = match answer {
            Ok(Ok(result)) => result,
            Ok(Err(error)) => {
                tracing::debug!(%error, "the client did not list its roots");
                return;
            }
            Err(_) => {
                tracing::debug!("the client did not answer roots/list in time");
                return;
            }
        };
        let cwd = serde_json::to_value(&result)
            .ok()
            .and_then(|value| first_file_root(&value));
        if let (Some(cwd), Some(session)) = (cwd, session.upgrade()) {
            let roots: &Roots = (*session).as_ref();
            *lock_unpoisoned(&roots.cwd) = Some(cwd);
        }
    });
}

/// The first `file://` root of a `roots/list` result, as a path (percent-decoded; a host part,
/// `localhost` say, dropped). `None` when no root is a `file:` URI or its path is not UTF-8.
fn first_file_root(result: &Value) -> Option<String> {
    result
        .get("roots")?
        .as_array()?
        .iter()
        .filter_map(|root| root.get("uri").and_then(Value::as_str))
        .find_map(file_uri_path)
}

/// The path of a `file://` URI, percent-decoded.
fn file_uri_path(uri: &str) -> Option<String> {
    let scheme = uri.get(..7)?;
    if !scheme.eq_ignore_ascii_case("file://") {
        return None;
    }
    let rest = &uri[7..];
    let path = &rest[rest.find('/')?..];
    let path = path.split(['?', '#']).next().unwrap_or(path);
    let bytes = path.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while at < bytes.len() {
        let byte = bytes[at];
        let hex = |b: u8| char::from(b).to_digit(16);
        if byte == b'%'
            && let (Some(high), Some(low)) = (
                bytes.get(at + 1).copied().and_then(hex),
                bytes.get(at + 2).copied().and_then(hex),
            )
        {
            decoded.push(u8::try_from(high * 16 + low).ok()?);
            at += 3;
        } else {
            decoded.push(byte);
            at += 1;
        }
    }
    String::from_utf8(decoded).ok()
}

#[cfg(test)]
mod tests {
    use super::{file_uri_path, first_file_root};

    #[test]
    fn a_file_root_is_a_percent_decoded_path() {
        for (uri, path) in [
            ("file:///tmp/my%20project", Some("/tmp/my project")),
            ("file://localhost/home/me/src", Some("/home/me/src")),
            ("FILE:///x", Some("/x")),
            ("file:///tmp/%E2%9C%93?query#part", Some("/tmp/✓")),
            ("file:///tmp/100%", Some("/tmp/100%")),
            ("file:///tmp/%ZZ", Some("/tmp/%ZZ")),
            ("file:///tmp/%FF", None),
            ("file://", None),
            ("https://example.com/x", None),
        ] {
            assert_eq!(file_uri_path(uri).as_deref(), path, "{uri}");
        }
        let roots = serde_json::json!({"roots": [
            {"uri": "https://example.com/x"},
            {"uri": "file:///first", "name": "first"},
            {"uri": "file:///second"},
        ]});
        assert_eq!(first_file_root(&roots).as_deref(), Some("/first"));
        assert_eq!(first_file_root(&serde_json::json!({"roots": []})), None);
    }
}
