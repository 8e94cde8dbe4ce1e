//! What streamable HTTP adds around rmcp's service: the sessions it keeps (at most
//! [`McpHttpOptions::max_sessions`] at once, each closed once idle for
//! [`McpHttpOptions::session_idle`]), and the guard every request passes first (its `Origin`, the
//! cap for a new session, `DELETE` of an unknown session).
//!
//! A session is idle when no request of it is in progress: a request's response (an event stream
//! that stays open while a call waits, or the client's standalone stream) keeps it alive however
//! long it lasts, so only a client that has gone quiet loses its session; it gets `404` and
//! initializes again, as the protocol says.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use futures::Stream;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_server::SessionManager;
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionManager, LocalSessionManagerError,
};
use rmcp::transport::streamable_http_server::session::{
    EventStore, RestoreOutcome, ServerSseMessage, SessionId,
};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use user_questions::sync::lock_unpoisoned;

use crate::state::McpHttpOptions;
use ask_user_http::Watched;

/// The header that names a request's session.
const SESSION_HEADER: &str = "mcp-session-id";

/// Why a session could not be made or used.
#[derive(Debug, thiserror::Error)]
pub(crate) enum HttpSessionError {
    /// The cap on live sessions is reached.
    #[error("this server serves at most {0} sessions at once")]
    Full(usize),
    /// rmcp's session manager failed.
    #[error(transparent)]
    Local(#[from] LocalSessionManagerError),
}

/// One live session's activity.
struct Activity {
    /// Requests of the session in progress (their responses not ended).
    open: usize,
    /// When the last of them ended (or the session began).
    last: Instant,
    /// The principal that made it (the digest of its bearer token), once its first response
    /// named it: only that principal's requests reach it.
    owner: Option<String>,
}

#[derive(Default)]
struct Book {
    live: HashMap<SessionId, Activity>,
    /// Sessions being made: counted against the cap before they have an id.
    making: usize,
}

/// rmcp's in-memory sessions, capped, with an idle expiry that counts open streams as activity.
pub(crate) struct HttpSessions {
    inner: LocalSessionManager,
    max: usize,
    idle: Duration,
    book: Mutex<Book>,
    /// The process-wide count of live sessions ([`crate::AskUserMcp::http_sessions`]).
    counted: Arc<std::sync::atomic::AtomicUsize>,
    /// Ends the reaper.
    cancel: CancellationToken,
    /// Whether the reaper runs (started by the first session).
    reaping: std::sync::atomic::AtomicBool,
}

impl HttpSessions {
    pub(crate) fn new(
        options: &McpHttpOptions,
        counted: Arc<std::sync::atomic::AtomicUsize>,
        cancel: CancellationToken,
    ) -> Arc<Self> {
        let mut inner = LocalSessionManager::default();
        // No SSE priming event (see `AskUserMcp::http_router`).
        inner.session_config.sse_retry = None;
        // rmcp's own expiry counts only messages: a call waiting for a person without progress
        // notifications, or a standalone stream with nothing to say, would look idle. The reaper
        // below counts open requests instead.
        inner.session_config.keep_alive = None;
        Arc::new(Self {
            inner,
            max: options.max_sessions.max(1),
            idle: options.session_idle,
            book: Mutex::default(),
            counted,
            cancel,
            reaping: std::sync::atomic::AtomicBool::new(false),
        })
    }

    /// Whether a new session would be over the cap.
    fn full(&self) -> bool {
        let book = lock_unpoisoned(&self.book);
        book.live.len() + book.making >= self.max
    }

    /// Whether `id` is a live session.
    fn has(&self, id: &SessionId) -> bool {
        lock_unpoisoned(&self.book).live.contains_key(id)
    }

    /// Whether `principal` may use session `id`: a live session of its own, or one made without
    /// a principal by a request without one. Another principal's session is as unknown as one
    /// that never was.
    fn may_use(&self, id: &SessionId, principal: Option<&str>) -> bool {
        (lock_unpoisoned(&self.book).live.get(id))
            .is_some_and(|activity| activity.owner.as_deref() == principal)
    }

    /// Binds the session `id` a response named to the principal that made it.
    fn bind(&self, id: &SessionId, principal: Option<&str>) {
        if let Some(activity) = lock_unpoisoned(&self.book).live.get_mut(id)
            && activity.owner.is_none()
        {
            activity.owner = principal.map(str::to_owned);
        }
    }

    /// A request of session `id` begins: the session is not idle until the guard is dropped.
    /// `None` for a session that is not live.
    fn begin(self: &Arc<Self>, id: &SessionId) -> Option<InUse> {
        let mut book = lock_unpoisoned(&self.book);
        let activity = book.live.get_mut(id)?;
        activity.open += 1;
        Some(InUse {
            sessions: Arc::downgrade(self),
            id: id.clone(),
        })
    }

    fn end(&self, id: &SessionId) {
        if let Some(activity) = lock_unpoisoned(&self.book).live.get_mut(id) {
            activity.open = activity.open.saturating_sub(1);
            activity.last = Instant::now();
        }
    }

