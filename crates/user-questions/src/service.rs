//! The service: `ask`, `ask_timed`, `attach_wait`, `subscribe` and shutdown (SPEC §4.2–§4.12).

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::answerer::{
    AnswerRequest, Answerer, AnswererGuard, Next, RegisterOptions, Registrations,
};
use crate::config::{QuestionLimits, UserQuestionsConfig};
use crate::error::{AnswererError, AskError, ConfigError, ErrorCode, UserQuestionError};
use crate::events::{
    AnswerPath, Publisher, QuestionEvent, QuestionEventKind, QuestionEvents, QuestionSummary,
    WaitMode, next_ask_id,
};
use crate::host::{AgentHandle, AgentRegistry, HostBindings, same_agent};
use crate::ids::CallId;
use crate::util::{lock, now_unix_ms};
use crate::validate::{check_intents, check_question_limits, truncate_headers, validate_answers};
use crate::vocab::{AnswerBatch, Answered, Question, TimedOutcome, WaitKey};
use crate::wait::{TimedQuestionWait, WaitClaim, WaitEnd};

/// The largest seam timeout: the timer range of the reference (2^31 − 1 ms).
pub const MAX_TIMEOUT_MS: i64 = 2_147_483_647;

/// A blocking request (SPEC §1.4).
#[derive(Clone, Default)]
pub struct AskRequest {
    /// The questions (at least one).
    pub questions: Vec<Question>,
    /// The exact calling agent, when there is one.
    pub agent: Option<AgentHandle>,
    /// The owning tool call or turn.
    pub cancel: Option<CancellationToken>,
    /// How the request is keyed; absent for a blocking request with no card key.
    pub wait: Option<WaitKey>,
}

impl AskRequest {
    /// An agentless, unkeyed request with no token.
    pub fn new(questions: impl IntoIterator<Item = Question>) -> Self {
        Self {
            questions: questions.into_iter().collect(),
            ..Self::default()
        }
    }

    /// Names the calling agent.
    #[must_use]
    pub fn with_agent(mut self, agent: AgentHandle) -> Self {
        self.agent = Some(agent);
        self
    }

    /// Ties the request to a token.
    #[must_use]
    pub fn with_cancel(mut self, cancel: CancellationToken) -> Self {
        self.cancel = Some(cancel);
        self
    }

    /// Keys the request.
    #[must_use]
    pub fn with_wait(mut self, wait: WaitKey) -> Self {
        self.wait = Some(wait);
        self
    }
}

impl fmt::Debug for AskRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AskRequest")
            .field("questions", &self.questions)
            .field("agent", &self.agent.as_ref().map(|a| a.id().clone()))
            .field(
                "cancel",
                &self.cancel.as_ref().map(CancellationToken::is_cancelled),
            )
            .field("wait", &self.wait)
            .finish()
    }
}

/// A timed request (SPEC §1.4): the agent is mandatory, the seam sets the wait key.
#[derive(Clone)]
pub struct TimedAskRequest {
    /// The questions.
    pub questions: Vec<Question>,
    /// The exact calling agent.
    pub agent: AgentHandle,
    /// The owning tool call or turn; a timeout never cancels it.
    pub cancel: Option<CancellationToken>,
}

impl TimedAskRequest {
    /// A timed request from `agent`.
    pub fn new(questions: impl IntoIterator<Item = Question>, agent: AgentHandle) -> Self {
        Self {
            questions: questions.into_iter().collect(),
            agent,
            cancel: None,
        }
    }

    /// Ties the request to a token.
    #[must_use]
    pub fn with_cancel(mut self, cancel: CancellationToken) -> Self {
        self.cancel = Some(cancel);
        self
    }
}

impl fmt::Debug for TimedAskRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TimedAskRequest")
            .field("questions", &self.questions)
            .field("agent", self.agent.id())
            .field(
                "cancel",
                &self.cancel.as_ref().map(CancellationToken::is_cancelled),
            )
            .finish()
    }
}

/// The user-questions seam. Cheap to clone; the last handle dropped shuts it down.
#[derive(Clone)]
pub struct UserQuestions {
    inner: Arc<Inner>,
}

