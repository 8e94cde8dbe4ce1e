//! The ledger answerer: an answering surface of a live host whose session is in the database, so
//! that a person on another machine answers an open question in its own window.
//!
//! A front end anywhere puts its answer in the ledger ([`PgStore::record_answer`] takes an open question
//! too) and claims the question while its card is shown ([`PgStore::claim`]). The host that runs
//! the call registers a [`LedgerAnswerer`] on its seam; for each of its session's questions the
//! answerer watches the ledger (woken by the ledger's `NOTIFY`, and by a poll), races the rest of
//! the waterfall (the terminal card, a page of this host), and
//!
//! * returns the ledger's answer the moment there is one: the first answer wins, here or there;
//! * holds one claim on the timed wait while any remote claim is live, so the host's countdown
//!   does not run while a person elsewhere is looking, and lets it go when the last lease ends
//!   (or when the ledger has not answered for as long as the longest lease had left). As for a
//!   page's hold (SPEC §4.7: a hold is local to its UI), a local surface that counts down on its
//!   own, such as the terminal card, still times the request out.
//!
//! The tool result it settles names [`LEDGER_ANSWERER`] in its provenance, and the append that
//! logs it marks the ledger's answer admitted in the same transaction. An answer that loses the
//! race (another surface answered first) is refused there instead; one that arrives after the
//! window closed is a late answer of a continued question, admitted as such.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::sync::watch;
use user_questions::{
    AgentHandle, AnswerRequest, Answered, AnsweredBy, Answerer, AnswererError, AnswererGuard,
    CallId, ErrorCode, Next, RegisterOptions, UserQuestionError, UserQuestions, WeakUserQuestions,
    async_trait, same_agent,
};

use crate::ledger::QuestionState;
use crate::store::PgStore;

/// The registration name (and provenance name) of a [`LedgerAnswerer`]: a tool result answered
/// by it admits the ledger's answer of its call.
pub const LEDGER_ANSWERER: &str = "ledger";

/// Answers one live session's open questions with the answers front ends put in the ledger, and
/// holds their timed windows while remote surfaces claim them. See the module documentation.
pub struct LedgerAnswerer {
    store: PgStore,
    session: String,
    agent: AgentHandle,
    seam: WeakUserQuestions,
    poll: Duration,
    hints: watch::Receiver<u64>,
    stopped: Arc<AtomicBool>,
}

impl LedgerAnswerer {
    /// An answerer for session `name` of `store` (connected with `config`), run live by `agent`
    /// on `seam`, woken by the ledger's notifications and every `poll`.
    pub fn new(
        config: &str,
        store: PgStore,
        name: &str,
        agent: AgentHandle,
        seam: &UserQuestions,
        poll: Duration,
    ) -> Self {
        let (hint, hints) = watch::channel(0u64);
        let stopped = Arc::new(AtomicBool::new(false));
        crate::worker::listen(
            config,
            move || {
                hint.send_modify(|n| *n = n.wrapping_add(1));
                !hint.is_closed()
            },
            Arc::clone(&stopped),
        );
        Self {
            store,
            session: name.to_owned(),
            agent,
            seam: seam.downgrade(),
            poll,
            hints,
            stopped,
        }
    }

    /// Registers the answerer on its seam under [`LEDGER_ANSWERER`] (the name the ledger
    /// recognises), at the front of the waterfall: it races the rest, so its place only decides
    /// who runs the rest.
    pub fn register(self, seam: &UserQuestions) -> AnswererGuard {
        seam.register(
            Arc::new(self),
            RegisterOptions::global(LEDGER_ANSWERER).prepended(),
        )
    }

