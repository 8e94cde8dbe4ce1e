//! A property test over random host histories (proptest): answers, turns that claim and admit
//! queued messages, turns that end without admitting, discards, ordinary messages and restarts
//! (a new session instance and agent for the same session, the projection refolded from the log,
//! the durable inbox restored).
//!
//! After every step: never two replies in flight for one call; an accepted reply is never lost (it
//! is queued, claimed, admitted, or its call is answerable again); the projection settles each call
//! at most once, exactly when one of its replies is admitted; every admission is reported once as
//! `answered` with path `late`; and `answer` returns what the SPEC's net semantics predict.
// Helpers outside `#[test]` functions unwrap too: a panic there is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::HashMap;

use common::*;
use pending_answer::{LateRefusal, Reservation};
use proptest::prelude::*;
use serde_json::json;
use user_questions::{Agent, AnswerBatch, AnswerPath, CallId, QuestionEventKind, UserMessage};

const CALLS: [&str; 2] = ["ask-a", "ask-b"];

fn valid_batch(call: usize) -> AnswerBatch {
    match call {
        0 => tool_only(),
        _ => batch(json!([{"id":"confirm","selected":["yes"]}])),
    }
}

#[derive(Clone, Debug)]
enum Op {
    /// `answer` for one of the calls, with a valid or an invalid batch.
    Answer { call: usize, valid: bool },
    /// A turn starts and claims the first queued message.
    StartTurn,
    /// The running turn admits its message (logs it as `user/message`).
    Admit,
    /// The running turn ends (admitted or not).
    EndTurn,
    /// A queued message is cancelled.
    Discard { pick: usize },
    /// The person sends an ordinary message whose text is reply JSON.
    Ordinary,
    /// The process dies and the session is resumed.
    Restart,
}

fn any_op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0..CALLS.len(), prop::bool::weighted(0.8))
            .prop_map(|(call, valid)| Op::Answer { call, valid }),
        3 => Just(Op::StartTurn),
        2 => Just(Op::Admit),
        3 => Just(Op::EndTurn),
        1 => any::<usize>().prop_map(|pick| Op::Discard { pick }),
        1 => Just(Op::Ordinary),
        1 => Just(Op::Restart),
    ]
}

struct Running {
    turn: u64,
    claimed: UserMessage,
    admitted: bool,
}

struct Model {
    w: World,
    events: user_questions::QuestionEvents,
    last_turn: u64,
    running: Option<Running>,
    /// Replies admitted, per call.
    admitted: HashMap<&'static str, usize>,
    /// `answered(late)` events seen.
    late_events: usize,
    ordinary: usize,
}

impl Model {
    fn new() -> Self {
        let mut w = World::new();
        let events = w.seam.subscribe();
        w.commit(turn_start(1));
        w.commit(request_header(true));
        w.commit(ask_call(CALLS[0], json!([q_scope()])));
        w.commit(ask_call(
            CALLS[1],
            json!([{"id":"confirm","question":"Proceed?","options":[{"label":"yes"},{"label":"no"}]}]),
        ));
        w.commit(pending_result(CALLS[0]));
        w.commit(pending_result(CALLS[1]));
        w.commit(turn_end(1, "completed"));
        Self {
            w,
            events,
            last_turn: 1,
            running: None,
            admitted: HashMap::new(),
            late_events: 0,
            ordinary: 0,
        }
    }

    /// Replies for `call` in flight: queued (either queue) or claimed by the running turn and not
    /// yet admitted.
    fn in_flight(&self, call: &str) -> usize {
        let call_id = CallId::from(call);
        let queued = self
            .w
            .agent
            .inner
            .queued_messages()
            .iter()
            .filter(|m| m.reply_call_id() == Some(&call_id))
            .count();
        let claimed = self
            .running
            .as_ref()
            .is_some_and(|r| !r.admitted && r.claimed.reply_call_id() == Some(&call_id));
        queued + usize::from(claimed)
    }

    fn continued(&self, call: &str) -> bool {
        self.w.state().continued(&CallId::from(call)).is_some()
    }

