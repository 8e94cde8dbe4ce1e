//! Sessions on `PostgreSQL` (`ask-user-pg`): `worker`, `export` and `import`, and the `--pg` forms
//! of `pending` and `answer`. A session there is named, not a path; any number of processes on
//! any machines share the database, each session written by the one holding its lease.

// The doc comments of the arguments are the `--help` text, which names PostgreSQL plainly.
#![allow(clippy::doc_markdown)]

use std::io::{BufReader, Write};
use std::path::PathBuf;
use std::time::Duration;

use ask_user_pg::{PgError, PgOptions, PgStore, Worker, WorkerEvent, admit_answers};
use ask_user_terminal::sanitize::visible;
use clap::Args;

use super::{CliError, Exit};
use crate::host::HostRuntime;

/// `--pg URL` and `--pg-schema`: where the sessions live.
#[derive(Clone, Debug, Args)]
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
    /// Fills in what the configuration file's `[pg]` gives and the flags do not: the database
    /// (only when the command line names no session log or state directory instead:
    /// `logs_named`) and the schema (`file`: the configuration file's).
    pub(crate) fn filled(&self, logs_named: bool, file: &super::config::Config) -> Self {
        let mut filled = self.clone();
        if filled.pg.is_none() && !logs_named {
            filled.pg = file.pg.url.as_ref().map(|url| url.expose().to_owned());
        }
        if filled.pg_schema.is_none() {
            filled.pg_schema = Some(file.pg.schema.clone());
        }
        filled
    }

    /// The schema: the flag's, else the configuration file's, else `ask_user`.
    pub(crate) fn schema(&self) -> &str {
        self.pg_schema
            .as_deref()
            .unwrap_or(ask_user_pg::DEFAULT_SCHEMA)
    }
}

/// `--pg URL` required.
#[derive(Clone, Debug, Args)]
pub struct PgRequired {
    /// The PostgreSQL database (a libpq connection string or `postgres://` URL; TLS with
    /// sslmode=require, or verify-full and sslrootcert=CA_FILE).
    #[arg(long, value_name = "URL")]
    pub pg: String,
    /// The database schema of the tables (a writing command creates or migrates it; a reading
    /// one, `pending` or `export`, only checks it).
    #[arg(long, value_name = "SCHEMA", default_value = ask_user_pg::DEFAULT_SCHEMA)]
    pub pg_schema: String,
}

/// Connects and migrates.
pub(super) fn connect(url: &str, schema: &str) -> Result<PgStore, CliError> {
    let options = PgOptions::in_schema(schema);
    PgStore::connect(url, &options).map_err(|e| db_error(&e))
}

/// Connects for reading only: the schema must be there; nothing is created or migrated.
pub(super) fn connect_read_only(url: &str, schema: &str) -> Result<PgStore, CliError> {
    let options = PgOptions {
        migrate: false,
        ..PgOptions::in_schema(schema)
    };
    PgStore::connect(url, &options).map_err(|e| db_error(&e))
}

/// A database error as the command's: a name or connection setting that cannot work is a usage
/// error, anything else the log's (the message never holds the connection string).
pub(super) fn db_error(error: &PgError) -> CliError {
    let exit = match error {
        PgError::BadName { .. } | PgError::Settings(_) => Exit::Usage,
        _ => Exit::Log,
    };
    CliError::new(error.code(), error.to_string(), exit)
}

/// Arguments of `worker`.
#[derive(Debug, Args)]
pub struct WorkerArgs {
    #[command(flatten)]
    pg: PgRequired,
    /// How often to look for answers when no notification came (seconds).
    #[arg(long, value_name = "SECS", default_value_t = 5)]
    poll: u64,
    /// One pass over the waiting answers, then exit.
    #[arg(long)]
    once: bool,
    /// How long this worker's hold on a session lasts without renewal (seconds; renewed every
    /// third of it): how soon another worker takes over a session if this one dies.
    #[arg(long, value_name = "SECS", default_value_t = 15.0)]
    lease: f64,
    /// Keep a session open this long after its last admission (seconds; 0: close at once), so
    /// the next answer to it is admitted without opening it again.
    #[arg(long, value_name = "SECS", default_value_t = 30)]
    hold: u64,
}

