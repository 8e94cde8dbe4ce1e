//! What real MCP clients (Claude Code, Codex CLI, Gemini CLI, MCP Inspector) need from the server,
//! through an rmcp client, raw JSON-RPC over stdio and raw HTTP: a client's time limit never loses
//! a timed question, the companion without a call id, elicitation requests in the client's own
//! protocol revision, no SSE priming event, and what an inbox reads of a session (its client, its
//! working directory) and answers through it.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::fmt::Write as _;
use std::time::Duration;

use ask_user_mcp::companion::nothing_waiting;
use ask_user_mcp::{AskUserMcp, McpOptions, McpSessionInfo};
use common::{ClientSetup, Harness, Reply, one_question, texts};
use pending_answer::{Accepted, LateRefusal, QuestionDesk as _, Submission};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt};
use tool_ask_user::{AskUserConfig, PENDING_NOTICE_COMPANION};
use user_questions::{AnswerBatch, AnswerItem, CallId, Provenance};

/// The first `tool/result` the session logs, once it is there (polled every 10 ms of the clock).
async fn first_result(harness: &Harness) -> Value {
    for _ in 0..500 {
        if let Some(path) = harness.logs().first() {
            let events = common::events(path);
            if let Some(result) = common::results_of(&events).first() {
                return result["data"].clone();
            }
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("no tool/result was logged");
}

fn result_text(data: &Value) -> String {
    data["message"]["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_owned()
}

fn sqlite() -> AnswerBatch {
    AnswerBatch::new([AnswerItem::selected("db", ["SQLite"])])
}

/// The companion's text blocks for `arguments`.
async fn companion(harness: &Harness, arguments: Value) -> Vec<String> {
    let result = harness.call("ask_user_question_answer", arguments).await;
    assert_eq!(result.is_error, Some(false), "{result:?}");
    texts(&result)
}

/// Codex cuts a tool call off at `tool_timeout_sec` (60 s by default) with a cancellation whose
/// reason names no person (rmcp's is `request timeout`). The timed call then ends as its window
/// closing does, at once: pending, logged, continued. The model never saw that result, so the
/// companion without a call id names the pending call, and hands over its answer once an inbox
/// answered it through the live session.
#[tokio::test(start_paused = true)]
async fn a_client_timeout_ends_a_timed_call_pending_and_the_question_stays_answerable() {
    let harness = Harness::start(Some(AskUserConfig::timed_secs(120)), false).await;
    let call = harness.send_call("ask_user_question", one_question()).await;
    tokio::time::sleep(Duration::from_mins(1)).await;
    let cancelled_at = tokio::time::Instant::now();
    call.cancel(Some("request timeout".to_owned()))
        .await
        .unwrap();
    let data = first_result(&harness).await;
    assert!(
        cancelled_at.elapsed() < Duration::from_secs(1),
        "pending at once, not when the 120 s window runs out: {:?}",
        cancelled_at.elapsed()
    );
    let pending: Value = serde_json::from_str(&result_text(&data)).unwrap();
    assert_eq!(pending["pending"], true, "{pending}");
    assert_eq!(pending["message"], PENDING_NOTICE_COMPANION);
    let call_id = pending["callId"].as_str().unwrap().to_owned();
    assert_eq!(data["message"]["isError"], false);

    // Nothing waits yet; the text names the pending call, whose id the model never saw.
    assert_eq!(
        companion(&harness, json!({})).await,
        [nothing_waiting(&[call_id.as_str()])]
    );

    // An inbox answers it through the live session; the companion without a call id returns it.
    let queued = harness
        .server
        .desk()
        .submit(Submission::new(
            &harness.log,
            CallId::from(call_id.as_str()),
            sqlite(),
            Provenance::human("test-inbox"),
        ))
        .await
        .unwrap();
    let Accepted::Queued(queued) = queued else {
        panic!("not queued in the live session: {queued:?}");
    };
    assert_eq!(queued.call_id.as_str(), call_id);
    let fetched = companion(&harness, json!({})).await;
    assert_eq!(fetched.len(), 1, "{fetched:?}");
    let reply: Value = serde_json::from_str(&fetched[0]).unwrap();
    assert_eq!(reply["kind"], "answer_to_pending_question");
    assert_eq!(reply["callId"], call_id.as_str());
    assert_eq!(
        reply["answers"],
        json!([{"id": "db", "selected": ["SQLite"]}])
    );

    // Settled exactly once: nothing waits or is pending any more; by its id it repeats the reply.
    assert_eq!(companion(&harness, json!({})).await, [nothing_waiting(&[])]);
    let again = companion(&harness, json!({"callId": call_id})).await;
    assert_eq!(serde_json::from_str::<Value>(&again[0]).unwrap(), reply);
    let state = ask_user_testkit::logs::full_fold(&harness.logs()[0]).state;
    assert_eq!(state.view().settled.len(), 1);
    assert!(state.view().active.is_empty());
}

/// A cancellation without a reason while the client's form is open keeps the question too: the
/// call ends pending and its form is withdrawn (nothing stays on the person's screen while the
/// model works on); an answer the person sent as it went (it crossed the withdrawal) becomes a
/// late answer that the companion hands over without a call id.
#[tokio::test(start_paused = true)]
async fn a_cancellation_without_a_reason_keeps_the_question_and_withdraws_its_form() {
    let mut harness = Harness::start(Some(AskUserConfig::timed_secs(300)), true).await;
    harness.reply(Reply::Hold);
    let call = harness.send_call("ask_user_question", one_question()).await;
    let form = harness.held.recv().await.unwrap();
    call.cancel(None).await.unwrap();
    let data = first_result(&harness).await;
    assert!(
        result_text(&data).starts_with(r#"{"pending":true"#),
        "{data}"
    );
    for _ in 0..100 {
        if *harness.handler.withdrawn.lock().unwrap() > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(
        *harness.handler.withdrawn.lock().unwrap(),
        1,
        "the form is withdrawn"
    );

    drop(form);
    // The question stays, pending, for the page, a phone or the shell.
    let call_id: Value = serde_json::from_str(&result_text(&data)).unwrap();
    assert_eq!(
        companion(&harness, json!({})).await,
        [nothing_waiting(&[call_id["callId"].as_str().unwrap()])]
    );
}

/// The window closes: the call returns pending and its form is withdrawn
/// (`notifications/cancelled` of the form's request). An answer that crosses the withdrawal (the
/// client sent it before the notification reached it) settles nothing: the question stays
/// pending for the page, a phone and the shell.
#[tokio::test]
async fn a_timed_form_is_withdrawn_when_its_window_closes_and_a_crossed_answer_settles_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let server =
        AskUserMcp::new(McpOptions::new(dir.path()).with_tool(Some(AskUserConfig::timed_secs(1))))
            .unwrap();
    let mut raw = Raw::start(server);
    raw.send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {"elicitation": {"form": {}}},
        "clientInfo": {"name": "raw", "version": "1"}}}),
    )
    .await;
    let _ = raw.recv().await;
    raw.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .await;
    raw.send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "ask_user_question", "arguments": one_question()}}))
        .await;
    let mut form = None;
    let mut withdrawn = false;
    let mut pending = None;
    while form.is_none() || pending.is_none() || !withdrawn {
        let message = raw.recv().await;
        if message["method"] == "elicitation/create" {
            form = Some(message["id"].clone());
        } else if message["method"] == "notifications/cancelled" {
            assert_eq!(message["params"]["requestId"], *form.as_ref().unwrap());
            withdrawn = true;
        } else if message["id"] == 2 {
            pending = Some(message);
        }
    }
    let pending = pending.unwrap();
    let text = pending["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.starts_with(r#"{"pending":true"#), "{pending}");
    // The answer the client had sent before the withdrawal reached it.
    raw.send(json!({"jsonrpc": "2.0", "id": form.unwrap(),
        "result": {"action": "accept", "content": {"q01": "SQLite"}}}))
        .await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    raw.send(json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "ask_user_question_answer", "arguments": {}}}))
        .await;
    let message = loop {
        let message = raw.recv().await;
        if message["id"] == 3 {
            break message;
        }
    };
    let waiting = message["result"]["content"][0]["text"].as_str().unwrap();
    assert!(
        waiting.starts_with("No late answer is waiting. Still pending: call_"),
        "{waiting}"
    );
}

