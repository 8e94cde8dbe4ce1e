//! The stateless revision (2026-07-28) with rmcp's own client in process: `server/discover`,
//! forms through multi round-trip requests (SEP-2322) accepted, declined and cancelled, a round
//! that writes nothing, sealed states that are changed, sent with other arguments or sent twice
//! refused with nothing written, and timed calls that hold their window without a form.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use ask_user_mcp::{AskUserMcp, McpOptions};
use common::{Reply, accept, action, connect_stateless, events, logs_in, texts};
use pending_answer::QuestionDesk as _;
use rmcp::model::{CallToolRequestParams, CallToolResponse, ElicitationAction, ProtocolVersion};
use serde_json::{Value, json};
use tool_ask_user::AskUserConfig;

fn question() -> Value {
    json!({"questions": [{
        "id": "db", "question": "Which database?", "header": "Database",
        "options": [{"label": "PostgreSQL"}, {"label": "SQLite"}],
    }]})
}

fn params(arguments: &Value) -> CallToolRequestParams {
    CallToolRequestParams::new("ask_user_question")
        .with_arguments(arguments.as_object().cloned().unwrap())
}

fn server(dir: &tempfile::TempDir, tool: Option<AskUserConfig>) -> AskUserMcp {
    // Timed forms in this era, through tasks (by default such a client is offered the handshake).
    AskUserMcp::new(
        McpOptions::new(dir.path())
            .with_tool(tool)
            .with_stateless_forms(true),
    )
    .unwrap()
}

/// The events of the one log of `dir` (none: an empty list).
fn logged(dir: &tempfile::TempDir) -> Vec<Value> {
    logs_in(dir.path())
        .first()
        .map(|log| events(log))
        .unwrap_or_default()
}

fn kinds(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| e["type"].as_str().map(str::to_owned))
        .collect()
}

#[tokio::test]
async fn a_stateless_client_discovers_the_server_and_lists_the_tools() {
    let dir = tempfile::tempdir().unwrap();
    let server = server(&dir, None);
    let connected = connect_stateless(&server, true).await;
    let info = connected.client.peer_info().unwrap();
    assert_eq!(info.protocol_version, ProtocolVersion::V_2026_07_28);
    let tools = connected.client.list_all_tools().await.unwrap();
    assert_eq!(tools.len(), 1);
    assert_eq!(tools[0].name, "ask_user_question");
}

