//! Late answers (SPEC §4.8, §4.9): accepting an answer to a continued question, at most one reply in
//! flight per call (reservations), and following the reply until it is admitted or dropped.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};

use user_questions::{
    AgentHandle, AgentId, AnswerBatch, AnswerPath, CallId, Provenance, QuestionEvent,
    QuestionEventKind, SessionRef, UserQuestionError, UserQuestions, WeakUserQuestions,
};
use user_questions_projection::{EventBody, Standing, TurnEnd, UserMessageEvent};

use crate::host::{HostEvent, ProjectionHost};
use crate::outcome::{LateRefusal, NotWaiting, Queued};
use crate::reply::{is_reply_for, new_message_id, reply_message};
use crate::util::{SessionSlot, lock, now_unix_ms, session_key};

/// The answerer named in a late `answered` event when the admitted reply's source carries no
/// provenance (a reply written by the reference, which never records it).
pub const UNKNOWN_ANSWERER: &str = "unknown";

/// Accepts late answers to continued questions and keeps the reservations that allow at most one
/// reply per call in flight (SPEC §4.8, §4.9).
///
/// Cheap to clone; clones share their reservations. It holds the seam only weakly, so it may be
/// kept by an answerer registered in that seam without keeping the seam alive; once every handle of
/// the seam is dropped, [`queue`](Self::queue) fails with `ASK_ABORTED`.
#[derive(Clone)]
pub struct LateAnswers {
    inner: Arc<Inner>,
}

struct Inner {
    seam: WeakUserQuestions,
    projections: Option<Arc<dyn ProjectionHost>>,
    reservations: Mutex<Reservations>,
}

/// A reply for a call that is queued or claimed but not yet admitted (SPEC §4.9).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reservation {
    /// The id of the reply message that holds the reservation.
    pub message_id: String,
    /// The turn that claimed the reply, once one has.
    pub claimed_turn: Option<u64>,
}

/// Reservations per live session instance (by pointer, with a `Weak`, SPEC §0.3), per call id.
#[derive(Default)]
struct Reservations {
    sessions: HashMap<usize, SessionReservations>,
}

struct SessionReservations {
    slot: SessionSlot,
    calls: HashMap<CallId, Entry>,
}

struct Entry {
    reservation: Reservation,
    /// The agent that answered or claimed, named in the late `answered` event.
    agent_id: AgentId,
}

impl Reservations {
    /// Drops the reservations of dropped session instances, and empty session maps.
    fn purge(&mut self) {
        self.sessions
            .retain(|_, entry| entry.slot.is_live() && !entry.calls.is_empty());
    }

    fn calls(&mut self, session: &SessionRef) -> Option<&mut HashMap<CallId, Entry>> {
        self.purge();
        self.sessions
            .get_mut(&session_key(session))
            .filter(|entry| entry.slot.is(session))
            .map(|entry| &mut entry.calls)
    }

    fn calls_or_new(&mut self, session: &SessionRef) -> &mut HashMap<CallId, Entry> {
        self.purge();
        &mut self
            .sessions
            .entry(session_key(session))
            .or_insert_with(|| SessionReservations {
                slot: SessionSlot::new(session),
                calls: HashMap::new(),
            })
            .calls
    }

    fn get(&mut self, session: &SessionRef, call_id: &CallId) -> Option<&Entry> {
        self.calls(session).and_then(|calls| calls.get(call_id))
    }

    /// Removes the reservation of `call_id` if it is held by `message_id`.
    fn release_if(
        &mut self,
        session: &SessionRef,
        call_id: &CallId,
        message_id: &str,
    ) -> Option<Entry> {
        let calls = self.calls(session)?;
        if calls.get(call_id)?.reservation.message_id != message_id {
            return None;
        }
        calls.remove(call_id)
    }
}

impl LateAnswers {
    /// Late answers for `seam`: they share its registry (identity checks), its answer limits
    /// (§9.2) and its event stream (§9.4). Without a projection host, every
    /// [`queue`](Self::queue) is refused as not waiting.
    pub fn new(seam: &UserQuestions, projections: Option<Arc<dyn ProjectionHost>>) -> Self {
        Self {
            inner: Arc::new(Inner {
                seam: seam.downgrade(),
                projections,
                reservations: Mutex::new(Reservations::default()),
            }),
        }
    }

