//! SPEC §12.2 (S20–S30) and X11, under tokio's paused clock.
// Test code stops at its first broken expectation: unwrap and expect are assertions here.
#![allow(clippy::unwrap_used, clippy::expect_used)]
// Timelines are written in milliseconds, as SPEC §12 states them.
#![allow(clippy::duration_suboptimal_units)]

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::*;
use tokio::sync::Notify;
use tokio::time::{Instant, advance};
use user_questions::{
    AskError, AskRequest, CancellationToken, TimedAskRequest, TimedOutcome, UserQuestionError,
    UserQuestions, WaitEnd, WaitKey,
};

type Outcome = Result<TimedOutcome, AskError>;

#[track_caller]
fn assert_pending(outcome: &Outcome, call: &str) {
    match outcome {
        Ok(TimedOutcome::Pending { call_id }) => assert_eq!(call_id.as_str(), call),
        other => panic!("expected pending, got {other:?}"),
    }
}

#[track_caller]
fn assert_code(outcome: &Outcome, code: &str) {
    match outcome {
        Err(e) => assert_eq!(e.code(), Some(code), "{e}"),
        Ok(other) => panic!("expected {code}, got {other:?}"),
    }
}

fn spawn_timed(
    seam: &UserQuestions,
    request: TimedAskRequest,
    call_id: &str,
    timeout_ms: i64,
) -> tokio::task::JoinHandle<Outcome> {
    let seam = seam.clone();
    let call_id = call(call_id);
    tokio::spawn(async move { seam.ask_timed(request, call_id, timeout_ms).await })
}

/// Lets spawned tasks run without moving the clock.
async fn settle() {
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
}

#[tokio::test(start_paused = true)]
async fn s20_two_waits_then_shutdown() {
    let w = world();
    let first = spawn_timed(
        &w.seam,
        TimedAskRequest::new([q_scope()], w.r.clone()),
        "ask-timed",
        1000,
    );
    let second = spawn_timed(
        &w.seam,
        TimedAskRequest::new([q_confirm()], w.r.clone()),
        "ask-later",
        2000,
    );
    settle().await;
    assert_eq!(w.seam.live_waits(), 2);
    advance(Duration::from_millis(1000)).await;
    assert_pending(&first.await.unwrap(), "ask-timed");
    let claim = w
        .seam
        .attach_wait(&w.r, &call("ask-later"))
        .unwrap()
        .unwrap();
    assert_eq!(claim.remaining_ms(), 1000);
    w.seam.shutdown().await;
    assert_code(&second.await.unwrap(), "ASK_ABORTED");
    assert_eq!(claim.ended().await, WaitEnd::Shutdown);
    assert_eq!(w.seam.live_waits(), 0);
    settle().await;
    assert_eq!(alive_tasks(), 0, "no timer is left");
}

#[tokio::test(start_paused = true)]
async fn s21_private_token_not_turn_token() {
    let w = world();
    let ui = TestAnswerer::new(Behaviour::ForeignAfterCancel);
    let _g = ui.register(&w.seam, "ui");
    let turn = CancellationToken::new();
    let task = spawn_timed(
        &w.seam,
        TimedAskRequest::new([q_scope()], w.r.clone()).with_cancel(turn.clone()),
        "ask-timed",
        5000,
    );
    settle().await;
    let seen = ui.last();
    advance(Duration::from_millis(4999)).await;
    assert!(!task.is_finished());
    advance(Duration::from_millis(1)).await;
    assert_pending(&task.await.unwrap(), "ask-timed");
    assert!(
        seen.cancel.is_cancelled(),
        "the answerer's token ends with the wait"
    );
    assert!(!turn.is_cancelled(), "a timeout never cancels the turn");
}

#[tokio::test(start_paused = true)]
async fn s22_claim_holds_past_deadline() {
    let w = world();
    let gate = Arc::new(Notify::new());
    let ui = TestAnswerer::new(Behaviour::Gated(gate.clone()));
    let _g = ui.register(&w.seam, "ui");
    let task = spawn_timed(
        &w.seam,
        TimedAskRequest::new([q_scope()], w.r.clone()),
        "ask-timed",
        5000,
    );
    settle().await;
    let claim = w
        .seam
        .attach_wait(&w.r, &call("ask-timed"))
        .unwrap()
        .unwrap();
    assert_eq!(claim.remaining_ms(), 5000);
    advance(Duration::from_secs(10)).await;
    settle().await;
    assert!(!task.is_finished());
    let duplicate = w
        .seam
        .ask_timed(
            TimedAskRequest::new([q_scope()], w.r.clone()),
            call("ask-timed"),
            5000,
        )
        .await;
    assert_code(&duplicate, "DUPLICATE_WAIT");
    gate.notify_one();
    let outcome = task.await.unwrap();
    assert!(
        matches!(outcome, Ok(TimedOutcome::Answered(_))),
        "{outcome:?}"
    );
    assert_eq!(claim.ended().await, WaitEnd::Settled);
    drop(claim);
    assert!(
        w.seam
            .attach_wait(&w.r, &call("ask-timed"))
            .unwrap()
            .is_none()
    );
    assert_eq!(w.seam.live_waits(), 0);
}

