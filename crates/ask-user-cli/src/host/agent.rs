//! The agent of a reference host session (a live root, or a child when the host has an owner),
//! with a durable inbox.
//!
//! The inbox is two queues (next turn, next step), as in the reference. Every edit is logged as
//! `agent/inbox/spliced` before it takes effect in memory, so a restarted host restores queued
//! messages from the log, and a late reply queued before a crash is still queued after it (which is
//! what keeps the one-reply rule across restarts, SPEC §4.9).

use std::sync::{Arc, Mutex, MutexGuard};

use pending_answer::HostEvent;

use serde::Deserialize;
use serde_json::json;
use tokio::sync::Notify;
use user_questions::{Agent, AgentHandle, AgentId, HostError, ScopeId, SessionRef, UserMessage};
use user_questions_projection::{Scanned, SessionHeader};

use super::journal::{Journal, JournalError};
use crate::store::LogVisitor;

const NEXT_TURN: &str = "next-turn";
const NEXT_STEP: &str = "next-step";

#[derive(Default)]
struct Queues {
    next_turn: Vec<UserMessage>,
    next_step: Vec<UserMessage>,
}

impl Queues {
    fn target(&mut self, target: &str) -> Option<&mut Vec<UserMessage>> {
        match target {
            NEXT_TURN => Some(&mut self.next_turn),
            NEXT_STEP => Some(&mut self.next_step),
            _ => None,
        }
    }
}

/// The agent of a [`Host`](super::Host) session. See the [module docs](self).
pub struct HostAgent {
    id: AgentId,
    session: SessionRef,
    queues: Mutex<Queues>,
    journal: Arc<Journal>,
    input: Notify,
}

impl HostAgent {
    pub(super) fn new(id: &str, session: SessionRef, journal: Arc<Journal>) -> Arc<Self> {
        Arc::new(Self {
            id: AgentId::from(id),
            session,
            queues: Mutex::new(Queues::default()),
            journal,
            input: Notify::new(),
        })
    }

    fn queues(&self) -> MutexGuard<'_, Queues> {
        crate::sync::lock(&self.queues)
    }

    /// Replays the inbox edits read from the log; returns how many messages are queued.
    pub(super) fn restore(&self, restore: &Restore) -> usize {
        let mut queues = self.queues();
        for splice in &restore.splices {
            if let Some(queue) = queues.target(&splice.target) {
                let start = splice.start.min(queue.len());
                let end = start.saturating_add(splice.removed_count).min(queue.len());
                queue.splice(start..end, splice.inserted.iter().cloned());
            }
        }
        queues.next_turn.len() + queues.next_step.len()
    }

    /// A snapshot of the next-turn queue.
    pub fn next_turn(&self) -> Vec<UserMessage> {
        self.queues().next_turn.clone()
    }

    /// Takes every next-turn message for `turn`: logs the removal, then reports each claim to late
    /// answers, all under the queue lock, so no `answer` can slip a second reply in between
    /// (a reply restored from the log has no reservation until its claim is reported).
    pub(super) fn claim_next_turn(
        &self,
        me: &AgentHandle,
        turn: u64,
    ) -> Result<Vec<UserMessage>, JournalError> {
        let mut queues = self.queues();
        if queues.next_turn.is_empty() {
            return Ok(Vec::new());
        }
        self.journal.commit(
            "agent/inbox/spliced",
            &json!({
                "target": NEXT_TURN,
                "start": 0,
                "removedCount": queues.next_turn.len(),
                "inserted": [],
            }),
        )?;
        let claimed = std::mem::take(&mut queues.next_turn);
        self.report_claims(me, &claimed, turn);
        Ok(claimed)
    }

    /// Takes the next-turn message with this id for `turn`, if queued, as
    /// [`HostAgent::claim_next_turn`] does; other messages stay queued.
    pub(super) fn claim_one(
        &self,
        me: &AgentHandle,
        message_id: &str,
        turn: u64,
    ) -> Result<Option<UserMessage>, JournalError> {
        let mut queues = self.queues();
        let Some(at) = queues.next_turn.iter().position(|m| m.id == message_id) else {
            return Ok(None);
        };
        self.journal.commit(
            "agent/inbox/spliced",
            &json!({ "target": NEXT_TURN, "start": at, "removedCount": 1, "inserted": [] }),
        )?;
        let claimed = queues.next_turn.remove(at);
        self.report_claims(me, std::slice::from_ref(&claimed), turn);
        Ok(Some(claimed))
    }

    fn report_claims(&self, me: &AgentHandle, claimed: &[UserMessage], turn: u64) {
        for message in claimed {
            self.journal.report(&HostEvent::InboxClaimed {
                agent: me.clone(),
                message: message.clone(),
                turn,
            });
        }
    }

    /// Resolves when a message is queued for the next turn (or one already is). Cancel safe.
    pub async fn wait_for_input(&self) {
        // A wake-up left over from a message that was claimed since is not input: look again.
        while self.queues().next_turn.is_empty() {
            self.input.notified().await;
        }
    }
}

