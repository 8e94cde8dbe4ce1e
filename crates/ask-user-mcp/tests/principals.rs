//! Over MCP HTTP with two bearer tokens, each token's principal owns what it made: its
//! handshake session, its calls, their tasks and their late replies. The other token is told
//! what it would be told of an id that never was: no oracle.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use ask_user_mcp::{AskUserMcp, BearerToken, McpHttpOptions, McpOptions};
use serde_json::{Value, json};
use tool_ask_user::AskUserConfig;

const TOKEN_A: &str = "a1a1a1a1b2b2b2b2c3c3c3c3d4d4d4d4";
const TOKEN_B: &str = "e5e5e5e5f6f6f6f6a7a7a7a7b8b8b8b8";

/// A timed server (1 s windows) with both tokens over `dir`, on loopback: its URL, and what stops
/// it when dropped.
async fn serve(dir: &tempfile::TempDir) -> (String, tokio_util::sync::DropGuard) {
    let options = McpOptions::new(dir.path())
        .with_tool(Some(AskUserConfig::timed_secs(1)))
        .with_http(McpHttpOptions {
            bearer_tokens: vec![
                BearerToken::new(TOKEN_A).unwrap(),
                BearerToken::new(TOKEN_B).unwrap(),
            ],
            ..McpHttpOptions::default()
        });
    let server = AskUserMcp::new(options).unwrap();
    let listener = AskUserMcp::bind_http("127.0.0.1:0".parse().unwrap(), true)
        .await
        .unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let cancel = tokio_util::sync::CancellationToken::new();
    let stop = cancel.clone().drop_guard();
    tokio::spawn(async move { server.serve_http(listener, cancel).await });
    (url, stop)
}

/// One JSON-RPC request of the stateless revision with `token`: the status and the reply.
async fn stateless(url: &str, token: &str, method: &str, params: Value) -> (u16, Value) {
    let mut params = params;
    let mut meta = ask_user_testkit::mcp::stateless_meta("principal-test");
    // To ask after a call as a task, a client that takes tasks (the tasks extension); a call
    // is made by one that does not, so it returns pending after its window.
    if method.starts_with("tasks/") {
        meta["io.modelcontextprotocol/clientCapabilities"]["extensions"] =
            json!({"io.modelcontextprotocol/tasks": {}});
    }
    params["_meta"] = meta;
    let body = json!({"jsonrpc": "2.0", "id": 9, "method": method, "params": params});
    let mut request = reqwest::Client::new()
        .post(url)
        .bearer_auth(token)
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", "2026-07-28")
        .header("Mcp-Method", method);
    // SEP-2243: the tool's name, or the task's id.
    if let Some(name) = params["name"].as_str().or(params["taskId"].as_str()) {
        request = request.header("Mcp-Name", name);
    }
    let response = request.body(body.to_string()).send().await.unwrap();
    let status = response.status().as_u16();
    let text = response.text().await.unwrap();
    let reply = ask_user_testkit::mcp::reply_message(&text)
        .unwrap_or_else(|| panic!("not JSON-RPC ({status}): {text}"));
    (status, reply)
}

fn question() -> Value {
    json!({"questions": [{
        "id": "db", "question": "Which database?", "header": "Database",
        "options": [{"label": "PostgreSQL"}, {"label": "SQLite"}],
    }]})
}