/// A handle to the seam that does not keep it alive ([`UserQuestions::downgrade`]).
///
/// An answerer registered in the seam that needs the seam back (a UI that claims timed waits
/// through [`UserQuestions::attach_wait`]) holds this, so the registration does not form a cycle
/// that would keep the seam alive after its last real handle is dropped.
#[derive(Clone, Debug)]
pub struct WeakUserQuestions {
    inner: std::sync::Weak<Inner>,
}

impl WeakUserQuestions {
    /// The seam, if a strong handle still exists.
    pub fn upgrade(&self) -> Option<UserQuestions> {
        self.inner.upgrade().map(|inner| UserQuestions { inner })
    }
}

struct Inner {
    limits: QuestionLimits,
    registry: Option<Arc<dyn AgentRegistry>>,
    answerers: Arc<Registrations>,
    waits: Mutex<Waits>,
    events: Publisher,
    shut_down: AtomicBool,
}

/// Live foreground waits, per agent (by identity), per call id.
#[derive(Default)]
struct Waits {
    closed: bool,
    by_agent: HashMap<usize, AgentWaits>,
}

struct AgentWaits {
    // Holding the handle keeps the agent alive, so its address (the map key) cannot be reused by
    // another agent while the entry exists.
    agent: AgentHandle,
    calls: HashMap<CallId, LiveWait>,
}

#[derive(Clone)]
struct LiveWait {
    wait: TimedQuestionWait,
    ask_id: String,
}

fn agent_key(agent: &AgentHandle) -> usize {
    Arc::as_ptr(agent).cast::<()>() as usize
}

impl UserQuestions {
    /// A seam with this configuration and host. Fails on an invalid configuration (SPEC §2.2,
    /// §9.3).
    pub fn new(config: UserQuestionsConfig, host: HostBindings) -> Result<Self, ConfigError> {
        config.validate()?;
        Ok(Self {
            inner: Arc::new(Inner {
                limits: config.limits,
                registry: host.registry,
                answerers: Arc::new(Registrations::default()),
                waits: Mutex::new(Waits::default()),
                events: Publisher::new(config.event_buffer),
                shut_down: AtomicBool::new(false),
            }),
        })
    }

    /// A handle that does not keep the seam alive.
    pub fn downgrade(&self) -> WeakUserQuestions {
        WeakUserQuestions {
            inner: Arc::downgrade(&self.inner),
        }
    }

    /// Registers an answerer; it stays registered while the guard lives.
    ///
    /// # Panics
    ///
    /// When `opts.name` is empty: the name is the answer's provenance, so an empty one is a
    /// programming error.
    pub fn register(&self, answerer: Arc<dyn Answerer>, opts: RegisterOptions) -> AnswererGuard {
        self.inner.answerers.register(answerer, opts)
    }

    /// Asks and waits for an answer or an error (SPEC §4.3).
    ///
    /// Cancel safety: cancelling `request.cancel` ends the call promptly with `ASK_ABORTED`.
    /// Dropping the future drops the answerers' futures and emits `cancelled(ASK_ABORTED)` if the
    /// request had been opened.
    pub async fn ask(&self, request: AskRequest) -> Result<Answered, AskError> {
        let call_id = request.wait.as_ref().map(|w| w.call_id().clone());
        let mut life = Lifecycle::new(&self.inner, next_ask_id(), call_id, request.agent.as_ref());
        let span = tracing::debug_span!("ask", ask_id = %life.ask_id);
        let result = self
            .inner
            .dispatch(request, &mut life, None)
            .instrument(span)
            .await;
        match &result {
            Ok(answered) => life.finish(QuestionEventKind::Answered {
                path: AnswerPath::Foreground,
                provenance: answered.provenance.clone(),
            }),
            Err(error) => life.finish(cancelled(error)),
        }
        result
    }

