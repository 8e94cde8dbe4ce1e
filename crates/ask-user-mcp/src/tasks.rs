//! Timed questions as tasks (the `io.modelcontextprotocol/tasks` extension, SEP-2663) in the
//! stateless revision: a timed `tools/call` from a client that declares the extension returns a
//! task at once and runs in the background; the task is `input_required` with the question's form
//! while the window is open (to a client that shows forms), the client answers it with
//! `tasks/update`, and any other surface (the page, a phone, the shell) may answer first: the first
//! answer wins. The window's end completes the task with the pending result; an answer given
//! after that (to the form still held, or elsewhere) is a late answer, delivered by the companion
//! tool as in every other case, and the task's result stays the pending result. `tasks/cancel`
//! withdraws the question (`ASK_ABORTED`), as a person cancelling it does.
//!
//! The process that runs a task keeps it; a task this process does not hold (another instance's,
//! or one from before a restart) is read from its session's log: settled, its logged result;
//! continued, the pending result; open, `working`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use rmcp::model::{
    CallToolResult, DetailedTask, ElicitRequest, ElicitRequestParams, ElicitResult, InputRequest,
    InputRequests, JsonObject, Task, TaskPayload,
};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;
use user_questions::sync::lock_unpoisoned;

use crate::mrtr::FORM_KEY;

/// How often a client is told to poll a task.
pub const TASK_POLL_INTERVAL: Duration = Duration::from_secs(1);

/// How long a finished task stays known to the process that ran it (then it is read from its log).
const KEEP_FINISHED: Duration = Duration::from_hours(1);

/// One task of this process: its call's state as a client polls it.
pub(crate) struct TaskEntry {
    /// The task's id: the call id.
    pub(crate) id: String,
    created: SystemTime,
    state: Mutex<EntryState>,
    /// Cancelled by `tasks/cancel`: withdraws the question.
    pub(crate) cancel: CancellationToken,
}

struct EntryState {
    updated: SystemTime,
    /// The call's result once it returned; `None` while it runs.
    result: Option<Finished>,
    /// The question's form while the client may answer it, and where its answer goes.
    form: Option<(ElicitRequestParams, oneshot::Sender<ElicitResult>)>,
}

enum Finished {
    Completed(JsonObject),
    Cancelled,
}

impl TaskEntry {
    fn new(id: String) -> Self {
        let now = SystemTime::now();
        Self {
            id,
            created: now,
            state: Mutex::new(EntryState {
                updated: now,
                result: None,
                form: None,
            }),
            cancel: CancellationToken::new(),
        }
    }

    /// Puts the question's form on the task (`input_required` while the call runs): the answer a
    /// client gives it with `tasks/update` arrives on the receiver.
    pub(crate) fn show_form(&self, params: ElicitRequestParams) -> oneshot::Receiver<ElicitResult> {
        let (reply, answer) = oneshot::channel();
        let mut state = lock_unpoisoned(&self.state);
        state.form = Some((params, reply));
        state.updated = SystemTime::now();
        answer
    }

    /// Takes the form off the task: the question was answered or ended another way.
    pub(crate) fn withdraw_form(&self) {
        let mut state = lock_unpoisoned(&self.state);
        if state.form.take().is_some() {
            state.updated = SystemTime::now();
        }
    }

    /// The call returned `result` (or was withdrawn by `tasks/cancel`).
    pub(crate) fn finish(&self, result: &CallToolResult) {
        let mut state = lock_unpoisoned(&self.state);
        state.result = Some(if self.cancel.is_cancelled() {
            Finished::Cancelled
        } else {
            Finished::Completed(as_object(result))
        });
        state.updated = SystemTime::now();
    }

    /// Hands a client's answer to the form; `false` when no form waits for one.
    fn take_form_answer(&self, answer: ElicitResult) -> bool {
        let form = lock_unpoisoned(&self.state).form.take();
        match form {
            Some((_, reply)) => reply.send(answer).is_ok(),
            None => false,
        }
    }

