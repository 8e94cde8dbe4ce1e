//! The shared state of the surface, one idea a room:
//!
//! * [`card`]: the cards on show (this surface's own, in their window or continued) and the one
//!   view of a card the pages receive ([`card::CardView`]), for its own cards and the desk's;
//! * [`clients`]: the pages (clients) looking, with their claims and holds;
//! * [`post`]: an answer a page posts, to the waiting answerer in the window, else to the desk;
//! * [`follow`]: following the seam's lifecycle events and the desk's changes, and the listings
//!   pages are sent.
//!
//! Claims are connections: every client with an open event stream (or inside its reconnect
//! grace) holds one [`WaitClaim`](user_questions::WaitClaim) on each open timed card; a hold
//! (`POST …/hold`) is a second claim of that client that outlives its streams.

mod card;
mod clients;
mod follow;
mod post;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex, Weak};

use pending_answer::LateRefusal;
use pending_answer::QuestionDesk;
use serde::Serialize;
use tokio::sync::broadcast;
use user_questions::{
    CallId, Question, UserQuestionError, UserQuestions, WaitClaim, WeakUserQuestions,
};

use crate::sessions::{CardKey, WebOptions};

pub(crate) use card::Card;
use card::TimeLeft;
pub(crate) use clients::{Client, ConnectRefused, StreamGuard};
pub(crate) use post::{AnswerPath, Via};

// Every critical section leaves the state consistent before it can panic, so the data behind a
// poisoned lock is still valid.
use user_questions::sync::lock_unpoisoned as lock;

#[derive(Default)]
pub(crate) struct State {
    next_order: u64,
    cards: BTreeMap<CardKey, Card>,
    clients: HashMap<String, Client>,
    /// Continued questions this surface submitted a late answer for: shown as "sent" until the
    /// sessions stop listing them (the agent admitted the reply).
    queued: HashSet<CardKey>,
}

/// One event for every open stream: the SSE event name and its JSON data.
#[derive(Clone, Debug)]
pub(crate) struct Push {
    pub(crate) name: &'static str,
    pub(crate) data: String,
}

pub(crate) struct Hub {
    seam: WeakUserQuestions,
    desk: Option<Arc<dyn QuestionDesk>>,
    pub(crate) options: WebOptions,
    state: Mutex<State>,
    push: broadcast::Sender<Push>,
    weak: Weak<Hub>,
}

impl Hub {
    /// A hub for `seam` (held weakly) and `desk`, following the seam's events and the desk's
    /// changes on tasks of its own.
    pub(crate) fn new(
        seam: &UserQuestions,
        desk: Option<Arc<dyn QuestionDesk>>,
        options: WebOptions,
    ) -> Arc<Self> {
        let (push, _) = broadcast::channel(256);
        let hub = Arc::new_cyclic(|weak| Self {
            seam: seam.downgrade(),
            desk,
            options,
            state: Mutex::new(State::default()),
            push,
            weak: weak.clone(),
        });
        follow::start(&hub, seam);
        hub
    }

    fn publish(&self, name: &'static str, data: &impl Serialize) {
        let data = serde_json::to_string(data).unwrap_or_default();
        // No receiver is fine: nobody is looking.
        let _ = self.push.send(Push { name, data });
    }

    pub(crate) fn subscribe(&self) -> broadcast::Receiver<Push> {
        self.push.subscribe()
    }

    /// Where `session` runs, as the desk says.
    fn label(&self, session: &str) -> Option<String> {
        self.desk.as_ref().and_then(|desk| desk.label(session))
    }

    /// How a card's time left is told: from its own window's claim, or, with the windows kept
    /// elsewhere, as the desk knows it (asked before the hub's lock is taken).
    fn time_left(&self, key: &CardKey) -> TimeLeft {
        if self.options.countdowns {
            TimeLeft::Own
        } else {
            TimeLeft::Elsewhere(
                (self.desk.as_ref()).and_then(|desk| desk.window_left(&key.session, &key.call_id)),
            )
        }
    }

    /// The questions of the card of `call_id` in `session`.
    pub(crate) fn questions(&self, session: &str, call_id: &CallId) -> Option<Vec<Question>> {
        self.card_questions(session, call_id).map(|(q, _)| q)
    }

    /// The questions of the card of `call_id` in `session`, and which card it is (a call asked
    /// again is a new card).
    pub(crate) fn card_questions(
        &self,
        session: &str,
        call_id: &CallId,
    ) -> Option<(Vec<Question>, u64)> {
        let state = lock(&self.state);
        state
            .cards
            .get(&CardKey {
                session: session.to_owned(),
                call_id: call_id.clone(),
            })
            .map(|card| (card.questions.clone(), card.order))
    }
}

/// Why an answer from a page was not taken. The route turns it into a status and JSON.
#[derive(Debug)]
pub(crate) enum AnswerRefused {
    /// No card of that call is waiting for an answer.
    NotWaiting,
    /// The batch does not fit the questions (`BAD_ANSWER`), or another typed refusal.
    Rejected(UserQuestionError),
    /// The host could not deliver a late reply; the same answer may be sent again.
    Undelivered(String),
    /// Two sessions have a card of this call: the request must name its session.
    Ambiguous,
    /// A hold from a page that has no event stream open.
    NotLooking,
}

impl From<LateRefusal> for AnswerRefused {
    fn from(refusal: LateRefusal) -> Self {
        match refusal {
            LateRefusal::NotWaiting(_) | LateRefusal::NoAgent | LateRefusal::UnknownSession(_) => {
                Self::NotWaiting
            }
            LateRefusal::ReplyQueued { call_id, .. } => {
                Self::Rejected(UserQuestionError::reply_queued(&call_id))
            }
            LateRefusal::BadAnswer(error) | LateRefusal::NotLive(error) => Self::Rejected(error),
            LateRefusal::Undelivered(error) => Self::Undelivered(error.to_string()),
            LateRefusal::Unavailable(error) => Self::Undelivered(error.to_string()),
        }
    }
}

impl State {
    /// Takes every claim and hold on `key` from every client, and forgets the clients that are
    /// left with nothing (no stream, no grace, no claim, no hold).
    fn take_claims_on(&mut self, key: &CardKey) -> Vec<WaitClaim> {
        let mut taken = Vec::new();
        self.clients.retain(|_, client| {
            taken.extend(client.release(key));
            !client.idle()
        });
        taken
    }
}
