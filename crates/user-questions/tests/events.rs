//! X8 and X9: lifecycle events (SPEC §9.4).
// Test code stops at its first broken expectation: unwrap and expect are assertions here.
#![allow(clippy::unwrap_used, clippy::expect_used)]
// Timelines are written in milliseconds, as SPEC §12 states them.
#![allow(clippy::duration_suboptimal_units)]

mod common;

use std::time::Duration;

use common::*;
use user_questions::{
    AnswerPath, AskRequest, CancellationToken, ErrorCode, QuestionEvent, QuestionEventKind,
    Received, TimedAskRequest, UserQuestionsConfig, WaitMode,
};

fn names(events: &[QuestionEvent]) -> Vec<&'static str> {
    events.iter().map(|e| e.kind.name()).collect()
}

#[tokio::test(start_paused = true)]
async fn x8_answered_ask() {
    let w = world();
    let mut events = w.seam.subscribe();
    let _g = TestAnswerer::new(Behaviour::FirstLabel).register(&w.seam, "ui");
    w.seam
        .ask(AskRequest::new([q_scope()]).with_agent(w.r.clone()))
        .await
        .unwrap();
    let got = events.drain();
    assert_eq!(names(&got), ["opened", "answered"]);
    assert_eq!(got[0].ask_id, got[1].ask_id);
    assert!(got[0].ask_id.is_some());
    assert_eq!(got[0].agent_id.as_ref().unwrap().as_str(), "R");
    assert_eq!(got[0].session_id.as_ref().unwrap().as_str(), "session-R");
    let QuestionEventKind::Opened {
        wait,
        remaining_ms,
        questions,
    } = &got[0].kind
    else {
        panic!()
    };
    assert_eq!(*wait, WaitMode::Blocking);
    assert_eq!(*remaining_ms, None);
    assert_eq!(questions[0].id, "scope");
    assert_eq!(questions[0].options, 2);
    let QuestionEventKind::Answered { path, provenance } = &got[1].kind else {
        panic!()
    };
    assert_eq!(*path, AnswerPath::Foreground);
    assert_eq!(provenance.answerer, "ui");
}

#[tokio::test(start_paused = true)]
async fn x8_claimed_then_timed_out() {
    let w = world();
    let mut events = w.seam.subscribe();
    let _g = TestAnswerer::new(Behaviour::ClaimThenTimeOut(w.seam.clone())).register(&w.seam, "ui");
    let outcome = w
        .seam
        .ask_timed(
            TimedAskRequest::new([q_scope()], w.r.clone()),
            call("ask-timed"),
            5000,
        )
        .await
        .unwrap();
    assert!(matches!(
        outcome,
        user_questions::TimedOutcome::Pending { .. }
    ));
    let got = events.drain();
    assert_eq!(names(&got), ["opened", "claimed", "pending"]);
    assert!(got.iter().all(|e| e.ask_id == got[0].ask_id));
    assert!(
        got.iter()
            .all(|e| e.call_id.as_ref().unwrap().as_str() == "ask-timed")
    );
    assert_eq!(got[1].kind, QuestionEventKind::Claimed { claims: 1 });
    let QuestionEventKind::Opened {
        wait, remaining_ms, ..
    } = &got[0].kind
    else {
        panic!()
    };
    assert_eq!((*wait, *remaining_ms), (WaitMode::Timed, Some(5000)));
}

#[tokio::test(start_paused = true)]
async fn x8_cancelled_and_foreign() {
    let w = world();
    let mut events = w.seam.subscribe();
    let guard = TestAnswerer::new(Behaviour::ForeignAfterCancel).register(&w.seam, "ui");
    let token = CancellationToken::new();
    let ask = w
        .seam
        .ask(AskRequest::new([q_scope()]).with_cancel(token.clone()));
    let (result, ()) = tokio::join!(ask, async {
        tokio::task::yield_now().await;
        token.cancel();
    });
    assert!(result.is_err());
    let got = events.drain();
    assert_eq!(names(&got), ["opened", "cancelled"]);
    assert_eq!(
        got[1].kind,
        QuestionEventKind::Cancelled {
            code: Some(ErrorCode::AskAborted)
        }
    );
    drop(guard);

    let _g = TestAnswerer::new(Behaviour::Foreign).register(&w.seam, "ui");
    assert!(w.seam.ask(AskRequest::new([q_scope()])).await.is_err());
    let got = events.drain();
    assert_eq!(got[1].kind, QuestionEventKind::Cancelled { code: None });
}

#[tokio::test(start_paused = true)]
async fn x8_rejected_requests_emit_nothing() {
    let w = world();
    let mut events = w.seam.subscribe();
    let _g = TestAnswerer::new(Behaviour::FirstLabel).register(&w.seam, "ui");
    assert!(w.seam.ask(AskRequest::new([])).await.is_err());
    assert!(
        w.seam
            .ask(AskRequest::new([q_scope(), q_scope()]))
            .await
            .is_err()
    );
    assert!(
        w.seam
            .ask(AskRequest::new([q_scope()]).with_agent(w.c.clone()))
            .await
            .is_err()
    );
    assert!(
        w.seam
            .ask_timed(TimedAskRequest::new([q_scope()], w.r.clone()), call("x"), 0)
            .await
            .is_err()
    );
    assert!(
        w.seam
            .ask_timed(TimedAskRequest::new([], w.r.clone()), call("x"), 10)
            .await
            .is_err()
    );
    assert!(events.drain().is_empty());
}

#[tokio::test(start_paused = true)]
async fn x8_pending_by_host_deadline() {
    let w = world();
    let mut events = w.seam.subscribe();
    let seam = w.seam.clone();
    let r = w.r.clone();
    let task = tokio::spawn(async move {
        seam.ask_timed(TimedAskRequest::new([q_scope()], r), call("t"), 1000)
            .await
    });
    tokio::time::advance(Duration::from_millis(1000)).await;
    task.await.unwrap().unwrap();
    assert_eq!(names(&events.drain()), ["opened", "pending"]);
}

#[tokio::test]
async fn x9_slow_subscriber_never_blocks_and_learns_what_it_missed() {
    let w = world_with(UserQuestionsConfig {
        event_buffer: 4,
        ..UserQuestionsConfig::default()
    });
    let mut slow = w.seam.subscribe();
    let _g = TestAnswerer::new(Behaviour::FirstLabel).register(&w.seam, "ui");
    for _ in 0..10 {
        w.seam.ask(AskRequest::new([q_scope()])).await.unwrap();
    }
    // 20 events were published into a buffer of 4.
    assert_eq!(slow.recv().await, Some(Received::Missed(16)));
    let rest: Vec<_> = std::iter::from_fn(|| slow.try_recv()).collect();
    assert_eq!(rest.len(), 4);
    assert!(rest.iter().all(|r| matches!(r, Received::Event(_))));
}
