//! The HTTP routes, and the checks every request passes first: the `Host` (no DNS rebinding; the
//! port served), the `Origin` (no cross-site requests), the capability token, and a body size
//! limit. `/favicon.ico` alone needs no token: it is answered empty.

use std::convert::Infallible;
use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{DefaultBodyLimit, Path, RawQuery, Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use futures::Stream;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::sync::broadcast;
use user_questions::{AnswerBatch, AnswerItem, CallId, CancellationToken};

use crate::grants::{GrantRefused, Grants};
use crate::hub::{AnswerPath, AnswerRefused, ConnectRefused, Hub, StreamGuard, Via};
use crate::page;
use crate::token;

/// The header a script may carry the token in (an `EventSource` cannot: it uses `?token=`).
pub const TOKEN_HEADER: &str = "x-ask-user-token";

#[derive(Clone)]
struct App {
    hub: Arc<Hub>,
    token: Arc<str>,
    grants: Arc<Grants>,
    /// Cancelled when the server stops: every event stream ends.
    stop: CancellationToken,
    /// The port served, when known: the only one `Host` may name.
    port: Option<u16>,
}

pub(crate) fn router(
    hub: Arc<Hub>,
    token: Arc<str>,
    grants: Arc<Grants>,
    stop: CancellationToken,
    port: Option<u16>,
) -> Router {
    let limit = hub.options.body_limit;
    let app = App {
        hub,
        token,
        grants,
        stop,
        port,
    };
    Router::new()
        .route("/", get(index))
        .route("/events", get(events))
        .route("/pending", get(pending))
        .route("/cards/{call_id}/answer", post(post_answer))
        .route("/cards/{call_id}/hold", post(hold))
        .route("/clients/{client}/bye", post(bye))
        .fallback(not_found)
        .layer(DefaultBodyLimit::max(limit))
        .layer(middleware::from_fn_with_state(app.clone(), guard))
        .with_state(app)
}

/// A JSON reply.
fn reply(status: StatusCode, body: &Value) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

/// A refusal: `{"code","message"}`.
fn refuse(status: StatusCode, code: &str, message: &str) -> Response {
    reply(status, &json!({"code": code, "message": message}))
}

async fn not_found() -> Response {
    refuse(StatusCode::NOT_FOUND, "NOT_FOUND", "There is nothing here.")
}

/// Whether `host` (a `Host` header value, or an origin's host) names this server in a way no DNS
/// name can: `localhost` or an IP literal, with or without a port (1 to 65535). With
/// `loopback_only`, the IP must be a loopback address; with `served`, the port must be that one
/// (no port: 80, or 443 over TLS). Over TLS (`tls`) a DNS name is taken too: a page that
/// rebinds its own name to this server cannot pass the certificate's check, so the name the
/// certificate holds is the one browsers reach.
fn host_allowed(host: &str, loopback_only: bool, served: Option<u16>, tls: bool) -> bool {
    let (name, port) = if let Some(rest) = host.strip_prefix('[') {
        // `[v6]` or `[v6]:port`.
        let Some((ip, after)) = rest.split_once(']') else {
            return false;
        };
        let port = match after {
            "" => None,
            after => match after.strip_prefix(':').and_then(port_of) {
                Some(port) => Some(port),
                None => return false,
            },
        };
        let ip_ok = ip
            .parse::<std::net::Ipv6Addr>()
            .is_ok_and(|ip| !loopback_only || ip.is_loopback());
        if !ip_ok {
            return false;
        }
        (None, port)
    } else {
        match host.rsplit_once(':') {
            Some((name, port)) => match port_of(port) {
                Some(port) => (Some(name), Some(port)),
                None => return false,
            },
            None => (Some(host), None),
        }
    };
    let default_port = if tls { 443 } else { 80 };
    if served.is_some_and(|served| port.unwrap_or(default_port) != served) {
        return false;
    }
    let Some(name) = name else {
        // An IPv6 literal, checked above.
        return true;
    };
    if name.eq_ignore_ascii_case("localhost") {
        return true;
    }
    if let Ok(ip) = name.parse::<std::net::Ipv4Addr>() {
        return !loopback_only || ip.is_loopback();
    }
    tls && is_dns_name(name)
}

/// Letters, digits, `-` and `.`, in labels of 1 to 63 characters, 253 at most.
fn is_dns_name(name: &str) -> bool {
    name.len() <= 253
        && name.split('.').all(|label| {
            (1..=63).contains(&label.len())
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-')
                && !label.starts_with('-')
                && !label.ends_with('-')
        })
}

/// A port as `Host` spells it: 1 to 5 digits, 1 to 65535.
fn port_of(text: &str) -> Option<u16> {
    if text.is_empty() || text.len() > 5 || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok().filter(|port| *port != 0)
}

/// The value of `name` in a query string (tokens and grants are hex: no decoding needed).
fn query_param<'a>(query: Option<&'a str>, name: &str) -> Option<&'a str> {
    query.and_then(|q| {
        q.split('&')
            .filter_map(|pair| pair.split_once('='))
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v)
    })
}

