//! A small host for the scenarios of SPEC §12.3: the real seam with an in-memory registry, the real
//! projection fold fed with log records through `SessionEvent::from_record`, the in-memory
//! projection host, and an agent that wraps `InMemoryAgent` to count (and optionally fail) its
//! follow-up deliveries.
// Each test binary uses only part of this host, and tests may panic on a broken fixture.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]
// Fixture builders take JSON values by value so that call sites can pass `json!` literals.
#![allow(clippy::needless_pass_by_value)]

use std::collections::VecDeque;
use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, Mutex};

use pending_answer::{
    HostEvent, InMemoryProjectionHost, LateAnswers, LateRefusal, ProjectionHost, Queued,
};
use serde_json::{Value, json};
use user_questions::{
    Agent, AgentHandle, AgentId, AnswerBatch, CallId, HostBindings, HostError, InMemoryAgent,
    InMemoryAgentRegistry, InMemorySession, Provenance, ScopeId, SessionRef, UserMessage,
    UserQuestions, UserQuestionsConfig,
};
use user_questions_projection::{SessionEvent, UserQuestionsState};

/// The call of fixture LT.
pub const LT: &str = "ask-timed";

/// The §6 test-vector reply text for LT answered with `Tool only`.
pub const TEST_VECTOR: &str = r#"{"kind":"answer_to_pending_question","tool":"ask_user_question","callId":"ask-timed","questions":[{"id":"scope","question":"Which scope?","options":[{"label":"Tool only"},{"label":"Everything"}]}],"answers":[{"id":"scope","selected":["Tool only"]}]}"#;

/// `Q_SCOPE` in model-facing form (the tool arguments).
pub fn q_scope() -> Value {
    json!({"id":"scope","question":"Which scope?","options":[{"label":"Tool only"},{"label":"Everything"}]})
}

/// The `ask_user_question` schema with (timed) or without (legacy) `timeout`.
pub fn ask_schema(timed: bool) -> Value {
    let mut properties = json!({"questions":{"type":"array"}});
    if timed {
        properties["timeout"] = json!({"type":"integer"});
    }
    json!({"name":"ask_user_question","description":"Ask the user.","parameters":{"type":"object","properties":properties}})
}

pub fn request_header(timed: bool) -> (&'static str, Value) {
    (
        "request/header",
        json!({"header":{"config":{"provider":"p","model":"m"},"tools":[ask_schema(timed)]},"reason":"initial"}),
    )
}

pub fn ask_call(call_id: &str, questions: Value) -> (&'static str, Value) {
    (
        "tool/call",
        json!({"turn":1,"step":1,"callId":call_id,"name":"ask_user_question","arguments":json!({"questions":questions}).to_string()}),
    )
}

/// "Continue": a newest-layout pending `tool/result`.
pub fn pending_result(call_id: &str) -> (&'static str, Value) {
    let text = json!({"pending":true,"callId":call_id}).to_string();
    (
        "tool/result",
        json!({"turn":1,"step":1,"message":{"id":format!("result-{call_id}"),"role":"tool","toolCallId":call_id,"content":[{"type":"text","text":text}],"isError":false}}),
    )
}

pub fn turn_start(turn: u64) -> (&'static str, Value) {
    ("turn/start", json!({"turn":turn}))
}

pub fn turn_end(turn: u64, reason: &str) -> (&'static str, Value) {
    ("turn/end", json!({"turn":turn,"reason":{"kind":reason}}))
}

pub fn step_end(turn: u64, step: u64) -> (&'static str, Value) {
    ("step/end", json!({"turn":turn,"step":step}))
}

/// A `user/message` record of `message`, as the agent loop logs an admitted message.
pub fn user_message(message: &UserMessage) -> (&'static str, Value) {
    let mut data = serde_json::to_value(message).unwrap();
    data["surfaceOp"] = json!("append");
    ("user/message", data)
}

pub fn origin() -> Provenance {
    Provenance::human("ui")
}

/// A batch from its JSON items (as a transport would decode it).
pub fn batch(items: Value) -> AnswerBatch {
    serde_json::from_value(json!({ "answers": items })).unwrap()
}

pub fn tool_only() -> AnswerBatch {
    batch(json!([{"id":"scope","selected":["Tool only"]}]))
}

