//! The routes in process (tower `oneshot`) under tokio's paused clock: the checks every request
//! passes, every route and error code, claims held by open streams, holds and goodbyes, races
//! with another answerer, and late answers to continued questions.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use common::sse::{HOST, answer, open, request, send};
use common::{DB_QUESTION, Fixture, answers_of, is_pending};
use serde_json::json;
use tokio::sync::oneshot;
use user_questions::{
    AnswerBatch, AnswerItem, AnswerRequest, Answered, Answerer, AnswererError, Next,
    QuestionEventKind, RegisterOptions, async_trait,
};

fn raw(method: &str, uri: &str, headers: &[(&str, &str)], body: &str) -> Request<Body> {
    let mut builder = Request::builder().method(method).uri(uri);
    for (name, value) in headers {
        builder = builder.header(*name, *value);
    }
    builder.body(Body::from(body.to_owned())).unwrap()
}

#[tokio::test(start_paused = true)]
async fn every_request_needs_the_token_a_literal_host_and_its_own_origin() {
    let fx = Fixture::new(60);
    let router = fx.web.router();
    let token = fx.web.token().to_owned();

    let (status, body) = send(&router, raw("GET", "/", &[("host", HOST)], "")).await;
    assert_eq!(
        (status, body["code"].as_str()),
        (StatusCode::UNAUTHORIZED, Some("BAD_TOKEN"))
    );
    let (status, _) = send(&router, raw("GET", "/?token=wrong", &[("host", HOST)], "")).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let almost = format!("{}x", &token[..token.len() - 1]);
    let (status, _) = send(
        &router,
        raw(
            "GET",
            &format!("/pending?token={almost}"),
            &[("host", HOST)],
            "",
        ),
    )
    .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);

    // The header carries it as well as the query.
    let (status, _) = send(
        &router,
        raw(
            "GET",
            "/pending",
            &[("host", HOST), ("x-ask-user-token", &token)],
            "",
        ),
    )
    .await;
    assert_eq!(status, StatusCode::OK);

    // DNS rebinding: a name that resolves to loopback is still not this server's name.
    for host in [
        "evil.example:8080",
        "127.0.0.1.nip.io:8080",
        "10.1.2.3:8080",
        // A port no server has.
        "127.0.0.1:99999",
        "127.0.0.1:0",
        "[::1]:65536",
    ] {
        let (status, body) = send(
            &router,
            raw(
                "GET",
                &format!("/pending?token={token}"),
                &[("host", host)],
                "",
            ),
        )
        .await;
        assert_eq!(
            (status, body["code"].as_str()),
            (StatusCode::FORBIDDEN, Some("BAD_HOST")),
            "{host}"
        );
    }
    // Cross-site requests, by Origin or by Fetch Metadata.
    for headers in [
        vec![("host", HOST), ("origin", "http://evil.example")],
        vec![("host", HOST), ("origin", "null")],
        vec![("host", HOST), ("origin", "http://127.0.0.1:9999")],
        vec![("host", HOST), ("sec-fetch-site", "cross-site")],
    ] {
        let (status, body) = send(
            &router,
            raw(
                "POST",
                &format!("/clients/tab/bye?token={token}"),
                &headers,
                "",
            ),
        )
        .await;
        assert_eq!(
            (status, body["code"].as_str()),
            (StatusCode::FORBIDDEN, Some("BAD_ORIGIN")),
            "{headers:?}"
        );
    }
    let (status, _) = send(
        &router,
        raw(
            "POST",
            &format!("/clients/tab/bye?token={token}"),
            &[
                ("host", HOST),
                ("origin", &format!("http://{HOST}")),
                ("sec-fetch-site", "same-origin"),
            ],
            "",
        ),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
}

