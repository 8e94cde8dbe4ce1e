//! Sessions on `PostgreSQL` (`ask-user-pg`): `worker`, `export` and `import`, and the `--pg` forms
//! of `pending` and `answer`. A session there is named, not a path; any number of processes on
//! any machines share the database, each session written by the one holding its lease.

// The doc comments of the arguments are the `--help` text, which names PostgreSQL plainly.
#![allow(clippy::doc_markdown)]

use std::io::{BufReader, Write};
use std::path::PathBuf;
use std::time::Duration;

use std::collections::HashMap;
use std::time::Instant;

use ask_user_pg::{
    AnswerError, LedgerAnswerer, LedgerFeed, LedgerQuestion, PgError, PgOptions, PgStore,
    QuestionState, Worker, WorkerEvent, admit_answers,
};
use ask_user_terminal::sanitize::visible;
use ask_user_web::{ContinuedQuestion, WebSessions, WebSurface};
use clap::Args;
use pending_answer::{LateAnswerSink, LateRefusal, LateSubmission};
use user_questions::{
    AnswerBatch, AnswererGuard, CallId, CancellationToken, ErrorCode, Provenance, QuestionLimits,
    UserQuestionError,
};

use super::{CliError, Exit};
use crate::host::{CheckpointPolicy, HostRuntime, load_projection};

/// `--pg URL` and `--pg-schema`: where the sessions live.
#[derive(Clone, Debug, Args)]
pub struct PgArgs {
    /// Use sessions in this PostgreSQL database (a libpq connection string or
    /// `postgres://` URL; no TLS) instead of a log file: the positional log is a session name.
    #[arg(long, value_name = "URL")]
    pub pg: Option<String>,
    /// The database schema of the tables (a writing command creates or migrates it; a reading
    /// one, `pending` or `export`, only checks it).
    #[arg(
        long,
        value_name = "SCHEMA",
        default_value = "ask_user",
        requires = "pg"
    )]
    pub pg_schema: String,
}

/// `--pg URL` required.
#[derive(Clone, Debug, Args)]
pub struct PgRequired {
    /// The PostgreSQL database (a libpq connection string or `postgres://` URL; no TLS).
    #[arg(long, value_name = "URL")]
    pub pg: String,
    /// The database schema of the tables (a writing command creates or migrates it; a reading
    /// one, `pending` or `export`, only checks it).
    #[arg(long, value_name = "SCHEMA", default_value = "ask_user")]
    pub pg_schema: String,
}