pub fn code(result: &Result<Queued, LateRefusal>) -> Option<&str> {
    result.as_ref().err().and_then(LateRefusal::code)
}

/// Whether the answer was refused as not waiting (the call is not continued, SPEC §4.8 step 2).
pub fn not_waiting(result: &Result<Queued, LateRefusal>) -> bool {
    matches!(result, Err(LateRefusal::NotWaiting(_)))
}

/// The error a failing delivery returns.
#[derive(Debug)]
pub struct DeliveryFailed;

impl fmt::Display for DeliveryFailed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the inbox is closed")
    }
}

impl std::error::Error for DeliveryFailed {}

/// An agent that delegates to `InMemoryAgent`, counts `followup` calls, fails the next N of them
/// on request, and can make `queued_messages` wait at a barrier (to line up racing calls).
pub struct TestAgent {
    pub inner: Arc<InMemoryAgent>,
    followups: AtomicUsize,
    failures: AtomicUsize,
    gate: Mutex<VecDeque<Arc<Barrier>>>,
}

impl TestAgent {
    pub fn new(id: &str, session: SessionRef) -> Arc<Self> {
        Arc::new(Self {
            inner: InMemoryAgent::new(id, session, [ScopeId::from(id)]),
            followups: AtomicUsize::new(0),
            failures: AtomicUsize::new(0),
            gate: Mutex::new(VecDeque::new()),
        })
    }

    /// How many times `followup` was called (failed calls included).
    pub fn followups(&self) -> usize {
        self.followups.load(Ordering::SeqCst)
    }

    /// Makes the next `n` deliveries fail.
    pub fn fail_next(&self, n: usize) {
        self.failures.store(n, Ordering::SeqCst);
    }

    /// Makes the next `n` calls of `queued_messages` wait at one barrier of `n`.
    pub fn gate_queue_scans(&self, n: usize) {
        let barrier = Arc::new(Barrier::new(n));
        let mut gate = self.gate.lock().unwrap();
        for _ in 0..n {
            gate.push_back(Arc::clone(&barrier));
        }
    }
}

impl Agent for TestAgent {
    fn id(&self) -> &AgentId {
        self.inner.id()
    }

    fn session(&self) -> SessionRef {
        self.inner.session()
    }

    fn scope_chain(&self) -> Vec<ScopeId> {
        self.inner.scope_chain()
    }

    fn queued_messages(&self) -> Vec<UserMessage> {
        let barrier = self.gate.lock().unwrap().pop_front();
        if let Some(barrier) = barrier {
            barrier.wait();
        }
        self.inner.queued_messages()
    }

    fn followup(&self, message: UserMessage) -> Result<(), HostError> {
        self.followups.fetch_add(1, Ordering::SeqCst);
        let failing = self
            .failures
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok();
        if failing {
            return Err(Box::new(DeliveryFailed));
        }
        self.inner.followup(message)
    }
}

/// One host: a live root agent `root` writing to session `s1`, its log, the seam, the projection
/// host and the late answers, wired as a host wires them.
pub struct World {
    pub registry: Arc<InMemoryAgentRegistry>,
    pub seam: UserQuestions,
    pub projections: Option<Arc<InMemoryProjectionHost>>,
    pub late: LateAnswers,
    pub session: SessionRef,
    pub agent: Arc<TestAgent>,
    /// The log records (with explicit `seq`), header excluded.
    pub log: Vec<String>,
    next_seq: u64,
}

impl World {
    pub fn new() -> Self {
        Self::build(true)
    }

    pub fn without_projections() -> Self {
        Self::build(false)
    }

    fn build(with_projections: bool) -> Self {
        let registry = InMemoryAgentRegistry::new();
        let seam = UserQuestions::new(
            UserQuestionsConfig::default(),
            HostBindings::with_registry(registry.clone()),
        )
        .unwrap();
        let projections = with_projections.then(InMemoryProjectionHost::new);
        let late = LateAnswers::new(
            &seam,
            projections.clone().map(|p| p as Arc<dyn ProjectionHost>),
        );
        let session: SessionRef = InMemorySession::new("s1");
        let agent = TestAgent::new("root", Arc::clone(&session));
        registry.enter_root(agent.clone());
        Self {
            registry,
            seam,
            projections,
            late,
            session,
            agent,
            log: Vec::new(),
            next_seq: 0,
        }
    }

