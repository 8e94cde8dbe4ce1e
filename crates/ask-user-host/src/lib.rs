//! A reusable host for the `ask_user_question` path: sessions whose every step is durable in a
//! [`SessionStore`](session_log::SessionStore), many at once in one process.
//!
//! * [`HostRuntime`]: the store, the seam and its agent registry, the tool, late answers and the
//!   live projections, held once per process; [`HostRuntime::create`] and [`HostRuntime::open`]
//!   start sessions (resume repair, inbox restore and the projection checkpoint on open).
//! * [`Host`]: one live session: turns, steps, tool calls and admissions, each committed through
//!   its [`Journal`] (durable append, projection, late answers, in log order).
//! * [`LateReplies`] ([`Host::late`]): the way back into a session: queue a person's answer,
//!   take a waiting reply into the current step, or settle it in a turn of its own.
//! * [`HostAgent`]: the session's agent, whose inbox is edited only through logged
//!   `agent/inbox/spliced` records.
//! * [`ToolSpec`], [`ToolCall`] and [`ToolResult`]: the agent's other tools, listed in the
//!   `request/header` and recorded call by call through the same journal
//!   ([`Host::record_tool_call`], [`Host::run_tool`]), so a log is the agent's whole history.
//! * [`load_projection`]: the projection of a log from its checkpoint or by a refold.
//! * [`LiveDesk`] and [`LogDesk`]: question desks (`pending_answer::QuestionDesk`) over the
//!   sessions this process runs and over logs in any store.
//! * [`demo::ScriptedModel`]: a scripted model (no LLM) that runs one exchange through a host,
//!   the one `ask-user demo` shows (and `examples/scripted_model.rs` runs headless).
//!
//! It knows no terminals or processes, and files only as the path a single-session [`Host::open`]
//! hands to the JSONL store: stores and surfaces plug in.

#![warn(missing_docs)]

mod agent;
mod checkpoint;
pub mod demo;
mod desk;
mod host;
mod journal;
mod late;
mod tools;

pub use agent::{HostAgent, Restore};
pub use checkpoint::{
    CHECKPOINT_LAG, Checkpoint, CheckpointDocument, CheckpointPolicy, CheckpointWrite, OpenState,
    ProjectionLoad, ProjectionSource, RefoldReason, StaleReason, load_projection,
};
pub use desk::{LiveDesk, LogDesk, OpenHook};
pub use host::{
    Host, HostError, HostOptions, HostRuntime, LogTarget, ModelInfo, OrderError, Resumed,
    SessionOptions, new_session_id,
};
pub use journal::{Journal, JournalError};
pub use late::LateReplies;
pub use tools::{ToolCall, ToolResult, ToolSpec};

#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