fn text_of(reply: &Value) -> String {
    reply["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// A's call goes pending; B asks after it by id through the companion and `tasks/get`, and
/// tries to update and cancel it as a task: each time B hears what an unknown id gets. A itself
/// is served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_principals_call_is_as_unknown_as_one_that_never_was() {
    let dir = tempfile::tempdir().unwrap();
    let (url, _stop) = serve(&dir).await;
    let call = json!({"name": "ask_user_question", "arguments": question()});
    let (_, pending) = stateless(&url, TOKEN_A, "tools/call", call).await;
    let pending: Value = serde_json::from_str(&text_of(&pending)).unwrap();
    assert_eq!(pending["pending"], true, "{pending}");
    let call_id = pending["callId"].as_str().unwrap().to_owned();
    let never = format!("{}0_1", call_id.rsplit_once('_').unwrap().0);

    let companion =
        |id: &str| json!({"name": "ask_user_question_answer", "arguments": {"callId": id}});
    let (_, by_a) = stateless(&url, TOKEN_A, "tools/call", companion(&call_id)).await;
    assert!(
        text_of(&by_a).starts_with(r#"{"pending":true"#),
        "A reads its own call: {by_a}"
    );
    let (_, by_b) = stateless(&url, TOKEN_B, "tools/call", companion(&call_id)).await;
    let (_, unknown) = stateless(&url, TOKEN_B, "tools/call", companion(&never)).await;
    assert_eq!(by_b["result"]["isError"], true, "{by_b}");
    assert_eq!(
        text_of(&by_b).replace(&call_id, "ID"),
        text_of(&unknown).replace(&never, "ID"),
        "B is told what an unknown call gets"
    );

    let task = |id: &str| json!({"taskId": id});
    let (_, a_task) = stateless(&url, TOKEN_A, "tasks/get", task(&call_id)).await;
    assert!(
        a_task.get("result").is_some(),
        "A sees its call as a task: {a_task}"
    );
    for method in ["tasks/get", "tasks/cancel"] {
        let (_, by_b) = stateless(&url, TOKEN_B, method, task(&call_id)).await;
        let (_, unknown) = stateless(&url, TOKEN_B, method, task(&never)).await;
        assert!(by_b.get("error").is_some(), "{method}: {by_b}");
        assert_eq!(
            by_b["error"]["message"]
                .as_str()
                .unwrap()
                .replace(&call_id, "ID"),
            unknown["error"]["message"]
                .as_str()
                .unwrap()
                .replace(&never, "ID"),
            "{method}"
        );
    }
    let update = json!({"taskId": call_id, "inputResponses": {
        "ask_user_question": {"action": "accept", "content": {"q01": "SQLite"}}}});
    let (_, by_b) = stateless(&url, TOKEN_B, "tasks/update", update).await;
    assert!(
        by_b["error"]["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("no task")),
        "{by_b}"
    );
}

/// POSTs a handshake-era message with `token` (and the session, when given): the status and the
/// session id the response names.
async fn handshake(
    url: &str,
    token: &str,
    session: Option<&str>,
    method: reqwest::Method,
    body: Option<Value>,
) -> (u16, Option<String>) {
    let mut request = reqwest::Client::new()
        .request(method, url)
        .bearer_auth(token)
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream");
    if let Some(session) = session {
        request = request
            .header("Mcp-Session-Id", session)
            .header("MCP-Protocol-Version", "2025-06-18");
    }
    if let Some(body) = body {
        request = request.body(body.to_string());
    }
    let response = request.send().await.unwrap();
    let named = response
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let status = response.status().as_u16();
    let _ = response.text().await;
    (status, named)
}

/// A's handshake session is A's: B's requests with its id, a `DELETE` among them, get the
/// `404` an unknown session gets, and A's session goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_principals_session_is_not_found() {
    let dir = tempfile::tempdir().unwrap();
    let (url, _stop) = serve(&dir).await;
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "a", "version": "1"}}});
    let (status, session) =
        handshake(&url, TOKEN_A, None, reqwest::Method::POST, Some(initialize)).await;
    assert_eq!(status, 200);
    let session = session.expect("a session id");
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    let (by_b, _) = handshake(
        &url,
        TOKEN_B,
        Some(&session),
        reqwest::Method::POST,
        Some(list.clone()),
    )
    .await;
    assert_eq!(by_b, 404);
    let (deleted_by_b, _) =
        handshake(&url, TOKEN_B, Some(&session), reqwest::Method::DELETE, None).await;
    assert_eq!(deleted_by_b, 404);
    let (unknown, _) = handshake(
        &url,
        TOKEN_B,
        Some("no-such-session"),
        reqwest::Method::DELETE,
        None,
    )
    .await;
    assert_eq!(unknown, 404);
    let (by_a, _) = handshake(
        &url,
        TOKEN_A,
        Some(&session),
        reqwest::Method::POST,
        Some(list),
    )
    .await;
    assert_eq!(by_a, 200, "A's session goes on");
}
