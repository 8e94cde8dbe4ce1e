//! One database connection owned by a thread of its own. The `postgres` client blocks on a
//! runtime of its own, which must not run inside a caller's async runtime; the store's methods are
//! synchronous and may be called from anywhere (a tokio worker included), so every statement runs
//! on this thread and the caller waits for its result on a channel. Jobs run in the order they were
//! sent: a writer's release on drop runs before a later open.

use std::collections::HashMap;
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use postgres::{Client, NoTls, Statement};

use crate::PgError;
use crate::tls::Target;

type Job = Box<dyn FnOnce(&mut Connection) + Send>;

/// The connection and what reconnecting needs.
pub(crate) struct Connection {
    config: String,
    schema: String,
    client: Option<Client>,
    /// The statements prepared on this connection, by their text (gone with the connection).
    prepared: HashMap<&'static str, Statement>,
}

impl Connection {
    /// The client, connected (again, after a lost connection) on first use.
    pub(crate) fn client(&mut self) -> Result<&mut Client, PgError> {
        if self.client.as_ref().is_some_and(Client::is_closed) {
            self.client = None;
        }
        if self.client.is_none() {
            self.prepared.clear();
            self.client = Some(connect(&self.config, &self.schema)?);
        }
        // Just set when it was `None`.
        self.client.as_mut().ok_or(PgError::Closed)
    }

    /// `sql` prepared on this connection (once: a hot statement then costs one round trip).
    pub(crate) fn statement(&mut self, sql: &'static str) -> Result<Statement, PgError> {
        // Reconnecting forgets what the old connection had prepared.
        self.client()?;
        if let Some(statement) = self.prepared.get(sql) {
            return Ok(statement.clone());
        }
        let statement = self.client()?.prepare(sql).map_err(PgError::Query)?;
        self.prepared.insert(sql, statement.clone());
        Ok(statement)
    }

    /// Forgets the client after a failure that may have broken it (the next use reconnects).
    pub(crate) fn reset_if_closed(&mut self) {
        if self.client.as_ref().is_some_and(Client::is_closed) {
            self.client = None;
        }
    }
}

/// Connects with `search_path` set to `schema`, over TLS as the connection string's `sslmode`
/// and `sslrootcert` ask (see [`tls`](crate::tls)).
///
/// Every wait is bounded, so a stalled or cut-off peer never blocks this connection for long: a
/// connect times out after 10 s, a dead server is noticed by TCP keepalives within about a
/// minute, a lock is waited for at most 10 s, a statement runs at most 60 s, and a transaction
/// left idle (its client stalled mid-way) is ended by the server after 60 s, releasing its locks.
pub(crate) fn connect(config: &str, schema: &str) -> Result<Client, PgError> {
    let Target { mut config, tls } = Target::parse(config)?;
    config
        .connect_timeout(Duration::from_secs(10))
        .keepalives(true)
        .keepalives_idle(Duration::from_secs(30))
        .keepalives_interval(Duration::from_secs(10))
        .keepalives_retries(3);
    let connected = match tls {
        Some(tls) => config.connect(tls),
        None => config.connect(NoTls),
    };
    let mut client = connected.map_err(PgError::Connect)?;
    client
        .batch_execute(&format!(
            "SET search_path TO {};
             SET lock_timeout = '10s';
             SET statement_timeout = '60s';
             SET idle_in_transaction_session_timeout = '60s';",
            quote_ident(schema)
        ))
        .map_err(PgError::Connect)?;
    Ok(client)
}

/// A SQL identifier, quoted.
pub(crate) fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// The handle to the connection thread; cloning gives another handle to the same connection.
#[derive(Clone)]
pub(crate) struct Db {
    jobs: mpsc::Sender<Job>,
}

impl Db {
    /// Starts the thread, which connects (the error of that first connect is returned here).
    /// Connecting happens on the thread too: the client must never block inside the caller's
    /// async runtime.
    pub(crate) fn start(config: &str, schema: &str) -> Result<Self, PgError> {
        let (jobs, queue) = mpsc::channel::<Job>();
        let (ready, connected) = mpsc::sync_channel(1);
        let config = config.to_owned();
        let schema = schema.to_owned();
        thread::Builder::new()
            .name("ask-user-pg".into())
            .spawn(move || {
                let client = match connect(&config, &schema) {
                    Ok(client) => client,
                    Err(error) => {
                        let _ = ready.send(Err(error));
                        return;
                    }
                };
                let _ = ready.send(Ok(()));
                let mut connection = Connection {
                    config,
                    schema,
                    client: Some(client),
                    prepared: HashMap::new(),
                };
                // Ends when every handle is gone. A job that panics loses its reply (its caller
                // gets `Closed`) and the connection, never the thread.
                for job in queue {
                    let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        job(&mut connection);
                    }));
                    if run.is_err() {
                        connection.client = None;
                    }
                }
            })
            .map_err(|e| PgError::Thread(e.to_string()))?;
        connected.recv().map_err(|_| PgError::Closed)??;
        Ok(Self { jobs })
    }

    /// Runs `job` on the connection thread and waits for its result.
    pub(crate) fn run<T: Send + 'static>(
        &self,
        job: impl FnOnce(&mut Connection) -> Result<T, PgError> + Send + 'static,
    ) -> Result<T, PgError> {
        self.submit(job).wait()
    }

    /// Queues `job` on the connection thread; its result is waited for with
    /// [`Pending::wait`] (a reader's next page, fetched while the caller reads this one).
    pub(crate) fn submit<T: Send + 'static>(
        &self,
        job: impl FnOnce(&mut Connection) -> Result<T, PgError> + Send + 'static,
    ) -> Pending<T> {
        let (reply, result) = mpsc::sync_channel(1);
        // A closed thread drops the job with its reply sender: `wait` then says `Closed`.
        let _ = self.jobs.send(Box::new(move |connection: &mut Connection| {
            let outcome = job(connection);
            connection.reset_if_closed();
            let _ = reply.send(outcome);
        }));
        Pending(result)
    }

    /// Runs `job` on the connection thread without waiting (an import's transaction, fed by the
    /// caller through a channel while it runs).
    pub(crate) fn spawn(&self, job: impl FnOnce(&mut Connection) + Send + 'static) {
        let _ = self.jobs.send(Box::new(job));
    }
}

/// A job's result on its way from the connection thread ([`Db::submit`]); dropping it discards
/// the result.
pub(crate) struct Pending<T>(mpsc::Receiver<Result<T, PgError>>);

impl<T> Pending<T> {
    /// Waits for the job's result.
    pub(crate) fn wait(self) -> Result<T, PgError> {
        self.0.recv().map_err(|_| PgError::Closed)?
    }
}
