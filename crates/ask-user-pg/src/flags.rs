//! The database flags (`--pg URL`, `--pg-schema`) as clap flag groups, read over the
//! configuration file's [`PgSettings`], and the arguments of the commands that are this crate's
//! alone: the worker's (`--poll`, `--lease`, `--hold`, `--once`) as the
//! [`Worker`](crate::Worker)'s settings, `export`'s and `import`'s. Behind the `clap` feature.

// The doc comments of the arguments are the `--help` text, which names PostgreSQL plainly.
#![allow(clippy::doc_markdown)]

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use crate::{DEFAULT_SCHEMA, PgError, PgOptions, PgSettings, PgStore};

/// `--pg URL` and `--pg-schema`: where the sessions live, when a database holds them.
#[derive(Clone, Debug, Default, Args)]
pub struct PgArgs {
    /// Use sessions in this PostgreSQL database (a libpq connection string or
    /// `postgres://` URL; TLS with sslmode=require, or verify-full and sslrootcert=CA_FILE)
    /// instead of log files: a session is named, not a path.
    #[arg(long, value_name = "URL")]
    pub pg: Option<String>,
    /// The database schema of the tables (a writing command creates or migrates it; a reading
    /// one, `pending` or `export`, only checks it).
    #[arg(long, value_name = "SCHEMA")]
    pub pg_schema: Option<String>,
}

impl PgArgs {
    /// Fills in what the configuration file's `[pg]` (`file`) gives and the flags do not: the
    /// database (only when the command line names no session log or state directory instead:
    /// `logs_named`) and the schema.
    #[must_use]
    pub fn filled(&self, logs_named: bool, file: &PgSettings) -> Self {
        let mut filled = self.clone();
        if filled.pg.is_none() && !logs_named {
            filled.pg = file.url.as_ref().map(|url| url.expose().to_owned());
        }
        if filled.pg_schema.is_none() {
            filled.pg_schema = Some(file.schema.clone());
        }
        filled
    }

    /// The schema: the flag's (or the file's, once [`filled`](Self::filled)), else
    /// [`DEFAULT_SCHEMA`].
    pub fn schema(&self) -> &str {
        self.pg_schema.as_deref().unwrap_or(DEFAULT_SCHEMA)
    }
}

/// `--pg URL` required, for the commands that work on a database only.
#[derive(Clone, Debug, Args)]
pub struct PgRequired {
    /// The PostgreSQL database (a libpq connection string or `postgres://` URL; TLS with
    /// sslmode=require, or verify-full and sslrootcert=CA_FILE).
    #[arg(long, value_name = "URL")]
    pub pg: String,
    /// The database schema of the tables (a writing command creates or migrates it; a reading
    /// one, `pending` or `export`, only checks it).
    #[arg(long, value_name = "SCHEMA", default_value = DEFAULT_SCHEMA)]
    pub pg_schema: String,
}

/// Connects to `url` with the tables in `schema`: with `migrate`, creating or migrating them;
/// without, for reading only (the schema must be there; nothing is created or changed).
///
/// # Errors
///
/// What [`PgStore::connect`] finds.
pub fn connect(url: &str, schema: &str, migrate: bool) -> Result<PgStore, PgError> {
    let options = PgOptions {
        migrate,
        ..PgOptions::in_schema(schema)
    };
    PgStore::connect(url, &options)
}

/// The worker's flags.
#[derive(Debug, Args)]
pub struct WorkerArgs {
    /// The database.
    #[command(flatten)]
    pub pg: PgRequired,
    /// How often to look for answers when no notification came (seconds).
    #[arg(long, value_name = "SECS", default_value_t = 5)]
    pub poll: u64,
    /// One pass over the waiting answers, then exit.
    #[arg(long)]
    pub once: bool,
    /// How long this worker's hold on a session lasts without renewal (seconds; renewed every
    /// third of it): how soon another worker takes over a session if this one dies.
    #[arg(long, value_name = "SECS", default_value_t = 15.0)]
    pub lease: f64,
    /// Keep a session open this long after its last admission (seconds; 0: close at once), so
    /// the next answer to it is admitted without opening it again.
    #[arg(long, value_name = "SECS", default_value_t = 30)]
    pub hold: u64,
}

impl WorkerArgs {
    /// The store's options: the schema, and the lease, renewed every third of it.
    ///
    /// # Errors
    ///
    /// A lease outside 0.3 to 3600 seconds.
    pub fn options(&self) -> Result<PgOptions, String> {
        if !(self.lease.is_finite() && (0.3..=3600.0).contains(&self.lease)) {
            return Err("--lease takes 0.3 to 3600 seconds".to_owned());
        }
        let lease = Duration::from_secs_f64(self.lease);
        Ok(PgOptions {
            schema: self.pg.pg_schema.clone(),
            lease,
            renew_every: lease / 3,
            ..PgOptions::default()
        })
    }

    /// How often to look for answers without a notification (at least a second).
    pub fn poll(&self) -> Duration {
        Duration::from_secs(self.poll.max(1))
    }

    /// How long a session stays open after its last admission.
    pub fn hold(&self) -> Duration {
        Duration::from_secs(self.hold)
    }
}