impl PgRequired {
    fn connect(&self) -> Result<PgStore, CliError> {
        connect(&self.pg, &self.pg_schema)
    }
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

pub(super) fn db_error(error: &PgError) -> CliError {
    CliError::new(error.code(), error.to_string(), Exit::Log)
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
        return Err(CliError::new(
            "BAD_USAGE",
            "--lease takes 0.3 to 3600 seconds",
            Exit::Usage,
        ));
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
    let mut report = |event: &WorkerEvent<'_>| match event {
        WorkerEvent::Admitted { session, admitted } => {
            println!(
                "session {}: {} repl{} admitted{}",
                visible(session),
                admitted.admitted,
                if admitted.admitted == 1 { "y" } else { "ies" },
                if admitted.refused > 0 {
                    format!(
                        ", {} left (the question is not continued there)",
                        admitted.refused
                    )
                } else {
                    String::new()
                }
            );
            let _ = std::io::stdout().flush();
        }
        WorkerEvent::Failed { session, error } => {
            eprintln!(
                "session {}: admission failed, retried on the next pass: {}",
                visible(session),
                visible(&error.to_string())
            );
        }
        WorkerEvent::Unavailable(error) => {
            eprintln!(
                "database unavailable, retrying: {}",
                visible(&error.to_string())
            );
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
        _ = tokio::signal::ctrl_c() => stop.stop(),
        () = terminate() => stop.stop(),
        ended = &mut run => {
            // The worker never returns unless stopped: it panicked.
            return Err(CliError::new(
                "INTERNAL",
                format!("the worker stopped: {ended:?}"),
                Exit::Failure,
            ));
        }
    }
    let _ = run.await;
    Ok(Exit::Interrupted)
}

/// Resolves on SIGTERM.
async fn terminate() {
    match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
        Ok(mut signal) => {
            signal.recv().await;
        }
        Err(_) => std::future::pending().await,
    }
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
    let failed =
        |e: ask_user_pg::ExportError| CliError::new("EXPORT_FAILED", e.to_string(), Exit::Log);
    let Some(path) = &args.output else {
        // The log's bytes verbatim: a corrupt line may hold escape codes, which never reach a
        // terminal raw.
        if std::io::IsTerminal::is_terminal(&std::io::stdout()) {
            return Err(CliError::new(
                "BAD_USAGE",
                "export writes the log's bytes verbatim: redirect stdout to a file, or use -o FILE",
                Exit::Usage,
            ));
        }
        let stdout = std::io::stdout();
        let mut out = stdout.lock();
        store.export(&args.session, &mut out).map_err(failed)?;
        out.flush()
            .map_err(|e| CliError::new("LOG_IO", e.to_string(), Exit::Log))?;
        return Ok(Exit::Ok);
    };
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(|e| {
            CliError::new(
                "LOG_IO",
                format!("cannot create {}: {e}", path.display()),
                Exit::Log,
            )
        })?;
    let written = store
        .export(&args.session, &mut file)
        .map_err(failed)
        .and_then(|bytes| {
            file.sync_all()
                .map(|()| bytes)
                .map_err(|e| CliError::new("LOG_IO", e.to_string(), Exit::Log))
        });
    let bytes = match written {
        Ok(bytes) => bytes,
        Err(error) => {
            // No partial log is left behind (a retry would be refused by it).
            drop(file);
            let _ = std::fs::remove_file(path);
            return Err(error);
        }
    };
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
    let file = std::fs::File::open(&args.log).map_err(|e| {
        CliError::new(
            "LOG_IO",
            format!("cannot open {}: {e}", args.log.display()),
            Exit::Log,
        )
    })?;
    let store = args.pg.connect()?;
    let report = store
        .import(&name, &mut BufReader::new(file))
        .map_err(|e| {
            let code = match &e {
                ask_user_pg::ExportError::Exists(_) => "LOG_EXISTS",
                ask_user_pg::ExportError::Header(_) => "LOG_HEADER",
                ask_user_pg::ExportError::LineTooLong { .. } => "LINE_TOO_LONG",
                _ => "IMPORT_FAILED",
            };
            CliError::new(code, e.to_string(), Exit::Log)
        })?;
    eprintln!(
        "session {} imported: {} lines, {} bytes{}{}",
        visible(&name),
        report.lines,
        report.byte_length,
        if report.corrupt > 0 {
            format!(", {} corrupt lines kept", report.corrupt)
        } else {
            String::new()
        },
        report
            .torn_tail
            .map(|n| format!(", an incomplete last line of {n} bytes left out"))
            .unwrap_or_default()
    );
    if let Some(warning) = &report.open_warning {
        eprintln!(
            "warning: the session is in, but opening it failed ({}); its next open tries again",
            visible(warning)
        );
    }
    Ok(Exit::Ok)
}

pub(super) fn question_json(q: &LedgerQuestion) -> serde_json::Value {
    serde_json::json!({
        "session": q.session,
        "callId": q.call_id,
        "state": q.state.as_str(),
        "answered": q.answered,
        "questions": q.questions,
    })
}

