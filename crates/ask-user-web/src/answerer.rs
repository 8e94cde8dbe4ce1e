//! The web answerer: shows the request as a card on every page and races the rest of the
//! waterfall. The first answer wins: a page's, or another surface's (the terminal card), whose
//! future is dropped (its card closes) when a page answers first.

use std::sync::Weak;

use user_questions::{
    AnswerRequest, Answered, Answerer, AnswererError, ErrorCode, Next, UserQuestionError,
    async_trait,
};

use crate::hub::Hub;
use crate::sessions::CardKey;

pub(crate) struct WebAnswerer {
    pub(crate) hub: Weak<Hub>,
}

/// Whether the rest of the waterfall left the question to the pages: nobody else is there
/// (`NO_PROVIDER`); the pages, or the wait's own end, decide then. Any other outcome of the rest
/// is the request's, `ASK_TIMED_OUT` included: another surface's countdown times out the shared
/// request even while a page looks (SPEC §4.7: a hold is local to its UI).
fn leaves_it_to_the_pages(error: &AnswererError) -> bool {
    error.is(&ErrorCode::NoProvider)
}

/// Tells the hub the answerer stopped waiting however its future ended.
struct Ticket<'a> {
    hub: &'a Hub,
    key: CardKey,
    over: bool,
}

impl Ticket<'_> {
    /// The request was answered by `by`.
    fn answered(&mut self, by: &user_questions::Provenance) {
        self.over = true;
        self.hub.foreground_over(&self.key, Some(by));
    }
}

impl Drop for Ticket<'_> {
    fn drop(&mut self) {
        if !self.over {
            self.hub.foreground_dropped(&self.key);
        }
    }
}

#[async_trait]
impl Answerer for WebAnswerer {
    /// Shows the card and races the pages against the rest of the waterfall.
    ///
    /// Cancel safety: dropping the future (the request was cancelled or its window closed)
    /// closes the card's answer channel; the seam's `pending` or `cancelled` event then turns the
    /// card into a continued question or takes it down.
    async fn answer(
        &self,
        request: &AnswerRequest,
        next: Next<'_>,
    ) -> Result<Answered, AnswererError> {
        let Some(hub) = self.hub.upgrade() else {
            return next.run().await;
        };
        let (key, mut submitted) = hub.open_card(request);
        let mut ticket = Ticket {
            hub: &hub,
            key,
            over: false,
        };
        let rest = next.run();
        tokio::pin!(rest);
        let mut rest_done = false;
        let mut pages_gone = false;
        loop {
            tokio::select! {
                // A page's answer handed over first wins over the window closing: the seam's
                // dispatch takes an answer the chain returns before it looks at the token.
                biased;
                answer = &mut submitted, if !pages_gone => match answer {
                    Ok(answer) => {
                        let mut answered = Answered::human(answer.batch);
                        if let Some(name) = answer.answerer {
                            // Set, so the seam does not stamp the registration name over it.
                            answered.provenance.answerer = name;
                        }
                        let mut by = answered.provenance.clone();
                        if by.answerer.is_empty() {
                            by.answerer.clone_from(&hub.options.name);
                        }
                        ticket.answered(&by);
                        // Acknowledged before it is returned: nothing can come between.
                        let _ = answer.ack.send(());
                        return Ok(answered);
                    }
                    // The card was taken down (its call settled elsewhere); the rest decides.
                    Err(_) => pages_gone = true,
                },
                () = request.cancel.cancelled() => {
                    return Err(UserQuestionError::ask_aborted().into());
                }
                result = &mut rest, if !rest_done => match result {
                    Ok(answered) => {
                        ticket.answered(&answered.provenance);
                        return Ok(answered);
                    }
                    Err(error) if leaves_it_to_the_pages(&error) && !pages_gone => rest_done = true,
                    // The ticket's drop leaves a keyed card to the seam's event: an
                    // `ASK_TIMED_OUT` makes the call pending, and the card continued.
                    Err(error) => return Err(error),
                },
                else => return Err(UserQuestionError::no_provider().into()),
            }
        }
    }
}
