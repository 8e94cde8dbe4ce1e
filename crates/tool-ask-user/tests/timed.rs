//! The timed tool's execution through the real seam, under tokio's paused clock: SPEC §12.6 T9,
//! T12 (timed), T14–T18, T20, T24 (pending), and the tool side of X4.
// Test code stops at its first broken expectation: unwrap and expect are assertions here.
#![allow(clippy::unwrap_used, clippy::expect_used)]
// Timelines are written in milliseconds, as SPEC §12 states them.
#![allow(clippy::duration_suboptimal_units)]

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::*;
use serde_json::{Value, json};
use tokio::sync::Notify;
use tokio::time::{Instant, advance};
use tool_ask_user::{
    ANSWER_TOOL_NAME, AskUserConfig, AskUserTool, LateAnswerRoute, PENDING_NOTICE,
    PENDING_NOTICE_COMPANION, ToolContext, ToolOutcome, ToolRegistry,
};
use user_questions::{UserQuestionError, WaitKey, same_agent};

const SCOPE: &str = r#"{"questions":[{"id":"scope","question":"Which scope?","options":[{"label":"Tool only","description":"Only the tool package."},{"label":"Everything"}]}]}"#;

fn spawn_call(
    tool: &AskUserTool,
    arguments: &str,
    ctx: ToolContext,
) -> tokio::task::JoinHandle<ToolOutcome> {
    let tool = tool.clone();
    let arguments = arguments.to_owned();
    tokio::spawn(async move { tool.execute(&arguments, ctx).await })
}

#[track_caller]
fn assert_pending(outcome: &ToolOutcome, call_id: &str) {
    assert!(!outcome.is_error, "{outcome:?}");
    assert_eq!(outcome.error, None);
    assert_eq!(outcome.meta, None, "pending carries no provenance");
    let expected = json!({"pending": true, "callId": call_id, "message": PENDING_NOTICE});
    assert_eq!(outcome.text, expected.to_string());
    assert_eq!(outcome.value, Some(expected));
}

#[tokio::test(start_paused = true)]
async fn t9_indefinite_agentless_call_is_keyed_by_the_call() {
    let w = world();
    let answerer = TestAnswerer::new(Behaviour::FirstLabel);
    let _guard = answerer.register(&w.seam);
    let start = Instant::now();
    let outcome = w.timed(120).execute(
        r#"{"questions":[{"id":"scope","question":"Which scope?","options":[{"label":"Tool only","description":"Only the tool package."},{"label":"Everything"}]}],"timeout":-1}"#,
        ctx("call_forever"),
    ).await;
    assert_eq!(
        outcome.text,
        r#"{"answers":[{"id":"scope","selected":["Tool only"]}]}"#
    );
    assert_eq!(start.elapsed(), Duration::ZERO);
    let seen = answerer.last();
    assert_eq!(
        seen.wait,
        Some(WaitKey::Indefinite {
            call_id: "call_forever".into()
        })
    );
    assert!(seen.agent.is_none());
    assert_eq!(
        seen.questions[0].options()[0].description.as_deref(),
        Some("Only the tool package.")
    );
    assert_eq!(
        w.seam.live_waits(),
        0,
        "an indefinite wait is not a timed wait"
    );
}

/// A configured default of -1 makes every call indefinite; a positive per-call timeout overrides
/// it for that call only.
#[tokio::test(start_paused = true)]
async fn indefinite_default_and_per_call_override() {
    let w = world();
    let tool = w.timed(-1);
    let gate = Arc::new(Notify::new());
    let answerer = TestAnswerer::new(Behaviour::Gated(gate.clone()));
    let guard = answerer.register(&w.seam);
    let call = spawn_call(&tool, SCOPE, ctx_for("call_default", &w.r));
    settle().await;
    advance(Duration::from_secs(3600)).await;
    settle().await;
    assert!(!call.is_finished(), "-1 has no window");
    assert_eq!(
        answerer.last().wait,
        Some(WaitKey::Indefinite {
            call_id: "call_default".into()
        })
    );
    gate.notify_one();
    assert!(!call.await.unwrap().is_error);
    drop(guard);

    let with_timeout = r#"{"questions":[{"id":"scope","question":"Which scope?"}],"timeout":2}"#;
    let call = spawn_call(&tool, with_timeout, ctx_for("call_override", &w.r));
    settle().await;
    advance(Duration::from_millis(1999)).await;
    settle().await;
    assert!(!call.is_finished());
    advance(Duration::from_millis(1)).await;
    assert_pending(&call.await.unwrap(), "call_override");
}