/// The continued question's questions, for `--pick ID=LABEL`.
pub(super) fn stored_questions(
    url: &str,
    schema: &str,
    session: &str,
    call_id: &CallId,
) -> Result<(PgStore, Vec<user_questions::Question>), CliError> {
    let store = connect(url, schema)?;
    let questions = store
        .questions(Some(session))
        .map_err(|e| db_error(&e))?
        .into_iter()
        .find(|q| &q.call_id == call_id)
        .map(|q| q.questions)
        .unwrap_or_default();
    Ok((store, questions))
}

/// `answer --pg URL SESSION CALL …`: the answer goes to the ledger (first answer wins); it is
/// admitted by the session's worker, or here with `--admit` when nobody holds the session.
pub(super) fn answer(
    store: &PgStore,
    session: &str,
    call_id: &CallId,
    batch: &AnswerBatch,
    provenance: &Provenance,
    admit: bool,
) -> Result<Exit, CliError> {
    let answer_id = store
        .answer(
            session,
            call_id,
            batch,
            provenance,
            &QuestionLimits::default(),
        )
        .map_err(|error| {
            let exit = match &error {
                AnswerError::UnknownSession(_) | AnswerError::Db(_) => Exit::Log,
                AnswerError::UnknownCall { .. }
                | AnswerError::Settled(_)
                | AnswerError::Dropped(_) => Exit::NotContinued,
                AnswerError::ReplyQueued(_) => Exit::ReplyQueued,
                AnswerError::BadAnswer(_) => Exit::BadAnswer,
            };
            CliError::new(error.code(), error.to_string(), exit)
        })?;
    eprintln!(
        "call {}: answer {} accepted",
        visible(call_id.as_str()),
        visible(&answer_id)
    );
    if admit {
        // The answer is durable in the ledger already: a failed admission is reported, and left
        // to a worker, never turned into a failure of the answer.
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
    } else {
        eprintln!("a worker (`ask-user worker --pg …`) admits it into the session");
    }
    Ok(Exit::Ok)
}

/// The open and continued questions of every session in the database, for `serve --pg`: an
/// answer from the page goes to the ledger (the first answer wins). The session's worker admits
/// a continued question's answer; the host running an open question's call takes it in its
/// window (its `LedgerAnswerer`).
pub(super) struct PgSessions {
    pub(super) store: PgStore,
}

impl PgSessions {
    /// The open and continued questions of every session.
    fn answerable(&self) -> Vec<LedgerQuestion> {
        match self.store.questions(None) {
            Ok(questions) => questions,
            Err(error) => {
                tracing::warn!(%error, "cannot list the questions");
                Vec::new()
            }
        }
    }
}

impl LateAnswerSink for PgSessions {
    fn submit(&self, submission: LateSubmission) -> Result<(), LateRefusal> {
        // A card names its call, and its session; without one, the session is the one whose
        // question it is.
        let sessions: Vec<String> = self
            .answerable()
            .into_iter()
            .filter(|q| {
                q.call_id == submission.call_id
                    && submission.session.as_ref().is_none_or(|s| *s == q.session)
            })
            .map(|q| q.session)
            .collect();
        let [session] = sessions.as_slice() else {
            return Err(LateRefusal::NotWaiting);
        };
        let call_id = &submission.call_id;
        match self.store.answer(
            session,
            call_id,
            &submission.answers,
            &submission.provenance,
            &QuestionLimits::default(),
        ) {
            Ok(_) => Ok(()),
            Err(AnswerError::ReplyQueued(_)) => Err(LateRefusal::Rejected(
                UserQuestionError::reply_queued(call_id),
            )),
            Err(AnswerError::BadAnswer(message)) => Err(LateRefusal::Rejected(
                UserQuestionError::new(ErrorCode::BadAnswer, message),
            )),
            Err(AnswerError::Db(error)) => Err(LateRefusal::Undelivered(Box::new(error))),
            Err(
                AnswerError::UnknownSession(_)
                | AnswerError::UnknownCall { .. }
                | AnswerError::Settled(_)
                | AnswerError::Dropped(_),
            ) => Err(LateRefusal::NotWaiting),
        }
    }
}

