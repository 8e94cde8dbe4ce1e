//! Fixtures for the tool's tests: the agents R, C and L of SPEC §12, tools in both modes on a
//! real seam, a test answerer that records what it saw, and the two facts the projection reads
//! from a log (the timed marker of SPEC §8.3 and the strict answer batch of §8.5).
// Test code stops at its first broken expectation (unwrap and expect are assertions); not
// every test binary uses every shared helper.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};

use serde::Deserialize;
use serde_json::Value;
use tokio::sync::Notify;
use tool_ask_user::{AskUserConfig, AskUserTool, ToolContext, ToolOutcome};
use user_questions::{
    AgentHandle, AnswerBatch, AnswerItem, AnswerRequest, Answered, Answerer, AnswererError,
    AnswererGuard, CancellationToken, HostBindings, InMemoryAgent, InMemoryAgentRegistry,
    InMemorySession, Next, Question, RegisterOptions, ScopeId, UserQuestionError, UserQuestions,
    UserQuestionsConfig, WaitKey, async_trait,
};

/// A seam whose registry holds R (root), C (child of R) and L (root with durable lineage), plus
/// S: an object with R's id that is not the registry's live R.
pub struct World {
    pub seam: UserQuestions,
    pub registry: Arc<InMemoryAgentRegistry>,
    pub r: AgentHandle,
    pub c: AgentHandle,
    pub l: AgentHandle,
    pub stale_r: AgentHandle,
}

pub fn agent(id: &str, scopes: &[&str]) -> AgentHandle {
    InMemoryAgent::new(
        id,
        InMemorySession::new(format!("session-{id}")),
        scopes.iter().map(|s| ScopeId::from(*s)),
    )
}

pub fn world() -> World {
    let registry = InMemoryAgentRegistry::new();
    let r = agent("R", &["scope-r"]);
    let c = agent("C", &["scope-c", "scope-r"]);
    // L's session header would say `delegationDepth: 1`; it was entered with no owner.
    let l = agent("L", &["scope-l"]);
    registry.enter_root(r.clone());
    registry.enter_child(c.clone(), &r);
    registry.enter_root(l.clone());
    let stale_r = agent("R", &["scope-r"]);
    let seam = UserQuestions::new(
        UserQuestionsConfig::default(),
        HostBindings::with_registry(registry.clone()),
    )
    .unwrap();
    World {
        seam,
        registry,
        r,
        c,
        l,
        stale_r,
    }
}

impl World {
    pub fn legacy(&self) -> AskUserTool {
        AskUserTool::new(self.seam.clone(), None).unwrap()
    }

    pub fn timed(&self, timeout: i64) -> AskUserTool {
        AskUserTool::new(self.seam.clone(), Some(AskUserConfig::timed_secs(timeout))).unwrap()
    }
}

/// An agentless context.
pub fn ctx(call_id: &str) -> ToolContext {
    ToolContext::new(call_id)
}

/// A context for `agent`.
pub fn ctx_for(call_id: &str, agent: &AgentHandle) -> ToolContext {
    ToolContext::new(call_id).with_agent(agent.clone())
}

/// What a test answerer does with a request.
pub enum Behaviour {
    /// Answer each question with its first option label.
    FirstLabel,
    /// Answer with this batch.
    Answer(AnswerBatch),
    /// Answer with the batch read from this JSON text, as a transport DTO would.
    AnswerJson(&'static str),
    /// Return this typed error.
    Typed(fn() -> UserQuestionError),
    /// Return a foreign error.
    Foreign,
    /// Wait for the gate (answer with first labels) or for the request token (foreign error).
    Gated(Arc<Notify>),
    /// Cancel the request's own token, then answer with first labels.
    CancelOwnThenAnswer,
}

#[derive(Debug, thiserror::Error)]
#[error("relay disconnected: {0}")]
pub struct Boom(pub &'static str);

/// What the answerer saw.
#[derive(Clone)]
pub struct Seen {
    pub questions: Vec<Question>,
    pub agent: Option<AgentHandle>,
    pub wait: Option<WaitKey>,
    pub cancel: CancellationToken,
}

pub struct TestAnswerer {
    behaviour: Behaviour,
    seen: Mutex<Vec<Seen>>,
}

impl TestAnswerer {
    pub fn new(behaviour: Behaviour) -> Arc<Self> {
        Arc::new(Self {
            behaviour,
            seen: Mutex::new(Vec::new()),
        })
    }

    /// Registers globally under the name `ui`.
    pub fn register(self: &Arc<Self>, seam: &UserQuestions) -> AnswererGuard {
        seam.register(self.clone(), RegisterOptions::global("ui"))
    }

    pub fn calls(&self) -> usize {
        self.seen.lock().unwrap().len()
    }

    pub fn last(&self) -> Seen {
        self.seen
            .lock()
            .unwrap()
            .last()
            .cloned()
            .expect("the answerer was called")
    }
}

pub fn first_labels(questions: &[Question]) -> AnswerBatch {
    AnswerBatch::new(questions.iter().map(|q| {
        AnswerItem {
            id: q.id.clone(),
            selected: q
                .options()
                .first()
                .map(|o| o.label.clone())
                .into_iter()
                .collect(),
            custom: None,
        }
    }))
}

#[async_trait]
impl Answerer for TestAnswerer {
    async fn answer(
        &self,
        request: &AnswerRequest,
        _next: Next<'_>,
    ) -> Result<Answered, AnswererError> {
        self.seen.lock().unwrap().push(Seen {
            questions: request.questions.clone(),
            agent: request.agent.clone(),
            wait: request.wait.clone(),
            cancel: request.cancel.clone(),
        });
        match &self.behaviour {
            Behaviour::FirstLabel => Ok(Answered::human(first_labels(&request.questions))),
            Behaviour::Answer(batch) => Ok(Answered::human(batch.clone())),
            Behaviour::AnswerJson(text) => {
                let batch: AnswerBatch = serde_json::from_str(text).unwrap();
                Ok(Answered::human(batch))
            }
            Behaviour::Typed(make) => Err(make().into()),
            Behaviour::Foreign => Err(AnswererError::foreign(Boom("foreign"))),
            Behaviour::Gated(gate) => {
                tokio::select! {
                    () = gate.notified() => Ok(Answered::human(first_labels(&request.questions))),
                    () = request.cancel.cancelled() => Err(AnswererError::foreign(Boom("cancelled"))),
                }
            }
            Behaviour::CancelOwnThenAnswer => {
                request.cancel.cancel();
                Ok(Answered::human(first_labels(&request.questions)))
            }
        }
    }
}

/// SPEC §8.3: a `request/header.tools` value is timed iff it is an array holding an object named
/// `ask_user_question` whose `parameters.properties` has the key `timeout`.
pub fn is_timed_header(tools: &Value) -> bool {
    tools.as_array().is_some_and(|tools| {
        tools.iter().any(|tool| {
            tool.get("name").and_then(Value::as_str) == Some("ask_user_question")
                && tool
                    .get("parameters")
                    .and_then(|p| p.get("properties"))
                    .and_then(Value::as_object)
                    .is_some_and(|properties| properties.contains_key("timeout"))
        })
    })
}

/// SPEC §8.5: the projection's strict answer-batch reader (exact item keys, no nulls).
#[derive(Debug, PartialEq, Deserialize)]
pub struct StrictBatch {
    pub answers: Vec<StrictItem>,
}

#[derive(Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StrictItem {
    pub id: String,
    pub selected: Vec<String>,
    #[serde(default, deserialize_with = "present_string")]
    pub custom: Option<String>,
}

/// A present `custom` must be a string (`null` is a wrong type, SPEC §8.5).
fn present_string<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    String::deserialize(d).map(Some)
}

