//! Answerers and the waterfall (SPEC §4.5).
//!
//! An [`Answerer`] accepts a request (returns an answer), declines it (runs [`Next`]), or fails.
//! The seam runs the eligible answerers in registration order, snapshotted at dispatch.

use std::fmt;
use std::sync::{Arc, Mutex, Weak};

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

use crate::error::{AnswererError, UserQuestionError};
use crate::host::AgentHandle;
use crate::ids::ScopeId;
use crate::util::lock;
use crate::vocab::{Answered, Question, WaitKey};

/// What an answerer receives (SPEC §1.4).
pub struct AnswerRequest {
    /// The questions, after the seam's normalisation (headers truncated, §9.3).
    pub questions: Vec<Question>,
    /// The exact calling agent, when there is one.
    pub agent: Option<AgentHandle>,
    /// The end of the request: the caller's token for blocking requests, a private child token for
    /// timed ones. Never cancelled when the caller gave none.
    pub cancel: CancellationToken,
    /// How the request is keyed.
    pub wait: Option<WaitKey>,
}

impl fmt::Debug for AnswerRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AnswerRequest")
            .field("questions", &self.questions)
            .field("agent", &self.agent.as_ref().map(|a| a.id().clone()))
            .field("cancelled", &self.cancel.is_cancelled())
            .field("wait", &self.wait)
            .finish()
    }
}

/// Something that can answer questions: a UI relay, a terminal, a policy, a script.
///
/// Implementations must treat `request.cancel` as the end of the request and be drop-safe: the
/// seam drops the future once the token is cancelled and no result has been produced.
#[async_trait]
pub trait Answerer: Send + Sync {
    /// Accept (return `Ok`), decline (`next.run().await`, possibly wrapped), or fail (`Err`).
    async fn answer(
        &self,
        request: &AnswerRequest,
        next: Next<'_>,
    ) -> Result<Answered, AnswererError>;
}

/// The future an [`answerer_fn`] closure returns: boxed, borrowing the request and the rest of the
/// chain for as long as it runs.
pub type AnswerFuture<'a> = std::pin::Pin<
    Box<dyn std::future::Future<Output = Result<Answered, AnswererError>> + Send + 'a>,
>;

/// An [`Answerer`] made of a closure ([`answerer_fn`]).
pub struct FnAnswerer<F>(F);

impl<F> fmt::Debug for FnAnswerer<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("FnAnswerer")
    }
}

#[async_trait]
impl<F> Answerer for FnAnswerer<F>
where
    F: for<'a> Fn(&'a AnswerRequest, Next<'a>) -> AnswerFuture<'a> + Send + Sync,
{
    async fn answer(
        &self,
        request: &AnswerRequest,
        next: Next<'_>,
    ) -> Result<Answered, AnswererError> {
        (self.0)(request, next).await
    }
}

/// An answerer from a closure that gets what [`Answerer::answer`] gets (the request and the rest
/// of the chain) and returns a boxed future: the one-line way to write an application's own
/// answerer. Register the result with [`UserQuestions::register`](crate::UserQuestions::register).
///
/// ```
/// use user_questions::{answerer_fn, Answered, AnswerBatch, AnswerItem};
///
/// // Answers every question with its first option; declines questions without options.
/// let first_option = answerer_fn(|request, next| {
///     Box::pin(async move {
///         let mut items = Vec::new();
///         for question in &request.questions {
///             match question.options.as_deref().and_then(|o| o.first()) {
///                 Some(option) => items.push(AnswerItem::selected(&question.id, [&option.label])),
///                 None => return next.run().await,
///             }
///         }
///         Ok(Answered::human(AnswerBatch::new(items)))
///     })
/// });
/// # let _ = first_option;
/// ```
pub fn answerer_fn<F>(answer: F) -> Arc<FnAnswerer<F>>
where
    F: for<'a> Fn(&'a AnswerRequest, Next<'a>) -> AnswerFuture<'a> + Send + Sync + 'static,
{
    Arc::new(FnAnswerer(answer))
}

/// Where an answerer is registered (SPEC §4.5).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AnswererScope {
    /// Serves every request.
    Global,
    /// Serves requests of agents whose scope chain contains this scope, and agentless requests.
    Scope(ScopeId),
}

/// How to register an answerer.
#[derive(Clone, Debug)]
pub struct RegisterOptions {
    /// Non-empty provenance name; should be unique among live registrations.
    pub name: String,
    /// Global or scoped.
    pub scope: AnswererScope,
    /// Insert at the front instead of the back.
    pub prepend: bool,
}

impl RegisterOptions {
    /// Global, appended, with this name.
    pub fn global(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            scope: AnswererScope::Global,
            prepend: false,
        }
    }

    /// Scoped, appended, with this name.
    pub fn scoped(name: impl Into<String>, scope: impl Into<ScopeId>) -> Self {
        Self {
            name: name.into(),
            scope: AnswererScope::Scope(scope.into()),
            prepend: false,
        }
    }

    /// Inserts at the front of the waterfall.
    #[must_use]
    pub fn prepended(mut self) -> Self {
        self.prepend = true;
        self
    }
}

