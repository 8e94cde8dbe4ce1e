//! Question lifecycle events (SPEC §9.4): opened, claimed, answered, pending, cancelled.
//!
//! Delivered to subscribers through a bounded broadcast buffer (publishing never blocks; a slow
//! subscriber loses its oldest events and is told how many) and as `tracing` events with target
//! `user_questions::lifecycle`.

use std::sync::atomic::{AtomicU64, Ordering};

use tokio::sync::broadcast;

use crate::error::ErrorCode;
use crate::ids::{AgentId, CallId, SessionId};
use crate::vocab::{Provenance, Question, WaitKey};

/// One lifecycle event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QuestionEvent {
    /// One per foreground ask; absent on late-path events.
    pub ask_id: Option<String>,
    /// The keyed call, when there is one.
    pub call_id: Option<CallId>,
    /// The asking agent.
    pub agent_id: Option<AgentId>,
    /// The asking agent's session.
    pub session_id: Option<SessionId>,
    /// Wall-clock Unix milliseconds.
    pub at_ms: i64,
    /// What happened.
    pub kind: QuestionEventKind,
}

/// What happened to a question.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum QuestionEventKind {
    /// A foreground ask was dispatched to the answerers (after all validation).
    Opened {
        /// How the request is keyed.
        wait: WaitMode,
        /// For timed waits: milliseconds left at dispatch.
        remaining_ms: Option<u64>,
        /// A summary of each question.
        questions: Vec<QuestionSummary>,
    },
    /// A claim was taken on a timed wait.
    Claimed {
        /// Claims held after this one.
        claims: u32,
    },
    /// An answer arrived.
    Answered {
        /// In the foreground, or late (admitted reply).
        path: AnswerPath,
        /// Who answered.
        provenance: Provenance,
    },
    /// The timed window closed; the question stays answerable. The call's pending result may
    /// not be in its log yet: a late answer is taken once the call is [`Continued`](Self::Continued).
    Pending,
    /// The call's pending result is durable in its session's log (the projection marks it
    /// continued): from now on it takes a late answer (SPEC §4.13 step 4). Published by the host's
    /// late answers, with the session and call id, no `ask_id`; also after a resumed session's
    /// repair continues an interrupted call.
    Continued,
    /// Any other end.
    Cancelled {
        /// The error code; `None` for a foreign error.
        code: Option<ErrorCode>,
    },
}

impl QuestionEventKind {
    /// The variant name, as used in the `tracing` field `event`.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Opened { .. } => "opened",
            Self::Claimed { .. } => "claimed",
            Self::Answered { .. } => "answered",
            Self::Pending => "pending",
            Self::Continued => "continued",
            Self::Cancelled { .. } => "cancelled",
        }
    }
}

/// How a foreground request is keyed: `wait` absent, `Indefinite` or `Timed`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitMode {
    /// No wait key.
    Blocking,
    /// Keyed indefinite wait.
    Indefinite,
    /// Foreground timed wait.
    Timed,
}

impl WaitMode {
    pub(crate) fn of(wait: Option<&WaitKey>) -> Self {
        match wait {
            None => Self::Blocking,
            Some(WaitKey::Indefinite { .. }) => Self::Indefinite,
            Some(WaitKey::Timed { .. }) => Self::Timed,
        }
    }
}

/// Where an answer came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AnswerPath {
    /// Within the tool call.
    Foreground,
    /// As an admitted late reply.
    Late,
}

/// A question without its text: id, header and options count.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QuestionSummary {
    /// The question id.
    pub id: String,
    /// The header, when set.
    pub header: Option<String>,
    /// The number of options.
    pub options: usize,
}

impl QuestionSummary {
    pub(crate) fn of(question: &Question) -> Self {
        Self {
            id: question.id.clone(),
            header: question.header.clone(),
            options: question.options().len(),
        }
    }
}

/// What a subscriber receives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Received {
    /// The next event.
    Event(QuestionEvent),
    /// The subscriber fell behind and lost this many of its oldest events.
    Missed(u64),
}