/// The token of a request: `?token=` or the header.
fn token_of<'a>(query: Option<&'a str>, headers: &'a HeaderMap) -> Option<&'a str> {
    query_param(query, "token").or_else(|| headers.get(TOKEN_HEADER).and_then(|v| v.to_str().ok()))
}

/// Whether the request is a grant's answer (`POST /cards/{callId}/answer?grant=…`): the grant
/// is its own capability, checked by the route.
fn is_grant_answer(request: &Request) -> bool {
    let path = request.uri().path();
    request.method() == Method::POST
        && path.starts_with("/cards/")
        && path.ends_with("/answer")
        && query_param(request.uri().query(), "grant").is_some()
}

/// `text` as one URL path segment: every byte outside the unreserved set percent-encoded.
pub(crate) fn path_segment(text: &str) -> String {
    use std::fmt::Write as _;
    text.bytes().fold(String::new(), |mut out, b| {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            let _ = write!(out, "%{b:02X}");
        }
        out
    })
}

/// The checks every request passes, and the headers every response carries.
async fn guard(State(app): State<App>, request: Request, next: Next) -> Response {
    let loopback_only = app.hub.options.loopback_only;
    let headers = request.headers();
    let Some(host) = headers.get(header::HOST).and_then(|h| h.to_str().ok()) else {
        return secured(refuse(
            StatusCode::FORBIDDEN,
            "BAD_HOST",
            "The request names no host.",
        ));
    };
    let tls = app.hub.options.tls.is_some();
    if !host_allowed(host, loopback_only, app.port, tls) {
        return secured(refuse(
            StatusCode::FORBIDDEN,
            "BAD_HOST",
            "This server answers to its own address only (no DNS names, the port it serves).",
        ));
    }
    // Browsers ask for an icon without the page's token: nothing to see, nothing to log.
    if request.method() == Method::GET && request.uri().path() == "/favicon.ico" {
        return secured(StatusCode::NO_CONTENT.into_response());
    }
    // Opening the printed link from another site (a chat, a mail page) is a top-level
    // navigation to the page itself: allowed (the token is still needed). Everything else must
    // come from the page's own origin.
    let navigation = request.method() == Method::GET
        && request.uri().path() == "/"
        && headers
            .get("sec-fetch-mode")
            .is_some_and(|v| v.as_bytes() == b"navigate");
    if !navigation && let Some(origin) = headers.get(header::ORIGIN) {
        let same = origin
            .to_str()
            .ok()
            .and_then(|o| o.strip_prefix(if tls { "https://" } else { "http://" }))
            .is_some_and(|o| o.eq_ignore_ascii_case(host));
        if !same {
            return secured(refuse(
                StatusCode::FORBIDDEN,
                "BAD_ORIGIN",
                "Requests from other sites are refused.",
            ));
        }
    }
    let cross_site = !navigation
        && headers
            .get("sec-fetch-site")
            .is_some_and(|v| v.as_bytes() == b"cross-site");
    if cross_site {
        return secured(refuse(
            StatusCode::FORBIDDEN,
            "BAD_ORIGIN",
            "Requests from other sites are refused.",
        ));
    }
    let given = token_of(request.uri().query(), headers);
    if !is_grant_answer(&request) && !given.is_some_and(|t| token::same(t, &app.token)) {
        return secured(refuse(
            StatusCode::UNAUTHORIZED,
            "BAD_TOKEN",
            "Open the link ask-user printed: it carries the page's token.",
        ));
    }
    if request.method() != Method::GET && request.method() != Method::POST {
        return secured(refuse(
            StatusCode::METHOD_NOT_ALLOWED,
            "BAD_METHOD",
            "Only GET and POST are served.",
        ));
    }
    secured(next.run(request).await)
}

