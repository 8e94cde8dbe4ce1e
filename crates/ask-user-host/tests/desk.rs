//! The host's question desks through their public API: `LogDesk` over every log of a store (read
//! without a lock, opened for write only to take an answer, which it admits), and `LiveDesk` over
//! sessions this process runs (an answer queued for the session's own loop). Also: an open
//! announces the calls its resume repair continued.
// Test code stops at its first broken expectation: unwrap and expect are assertions here.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{SCOPE_ARGS, runtime};
use std::sync::{Arc, Mutex};

use ask_user_host::{Host, HostRuntime, LiveDesk, LogDesk, SessionOptions};
use pending_answer::{Accepted, DeskState, LateRefusal, NotWaiting, QuestionDesk, Submission};
use session_log::{MemoryStore, SessionStore};
use user_questions::{
    AnswerBatch, AnswerItem, CallId, CancellationToken, Provenance, QuestionEventKind,
};

fn scope(label: &str) -> AnswerBatch {
    AnswerBatch::new([AnswerItem::selected("scope", [label])])
}

fn shell() -> Provenance {
    Provenance::human("shell")
}

/// A turn in which `call` is asked with nobody to answer: it ends pending (paused clock).
async fn ask_unanswered(host: &Host, call: &CallId) {
    host.begin_turn().unwrap();
    host.begin_step().unwrap();
    host.log_request_header().unwrap();
    let outcome = host
        .call_tool(call, SCOPE_ARGS, CancellationToken::new())
        .await
        .unwrap();
    assert!(outcome.is_pending(), "{}", outcome.text);
    host.end_turn("completed").unwrap();
}

/// A session whose host stopped while `call` waited in its window: the log holds the call and no
/// result.
async fn interrupted(runtime: &HostRuntime, name: &str, call: &CallId) {
    let host = Arc::new(runtime.create(name, SessionOptions::named(name)).unwrap());
    host.begin_turn().unwrap();
    host.begin_step().unwrap();
    host.log_request_header().unwrap();
    let asking = tokio::spawn({
        let (host, call) = (Arc::clone(&host), call.clone());
        async move {
            host.call_tool(&call, SCOPE_ARGS, CancellationToken::new())
                .await
        }
    });
    while host.projection().active(call).is_none() {
        tokio::task::yield_now().await;
    }
    asking.abort();
    let _ = asking.await;
}

/// Store with `a` (continued `a-1`) and `b` (`b-1` interrupted in its window), no host running.
async fn two_sessions() -> Arc<dyn SessionStore> {
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    let runtime = runtime(Arc::clone(&store));
    let a = runtime.create("a", SessionOptions::named("a")).unwrap();
    ask_unanswered(&a, &CallId::from("a-1")).await;
    drop(a);
    interrupted(&runtime, "b", &CallId::from("b-1")).await;
    store
}

#[tokio::test(start_paused = true)]
async fn a_log_desk_lists_every_log_of_its_store_with_its_questions() {
    let store = two_sessions().await;
    let desk = LogDesk::store(Arc::clone(&store));
    let sessions = desk.sessions().await.unwrap();
    let names: Vec<&str> = sessions.iter().map(|s| s.session.as_str()).collect();
    assert_eq!(names, ["a", "b"]);
    let a = &sessions[0].questions[0];
    assert_eq!(
        (a.call_id.as_str(), a.state, a.answerable, a.interrupted),
        ("a-1", DeskState::Continued, true, false)
    );
    assert_eq!(a.questions[0].id, "scope");
    assert!(a.asked_at_ms.is_some());
    let b = &sessions[1].questions[0];
    // Its host is gone: answering repairs the session first, so it is answerable.
    assert_eq!(
        (b.call_id.as_str(), b.state, b.answerable, b.interrupted),
        ("b-1", DeskState::Open, true, true)
    );
    assert_eq!(sessions[0].settled, Some(0));
    assert!(!sessions[0].writing);
    // Read only: nothing was written, nothing repaired.
    assert!(
        desk.views(Some("b")).await.unwrap()[0].view.active[0].state
            == user_questions_projection::ActiveState::Open
    );
}

