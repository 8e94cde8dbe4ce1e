//! X10: the scripted answerer (SPEC §9.5).
// Test code stops at its first broken expectation: unwrap and expect are assertions here.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;

use common::*;
use user_questions::{
    AnsweredBy, AskRequest, Question, QuestionOption, RegisterOptions, ScriptedAnswerer,
    TimedAskRequest, TimedOutcome, UserQuestions,
};

const SCRIPT: &str = r#"{
  "answerer": "ci-script",
  "rules": [
    { "match": { "id": "cleanup" }, "answer": { "selected": ["No, keep them"] } },
    { "match": { "id": "notes", "questionContains": "release" }, "answer": { "selected": [], "custom": "ship today" } },
    { "match": { "id": "scope" }, "action": "timeOut" },
    { "match": { "id": "deploy" }, "action": "cancel" },
    { "match": { "id": "wrong" }, "answer": { "selected": ["Nope"] } }
  ]
}"#;

fn cleanup() -> Question {
    Question::new("cleanup", "Delete the stale files?").with_options([
        QuestionOption::new("Yes, delete them (Recommended)"),
        QuestionOption::new("No, keep them"),
    ])
}

fn notes() -> Question {
    Question::new("notes", "Anything for the release notes?")
}

fn register(seam: &UserQuestions) -> user_questions::AnswererGuard {
    let script = ScriptedAnswerer::from_json(SCRIPT).unwrap();
    let name = script.name().to_owned();
    seam.register(Arc::new(script), RegisterOptions::global(name))
}

#[tokio::test]
async fn x10_all_matched_answers_as_rule() {
    let seam = bare_seam();
    let _g = register(&seam);
    let answered = seam
        .ask(AskRequest::new([cleanup(), notes()]))
        .await
        .unwrap();
    let json = serde_json::to_string(&answered.answers).unwrap();
    assert_eq!(
        json,
        r#"{"answers":[{"id":"cleanup","selected":["No, keep them"]},{"id":"notes","selected":[],"custom":"ship today"}]}"#
    );
    assert_eq!(answered.provenance.answered_by, AnsweredBy::Rule);
    assert_eq!(answered.provenance.answerer, "ci-script");
}

#[tokio::test]
async fn x10_unmatched_declines() {
    let seam = bare_seam();
    let _g = register(&seam);
    let unmatched = Question::new("other", "Something else?");
    let result = seam.ask(AskRequest::new([cleanup(), unmatched])).await;
    assert_eq!(result.unwrap_err().code(), Some("NO_PROVIDER"));
    // `questionContains` must match too.
    let result = seam
        .ask(AskRequest::new([Question::new("notes", "Any notes?")]))
        .await;
    assert_eq!(result.unwrap_err().code(), Some("NO_PROVIDER"));
}

#[tokio::test(start_paused = true)]
async fn x10_time_out_action() {
    let w = world();
    let _g = register(&w.seam);
    let outcome = w
        .seam
        .ask_timed(
            TimedAskRequest::new([cleanup(), q_scope()], w.r.clone()),
            call("c1"),
            60_000,
        )
        .await
        .unwrap();
    assert_eq!(
        outcome,
        TimedOutcome::Pending {
            call_id: call("c1")
        }
    );
    let blocking = w.seam.ask(AskRequest::new([q_scope()])).await;
    assert_eq!(blocking.unwrap_err().code(), Some("ASK_TIMED_OUT"));
}

#[tokio::test]
async fn x10_cancel_action_and_wrong_label() {
    let seam = bare_seam();
    let _g = register(&seam);
    let deploy = Question::new("deploy", "Deploy now?");
    let result = seam.ask(AskRequest::new([deploy])).await;
    assert_eq!(result.unwrap_err().code(), Some("ASK_CANCELLED"));
    let wrong = Question::new("wrong", "Pick").with_options([QuestionOption::new("Yes")]);
    let result = seam.ask(AskRequest::new([wrong])).await;
    assert_eq!(result.unwrap_err().code(), Some("BAD_ANSWER"));
}

#[tokio::test]
async fn x10_first_action_in_question_order_wins() {
    let seam = bare_seam();
    let _g = register(&seam);
    let deploy = Question::new("deploy", "Deploy now?");
    // An unmatched question does not override an action.
    let result = seam
        .ask(AskRequest::new([
            Question::new("x", "?"),
            deploy,
            q_scope(),
        ]))
        .await;
    assert_eq!(result.unwrap_err().code(), Some("ASK_CANCELLED"));
}

#[test]
fn x10_load_errors() {
    for bad in [
        r#"{"rules":[],"extra":1}"#,
        r#"{"rules":[{"match":{"id":"a","other":1},"action":"cancel"}]}"#,
        r#"{"rules":[{"match":{"id":"a"}}]}"#,
        r#"{"rules":[{"match":{"id":"a"},"action":"cancel","answer":{"selected":[]}}]}"#,
        r#"{"rules":[{"match":{"id":"a"},"answer":{"custom":"x"}}]}"#,
        r#"{"rules":[{"match":{"id":"a"},"action":"explode"}]}"#,
    ] {
        assert!(ScriptedAnswerer::from_json(bad).is_err(), "{bad}");
    }
    let script = ScriptedAnswerer::from_json(r#"{"rules":[]}"#).unwrap();
    assert_eq!(script.name(), "scripted");
    let err = ScriptedAnswerer::from_path("/nonexistent/script.json").unwrap_err();
    assert!(err.to_string().contains("/nonexistent/script.json"));
}

#[test]
fn x10_from_file() {
    let dir = std::env::temp_dir().join(format!("uq-script-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("answers.json");
    std::fs::write(&path, SCRIPT).unwrap();
    let script = ScriptedAnswerer::from_path(&path).unwrap();
    assert_eq!(script.rules().len(), 5);
    std::fs::remove_dir_all(dir).unwrap();
}