/// Adds the headers of every response: the Content-Security-Policy (the page's own inline
/// script and style by hash, nothing from elsewhere), no sniffing, no framing, no referrer (the
/// token is in the URL), no caching.
fn secured(mut response: Response) -> Response {
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_SECURITY_POLICY, page::csp_header());
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

async fn index() -> Response {
    (
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        page::html(),
    )
        .into_response()
}

async fn pending(State(app): State<App>) -> Response {
    reply(StatusCode::OK, &app.hub.pending_view().await)
}

/// A client id as pages make them: 1 to 64 characters of `[A-Za-z0-9_-]`.
fn client_id_ok(id: &str) -> bool {
    (1..=64).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

fn bad_client() -> Response {
    refuse(
        StatusCode::BAD_REQUEST,
        "BAD_REQUEST",
        "The client id must be 1 to 64 letters, digits, '-' or '_'.",
    )
}

#[derive(Deserialize)]
struct EventsQuery {
    client: Option<String>,
}

async fn events(
    State(app): State<App>,
    query: Result<axum::extract::Query<EventsQuery>, axum::extract::rejection::QueryRejection>,
) -> Response {
    let Ok(axum::extract::Query(query)) = query else {
        return bad_client();
    };
    let Some(client) = query.client.filter(|c| client_id_ok(c)) else {
        return bad_client();
    };
    // Subscribed before the snapshot is taken, so nothing falls between; a page applies events
    // as upserts, so seeing a card in both is harmless.
    let updates = app.hub.subscribe();
    let guard = match app.hub.connect(&client) {
        Ok(guard) => guard,
        Err(ConnectRefused::TooManyClients) => {
            return refuse(
                StatusCode::TOO_MANY_REQUESTS,
                "TOO_MANY_CLIENTS",
                "Too many pages are open on this server.",
            );
        }
        Err(ConnectRefused::TooManyStreams) => {
            return refuse(
                StatusCode::TOO_MANY_REQUESTS,
                "TOO_MANY_STREAMS",
                "This page has too many event streams open.",
            );
        }
    };
    let stream = card_stream(Arc::clone(&app.hub), guard, updates, app.stop.clone());
    Sse::new(stream)
        .keep_alive(KeepAlive::new().interval(app.hub.options.keep_alive))
        .into_response()
}

/// The stream of one page: the snapshot first (with the reconnect delay), then every update; a
/// fresh snapshot whenever the stream fell behind.
fn card_stream(
    hub: Arc<Hub>,
    guard: StreamGuard,
    updates: broadcast::Receiver<crate::hub::Push>,
    stop: CancellationToken,
) -> impl Stream<Item = Result<Event, Infallible>> {
    struct Feed {
        hub: Arc<Hub>,
        _guard: StreamGuard,
        updates: broadcast::Receiver<crate::hub::Push>,
        stop: CancellationToken,
        first: bool,
        ended: bool,
    }
    let feed = Feed {
        hub,
        _guard: guard,
        updates,
        stop,
        first: true,
        ended: false,
    };
    futures::stream::unfold(feed, |mut feed| async move {
        if feed.first {
            feed.first = false;
            let event = snapshot(&feed.hub).await;
            return Some((Ok(event), feed));
        }
        if feed.ended {
            return None;
        }
        let update = tokio::select! {
            () = feed.stop.cancelled() => {
                // The server stops: the page is told whether it comes back (then the page
                // waits and reconnects) or nothing more will come (it stops reconnecting).
                feed.ended = true;
                let data = if feed.hub.options.returns { r#"{"back":true}"# } else { "{}" };
                return Some((Ok(Event::default().event("ended").data(data)), feed));
            }
            update = feed.updates.recv() => update,
        };
        let event = match update {
            Ok(push) => Event::default().event(push.name).data(push.data),
            Err(broadcast::error::RecvError::Lagged(_)) => snapshot(&feed.hub).await,
            Err(broadcast::error::RecvError::Closed) => return None,
        };
        Some((Ok(event), feed))
    })
}

/// The `snapshot` event: every card a page should show now.
async fn snapshot(hub: &Hub) -> Event {
    let listed = hub.listed().await;
    Event::default()
        .event("snapshot")
        .retry(hub.options.retry)
        .data(hub.snapshot(&listed).to_string())
}

/// The body of `POST /cards/{callId}/answer`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AnswerBody {
    #[serde(default)]
    session: Option<String>,
    #[serde(default)]
    client: Option<String>,
    answers: Vec<AnswerItem>,
}

/// The body of `POST /cards/{callId}/hold`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct HoldBody {
    #[serde(default)]
    session: Option<String>,
    client: String,
}