#[tokio::test(start_paused = true)]
async fn a_log_desk_admits_the_answer_so_the_question_is_settled() {
    let store = two_sessions().await;
    let opened = Arc::new(Mutex::new(Vec::new()));
    let desk = LogDesk::store(Arc::clone(&store)).on_open({
        let opened = Arc::clone(&opened);
        move |name, _| opened.lock().unwrap().push(name.to_owned())
    });
    let call = CallId::from("a-1");
    let accepted = desk
        .submit(Submission::new(
            "a",
            call.clone(),
            scope("Tool only"),
            shell(),
        ))
        .await
        .unwrap();
    let Accepted::Admitted { reply, settled } = accepted else {
        panic!("not admitted: {accepted:?}");
    };
    assert!(settled);
    assert_eq!(reply.reply_call_id(), Some(&call));
    assert_eq!(*opened.lock().unwrap(), ["a"]);
    let view = &desk.views(Some("a")).await.unwrap()[0].view;
    assert!(view.active.is_empty());
    assert_eq!(view.settled[0].answers, scope("Tool only").answers);
    assert_eq!(view.settled[0].provenance, Some(shell()));
    // Settled exactly once: a second answer is refused, with the reason.
    let again = desk
        .submit(Submission::new(
            "a",
            call.clone(),
            scope("Everything"),
            shell(),
        ))
        .await;
    assert!(
        matches!(again, Err(LateRefusal::NotWaiting(NotWaiting::Settled))),
        "{again:?}"
    );
    // The log is free again: nothing holds it.
    assert!(!store.is_writing("a").unwrap());
}

#[tokio::test(start_paused = true)]
async fn a_call_whose_host_died_in_its_window_is_listed_answerable_as_interrupted() {
    let store = two_sessions().await;
    let desk = LogDesk::store(store);
    let listed = desk.answerable().await.unwrap();
    let calls: Vec<(&str, DeskState, bool)> = listed
        .iter()
        .map(|q| (q.call_id.as_str(), q.state, q.interrupted))
        .collect();
    assert_eq!(
        calls,
        [
            ("a-1", DeskState::Continued, false),
            ("b-1", DeskState::Open, true)
        ]
    );
    assert!(listed.iter().all(|q| q.answerable));
}

#[tokio::test(start_paused = true)]
async fn an_interrupted_call_is_repaired_then_answered() {
    let store = two_sessions().await;
    let desk = LogDesk::store(store);
    let accepted = desk
        .submit(Submission::new(
            "b",
            CallId::from("b-1"),
            scope("Everything"),
            shell(),
        ))
        .await
        .unwrap();
    assert!(matches!(accepted, Accepted::Admitted { settled: true, .. }));
    assert!(
        desk.views(Some("b")).await.unwrap()[0]
            .view
            .active
            .is_empty()
    );
}

#[tokio::test(start_paused = true)]
async fn a_bad_answer_and_an_unknown_session_are_refused_and_change_nothing() {
    let store = two_sessions().await;
    let desk = LogDesk::store(store);
    let call = CallId::from("a-1");
    let bad = desk
        .submit(Submission::new("a", call.clone(), scope("Nope"), shell()))
        .await;
    assert!(matches!(bad, Err(LateRefusal::BadAnswer(_))), "{bad:?}");
    let unknown = desk
        .submit(Submission::new(
            "zzz",
            call.clone(),
            scope("Tool only"),
            shell(),
        ))
        .await;
    assert!(
        matches!(&unknown, Err(LateRefusal::UnknownSession(s)) if s == "zzz"),
        "{unknown:?}"
    );
    assert_eq!(
        desk.views(Some("zzz")).await.unwrap_err().code(),
        "UNKNOWN_SESSION"
    );
    let open_call = desk
        .submit(Submission::new(
            "a",
            CallId::from("nobody"),
            scope("Tool only"),
            shell(),
        ))
        .await;
    assert!(matches!(
        open_call,
        Err(LateRefusal::NotWaiting(NotWaiting::Unknown))
    ));
    // Still continued: the refusals left it answerable.
    assert_eq!(
        desk.answerable().await.unwrap()[0].state,
        DeskState::Continued,
        "a-1 is still continued"
    );
}

#[tokio::test(start_paused = true)]
async fn a_reply_an_earlier_host_queued_is_admitted_instead_of_the_new_answer() {
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    let runtime = runtime(Arc::clone(&store));
    let call = CallId::from("c-1");
    {
        let host = runtime.create("c", SessionOptions::named("c")).unwrap();
        ask_unanswered(&host, &call).await;
        // Queued, then the host stops before any turn admits it.
        host.late()
            .queue(&call, scope("Everything"), Provenance::human("web"))
            .unwrap();
    }
    let desk = LogDesk::store(Arc::clone(&store));
    let refused = desk
        .submit(Submission::new(
            "c",
            call.clone(),
            scope("Tool only"),
            shell(),
        ))
        .await;
    let Err(LateRefusal::ReplyQueued {
        settled_by: Some(reply),
        message_id,
        ..
    }) = refused
    else {
        panic!("not REPLY_QUEUED with the earlier reply: {refused:?}");
    };
    assert_eq!(message_id.as_deref(), Some(reply.id.as_str()));
    let view = &desk.views(Some("c")).await.unwrap()[0].view;
    assert!(view.active.is_empty());
    // The first answer settled it; the new one was not used.
    assert_eq!(view.settled[0].answers, scope("Everything").answers);
}

