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

/// Errors of the rest of the waterfall that leave the question to the pages: nobody else is
/// there (`NO_PROVIDER`), or another surface's own countdown ran out (`ASK_TIMED_OUT`) while a
/// page may still hold the wait; the wait's own end decides then.
fn leaves_it_to_the_pages(error: &AnswererError) -> bool {
    matches!(
        error,
        AnswererError::Question(e)
            if *e.error_code() == ErrorCode::NoProvider || *e.error_code() == ErrorCode::AskTimedOut
    )
}

/// Tells the hub the answerer stopped waiting however its future ended.
struct Ticket<'a> {
    hub: &'a Hub,
    key: CardKey,
    over: bool,
}

impl Ticket<'_> {
    fn over(&mut self, by: Option<&str>) {
        self.over = true;
        self.hub.foreground_over(&self.key, by);
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
                biased;
                () = request.cancel.cancelled() => {
                    return Err(UserQuestionError::ask_aborted().into());
                }
                answer = &mut submitted, if !pages_gone => match answer {
                    Ok(answer) => {
                        let mut answered = Answered::human(answer.batch);
                        let by = match answer.provenance {
                            Some(provenance) => {
                                answered.provenance = provenance;
                                answered.provenance.answerer.clone()
                            }
                            None => hub.options.name.clone(),
                        };
                        ticket.over(Some(&by));
                        // Acknowledged before it is returned: nothing can come between.
                        let _ = answer.ack.send(());
                        return Ok(answered);
                    }
                    // The card was taken down (its call settled elsewhere); the rest decides.
                    Err(_) => pages_gone = true,
                },
                result = &mut rest, if !rest_done => match result {
                    Ok(answered) => {
                        ticket.over(Some(&answered.provenance.answerer));
                        return Ok(answered);
                    }
                    Err(error) if leaves_it_to_the_pages(&error) && !pages_gone => rest_done = true,
                    Err(error) => {
                        ticket.over(None);
                        return Err(error);
                    }
                },
                else => {
                    ticket.over(None);
                    return Err(UserQuestionError::no_provider().into());
                }
            }
        }
    }
}
