//! Webhooks and ntfy against an in-process receiver (axum) on loopback, in real time with short
//! retry settings: payloads, headers, signatures (ours and the official Standard Webhooks
//! library's), retries after 500s and timeouts under the same id, no retry after a 400.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ask_user_notify::{
    Button, Delivered, Notice, NoticeKind, NoticeQuestion, Ntfy, NtfyConfig, RetryPolicy, Secret,
    TerminalBell, Webhook, WebhookConfig, sign,
};
use axum::Router;
use axum::http::{HeaderMap, StatusCode};
use serde_json::{Value, json};

const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

/// What the receiver does with each request, in turn; `None`: hang longer than any timeout.
#[derive(Clone, Default)]
struct Receiver {
    script: Arc<Mutex<VecDeque<Option<StatusCode>>>>,
    seen: Arc<Mutex<Vec<(HeaderMap, String)>>>,
}

impl Receiver {
    async fn start(script: impl IntoIterator<Item = Option<StatusCode>>) -> (Self, String) {
        let receiver = Self {
            script: Arc::new(Mutex::new(script.into_iter().collect())),
            seen: Arc::default(),
        };
        let state = receiver.clone();
        let app = Router::new().fallback(move |headers: HeaderMap, body: String| {
            let state = state.clone();
            async move {
                state.seen.lock().unwrap().push((headers, body));
                let next = state
                    .script
                    .lock()
                    .unwrap()
                    .pop_front()
                    .unwrap_or(Some(StatusCode::OK));
                if let Some(status) = next {
                    status
                } else {
                    tokio::time::sleep(Duration::from_secs(30)).await;
                    StatusCode::OK
                }
            }
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        (receiver, url)
    }

    fn seen(&self) -> Vec<(HeaderMap, String)> {
        self.seen.lock().unwrap().clone()
    }
}

fn fast() -> RetryPolicy {
    RetryPolicy {
        attempts: 4,
        first_backoff: Duration::from_millis(20),
        max_backoff: Duration::from_millis(100),
        timeout: Duration::from_millis(300),
    }
}

fn notice(kind: NoticeKind) -> Notice {
    Notice {
        id: "msg_0123456789abcdef01234567".into(),
        kind,
        session: "s1".into(),
        call_id: "call-1".into(),
        at_ms: 1_764_597_600_000,
        questions: vec![NoticeQuestion {
            id: "db".into(),
            header: Some("Database".into()),
            options: vec!["PostgreSQL".into(), "SQLite".into()],
            option_count: 2,
            multi_select: Some(false),
            question: None,
            detail: None,
        }],
        url: Some("http://127.0.0.1:9/".into()),
        open_url: None,
        // One per option, as the policy sends them (all or none).
        buttons: vec![
            Button {
                label: "PostgreSQL".into(),
                url: "http://127.0.0.1:9/cards/call-1/answer?grant=g0".into(),
                body: r#"{"answers":[{"id":"db","selected":["PostgreSQL"]}]}"#.into(),
            },
            Button {
                label: "SQLite".into(),
                url: "http://127.0.0.1:9/cards/call-1/answer?grant=g1".into(),
                body: r#"{"answers":[{"id":"db","selected":["SQLite"]}]}"#.into(),
            },
        ],
    }
}

fn header(headers: &HeaderMap, name: &str) -> String {
    headers[name].to_str().unwrap().to_owned()
}

/// Checks one delivery's signature with our own code.
fn verify(headers: &HeaderMap, body: &str) {
    let secret = Secret::parse(SECRET).unwrap();
    let id = header(headers, "webhook-id");
    let timestamp: i64 = header(headers, "webhook-timestamp").parse().unwrap();
    assert_eq!(
        header(headers, "webhook-signature"),
        sign::signature(&secret, &id, timestamp, body)
    );
}

/// Checks deliveries with the official `standardwebhooks` library, when a Python with it is
/// named by `ASK_USER_PYTHON` (`.ci/run` makes one); required under `CI=true`.
fn verify_with_the_official_library(deliveries: &[(HeaderMap, String)]) {
    let Some(python) = std::env::var_os("ASK_USER_PYTHON") else {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "CI=true but ASK_USER_PYTHON is not set: .ci/run installs standardwebhooks"
        );
        eprintln!("SKIPPED: the official standardwebhooks check needs ASK_USER_PYTHON");
        return;
    };
    let cases: Vec<Value> = deliveries
        .iter()
        .map(|(headers, body)| {
            json!({
                "headers": {
                    "webhook-id": header(headers, "webhook-id"),
                    "webhook-timestamp": header(headers, "webhook-timestamp"),
                    "webhook-signature": header(headers, "webhook-signature"),
                },
                "body": body,
            })
        })
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("cases.json");
    std::fs::write(&file, json!({"secret": SECRET, "cases": cases}).to_string()).unwrap();
    let script = r#"
import json, sys
from standardwebhooks.webhooks import Webhook
data = json.load(open(sys.argv[1]))
hook = Webhook(data["secret"])
for case in data["cases"]:
    hook.verify(case["body"], case["headers"])
    # A changed body must not verify.
    try:
        hook.verify(case["body"] + " ", case["headers"])
    except Exception:
        pass
    else:
        raise SystemExit("a tampered body verified")
print(len(data["cases"]))
"#;
    let out = std::process::Command::new(python)
        .args(["-c", script])
        .arg(&file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "standardwebhooks refused a signature: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        deliveries.len().to_string()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_webhook_is_a_signed_json_post_in_the_standard_shape() {
    let (receiver, url) = Receiver::start([]).await;
    let hook = Webhook::new(
        WebhookConfig {
            url: format!("{url}/hook"),
            secret: Secret::parse(SECRET).unwrap(),
        },
        fast(),
    )
    .unwrap();
    for kind in [
        NoticeKind::Waiting,
        NoticeKind::Pending,
        NoticeKind::Answered { by: "web".into() },
        NoticeKind::Cancelled {
            code: Some("ASK_ABORTED".into()),
        },
    ] {
        assert_eq!(
            hook.send(&notice(kind)).await,
            Delivered::Yes { attempts: 1 }
        );
    }
    let seen = receiver.seen();
    assert_eq!(seen.len(), 4);
    let (headers, body) = &seen[0];
    assert_eq!(header(headers, "content-type"), "application/json");
    assert_eq!(
        header(headers, "webhook-id"),
        "msg_0123456789abcdef01234567"
    );
    let payload: Value = serde_json::from_str(body).unwrap();
    insta::assert_json_snapshot!("webhook_waiting", payload);
    let types: Vec<String> = seen
        .iter()
        .map(|(_, b)| {
            serde_json::from_str::<Value>(b).unwrap()["type"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(
        types,
        [
            "question.waiting",
            "question.pending",
            "question.answered",
            "question.cancelled"
        ]
    );
    for (headers, body) in &seen {
        verify(headers, body);
    }
    verify_with_the_official_library(&seen);
    assert!(
        !format!("{hook:?}").contains("MfKQ9r8"),
        "the secret never prints"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_attempts_are_retried_with_backoff_under_the_same_id() {
    let (receiver, url) = Receiver::start([
        Some(StatusCode::INTERNAL_SERVER_ERROR),
        None, // times out
        Some(StatusCode::SERVICE_UNAVAILABLE),
    ])
    .await;
    let hook = Webhook::new(
        WebhookConfig {
            url: format!("{url}/hook"),
            secret: Secret::parse(SECRET).unwrap(),
        },
        fast(),
    )
    .unwrap();
    let started = std::time::Instant::now();
    assert_eq!(
        hook.send(&notice(NoticeKind::Waiting)).await,
        Delivered::Yes { attempts: 4 }
    );
    // 20 + 40 + 80 ms of backoff and one 300 ms timeout at least.
    assert!(
        started.elapsed() >= Duration::from_millis(440),
        "{:?}",
        started.elapsed()
    );
    let seen = receiver.seen();
    assert_eq!(seen.len(), 4);
    let ids: Vec<String> = seen.iter().map(|(h, _)| header(h, "webhook-id")).collect();
    assert!(ids.iter().all(|id| *id == ids[0]), "{ids:?}");
    for (headers, body) in &seen {
        verify(headers, body);
    }
    verify_with_the_official_library(&seen);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refusal_is_not_retried_and_attempts_run_out() {
    let (receiver, url) = Receiver::start([Some(StatusCode::BAD_REQUEST)]).await;
    let config = WebhookConfig {
        url: format!("{url}/hook"),
        secret: Secret::parse(SECRET).unwrap(),
    };
    let hook = Webhook::new(config.clone(), fast()).unwrap();
    assert_eq!(
        hook.send(&notice(NoticeKind::Waiting)).await,
        Delivered::No {
            attempts: 1,
            status: Some(400)
        }
    );
    assert_eq!(receiver.seen().len(), 1);

    let (_down, url) = Receiver::start([Some(StatusCode::BAD_GATEWAY); 8]).await;
    let hook = Webhook::new(WebhookConfig { url, ..config }, fast()).unwrap();
    assert_eq!(
        hook.send(&notice(NoticeKind::Waiting)).await,
        Delivered::No {
            attempts: 4,
            status: Some(502)
        }
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ntfy_gets_a_json_publish_with_answer_buttons() {
    let (receiver, url) = Receiver::start([]).await;
    let ntfy = Ntfy::new(
        NtfyConfig {
            topic: "ask-user-test".into(),
            server: format!("{url}/"),
            token: Some("tk_secret".into()),
        },
        fast(),
    )
    .unwrap();
    assert_eq!(
        ntfy.send(&notice(NoticeKind::Waiting)).await,
        Delivered::Yes { attempts: 1 }
    );
    let (headers, body) = &receiver.seen()[0];
    // A server that requires a token gets it; the message itself never carries it.
    assert_eq!(header(headers, "authorization"), "Bearer tk_secret");
    assert!(!body.contains("tk_secret"));
    let message: Value = serde_json::from_str(body).unwrap();
    insta::assert_json_snapshot!("ntfy_waiting", message);
    let pending = ntfy.message(&notice(NoticeKind::Pending));
    assert_eq!(pending["priority"], 2);
}

#[test]
fn hostile_text_never_reaches_a_phone_or_a_terminal_raw() {
    let mut hostile = notice(NoticeKind::Waiting);
    hostile.questions[0].header = Some("4;3;50\u{1b}]0;PWNED\u{7}\u{202e}gpj.exe".into());
    hostile.questions[0].question = Some("Pick\u{1b}[2J one\nor the other\u{200b}".into());
    hostile.buttons[0].label = "Postgre\u{1b}[31mSQL".into();
    let ntfy = Ntfy::new(
        NtfyConfig {
            topic: "ask-user-test".into(),
            server: "http://127.0.0.1:9/".into(),
            token: None,
        },
        fast(),
    )
    .unwrap();
    let message = ntfy.message(&hostile);
    let text = message.to_string();
    for raw in ['\u{1b}', '\u{7}', '\u{202e}', '\u{200b}'] {
        let sent: String = [
            &message["title"],
            &message["message"],
            &message["actions"][0]["label"],
        ]
        .iter()
        .filter_map(|v| v.as_str())
        .collect();
        assert!(!sent.contains(raw), "{raw:?} reached the phone: {text}");
    }
    assert!(
        message["title"]
            .as_str()
            .unwrap()
            .contains("\\u{1b}]0;PWNED"),
        "shown, as an escape: {text}"
    );
    assert!(
        message["message"].as_str().unwrap().contains('\n'),
        "line breaks stay: {text}"
    );
    let bell = TerminalBell::sequence(&hostile);
    assert!(bell.starts_with("\u{7}\u{1b}]9;ask-user: "), "{bell:?}");
    let inside = &bell["\u{7}\u{1b}]9;".len()..bell.len() - 1];
    assert!(
        inside
            .chars()
            .all(|c| c == ' ' || (c.is_ascii_graphic() && c != ';')),
        "{bell:?}"
    );
}
