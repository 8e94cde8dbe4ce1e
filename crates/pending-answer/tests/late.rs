//! Scenarios S31–S45 of SPEC §12.3 (fixture LT, the in-memory projection host, next-turn
//! follow-up delivery), the late half of X4 and X8, and restarts.
// Helpers outside `#[test]` functions unwrap too: a panic there is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;

use common::*;
use pending_answer::{HostEvent, Reservation, new_message_id, read_reply, reply_message};
use serde_json::json;
use user_questions::{
    Agent, AgentHandle, AgentId, AnswerPath, CallId, ContentBlock, InMemoryAgent, InMemorySession,
    QuestionEventKind, SessionId, SessionRef, UserMessage,
};
use user_questions_projection::SessionEvent;

fn lt_questions() -> Vec<user_questions::Question> {
    vec![serde_json::from_value(q_scope()).unwrap()]
}

/// A reply for `call_id` that did not come from `answer` (e.g. restored from a durable inbox).
fn foreign_reply(call_id: &str) -> UserMessage {
    reply_message(
        new_message_id(),
        &CallId::from(call_id),
        &lt_questions(),
        &tool_only(),
        Some(origin()),
    )
}

fn reservation(w: &World, call_id: &str) -> Option<Reservation> {
    w.late.reservation(&w.session, &CallId::from(call_id))
}

#[test]
fn s31_answer_queues_the_exact_reply_and_admission_settles() {
    let mut w = World::new();
    w.lt();
    w.continue_lt();

    w.answer(LT, tool_only()).unwrap();
    assert_eq!(w.agent.followups(), 1);
    let queued = w.agent.inner.next_turn();
    assert_eq!(queued.len(), 1);
    let message = &queued[0];
    assert_eq!(
        serde_json::to_string(&message.source).unwrap(),
        r#"{"kind":"user-question-reply","callId":"ask-timed","outcome":"answered","provenance":{"answerer":"ui","answeredBy":"human"}}"#
    );
    assert_eq!(message.role, "user");
    assert_eq!(message.content, vec![ContentBlock::text(TEST_VECTOR)]);
    assert_eq!(
        uuid::Uuid::parse_str(&message.id)
            .unwrap()
            .get_version_num(),
        4
    );
    // Accepted is not settled: the call stays continued until the reply is admitted.
    assert!(
        w.state()
            .continued(&user_questions::CallId::from(LT))
            .is_some()
    );

    let message = w.agent.inner.take_next_turn().unwrap();
    w.commit(turn_start(2));
    w.claim(&message, 2);
    w.admit(&message);
    assert_eq!(
        w.view_json(),
        r#"{"active":[],"settled":[{"callId":"ask-timed","answers":[{"id":"scope","selected":["Tool only"]}],"provenance":{"answerer":"ui","answeredBy":"human"}}]}"#
    );
    assert_eq!(reservation(&w, LT), None);

    assert!(not_waiting(&w.answer(LT, tool_only())));
    assert_eq!(w.agent.followups(), 1);
}

#[test]
fn s32_two_continued_calls_queue_in_answer_order() {
    let mut w = World::new();
    w.lt();
    w.continue_lt();
    w.commit(ask_call(
        "ask-later",
        json!([{"id":"confirm","question":"Proceed?","options":[{"label":"yes"},{"label":"no"}]}]),
    ));
    w.commit(pending_result("ask-later"));

    let queued = w
        .answer(
            "ask-later",
            batch(json!([{"id":"confirm","selected":["no"]}])),
        )
        .unwrap();
    assert_eq!(queued.call_id, "ask-later");
    w.answer(LT, tool_only()).unwrap();

    let calls: Vec<_> = w
        .agent
        .inner
        .next_turn()
        .iter()
        .map(|m| m.reply_call_id().unwrap().to_string())
        .collect();
    assert_eq!(calls, ["ask-later", "ask-timed"]);
    assert!(w.agent.inner.next_step().is_empty());
    assert_eq!(w.agent.followups(), 2);
}

