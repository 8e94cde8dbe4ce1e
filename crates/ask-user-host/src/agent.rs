//! The agent of a host session (a live root, or a child when the session has an owner), with a
//! durable inbox.
//!
//! The inbox is two queues (next turn, next step), as in the reference. Every edit is logged as
//! `agent/inbox/spliced` before it takes effect in memory, so a restarted host restores queued
//! messages from the log, and a late reply queued before a crash is still queued after it (which is
//! what keeps the one-reply rule across restarts, SPEC §4.9).

use std::sync::{Arc, Mutex, MutexGuard};

use pending_answer::HostEvent;
use serde::{Deserialize, Serialize};
use session_log::{EventBody, InboxTarget, LogVisitor, Record, Scanned, SpliceEdit};
use tokio::sync::Notify;
use user_questions::sync::lock_unpoisoned;
use user_questions::{
    Agent, AgentHandle, AgentId, CallId, HostError, ScopeId, SessionRef, UserMessage,
};

use crate::journal::{Journal, JournalError};

#[derive(Default)]
struct Queues {
    next_turn: Vec<UserMessage>,
    next_step: Vec<UserMessage>,
}

/// The agent of a [`Host`](crate::Host) session. See the [module docs](self).
pub struct HostAgent {
    id: AgentId,
    session: SessionRef,
    queues: Mutex<Queues>,
    journal: Arc<Journal>,
    input: Notify,
}

impl HostAgent {
    pub(crate) fn new(id: &str, session: SessionRef, journal: Arc<Journal>) -> Arc<Self> {
        Arc::new(Self {
            id: AgentId::from(id),
            session,
            queues: Mutex::new(Queues::default()),
            journal,
            input: Notify::new(),
        })
    }

    fn queues(&self) -> MutexGuard<'_, Queues> {
        lock_unpoisoned(&self.queues)
    }

    /// Queues what the log's inbox edits left queued; returns how many messages are queued.
    pub(crate) fn restore(&self, restore: &Restore) -> usize {
        let mut queues = self.queues();
        queues.next_turn.clone_from(&restore.next_turn);
        queues.next_step.clone_from(&restore.next_step);
        queues.next_turn.len() + queues.next_step.len()
    }

    /// A snapshot of the next-turn queue.
    pub fn next_turn(&self) -> Vec<UserMessage> {
        self.queues().next_turn.clone()
    }

    /// Takes every next-turn message for `turn`: logs the removal, then reports each claim to late
    /// answers, all under the queue lock, so no `answer` can slip a second reply in between
    /// (a reply restored from the log has no reservation until its claim is reported).
    pub(crate) fn claim_next_turn(
        &self,
        me: &AgentHandle,
        turn: u64,
    ) -> Result<Vec<UserMessage>, JournalError> {
        let mut queues = self.queues();
        if queues.next_turn.is_empty() {
            return Ok(Vec::new());
        }
        self.journal.commit(Record::inbox_splice(
            InboxTarget::NextTurn,
            0,
            queues.next_turn.len(),
            Vec::new(),
        ))?;
        let claimed = std::mem::take(&mut queues.next_turn);
        self.report_claims(me, &claimed, turn);
        Ok(claimed)
    }

    /// Takes the next-turn message with this id for `turn`, if queued, as
    /// [`HostAgent::claim_next_turn`] does; other messages stay queued.
    pub(crate) fn claim_one(
        &self,
        me: &AgentHandle,
        message_id: &str,
        turn: u64,
    ) -> Result<Option<UserMessage>, JournalError> {
        let mut queues = self.queues();
        let Some(at) = queues.next_turn.iter().position(|m| m.id == message_id) else {
            return Ok(None);
        };
        self.journal.commit(Record::inbox_splice(
            InboxTarget::NextTurn,
            at,
            1,
            Vec::new(),
        ))?;
        let claimed = queues.next_turn.remove(at);
        self.report_claims(me, std::slice::from_ref(&claimed), turn);
        Ok(Some(claimed))
    }

    /// Takes the next-turn message with this id into a batch of records `records` builds from its
    /// place in the queue and the message (it must log the removal, at the batch's index
    /// `splice`): the batch is committed as one durable append, the claim reported to late
    /// answers right after the removal, all under the queue lock. `None` (nothing written) when
    /// no such message is queued.
    pub(crate) fn claim_one_in(
        &self,
        me: &AgentHandle,
        message_id: &str,
        turn: u64,
        records: impl FnOnce(usize, &UserMessage) -> (Vec<Record>, usize),
    ) -> Result<Option<UserMessage>, JournalError> {
        let mut queues = self.queues();
        let Some(at) = queues.next_turn.iter().position(|m| m.id == message_id) else {
            return Ok(None);
        };
        let (batch, splice) = records(at, &queues.next_turn[at]);
        let claim = HostEvent::InboxClaimed {
            agent: me.clone(),
            message: queues.next_turn[at].clone(),
            turn,
        };
        self.journal
            .commit_all(batch, &mut [(splice, Some(claim))])?;
        Ok(Some(queues.next_turn.remove(at)))
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
        self.journal.commit(Record::inbox_splice(
            InboxTarget::NextTurn,
            queues.next_turn.len(),
            0,
            vec![message.clone()],
        ))?;
        queues.next_turn.push(message);
        drop(queues);
        self.input.notify_one();
        Ok(())
    }
}

