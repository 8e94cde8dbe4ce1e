//! The error taxonomy (SPEC §3): one typed error with a stable code, and the two wrappers that
//! keep a typed error apart from a foreign one.
//!
//! Messages are written for the model: short, and saying what to do next. Tests assert codes and
//! the facts a message must carry, never whole sentences.

use std::error::Error as StdError;
use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::ids::CallId;
use crate::util::quoted;

/// A boxed error from outside the taxonomy.
pub type BoxError = Box<dyn StdError + Send + Sync>;

/// An error code. The known codes are SPEC §3.2's; answerers may use codes of their own
/// ([`ErrorCode::Other`]), which the seam passes through unchanged.
///
/// On the wire it is its `SCREAMING_SNAKE` string ([`ErrorCode::as_str`]); it deserialises with
/// [`ErrorCode::parse`], so a code of our own reads back as its variant and any other string as
/// [`ErrorCode::Other`]. Compare codes as values, never as strings.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ErrorCode {
    /// The request was cancelled before or while waiting, or the seam shut down.
    AskAborted,
    /// The batch has no questions.
    EmptyQuestions,
    /// The named agent is not the registry's live handle for its id, or there is no registry.
    CallerNotLive,
    /// The live agent is owned by another live agent.
    DelegatedCaller,
    /// An intent is inconsistent with its question.
    BadIntent,
    /// A structural limit is violated.
    BadQuestions,
    /// Every answerer declined, or none is registered.
    NoProvider,
    /// A seam timeout outside `1..=2147483647` ms.
    BadTimeout,
    /// The agent already has a foreground wait under this call id.
    DuplicateWait,
    /// The foreground window ended.
    AskTimedOut,
    /// The person closed an unkeyed card or declined to answer.
    AskCancelled,
    /// A late reply for this call is already queued or claimed.
    ReplyQueued,
    /// The answer batch is invalid.
    BadAnswer,
    /// Tool arguments violate the schema, or the timeout is out of range.
    InvalidArgs,
    /// A logged call has no logged result after a crash (synthetic repair result).
    ToolOutcomeUnknown,
    /// The caller cancelled after the tool body had already succeeded.
    Aborted,
    /// A code defined by an answerer or a host.
    Other(String),
}

impl ErrorCode {
    /// Every code SPEC §3.2 defines, in its table order.
    pub const KNOWN: [ErrorCode; 16] = [
        Self::AskAborted,
        Self::EmptyQuestions,
        Self::CallerNotLive,
        Self::DelegatedCaller,
        Self::BadIntent,
        Self::BadQuestions,
        Self::NoProvider,
        Self::BadTimeout,
        Self::DuplicateWait,
        Self::AskTimedOut,
        Self::AskCancelled,
        Self::ReplyQueued,
        Self::BadAnswer,
        Self::InvalidArgs,
        Self::ToolOutcomeUnknown,
        Self::Aborted,
    ];

    /// The stable `SCREAMING_SNAKE` code.
    pub fn as_str(&self) -> &str {
        match self {
            Self::AskAborted => "ASK_ABORTED",
            Self::EmptyQuestions => "EMPTY_QUESTIONS",
            Self::CallerNotLive => "CALLER_NOT_LIVE",
            Self::DelegatedCaller => "DELEGATED_CALLER",
            Self::BadIntent => "BAD_INTENT",
            Self::BadQuestions => "BAD_QUESTIONS",
            Self::NoProvider => "NO_PROVIDER",
            Self::BadTimeout => "BAD_TIMEOUT",
            Self::DuplicateWait => "DUPLICATE_WAIT",
            Self::AskTimedOut => "ASK_TIMED_OUT",
            Self::AskCancelled => "ASK_CANCELLED",
            Self::ReplyQueued => "REPLY_QUEUED",
            Self::BadAnswer => "BAD_ANSWER",
            Self::InvalidArgs => "INVALID_ARGS",
            Self::ToolOutcomeUnknown => "TOOL_OUTCOME_UNKNOWN",
            Self::Aborted => "ABORTED",
            Self::Other(code) => code,
        }
    }

    /// Reads a code string back: a known code gives its variant, anything else [`ErrorCode::Other`].
    pub fn parse(code: &str) -> Self {
        Self::KNOWN
            .into_iter()
            .find(|known| known.as_str() == code)
            .unwrap_or_else(|| Self::Other(code.to_owned()))
    }

