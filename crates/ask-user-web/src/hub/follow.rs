//! What the surface follows: the seam's lifecycle events (a card whose call went pending turns
//! continued; one answered elsewhere goes) and its desk's changes (every page gets a fresh
//! listing), and the listings it sends.

use std::collections::HashSet;
use std::sync::{Arc, Weak};

use pending_answer::{DeskQuestion, DeskState};
use serde_json::{Value, json};
use user_questions::{CallId, QuestionEventKind, QuestionEvents, Received, UserQuestions};

use super::card::{Phase, desk_key, settled_data};
use super::{Hub, lock};
use crate::sessions::CardKey;

/// Starts following `seam`'s events and the hub's desk's changes, for as long as the hub lives.
///
/// # Panics
///
/// Outside a Tokio runtime.
pub(super) fn start(hub: &Arc<Hub>, seam: &UserQuestions) {
    tokio::spawn(follow_seam(Arc::downgrade(hub), seam.subscribe()));
    if let Some(desk) = &hub.desk {
        tokio::spawn(follow_desk(Arc::downgrade(hub), desk.changes()));
    }
}

/// Follows the seam's lifecycle events for as long as the hub lives.
async fn follow_seam(hub: Weak<Hub>, mut events: QuestionEvents) {
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

/// Sends every page a fresh listing whenever the desk's questions changed (answered from a
/// shell, a session gone, a question continued elsewhere), one refresh at a time, and only when
/// the listing differs from the one sent last (the surface's own cards travel as events).
async fn follow_desk(hub: Weak<Hub>, mut changes: pending_answer::DeskChanges) {
    // What a page that connects now is sent (the route sends it).
    let mut sent = match hub.upgrade() {
        Some(hub) => hub.listing().await,
        None => return,
    };
    while changes.changed().await {
        let Some(hub) = hub.upgrade() else {
            return;
        };
        let Some(listed) = hub.listing().await else {
            continue;
        };
        if sent.as_ref() == Some(&listed) {
            continue;
        }
        hub.show(&listed);
        sent = Some(listed);
    }
}

impl Hub {
    fn on_seam_event(&self, call_id: &CallId, session: &str, kind: &QuestionEventKind) {
        let key = CardKey {
            session: session.to_owned(),
            call_id: call_id.clone(),
        };
        match kind {
            // The window closed with the question pending; the host's announcement follows once
            // its pending result is durable.
            QuestionEventKind::Pending => self.turn_continued(&key, false),
            QuestionEventKind::Continued => self.turn_continued(&key, true),
            QuestionEventKind::Answered { provenance, .. } => {
                {
                    let mut state = lock(&self.state);
                    state.queued.remove(&key);
                    state.cards.remove(&key);
                }
                self.drop_claims_on(&key);
                self.publish("settled", &settled_data(&key, provenance));
            }
            QuestionEventKind::Cancelled { .. } => self.foreground_over(&key, None),
            QuestionEventKind::Opened { .. } | QuestionEventKind::Claimed { .. } => {}
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
                self.turn_continued(&key, true);
            } else {
                // A card whose pending result is not logged yet stays: its announcement decides.
                self.foreground_over(&key, None);
            }
        }
    }

    /// Sends every page a fresh snapshot: the sessions' list changed. A continued card the desk
    /// no longer lists (answered from a shell, say) goes with it.
    pub(crate) async fn refresh(&self) {
        // A desk that cannot be read now says nothing of what is settled: no snapshot then (the
        // pages keep what they show, and the next refresh tries again).
        if let Some(listed) = self.listing().await {
            self.show(&listed);
        }
    }

    /// Sends every page the snapshot of the cards and `listed`.
    fn show(&self, listed: &[DeskQuestion]) {
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

    /// The questions of the desk this surface shows beside its own cards (continued ones, and
    /// open ones an answer here reaches). A desk that cannot be read lists nothing, with a
    /// warning.
    pub(crate) async fn listed(&self) -> Vec<DeskQuestion> {
        self.listing().await.unwrap_or_default()
    }

    /// [`listed`](Self::listed), or `None` when the desk could not be read (which is no proof
    /// that anything was settled).
    async fn listing(&self) -> Option<Vec<DeskQuestion>> {
        let Some(desk) = &self.desk else {
            return Some(Vec::new());
        };
        match desk.answerable().await {
            Ok(questions) => Some(questions),
            Err(error) => {
                tracing::warn!(%error, "the questions cannot be listed");
                None
            }
        }
    }

    /// The projection view of every session, for `GET /pending`: `{"sessions":[{…view,
    /// "session"}]}`.
    pub(crate) async fn pending_view(&self) -> Value {
        let Some(desk) = &self.desk else {
            return json!({"sessions": []});
        };
        let views = match desk.views(None).await {
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
}