    /// Watches the ledger for `call_id` until it has an answer, holding the timed wait while a
    /// remote claim is live. Never returns otherwise: the caller races it.
    async fn watch(&self, call_id: &CallId) -> Answered {
        let mut hints = self.hints.clone();
        let mut held = None;
        // Until when the claims last seen are live: a hold outlives them only while the ledger
        // cannot be read, never past this.
        let mut held_until = tokio::time::Instant::now();
        let mut hints_gone = false;
        loop {
            let (store, name, call) = (self.store.clone(), self.session.clone(), call_id.clone());
            let window = tokio::task::spawn_blocking(move || store.window(&name, &call)).await;
            let mut next_look = self.poll;
            match window {
                Ok(Ok(window)) => {
                    if let (Some(QuestionState::Open), Some(answer)) = (window.state, window.answer)
                    {
                        return match answer.provenance.answered_by {
                            AnsweredBy::Rule => Answered::rule(answer.batch),
                            AnsweredBy::Human => Answered::human(answer.batch),
                        };
                    }
                    match window.claimed_for {
                        Some(left) => {
                            if held.is_none()
                                && let Some(seam) = self.seam.upgrade()
                            {
                                held = match seam.attach_wait(&self.agent, call_id) {
                                    Ok(claim) => claim,
                                    Err(error) => {
                                        tracing::warn!(%error, call_id = %call_id, "cannot hold the wait for a remote claim");
                                        None
                                    }
                                };
                            }
                            // Look again when the longest lease would end, unless renewed.
                            held_until = tokio::time::Instant::now() + left;
                            next_look = next_look.min(left + Duration::from_millis(50));
                        }
                        None => held = None,
                    }
                }
                Ok(Err(error)) => {
                    tracing::warn!(session = %self.session, %error, "cannot read the ledger; retrying");
                }
                Err(error) => {
                    tracing::warn!(session = %self.session, %error, "the ledger read failed; retrying");
                }
            }
            if held.is_some() && tokio::time::Instant::now() >= held_until {
                // The leases seen last have run out and no read said otherwise.
                held = None;
            }
            if held.is_some() {
                next_look = next_look.min(
                    held_until.saturating_duration_since(tokio::time::Instant::now())
                        + Duration::from_millis(50),
                );
            }
            tokio::select! {
                // The listener gone (it could not start): the poll alone wakes.
                changed = hints.changed(), if !hints_gone => hints_gone = changed.is_err(),
                () = tokio::time::sleep(next_look) => {}
            }
        }
    }
}

impl Drop for LedgerAnswerer {
    fn drop(&mut self) {
        self.stopped.store(true, Ordering::Relaxed);
    }
}

/// Whether the rest of the waterfall left the question to the ledger: nobody else is there.
fn nobody_else(error: &AnswererError) -> bool {
    error.is(&ErrorCode::NoProvider)
}

#[async_trait]
impl Answerer for LedgerAnswerer {
    /// Races the ledger against the rest of the waterfall for a request of its session's agent;
    /// passes any other request on.
    ///
    /// Cancel safe: dropping the future (the request was cancelled or its window closed) drops
    /// its hold on the wait and stops watching; an answer the ledger takes later is a late one.
    async fn answer(
        &self,
        request: &AnswerRequest,
        next: Next<'_>,
    ) -> Result<Answered, AnswererError> {
        let (Some(agent), Some(wait)) = (&request.agent, &request.wait) else {
            return next.run().await;
        };
        if !same_agent(agent, &self.agent) {
            return next.run().await;
        }
        let watch = self.watch(wait.call_id());
        tokio::pin!(watch);
        let rest = next.run();
        tokio::pin!(rest);
        let mut rest_done = false;
        loop {
            tokio::select! {
                // An answer ready in the same poll as the end of the request wins over it, as in
                // the seam's own dispatch: the ledger's, then the rest's, then the token.
                biased;
                answered = &mut watch => return Ok(answered),
                result = &mut rest, if !rest_done => match result {
                    Err(error) if nobody_else(&error) => rest_done = true,
                    other => return other,
                },
                () = request.cancel.cancelled() => {
                    return Err(UserQuestionError::ask_aborted().into());
                }
            }
        }
    }
}
