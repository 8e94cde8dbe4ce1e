//! Rendered outcomes (SPEC §3.3, §5.6, §5.7): snapshots of answers, pending and every error code
//! the tool can return, the `tool/result` event data and E-ABORT.
// Test code stops at its first broken expectation: unwrap and expect are assertions here.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::HashSet;
use std::sync::Arc;

use common::*;
use tokio::sync::Notify;
use tool_ask_user::{CATALOG, ErrorInfo, ToolOutcome};
use user_questions::{
    AnswerBatch, AnswerItem, CallId, CancellationToken, ErrorCode, UserQuestionError,
};

const GO: &str =
    r#"{"questions":[{"id":"go","question":"Go?","options":[{"label":"yes"},{"label":"no"}]}]}"#;

/// One outcome as plain text for a snapshot.
fn describe(label: &str, outcome: &ToolOutcome) -> String {
    let json = |value: &Option<serde_json::Value>| {
        value
            .as_ref()
            .map_or_else(|| "-".to_owned(), ToString::to_string)
    };
    format!(
        "== {label}\nis_error: {}\ntext: {}\nvalue: {}\nerror: {}\nmeta: {}\n",
        outcome.is_error,
        outcome.text,
        json(&outcome.value),
        outcome
            .error
            .as_ref()
            .map_or_else(|| "-".to_owned(), |e| serde_json::to_string(e).unwrap()),
        json(&outcome.meta),
    )
}

#[tokio::test(start_paused = true)]
async fn rendered_successes() {
    let w = world();
    let batch = AnswerBatch::new([
        AnswerItem::selected("targets", ["tests", "docs"]).with_custom("release notes"),
        AnswerItem::selected("labels-only", ["tests"]),
        AnswerItem::custom("notes", "ship today"),
        AnswerItem::skipped("optional"),
    ]);
    let answerer = TestAnswerer::new(Behaviour::Answer(batch));
    let guard = answerer.register(&w.seam);
    let arguments = serde_json::json!({"questions":[
        {"id":"targets","question":"What should ship?","multi_select":true,
         "options":[{"label":"tests"},{"label":"docs"}]},
        {"id":"labels-only","question":"Which label?","options":[{"label":"tests"},{"label":"docs"}]},
        {"id":"notes","question":"Anything else?"},
        {"id":"optional","question":"Optional remarks?"}
    ]})
    .to_string();
    let batch_outcome = w.legacy().execute(&arguments, ctx("call_four")).await;
    drop(guard);
    let pending = w.timed(1).execute(GO, ctx_for("call_pending", &w.r)).await;
    let mut text = describe(
        "answers: multi-select with custom, labels, custom, skipped",
        &batch_outcome,
    );
    text.push_str(&describe("pending", &pending));
    insta::assert_snapshot!("successes", text);
}

/// Every error code the catalog lists, produced through the public API, rendered.
#[tokio::test(start_paused = true)]
async fn rendered_errors_cover_every_catalogued_code() {
    let outcomes = error_outcomes(&world()).await;
    let mut text = String::new();
    let mut produced = HashSet::new();
    for (label, outcome) in &outcomes {
        assert!(outcome.is_error, "{label}: {outcome:?}");
        assert!(outcome.text.starts_with("Error: "), "{label}");
        if let Some(info) = &outcome.error {
            // Each label starts with the code it produces, so the snapshot reads by code.
            assert!(label.starts_with(info.code.as_str()), "{label}: {info:?}");
            produced.insert(info.code.clone());
        }
        text.push_str(&describe(label, outcome));
    }
    insta::assert_snapshot!("errors", text);
    let catalogued: HashSet<ErrorCode> = CATALOG
        .variants
        .iter()
        .flat_map(|v| v.error_codes.iter().cloned())
        .collect();
    assert_eq!(
        produced, catalogued,
        "each catalogued code is produced here"
    );
}