fn read_body<T: for<'de> Deserialize<'de>>(
    body: Result<Bytes, BytesRejection>,
) -> Result<T, Box<Response>> {
    let bytes = body.map_err(|rejection| {
        Box::new(if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
            refuse(
                StatusCode::PAYLOAD_TOO_LARGE,
                "TOO_LARGE",
                "The request is larger than this server takes.",
            )
        } else {
            refuse(
                StatusCode::BAD_REQUEST,
                "BAD_REQUEST",
                &rejection.body_text(),
            )
        })
    })?;
    serde_json::from_slice(&bytes).map_err(|error| {
        Box::new(refuse(
            StatusCode::BAD_REQUEST,
            "BAD_REQUEST",
            &format!("The request body is not the expected JSON: {error}."),
        ))
    })
}

fn refused(refusal: AnswerRefused) -> Response {
    match refusal {
        AnswerRefused::NotWaiting => refuse(
            StatusCode::GONE,
            "NOT_WAITING",
            "This question is no longer waiting for an answer.",
        ),
        AnswerRefused::NotLooking => refuse(
            StatusCode::CONFLICT,
            "NOT_LOOKING",
            "This page has no event stream open: reload it to hold the question.",
        ),
        AnswerRefused::Ambiguous => refuse(
            StatusCode::CONFLICT,
            "AMBIGUOUS",
            "Several sessions have a question with this call id: name the session.",
        ),
        AnswerRefused::Undelivered(error) => refuse(
            StatusCode::SERVICE_UNAVAILABLE,
            "UNDELIVERED",
            &format!("The answer could not be delivered; send it again. ({error})"),
        ),
        AnswerRefused::Rejected(error) => {
            let status = if error.is(&user_questions::ErrorCode::BadAnswer) {
                StatusCode::BAD_REQUEST
            } else {
                StatusCode::CONFLICT
            };
            refuse(status, error.code(), error.message())
        }
    }
}

async fn post_answer(
    State(app): State<App>,
    Path(call_id): Path<String>,
    RawQuery(query): RawQuery,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let body: AnswerBody = match read_body(body) {
        Ok(body) => body,
        Err(response) => return *response,
    };
    if body.client.as_deref().is_some_and(|c| !client_id_ok(c)) {
        return bad_client();
    }
    let call_id = CallId::from(call_id);
    let batch = user_questions::AnswerBatch::new(body.answers);
    if let Some(grant) = query_param(query.as_deref(), "grant") {
        return answer_by_grant(&app, grant, &call_id, batch).await;
    }
    answered(
        app.hub
            .post(&call_id, body.session.as_deref(), batch, Via::Page)
            .await,
    )
}

/// A notification's answer button: the grant answers its one question with its one option,
/// once.
async fn answer_by_grant(app: &App, token: &str, call_id: &CallId, batch: AnswerBatch) -> Response {
    let grant = match app.grants.redeem(token, call_id, &batch) {
        Ok(grant) => grant,
        Err(GrantRefused::Unknown) => {
            return refuse(
                StatusCode::FORBIDDEN,
                "BAD_GRANT",
                "This answer link was already used, has expired, or is not valid.",
            );
        }
        Err(GrantRefused::Mismatch) => {
            return refuse(
                StatusCode::FORBIDDEN,
                "BAD_GRANT",
                "This answer link answers another question or option.",
            );
        }
    };
    // A grant answers the card it was made for, not the same call asked again.
    let same_card = app
        .hub
        .card_questions(&grant.session, call_id)
        .is_some_and(|(_, card)| card == grant.card);
    if !same_card {
        return refused(AnswerRefused::NotWaiting);
    }
    let result = app
        .hub
        .post(call_id, Some(&grant.session), batch, Via::Button)
        .await;
    match &result {
        Err(AnswerRefused::Undelivered(_)) => app.grants.restore(token.to_owned(), grant),
        Ok(_) => app.grants.revoke_call(&grant.session, call_id),
        Err(_) => {}
    }
    answered(result)
}

