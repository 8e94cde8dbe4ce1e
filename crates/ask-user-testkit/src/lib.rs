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
//! * [`chat`]: a scripted Chat Completions server, for agent frameworks' real clients.
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
pub mod pty;
pub mod siege;
pub mod store_contract;
pub mod tls;
