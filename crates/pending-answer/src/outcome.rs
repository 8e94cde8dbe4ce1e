//! What answering a question late (or on a desk) comes to: what was queued ([`Queued`]), why an
//! answer was not taken ([`LateRefusal`] with [`NotWaiting`]'s reasons), and a desk's own failure
//! ([`DeskError`]). A leaf: every other module of the crate builds on it.

use user_questions::{BoxError, CallId, ErrorCode, UserMessage, UserQuestionError};

/// A late answer taken (SPEC §4.8 step 8): its reply message is queued for the agent's next turn
/// and holds the call's reservation until the agent admits it, which settles the question.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Queued {
    /// The call answered.
    pub call_id: CallId,
    /// The id of the queued reply message (a UUID v4 text, or the id the caller gave).
    pub message_id: String,
}

/// Why a call is not waiting for an answer (SPEC §4.8 step 2, "not continued").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NotWaiting {
    /// The session has no such call the projection tracks: an unknown call id, a legacy call, or
    /// a host without projections.
    Unknown,
    /// The call is still in its foreground window: only its own tool call takes its answer.
    Open,
    /// The call's window closed a moment ago and its pending result is not in the log yet (or
    /// never will be: its host's log failed). [`when_continued`](crate::when_continued) waits for
    /// the call to be announced continued, then tries again.
    Closing,
    /// The call is settled already.
    Settled,
    /// The call ended without an answer and without going pending (an error, a cancellation).
    /// Only a desk that reads the call's end from its ledger (`ask-user-pg`'s) tells this from
    /// [`Unknown`](Self::Unknown); [`LateAnswers`](crate::LateAnswers) says `Unknown`.
    Dropped,
}

impl NotWaiting {
    /// Why, for the person (used in longer messages): "is open, not pending", ….
    pub fn reason(self) -> &'static str {
        match self {
            Self::Unknown => "is not a pending timed question",
            Self::Open => "is open, not pending: only its own tool call can answer it",
            Self::Closing => {
                "is closing: its window closed and its pending result is not saved yet"
            }
            Self::Settled => "is already settled",
            Self::Dropped => "ended without an answer and without going pending",
        }
    }
}

/// Why a late answer was not taken. Its `Display` is written for the person who answered: a
/// surface shows it as it is and keeps the question open.
#[derive(Debug, thiserror::Error)]
pub enum LateRefusal {
    /// The submission names a session the desk does not have.
    #[error("There is no session {0:?}.")]
    UnknownSession(String),
    /// The submission names no agent, so there is no session to deliver the answer to.
    #[error("this question has no agent to answer")]
    NoAgent,
    /// The call is not continued (SPEC §4.8 step 2): nothing waits for this answer any more.
    #[error("This question is no longer waiting for an answer.")]
    NotWaiting(NotWaiting),
    /// `REPLY_QUEUED`: a reply for the call is already in flight (SPEC §4.8 step 3 or 6), the
    /// message (or ledger answer) `message_id` when it is known.
    #[error("{}", UserQuestionError::reply_queued(.call_id).message())]
    ReplyQueued {
        /// The call.
        call_id: CallId,
        /// The reply in flight, when known.
        message_id: Option<String>,
        /// A desk that found the reply in flight waiting in the durable inbox of a session no
        /// host runs (queued before a crash) admitted it now: the question is settled with that
        /// first answer, and this is the reply.
        settled_by: Option<Box<UserMessage>>,
    },
    /// `BAD_ANSWER`: the batch does not fit the stored questions (SPEC §9.2).
    #[error(transparent)]
    BadAnswer(UserQuestionError),
    /// The caller is not the live root of the session (`CALLER_NOT_LIVE`, `DELEGATED_CALLER`), or
    /// the seam is gone (`ASK_ABORTED`).
    #[error(transparent)]
    NotLive(UserQuestionError),
    /// The host could not deliver the reply (the agent's `followup` failed, SPEC §4.8 step 7, or
    /// the session's store failed). Nothing was kept, so the same answer may be submitted again.
    #[error(transparent)]
    Undelivered(BoxError),
    /// A desk could not reach the session's store (a log locked by another writer, a database
    /// down): nothing was kept, the same answer may be submitted again.
    #[error(transparent)]
    Unavailable(DeskError),
}

