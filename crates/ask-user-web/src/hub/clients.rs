//! The pages (clients) looking at the cards, with their claims and holds.
//!
//! A client's claims go when its last stream has been gone for the grace, when it says goodbye
//! (`POST /clients/{id}/bye`, sent on `pagehide`), or when the card leaves the foreground; holds
//! go with the goodbye or the card. The desk is told whether anyone looks
//! ([`QuestionDesk::looking`](pending_answer::QuestionDesk::looking)): a desk over questions whose
//! windows run elsewhere holds them while someone does.

use std::collections::HashMap;

use tokio::task::AbortHandle;
use user_questions::{CallId, WaitClaim};

use super::card::{Card, Phase, find_key};
use super::{AnswerRefused, Hub, State, lock};
use crate::sessions::CardKey;

/// The most clients (pages) one surface serves at once.
pub(crate) const MAX_CLIENTS: usize = 64;
/// The most event streams one client keeps open at once.
pub(crate) const MAX_STREAMS_PER_CLIENT: u32 = 4;

#[derive(Default)]
pub(crate) struct Client {
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
    /// Takes this client's claim and hold on `key`.
    pub(super) fn release(&mut self, key: &CardKey) -> impl Iterator<Item = WaitClaim> {
        self.claims
            .remove(key)
            .into_iter()
            .chain(self.holds.remove(key))
    }

    /// No stream, no grace, no claim, no hold: the client can be forgotten.
    pub(super) fn idle(&self) -> bool {
        !self.looking() && self.claims.is_empty() && self.holds.is_empty()
    }

    fn looking(&self) -> bool {
        !self.gone && (self.streams > 0 || self.grace.is_some())
    }
}

/// Why a client could not open a stream.
#[derive(Debug)]
pub(crate) enum ConnectRefused {
    TooManyClients,
    TooManyStreams,
}

/// Ends one stream's share of its client's claims when dropped.
pub(crate) struct StreamGuard {
    hub: std::sync::Weak<Hub>,
    client_id: String,
}

impl Drop for StreamGuard {
    fn drop(&mut self) {
        if let Some(hub) = self.hub.upgrade() {
            hub.disconnect(&self.client_id);
        }
    }
}

impl Hub {
    /// Tells the desk whether anyone looks now (a client known: streaming, in its grace, or
    /// holding).
    fn tell_looking(&self) {
        if let Some(desk) = &self.desk {
            let looking = !lock(&self.state).clients.is_empty();
            desk.looking(looking);
        }
    }

    /// Claims `key`'s wait for every client looking that has no claim on it yet. The claims are
    /// taken outside the hub's lock (attaching runs the host's identity check, SPEC §4.11: no
    /// lock across a host call) and kept only if the card and the client are still there.
    pub(super) fn claim_for_lookers(&self, key: &CardKey) {
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
            match cards.get_mut(key) {
                Some(
                    card @ Card {
                        phase: Phase::Open { timed: true, .. },
                        ..
                    },
                ) => {
                    for (id, claim) in claims {
                        match clients
                            .get_mut(&id)
                            .filter(|c| c.looking() && !c.claims.contains_key(key))
                        {
                            Some(client) => {
                                Self::set_deadline(card, &claim);
                                client.claims.insert(key.clone(), claim);
                            }
                            None => unused.push(claim),
                        }
                    }
                }
                _ => unused.extend(claims.into_iter().map(|(_, claim)| claim)),
            }
        }
        drop(unused);
    }

    pub(super) fn drop_claims_on(&self, key: &CardKey) {
        let released = lock(&self.state).take_claims_on(key);
        drop(released);
    }

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
        self.tell_looking();
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
            drop(state);
            self.tell_looking();
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
        self.tell_looking();
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
        self.tell_looking();
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