#[test]
fn s33_discarded_reply_makes_the_call_answerable_again() {
    let mut w = World::new();
    w.lt();
    w.continue_lt();

    w.answer(LT, tool_only()).unwrap();
    assert_eq!(code(&w.answer(LT, tool_only())), Some("REPLY_QUEUED"));
    assert_eq!(w.agent.followups(), 1);

    let queued = w.agent.inner.next_turn().remove(0);
    w.discard(&queued);
    assert_eq!(reservation(&w, LT), None);
    w.answer(LT, tool_only()).unwrap();
    assert_eq!(w.agent.followups(), 2);
    assert_eq!(w.agent.inner.next_turn().len(), 1);
}

#[test]
fn s34_a_reply_in_either_queue_blocks_a_new_one() {
    let mut w = World::new();
    w.lt();
    w.continue_lt();
    let restored = foreign_reply(LT);

    w.agent.inner.push_next_step(restored.clone());
    assert_eq!(code(&w.answer(LT, tool_only())), Some("REPLY_QUEUED"));

    w.agent.inner.remove(&restored.id).unwrap();
    w.agent.inner.push_next_turn(restored);
    assert_eq!(code(&w.answer(LT, tool_only())), Some("REPLY_QUEUED"));

    assert_eq!(w.agent.followups(), 0);
    // The queue scan rejected them; nothing was reserved.
    assert_eq!(reservation(&w, LT), None);
}

#[test]
fn s35_claim_re_reserves_and_only_its_turn_end_releases() {
    let mut w = World::new();
    w.lt();
    w.continue_lt();
    let restored = foreign_reply(LT);
    w.agent.inner.push_next_turn(restored.clone());
    assert_eq!(code(&w.answer(LT, tool_only())), Some("REPLY_QUEUED"));

    let claimed = w.agent.inner.take_next_turn().unwrap();
    assert_eq!(claimed, restored);
    w.claim(&claimed, 1);
    assert_eq!(code(&w.answer(LT, tool_only())), Some("REPLY_QUEUED"));
    assert_eq!(
        reservation(&w, LT),
        Some(Reservation {
            message_id: restored.id.clone(),
            claimed_turn: Some(1)
        })
    );

    // A claim of a different reply for the same call does not replace the reservation.
    let other = foreign_reply(LT);
    w.claim(&other, 2);
    assert_eq!(
        reservation(&w, LT).map(|r| r.message_id),
        Some(restored.id.clone())
    );
    assert_eq!(code(&w.answer(LT, tool_only())), Some("REPLY_QUEUED"));

    w.commit(turn_end(1, "completed"));
    assert_eq!(reservation(&w, LT), None);
    w.answer(LT, tool_only()).unwrap();
    assert_eq!(w.agent.followups(), 1);
}

#[test]
fn s36_unrelated_events_leave_the_reservation_alone() {
    let mut w = World::new();
    w.lt();
    w.continue_lt();
    let other_reply = foreign_reply("other-call");

    // Before answering: the end of turn 1 in two other sessions (another id, and another instance
    // of the same id), and a claim of a reply for another call at turn 1.
    for other in [
        InMemorySession::new("s2") as SessionRef,
        InMemorySession::new("s1") as SessionRef,
    ] {
        w.late.on_host_event(&HostEvent::Committed {
            session: other,
            event: SessionEvent::turn_end(99, 1),
        });
    }
    w.claim(&other_reply, 1);
    w.answer(LT, tool_only()).unwrap();
    let ours = w.agent.inner.next_turn().remove(0);

    // Claims and discards of an ordinary message and of the other call's reply.
    let ordinary = UserMessage::user_text("hello-1", TEST_VECTOR);
    w.claim(&ordinary, 1);
    w.late.on_host_event(&HostEvent::InboxDiscarded {
        agent: w.handle(),
        message: ordinary.clone(),
    });
    w.claim(&other_reply, 1);
    w.late.on_host_event(&HostEvent::InboxDiscarded {
        agent: w.handle(),
        message: other_reply.clone(),
    });
    // Both logged as user messages (the ordinary one carries the same JSON text as a reply).
    w.admit(&ordinary);
    w.admit(&other_reply);
    w.commit(step_end(1, 1));
    w.commit(turn_end(1, "completed"));

    assert_eq!(
        reservation(&w, LT),
        Some(Reservation {
            message_id: ours.id,
            claimed_turn: None
        })
    );
    assert!(
        w.state()
            .continued(&user_questions::CallId::from(LT))
            .is_some()
    );
    assert_eq!(code(&w.answer(LT, tool_only())), Some("REPLY_QUEUED"));
    assert_eq!(w.agent.followups(), 1);
}