    /// Asks with a foreground window of `timeout_ms`; returns pending when it closes (SPEC §4.7.1).
    ///
    /// Cancel safety: cancelling the request's token gives `ASK_ABORTED`, never pending. Dropping
    /// the future closes and unregisters the wait.
    pub async fn ask_timed(
        &self,
        request: TimedAskRequest,
        call_id: CallId,
        timeout_ms: i64,
    ) -> Result<TimedOutcome, AskError> {
        let inner = &self.inner;
        if inner.is_shut_down() {
            return Err(UserQuestionError::ask_aborted().into());
        }
        if !(1..=MAX_TIMEOUT_MS).contains(&timeout_ms) {
            return Err(UserQuestionError::bad_timeout(timeout_ms).into());
        }
        inner.check_caller(&request.agent)?;
        let parent = request.cancel.unwrap_or_default();
        let ask_id = next_ask_id();
        let timeout = Duration::from_millis(timeout_ms.unsigned_abs());
        let registered =
            inner.register_wait(&request.agent, &call_id, &parent, timeout, &ask_id)?;
        let wait = registered.wait.clone();

        let mut life = Lifecycle::new(inner, ask_id, Some(call_id.clone()), Some(&request.agent));
        let span = tracing::debug_span!("ask_timed", ask_id = %life.ask_id, call_id = %call_id);
        let inner_request = AskRequest {
            questions: request.questions,
            agent: Some(Arc::clone(&request.agent)),
            cancel: Some(wait.token().clone()),
            wait: Some(WaitKey::timed(call_id.clone())),
        };
        let remaining = wait.deadline().saturating_duration_since(Instant::now());
        let result = inner
            .dispatch(inner_request, &mut life, Some(remaining))
            .instrument(span)
            .await;

        let outcome = match result {
            Ok(answered) => Ok(TimedOutcome::Answered(answered)),
            Err(error) => {
                let error = if let Some(end) = wait.end() {
                    end_error(end)
                } else if is_code(&error, &ErrorCode::NoProvider) {
                    // Nobody is connected: hold until the window closes (bounded by the deadline).
                    end_error(wait.ended().await)
                } else {
                    error
                };
                if is_code(&error, &ErrorCode::AskTimedOut) {
                    Ok(TimedOutcome::Pending {
                        call_id: call_id.clone(),
                    })
                } else if wait.end().is_some() {
                    Err(UserQuestionError::ask_aborted().into())
                } else {
                    Err(error)
                }
            }
        };
        match &outcome {
            Ok(TimedOutcome::Answered(answered)) => life.finish(QuestionEventKind::Answered {
                path: AnswerPath::Foreground,
                provenance: answered.provenance.clone(),
            }),
            Ok(TimedOutcome::Pending { .. }) => life.finish(QuestionEventKind::Pending),
            Err(error) => life.finish(cancelled(error)),
        }
        drop(registered); // Closes the wait (`Settled`) and unregisters it.
        outcome
    }

    /// How long the foreground window of `agent`'s call `call_id` has left until its original
    /// deadline, without claiming it: for a surface that shows the time left but keeps no
    /// countdown of its own (a claim can hold the window open past it, §4.7.2). `Ok(None)` for an
    /// unknown call, a wait that has ended, or after shutdown.
    pub fn wait_remaining(
        &self,
        agent: &AgentHandle,
        call_id: &CallId,
    ) -> Result<Option<Duration>, UserQuestionError> {
        let live = self.live_wait(agent, call_id)?;
        Ok(live.filter(|live| live.wait.end().is_none()).map(|live| {
            live.wait
                .deadline()
                .saturating_duration_since(Instant::now())
        }))
    }

    /// The registered wait of `agent` under `call_id`, after the identity check; `None` after
    /// shutdown (nothing to claim or show then, whoever asks: SPEC §4.10).
    fn live_wait(
        &self,
        agent: &AgentHandle,
        call_id: &CallId,
    ) -> Result<Option<LiveWait>, UserQuestionError> {
        let inner = &self.inner;
        if inner.is_shut_down() {
            return Ok(None);
        }
        inner.check_caller(agent)?;
        let waits = lock(&inner.waits);
        Ok(waits
            .by_agent
            .get(&agent_key(agent))
            .and_then(|entry| entry.calls.get(call_id))
            .cloned())
    }