    pub fn handle(&self) -> AgentHandle {
        self.agent.clone()
    }

    /// Appends a record to the log, folds it into the projection host, and delivers it as a
    /// `Committed` host event: what a host does for every committed event.
    pub fn commit(&mut self, (event_type, data): (&str, Value)) -> SessionEvent {
        let seq = self.next_seq;
        let line = json!({"type":event_type,"seq":seq,"time":1_700_000_000_000_i64 + i64::try_from(seq).unwrap(),"data":data}).to_string();
        let event = SessionEvent::from_record(&line, seq)
            .unwrap()
            .into_events()
            .next()
            .unwrap();
        self.next_seq += 1;
        self.log.push(line);
        if let Some(projections) = &self.projections {
            projections.record(&self.session, &event);
        }
        self.late.on_host_event(&HostEvent::Committed {
            session: Arc::clone(&self.session),
            event: event.clone(),
        });
        event
    }

    /// Appends a record to the log with no host event: what resume repair writes for a process
    /// that died, before the resumed session is tracked.
    pub fn append_only(&mut self, record: &Value) {
        let mut record = record.clone();
        record["seq"] = json!(self.next_seq);
        self.next_seq += 1;
        self.log.push(record.to_string());
    }

    /// Fixture LT: `turn/start`, `step/start`, a timed `request/header`, the `ask-timed` call.
    pub fn lt(&mut self) {
        self.commit(turn_start(1));
        self.commit(("step/start", json!({"turn":1,"step":1})));
        self.commit(request_header(true));
        self.commit(ask_call(LT, json!([q_scope()])));
    }

    /// "Continue LT": the pending result.
    pub fn continue_lt(&mut self) {
        self.commit(pending_result(LT));
    }

    pub fn answer(&self, call_id: &str, batch: AnswerBatch) -> Result<Queued, LateRefusal> {
        self.late
            .answer(&self.handle(), &CallId::from(call_id), batch, origin())
    }

    /// The agent's turn takes `message` as its input.
    pub fn claim(&self, message: &UserMessage, turn: u64) {
        self.late.on_host_event(&HostEvent::InboxClaimed {
            agent: self.handle(),
            message: message.clone(),
            turn,
        });
    }

    /// Removes `message` from the agent's queues and reports it discarded.
    pub fn discard(&self, message: &UserMessage) {
        self.agent.inner.remove(&message.id);
        self.late.on_host_event(&HostEvent::InboxDiscarded {
            agent: self.handle(),
            message: message.clone(),
        });
    }

    /// The agent loop admits `message`: logs it as a `user/message`.
    pub fn admit(&mut self, message: &UserMessage) {
        self.commit(user_message(message));
    }

    pub fn state(&self) -> UserQuestionsState {
        self.projections
            .as_ref()
            .and_then(|p| p.user_questions(&self.session))
            .unwrap()
    }

    pub fn view_json(&self) -> String {
        serde_json::to_string(self.state().view()).unwrap()
    }

    /// The log file: header record, then every committed record.
    pub fn log_file(&self) -> String {
        let mut file = String::from(
            r#"{"type":"session","version":4,"id":"s1","createdAt":0,"isSeeded":false}"#,
        );
        file.push('\n');
        for line in &self.log {
            file.push_str(line);
            file.push('\n');
        }
        file
    }

    /// A restart: the process dies and the session is resumed. A new session instance and agent
    /// (same ids) replace the old ones; the projection is refolded from the log; the durable inbox
    /// (the old agent's queued messages) is restored into the new agent's next-turn queue. Turns
    /// of the old instance that were running are lost with it.
    pub fn restart(&mut self) {
        let queued = self.agent.inner.queued_messages();
        let session: SessionRef = InMemorySession::new("s1");
        let agent = TestAgent::new("root", Arc::clone(&session));
        for message in queued {
            agent.inner.push_next_turn(message);
        }
        self.registry.enter_root(agent.clone());
        self.session = session;
        self.agent = agent;
        if let Some(projections) = &self.projections {
            let folded = projections
                .seed_from_log(&self.session, self.log_file().as_bytes())
                .unwrap();
            assert!(folded.report.is_clean(), "{:?}", folded.report);
        }
    }
}

impl Default for World {
    fn default() -> Self {
        Self::new()
    }
}