/// Browsers ask for `/favicon.ico` without the page's token: it is answered empty (204), not
/// with a 401 every page load would log.
#[tokio::test(start_paused = true)]
async fn the_favicon_needs_no_token_and_is_empty() {
    let fx = Fixture::new(60);
    let router = fx.web.router();
    let (status, body) = send(&router, raw("GET", "/favicon.ico", &[("host", HOST)], "")).await;
    assert_eq!(
        (status, body),
        (StatusCode::NO_CONTENT, serde_json::Value::Null)
    );
    // Still this server's own address only.
    let (status, _) = send(
        &router,
        raw("GET", "/favicon.ico", &[("host", "evil.example")], ""),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    // Nothing else is served without the token.
    let (status, _) = send(&router, raw("GET", "/favicon.png", &[("host", HOST)], "")).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
}

#[tokio::test(start_paused = true)]
async fn the_printed_link_opens_from_another_site_but_nothing_else_does() {
    let fx = Fixture::new(60);
    let router = fx.web.router();
    let token = fx.web.token().to_owned();
    // The printed link opened from another site's page: a top-level navigation to the page.
    let (status, _) = send(
        &router,
        raw(
            "GET",
            &format!("/?token={token}"),
            &[
                ("host", HOST),
                ("sec-fetch-site", "cross-site"),
                ("sec-fetch-mode", "navigate"),
            ],
            "",
        ),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) = send(
        &router,
        raw(
            "GET",
            &format!("/pending?token={token}"),
            &[
                ("host", HOST),
                ("sec-fetch-site", "cross-site"),
                ("sec-fetch-mode", "navigate"),
            ],
            "",
        ),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "only the page itself");
}

#[tokio::test(start_paused = true)]
async fn bad_requests_get_a_code_and_a_message() {
    let fx = Fixture::new(60);
    let router = fx.web.router();
    let token = fx.web.token();

    let (status, body) = send(&router, request("GET", "/nothing", token, None)).await;
    assert_eq!(
        (status, body["code"].as_str()),
        (StatusCode::NOT_FOUND, Some("NOT_FOUND"))
    );
    let (status, _) = send(&router, request("PUT", "/", token, None)).await;
    assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED);

    let huge = json!({"answers": [{"id": "db", "selected": [], "custom": "x".repeat(70_000)}]});
    let (status, body) = send(
        &router,
        request("POST", "/cards/c/answer", token, Some(&huge)),
    )
    .await;
    assert_eq!(
        (status, body["code"].as_str()),
        (StatusCode::PAYLOAD_TOO_LARGE, Some("TOO_LARGE"))
    );

    let (status, body) = send(
        &router,
        raw(
            "POST",
            &format!("/cards/c/answer?token={token}"),
            &[("host", HOST)],
            "{not json",
        ),
    )
    .await;
    assert_eq!(
        (status, body["code"].as_str()),
        (StatusCode::BAD_REQUEST, Some("BAD_REQUEST"))
    );
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("not the expected JSON")
    );

    let extra = json!({"answers": [], "admin": true});
    let (status, _) = send(
        &router,
        request("POST", "/cards/c/answer", token, Some(&extra)),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);

    let (status, body) = answer(&router, token, "no-such-call", json!([])).await;
    assert_eq!(
        (status, body["code"].as_str()),
        (StatusCode::GONE, Some("NOT_WAITING"))
    );
    assert_eq!(
        body["message"],
        "This question is no longer waiting for an answer."
    );

    for bad in ["", "a b", "%3Cscript%3E", &"x".repeat(65)] {
        let uri = format!("/events?client={}", bad.replace(' ', "%20"));
        let (status, body) = send(&router, request("GET", &uri, token, None)).await;
        assert_eq!(
            (status, body["code"].as_str()),
            (StatusCode::BAD_REQUEST, Some("BAD_REQUEST")),
            "{bad:?}"
        );
    }
    let (status, _) = send(
        &router,
        request(
            "POST",
            "/cards/c/hold",
            token,
            Some(&json!({"client": "bad id"})),
        ),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let (status, body) = send(
        &router,
        request(
            "POST",
            "/cards/c/hold",
            token,
            Some(&json!({"client": "tab"})),
        ),
    )
    .await;
    assert_eq!(
        (status, body["code"].as_str()),
        (StatusCode::GONE, Some("NOT_WAITING"))
    );
}

#[tokio::test(start_paused = true)]
async fn the_page_is_static_with_a_hash_policy_and_never_writes_html() {
    let fx = Fixture::new(60);
    let router = fx.web.router();
    let response = tower::ServiceExt::oneshot(router, request("GET", "/", fx.web.token(), None))
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let csp = response.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(csp.contains("script-src 'sha256-"), "{csp}");
    assert!(
        !csp.contains("unsafe-inline") && !csp.contains("unsafe-eval"),
        "{csp}"
    );
    assert_eq!(response.headers()["referrer-policy"], "no-referrer");
    assert_eq!(response.headers()["x-frame-options"], "DENY");
    let bytes = http_body_util::BodyExt::collect(response.into_body())
        .await
        .unwrap()
        .to_bytes();
    let html = String::from_utf8(bytes.to_vec()).unwrap();
    assert_eq!(html, ask_user_web::page::html(), "byte-stable");
    assert!(!html.contains(fx.web.token()));
    for sink in [
        "innerHTML",
        "outerHTML",
        "insertAdjacentHTML",
        "document.write",
        "eval(",
    ] {
        assert!(!html.contains(sink), "the page uses {sink}");
    }
    insta::assert_snapshot!("page", html);
    insta::assert_snapshot!("csp", csp);
}

