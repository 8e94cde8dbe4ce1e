//! A scripted Chat Completions server on loopback: an agent framework's real client talks to it
//! as to a provider (`POST {base}/chat/completions`), and it answers each request with the next
//! assistant message of its script, keeping every request it got for the test to check.
//!
//! ```text
//! let server = ScriptedChat::start([ScriptedChat::tool_call("call_1", "ask_user_question", args),
//!                                   ScriptedChat::text("Done.")]).await;
//! // point the client at server.base_url() (…/v1), run the loop, then:
//! let requests = server.requests();
//! ```

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::post;
use serde_json::{Value, json};

/// The server; it stops when dropped.
pub struct ScriptedChat {
    base_url: String,
    state: Arc<Script>,
    _stop: tokio::sync::oneshot::Sender<()>,
}

#[derive(Default)]
struct Script {
    replies: Mutex<VecDeque<Value>>,
    requests: Mutex<Vec<Value>>,
}

impl ScriptedChat {
    /// Serves `replies` (assistant messages, in order) on a free loopback port.
    pub async fn start(replies: impl IntoIterator<Item = Value>) -> Self {
        let state = Arc::new(Script {
            replies: Mutex::new(replies.into_iter().collect()),
            requests: Mutex::default(),
        });
        let app = axum::Router::new()
            .route("/v1/chat/completions", post(completion))
            .with_state(Arc::clone(&state));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base_url = format!("http://{}/v1", listener.local_addr().unwrap());
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        tokio::spawn(async move {
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(async {
                    let _ = stopped.await;
                })
                .await;
        });
        Self {
            base_url,
            state,
            _stop: stop,
        }
    }

    /// The API base a client is pointed at (`http://127.0.0.1:PORT/v1`).
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// Every request body received so far, in order.
    pub fn requests(&self) -> Vec<Value> {
        self.state.requests.lock().unwrap().clone()
    }

    /// How many scripted replies are left.
    pub fn left(&self) -> usize {
        self.state.replies.lock().unwrap().len()
    }

    /// An assistant message that calls the tool `name` with the raw JSON text `arguments`.
    pub fn tool_call(id: &str, name: &str, arguments: &str) -> Value {
        Self::tool_calls([(id, name, arguments)])
    }

    /// An assistant message that calls several tools at once.
    pub fn tool_calls<'a>(calls: impl IntoIterator<Item = (&'a str, &'a str, &'a str)>) -> Value {
        let calls: Vec<Value> = calls
            .into_iter()
            .map(|(id, name, arguments)| {
                json!({"id": id, "type": "function",
                       "function": {"name": name, "arguments": arguments}})
            })
            .collect();
        json!({"role": "assistant", "content": null, "tool_calls": calls})
    }

    /// An assistant message of plain text.
    pub fn text(text: &str) -> Value {
        json!({"role": "assistant", "content": text})
    }
}

/// The texts of every message of `request` with `role`, in order (see [`text_of`]).
pub fn texts_of(request: &Value, role: &str) -> Vec<String> {
    request["messages"]
        .as_array()
        .map(|messages| {
            messages
                .iter()
                .filter(|m| m["role"] == role)
                .map(|m| text_of(&m["content"]))
                .collect()
        })
        .unwrap_or_default()
}

/// A message's content as text: the string, or its text parts joined.
pub fn text_of(content: &Value) -> String {
    match content {
        Value::String(text) => text.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    }
}

/// The tool messages of `request`, in order: (`tool_call_id`, text).
pub fn tool_messages(request: &Value) -> Vec<(String, String)> {
    request["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == "tool")
        .map(|m| {
            (
                m["tool_call_id"].as_str().unwrap_or_default().to_owned(),
                text_of(&m["content"]),
            )
        })
        .collect()
}

async fn completion(
    State(script): State<Arc<Script>>,
    Json(request): Json<Value>,
) -> (StatusCode, Json<Value>) {
    let model = request["model"].clone();
    script.requests.lock().unwrap().push(request);
    let Some(message) = script.replies.lock().unwrap().pop_front() else {
        let error =
            json!({"error": {"message": "the script has no more replies", "type": "server_error"}});
        return (StatusCode::INTERNAL_SERVER_ERROR, Json(error));
    };
    let finish = if message["tool_calls"].is_array() {
        "tool_calls"
    } else {
        "stop"
    };
    let reply = json!({
        "id": "chatcmpl-scripted",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": null}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    });
    (StatusCode::OK, Json(reply))
}
