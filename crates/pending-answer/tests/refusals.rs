//! Late answers as an answering surface meets them, on fixture LT (SPEC §4.8): taken, or refused
//! with a reason it can show the person; and the one rule for an answer given as the window
//! closed (`when_continued`).
// Helpers outside `#[test]` functions unwrap too: a panic there is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use common::*;
use pending_answer::{CONTINUED_WITHIN, LateRefusal, NotWaiting, Queued, when_continued};
use serde_json::json;
use user_questions::{AnswerBatch, CallId, SessionId};

/// Fixture LT, continued: the call waits for a late answer.
fn continued() -> World {
    let mut w = World::new();
    w.lt();
    w.continue_lt();
    w
}

fn queue(w: &World, call_id: &str, answers: AnswerBatch) -> Result<Queued, LateRefusal> {
    w.late
        .queue(&w.handle(), &CallId::from(call_id), answers, origin())
}

/// Checks a refusal's code and the exact message a surface shows the person.
#[track_caller]
fn check_refused(result: Result<Queued, LateRefusal>, code: Option<&str>, message: &str) {
    let refusal = result.expect_err("the answer was taken, not refused");
    assert_eq!(refusal.code(), code, "{refusal:?}");
    assert_eq!(refusal.to_string(), message, "{refusal:?}");
}

#[test]
fn accepted_answer_is_queued_as_the_follow_up_reply() {
    let w = continued();
    let taken = queue(&w, LT, tool_only()).unwrap();
    assert_eq!(w.agent.followups(), 1);
    let queued = w.agent.inner.next_turn();
    assert_eq!(queued.len(), 1);
    // What was queued is named: the call and the reply message's id.
    assert_eq!(taken.call_id, LT);
    assert_eq!(taken.message_id, queued[0].id);
    assert_eq!(
        serde_json::to_value(&queued[0].source).unwrap()["provenance"],
        json!({"answerer":"ui","answeredBy":"human"})
    );
    // Taken is not settled: the call stays continued until the reply is admitted.
    assert!(w.state().continued(&CallId::from(LT)).is_some());
    assert!(w.late.reservation(&w.session, &CallId::from(LT)).is_some());
    // SPEC §4.2's name is the same call.
    let again = w
        .late
        .answer(&w.handle(), &CallId::from(LT), tool_only(), origin());
    assert!(
        matches!(again, Err(LateRefusal::ReplyQueued { .. })),
        "{again:?}"
    );
}

#[test]
fn not_continued_is_no_longer_waiting_with_its_reason() {
    // Open in a timed session with no window open in the seam: its window closed and its pending
    // result is not logged yet (closing); unknown; and a host without projections.
    let mut open = World::new();
    open.lt();
    let without = World::without_projections();
    for (w, call_id, why) in [
        (&open, LT, NotWaiting::Closing),
        (&open, "ask-unknown", NotWaiting::Unknown),
        (&without, LT, NotWaiting::Unknown),
    ] {
        let result = queue(w, call_id, tool_only());
        assert!(
            matches!(&result, Err(LateRefusal::NotWaiting(reason)) if *reason == why),
            "{result:?}"
        );
        check_refused(
            result,
            None,
            "This question is no longer waiting for an answer.",
        );
        assert_eq!(w.agent.followups(), 0);
    }
    // Settled: said so.
    let mut settled = continued();
    queue(&settled, LT, tool_only()).unwrap();
    let reply = settled.agent.inner.next_turn()[0].clone();
    settled.admit(&reply);
    let result = queue(&settled, LT, tool_only());
    assert!(
        matches!(&result, Err(LateRefusal::NotWaiting(NotWaiting::Settled))),
        "{result:?}"
    );
}

#[test]
fn bad_answer_is_rejected_with_its_code() {
    let w = continued();
    let wrong = batch(json!([{"id":"scope","selected":["Nothing"]}]));
    let refusal = queue(&w, LT, wrong).unwrap_err();
    assert_eq!(refusal.code(), Some("BAD_ANSWER"));
    assert!(matches!(refusal, LateRefusal::BadAnswer(_)), "{refusal:?}");
    assert_eq!(w.agent.followups(), 0);
    // The call is still answerable.
    queue(&w, LT, tool_only()).unwrap();
}