/// The arguments of `export`: a session as its JSONL log.
#[derive(Debug, Args)]
pub struct ExportArgs {
    /// The database.
    #[command(flatten)]
    pub pg: PgRequired,
    /// The session.
    pub session: String,
    /// Write the log here instead of stdout (refused if the file exists).
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// The arguments of `import`: a JSONL session log as a session.
#[derive(Debug, Args)]
pub struct ImportArgs {
    /// The database.
    #[command(flatten)]
    pub pg: PgRequired,
    /// The JSONL session log.
    pub log: PathBuf,
    /// The session's name in the database (default: the file's name).
    #[arg(long)]
    pub name: Option<String>,
}

impl ImportArgs {
    /// The session's name: `--name`, else the log file's name; checked
    /// ([`check_session_name`](crate::check_session_name)), so a name `pending` and `answer`
    /// could not name is refused before anything is read.
    ///
    /// # Errors
    ///
    /// The log path has no file name, or the name is not a session name.
    pub fn session_name(&self) -> Result<String, ImportNameError> {
        let name = match &self.name {
            Some(name) => name.clone(),
            None => (self.log.file_name())
                .map(|n| n.to_string_lossy().into_owned())
                .ok_or(ImportNameError::NoFileName)?,
        };
        crate::check_session_name(&name).map_err(|e| ImportNameError::BadName(e.to_string()))?;
        Ok(name)
    }
}

/// Why `import` has no session name.
#[derive(Debug, thiserror::Error)]
pub enum ImportNameError {
    /// No `--name`, and the log path has no file name.
    #[error("the log path has no file name; pass --name")]
    NoFileName,
    /// The name is not a session name.
    #[error("--name: {0}; give the session a name")]
    BadName(String),
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;
    use crate::ConnString;

    #[derive(Parser)]
    struct Command<T: Args> {
        #[command(flatten)]
        args: T,
    }

    fn parse<T: Args>(args: &[&str]) -> Result<T, clap::Error> {
        Command::<T>::try_parse_from(std::iter::once("test").chain(args.iter().copied()))
            .map(|c| c.args)
    }

    fn file(url: Option<&str>, schema: &str) -> PgSettings {
        PgSettings {
            url: url.map(ConnString::new),
            schema: schema.to_owned(),
        }
    }

    #[test]
    fn the_files_database_fills_in_only_where_no_log_is_named() {
        let file = file(Some("host=db"), "from_file");
        let none: PgArgs = parse(&[]).unwrap();
        let filled = none.filled(false, &file);
        assert_eq!(filled.pg.as_deref(), Some("host=db"));
        assert_eq!(filled.schema(), "from_file");
        // A log or a state directory named on the command line: the logs, not the database.
        assert_eq!(none.filled(true, &file).pg, None);
        let given: PgArgs = parse(&["--pg", "host=other", "--pg-schema", "mine"]).unwrap();
        let filled = given.filled(false, &file);
        assert_eq!(filled.pg.as_deref(), Some("host=other"));
        assert_eq!(filled.schema(), "mine");
        assert_eq!(PgArgs::default().schema(), DEFAULT_SCHEMA);
    }

    #[test]
    fn a_workers_lease_is_checked_and_renewed_every_third() {
        let args: WorkerArgs = parse(&["--pg", "host=db", "--lease", "3"]).unwrap();
        let options = args.options().unwrap();
        assert_eq!(options.lease, Duration::from_secs(3));
        assert_eq!(options.renew_every, Duration::from_secs(1));
        assert_eq!(options.schema, DEFAULT_SCHEMA);
        assert_eq!(args.poll(), Duration::from_secs(5));
        assert_eq!(args.hold(), Duration::from_secs(30));
        for lease in ["0.1", "3601", "NaN", "inf"] {
            let args: WorkerArgs = parse(&["--pg", "host=db", "--lease", lease]).unwrap();
            assert_eq!(
                args.options().unwrap_err(),
                "--lease takes 0.3 to 3600 seconds",
                "{lease}"
            );
        }
        let args: WorkerArgs = parse(&["--pg", "host=db", "--poll", "0"]).unwrap();
        assert_eq!(args.poll(), Duration::from_secs(1), "at least a second");
    }

    #[test]
    fn an_imported_session_is_named_by_the_flag_or_the_file_and_checked() {
        let named: ImportArgs = parse(&["--pg", "host=db", "logs/s1.jsonl"]).unwrap();
        assert_eq!(named.session_name().unwrap(), "s1.jsonl");
        let flagged: ImportArgs =
            parse(&["--pg", "host=db", "logs/s1.jsonl", "--name", "s2"]).unwrap();
        assert_eq!(flagged.session_name().unwrap(), "s2");
        let bad: ImportArgs = parse(&["--pg", "host=db", "s1.jsonl", "--name", ""]).unwrap();
        assert!(matches!(
            bad.session_name(),
            Err(ImportNameError::BadName(_))
        ));
        let no_name: ImportArgs = parse(&["--pg", "host=db", "/"]).unwrap();
        assert!(matches!(
            no_name.session_name(),
            Err(ImportNameError::NoFileName)
        ));
    }
}