/// One link of a dispatched chain.
pub(crate) struct Link {
    name: Arc<str>,
    answerer: Arc<dyn Answerer>,
}

/// The rest of the waterfall after the current answerer. Running it consumes it, so it runs at
/// most once; when nothing is left it returns `NO_PROVIDER`.
pub struct Next<'a> {
    chain: &'a [Link],
    request: &'a AnswerRequest,
}

impl<'a> Next<'a> {
    pub(crate) fn new(chain: &'a [Link], request: &'a AnswerRequest) -> Self {
        Self { chain, request }
    }

    /// Runs the rest of the chain.
    ///
    /// Cancel safe in the sense of SPEC §4.5: dropping the future drops the inner answerers'
    /// futures.
    pub async fn run(self) -> Result<Answered, AnswererError> {
        let Some((link, rest)) = self.chain.split_first() else {
            return Err(UserQuestionError::no_provider().into());
        };
        let mut answered = link
            .answerer
            .answer(self.request, Next::new(rest, self.request))
            .await?;
        // A value built by this answerer is unstamped; one passed through from `next` keeps the
        // inner answerer's name.
        if answered.provenance.answerer.is_empty() {
            answered.provenance.answerer = link.name.to_string();
        }
        Ok(answered)
    }
}

struct Registration {
    id: u64,
    name: Arc<str>,
    scope: AnswererScope,
    answerer: Arc<dyn Answerer>,
}

/// The ordered registrations of one seam.
#[derive(Default)]
pub(crate) struct Registrations {
    state: Mutex<RegistrationState>,
}

#[derive(Default)]
struct RegistrationState {
    next_id: u64,
    closed: bool,
    list: Vec<Registration>,
}

impl Registrations {
    pub(crate) fn register(
        self: &Arc<Self>,
        answerer: Arc<dyn Answerer>,
        opts: RegisterOptions,
    ) -> AnswererGuard {
        assert!(
            !opts.name.is_empty(),
            "an answerer needs a non-empty registration name"
        );
        let mut state = lock(&self.state);
        state.next_id += 1;
        let id = state.next_id;
        let registration = Registration {
            id,
            name: Arc::from(opts.name),
            scope: opts.scope,
            answerer,
        };
        if opts.prepend {
            state.list.insert(0, registration);
        } else {
            state.list.push(registration);
        }
        AnswererGuard {
            owner: Arc::downgrade(self),
            id: Some(id),
        }
    }

    /// The eligible chain for a request, in order (SPEC §4.5 eligibility).
    pub(crate) fn chain(&self, agent: Option<&AgentHandle>) -> Vec<Link> {
        let scopes = agent.map(|a| a.scope_chain());
        let state = lock(&self.state);
        state
            .list
            .iter()
            .filter(|r| match (&r.scope, &scopes) {
                (AnswererScope::Global, _) | (AnswererScope::Scope(_), None) => true,
                (AnswererScope::Scope(scope), Some(chain)) => chain.contains(scope),
            })
            .map(|r| Link {
                name: Arc::clone(&r.name),
                answerer: Arc::clone(&r.answerer),
            })
            .collect()
    }

    fn unregister(&self, id: u64) {
        let removed = {
            let mut state = lock(&self.state);
            if state.closed {
                return;
            }
            state
                .list
                .iter()
                .position(|r| r.id == id)
                .map(|at| state.list.remove(at))
        };
        // Dropped outside the lock: an answerer's destructor may do anything.
        drop(removed);
    }

    /// After shutdown, guards no longer unregister (SPEC §4.10).
    pub(crate) fn close(&self) {
        lock(&self.state).closed = true;
    }

    pub(crate) fn len(&self) -> usize {
        lock(&self.state).list.len()
    }
}

/// Keeps an answerer registered. Dropping it, or [`AnswererGuard::dispose`], unregisters; both are
/// idempotent, and both are no-ops once the seam has shut down.
#[must_use = "dropping the guard unregisters the answerer at once"]
pub struct AnswererGuard {
    owner: Weak<Registrations>,
    id: Option<u64>,
}

impl AnswererGuard {
    /// Unregisters now. Calling it again, or dropping the guard afterwards, does nothing.
    pub fn dispose(&mut self) {
        if let Some(id) = self.id.take()
            && let Some(owner) = self.owner.upgrade()
        {
            owner.unregister(id);
        }
    }
}

impl Drop for AnswererGuard {
    fn drop(&mut self) {
        self.dispose();
    }
}

impl fmt::Debug for AnswererGuard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AnswererGuard")
            .field("registered", &self.id.is_some())
            .finish_non_exhaustive()
    }
}
