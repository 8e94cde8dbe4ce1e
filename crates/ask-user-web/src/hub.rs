//! The shared state of the surface: the cards on show, the clients (pages) looking at them with
//! their claims, and the events every open stream receives.
//!
//! Claims are connections: every client with an open event stream (or inside its reconnect
//! grace) holds one [`WaitClaim`] on each open timed card; a hold (`POST …/hold`) is a second
//! claim of that client that outlives its streams. A client's claims go when its last stream has
//! been gone for the grace, when it says goodbye (`POST /clients/{id}/bye`, sent on `pagehide`),
//! or when the card leaves the foreground; holds go with the goodbye or the card.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use pending_answer::{DeskQuestion, DeskState, LateRefusal, QuestionDesk};
use serde_json::{Value, json};
use tokio::sync::{Notify, broadcast, oneshot};
use tokio::task::AbortHandle;
use tokio::time::Instant;
use user_questions::{
    AgentHandle, AnswerBatch, AnswerRequest, CallId, Provenance, Question, QuestionEventKind,
    Received, UserQuestionError, UserQuestions, WaitClaim, WaitKey, WeakUserQuestions,
};

use crate::sessions::{CardKey, WebOptions};

/// The most clients (pages) one surface serves at once.
pub(crate) const MAX_CLIENTS: usize = 64;
/// The most event streams one client keeps open at once.
pub(crate) const MAX_STREAMS_PER_CLIENT: u32 = 4;
/// The longest an answer that came as a window closed waits for the host to announce the call
/// continued (its pending result durable). The announcement normally follows within
/// milliseconds; a host whose log failed never makes it, and the answer is then refused.
const CONTINUED_WITHIN: Duration = Duration::from_secs(10);

// Every critical section leaves the state consistent before it can panic, so the data behind a
// poisoned lock is still valid.
use user_questions::sync::lock_unpoisoned as lock;

/// An answer from a page for a card in its foreground window, with the acknowledgement the
/// answerer sends once the answer is the one it returns.
pub(crate) struct Submitted {
    pub(crate) batch: AnswerBatch,
    /// The provenance name, when it is not the surface's registration name (a button's).
    pub(crate) answerer: Option<String>,
    pub(crate) ack: oneshot::Sender<()>,
}

/// The `settled` event: `by` names the answerer, `answered` says where in words
/// ([`Provenance::described`]: "on the page", "at the terminal", …).
fn settled_data(key: &CardKey, by: &Provenance) -> Value {
    json!({"session": key.session, "callId": key.call_id, "by": by.answerer, "answered": by.described()})
}

/// How an answer reached the surface.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Via {
    /// A page's form.
    Page,
    /// A notification's one-time answer button: its provenance name is the surface's with
    /// [`BUTTON_SUFFIX`](user_questions::surface_names::BUTTON_SUFFIX), so a card elsewhere can say
    /// a phone answered.
    Button,
}

struct Card {
    order: u64,
    /// When the card opened (wall-clock Unix ms): its age on the page.
    asked_at_ms: i64,
    questions: Vec<Question>,
    agent: Option<AgentHandle>,
    phase: Phase,
}

enum Phase {
    /// In its foreground window: the answerer waits for `answer`.
    Open {
        timed: bool,
        keyed: bool,
        answer: Option<oneshot::Sender<Submitted>>,
        deadline: Option<Instant>,
    },
    /// The window closed with the question pending. `durable` once the host announced the call
    /// continued (its pending result is in the log): only then does it take a late answer, so
    /// an answer that comes before waits for the announcement.
    Continued { durable: bool },
}

#[derive(Default)]
struct Client {
    streams: u32,
    /// The page said goodbye: it is not looking, whatever its streams still do, until it
    /// connects again (restored from the back/forward cache).
    gone: bool,
    /// Bumped on every connect and goodbye, so a grace timer of an older disconnect does nothing.
    generation: u64,
    grace: Option<AbortHandle>,
    claims: HashMap<CardKey, WaitClaim>,
    holds: HashMap<CardKey, WaitClaim>,
}

impl Client {
    fn looking(&self) -> bool {
        !self.gone && (self.streams > 0 || self.grace.is_some())
    }
}

#[derive(Default)]
struct State {
    next_order: u64,
    cards: BTreeMap<CardKey, Card>,
    clients: HashMap<String, Client>,
    /// Continued questions this surface submitted a late answer for: shown as "sent" until the
    /// sessions stop listing them (the agent admitted the reply).
    queued: HashSet<CardKey>,
    /// Where each session runs, shown beside its cards.
    labels: HashMap<String, String>,
}