    /// Queues a late answer to the continued call `call_id` of `agent`'s session as a follow-up
    /// user message (SPEC §4.8, in this order):
    ///
    /// 1. identity check ([`LateRefusal::NotLive`]: `CALLER_NOT_LIVE`, `DELEGATED_CALLER`);
    /// 2. [`LateRefusal::NotWaiting`], with no side effect, unless the call is `continued` in the
    ///    projection state of `agent.session()` (its [`Standing`]), with the reason: open (its
    ///    window runs), closing (its window closed and its pending result is not committed yet:
    ///    [`when_continued`](crate::when_continued) waits for it), settled, or unknown (also a
    ///    legacy call, or a host without projections);
    /// 3. [`LateRefusal::ReplyQueued`] (with the id of the reply in flight) when a reply for the
    ///    call is reserved or sits in the agent's queues — checked before the batch;
    /// 4. [`LateRefusal::BadAnswer`] unless the batch fits the stored questions (§9.2);
    /// 5. the reply message (§6) is built with a fresh UUID v4 id;
    /// 6. the reservation is checked and inserted under one lock (`REPLY_QUEUED` if another call
    ///    reserved since step 3);
    /// 7. the message is delivered with `agent.followup`, holding no lock; a delivery error drops
    ///    the reservation (if it still holds this message) and is returned as
    ///    [`LateRefusal::Undelivered`];
    /// 8. [`Queued`] with the reply's message id: the question stays continued until the agent
    ///    admits it.
    ///
    /// Synchronous: no host call is made while a lock of this type is held.
    // SPEC §4.2 fixes the by-value batch: the caller hands the batch over, and the normalised copy
    // is what travels on.
    #[allow(clippy::needless_pass_by_value)]
    pub fn queue(
        &self,
        agent: &AgentHandle,
        call_id: &CallId,
        batch: AnswerBatch,
        origin: Provenance,
    ) -> Result<Queued, LateRefusal> {
        self.queue_as(agent, call_id, batch, origin, new_message_id())
    }

    /// SPEC §4.2's name for [`queue`](Self::queue) (`LateAnswers::answer(agent, call_id, batch,
    /// origin)`): the same call.
    #[allow(clippy::needless_pass_by_value)]
    pub fn answer(
        &self,
        agent: &AgentHandle,
        call_id: &CallId,
        batch: AnswerBatch,
        origin: Provenance,
    ) -> Result<Queued, LateRefusal> {
        self.queue(agent, call_id, batch, origin)
    }

    /// [`queue`](Self::queue) with the reply's message id given by the caller instead of a
    /// fresh one (step 5): a host that records answers elsewhere first (a database ledger) uses
    /// that answer's id, so the admitted `user/message` names the answer it admits. The id must
    /// be new to the session.
    #[allow(clippy::needless_pass_by_value)]
    pub fn queue_as(
        &self,
        agent: &AgentHandle,
        call_id: &CallId,
        batch: AnswerBatch,
        origin: Provenance,
        message_id: String,
    ) -> Result<Queued, LateRefusal> {
        let Some(seam) = self.inner.seam.upgrade() else {
            return Err(LateRefusal::NotLive(UserQuestionError::ask_aborted()));
        };
        // Step 1.
        seam.check_caller(agent).map_err(LateRefusal::NotLive)?;
        // Step 2.
        let session = agent.session();
        let state = self
            .inner
            .projections
            .as_ref()
            .and_then(|projections| projections.user_questions(&session));
        let Some(state) = state else {
            return Err(LateRefusal::NotWaiting(NotWaiting::Unknown));
        };
        let entry = match state.standing(call_id) {
            Standing::Continued(entry) => entry,
            // Open in the log, with no window open in the seam: the window of a timed call closed
            // and its pending result is on its way to the log.
            Standing::Open(_) if state.timed() && !seam.is_waiting(agent, call_id) => {
                return Err(LateRefusal::NotWaiting(NotWaiting::Closing));
            }
            Standing::Open(_) => return Err(LateRefusal::NotWaiting(NotWaiting::Open)),
            Standing::Settled(_) => return Err(LateRefusal::NotWaiting(NotWaiting::Settled)),
            Standing::Unknown => return Err(LateRefusal::NotWaiting(NotWaiting::Unknown)),
        };
        // Step 3: our reservations first (our lock, released at once), then the agent's queues
        // (a host call, made without our lock).
        let reserved = lock(&self.inner.reservations)
            .get(&session, call_id)
            .map(|entry| entry.reservation.message_id.clone());
        let in_flight = reserved.or_else(|| {
            agent
                .queued_messages()
                .into_iter()
                .find(|message| is_reply_for(message, call_id))
                .map(|message| message.id)
        });
        if let Some(message_id) = in_flight {
            return Err(LateRefusal::ReplyQueued {
                call_id: call_id.clone(),
                message_id: Some(message_id),
                settled_by: None,
            });
        }
        // Step 4.
        let answers = seam
            .validate_answers(&entry.questions, &batch, Some(call_id))
            .map_err(LateRefusal::BadAnswer)?;
        // Step 5.
        let message = reply_message(
            message_id.clone(),
            call_id,
            &entry.questions,
            &answers,
            Some(origin),
        );
        // Step 6: check and insert in one critical section.
        {
            let mut reservations = lock(&self.inner.reservations);
            let calls = reservations.calls_or_new(&session);
            if let Some(held) = calls.get(call_id) {
                return Err(LateRefusal::ReplyQueued {
                    call_id: call_id.clone(),
                    message_id: Some(held.reservation.message_id.clone()),
                    settled_by: None,
                });
            }
            calls.insert(
                call_id.clone(),
                Entry {
                    reservation: Reservation {
                        message_id: message_id.clone(),
                        claimed_turn: None,
                    },
                    agent_id: agent.id().clone(),
                },
            );
        }
        tracing::debug!(call_id = %call_id, message_id = %message_id, "late reply reserved");
        // Step 7.
        if let Err(error) = agent.followup(message) {
            lock(&self.inner.reservations).release_if(&session, call_id, &message_id);
            tracing::debug!(call_id = %call_id, message_id = %message_id, %error, "late reply not delivered; reservation released");
            return Err(LateRefusal::Undelivered(error));
        }
        // Step 8.
        Ok(Queued {
            call_id: call_id.clone(),
            message_id,
        })
    }

