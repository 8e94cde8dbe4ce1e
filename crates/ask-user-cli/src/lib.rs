//! The reference host of the `ask_user_question` workspace: the durable JSONL session-log store
//! and the projection checkpoint cache ([`store`], SPEC §9.6), the host that puts them together
//! ([`host`]), and the `ask-user` commands ([`cli`]). The interactive terminal answering surface
//! lives in the `ask-user-terminal` crate; it is re-exported here as [`terminal`].

#![warn(missing_docs)]

pub mod cli;
pub mod host;
pub mod store;
mod sync;
pub use ask_user_terminal as terminal;

#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