    /// The error name logged and returned with the code (`{"name":…,"code":…}`, SPEC §3.3).
    pub fn error_name(&self) -> &'static str {
        match self {
            Self::InvalidArgs => "ToolArgsError",
            Self::ToolOutcomeUnknown => "ToolOutcomeUnknownError",
            Self::Aborted => "AbortError",
            Self::AskAborted
            | Self::EmptyQuestions
            | Self::CallerNotLive
            | Self::DelegatedCaller
            | Self::BadIntent
            | Self::BadQuestions
            | Self::NoProvider
            | Self::BadTimeout
            | Self::DuplicateWait
            | Self::AskTimedOut
            | Self::AskCancelled
            | Self::ReplyQueued
            | Self::BadAnswer
            | Self::Other(_) => UserQuestionError::NAME,
        }
    }

    /// A one-line meaning, for documentation such as the tool catalog.
    pub fn meaning(&self) -> &'static str {
        match self {
            Self::AskAborted => "the call was cancelled before an answer arrived",
            Self::EmptyQuestions => "the call had no questions",
            Self::CallerNotLive => "the caller is not the live instance of the agent it names",
            Self::DelegatedCaller => {
                "a child agent owned by another agent may not ask the person; report the question in the final result"
            }
            Self::BadIntent => "a presentation intent does not fit its question",
            Self::BadQuestions => {
                "a question limit was broken (repeated id, too many questions or options)"
            }
            Self::NoProvider => {
                "nobody could answer: every answerer declined or none is registered"
            }
            Self::BadTimeout => "the seam timeout is not in 1..=2147483647 ms",
            Self::DuplicateWait => "this agent already waits on this call id",
            Self::AskTimedOut => "the foreground window closed with no answer",
            Self::AskCancelled => "the person chose not to answer",
            Self::ReplyQueued => "a late reply for this call is already waiting to be admitted",
            Self::BadAnswer => "the answer batch does not fit the questions",
            Self::InvalidArgs => "the tool arguments do not fit the schema",
            Self::ToolOutcomeUnknown => "the process stopped before the call's result was logged",
            Self::Aborted => "the tool call was aborted after it had finished",
            Self::Other(_) => "a code defined by an answerer or host",
        }
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for ErrorCode {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for ErrorCode {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let code = String::deserialize(deserializer)?;
        Ok(Self::parse(&code))
    }
}

/// A typed error of the taxonomy (wire name `UserQuestionError`). `Display` is the message.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct UserQuestionError {
    code: ErrorCode,
    message: String,
    #[source]
    source: Option<BoxError>,
}

impl UserQuestionError {
    /// The wire and log name of seam errors.
    pub const NAME: &'static str = "UserQuestionError";

    /// An error with a code and a message.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            source: None,
        }
    }

    /// Attaches the error that caused this one.
    #[must_use]
    pub fn with_source(mut self, source: BoxError) -> Self {
        self.source = Some(source);
        self
    }

    /// The stable code string, e.g. `NO_PROVIDER`.
    pub fn code(&self) -> &str {
        self.code.as_str()
    }

    /// The code as an enum.
    pub fn error_code(&self) -> &ErrorCode {
        &self.code
    }

    /// The message (also the `Display`).
    pub fn message(&self) -> &str {
        &self.message
    }

    /// Whether the code is `code`.
    pub fn is(&self, code: &ErrorCode) -> bool {
        &self.code == code
    }

    /// Takes the source out, leaving none.
    pub fn take_source(&mut self) -> Option<BoxError> {
        self.source.take()
    }

    /// `ASK_ABORTED`.
    pub fn ask_aborted() -> Self {
        Self::new(
            ErrorCode::AskAborted,
            "The question was cancelled before any answer arrived.",
        )
    }

    /// `EMPTY_QUESTIONS`.
    pub fn empty_questions() -> Self {
        Self::new(
            ErrorCode::EmptyQuestions,
            "Ask at least one question per call.",
        )
    }

    /// `CALLER_NOT_LIVE`.
    pub fn caller_not_live() -> Self {
        Self::new(
            ErrorCode::CallerNotLive,
            "The calling agent is not the current live instance of that agent in the agent registry.",
        )
    }

    /// `DELEGATED_CALLER`.
    pub fn delegated_caller() -> Self {
        Self::new(
            ErrorCode::DelegatedCaller,
            "You run as a child of another agent, so you cannot ask the person. Put the open question or decision in your final result instead.",
        )
    }

    /// `BAD_INTENT`, approve form.
    pub fn bad_intent_approve(question_id: &str, kind: &str, approve: &str) -> Self {
        Self::new(
            ErrorCode::BadIntent,
            format!(
                "Question {}: the {kind} intent approves with {}, which is not one of its option labels.",
                quoted(question_id),
                quoted(approve)
            ),
        )
    }

    /// `BAD_INTENT`, detail form.
    pub fn bad_intent_detail(question_id: &str, kind: &str) -> Self {
        Self::new(
            ErrorCode::BadIntent,
            format!(
                "Question {}: the {kind} intent has no detail to review.",
                quoted(question_id)
            ),
        )
    }

    /// `BAD_QUESTIONS`: a repeated question id.
    pub fn repeated_question_id(id: &str) -> Self {
        Self::new(
            ErrorCode::BadQuestions,
            format!(
                "Question id {} appears more than once (allowed: once per call). Give each question its own id.",
                quoted(id)
            ),
        )
    }

    /// `BAD_QUESTIONS`: too many questions.
    pub fn too_many_questions(actual: usize, max: usize) -> Self {
        Self::new(
            ErrorCode::BadQuestions,
            format!(
                "{actual} questions in one call (allowed: at most {max}). Split them into several calls or drop some."
            ),
        )
    }

    /// `BAD_QUESTIONS`: an options count out of range.
    pub fn options_out_of_range(question_id: &str, actual: usize, min: usize, max: usize) -> Self {
        Self::new(
            ErrorCode::BadQuestions,
            format!(
                "Question {} has {actual} options (allowed: none, or {min} to {max}). Merge or drop options.",
                quoted(question_id)
            ),
        )
    }

    /// `BAD_QUESTIONS`: a question a person cannot answer well as written (an empty or oversized
    /// id, question or label, control characters in an id, two options with one label). `what`
    /// says what is wrong and how to fix it.
    pub fn unanswerable_question(question_id: &str, what: &str) -> Self {
        Self::new(
            ErrorCode::BadQuestions,
            format!("Question {}: {what}", quoted(question_id)),
        )
    }

    /// `NO_PROVIDER`.
    pub fn no_provider() -> Self {
        Self::new(
            ErrorCode::NoProvider,
            "Nobody can answer this question: every answerer declined or none is registered.",
        )
    }

    /// `BAD_TIMEOUT`.
    pub fn bad_timeout(timeout_ms: i64) -> Self {
        Self::new(
            ErrorCode::BadTimeout,
            format!(
                "Timeout {timeout_ms} ms is invalid: the wait must be a whole number of milliseconds from 1 to 2147483647."
            ),
        )
    }

    /// `DUPLICATE_WAIT`.
    pub fn duplicate_wait(call_id: &CallId) -> Self {
        Self::new(
            ErrorCode::DuplicateWait,
            format!(
                "A foreground wait for call {} is already running for this agent.",
                quoted(call_id.as_str())
            ),
        )
    }

    /// `ASK_TIMED_OUT`.
    pub fn ask_timed_out() -> Self {
        Self::new(
            ErrorCode::AskTimedOut,
            "The question window closed with no answer.",
        )
    }

    /// `ASK_CANCELLED`.
    pub fn ask_cancelled() -> Self {
        Self::new(ErrorCode::AskCancelled, "The person chose not to answer.")
    }

    /// `REPLY_QUEUED`.
    pub fn reply_queued(call_id: &CallId) -> Self {
        Self::new(
            ErrorCode::ReplyQueued,
            format!(
                "A reply to call {} is already waiting to be admitted; retry only after it is discarded.",
                quoted(call_id.as_str())
            ),
        )
    }

    /// `BAD_ANSWER`, naming the call (when keyed), the number of questions and the first violation.
    pub fn bad_answer(call_id: Option<&CallId>, questions: usize, violation: &str) -> Self {
        let call = call_id.map_or_else(String::new, |c| format!(" to call {}", quoted(c.as_str())));
        Self::new(
            ErrorCode::BadAnswer,
            format!(
                "Invalid answer{call} ({questions} question{}): {violation}.",
                if questions == 1 { "" } else { "s" }
            ),
        )
    }
}

