//! The elicitation answerer: asks the connected client's user with one `elicitation/create` form
//! per batch, bound to the MCP request in flight.
//!
//! It passes the request on when the call is not a call of its session in flight or the client
//! did not advertise form elicitation. Otherwise:
//!
//! | form result | blocking call | timed call |
//! |---|---|---|
//! | `accept` | the answers (validated by the seam) | the same, while the window is open |
//! | `decline` | `ASK_DECLINED` | `ASK_DECLINED` |
//! | `cancel` | `ASK_CANCELLED` | the claim is released and the window decides (pending) |
//! | content that does not fit the form | `BAD_ANSWER` | `BAD_ANSWER` |
//!
//! A timed call claims its wait while the form is open, for the time the window had left when
//! the form was sent; when that runs out the claim is released, the call returns its pending
//! result, and the form is withdrawn once the call is continued: nothing stays on the person's
//! screen while the model works on; the page, a phone and the shell take the late answer. An
//! `accept` that arrives before the withdrawal but after the window (the call's request ended
//! first) is a late answer, which the session takes once the call is continued
//! (`pending_answer::when_continued`) and which waits in its inbox for the companion tool.

use std::sync::{Arc, Weak};
use std::time::Duration;

use pending_answer::Continuation;
use rmcp::model::{
    CancelledNotificationParam, ElicitRequestParams, ElicitResult, ElicitationAction,
    ElicitationSchema,
};
use tokio::sync::oneshot;
use user_questions::{
    AnswerRequest, Answered, Answerer, AnswererError, ErrorCode, Next, Provenance, Question,
    QuestionEvents, UserQuestionError, UserQuestions, WaitKey, WeakUserQuestions, async_trait,
};

use crate::form::{FORM_MESSAGE, FormStyle, form_schema_for, read_form_for};
use crate::inflight::{FormSession, InFlight, current_call};
use crate::util::elicit_result;

/// The code of a form the person declined (an answerer's own code, SPEC §3.2).
pub const ASK_DECLINED: &str = "ASK_DECLINED";

/// `ASK_DECLINED`: the person declined the form.
pub fn declined() -> UserQuestionError {
    UserQuestionError::new(
        ErrorCode::Other(ASK_DECLINED.to_owned()),
        "The person declined to answer. Do not ask again unless they ask you to.",
    )
}

pub(crate) struct FormAnswerer {
    conn: Weak<dyn FormSession>,
    seam: WeakUserQuestions,
    name: String,
}

impl FormAnswerer {
    pub(crate) fn new(conn: Weak<dyn FormSession>, seam: &UserQuestions, name: String) -> Self {
        Self {
            conn,
            seam: seam.downgrade(),
            name,
        }
    }
}

/// What the form task hands back while the answerer still waits.
type FormOutcome = Result<rmcp::model::ClientResult, rmcp::ServiceError>;

