//! Fixtures shared by the seam's tests: the agents R, C and L of SPEC §12, the questions
//! `Q_SCOPE` and `Q_CONFIRM`, and a configurable test answerer that records what it saw.
// Test code stops at its first broken expectation (unwrap and expect are assertions); not
// every test binary uses every shared helper.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};

use tokio::sync::Notify;
use user_questions::{
    AgentHandle, AnswerBatch, AnswerItem, AnswerRequest, Answered, Answerer, AnswererError,
    AnswererGuard, CallId, CancellationToken, HostBindings, InMemoryAgent, InMemoryAgentRegistry,
    InMemorySession, Question, QuestionOption, RegisterOptions, ScopeId, UserQuestionError,
    UserQuestions, UserQuestionsConfig, WaitKey, async_trait,
};

/// A seam with a registry holding R (root), C (child of R) and L (root with durable lineage).
pub struct World {
    pub seam: UserQuestions,
    pub registry: Arc<InMemoryAgentRegistry>,
    pub r: AgentHandle,
    pub c: AgentHandle,
    pub l: AgentHandle,
}

pub fn agent(id: &str, scopes: &[&str]) -> AgentHandle {
    InMemoryAgent::new(
        id,
        InMemorySession::new(format!("session-{id}")),
        scopes.iter().map(|s| ScopeId::from(*s)),
    )
}

pub fn world() -> World {
    world_with(UserQuestionsConfig::default())
}

pub fn world_with(config: UserQuestionsConfig) -> World {
    let registry = InMemoryAgentRegistry::new();
    let r = agent("R", &["scope-r", "scope-parent"]);
    let c = agent("C", &["scope-c", "scope-r", "scope-parent"]);
    // L's session header would say `delegationDepth: 1`; it was entered with no owner.
    let l = agent("L", &["scope-l"]);
    registry.enter_root(r.clone());
    registry.enter_child(c.clone(), &r);
    registry.enter_root(l.clone());
    let seam = UserQuestions::new(config, HostBindings::with_registry(registry.clone())).unwrap();
    World {
        seam,
        registry,
        r,
        c,
        l,
    }
}

/// A seam without a registry.
pub fn bare_seam() -> UserQuestions {
    UserQuestions::new(UserQuestionsConfig::default(), HostBindings::default()).unwrap()
}

pub fn q_scope() -> Question {
    Question::new("scope", "Which scope?").with_options([
        QuestionOption::new("Tool only"),
        QuestionOption::new("Everything"),
    ])
}

pub fn q_confirm() -> Question {
    Question::new("confirm", "Proceed?")
        .with_options([QuestionOption::new("yes"), QuestionOption::new("no")])
}

pub fn call(id: &str) -> CallId {
    CallId::from(id)
}

/// The tasks alive on the test's runtime. The seam spawns nothing but wait timers, so once a
/// test's own tasks have ended, 0 means no timer is left (SPEC §12, "no timers left").
pub fn alive_tasks() -> usize {
    tokio::runtime::Handle::current()
        .metrics()
        .num_alive_tasks()
}

/// What a test answerer does with a request.
pub enum Behaviour {
    /// Answer each question with its first option label (`answeredBy: human`).
    FirstLabel,
    /// Decline (run `next`).
    Decline,
    /// Answer with this batch.
    Answer(AnswerBatch),
    /// Return this typed error.
    Typed(fn() -> UserQuestionError),
    /// Return a foreign error at once.
    Foreign,
    /// Wait for the request token, then return a foreign error.
    ForeignAfterCancel,
    /// Never return, ignoring cancellation.
    Never,
    /// Cancel this token, then return this typed error in the same poll.
    CancelThen(CancellationToken, fn() -> UserQuestionError),
    /// Wait for the gate (or the request token), then answer with the first labels.
    Gated(Arc<Notify>),
    /// Wrap `next` and return its value unchanged.
    PassThrough,
    /// Run `next` and replace its value with a fresh one built here.
    Replace,
    /// Claim the timed wait through the seam, then return `ASK_TIMED_OUT`.
    ClaimThenTimeOut(UserQuestions),
}

