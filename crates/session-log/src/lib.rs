//! The session log as a layer of its own (SPEC §7, §9.6): the typed records a host writes, the
//! tolerant one-pass reader every consumer reads them back with, and the storage seam.
//!
//! * **Writing**: [`Record`] has one typed constructor per event type this workspace writes
//!   (`turn/start`, `step/start`, `tool/call`, `tool/result`, `user/message`,
//!   `agent/inbox/spliced`, `turn/end`, …, and [`Record::Other`] for anything else, verbatim);
//!   [`Record::into_event`] gives the [`LogEvent`] envelope, [`NewSession`] the header record.
//!   The bytes are the reference's.
//! * **Reading**: [`SessionHeader`] and its [`CutRule`]; [`SessionEvent::from_record`] decodes one
//!   record in one pass, without recursion, never failing on valid JSON; [`LogScanner`] reads a
//!   whole log from any [`std::io::BufRead`], assigning `seq`s and reporting corrupt lines, lossy
//!   lines, seq gaps and a torn tail, resumable from a [`ScanPosition`]. [`Tracker`] follows what a
//!   log leaves unfinished, and [`repair_interrupted`] appends what resume repair owes (§7.6).
//! * **Storing**: [`SessionStore`] and [`SessionWriter`], with the JSONL file store
//!   ([`JsonlStore`], [`LogWriter`]) and the in-memory store ([`MemoryStore`]).
//!
//! ```
//! use session_log::{MemoryStore, NewSession, Record, SessionStore};
//!
//! let store = MemoryStore::new();
//! let mut writer = store.create("s1", &NewSession::new("s1")).unwrap();
//! let event = Record::turn_start(1).into_event(writer.next_seq()).unwrap();
//! let read_back = writer.append(&[event]).unwrap();
//! assert_eq!(read_back[0].event_type(), "turn/start");
//! let report = store.read("s1", &mut ()).unwrap();
//! assert_eq!(report.scan.end.expected_seq, 1);
//! ```

#![warn(missing_docs)]

mod decode;
mod envelope;
mod event;
mod header;
mod lenient;
mod private;
mod readers;
mod record;
mod repair;
mod scan;
mod store;
mod text;
mod unfinished;

/// Lenient readers for JSON a record embeds (tool arguments, tool lists, text blocks), read the
/// way this crate's decoder reads records: a repeated key's last value wins, any nesting depth
/// is skipped without recursion, a value of the wrong type reads as absent, and escaped lone
/// surrogates become U+FFFD (SPEC §7.8). The projection reads `ask_user_question`'s arguments and
/// tool schemas with them.
pub mod json {
    pub use crate::lenient::{RawObject, raw_array, raw_is_true, raw_string};
    pub use crate::text::fix_lone_surrogates;
    pub use serde_json::value::RawValue;
}

pub use decode::{CHUNK_EVENT_TYPE, CorruptReason, DecodedRecord};
pub use envelope::{LogEvent, NewSession, SESSION_FORMAT_VERSION, now_ms};
pub use event::{
    Dispatch, DispatchKind, EndSeed, EventBody, InboxSplice, OtherEvent, RequestHeader,
    ResultError, ResultLayout, SessionEvent, SourceInfo, SpliceEdit, StepRef, ToolCall, ToolResult,
    TurnEnd, TurnStart, UserMessageEvent,
};
pub use header::{CutRule, HeaderError, MAX_INHERITED_EVENT_COUNT, SessionHeader};
pub use private::{DIR_MODE, FILE_MODE, private_dir, private_file};
pub use readers::TextReading;
pub use record::{
    AssistantMessage, AssistantMessageRecord, EndSeedRecord, ErrorRecord, InboxSpliceRecord,
    InboxTarget, Record, RequestHeaderRecord, RequestSnapshot, StepRecord, TextBlock,
    ToolCallRecord, ToolMessage, ToolResultRecord, TurnEndReason, TurnEndRecord, TurnRecord,
};
pub use repair::{
    RepairReport, RepairedCall, TOOL_OUTCOME_UNKNOWN_TEXT, abandon_interrupted, repair_interrupted,
};
pub use scan::{
    CorruptLine, LogFinding, LogScanner, LossyLine, MAX_LINE_LEN, OpenError, PARALLEL_BATCH,
    READ_CHUNK, ScanPosition, ScanReport, Scanned, ScannedRecord, SeqGap, TornTail,
    seq_after_record,
};
pub use store::backend;
pub use store::{
    AnchorMismatch, BackendWriter, CHECKPOINT_SUFFIX, FileLog, JsonlStore, LogAnchor, LogBackend,
    LogFile, LogVisitor, LogWriter, MemoryHold, MemoryStore, OpenFrom, OpenReport,
    OpenedAtCheckpoint, OwnedLog, RecordSpan, ResumePlan, ResumePoint, SessionStore, SessionWriter,
    StagedCheckpoint, StoreError, checkpoint_path, read_log, read_log_with, sha256_hex,
    stage_checkpoint, write_checkpoint, writer_is_live,
};
pub use unfinished::{Interrupted, OpenCall, Tracker, UnidentifiedCall};

#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
