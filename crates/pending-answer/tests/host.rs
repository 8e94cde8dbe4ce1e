//! The in-memory projection host and the host-event contract: state per live session instance,
//! seeding from a log, dropped instances, and commit order.
// Helpers outside `#[test]` functions unwrap too: a panic there is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;

use common::*;
use pending_answer::{HostEvent, InMemoryProjectionHost, ProjectionHost};
use serde_json::json;
use user_questions::{AnswerPath, InMemorySession, QuestionEventKind, SessionRef, UserMessage};
use user_questions_projection::{ActiveState, SessionEvent, UserQuestionsState};

/// The tools of a `request/header` that offers the timed `ask_user_question` (SPEC §8.3).
const TIMED_TOOLS: &str = r#"[{"name":"ask_user_question","parameters":{"type":"object","properties":{"questions":{"type":"array"},"timeout":{"type":"integer"}}}}]"#;

fn lt_events() -> Vec<SessionEvent> {
    let arguments = json!({"questions":[q_scope()]}).to_string();
    vec![
        SessionEvent::request_header(0, TIMED_TOOLS),
        SessionEvent::tool_call(1, LT, "ask_user_question", &arguments),
        SessionEvent::tool_result(2, LT, r#"{"pending":true,"callId":"ask-timed"}"#, false),
    ]
}

#[test]
fn state_is_kept_per_session_instance() {
    let host = InMemoryProjectionHost::new();
    let session: SessionRef = InMemorySession::new("s1");
    let same_id: SessionRef = InMemorySession::new("s1");

    assert_eq!(host.user_questions(&session), None);
    let changed: Vec<bool> = lt_events()
        .iter()
        .map(|event| host.record(&session, event))
        .collect();
    assert_eq!(changed, [true, true, true]);
    assert!(!host.record(&session, &SessionEvent::turn_end(3, 1)));

    let state = host.user_questions(&session).unwrap();
    assert_eq!(
        state
            .continued(&user_questions::CallId::from(LT))
            .unwrap()
            .state,
        ActiveState::Continued
    );
    // Another instance with the same id is another session instance.
    assert_eq!(host.user_questions(&same_id), None);
    assert_eq!(host.tracked_sessions(), 1);
}

#[test]
fn dropped_instances_are_forgotten() {
    let host = InMemoryProjectionHost::new();
    let session: SessionRef = InMemorySession::new("s1");
    for event in lt_events() {
        host.record(&session, &event);
    }
    let kept: SessionRef = InMemorySession::new("s2");
    host.seed(&kept, UserQuestionsState::new(0));
    assert_eq!(host.tracked_sessions(), 2);

    drop(session);
    assert_eq!(host.tracked_sessions(), 1);
    // A new instance, wherever it is allocated, starts untracked.
    let fresh: SessionRef = InMemorySession::new("s1");
    assert_eq!(host.user_questions(&fresh), None);

    assert_eq!(host.forget(&kept), Some(UserQuestionsState::new(0)));
    assert_eq!(host.tracked_sessions(), 0);
}

#[test]
fn a_resumed_session_is_seeded_from_its_log() {
    let mut w = World::new();
    w.lt();
    w.continue_lt();
    let projections = w.projections.clone().unwrap();

    let resumed: SessionRef = InMemorySession::new("s1");
    let folded = projections
        .seed_from_log(&resumed, w.log_file().as_bytes())
        .unwrap();
    assert!(folded.report.is_clean());
    assert_eq!(folded.report.end.expected_seq, 5);
    assert_eq!(
        projections.user_questions(&resumed),
        projections.user_questions(&w.session)
    );

    // An unreadable log is an error, and the session stays untracked.
    let broken: SessionRef = InMemorySession::new("s3");
    assert!(
        projections
            .seed_from_log(&broken, "not a log\n".as_bytes())
            .is_err()
    );
    assert_eq!(projections.user_questions(&broken), None);
}

#[test]
fn admission_is_reported_whether_the_projection_applies_first_or_last() {
    for projection_first in [true, false] {
        let mut w = World::new();
        let mut events = w.seam.subscribe();
        w.lt();
        w.continue_lt();
        w.answer(LT, tool_only()).unwrap();
        let message = w.agent.inner.take_next_turn().unwrap();
        w.claim(&message, 2);

        let (event_type, data) = user_message(&message);
        let line = json!({"type":event_type,"seq":5,"data":data}).to_string();
        let event = SessionEvent::from_record(&line, 5)
            .unwrap()
            .into_events()
            .next()
            .unwrap();
        let projections = w.projections.clone().unwrap();
        let deliver = || {
            w.late.on_host_event(&HostEvent::Committed {
                session: Arc::clone(&w.session),
                event: event.clone(),
            });
        };
        if projection_first {
            projections.record(&w.session, &event);
            deliver();
        } else {
            deliver();
            projections.record(&w.session, &event);
        }

        let late: Vec<_> = events
            .drain()
            .into_iter()
            .filter(|e| {
                matches!(
                    e.kind,
                    QuestionEventKind::Answered {
                        path: AnswerPath::Late,
                        ..
                    }
                )
            })
            .collect();
        assert_eq!(late.len(), 1, "projection first: {projection_first}");
        assert_eq!(w.state().view().settled.len(), 1);
        assert!(
            w.state()
                .active(&user_questions::CallId::from(LT))
                .is_none()
        );
        assert_eq!(w.late.reservation(&w.session, &LT.into()), None);
    }
}

#[test]
fn host_events_debug_names_ids() {
    let w = World::new();
    let message = UserMessage::user_text("m-1", "hi");
    let claimed = HostEvent::InboxClaimed {
        agent: w.handle(),
        message: message.clone(),
        turn: 3,
    };
    let discarded = HostEvent::InboxDiscarded {
        agent: w.handle(),
        message,
    };
    let committed = HostEvent::Committed {
        session: Arc::clone(&w.session),
        event: SessionEvent::turn_end(7, 3),
    };
    let claimed = format!("{claimed:?}");
    assert!(
        claimed.starts_with("InboxClaimed { agent: AgentId(\"root\")"),
        "{claimed}"
    );
    assert!(claimed.ends_with("turn: 3 }"), "{claimed}");
    assert!(format!("{discarded:?}").contains("\"m-1\""));
    assert!(format!("{committed:?}").starts_with("Committed { session: SessionId(\"s1\")"));
}