/// A subscription to lifecycle events ([`UserQuestions::subscribe`](crate::UserQuestions::subscribe)).
#[derive(Debug)]
pub struct QuestionEvents {
    rx: broadcast::Receiver<QuestionEvent>,
}

impl QuestionEvents {
    /// The next event, or how many were missed; `None` once the seam is gone.
    ///
    /// Cancel safe.
    pub async fn recv(&mut self) -> Option<Received> {
        match self.rx.recv().await {
            Ok(event) => Some(Received::Event(event)),
            Err(broadcast::error::RecvError::Lagged(missed)) => Some(Received::Missed(missed)),
            Err(broadcast::error::RecvError::Closed) => None,
        }
    }

    /// The next event if one is ready.
    pub fn try_recv(&mut self) -> Option<Received> {
        match self.rx.try_recv() {
            Ok(event) => Some(Received::Event(event)),
            Err(broadcast::error::TryRecvError::Lagged(missed)) => Some(Received::Missed(missed)),
            Err(broadcast::error::TryRecvError::Empty | broadcast::error::TryRecvError::Closed) => {
                None
            }
        }
    }

    /// Every event ready now, skipping missed-count notices.
    pub fn drain(&mut self) -> Vec<QuestionEvent> {
        std::iter::from_fn(|| self.try_recv())
            .filter_map(|r| match r {
                Received::Event(e) => Some(e),
                Received::Missed(_) => None,
            })
            .collect()
    }
}

/// The sending side, owned by the seam.
pub(crate) struct Publisher {
    tx: broadcast::Sender<QuestionEvent>,
}

impl Publisher {
    pub(crate) fn new(capacity: usize) -> Self {
        Self {
            tx: broadcast::Sender::new(capacity),
        }
    }

    pub(crate) fn subscribe(&self) -> QuestionEvents {
        QuestionEvents {
            rx: self.tx.subscribe(),
        }
    }

    pub(crate) fn publish(&self, event: QuestionEvent) {
        trace_event(&event);
        // No subscriber is not an error: events are also traced.
        let _ = self.tx.send(event);
    }
}

fn trace_event(event: &QuestionEvent) {
    let name = event.kind.name();
    let ask_id = event.ask_id.as_deref();
    let call_id = event.call_id.as_ref().map(CallId::as_str);
    let agent_id = event.agent_id.as_ref().map(AgentId::as_str);
    let session_id = event.session_id.as_ref().map(SessionId::as_str);
    match &event.kind {
        QuestionEventKind::Opened {
            wait,
            remaining_ms,
            questions,
        } => tracing::info!(
            target: "user_questions::lifecycle",
            event = name, ask_id, call_id, agent_id, session_id,
            wait = ?wait, remaining_ms, questions = questions.len(),
        ),
        QuestionEventKind::Claimed { claims } => tracing::info!(
            target: "user_questions::lifecycle",
            event = name, ask_id, call_id, agent_id, session_id, claims,
        ),
        QuestionEventKind::Answered { path, provenance } => tracing::info!(
            target: "user_questions::lifecycle",
            event = name, ask_id, call_id, agent_id, session_id,
            path = ?path, answerer = %provenance.answerer, answered_by = ?provenance.answered_by,
        ),
        QuestionEventKind::Pending | QuestionEventKind::Continued => tracing::info!(
            target: "user_questions::lifecycle",
            event = name, ask_id, call_id, agent_id, session_id,
        ),
        QuestionEventKind::Cancelled { code } => tracing::info!(
            target: "user_questions::lifecycle",
            event = name, ask_id, call_id, agent_id, session_id, code = code.as_ref().map(ErrorCode::as_str),
        ),
    }
    tracing::debug!(target: "user_questions::lifecycle", detail = ?event.kind);
}

/// A fresh, process-unique id for one foreground ask.
pub(crate) fn next_ask_id() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    format!("ask-{}", NEXT.fetch_add(1, Ordering::Relaxed))
}
