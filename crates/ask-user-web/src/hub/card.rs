//! The cards on show and the one view of a card the pages receive.
//!
//! A card is this surface's own question: shown when the answerer opened it, in its foreground
//! window ([`Phase::Open`]), then continued once its window closed with the call pending
//! ([`Phase::Continued`]). A question the desk lists that this surface has no card of is shown
//! with the same view ([`CardView`]), serialised in this one place.

use std::borrow::Cow;
use std::time::Duration;

use pending_answer::{DeskQuestion, DeskState};
use serde::Serialize;
use serde_json::json;
use tokio::sync::oneshot;
use tokio::time::Instant;
use user_questions::{
    AgentHandle, AnswerBatch, AnswerRequest, CallId, Provenance, Question, QuestionLimits,
    WaitClaim, WaitKey,
};

use super::{AnswerRefused, Hub, State, lock};
use crate::sessions::CardKey;

/// An answer from a page for a card in its foreground window, with the acknowledgement the
/// answerer sends once the answer is the one it returns.
pub(crate) struct Submitted {
    pub(crate) batch: AnswerBatch,
    /// The provenance name, when it is not the surface's registration name (a button's).
    pub(crate) answerer: Option<String>,
    pub(crate) ack: oneshot::Sender<()>,
}

pub(crate) struct Card {
    pub(super) order: u64,
    /// When the card opened (wall-clock Unix ms): its age on the page.
    asked_at_ms: i64,
    pub(super) questions: Vec<Question>,
    pub(super) agent: Option<AgentHandle>,
    pub(super) phase: Phase,
}

pub(super) enum Phase {
    /// In its foreground window: the answerer waits for `answer`.
    Open {
        timed: bool,
        keyed: bool,
        answer: Option<oneshot::Sender<Submitted>>,
        deadline: Option<Instant>,
    },
    /// The window closed with the question pending. `durable` once the host announced the call
    /// continued (its pending result is in the log): the desk lists it from then on, so a
    /// listing that no longer does means it was settled elsewhere.
    Continued { durable: bool },
}

/// A card as pages receive it (`card` events and `snapshot`s): `{"session","label","callId",
/// "state","timed","remainingMs","askedAtMs","replyQueued","questions"}`, unset values as `null`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct CardView<'a> {
    session: &'a str,
    label: Option<String>,
    call_id: &'a CallId,
    state: &'static str,
    timed: bool,
    remaining_ms: Option<u64>,
    asked_at_ms: Option<i64>,
    reply_queued: bool,
    questions: Cow<'a, [Question]>,
}

/// Where the time left of an open timed card comes from.
#[derive(Clone, Copy)]
pub(super) enum TimeLeft {
    /// This surface's own countdown, from its first claim on the window.
    Own,
    /// The window runs elsewhere (the inbox: each host keeps its own): as long as the desk
    /// says, if it knows.
    Elsewhere(Option<Duration>),
}

fn whole_ms(left: Duration) -> u64 {
    u64::try_from(left.as_millis()).unwrap_or(u64::MAX)
}

impl<'a> CardView<'a> {
    /// This surface's own card, its time left told as `time_left` says.
    fn of_card(
        key: &'a CardKey,
        card: &'a Card,
        label: Option<String>,
        time_left: TimeLeft,
        reply_queued: bool,
        now: Instant,
    ) -> Self {
        let (state, timed, remaining_ms) = match &card.phase {
            Phase::Open {
                timed, deadline, ..
            } => {
                let left = match time_left {
                    TimeLeft::Own => deadline.map(|d| d.saturating_duration_since(now)),
                    TimeLeft::Elsewhere(left) => left,
                };
                ("open", *timed, left.filter(|_| *timed).map(whole_ms))
            }
            Phase::Continued { .. } => ("continued", true, None),
        };
        Self {
            session: &key.session,
            label,
            call_id: &key.call_id,
            state,
            timed,
            remaining_ms,
            asked_at_ms: Some(card.asked_at_ms),
            reply_queued,
            questions: Cow::Borrowed(&card.questions),
        }
    }

    /// A question the desk lists: open elsewhere (this surface holds no window of it, so no
    /// countdown and no hold here; the host that runs it sees this surface's claim instead), or
    /// continued (an interrupted call, whose host is gone, is answered as a continued one). Its
    /// questions are shown as the seam shows a question to its answerers (headers truncated,
    /// SPEC §9.3), like the cards.
    fn of_listed(
        question: &'a DeskQuestion,
        label: Option<String>,
        reply_queued: bool,
        limits: Option<&QuestionLimits>,
    ) -> Self {
        let elsewhere = question.state == DeskState::Open && !question.interrupted;
        Self {
            session: &question.session,
            label,
            call_id: &question.call_id,
            state: if elsewhere { "open" } else { "continued" },
            timed: !elsewhere,
            remaining_ms: None,
            asked_at_ms: question.asked_at_ms,
            reply_queued,
            questions: limits.map_or(Cow::Borrowed(question.questions.as_slice()), |limits| {
                user_questions::truncate_headers(&question.questions, limits)
            }),
        }
    }
}

