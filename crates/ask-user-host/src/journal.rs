//! The journal: the one way a host session commits an event.
//!
//! [`Journal::commit`] takes a typed [`Record`], appends it durably through the session's
//! [`SessionWriter`] (acknowledged only once durable), takes back the event exactly as a replay of
//! the log decodes it, applies it to the live projection, and reports it to late answers, all
//! under one lock, so the projection and the reservations see events in log order.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};

use pending_answer::{HostEvent, InMemoryProjectionHost, LateAnswers};
use session_log::{Record, SessionEvent, SessionWriter, StoreError};
use user_questions::SessionRef;
use user_questions::sync::lock_unpoisoned;

/// Committing an event failed; nothing was acknowledged.
#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    /// The store refused or failed the append.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The record could not be serialised.
    #[error("cannot serialise a {event_type} event: {source}")]
    Data {
        /// The event type.
        event_type: String,
        /// Why.
        source: serde_json::Error,
    },
    /// The store acknowledged the append but returned no event (a store bug).
    #[error("the store returned no event for a {event_type} record")]
    Missing {
        /// The event type.
        event_type: String,
    },
    /// The session ended: its log was given up, and nothing more is written to it.
    #[error("the session of {} has ended; its log is closed", location.display())]
    Closed {
        /// Where the log lives.
        location: PathBuf,
    },
}

impl JournalError {
    /// A stable code for the command line.
    pub fn code(&self) -> &'static str {
        match self {
            Self::Store(error) => error.code(),
            Self::Data { .. } | Self::Missing { .. } => "INVALID_EVENT",
            Self::Closed { .. } => "SESSION_CLOSED",
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
    /// `None` once the session ended: the writer (and with it the log's ownership) is given up
    /// even while clones of the agent, which holds the journal, live on elsewhere.
    writer: Option<Box<dyn SessionWriter>>,
    location: PathBuf,
    resumed: bool,
}

impl Journal {
    /// A journal over `writer`, feeding `projections` and `late`.
    pub fn new(
        writer: Box<dyn SessionWriter>,
        session: SessionRef,
        projections: Arc<InMemoryProjectionHost>,
        late: LateAnswers,
    ) -> Arc<Self> {
        let resumed = writer.position().events > 0;
        let location = writer.location().to_path_buf();
        Arc::new(Self {
            state: Mutex::new(State {
                writer: Some(writer),
                location,
                resumed,
            }),
            session,
            projections,
            late,
        })
    }

    fn state(&self) -> MutexGuard<'_, State> {
        lock_unpoisoned(&self.state)
    }

    /// Reports a host event that is not a commit (an inbox claim or discard) to late answers.
    pub fn report(&self, event: &HostEvent) {
        self.late.on_host_event(event);
    }

    /// The live session instance.
    pub fn session(&self) -> &SessionRef {
        &self.session
    }

    /// Where the log lives (a path, or `memory:<name>`).
    pub fn location(&self) -> PathBuf {
        self.state().location.clone()
    }

    /// Ends the session's writing: the writer is dropped (a JSONL log's lock is released) and
    /// every later commit fails with [`JournalError::Closed`]. Idempotent.
    pub fn close(&self) {
        drop(self.state().writer.take());
    }

    /// Whether the journal continues a log that already held events.
    pub fn resumed(&self) -> bool {
        self.state().resumed
    }

    /// Commits one event: durable append, then the live projection, then late answers, in log
    /// order. Returns the event as a replay of the log decodes it.
    pub fn commit(&self, record: Record) -> Result<SessionEvent, JournalError> {
        let mut guard = self.state();
        let state = &mut *guard;
        let Some(writer) = state.writer.as_mut() else {
            return Err(JournalError::Closed {
                location: state.location.clone(),
            });
        };
        let event_type = record.event_type().to_owned();
        let event = record
            .into_event(writer.next_seq())
            .map_err(|source| JournalError::Data {
                event_type: event_type.clone(),
                source,
            })?;
        let decoded = writer
            .append(std::slice::from_ref(&event))?
            .pop()
            .ok_or(JournalError::Missing { event_type })?;
        // Still under the lock: the projection and the reservations see events in log order.
        self.projections.record(&self.session, &decoded);
        self.late.on_host_event(&HostEvent::Committed {
            session: self.session.clone(),
            event: decoded.clone(),
        });
        drop(guard);
        Ok(decoded)
    }
}
