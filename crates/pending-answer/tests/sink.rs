//! The late-answer contract of answering surfaces: `LateAnswers` as a `LateAnswerSink`, on fixture
//! LT (SPEC §4.8 as a surface sees it: taken, or refused with a reason it can show).
// Helpers outside `#[test]` functions unwrap too: a panic there is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::{Arc, Mutex};

use common::*;
use pending_answer::{LateAnswerSink, LateRefusal, LateSubmission, NotWaiting, Queued};
use serde_json::json;
use user_questions::{AnswerBatch, CallId};

/// A submission for `call_id` from the world's live agent.
fn submission(w: &World, call_id: &str, answers: AnswerBatch) -> LateSubmission {
    LateSubmission {
        call_id: CallId::from(call_id),
        agent: Some(w.handle()),
        answers,
        provenance: origin(),
        session: None,
    }
}

/// Fixture LT, continued: the call waits for a late answer.
fn continued() -> World {
    let mut w = World::new();
    w.lt();
    w.continue_lt();
    w
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
    let taken = w.late.submit(submission(&w, LT, tool_only())).unwrap();
    assert_eq!(w.agent.followups(), 1);
    let queued = w.agent.inner.next_turn();
    assert_eq!(queued.len(), 1);
    // What was queued is named: the call and the reply message's id.
    assert_eq!(taken.call_id, LT);
    assert_eq!(taken.message_id, queued[0].id);
    assert_eq!(
        queued[0].reply_call_id().map(ToString::to_string),
        Some(LT.to_owned())
    );
    assert_eq!(
        serde_json::to_value(&queued[0].source).unwrap()["provenance"],
        json!({"answerer":"ui","answeredBy":"human"})
    );
    // Taken is not settled: the call stays continued until the reply is admitted.
    assert!(w.state().continued(&CallId::from(LT)).is_some());
    assert!(w.late.reservation(&w.session, &CallId::from(LT)).is_some());
}

#[test]
fn not_continued_is_no_longer_waiting() {
    // Open (no pending result yet), unknown, and a host without projections: each with its
    // reason.
    let mut open = World::new();
    open.lt();
    let without = World::without_projections();
    for (w, call_id, why) in [
        (&open, LT, NotWaiting::Open),
        (&open, "ask-unknown", NotWaiting::Unknown),
        (&without, LT, NotWaiting::Unknown),
    ] {
        let result = w.late.submit(submission(w, call_id, tool_only()));
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
}

#[test]
fn bad_answer_is_rejected_with_its_code() {
    let w = continued();
    let wrong = batch(json!([{"id":"scope","selected":["Nothing"]}]));
    let refusal = w.late.submit(submission(&w, LT, wrong)).unwrap_err();
    assert_eq!(refusal.code(), Some("BAD_ANSWER"));
    assert!(matches!(refusal, LateRefusal::BadAnswer(_)), "{refusal:?}");
    assert_eq!(w.agent.followups(), 0);
    // The call is still answerable.
    w.late.submit(submission(&w, LT, tool_only())).unwrap();
}

#[test]
fn second_answer_is_rejected_as_reply_queued() {
    let w = continued();
    w.late.submit(submission(&w, LT, tool_only())).unwrap();
    let again = w.late.submit(submission(&w, LT, tool_only()));
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
fn without_an_agent_nothing_is_delivered() {
    let w = continued();
    let mut orphan = submission(&w, LT, tool_only());
    orphan.agent = None;
    check_refused(
        w.late.submit(orphan),
        None,
        "this question has no agent to answer",
    );
    assert_eq!(w.agent.followups(), 0);
    assert!(w.late.reservation(&w.session, &CallId::from(LT)).is_none());
}

#[test]
fn failed_delivery_is_undelivered_and_can_be_retried() {
    let w = continued();
    w.agent.fail_next(1);
    let refusal = w.late.submit(submission(&w, LT, tool_only())).unwrap_err();
    assert!(
        matches!(refusal, LateRefusal::Undelivered(_)),
        "{refusal:?}"
    );
    assert_eq!(refusal.code(), None);
    assert_eq!(refusal.to_string(), DeliveryFailed.to_string());
    // The reservation was released: the same answer goes through now.
    w.late.submit(submission(&w, LT, tool_only())).unwrap();
    assert_eq!(w.agent.followups(), 2);
}

#[test]
fn surfaces_take_shared_sinks_and_closures() {
    let w = continued();
    let shared: Arc<dyn LateAnswerSink> = Arc::new(w.late.clone());
    shared.submit(submission(&w, LT, tool_only())).unwrap();
    assert_eq!(w.agent.followups(), 1);

    let seen = Arc::new(Mutex::new(Vec::new()));
    let forward = {
        let seen = Arc::clone(&seen);
        move |submission: LateSubmission| {
            seen.lock().unwrap().push(submission.call_id);
            Err(LateRefusal::NotWaiting(NotWaiting::Unknown))
        }
    };
    let sink: Arc<dyn LateAnswerSink> = Arc::new(forward);
    check_refused(
        sink.submit(submission(&w, "ask-elsewhere", tool_only())),
        None,
        "This question is no longer waiting for an answer.",
    );
    assert_eq!(*seen.lock().unwrap(), [CallId::from("ask-elsewhere")]);
}