/// A blocking (legacy) call ends with its request, whatever the reason: there is no window to
/// close and no way back for a late answer.
#[tokio::test(start_paused = true)]
async fn a_blocking_call_ends_with_its_request_whatever_the_reason() {
    let mut harness = Harness::start(None, true).await;
    harness.reply(Reply::Hold);
    let call = harness.send_call("ask_user_question", one_question()).await;
    let _form = harness.held.recv().await.unwrap();
    call.cancel(Some("request timeout".to_owned()))
        .await
        .unwrap();
    let data = first_result(&harness).await;
    assert_eq!(data["error"]["code"], "ASK_ABORTED", "{data}");
}

/// Without a call id the companion returns every reply waiting in its session, in the order they
/// were queued, one text block each, admitting each one (which settles its question).
#[tokio::test(start_paused = true)]
async fn the_companion_without_a_call_id_returns_every_waiting_reply_in_order() {
    let harness = Harness::start(Some(AskUserConfig::timed_secs(30)), false).await;
    let mut call_ids = Vec::new();
    for _ in 0..2 {
        let result = harness.call("ask_user_question", one_question()).await;
        let pending: Value = serde_json::from_str(&texts(&result)[0]).unwrap();
        call_ids.push(pending["callId"].as_str().unwrap().to_owned());
    }
    assert_eq!(
        companion(&harness, json!({"callId": null})).await,
        [nothing_waiting(&[
            call_ids[0].as_str(),
            call_ids[1].as_str()
        ])]
    );
    // The second call is answered first.
    for (call_id, label) in [(&call_ids[1], "SQLite"), (&call_ids[0], "PostgreSQL")] {
        harness
            .server
            .desk()
            .submit(Submission::new(
                &harness.log,
                CallId::from(call_id.as_str()),
                AnswerBatch::new([AnswerItem::selected("db", [label])]),
                Provenance::human("test-inbox"),
            ))
            .await
            .unwrap();
    }
    let fetched = companion(&harness, json!({})).await;
    let replies: Vec<Value> = fetched
        .iter()
        .map(|text| serde_json::from_str(text).unwrap())
        .collect();
    let order: Vec<(&str, &str)> = replies
        .iter()
        .map(|reply| {
            (
                reply["callId"].as_str().unwrap(),
                reply["answers"][0]["selected"][0].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        order,
        [
            (call_ids[1].as_str(), "SQLite"),
            (call_ids[0].as_str(), "PostgreSQL")
        ]
    );
    let state = ask_user_testkit::logs::full_fold(&harness.logs()[0]).state;
    assert_eq!(state.view().settled.len(), 2);
    assert_eq!(companion(&harness, json!({})).await, [nothing_waiting(&[])]);
    // An empty callId is refused with a hint.
    let empty = harness
        .call("ask_user_question_answer", json!({"callId": ""}))
        .await;
    assert_eq!(empty.is_error, Some(true));
    assert!(texts(&empty)[0].contains("omit it"), "{:?}", texts(&empty));
}

/// What an inbox reads of a session: its log, its client's name and version and, when the client
/// declared `roots`, its first `file://` root as a path, asked once on the first tool call; until
/// then (and for a client without roots) the server's own working directory.
#[tokio::test(start_paused = true)]
async fn session_info_names_the_log_the_client_and_its_first_root() {
    let harness = Harness::start_as(
        tempfile::tempdir().unwrap(),
        Some(AskUserConfig::timed_secs(30)),
        ClientSetup::new(false).with_roots(&[
            "https://example.com/not-a-path",
            "file:///tmp/my%20project",
            "file:///elsewhere",
        ]),
    )
    .await;
    harness.client.peer().list_all_tools().await.unwrap();
    let here = std::env::current_dir().unwrap().display().to_string();
    assert_eq!(
        harness.server.session_info(&harness.session),
        Some(McpSessionInfo {
            log: harness.log.clone(),
            client: Some("test-client 1.0".to_owned()),
            cwd: Some(here.clone()),
        }),
        "roots are asked on the first tool call"
    );
    harness.call("ask_user_question", one_question()).await;
    let mut info = None;
    for _ in 0..100 {
        info = harness.server.session_info(&harness.session);
        if info
            .as_ref()
            .is_some_and(|info| info.cwd.as_ref() != Some(&here))
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(info.unwrap().cwd.as_deref(), Some("/tmp/my project"));
    assert_eq!(
        harness
            .server
            .session_info(&user_questions::SessionId::from("session-unknown")),
        None
    );

    // A second session of the same server, whose client declares no roots.
    let other = common::connect_as(&harness.server, ClientSetup::new(false)).await;
    let params = rmcp::model::CallToolRequestParams::new("ask_user_question")
        .with_arguments(one_question().as_object().cloned().unwrap());
    other.client.peer().call_tool(params).await.unwrap();
    let info = harness.server.session_info(&other.session).unwrap();
    assert_eq!(info.log, other.log);
    assert_ne!(info.log, harness.log);
    assert_eq!(info.cwd, Some(here));
    // Once its client is gone, the session is no longer listed.
    other.client.cancel().await.unwrap();
    let mut gone = false;
    for _ in 0..100 {
        tokio::time::sleep(Duration::from_millis(10)).await;
        if harness.server.session_info(&other.session).is_none() {
            gone = true;
            break;
        }
    }
    assert!(gone, "a closed session is not listed");
}

/// The server desk's refusals are typed: no session of that log, a call that is not waiting,
/// and a log another writer holds (refused at once: the person may answer again; nothing polls
/// for the lock).
#[tokio::test(start_paused = true)]
async fn the_desks_refusals_are_typed() {
    let harness = Harness::start(Some(AskUserConfig::timed_secs(30)), false).await;
    let refusal = harness
        .server
        .desk()
        .submit(Submission::new(
            "mcp-0-unknown.jsonl",
            CallId::from("call_x"),
            sqlite(),
            Provenance::human("test-inbox"),
        ))
        .await
        .unwrap_err();
    assert!(
        matches!(&refusal, LateRefusal::UnknownSession(log) if log == "mcp-0-unknown.jsonl"),
        "{refusal:?}"
    );
    let result = harness.call("ask_user_question", one_question()).await;
    let pending: Value = serde_json::from_str(&texts(&result)[0]).unwrap();
    let call_id = CallId::from(pending["callId"].as_str().unwrap());
    let refusal = harness
        .server
        .desk()
        .submit(Submission::new(
            &harness.log,
            CallId::from("call_not_asked"),
            sqlite(),
            Provenance::human("test-inbox"),
        ))
        .await
        .unwrap_err();
    assert!(matches!(refusal, LateRefusal::NotWaiting(_)), "{refusal:?}");

    // Another writer holds the log: refused at once, with nothing kept.
    let (store, name) = session_log::JsonlStore::for_file(&harness.logs()[0]).unwrap();
    let other =
        ask_user_host::HostRuntime::new(store, Some(AskUserConfig::timed_secs(30))).unwrap();
    let (holder, _) = other
        .open(&name, ask_user_host::SessionOptions::named("holder"))
        .unwrap();
    let started = tokio::time::Instant::now();
    let refusal = harness
        .server
        .desk()
        .submit(Submission::new(
            &harness.log,
            call_id.clone(),
            sqlite(),
            Provenance::human("test-inbox"),
        ))
        .await
        .unwrap_err();
    let waited = started.elapsed();
    assert!(
        matches!(&refusal, LateRefusal::Unavailable(_)),
        "{refusal:?}"
    );
    assert_eq!(waited, Duration::ZERO);
    drop(holder);
    harness
        .server
        .desk()
        .submit(Submission::new(
            &harness.log,
            call_id.clone(),
            sqlite(),
            Provenance::human("test-inbox"),
        ))
        .await
        .unwrap();
}

/// A raw JSON-RPC client on the stdio transport.
struct Raw {
    write: tokio::io::WriteHalf<tokio::io::DuplexStream>,
    lines: tokio::io::Lines<tokio::io::BufReader<tokio::io::ReadHalf<tokio::io::DuplexStream>>>,
}

impl Raw {
    fn start(server: AskUserMcp) -> Self {
        let (client, server_io) = tokio::io::duplex(1 << 16);
        let (server_read, server_write) = tokio::io::split(server_io);
        tokio::spawn(async move { server.serve_io(server_read, server_write).await });
        let (read, write) = tokio::io::split(client);
        Self {
            write,
            lines: tokio::io::BufReader::new(read).lines(),
        }
    }

    async fn send(&mut self, message: Value) {
        self.write
            .write_all(format!("{message}\n").as_bytes())
            .await
            .unwrap();
    }

    async fn recv(&mut self) -> Value {
        let line = tokio::time::timeout(Duration::from_secs(10), self.lines.next_line())
            .await
            .expect("a message in time")
            .unwrap()
            .unwrap();
        serde_json::from_str(&line).unwrap()
    }
}

/// The `elicitation/create` params a client of `protocol` receives for a blocking call, which it
/// then answers; checks that the answer comes back as the call's result.
async fn elicitation_params(protocol: &str, capability: Value) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let server = AskUserMcp::new(McpOptions::new(dir.path())).unwrap();
    let mut raw = Raw::start(server);
    raw.send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": protocol,
        "capabilities": {"elicitation": capability},
        "clientInfo": {"name": "raw", "version": "1"}}}),
    )
    .await;
    let initialized = raw.recv().await;
    assert_eq!(initialized["result"]["protocolVersion"], protocol);
    raw.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .await;
    raw.send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "ask_user_question", "arguments": one_question()}}))
        .await;
    let request = loop {
        let message = raw.recv().await;
        if message["method"] == "elicitation/create" {
            break message;
        }
    };
    raw.send(json!({"jsonrpc": "2.0", "id": request["id"],
        "result": {"action": "accept", "content": {"q01": "SQLite"}}}))
        .await;
    let result = loop {
        let message = raw.recv().await;
        if message["id"] == 2 {
            break message;
        }
    };
    assert_eq!(
        result["result"]["content"][0]["text"],
        r#"{"answers":[{"id":"db","selected":["SQLite"]}]}"#,
        "{result}"
    );
    request["params"].clone()
}