    /// Claims the foreground wait of `agent` under `call_id` (SPEC §4.7.2). `Ok(None)` for an
    /// unknown call, a wait that has ended, an overdue unclaimed wait, or after shutdown.
    pub fn attach_wait(
        &self,
        agent: &AgentHandle,
        call_id: &CallId,
    ) -> Result<Option<WaitClaim>, UserQuestionError> {
        let inner = &self.inner;
        let Some(live) = self.live_wait(agent, call_id)? else {
            return Ok(None);
        };
        let Some((claim, claims)) = live.wait.attach_counted() else {
            return Ok(None);
        };
        inner.publish(
            Some(live.ask_id),
            Some(call_id.clone()),
            Some(agent),
            QuestionEventKind::Claimed { claims },
        );
        Ok(Some(claim))
    }

    /// Subscribes to lifecycle events (SPEC §9.4).
    pub fn subscribe(&self) -> QuestionEvents {
        self.inner.events.subscribe()
    }

    /// Shuts down (idempotent): every live timed wait ends with `ASK_ABORTED`, their claims end,
    /// and later asks fail at once with `ASK_ABORTED` (SPEC §4.10). Also runs when the last handle
    /// is dropped.
    #[allow(clippy::unused_async)] // SPEC §4.2 fixes an async signature; the work is synchronous.
    pub async fn shutdown(&self) {
        self.inner.shutdown_now();
    }

    /// The question limits in force.
    pub fn limits(&self) -> &QuestionLimits {
        &self.inner.limits
    }

    /// The identity check of SPEC §4.4, for companion crates (late answers) that accept calls on
    /// behalf of an agent.
    pub fn check_caller(&self, agent: &AgentHandle) -> Result<(), UserQuestionError> {
        self.inner.check_caller(agent)
    }

    /// Validates and normalises an answer batch with this seam's limits (SPEC §9.2).
    pub fn validate_answers(
        &self,
        questions: &[Question],
        batch: &AnswerBatch,
        call_id: Option<&CallId>,
    ) -> Result<AnswerBatch, UserQuestionError> {
        validate_answers(questions, batch, &self.inner.limits, call_id)
    }

    /// Publishes a lifecycle event into this seam's stream (used by the late-answer path, which
    /// emits `answered` with path `late`).
    pub fn publish(&self, event: QuestionEvent) {
        self.inner.events.publish(event);
    }

    /// The number of foreground waits registered now: one per `ask_timed` call that is still
    /// running (SPEC §4.7.2). Every wait is unregistered when its call ends, however it ends, and
    /// shutdown drops them all.
    ///
    /// A host exports it as a metric (timed questions waiting for a person), or checks that it is
    /// back to 0 once no timed call runs: a leak check (the "no timers left" check of SPEC §12).
    pub fn live_waits(&self) -> usize {
        lock(&self.inner.waits)
            .by_agent
            .values()
            .map(|entry| entry.calls.len())
            .sum()
    }

    /// Whether the foreground window of `agent`'s timed call `call_id` is open now: its wait is
    /// registered and has not ended. `false` once the window closed, even before `ask_timed`
    /// returned; a late answer that meets an open call whose window is no longer open waits for
    /// the call's continuation (`pending_answer::when_continued`).
    pub fn is_waiting(&self, agent: &AgentHandle, call_id: &CallId) -> bool {
        lock(&self.inner.waits)
            .by_agent
            .get(&agent_key(agent))
            .and_then(|entry| entry.calls.get(call_id))
            .is_some_and(|live| live.wait.end().is_none())
    }

    /// The number of registered answerers. A host that registers the tool but no answerer should
    /// warn at startup (SPEC §5.1): every question would fail closed.
    pub fn registered_answerers(&self) -> usize {
        self.inner.answerers.len()
    }
}

impl fmt::Debug for UserQuestions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UserQuestions")
            .field("limits", &self.inner.limits)
            .field("registry", &self.inner.registry.is_some())
            .field("answerers", &self.inner.answerers.len())
            .field("shut_down", &self.inner.is_shut_down())
            .finish_non_exhaustive()
    }
}

impl Inner {
    fn is_shut_down(&self) -> bool {
        self.shut_down.load(Ordering::Acquire)
    }

    fn check_caller(&self, agent: &AgentHandle) -> Result<(), UserQuestionError> {
        let Some(registry) = &self.registry else {
            return Err(UserQuestionError::caller_not_live());
        };
        match registry.get(agent.id()) {
            Some(live) if same_agent(&live, agent) => {}
            _ => return Err(UserQuestionError::caller_not_live()),
        }
        if !registry.is_root(agent) {
            return Err(UserQuestionError::delegated_caller());
        }
        Ok(())
    }

