//! The server through an rmcp client in the same process: tool listing, elicitation (accept,
//! decline, cancel), clients without elicitation, cancellation, progress, timed pending and late
//! answers through the companion tool.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use common::{Harness, Reply, accept, action, one_question, texts};
use rmcp::model::{ElicitRequestParams, ElicitationAction};
use serde_json::{Value, json};
use tool_ask_user::AskUserConfig;

fn form_schema_json(params: &ElicitRequestParams) -> Value {
    match params {
        ElicitRequestParams::FormElicitationParams {
            message,
            requested_schema,
            ..
        } => json!({"message": message, "requestedSchema": requested_schema}),
        other => panic!("not a form: {other:?}"),
    }
}

/// The error code of the session's first logged tool result.
fn first_error_code(harness: &Harness) -> Value {
    let events = harness.events();
    common::results_of(&events)[0]["data"]["error"]["code"].clone()
}

fn tool_result_texts(events: &[Value]) -> Vec<String> {
    common::results_of(events)
        .iter()
        .map(|e| {
            e["data"]["message"]["content"][0]["text"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect()
}

#[tokio::test]
async fn tools_list_is_the_catalog_definition_in_each_mode() {
    for (config, names) in [
        (None, vec!["ask_user_question"]),
        (
            Some(AskUserConfig::timed_secs(120)),
            vec!["ask_user_question", "ask_user_question_answer"],
        ),
    ] {
        let harness = Harness::start(config, true).await;
        let tools = harness.client.peer().list_all_tools().await.unwrap();
        let listed: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
        assert_eq!(listed, names);
        // Over MCP the timed definition is the one worded for the companion tool.
        let definition = tool_ask_user::definition(
            &config
                .unwrap_or(AskUserConfig::LEGACY)
                .with_late_answers(tool_ask_user::LateAnswerRoute::CompanionTool),
        )
        .unwrap();
        let ask = &tools[0];
        assert_eq!(
            ask.description.as_deref(),
            Some(definition.description.as_str())
        );
        // Byte for byte: the schema serialises to the same compact JSON the catalog shows.
        assert_eq!(
            serde_json::to_string(&*ask.input_schema).unwrap(),
            serde_json::to_string(&definition.parameters).unwrap()
        );
        assert!(
            ask.output_schema.is_none(),
            "no output schema: results are text only"
        );
        if let Some(answer) = tools.get(1) {
            let companion = ask_user_mcp::companion::answer_tool_definition();
            assert_eq!(
                answer.description.as_deref(),
                companion["description"].as_str()
            );
            assert_eq!(
                Value::Object((*answer.input_schema).clone()),
                companion["parameters"]
            );
        }
        // Listing tools starts no session: no log is written.
        assert!(harness.logs().is_empty());
    }
}

#[tokio::test]
async fn elicitation_accept_answers_a_blocking_call_and_names_the_client() {
    let harness = Harness::start(None, true).await;
    harness.reply(Reply::Now(accept(
        json!({"q01": "SQLite", "q01_other": ""}),
    )));
    let result = harness.call("ask_user_question", one_question()).await;
    assert_eq!(result.is_error, Some(false));
    assert_eq!(
        texts(&result),
        [r#"{"answers":[{"id":"db","selected":["SQLite"]}]}"#]
    );

    let forms = harness.handler.forms.lock().unwrap().clone();
    assert_eq!(forms.len(), 1);
    insta::assert_json_snapshot!("form_one_single_select", form_schema_json(&forms[0]));

    let events = harness.events();
    let result = common::results_of(&events)[0];
    assert_eq!(
        result["data"]["meta"]["provenance"],
        json!({"answerer": "mcp-elicitation:test-client", "answeredBy": "human"})
    );
}

#[tokio::test]
async fn a_multi_select_form_and_free_text_read_back_as_one_batch() {
    let harness = Harness::start(None, true).await;
    harness.reply(Reply::Now(accept(json!({
        "q01": ["Lint", "Unit tests"],
        "q01_other": "fuzzing",
        "q02": "Friday",
    }))));
    let args = json!({"questions": [
        {"id": "checks", "question": "Which checks?", "options": [{"label": "Unit tests"}, {"label": "Lint"}], "multi_select": true},
        {"id": "when", "question": "When do we ship?", "header": "Ship date"}
    ]});
    let result = harness.call("ask_user_question", args).await;
    assert_eq!(
        texts(&result),
        [
            r#"{"answers":[{"id":"checks","selected":["Lint","Unit tests"],"custom":"fuzzing"},{"id":"when","selected":[],"custom":"Friday"}]}"#
        ]
    );
    let forms = harness.handler.forms.lock().unwrap().clone();
    insta::assert_json_snapshot!("form_multi_select_and_text", form_schema_json(&forms[0]));
}

#[tokio::test]
async fn elicitation_decline_is_a_typed_declined_error() {
    let harness = Harness::start(None, true).await;
    harness.reply(Reply::Now(action(ElicitationAction::Decline)));
    let result = harness.call("ask_user_question", one_question()).await;
    assert_eq!(result.is_error, Some(true));
    assert!(texts(&result)[0].starts_with("Error: The person declined"));
    assert_eq!(first_error_code(&harness), "ASK_DECLINED");
}

#[tokio::test]
async fn elicitation_cancel_cancels_a_blocking_call() {
    let harness = Harness::start(None, true).await;
    harness.reply(Reply::Now(action(ElicitationAction::Cancel)));
    let result = harness.call("ask_user_question", one_question()).await;
    assert_eq!(result.is_error, Some(true));
    assert_eq!(first_error_code(&harness), "ASK_CANCELLED");
}

#[tokio::test]
async fn a_client_without_elicitation_gets_no_provider_in_legacy_mode() {
    let harness = Harness::start(None, false).await;
    let result = harness.call("ask_user_question", one_question()).await;
    assert_eq!(result.is_error, Some(true));
    assert!(harness.handler.forms.lock().unwrap().is_empty());
    assert_eq!(first_error_code(&harness), "NO_PROVIDER");
}

#[tokio::test(start_paused = true)]
async fn a_client_without_elicitation_gets_the_pending_result_in_timed_mode() {
    let harness = Harness::start(Some(AskUserConfig::timed_secs(30)), false).await;
    let result = harness.call("ask_user_question", one_question()).await;
    assert_eq!(result.is_error, Some(false));
    let texts = texts(&result);
    assert!(
        texts[0].starts_with(r#"{"pending":true,"callId":"call_"#),
        "{texts:?}"
    );
    // One text block: the pending result's own notice says where the answer comes from here.
    assert_eq!(texts.len(), 1, "{texts:?}");
    let pending: Value = serde_json::from_str(&texts[0]).unwrap();
    assert_eq!(
        pending["message"],
        tool_ask_user::PENDING_NOTICE_COMPANION,
        "{pending}"
    );
    insta::assert_snapshot!(
        "pending_result_over_mcp",
        texts[0].replace(pending["callId"].as_str().unwrap(), "call_<session>_1")
    );
}

#[tokio::test(start_paused = true)]
async fn a_timed_form_cancelled_leaves_the_question_to_its_window() {
    let mut harness = Harness::start(Some(AskUserConfig::timed_secs(30)), true).await;
    harness.reply(Reply::Hold);
    let call = harness.send_call("ask_user_question", one_question()).await;
    let form = harness.held.recv().await.unwrap();
    // Ten seconds in, the person dismisses the form: the window (20 s left) decides.
    tokio::time::sleep(Duration::from_secs(10)).await;
    form.reply.send(action(ElicitationAction::Cancel)).unwrap();
    let started = tokio::time::Instant::now();
    let result = common::response_result(call.await_response().await.unwrap());
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_secs(19) && waited <= Duration::from_secs(21),
        "{waited:?}"
    );
    let texts = texts(&result);
    assert!(texts[0].starts_with(r#"{"pending":true"#), "{texts:?}");
    let events = harness.events();
    assert_eq!(tool_result_texts(&events), [texts[0].clone()]);
}

#[tokio::test(start_paused = true)]
async fn notifications_cancelled_aborts_the_call_and_logs_it() {
    let mut harness = Harness::start(None, true).await;
    harness.reply(Reply::Hold);
    let call = harness.send_call("ask_user_question", one_question()).await;
    let _form = harness.held.recv().await.unwrap();
    call.cancel(Some("the user pressed escape".to_owned()))
        .await
        .unwrap();
    // The call's result is logged once the host has seen the cancellation.
    let mut code = Value::Null;
    for _ in 0..100 {
        tokio::time::sleep(Duration::from_millis(10)).await;
        if let Some(path) = harness.logs().first() {
            let events = common::events(path);
            if let Some(result) = common::results_of(&events).first() {
                code = result["data"]["error"]["code"].clone();
                break;
            }
        }
    }
    assert_eq!(code, "ASK_ABORTED");
    // The session serves on.
    assert_eq!(
        harness.client.peer().list_all_tools().await.unwrap().len(),
        1
    );
}

#[tokio::test(start_paused = true)]
async fn a_waiting_call_reports_progress_every_fifteen_seconds() {
    let mut harness = Harness::start(None, true).await;
    harness.reply(Reply::Hold);
    let call = harness.send_call("ask_user_question", one_question()).await;
    let form = harness.held.recv().await.unwrap();
    eprintln!("form received");
    tokio::time::sleep(Duration::from_secs(46)).await;
    eprintln!("slept");
    form.reply
        .send(accept(json!({"q01": "PostgreSQL"})))
        .unwrap();
    let result = tokio::time::timeout(Duration::from_secs(5), call.await_response())
        .await
        .expect("response in time");
    let result = common::response_result(result.unwrap());
    assert_eq!(result.is_error, Some(false));
    let progress = harness.handler.progress.lock().unwrap().clone();
    let counts: Vec<f64> = progress.iter().map(|p| p.progress).collect();
    assert_eq!(counts, [1.0, 2.0, 3.0], "{progress:?}");
}

/// The window closes with the form open: the call returns pending and the form is withdrawn
/// (nothing stays on the person's screen while the model works on); the question stays pending,
/// for the page, a phone or the shell.
#[tokio::test(start_paused = true)]
async fn a_form_left_open_past_its_window_is_withdrawn_and_the_question_stays_pending() {
    let mut harness = Harness::start(Some(AskUserConfig::timed_secs(30)), true).await;
    harness.reply(Reply::Hold);
    let call = harness.send_call("ask_user_question", one_question()).await;
    let form = harness.held.recv().await.unwrap();
    let result = common::response_result(call.await_response().await.unwrap());
    let pending: Value = serde_json::from_str(&texts(&result)[0]).unwrap();
    assert_eq!(pending["pending"], true);
    let call_id = pending["callId"].as_str().unwrap().to_owned();
    for _ in 0..100 {
        if *harness.handler.withdrawn.lock().unwrap() > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(*harness.handler.withdrawn.lock().unwrap(), 1, "withdrawn");
    assert!(
        form.reply.send(accept(json!({"q01": "SQLite"}))).is_err(),
        "the client closed the form"
    );
    let again = harness
        .call("ask_user_question_answer", json!({"callId": call_id}))
        .await;
    assert!(texts(&again)[0].starts_with(r#"{"pending":true"#));
}

#[tokio::test(start_paused = true)]
async fn a_timed_form_answered_in_its_window_answers_the_call() {
    let mut harness = Harness::start(Some(AskUserConfig::timed_secs(30)), true).await;
    harness.reply(Reply::Hold);
    let call = harness.send_call("ask_user_question", one_question()).await;
    let form = harness.held.recv().await.unwrap();
    tokio::time::sleep(Duration::from_secs(20)).await;
    form.reply
        .send(accept(json!({"q01": "PostgreSQL"})))
        .unwrap();
    let result = common::response_result(call.await_response().await.unwrap());
    assert_eq!(
        texts(&result),
        [r#"{"answers":[{"id":"db","selected":["PostgreSQL"]}]}"#]
    );
    // Answered in the foreground: the companion repeats the call's own answer.
    let events = harness.events();
    let call_id = events.iter().find(|e| e["type"] == "tool/call").unwrap()["data"]["callId"]
        .as_str()
        .unwrap()
        .to_owned();
    let again = harness
        .call("ask_user_question_answer", json!({"callId": call_id}))
        .await;
    assert_eq!(texts(&again), texts(&result));
}

#[tokio::test(start_paused = true)]
async fn a_form_held_past_its_claimed_window_still_returns_pending_on_time() {
    let mut harness = Harness::start(Some(AskUserConfig::timed_secs(30)), true).await;
    harness.reply(Reply::Hold);
    let started = tokio::time::Instant::now();
    let call = harness.send_call("ask_user_question", one_question()).await;
    let _form = harness.held.recv().await.unwrap();
    let result = common::response_result(call.await_response().await.unwrap());
    let waited = started.elapsed();
    assert!(texts(&result)[0].starts_with(r#"{"pending":true"#));
    assert!(
        waited >= Duration::from_secs(30) && waited < Duration::from_secs(31),
        "{waited:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn concurrent_calls_of_one_session_share_its_log_and_the_companion_runs_beside_them() {
    let mut harness = Harness::start(Some(AskUserConfig::timed_secs(30)), true).await;
    harness.reply(Reply::Hold);
    harness.reply(Reply::Hold);
    let first = harness.send_call("ask_user_question", one_question()).await;
    let second = harness.send_call("ask_user_question", one_question()).await;
    let form_a = harness.held.recv().await.unwrap();
    let form_b = harness.held.recv().await.unwrap();
    // A companion call while both wait: the question is still in its window.
    let tool_calls: Vec<String> = harness
        .events()
        .iter()
        .filter(|e| e["type"] == "tool/call")
        .map(|e| e["data"]["callId"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(tool_calls.len(), 2);
    let during = harness
        .call("ask_user_question_answer", json!({"callId": tool_calls[0]}))
        .await;
    assert_eq!(during.is_error, Some(true));
    assert!(
        texts(&during)[0].contains("still waiting"),
        "{:?}",
        texts(&during)
    );
    form_a.reply.send(accept(json!({"q01": "SQLite"}))).unwrap();
    form_b
        .reply
        .send(accept(json!({"q01": "PostgreSQL"})))
        .unwrap();
    let a = common::response_result(first.await_response().await.unwrap());
    let b = common::response_result(second.await_response().await.unwrap());
    let mut answers = [texts(&a)[0].clone(), texts(&b)[0].clone()];
    answers.sort();
    assert_eq!(
        answers,
        [
            r#"{"answers":[{"id":"db","selected":["PostgreSQL"]}]}"#,
            r#"{"answers":[{"id":"db","selected":["SQLite"]}]}"#
        ]
    );
    // One turn held both calls, and the log folds to two settled questions.
    let events = harness.events();
    let turns = events.iter().filter(|e| e["type"] == "turn/start").count();
    assert_eq!(turns, 1, "the calls and the companion shared one turn");
    let state = ask_user_testkit::logs::full_fold(&harness.logs()[0]).state;
    assert_eq!(state.view().settled.len(), 2);
}

#[tokio::test]
async fn legacy_mode_has_no_companion_tool() {
    let harness = Harness::start(None, true).await;
    let params = rmcp::model::CallToolRequestParams::new("ask_user_question_answer")
        .with_arguments(json!({"callId": "call_x"}).as_object().cloned().unwrap());
    let error = harness.client.peer().call_tool(params).await.unwrap_err();
    assert!(error.to_string().contains("unknown tool"), "{error}");
}

/// A timed call the person cancels (the reason says so: Claude Code's Escape sends
/// `MCP error -32001: user-cancel`) is withdrawn, its form with it.
#[tokio::test(start_paused = true)]
async fn a_call_the_person_cancelled_withdraws_its_form() {
    let mut harness = Harness::start(Some(AskUserConfig::timed_secs(300)), true).await;
    harness.reply(Reply::Hold);
    let call = harness.send_call("ask_user_question", one_question()).await;
    let _form = harness.held.recv().await.unwrap();
    call.cancel(Some("McpError: MCP error -32001: user-cancel".to_owned()))
        .await
        .unwrap();
    let mut withdrawn = 0;
    for _ in 0..100 {
        tokio::time::sleep(Duration::from_millis(10)).await;
        withdrawn = *harness.handler.withdrawn.lock().unwrap();
        if withdrawn > 0 {
            break;
        }
    }
    assert_eq!(withdrawn, 1, "the form of a cancelled call is withdrawn");
    assert_eq!(first_error_code(&harness), "ASK_ABORTED");
}

#[tokio::test]
async fn a_client_of_protocol_2025_06_18_gets_a_form_of_primitive_fields() {
    let harness = Harness::start_speaking(
        tempfile::tempdir().unwrap(),
        None,
        true,
        rmcp::model::ProtocolVersion::V_2025_06_18,
    )
    .await;
    harness.reply(Reply::Now(accept(json!({
        "q01": "SQLite",
        "q02_c01": true,
        "q02_c02": false,
        "q02_other": "fuzzing",
    }))));
    let args = json!({"questions": [
        {"id": "db", "question": "Which database?", "header": "Database",
         "options": [{"label": "PostgreSQL", "description": "the default"}, {"label": "SQLite"}]},
        {"id": "checks", "question": "Which checks?", "options": [{"label": "Unit tests"}, {"label": "Lint"}], "multi_select": true}
    ]});
    let result = harness.call("ask_user_question", args).await;
    assert_eq!(
        texts(&result),
        [
            r#"{"answers":[{"id":"db","selected":["SQLite"]},{"id":"checks","selected":["Unit tests"],"custom":"fuzzing"}]}"#
        ]
    );
    let forms = harness.handler.forms.lock().unwrap().clone();
    insta::assert_json_snapshot!("form_protocol_2025_06_18", form_schema_json(&forms[0]));
}

/// A request sent before `initialize` (a person trying `tools/list` by hand) is told to initialize
/// first, not about the 2026-07-28 revision's per-request metadata; the session then goes on as
/// usual.
#[tokio::test]
async fn a_request_before_initialize_is_told_to_initialize_first() {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
    let dir = tempfile::tempdir().unwrap();
    let server = ask_user_mcp::AskUserMcp::new(ask_user_mcp::McpOptions::new(dir.path())).unwrap();
    let (client, server_io) = tokio::io::duplex(1 << 16);
    let (server_read, server_write) = tokio::io::split(server_io);
    let serving = tokio::spawn(async move { server.serve_io(server_read, server_write).await });
    let (client_read, mut client_write) = tokio::io::split(client);
    let mut replies = tokio::io::BufReader::new(client_read).lines();
    let mut send = async |line: Value| {
        client_write
            .write_all(format!("{line}\n").as_bytes())
            .await
            .unwrap();
    };
    send(json!({"jsonrpc":"2.0","id":1,"method":"tools/list"})).await;
    let early: Value = serde_json::from_str(&replies.next_line().await.unwrap().unwrap()).unwrap();
    assert_eq!(early["id"], 1);
    assert_eq!(
        early["error"]["message"],
        r#"the server is not initialized: send initialize before "tools/list""#
    );
    send(
        json!({"jsonrpc":"2.0","id":2,"method":"initialize","params":{
        "protocolVersion":"2025-06-18","capabilities":{},
        "clientInfo":{"name":"by-hand","version":"1"}}}),
    )
    .await;
    let initialized: Value =
        serde_json::from_str(&replies.next_line().await.unwrap().unwrap()).unwrap();
    assert_eq!(initialized["result"]["protocolVersion"], "2025-06-18");
    send(json!({"jsonrpc":"2.0","method":"notifications/initialized"})).await;
    send(json!({"jsonrpc":"2.0","id":3,"method":"tools/list"})).await;
    let listed: Value = serde_json::from_str(&replies.next_line().await.unwrap().unwrap()).unwrap();
    assert_eq!(listed["id"], 3);
    assert_eq!(listed["result"]["tools"][0]["name"], "ask_user_question");
    // The client closes its end: the session ends, and so does the server.
    client_write.shutdown().await.unwrap();
    serving.await.unwrap().unwrap();
}