/// `mode` is a 2025-11-25 field of `elicitation/create`: a client that negotiated 2025-06-18 gets
/// the request without it, as its revision spells it; a 2025-11-25 client gets `mode: "form"`.
#[tokio::test]
async fn elicitation_requests_carry_mode_only_for_clients_that_know_it() {
    let old = elicitation_params("2025-06-18", json!({})).await;
    assert!(old.get("mode").is_none(), "{old}");
    assert_eq!(old["message"], ask_user_mcp::form::FORM_MESSAGE);
    assert_eq!(old["requestedSchema"]["type"], "object");
    let new = elicitation_params("2025-11-25", json!({"form": {}})).await;
    assert_eq!(new["mode"], "form", "{new}");
    assert!(
        new["requestedSchema"]["properties"]["q01"].is_object(),
        "{new}"
    );
}

/// One HTTP/1.1 request on a fresh connection; the response's head and (de-chunked) body.
async fn http(
    addr: std::net::SocketAddr,
    headers: &[(&str, &str)],
    body: &Value,
) -> (String, String) {
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let body = body.to_string();
    let mut request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (name, value) in headers {
        write!(request, "{name}: {value}\r\n").unwrap();
    }
    request.push_str("\r\n");
    request.push_str(&body);
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut response))
        .await
        .expect("the response ends")
        .unwrap();
    let response = String::from_utf8(response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").unwrap();
    let body = if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        dechunk(body)
    } else {
        body.to_owned()
    };
    (head.to_owned(), body)
}

