//! The reference host of the `ask_user_question` workspace (SPEC §9.6): the durable JSONL
//! session-log store and the projection checkpoint cache in [`store`].

#![warn(missing_docs)]

pub mod store;

#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