/// The form goes in an `InputRequiredResult`; rmcp's client shows it (its elicitation handler)
/// and calls again with the answer: the call's result is the answers, logged once.
#[tokio::test]
async fn a_form_is_answered_through_a_multi_round_trip_request() {
    let dir = tempfile::tempdir().unwrap();
    let server = server(&dir, None);
    let connected = connect_stateless(&server, true).await;
    connected
        .handler
        .reply(Reply::Now(accept(json!({"q01": "SQLite"}))));
    let result = connected
        .client
        .call_tool(params(&question()))
        .await
        .unwrap();
    assert_eq!(
        texts(&result),
        [r#"{"answers":[{"id":"db","selected":["SQLite"]}]}"#]
    );
    let forms = connected.handler.forms.lock().unwrap().clone();
    assert_eq!(forms.len(), 1, "one form shown");
    let events = logged(&dir);
    let kinds = kinds(&events);
    assert_eq!(
        kinds.iter().filter(|k| *k == "tool/call").count(),
        1,
        "{kinds:?}"
    );
    assert_eq!(
        kinds.iter().filter(|k| *k == "tool/result").count(),
        1,
        "{kinds:?}"
    );
}

#[tokio::test]
async fn a_declined_or_cancelled_form_is_read_as_in_the_handshake_era() {
    let dir = tempfile::tempdir().unwrap();
    let server = server(&dir, None);
    let connected = connect_stateless(&server, true).await;
    connected
        .handler
        .reply(Reply::Now(action(ElicitationAction::Decline)));
    let declined = connected
        .client
        .call_tool(params(&question()))
        .await
        .unwrap();
    assert_eq!(declined.is_error, Some(true));
    assert!(texts(&declined)[0].contains("declined"), "{declined:?}");
    connected
        .handler
        .reply(Reply::Now(action(ElicitationAction::Cancel)));
    let cancelled = connected
        .client
        .call_tool(params(&question()))
        .await
        .unwrap();
    assert_eq!(cancelled.is_error, Some(true));
    assert_eq!(
        texts(&cancelled),
        ["Error: The person chose not to answer."]
    );
}

/// The first round of a call of the question: its form and sealed state.
async fn first_round(
    peer: &rmcp::service::Peer<rmcp::RoleClient>,
) -> rmcp::model::InputRequiredResult {
    let CallToolResponse::InputRequired(round) =
        peer.call_tool_once(params(&question())).await.unwrap()
    else {
        panic!("the first round asks for input");
    };
    round
}

/// The first round writes nothing: the form and a sealed state only. A state changed, sent with
/// other arguments or without an answer is refused, and nothing is written; the right one is
/// answered once, and sent again it is refused, the log as it was.
#[tokio::test]
async fn a_changed_or_replayed_state_is_refused_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let server = server(&dir, None);
    let connected = connect_stateless(&server, true).await;
    let peer = connected.client.peer();
    let round = first_round(peer).await;
    assert!(logs_in(dir.path()).is_empty(), "round one writes nothing");
    let form = &round.input_requests.as_ref().unwrap()["ask_user_question"];
    let form = serde_json::to_value(form).unwrap();
    assert_eq!(form["method"], "elicitation/create");
    assert!(
        form["params"]["requestedSchema"]["properties"]["q01"].is_object(),
        "{form}"
    );
    let state = round.request_state.clone().unwrap();

    let mut answer = rmcp::model::InputResponses::new();
    answer.insert(
        "ask_user_question".to_owned(),
        json!({"action": "accept", "content": {"q01": "PostgreSQL"}}),
    );
    let retry = |arguments: &Value, state: &str, responses: Option<rmcp::model::InputResponses>| {
        let mut request = params(arguments);
        request.request_state = Some(state.to_owned());
        request.input_responses = responses;
        peer.call_tool_once(request)
    };
    let refused = |outcome: Result<CallToolResponse, rmcp::ServiceError>| match outcome {
        Err(rmcp::ServiceError::McpError(error)) => error.message.to_string(),
        other => panic!("expected a refusal, got {other:?}"),
    };

    let mut changed = state.clone().into_bytes();
    let at = changed.len() - 3;
    changed[at] = if changed[at] == b'A' { b'B' } else { b'A' };
    let changed = String::from_utf8(changed).unwrap();
    let message = refused(retry(&question(), &changed, Some(answer.clone())).await);
    assert!(
        message.contains("does not belong to this call"),
        "{message}"
    );
    let mut other = question();
    other["questions"][0]["question"] = json!("Which database, really?");
    let message = refused(retry(&other, &state, Some(answer.clone())).await);
    assert!(
        message.contains("does not belong to this call"),
        "{message}"
    );
    let message = refused(retry(&question(), &state, None).await);
    assert!(message.contains("carries no answer"), "{message}");
    assert!(
        logs_in(dir.path()).is_empty(),
        "nothing written by a refused round"
    );

    let CallToolResponse::Complete(done) = retry(&question(), &state, Some(answer.clone()))
        .await
        .unwrap()
    else {
        panic!("the second round completes");
    };
    assert_eq!(
        texts(&done),
        [r#"{"answers":[{"id":"db","selected":["PostgreSQL"]}]}"#]
    );
    let before = logged(&dir);
    let message = refused(retry(&question(), &state, Some(answer)).await);
    assert!(message.contains("was used already"), "{message}");
    assert_eq!(logged(&dir), before, "a replay writes nothing");
}

/// The same second round sent twice at once (a client that retried): one runs the call, the
/// other is told the state was used already, as a replay after it is; one call in the log.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_duplicates_of_a_second_round_are_told_it_was_used() {
    let dir = tempfile::tempdir().unwrap();
    let server = server(&dir, None);
    let connected = connect_stateless(&server, true).await;
    let peer = connected.client.peer();
    let round = first_round(peer).await;
    let state = round.request_state.clone().unwrap();
    let mut answer = rmcp::model::InputResponses::new();
    answer.insert(
        "ask_user_question".to_owned(),
        json!({"action": "accept", "content": {"q01": "SQLite"}}),
    );
    let retry = || {
        let mut request = params(&question());
        request.request_state = Some(state.clone());
        request.input_responses = Some(answer.clone());
        peer.call_tool_once(request)
    };
    let (one, two) = tokio::join!(retry(), retry());
    let mut answered = 0;
    for outcome in [one, two] {
        match outcome {
            Ok(CallToolResponse::Complete(done)) => {
                assert_eq!(
                    texts(&done),
                    [r#"{"answers":[{"id":"db","selected":["SQLite"]}]}"#]
                );
                answered += 1;
            }
            Err(rmcp::ServiceError::McpError(error)) => {
                assert!(error.message.contains("was used already"), "{error:?}");
            }
            other => panic!("neither the answer nor the refusal: {other:?}"),
        }
    }
    assert_eq!(answered, 1);
    let calls = kinds(&logged(&dir))
        .into_iter()
        .filter(|k| k == "tool/call")
        .count();
    assert_eq!(calls, 1);
}

/// A timed call of the stateless revision sends no form (a form in a round cannot be taken back
/// when the window ends; a client that shows forms is offered the handshake era instead, see
/// `clients.rs`): it holds its window as in the handshake era, and returns pending.
#[tokio::test(start_paused = true)]
async fn a_timed_call_holds_its_window_and_goes_pending() {
    let dir = tempfile::tempdir().unwrap();
    let server = server(&dir, Some(AskUserConfig::timed_secs(5)));
    let connected = connect_stateless(&server, false).await;
    let result = connected
        .client
        .call_tool(params(&question()))
        .await
        .unwrap();
    let text = &texts(&result)[0];
    assert!(text.starts_with(r#"{"pending":true"#), "{text}");
    assert!(
        connected.handler.forms.lock().unwrap().is_empty(),
        "no form"
    );
    let call_id: Value = serde_json::from_str(text).unwrap();
    let call_id = call_id["callId"].as_str().unwrap().to_owned();
    // The log's request header lists the tools the model saw: the companion too.
    let header = logged(&dir)
        .into_iter()
        .find(|e| e["type"] == "request/header")
        .unwrap();
    let names: Vec<&str> = header["data"]["header"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(names, ["ask_user_question", "ask_user_question_answer"]);
    // The companion finds it, still pending.
    let again = connected
        .client
        .call_tool(
            CallToolRequestParams::new("ask_user_question_answer")
                .with_arguments(json!({"callId": call_id}).as_object().cloned().unwrap()),
        )
        .await
        .unwrap();
    assert!(
        texts(&again)[0].starts_with(r#"{"pending":true"#),
        "{again:?}"
    );
}

/// One stateless `tools/call` over streamable HTTP to `url`: the JSON-RPC message of the reply
/// (a JSON body, or the first `data:` of an event stream).
async fn post_call(url: &str, params: Value) -> Value {
    let mut params = params;
    let name = params["name"].clone();
    params["_meta"] = ask_user_testkit::mcp::stateless_meta("raw-http");
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params});
    let response = reqwest::Client::new()
        .post(url)
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", "2026-07-28")
        // SEP-2243's standard headers, which the revision requires.
        .header("Mcp-Method", "tools/call")
        .header("Mcp-Name", name.as_str().unwrap_or_default())
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    let text = response.text().await.unwrap();
    ask_user_testkit::mcp::reply_message(&text).unwrap_or_else(|| panic!("not JSON-RPC: {text}"))
}

/// A server over the state directory `dir` on streamable HTTP, on loopback: its URL, and what
/// stops it when dropped.
async fn serve_on_loopback(dir: &tempfile::TempDir) -> (String, tokio_util::sync::DropGuard) {
    let cancel = tokio_util::sync::CancellationToken::new();
    let server = server(dir, None);
    let listener = AskUserMcp::bind_http("127.0.0.1:0".parse().unwrap(), false)
        .await
        .unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let stop = cancel.clone().drop_guard();
    tokio::spawn(async move { server.serve_http(listener, cancel).await });
    (url, stop)
}

/// A `tools/call` of the stateless revision over HTTP to `url`, its `params` as given with the
/// question's arguments (`MCP-Protocol-Version: version`): the status and the JSON-RPC message
/// of the reply.
async fn post_raw(url: &str, version: &str, params: Value) -> (u16, Value) {
    let mut params = params;
    params["name"] = json!("ask_user_question");
    params["arguments"] = question();
    let body = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": params});
    let response = reqwest::Client::new()
        .post(url)
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", version)
        .header("Mcp-Method", "tools/call")
        .header("Mcp-Name", "ask_user_question")
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let text = response.text().await.unwrap();
    let message = ask_user_testkit::mcp::reply_message(&text)
        .unwrap_or_else(|| panic!("not JSON-RPC ({status}): {text}"));
    (status, message)
}

/// The JSON-RPC error code and message of a reply of [`post_raw`] that must be an error.
async fn refusal(url: &str, version: &str, params: Value) -> (i64, String) {
    let (status, message) = post_raw(url, version, params).await;
    let error = &message["error"];
    assert!(error.is_object(), "{status}: {message}");
    (
        error["code"].as_i64().unwrap(),
        error["message"].as_str().unwrap().to_owned(),
    )
}

/// Bad input in the stateless revision: a call without `_meta`, one of a version not served,
/// `inputResponses` without a round, `inputResponses` of the wrong type, an answer of the
/// wrong shape with a genuine state, and a 10 MB `requestState`: each a JSON-RPC error that says
/// what is wrong, nothing written, and the server serving on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_of_the_stateless_revision_is_a_clear_error_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (url, _stop) = serve_on_loopback(&dir).await;
    let meta = ask_user_testkit::mcp::stateless_meta("bad-input");
    let answer = json!({"ask_user_question": {"action": "accept", "content": {"q01": "SQLite"}}});
    let now = "2026-07-28";

    let (code, message) = refusal(&url, now, json!({})).await;
    assert_eq!(code, -32602, "{message}");
    assert!(message.contains("_meta"), "{message}");

    // The revision's own refusal (-32022), naming the versions served.
    let mut future = meta.clone();
    future["io.modelcontextprotocol/protocolVersion"] = json!("2031-01-01");
    let (status, refused) = post_raw(&url, "2031-01-01", json!({"_meta": future})).await;
    assert_eq!(refused["error"]["code"], -32022, "{status}: {refused}");
    assert_eq!(refused["error"]["data"]["requested"], "2031-01-01");
    let supported = refused["error"]["data"]["supported"].as_array().unwrap();
    assert!(supported.contains(&json!(now)), "{refused}");

    let params = json!({"_meta": meta, "inputResponses": answer});
    let (code, message) = refusal(&url, now, params).await;
    assert_eq!(code, -32602, "{message}");
    assert!(message.contains("without requestState"), "{message}");

    let params = json!({"_meta": meta, "requestState": "x", "inputResponses": 42});
    let (code, message) = refusal(&url, now, params).await;
    assert_eq!(code, -32602, "{message}");
    assert!(message.contains("params of tools/call"), "{message}");

    // A genuine state with an answer that is no elicitation result.
    let (_, round) = post_raw(&url, now, json!({"_meta": meta})).await;
    let state = round["result"]["requestState"].as_str().unwrap().to_owned();
    let maybe = json!({"ask_user_question": {"action": "maybe"}});
    let params = json!({"_meta": meta, "requestState": state, "inputResponses": maybe});
    let (code, message) = refusal(&url, now, params).await;
    assert_eq!(code, -32602, "{message}");
    assert!(message.contains("no answer"), "{message}");

    let huge = "x".repeat(10_000_000);
    let params = json!({"_meta": meta, "requestState": huge, "inputResponses": answer});
    let (status, _) = post_raw(&url, now, params.clone()).await;
    assert_eq!(status, 413);
    let (code, message) = refusal(&url, now, params).await;
    assert_eq!(code, -32600, "{message}");
    assert!(
        message.contains("larger than this server takes"),
        "{message}"
    );

    // A body that is no JSON: a JSON-RPC parse error, as JSON.
    let response = reqwest::Client::new()
        .post(&url)
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", now)
        .body(r#"{"jsonrpc":"2.0","id":4,"method":"#)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 400);
    let text = response.text().await.unwrap();
    let parsed: Value = serde_json::from_str(&text).unwrap_or_else(|_| panic!("not JSON: {text}"));
    assert_eq!(parsed["error"]["code"], -32700, "{parsed}");

    assert!(logs_in(dir.path()).is_empty(), "nothing written");
    // Still serving: the genuine state answers the form.
    let params = json!({"_meta": meta, "requestState": state, "inputResponses": answer});
    let (_, done) = post_raw(&url, now, params).await;
    assert_eq!(
        done["result"]["content"][0]["text"], r#"{"answers":[{"id":"db","selected":["SQLite"]}]}"#,
        "{done}"
    );
}

/// Two servers over one state directory (its key file shared), each on its own port: the form's
/// first round is served by one, its second by the other, and the answer is logged once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn any_server_of_the_state_directory_serves_the_second_round() {
    let dir = tempfile::tempdir().unwrap();
    let (first, _first) = serve_on_loopback(&dir).await;
    let (second, _second) = serve_on_loopback(&dir).await;
    let urls = [first, second];
    let arguments = question();
    let round = post_call(
        &urls[0],
        json!({"name": "ask_user_question", "arguments": arguments}),
    )
    .await;
    let result = &round["result"];
    assert_eq!(result["resultType"], "input_required", "{round}");
    assert!(logs_in(dir.path()).is_empty(), "round one writes nothing");
    let state = result["requestState"].as_str().unwrap().to_owned();
    let done = post_call(
        &urls[1],
        json!({
            "name": "ask_user_question",
            "arguments": arguments,
            "requestState": state,
            "inputResponses": {"ask_user_question": {"action": "accept", "content": {"q01": "SQLite"}}},
        }),
    )
    .await;
    assert_eq!(
        done["result"]["content"][0]["text"], r#"{"answers":[{"id":"db","selected":["SQLite"]}]}"#,
        "{done}"
    );
    let kinds = kinds(&logged(&dir));
    assert_eq!(
        kinds.iter().filter(|k| *k == "tool/result").count(),
        1,
        "{kinds:?}"
    );
    // The first server refuses the same state now: it was used.
    let again = post_call(
        &urls[0],
        json!({
            "name": "ask_user_question",
            "arguments": arguments,
            "requestState": state,
            "inputResponses": {"ask_user_question": {"action": "accept", "content": {"q01": "SQLite"}}},
        }),
    )
    .await;
    assert!(
        again["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("was used already")),
        "{again}"
    );
}

// ---------------------------------------------------------------------------------------------
// Timed calls as tasks (the tasks extension, SEP-2663).

fn timed_question(seconds: i64) -> Value {
    let mut arguments = question();
    arguments["timeout"] = json!(seconds);
    arguments
}

/// Starts a timed call of a client that declares tasks: its task id.
async fn start_task(connected: &common::Connected, arguments: &Value) -> String {
    let CallToolResponse::Task(created) = connected
        .client
        .peer()
        .call_tool_once(params(arguments))
        .await
        .unwrap()
    else {
        panic!("a timed call of a client with tasks is a task");
    };
    assert_eq!(created.task.status, rmcp::model::TaskStatus::Working);
    assert!(created.task.poll_interval_ms.is_some());
    created.task.task_id
}

/// Polls task `id` until `done` holds of it (at most 10 s).
async fn poll_until(
    connected: &common::Connected,
    id: &str,
    mut done: impl FnMut(&rmcp::model::DetailedTask) -> bool,
) -> rmcp::model::DetailedTask {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let task = connected
            .client
            .peer()
            .get_task(rmcp::model::GetTaskParams::new(id))
            .await
            .unwrap()
            .task;
        if done(&task) {
            return task;
        }
        assert!(std::time::Instant::now() < deadline, "{task:?}");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

fn completed_text(task: &rmcp::model::DetailedTask) -> String {
    let rmcp::model::TaskPayload::Completed { result } = &task.payload else {
        panic!("not completed: {task:?}")
    };
    result["content"][0]["text"].as_str().unwrap().to_owned()
}

fn form_answer(label: &str) -> rmcp::model::InputResponses {
    let mut responses = rmcp::model::InputResponses::new();
    responses.insert(
        "ask_user_question".to_owned(),
        json!({"action": "accept", "content": {"q01": label}}),
    );
    responses
}

/// The task is `input_required` with the form while the window is open; `tasks/update` answers
/// it and the task completes with the answers, logged once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timed_task_is_answered_through_tasks_update() {
    let dir = tempfile::tempdir().unwrap();
    let server = server(&dir, Some(AskUserConfig::timed_secs(60)));
    let connected = common::connect_stateless_as(&server, true, true).await;
    let id = start_task(&connected, &timed_question(60)).await;
    let asking = poll_until(&connected, &id, |task| {
        task.status() == rmcp::model::TaskStatus::InputRequired
    })
    .await;
    let rmcp::model::TaskPayload::InputRequired { input_requests } = &asking.payload else {
        unreachable!()
    };
    assert!(input_requests.contains_key("ask_user_question"));
    // An update without an answer to the form is refused; the form still waits.
    let refused = connected
        .client
        .peer()
        .update_task(rmcp::model::UpdateTaskParams::new(
            &id,
            rmcp::model::InputResponses::new(),
        ))
        .await;
    assert!(refused.is_err());
    connected
        .client
        .peer()
        .update_task(rmcp::model::UpdateTaskParams::new(
            &id,
            form_answer("SQLite"),
        ))
        .await
        .unwrap();
    let done = poll_until(&connected, &id, |task| task.status().is_terminal()).await;
    assert_eq!(
        completed_text(&done),
        r#"{"answers":[{"id":"db","selected":["SQLite"]}]}"#
    );
    let kinds = kinds(&logged(&dir));
    assert_eq!(
        kinds.iter().filter(|k| *k == "tool/result").count(),
        1,
        "{kinds:?}"
    );
    // Answered: no more updates.
    assert!(
        connected
            .client
            .peer()
            .update_task(rmcp::model::UpdateTaskParams::new(
                &id,
                form_answer("SQLite")
            ))
            .await
            .is_err()
    );
}

/// The window's end completes the task with the pending result and takes the form off it; an
/// answer given elsewhere after that is a late answer, which the companion delivers, and the task
/// keeps its pending result. A task this process does not hold (another instance's) is read from the log.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_completes_pending_at_its_window_and_a_late_update_reaches_the_companion() {
    let dir = tempfile::tempdir().unwrap();
    let server = server(&dir, Some(AskUserConfig::timed_secs(60)));
    let connected = common::connect_stateless_as(&server, true, true).await;
    let id = start_task(&connected, &timed_question(1)).await;
    let pending = poll_until(&connected, &id, |task| task.status().is_terminal()).await;
    let text = completed_text(&pending);
    assert!(text.starts_with(r#"{"pending":true"#), "{text}");
    // The form went off the task with the window: the client cannot answer it any more.
    let late_form = connected
        .client
        .peer()
        .update_task(rmcp::model::UpdateTaskParams::new(
            &id,
            form_answer("PostgreSQL"),
        ))
        .await;
    assert!(late_form.is_err(), "{late_form:?}");
    // Answered late elsewhere (the page, a phone, the shell: the server's desk).
    let log = logs_in(dir.path())[0]
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    server
        .desk()
        .submit(pending_answer::Submission::new(
            &log,
            user_questions::CallId::from(id.as_str()),
            user_questions::AnswerBatch::new([user_questions::AnswerItem::selected(
                "db",
                ["PostgreSQL"],
            )]),
            user_questions::Provenance::human("test-page"),
        ))
        .await
        .unwrap();
    let companion = CallToolRequestParams::new("ask_user_question_answer")
        .with_arguments(json!({"callId": id}).as_object().cloned().unwrap());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let reply = loop {
        let result = connected.client.call_tool(companion.clone()).await.unwrap();
        let text = texts(&result)[0].clone();
        if !text.starts_with(r#"{"pending":true"#) {
            break text;
        }
        assert!(std::time::Instant::now() < deadline, "never delivered");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    };
    assert!(
        reply.contains(r#""answers":[{"id":"db","selected":["PostgreSQL"]}]"#),
        "{reply}"
    );
    let again = poll_until(&connected, &id, |task| task.status().is_terminal()).await;
    assert_eq!(
        completed_text(&again),
        text,
        "the task keeps its pending result"
    );

    // Another server over the same directory (another instance) reads the task from the log.
    let other = AskUserMcp::new(
        McpOptions::new(dir.path())
            .with_tool(Some(AskUserConfig::timed_secs(60)))
            .with_stateless_forms(true),
    )
    .unwrap();
    let elsewhere = common::connect_stateless_as(&other, true, true).await;
    let read = poll_until(&elsewhere, &id, |task| task.status().is_terminal()).await;
    assert_eq!(completed_text(&read), text);
    let unknown = elsewhere
        .client
        .peer()
        .get_task(rmcp::model::GetTaskParams::new("call_nope_1"))
        .await;
    assert!(unknown.is_err());
}

/// `tasks/cancel` withdraws the question, as a person cancelling it does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_task_withdraws_its_question() {
    let dir = tempfile::tempdir().unwrap();
    let server = server(&dir, Some(AskUserConfig::timed_secs(60)));
    let connected = common::connect_stateless_as(&server, true, true).await;
    let id = start_task(&connected, &timed_question(60)).await;
    poll_until(&connected, &id, |task| {
        task.status() == rmcp::model::TaskStatus::InputRequired
    })
    .await;
    connected
        .client
        .peer()
        .cancel_task(rmcp::model::CancelTaskParams::new(&id))
        .await
        .unwrap();
    let done = poll_until(&connected, &id, |task| task.status().is_terminal()).await;
    assert_eq!(done.status(), rmcp::model::TaskStatus::Cancelled);
    let results: Vec<Value> = logged(&dir)
        .into_iter()
        .filter(|e| e["type"] == "tool/result")
        .collect();
    assert_eq!(results.len(), 1);
    assert!(
        results[0].to_string().contains("ASK_ABORTED"),
        "{}",
        results[0]
    );
}
