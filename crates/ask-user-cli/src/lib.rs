//! The `ask-user` binary's commands ([`cli`]): `demo`, `ask`, `pending`, `answer` and `schema`,
//! over the reusable host ([`host`]), the session store ([`store`]) and the interactive terminal
//! answering surface ([`terminal`]).

#![warn(missing_docs)]

pub mod cli;

use std::ffi::OsString;

use clap::Parser as _;

/// Runs the command line `args` (the program's name first) as the `ask-user` binary does, on a
/// runtime of its own, and returns the exit status: the binary's `main`, and the Python package's
/// `ask-user` script.
pub fn run_args<I, T>(args: I) -> u8
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let args = match cli::Cli::try_parse_from(args) {
        Ok(args) => args,
        Err(error) => return cli::report_parse_error(&error).code(),
    };
    cli::init_tracing(args.verbose);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            // Anything that escaped the commands' own error handling: one line, no backtrace.
            eprintln!(
                "error[INTERNAL]: {}",
                terminal::sanitize::visible(&error.to_string())
            );
            return cli::Exit::Failure.code();
        }
    };
    let exit = runtime.block_on(cli::run(args));
    // A blocking read of stdin (the demo waiting for Enter when Ctrl-C came first) must not keep
    // the process alive: everything the command does has finished inside `block_on`.
    runtime.shutdown_timeout(std::time::Duration::from_millis(200));
    exit.code()
}
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
