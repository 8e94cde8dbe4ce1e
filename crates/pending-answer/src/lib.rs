//! Late answers to pending questions (SPEC §4.8, §4.9, §6).
//!
//! When a timed `ask_user_question` call ends `pending`, the projection marks it *continued*, and
//! the person's answer can arrive only later, as a user message the model reads. This crate owns
//! that path:
//!
//! * [`reply_message`] / [`reply_text`] build the late-reply message of SPEC §6 (exact key order);
//!   [`read_reply`] reads one back, recognising it by its source alone.
//! * [`LateAnswers::queue`] (SPEC §4.2's [`LateAnswers::answer`]) accepts an answer for a
//!   continued call, at most one reply in flight per call, and delivers it as a next-turn
//!   follow-up through the seam's [`Agent::followup`](user_questions::Agent::followup).
//! * [`LateAnswers::on_host_event`] follows the reply through the inbox and the log
//!   ([`HostEvent`]): a discarded reply, or a turn that ends without admitting it, makes the
//!   question answerable again; an admitted reply settles it in the projection and is reported as
//!   `answered` with path `late` in the seam's event stream.
//! * [`QuestionDesk`] is the way back every surface and command uses: it lists the questions a
//!   person can see, says where a call stands, and takes a person's answer ([`Submission`]),
//!   waiting for a closing call's continuation itself ([`when_continued`], the one rule with the
//!   one deadline [`CONTINUED_WITHIN`]); it answers with what it did ([`Accepted`]) or why not
//!   ([`LateRefusal`]), and ticks when its questions change ([`DeskChanges`]).
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
mod util;

pub use continued::{CONTINUED_WITHIN, Continuation, continued, when_continued};
pub use desk::{
    Accepted, Answers, ChangeSignal, Compose, DeskChanges, DeskQuestion, DeskSession, DeskState,
    NoSessions, QuestionDesk, SessionView, Submission,
};
pub use host::{HostEvent, InMemoryProjectionHost, ProjectionHost};
pub use late::{LateAnswers, Reservation, UNKNOWN_ANSWERER};
pub use outcome::{DeskError, DeskErrorKind, LateRefusal, NotWaiting, Queued};
pub use reply::{
    LateReply, REPLY_OUTCOME, REPLY_TEXT_KIND, is_reply_for, new_message_id, read_reply,
    reply_message, reply_text,
};

#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