/// What a host restores from a log while the store opens it: the inbox as the logged
/// `agent/inbox/spliced` edits leave it, the last turn and the call ids, read from the typed events
/// of the open's own scan. It serialises (camelCase) so that a checkpoint can carry it and a host
/// reopening the log at that checkpoint reads only the lines after it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Restore {
    /// The next-turn queue.
    pub next_turn: Vec<UserMessage>,
    /// The next-step queue.
    pub next_step: Vec<UserMessage>,
    /// The highest `turn/start` turn seen.
    pub last_turn: u64,
    /// Every `tool/call` id the log holds, in log order (a call id is used once per log; one a
    /// log repeats anyway is listed each time).
    pub call_ids: Vec<CallId>,
    /// Inbox edits that could not be read (each a `tracing` warning); not carried by a checkpoint,
    /// which is not written past one.
    #[serde(skip)]
    pub unreadable_edits: u64,
}

impl Restore {
    fn splice(&mut self, target: InboxTarget, edit: SpliceEdit) {
        let queue = match target {
            InboxTarget::NextTurn => &mut self.next_turn,
            InboxTarget::NextStep => &mut self.next_step,
        };
        let start = usize::try_from(edit.start)
            .unwrap_or(usize::MAX)
            .min(queue.len());
        let removed = usize::try_from(edit.removed_count).unwrap_or(usize::MAX);
        let end = start.saturating_add(removed).min(queue.len());
        queue.splice(start..end, edit.inserted);
    }
}

impl LogVisitor for Restore {
    fn line(&mut self, line: &Scanned<'_>) {
        let Scanned::Record(record) = line else {
            return;
        };
        let Some(event) = record.record.event() else {
            return;
        };
        match &event.body {
            EventBody::InboxSpliced(splice) => {
                let target = splice.target.as_deref().and_then(InboxTarget::parse);
                match (target, splice.edit()) {
                    (Some(target), Some(edit)) => self.splice(target, edit),
                    // An edit of another queue is not ours to restore.
                    (None, Some(_)) => {}
                    (_, None) => {
                        self.unreadable_edits += 1;
                        tracing::warn!(
                            line = record.line,
                            "an inbox edit cannot be read; the inbox is restored without it"
                        );
                    }
                }
            }
            EventBody::TurnStart(start) => {
                if let Some(turn) = start.turn {
                    self.last_turn = self.last_turn.max(turn);
                }
            }
            EventBody::ToolCall(call) => {
                if let Some(call_id) = &call.call_id {
                    self.call_ids.push(call_id.clone());
                }
            }
            // Only inbox edits, turn starts and calls are restored.
            _ => {}
        }
    }
}