#[async_trait]
impl Answerer for FormAnswerer {
    async fn answer(
        &self,
        request: &AnswerRequest,
        next: Next<'_>,
    ) -> Result<Answered, AnswererError> {
        let timed = match &request.wait {
            Some(WaitKey::Timed { call_id, .. }) => Some(call_id.clone()),
            Some(WaitKey::Indefinite { .. }) | None => None,
        };
        let (Some(conn), Some(seam)) = (self.conn.upgrade(), self.seam.upgrade()) else {
            return next.run().await;
        };
        // Only a call of this session's MCP request in flight, to a client that shows forms.
        let Some(in_flight) = current_call().filter(|c| c.form_mode && c.belongs_to(&conn)) else {
            return next.run().await;
        };
        let call_id = in_flight.call_id.clone();
        let claim = if let Some(timed_call) = &timed {
            let Some(agent) = request.agent.as_ref() else {
                return next.run().await;
            };
            match seam.attach_wait(agent, timed_call) {
                Ok(Some(claim)) => Some(claim),
                // The window has closed or cannot be held: leave the question to the others.
                Ok(None) | Err(_) => return next.run().await,
            }
        } else {
            None
        };
        let style = in_flight.form_style;
        let Some(params) = form_params(&request.questions, style) else {
            drop(claim);
            return next.run().await;
        };
        let prepared = user_questions::sync::lock_unpoisoned(&in_flight.prepared).take();
        if let Some(prepared) = prepared {
            // Answered in the round before this one: that form must be this call's.
            if prepared.form != crate::mrtr::form_digest(&params) {
                return Err(UserQuestionError::new(
                    ErrorCode::BadAnswer,
                    "The form answered in the earlier round is not the form of these questions.",
                )
                .into());
            }
            return match settle(&prepared.answer, &request.questions, style, timed.is_some()) {
                Settled::Answered(answered) => answered,
                Settled::TimedOut | Settled::Other => next.run().await,
            };
        }
        let channel = if let Some(task) = &in_flight.task {
            FormChannel::Task(Arc::clone(task), task.show_form(params))
        } else {
            let Some(handle) = in_flight.send_form(params).await else {
                drop(claim);
                return next.run().await;
            };
            FormChannel::Request(Box::new(handle))
        };
        let (tx, rx) = oneshot::channel::<FormOutcome>();
        tokio::spawn(form_task(
            channel,
            tx,
            LateRoute {
                conn: Arc::clone(&conn),
                in_flight: Arc::clone(&in_flight),
                call_id: call_id.clone(),
                questions: request.questions.clone(),
                provenance: Provenance::human(self.name.clone()),
                events: timed.is_some().then(|| seam.subscribe()),
            },
        ));
        let window = claim
            .as_ref()
            .map(|c| Duration::from_millis(c.remaining_ms()));
        let result = tokio::select! {
            biased;
            () = request.cancel.cancelled() => return Err(UserQuestionError::ask_aborted().into()),
            result = rx => result,
            () = sleep_or_forever(window) => {
                // The window ran out with the form open: give the wait back, so the call returns
                // its pending result; the form task takes a later answer as a late one.
                drop(claim);
                request.cancel.cancelled().await;
                return Err(UserQuestionError::ask_timed_out().into());
            }
        };
        let Some(elicited) = result.ok().and_then(Result::ok).and_then(elicit_result) else {
            // The client went away or answered with something else: others may still answer.
            drop(claim);
            return next.run().await;
        };
        match settle(&elicited, &request.questions, style, timed.is_some()) {
            Settled::Answered(answered) => answered,
            Settled::TimedOut => {
                drop(claim);
                request.cancel.cancelled().await;
                Err(UserQuestionError::ask_timed_out().into())
            }
            // A newer action this server does not know: leave the question to the others.
            Settled::Other => {
                drop(claim);
                next.run().await
            }
        }
    }
}

/// What a client's answer to the form settles.
enum Settled {
    /// The answers (accepted), or the error (declined, cancelled, a form that does not fit).
    Answered(Result<Answered, AnswererError>),
    /// A timed call's form cancelled: the call ends pending, as its window closing would.
    TimedOut,
    /// An action this server does not know.
    Other,
}

/// Reads the client's answer to the form of `questions`.
fn settle(
    elicited: &ElicitResult,
    questions: &[Question],
    style: FormStyle,
    timed: bool,
) -> Settled {
    match elicited.action {
        ElicitationAction::Accept => Settled::Answered(
            read_form_for(questions, elicited.content.as_ref(), style)
                .map(Answered::human)
                .map_err(|mismatch| {
                    UserQuestionError::new(
                        ErrorCode::BadAnswer,
                        format!("The client's form answer does not fit the questions: {mismatch}."),
                    )
                    .into()
                }),
        ),
        ElicitationAction::Decline => Settled::Answered(Err(declined().into())),
        ElicitationAction::Cancel if timed => Settled::TimedOut,
        ElicitationAction::Cancel => {
            Settled::Answered(Err(UserQuestionError::ask_cancelled().into()))
        }
        _ => Settled::Other,
    }
}

async fn sleep_or_forever(window: Option<Duration>) {
    match window {
        Some(window) => tokio::time::sleep(window).await,
        None => std::future::pending().await,
    }
}

/// The form request for `questions`; `None` if the schema is not one rmcp accepts.
pub(crate) fn form_params(questions: &[Question], style: FormStyle) -> Option<ElicitRequestParams> {
    let serde_json::Value::Object(schema) = form_schema_for(questions, style) else {
        return None;
    };
    match ElicitationSchema::from_json_schema(schema) {
        Ok(requested_schema) => Some(ElicitRequestParams::FormElicitationParams {
            meta: None,
            message: FORM_MESSAGE.to_owned(),
            requested_schema,
        }),
        Err(error) => {
            tracing::warn!(%error, "the questions do not make an elicitation form");
            None
        }
    }
}

/// Where an answer goes that arrives once the answerer stopped waiting.
struct LateRoute {
    /// Held until the form is answered or withdrawn, so a late answer always has its session.
    conn: Arc<dyn FormSession>,
    in_flight: Arc<InFlight>,
    call_id: user_questions::CallId,
    questions: Vec<Question>,
    provenance: Provenance,
    /// The seam's lifecycle events, subscribed while the form's window was still open: the call's
    /// continuation (its pending result durable) cannot be missed. `None` for a call that cannot
    /// go pending (a blocking one): its form goes when its request ends.
    events: Option<QuestionEvents>,
}

