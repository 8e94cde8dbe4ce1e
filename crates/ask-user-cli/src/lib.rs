//! The reference host for asking a human.
//!
//! For now it holds the interactive terminal surface, [`terminal`]: an answerer that shows each
//! question as a card in the terminal, with a live countdown for timed questions, and that passes
//! questions on when there is no terminal, so headless runs fail closed.

#![warn(missing_docs)]

pub mod terminal;

#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