#[tokio::test(start_paused = true)]
async fn an_answer_from_the_page_in_the_window_answers_the_call_as_web() {
    let mut fx = Fixture::new(60);
    let router = fx.web.router();
    let token = fx.web.token().to_owned();
    let mut page = open(&router, &token, "tab-1").await;
    let call = fx.ask("call-1", DB_QUESTION);
    let card = page.until_card("call-1", "open").await;
    assert_eq!(card["session"], "s1");
    assert_eq!(card["timed"], true);
    assert_eq!(card["remainingMs"], 60_000);
    assert_eq!(card["questions"][0]["options"][1]["label"], "SQLite");
    assert_eq!(fx.web.claims_held(), 1, "the open stream claims the wait");

    // A batch that does not fit is refused and changes nothing.
    let (status, body) = answer(
        &router,
        &token,
        "call-1",
        json!([{"id": "db", "selected": ["Oracle"]}]),
    )
    .await;
    assert_eq!(
        (status, body["code"].as_str()),
        (StatusCode::BAD_REQUEST, Some("BAD_ANSWER"))
    );
    assert!(!call.is_finished());

    let (status, body) = answer(
        &router,
        &token,
        "call-1",
        json!([{"id": "db", "selected": ["SQLite"]}]),
    )
    .await;
    assert_eq!(
        (status, body.clone()),
        (StatusCode::OK, json!({"ok": true, "path": "foreground"}))
    );
    let outcome = call.await.unwrap();
    assert_eq!(
        answers_of(&outcome).unwrap(),
        json!([{"id": "db", "selected": ["SQLite"]}])
    );
    let settled = page.until("settled", "call-1").await;
    assert_eq!(settled["by"], "web");
    assert_eq!(settled["answered"], "on the page");
    assert!(fx.seam_events().iter().any(|e| matches!(
        &e.kind,
        QuestionEventKind::Answered { provenance, .. } if provenance.answerer == "web"
    )));
    assert_eq!(fx.web.claims_held(), 0);
    // Answered once: a second answer finds nothing waiting.
    let (status, _) = answer(
        &router,
        &token,
        "call-1",
        json!([{"id": "db", "selected": ["SQLite"]}]),
    )
    .await;
    assert_eq!(status, StatusCode::GONE);
}

#[tokio::test(start_paused = true)]
async fn an_open_stream_holds_the_wait_and_its_end_releases_it_after_the_grace() {
    let fx = Fixture::new(10);
    let router = fx.web.router();
    let token = fx.web.token().to_owned();
    let mut page = open(&router, &token, "tab-1").await;
    let mut call = fx.ask("call-1", DB_QUESTION);
    page.until_card("call-1", "open").await;

    // Far past the 10 s window: a person is looking, so the wait is open.
    assert!(
        tokio::time::timeout(Duration::from_mins(2), &mut call)
            .await
            .is_err()
    );
    assert_eq!(fx.web.claims_held(), 1);

    // The stream ends (a network blip, say): the claim outlives it for the 4 s grace.
    drop(page);
    assert!(
        tokio::time::timeout(Duration::from_millis(3_990), &mut call)
            .await
            .is_err()
    );
    let outcome = tokio::time::timeout(Duration::from_millis(20), &mut call)
        .await
        .expect("the call ends when the grace is over")
        .unwrap();
    assert!(is_pending(&outcome), "{}", outcome.text);
    assert_eq!(fx.web.claims_held(), 0);
    assert_eq!(fx.web.clients(), 0);
}

