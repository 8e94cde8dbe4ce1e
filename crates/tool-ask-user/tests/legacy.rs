//! The legacy tool's execution through the real seam: SPEC §12.6 T7, T8, T10, T12 (legacy), T13,
//! T18 (legacy), T19, T21, T22, T24.
// Test code stops at its first broken expectation: unwrap and expect are assertions here.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;

use common::*;
use serde_json::json;
use tokio::sync::Notify;
use tool_ask_user::ToolRegistry;
use user_questions::{
    AnswerBatch, AnswerItem, Question, QuestionOption, UserQuestionError, same_agent,
};

#[tokio::test]
async fn t7_legacy_agentless_first_label() {
    let w = world();
    let answerer = TestAnswerer::new(Behaviour::FirstLabel);
    let _guard = answerer.register(&w.seam);
    let tool = w.legacy();
    let arguments = r#"{"questions":[{"id":"continue","question":"Continue?","options":[{"label":"yes"},{"label":"no"}]}]}"#;
    let outcome = tool.execute(arguments, ctx("call_continue")).await;
    assert!(!outcome.is_error);
    assert_eq!(
        outcome.text,
        r#"{"answers":[{"id":"continue","selected":["yes"]}]}"#
    );
    let seen = answerer.last();
    assert!(seen.wait.is_none(), "legacy requests are unkeyed");
    assert!(seen.agent.is_none());
    assert_eq!(
        seen.questions,
        vec![
            Question::new("continue", "Continue?")
                .with_options([QuestionOption::new("yes"), QuestionOption::new("no")])
        ]
    );
    // What the projection folds (SPEC §8.3): a header with the registered legacy schema is not
    // timed, so the call and its result never enter the view. The result text itself is a
    // strict batch, which only matters under a timed header.
    let registry = ToolRegistry::new();
    let _registration = tool.register(&registry).unwrap();
    let header = serde_json::to_value(registry.definitions()).unwrap();
    assert!(!is_timed_header(&header));
    assert!(strict_batch(&outcome.text).is_some());
    assert!(!is_pending_json(&outcome.text));
    assert_eq!(
        fold_logged(
            &registry.definitions(),
            "call_continue",
            arguments,
            &outcome
        ),
        serde_json::json!({"active": [], "settled": []})
    );
}

#[tokio::test]
async fn t8_legacy_with_agent_and_every_optional_field() {
    let w = world();
    let answerer = TestAnswerer::new(Behaviour::Answer(AnswerBatch::new([AnswerItem::custom(
        "pkg", "bun",
    )])));
    let _guard = answerer.register(&w.seam);
    let arguments = json!({"questions":[{
        "id":"pkg",
        "question":"Which package manager?",
        "header":"Setup",
        "multi_select":false,
        "options":[
            {"label":"pnpm (Recommended)","description":"Fast, strict installs."},
            {"label":"npm"}
        ]
    }]})
    .to_string();
    let outcome = w
        .legacy()
        .execute(&arguments, ctx_for("call_pkg", &w.r))
        .await;
    assert_eq!(
        outcome.text,
        r#"{"answers":[{"id":"pkg","selected":[],"custom":"bun"}]}"#
    );
    let seen = answerer.last();
    assert!(same_agent(seen.agent.as_ref().unwrap(), &w.r));
    assert!(seen.wait.is_none());
    assert_eq!(
        serde_json::to_string(&seen.questions).unwrap(),
        r#"[{"id":"pkg","question":"Which package manager?","header":"Setup","options":[{"label":"pnpm (Recommended)","description":"Fast, strict installs."},{"label":"npm"}],"multiSelect":false}]"#
    );
}

