//! The agent's other tools: what the model is offered besides `ask_user_question`
//! ([`ToolSpec`], listed in the `request/header`), and the record of each of their calls
//! ([`ToolCall`]: `tool/call` when it starts, `tool/result` when it ends), through the same journal
//! as the questions, so a session log is the agent's whole history (SPEC §5.7, §7.5, §7.6).
//!
//! The host never runs these tools: the application does, between [`Host::record_tool_call`]
//! and [`ToolCall::finish`] (or inside [`Host::run_tool`]). A call whose record is dropped
//! unfinished, e.g. because the future running it was dropped, gets the result the reference
//! host's resume repair gives an interrupted call: `TOOL_OUTCOME_UNKNOWN` (gist G21).
//!
//! [`Host::record_tool_call`]: crate::Host::record_tool_call
//! [`Host::run_tool`]: crate::Host::run_tool

use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;
use session_log::{Record, TOOL_OUTCOME_UNKNOWN_TEXT, ToolResultRecord};
use tool_ask_user::{ErrorInfo, ToolOutcome};
use user_questions::{CallId, ErrorCode};

use crate::journal::Journal;

/// A tool the model is offered, as the `request/header` lists it:
/// `{"name":…,"description":…,"parameters":{…}}` (SPEC §7.5, §7.6: the exact schema the model
/// sees). The host lists `ask_user_question` itself; these are the others.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ToolSpec {
    /// The model-facing name.
    pub name: String,
    /// The model-facing description.
    pub description: String,
    /// The JSON Schema of the arguments.
    pub parameters: Value,
}

impl ToolSpec {
    /// A tool named `name`, described by `description`, taking arguments of the JSON Schema
    /// `parameters`.
    pub fn new(name: impl Into<String>, description: impl Into<String>, parameters: Value) -> Self {
        Self {
            name: name.into(),
            description: description.into(),
            parameters,
        }
    }
}

/// How a call of another tool ended, as its `tool/result` records it: one text block (what the
/// model reads), whether the call failed, a typed error's `{name, code}`, and metadata the model
/// never reads.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolResult {
    /// The text the model reads.
    pub text: String,
    /// Whether the call failed (`isError`).
    pub is_error: bool,
    /// `{"name":…,"code":…}` of a typed error (the log's `error`).
    pub error: Option<ErrorInfo>,
    /// Metadata the model never reads (the log's `meta`).
    pub meta: Option<Value>,
}

impl ToolResult {
    /// A successful call whose result the model reads as `text`.
    pub fn ok(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            is_error: false,
            error: None,
            meta: None,
        }
    }

    /// A failed call: the model reads `Error: <message>` (the reference's rendering, SPEC §3.3).
    pub fn error(message: impl std::fmt::Display) -> Self {
        Self {
            text: format!("Error: {message}"),
            is_error: true,
            error: None,
            meta: None,
        }
    }

    /// The reference runtime's result for a call the caller aborted: `Error: tool call aborted`,
    /// `{"name":"AbortError","code":"ABORTED"}`.
    pub fn aborted() -> Self {
        Self::error("tool call aborted")
            .with_error(ErrorCode::Aborted.error_name(), ErrorCode::Aborted)
    }

    /// With a typed error's `name` and `code` (e.g. `FsError`, `FS_NOT_FOUND`:
    /// `ErrorCode::parse` gives any code).
    #[must_use]
    pub fn with_error(mut self, name: impl Into<String>, code: ErrorCode) -> Self {
        self.error = Some(ErrorInfo {
            name: name.into(),
            code,
        });
        self
    }

    /// With metadata the model never reads.
    #[must_use]
    pub fn with_meta(mut self, meta: Value) -> Self {
        self.meta = Some(meta);
        self
    }

    /// The `tool/result` record (SPEC §7.5) of this result for `call_id`, with a fresh message id.
    pub(crate) fn into_record(self, turn: u64, step: u64, call_id: CallId) -> ToolResultRecord {
        let message_id = format!("msg-{}", pending_answer::new_message_id());
        self.into_record_with_id(turn, step, message_id, call_id)
    }

    fn into_record_with_id(
        self,
        turn: u64,
        step: u64,
        message_id: String,
        call_id: CallId,
    ) -> ToolResultRecord {
        let record = ToolResultRecord::new(
            Some(turn),
            Some(step),
            message_id,
            call_id,
            self.text,
            self.is_error,
        )
        .with_meta(self.meta);
        match self.error {
            Some(error) => record.with_error(error.name, error.code),
            None => record,
        }
    }
}

impl From<&ToolOutcome> for ToolResult {
    /// What an `ask_user_question` call's outcome logs: its text, `isError`, the typed error's
    /// `{name, code}` and its `meta` (the answer's provenance).
    fn from(outcome: &ToolOutcome) -> Self {
        Self {
            text: outcome.text.clone(),
            is_error: outcome.is_error,
            error: outcome.error.clone(),
            meta: outcome.meta.clone(),
        }
    }
}

/// A logged `tool/call` of another tool, waiting for its result
/// ([`Host::record_tool_call`](crate::Host::record_tool_call)). Finish it with
/// [`ToolCall::finish`]; dropped unfinished, it logs the `TOOL_OUTCOME_UNKNOWN` result resume
/// repair gives an interrupted call (the host cannot know whether the tool ran). It holds the
/// session's journal, not the host, so it may move into a task of its own.
#[must_use = "finish the call with its result; dropping it records an unknown outcome"]
pub struct ToolCall {
    journal: Arc<Journal>,
    call_id: CallId,
    turn: u64,
    step: u64,
    finished: bool,
}

impl std::fmt::Debug for ToolCall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolCall")
            .field("call_id", &self.call_id)
            .field("turn", &self.turn)
            .field("step", &self.step)
            .finish_non_exhaustive()
    }
}

impl ToolCall {
    pub(crate) fn new(journal: Arc<Journal>, call_id: CallId, turn: u64, step: u64) -> Self {
        Self {
            journal,
            call_id,
            turn,
            step,
            finished: false,
        }
    }

    /// The call's id.
    pub fn call_id(&self) -> &CallId {
        &self.call_id
    }

    /// Logs the call's `tool/result` (newest layout, in the turn and step of its call).
    pub fn finish(mut self, result: ToolResult) -> Result<(), crate::HostError> {
        self.finished = true;
        let record = result.into_record(self.turn, self.step, self.call_id.clone());
        self.journal.commit(Record::ToolResult(record))?;
        Ok(())
    }
}

impl Drop for ToolCall {
    fn drop(&mut self) {
        if self.finished {
            return;
        }
        let record = ToolResult {
            text: TOOL_OUTCOME_UNKNOWN_TEXT.to_owned(),
            is_error: true,
            error: None,
            meta: None,
        }
        .with_error(
            ErrorCode::ToolOutcomeUnknown.error_name(),
            ErrorCode::ToolOutcomeUnknown,
        )
        .into_record_with_id(
            self.turn,
            self.step,
            format!("interrupted-tool-result-{}", self.call_id),
            self.call_id.clone(),
        );
        if let Err(error) = self.journal.commit(Record::ToolResult(record)) {
            // The call stays without a result in the log; the next open's resume repair gives
            // it the same result.
            tracing::warn!(call_id = %self.call_id, %error,
                "a tool call dropped unfinished could not record its unknown outcome");
        }
    }
}
