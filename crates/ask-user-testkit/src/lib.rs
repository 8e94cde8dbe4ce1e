//! Test fixtures shared by the workspace's test suites, in one unpublished crate instead of a
//! `tests/common` module per crate:
//!
//! * [`logs`]: session-log fixtures (real logs in temporary directories, events of SPEC §7.5's
//!   shapes with fixed times, the full fold every faster path must equal);
//! * [`store_contract`]: the `SessionStore` contract suite every store runs;
//! * [`pty`]: a process on a real pseudo-terminal, driven and read back as a person would;
//! * [`pg`]: the `PostgreSQL` server the database tests use (or why there is none);
//! * [`siege`]: slow and greedy clients against an HTTP server;
//! * [`tls`]: a certificate authority made in the test, and server certificates it signs;
//! * [`mcp`]: MCP requests of the stateless revision written by hand, and their replies read;
//! * [`chat`]: a scripted Chat Completions server, for agent frameworks' real clients;
//! * [`process`]: a child killed when dropped, free ports, and the CPU a process used, from
//!   `/proc`, for benches.
//!
//! Panics are the failure mode here: a fixture that cannot be built fails the test that asked
//! for it.
// Fixtures stop at their first broken expectation: unwrap and expect are assertions here.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::missing_panics_doc)]
// Fixture builders take JSON values by value so that call sites can pass `json!` literals.
#![allow(clippy::needless_pass_by_value)]
#![warn(missing_docs)]

pub mod chat;
pub mod logs;
pub mod mcp;
pub mod pg;
pub mod process;
pub mod pty;
pub mod siege;
pub mod store_contract;
pub mod tls;

/// The value of the environment variable `name` that `.ci/run` sets for a test needing
/// something outside the workspace (an SDK, a client): `None` (after saying the test was
/// skipped) when it is unset or empty outside CI.
///
/// # Panics
///
/// Under `CI=true` when it is unset or empty: such a test never passes silently in CI. `what`
/// says what the variable names, for the message.
pub fn required_env(name: &str, what: &str) -> Option<String> {
    match std::env::var(name) {
        Ok(value) if !value.is_empty() => Some(value),
        _ => {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "{name} is not set: CI must run this test with {what} (see .ci/run)"
            );
            eprintln!("skipped: set {name} to {what} to run this test");
            None
        }
    }
}