impl WebSessions for PgSessions {
    fn continued(&self) -> Vec<ContinuedQuestion> {
        self.answerable()
            .into_iter()
            .map(|q| ContinuedQuestion {
                open_elsewhere: q.state == QuestionState::Open,
                session: q.session,
                call_id: q.call_id,
                questions: q.questions,
                agent: None,
            })
            .collect()
    }

    fn pending_view(&self) -> serde_json::Value {
        let mut names: Vec<String> = self.answerable().into_iter().map(|q| q.session).collect();
        names.dedup();
        let sessions: Vec<serde_json::Value> = names
            .iter()
            .filter_map(|name| {
                let load = load_projection(&self.store, name, CheckpointPolicy::ReadOnly).ok()?;
                let mut view = serde_json::to_value(load.state.view()).ok()?;
                if let serde_json::Value::Object(map) = &mut view {
                    map.insert("session".to_owned(), serde_json::json!(name));
                }
                Some(view)
            })
            .collect();
        serde_json::json!({ "sessions": sessions })
    }
}

/// What keeps a session of the database live in this process: the ledger's late answers fed
/// to it, its open questions answered in their windows from anywhere (and held while a remote
/// surface claims them), and the runtime it runs in.
pub(super) struct LiveDb {
    _feed: LedgerFeed,
    _answerer: AnswererGuard,
    _runtime: HostRuntime,
}

/// A new session `PREFIX-<time>` in the database, run live by this process, with the ledger's
/// answers fed to it while it runs (`demo --pg`).
pub(super) fn live_session(
    url: &str,
    schema: &str,
    prefix: &str,
    config: tool_ask_user::AskUserConfig,
) -> Result<(crate::host::Host, String, LiveDb), CliError> {
    let store = connect(url, schema)?;
    let runtime = HostRuntime::new(store.clone(), Some(config))?;
    let name = format!("{prefix}-{}", crate::store::now_ms());
    let host = runtime.create(&name, crate::host::SessionOptions::named(name.as_str()))?;
    let poll = Duration::from_secs(1);
    let feed = LedgerFeed::start(
        url,
        store.clone(),
        &name,
        host.late_answers().clone(),
        host.agent(),
        poll,
    );
    let answerer = LedgerAnswerer::new(url, store, &name, host.agent(), runtime.seam(), poll)
        .register(runtime.seam());
    Ok((
        host,
        name,
        LiveDb {
            _feed: feed,
            _answerer: answerer,
            _runtime: runtime,
        },
    ))
}

/// How long a claim of `serve --pg` on a question open elsewhere lives unless renewed.
const CLAIM_LEASE: Duration = Duration::from_secs(15);
/// How often `serve --pg` renews its claims while a page looks.
const CLAIM_RENEW: Duration = Duration::from_secs(5);

/// `serve --pg`: keeps the pages' cards in step with the ledger (a fresh snapshot whenever the
/// open and continued questions change), and while any page looks, holds a claim (a lease row of
/// the database's clock, renewed every 5 s) on every question open elsewhere, so the host that
/// runs it does not count its window down; released when no page looks any more, when the
/// question leaves its window, and when `stop` fires.
pub(super) async fn follow_ledger(
    store: PgStore,
    surface: WebSurface,
    client: String,
    every: Duration,
    stop: CancellationToken,
) {
    let mut seen: Vec<(String, CallId, QuestionState)> = Vec::new();
    let mut held: HashMap<(String, CallId), Instant> = HashMap::new();
    loop {
        // Once stopped, one more look releases every claim held.
        let stopping = stop.is_cancelled();
        let looking = !stopping && surface.clients() > 0;
        let tick = {
            let (store, client) = (store.clone(), client.clone());
            let mut held = std::mem::take(&mut held);
            tokio::task::spawn_blocking(move || {
                let listed = claims_tick(&store, &client, looking, &mut held);
                (listed, held)
            })
            .await
        };
        match tick {
            Ok((listed, kept)) => {
                held = kept;
                if let Some(listed) = listed
                    && listed != seen
                {
                    seen = listed;
                    surface.refresh().await;
                }
            }
            Err(error) => tracing::warn!(%error, "the ledger follower failed; retrying"),
        }
        if stopping {
            return;
        }
        tokio::select! {
            () = stop.cancelled() => {}
            () = tokio::time::sleep(every) => {}
        }
    }
}

