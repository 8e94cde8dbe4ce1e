//! An MCP server for `ask_user_question`: any agent that speaks the Model Context Protocol
//! (Claude Code, Cursor, VS Code, Codex, MCP Inspector) can call the tool, and its user answers
//! in the client's own form (MCP elicitation).
//!
//! * [`AskUserMcp`]: one per process: a [`HostRuntime`](ask_user_host::HostRuntime) over the
//!   JSONL logs of a state directory, serving MCP sessions over stdio
//!   ([`AskUserMcp::serve_stdio`]) or streamable HTTP ([`AskUserMcp::serve_http`]).
//! * [`McpConnection`]: the `ServerHandler` of one MCP session: one root agent, one durable
//!   session log, its calls in flight, its elicitation answerer.
//! * [`form`]: the mapping between a question batch and an elicitation form.
//! * [`companion`]: the timed mode's `ask_user_question_answer` tool, the model's path to a late
//!   answer (for one call, or without a call id every late answer waiting in the session).
//! * For an inbox: [`AskUserMcp::session_info`] (a session's log, client and working directory)
//!   and [`AskUserMcp::desk`] (the server's sessions as a question desk: a late answer through
//!   the live session's connection, or through the log).
//!
//! A client's `notifications/cancelled` of a timed call withdraws it only when its reason says a
//! person cancelled it (`user`, `interrupt`, `abort`); any other reason, or none (a client's time
//! limit), ends the call pending as its window closing would, so the question is never lost. A
//! blocking call ends with its request.
//!
//! `tools/list` returns `ask_user_question` with exactly the description and parameters the tool
//! crate defines for the configured mode (the catalog's bytes). Every `ask_user_question` call
//! runs through the host: `tool/call`, the seam's waterfall, `tool/result`, durably, so
//! `ask-user pending` and `ask-user answer` work on the logs. Companion calls are not logged as
//! tool calls: they run in a turn of the session (which they share with calls in flight) and log
//! only the reply they admit.

#![warn(missing_docs)]

mod answerer;
mod auth;
mod calls;
mod cancels;
pub mod companion;
mod connection;
mod desk;
#[cfg(feature = "clap")]
mod flags;
pub mod form;
mod http;
mod inflight;
mod late;
mod limit;
mod linked;
mod mrtr;
mod roots;
mod server;
mod session;
mod sessions;
mod settings;
mod state;
mod stdio;
mod tasks;
mod util;

pub use answerer::{ASK_DECLINED, declined};
pub use connection::{MAX_PROTOCOL_VERSION, McpConnection};
#[cfg(feature = "clap")]
pub use flags::HttpArgs;
pub use server::{
    AskUserMcp, BearerToken, BearerTokenError, DEFAULT_MAX_CONNECTIONS, DEFAULT_MAX_SESSIONS,
    DEFAULT_PROGRESS_INTERVAL, DEFAULT_SESSION_IDLE, HTTP_PATH, HomePathError, HttpLimits,
    McpHttpOptions, McpOptions, McpSessionInfo, RequestStateKey, ServeError, ServerTls,
    SessionHook, TlsError, TlsFiles, TlsFilesError, default_state_dir, home_path,
};
pub use settings::McpSettings;

/// Catalog metadata of the companion tool for `cargo xtask catalog`.
pub const CATALOG: companion::AnswerToolCatalog = companion::AnswerToolCatalog {
    crate_name: "ask-user-mcp",
    variant_id: "default",
    variant_label: "default",
    source_path: "crates/ask-user-mcp/src/companion.rs",
    requires: &[
        "an MCP server in timed mode (ask-user mcp --mode timed); never listed in legacy mode",
        "the session logs of the server's state directory",
    ],
    writes: &[
        "admits a queued late reply as user/message in the call's session log (the settlement)",
        "a turn of its own session (turn/start, step/start, request/header, step/end, turn/end) around the fetch, or one it shares with calls in flight",
        "nothing in the log of an earlier session when the question there is settled (read only)",
    ],
    note: "MCP cannot put a user message into the client's conversation, so over MCP the timed `ask_user_question` and its pending result tell the model to call `ask_user_question_answer` later with the callId. The tool returns the late reply once the person answered (from the client's form, `ask-user answer` or another surface), or the pending result again; without a callId (a client cut the call off before its id arrived), every late reply waiting in the session.",
};
