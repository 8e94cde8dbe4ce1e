//! The agent's other tools: the request header lists them with the model the session was given,
//! every call and result goes into the same log as the questions (the log is the agent's whole
//! history and still folds), a call dropped unfinished records an unknown outcome, and resume
//! repair closes a call the process never finished as it closes an interrupted question.
// Test code stops at its first broken expectation: unwrap and expect are assertions here.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{SCOPE_ARGS, runtime};
use std::io::BufReader;
use std::sync::Arc;

use ask_user_host::{
    Host, HostError, HostRuntime, ModelInfo, SessionOptions, ToolResult, ToolSpec,
};
use serde_json::{Value, json};
use session_log::{JsonlStore, MemoryStore, SessionStore, TOOL_OUTCOME_UNKNOWN_TEXT};
use user_questions::{CallId, CancellationToken, ErrorCode};
use user_questions_projection::{ActiveState, fold_log};

const BASH_ARGS: &str = r#"{"command": "cargo test"}"#;

/// A session `s.jsonl` of a runtime over a memory store.
fn memory_session() -> (MemoryStore, HostRuntime, Host) {
    let store = MemoryStore::new();
    let runtime = runtime(Arc::new(store.clone()));
    let host = runtime
        .create("s.jsonl", SessionOptions::named("s"))
        .unwrap();
    (store, runtime, host)
}

fn bash() -> ToolSpec {
    ToolSpec::new(
        "bash",
        "Runs a shell command.",
        json!({"type":"object","properties":{"command":{"type":"string"}},"required":["command"]}),
    )
}

fn read(bytes: Vec<u8>) -> String {
    String::from_utf8(bytes).unwrap()
}

/// The `data` of every event of `event_type` in the log text, in log order.
fn data_of(log: &str, event_type: &str) -> Vec<Value> {
    log.lines()
        .skip(1)
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .filter(|event| event["type"] == event_type)
        .map(|event| event["data"].clone())
        .collect()
}

/// A result's `data` without its fresh message id.
fn without_id(mut data: Value) -> Value {
    data["message"].as_object_mut().unwrap().remove("id");
    data
}

