//! One-time answer grants: a link that answers one question of one call with one option, once
//! (a notification's answer button). The grant is its own capability: its request needs no page
//! token, and it can answer nothing but what it was made for.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;
use user_questions::sync::lock_unpoisoned;
use user_questions::{AnswerBatch, AnswerItem, CallId};

/// The most grants alive at once; the oldest goes first.
const MAX_GRANTS: usize = 512;
/// How long a grant lives.
const GRANT_LIFETIME: Duration = Duration::from_hours(24);

#[derive(Clone, Debug)]
pub(crate) struct Grant {
    pub(crate) session: String,
    pub(crate) call_id: CallId,
    /// The one batch this grant answers with.
    pub(crate) batch: AnswerBatch,
    /// The card it was made for (a call asked again is another card).
    pub(crate) card: u64,
    issued: Instant,
}

/// The batch of a button: `label` for `question_id`, every other question of the call skipped.
pub(crate) fn button_batch(question_ids: &[String], question_id: &str, label: &str) -> AnswerBatch {
    AnswerBatch::new(question_ids.iter().map(|id| {
        if id == question_id {
            AnswerItem::selected(id.clone(), [label.to_owned()])
        } else {
            AnswerItem::skipped(id.clone())
        }
    }))
}

/// Why a grant was refused.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum GrantRefused {
    /// Unknown, used, or expired.
    Unknown,
    /// Made for another call or another answer.
    Mismatch,
}

#[derive(Default)]
pub(crate) struct Grants {
    live: Mutex<HashMap<String, Grant>>,
}

impl Grants {
    /// A new grant for answering `call_id` with `batch`.
    pub(crate) fn issue(
        &self,
        token: String,
        session: &str,
        call_id: &CallId,
        batch: AnswerBatch,
        card: u64,
    ) -> String {
        let mut live = lock_unpoisoned(&self.live);
        let now = Instant::now();
        live.retain(|_, g| now.duration_since(g.issued) < GRANT_LIFETIME);
        if live.len() >= MAX_GRANTS
            && let Some(oldest) = live
                .iter()
                .min_by_key(|(_, g)| g.issued)
                .map(|(k, _)| k.clone())
        {
            live.remove(&oldest);
        }
        live.insert(
            token.clone(),
            Grant {
                session: session.to_owned(),
                call_id: call_id.clone(),
                batch,
                card,
                issued: now,
            },
        );
        token
    }

    /// Takes the grant `token` for answering `call_id` with `batch`: used once. A grant made for
    /// another call or answer is refused and stays unused.
    pub(crate) fn redeem(
        &self,
        token: &str,
        call_id: &CallId,
        batch: &AnswerBatch,
    ) -> Result<Grant, GrantRefused> {
        let mut live = lock_unpoisoned(&self.live);
        let grant = live.get(token).ok_or(GrantRefused::Unknown)?;
        if Instant::now().duration_since(grant.issued) >= GRANT_LIFETIME {
            live.remove(token);
            return Err(GrantRefused::Unknown);
        }
        if &grant.call_id != call_id || *batch != grant.batch {
            return Err(GrantRefused::Mismatch);
        }
        live.remove(token).ok_or(GrantRefused::Unknown)
    }

    /// Revokes every grant of `call_id` in `session`: once one button answered, the others are
    /// dead.
    pub(crate) fn revoke_call(&self, session: &str, call_id: &CallId) {
        lock_unpoisoned(&self.live).retain(|_, g| !(g.session == session && &g.call_id == call_id));
    }

    /// Puts a taken grant back (its answer could not be delivered and may be sent again).
    pub(crate) fn restore(&self, token: String, grant: Grant) {
        lock_unpoisoned(&self.live).insert(token, grant);
    }
}