#[tokio::test(start_paused = true)]
async fn a_live_desk_queues_for_the_running_session_to_admit() {
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    let runtime = runtime(store);
    let host = Arc::new(runtime.create("s1", SessionOptions::named("s1")).unwrap());
    let call = CallId::from("s1-1");
    ask_unanswered(&host, &call).await;
    let desk = LiveDesk::of([&host]);
    let listed = desk.answerable().await.unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(
        (
            listed[0].session.as_str(),
            listed[0].state,
            listed[0].answered
        ),
        ("s1", DeskState::Continued, false)
    );
    let accepted = desk
        .submit(Submission::new(
            "s1",
            call.clone(),
            scope("Tool only"),
            shell(),
        ))
        .await
        .unwrap();
    let Accepted::Queued(queued) = accepted else {
        panic!("not queued: {accepted:?}");
    };
    assert_eq!(
        host.late().waiting_for(&call).unwrap().id,
        queued.message_id
    );
    assert!(
        desk.answerable().await.unwrap()[0].answered,
        "the reply is in flight"
    );
    assert!(!host.projection().is_settled(&call));
    // The session's own loop admits it.
    let admitted = host.late().settle(&call).unwrap().unwrap();
    assert_eq!(admitted.id, queued.message_id);
    assert!(host.projection().is_settled(&call));
    assert!(desk.answerable().await.unwrap().is_empty());
    // A session that ended leaves the desk.
    drop(host);
    assert!(desk.sessions().await.unwrap().is_empty());
}

#[tokio::test(start_paused = true)]
async fn an_open_announces_the_calls_its_repair_continued() {
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    let runtime = runtime(Arc::clone(&store));
    let call = CallId::from("b-1");
    interrupted(&runtime, "b", &call).await;
    let mut events = runtime.seam().subscribe();
    let (host, resumed) = runtime.open("b", SessionOptions::named("b2")).unwrap();
    assert_eq!(resumed.repair.unwrap().results.len(), 1);
    let continued: Vec<_> = events
        .drain()
        .into_iter()
        .filter(|e| e.kind == QuestionEventKind::Continued)
        .collect();
    assert_eq!(continued.len(), 1);
    assert_eq!(continued[0].call_id, Some(call.clone()));
    assert_eq!(continued[0].session_id, Some(host.session_id()));
    // And it takes a late answer now.
    host.late()
        .queue(&call, scope("Tool only"), shell())
        .unwrap();
}

/// `a.jsonl` (continued `a-1`) in `dir`, beside `broken.jsonl`, whose header
/// is not a header.
async fn files_with_a_broken_one(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let store: Arc<dyn SessionStore> = Arc::new(session_log::JsonlStore::new(dir));
    let runtime = runtime(Arc::clone(&store));
    let a = runtime
        .create("a.jsonl", SessionOptions::named("a"))
        .unwrap();
    ask_unanswered(&a, &CallId::from("a-1")).await;
    drop(a);
    std::fs::write(dir.join("broken.jsonl"), "not a header\n").unwrap();
    vec![dir.join("a.jsonl"), dir.join("broken.jsonl")]
}

#[tokio::test(start_paused = true)]
async fn a_log_that_cannot_be_read_is_left_out_of_several_and_is_the_error_of_one() {
    let dir = tempfile::tempdir().unwrap();
    let paths = files_with_a_broken_one(dir.path()).await;
    let desk = LogDesk::files(&paths).unwrap();
    let sessions = desk.sessions().await.unwrap();
    assert_eq!(sessions.len(), 1);
    assert!(sessions[0].session.ends_with("a.jsonl"));
    let answerable = desk.answerable().await.unwrap();
    assert_eq!(answerable.len(), 1);
    assert_eq!(answerable[0].call_id.as_str(), "a-1");
    assert_eq!(desk.views(None).await.unwrap().len(), 1);

    let alone = LogDesk::files(&paths[1..]).unwrap();
    assert!(alone.sessions().await.is_err());
    assert!(alone.answerable().await.is_err());
    assert!(alone.views(None).await.is_err());
    // Nothing was written to either.
    assert_eq!(
        std::fs::read_to_string(&paths[1]).unwrap(),
        "not a header\n"
    );
}