fn dechunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let size = usize::from_str_radix(size.trim(), 16).unwrap();
        if size == 0 {
            break;
        }
        out.push_str(&rest[..size]);
        body = &rest[size + 2..];
    }
    out
}

fn header<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.lines().find_map(|line| {
        let (key, value) = line.split_once(':')?;
        key.eq_ignore_ascii_case(name).then(|| value.trim())
    })
}

/// Checks an SSE body: no priming event (an `id: 0` with an empty `data:`, a `retry:`), and every
/// event carries a JSON-RPC message. Returns the messages.
#[track_caller]
fn sse_messages(body: &str) -> Vec<Value> {
    let mut messages = Vec::new();
    for event in body.replace("\r\n", "\n").split("\n\n") {
        let lines: Vec<&str> = event
            .lines()
            .filter(|line| !line.is_empty() && !line.starts_with(':'))
            .collect();
        if lines.is_empty() {
            continue;
        }
        for line in &lines {
            assert!(!line.starts_with("retry:"), "a priming retry: {body:?}");
            assert_ne!(line.trim(), "id: 0", "a priming event id: {body:?}");
        }
        let data: String = lines
            .iter()
            .filter_map(|line| line.strip_prefix("data:"))
            .map(str::trim)
            .collect();
        assert!(!data.is_empty(), "an event without data: {body:?}");
        messages.push(serde_json::from_str(&data).unwrap());
    }
    messages
}