impl LateRefusal {
    /// The SPEC §3.2 code of a refusal that has one (`REPLY_QUEUED`, `BAD_ANSWER`,
    /// `CALLER_NOT_LIVE`, …); `None` for the refusals that have no code.
    pub fn code(&self) -> Option<&str> {
        match self {
            Self::ReplyQueued { .. } => Some(ErrorCode::ReplyQueued.as_str()),
            Self::BadAnswer(error) | Self::NotLive(error) => Some(error.code()),
            Self::UnknownSession(_)
            | Self::NoAgent
            | Self::NotWaiting(_)
            | Self::Undelivered(_)
            | Self::Unavailable(_) => None,
        }
    }

    /// The refusal as the seam's typed error, for the refusals that have a SPEC code (a
    /// transport that reports `{code, message}` uses it).
    pub fn as_error(&self) -> Option<UserQuestionError> {
        match self {
            Self::ReplyQueued { call_id, .. } => Some(UserQuestionError::reply_queued(call_id)),
            Self::BadAnswer(error) | Self::NotLive(error) => Some(UserQuestionError::new(
                error.error_code().clone(),
                error.message(),
            )),
            Self::UnknownSession(_)
            | Self::NoAgent
            | Self::NotWaiting(_)
            | Self::Undelivered(_)
            | Self::Unavailable(_) => None,
        }
    }

    /// The refusal of a typed error from the seam's checks: `BAD_ANSWER`, `REPLY_QUEUED`, and
    /// anything else (identity, a seam gone) as [`NotLive`](Self::NotLive).
    pub fn from_error(error: UserQuestionError, call_id: &CallId) -> Self {
        match error.error_code() {
            ErrorCode::BadAnswer => Self::BadAnswer(error),
            ErrorCode::ReplyQueued => Self::ReplyQueued {
                call_id: call_id.clone(),
                message_id: None,
                settled_by: None,
            },
            _ => Self::NotLive(error),
        }
    }
}

/// What kind of failure a [`DeskError`] is: what a surface or a command decides on (its status,
/// its exit code), where the error's [`code`](DeskError::code) is only printed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeskErrorKind {
    /// The desk has no such session.
    UnknownSession,
    /// The request cannot work as given (a name the store refuses, a setting that cannot work).
    Usage,
    /// The session's store failed or refused (a log unreadable or held by another writer, a
    /// database error): nothing was kept.
    Store,
    /// Where the session lives did not answer (a database down, an agent's server silent): nothing
    /// is known to be kept; look again before trying again.
    Unreachable,
    /// A broken invariant of the desk itself.
    Internal,
}

/// A desk could not list its questions or reach a session's store: the kind is what callers
/// decide on, the code is stable for printing (e.g. `LOG_IO`, `LOG_LOCKED`, `DB_UNAVAILABLE`),
/// the message is for a person.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct DeskError {
    kind: DeskErrorKind,
    code: &'static str,
    message: String,
    #[source]
    source: Option<BoxError>,
}

/// A desk's task that did not finish (it panicked, or the runtime is shutting down): an
/// `INTERNAL` error.
impl From<tokio::task::JoinError> for DeskError {
    fn from(error: tokio::task::JoinError) -> Self {
        Self::from_error(DeskErrorKind::Internal, "INTERNAL", error)
    }
}

/// A desk's task that did not finish: the answer was not taken
/// ([`LateRefusal::Unavailable`]), and may be given again.
impl From<tokio::task::JoinError> for LateRefusal {
    fn from(error: tokio::task::JoinError) -> Self {
        Self::Unavailable(error.into())
    }
}

impl DeskError {
    /// An error of `kind` with a code and a message.
    pub fn new(kind: DeskErrorKind, code: &'static str, message: impl Into<String>) -> Self {
        Self {
            kind,
            code,
            message: message.into(),
            source: None,
        }
    }

    /// An error of `kind` with `code` whose message is `error`'s, kept as the source.
    pub fn from_error(
        kind: DeskErrorKind,
        code: &'static str,
        error: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        Self {
            kind,
            code,
            message: error.to_string(),
            source: Some(Box::new(error)),
        }
    }

    /// The desk has no session `session`.
    pub fn unknown_session(session: &str) -> Self {
        Self::new(
            DeskErrorKind::UnknownSession,
            "UNKNOWN_SESSION",
            format!("no session {session:?}"),
        )
    }

    /// What kind of failure this is.
    pub fn kind(&self) -> DeskErrorKind {
        self.kind
    }

    /// The stable code, for printing.
    pub fn code(&self) -> &'static str {
        self.code
    }
}