#[tokio::test(start_paused = true)]
async fn t12_timed_answerer_token_is_a_child_of_the_execution_token() {
    let w = world();
    let gate = Arc::new(Notify::new());
    let answerer = TestAnswerer::new(Behaviour::Gated(gate));
    let _guard = answerer.register(&w.seam);
    let tool = w.timed(120);

    // Cancelling the execution cancels the answerer's token, and the call ends ASK_ABORTED.
    let ctx = ctx_for("call_child_token", &w.r);
    let execution = ctx.cancel.clone();
    let call = spawn_call(&tool, SCOPE, ctx);
    settle().await;
    let answerer_token = answerer.last().cancel;
    assert!(!answerer_token.is_cancelled());
    execution.cancel();
    assert!(answerer_token.is_cancelled());
    assert_seam_error(&call.await.unwrap(), "ASK_ABORTED");

    // Cancelling the answerer's token leaves the execution's alone.
    let ctx = ctx_for("call_child_token_2", &w.r);
    let execution = ctx.cancel.clone();
    let call = spawn_call(&tool, SCOPE, ctx);
    settle().await;
    let answerer_token = answerer.last().cancel;
    answerer_token.cancel();
    let outcome = call.await.unwrap();
    assert!(outcome.is_error, "{outcome:?}");
    assert!(!execution.is_cancelled());
}

/// Over MCP (late answers through the companion tool) the pending result is the same value with a
/// notice that says where the answer comes from: the model calls `ask_user_question_answer` with
/// this callId later; nothing claims a user message will arrive. One text block, one JSON object.
#[tokio::test(start_paused = true)]
async fn the_companion_route_renders_its_own_pending_notice() {
    let w = world();
    let answerer = TestAnswerer::new(Behaviour::Typed(UserQuestionError::ask_timed_out));
    let _guard = answerer.register(&w.seam);
    let config = AskUserConfig::timed_secs(120).with_late_answers(LateAnswerRoute::CompanionTool);
    let tool = AskUserTool::new(w.seam.clone(), Some(config)).unwrap();
    assert_eq!(tool.late_answers(), LateAnswerRoute::CompanionTool);
    assert!(tool.takes_late_answers());
    let outcome = tool.execute(SCOPE, ctx_for("ask-mcp", &w.r)).await;
    let expected =
        json!({"pending": true, "callId": "ask-mcp", "message": PENDING_NOTICE_COMPANION});
    assert_eq!(outcome.text, expected.to_string());
    assert_eq!(outcome.value, Some(expected));
    assert!(outcome.is_pending());
    assert_eq!(outcome, tool.pending_outcome(&"ask-mcp".into()));
    assert_eq!(
        outcome,
        ToolOutcome::pending_via(&"ask-mcp".into(), LateAnswerRoute::CompanionTool)
    );
    for fact in [
        "No answer yet",
        "not skipped",
        "not permission",
        "only independent work",
        ANSWER_TOOL_NAME,
        "this callId",
        "late answer",
    ] {
        assert!(
            PENDING_NOTICE_COMPANION.contains(fact),
            "notice lacks {fact:?}"
        );
    }
    assert!(!PENDING_NOTICE_COMPANION.contains("user message"));
    // The default route keeps the notice it always had.
    assert_eq!(
        w.timed(120).pending_outcome(&"ask-mcp".into()),
        ToolOutcome::pending(&"ask-mcp".into())
    );
    insta::assert_snapshot!("pending_result_companion", outcome.text);
}

