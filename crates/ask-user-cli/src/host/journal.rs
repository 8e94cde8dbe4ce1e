//! The journal: the one way the host commits an event.
//!
//! `commit` appends the event durably (fsync before it returns), decodes it exactly as a replay
//! of the file would, applies it to the live projection, and reports it to late answers, all
//! under one lock so the projection and the reservations see events in log order.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};

use pending_answer::{HostEvent, InMemoryProjectionHost, LateAnswers};
use serde::Serialize;
use user_questions::SessionRef;
use user_questions_projection::SessionEvent;

use crate::store::{LogEvent, LogWriter, StoreError};

/// Committing an event failed; nothing was acknowledged.
#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    /// The store refused or failed the append.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The event data could not be serialised.
    #[error("cannot serialise a {event_type} event: {source}")]
    Data {
        /// The event type.
        event_type: String,
        /// Why.
        source: serde_json::Error,
    },
    /// An in-memory session refused the event (it would not read back as one record).
    #[error("invalid {event_type} event: {reason}")]
    Invalid {
        /// The event type.
        event_type: String,
        /// Why.
        reason: String,
    },
}

impl JournalError {
    /// A stable code for the command line.
    pub fn code(&self) -> &'static str {
        match self {
            Self::Store(error) => error.code(),
            Self::Data { .. } | Self::Invalid { .. } => "INVALID_EVENT",
        }
    }
}

/// The session's journal. See the [module docs](self).
pub struct Journal {
    state: Mutex<State>,
    session: SessionRef,
    projections: Arc<InMemoryProjectionHost>,
    late: LateAnswers,
}

struct State {
    writer: Option<LogWriter>,
    next_seq: u64,
    resumed: bool,
}

impl Journal {
    /// A journal over `writer` (`None`: in memory), feeding `projections` and `late`.
    pub fn new(
        writer: Option<LogWriter>,
        session: SessionRef,
        projections: Arc<InMemoryProjectionHost>,
        late: LateAnswers,
    ) -> Arc<Self> {
        let next_seq = writer.as_ref().map_or(0, LogWriter::next_seq);
        let resumed = writer.as_ref().is_some_and(|w| w.position().events > 0);
        Arc::new(Self {
            state: Mutex::new(State {
                writer,
                next_seq,
                resumed,
            }),
            session,
            projections,
            late,
        })
    }

    fn state(&self) -> MutexGuard<'_, State> {
        crate::sync::lock(&self.state)
    }

    /// Reports a host event that is not a commit (an inbox claim or discard) to late answers.
    pub fn report(&self, event: &HostEvent) {
        self.late.on_host_event(event);
    }

    /// The live session instance.
    pub fn session(&self) -> &SessionRef {
        &self.session
    }

    /// The log path, when the session is durable.
    pub fn path(&self) -> Option<PathBuf> {
        self.state().writer.as_ref().map(|w| w.path().to_path_buf())
    }

    /// Whether the journal continues a log that already held events.
    pub fn resumed(&self) -> bool {
        self.state().resumed
    }

    /// Commits an event with this `data`.
    pub fn commit(
        &self,
        event_type: &str,
        data: &impl Serialize,
    ) -> Result<SessionEvent, JournalError> {
        self.commit_with(event_type, data, false)
    }

    /// Commits a message-producing event (`surfaceOp: "append"`).
    pub fn commit_message_data(
        &self,
        event_type: &str,
        data: &impl Serialize,
    ) -> Result<SessionEvent, JournalError> {
        self.commit_with(event_type, data, true)
    }

    /// Commits a user message as its own `data` (`user/message`).
    pub fn commit_message(
        &self,
        event_type: &str,
        message: &user_questions::UserMessage,
    ) -> Result<SessionEvent, JournalError> {
        self.commit_with(event_type, message, true)
    }

    fn commit_with(
        &self,
        event_type: &str,
        data: &impl Serialize,
        message: bool,
    ) -> Result<SessionEvent, JournalError> {
        let mut state = self.state();
        let event = LogEvent::from_data(event_type, state.next_seq, data).map_err(|source| {
            JournalError::Data {
                event_type: event_type.to_owned(),
                source,
            }
        })?;
        let event = if message {
            event.surface_append()
        } else {
            event
        };
        let decoded = match &mut state.writer {
            Some(writer) => writer
                .append(std::slice::from_ref(&event))?
                .pop()
                .ok_or_else(|| JournalError::Invalid {
                    event_type: event_type.to_owned(),
                    reason: "the store returned no event".to_owned(),
                })?,
            None => {
                event
                    .to_line()
                    .map_err(|reason| JournalError::Invalid {
                        event_type: event_type.to_owned(),
                        reason,
                    })?
                    .1
            }
        };
        state.next_seq = decoded.seq + 1;
        // Still under the lock: the projection and the reservations see events in log order.
        self.projections.record(&self.session, &decoded);
        self.late.on_host_event(&HostEvent::Committed {
            session: self.session.clone(),
            event: decoded.clone(),
        });
        drop(state);
        Ok(decoded)
    }
}