    fn step(&mut self, op: &Op) {
        match op {
            Op::Answer { call, valid } => {
                let name = CALLS[*call];
                let expected = if !self.continued(name) {
                    Err("NOT_WAITING")
                } else if self.in_flight(name) > 0 {
                    Err("REPLY_QUEUED")
                } else if !valid {
                    Err("BAD_ANSWER")
                } else {
                    Ok(())
                };
                let batch = if *valid {
                    valid_batch(*call)
                } else {
                    AnswerBatch::default()
                };
                let result = self.w.answer(name, batch);
                let actual = match &result {
                    Ok(_) => Ok(()),
                    Err(LateRefusal::NotWaiting(_)) => Err("NOT_WAITING"),
                    Err(e) => Err(e.code().unwrap_or("foreign")),
                };
                assert_eq!(actual, expected, "answer({name}) gave {result:?}");
            }
            Op::StartTurn => {
                if self.running.is_none()
                    && let Some(message) = self.w.agent.inner.take_next_turn()
                {
                    self.last_turn += 1;
                    let turn = self.last_turn;
                    self.w.commit(turn_start(turn));
                    self.w.claim(&message, turn);
                    self.running = Some(Running {
                        turn,
                        claimed: message,
                        admitted: false,
                    });
                }
            }
            Op::Admit => {
                if let Some(running) = &mut self.running
                    && !running.admitted
                {
                    running.admitted = true;
                    let message = running.claimed.clone();
                    if let Some(call) = CALLS
                        .iter()
                        .find(|c| message.reply_call_id().map(CallId::as_str) == Some(**c))
                    {
                        *self.admitted.entry(call).or_default() += 1;
                    }
                    self.w.admit(&message);
                }
            }
            Op::EndTurn => {
                if let Some(running) = self.running.take() {
                    let reason = if running.admitted {
                        "completed"
                    } else {
                        "aborted"
                    };
                    self.w.commit(turn_end(running.turn, reason));
                }
            }
            Op::Discard { pick } => {
                let queued = self.w.agent.inner.queued_messages();
                if !queued.is_empty() {
                    self.w.discard(&queued[pick % queued.len()]);
                }
            }
            Op::Ordinary => {
                self.ordinary += 1;
                self.w.agent.inner.push_next_turn(UserMessage::user_text(
                    format!("ordinary-{}", self.ordinary),
                    TEST_VECTOR,
                ));
            }
            Op::Restart => {
                // The running turn dies with the process; resume repair closes it in the log.
                if let Some(running) = self.running.take() {
                    let line = json!({"type":"turn/end","data":{"turn":running.turn,"reason":{"kind":"interrupted"}}});
                    self.w.append_only(&line);
                }
                self.w.restart();
            }
        }
        self.late_events += self
            .events
            .drain()
            .iter()
            .filter(|e| {
                matches!(
                    e.kind,
                    QuestionEventKind::Answered {
                        path: AnswerPath::Late,
                        ..
                    }
                )
            })
            .count();
    }

    fn check_invariants(&self) {
        let state = self.w.state();
        for call in CALLS {
            let in_flight = self.in_flight(call);
            // Never two replies in flight for one call.
            assert!(in_flight <= 1, "{in_flight} replies in flight for {call}");
            let reservation = self
                .w
                .late
                .reservation(&self.w.session, &CallId::from(call));
            // Nothing in flight: the call is answerable again (no reservation left behind).
            if in_flight == 0 {
                assert_eq!(
                    reservation, None,
                    "{call}: a reservation outlived its reply"
                );
            }
            // A claimed, unadmitted reply is reserved by its own message.
            if let Some(running) = &self.running
                && !running.admitted
                && running.claimed.reply_call_id().map(CallId::as_str) == Some(call)
            {
                assert_eq!(
                    reservation,
                    Some(Reservation {
                        message_id: running.claimed.id.clone(),
                        claimed_turn: Some(running.turn)
                    })
                );
            }
            // Settled at most once, exactly when a reply was admitted; otherwise still continued.
            let settled = state
                .view()
                .settled
                .iter()
                .filter(|s| s.call_id.as_str() == call)
                .count();
            let admitted = self.admitted.get(call).copied().unwrap_or(0);
            assert!(admitted <= 1, "{admitted} replies admitted for {call}");
            assert_eq!(
                settled, admitted,
                "{call}: settled {settled}, admitted {admitted}"
            );
            assert_eq!(
                state.continued(&CallId::from(call)).is_some(),
                admitted == 0
            );
        }
        assert_eq!(
            self.late_events,
            self.admitted.values().sum::<usize>(),
            "one answered(late) per admission"
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn replies_are_never_doubled_nor_lost(ops in prop::collection::vec(any_op(), 1..60)) {
        let mut model = Model::new();
        model.check_invariants();
        for op in &ops {
            model.step(op);
            model.check_invariants();
        }
    }
}