#[tokio::test(start_paused = true)]
async fn a_reconnect_inside_the_grace_keeps_the_claim() {
    let fx = Fixture::new(10);
    let router = fx.web.router();
    let token = fx.web.token().to_owned();
    let page = open(&router, &token, "tab-1").await;
    let mut call = fx.ask("call-1", DB_QUESTION);
    let mut second = open(&router, &token, "tab-2").await;
    second.until_card("call-1", "open").await;
    drop(second);
    drop(page);
    tokio::time::sleep(Duration::from_secs(3)).await;
    let mut again = open(&router, &token, "tab-1").await;
    again.until_card("call-1", "open").await;
    // tab-2 never came back: its claim went; tab-1's stayed.
    assert!(
        tokio::time::timeout(Duration::from_mins(1), &mut call)
            .await
            .is_err()
    );
    assert_eq!(fx.web.claims_held(), 1);
    assert_eq!(fx.web.clients(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_goodbye_releases_at_once_and_two_pages_are_two_claims() {
    let mut fx = Fixture::new(10);
    let router = fx.web.router();
    let token = fx.web.token().to_owned();
    let mut one = open(&router, &token, "tab-1").await;
    let mut two = open(&router, &token, "tab-2").await;
    let mut call = fx.ask("call-1", DB_QUESTION);
    one.until_card("call-1", "open").await;
    two.until_card("call-1", "open").await;
    assert_eq!(fx.web.claims_held(), 2);
    let claims: Vec<u32> = fx
        .seam_events()
        .iter()
        .filter_map(|e| match e.kind {
            QuestionEventKind::Claimed { claims } => Some(claims),
            _ => None,
        })
        .collect();
    assert_eq!(claims, [1, 2]);

    tokio::time::sleep(Duration::from_secs(30)).await;
    let (status, body) = send(&router, request("POST", "/clients/tab-1/bye", &token, None)).await;
    assert_eq!(
        (status, body["known"].as_bool()),
        (StatusCode::OK, Some(true))
    );
    drop(one);
    // The other page still looks.
    assert!(
        tokio::time::timeout(Duration::from_secs(30), &mut call)
            .await
            .is_err()
    );
    send(&router, request("POST", "/clients/tab-2/bye", &token, None)).await;
    // Overdue and unclaimed: pending at once, no grace.
    let outcome = tokio::time::timeout(Duration::from_millis(1), &mut call)
        .await
        .unwrap()
        .unwrap();
    assert!(is_pending(&outcome));
    let card = two.until_card("call-1", "continued").await;
    assert_eq!(card["remainingMs"], serde_json::Value::Null);
}

#[tokio::test(start_paused = true)]
async fn a_hold_outlives_the_stream_until_the_page_says_goodbye() {
    let fx = Fixture::new(10);
    let router = fx.web.router();
    let token = fx.web.token().to_owned();
    let mut page = open(&router, &token, "tab-1").await;
    let mut call = fx.ask("call-1", DB_QUESTION);
    page.until_card("call-1", "open").await;
    let (status, body) = send(
        &router,
        request(
            "POST",
            "/cards/call-1/hold",
            &token,
            Some(&json!({"client": "tab-1", "session": "s1"})),
        ),
    )
    .await;
    assert_eq!(
        (status, body),
        (StatusCode::OK, json!({"ok": true, "held": true}))
    );
    assert_eq!(fx.web.claims_held(), 2);
    drop(page);
    assert!(
        tokio::time::timeout(Duration::from_mins(5), &mut call)
            .await
            .is_err()
    );
    assert_eq!(
        fx.web.claims_held(),
        1,
        "the stream's claim went after the grace, the hold stays"
    );
    send(&router, request("POST", "/clients/tab-1/bye", &token, None)).await;
    let outcome = tokio::time::timeout(Duration::from_millis(1), &mut call)
        .await
        .unwrap()
        .unwrap();
    assert!(is_pending(&outcome));
}

#[tokio::test(start_paused = true)]
async fn a_continued_question_takes_one_late_answer_and_settles_on_admission() {
    let fx = Fixture::new(5);
    let router = fx.web.router();
    let token = fx.web.token().to_owned();
    let call = fx.ask("call-1", DB_QUESTION);
    // Nobody looks: the window closes.
    assert!(is_pending(&call.await.unwrap()));
    fx.host.end_turn("completed").unwrap();

    let mut page = open(&router, &token, "tab-1").await;
    let card = page.until_card("call-1", "continued").await;
    assert_eq!(card["replyQueued"], false);
    let (status, body) = answer(
        &router,
        &token,
        "call-1",
        json!([{"id": "db", "selected": ["Nope"]}]),
    )
    .await;
    assert_eq!(
        (status, body["code"].as_str()),
        (StatusCode::BAD_REQUEST, Some("BAD_ANSWER"))
    );
    let (status, body) = answer(
        &router,
        &token,
        "call-1",
        json!([{"id": "db", "selected": ["PostgreSQL"]}]),
    )
    .await;
    assert_eq!(
        (status, body),
        (StatusCode::OK, json!({"ok": true, "path": "late"}))
    );
    let queued = page.until("queued", "call-1").await;
    assert_eq!(
        queued["answers"],
        json!([{"id": "db", "selected": ["PostgreSQL"]}])
    );
    let (status, body) = answer(
        &router,
        &token,
        "call-1",
        json!([{"id": "db", "selected": ["SQLite"]}]),
    )
    .await;
    assert_eq!(
        (status, body["code"].as_str()),
        (StatusCode::CONFLICT, Some("REPLY_QUEUED"))
    );

    // A page that connects now sees the answer as sent.
    let mut later = open(&router, &token, "tab-2").await;
    let card = later.until_card("call-1", "continued").await;
    assert_eq!(card["replyQueued"], true);

    // The agent's next turn admits the reply: the question is settled, once.
    let claimed = fx.host.begin_turn().unwrap();
    assert_eq!(claimed.len(), 1);
    // The turn's first step admits it.
    fx.host.begin_step().unwrap();
    let settled = page.until("settled", "call-1").await;
    assert_eq!(settled["by"], "web");
    let view = fx.host.projection().view().clone();
    assert_eq!(view.settled.len(), 1);
    assert!(view.active.is_empty());
    let (status, pending) = send(&router, request("GET", "/pending", &token, None)).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(pending["sessions"][0]["session"], "s1");
    assert_eq!(pending["sessions"][0]["settled"][0]["callId"], "call-1");
}

/// Another surface: answers when told, and records whether its future was dropped.
struct Gate {
    answer: std::sync::Mutex<Option<oneshot::Receiver<AnswerBatch>>>,
    dropped: Arc<AtomicBool>,
}

struct SetOnDrop(Arc<AtomicBool>);

impl Drop for SetOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

#[async_trait]
impl Answerer for Gate {
    async fn answer(
        &self,
        _request: &AnswerRequest,
        _next: Next<'_>,
    ) -> Result<Answered, AnswererError> {
        let _flag = SetOnDrop(Arc::clone(&self.dropped));
        let rx = self.answer.lock().unwrap().take().unwrap();
        match rx.await {
            Ok(batch) => Ok(Answered::human(batch)),
            Err(_) => std::future::pending().await,
        }
    }
}

fn gate(
    fx: &Fixture,
) -> (
    oneshot::Sender<AnswerBatch>,
    Arc<AtomicBool>,
    user_questions::AnswererGuard,
) {
    let (tx, rx) = oneshot::channel();
    let dropped = Arc::new(AtomicBool::new(false));
    let guard = fx.runtime.seam().register(
        Arc::new(Gate {
            answer: std::sync::Mutex::new(Some(rx)),
            dropped: Arc::clone(&dropped),
        }),
        RegisterOptions::global("terminal"),
    );
    (tx, dropped, guard)
}

#[tokio::test(start_paused = true)]
async fn the_page_answering_first_closes_the_other_surface() {
    let fx = Fixture::new(60);
    let (_tx, dropped, _guard) = gate(&fx);
    let router = fx.web.router();
    let token = fx.web.token().to_owned();
    let mut page = open(&router, &token, "tab-1").await;
    let call = fx.ask("call-1", DB_QUESTION);
    page.until_card("call-1", "open").await;
    assert!(
        !dropped.load(Ordering::SeqCst),
        "both surfaces show the question"
    );
    let (status, _) = answer(
        &router,
        &token,
        "call-1",
        json!([{"id": "db", "selected": ["SQLite"]}]),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let outcome = call.await.unwrap();
    assert_eq!(answers_of(&outcome).unwrap()[0]["selected"][0], "SQLite");
    assert!(
        dropped.load(Ordering::SeqCst),
        "the other surface's card was closed"
    );
}

#[tokio::test(start_paused = true)]
async fn the_other_surface_answering_first_takes_the_card_down() {
    let fx = Fixture::new(60);
    let (tx, _dropped, _guard) = gate(&fx);
    let router = fx.web.router();
    let token = fx.web.token().to_owned();
    let mut page = open(&router, &token, "tab-1").await;
    let call = fx.ask("call-1", DB_QUESTION);
    page.until_card("call-1", "open").await;
    tx.send(AnswerBatch::new([AnswerItem::selected(
        "db",
        ["PostgreSQL"],
    )]))
    .unwrap();
    let outcome = call.await.unwrap();
    assert_eq!(
        answers_of(&outcome).unwrap()[0]["selected"][0],
        "PostgreSQL"
    );
    let settled = page.until("settled", "call-1").await;
    assert_eq!(settled["by"], "terminal");
    // Shown on the other pages as "Answered at the terminal."
    assert_eq!(settled["answered"], "at the terminal");
    let (status, body) = answer(
        &router,
        &token,
        "call-1",
        json!([{"id": "db", "selected": ["SQLite"]}]),
    )
    .await;
    assert_eq!(
        (status, body["code"].as_str()),
        (StatusCode::GONE, Some("NOT_WAITING"))
    );
    assert_eq!(fx.web.claims_held(), 0);
}

#[tokio::test(start_paused = true)]
async fn hostile_text_travels_as_json_data_only() {
    let fx = Fixture::new(60);
    let router = fx.web.router();
    let token = fx.web.token().to_owned();
    let mut page = open(&router, &token, "tab-1").await;
    let hostile = r#"{"questions":[{"id":"x","question":"<script>alert(1)</script>\u001b[2J\u202eevil\n\ndata: {}","options":[{"label":"<img src=x onerror=alert(2)>"},{"label":"ok"}]}]}"#;
    let _call = fx.ask("call-1", hostile);
    let card = page.until_card("call-1", "open").await;
    assert_eq!(
        card["questions"][0]["question"],
        "<script>alert(1)</script>\u{1b}[2J\u{202e}evil\n\ndata: {}"
    );
    assert_eq!(
        card["questions"][0]["options"][0]["label"],
        "<img src=x onerror=alert(2)>"
    );
    // Line breaks in model text cannot end an event early or forge one.
    let (status, _) = answer(
        &router,
        &token,
        "call-1",
        json!([{"id": "x", "selected": ["ok"]}]),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
}

#[tokio::test(start_paused = true)]
async fn the_terminal_times_out_the_shared_request_even_while_a_page_looks() {
    use ask_user_terminal::{Display, Key, TerminalAnswerer, TerminalOptions, VirtualTerminal};
    let fx = Fixture::new(5);
    let vt = VirtualTerminal::new(80, 30);
    let terminal = TerminalAnswerer::new(
        fx.runtime.seam(),
        TerminalOptions::new()
            .with_display(Display::virtual_terminal(vt.clone()))
            .with_desk(Arc::clone(&fx.desk) as Arc<dyn pending_answer::QuestionDesk>),
    );
    let _terminal = terminal.register(fx.runtime.seam());
    let router = fx.web.router();
    let token = fx.web.token().to_owned();
    let mut page = open(&router, &token, "tab-1").await;
    let mut call = fx.ask("call-1", DB_QUESTION);
    page.until_card("call-1", "open").await;
    vt.wait_for("Which database?").await;
    // SPEC §4.7: the page's claim is local to the page; the terminal's countdown ends the
    // window for both. Both surfaces then show the question as answerable late.
    let outcome = tokio::time::timeout(Duration::from_secs(6), &mut call)
        .await
        .expect("the terminal's window ends the call")
        .unwrap();
    assert!(is_pending(&outcome), "{}", outcome.text);
    page.until_card("call-1", "continued").await;
    assert_eq!(fx.web.claims_held(), 0);
    fx.host.end_turn("completed").unwrap();
    // The terminal's late card answers; the page's card settles with it.
    assert_eq!(terminal.late_calls().len(), 1);
    vt.press(Key::Enter);
    tokio::time::timeout(Duration::from_secs(5), async {
        while fx.host.host_agent().next_turn().is_empty() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("the terminal's late answer is queued");
    let claimed = fx.host.begin_turn().unwrap();
    assert_eq!(claimed.len(), 1);
    // The turn's first step admits it.
    fx.host.begin_step().unwrap();
    assert_eq!(page.until("settled", "call-1").await["by"], "terminal");
    let (status, body) = answer(
        &router,
        &token,
        "call-1",
        json!([{"id": "db", "selected": ["SQLite"]}]),
    )
    .await;
    assert_eq!(
        (status, body["code"].as_str()),
        (StatusCode::GONE, Some("NOT_WAITING"))
    );
}

#[tokio::test(start_paused = true)]
async fn a_hold_after_the_goodbye_is_refused_and_leaves_nothing_behind() {
    let fx = Fixture::new(10);
    let router = fx.web.router();
    let token = fx.web.token().to_owned();
    let mut page = open(&router, &token, "tab-1").await;
    let mut call = fx.ask("call-1", DB_QUESTION);
    page.until_card("call-1", "open").await;
    send(&router, request("POST", "/clients/tab-1/bye", &token, None)).await;
    drop(page);
    let (status, body) = send(
        &router,
        request(
            "POST",
            "/cards/call-1/hold",
            &token,
            Some(&json!({"client": "tab-1"})),
        ),
    )
    .await;
    assert_eq!(
        (status, body["code"].as_str()),
        (StatusCode::CONFLICT, Some("NOT_LOOKING"))
    );
    let outcome = tokio::time::timeout(Duration::from_secs(11), &mut call)
        .await
        .unwrap()
        .unwrap();
    assert!(is_pending(&outcome));
    assert_eq!((fx.web.claims_held(), fx.web.clients()), (0, 0));
}

#[tokio::test(start_paused = true)]
async fn a_grant_answers_its_one_option_once_without_the_page_token() {
    let mut fx = Fixture::new(60);
    let router = fx.web.router();
    let token = fx.web.token().to_owned();
    let mut page = open(&router, &token, "tab-1").await;
    let call = fx.ask("call-1", DB_QUESTION);
    page.until_card("call-1", "open").await;
    let sqlite = fx
        .web
        .grant("s1", &"call-1".into(), "db", "SQLite")
        .unwrap()
        .unwrap();
    assert_eq!(
        sqlite.body,
        r#"{"answers":[{"id":"db","selected":["SQLite"]}]}"#
    );
    let sqlite = sqlite.path;
    let postgres = fx
        .web
        .grant("s1", &"call-1".into(), "db", "PostgreSQL")
        .unwrap()
        .unwrap()
        .path;
    assert_eq!(
        fx.web
            .grant("s1", &"call-1".into(), "db", "Oracle")
            .unwrap(),
        None
    );
    assert!(
        sqlite.starts_with("/cards/call-1/answer?grant="),
        "{sqlite}"
    );
    let press = |uri: &str, label: &str| {
        raw(
            "POST",
            uri,
            &[("host", HOST), ("content-type", "application/json")],
            &json!({"answers": [{"id": "db", "selected": [label]}]}).to_string(),
        )
    };
    // Another option than the grant's, or another call: refused, and the grant stays usable.
    let (status, body) = send(&router, press(&sqlite, "PostgreSQL")).await;
    assert_eq!(
        (status, body["code"].as_str()),
        (StatusCode::FORBIDDEN, Some("BAD_GRANT"))
    );
    let elsewhere = sqlite.replace("/cards/call-1/", "/cards/call-2/");
    let (status, _) = send(&router, press(&elsewhere, "SQLite")).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, body) = send(&router, press(&sqlite, "SQLite")).await;
    assert_eq!(
        (status, body),
        (StatusCode::OK, json!({"ok": true, "path": "foreground"}))
    );
    assert_eq!(
        answers_of(&call.await.unwrap()).unwrap()[0]["selected"][0],
        "SQLite"
    );
    // The answer is the button's, so a surface that lost the race can say a phone answered.
    assert!(fx.seam_events().iter().any(|e| matches!(
        &e.kind,
        QuestionEventKind::Answered { provenance, .. } if provenance.answerer == "web-button"
    )));
    // Used once: a replay is refused; the other button finds nothing waiting.
    let (status, body) = send(&router, press(&sqlite, "SQLite")).await;
    assert_eq!(
        (status, body["code"].as_str()),
        (StatusCode::FORBIDDEN, Some("BAD_GRANT"))
    );
    let (status, body) = send(&router, press(&postgres, "PostgreSQL")).await;
    assert_eq!(
        (status, body["code"].as_str()),
        (StatusCode::FORBIDDEN, Some("BAD_GRANT")),
        "one button answered: the others are revoked"
    );
    // A grant is no page token.
    let grant = sqlite.split("grant=").nth(1).unwrap();
    let (status, _) = send(
        &router,
        raw(
            "GET",
            &format!("/pending?grant={grant}"),
            &[("host", HOST)],
            "",
        ),
    )
    .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
}