#[test]
fn s37_aborted_turn_releases_a_claimed_reply() {
    let mut w = World::new();
    w.lt();
    w.continue_lt();

    w.answer(LT, tool_only()).unwrap();
    let claimed = w.agent.inner.take_next_turn().unwrap();
    w.claim(&claimed, 1);
    assert_eq!(code(&w.answer(LT, tool_only())), Some("REPLY_QUEUED"));

    w.commit(turn_end(1, "aborted"));
    w.answer(LT, tool_only()).unwrap();
    assert_eq!(w.agent.followups(), 2);
    assert!(
        w.state()
            .continued(&user_questions::CallId::from(LT))
            .is_some()
    );
}

#[test]
fn s38_failed_delivery_returns_the_host_error_and_releases() {
    let mut w = World::new();
    w.lt();
    w.continue_lt();
    w.agent.fail_next(1);

    let error = w.answer(LT, tool_only()).unwrap_err();
    let pending_answer::LateRefusal::Undelivered(source) = error else {
        panic!("expected an undelivered answer, got {error:?}");
    };
    assert!(source.downcast_ref::<DeliveryFailed>().is_some());
    assert_eq!(reservation(&w, LT), None);
    assert!(w.agent.inner.queued_messages().is_empty());

    w.answer(LT, tool_only()).unwrap();
    assert_eq!(w.agent.followups(), 2);
    assert_eq!(w.agent.inner.next_turn().len(), 1);
}

#[test]
fn s39_no_projection_host_means_false() {
    let mut w = World::without_projections();
    w.lt();
    w.continue_lt();

    assert!(not_waiting(&w.answer(LT, tool_only())));
    assert_eq!(w.agent.followups(), 0);
    // The identity check still comes first.
    let stale: AgentHandle = InMemoryAgent::new("root", Arc::clone(&w.session), []);
    let result = w
        .late
        .answer(&stale, &CallId::from(LT), tool_only(), origin());
    assert_eq!(code(&result), Some("CALLER_NOT_LIVE"));
}

#[test]
fn s40_open_and_unknown_calls_are_false() {
    let mut w = World::new();
    w.lt();

    assert!(not_waiting(&w.answer(LT, tool_only())));
    assert!(not_waiting(&w.answer("no-such-call", tool_only())));
    // Even an invalid batch: nothing is checked past step 2.
    assert!(not_waiting(&w.answer(LT, batch(json!([])))));
    assert_eq!(w.agent.followups(), 0);
    assert_eq!(reservation(&w, LT), None);
}

#[test]
fn s41_bad_batches_are_rejected_and_a_skip_is_valid() {
    #[track_caller]
    fn check(w: &World, items: serde_json::Value) {
        let result = w.answer(LT, batch(items));
        assert_eq!(code(&result), Some("BAD_ANSWER"), "{result:?}");
        assert_eq!(w.agent.followups(), 0);
        assert_eq!(reservation(w, LT), None);
    }

    let mut w = World::new();
    w.lt();
    w.continue_lt();

    check(&w, json!([]));
    check(&w, json!([{"id":"other","selected":[]}]));
    check(
        &w,
        json!([{"id":"scope","selected":[]},{"id":"scope","selected":[]}]),
    );
    check(
        &w,
        json!([{"id":"scope","selected":[]},{"id":"other","selected":[]}]),
    );
    check(&w, json!([{"id":"scope","selected":["Nope"]}]));
    check(
        &w,
        json!([{"id":"scope","selected":["Tool only","Everything"]}]),
    );
    check(
        &w,
        json!([{"id":"scope","selected":[],"custom":"x".repeat(16_385)}]),
    );

    w.answer(LT, batch(json!([{"id":"scope","selected":[]}])))
        .unwrap();
    let reply = read_reply(&w.agent.inner.next_turn()[0]).unwrap();
    assert_eq!(
        reply.answers,
        Some(batch(json!([{"id":"scope","selected":[]}])))
    );
}