    /// Updates the reservations from a host event (SPEC §4.9):
    ///
    /// | event | effect |
    /// |---|---|
    /// | `InboxClaimed` of a reply for X | no reservation for X: create one for this message, claimed in `turn` (a reply restored after a restart); same message: record the turn; another message: ignored |
    /// | `InboxDiscarded` of a reply for X | release X if this message holds it |
    /// | `Committed` `user/message` with a reply source for X | release X if this message holds it (admitted); then emit `answered` with path `late` |
    /// | `Committed` `turn/end {turn}` | release every reservation claimed in that turn |
    /// | anything else | nothing |
    ///
    /// Events of other session instances touch only their own reservations.
    pub fn on_host_event(&self, event: &HostEvent) {
        match event {
            HostEvent::InboxClaimed {
                agent,
                message,
                turn,
            } => {
                let Some(call_id) = message.reply_call_id() else {
                    return;
                };
                // Host calls before taking our lock.
                let session = agent.session();
                let agent_id = agent.id().clone();
                let mut reservations = lock(&self.inner.reservations);
                let calls = reservations.calls_or_new(&session);
                match calls.get_mut(call_id) {
                    None => {
                        calls.insert(
                            call_id.clone(),
                            Entry {
                                reservation: Reservation {
                                    message_id: message.id.clone(),
                                    claimed_turn: Some(*turn),
                                },
                                agent_id,
                            },
                        );
                        tracing::debug!(call_id = %call_id, message_id = %message.id, turn, "late reply re-reserved on claim");
                    }
                    Some(entry) if entry.reservation.message_id == message.id => {
                        entry.reservation.claimed_turn = Some(*turn);
                    }
                    Some(_) => {
                        tracing::debug!(call_id = %call_id, message_id = %message.id, "claim of another reply for a reserved call ignored");
                    }
                }
            }
            HostEvent::InboxDiscarded { agent, message } => {
                let Some(call_id) = message.reply_call_id() else {
                    return;
                };
                let session = agent.session();
                if lock(&self.inner.reservations)
                    .release_if(&session, call_id, &message.id)
                    .is_some()
                {
                    tracing::debug!(call_id = %call_id, message_id = %message.id, "discarded late reply released");
                }
            }
            HostEvent::Committed { session, event } => match &event.body {
                EventBody::UserMessage(message) => self.admitted(session, message),
                EventBody::TurnEnd(TurnEnd { turn: Some(turn) }) => {
                    let mut reservations = lock(&self.inner.reservations);
                    if let Some(calls) = reservations.calls(session) {
                        calls.retain(|call_id, entry| {
                            let keep = entry.reservation.claimed_turn != Some(*turn);
                            if !keep {
                                tracing::debug!(call_id = %call_id, message_id = %entry.reservation.message_id, turn, "turn ended without admitting the late reply; released");
                            }
                            keep
                        });
                    }
                }
                EventBody::ToolResult(result) => {
                    if let Some(call_id) = &result.call_id {
                        self.continued_if(session, call_id);
                    }
                }
                EventBody::Dispatch(dispatch) => {
                    if let Some(call_id) = &dispatch.sub_call_id {
                        self.continued_if(session, call_id);
                    }
                }
                // Nothing else moves a reply or continues a call.
                _ => {}
            },
        }
    }