fn answered(result: Result<AnswerPath, AnswerRefused>) -> Response {
    match result {
        Ok(path) => reply(
            StatusCode::OK,
            &json!({"ok": true, "path": match path {
                AnswerPath::Foreground => "foreground",
                AnswerPath::Late => "late",
            }}),
        ),
        Err(refusal) => refused(refusal),
    }
}

async fn hold(
    State(app): State<App>,
    Path(call_id): Path<String>,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let body: HoldBody = match read_body(body) {
        Ok(body) => body,
        Err(response) => return *response,
    };
    if !client_id_ok(&body.client) {
        return bad_client();
    }
    match app.hub.hold(
        &body.client,
        &CallId::from(call_id),
        body.session.as_deref(),
    ) {
        Ok(held) => reply(StatusCode::OK, &json!({"ok": true, "held": held})),
        Err(refusal) => refused(refusal),
    }
}

async fn bye(State(app): State<App>, Path(client): Path<String>) -> Response {
    if !client_id_ok(&client) {
        return bad_client();
    }
    let known = app.hub.goodbye(&client);
    reply(StatusCode::OK, &json!({"ok": true, "known": known}))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_are_loopback_literals_or_localhost() {
        for ok in [
            "127.0.0.1:8080",
            "127.0.0.1",
            "localhost:1",
            "LOCALHOST",
            "[::1]:9",
            "[::1]",
        ] {
            assert!(host_allowed(ok, true, None, false), "{ok}");
        }
        for bad in [
            "evil.example:8080",
            "127.0.0.1.evil.example",
            "10.0.0.1:80",
            "[::2]:80",
            "127.0.0.1:",
            "127.0.0.1:123456",
            "127.0.0.1:99999",
            "127.0.0.1:65536",
            "127.0.0.1:0",
            "[::1]:99999",
            "[::1]:",
            "[::1",
            "",
        ] {
            assert!(!host_allowed(bad, true, None, false), "{bad}");
        }
        assert!(host_allowed("10.0.0.1:80", false, None, false));
        assert!(!host_allowed("evil.example:80", false, None, false));
    }

    #[test]
    fn a_served_port_is_the_only_port() {
        for ok in ["127.0.0.1:8080", "localhost:8080", "[::1]:8080"] {
            assert!(host_allowed(ok, true, Some(8080), false), "{ok}");
        }
        for bad in [
            "127.0.0.1:8081",
            "localhost:80",
            "[::1]:99999",
            "127.0.0.1",
            "[::1]",
        ] {
            assert!(!host_allowed(bad, true, Some(8080), false), "{bad}");
        }
        // No port is port 80.
        assert!(host_allowed("127.0.0.1", true, Some(80), false));
        assert!(host_allowed("[::1]", true, Some(80), false));
    }

    #[test]
    fn over_tls_a_dns_name_is_taken_and_no_port_is_443() {
        for ok in [
            "ask.example.org:8443",
            "box:8443",
            "127.0.0.1:8443",
            "localhost:8443",
        ] {
            assert!(host_allowed(ok, true, Some(8443), true), "{ok}");
        }
        assert!(host_allowed("ask.example.org", false, Some(443), true));
        for bad in [
            "ask.example.org:8444",
            "ask.example.org",
            "ask..example.org:8443",
            "-ask.example.org:8443",
            "ask_example.org:8443",
            "ask.example.org:99999",
            ":8443",
        ] {
            assert!(!host_allowed(bad, true, Some(8443), true), "{bad}");
        }
        // Without TLS a DNS name never is.
        assert!(!host_allowed(
            "ask.example.org:8443",
            false,
            Some(8443),
            false
        ));
    }
}
