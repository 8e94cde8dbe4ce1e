//! A session's cancellation book: what a client's `notifications/cancelled` does to its timed
//! calls. Only that notification reaches a timed call (a dropped connection lets its window run
//! out, so the question stays answerable), and its reason decides: a person's withdraws the call,
//! any other ends it pending as its window closing would (`limit.rs` has the rule and why).

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

use rmcp::model::RequestId;
use tokio_util::sync::CancellationToken;
use user_questions::sync::lock_unpoisoned;

use crate::limit::person_cancelled;

/// What a client's `notifications/cancelled` does to a timed call: `cancel` withdraws it
/// (`ASK_ABORTED`), `gave_up` ends it pending (`limit.rs`).
#[derive(Clone, Default)]
pub(crate) struct CallCancel {
    pub(crate) cancel: CancellationToken,
    pub(crate) gave_up: CancellationToken,
}

impl CallCancel {
    /// Applies a client's cancellation with this `reason`: a person's withdraws the call, any
    /// other ends it as its window closing does.
    fn apply(&self, reason: Option<&str>) {
        if person_cancelled(reason) {
            self.cancel.cancel();
        } else {
            self.gave_up.cancel();
        }
    }
}

/// The timed calls a client's `notifications/cancelled` reaches, by request id. A cancellation may
/// be handled before its request's handler has started; those are remembered (a few, with their
/// reasons) for it.
#[derive(Default)]
pub(crate) struct CancelBook(Mutex<Entries>);

#[derive(Default)]
struct Entries {
    live: HashMap<RequestId, CallCancel>,
    early: VecDeque<(RequestId, Option<String>)>,
}

/// How many cancellations of not-yet-started requests are remembered.
const EARLY_CANCELS: usize = 64;

impl CancelBook {
    /// What a client's `notifications/cancelled` does to the timed call of request `id`: its
    /// tokens, cancelled at once when the cancellation came before the call's handler started.
    pub(crate) fn tokens(&self, id: &RequestId) -> CallCancel {
        let tokens = CallCancel::default();
        let mut book = lock_unpoisoned(&self.0);
        if let Some(at) = book.early.iter().position(|(early, _)| early == id) {
            if let Some((_, reason)) = book.early.remove(at) {
                tokens.apply(reason.as_deref());
            }
        } else {
            book.live.insert(id.clone(), tokens.clone());
        }
        tokens
    }

    /// Forgets the call of request `id`: its request is over.
    pub(crate) fn forget(&self, id: &RequestId) {
        lock_unpoisoned(&self.0).live.remove(id);
    }

    /// A client's `notifications/cancelled` of request `id`, with its `reason`: applied to the
    /// call when it runs, else remembered for it.
    pub(crate) fn cancelled(&self, id: &RequestId, reason: Option<&str>) {
        let mut book = lock_unpoisoned(&self.0);
        if let Some(tokens) = book.live.remove(id) {
            tracing::info!(request = %id, reason, person = person_cancelled(reason), "the client cancelled a timed call");
            tokens.apply(reason);
        } else {
            if book.early.len() == EARLY_CANCELS {
                book.early.pop_front();
            }
            book.early
                .push_back((id.clone(), reason.map(str::to_owned)));
        }
    }
}