#[tokio::test]
async fn t10_recommended_labels_pass_through_both_ways() {
    let w = world();
    let answerer = TestAnswerer::new(Behaviour::FirstLabel);
    let _guard = answerer.register(&w.seam);
    for tool in [w.legacy(), w.timed(-1)] {
        let outcome = tool
            .execute(
                r#"{"questions":[{"id":"db","question":"Which database?","options":[{"label":"Postgres (Recommended)"},{"label":"SQLite"}]}]}"#,
                ctx("call_db"),
            )
            .await;
        assert_eq!(
            outcome.text,
            r#"{"answers":[{"id":"db","selected":["Postgres (Recommended)"]}]}"#
        );
        assert_eq!(
            answerer.last().questions[0].options()[0].label,
            "Postgres (Recommended)"
        );
    }
}

/// The §5.6 example: multi-select with custom, labels only, custom only (single-select), skipped.
#[tokio::test]
async fn t11_four_questions_render_the_spec_example() {
    let w = world();
    let batch = AnswerBatch::new([
        AnswerItem::selected("targets", ["tests", "docs"]).with_custom("release notes"),
        AnswerItem::selected("labels-only", ["tests"]),
        AnswerItem::custom("notes", "ship today"),
        AnswerItem::skipped("optional"),
    ]);
    let answerer = TestAnswerer::new(Behaviour::Answer(batch.clone()));
    let _guard = answerer.register(&w.seam);
    let arguments = json!({"questions":[
        {"id":"targets","question":"What should ship?","multi_select":true,
         "options":[{"label":"tests"},{"label":"docs"}]},
        {"id":"labels-only","question":"Which label?","options":[{"label":"tests"},{"label":"docs"}]},
        {"id":"notes","question":"Anything else?"},
        {"id":"optional","question":"Optional remarks?"}
    ]})
    .to_string();
    for (tool, ctx) in [
        (w.legacy(), ctx("call_four")),
        (w.timed(120), ctx_for("call_four", &w.r)),
    ] {
        let outcome = tool.execute(&arguments, ctx).await;
        assert_eq!(
            outcome.text,
            r#"{"answers":[{"id":"targets","selected":["tests","docs"],"custom":"release notes"},{"id":"labels-only","selected":["tests"]},{"id":"notes","selected":[],"custom":"ship today"},{"id":"optional","selected":[]}]}"#
        );
        assert_eq!(
            outcome.value,
            Some(serde_json::to_value(&batch).unwrap()),
            "the value equals the answerer's batch"
        );
    }
}

#[tokio::test]
async fn t12_legacy_request_token_is_the_execution_token() {
    let w = world();
    let arguments = r#"{"questions":[{"id":"go","question":"Go?","options":[{"label":"yes"}]}]}"#;
    // The answerer cancels its token: the execution's token is cancelled too.
    {
        let answerer = TestAnswerer::new(Behaviour::CancelOwnThenAnswer);
        let _guard = answerer.register(&w.seam);
        let ctx = ctx("call_go");
        let execution = ctx.cancel.clone();
        let outcome = w.legacy().execute(arguments, ctx).await;
        assert!(!outcome.is_error, "{outcome:?}");
        assert!(execution.is_cancelled());
    }
    // The execution is cancelled: the answerer's token is cancelled too.
    {
        let gate = Arc::new(Notify::new());
        let answerer = TestAnswerer::new(Behaviour::Gated(gate));
        let _guard = answerer.register(&w.seam);
        let ctx = ctx("call_go");
        let execution = ctx.cancel.clone();
        let tool = w.legacy();
        let call = tokio::spawn(async move { tool.execute(arguments, ctx).await });
        settle().await;
        let answerer_token = answerer.last().cancel;
        assert!(!answerer_token.is_cancelled());
        execution.cancel();
        assert!(answerer_token.is_cancelled());
        assert_seam_error(&call.await.unwrap(), "ASK_ABORTED");
    }
}