#[test]
fn s42_reply_queued_wins_over_bad_answer() {
    let mut w = World::new();
    w.lt();
    w.continue_lt();
    let bad = || batch(json!([{"id":"scope","selected":["Nope"]}]));

    // Reserved by an earlier answer.
    w.answer(LT, tool_only()).unwrap();
    assert_eq!(code(&w.answer(LT, bad())), Some("REPLY_QUEUED"));

    // Only in the queue, with no reservation (restored after a restart).
    let mut w = World::new();
    w.lt();
    w.continue_lt();
    w.agent.inner.push_next_turn(foreign_reply(LT));
    assert_eq!(code(&w.answer(LT, bad())), Some("REPLY_QUEUED"));
    assert_eq!(w.agent.followups(), 0);
}

#[test]
fn s43_identity_is_checked_first() {
    let mut w = World::new();
    w.lt();
    w.continue_lt();

    let child: AgentHandle = InMemoryAgent::new("child", Arc::clone(&w.session), []);
    w.registry.enter_child(child.clone(), &w.handle());
    let result = w
        .late
        .answer(&child, &CallId::from(LT), tool_only(), origin());
    assert_eq!(code(&result), Some("DELEGATED_CALLER"));

    let stale: AgentHandle = InMemoryAgent::new("root", Arc::clone(&w.session), []);
    let result = w
        .late
        .answer(&stale, &CallId::from(LT), tool_only(), origin());
    assert_eq!(code(&result), Some("CALLER_NOT_LIVE"));

    assert_eq!(w.agent.followups(), 0);
    assert_eq!(reservation(&w, LT), None);
}

