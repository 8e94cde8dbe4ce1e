//! The `ask-user` binary's commands ([`cli`]): `demo`, `ask`, `pending`, `answer` and `schema`,
//! over the reusable host ([`host`]), the session store ([`store`]) and the interactive terminal
//! answering surface ([`terminal`]).

#![warn(missing_docs)]

pub mod cli;
/// The interactive terminal answering surface, now the `ask-user-terminal` crate; re-exported
/// here, where the commands use it.
pub use ask_user_terminal as terminal;

/// The reference host, now the reusable `ask-user-host` crate; re-exported here, where the
/// commands use it.
pub use ask_user_host as host;

/// The session store (SPEC §9.6, component C6), now in `session-log` (the store trait, the JSONL
/// file store, the in-memory store, resume repair) and `ask-user-host` (the projection checkpoint
/// cache); re-exported here, where SPEC.md places it.
pub mod store {
    pub use ask_user_host::{
        Checkpoint, CheckpointPolicy, CheckpointWrite, ProjectionLoad, ProjectionSource,
        RefoldReason, StaleReason, load_projection,
    };
    pub use session_log::{
        AnchorMismatch, CHECKPOINT_SUFFIX, InboxTarget, Interrupted, JsonlStore, LogAnchor,
        LogEvent, LogFile, LogVisitor, LogWriter, MemoryStore, NewSession, OpenCall, OpenReport,
        Record, RepairReport, RepairedCall, SESSION_FORMAT_VERSION, SessionStore, SessionWriter,
        StagedCheckpoint, StepRecord, StoreError, TOOL_OUTCOME_UNKNOWN_TEXT, ToolResultRecord,
        UnidentifiedCall, checkpoint_path, now_ms, read_log, read_log_with, repair_interrupted,
        sha256_hex, stage_checkpoint, write_checkpoint, writer_is_live,
    };
}

#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