#[tokio::test]
async fn t13_lineage_root_forwards_header_and_agent() {
    let w = world();
    let answerer = TestAnswerer::new(Behaviour::FirstLabel);
    let _guard = answerer.register(&w.seam);
    let outcome = w
        .legacy()
        .execute(
            r#"{"questions":[{"id":"continue","header":"Confirm","question":"Continue?","options":[{"label":"ok"},{"label":"cancel"}]}]}"#,
            ctx_for("call_l", &w.l),
        )
        .await;
    assert_eq!(
        outcome.text,
        r#"{"answers":[{"id":"continue","selected":["ok"]}]}"#
    );
    let seen = answerer.last();
    assert!(same_agent(seen.agent.as_ref().unwrap(), &w.l));
    assert_eq!(seen.questions[0].header.as_deref(), Some("Confirm"));
}

#[tokio::test]
async fn t18_legacy_duplicate_ids_fail_in_the_seam() {
    let w = world();
    let answerer = TestAnswerer::new(Behaviour::FirstLabel);
    let _guard = answerer.register(&w.seam);
    let outcome = w
        .legacy()
        .execute(
            r#"{"questions":[{"id":"scope","question":"A?"},{"id":"scope","question":"B?"}]}"#,
            ctx("call_dup"),
        )
        .await;
    assert_seam_error(&outcome, "BAD_QUESTIONS");
    assert!(outcome.text.contains(r#""scope""#), "{}", outcome.text);
    assert_eq!(answerer.calls(), 0);
}

#[tokio::test]
async fn t19_separate_calls_may_reuse_question_ids() {
    let w = world();
    let answerer = TestAnswerer::new(Behaviour::FirstLabel);
    let _guard = answerer.register(&w.seam);
    let arguments = r#"{"questions":[{"id":"confirm","question":"Proceed?","options":[{"label":"yes"},{"label":"no"}]}]}"#;
    for tool in [w.legacy(), w.timed(120)] {
        let first = tool.execute(arguments, ctx_for("call_a", &w.r)).await;
        let second = tool.execute(arguments, ctx_for("call_b", &w.r)).await;
        for outcome in [first, second] {
            assert_eq!(
                outcome.text,
                r#"{"answers":[{"id":"confirm","selected":["yes"]}]}"#
            );
        }
    }
    assert_eq!(answerer.calls(), 4);
}

#[tokio::test]
async fn t21_delegated_child_cannot_ask() {
    let w = world();
    let answerer = TestAnswerer::new(Behaviour::FirstLabel);
    let _guard = answerer.register(&w.seam);
    let arguments = r#"{"questions":[{"id":"cuda-fallback","header":"Deployment","question":"Should deployment use the CUDA fallback?"}]}"#;
    for tool in [w.legacy(), w.timed(120), w.timed(-1)] {
        let outcome = tool.execute(arguments, ctx_for("call_child", &w.c)).await;
        assert_seam_error(&outcome, "DELEGATED_CALLER");
        assert!(outcome.text.contains("final result"), "{}", outcome.text);
    }
    assert_eq!(answerer.calls(), 0);
}

#[tokio::test]
async fn t22_empty_questions() {
    let w = world();
    let answerer = TestAnswerer::new(Behaviour::FirstLabel);
    let _guard = answerer.register(&w.seam);
    for (tool, ctx) in [
        (w.legacy(), ctx("call_empty")),
        (w.timed(120), ctx_for("call_empty", &w.r)),
        (w.timed(-1), ctx("call_empty")),
    ] {
        let outcome = tool.execute(r#"{"questions":[]}"#, ctx).await;
        assert_seam_error(&outcome, "EMPTY_QUESTIONS");
    }
    assert_eq!(answerer.calls(), 0);
    assert_eq!(w.seam.live_waits(), 0);
}

#[tokio::test]
async fn t24_provenance_only_on_answers() {
    let w = world();
    let answerer = TestAnswerer::new(Behaviour::FirstLabel);
    let guard = answerer.register(&w.seam);
    let arguments = r#"{"questions":[{"id":"go","question":"Go?","options":[{"label":"yes"}]}]}"#;
    let success = w.legacy().execute(arguments, ctx("call_go")).await;
    assert_eq!(
        success.meta,
        Some(json!({"provenance":{"answerer":"ui","answeredBy":"human"}}))
    );
    assert_eq!(
        serde_json::to_string(&success.meta).unwrap(),
        r#"{"provenance":{"answerer":"ui","answeredBy":"human"}}"#
    );
    assert!(!success.text.contains("provenance"));
    assert!(!success.text.contains("answeredBy"));
    drop(guard);
    let failed = w.legacy().execute(arguments, ctx("call_go")).await;
    assert_seam_error(&failed, "NO_PROVIDER");
    assert_eq!(failed.meta, None);
}

/// SPEC §5.4: extra keys in question and option objects are dropped, `multi_select: false` is
/// kept, absent and empty options stay distinct.
#[tokio::test]
async fn legacy_mapping_drops_extra_keys() {
    let w = world();
    let answerer = TestAnswerer::new(Behaviour::Answer(AnswerBatch::new([
        AnswerItem::skipped("a"),
        AnswerItem::skipped("b"),
    ])));
    let _guard = answerer.register(&w.seam);
    let arguments = json!({
        "questions":[
            {"id":"a","question":"A?","options":[{"label":"x","value":"X","recommended":true,"preview":"p"}],
             "multi_select":false,"allow_custom":true,"detail":"ignored","intent":{"kind":"plan-review","approve":"x"}},
            {"id":"b","question":"B?","options":[]}
        ],
        "timeout": 5,
        "note": {"deep": [[[[1]]]]}
    })
    .to_string();
    let outcome = w.legacy().execute(&arguments, ctx("call_map")).await;
    assert!(!outcome.is_error, "{outcome:?}");
    assert_eq!(
        serde_json::to_string(&answerer.last().questions).unwrap(),
        r#"[{"id":"a","question":"A?","options":[{"label":"x"}],"multiSelect":false},{"id":"b","question":"B?","options":[]}]"#
    );
}

/// Typed errors of answerers reach the model unchanged; foreign ones carry no error info.
#[tokio::test]
async fn legacy_answerer_errors() {
    let w = world();
    let arguments = r#"{"questions":[{"id":"go","question":"Go?","options":[{"label":"yes"}]}]}"#;
    let cancelled = TestAnswerer::new(Behaviour::Typed(UserQuestionError::ask_cancelled));
    let guard = cancelled.register(&w.seam);
    assert_seam_error(
        &w.legacy().execute(arguments, ctx("call_go")).await,
        "ASK_CANCELLED",
    );
    drop(guard);
    let foreign = TestAnswerer::new(Behaviour::Foreign);
    let _guard = foreign.register(&w.seam);
    let outcome = w.legacy().execute(arguments, ctx("call_go")).await;
    assert!(outcome.is_error);
    assert_eq!(outcome.error, None);
    assert_eq!(outcome.text, "Error: relay disconnected: foreign");
}

/// Legacy never reports pending: an answerer's own timeout is an ordinary error, and with no
/// answerer the call fails at once with `NO_PROVIDER` (X11, tool side), whatever `timeout` says.
#[tokio::test(start_paused = true)]
async fn legacy_never_reports_pending() {
    let w = world();
    let start = tokio::time::Instant::now();
    let arguments = r#"{"questions":[{"id":"go","question":"Go?"}],"timeout":1}"#;
    let outcome = w
        .legacy()
        .execute(arguments, ctx_for("call_go", &w.r))
        .await;
    assert_seam_error(&outcome, "NO_PROVIDER");
    assert_eq!(start.elapsed(), std::time::Duration::ZERO);
    let answerer = TestAnswerer::new(Behaviour::Typed(UserQuestionError::ask_timed_out));
    let _guard = answerer.register(&w.seam);
    let outcome = w
        .legacy()
        .execute(arguments, ctx_for("call_go", &w.r))
        .await;
    assert_seam_error(&outcome, "ASK_TIMED_OUT");
    assert!(!is_pending_json(&outcome.text));
    assert!(answerer.last().wait.is_none());
}