#[tokio::test(start_paused = true)]
async fn s23_answer_in_time_sees_timed_key() {
    let w = world();
    let ui = TestAnswerer::new(Behaviour::FirstLabel);
    let _g = ui.register(&w.seam, "ui");
    let outcome = w
        .seam
        .ask_timed(
            TimedAskRequest::new([q_scope()], w.r.clone()),
            call("ask-timed"),
            120_000,
        )
        .await;
    let Ok(TimedOutcome::Answered(answered)) = outcome else {
        panic!("{outcome:?}")
    };
    assert_eq!(answered.answers.answers[0].selected, vec!["Tool only"]);
    let wait = ui.last().wait.unwrap();
    assert!(wait.is_timed());
    assert!(matches!(&wait, WaitKey::Timed { call_id, .. } if call_id.as_str() == "ask-timed"));
    assert_eq!(w.seam.live_waits(), 0);
}

#[tokio::test(start_paused = true)]
async fn s24_answerer_timeout_is_pending_cancel_is_error() {
    let w = world();
    let start = Instant::now();
    let timeout = TestAnswerer::new(Behaviour::Typed(UserQuestionError::ask_timed_out));
    let guard = timeout.register(&w.seam, "ui");
    let outcome = w
        .seam
        .ask_timed(
            TimedAskRequest::new([q_scope()], w.r.clone()),
            call("ask-timed"),
            5000,
        )
        .await;
    assert_pending(&outcome, "ask-timed");
    assert_eq!(Instant::now(), start, "pending at once");
    drop(guard);

    let _g = TestAnswerer::new(Behaviour::Typed(UserQuestionError::ask_cancelled))
        .register(&w.seam, "ui");
    let outcome = w
        .seam
        .ask_timed(
            TimedAskRequest::new([q_scope()], w.r.clone()),
            call("ask-timed"),
            5000,
        )
        .await;
    assert_code(&outcome, "ASK_CANCELLED");
}

#[tokio::test(start_paused = true)]
async fn s25_no_answerer_holds_until_deadline() {
    let w = world();
    let task = spawn_timed(
        &w.seam,
        TimedAskRequest::new([q_scope()], w.r.clone()),
        "ask-timed",
        5000,
    );
    settle().await;
    advance(Duration::from_millis(4999)).await;
    settle().await;
    assert!(!task.is_finished());
    advance(Duration::from_millis(1)).await;
    assert_pending(&task.await.unwrap(), "ask-timed");
    assert_eq!(w.seam.live_waits(), 0);
}

#[tokio::test(start_paused = true)]
async fn s26_turn_cancelled_during_hold() {
    let w = world();
    let turn = CancellationToken::new();
    let start = Instant::now();
    let task = spawn_timed(
        &w.seam,
        TimedAskRequest::new([q_scope()], w.r.clone()).with_cancel(turn.clone()),
        "ask-timed",
        5000,
    );
    settle().await;
    advance(Duration::from_millis(1000)).await;
    turn.cancel();
    assert_code(&task.await.unwrap(), "ASK_ABORTED");
    assert_eq!(Instant::now() - start, Duration::from_millis(1000));
}

#[tokio::test(start_paused = true)]
async fn s27_foreign_error_with_live_wait() {
    let w = world();
    let _g = TestAnswerer::new(Behaviour::Foreign).register(&w.seam, "ui");
    let outcome = w
        .seam
        .ask_timed(
            TimedAskRequest::new([q_scope()], w.r.clone()),
            call("ask-timed"),
            5000,
        )
        .await;
    let Err(AskError::Foreign(error)) = outcome else {
        panic!("{outcome:?}")
    };
    assert!(error.downcast_ref::<Boom>().is_some());
}

