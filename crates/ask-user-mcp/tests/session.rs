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
            Some(AskUserConfig::timed(120)),
            vec!["ask_user_question", "ask_user_question_answer"],
        ),
    ] {
        let harness = Harness::start(config, true).await;
        let tools = harness.client.peer().list_all_tools().await.unwrap();
        let listed: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
        assert_eq!(listed, names);
        let definition =
            tool_ask_user::definition(&config.unwrap_or(AskUserConfig::LEGACY)).unwrap();
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
    let harness = Harness::start(Some(AskUserConfig::timed(30)), false).await;
    let result = harness.call("ask_user_question", one_question()).await;
    assert_eq!(result.is_error, Some(false));
    let texts = texts(&result);
    assert!(
        texts[0].starts_with(r#"{"pending":true,"callId":"call_"#),
        "{texts:?}"
    );
    assert_eq!(texts[1], ask_user_mcp::companion::LATE_ANSWER_HINT);
}

#[tokio::test(start_paused = true)]
async fn a_timed_form_cancelled_leaves_the_question_to_its_window() {
    let mut harness = Harness::start(Some(AskUserConfig::timed(30)), true).await;
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

#[tokio::test(start_paused = true)]
async fn a_form_answered_after_the_window_is_a_late_answer_for_the_companion() {
    let mut harness = Harness::start(Some(AskUserConfig::timed(30)), true).await;
    harness.reply(Reply::Hold);
    let call = harness.send_call("ask_user_question", one_question()).await;
    let form = harness.held.recv().await.unwrap();
    // The form stays open past the window: the call returns pending.
    let result = common::response_result(call.await_response().await.unwrap());
    let pending: Value = serde_json::from_str(&texts(&result)[0]).unwrap();
    assert_eq!(pending["pending"], true);
    let call_id = pending["callId"].as_str().unwrap().to_owned();

    // Before the person answers, the companion says pending again.
    let early = harness
        .call("ask_user_question_answer", json!({"callId": call_id}))
        .await;
    assert!(texts(&early)[0].starts_with(r#"{"pending":true"#));

    form.reply.send(accept(json!({"q01": "SQLite"}))).unwrap();
    let mut reply = Vec::new();
    for _ in 0..100 {
        tokio::time::sleep(Duration::from_millis(10)).await;
        let fetched = harness
            .call("ask_user_question_answer", json!({"callId": call_id}))
            .await;
        reply = texts(&fetched);
        if !reply[0].starts_with(r#"{"pending""#) {
            break;
        }
    }
    let reply: Value = serde_json::from_str(&reply[0]).unwrap();
    assert_eq!(reply["kind"], "answer_to_pending_question");
    assert_eq!(
        reply["answers"],
        json!([{"id": "db", "selected": ["SQLite"]}])
    );

    // Asking again gives the same reply, and the question settled exactly once.
    let again = harness
        .call("ask_user_question_answer", json!({"callId": call_id}))
        .await;
    assert_eq!(
        serde_json::from_str::<Value>(&texts(&again)[0]).unwrap(),
        reply
    );
    let events = harness.events();
    let admitted = events
        .iter()
        .filter(|e| {
            e["type"] == "user/message" && e["data"]["source"]["callId"] == call_id.as_str()
        })
        .count();
    assert_eq!(admitted, 1);
    let state = common::fold(&harness.logs()[0]);
    assert_eq!(state.view().settled.len(), 1);
    assert!(state.view().active.is_empty());
}
