//! The one question desk a command works on, picked once from its arguments: the session logs
//! named on the command line, or (`--pg`) the sessions of a database. `pending`, `answer` and
//! `serve` list and answer through it and never fork on where the sessions live; only what they
//! print differs.

use std::path::PathBuf;

use ask_user_pg::PgDesk;
use pending_answer::QuestionDesk;

use super::CliError;
use crate::host::LogDesk;

/// Where a command's sessions live.
pub(crate) enum Picked {
    /// Session logs on disk, each named by its path.
    Logs(LogDesk),
    /// The sessions of a database, each named by its name.
    Database(PgDesk),
}

impl Picked {
    /// The desk.
    pub(crate) fn desk(&self) -> &dyn QuestionDesk {
        match self {
            Self::Logs(desk) => desk,
            Self::Database(desk) => desk,
        }
    }
}

/// How a command opens a database.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Access {
    /// Reading only: the schema must be there; nothing is created or migrated.
    Read,
    /// Writing: the schema is created or migrated.
    Write,
}

/// The desk of `logs` (each must exist), or of the database `--pg` names.
pub(crate) fn pick(
    pg: &ask_user_pg::PgArgs,
    logs: &[PathBuf],
    access: Access,
) -> Result<Picked, CliError> {
    if let Some(url) = &pg.pg {
        let store = ask_user_pg::connect(url, pg.schema(), access == Access::Write)?;
        return Ok(Picked::Database(PgDesk::new(store)));
    }
    for log in logs {
        if !log.exists() {
            return Err(CliError::log(
                "LOG_IO",
                format!("no session log at {}", log.display()),
            ));
        }
    }
    let desk = LogDesk::files(logs)?.on_open(|_, resumed| super::report_resume(resumed));
    Ok(Picked::Logs(desk))
}

/// Every session log of a state directory (default: the one `ask-user mcp` writes), listed anew
/// on every look, each named by its file name there; `None` when the directory does not exist
/// (no session has been served yet).
pub(crate) fn state_dir(
    given: Option<PathBuf>,
    file: &super::config::Config,
) -> Result<Option<LogDesk>, CliError> {
    let dir = super::state_dir(given, file)?;
    if !dir.is_dir() {
        return Ok(None);
    }
    let store = crate::store::JsonlStore::new(dir);
    Ok(Some(
        LogDesk::store(std::sync::Arc::new(store))
            .on_open(|_, resumed| super::report_resume(resumed)),
    ))
}