/// What an answerer returns on failure: a typed error, or a foreign one the seam does not relabel.
#[derive(Debug, thiserror::Error)]
pub enum AnswererError {
    /// A typed error; the seam passes it through unchanged.
    #[error(transparent)]
    Question(#[from] UserQuestionError),
    /// Any other error.
    #[error(transparent)]
    Foreign(BoxError),
}

impl AnswererError {
    /// Wraps any error as foreign.
    pub fn foreign(error: impl Into<BoxError>) -> Self {
        Self::Foreign(error.into())
    }

    /// The code, for a typed error.
    pub fn code(&self) -> Option<&str> {
        match self {
            Self::Question(e) => Some(e.code()),
            Self::Foreign(_) => None,
        }
    }

    /// Whether it is a typed error with this code (an answerer racing the rest of the chain
    /// asks whether the rest found nobody: [`ErrorCode::NoProvider`]).
    pub fn is(&self, code: &ErrorCode) -> bool {
        matches!(self, Self::Question(e) if e.is(code))
    }
}

/// What `ask`, `ask_timed` and `answer` return on failure.
#[derive(Debug, thiserror::Error)]
pub enum AskError {
    /// A typed error of the taxonomy.
    #[error(transparent)]
    Question(#[from] UserQuestionError),
    /// A foreign error from an answerer or the host, unchanged so callers can downcast it.
    #[error(transparent)]
    Foreign(BoxError),
}

impl AskError {
    /// The code, for a typed error.
    pub fn code(&self) -> Option<&str> {
        match self {
            Self::Question(e) => Some(e.code()),
            Self::Foreign(_) => None,
        }
    }

    /// The typed error, if this is one.
    pub fn as_question(&self) -> Option<&UserQuestionError> {
        match self {
            Self::Question(e) => Some(e),
            Self::Foreign(_) => None,
        }
    }
}

impl From<AnswererError> for AskError {
    fn from(error: AnswererError) -> Self {
        match error {
            AnswererError::Question(e) => Self::Question(e),
            AnswererError::Foreign(e) => Self::Foreign(e),
        }
    }
}

/// A configuration rejected at startup (SPEC §2.2, §9.3).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// The question limits are inconsistent.
    #[error("invalid question limits: {0}")]
    Limits(String),
    /// `eventBuffer` is 0.
    #[error("invalid eventBuffer 0: the lifecycle event buffer needs room for at least 1 event")]
    EventBuffer,
}
