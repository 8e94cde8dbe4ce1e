//! SPEC §12.10: I1 (a child agent's question is rejected and the parent completes) and I2 (a timed
//! question goes pending, the store is closed and reopened, and a late answer settles it), through
//! the reference host with real JSONL logs.
// Test code stops at its first broken expectation: unwrap and expect are assertions here.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs::File;
use std::io::BufReader;
use std::sync::Arc;
use std::time::Duration;

use ask_user_cli::host::{Host, HostOptions, LogTarget};
use pending_answer::LateRefusal;
use tool_ask_user::AskUserConfig;
use user_questions::{
    AnswerBatch, AnswerItem, CallId, CancellationToken, ErrorCode, InMemoryAgentRegistry,
    Provenance, RegisterOptions, ScriptedAnswerer, SessionId,
};
use user_questions_projection::{ActiveState, fold_log};

const SCOPE_ARGS: &str = r#"{"questions":[{"id":"scope","question":"Which scope?","options":[{"label":"Tool only"},{"label":"Everything"}]}]}"#;

fn options(tool: AskUserConfig, log: LogTarget) -> HostOptions {
    HostOptions::new(Some(tool), log)
}

/// The records of a log as JSON values (after the header).
fn records(path: &std::path::Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// A fresh timed session at `log` whose question `call` went pending: the scripted answerer
/// times out on purpose, so no clock is involved. Returns the host (still open) and the text the
/// model read, and the scripted answerer's registration.
async fn pending_session(
    log: &std::path::Path,
    call: &CallId,
) -> (Host, String, user_questions::AnswererGuard) {
    let (host, _) = Host::open(options(
        AskUserConfig::timed_secs(120),
        LogTarget::Create(log.to_path_buf()),
    ))
    .unwrap();
    let script =
        ScriptedAnswerer::from_json(r#"{"rules":[{"match":{"id":"scope"},"action":"timeOut"}]}"#)
            .unwrap();
    let guard = host
        .seam()
        .register(Arc::new(script), RegisterOptions::global("scripted"));
    host.begin_turn().unwrap();
    host.begin_step().unwrap();
    host.log_request_header().unwrap();
    let outcome = host
        .call_tool(call, SCOPE_ARGS, CancellationToken::new())
        .await
        .unwrap();
    host.end_turn("completed").unwrap();
    (host, outcome.text, guard)
}

#[tokio::test(start_paused = true)]
async fn i1_a_child_agent_cannot_ask_and_reports_the_question_instead() {
    let dir = tempfile::tempdir().unwrap();
    let registry = InMemoryAgentRegistry::new();
    let mut parent_options = options(AskUserConfig::timed_secs(120), LogTarget::Memory);
    parent_options.registry = Some(registry.clone());
    parent_options.agent_id = "parent".to_owned();
    let (parent, _) = Host::open(parent_options).unwrap();

    // The parent delegates: the child is entered as a live child of the parent, with its own log.
    let child_log = dir.path().join("child.jsonl");
    let mut child_options = options(
        AskUserConfig::timed_secs(120),
        LogTarget::Create(child_log.clone()),
    );
    child_options.registry = Some(registry.clone());
    child_options.owner = Some(parent.agent());
    child_options.agent_id = "child".to_owned();
    child_options.session_id = SessionId::from("child-session");
    let (child, _) = Host::open(child_options).unwrap();
    // Even an answerer that would answer anything is never reached.
    let script = ScriptedAnswerer::from_json(
        r#"{"rules":[{"match":{"id":"cuda-fallback"},"answer":{"selected":[],"custom":"yes"}}]}"#,
    )
    .unwrap();
    let _guard = child
        .seam()
        .register(Arc::new(script), RegisterOptions::global("scripted"));

    let child_run = tokio::spawn(async move {
        child.begin_turn().unwrap();
        child.begin_step().unwrap();
        child.log_request_header().unwrap();
        let question = "Should deployment use the CUDA fallback?";
        let arguments = format!(
            r#"{{"questions":[{{"id":"cuda-fallback","header":"Deployment","question":"{question}"}}]}}"#
        );
        let outcome = child
            .call_tool(
                &CallId::from("call_child_1"),
                &arguments,
                CancellationToken::new(),
            )
            .await
            .unwrap();
        // The scripted child model follows the error's instruction: the unresolved question
        // goes into its final result.
        let final_result = if outcome
            .error
            .as_ref()
            .is_some_and(|e| e.code == ErrorCode::DelegatedCaller)
        {
            format!("Not decided (needs the person): {question}")
        } else {
            outcome.text.clone()
        };
        child.assistant_text(&final_result).unwrap();
        child.end_turn("completed").unwrap();
        (outcome, final_result)
    });
    // The parent completes: with the paused clock, a child stuck on a timer would make the
    // timeout fire instead.
    let (outcome, final_result) = tokio::time::timeout(Duration::from_mins(10), child_run)
        .await
        .expect("the child finished without hanging")
        .unwrap();

    assert!(outcome.is_error);
    assert!(outcome.text.starts_with("Error: "), "{}", outcome.text);
    assert!(outcome.text.contains("final result"), "{}", outcome.text);
    let error = outcome.error.unwrap();
    assert_eq!(
        (error.name.as_str(), error.code.as_str()),
        ("UserQuestionError", "DELEGATED_CALLER")
    );
    assert!(final_result.contains("Should deployment use the CUDA fallback?"));

    let logged = records(&child_log);
    let result = logged.iter().find(|r| r["type"] == "tool/result").unwrap();
    assert_eq!(
        result["data"]["error"],
        serde_json::json!({"name":"UserQuestionError","code":"DELEGATED_CALLER"})
    );
    assert_eq!(result["data"]["message"]["isError"], true);
    assert_eq!(
        result["data"]["message"]["content"][0]["text"]
            .as_str()
            .unwrap(),
        outcome.text
    );
    // A failed call drops out of the projection: nothing is left to answer.
    let folded = fold_log(BufReader::new(File::open(&child_log).unwrap())).unwrap();
    assert!(folded.state.view().active.is_empty());
    assert!(folded.state.view().settled.is_empty());
    drop(parent);
}

#[tokio::test]
async fn i2_pending_then_reopen_then_late_answer_settles() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("session.jsonl");
    let call = CallId::from("ask-timed");
    {
        let (_host, text, _guard) = pending_session(&log, &call).await;
        assert!(text.starts_with(r#"{"pending":true,"callId":"ask-timed""#));
    } // The host and its store are closed.

    let (host, resumed) = Host::open(options(
        AskUserConfig::timed_secs(120),
        LogTarget::Open(log.clone()),
    ))
    .unwrap();
    assert!(
        resumed.repair.unwrap().is_empty(),
        "the log was closed cleanly"
    );
    let state = host.projection();
    assert_eq!(
        state.active(&CallId::from("ask-timed")).unwrap().state,
        ActiveState::Continued
    );

    let batch = AnswerBatch::new([AnswerItem::selected("scope", ["Tool only"])]);
    let origin = Provenance::human("web");
    let queued = host
        .late_answers()
        .answer(&host.agent(), &call, batch.clone(), origin.clone())
        .unwrap();
    // Queued for the next turn, not settled yet.
    assert_eq!(host.host_agent().next_turn().len(), 1);
    assert_eq!(
        host.late().waiting_for(&call).unwrap().id,
        queued.message_id
    );
    assert!(
        host.projection()
            .active(&CallId::from("ask-timed"))
            .is_some()
    );

    // The follow-up turn admits it.
    let claimed = host.begin_turn().unwrap();
    assert_eq!(claimed.len(), 1);
    host.begin_step().unwrap();
    host.end_turn("completed").unwrap();

    let view = serde_json::to_value(host.projection().view()).unwrap();
    let expected = serde_json::json!({"active": [], "settled": [{
        "callId": "ask-timed",
        "answers": [{"id": "scope", "selected": ["Tool only"]}],
        "provenance": {"answerer": "web", "answeredBy": "human"},
    }]});
    assert_eq!(view, expected);
    // The log alone gives the same view.
    let folded = fold_log(BufReader::new(File::open(&log).unwrap())).unwrap();
    assert_eq!(serde_json::to_value(folded.state.view()).unwrap(), expected);
}

#[tokio::test]
async fn i2_a_reply_queued_before_a_crash_is_still_queued_after_it() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("session.jsonl");
    let call = CallId::from("ask-timed");
    let batch = AnswerBatch::new([AnswerItem::selected("scope", ["Everything"])]);
    {
        let (host, _, _guard) = pending_session(&log, &call).await;
        // The reply is accepted and queued durably, then the process stops before admitting it.
        host.late_answers()
            .queue(
                &host.agent(),
                &call,
                batch.clone(),
                Provenance::human("web"),
            )
            .unwrap();
    }

    let (host, resumed) = Host::open(options(
        AskUserConfig::timed_secs(120),
        LogTarget::Open(log.clone()),
    ))
    .unwrap();
    assert_eq!(resumed.restored_inbox, 1);
    // The one-reply rule holds across the restart: the restored inbox is scanned.
    let again = host.late_answers().answer(
        &host.agent(),
        &call,
        batch.clone(),
        Provenance::human("cli"),
    );
    match again {
        Err(LateRefusal::ReplyQueued { message_id, .. }) => {
            assert_eq!(message_id, host.late().waiting_for(&call).map(|m| m.id));
        }
        other => panic!("expected REPLY_QUEUED, got {other:?}"),
    }
    // The next turn claims the restored reply (re-reserving it) and admits it.
    let claimed = host.begin_turn().unwrap();
    assert_eq!(claimed.len(), 1);
    assert!(
        host.late_answers()
            .reservation(&host.session(), &call)
            .is_some()
    );
    host.begin_step().unwrap();
    host.end_turn("completed").unwrap();
    let state = host.projection();
    let settled = &state.view().settled;
    assert_eq!(settled.len(), 1);
    assert_eq!(settled[0].answers, batch.answers);
    assert_eq!(settled[0].provenance, Some(Provenance::human("web")));
    assert!(
        host.late_answers()
            .reservation(&host.session(), &call)
            .is_none()
    );
    // Turn numbers continue across the restart.
    let turns: Vec<u64> = records(&log)
        .iter()
        .filter(|r| r["type"] == "turn/start")
        .map(|r| r["data"]["turn"].as_u64().unwrap())
        .collect();
    assert_eq!(turns, [1, 2]);
}