#[tokio::test(start_paused = true)]
async fn s28_turn_cancelled_then_no_provider() {
    let w = world();
    let turn = CancellationToken::new();
    let start = Instant::now();
    let _g = TestAnswerer::new(Behaviour::CancelThen(
        turn.clone(),
        UserQuestionError::no_provider,
    ))
    .register(&w.seam, "ui");
    let outcome = w
        .seam
        .ask_timed(
            TimedAskRequest::new([q_scope()], w.r.clone()).with_cancel(turn),
            call("ask-timed"),
            5000,
        )
        .await;
    assert_code(&outcome, "ASK_ABORTED");
    assert_eq!(Instant::now(), start);
}

#[tokio::test(start_paused = true)]
async fn s29_bad_timeout() {
    let w = world();
    let ui = TestAnswerer::new(Behaviour::FirstLabel);
    let _g = ui.register(&w.seam, "ui");
    for timeout in [0, 2_147_483_648, -1] {
        let outcome = w
            .seam
            .ask_timed(
                TimedAskRequest::new([q_scope()], w.r.clone()),
                call("ask-timed"),
                timeout,
            )
            .await;
        assert_code(&outcome, "BAD_TIMEOUT");
    }
    assert_eq!(ui.calls(), 0);
    assert_eq!(w.seam.live_waits(), 0);
    // The largest valid value is accepted.
    let outcome = w
        .seam
        .ask_timed(
            TimedAskRequest::new([q_scope()], w.r.clone()),
            call("ask-timed"),
            2_147_483_647,
        )
        .await;
    assert!(matches!(outcome, Ok(TimedOutcome::Answered(_))));
}

#[tokio::test(start_paused = true)]
async fn s30_empty_questions_unregisters_the_wait() {
    let w = world();
    let outcome = w
        .seam
        .ask_timed(
            TimedAskRequest::new([], w.r.clone()),
            call("ask-timed"),
            5000,
        )
        .await;
    assert_code(&outcome, "EMPTY_QUESTIONS");
    assert_eq!(w.seam.live_waits(), 0);
    let _g = TestAnswerer::new(Behaviour::FirstLabel).register(&w.seam, "ui");
    let outcome = w
        .seam
        .ask_timed(
            TimedAskRequest::new([q_scope()], w.r.clone()),
            call("ask-timed"),
            5000,
        )
        .await;
    assert!(matches!(outcome, Ok(TimedOutcome::Answered(_))));
}

#[tokio::test(start_paused = true)]
async fn timed_identity_checks() {
    let w = world();
    let outcome = w
        .seam
        .ask_timed(
            TimedAskRequest::new([q_scope()], w.c.clone()),
            call("c"),
            5000,
        )
        .await;
    assert_code(&outcome, "DELEGATED_CALLER");
    let stranger = agent("R", &[]);
    let outcome = w
        .seam
        .ask_timed(
            TimedAskRequest::new([q_scope()], stranger.clone()),
            call("c"),
            5000,
        )
        .await;
    assert_code(&outcome, "CALLER_NOT_LIVE");
    assert!(w.seam.attach_wait(&stranger, &call("c")).is_err());
    assert_eq!(w.seam.live_waits(), 0);
}

#[tokio::test(start_paused = true)]
async fn sibling_calls_and_agents_are_independent() {
    let w = world();
    let a = spawn_timed(
        &w.seam,
        TimedAskRequest::new([q_scope()], w.r.clone()),
        "same",
        1000,
    );
    let b = spawn_timed(
        &w.seam,
        TimedAskRequest::new([q_scope()], w.l.clone()),
        "same",
        1000,
    );
    settle().await;
    assert_eq!(w.seam.live_waits(), 2);
    advance(Duration::from_millis(1000)).await;
    assert_pending(&a.await.unwrap(), "same");
    assert_pending(&b.await.unwrap(), "same");
}

#[tokio::test(start_paused = true)]
async fn x11_headless_fails_closed() {
    let w = world();
    let start = Instant::now();
    let blocking = w
        .seam
        .ask(AskRequest::new([q_scope()]).with_agent(w.r.clone()))
        .await;
    assert_eq!(blocking.unwrap_err().code(), Some("NO_PROVIDER"));
    assert_eq!(Instant::now(), start, "blocking requests fail at once");
    let outcome = w
        .seam
        .ask_timed(
            TimedAskRequest::new([q_scope()], w.r.clone()),
            call("ask-timed"),
            120_000,
        )
        .await;
    assert_pending(&outcome, "ask-timed");
    assert_eq!(Instant::now() - start, Duration::from_millis(120_000));
}

