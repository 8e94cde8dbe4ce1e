//! The journal: the one way a host session commits an event.
//!
//! [`Journal::commit`] takes a typed [`Record`], appends it durably through the session's
//! [`SessionWriter`] (acknowledged only once durable), takes back the event exactly as a replay of
//! the log decodes it, applies it to the live projection, and reports it to late answers, all
//! under one lock, so the projection and the reservations see events in log order.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};

use pending_answer::{ChangeSignal, HostEvent, InMemoryProjectionHost, LateAnswers};
use session_log::{EventBody, Record, SessionEvent, SessionWriter, StoreError};
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
    /// Ticked when a commit changes the projection or the inbox (a desk's change signal).
    changes: Arc<ChangeSignal>,
}

struct State {
    /// `None` once the session ended: the writer (and with it the log's ownership) is given up
    /// even while clones of the agent, which holds the journal, live on elsewhere.
    writer: Option<Box<dyn SessionWriter>>,
    location: PathBuf,
    resumed: bool,
}

impl Journal {
    /// A journal over `writer`, feeding `projections` and `late`, ticking `changes` whenever a
    /// commit changes the projection or the inbox.
    pub fn new(
        writer: Box<dyn SessionWriter>,
        session: SessionRef,
        projections: Arc<InMemoryProjectionHost>,
        late: LateAnswers,
        changes: Arc<ChangeSignal>,
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
            changes,
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

    /// Where the log ends now (its byte length); `None` once the session ended.
    pub fn end(&self) -> Option<u64> {
        self.state()
            .writer
            .as_ref()
            .map(|writer| writer.position().byte_offset)
    }

    /// Whether the journal continues a log that already held events.
    pub fn resumed(&self) -> bool {
        self.state().resumed
    }

    /// Commits one event: durable append, then the live projection, then late answers, in log
    /// order. Returns the event as a replay of the log decodes it.
    pub fn commit(&self, record: Record) -> Result<SessionEvent, JournalError> {
        let event_type = record.event_type().to_owned();
        self.commit_all(vec![record], &mut [])?
            .pop()
            .ok_or(JournalError::Missing { event_type })
    }

    /// Commits several events as one durable batch (one append, one sync; a failed append leaves
    /// none of them in the log, unless undoing it fails too and poisons the writer), then gives
    /// each in log order to the live projection and to late answers.
    /// Each `(index, event)` of `reports` is reported to late answers right after the batch's
    /// event at `index` (an inbox claim after the edit that logs it), as if the events had been
    /// committed one by one. Returns the events as a replay of the log decodes them.
    pub fn commit_all(
        &self,
        records: Vec<Record>,
        reports: &mut [(usize, Option<HostEvent>)],
    ) -> Result<Vec<SessionEvent>, JournalError> {
        let mut guard = self.state();
        let state = &mut *guard;
        let Some(writer) = state.writer.as_mut() else {
            return Err(JournalError::Closed {
                location: state.location.clone(),
            });
        };
        let mut events = Vec::with_capacity(records.len());
        for record in records {
            let event_type = record.event_type().to_owned();
            let seq = writer.next_seq() + events.len() as u64;
            events.push(
                record
                    .into_event(seq)
                    .map_err(|source| JournalError::Data { event_type, source })?,
            );
        }
        let decoded = writer.append(&events)?;
        if let Some(missing) = events.get(decoded.len()) {
            return Err(JournalError::Missing {
                event_type: missing.event_type.clone(),
            });
        }
        // Still under the lock: the projection and the reservations see events in log order.
        let mut changed = false;
        for (index, event) in decoded.iter().enumerate() {
            changed |= self.projections.record(&self.session, event)
                || matches!(event.body, EventBody::InboxSpliced(_));
            self.late.on_host_event(&HostEvent::Committed {
                session: self.session.clone(),
                event: event.clone(),
            });
            for (at, report) in reports.iter_mut() {
                if *at == index
                    && let Some(report) = report.take()
                {
                    self.late.on_host_event(&report);
                }
            }
        }
        drop(guard);
        if changed && self.changes.subscribers() > 0 {
            self.changes.tick();
        }
        Ok(decoded)
    }
}