    /// Announces that `call_id` of `session` is continued (SPEC §9.4 `continued`), if the
    /// projection says so: the host calls it for calls that a resumed session's repair continued
    /// before its journal ran; [`on_host_event`](Self::on_host_event) calls it for every
    /// committed result. Returns whether it was announced.
    pub fn announce_continued(&self, session: &SessionRef, call_id: &CallId) -> bool {
        self.continued_if(session, call_id)
    }

    /// Publishes `continued` for `call_id` when the projection shows it continued. The host
    /// applies a committed event to the projection before it reports it (the journal does), so a
    /// pending result that was just committed is seen here.
    fn continued_if(&self, session: &SessionRef, call_id: &CallId) -> bool {
        let continued = self
            .inner
            .projections
            .as_ref()
            .is_some_and(|projections| projections.is_continued(session, call_id));
        if !continued {
            return false;
        }
        let Some(seam) = self.inner.seam.upgrade() else {
            return false;
        };
        seam.publish(QuestionEvent {
            ask_id: None,
            call_id: Some(call_id.clone()),
            agent_id: None,
            session_id: Some(session.id().clone()),
            at_ms: now_unix_ms(),
            kind: QuestionEventKind::Continued,
        });
        true
    }

    /// The reservation of `call_id` in the live session instance `session`, if a reply for it is
    /// queued or claimed and not yet admitted. For surfaces that show "reply queued".
    pub fn reservation(&self, session: &SessionRef, call_id: &CallId) -> Option<Reservation> {
        lock(&self.inner.reservations)
            .get(session, call_id)
            .map(|entry| entry.reservation.clone())
    }

    /// The number of live session instances that hold at least one reservation, i.e. that have a
    /// late reply queued or claimed and not yet admitted (SPEC §4.9). A dropped session instance is
    /// never counted: its reservations go with it.
    ///
    /// A host exports it as a metric (sessions with a late reply in flight), or checks it for
    /// leaks: it falls back to 0 once every reply is admitted or released, or its session dropped.
    pub fn reserved_sessions(&self) -> usize {
        let mut reservations = lock(&self.inner.reservations);
        reservations.purge();
        reservations.sessions.len()
    }

    /// An admitted reply: release its reservation if it holds it, and report the late answer.
    fn admitted(&self, session: &SessionRef, message: &UserMessageEvent) {
        let (Some(call_id), Some(message_id)) = (message.reply_call_id(), message.id.as_deref())
        else {
            return;
        };
        let released = lock(&self.inner.reservations).release_if(session, call_id, message_id);
        let Some(entry) = released else {
            return;
        };
        tracing::debug!(call_id = %call_id, message_id, "late reply admitted");
        let Some(seam) = self.inner.seam.upgrade() else {
            return;
        };
        let provenance = message
            .source
            .as_ref()
            .and_then(|source| source.provenance.clone())
            .unwrap_or_else(|| Provenance::human(UNKNOWN_ANSWERER));
        seam.publish(QuestionEvent {
            ask_id: None,
            call_id: Some(call_id.clone()),
            agent_id: Some(entry.agent_id),
            session_id: Some(session.id().clone()),
            at_ms: now_unix_ms(),
            kind: QuestionEventKind::Answered {
                path: AnswerPath::Late,
                provenance,
            },
        });
    }
}

impl fmt::Debug for LateAnswers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LateAnswers")
            .field("projections", &self.inner.projections.is_some())
            .field("reserved_sessions", &self.reserved_sessions())
            .finish_non_exhaustive()
    }
}