impl Agent for HostAgent {
    fn id(&self) -> &AgentId {
        &self.id
    }

    fn session(&self) -> SessionRef {
        self.session.clone()
    }

    fn scope_chain(&self) -> Vec<ScopeId> {
        vec![ScopeId::from(format!("agent:{}", self.id))]
    }

    fn queued_messages(&self) -> Vec<UserMessage> {
        let queues = self.queues();
        queues
            .next_turn
            .iter()
            .chain(&queues.next_step)
            .cloned()
            .collect()
    }

    /// Queues `message` for the next turn: the inbox edit is logged (durably) before the message
    /// is queued, and a failure to log leaves the queue unchanged and is returned to the caller.
    fn followup(&self, message: UserMessage) -> Result<(), HostError> {
        let mut queues = self.queues();
        self.journal.commit(
            "agent/inbox/spliced",
            &json!({
                "target": NEXT_TURN,
                "start": queues.next_turn.len(),
                "inserted": [&message],
            }),
        )?;
        queues.next_turn.push(message);
        drop(queues);
        self.input.notify_one();
        Ok(())
    }
}

/// One logged inbox edit.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Splice {
    target: String,
    #[serde(default)]
    start: usize,
    #[serde(default)]
    removed_count: usize,
    #[serde(default)]
    inserted: Vec<UserMessage>,
}

#[derive(Deserialize)]
struct SpliceRecord {
    data: Splice,
}

#[derive(Deserialize)]
struct TurnRecord {
    data: TurnData,
}

#[derive(Deserialize)]
struct TurnData {
    turn: u64,
}

/// What the host restores from a log while the store opens it: inbox edits and the last turn.
#[derive(Debug, Default)]
pub struct Restore {
    splices: Vec<Splice>,
    /// The highest `turn/start` turn seen.
    pub last_turn: u64,
}

impl LogVisitor for Restore {
    fn header(&mut self, _header: &SessionHeader) {}

    fn line(&mut self, line: &Scanned<'_>) {
        let Scanned::Record(record) = line else {
            return;
        };
        let Some(event) = record.record.event() else {
            return;
        };
        match event.event_type() {
            "agent/inbox/spliced" => match serde_json::from_slice::<SpliceRecord>(record.raw) {
                Ok(splice) => self.splices.push(splice.data),
                Err(error) => tracing::warn!(
                    line = record.line,
                    %error,
                    "an inbox edit cannot be read; the inbox is restored without it"
                ),
            },
            "turn/start" => {
                if let Ok(turn) = serde_json::from_slice::<TurnRecord>(record.raw) {
                    self.last_turn = self.last_turn.max(turn.data.turn);
                }
            }
            _ => {}
        }
    }
}
