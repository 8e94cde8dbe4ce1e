//! One runtime, many sessions (the shape an MCP or web server needs): sessions share the seam, the
//! registry and late answers, keep their own logs and projections, leave the registry when they
//! end, and resume from the same store. Run against both stores of `session-log`.
// Test code stops at its first broken expectation: unwrap and expect are assertions here.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{SCOPE_ARGS, runtime};
use std::sync::Arc;

use ask_user_host::{Host, SessionOptions};
use session_log::{JsonlStore, MemoryStore, SessionStore};
use user_questions::{
    AgentRegistry, AnswerBatch, AnswerItem, CallId, CancellationToken, Provenance,
};
use user_questions_projection::ActiveState;

/// One turn in which `call` is asked with nobody to answer: the window passes (paused clock) and
/// the call ends pending, continued in the projection.
async fn ask_unanswered(host: &Host, call: &CallId) {
    host.begin_turn().unwrap();
    host.begin_step().unwrap();
    host.log_request_header().unwrap();
    let outcome = host
        .call_tool(call, SCOPE_ARGS, CancellationToken::new())
        .await
        .unwrap();
    assert!(
        outcome.text.starts_with(r#"{"pending":true"#),
        "{}",
        outcome.text
    );
    host.end_turn("completed").unwrap();
    assert_eq!(
        host.projection().continued(call).map(|q| q.state),
        Some(ActiveState::Continued)
    );
}

fn tool_only() -> AnswerBatch {
    AnswerBatch::new([AnswerItem::selected("scope", ["Tool only"])])
}

/// A late answer to `call` is queued, admitted in a turn of its own, and settles the call.
fn answer_late(host: &Host, call: &CallId) {
    let queued = host
        .late_answers()
        .answer(&host.agent(), call, tool_only(), Provenance::human("test"))
        .unwrap();
    // The call is continued, so the answer is taken: its reply waits in the inbox.
    assert_eq!(host.late().waiting_for(call).unwrap().id, queued.message_id);
    // The next turn claims it and its first step admits it.
    let claimed = host.begin_turn().unwrap();
    assert_eq!(claimed.len(), 1);
    host.begin_step().unwrap();
    host.end_turn("completed").unwrap();
}

async fn two_sessions_share_the_seam_and_keep_their_own_logs(store: Arc<dyn SessionStore>) {
    let runtime = runtime(store.clone());
    let a = runtime
        .create("a.jsonl", SessionOptions::named("a"))
        .unwrap();
    let b = runtime
        .create("b.jsonl", SessionOptions::named("b"))
        .unwrap();
    let call = CallId::from("ask-1");
    ask_unanswered(&a, &call).await;
    ask_unanswered(&b, &call).await;

    // The same call id in the other session is another question: answering a's leaves b's open.
    answer_late(&a, &call);
    assert_eq!(a.projection().view().settled.len(), 1);
    assert!(a.projection().view().active.is_empty());
    assert_eq!(b.projection().view().active.len(), 1);
    assert!(b.projection().view().settled.is_empty());
    let again =
        runtime
            .late_answers()
            .answer(&a.agent(), &call, tool_only(), Provenance::human("test"));
    assert!(
        matches!(
            again,
            Err(pending_answer::LateRefusal::NotWaiting(
                pending_answer::NotWaiting::Settled
            ))
        ),
        "settled exactly once: {again:?}"
    );

    // Each log holds its own session, and resumes to the same projection.
    let (a_events, b_events) = (a.location(), b.location());
    assert_ne!(a_events, b_events);
    drop((a, b));
    let again = runtime
        .open("a.jsonl", SessionOptions::named("a"))
        .unwrap()
        .0;
    assert_eq!(again.projection().view().settled.len(), 1);
    let (b_again, resumed) = runtime.open("b.jsonl", SessionOptions::named("b")).unwrap();
    assert!(resumed.repair.unwrap().is_empty());
    assert_eq!(b_again.projection().view().active.len(), 1);
    answer_late(&b_again, &call);
    assert_eq!(b_again.projection().view().settled.len(), 1);
}

async fn a_session_that_ends_leaves_the_registry_and_its_log(store: Arc<dyn SessionStore>) {
    let runtime = runtime(store.clone());
    let host = runtime
        .create("s.jsonl", SessionOptions::named("s"))
        .unwrap();
    let agent = host.agent();
    assert!(runtime.registry().get(agent.id()).is_some());
    assert!(store.is_writing("s.jsonl").unwrap());
    // A surface may keep the agent (a late card): the session's end frees the log all the same,
    // and the kept agent can no longer write to it.
    drop(host);
    assert!(
        runtime.registry().get(&"s".into()).is_none(),
        "the agent left the registry"
    );
    assert!(
        !store.is_writing("s.jsonl").unwrap(),
        "the log is free again"
    );
    let (reopened, _) = runtime.open("s.jsonl", SessionOptions::named("s")).unwrap();
    assert!(runtime.registry().get(reopened.agent().id()).is_some());
}

async fn an_interrupted_call_is_repaired_and_answerable_after_reopening(
    store: Arc<dyn SessionStore>,
) {
    let call = CallId::from("ask-crash");
    {
        let runtime = runtime(store.clone());
        let host = runtime
            .create("c.jsonl", SessionOptions::named("c"))
            .unwrap();
        host.begin_turn().unwrap();
        host.begin_step().unwrap();
        host.log_request_header().unwrap();
        // The call's future is dropped a second into its window, after the call was logged and
        // before its result was: what a crash leaves.
        let ask = host.call_tool(&call, SCOPE_ARGS, CancellationToken::new());
        let dropped = tokio::time::timeout(std::time::Duration::from_secs(1), ask).await;
        assert!(dropped.is_err(), "nothing answers within the second");
    }
    let runtime = runtime(store);
    let (host, resumed) = runtime.open("c.jsonl", SessionOptions::named("c")).unwrap();
    let repair = resumed.repair.unwrap();
    assert_eq!(repair.results.len(), 1, "TOOL_OUTCOME_UNKNOWN for the call");
    assert_eq!(repair.closed_turns, [1]);
    assert!(host.projection().continued(&call).is_some());
    answer_late(&host, &call);
    assert_eq!(host.projection().view().settled.len(), 1);
}

/// Runs `check` against a JSONL store in a fresh directory and against a memory store.
macro_rules! on_both_stores {
    ($($name:ident),* $(,)?) => {
        mod jsonl {
            use super::*;
            $(
                #[tokio::test(start_paused = true)]
                async fn $name() {
                    let dir = tempfile::tempdir().unwrap();
                    super::$name(Arc::new(JsonlStore::new(dir.path()))).await;
                }
            )*
        }
        mod memory {
            use super::*;
            $(
                #[tokio::test(start_paused = true)]
                async fn $name() {
                    super::$name(Arc::new(MemoryStore::new())).await;
                }
            )*
        }
    };
}

on_both_stores! {
    two_sessions_share_the_seam_and_keep_their_own_logs,
    a_session_that_ends_leaves_the_registry_and_its_log,
    an_interrupted_call_is_repaired_and_answerable_after_reopening,
}

#[tokio::test(start_paused = true)]
async fn a_second_live_session_with_the_same_agent_id_is_refused_before_the_log_is_touched() {
    let store = Arc::new(MemoryStore::new());
    let runtime = runtime(store.clone());
    let first = runtime.create("a", SessionOptions::default()).unwrap();
    let refused = runtime.create("b", SessionOptions::default());
    assert!(
        matches!(&refused, Err(ask_user_host::HostError::AgentIdTaken(id)) if id == "root"),
        "{:?}",
        refused.err()
    );
    assert!(!store.exists("b").unwrap(), "no log was created");
    assert!(
        runtime
            .registry()
            .get(first.agent().id())
            .is_some_and(|live| user_questions::same_agent(&live, &first.agent())),
        "the first session keeps its identity"
    );
    drop(first);
    runtime.create("b", SessionOptions::default()).unwrap();
}

#[test]
fn only_a_store_of_files_gives_a_log_path() {
    let dir = tempfile::tempdir().unwrap();
    let on_disk = runtime(Arc::new(JsonlStore::new(dir.path())));
    let host = on_disk
        .create("s.jsonl", SessionOptions::named("s"))
        .unwrap();
    assert_eq!(host.log_path(), Some(dir.path().join("s.jsonl")));
    let in_memory = runtime(Arc::new(MemoryStore::new()));
    let host = in_memory.create("s", SessionOptions::named("s")).unwrap();
    assert_eq!(host.log_path(), None);
    assert_eq!(host.location(), std::path::PathBuf::from("memory:s"));
}

#[tokio::test(start_paused = true)]
async fn a_call_id_already_in_the_log_is_refused_and_the_first_question_stays_answerable() {
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn SessionStore> = Arc::new(JsonlStore::new(dir.path()));
    let call = CallId::from("call_demo_1");
    {
        let runtime = runtime(store.clone());
        let host = runtime
            .create("s.jsonl", SessionOptions::named("s"))
            .unwrap();
        ask_unanswered(&host, &call).await;
        host.begin_turn().unwrap();
        host.begin_step().unwrap();
        let again = host
            .call_tool(&call, SCOPE_ARGS, CancellationToken::new())
            .await;
        assert!(
            matches!(&again, Err(ask_user_host::HostError::DuplicateCallId(id)) if *id == call),
            "{:?}",
            again.err()
        );
        host.end_turn("completed").unwrap();
    }
    // After a restart the log still knows the id; the first question is still the one waiting.
    let runtime = runtime(store);
    let (host, _) = runtime.open("s.jsonl", SessionOptions::named("s")).unwrap();
    host.begin_turn().unwrap();
    host.begin_step().unwrap();
    let again = host
        .call_tool(&call, SCOPE_ARGS, CancellationToken::new())
        .await;
    assert!(matches!(
        again,
        Err(ask_user_host::HostError::DuplicateCallId(_))
    ));
    host.end_turn("completed").unwrap();
    answer_late(&host, &call);
    assert_eq!(host.projection().view().settled.len(), 1);
}

#[tokio::test(start_paused = true)]
async fn the_request_header_names_the_model_of_the_session() {
    let store = MemoryStore::new();
    let runtime = runtime(Arc::new(store.clone()));
    let model = ask_user_host::ModelInfo::new("openai", "gpt-5");
    let host = runtime
        .create("s.jsonl", SessionOptions::named("s").with_model(model))
        .unwrap();
    host.begin_turn().unwrap();
    host.begin_step().unwrap();
    host.log_request_header().unwrap();
    let log = String::from_utf8(store.bytes("s.jsonl").unwrap()).unwrap();
    let header = log
        .lines()
        .find(|line| line.contains(r#""type":"request/header""#))
        .unwrap();
    let header: serde_json::Value = serde_json::from_str(header).unwrap();
    assert_eq!(
        header["data"]["header"]["config"],
        serde_json::json!({"provider": "openai", "model": "gpt-5"})
    );
    // Without one, the session says it does not know, rather than naming a model it never used.
    let other = runtime
        .create("t.jsonl", SessionOptions::named("t"))
        .unwrap();
    other.begin_turn().unwrap();
    other.begin_step().unwrap();
    other.log_request_header().unwrap();
    let log = String::from_utf8(store.bytes("t.jsonl").unwrap()).unwrap();
    assert!(
        log.contains(r#""config":{"provider":"unknown","model":"unknown"}"#),
        "{log}"
    );
}