/// Reads the result text as the projection does; `None` when it is no strict batch.
pub fn strict_batch(text: &str) -> Option<StrictBatch> {
    serde_json::from_str(text).ok()
}

/// SPEC §8.5 pending JSON: an object whose `pending` is the boolean `true`.
pub fn is_pending_json(text: &str) -> bool {
    serde_json::from_str::<Value>(text)
        .ok()
        .and_then(|v| {
            v.as_object()
                .map(|o| o.get("pending") == Some(&Value::Bool(true)))
        })
        .unwrap_or(false)
}

/// Asserts an error outcome with this typed error info.
#[track_caller]
pub fn assert_typed(outcome: &ToolOutcome, name: &str, code: &str) {
    assert!(outcome.is_error, "expected an error, got {outcome:?}");
    let info = outcome.error.as_ref().expect("typed error info");
    assert_eq!(
        (info.name.as_str(), info.code.as_str()),
        (name, code),
        "{outcome:?}"
    );
    assert!(outcome.text.starts_with("Error: "), "{}", outcome.text);
    assert_eq!(outcome.value, None);
    assert_eq!(outcome.meta, None);
}

/// Asserts a seam error (`UserQuestionError`) with this code.
#[track_caller]
pub fn assert_seam_error(outcome: &ToolOutcome, code: &str) {
    assert_typed(outcome, "UserQuestionError", code);
}

/// Asserts an `INVALID_ARGS` error whose message contains every fragment.
#[track_caller]
pub fn assert_invalid_args(outcome: &ToolOutcome, fragments: &[&str]) {
    assert_typed(outcome, "ToolArgsError", "INVALID_ARGS");
    for fragment in fragments {
        assert!(
            outcome.text.contains(fragment),
            "{:?} does not contain {fragment:?}",
            outcome.text
        );
    }
}

/// Lets spawned tasks run without moving the clock.
pub async fn settle() {
    for _ in 0..20 {
        tokio::task::yield_now().await;
    }
}

/// Folds what a host logs for one call (SPEC §5.7, §7.6) with the real projection: a
/// `request/header` listing `tools`, the `tool/call` with the raw arguments, and the `tool/result`
/// built from `outcome`. Returns the view as JSON.
pub fn fold_logged(
    tools: &[tool_ask_user::ToolDefinition],
    call_id: &str,
    arguments: &str,
    outcome: &tool_ask_user::ToolOutcome,
) -> Value {
    use user_questions_projection::{SessionEvent, UserQuestionsState};
    let call = user_questions::CallId::from(call_id);
    let records = [
        serde_json::json!({"type":"request/header","data":{"header":{"config":{},"tools":tools},"reason":"initial"}}),
        serde_json::json!({"type":"tool/call","data":{"turn":1,"step":1,"callId":call_id,"name":"ask_user_question","arguments":arguments}}),
        serde_json::json!({"type":"tool/result","data":outcome.tool_result_data(1, 1, "msg_1", &call)}),
    ];
    let mut state = UserQuestionsState::new(0);
    for (seq, record) in (0u64..).zip(records) {
        let decoded = SessionEvent::from_record(&record.to_string(), seq).unwrap();
        for event in decoded.into_events() {
            state.apply_in_place(&event);
        }
    }
    serde_json::to_value(state.view()).unwrap()
}