/// rmcp 3.11 starts every SSE stream with a priming event (`id: 0`, an empty `data:`,
/// `retry: 3000`) that Gemini CLI cannot parse; this server keeps no event store, so it sends
/// none: neither on the response to `initialize` nor on a later request's stream.
#[tokio::test]
async fn sse_responses_carry_no_priming_event() {
    let dir = tempfile::tempdir().unwrap();
    let server = AskUserMcp::new(McpOptions::new(dir.path())).unwrap();
    let listener = AskUserMcp::bind_http("127.0.0.1:0".parse().unwrap(), false)
        .await
        .unwrap();
    let addr = listener.local_addr().unwrap();
    let cancel = tokio_util::sync::CancellationToken::new();
    let serving = tokio::spawn({
        let cancel = cancel.clone();
        async move { server.serve_http(listener, cancel).await }
    });
    let (head, body) = http(
        addr,
        &[],
        &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "gemini-cli-like", "version": "1"}}}),
    )
    .await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert_eq!(header(&head, "content-type"), Some("text/event-stream"));
    let messages = sse_messages(&body);
    assert_eq!(messages.len(), 1, "{body:?}");
    assert_eq!(messages[0]["result"]["protocolVersion"], "2025-06-18");
    let session = header(&head, "mcp-session-id").unwrap().to_owned();
    let session_headers = [
        ("Mcp-Session-Id", session.as_str()),
        ("MCP-Protocol-Version", "2025-06-18"),
    ];
    let (head, _) = http(
        addr,
        &session_headers,
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    )
    .await;
    assert!(head.starts_with("HTTP/1.1 202"), "{head}");
    let (head, body) = http(
        addr,
        &session_headers,
        &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
    )
    .await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    let messages = sse_messages(&body);
    assert_eq!(messages.len(), 1, "{body:?}");
    assert_eq!(messages[0]["id"], 2);
    assert_eq!(
        messages[0]["result"]["tools"][0]["name"],
        "ask_user_question"
    );
    cancel.cancel();
    serving.await.unwrap().unwrap();
}