/// One event for every open stream: the SSE event name and its JSON data.
#[derive(Clone, Debug)]
pub(crate) struct Push {
    pub(crate) name: &'static str,
    pub(crate) data: String,
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

/// Where an accepted answer went.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum AnswerPath {
    Foreground,
    Late,
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

/// Where an answer from a page goes.
enum Target {
    /// To the answerer waiting in the card's window.
    Foreground(CardKey, oneshot::Sender<Submitted>, AnswerBatch),
    /// To the desk, as a late answer (or an answer to a question open elsewhere), once the card
    /// is durable.
    Late { key: CardKey, batch: AnswerBatch },
}

/// Why a client could not open a stream.
#[derive(Debug)]
pub(crate) enum ConnectRefused {
    TooManyClients,
    TooManyStreams,
}

pub(crate) struct Hub {
    seam: WeakUserQuestions,
    desk: Option<Arc<dyn QuestionDesk>>,
    pub(crate) options: WebOptions,
    state: Mutex<State>,
    push: broadcast::Sender<Push>,
    /// Woken whenever a card turns durable or goes: answers waiting for a continuation look
    /// again.
    changed: Notify,
    weak: Weak<Hub>,
}

impl Hub {
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
            changed: Notify::new(),
            weak: weak.clone(),
        });
        tokio::spawn(follow_seam(Arc::downgrade(&hub), seam.subscribe()));
        hub
    }

    fn publish(&self, name: &'static str, data: &Value) {
        // No receiver is fine: nobody is looking.
        let _ = self.push.send(Push {
            name,
            data: data.to_string(),
        });
    }

    pub(crate) fn subscribe(&self) -> broadcast::Receiver<Push> {
        self.push.subscribe()
    }

    // ----- the answerer's side -----

    /// Shows the request's questions as a card and claims its wait for every client looking.
    pub(crate) fn open_card(
        &self,
        request: &AnswerRequest,
    ) -> (CardKey, oneshot::Receiver<Submitted>) {
        let session = request
            .agent
            .as_ref()
            .map(|a| a.session().id().as_str().to_owned())
            .unwrap_or_default();
        let (timed, keyed, call_id) = match &request.wait {
            Some(WaitKey::Timed { call_id, .. }) => (true, true, call_id.clone()),
            Some(WaitKey::Indefinite { call_id }) => (false, true, call_id.clone()),
            None => (
                false,
                false,
                CallId::from(format!("web-{}", next_card_id())),
            ),
        };
        let key = CardKey { session, call_id };
        let (tx, rx) = oneshot::channel();
        {
            let mut state = lock(&self.state);
            state.next_order += 1;
            let order = state.next_order;
            // A card of the same call (a request asked again) is replaced; its answerer's channel
            // closes with it.
            state.cards.insert(
                key.clone(),
                Card {
                    order,
                    asked_at_ms: user_questions::now_unix_ms(),
                    questions: request.questions.clone(),
                    agent: request.agent.clone(),
                    phase: Phase::Open {
                        timed,
                        keyed,
                        answer: Some(tx),
                        deadline: None,
                    },
                },
            );
            state.queued.remove(&key);
        }
        if timed {
            self.claim_for_lookers(&key);
        }
        let data = {
            let state = lock(&self.state);
            state
                .cards
                .get(&key)
                .map(|card| self.card_json(&state, &key, card, false, Instant::now()))
        };
        if let Some(data) = data {
            self.publish("card", &data);
        }
        (key, rx)
    }

    /// Claims `key`'s wait for every client looking that has no claim on it yet. The claims are
    /// taken outside the hub's lock (attaching runs the host's identity check, SPEC §4.11: no
    /// lock across a host call) and kept only if the card and the client are still there.
    fn claim_for_lookers(&self, key: &CardKey) {
        let Some(seam) = self.seam.upgrade() else {
            return;
        };
        let (agent, wanting) = {
            let state = lock(&self.state);
            let Some(Card {
                phase: Phase::Open { timed: true, .. },
                agent: Some(agent),
                ..
            }) = state.cards.get(key)
            else {
                return;
            };
            let wanting: Vec<String> = state
                .clients
                .iter()
                .filter(|(_, c)| c.looking() && !c.claims.contains_key(key))
                .map(|(id, _)| id.clone())
                .collect();
            (agent.clone(), wanting)
        };
        let mut claims = Vec::new();
        for id in wanting {
            match seam.attach_wait(&agent, &key.call_id) {
                Ok(Some(claim)) => claims.push((id, claim)),
                Ok(None) => break,
                Err(error) => {
                    tracing::warn!(%error, call_id = %key.call_id, "cannot claim the timed wait");
                    break;
                }
            }
        }
        let mut unused = Vec::new();
        {
            let mut state = lock(&self.state);
            let State { cards, clients, .. } = &mut *state;
            if let Some(Card {
                phase:
                    Phase::Open {
                        timed: true,
                        deadline,
                        ..
                    },
                ..
            }) = cards.get_mut(key)
            {
                for (id, claim) in claims {
                    match clients
                        .get_mut(&id)
                        .filter(|c| c.looking() && !c.claims.contains_key(key))
                    {
                        Some(client) => {
                            deadline.get_or_insert_with(|| {
                                Instant::now() + Duration::from_millis(claim.remaining_ms())
                            });
                            client.claims.insert(key.clone(), claim);
                        }
                        None => unused.push(claim),
                    }
                }
            } else {
                unused.extend(claims.into_iter().map(|(_, claim)| claim));
            }
        }
        drop(unused);
    }

    /// The answerer stopped waiting: its answer, another answerer's, or an error ended the
    /// request (`by` says who answered; `None` for an error).
    pub(crate) fn foreground_over(&self, key: &CardKey, by: Option<&Provenance>) {
        let data = match by {
            Some(by) => settled_data(key, by),
            None => json!({"session": key.session, "callId": key.call_id}),
        };
        let Some(claims) = self.remove_open(key) else {
            return;
        };
        self.changed.notify_waiters();
        if by.is_some() && !claims.is_empty() {
            // SPEC §4.7: claims are kept until the seam has taken the outcome (the wait ends),
            // so an overdue window cannot close between the answer and the seam.
            tokio::spawn(async move {
                for claim in &claims {
                    claim.ended().await;
                }
                drop(claims);
            });
        }
        self.publish(if by.is_some() { "settled" } else { "expired" }, &data);
    }

    /// The answerer's future went away without an outcome of its own (the request was cancelled
    /// or its window closed): an unkeyed card goes at once; a keyed one waits for the seam's event
    /// (pending or cancelled), with its answer channel closed.
    pub(crate) fn foreground_dropped(&self, key: &CardKey) {
        let keyed = {
            let mut state = lock(&self.state);
            match state.cards.get_mut(key) {
                Some(Card {
                    phase: Phase::Open { keyed, answer, .. },
                    ..
                }) => {
                    answer.take();
                    *keyed
                }
                _ => return,
            }
        };
        if !keyed {
            self.foreground_over(key, None);
        }
    }

    /// Removes an open card and takes every claim on it (to drop outside the lock); `None` if
    /// it was not open.
    fn remove_open(&self, key: &CardKey) -> Option<Vec<WaitClaim>> {
        let mut state = lock(&self.state);
        let open = matches!(
            state.cards.get(key),
            Some(Card {
                phase: Phase::Open { .. },
                ..
            })
        );
        if !open {
            return None;
        }
        state.cards.remove(key);
        Some(take_claims_on(&mut state, key))
    }

    // ----- the seam's events -----

    fn on_seam_event(&self, call_id: &CallId, session: &str, kind: &QuestionEventKind) {
        let key = CardKey {
            session: session.to_owned(),
            call_id: call_id.clone(),
        };
        match kind {
            QuestionEventKind::Pending => self.went_pending(&key),
            QuestionEventKind::Continued => self.continued(&key),
            QuestionEventKind::Answered { provenance, .. } => {
                {
                    let mut state = lock(&self.state);
                    state.queued.remove(&key);
                    state.cards.remove(&key);
                }
                self.drop_claims_on(&key);
                self.changed.notify_waiters();
                self.publish("settled", &settled_data(&key, provenance));
            }
            QuestionEventKind::Cancelled { .. } => self.foreground_over(&key, None),
            QuestionEventKind::Opened { .. } | QuestionEventKind::Claimed { .. } => {}
        }
    }

    fn drop_claims_on(&self, key: &CardKey) {
        let released = take_claims_on(&mut lock(&self.state), key);
        drop(released);
    }

    /// The window closed with the question pending: with a desk to answer it late, the card
    /// stays as a continued question (taking answers once the host announces it continued);
    /// without, it goes.
    fn went_pending(&self, key: &CardKey) {
        self.turn_continued(key, false);
    }

    /// The host announced the call continued: its card (if this surface shows one) takes late
    /// answers now, and answers that came as the window closed go out.
    fn continued(&self, key: &CardKey) {
        self.turn_continued(key, true);
    }

    fn turn_continued(&self, key: &CardKey, durable: bool) {
        if self.desk.is_none() {
            self.foreground_over(key, None);
            return;
        }
        // One critical section: no page can claim the card between its claims going and its
        // turning continued.
        let (data, released) = {
            let mut state = lock(&self.state);
            let Some(card) = state.cards.get_mut(key) else {
                return;
            };
            let was_open = matches!(card.phase, Phase::Open { .. });
            card.phase = Phase::Continued { durable };
            let data = was_open
                .then(|| {
                    state
                        .cards
                        .get(key)
                        .map(|card| self.card_json(&state, key, card, false, Instant::now()))
                })
                .flatten();
            (data, take_claims_on(&mut state, key))
        };
        drop(released);
        self.changed.notify_waiters();
        if let Some(data) = data {
            self.publish("card", &data);
        }
    }

    /// Events were lost: open cards whose answerer is gone are over, one way or the other; the
    /// desk knows whether they went pending, and the next snapshot shows what is left.
    async fn resync(&self) {
        let gone: Vec<CardKey> = {
            let state = lock(&self.state);
            state
                .cards
                .iter()
                .filter(|(_, card)| {
                    matches!(
                        card.phase,
                        Phase::Open { answer: None, .. } | Phase::Continued { durable: false }
                    )
                })
                .map(|(key, _)| key.clone())
                .collect()
        };
        let continued: HashSet<CardKey> = self
            .listed()
            .await
            .iter()
            .filter(|q| q.state == DeskState::Continued)
            .map(desk_key)
            .collect();
        for key in gone {
            if continued.contains(&key) {
                self.continued(&key);
            } else {
                // A card whose pending result is not logged yet stays: its announcement (or the
                // bound of an answer waiting for it) decides.
                self.foreground_over(&key, None);
            }
        }
    }

    // ----- the pages' side -----

    /// A page opened an event stream: it claims every open timed card. Returns the guard that
    /// ends the stream's share of the claims when dropped.
    pub(crate) fn connect(&self, client_id: &str) -> Result<StreamGuard, ConnectRefused> {
        let timed = {
            let mut state = lock(&self.state);
            if !state.clients.contains_key(client_id) && state.clients.len() >= MAX_CLIENTS {
                return Err(ConnectRefused::TooManyClients);
            }
            let client = state.clients.entry(client_id.to_owned()).or_default();
            if client.streams >= MAX_STREAMS_PER_CLIENT {
                return Err(ConnectRefused::TooManyStreams);
            }
            client.streams += 1;
            client.generation += 1;
            client.gone = false;
            if let Some(grace) = client.grace.take() {
                grace.abort();
            }
            state
                .cards
                .iter()
                .filter(|(_, c)| matches!(c.phase, Phase::Open { timed: true, .. }))
                .map(|(k, _)| k.clone())
                .collect::<Vec<CardKey>>()
        };
        for key in timed {
            self.claim_for_lookers(&key);
        }
        Ok(StreamGuard {
            hub: self.weak.clone(),
            client_id: client_id.to_owned(),
        })
    }

    fn disconnect(&self, client_id: &str) {
        let mut state = lock(&self.state);
        let Some(client) = state.clients.get_mut(client_id) else {
            return;
        };
        client.streams = client.streams.saturating_sub(1);
        if client.streams > 0 {
            return;
        }
        if client.gone {
            // It said goodbye: no grace.
            state.clients.remove(client_id);
            return;
        }
        let generation = client.generation;
        let grace = self.options.reconnect_grace;
        let hub = self.weak.clone();
        let id = client_id.to_owned();
        let timer = tokio::spawn(async move {
            tokio::time::sleep(grace).await;
            if let Some(hub) = hub.upgrade() {
                hub.grace_over(&id, generation);
            }
        });
        client.grace = Some(timer.abort_handle());
    }

    fn grace_over(&self, client_id: &str, generation: u64) {
        let released = {
            let mut state = lock(&self.state);
            let Some(client) = state.clients.get_mut(client_id) else {
                return;
            };
            if client.generation != generation || client.streams > 0 {
                return;
            }
            client.grace = None;
            let claims = std::mem::take(&mut client.claims);
            if client.holds.is_empty() {
                state.clients.remove(client_id);
            }
            claims
        };
        drop(released);
    }

    /// The page is going away (`pagehide`): its claims and holds go now, without the grace.
    pub(crate) fn goodbye(&self, client_id: &str) -> bool {
        let client = {
            let mut state = lock(&self.state);
            let Some(client) = state.clients.get_mut(client_id) else {
                return false;
            };
            client.generation += 1;
            client.gone = true;
            if let Some(grace) = client.grace.take() {
                grace.abort();
            }
            let claims = std::mem::take(&mut client.claims);
            let holds = std::mem::take(&mut client.holds);
            if client.streams == 0 {
                state.clients.remove(client_id);
            }
            (claims, holds)
        };
        drop(client);
        true
    }

    /// The person took time or began typing: `client_id` holds the wait of the call until it is
    /// answered, cancelled or the page says goodbye. `Ok(false)` when the card has no wait to hold
    /// (not timed); `Err` when it is not open.
    pub(crate) fn hold(
        &self,
        client_id: &str,
        call_id: &CallId,
        session: Option<&str>,
    ) -> Result<bool, AnswerRefused> {
        let seam = self.seam.upgrade().ok_or(AnswerRefused::NotWaiting)?;
        let (key, agent) = {
            let state = lock(&self.state);
            let key = find_key(&state.cards, call_id, session, true)?;
            let card = &state.cards[&key];
            let (Phase::Open { timed, .. }, agent) = (&card.phase, card.agent.clone()) else {
                return Err(AnswerRefused::NotWaiting);
            };
            if !timed {
                return Ok(false);
            }
            let agent = agent.ok_or(AnswerRefused::NotWaiting)?;
            // Only a page that is looking holds: a hold that arrives after the page's goodbye
            // (its fetch overtaken by the beacon) must not hold the wait for nobody.
            let Some(client) = state.clients.get(client_id).filter(|c| c.looking()) else {
                return Err(AnswerRefused::NotLooking);
            };
            if client.holds.contains_key(&key) {
                return Ok(true);
            }
            (key, agent)
        };
        // Outside the lock: attaching runs the host's identity check.
        let Ok(Some(claim)) = seam.attach_wait(&agent, call_id) else {
            return Err(AnswerRefused::NotWaiting);
        };
        let mut state = lock(&self.state);
        let still_open = matches!(
            state.cards.get(&key),
            Some(Card {
                phase: Phase::Open { .. },
                ..
            })
        );
        let client = state.clients.get_mut(client_id).filter(|c| c.looking());
        let (result, unused) = match client {
            Some(client) if still_open => (Ok(true), client.holds.insert(key, claim)),
            Some(_) => (Err(AnswerRefused::NotWaiting), Some(claim)),
            None => (Err(AnswerRefused::NotLooking), Some(claim)),
        };
        drop(state);
        drop(unused);
        result
    }

    /// The questions of the desk this surface shows beside its own cards (continued ones, and
    /// open ones an answer here reaches), read off the async threads (the desk may read logs or
    /// ask a database). A desk that cannot be read lists nothing, with a warning.
    pub(crate) async fn listed(&self) -> Vec<DeskQuestion> {
        self.listing().await.unwrap_or_default()
    }

    /// [`listed`](Self::listed), or `None` when the desk could not be read (which is no proof
    /// that anything was settled).
    async fn listing(&self) -> Option<Vec<DeskQuestion>> {
        let Some(desk) = self.desk.clone() else {
            return Some(Vec::new());
        };
        let listed = tokio::task::spawn_blocking(move || desk.answerable()).await;
        match listed {
            Ok(Ok(questions)) => Some(questions),
            Ok(Err(error)) => {
                tracing::warn!(%error, "the questions cannot be listed");
                None
            }
            Err(error) => {
                tracing::warn!(%error, "the questions cannot be listed");
                None
            }
        }
    }

    /// Every card to show a page that just connected: the open and continued cards of this
    /// surface, then the questions the desk `listed` that this surface has no card for.
    pub(crate) fn snapshot(&self, listed: Vec<DeskQuestion>) -> Value {
        let now = Instant::now();
        // Listed questions come from logs, not through the seam: they are shown as the seam
        // shows a question to its answerers (headers truncated, SPEC §9.3), like the cards.
        let limits = self.seam.upgrade().map(|seam| seam.limits().clone());
        let mut state = lock(&self.state);
        let listed_keys: HashSet<CardKey> = listed.iter().map(desk_key).collect();
        // A reply the agent admitted settles its question: it is no longer listed.
        state.queued.retain(|key| listed_keys.contains(key));
        let mut cards: Vec<(&u64, Value)> = state
            .cards
            .iter()
            .map(|(key, card)| {
                (
                    &card.order,
                    self.card_json(&state, key, card, state.queued.contains(key), now),
                )
            })
            .collect();
        cards.sort_by_key(|(order, _)| **order);
        let mut cards: Vec<Value> = cards.into_iter().map(|(_, v)| v).collect();
        for question in listed {
            let key = desk_key(&question);
            if state.cards.contains_key(&key) {
                continue;
            }
            // Open elsewhere: this surface holds no window of it, so no countdown and no hold
            // here (the host that runs it sees this surface's claim instead). An interrupted
            // call (its host is gone) is answered as a continued one.
            let elsewhere = question.state == DeskState::Open && !question.interrupted;
            cards.push(json!({
                "session": key.session,
                "label": state.labels.get(&key.session),
                "callId": key.call_id,
                "state": if elsewhere { "open" } else { "continued" },
                "timed": !elsewhere,
                "remainingMs": null,
                "askedAtMs": question.asked_at_ms,
                "replyQueued": state.queued.contains(&key),
                "questions": limits.as_ref().map_or(
                    std::borrow::Cow::Borrowed(question.questions.as_slice()),
                    |limits| user_questions::truncate_headers(&question.questions, limits),
                ),
            }));
        }
        json!({ "cards": cards })
    }

    /// Sends every page a fresh snapshot: the sessions' list changed. A continued card the desk
    /// no longer lists (answered from a shell, say) goes with it.
    pub(crate) async fn refresh(&self) {
        // A desk that cannot be read now says nothing of what is settled: no snapshot then (the
        // pages keep what they show, and the next refresh tries again).
        let Some(listed) = self.listing().await else {
            return;
        };
        if self.desk.is_some() {
            let keys: HashSet<CardKey> = listed.iter().map(desk_key).collect();
            let mut state = lock(&self.state);
            state.cards.retain(|key, card| {
                !matches!(card.phase, Phase::Continued { durable: true }) || keys.contains(key)
            });
        }
        let snapshot = self.snapshot(listed);
        self.publish("snapshot", &snapshot);
    }

    /// Shows `label` beside the cards of `session`.
    pub(crate) fn set_label(&self, session: &str, label: Option<String>) {
        let mut state = lock(&self.state);
        match label {
            Some(label) => state.labels.insert(session.to_owned(), label),
            None => state.labels.remove(session),
        };
    }

    fn card_json(
        &self,
        state: &State,
        key: &CardKey,
        card: &Card,
        reply_queued: bool,
        now: Instant,
    ) -> Value {
        card_json(
            key,
            card,
            state.labels.get(&key.session),
            self.options.countdowns,
            reply_queued,
            now,
        )
    }

    /// An answer from a page: to the waiting answerer while the card is in its window, else a
    /// late answer through the desk (once the host announced the call continued).
    pub(crate) async fn answer(
        &self,
        call_id: &CallId,
        session: Option<&str>,
        batch: AnswerBatch,
        via: Via,
    ) -> Result<AnswerPath, AnswerRefused> {
        let answerer = (via == Via::Button).then(|| {
            format!(
                "{}{}",
                self.options.name,
                user_questions::surface_names::BUTTON_SUFFIX
            )
        });
        let seam = self.seam.upgrade().ok_or(AnswerRefused::NotWaiting)?;
        let found = {
            let mut state = lock(&self.state);
            match find_key(&state.cards, call_id, session, false) {
                Ok(key) => {
                    let Some(card) = state.cards.get_mut(&key) else {
                        return Err(AnswerRefused::NotWaiting);
                    };
                    Some(match &mut card.phase {
                        Phase::Open {
                            answer: Some(_), ..
                        } => {
                            let batch = seam
                                .validate_answers(&card.questions, &batch, Some(call_id))
                                .map_err(AnswerRefused::Rejected)?;
                            let Phase::Open { answer, .. } = &mut card.phase else {
                                return Err(AnswerRefused::NotWaiting);
                            };
                            let sender = answer.take().ok_or(AnswerRefused::NotWaiting)?;
                            Target::Foreground(key, sender, batch)
                        }
                        // Continued, or its window just closed (the seam's event of how the
                        // call ended is on its way; if it went pending, the answer is a late
                        // one).
                        Phase::Open { answer: None, .. } | Phase::Continued { .. } => {
                            Target::Late {
                                key,
                                batch: batch.clone(),
                            }
                        }
                    })
                }
                Err(AnswerRefused::NotWaiting) => None,
                Err(other) => return Err(other),
            }
        };
        let target = if let Some(target) = found {
            target
        } else {
            // No card of this surface: a question the desk lists (a log on disk, a database).
            let listed = self.listed().await;
            let mut matching = listed
                .into_iter()
                .filter(|q| &q.call_id == call_id && session.is_none_or(|s| s == q.session));
            let found = matching.next().ok_or(AnswerRefused::NotWaiting)?;
            if matching.next().is_some() {
                return Err(AnswerRefused::Ambiguous);
            }
            Target::Late {
                key: desk_key(&found),
                batch,
            }
        };
        match target {
            Target::Foreground(key, sender, batch) => {
                let (ack, acked) = oneshot::channel();
                let handed = sender.send(Submitted {
                    batch: batch.clone(),
                    answerer: answerer.clone(),
                    ack,
                });
                if handed.is_ok() && acked.await.is_ok() {
                    return Ok(AnswerPath::Foreground);
                }
                // The window closed just as the answer came: if the call goes pending, the
                // answer is a late one, taken once the host announces the call continued.
                self.answer_late(key, batch, answerer).await?;
                Ok(AnswerPath::Late)
            }
            Target::Late { key, batch } => {
                self.answer_late(key, batch, answerer).await?;
                Ok(AnswerPath::Late)
            }
        }
    }

    /// Waits until the card of `key` takes late answers: `Ok(true)` once the host announced it
    /// continued, `Ok(false)` when this surface shows no card of it (a question the desk lists,
    /// which is durable already), `Err` when the card went (answered, cancelled) or the
    /// announcement did not come within [`CONTINUED_WITHIN`].
    async fn until_durable(&self, key: &CardKey) -> Result<bool, AnswerRefused> {
        let until = Instant::now() + CONTINUED_WITHIN;
        let mut seen = false;
        loop {
            // Registered before the look, so a change between the look and the wait wakes it.
            let changed = self.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            match lock(&self.state).cards.get(key).map(|card| &card.phase) {
                Some(Phase::Continued { durable: true }) => return Ok(true),
                Some(Phase::Continued { durable: false } | Phase::Open { .. }) => seen = true,
                None if seen => return Err(AnswerRefused::NotWaiting),
                None => return Ok(false),
            }
            if tokio::time::timeout_at(until, changed).await.is_err() {
                return Err(AnswerRefused::NotWaiting);
            }
        }
    }

    async fn answer_late(
        &self,
        key: CardKey,
        batch: AnswerBatch,
        answerer: Option<String>,
    ) -> Result<(), AnswerRefused> {
        let desk = self.desk.clone().ok_or(AnswerRefused::NotWaiting)?;
        self.until_durable(&key).await?;
        let (session, call_id) = (key.session.clone(), key.call_id.clone());
        let provenance = Provenance::human(answerer.unwrap_or_else(|| self.options.name.clone()));
        let answers = batch.clone();
        // The desk may open a log or ask a database: off the async threads.
        tokio::task::spawn_blocking(move || desk.answer(&session, &call_id, answers, provenance))
            .await
            .map_err(|e| AnswerRefused::Undelivered(e.to_string()))??;
        let data = {
            let mut state = lock(&self.state);
            state.cards.remove(&key);
            state.queued.insert(key.clone());
            json!({"session": key.session, "callId": key.call_id, "late": true, "answers": batch.answers})
        };
        self.changed.notify_waiters();
        self.publish("queued", &data);
        Ok(())
    }

    /// The projection view of every session, for `GET /pending`: `{"sessions":[{…view,
    /// "session"}]}`. Blocking: the desk may read logs.
    pub(crate) fn pending_view(&self) -> Value {
        let Some(desk) = &self.desk else {
            return json!({"sessions": []});
        };
        let views = match desk.views(None) {
            Ok(views) => views,
            Err(error) => {
                tracing::warn!(%error, "the sessions cannot be read");
                Vec::new()
            }
        };
        let sessions: Vec<Value> = views
            .into_iter()
            .map(|session| {
                let mut view = serde_json::to_value(&session.view).unwrap_or_else(|_| json!({}));
                if let Value::Object(map) = &mut view {
                    map.insert("session".to_owned(), json!(session.session));
                }
                view
            })
            .collect();
        json!({ "sessions": sessions })
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

    /// Claims held now by pages (stream claims and holds), for tests and metrics.
    pub(crate) fn claims_held(&self) -> usize {
        let state = lock(&self.state);
        state
            .clients
            .values()
            .map(|c| c.claims.len() + c.holds.len())
            .sum()
    }

    /// Clients known now (with a stream, in their grace, or holding).
    pub(crate) fn clients(&self) -> usize {
        lock(&self.state).clients.len()
    }
}

