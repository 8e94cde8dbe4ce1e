//! Answerers written in Python: an async callable in the seam's waterfall.
//!
//! The callable runs on the event loop of the `call_tool` that asked (a task-local, set around
//! each call), through `ask_user._bridge.start`, which reports back through [`Done`]. Its
//! `next()` asks this side, through [`NextHandle`], to run the rest of the waterfall; the result
//! goes back as JSON. When the seam drops the answer (the window closed, the call was
//! cancelled), the Python task is cancelled.

use std::sync::{Arc, Mutex, PoisonError};

use ask_user_host::HostRuntime;
use async_trait::async_trait;
use pyo3::prelude::*;
use serde_json::json;
use tokio::sync::oneshot;
use user_questions::{
    AnswerBatch, AnswerItem, AnswerRequest, Answered, Answerer, AnswererError, AnswererGuard, Next,
    RegisterOptions, UserQuestionError, UserQuestions, answerer_fn,
};

tokio::task_local! {
    /// The asyncio event loop of the `call_tool` running in this task.
    pub(crate) static EVENT_LOOP: Arc<Py<PyAny>>;
}

/// What the Python answerer ended with.
enum Ended {
    /// Answer items, as JSON.
    Answers(String),
    /// It returned what `next()` gave it.
    Next,
    /// It returned `None`: the rest of the waterfall answers.
    Declined,
    /// It raised: the code, when an `AskUserError`, and the message.
    Raised(Option<String>, String),
}

/// The result of the rest of the waterfall, for `next()`.
type NextResult = Result<String, (Option<String>, String)>;

/// How the Python side reports its end. Called once.
#[pyclass(module = "ask_user._native", frozen)]
pub struct Done {
    tx: Mutex<Option<oneshot::Sender<Ended>>>,
}

impl Done {
    fn send(&self, ended: Ended) {
        let tx = self
            .tx
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(tx) = tx {
            let _ = tx.send(ended);
        }
    }
}

#[pymethods]
impl Done {
    /// The answer items, as JSON.
    fn answers(&self, answers: String) {
        self.send(Ended::Answers(answers));
    }

    /// It returned `next()`'s answer.
    fn passed_on(&self) {
        self.send(Ended::Next);
    }

    /// It returned `None`.
    fn declined(&self) {
        self.send(Ended::Declined);
    }

    /// It raised.
    #[pyo3(signature = (code, message))]
    fn raised(&self, code: Option<String>, message: String) {
        self.send(Ended::Raised(code, message));
    }
}

/// The rest of the waterfall, run at most once.
#[pyclass(module = "ask_user._native", frozen)]
pub struct NextHandle {
    tx: Mutex<Option<oneshot::Sender<oneshot::Sender<NextResult>>>>,
}

#[pymethods]
impl NextHandle {
    /// Runs the rest of the waterfall: an awaitable of its answers as JSON, raising
    /// `AskUserError` when it failed.
    fn run<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let tx = self
            .tx
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        let Some(tx) = tx else {
            return Err(crate::error::ask_error(
                "NEXT_ALREADY_RUN",
                "next() runs the rest of the waterfall once",
            ));
        };
        let (reply_tx, reply_rx) = oneshot::channel();
        let sent = tx.send(reply_tx).is_ok();
        let event_loop = crate::bridge::running_loop(py)?;
        crate::bridge::future(py, &event_loop, move |_cancelled| async move {
            let result = if sent { reply_rx.await.ok() } else { None };
            match result {
                Some(Ok(answers)) => Ok(Some(answers)),
                Some(Err((code, message))) => Err((
                    code.unwrap_or_else(|| "ANSWERER_FAILED".to_owned()),
                    message,
                )),
                None => Err(("ASK_ABORTED".to_owned(), "the question ended".to_owned())),
            }
        })
    }
}

/// A Python callable in the waterfall.
struct PyAnswerer {
    callable: Py<PyAny>,
}

/// Cancels the Python task when the answer is dropped unfinished.
struct CancelOnDrop(Option<Py<PyAny>>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if let Some(future) = self.0.take() {
            crate::bridge::attach(|py| {
                let _ = future.bind(py).call_method0("cancel");
            });
        }
    }
}

fn request_json(request: &AnswerRequest) -> String {
    json!({
        "questions": request.questions,
        "callId": request.wait.as_ref().map(|w| w.call_id().as_str()),
        "timed": request.wait.as_ref().is_some_and(user_questions::WaitKey::is_timed),
        "sessionId": request.agent.as_ref().map(|agent| agent.session().id().to_string()),
    })
    .to_string()
}

fn foreign(message: String) -> AnswererError {
    AnswererError::foreign(message)
}

fn items(answers: &str) -> Result<AnswerBatch, AnswererError> {
    let items: Vec<AnswerItem> = serde_json::from_str(answers)
        .map_err(|e| foreign(format!("the answerer's answers: {e}")))?;
    Ok(AnswerBatch::new(items))
}

fn next_result(result: &Result<Answered, AnswererError>) -> NextResult {
    match result {
        Ok(answered) => Ok(serde_json::to_string(&answered.answers.answers).unwrap_or_default()),
        Err(error) => Err((error.code().map(str::to_owned), error.to_string())),
    }
}

