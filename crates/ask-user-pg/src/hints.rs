//! The ledger's hints (`NOTIFY ask_user_answers, <session>`), sent after the commit that made
//! them true, off the committing statement.
//!
//! `PostgreSQL` serialises notifying commits: a transaction that notifies takes one lock of the
//! whole database at commit and holds it while its commit record is flushed, so front ends that
//! notified in their answer's commit waited for each other's `fsync` instead of sharing one (group
//! commit). An answer (or a claim) therefore commits without notifying and hands its session's
//! name to its store's [`Hints`]: one thread on a connection of its own, started on first use,
//! that sends every name queued since its last send in one statement (a burst of answers to one
//! session is one notification), with `synchronous_commit` off, so the lock is held only while
//! the commit record is written, never while it is flushed. A hint is only a hint: one lost (the
//! hint connection broke, the process died after the answer's commit) delays nothing past the
//! poll of whoever listens (a [`Worker`](crate::Worker), a
//! [`LedgerAnswerer`](crate::LedgerAnswerer), a [`LedgerFeed`](crate::LedgerFeed)), which
//! catches up on every answer.
//!
//! Dropping the store sends what is queued (waiting at most [`FLUSH_WAIT`]), so a command that
//! answers and exits still wakes the workers at once.

use std::collections::BTreeSet;
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Mutex, OnceLock};
use std::thread;
use std::time::Duration;

use postgres::{Client, Statement};
use user_questions::sync::lock_unpoisoned as lock;

use crate::PgError;

/// The channel every hint goes to: the one the listeners `LISTEN` on.
pub(crate) const CHANNEL: &str = "ask_user_answers";

/// How long dropping a store waits for its queued hints to be sent.
pub(crate) const FLUSH_WAIT: Duration = Duration::from_secs(2);

/// One store's hint sender. See the [module docs](self).
pub(crate) struct Hints {
    config: String,
    schema: String,
    /// The connection's `application_name` (so a person reading `pg_stat_activity` sees it).
    application: String,
    /// The queue to the sending thread, once started; `None` after the thread could not start.
    sender: OnceLock<Option<Mutex<Sender<String>>>>,
    /// Told once the sending thread has sent everything and ended.
    done: Mutex<Option<Receiver<()>>>,
}

impl Hints {
    /// A sender connecting with `config`, for the store of `owner`; nothing starts until the first
    /// hint.
    pub(crate) fn new(config: &str, schema: &str, owner: &str) -> Self {
        Self {
            config: config.to_owned(),
            schema: schema.to_owned(),
            application: format!("ask-user-pg hints {owner}"),
            sender: OnceLock::new(),
            done: Mutex::new(None),
        }
    }

    /// Queues a hint that session `name` has something new for its listeners. Never waits.
    pub(crate) fn send(&self, name: &str) {
        let sender = self.sender.get_or_init(|| self.start().map(Mutex::new));
        if let Some(sender) = sender {
            let _ = lock(sender).send(name.to_owned());
        } else {
            tracing::debug!(
                session = name,
                "no hint sender; the listeners' poll finds it"
            );
        }
    }

    fn start(&self) -> Option<Sender<String>> {
        let (sender, queue) = mpsc::channel();
        let (finished, done) = mpsc::sync_channel(1);
        let (config, schema, application) = (
            self.config.clone(),
            self.schema.clone(),
            self.application.clone(),
        );
        let spawned = thread::Builder::new()
            .name("ask-user-pg-hints".into())
            .spawn(move || {
                run(&config, &schema, &application, &queue);
                let _ = finished.send(());
            });
        match spawned {
            Ok(_) => {
                *lock(&self.done) = Some(done);
                Some(sender)
            }
            Err(error) => {
                tracing::warn!(%error, "cannot start the hint sender; listeners rely on their poll");
                None
            }
        }
    }
}

impl Drop for Hints {
    /// Ends the queue and waits (at most [`FLUSH_WAIT`]) for what it holds to be sent.
    fn drop(&mut self) {
        if let Some(Some(sender)) = self.sender.take() {
            drop(sender);
            if let Some(done) = lock(&self.done).take() {
                let _ = done.recv_timeout(FLUSH_WAIT);
            }
        }
    }
}

/// The sending thread: waits for a hint, takes every other one queued meanwhile, sends them in one
/// statement; until the queue ends (its store was dropped) and is empty.
fn run(config: &str, schema: &str, application: &str, queue: &Receiver<String>) {
    let mut client: Option<(Client, Statement)> = None;
    while let Ok(first) = queue.recv() {
        let mut names = BTreeSet::from([first]);
        names.extend(queue.try_iter());
        let names: Vec<String> = names.into_iter().collect();
        if let Err(error) = notify(&mut client, config, schema, application, &names) {
            // Lost: the listeners' poll finds these answers. The next burst reconnects.
            tracing::debug!(%error, sessions = names.len(), "hints lost; listeners poll");
            client = None;
        }
    }
}

/// One notification per name, in one autocommitted statement on the hint connection (opened
/// when there is none).
fn notify(
    client: &mut Option<(Client, Statement)>,
    config: &str,
    schema: &str,
    application: &str,
    names: &[String],
) -> Result<(), PgError> {
    // A connection that broke fails its burst (those hints are lost) and is opened afresh for
    // the next one: a hint is never retried, the listeners' poll is the retry.
    if client.is_none() {
        let mut connected = crate::db::connect(config, schema)?;
        // A hint's commit need not be durable (a lost hint is caught by the poll): not flushing
        // it keeps the database's notify lock for the time of a memory write.
        connected
            .execute(
                "SELECT set_config('synchronous_commit', 'off', false),
                        set_config('application_name', $1, false)",
                &[&application],
            )
            .map_err(PgError::Connect)?;
        // Prepared once per connection: each burst is then one round trip.
        let statement = connected
            .prepare("SELECT pg_notify($1, n) FROM unnest($2::text[]) AS n")
            .map_err(PgError::Query)?;
        *client = Some((connected, statement));
    }
    let Some((connected, statement)) = client.as_mut() else {
        return Err(PgError::Closed);
    };
    connected
        .execute(&*statement, &[&CHANNEL, &names])
        .map_err(PgError::Query)?;
    Ok(())
}