/// `worker`: admits every accepted answer of a session nobody holds, until interrupted.
pub(super) async fn worker(args: WorkerArgs) -> Result<Exit, CliError> {
    if !(args.lease.is_finite() && (0.3..=3600.0).contains(&args.lease)) {
        return Err(CliError::usage("--lease takes 0.3 to 3600 seconds"));
    }
    let lease = Duration::from_secs_f64(args.lease);
    let options = PgOptions {
        schema: args.pg.pg_schema.clone(),
        lease,
        renew_every: lease / 3,
        ..PgOptions::default()
    };
    let store = PgStore::connect(&args.pg.pg, &options).map_err(|e| db_error(&e))?;
    let runtime = HostRuntime::new(store.clone(), None)?;
    let owner = store.owner().to_owned();
    let worker = Worker::new(
        &args.pg.pg,
        store,
        runtime,
        Duration::from_secs(args.poll.max(1)),
        Duration::from_secs(args.hold),
    );
    let mut report = |event: &WorkerEvent<'_>| {
        let line = visible(&event.to_string()).into_owned();
        if matches!(event, WorkerEvent::Admitted { .. }) {
            println!("{line}");
            let _ = std::io::stdout().flush();
        } else {
            eprintln!("{line}");
        }
    };
    if args.once {
        let mut failed = false;
        worker.pass(&mut |event: &WorkerEvent<'_>| {
            failed |= !matches!(event, WorkerEvent::Admitted { .. });
            report(event);
        });
        return Ok(if failed { Exit::Log } else { Exit::Ok });
    }
    eprintln!(
        "worker {} admitting answers (Ctrl-C stops)",
        visible(&owner)
    );
    let stop = worker.stopper();
    let mut run = tokio::task::spawn_blocking(move || worker.run(&mut report));
    tokio::select! {
        () = super::stopped() => stop.stop(),
        ended = &mut run => {
            // The worker never returns unless stopped: it panicked.
            return Err(CliError::failure("INTERNAL", format!("the worker stopped: {ended:?}")));
        }
    }
    let _ = run.await;
    Ok(Exit::Interrupted)
}

/// Arguments of `export`.
#[derive(Debug, Args)]
pub struct ExportArgs {
    #[command(flatten)]
    pg: PgRequired,
    /// The session.
    session: String,
    /// Write the log here instead of stdout (refused if the file exists).
    #[arg(short, long, value_name = "FILE")]
    output: Option<PathBuf>,
}

/// `export`: a session as the JSONL file the file store would hold, byte for byte.
pub(super) fn export(args: &ExportArgs) -> Result<Exit, CliError> {
    let store = connect_read_only(&args.pg.pg, &args.pg.pg_schema)?;
    let failed = |e: ask_user_pg::ExportError| CliError::log("EXPORT_FAILED", e.to_string());
    let Some(path) = &args.output else {
        // The log's bytes verbatim: a corrupt line may hold escape codes, which never reach a
        // terminal raw.
        if std::io::IsTerminal::is_terminal(&std::io::stdout()) {
            return Err(CliError::usage(
                "export writes the log's bytes verbatim: redirect stdout to a file, or use -o FILE",
            ));
        }
        let stdout = std::io::stdout();
        let mut out = stdout.lock();
        store.export(&args.session, &mut out).map_err(failed)?;
        out.flush()
            .map_err(|e| CliError::log("LOG_IO", e.to_string()))?;
        return Ok(Exit::Ok);
    };
    let bytes = store
        .export_to_new_file(&args.session, path)
        .map_err(|e| match e {
            ask_user_pg::ExportError::Io(e) => {
                CliError::log("LOG_IO", format!("cannot write {}: {e}", path.display()))
            }
            e => failed(e),
        })?;
    eprintln!("{bytes} bytes written to {}", path.display());
    Ok(Exit::Ok)
}

/// Arguments of `import`.
#[derive(Debug, Args)]
pub struct ImportArgs {
    #[command(flatten)]
    pg: PgRequired,
    /// The JSONL session log.
    log: PathBuf,
    /// The session's name in the database (default: the file's name).
    #[arg(long)]
    name: Option<String>,
}