    /// The task as `tasks/get` shows it.
    pub(crate) fn detailed(&self) -> DetailedTask {
        let state = lock_unpoisoned(&self.state);
        let payload = match &state.result {
            Some(Finished::Completed(result)) => TaskPayload::Completed {
                result: result.clone(),
            },
            Some(Finished::Cancelled) => TaskPayload::Cancelled,
            None => match &state.form {
                Some((params, _)) => TaskPayload::InputRequired {
                    input_requests: form_requests(params),
                },
                None => TaskPayload::Working,
            },
        };
        DetailedTask::new(task_of(&self.id, self.created, state.updated), payload)
    }

    fn finished_before(&self, at: SystemTime) -> bool {
        let state = lock_unpoisoned(&self.state);
        state.result.is_some() && state.updated < at
    }
}

/// The form of a question as a task's `inputRequests`.
fn form_requests(params: &ElicitRequestParams) -> InputRequests {
    let mut requests = InputRequests::new();
    requests.insert(
        FORM_KEY.to_owned(),
        InputRequest::Elicitation(ElicitRequest::new(params.clone())),
    );
    requests
}

/// A tool result as a task's `result`.
pub(crate) fn as_object(result: &CallToolResult) -> JsonObject {
    match serde_json::to_value(result) {
        Ok(serde_json::Value::Object(object)) => object,
        _ => JsonObject::new(),
    }
}

/// The base fields of task `id`.
pub(crate) fn task_of(id: &str, created: SystemTime, updated: SystemTime) -> Task {
    Task::new(
        id,
        rmcp::model::TaskStatus::Working,
        iso8601(created),
        iso8601(updated),
    )
    .with_poll_interval_ms(u64::try_from(TASK_POLL_INTERVAL.as_millis()).unwrap_or(1000))
}

/// The tasks this process runs, by id.
#[derive(Default)]
pub(crate) struct Tasks {
    live: Mutex<HashMap<String, Arc<TaskEntry>>>,
}

/// Why `tasks/update` was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum UpdateError {
    /// The task is not one of this process's.
    #[error(
        "no task {0} runs in this server (a task is answered where it runs, or through the page, the shell or a phone)"
    )]
    Unknown(String),
    /// No form of the task waits for an answer.
    #[error("task {0} has no form waiting for an answer (it was answered, withdrawn or ended)")]
    NotWaiting(String),
    /// The update holds no answer to the form.
    #[error(
        "the update carries no answer to the form (inputResponses.{FORM_KEY} must be an elicitation result)"
    )]
    NoAnswer,
}

impl Tasks {
    /// A new task for call `id`; finished ones past their keeping are forgotten.
    pub(crate) fn start(&self, id: &str) -> Arc<TaskEntry> {
        let entry = Arc::new(TaskEntry::new(id.to_owned()));
        let mut live = lock_unpoisoned(&self.live);
        let cutoff = SystemTime::now()
            .checked_sub(KEEP_FINISHED)
            .unwrap_or(SystemTime::UNIX_EPOCH);
        live.retain(|_, task| !task.finished_before(cutoff));
        live.insert(id.to_owned(), Arc::clone(&entry));
        entry
    }

    /// Task `id`, if this process runs (or ran) it.
    pub(crate) fn get(&self, id: &str) -> Option<Arc<TaskEntry>> {
        lock_unpoisoned(&self.live).get(id).cloned()
    }

    /// `tasks/update`: the answer to task `id`'s form.
    pub(crate) fn update(
        &self,
        id: &str,
        responses: &rmcp::model::InputResponses,
    ) -> Result<(), UpdateError> {
        let task = self
            .get(id)
            .ok_or_else(|| UpdateError::Unknown(id.to_owned()))?;
        let answer = responses
            .get(FORM_KEY)
            .and_then(|value| serde_json::from_value::<ElicitResult>(value.clone()).ok())
            .ok_or(UpdateError::NoAnswer)?;
        if task.take_form_answer(answer) {
            Ok(())
        } else {
            Err(UpdateError::NotWaiting(id.to_owned()))
        }
    }
}

/// `at` as ISO 8601 in UTC with milliseconds (`2026-12-02T08:30:00.000Z`).
pub(crate) fn iso8601(at: SystemTime) -> String {
    let ms = at
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
    user_questions::time::rfc3339(ms)
}