    /// `ask` steps 1–11 without the terminal event, which the caller emits (SPEC §9.4: for
    /// `ask_timed` the terminal event follows its own mapping).
    async fn dispatch(
        &self,
        request: AskRequest,
        life: &mut Lifecycle<'_>,
        remaining: Option<Duration>,
    ) -> Result<Answered, AskError> {
        if self.is_shut_down() {
            return Err(UserQuestionError::ask_aborted().into());
        }
        let cancel = request.cancel.unwrap_or_default();
        if cancel.is_cancelled() {
            return Err(UserQuestionError::ask_aborted().into());
        }
        if request.questions.is_empty() {
            return Err(UserQuestionError::empty_questions().into());
        }
        if let Some(agent) = &request.agent {
            self.check_caller(agent)?;
        }
        check_intents(&request.questions)?;
        check_question_limits(&request.questions, &self.limits)?;
        if request.questions.len() > self.limits.recommended_max_questions {
            tracing::warn!(
                questions = request.questions.len(),
                recommended = self.limits.recommended_max_questions,
                "more questions in one call than recommended"
            );
        }
        let for_answerers = truncate_headers(&request.questions, &self.limits).into_owned();
        life.open(
            WaitMode::of(request.wait.as_ref()),
            remaining.map(|r| u64::try_from(r.as_millis()).unwrap_or(u64::MAX)),
            &for_answerers,
        );

        let chain = self.answerers.chain(request.agent.as_ref());
        let answer_request = AnswerRequest {
            questions: for_answerers,
            agent: request.agent,
            cancel: cancel.clone(),
            wait: request.wait,
        };
        // The chain is polled before the token on purpose: a result the chain has produced wins
        // even when the token is cancelled in the same poll (SPEC §4.3 step 9, scenario S8).
        let result = tokio::select! {
            biased;
            result = Next::new(&chain, &answer_request).run() => Some(result),
            () = cancel.cancelled() => None,
        };
        drop(chain);
        match result {
            None => Err(UserQuestionError::ask_aborted().into()),
            Some(Err(AnswererError::Question(error))) => Err(error.into()),
            Some(Err(AnswererError::Foreign(source))) => {
                if cancel.is_cancelled() {
                    Err(UserQuestionError::ask_aborted().with_source(source).into())
                } else {
                    Err(AskError::Foreign(source))
                }
            }
            Some(Ok(answered)) => {
                let call_id = answer_request.wait.as_ref().map(WaitKey::call_id);
                let answers =
                    validate_answers(&request.questions, &answered.answers, &self.limits, call_id)?;
                Ok(Answered {
                    answers,
                    provenance: answered.provenance,
                })
            }
        }
    }

    fn register_wait(
        &self,
        agent: &AgentHandle,
        call_id: &CallId,
        parent: &CancellationToken,
        timeout: Duration,
        ask_id: &str,
    ) -> Result<RegisteredWait<'_>, UserQuestionError> {
        let mut waits = lock(&self.waits);
        if waits.closed {
            return Err(UserQuestionError::ask_aborted());
        }
        let entry = waits
            .by_agent
            .entry(agent_key(agent))
            .or_insert_with(|| AgentWaits {
                agent: Arc::clone(agent),
                calls: HashMap::new(),
            });
        if entry.calls.contains_key(call_id) {
            return Err(UserQuestionError::duplicate_wait(call_id));
        }
        let wait = TimedQuestionWait::new(parent, timeout);
        entry.calls.insert(
            call_id.clone(),
            LiveWait {
                wait: wait.clone(),
                ask_id: ask_id.to_owned(),
            },
        );
        Ok(RegisteredWait {
            inner: self,
            agent: Arc::clone(agent),
            call_id: call_id.clone(),
            wait,
        })
    }

    fn unregister_wait(&self, agent: &AgentHandle, call_id: &CallId, wait: &TimedQuestionWait) {
        let mut waits = lock(&self.waits);
        let key = agent_key(agent);
        let Some(entry) = waits.by_agent.get_mut(&key) else {
            return;
        };
        if entry
            .calls
            .get(call_id)
            .is_some_and(|live| live.wait.same_wait(wait))
        {
            entry.calls.remove(call_id);
        }
        if entry.calls.is_empty() {
            waits.by_agent.remove(&key);
        }
    }

    fn shutdown_now(&self) {
        if self.shut_down.swap(true, Ordering::AcqRel) {
            return;
        }
        self.answerers.close();
        let drained: Vec<AgentWaits> = {
            let mut waits = lock(&self.waits);
            waits.closed = true;
            waits.by_agent.drain().map(|(_, entry)| entry).collect()
        };
        for entry in drained {
            for live in entry.calls.into_values() {
                live.wait.close(WaitEnd::Shutdown);
            }
            drop(entry.agent);
        }
    }

    fn publish(
        &self,
        ask_id: Option<String>,
        call_id: Option<CallId>,
        agent: Option<&AgentHandle>,
        kind: QuestionEventKind,
    ) {
        self.events.publish(QuestionEvent {
            ask_id,
            call_id,
            agent_id: agent.map(|a| a.id().clone()),
            session_id: agent.map(|a| a.session().id().clone()),
            at_ms: now_unix_ms(),
            kind,
        });
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.shutdown_now();
    }
}

