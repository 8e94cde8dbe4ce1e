//! What a host gives the surface: its options, and the sessions it shows continued questions of.

use std::fmt;
use std::time::Duration;

use pending_answer::LateAnswerSink;
use user_questions::{AgentHandle, CallId, Question};

/// A card's identity: its session and call.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct CardKey {
    pub(crate) session: String,
    pub(crate) call_id: CallId,
}

/// How to build a [`WebSurface`].
#[derive(Clone, Debug)]
pub struct WebOptions {
    /// The provenance name (and registration name) of the surface; `web` by default.
    pub name: String,
    /// The reconnect delay a page is told (`retry:` of the event stream); 2 s by default.
    pub retry: Duration,
    /// How long a page's claims outlive its last event stream, so a network blip does not expire
    /// a wait; 2× `retry` by default.
    pub reconnect_grace: Duration,
    /// The keep-alive interval of event streams; 5 s by default.
    pub keep_alive: Duration,
    /// The largest request body taken, in bytes; 64 KiB by default.
    pub body_limit: usize,
    /// Whether only loopback addresses may name the server in `Host` (true by default; a server
    /// bound to another address sets it false, and then any IP literal is taken, never a DNS
    /// name).
    pub loopback_only: bool,
}

impl Default for WebOptions {
    fn default() -> Self {
        Self {
            name: "web".to_owned(),
            retry: Duration::from_secs(2),
            reconnect_grace: Duration::from_secs(4),
            keep_alive: Duration::from_secs(5),
            body_limit: 64 * 1024,
            loopback_only: true,
        }
    }
}

/// A continued question of a hosted session: shown as answerable late.
#[derive(Clone)]
pub struct ContinuedQuestion {
    /// The session's id.
    pub session: String,
    /// The pending call.
    pub call_id: CallId,
    /// The questions as the call asked them.
    pub questions: Vec<Question>,
    /// The session's live agent, when the process hosts it (`None` for a log read from disk).
    pub agent: Option<AgentHandle>,
    /// The question is still open in its window on a host elsewhere (another machine runs its
    /// call): the card shows it as open and untimed here, and an answer goes to the sessions
    /// like a late one, to be taken in that window.
    pub open_elsewhere: bool,
}

impl ContinuedQuestion {
    pub(crate) fn key(&self) -> CardKey {
        CardKey {
            session: self.session.clone(),
            call_id: self.call_id.clone(),
        }
    }
}

impl fmt::Debug for ContinuedQuestion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ContinuedQuestion")
            .field("session", &self.session)
            .field("call_id", &self.call_id)
            .field("questions", &self.questions.len())
            .field("agent", &self.agent.as_ref().map(|a| a.id().clone()))
            .field("open_elsewhere", &self.open_elsewhere)
            .finish()
    }
}

/// The sessions a surface shows continued questions of (and questions open elsewhere), and
/// where their late answers go.
///
/// A host implements it over what it runs: its live sessions (their projections and
/// `LateAnswers`), or logs on disk (opened for write to take an answer). The methods may block
/// (read or open a log): the surface calls them off its async threads.
pub trait WebSessions: LateAnswerSink {
    /// The continued questions of every session, oldest first.
    fn continued(&self) -> Vec<ContinuedQuestion>;
    /// The projection view of every session, for `GET /pending`:
    /// `{"sessions":[{"session":…,"active":[…],"settled":[…]}]}`.
    fn pending_view(&self) -> serde_json::Value;
}