#[tokio::test(start_paused = true)]
async fn an_agent_loop_with_another_tool_logs_its_whole_history_and_the_log_folds() {
    let store = MemoryStore::new();
    let runtime = runtime(Arc::new(store.clone()));
    let host = runtime
        .create(
            "s.jsonl",
            SessionOptions::named("s").with_model(ModelInfo::new("openai", "gpt-5")),
        )
        .unwrap();
    host.set_tools([bash()]).unwrap();
    host.begin_turn().unwrap();
    host.begin_step().unwrap();
    host.log_request_header().unwrap();
    // The model calls bash, then asks the person, then bash again, which fails.
    let ran = host
        .run_tool(&CallId::from("bash-1"), "bash", BASH_ARGS, async {
            ToolResult::ok("test result: ok")
        })
        .await
        .unwrap();
    assert_eq!(ran, ToolResult::ok("test result: ok"));
    let ask = CallId::from("ask-1");
    let outcome = host
        .call_tool(&ask, SCOPE_ARGS, CancellationToken::new())
        .await
        .unwrap();
    assert!(outcome.is_pending());
    let call = host
        .record_tool_call(&CallId::from("bash-2"), "bash", BASH_ARGS)
        .unwrap();
    assert_eq!(call.call_id().as_str(), "bash-2");
    call.finish(
        ToolResult::error("no such file").with_error("FsError", ErrorCode::parse("FS_NOT_FOUND")),
    )
    .unwrap();
    host.end_turn("completed").unwrap();

    let log = read(store.bytes("s.jsonl").unwrap());
    let header = &data_of(&log, "request/header")[0];
    assert_eq!(
        header["header"]["config"],
        json!({"provider":"openai","model":"gpt-5"})
    );
    let tools = header["header"]["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["ask_user_question", "bash"]);
    assert_eq!(tools[1], serde_json::to_value(bash()).unwrap());

    let calls = data_of(&log, "tool/call");
    assert_eq!(
        calls,
        [
            json!({"turn":1,"step":1,"callId":"bash-1","name":"bash","arguments":BASH_ARGS}),
            json!({"turn":1,"step":1,"callId":"ask-1","name":"ask_user_question","arguments":SCOPE_ARGS}),
            json!({"turn":1,"step":1,"callId":"bash-2","name":"bash","arguments":BASH_ARGS}),
        ]
    );
    let results = data_of(&log, "tool/result");
    assert_eq!(results.len(), 3);
    assert!(
        results[0]["message"]["id"]
            .as_str()
            .unwrap()
            .starts_with("msg-")
    );
    assert_eq!(
        without_id(results[0].clone()),
        json!({"turn":1,"step":1,"message":{"role":"tool","toolCallId":"bash-1",
            "content":[{"type":"text","text":"test result: ok"}],"isError":false}})
    );
    assert_eq!(
        without_id(results[2].clone()),
        json!({"turn":1,"step":1,"message":{"role":"tool","toolCallId":"bash-2",
            "content":[{"type":"text","text":"Error: no such file"}],"isError":true},
            "error":{"name":"FsError","code":"FS_NOT_FOUND"}})
    );

    // The same folding code reads the whole history: the question is continued, bash is not
    // a question, and nothing in the log is reported.
    let folded = fold_log(BufReader::new(log.as_bytes())).unwrap();
    assert!(folded.report.is_clean(), "{:?}", folded.report);
    assert!(folded.findings.is_empty());
    assert_eq!(folded.state.view().active.len(), 1);
    assert_eq!(
        folded.state.continued(&ask).map(|q| q.state),
        Some(ActiveState::Continued)
    );
    assert_eq!(folded.state, host.projection());
}

#[tokio::test(start_paused = true)]
async fn changing_the_tools_or_the_model_logs_a_changed_request_header() {
    let (store, _runtime, host) = memory_session();
    host.begin_turn().unwrap();
    host.begin_step().unwrap();
    host.log_request_header().unwrap();
    host.log_request_header().unwrap(); // unchanged: nothing more
    host.set_tools([bash()]).unwrap();
    host.set_model(ModelInfo::new("anthropic", "claude"))
        .unwrap();
    let log = read(store.bytes("s.jsonl").unwrap());
    let headers = data_of(&log, "request/header");
    let reasons: Vec<&str> = headers
        .iter()
        .map(|h| h["reason"].as_str().unwrap())
        .collect();
    assert_eq!(reasons, ["initial", "change", "change"]);
    assert_eq!(headers[0]["header"]["tools"].as_array().unwrap().len(), 1);
    assert_eq!(headers[1]["header"]["tools"][1]["name"], "bash");
    assert_eq!(
        headers[1]["header"]["config"],
        json!({"provider":"unknown","model":"unknown"})
    );
    assert_eq!(
        headers[2]["header"]["config"],
        json!({"provider":"anthropic","model":"claude"})
    );
}

#[tokio::test(start_paused = true)]
async fn a_tool_call_dropped_unfinished_records_an_unknown_outcome() {
    let (store, runtime, host) = memory_session();
    host.begin_turn().unwrap();
    host.begin_step().unwrap();
    drop(
        host.record_tool_call(&CallId::from("bash-1"), "bash", BASH_ARGS)
            .unwrap(),
    );
    // The future running a tool is dropped a second in (a turn given up, a task aborted).
    let second = CallId::from("bash-2");
    let run = host.run_tool(&second, "bash", BASH_ARGS, std::future::pending());
    let dropped = tokio::time::timeout(std::time::Duration::from_secs(1), run).await;
    assert!(dropped.is_err());
    let log = read(store.bytes("s.jsonl").unwrap());
    let results = data_of(&log, "tool/result");
    let unknown = |call: &str| {
        json!({"turn":1,"step":1,"message":{"id":format!("interrupted-tool-result-{call}"),
            "role":"tool","toolCallId":call,
            "content":[{"type":"text","text":TOOL_OUTCOME_UNKNOWN_TEXT}],"isError":true},
            "error":{"name":"ToolOutcomeUnknownError","code":"TOOL_OUTCOME_UNKNOWN"}})
    };
    assert_eq!(results, [unknown("bash-1"), unknown("bash-2")]);
    // Both are finished: a reopen has nothing to repair.
    drop(host);
    let (_host, resumed) = runtime.open("s.jsonl", SessionOptions::named("s")).unwrap();
    let repair = resumed.repair.unwrap();
    assert!(repair.results.is_empty());
    assert_eq!(repair.closed_turns, [1]);
}

fn an_unfinished_call_of_another_tool_is_repaired_on_reopening(
    store: &Arc<dyn SessionStore>,
    log_text: impl Fn() -> String,
) {
    let call = CallId::from("bash-crash");
    {
        let host = runtime(store.clone())
            .create("c.jsonl", SessionOptions::named("c"))
            .unwrap();
        host.set_tools([bash()]).unwrap();
        host.begin_turn().unwrap();
        host.begin_step().unwrap();
        host.log_request_header().unwrap();
        // The process stops while the tool runs: its call is logged, its result never is.
        std::mem::forget(host.record_tool_call(&call, "bash", BASH_ARGS).unwrap());
    }
    let runtime = runtime(store.clone());
    let (host, resumed) = runtime.open("c.jsonl", SessionOptions::named("c")).unwrap();
    let repair = resumed.repair.unwrap();
    assert_eq!(repair.results.len(), 1);
    assert_eq!(repair.results[0].call.call_id, "bash-crash");
    assert_eq!(repair.results[0].call.name.as_deref(), Some("bash"));
    assert_eq!(repair.closed_steps.len(), 1);
    assert_eq!(repair.closed_turns, [1]);
    // Not a question: the projection tracks nothing, and the id stays taken.
    assert!(host.projection().view().active.is_empty());
    host.begin_turn().unwrap();
    host.begin_step().unwrap();
    assert!(matches!(
        host.record_tool_call(&call, "bash", BASH_ARGS),
        Err(HostError::DuplicateCallId(_))
    ));
    let log = log_text();
    let results = data_of(&log, "tool/result");
    assert_eq!(results.len(), 1);
    assert_eq!(results[0]["message"]["toolCallId"], "bash-crash");
    assert_eq!(results[0]["message"]["isError"], true);
    assert_eq!(results[0]["error"]["code"], "TOOL_OUTCOME_UNKNOWN");
}

#[test]
fn jsonl_an_unfinished_call_of_another_tool_is_repaired_on_reopening() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.jsonl");
    an_unfinished_call_of_another_tool_is_repaired_on_reopening(
        &(Arc::new(JsonlStore::new(dir.path())) as Arc<dyn SessionStore>),
        || std::fs::read_to_string(&path).unwrap(),
    );
}

#[test]
fn memory_an_unfinished_call_of_another_tool_is_repaired_on_reopening() {
    let store = MemoryStore::new();
    an_unfinished_call_of_another_tool_is_repaired_on_reopening(
        &(Arc::new(store.clone()) as Arc<dyn SessionStore>),
        || read(store.bytes("c.jsonl").unwrap()),
    );
}
