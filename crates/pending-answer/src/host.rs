//! What late answers need from the host (SPEC §4.1): the projection state of a live session
//! ([`ProjectionHost`]) and the inbox and log events that move a reply along ([`HostEvent`]), plus
//! an in-memory projection host for tests and for the reference host.
//!
//! The agent's queued messages and follow-up delivery come from the seam's
//! [`Agent`](user_questions::Agent) trait.

use std::collections::HashMap;
use std::fmt;
use std::io::BufRead;
use std::sync::{Arc, Mutex};

use user_questions::{AgentHandle, CallId, SessionRef, UserMessage};
use user_questions_projection::{FoldedLog, OpenError, SessionEvent, UserQuestionsState, fold_log};

use crate::util::{SessionSlot, lock, session_key};

/// Gives the current `userQuestions` projection state (SPEC §8.2) of a live session instance.
///
/// [`LateAnswers::answer`](crate::LateAnswers::answer) calls it once per call, without holding any
/// lock of its own, to find out whether the call is continued and which questions it asked.
pub trait ProjectionHost: Send + Sync {
    /// The state of `session`, or `None` when the host does not track that instance (the answer is
    /// then `false`).
    fn user_questions(&self, session: &SessionRef) -> Option<UserQuestionsState>;

    /// Whether `call_id` is continued in the state of `session`. The default reads
    /// [`user_questions`](Self::user_questions); a host that can answer without copying the
    /// state overrides it (late answers ask it for every committed tool result).
    fn is_continued(&self, session: &SessionRef, call_id: &CallId) -> bool {
        self.user_questions(session)
            .is_some_and(|state| state.continued(call_id).is_some())
    }
}

/// What the host reports to [`LateAnswers::on_host_event`](crate::LateAnswers::on_host_event), in
/// commit order per session (SPEC §4.1, §4.9).
#[derive(Clone)]
pub enum HostEvent {
    /// A turn of `agent` took `message` out of its inbox as input of turn `turn`.
    InboxClaimed {
        /// The agent whose inbox it was.
        agent: AgentHandle,
        /// The message taken.
        message: UserMessage,
        /// The turn it is input of.
        turn: u64,
    },
    /// `message` was removed from the inbox of `agent` without being used (cancelled by a person,
    /// cleared by the host).
    InboxDiscarded {
        /// The agent whose inbox it was.
        agent: AgentHandle,
        /// The message removed.
        message: UserMessage,
    },
    /// `event` was committed to the log of `session` (every committed event, in log order).
    Committed {
        /// The live session instance that wrote it.
        session: SessionRef,
        /// The event as the log reader decodes it.
        event: SessionEvent,
    },
}

impl fmt::Debug for HostEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::InboxClaimed {
                agent,
                message,
                turn,
            } => f
                .debug_struct("InboxClaimed")
                .field("agent", agent.id())
                .field("message", message)
                .field("turn", turn)
                .finish(),
            Self::InboxDiscarded { agent, message } => f
                .debug_struct("InboxDiscarded")
                .field("agent", agent.id())
                .field("message", message)
                .finish(),
            Self::Committed { session, event } => f
                .debug_struct("Committed")
                .field("session", session.id())
                .field("event", event)
                .finish(),
        }
    }
}

/// A [`ProjectionHost`] that keeps the projection state of each live session instance in memory
/// and folds committed events into it.
///
/// State is kept per session **instance** (by pointer, holding only a `Weak`, SPEC §0.3): a resumed
/// session is a new instance and starts from its own seed, and the state of an instance that has
/// been dropped is dropped with it.
///
/// A host calls [`record`](Self::record) for every committed event, before or after it delivers
/// the matching [`HostEvent::Committed`] (late answers do not depend on the order), and seeds a
/// resumed session with [`seed_from_log`](Self::seed_from_log) or [`seed`](Self::seed).
#[derive(Default)]
pub struct InMemoryProjectionHost {
    sessions: Mutex<HashMap<usize, Tracked>>,
}

struct Tracked {
    slot: SessionSlot,
    state: UserQuestionsState,
}

impl InMemoryProjectionHost {
    /// An empty host, tracking no session.
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// Tracks `session` from `state` (replacing any state it had), e.g. the state of a checkpoint
    /// or of a fold the host did itself.
    pub fn seed(&self, session: &SessionRef, state: UserQuestionsState) {
        let mut sessions = lock(&self.sessions);
        purge(&mut sessions);
        sessions.insert(
            session_key(session),
            Tracked {
                slot: SessionSlot::new(session),
                state,
            },
        );
    }

    /// Folds a whole log (`fold_log`, SPEC §7, §8) and tracks `session` from the result, replacing
    /// any state it had. Returns the folded log so that the host can report its findings and knows
    /// the `seq` of the next record (`report.end.expected_seq`).
    pub fn seed_from_log<R: BufRead>(
        &self,
        session: &SessionRef,
        reader: R,
    ) -> Result<FoldedLog, OpenError> {
        let folded = fold_log(reader)?;
        self.seed(session, folded.state.clone());
        Ok(folded)
    }

    /// Folds one committed event into the state of `session`; returns whether the projection
    /// changed. A session that was never seeded starts from an empty, unforked state (a new
    /// session whose log starts here).
    pub fn record(&self, session: &SessionRef, event: &SessionEvent) -> bool {
        let mut sessions = lock(&self.sessions);
        purge(&mut sessions);
        sessions
            .entry(session_key(session))
            .or_insert_with(|| Tracked {
                slot: SessionSlot::new(session),
                state: UserQuestionsState::new(0),
            })
            .state
            .apply_in_place(event)
    }

    /// Stops tracking `session`; returns its last state.
    pub fn forget(&self, session: &SessionRef) -> Option<UserQuestionsState> {
        let mut sessions = lock(&self.sessions);
        purge(&mut sessions);
        sessions
            .remove(&session_key(session))
            .map(|tracked| tracked.state)
    }

    /// The number of live session instances tracked (instances that have been dropped are not
    /// counted, and their state is discarded here).
    pub fn tracked_sessions(&self) -> usize {
        let mut sessions = lock(&self.sessions);
        purge(&mut sessions);
        sessions.len()
    }
}

impl ProjectionHost for InMemoryProjectionHost {
    fn user_questions(&self, session: &SessionRef) -> Option<UserQuestionsState> {
        let mut sessions = lock(&self.sessions);
        purge(&mut sessions);
        sessions
            .get(&session_key(session))
            .filter(|tracked| tracked.slot.is(session))
            .map(|tracked| tracked.state.clone())
    }

    fn is_continued(&self, session: &SessionRef, call_id: &CallId) -> bool {
        let mut sessions = lock(&self.sessions);
        purge(&mut sessions);
        sessions
            .get(&session_key(session))
            .filter(|tracked| tracked.slot.is(session))
            .is_some_and(|tracked| tracked.state.continued(call_id).is_some())
    }
}

impl fmt::Debug for InMemoryProjectionHost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InMemoryProjectionHost")
            .field("tracked_sessions", &self.tracked_sessions())
            .finish()
    }
}

/// Drops the state of every session instance that has been dropped, so that a new instance that
/// happens to get the same address never inherits it.
fn purge(sessions: &mut HashMap<usize, Tracked>) {
    sessions.retain(|_, tracked| tracked.slot.is_live());
}
