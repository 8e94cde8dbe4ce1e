//! An answer a page posts: to the answerer waiting in the card's window, else to the desk as a
//! late answer (the desk waits for the call's continuation itself, when the window just closed).

use pending_answer::Submission;
use serde_json::json;
use tokio::sync::oneshot;
use user_questions::{AnswerBatch, CallId, Provenance};

use super::card::{Phase, Submitted, desk_key, find_key};
use super::{AnswerRefused, Hub, lock};
use crate::sessions::CardKey;

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

/// Where an accepted answer went.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum AnswerPath {
    Foreground,
    Late,
}

/// Where an answer from a page goes.
enum Target {
    /// To the answerer waiting in the card's window.
    Foreground(CardKey, oneshot::Sender<Submitted>, AnswerBatch),
    /// To the desk, as a late answer (or an answer to a question open elsewhere).
    Late { key: CardKey, batch: AnswerBatch },
}

impl Hub {
    /// An answer a page posted: to the waiting answerer while the card is in its window, else a
    /// late answer through the desk, which takes it once the host announced the call continued.
    pub(crate) async fn post(
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
                        // Continued, or its window just closed (the desk takes the answer once the
                        // call is continued).
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
        drop(seam);
        let target = match found {
            Some(target) => target,
            // No card of this surface: a question the desk has (a log on disk, a database).
            None => Target::Late {
                key: self.desk_question(call_id, session).await?,
                batch,
            },
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
                // answer is a late one.
                self.submit_late(key, batch, answerer).await?;
                Ok(AnswerPath::Late)
            }
            Target::Late { key, batch } => {
                self.submit_late(key, batch, answerer).await?;
                Ok(AnswerPath::Late)
            }
        }
    }

    /// The one question of the desk with `call_id` (in `session`, when given) an answer given
    /// here reaches.
    async fn desk_question(
        &self,
        call_id: &CallId,
        session: Option<&str>,
    ) -> Result<CardKey, AnswerRefused> {
        let desk = self.desk.as_ref().ok_or(AnswerRefused::NotWaiting)?;
        let found = desk.find(call_id).await.map_err(|error| {
            tracing::warn!(%error, "the questions cannot be looked up");
            AnswerRefused::NotWaiting
        })?;
        let mut matching = found
            .iter()
            .filter(|q| q.answerable && session.is_none_or(|s| s == q.session));
        let question = matching.next().ok_or(AnswerRefused::NotWaiting)?;
        if matching.next().is_some() {
            return Err(AnswerRefused::Ambiguous);
        }
        Ok(desk_key(question))
    }

    /// Submits a late answer to the desk; once taken, the card goes and the pages are told it
    /// was sent.
    async fn submit_late(
        &self,
        key: CardKey,
        batch: AnswerBatch,
        answerer: Option<String>,
    ) -> Result<(), AnswerRefused> {
        let desk = self.desk.clone().ok_or(AnswerRefused::NotWaiting)?;
        let provenance = Provenance::human(answerer.unwrap_or_else(|| self.options.name.clone()));
        let submission = Submission::new(
            key.session.clone(),
            key.call_id.clone(),
            batch.clone(),
            provenance,
        );
        desk.submit(submission).await?;
        {
            let mut state = lock(&self.state);
            state.cards.remove(&key);
            state.queued.insert(key.clone());
        }
        self.publish(
            "queued",
            &json!({"session": key.session, "callId": key.call_id, "late": true, "answers": batch.answers}),
        );
        Ok(())
    }
}