    /// Starts the task that closes idle sessions, once.
    fn start_reaper(self: &Arc<Self>) {
        if self
            .reaping
            .swap(true, std::sync::atomic::Ordering::Relaxed)
        {
            return;
        }
        let sessions = Arc::downgrade(self);
        let cancel = self.cancel.clone();
        let every = (self.idle / 4).clamp(Duration::from_millis(50), Duration::from_secs(5));
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    () = tokio::time::sleep(every) => {}
                    () = cancel.cancelled() => return,
                }
                let Some(sessions) = sessions.upgrade() else {
                    return;
                };
                for id in sessions.idle_ones() {
                    tracing::debug!(session = %id, "closing an idle MCP session");
                    if let Err(error) = sessions.close_session(&id).await {
                        tracing::warn!(%error, session = %id, "an idle MCP session did not close");
                    }
                }
            }
        });
    }

    /// The sessions idle for the expiry.
    fn idle_ones(&self) -> Vec<SessionId> {
        let book = lock_unpoisoned(&self.book);
        book.live
            .iter()
            .filter(|(_, a)| a.open == 0 && a.last.elapsed() >= self.idle)
            .map(|(id, _)| id.clone())
            .collect()
    }
}

/// A request of a session in progress (see [`HttpSessions::begin`]).
pub(crate) struct InUse {
    sessions: Weak<HttpSessions>,
    id: SessionId,
}

impl Drop for InUse {
    fn drop(&mut self) {
        if let Some(sessions) = self.sessions.upgrade() {
            sessions.end(&self.id);
        }
    }
}

impl SessionManager for HttpSessions {
    type Error = HttpSessionError;
    type Transport = <LocalSessionManager as SessionManager>::Transport;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        {
            let mut book = lock_unpoisoned(&self.book);
            if book.live.len() + book.making >= self.max {
                return Err(HttpSessionError::Full(self.max));
            }
            book.making += 1;
        }
        let made = self.inner.create_session().await;
        let mut book = lock_unpoisoned(&self.book);
        book.making -= 1;
        let (id, transport) = made?;
        book.live.insert(
            id.clone(),
            Activity {
                open: 0,
                last: Instant::now(),
                owner: None,
            },
        );
        self.counted
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Ok((id, transport))
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        Ok(self.inner.initialize_session(id, message).await?)
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        Ok(self.has(id) && self.inner.has_session(id).await?)
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        if lock_unpoisoned(&self.book).live.remove(id).is_some() {
            self.counted
                .fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
        }
        Ok(self.inner.close_session(id).await?)
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        Ok(self.inner.create_stream(id, message).await?)
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        Ok(self.inner.accept_message(id, message).await?)
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        Ok(self.inner.create_standalone_stream(id).await?)
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        Ok(self.inner.resume(id, last_event_id).await?)
    }

    async fn restore_session(
        &self,
        _id: SessionId,
    ) -> Result<RestoreOutcome<Self::Transport>, Self::Error> {
        // No session store: nothing to restore.
        Ok(RestoreOutcome::NotSupported)
    }

    fn event_store(&self) -> Option<Arc<dyn EventStore>> {
        None
    }
}

/// What the guard checks requests against.
#[derive(Clone)]
pub(crate) struct Guard {
    pub(crate) sessions: Arc<HttpSessions>,
    /// The port served, when known: an `Origin` of the server's own names it.
    pub(crate) port: Option<u16>,
    /// Origins taken besides the server's own (exact, compared without case).
    pub(crate) allowed_origins: Arc<[String]>,
    /// The bearer tokens of which a request must carry one; none needed when empty.
    pub(crate) tokens: Arc<[crate::auth::BearerToken]>,
    /// `https://` when the server serves TLS, else `http://`: the scheme of its own origin.
    pub(crate) scheme: &'static str,
    /// The most bytes a request's body may have (rmcp refuses a larger one).
    pub(crate) max_body: usize,
}

/// A JSON-RPC error without an id (the request's body is not read here), with `status`.
fn jsonrpc_refusal(status: StatusCode, code: i64, message: &str) -> Response {
    let body = serde_json::json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": {"code": code, "message": message},
    });
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

/// The port of a `Host` value (`name:port`, `[v6]:port`): `None` without one or when it is not
/// 1 to 65535.
fn host_port(host: &str) -> Option<u16> {
    let (_, port) = host.rsplit_once(':')?;
    if host.starts_with('[') && !host[..host.len() - port.len() - 1].ends_with(']') {
        return None;
    }
    if port.is_empty() || port.len() > 5 || !port.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    port.parse().ok().filter(|p| *p != 0)
}

