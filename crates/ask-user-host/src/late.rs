//! The way back into a session: its late-reply facet ([`Host::late`]).
//!
//! A person's answer to a continued question is queued in the session's durable inbox
//! ([`LateReplies::queue`]); it reaches the model only once it is admitted (logged as
//! `user/message`), which settles the question. One reply is admitted in one of three places,
//! whichever comes first:
//!
//! * the next turn of an agent loop: [`Host::begin_turn`] claims what waits (when late replies
//!   reach the model as user messages, the tool's default route) and the turn's first step
//!   admits it;
//! * the current step, when the model asks for it (an MCP server's companion tool, whose turns
//!   claim nothing): [`LateReplies::take`];
//! * a turn of its own, when nothing runs a turn (a command, a desk, a worker):
//!   [`LateReplies::settle`].

use pending_answer::{LateRefusal, Queued, new_message_id};
use session_log::{InboxTarget, Record};
use user_questions::{AnswerBatch, CallId, Provenance, UserMessage};

use crate::host::{Host, HostError, OrderError};

/// A session's late replies: see the [module docs](self). Borrowed from its [`Host`].
#[derive(Clone, Copy)]
pub struct LateReplies<'a> {
    host: &'a Host,
}

impl std::fmt::Debug for LateReplies<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LateReplies")
            .field("session", &self.host.name())
            .field("waiting", &self.waiting().len())
            .finish()
    }
}

impl<'a> LateReplies<'a> {
    pub(crate) fn new(host: &'a Host) -> Self {
        Self { host }
    }

    /// Queues a person's answer to the continued call `call_id` (`LateAnswers::queue`, SPEC
    /// §4.8, with this session's agent): only the inbox edit is logged, and the reply waits in the
    /// durable inbox until it is admitted. Refused, with nothing kept, when the call is not
    /// continued, a reply for it is in flight, or the batch does not fit its questions.
    pub fn queue(
        &self,
        call_id: &CallId,
        answers: AnswerBatch,
        provenance: Provenance,
    ) -> Result<Queued, LateRefusal> {
        self.queue_as(call_id, answers, provenance, new_message_id())
    }

    /// [`queue`](Self::queue) under the message id `message_id` (an answer recorded elsewhere
    /// first, a ledger's, keeps its id in the log). The id must be new to the session.
    pub fn queue_as(
        &self,
        call_id: &CallId,
        answers: AnswerBatch,
        provenance: Provenance,
        message_id: String,
    ) -> Result<Queued, LateRefusal> {
        self.host.late_answers().queue_as(
            &self.host.agent(),
            call_id,
            answers,
            provenance,
            message_id,
        )
    }

    /// The late replies waiting in the inbox, in the order they were queued: queued here,
    /// restored from the log after a restart, or offered by a feed, and not admitted yet.
    pub fn waiting(&self) -> Vec<UserMessage> {
        self.host
            .host_agent()
            .next_turn()
            .into_iter()
            .filter(|message| message.reply_call_id().is_some())
            .collect()
    }

    /// The reply waiting for `call_id`, if there is one.
    pub fn waiting_for(&self, call_id: &CallId) -> Option<UserMessage> {
        self.waiting()
            .into_iter()
            .find(|message| pending_answer::is_reply_for(message, call_id))
    }

    /// Takes the reply waiting for `call_id` (with `None`, every waiting reply, in queue order)
    /// into the current step: the turn claims it and it is admitted, which settles its question.
    /// Returns what was admitted; nothing, with nothing written, when nothing waits (a reply
    /// another caller took meanwhile is skipped). A failure after some replies were admitted
    /// returns those (the rest stay waiting) and logs the error.
    ///
    /// # Errors
    ///
    /// [`HostError::Order`] outside a step; the log's error when nothing was admitted.
    pub fn take(&self, call_id: Option<&CallId>) -> Result<Vec<UserMessage>, HostError> {
        let turn = self
            .host
            .in_step("a late reply taken into the current step")?;
        let waiting: Vec<UserMessage> = match call_id {
            Some(call_id) => self.waiting_for(call_id).into_iter().collect(),
            None => self.waiting(),
        };
        let mut admitted = Vec::with_capacity(waiting.len());
        for queued in waiting {
            let taken = self
                .host
                .host_agent()
                .claim_one(&self.host.agent(), &queued.id, turn)
                .map_err(HostError::from)
                .and_then(|claimed| match claimed {
                    Some(message) => self.host.admit_claimed(&message).map(|()| Some(message)),
                    None => Ok(None),
                });
            match taken {
                Ok(Some(message)) => admitted.push(message),
                // Claimed by a concurrent caller of the same session: it admits that one.
                Ok(None) => {}
                Err(error) if !admitted.is_empty() => {
                    tracing::warn!(%error, "a late reply could not be admitted; it stays waiting");
                    break;
                }
                Err(error) => return Err(error),
            }
        }
        Ok(admitted)
    }

    /// Settles the reply waiting for `call_id` in a turn of its own, written as one durable
    /// batch: `turn/start`, the inbox claim, `step/start`, `user/message`, `step/end`,
    /// `turn/end` (`completed`). The projection and late answers see each event in log order;
    /// a failed append leaves none of them in the log. `None`, with nothing written, when no
    /// reply waits for the call. This is how a host that runs no turn (a command, a desk, a
    /// worker) settles a continued question it has an answer for.
    ///
    /// # Errors
    ///
    /// [`HostError::Order`] inside a turn (the reply would be admitted outside it); the log's
    /// error.
    pub fn settle(&self, call_id: &CallId) -> Result<Option<UserMessage>, HostError> {
        let Some(reply) = self.waiting_for(call_id) else {
            return Ok(None);
        };
        let turn = self
            .host
            .between_turns("a late reply settled in a turn of its own")?
            + 1;
        let claimed = self.host.host_agent().claim_one_in(
            &self.host.agent(),
            &reply.id,
            turn,
            |at, message| {
                let records = vec![
                    Record::turn_start(turn),
                    Record::inbox_splice(InboxTarget::NextTurn, at, 1, Vec::new()),
                    Record::step_start(turn, 1),
                    Record::UserMessage(message.clone()),
                    Record::step_end(turn, 1),
                    Record::turn_end(turn, "completed"),
                ];
                (records, 1)
            },
        )?;
        if claimed.is_some() {
            self.host.turn_written(turn);
        }
        Ok(claimed)
    }
}

impl From<OrderError> for HostError {
    fn from(error: OrderError) -> Self {
        Self::Order(error)
    }
}
