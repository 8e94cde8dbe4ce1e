//! Late answers to pending questions (SPEC §4.8, §4.9, §6).
//!
//! When a timed `ask_user_question` call ends `pending`, the projection marks it *continued*, and
//! the person's answer can arrive only later, as a user message the model reads. This crate owns
//! that path:
//!
//! * [`reply_message`] / [`reply_text`] build the late-reply message of SPEC §6 (exact key order);
//!   [`read_reply`] reads one back, recognising it by its source alone.
//! * [`LateAnswers::answer`] accepts an answer for a continued call, at most one reply in flight
//!   per call, and delivers it as a next-turn follow-up through the seam's
//!   [`Agent::followup`](user_questions::Agent::followup).
//! * [`LateAnswers::on_host_event`] follows the reply through the inbox and the log
//!   ([`HostEvent`]): a discarded reply, or a turn that ends without admitting it, makes the
//!   question answerable again; an admitted reply settles it in the projection and is reported as
//!   `answered` with path `late` in the seam's event stream.
//! * [`LateAnswerSink`] is the contract an answering surface uses to hand over a late answer
//!   ([`LateSubmission`]) and learn why it was not taken ([`LateRefusal`]); [`LateAnswers`]
//!   implements it.
//! * [`ProjectionHost`] gives the projection state of a live session; [`InMemoryProjectionHost`]
//!   keeps it in memory for tests and the reference host.
//!
//! An accepted reply does not settle the question; only its admission (the durable `user/message`)
//! does, and the projection decides that exactly once.

#![warn(missing_docs)]

mod continued;
mod desk;
mod host;
mod late;
mod outcome;
mod reply;
mod sink;
mod util;

pub use continued::{Continuation, continued};
pub use desk::{Accepted, DeskQuestion, DeskSession, DeskState, QuestionDesk, SessionView};
pub use host::{HostEvent, InMemoryProjectionHost, ProjectionHost};
pub use late::{LateAnswers, Reservation, UNKNOWN_ANSWERER};
pub use outcome::{DeskError, LateRefusal, NotWaiting, Queued};
pub use reply::{
    LateReply, REPLY_OUTCOME, REPLY_TEXT_KIND, is_reply_for, new_message_id, read_reply,
    reply_message, reply_text,
};
pub use sink::{LateAnswerSink, LateSubmission};

#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