/// The `settled` event: `by` names the answerer, `answered` says where in words
/// ([`Provenance::described`]: "on the page", "at the terminal", …).
pub(super) fn settled_data(key: &CardKey, by: &Provenance) -> serde_json::Value {
    json!({"session": key.session, "callId": key.call_id, "by": by.answerer, "answered": by.described()})
}

/// A desk question's card key.
pub(super) fn desk_key(question: &DeskQuestion) -> CardKey {
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

impl Hub {
    /// Publishes the `card` event of `key`'s card, if it is shown.
    fn publish_card(&self, key: &CardKey) {
        let label = self.label(&key.session);
        let time_left = self.time_left(key);
        let data = {
            let state = lock(&self.state);
            state.cards.get(key).map(|card| {
                serde_json::to_value(CardView::of_card(
                    key,
                    card,
                    label,
                    time_left,
                    false,
                    Instant::now(),
                ))
                .unwrap_or_default()
            })
        };
        if let Some(data) = data {
            self.publish("card", &data);
        }
    }

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
        self.publish_card(&key);
        (key, rx)
    }

    /// The deadline a card's window is counted down to on the pages, from the first claim's
    /// remaining time.
    pub(super) fn set_deadline(card: &mut Card, claim: &WaitClaim) {
        if let Phase::Open {
            timed: true,
            deadline,
            ..
        } = &mut card.phase
        {
            deadline.get_or_insert_with(|| {
                Instant::now() + Duration::from_millis(claim.remaining_ms())
            });
        }
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
        Some(state.take_claims_on(key))
    }

    /// The window closed with the question pending (`durable`: the host announced the call
    /// continued): with a desk to answer it late, the card stays as a continued question; without,
    /// it goes. A card already announced continued stays so whichever event comes second.
    pub(super) fn turn_continued(&self, key: &CardKey, durable: bool) {
        if self.desk.is_none() {
            self.foreground_over(key, None);
            return;
        }
        // One critical section: no page can claim the card between its claims going and its
        // turning continued.
        let (was_open, released) = {
            let mut state = lock(&self.state);
            let Some(card) = state.cards.get_mut(key) else {
                return;
            };
            let was_open = matches!(card.phase, Phase::Open { .. });
            let already = matches!(card.phase, Phase::Continued { durable: true });
            card.phase = Phase::Continued {
                durable: durable || already,
            };
            (was_open, state.take_claims_on(key))
        };
        drop(released);
        if was_open {
            self.publish_card(key);
        }
    }

    /// Every card to show a page that just connected: the open and continued cards of this
    /// surface, then the questions the desk `listed` that this surface has no card for.
    pub(crate) fn snapshot(&self, listed: &[DeskQuestion]) -> serde_json::Value {
        let now = Instant::now();
        let limits = self.seam.upgrade().map(|seam| seam.limits().clone());
        // Labels and windows kept elsewhere are the desk's word: asked before the hub's lock is
        // taken.
        let keys: Vec<CardKey> = lock(&self.state).cards.keys().cloned().collect();
        let mut windows: std::collections::HashMap<CardKey, TimeLeft> = keys
            .iter()
            .map(|key| (key.clone(), self.time_left(key)))
            .collect();
        let sessions: Vec<String> = keys
            .into_iter()
            .map(|key| key.session)
            .chain(listed.iter().map(|q| q.session.clone()))
            .collect();
        let labels: std::collections::HashMap<String, Option<String>> = sessions
            .into_iter()
            .map(|session| {
                let label = self.label(&session);
                (session, label)
            })
            .collect();
        let label = |session: &str| labels.get(session).cloned().flatten();
        let mut state = lock(&self.state);
        let listed_keys: std::collections::HashSet<CardKey> = listed.iter().map(desk_key).collect();
        // A reply the agent admitted settles its question: it is no longer listed.
        state.queued.retain(|key| listed_keys.contains(key));
        let State { cards, queued, .. } = &*state;
        let mut shown: Vec<(&Card, CardView<'_>)> = cards
            .iter()
            .map(|(key, card)| {
                let view = CardView::of_card(
                    key,
                    card,
                    label(&key.session),
                    windows.remove(key).unwrap_or(if self.options.countdowns {
                        TimeLeft::Own
                    } else {
                        TimeLeft::Elsewhere(None)
                    }),
                    queued.contains(key),
                    now,
                );
                (card, view)
            })
            .collect();
        shown.sort_by_key(|(card, _)| card.order);
        let mut views: Vec<CardView<'_>> = shown.into_iter().map(|(_, view)| view).collect();
        for question in listed {
            let key = desk_key(question);
            if cards.contains_key(&key) {
                continue;
            }
            views.push(CardView::of_listed(
                question,
                label(&question.session),
                queued.contains(&key),
                limits.as_ref(),
            ));
        }
        json!({ "cards": views })
    }
}

/// The key of the card of `call_id` (in `session`, when given). `open_only`: continued cards
/// do not count.
pub(super) fn find_key(
    cards: &std::collections::BTreeMap<CardKey, Card>,
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