impl Guard {
    /// The page's rule: a request with an `Origin` comes from an allowed origin or from the
    /// server's own (the scheme served and the `Host` it names, with the port served); one without comes
    /// from no browser, unless Fetch Metadata says it is cross-site.
    fn origin_allowed(&self, headers: &HeaderMap) -> bool {
        let Some(origin) = headers.get(header::ORIGIN) else {
            return headers
                .get("sec-fetch-site")
                .is_none_or(|site| site.as_bytes() != b"cross-site");
        };
        let Ok(origin) = origin.to_str() else {
            return false;
        };
        if self
            .allowed_origins
            .iter()
            .any(|allowed| allowed.eq_ignore_ascii_case(origin))
        {
            return true;
        }
        let Some(host) = headers.get(header::HOST).and_then(|h| h.to_str().ok()) else {
            return false;
        };
        let own_port = match self.port {
            Some(served) => host_port(host) == Some(served),
            None => host_port(host).is_some(),
        };
        own_port
            && origin
                .strip_prefix(self.scheme)
                .is_some_and(|rest| rest.eq_ignore_ascii_case(host))
    }
}

/// The checks every request passes before rmcp's service, and the activity of its session.
pub(crate) async fn guard(
    State(guard): State<Guard>,
    mut request: Request,
    next: Next,
) -> Response {
    let mut principal = None;
    if !guard.tokens.is_empty() {
        match crate::auth::check(&guard.tokens, request.headers()) {
            Ok(found) => {
                principal = Some(found.0.clone());
                request.extensions_mut().insert(found);
            }
            Err(refused) => {
                let mut response =
                    jsonrpc_refusal(StatusCode::UNAUTHORIZED, -32001, refused.message());
                response.headers_mut().insert(
                    header::WWW_AUTHENTICATE,
                    HeaderValue::from_static(refused.challenge()),
                );
                return response;
            }
        }
    }
    if !guard.origin_allowed(request.headers()) {
        return jsonrpc_refusal(
            StatusCode::FORBIDDEN,
            -32600,
            "Requests from other sites are refused: the Origin is not this server's own.",
        );
    }
    let session: Option<SessionId> = request
        .headers()
        .get(SESSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(SessionId::from);
    match (request.method(), &session) {
        // A session of another principal is as unknown as one that never was: nothing of it
        // is read, answered or closed.
        (_, Some(id))
            if guard.sessions.has(id) && !guard.sessions.may_use(id, principal.as_deref()) =>
        {
            return (StatusCode::NOT_FOUND, "Not Found: Session not found").into_response();
        }
        (&Method::DELETE, Some(id)) if !guard.sessions.has(id) => {
            return (StatusCode::NOT_FOUND, "Not Found: Session not found").into_response();
        }
        (&Method::POST, None) if guard.sessions.full() => {
            let mut refused = jsonrpc_refusal(
                StatusCode::SERVICE_UNAVAILABLE,
                -32000,
                &format!(
                    "This server serves at most {} sessions at once; try again when one ends (an idle one ends after {} s).",
                    guard.sessions.max,
                    guard.sessions.idle.as_secs()
                ),
            );
            refused
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("10"));
            return refused;
        }
        _ => {}
    }
    // A body sent as JSON that rmcp cannot read is a JSON-RPC parse error, not a media type
    // the server does not take.
    let sent_json = request.method() == Method::POST
        && (request.headers().get(header::CONTENT_TYPE))
            .and_then(|t| t.to_str().ok())
            .is_some_and(|t| {
                t.trim_start()
                    .to_ascii_lowercase()
                    .starts_with("application/json")
            });
    let in_use = session.as_ref().and_then(|id| guard.sessions.begin(id));
    let response = next.run(request).await;
    if response.status() == StatusCode::UNSUPPORTED_MEDIA_TYPE && sent_json {
        return jsonrpc_refusal(
            StatusCode::BAD_REQUEST,
            -32700,
            "Parse error: the request body is not a JSON-RPC message; nothing was done.",
        );
    }
    if response.status() == StatusCode::PAYLOAD_TOO_LARGE {
        // rmcp's refusal is plain text: a client reads JSON-RPC.
        return jsonrpc_refusal(
            StatusCode::PAYLOAD_TOO_LARGE,
            -32600,
            &format!(
                "The request body is larger than this server takes ({} bytes); nothing was done.",
                guard.max_body
            ),
        );
    }
    if session.is_none() {
        // A new session (or none): its idle clock starts now, and it is its maker's.
        if let Some(made) = (response.headers().get(SESSION_HEADER))
            .and_then(|v| v.to_str().ok())
            .map(SessionId::from)
        {
            guard.sessions.bind(&made, principal.as_deref());
        }
        guard.sessions.start_reaper();
    }
    match in_use {
        Some(in_use) => response.map(|body| Body::new(Watched::new(body, in_use))),
        None => response,
    }
}

#[cfg(test)]
mod tests {
    use super::host_port;

    #[test]
    fn ports_of_hosts() {
        assert_eq!(host_port("127.0.0.1:8765"), Some(8765));
        assert_eq!(host_port("[::1]:8765"), Some(8765));
        assert_eq!(host_port("localhost:65535"), Some(65535));
        for none in [
            "127.0.0.1",
            "[::1]",
            "127.0.0.1:0",
            "127.0.0.1:99999",
            "127.0.0.1:",
            "[::1",
        ] {
            assert_eq!(host_port(none), None, "{none}");
        }
    }
}