/// The versions a `server/discover` probe with `capabilities` is offered by a server in `tool`'s
/// mode.
async fn discovered_versions(tool: Option<AskUserConfig>, capabilities: Value) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    let server = AskUserMcp::new(McpOptions::new(dir.path()).with_tool(tool)).unwrap();
    let mut raw = Raw::start(server);
    raw.send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": capabilities,
        }}}),
    )
    .await;
    let reply = raw.recv().await;
    reply["result"]["supportedVersions"]
        .as_array()
        .unwrap_or_else(|| panic!("{reply}"))
        .iter()
        .map(|v| v.as_str().unwrap().to_owned())
        .collect()
}

/// A client that shows forms sees a timed question's form, and sees it go when the window
/// closes, only in the handshake era (a stateless round cannot be withdrawn; a task's form is
/// read only when the client polls, which Claude Code does not while its dialog is up): its probe
/// is offered the handshake versions, and the SDKs' `auto` negotiation falls back to
/// `initialize`. A client without forms, with or without tasks, and every client of a blocking
/// server keep the stateless era.
#[tokio::test]
async fn a_timed_server_offers_a_client_with_forms_the_handshake_era() {
    let timed = || Some(AskUserConfig::timed_secs(60));
    let forms = json!({"elicitation": {"form": {}}});
    let tasks = json!({"extensions": {"io.modelcontextprotocol/tasks": {}}});
    let forms_and_tasks = json!({"elicitation": {"form": {}},
        "extensions": {"io.modelcontextprotocol/tasks": {}}});
    for capabilities in [forms.clone(), forms_and_tasks] {
        let versions = discovered_versions(timed(), capabilities.clone()).await;
        assert_eq!(versions.last().unwrap(), "2025-11-25", "{capabilities}");
        assert!(
            !versions.iter().any(|v| v.as_str() >= "2026"),
            "{versions:?}"
        );
    }
    for (tool, capabilities) in [(timed(), tasks), (timed(), json!({})), (None, forms)] {
        let versions = discovered_versions(tool, capabilities.clone()).await;
        assert_eq!(versions.last().unwrap(), "2026-07-28", "{capabilities}");
    }
}
