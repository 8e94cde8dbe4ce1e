//! The reference host of the `ask_user_question` workspace: the durable JSONL session-log store
//! and the projection checkpoint cache ([`store`], SPEC §9.6), and the interactive terminal
//! answering surface ([`terminal`]): an answerer that shows each question as a card, with a live
//! countdown for timed questions, and passes questions on when there is no terminal, so headless
//! runs fail closed.

#![warn(missing_docs)]

pub mod cli;
pub mod host;
pub mod store;
mod sync;
pub mod terminal;

#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