#[derive(Debug, thiserror::Error)]
#[error("host exploded: {0}")]
pub struct Boom(pub &'static str);

/// What an answerer saw.
#[derive(Clone)]
pub struct Seen {
    pub questions: Vec<Question>,
    pub agent: Option<AgentHandle>,
    pub wait: Option<WaitKey>,
    pub cancel: CancellationToken,
}

pub struct TestAnswerer {
    pub behaviour: Behaviour,
    pub seen: Mutex<Vec<Seen>>,
    pub log: Option<Arc<Mutex<Vec<String>>>>,
    pub name: String,
    pub dropped: Arc<Mutex<u32>>,
}

impl TestAnswerer {
    pub fn new(behaviour: Behaviour) -> Arc<Self> {
        Arc::new(Self {
            behaviour,
            seen: Mutex::new(Vec::new()),
            log: None,
            name: String::new(),
            dropped: Arc::default(),
        })
    }

    pub fn logging(name: &str, behaviour: Behaviour, log: &Arc<Mutex<Vec<String>>>) -> Arc<Self> {
        Arc::new(Self {
            behaviour,
            seen: Mutex::new(Vec::new()),
            log: Some(log.clone()),
            name: name.to_owned(),
            dropped: Arc::default(),
        })
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
            .expect("answerer was called")
    }

    pub fn register(self: &Arc<Self>, seam: &UserQuestions, name: &str) -> AnswererGuard {
        seam.register(self.clone(), RegisterOptions::global(name))
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

/// Counts drops of the answer future (S7: the seam drops a future it stops waiting for).
struct DropCounter(Arc<Mutex<u32>>);

impl Drop for DropCounter {
    fn drop(&mut self) {
        *self.0.lock().unwrap() += 1;
    }
}

#[async_trait]
impl Answerer for TestAnswerer {
    async fn answer(
        &self,
        request: &AnswerRequest,
        next: user_questions::Next<'_>,
    ) -> Result<Answered, AnswererError> {
        let _drop_counter = DropCounter(self.dropped.clone());
        self.seen.lock().unwrap().push(Seen {
            questions: request.questions.clone(),
            agent: request.agent.clone(),
            wait: request.wait.clone(),
            cancel: request.cancel.clone(),
        });
        if let Some(log) = &self.log {
            log.lock().unwrap().push(self.name.clone());
        }
        match &self.behaviour {
            Behaviour::FirstLabel => Ok(Answered::human(first_labels(&request.questions))),
            Behaviour::Decline | Behaviour::PassThrough => next.run().await,
            Behaviour::Answer(batch) => Ok(Answered::human(batch.clone())),
            Behaviour::Typed(make) => Err(make().into()),
            Behaviour::Foreign => Err(AnswererError::foreign(Boom("foreign"))),
            Behaviour::ForeignAfterCancel => {
                request.cancel.cancelled().await;
                Err(AnswererError::foreign(Boom("after cancel")))
            }
            Behaviour::Never => std::future::pending().await,
            Behaviour::CancelThen(token, make) => {
                token.cancel();
                Err(make().into())
            }
            Behaviour::Gated(gate) => {
                tokio::select! {
                    () = gate.notified() => Ok(Answered::human(first_labels(&request.questions))),
                    () = request.cancel.cancelled() => Err(AnswererError::foreign(Boom("gate cancelled"))),
                }
            }
            Behaviour::Replace => {
                let inner = next.run().await?;
                Ok(Answered::human(inner.answers))
            }
            Behaviour::ClaimThenTimeOut(seam) => {
                let agent = request
                    .agent
                    .clone()
                    .expect("timed requests carry an agent");
                let call_id = request.wait.as_ref().expect("keyed").call_id().clone();
                let claim = seam.attach_wait(&agent, &call_id).unwrap();
                assert!(claim.is_some(), "the wait is claimable");
                drop(claim);
                Err(UserQuestionError::ask_timed_out().into())
            }
        }
    }
}
