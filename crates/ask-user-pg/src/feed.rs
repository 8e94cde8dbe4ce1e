//! The ledger feed: answers given through the ledger, delivered to a session this process runs
//! live. A host that runs a session over [`PgStore`] holds its lease, so no worker admits its
//! answers; the feed offers each accepted answer to the host's `LateAnswers` (with the answer's
//! id as the reply's message id), and the host admits it in its own next turn, as it admits a
//! late answer from its own card. Woken by the ledger's `NOTIFY` and by a poll.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};
use std::thread;
use std::time::Duration;

use pending_answer::{LateAnswers, LateRefusal};
use user_questions::AgentHandle;

use crate::store::PgStore;
use crate::worker::{Wake, listen};

/// Delivers the ledger's answers for one live session until dropped.
pub struct LedgerFeed {
    stop: mpsc::Sender<Wake>,
    stopped: Arc<AtomicBool>,
}

impl LedgerFeed {
    /// Starts feeding the answers of session `name` (connected with `config`) to `late` for
    /// `agent`, the session's live agent, checking every `poll` and on every notification.
    pub fn start(
        config: &str,
        store: PgStore,
        name: &str,
        late: LateAnswers,
        agent: AgentHandle,
        poll: Duration,
    ) -> Self {
        let (wake, woken) = mpsc::channel();
        let stopped = Arc::new(AtomicBool::new(false));
        let hint = wake.clone();
        listen(
            config,
            move || hint.send(Wake::Hint).is_ok(),
            Arc::clone(&stopped),
        );
        let name = name.to_owned();
        let spawned = thread::Builder::new()
            .name("ask-user-pg-feed".into())
            .spawn(move || {
                let mut offered = HashSet::new();
                loop {
                    offer(&store, &name, &late, &agent, &mut offered);
                    match woken.recv_timeout(poll) {
                        Ok(Wake::Stop) | Err(mpsc::RecvTimeoutError::Disconnected) => return,
                        Ok(Wake::Hint) | Err(mpsc::RecvTimeoutError::Timeout) => {}
                    }
                }
            });
        if let Err(error) = spawned {
            tracing::warn!(%error, "cannot start the ledger feed");
        }
        Self {
            stop: wake,
            stopped,
        }
    }
}

impl Drop for LedgerFeed {
    fn drop(&mut self) {
        self.stopped.store(true, Ordering::Relaxed);
        let _ = self.stop.send(Wake::Stop);
    }
}

/// Offers every accepted answer not offered yet.
fn offer(
    store: &PgStore,
    name: &str,
    late: &LateAnswers,
    agent: &AgentHandle,
    offered: &mut HashSet<String>,
) {
    let answers = match store.unadmitted(name) {
        Ok(answers) => answers,
        Err(error) => {
            tracing::warn!(session = name, %error, "cannot read the ledger; retrying");
            return;
        }
    };
    for answer in answers {
        if offered.contains(&answer.answer_id) {
            continue;
        }
        let id = answer.answer_id.clone();
        match late.queue_as(
            agent,
            &answer.call_id,
            answer.batch.clone(),
            answer.provenance.clone(),
            id.clone(),
        ) {
            // Queued: the host admits it. Or a reply is queued already (this one, from an
            // earlier offer, or another, which then settles the call and refuses this one).
            Ok(_) | Err(LateRefusal::ReplyQueued { .. }) => {
                offered.insert(id);
            }
            // Not continued in this host's projection (yet: its append may be committed and
            // not folded here; or settled, which refuses the answer in the ledger by itself):
            // offered again on the next wake, never refused here.
            Err(LateRefusal::NotWaiting(_)) => {}
            // The batch does not fit: it never will.
            Err(LateRefusal::BadAnswer(error)) => {
                let _ = store.refuse(name, &answer, error.message());
                offered.insert(id);
            }
            // The session is going away (its agent is no longer live, the request ended): the
            // answer stays in the ledger for the next owner, a worker.
            Err(
                refusal @ (LateRefusal::NotLive(_)
                | LateRefusal::NoAgent
                | LateRefusal::UnknownSession(_)),
            ) => {
                tracing::debug!(session = name, %refusal, "a ledger answer was not taken here; left for the next owner");
                offered.insert(id);
            }
            // Not delivered (the journal failed): offered again on the next wake.
            Err(LateRefusal::Undelivered(error)) => {
                tracing::warn!(session = name, %error, "a ledger answer could not be delivered; retrying");
            }
            Err(LateRefusal::Unavailable(error)) => {
                tracing::warn!(session = name, %error, "a ledger answer could not be delivered; retrying");
            }
        }
    }
}
