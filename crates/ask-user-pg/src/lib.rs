//! Session logs and the question ledger on `PostgreSQL` (SPEC §9.6 on a database): a
//! [`SessionStore`](session_log::SessionStore) whose writers hold fenced leases, so any worker can
//! resume any session and no `seq` is written twice; a ledger of every timed question, written in
//! the transaction of the append that changed it; first-answer-wins answers from any front end;
//! and admission of an answer exactly once, in the transaction that appends its `user/message`.
//!
//! The connection string is libpq's (`key=value` or a `postgres://` URL), TLS included:
//! `sslmode=require`, or `sslmode=verify-full sslrootcert=/etc/ssl/db-ca.pem` (see the crate
//! README for every mode). Whatever a session holds is stored byte for byte, U+0000 included.
//!
//! ```no_run
//! use ask_user_pg::{PgOptions, PgStore};
//! use session_log::{NewSession, Record, SessionStore};
//!
//! let store = PgStore::connect("host=127.0.0.1 user=postgres", &PgOptions::default())?;
//! let mut writer = store.create("s1", &NewSession::new("s1"))?;
//! writer.append(&[Record::turn_start(1).into_event(0)?])?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![warn(missing_docs)]

mod answerer;
mod answers;
mod claims;
mod db;
mod desk;
mod feed;
#[cfg(feature = "clap")]
mod flags;
mod hints;
mod ledger;
mod lines;
mod live;
mod schema;
mod settings;
mod store;
mod text;
mod tls;
mod transfer;
mod worker;

pub use answerer::{LEDGER_ANSWERER, LedgerAnswerer};
pub use answers::{AnswerError, LedgerAnswer, LedgerQuestion};
pub use claims::Window;
pub use desk::{CLAIM_LEASE, CLAIM_RENEW, LiveLedger, PgDesk, follow_ledger};
pub use feed::LedgerFeed;
#[cfg(feature = "clap")]
pub use flags::{ExportArgs, ImportArgs, ImportNameError, PgArgs, PgRequired, WorkerArgs, connect};
pub use ledger::{FoldVisitor, QuestionState};
pub use lines::Lines;
pub use live::{LIVE_POLL, LiveSession, REQUEST_STATE_SECRET};
pub use schema::SCHEMA_VERSION;
pub use settings::{ConnString, DEFAULT_SCHEMA, PgSettings};
pub use store::{PgHold, PgOptions, PgStore};
pub use text::{MAX_SCHEMA_NAME, MAX_SESSION_NAME, check_schema_name, check_session_name};
pub use transfer::{ExportError, ImportReport};
pub use worker::{
    AdmitError, Admitted, Worker, WorkerEvent, WorkerStop, admit_answers, admit_here,
};

/// Why talking to the database failed. A message names what the server said (its message and
/// SQLSTATE code) or what failed on the way to it, never the connection string or a password.
#[derive(Debug, thiserror::Error)]
pub enum PgError {
    /// The connection settings do not work (nothing was sent): a connection string that does
    /// not parse, an unknown `sslmode`, a CA file (`sslrootcert`) that does not read.
    #[error("the PostgreSQL connection settings do not work: {0}")]
    Settings(String),
    /// A name cannot name what it should (a schema, a session): see [`check_schema_name`] and
    /// [`check_session_name`].
    #[error("the {what} name {name:?} {why}")]
    BadName {
        /// What it names: `"schema"` or `"session"`.
        what: &'static str,
        /// The name.
        name: String,
        /// What is wrong with it.
        why: &'static str,
    },
    /// Connecting failed (the server refused, TLS failed, the server is not there).
    #[error("cannot connect to PostgreSQL: {}", describe(.0))]
    Connect(#[source] postgres::Error),
    /// A statement failed.
    #[error("PostgreSQL: {}", describe(.0))]
    Query(#[source] postgres::Error),
    /// A commit failed: its outcome is unknown when the connection broke.
    #[error("PostgreSQL commit failed: {}", describe(.0))]
    Commit(#[source] postgres::Error),
    /// A migration failed (nothing of it was applied).
    #[error("migration {name} failed: {}", describe(source))]
    Migration {
        /// The migration.
        name: &'static str,
        /// The cause.
        #[source]
        source: postgres::Error,
    },
    /// The database's encoding cannot hold every character a session may hold (it must be
    /// `UTF8`, or `SQL_ASCII`, which keeps bytes as they are).
    #[error(
        "the database's encoding is {0}: ask-user needs a UTF8 database (CREATE DATABASE … ENCODING 'UTF8')"
    )]
    Encoding(String),
    /// The database's schema is newer than this build: it is refused, never written.
    #[error(
        "the database's ask-user schema is version {found}, newer than this build's {supported}; upgrade ask-user"
    )]
    NewerSchema {
        /// The schema version found.
        found: i32,
        /// The newest this build knows.
        supported: i32,
    },
    /// A read-only connection found no ask-user schema, or an older one (nothing is migrated
    /// read only: a writing command, `ask-user worker` or `import`, migrates it).
    #[error(
        "the database has no ask-user schema {schema:?} at version {supported} (found version {found}); a writing command (ask-user worker, import) creates or migrates it",
        supported = SCHEMA_VERSION
    )]
    NoSchema {
        /// The schema looked in.
        schema: String,
        /// The version found (0: none).
        found: i32,
    },
    /// A stored JSON document did not read.
    #[error("a stored JSON document does not read: {0}")]
    Json(#[from] serde_json::Error),
    /// The connection thread is gone.
    #[error("the database connection is closed")]
    Closed,
    /// The connection thread could not start.
    #[error("cannot start the database thread: {0}")]
    Thread(String),
}

impl PgError {
    /// A stable code for messages and exit codes.
    pub fn code(&self) -> &'static str {
        match self {
            Self::Settings(_) => "DB_SETTINGS",
            Self::BadName { .. } => "BAD_USAGE",
            Self::Encoding(_) => "DB_ENCODING",
            Self::Connect(_) | Self::Closed | Self::Thread(_) => "DB_UNAVAILABLE",
            Self::NewerSchema { .. } => "DB_NEWER_SCHEMA",
            Self::NoSchema { .. } => "DB_NO_SCHEMA",
            Self::Migration { .. } => "DB_MIGRATION",
            Self::Query(_) | Self::Commit(_) | Self::Json(_) => "DB_FAILED",
        }
    }
}

/// A `postgres` error as a sentence: the server's message, detail and hint with its SQLSTATE
/// code, or what failed on the way (its causes after it, and what a TLS failure means). The
/// client's errors never carry the connection string, so neither does this.
pub(crate) fn describe(error: &postgres::Error) -> String {
    use std::error::Error as _;
    if let Some(db) = error.as_db_error() {
        let mut text = format!("{} (SQLSTATE {})", db.message(), db.code().code());
        if let Some(detail) = db.detail() {
            text.push_str("; ");
            text.push_str(detail);
        }
        if let Some(hint) = db.hint() {
            text.push_str("; hint: ");
            text.push_str(hint);
        }
        return text;
    }
    let mut text = error.to_string();
    let mut cause = error.source();
    while let Some(error) = cause {
        text.push_str(": ");
        text.push_str(&error.to_string());
        cause = error.source();
    }
    if let Some(hint) = tls::hint(error) {
        text.push_str(" (");
        text.push_str(hint);
        text.push(')');
    }
    text
}