/// Keeps a wait registered; dropping it closes the wait (`Settled`, a no-op when it has already
/// ended) and unregisters it — SPEC §4.7.1 step 7, also when the `ask_timed` future is dropped.
struct RegisteredWait<'a> {
    inner: &'a Inner,
    agent: AgentHandle,
    call_id: CallId,
    wait: TimedQuestionWait,
}

impl Drop for RegisteredWait<'_> {
    fn drop(&mut self) {
        self.wait.close(WaitEnd::Settled);
        self.inner
            .unregister_wait(&self.agent, &self.call_id, &self.wait);
    }
}

/// The lifecycle of one foreground ask: `opened`, then exactly one terminal event. Dropped after
/// `opened` without a terminal event (the future was dropped), it emits `cancelled(ASK_ABORTED)`.
struct Lifecycle<'a> {
    inner: &'a Inner,
    ask_id: String,
    call_id: Option<CallId>,
    agent: Option<AgentHandle>,
    opened: bool,
}

impl<'a> Lifecycle<'a> {
    fn new(
        inner: &'a Inner,
        ask_id: String,
        call_id: Option<CallId>,
        agent: Option<&AgentHandle>,
    ) -> Self {
        Self {
            inner,
            ask_id,
            call_id,
            agent: agent.cloned(),
            opened: false,
        }
    }

    fn emit(&self, kind: QuestionEventKind) {
        self.inner.publish(
            Some(self.ask_id.clone()),
            self.call_id.clone(),
            self.agent.as_ref(),
            kind,
        );
    }

    fn open(&mut self, wait: WaitMode, remaining_ms: Option<u64>, questions: &[Question]) {
        self.opened = true;
        self.emit(QuestionEventKind::Opened {
            wait,
            remaining_ms,
            questions: questions.iter().map(QuestionSummary::of).collect(),
        });
    }

    fn finish(&mut self, kind: QuestionEventKind) {
        if std::mem::take(&mut self.opened) {
            self.emit(kind);
        }
    }
}

impl Drop for Lifecycle<'_> {
    fn drop(&mut self) {
        self.finish(QuestionEventKind::Cancelled {
            code: Some(ErrorCode::AskAborted),
        });
    }
}

fn cancelled(error: &AskError) -> QuestionEventKind {
    QuestionEventKind::Cancelled {
        code: error.as_question().map(|typed| typed.error_code().clone()),
    }
}

/// Whether `error` is a typed error with this code.
fn is_code(error: &AskError, code: &ErrorCode) -> bool {
    error.as_question().is_some_and(|typed| typed.is(code))
}

fn end_error(end: WaitEnd) -> AskError {
    match end {
        WaitEnd::TimedOut => UserQuestionError::ask_timed_out().into(),
        // `Settled` is recorded only after the outcome is mapped, so it cannot be seen here; an
        // abort is the safe reading.
        WaitEnd::ParentCancelled | WaitEnd::Shutdown | WaitEnd::Settled => {
            UserQuestionError::ask_aborted().into()
        }
    }
}