/// One look at the ledger for [`follow_ledger`]: the open and continued questions (`None` when
/// the ledger did not answer), and the claims taken, renewed or released.
fn claims_tick(
    store: &PgStore,
    client: &str,
    looking: bool,
    held: &mut HashMap<(String, CallId), Instant>,
) -> Option<Vec<(String, CallId, QuestionState)>> {
    let questions = match store.questions(None) {
        Ok(questions) => Some(questions),
        Err(error) => {
            tracing::warn!(%error, "cannot read the ledger; retrying");
            None
        }
    };
    let open: Vec<(String, CallId)> = questions
        .iter()
        .flatten()
        .filter(|q| q.state == QuestionState::Open)
        .map(|q| (q.session.clone(), q.call_id.clone()))
        .collect();
    held.retain(|key, _| {
        let keep = looking && (questions.is_none() || open.contains(key));
        if !keep && let Err(error) = store.release_claim(&key.0, &key.1, client) {
            tracing::warn!(%error, "cannot release a claim; it runs out by itself");
        }
        keep
    });
    if looking {
        for key in open {
            if held.get(&key).is_some_and(|at| at.elapsed() < CLAIM_RENEW) {
                continue;
            }
            match store.claim(&key.0, &key.1, client, CLAIM_LEASE) {
                Ok(QuestionState::Open) => {
                    held.insert(key, Instant::now());
                }
                Ok(_) => {
                    held.remove(&key);
                }
                Err(error) => tracing::warn!(%error, "cannot claim a question open elsewhere"),
            }
        }
    }
    questions.map(|questions| {
        questions
            .into_iter()
            .map(|q| (q.session, q.call_id, q.state))
            .collect()
    })
}

/// `mcp --pg`: an MCP server whose sessions live in the database. While a request has a
/// session open, the session's open questions take answers given in the ledger from anywhere,
/// and remote claims hold their windows (a `LedgerAnswerer` per session), and late answers go
/// to its inbox (a `LedgerFeed`); between requests the session's lease is free, so a worker
/// admits its late answers and the companion tool reads them back from the log.
pub(super) fn mcp_server(
    url: &str,
    schema: &str,
    options: ask_user_mcp::McpOptions,
) -> Result<ask_user_mcp::AskUserMcp, CliError> {
    let store = connect(url, schema)?;
    let (hook_store, hook_url) = (store.clone(), url.to_owned());
    let hook = ask_user_mcp::SessionHook(std::sync::Arc::new(
        move |name: &str, host: &crate::host::Host| -> Box<dyn Send> {
            let poll = Duration::from_secs(1);
            let answerer = LedgerAnswerer::new(
                &hook_url,
                hook_store.clone(),
                name,
                host.agent(),
                host.seam(),
                poll,
            )
            .register(host.seam());
            // A late answer given while the request runs goes to the session's inbox, where
            // the companion tool takes it.
            let feed = LedgerFeed::start(
                &hook_url,
                hook_store.clone(),
                name,
                host.late_answers().clone(),
                host.agent(),
                poll,
            );
            Box::new((answerer, feed))
        },
    ));
    let names = store.clone();
    ask_user_mcp::AskUserMcp::with_store(options.with_session_hook(hook), store, move || {
        Ok(names.log_names()?)
    })
    .map_err(|e| CliError::new("DB_UNAVAILABLE", e.to_string(), Exit::Log))
}
