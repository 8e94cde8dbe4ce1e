//! The model-facing `ask_user_question` tool, in its two modes (SPEC §5):
//!
//! * **legacy** (default): blocks until an answerer returns the person's answer or an error; its
//!   definition is frozen;
//! * **timed** (opt-in): waits for a foreground window, then returns a pending result while the
//!   question stays answerable as a late answer. Its texts say how that answer reaches the model
//!   ([`LateAnswerRoute`]): as a user message, or, over MCP, through the companion tool
//!   `ask_user_question_answer`.
//!
//! The crate is host-agnostic: [`AskUserTool::execute`] takes the raw arguments text and a
//! [`ToolContext`] (call id, optional agent, cancellation token) and returns a [`ToolOutcome`]
//! (the one text block the model reads, the structured value, error info, provenance metadata).
//! [`definition`] builds a [`ToolDefinition`] from an [`AskUserConfig`] without a seam, for hosts
//! and for the catalog generator ([`CATALOG`]). [`ToolRegistry`] is a minimal registry whose
//! guards unregister on drop.
//!
//! ```
//! use std::sync::Arc;
//! use tool_ask_user::{AskUserConfig, AskUserTool, ToolContext};
//! use user_questions::{RegisterOptions, ScriptedAnswer, ScriptedAnswerer, UserQuestions};
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let seam = UserQuestions::new(Default::default(), Default::default()).unwrap();
//! let script = ScriptedAnswerer::from_answers([(
//!     "continue",
//!     ScriptedAnswer { selected: vec!["yes".into()], custom: None },
//! )]);
//! let _answerer = seam.register(Arc::new(script), RegisterOptions::global("scripted"));
//!
//! let tool = AskUserTool::new(seam, None).unwrap(); // No config: legacy.
//! let outcome = tool
//!     .execute(
//!         r#"{"questions":[{"id":"continue","question":"Continue?","options":[{"label":"yes"},{"label":"no"}]}]}"#,
//!         ToolContext::new("call_1"),
//!     )
//!     .await;
//! assert_eq!(outcome.text, r#"{"answers":[{"id":"continue","selected":["yes"]}]}"#);
//! # });
//! ```

#![warn(missing_docs)]

mod args;
mod catalog;
mod config;
mod context;
mod definition;
pub mod file_keys;
#[cfg(feature = "clap")]
mod flags;
mod legacy;
mod outcome;
mod pending;
mod registry;
mod schema;
mod timed;
mod tool;

pub use args::{MAX_ARGUMENTS_BYTES, MAX_LISTED_VIOLATIONS};
pub use catalog::{CATALOG, CatalogVariant, ToolCatalog};
pub use config::{
    ANSWER_TOOL_NAME, AskUserConfig, AskUserMode, ConfigError, DEFAULT_TIMEOUT_SECS,
    INDEFINITE_TIMEOUT, LateAnswerRoute, MAX_TIMEOUT_SECS, is_valid_timeout,
};
pub use context::ToolContext;
pub use definition::ToolDefinition;
#[cfg(feature = "clap")]
pub use flags::ToolArgs;
pub use outcome::{ErrorInfo, ToolOutcome, ToolResultData};
pub use pending::{PENDING_NOTICE, PENDING_NOTICE_COMPANION};
pub use registry::{RegistryError, ToolGuard, ToolRegistry};
pub use tool::{AskUserTool, definition};
pub use user_questions::TOOL_NAME;

#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