#[test]
fn s44_legacy_call_after_repair_is_not_answerable() {
    let mut w = World::new();
    w.commit(turn_start(1));
    w.commit(request_header(false));
    w.commit(ask_call(LT, json!([q_scope()])));
    w.commit((
        "tool/result",
        json!({"turn":1,"step":1,"message":{"id":"r1","role":"tool","toolCallId":LT,"content":[{"type":"text","text":"The process stopped before this call finished."}],"isError":true},"error":{"name":"SessionFormatError","code":"TOOL_OUTCOME_UNKNOWN"}}),
    ));

    assert_eq!(w.view_json(), r#"{"active":[],"settled":[]}"#);
    assert!(not_waiting(&w.answer(LT, tool_only())));
    assert_eq!(w.agent.followups(), 0);
}

#[test]
fn s45_concurrent_answers_reserve_once() {
    #[track_caller]
    fn check(w: &World) {
        let results: Vec<_> = std::thread::scope(|scope| {
            let racers: Vec<_> = (0..2)
                .map(|_| {
                    let late = w.late.clone();
                    let agent = w.handle();
                    scope.spawn(move || {
                        late.answer(&agent, &CallId::from(LT), tool_only(), origin())
                    })
                })
                .collect();
            racers.into_iter().map(|r| r.join().unwrap()).collect()
        });
        let accepted = results.iter().filter(|r| r.is_ok()).count();
        let queued = results
            .iter()
            .filter(|r| code(r) == Some("REPLY_QUEUED"))
            .count();
        assert_eq!((accepted, queued), (1, 1), "{results:?}");
        assert_eq!(w.agent.followups(), 1);
        assert_eq!(w.agent.inner.next_turn().len(), 1);
    }

    // Lined up: both calls pass the queue scan (step 3) before either reserves, so the
    // check-and-insert of step 6 decides.
    let mut w = World::new();
    w.lt();
    w.continue_lt();
    w.agent.gate_queue_scans(2);
    check(&w);

    // Free races.
    for _ in 0..200 {
        let mut w = World::new();
        w.lt();
        w.continue_lt();
        check(&w);
    }
}

#[test]
fn x8_late_admission_emits_answered_late() {
    let mut w = World::new();
    let mut events = w.seam.subscribe();
    w.lt();
    w.continue_lt();
    // The pending result made the call continued: announced once, before any answer.
    let kinds: Vec<_> = events.drain().into_iter().map(|e| e.kind).collect();
    assert_eq!(kinds, [QuestionEventKind::Continued]);

    w.answer(LT, tool_only()).unwrap();
    // Accepting, claiming, a stray admitted reply with another id, a discard of that one: no event.
    let message = w.agent.inner.take_next_turn().unwrap();
    w.claim(&message, 2);
    let stray = foreign_reply(LT);
    w.late.on_host_event(&HostEvent::InboxDiscarded {
        agent: w.handle(),
        message: stray.clone(),
    });
    assert!(events.drain().is_empty());

    w.admit(&message);
    let drained = events.drain();
    assert_eq!(drained.len(), 1, "{drained:?}");
    let event = &drained[0];
    assert_eq!(event.ask_id, None);
    assert_eq!(event.call_id.as_ref().map(CallId::as_str), Some(LT));
    assert_eq!(event.agent_id.as_ref().map(AgentId::as_str), Some("root"));
    assert_eq!(event.session_id.as_ref().map(SessionId::as_str), Some("s1"));
    assert_eq!(
        event.kind,
        QuestionEventKind::Answered {
            path: AnswerPath::Late,
            provenance: origin()
        }
    );
    // The projection settled it; a second admission of another reply changes nothing and emits
    // nothing.
    assert!(
        w.state()
            .active(&user_questions::CallId::from(LT))
            .is_none()
    );
    w.admit(&stray);
    assert!(events.drain().is_empty());
    assert_eq!(w.state().view().settled.len(), 1);
}

#[test]
fn x8_re_reserved_reply_admitted_after_restart_emits_answered_late() {
    let mut w = World::new();
    w.lt();
    w.continue_lt();
    w.answer(LT, tool_only()).unwrap();
    w.restart();
    let mut events = w.seam.subscribe();

    let restored = w.agent.inner.take_next_turn().unwrap();
    w.commit(turn_start(2));
    w.claim(&restored, 2);
    w.admit(&restored);
    let drained = events.drain();
    assert_eq!(drained.len(), 1, "{drained:?}");
    assert!(matches!(
        drained[0].kind,
        QuestionEventKind::Answered {
            path: AnswerPath::Late,
            ..
        }
    ));
}

#[test]
fn x4_extra_keys_never_reach_the_reply_or_the_projection() {
    let mut w = World::new();
    w.lt();
    w.continue_lt();

    let from_transport = batch(
        json!([{"id":"scope","selected":["Tool only"],"note":"typed in the web UI","custom":"also docs"}]),
    );
    w.answer(LT, from_transport).unwrap();
    let message = w.agent.inner.take_next_turn().unwrap();
    let text = message.content[0].as_text().expect("a text block");
    assert!(
        text.ends_with(
            r#""answers":[{"id":"scope","selected":["Tool only"],"custom":"also docs"}]}"#
        )
    );
    assert!(!text.contains("note"));

    w.claim(&message, 2);
    w.admit(&message);
    assert_eq!(
        serde_json::to_string(&w.state().view().settled[0].answers).unwrap(),
        r#"[{"id":"scope","selected":["Tool only"],"custom":"also docs"}]"#
    );
}

#[test]
fn an_ordinary_message_with_reply_text_is_not_a_reply() {
    let mut w = World::new();
    w.lt();
    w.continue_lt();
    let ordinary = UserMessage::user_text("m-1", TEST_VECTOR);
    assert_eq!(read_reply(&ordinary), None);

    // In the queue it does not block an answer; admitted it settles nothing.
    w.agent.inner.push_next_turn(ordinary.clone());
    w.answer(LT, tool_only()).unwrap();
    w.admit(&ordinary);
    assert!(
        w.state()
            .continued(&user_questions::CallId::from(LT))
            .is_some()
    );
    assert!(reservation(&w, LT).is_some());
}

#[test]
fn restart_keeps_one_reply_in_flight() {
    let mut w = World::new();
    w.lt();
    w.continue_lt();
    w.answer(LT, tool_only()).unwrap();
    let old_session = Arc::clone(&w.session);
    assert_eq!(w.late.reserved_sessions(), 1);

    w.restart();
    // The old instance is gone, and its reservations with it.
    drop(old_session);
    assert_eq!(w.late.reserved_sessions(), 0);
    assert_eq!(reservation(&w, LT), None);
    // The restored reply sits in the new inbox: the scan keeps the one-reply rule.
    assert!(
        w.state()
            .continued(&user_questions::CallId::from(LT))
            .is_some()
    );
    assert_eq!(code(&w.answer(LT, tool_only())), Some("REPLY_QUEUED"));

    // Claimed by a turn that is interrupted: re-reserved, then released by that turn's end.
    let restored = w.agent.inner.take_next_turn().unwrap();
    w.commit(turn_start(2));
    w.claim(&restored, 2);
    assert_eq!(code(&w.answer(LT, tool_only())), Some("REPLY_QUEUED"));
    w.commit(turn_end(2, "interrupted"));
    w.answer(LT, tool_only()).unwrap();
    assert_eq!(w.agent.followups(), 1);
}

#[test]
fn a_stale_agent_of_a_resumed_session_is_refused() {
    let mut w = World::new();
    w.lt();
    w.continue_lt();
    let old: AgentHandle = w.handle();
    w.restart();
    let result = w
        .late
        .answer(&old, &CallId::from(LT), tool_only(), origin());
    assert_eq!(code(&result), Some("CALLER_NOT_LIVE"));
    w.answer(LT, tool_only()).unwrap();
    assert_eq!(old.queued_messages().len(), 0);
}

#[test]
fn answer_after_the_seam_is_gone_is_aborted() {
    let mut w = World::new();
    w.lt();
    w.continue_lt();
    let World {
        seam, late, agent, ..
    } = w;
    drop(seam);
    let result = late.answer(
        &(agent.clone() as AgentHandle),
        &CallId::from(LT),
        tool_only(),
        origin(),
    );
    assert_eq!(code(&result), Some("ASK_ABORTED"));
    assert_eq!(agent.followups(), 0);
}

#[test]
fn continued_is_announced_once_the_pending_result_is_committed() {
    let mut w = World::new();
    let mut events = w.seam.subscribe();
    // The call is logged: open, nothing announced.
    w.lt();
    assert!(events.drain().is_empty());
    // A result of another call (not tracked) announces nothing.
    w.commit(pending_result("ask-unknown"));
    assert!(events.drain().is_empty());
    // The pending result: `continued`, with the session and the call, no ask id.
    w.continue_lt();
    let drained = events.drain();
    assert_eq!(drained.len(), 1, "{drained:?}");
    let event = &drained[0];
    assert_eq!(event.kind, QuestionEventKind::Continued);
    assert_eq!(event.ask_id, None);
    assert_eq!(event.call_id.as_ref().map(CallId::as_str), Some(LT));
    assert_eq!(event.session_id.as_ref().map(SessionId::as_str), Some("s1"));
    // The announcement tells the truth: a late answer is taken now.
    w.answer(LT, tool_only()).unwrap();
    // The reply's admission settles it: `answered(late)`, never another `continued`.
    let message = w.agent.inner.take_next_turn().unwrap();
    w.claim(&message, 2);
    w.admit(&message);
    let kinds: Vec<_> = events.drain().into_iter().map(|e| e.kind).collect();
    assert!(
        matches!(
            kinds.as_slice(),
            [QuestionEventKind::Answered {
                path: AnswerPath::Late,
                ..
            }]
        ),
        "{kinds:?}"
    );
}

#[test]
fn a_surface_awaits_the_continuation_then_submits() {
    let mut w = World::new();
    w.lt();
    // Subscribed while the question is on show, before its window closes.
    let mut events = w.seam.subscribe();
    let session = user_questions::SessionId::from("s1");
    let call = CallId::from(LT);
    // Before the pending result is committed, nothing waits for a late answer.
    assert!(not_waiting(&w.answer(LT, tool_only())));
    w.continue_lt();
    let continuation = futures::executor::block_on(pending_answer::continued(
        &mut events,
        Some(&session),
        &call,
    ));
    assert_eq!(continuation, pending_answer::Continuation::Continued);
    w.answer(LT, tool_only()).unwrap();
}

#[test]
fn a_call_that_ends_otherwise_is_not_awaited_forever() {
    let mut w = World::new();
    w.lt();
    let mut events = w.seam.subscribe();
    // The window's end as the seam tells it (a foreground answer elsewhere), for this call.
    w.seam.publish(user_questions::QuestionEvent {
        ask_id: Some("ask-1".to_owned()),
        call_id: Some(CallId::from(LT)),
        agent_id: None,
        session_id: Some(user_questions::SessionId::from("s1")),
        at_ms: 0,
        kind: QuestionEventKind::Cancelled { code: None },
    });
    let continuation = futures::executor::block_on(pending_answer::continued(
        &mut events,
        None,
        &CallId::from(LT),
    ));
    assert_eq!(continuation, pending_answer::Continuation::Ended);
}
