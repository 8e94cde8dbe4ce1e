//! The user-questions seam: how an agent asks a human, and how the answer comes back.
//!
//! * Vocabulary ([`Question`], [`AnswerBatch`], [`TimedOutcome`], …) with the exact wire shapes.
//! * [`UserQuestions`]: `ask`, `ask_timed` (a foreground window that ends in `Pending`),
//!   `attach_wait` (claims that hold the window) and shutdown.
//! * The [`Answerer`] waterfall: surfaces accept, decline (run [`Next`]) or fail, in registration
//!   order, globally or per agent scope.
//! * Identity: a request from an agent must come from the registry's live root handle.
//! * The error taxonomy ([`UserQuestionError`], [`ErrorCode`]) and lifecycle events.
//!
//! This crate never knows how a question is rendered and never touches the session log.
//!
//! ```
//! use std::sync::Arc;
//! use user_questions::{
//!     AnswerBatch, AnswerItem, AskRequest, Question, QuestionOption, RegisterOptions,
//!     ScriptedAnswer, ScriptedAnswerer, UserQuestions,
//! };
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let seam = UserQuestions::new(Default::default(), Default::default()).unwrap();
//! let script = ScriptedAnswerer::from_answers([(
//!     "confirm",
//!     ScriptedAnswer { selected: vec!["yes".into()], custom: None },
//! )]);
//! let _guard = seam.register(Arc::new(script), RegisterOptions::global("scripted"));
//!
//! let question = Question::new("confirm", "Proceed?")
//!     .with_options([QuestionOption::new("yes"), QuestionOption::new("no")]);
//! let answered = seam.ask(AskRequest::new([question])).await.unwrap();
//! assert_eq!(answered.answers, AnswerBatch::new([AnswerItem::selected("confirm", ["yes"])]));
//! assert_eq!(answered.provenance.answerer, "scripted");
//! # });
//! ```

#![warn(missing_docs)]

mod answerer;
mod config;
mod error;
mod events;
mod host;
mod ids;
pub mod sanitize;
mod scripted;
mod service;
pub mod sync;
pub mod time;
mod util;
mod validate;
mod vocab;
mod wait;

pub use answerer::{
    AnswerFuture, AnswerRequest, Answerer, AnswererGuard, AnswererScope, FnAnswerer, Next,
    RegisterOptions, answerer_fn,
};
pub use async_trait::async_trait;
pub use config::{QuestionLimits, UserQuestionsConfig};
pub use error::{AnswererError, AskError, BoxError, ConfigError, ErrorCode, UserQuestionError};
pub use events::{
    AnswerPath, QuestionEvent, QuestionEventKind, QuestionEvents, QuestionSummary, Received,
    WaitMode,
};
pub use host::{
    Agent, AgentHandle, AgentRegistry, ContentBlock, HostBindings, HostError, InMemoryAgent,
    InMemoryAgentRegistry, InMemorySession, MessageSource, Session, SessionRef, UserMessage,
    same_agent, same_session,
};
pub use ids::{AgentId, CallId, ScopeId, SessionId};
pub use scripted::{
    RuleMatch, RuleOutcome, ScriptAction, ScriptError, ScriptRule, ScriptedAnswer, ScriptedAnswerer,
};
pub use service::{AskRequest, MAX_TIMEOUT_MS, TimedAskRequest, UserQuestions, WeakUserQuestions};
pub use tokio_util::sync::CancellationToken;
pub use util::now_unix_ms;
pub use validate::{
    AnswerViolation, MAX_ID_BYTES, MAX_LABEL_BYTES, MAX_QUESTION_BYTES, answer_violations,
    check_intents, check_question_limits, truncate_headers, validate_answers,
};
pub use vocab::{
    AnswerBatch, AnswerItem, Answered, AnsweredBy, Provenance, Question, QuestionIntent,
    QuestionOption, TimedOutcome, WaitKey, surface_names,
};
pub use wait::{TimedQuestionWait, WaitClaim, WaitEnd};

#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;

/// The model-facing tool name.
pub const TOOL_NAME: &str = "ask_user_question";