#[tokio::test(start_paused = true)]
async fn the_answerable_questions_come_from_the_checkpoint_and_the_lines_after_it() {
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn SessionStore> = Arc::new(session_log::JsonlStore::new(dir.path()));
    let runtime = runtime(Arc::clone(&store));
    let host = runtime
        .create("s.jsonl", SessionOptions::named("s"))
        .unwrap();
    ask_unanswered(&host, &CallId::from("s-1")).await;
    host.checkpoint_if_behind(0).unwrap();
    // A second continued call after the checkpoint.
    ask_unanswered(&host, &CallId::from("s-2")).await;
    drop(host);
    let desk = LogDesk::store(Arc::clone(&store));
    let calls: Vec<String> = desk
        .answerable()
        .await
        .unwrap()
        .into_iter()
        .map(|q| q.call_id.as_str().to_owned())
        .collect();
    assert_eq!(calls, ["s-1", "s-2"]);
    // The same as a full scan sees.
    let scanned: Vec<String> = desk.sessions().await.unwrap()[0]
        .questions
        .iter()
        .filter(|q| q.answerable)
        .map(|q| q.call_id.as_str().to_owned())
        .collect();
    assert_eq!(calls, scanned);
}

/// A call named alone reaches the sessions that have it answerable, each once: none for a call
/// nobody asked or one already settled, both when two sessions hold the same call id.
#[tokio::test(start_paused = true)]
async fn the_sessions_a_call_named_alone_reaches() {
    let store = two_sessions().await;
    let runtime = runtime(Arc::clone(&store));
    let c = runtime.create("c", SessionOptions::named("c")).unwrap();
    ask_unanswered(&c, &CallId::from("a-1")).await;
    drop(c);
    let desk = LogDesk::store(Arc::clone(&store));
    let reaches = |call: &'static str| {
        let desk = &desk;
        async move { desk.sessions_answering(&CallId::from(call)).await.unwrap() }
    };
    assert_eq!(reaches("b-1").await, ["b"]);
    assert_eq!(reaches("a-1").await, ["a", "c"]);
    assert!(reaches("nobody-asked").await.is_empty());
    let answered = desk
        .submit(Submission::new(
            "a",
            CallId::from("a-1"),
            scope("Everything"),
            shell(),
        ))
        .await;
    assert!(
        matches!(answered, Ok(Accepted::Admitted { settled: true, .. })),
        "{answered:?}"
    );
    assert_eq!(reaches("a-1").await, ["c"], "settled in a");
}

#[tokio::test(start_paused = true)]
async fn a_live_desk_of_named_sessions_names_them_as_their_store_does() {
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    let runtime = runtime(store);
    let host = Arc::new(
        runtime
            .create("agent.jsonl", SessionOptions::named("agent"))
            .unwrap(),
    );
    let call = CallId::from("agent-1");
    ask_unanswered(&host, &call).await;
    let desk = LiveDesk::of_named([&host]);
    let listed = desk.answerable().await.unwrap();
    assert_eq!(
        listed[0].session, "agent.jsonl",
        "the store's name, not the id"
    );
    assert_eq!(desk.find(&call).await.unwrap()[0].session, "agent.jsonl");
    // By its session id the desk does not know it; by its name it takes the answer.
    let refused = desk
        .submit(Submission::new(
            "agent",
            call.clone(),
            scope("Tool only"),
            shell(),
        ))
        .await;
    assert!(
        matches!(refused, Err(LateRefusal::UnknownSession(_))),
        "{refused:?}"
    );
    let accepted = desk
        .submit(Submission::new(
            "agent.jsonl",
            call.clone(),
            scope("Tool only"),
            shell(),
        ))
        .await
        .unwrap();
    assert!(matches!(accepted, Accepted::Queued(_)), "{accepted:?}");
}

#[tokio::test(start_paused = true)]
async fn a_turn_that_claims_nothing_leaves_the_late_reply_for_take() {
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    let runtime = runtime(store);
    let host = runtime.create("s1", SessionOptions::named("s1")).unwrap();
    let call = CallId::from("s1-1");
    ask_unanswered(&host, &call).await;
    host.late()
        .queue(&call, scope("Tool only"), shell())
        .unwrap();
    host.begin_turn_unclaimed().unwrap();
    host.begin_step().unwrap();
    assert!(!host.projection().is_settled(&call), "nothing was claimed");
    assert_eq!(host.late().waiting().len(), 1);
    let taken = host.late().take(Some(&call)).unwrap();
    assert_eq!(taken.len(), 1);
    assert!(host.projection().is_settled(&call));
    host.end_turn("completed").unwrap();
    // Out of order like any turn.
    host.begin_turn_unclaimed().unwrap();
    assert!(host.begin_turn_unclaimed().is_err());
}
