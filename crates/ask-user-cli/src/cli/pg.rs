//! Sessions on `PostgreSQL` (`ask-user-pg`): `worker`, `export` and `import`, and the `--pg` forms
//! of `pending` and `answer`. A session there is named, not a path; any number of processes on
//! any machines share the database, each session written by the one holding its lease.

// The doc comments of the arguments are the `--help` text, which names PostgreSQL plainly.
#![allow(clippy::doc_markdown)]

use std::io::{BufReader, Write};

use ask_user_pg::{
    ExportArgs, ImportArgs, ImportNameError, PgError, PgStore, Worker, WorkerArgs, WorkerEvent,
};
use ask_user_terminal::sanitize::visible;

use super::{CliError, Exit};
use crate::host::HostRuntime;

impl From<PgError> for CliError {
    /// A name or connection setting that cannot work is a usage error, anything else the
    /// log's (the message never holds the connection string).
    fn from(error: PgError) -> Self {
        let exit = match error {
            PgError::BadName { .. } | PgError::Settings(_) => Exit::Usage,
            _ => Exit::Log,
        };
        Self::new(error.code(), error.to_string(), exit)
    }
}

/// `worker`: admits every accepted answer of a session nobody holds, until interrupted.
pub(super) async fn worker(args: WorkerArgs) -> Result<Exit, CliError> {
    let options = args.options().map_err(CliError::usage)?;
    let store = PgStore::connect(&args.pg.pg, &options)?;
    let runtime = HostRuntime::new(store.clone(), None)?;
    let owner = store.owner().to_owned();
    let worker = Worker::new(&args.pg.pg, store, runtime, args.poll(), args.hold());
    let report = move |event: &WorkerEvent<'_>| {
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
    (worker.run_until(super::stopped(), report).await)
        .map_err(|e| CliError::failure("INTERNAL", format!("the worker stopped: {e}")))?;
    Ok(Exit::Interrupted)
}

/// `export`: a session as the JSONL file the file store would hold, byte for byte.
pub(super) fn export(args: &ExportArgs) -> Result<Exit, CliError> {
    let store = ask_user_pg::connect(&args.pg.pg, &args.pg.pg_schema, false)?;
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

/// `import`: a JSONL session log into the database, in one transaction.
pub(super) fn import(args: &ImportArgs) -> Result<Exit, CliError> {
    let name = args.session_name().map_err(|e| match e {
        ImportNameError::NoFileName => CliError::input(e.to_string()),
        ImportNameError::BadName(_) => CliError::usage(e.to_string()),
    })?;
    let file = std::fs::File::open(&args.log)
        .map_err(|e| CliError::log("LOG_IO", format!("cannot open {}: {e}", args.log.display())))?;
    let store = ask_user_pg::connect(&args.pg.pg, &args.pg.pg_schema, true)?;
    let report = (store.import(&name, &mut BufReader::new(file)))
        .map_err(|e| CliError::log(e.import_code(), e.to_string()))?;
    eprintln!("session {} imported: {report}", visible(&name));
    if let Some(warning) = &report.open_warning {
        eprintln!(
            "warning: the session is in, but opening it failed ({}); its next open tries again",
            visible(warning)
        );
    }
    Ok(Exit::Ok)
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
    let store = ask_user_pg::connect(url, schema, true)?;
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