/// Takes every claim and hold on `key` from every client, and forgets the clients that are
/// left with nothing (no stream, no grace, no claim, no hold).
fn take_claims_on(state: &mut State, key: &CardKey) -> Vec<WaitClaim> {
    let mut taken = Vec::new();
    for client in state.clients.values_mut() {
        taken.extend(client.claims.remove(key));
        taken.extend(client.holds.remove(key));
    }
    state
        .clients
        .retain(|_, c| c.looking() || !c.claims.is_empty() || !c.holds.is_empty());
    taken
}

/// The key of the card of `call_id` (in `session`, when given). `open_only`: continued cards
/// do not count.
fn find_key(
    cards: &BTreeMap<CardKey, Card>,
    call_id: &CallId,
    session: Option<&str>,
    open_only: bool,
) -> Result<CardKey, AnswerRefused> {
    let mut matching = cards.iter().filter(|(key, card)| {
        &key.call_id == call_id
            && session.is_none_or(|s| s == key.session)
            && (!open_only || matches!(card.phase, Phase::Open { .. }))
    });
    let (key, _) = matching.next().ok_or(AnswerRefused::NotWaiting)?;
    if matching.next().is_some() {
        return Err(AnswerRefused::Ambiguous);
    }
    Ok(key.clone())
}