/// What the seam's events tell next of the call: its continuation, or another end; never, for a
/// call that cannot go pending (a blocking one, followed without events).
async fn next_word(
    events: &mut Option<QuestionEvents>,
    session: &user_questions::SessionId,
    call_id: &user_questions::CallId,
) -> Continuation {
    match events {
        Some(events) => pending_answer::continued(events, Some(session), call_id).await,
        None => std::future::pending().await,
    }
}

/// Where a form went: an `elicitation/create` request, or a task's `inputRequests`.
enum FormChannel {
    Request(Box<rmcp::service::RequestHandle<rmcp::RoleServer>>),
    Task(
        Arc<crate::tasks::TaskEntry>,
        oneshot::Receiver<ElicitResult>,
    ),
}

/// How a form is taken back.
enum Withdraw {
    /// `notifications/cancelled` of its request.
    Request(rmcp::Peer<rmcp::RoleServer>, rmcp::model::RequestId),
    /// Off its task.
    Task(Arc<crate::tasks::TaskEntry>),
}

impl FormChannel {
    /// The client's answer to come, and how to take the form back.
    fn split(
        self,
    ) -> (
        std::pin::Pin<Box<dyn std::future::Future<Output = FormOutcome> + Send>>,
        Withdraw,
    ) {
        match self {
            Self::Request(handle) => {
                let withdraw = Withdraw::Request(handle.peer.clone(), handle.id.clone());
                (Box::pin((*handle).await_response()), withdraw)
            }
            Self::Task(task, answer) => (
                Box::pin(async move {
                    answer
                        .await
                        .map(rmcp::model::ClientResult::ElicitResult)
                        .map_err(|_| rmcp::ServiceError::Cancelled {
                            reason: Some("the task's form was withdrawn".to_owned()),
                        })
                }),
                Withdraw::Task(task),
            ),
        }
    }
}

/// Awaits the client's answer to the form. While the answerer waits, the answer goes to it.
/// The form is withdrawn (`notifications/cancelled`, or taken off its task) once its call is
/// over for the form: continued (the window closed and the pending result is durable: nothing is
/// left on the person's screen while the model works on; the page, a phone and the shell take
/// the late answer), answered elsewhere, cancelled, or its request ended. An answer that crosses
/// the withdrawal (sent by the client before `notifications/cancelled` reached it) is dropped by
/// rmcp, which forgets a request once it cancels it: the question stays pending for the other
/// surfaces.
async fn form_task(channel: FormChannel, tx: oneshot::Sender<FormOutcome>, mut late: LateRoute) {
    let (response, withdraw) = channel.split();
    tokio::pin!(response);
    let session = late.in_flight.session_id.clone();
    let call_id = late.call_id.clone();
    let mut listening = true;
    let outcome = loop {
        let over = late.in_flight.done.cancelled();
        tokio::select! {
            biased;
            outcome = &mut response => break Some(outcome),
            // The host announces a continued call before its request ends: read first.
            told = next_word(&mut late.events, &session, &call_id), if listening => match told {
                Continuation::Continued | Continuation::Ended => break None,
                // Events were lost: the request's end decides.
                Continuation::Unknown => listening = false,
            },
            () = over => break None,
        }
    };
    let Some(outcome) = outcome else {
        match withdraw {
            Withdraw::Request(peer, request_id) => {
                let note = CancelledNotificationParam::new(
                    Some(request_id),
                    Some("the question was closed".to_owned()),
                );
                if let Err(error) = peer.notify_cancelled(note).await {
                    tracing::debug!(%error, "the form could not be withdrawn");
                }
            }
            Withdraw::Task(task) => task.withdraw_form(),
        }
        return;
    };
    let Err(outcome) = tx.send(outcome) else {
        return;
    };
    let Some(elicited) = outcome.ok().and_then(elicit_result) else {
        return;
    };
    if elicited.action != ElicitationAction::Accept {
        return;
    }
    let batch = match read_form_for(
        &late.questions,
        elicited.content.as_ref(),
        late.in_flight.form_style,
    ) {
        Ok(batch) => batch,
        Err(mismatch) => {
            tracing::warn!(%mismatch, call_id = %late.call_id, "a late form answer does not fit the questions");
            return;
        }
    };
    // The session takes it once the call is continued (it waits for that itself).
    late.conn
        .submit_late(late.call_id, batch, late.provenance)
        .await;
}
