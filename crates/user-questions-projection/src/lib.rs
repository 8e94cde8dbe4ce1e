//! The `userQuestions` projection: a pure fold of a session log into open, continued and settled
//! timed questions (SPEC §8). The events it folds and the log reader come from `session-log` and
//! are re-exported here.
//!
//! * [`apply`] folds one [`SessionEvent`] into a [`UserQuestionsState`] and returns
//!   [`Applied::Unchanged`] (no allocation) or [`Applied::Changed`]. [`init`], [`view`] and
//!   [`restore`] complete the definition contract of §8.1.
//! * [`SessionEvent::from_record`] decodes one record's JSON text; [`LogScanner`] reads a whole log
//!   from any [`std::io::BufRead`], assigning `seq`s and reporting corrupt lines, lossy lines,
//!   seq gaps and a torn tail; [`Replay`] and [`fold_log`] fold it, deciding a fork's inherited
//!   prefix; [`resume_fold`] continues from a checkpoint.
//!
//! Nothing here does I/O of its own, reads a clock or runs async code.
//!
//! ```
//! use user_questions_projection::{ActiveState, fold_log};
//!
//! let log = concat!(
//!     r#"{"type":"session","version":4,"id":"s1","createdAt":0,"isSeeded":false}"#, "\n",
//!     r#"{"type":"request/header","seq":0,"data":{"header":{"config":{},"tools":[{"name":"ask_user_question","description":"","parameters":{"type":"object","properties":{"questions":{"type":"array"},"timeout":{"type":"integer"}}}}]},"reason":"initial"}}"#, "\n",
//!     r#"{"type":"tool/call","seq":1,"data":{"turn":1,"step":1,"callId":"ask-1","name":"ask_user_question","arguments":"{\"questions\":[{\"id\":\"scope\",\"question\":\"Which scope?\"}]}"}}"#, "\n",
//!     r#"{"type":"tool/result","seq":2,"data":{"turn":1,"step":1,"message":{"id":"m1","role":"tool","toolCallId":"ask-1","content":[{"type":"text","text":"{\"pending\":true,\"callId\":\"ask-1\"}"}],"isError":false}}}"#, "\n",
//! );
//! let folded = fold_log(log.as_bytes()).unwrap();
//! assert!(folded.report.is_clean());
//! let active = &folded.state.view().active;
//! assert_eq!(active[0].call_id, "ask-1");
//! assert_eq!(active[0].state, ActiveState::Continued);
//! ```

#![warn(missing_docs)]

mod fold;
mod readers;
mod replay;
mod state;

pub use fold::{Applied, PROJECTION_KEY, STATE_VERSION, apply, init, restore, view};
pub use readers::{declares_timed, questions_from_arguments};
pub use replay::{FoldedLog, Replay, fold_log, resume_fold};
pub use state::{
    ActiveQuestion, ActiveState, RestoreError, SettledQuestion, Standing, UserQuestionsState,
    UserQuestionsView,
};

// The session-event model and the log reader moved to `session-log`; they stay reachable here,
// where SPEC.md places `SessionEvent` (§4.9), for every consumer of the projection.
pub use session_log::{
    CHUNK_EVENT_TYPE, CorruptLine, CorruptReason, CutRule, DecodedRecord, Dispatch, DispatchKind,
    EndSeed, EventBody, HeaderError, InboxSplice, LogFinding, LogScanner, LossyLine,
    MAX_INHERITED_EVENT_COUNT, OpenError, OtherEvent, RequestHeader, ResultError, ResultLayout,
    ScanPosition, ScanReport, Scanned, ScannedRecord, SeqGap, SessionEvent, SessionHeader,
    SourceInfo, SpliceEdit, StepRef, TextReading, ToolCall, ToolResult, TornTail, TurnEnd,
    TurnStart, UserMessageEvent, seq_after_record,
};

#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