#[tokio::test(start_paused = true)]
async fn dropping_ask_timed_unregisters_and_stops_the_timer() {
    let w = world();
    let mut events = w.seam.subscribe();
    let task = spawn_timed(
        &w.seam,
        TimedAskRequest::new([q_scope()], w.r.clone()),
        "ask-timed",
        5000,
    );
    settle().await;
    assert_eq!(w.seam.live_waits(), 1);
    assert_eq!(alive_tasks(), 2, "the ask and its wait's timer");
    task.abort();
    let _ = task.await;
    assert_eq!(w.seam.live_waits(), 0);
    settle().await;
    assert_eq!(alive_tasks(), 0, "the timer went with the wait");
    let kinds: Vec<_> = events.drain().into_iter().map(|e| e.kind.name()).collect();
    assert_eq!(kinds, ["opened", "cancelled"]);
}

#[tokio::test(start_paused = true)]
async fn ask_after_shutdown_is_aborted() {
    let w = world();
    let ui = TestAnswerer::new(Behaviour::FirstLabel);
    let mut guard = ui.register(&w.seam, "ui");
    w.seam.shutdown().await;
    w.seam.shutdown().await;
    let outcome = w
        .seam
        .ask_timed(
            TimedAskRequest::new([q_scope()], w.r.clone()),
            call("x"),
            5000,
        )
        .await;
    assert_code(&outcome, "ASK_ABORTED");
    let blocking = w.seam.ask(AskRequest::new([q_scope()])).await;
    assert_eq!(blocking.unwrap_err().code(), Some("ASK_ABORTED"));
    assert!(w.seam.attach_wait(&w.r, &call("x")).unwrap().is_none());
    // After shutdown nothing can be claimed, whoever asks: no identity error either.
    assert!(
        w.seam
            .attach_wait(&agent("R", &[]), &call("x"))
            .unwrap()
            .is_none()
    );
    guard.dispose();
    assert_eq!(
        w.seam.registered_answerers(),
        1,
        "guards are no-ops after shutdown"
    );
    assert_eq!(ui.calls(), 0);
}

#[tokio::test(start_paused = true)]
async fn nothing_spawned_keeps_the_seam_alive() {
    let w = world();
    let mut events = w.seam.subscribe();
    let guard = TestAnswerer::new(Behaviour::FirstLabel).register(&w.seam, "ui");
    let task = spawn_timed(
        &w.seam,
        TimedAskRequest::new([q_scope()], w.r.clone()),
        "a",
        5000,
    );
    assert!(matches!(task.await.unwrap(), Ok(TimedOutcome::Answered(_))));
    let pending = spawn_timed(
        &w.seam,
        TimedAskRequest::new([q_scope()], w.l.clone()),
        "b",
        5000,
    );
    drop(guard);
    advance(Duration::from_millis(5000)).await;
    assert_pending(&pending.await.unwrap(), "b");
    drop(w);
    // The last handle is gone, so the seam shut down and dropped its event sender.
    let drained = std::iter::from_fn(|| events.try_recv()).count();
    assert!(drained > 0);
    assert!(events.recv().await.is_none());
}

#[tokio::test(start_paused = true)]
async fn a_weak_handle_claims_without_keeping_the_seam_alive() {
    let w = world();
    let weak = w.seam.downgrade();
    let seam = w.seam.clone();
    let r = w.r.clone();
    let task = tokio::spawn(async move {
        seam.ask_timed(TimedAskRequest::new([q_scope()], r), call("w"), 1000)
            .await
    });
    settle().await;
    let claim = weak
        .upgrade()
        .unwrap()
        .attach_wait(&w.r, &call("w"))
        .unwrap()
        .unwrap();
    assert_eq!(claim.remaining_ms(), 1000);
    drop(claim);
    advance(Duration::from_millis(1000)).await;
    assert_pending(&task.await.unwrap(), "w");
    drop(w);
    assert!(weak.upgrade().is_none());
}

/// `wait_remaining` tells the time left without claiming: the window still closes at its
/// deadline, and an ended or unknown call has none.
#[tokio::test(start_paused = true)]
async fn the_time_left_is_read_without_holding_the_window() {
    let w = world();
    let task = spawn_timed(
        &w.seam,
        TimedAskRequest::new([q_scope()], w.r.clone()),
        "ask-timed",
        5000,
    );
    settle().await;
    advance(Duration::from_millis(2000)).await;
    let left = w.seam.wait_remaining(&w.r, &call("ask-timed")).unwrap();
    assert_eq!(left, Some(Duration::from_millis(3000)));
    assert_eq!(w.seam.wait_remaining(&w.r, &call("other")).unwrap(), None);
    advance(Duration::from_millis(3000)).await;
    assert_pending(&task.await.unwrap(), "ask-timed");
    assert_eq!(
        w.seam.wait_remaining(&w.r, &call("ask-timed")).unwrap(),
        None
    );
}