#[test]
fn second_answer_is_rejected_as_reply_queued() {
    let w = continued();
    queue(&w, LT, tool_only()).unwrap();
    let again = queue(&w, LT, tool_only());
    let queued = w.agent.inner.next_turn()[0].id.clone();
    let message = user_questions::UserQuestionError::reply_queued(&CallId::from(LT))
        .message()
        .to_owned();
    // The refusal carries the seam's own message, unchanged, and names the reply in flight.
    let Err(LateRefusal::ReplyQueued { message_id, .. }) = &again else {
        panic!("not REPLY_QUEUED: {again:?}");
    };
    assert_eq!(message_id.as_deref(), Some(queued.as_str()));
    check_refused(again, Some("REPLY_QUEUED"), &message);
    assert_eq!(w.agent.followups(), 1);
}

#[test]
fn failed_delivery_is_undelivered_and_can_be_retried() {
    let w = continued();
    w.agent.fail_next(1);
    let refusal = queue(&w, LT, tool_only()).unwrap_err();
    assert!(
        matches!(refusal, LateRefusal::Undelivered(_)),
        "{refusal:?}"
    );
    assert_eq!(refusal.code(), None);
    assert_eq!(refusal.to_string(), DeliveryFailed.to_string());
    // The reservation was released: the same answer goes through now.
    queue(&w, LT, tool_only()).unwrap();
    assert_eq!(w.agent.followups(), 2);
}

/// An answer given as LT's window closed meets the call closing; once the pending result is
/// committed (the host's `continued` announcement), the same attempt is taken, without a poll.
#[tokio::test(start_paused = true)]
async fn an_answer_given_as_the_window_closed_waits_for_the_continuation() {
    let mut w = World::new();
    w.lt();
    let seam = w.seam.clone();
    let (late, agent) = (w.late.clone(), w.handle());
    let started = tokio::time::Instant::now();
    let waiting = tokio::spawn(async move {
        let mut attempts = 0;
        let outcome = when_continued(&seam, &SessionId::from("s1"), &CallId::from(LT), || {
            attempts += 1;
            std::future::ready(late.queue(&agent, &CallId::from(LT), tool_only(), origin()))
        })
        .await;
        (outcome, attempts)
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(!waiting.is_finished(), "it waits for the continuation");
    // The host commits the pending result: late answers announce the call continued.
    w.continue_lt();
    let (outcome, attempts) = waiting.await.unwrap();
    outcome.unwrap();
    assert_eq!(attempts, 2);
    assert!(started.elapsed() < CONTINUED_WITHIN);
    assert_eq!(w.agent.followups(), 1);
}

/// A host that never makes the pending result durable: the answer waits `CONTINUED_WITHIN`, then
/// is refused as the second attempt says.
#[tokio::test(start_paused = true)]
async fn a_continuation_that_never_comes_is_waited_for_once() {
    let mut w = World::new();
    w.lt();
    let started = tokio::time::Instant::now();
    let outcome = when_continued(&w.seam, &SessionId::from("s1"), &CallId::from(LT), || {
        std::future::ready(queue(&w, LT, tool_only()))
    })
    .await;
    assert!(
        matches!(outcome, Err(LateRefusal::NotWaiting(NotWaiting::Closing))),
        "{outcome:?}"
    );
    assert_eq!(started.elapsed(), CONTINUED_WITHIN);
    // Any other outcome is the answer at once: no wait.
    let started = tokio::time::Instant::now();
    let unknown = when_continued(
        &w.seam,
        &SessionId::from("s1"),
        &CallId::from("ask-unknown"),
        || std::future::ready(queue(&w, "ask-unknown", tool_only())),
    )
    .await;
    assert!(
        matches!(unknown, Err(LateRefusal::NotWaiting(NotWaiting::Unknown))),
        "{unknown:?}"
    );
    assert_eq!(started.elapsed(), Duration::ZERO);
}
