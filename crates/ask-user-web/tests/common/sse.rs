//! Requests through the router in process (tower `oneshot`), and a reader of its event streams.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use axum::Router;
use axum::body::Body;
use axum::http::{Request, StatusCode};
use http_body_util::BodyExt;
use serde_json::Value;
use tower::ServiceExt;

pub const HOST: &str = "127.0.0.1:8080";

/// One server-sent event.
#[derive(Clone, Debug)]
pub struct Pushed {
    pub name: String,
    pub data: Value,
}

/// An open event stream.
pub struct Events {
    body: Body,
    buf: String,
}

impl Events {
    /// The next event (keep-alive comments skipped); panics when the stream ends.
    pub async fn next(&mut self) -> Pushed {
        loop {
            if let Some(at) = self.buf.find("\n\n") {
                let block: String = self.buf.drain(..at + 2).collect();
                let mut name = "message".to_owned();
                let mut data = String::new();
                for line in block.lines() {
                    if let Some(v) = line.strip_prefix("event:") {
                        v.trim().clone_into(&mut name);
                    } else if let Some(v) = line.strip_prefix("data:") {
                        data.push_str(v.strip_prefix(' ').unwrap_or(v));
                    }
                }
                if data.is_empty() {
                    continue;
                }
                return Pushed {
                    name,
                    data: serde_json::from_str(&data).unwrap(),
                };
            }
            let frame = self
                .body
                .frame()
                .await
                .expect("the event stream ended")
                .unwrap();
            if let Ok(bytes) = frame.into_data() {
                self.buf.push_str(std::str::from_utf8(&bytes).unwrap());
            }
        }
    }

    /// Events until one for `call_id` shows it with `state` (a snapshot listing it, or a card).
    pub async fn until_card(&mut self, call_id: &str, state: &str) -> Value {
        loop {
            let pushed = self.next().await;
            let found = match pushed.name.as_str() {
                "snapshot" => pushed.data["cards"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|c| c["callId"] == call_id && c["state"] == state)
                    .cloned(),
                "card" if pushed.data["callId"] == call_id && pushed.data["state"] == state => {
                    Some(pushed.data.clone())
                }
                _ => None,
            };
            if let Some(card) = found {
                return card;
            }
        }
    }

    /// Events until one named `name` for `call_id`.
    pub async fn until(&mut self, name: &str, call_id: &str) -> Value {
        loop {
            let pushed = self.next().await;
            if pushed.name == name && pushed.data["callId"] == call_id {
                return pushed.data;
            }
        }
    }
}

/// A request with the right host and token.
pub fn request(method: &str, uri: &str, token: &str, body: Option<&Value>) -> Request<Body> {
    let sep = if uri.contains('?') { '&' } else { '?' };
    Request::builder()
        .method(method)
        .uri(format!("{uri}{sep}token={token}"))
        .header("host", HOST)
        .header("content-type", "application/json")
        .body(body.map_or_else(Body::empty, |b| Body::from(b.to_string())))
        .unwrap()
}

/// Sends `request` and reads the JSON reply.
pub async fn send(router: &Router, request: Request<Body>) -> (StatusCode, Value) {
    let response = router.clone().oneshot(request).await.unwrap();
    let status = response.status();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    let value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    (status, value)
}

/// Opens the event stream of page `client`.
pub async fn open(router: &Router, token: &str, client: &str) -> Events {
    let response = router
        .clone()
        .oneshot(request(
            "GET",
            &format!("/events?client={client}"),
            token,
            None,
        ))
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    Events {
        body: response.into_body(),
        buf: String::new(),
    }
}

/// Posts an answer batch for `call_id`.
pub async fn answer(
    router: &Router,
    token: &str,
    call_id: &str,
    answers: Value,
) -> (StatusCode, Value) {
    let body = serde_json::json!({"client": "tab-1", "answers": answers});
    send(
        router,
        request(
            "POST",
            &format!("/cards/{call_id}/answer"),
            token,
            Some(&body),
        ),
    )
    .await
}