#[tokio::test(start_paused = true)]
async fn t14_answerer_timeout_gives_the_pending_result() {
    let w = world();
    let answerer = TestAnswerer::new(Behaviour::Typed(UserQuestionError::ask_timed_out));
    let _guard = answerer.register(&w.seam);
    let tool = w.timed(120);
    let arguments = r#"{"questions":[{"id":"scope","question":"Which scope?","options":[{"label":"Tool only"},{"label":"Everything"}]}],"timeout":1}"#;
    let outcome = tool.execute(arguments, ctx_for("ask-timeout", &w.r)).await;
    let seen = answerer.last();
    match &seen.wait {
        Some(WaitKey::Timed { call_id, .. }) => assert_eq!(call_id.as_str(), "ask-timeout"),
        other => panic!("expected a timed wait key, got {other:?}"),
    }
    assert!(same_agent(seen.agent.as_ref().unwrap(), &w.r));
    assert_pending(&outcome, "ask-timeout");
    // One JSON object, keys in the order pending, callId, message.
    let parsed: Value = serde_json::from_str(&outcome.text).unwrap();
    assert_eq!(
        parsed.as_object().unwrap().keys().collect::<Vec<_>>(),
        ["pending", "callId", "message"]
    );
    assert!(
        outcome
            .text
            .starts_with(r#"{"pending":true,"callId":"ask-timeout","message":"#)
    );
    // The notice conveys G20's facts, in as few tokens as they fit (the catalog counts them):
    // not an answer yet, not skipped, not permission; only independent work; a late answer comes as
    // a user message of that kind with this call id and the questions.
    for fact in [
        "No answer yet",
        "not skipped",
        "not permission",
        "only independent work",
        "any late answer",
        "user message",
        "answer_to_pending_question",
        "callId",
        "the questions",
    ] {
        assert!(PENDING_NOTICE.contains(fact), "notice lacks {fact:?}");
    }
    // What the projection folds (SPEC §8.3–§8.5): the registered timed schema makes the header
    // timed, the call is tracked, and this result text is pending JSON, so the call becomes
    // continued.
    let registry = ToolRegistry::new();
    let _registration = tool.register(&registry).unwrap();
    assert!(is_timed_header(
        &serde_json::to_value(registry.definitions()).unwrap()
    ));
    assert!(is_pending_json(&outcome.text));
    assert!(strict_batch(&outcome.text).is_none());
    assert_eq!(
        fold_logged(&registry.definitions(), "ask-timeout", arguments, &outcome),
        serde_json::json!({"active": [{
            "callId": "ask-timeout",
            "questions": [{"id": "scope", "question": "Which scope?",
                           "options": [{"label": "Tool only"}, {"label": "Everything"}]}],
            "state": "continued"
        }], "settled": []})
    );
}

#[tokio::test(start_paused = true)]
async fn t15_no_answerer_goes_pending_after_the_window() {
    let w = world();
    let call = spawn_call(
        &w.timed(120),
        r#"{"questions":[{"id":"scope","question":"Which scope?"}],"timeout":1}"#,
        ctx_for("call_window", &w.r),
    );
    settle().await;
    advance(Duration::from_millis(999)).await;
    settle().await;
    assert!(!call.is_finished(), "unsettled at 999 ms");
    advance(Duration::from_millis(1)).await;
    assert_pending(&call.await.unwrap(), "call_window");
    assert_eq!(w.seam.live_waits(), 0);
}

/// X11, tool side: no answerer, the default 120 s window → pending at exactly 120 000 ms.
#[tokio::test(start_paused = true)]
async fn default_window_is_120_seconds() {
    let w = world();
    let start = Instant::now();
    let outcome = w
        .timed(120)
        .execute(SCOPE, ctx_for("call_default", &w.r))
        .await;
    assert_pending(&outcome, "call_default");
    assert_eq!(start.elapsed(), Duration::from_millis(120_000));
}

#[tokio::test(start_paused = true)]
async fn t16_positive_timeout_needs_a_live_agent() {
    let w = world();
    let answerer = TestAnswerer::new(Behaviour::FirstLabel);
    let _guard = answerer.register(&w.seam);
    let outcome = w.timed(120).execute(SCOPE, ctx("call_agentless")).await;
    assert!(outcome.is_error);
    assert_eq!(outcome.error, None, "E-T2 is uncoded");
    assert_eq!(outcome.value, None);
    assert_eq!(
        outcome.text,
        "Error: A timed question can only be asked from a live agent."
    );
    assert_eq!(answerer.calls(), 0);
    // An agent that is not the registry's live instance is the seam's CALLER_NOT_LIVE.
    let outcome = w
        .timed(120)
        .execute(SCOPE, ctx_for("call_stale", &w.stale_r))
        .await;
    assert_seam_error(&outcome, "CALLER_NOT_LIVE");
}

#[track_caller]
fn check_args(outcome: &ToolOutcome, fragments: &[&str]) {
    assert_invalid_args(outcome, fragments);
}

#[tokio::test(start_paused = true)]
async fn t17_bad_timeout_and_arguments() {
    let w = world();
    let answerer = TestAnswerer::new(Behaviour::FirstLabel);
    let _guard = answerer.register(&w.seam);
    let tool = w.timed(120);
    let call = |timeout: &str| {
        format!(r#"{{"questions":[{{"id":"q","question":"Q?"}}],"timeout":{timeout}}}"#)
    };
    let range = [r#""timeout""#, "-1", "2147483"];
    for timeout in [
        "0",
        "2147484",
        "-2",
        "9223372036854775808",
        "1e400",
        "-1e400",
    ] {
        let outcome = tool
            .execute(&call(timeout), ctx_for("call_t17", &w.r))
            .await;
        check_args(&outcome, &range);
    }
    // A fractional or non-numeric timeout fails the schema check.
    check_args(
        &tool.execute(&call("1.5"), ctx_for("call_t17", &w.r)).await,
        &[r#""timeout" must be an integer"#],
    );
    check_args(
        &tool
            .execute(&call(r#""120""#), ctx_for("call_t17", &w.r))
            .await,
        &[r#""timeout" must be an integer, not a string"#],
    );
    check_args(
        &tool
            .execute(r#"{"timeout":5}"#, ctx_for("call_t17", &w.r))
            .await,
        &[r#"missing required property "questions""#],
    );
    assert_eq!(answerer.calls(), 0);
    assert_eq!(w.seam.live_waits(), 0);
    // Integral floats are integers: 1.0 and 1e0 are a one-second window.
    for timeout in ["1.0", "1e0", "0.1e1"] {
        let outcome = tool
            .execute(&call(timeout), ctx_for("call_t17", &w.r))
            .await;
        assert_eq!(
            outcome.text, r#"{"answers":[{"id":"q","selected":[]}]}"#,
            "{timeout}"
        );
    }
}

#[tokio::test(start_paused = true)]
async fn t18_timed_duplicate_ids_are_rejected_before_dispatch() {
    let w = world();
    let answerer = TestAnswerer::new(Behaviour::FirstLabel);
    let _guard = answerer.register(&w.seam);
    let mut events = w.seam.subscribe();
    let duplicate =
        r#"{"questions":[{"id":"scope","question":"A?"},{"id":"scope","question":"B?"}]}"#;
    for (tool, ctx) in [
        (w.timed(120), ctx_for("call_dup", &w.r)),
        (w.timed(-1), ctx("call_dup")),
        // No agent and a positive timeout: the limit check still comes first.
        (w.timed(120), ctx("call_dup")),
    ] {
        let outcome = tool.execute(duplicate, ctx).await;
        assert_seam_error(&outcome, "BAD_QUESTIONS");
        assert!(outcome.text.contains(r#""scope""#), "{}", outcome.text);
    }
    // The timeout is checked first (SPEC §5.3 step 1 before step 2).
    let both = r#"{"questions":[{"id":"scope","question":"A?"},{"id":"scope","question":"B?"}],"timeout":0}"#;
    let outcome = w.timed(120).execute(both, ctx_for("call_dup", &w.r)).await;
    assert_invalid_args(&outcome, &[r#""timeout""#]);
    assert_eq!(answerer.calls(), 0);
    assert_eq!(w.seam.live_waits(), 0);
    assert!(
        events.try_recv().is_none(),
        "no request was opened, so no wait was registered"
    );
    // Nine questions break the count cap, nine options the options cap.
    let nine: Vec<Value> = (0..9)
        .map(|i| json!({"id": format!("q{i}"), "question": "Q?"}))
        .collect();
    let outcome = w
        .timed(120)
        .execute(
            &json!({ "questions": nine }).to_string(),
            ctx_for("call_nine", &w.r),
        )
        .await;
    assert_seam_error(&outcome, "BAD_QUESTIONS");
    let options: Vec<Value> = (0..9).map(|i| json!({"label": format!("o{i}")})).collect();
    let outcome = w
        .timed(120)
        .execute(
            &json!({"questions":[{"id":"many","question":"Q?","options":options}]}).to_string(),
            ctx_for("call_options", &w.r),
        )
        .await;
    assert_seam_error(&outcome, "BAD_QUESTIONS");
    assert!(outcome.text.contains(r#""many""#), "{}", outcome.text);
    assert_eq!(answerer.calls(), 0);
}

#[tokio::test(start_paused = true)]
async fn t20_indefinite_with_no_answerer_is_no_provider() {
    let w = world();
    let start = Instant::now();
    for ctx in [ctx("call_none"), ctx_for("call_none", &w.r)] {
        let outcome = w
            .timed(120)
            .execute(
                r#"{"questions":[{"id":"scope","question":"Which scope?"}],"timeout":-1}"#,
                ctx,
            )
            .await;
        assert_seam_error(&outcome, "NO_PROVIDER");
    }
    assert_eq!(start.elapsed(), Duration::ZERO);
}

#[tokio::test(start_paused = true)]
async fn t24_pending_and_errors_carry_no_provenance() {
    let w = world();
    let answerer = TestAnswerer::new(Behaviour::FirstLabel);
    let guard = answerer.register(&w.seam);
    let success = w.timed(120).execute(SCOPE, ctx_for("call_p", &w.r)).await;
    assert_eq!(
        success.meta,
        Some(json!({"provenance":{"answerer":"ui","answeredBy":"human"}}))
    );
    assert!(!success.text.contains("provenance"));
    drop(guard);
    let pending = w
        .timed(120)
        .execute(
            r#"{"questions":[{"id":"scope","question":"Which scope?"}],"timeout":1}"#,
            ctx_for("call_p", &w.r),
        )
        .await;
    assert_pending(&pending, "call_p");
    let error = w.timed(120).execute("{}", ctx_for("call_p", &w.r)).await;
    assert_eq!(error.meta, None);
}

/// X4, tool side: an item with an extra key (read through a transport DTO) reaches the model as
/// `id, selected, custom` only, which the projection's strict reader accepts.
#[tokio::test(start_paused = true)]
async fn x4_extra_answer_keys_never_reach_the_model() {
    let w = world();
    let answerer = TestAnswerer::new(Behaviour::AnswerJson(
        r#"{"answers":[{"id":"scope","selected":["Tool only"],"custom":"also docs","confidence":0.9}],"transport":"ws"}"#,
    ));
    let _guard = answerer.register(&w.seam);
    for (tool, ctx) in [
        (w.legacy(), ctx("call_x4")),
        (w.timed(120), ctx_for("call_x4", &w.r)),
    ] {
        let outcome = tool.execute(SCOPE, ctx).await;
        assert_eq!(
            outcome.text,
            r#"{"answers":[{"id":"scope","selected":["Tool only"],"custom":"also docs"}]}"#
        );
        let batch = strict_batch(&outcome.text).expect("a strict batch");
        assert_eq!(batch.answers[0].custom.as_deref(), Some("also docs"));
    }
}

/// Cancelling the turn while a timed call waits ends it `ASK_ABORTED`, never pending.
#[tokio::test(start_paused = true)]
async fn cancelled_turn_is_aborted_not_pending() {
    let w = world();
    let ctx = ctx_for("call_cancel", &w.r);
    let turn = ctx.cancel.clone();
    let call = spawn_call(&w.timed(5), SCOPE, ctx);
    settle().await;
    advance(Duration::from_millis(1000)).await;
    turn.cancel();
    let outcome = call.await.unwrap();
    assert_seam_error(&outcome, "ASK_ABORTED");
    assert!(!is_pending_json(&outcome.text));
    assert_eq!(w.seam.live_waits(), 0);
}

/// Two concurrent foreground waits of one agent under one call id: the second is refused.
#[tokio::test(start_paused = true)]
async fn duplicate_wait_for_one_call() {
    let w = world();
    let gate = Arc::new(Notify::new());
    let answerer = TestAnswerer::new(Behaviour::Gated(gate.clone()));
    let _guard = answerer.register(&w.seam);
    let tool = w.timed(120);
    let first = spawn_call(&tool, SCOPE, ctx_for("call_same", &w.r));
    settle().await;
    let second = tool.execute(SCOPE, ctx_for("call_same", &w.r)).await;
    assert_seam_error(&second, "DUPLICATE_WAIT");
    gate.notify_one();
    assert_eq!(
        first.await.unwrap().text,
        r#"{"answers":[{"id":"scope","selected":["Tool only"]}]}"#
    );
}

/// The timed tool's requests open timed waits (lifecycle events), with the claimable window.
#[tokio::test(start_paused = true)]
async fn timed_calls_open_claimable_waits() {
    let w = world();
    let mut events = w.seam.subscribe();
    let call = spawn_call(&w.timed(30), SCOPE, ctx_for("call_claim", &w.r));
    settle().await;
    let claim = w
        .seam
        .attach_wait(&w.r, &"call_claim".into())
        .unwrap()
        .expect("the wait is claimable");
    assert_eq!(claim.remaining_ms(), 30_000);
    // While the claim is held the host does not count down.
    advance(Duration::from_secs(60)).await;
    settle().await;
    assert!(!call.is_finished());
    drop(claim);
    assert_pending(&call.await.unwrap(), "call_claim");
    let kinds: Vec<&str> = events.drain().iter().map(|e| e.kind.name()).collect();
    assert_eq!(kinds, ["opened", "claimed", "pending"]);
}
