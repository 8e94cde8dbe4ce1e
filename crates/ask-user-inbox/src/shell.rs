//! The shell as a surface of the inbox: every question the inbox shows waits here too, so a
//! command in a shell (`ask-user answer CALL_ID`) can answer it in its window through the inbox's
//! socket ([`answer_in_window`]); like the page, it races the rest of the inbox's waterfall, and
//! the first answer wins.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::oneshot;
use user_questions::sync::lock_unpoisoned as lock;
use user_questions::{
    AnswerBatch, AnswerRequest, Answered, Answerer, AnswererError, CallId, Next, Provenance,
    Question, UserQuestionError, UserQuestions, WaitKey, async_trait,
};

use crate::link::Stream;
use crate::wire::{Reader, ToHost, ToInbox, WireAnswer, Writer};

type Key = (String, CallId);

/// The questions waiting in the inbox's seam, each with the way to answer it here.
#[derive(Default)]
pub(crate) struct ShellHold {
    waiting: Mutex<HashMap<Key, Waiting>>,
}

struct Waiting {
    questions: Vec<Question>,
    answer: oneshot::Sender<(AnswerBatch, Provenance)>,
}

impl ShellHold {
    /// Answers the question `key` names with `answers`, checked against its questions first.
    pub(crate) fn answer(
        &self,
        seam: &UserQuestions,
        key: &Key,
        answers: &AnswerBatch,
        provenance: Provenance,
    ) -> WireAnswer {
        let mut waiting = lock(&self.waiting);
        let Some(question) = waiting.get(key) else {
            return WireAnswer::NotWaiting;
        };
        let answers = match seam.validate_answers(&question.questions, answers, Some(&key.1)) {
            Ok(answers) => answers,
            Err(error) => {
                return WireAnswer::BadAnswer {
                    code: error.code().to_owned(),
                    message: error.message().to_owned(),
                };
            }
        };
        let Some(question) = waiting.remove(key) else {
            return WireAnswer::NotWaiting;
        };
        match question.answer.send((answers, provenance)) {
            Ok(()) => WireAnswer::Taken,
            Err(_) => WireAnswer::NotWaiting,
        }
    }
}

/// The hold as an answerer in the inbox's seam: it waits for a shell and races the rest.
pub(crate) struct ShellAnswerer(pub(crate) Arc<ShellHold>);

#[async_trait]
impl Answerer for ShellAnswerer {
    async fn answer(
        &self,
        request: &AnswerRequest,
        next: Next<'_>,
    ) -> Result<Answered, AnswererError> {
        let Some(WaitKey::Timed { call_id: call, .. } | WaitKey::Indefinite { call_id: call }) =
            &request.wait
        else {
            return next.run().await;
        };
        let Some(agent) = request.agent.as_ref() else {
            return next.run().await;
        };
        let key = (agent.session().id().as_str().to_owned(), call.clone());
        let (tx, rx) = oneshot::channel();
        lock(&self.0.waiting).insert(
            key.clone(),
            Waiting {
                questions: request.questions.clone(),
                answer: tx,
            },
        );
        // However this ends, the question no longer waits here.
        let _gone = Gone(&self.0, &key);
        let rest = next.run();
        tokio::pin!(rest);
        tokio::select! {
            Ok((answers, provenance)) = rx => Ok(Answered { answers, provenance }),
            result = &mut rest => result,
            () = request.cancel.cancelled() => Err(UserQuestionError::ask_aborted().into()),
        }
    }
}

struct Gone<'a>(&'a ShellHold, &'a Key);

impl Drop for Gone<'_> {
    fn drop(&mut self) {
        lock(&self.0.waiting).remove(self.1);
    }
}

/// Why an answer given through the inbox's socket was not taken.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum InWindowRefusal {
    /// No question of the session with that call waits in its window in the inbox.
    #[error("no question of session {session:?} with call {call} waits in the inbox")]
    NotWaiting {
        /// The session.
        session: String,
        /// The call.
        call: CallId,
    },
    /// The answers do not fit the questions (`BAD_ANSWER`).
    #[error("{message}")]
    BadAnswer {
        /// The code.
        code: String,
        /// What is wrong.
        message: String,
    },
    /// The inbox cannot be reached, or said nothing.
    #[error("the inbox did not answer: {0}")]
    Unreachable(String),
}

/// Answers `call` of `session`, waiting in its window in the inbox `stream` reaches (its socket:
/// [`Rendezvous::socket`](crate::Rendezvous::socket)), with `answers` given by `provenance`: as
/// the page does, first answer wins.
///
/// # Errors
///
/// The question does not wait there, the answers do not fit it, or the inbox cannot be reached.
pub async fn answer_in_window(
    stream: Stream,
    session: &str,
    call: &CallId,
    answers: AnswerBatch,
    provenance: Provenance,
) -> Result<(), InWindowRefusal> {
    let unreachable = |e: &dyn std::fmt::Display| InWindowRefusal::Unreachable(e.to_string());
    let (read, write) = tokio::io::split(stream);
    let mut writer = Writer::new(write);
    let message = ToInbox::Answer {
        id: 1,
        session: session.to_owned(),
        call: call.clone(),
        answers,
        provenance,
    };
    writer.send(&message).await.map_err(|e| unreachable(&e))?;
    let mut reader = Reader::<_, ToHost>::new(read);
    while let Some(message) = reader.next().await {
        let result = match message {
            ToHost::Answered { result, .. } => result,
            ToHost::Refused { code, message } => {
                let said = format!("{code}: {message}");
                return Err(unreachable(&user_questions::sanitize::visible(&said)));
            }
            _ => continue,
        };
        return match result {
            WireAnswer::Taken => Ok(()),
            WireAnswer::NotWaiting => Err(InWindowRefusal::NotWaiting {
                session: session.to_owned(),
                call: call.clone(),
            }),
            WireAnswer::BadAnswer { code, message } => {
                Err(InWindowRefusal::BadAnswer { code, message })
            }
        };
    }
    Err(unreachable(&"the connection closed"))
}