fn card_json(
    key: &CardKey,
    card: &Card,
    label: Option<&String>,
    countdowns: bool,
    reply_queued: bool,
    now: Instant,
) -> Value {
    let (state, timed, remaining) = match &card.phase {
        Phase::Open {
            timed, deadline, ..
        } => (
            "open",
            *timed,
            deadline.map(|d| {
                u64::try_from(d.saturating_duration_since(now).as_millis()).unwrap_or(u64::MAX)
            }),
        ),
        Phase::Continued { .. } => ("continued", true, None),
    };
    json!({
        "session": key.session,
        "label": label,
        "callId": key.call_id,
        "state": state,
        "timed": timed,
        "remainingMs": remaining.filter(|_| countdowns),
        "askedAtMs": card.asked_at_ms,
        "replyQueued": reply_queued,
        "questions": card.questions,
    })
}

/// A desk question's card key.
fn desk_key(question: &DeskQuestion) -> CardKey {
    CardKey {
        session: question.session.clone(),
        call_id: question.call_id.clone(),
    }
}

/// An id for a card without a call id: unique in the process.
fn next_card_id() -> String {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        .to_string()
}

/// Ends one stream's share of its client's claims when dropped.
pub(crate) struct StreamGuard {
    hub: Weak<Hub>,
    client_id: String,
}

impl Drop for StreamGuard {
    fn drop(&mut self) {
        if let Some(hub) = self.hub.upgrade() {
            hub.disconnect(&self.client_id);
        }
    }
}

/// Follows the seam's lifecycle events for as long as the hub lives.
async fn follow_seam(hub: Weak<Hub>, mut events: user_questions::QuestionEvents) {
    while let Some(received) = events.recv().await {
        let Some(hub) = hub.upgrade() else {
            return;
        };
        match received {
            Received::Event(event) => {
                if let Some(call_id) = &event.call_id {
                    let session = event
                        .session_id
                        .as_ref()
                        .map(|s| s.as_str().to_owned())
                        .unwrap_or_default();
                    hub.on_seam_event(call_id, &session, &event.kind);
                }
            }
            Received::Missed(missed) => {
                tracing::warn!(
                    missed,
                    "the web surface fell behind the seam's events; resyncing"
                );
                hub.resync().await;
            }
        }
    }
}