/// `import`: a JSONL session log into the database, in one transaction.
pub(super) fn import(args: &ImportArgs) -> Result<Exit, CliError> {
    let name = match &args.name {
        Some(name) => name.clone(),
        None => args
            .log
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .ok_or_else(|| CliError::input("the log path has no file name; pass --name"))?,
    };
    // A name `pending` and `answer` could not name is refused before anything is read.
    ask_user_pg::check_session_name(&name)
        .map_err(|e| CliError::usage(format!("--name: {e}; give the session a name")))?;
    let file = std::fs::File::open(&args.log)
        .map_err(|e| CliError::log("LOG_IO", format!("cannot open {}: {e}", args.log.display())))?;
    let store = connect(&args.pg.pg, &args.pg.pg_schema)?;
    let report = store
        .import(&name, &mut BufReader::new(file))
        .map_err(|e| {
            let code = match &e {
                ask_user_pg::ExportError::Store(_) | ask_user_pg::ExportError::Db(_) => {
                    "IMPORT_FAILED"
                }
                other => other.code(),
            };
            CliError::log(code, e.to_string())
        })?;
    eprintln!("session {} imported: {report}", visible(&name));
    if let Some(warning) = &report.open_warning {
        eprintln!(
            "warning: the session is in, but opening it failed ({}); its next open tries again",
            visible(warning)
        );
    }
    Ok(Exit::Ok)
}

/// `answer --pg … --admit`: admits the session's accepted answers here when no worker holds the
/// session. The answer is durable in the ledger already: a failed admission is reported, and left
/// to a worker, never turned into a failure of the answer.
pub(super) fn admit_here(store: &PgStore, session: &str) {
    let admitted = HostRuntime::new(store.clone(), None)
        .map_err(|e| e.to_string())
        .and_then(|runtime| admit_answers(&runtime, store, session).map_err(|e| e.to_string()));
    match admitted {
        Ok(a) if a.busy => eprintln!("the session is held by a worker, which admits it"),
        Ok(a) if a.admitted > 0 => eprintln!(
            "{} repl{} admitted; the question is settled",
            a.admitted,
            if a.admitted == 1 { "y" } else { "ies" }
        ),
        Ok(_) => eprintln!(
            "not admitted here: the question is in its window (the host running it takes the answer), or another reply settled it first"
        ),
        Err(error) => eprintln!(
            "warning: not admitted here ({}); a worker admits it",
            visible(&error)
        ),
    }
}

/// `mcp --pg`: an MCP server whose sessions live in the database. While a request has a
/// session open, the ledger is wired into it (`PgStore::live_hook`): its open questions take
/// answers given in the ledger from anywhere, remote claims hold their windows, and late answers
/// go to its inbox; between requests the session's lease is free, so a worker admits its late
/// answers and the companion tool reads them back from the log. Its form rounds are sealed with
/// the database's shared key, so any instance serves any round.
pub(super) fn mcp_server(
    url: &str,
    schema: &str,
    options: ask_user_mcp::McpOptions,
) -> Result<ask_user_mcp::AskUserMcp, CliError> {
    let store = connect(url, schema)?;
    let unavailable = |e: &dyn std::fmt::Display| CliError::log("DB_UNAVAILABLE", e.to_string());
    let candidate = ask_user_mcp::RequestStateKey::generate().map_err(|e| unavailable(&e))?;
    let stored = (store.request_state_key(candidate.as_bytes())).map_err(|e| unavailable(&e))?;
    let key = ask_user_mcp::RequestStateKey::new(stored)
        .ok_or_else(|| unavailable(&"the database's request-state secret is shorter than a key"))?;
    let live = store.live_hook(url);
    let hook = ask_user_mcp::SessionHook(std::sync::Arc::new(
        move |name: &str, host: &crate::host::Host| -> Box<dyn Send> { Box::new(live(name, host)) },
    ));
    let options = options.with_request_state_key(key).with_session_hook(hook);
    ask_user_mcp::AskUserMcp::with_store(options, store).map_err(|e| unavailable(&e))
}