#[async_trait]
impl Answerer for PyAnswerer {
    async fn answer(
        &self,
        request: &AnswerRequest,
        next: Next<'_>,
    ) -> Result<Answered, AnswererError> {
        let Ok(event_loop) = EVENT_LOOP.try_with(Arc::clone) else {
            // Asked some other way than the Python host's `call_tool`: no loop to run on.
            return next.run().await;
        };
        let (done_tx, mut done_rx) = oneshot::channel();
        let (next_tx, mut next_rx) = oneshot::channel();
        let started = crate::bridge::attach(|py| -> PyResult<Py<PyAny>> {
            let done = Py::new(
                py,
                Done {
                    tx: Mutex::new(Some(done_tx)),
                },
            )?;
            let handle = Py::new(
                py,
                NextHandle {
                    tx: Mutex::new(Some(next_tx)),
                },
            )?;
            let start = py.import("ask_user._bridge")?.getattr("start")?;
            Ok(start
                .call1((
                    self.callable.bind(py),
                    request_json(request),
                    handle,
                    done,
                    event_loop.bind(py),
                ))?
                .unbind())
        });
        let Some(started) = started else {
            // The interpreter is exiting.
            return next.run().await;
        };
        let future = started.map_err(|e| foreign(format!("the Python answerer: {e}")))?;
        let _cancel = CancelOnDrop(Some(future));
        let mut next = Some(next);
        // The rest of the waterfall while it runs for `next()`, and where its result goes: polled
        // beside the answerer's own end, which may come first (it stopped waiting for `next()`).
        let mut running: Option<(RestFuture<'_>, oneshot::Sender<NextResult>)> = None;
        let mut next_answered: Option<Result<Answered, AnswererError>> = None;
        loop {
            tokio::select! {
                ended = &mut done_rx => {
                    return match ended {
                        Ok(Ended::Answers(answers)) => Ok(Answered::human(items(&answers)?)),
                        Ok(Ended::Next) => next_answered.unwrap_or_else(|| {
                            Err(foreign("the answerer returned an answer of next() it never ran".to_owned()))
                        }),
                        Ok(Ended::Declined) => match (running.take(), next.take()) {
                            (Some((rest, _)), _) => rest.await,
                            (None, Some(rest)) => rest.run().await,
                            (None, None) => next_answered
                                .unwrap_or_else(|| Err(UserQuestionError::no_provider().into())),
                        },
                        Ok(Ended::Raised(Some(code), _)) if code == "NO_PROVIDER" => {
                            Err(UserQuestionError::no_provider().into())
                        }
                        Ok(Ended::Raised(Some(code), message)) => Err(foreign(format!("{code}: {message}"))),
                        Ok(Ended::Raised(None, message)) => Err(foreign(message)),
                        Err(_) => Err(foreign("the Python answerer ended without a result".to_owned())),
                    };
                }
                Ok(reply) = &mut next_rx, if next.is_some() => {
                    if let Some(rest) = next.take() {
                        running = Some((Box::pin(rest.run()), reply));
                    }
                }
                answered = async {
                    match running.as_mut() {
                        Some((rest, _)) => rest.as_mut().await,
                        None => std::future::pending().await,
                    }
                }, if running.is_some() => {
                    if let Some((_, reply)) = running.take() {
                        let _ = reply.send(next_result(&answered));
                    }
                    next_answered = Some(answered);
                }
            }
        }
    }
}

/// The rest of the waterfall, running.
type RestFuture<'a> = std::pin::Pin<
    Box<dyn std::future::Future<Output = Result<Answered, AnswererError>> + Send + 'a>,
>;

/// Registers `callable` on the runtime's seam.
pub(crate) fn register(
    runtime: &HostRuntime,
    callable: Py<PyAny>,
    name: &str,
) -> PyResult<Registration> {
    if name.is_empty() {
        return Err(crate::error::ask_error(
            "BAD_CONFIG",
            "an answerer's name must not be empty",
        ));
    }
    let guard = runtime.seam().register(
        Arc::new(PyAnswerer { callable }),
        RegisterOptions::global(name),
    );
    Ok(Registration {
        guard: Mutex::new(Some(guard)),
    })
}

/// A rule on `seam` that answers every question with `items`.
pub(crate) fn fixed_on(seam: &UserQuestions, items: Vec<AnswerItem>) -> Registration {
    let answerer = answerer_fn(move |_request, _next| {
        let batch = AnswerBatch::new(items.clone());
        Box::pin(async move { Ok(Answered::rule(batch)) })
    });
    let guard = seam.register(answerer, RegisterOptions::global("fixed"));
    Registration {
        guard: Mutex::new(Some(guard)),
    }
}

/// An answerer's registration: `remove()` takes it out of the waterfall.
#[pyclass(module = "ask_user._native", frozen)]
pub struct Registration {
    guard: Mutex<Option<AnswererGuard>>,
}

#[pymethods]
impl Registration {
    /// Takes the answerer out of the waterfall (questions asked from then on skip it).
    fn remove(&self) {
        self.guard
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
    }
}