/// One outcome per error the tool can return, each produced the way a model or a host would.
async fn error_outcomes(w: &World) -> Vec<(&'static str, ToolOutcome)> {
    let mut outcomes: Vec<(&str, ToolOutcome)> = Vec::new();

    outcomes.push((
        "INVALID_ARGS (E-ARGS)",
        w.legacy()
            .execute(r#"{"questions":[{"id":1}]}"#, ctx("c"))
            .await,
    ));
    outcomes.push((
        "INVALID_ARGS (E-T1)",
        w.timed(120)
            .execute(
                r#"{"questions":[{"id":"go","question":"Go?"}],"timeout":0}"#,
                ctx_for("c", &w.r),
            )
            .await,
    ));
    outcomes.push((
        "EMPTY_QUESTIONS",
        w.legacy().execute(r#"{"questions":[]}"#, ctx("c")).await,
    ));
    outcomes.push((
        "BAD_QUESTIONS",
        w.timed(120)
            .execute(
                r#"{"questions":[{"id":"scope","question":"A?"},{"id":"scope","question":"B?"}]}"#,
                ctx_for("c", &w.r),
            )
            .await,
    ));
    outcomes.push((
        "CALLER_NOT_LIVE",
        w.legacy().execute(GO, ctx_for("c", &w.stale_r)).await,
    ));
    outcomes.push((
        "DELEGATED_CALLER",
        w.legacy().execute(GO, ctx_for("c", &w.c)).await,
    ));
    outcomes.push(("NO_PROVIDER", w.legacy().execute(GO, ctx("c")).await));
    let cancelled = ctx("c");
    cancelled.cancel.cancel();
    outcomes.push(("ASK_ABORTED", w.legacy().execute(GO, cancelled).await));
    for (label, behaviour) in [
        (
            "ASK_CANCELLED",
            Behaviour::Typed(UserQuestionError::ask_cancelled),
        ),
        (
            "ASK_TIMED_OUT (blocking request)",
            Behaviour::Typed(UserQuestionError::ask_timed_out),
        ),
        (
            "BAD_ANSWER",
            Behaviour::Answer(AnswerBatch::new([AnswerItem::selected("go", ["Nope"])])),
        ),
    ] {
        let answerer = TestAnswerer::new(behaviour);
        let _guard = answerer.register(&w.seam);
        outcomes.push((label, w.legacy().execute(GO, ctx("c")).await));
    }
    {
        let gate = Arc::new(Notify::new());
        let answerer = TestAnswerer::new(Behaviour::Gated(gate.clone()));
        let _guard = answerer.register(&w.seam);
        let tool = w.timed(120);
        let first = {
            let tool = tool.clone();
            let ctx = ctx_for("call_same", &w.r);
            tokio::spawn(async move { tool.execute(GO, ctx).await })
        };
        settle().await;
        outcomes.push((
            "DUPLICATE_WAIT",
            tool.execute(GO, ctx_for("call_same", &w.r)).await,
        ));
        gate.notify_one();
        let success = first.await.unwrap();
        // E-ABORT: the caller cancelled after the body had succeeded.
        let token = CancellationToken::new();
        token.cancel();
        outcomes.push(("ABORTED (E-ABORT)", success.abort_if_cancelled(&token)));
    }
    outcomes.push(("E-T2 (uncoded)", w.timed(120).execute(GO, ctx("c")).await));
    {
        let answerer = TestAnswerer::new(Behaviour::Foreign);
        let _guard = answerer.register(&w.seam);
        outcomes.push((
            "foreign error (uncoded)",
            w.legacy().execute(GO, ctx("c")).await,
        ));
    }
    outcomes
}

#[test]
fn abort_applies_to_successes_only() {
    let cancelled = CancellationToken::new();
    cancelled.cancel();
    let live = CancellationToken::new();
    let pending = ToolOutcome::pending(&CallId::from("call_1"));
    assert_eq!(pending.clone().abort_if_cancelled(&live), pending);
    let aborted = pending.abort_if_cancelled(&cancelled);
    assert_eq!(aborted, ToolOutcome::aborted());
    assert_typed(&aborted, "AbortError", "ABORTED");
    assert_eq!(aborted.text, "Error: The tool call was aborted.");
    // An error result is kept as it is.
    let error = ToolOutcome::uncoded_error("boom");
    assert_eq!(error.clone().abort_if_cancelled(&cancelled), error);
}

#[tokio::test(start_paused = true)]
async fn tool_result_event_data() {
    let w = world();
    let answerer = TestAnswerer::new(Behaviour::FirstLabel);
    let guard = answerer.register(&w.seam);
    let call = CallId::from("call_go");
    let success = w.legacy().execute(GO, ctx("call_go")).await;
    drop(guard);
    let failed = w.legacy().execute(GO, ctx("call_go")).await;
    let pending = w.timed(1).execute(GO, ctx_for("call_go", &w.r)).await;
    let mut text = String::new();
    for outcome in [&success, &pending, &failed] {
        let data = outcome.tool_result_data(3, 2, "msg_7", &call);
        text.push_str(&serde_json::to_string(&data).unwrap());
        text.push('\n');
    }
    insta::assert_snapshot!("tool_result_data", text);
    // The projection reads `data.message.content[0].text` and `data.error.code`.
    let data = serde_json::to_value(failed.tool_result_data(3, 2, "msg_7", &call)).unwrap();
    assert_eq!(data["message"]["toolCallId"], "call_go");
    assert_eq!(data["message"]["content"][0]["text"], failed.text.as_str());
    assert_eq!(data["error"]["code"], "NO_PROVIDER");
}

/// Error info carries the code typed and serialises it as the SPEC's string (SPEC §3.3); a host
/// reading its own log back gets the same value.
#[test]
fn error_info_code_is_typed_on_the_wire_as_its_string() {
    let info = ErrorInfo {
        name: "UserQuestionError".into(),
        code: ErrorCode::NoProvider,
    };
    let json = serde_json::to_string(&info).unwrap();
    assert_eq!(json, r#"{"name":"UserQuestionError","code":"NO_PROVIDER"}"#);
    assert_eq!(serde_json::from_str::<ErrorInfo>(&json).unwrap(), info);
    let foreign: ErrorInfo =
        serde_json::from_str(r#"{"name":"UserQuestionError","code":"UI_GONE"}"#).unwrap();
    assert_eq!(foreign.code, ErrorCode::Other("UI_GONE".into()));
}
