//! The terminal answering surface: questions as interactive cards, answered by a person.
//!
//! [`TerminalAnswerer`] is an [`Answerer`](user_questions::Answerer) for the user-questions seam.
//! Registered in a seam, it shows every question batch it receives as a card on the process's
//! terminal (drawn on stderr, in the alternate screen, so stdout stays free for the model-facing
//! JSON) and answers with what the person submits, as `answeredBy: "human"`.
//!
//! # The card
//!
//! A batch is one card showing one question at a time: its header as a chip, the question, its
//! options with their descriptions, an "Other" row for free text, and a line of key hints.
//!
//! | key | what it does |
//! |---|---|
//! | `↑` `↓` (`k` `j`), `Home` `End` | move the highlight |
//! | `1`–`9` | choose that option (single-select) or toggle it (multi-select); the number after the last option opens "Other" |
//! | `Space` | choose or toggle the highlighted option; on "Other", open the text input |
//! | `Enter` | confirm the question and go to the next unanswered one; the `Enter` that completes the batch submits it. On a single-select question it chooses the highlighted option first; on "Other" it opens the input |
//! | `Tab` `→` (`l`) / `Shift-Tab` `←` (`h`) | next / previous question, without confirming |
//! | `s` | skip the question: it is answered with an empty `selected` and no `custom` |
//! | `t` | take time (timed questions): the countdown stops and the host cannot time the question out until the card is submitted or closed |
//! | `Esc` | close the card (see below) |
//! | `Ctrl-C` | give the terminal back and pass the interrupt on to the process (`SIGINT`) |
//!
//! In the text input, keys edit the text (`←` `→` `Home` `End` `Backspace` `Delete`, paste),
//! `Enter` saves it and `Esc` discards the edit. Free text on a single-select question replaces
//! the chosen option; on a multi-select question it is given beside the chosen options (SPEC
//! §1.5). A question without options opens the input at once.
//!
//! Input is validated as it is typed with the seam's rules (SPEC §9.2): labels come only from
//! the options, a single-select question holds at most one, and free text cannot grow past the
//! seam's `custom_max_bytes`. The card runs the seam's validator before it submits.
//!
//! # Timed questions
//!
//! For a timed request the answerer first claims the wait through the seam
//! (`attach_wait`), then shows the card with a live countdown derived from the claim's
//! `remaining_ms()`. If the wait has already expired (no claim) it passes the question on. When
//! the countdown reaches zero, the request ends with `ASK_TIMED_OUT` (the tool reports
//! `pending`) and the card stays on screen, marked pending: a later submission goes to the
//! host's [question desk](TerminalOptions::with_desk) (a
//! [`QuestionDesk`](pending_answer::QuestionDesk), typically a `LiveDesk` over the session),
//! which takes it once the call is continued; if the desk refuses it, the card stays and shows
//! the refusal's message. The claim is kept until
//! the seam has taken the outcome, so an overdue host timer cannot beat a submitted answer.
//!
//! # Closing a card (`Esc`)
//!
//! * An unkeyed request (`wait` absent) is cancelled: `ASK_CANCELLED`.
//! * A keyed request (indefinite or timed) or a pending question is only **hidden**, as the SPEC
//!   asks (closing records nothing). The card shrinks to a one-line reminder at the bottom of
//!   the screen ("1 question waiting … Enter: open") and `Enter` brings it back. A hidden
//!   timed card's countdown runs again (a "take time" hold ends), so the host's original
//!   deadline applies — at once if it has passed. The card keeps its claim while hidden rather
//!   than releasing it: the outcome is the same as the host's own deadline (the local one was
//!   derived from it), and the card learns for certain that its question went pending, so it
//!   can keep offering it for a late answer.
//!
//! # Several requests
//!
//! One card is on screen at a time: the oldest foreground card that is not hidden, else the
//! oldest pending card. Others wait behind it (the card says how many). A timed card that is
//! waiting behind another has already claimed its wait and counts down, so its window closes
//! when the host's would have.
//!
//! # No terminal
//!
//! When [`Display::is_interactive`] says no (by default: stderr is not a terminal, or no
//! terminal can be read from), every question is passed on (`next.run()`), so a headless run
//! fails closed: `NO_PROVIDER` for blocking requests, `pending` at the deadline for timed ones.
//! If the terminal fails while a card shows, its request is passed on the same way.

#![warn(missing_docs)]

mod answerer;
mod board;
mod card;
mod countdown;
mod keys;
pub mod listing;
mod render;
pub mod shell;
/// The one sanitiser for model and log text (it lives in the seam, so every surface shares it).
pub use user_questions::sanitize;
mod screen;

pub use answerer::{TerminalAnswerer, TerminalOptions};
pub use card::{CardAction, CardState, Draft, Editor};
pub use countdown::{Countdown, format_secs};
pub use keys::Key;
pub use render::{
    CardView, Clock, CloseMode, MIN_HEIGHT, MIN_WIDTH, ReminderView, Scene, buffer_text,
    render_screen,
};
pub use screen::{Display, VirtualTerminal, is_interactive_terminal};

#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
