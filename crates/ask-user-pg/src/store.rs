//! [`PgStore`]: the [`SessionStore`] contract on `PostgreSQL`. A log is a session row (its header
//! line, length and owner) and one row per later line, holding the line's bytes verbatim; read in
//! order, the rows are the JSONL file's bytes, so the one scanner of `session-log` reads them and
//! findings, positions and anchors are the file store's.
//!
//! Ownership is a lease on the database's clock (never this machine's). Opening for write takes a
//! log whose lease is free or has run out and raises its `epoch`; every append runs in one
//! transaction that first checks the writer's epoch (and the log's length), so a writer whose log
//! was taken over writes nothing ([`StoreError::Fenced`]) and no `seq` is ever written twice. A
//! thread renews the leases of the live writers; dropping a writer frees its lease.
//!
//! An open at a checkpoint ([`SessionStore::open_at_checkpoint`], [`SessionStore::open_from`])
//! reads the document, the anchor line and the first page after it with the lease, and only the
//! rows after its anchor; the ledger's fold starts from the checkpoint's state at the first
//! append, and the open writes nothing when the session row's `ledger_length` says the ledger
//! was in line with the whole log (see [`PgHold`]'s `opened`).

use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex, Weak};
use std::thread::{self, ThreadId};
use std::time::Duration;

use ask_user_host::CheckpointDocument;
use session_log::{
    LogBackend, LogEvent, OwnedLog, ScanPosition, SessionEvent, SessionHeader, SessionStore,
    StoreError, TornTail,
};
use user_questions::sync::lock_unpoisoned as lock;

use crate::PgError;
use crate::db::Db;
use crate::hints::Hints;
use crate::ledger::{FoldVisitor, LedgerFold, Resumed};
use crate::lines::{Lines, PAGE_BYTES};

/// How a [`PgStore`] connects and leases.
#[derive(Clone, Debug)]
pub struct PgOptions {
    /// The `PostgreSQL` schema the tables live in (created and migrated on connect): not empty, at
    /// most 63 bytes ([`check_schema_name`](crate::check_schema_name)); [`DEFAULT_SCHEMA`](crate::DEFAULT_SCHEMA)
    /// by default.
    pub schema: String,
    /// How long a writer's ownership lasts without renewal.
    pub lease: Duration,
    /// How often the live writers' leases are renewed (well inside `lease`).
    pub renew_every: Duration,
    /// Whether connecting may create and migrate the schema (`true`, the default). A read-only
    /// user (`ask-user pending`, `export`) sets it `false`: the schema must then be there, at
    /// this build's version, and nothing is changed.
    pub migrate: bool,
    /// This process's name as an owner, for `ask-user pending` and for people reading the rows
    /// (default: host name, process id and a random suffix).
    pub owner: Option<String>,
}

impl PgOptions {
    /// The defaults, with the tables in `schema`.
    pub fn in_schema(schema: &str) -> Self {
        Self {
            schema: schema.to_owned(),
            ..Self::default()
        }
    }
}

impl Default for PgOptions {
    fn default() -> Self {
        Self {
            schema: crate::DEFAULT_SCHEMA.into(),
            lease: Duration::from_secs(15),
            renew_every: Duration::from_secs(5),
            migrate: true,
            owner: None,
        }
    }
}

/// Session logs in a `PostgreSQL` database. Cloning gives another handle to the same store (one
/// connection). See the [module docs](self).
#[derive(Clone)]
pub struct PgStore {
    inner: Arc<Inner>,
}

struct Inner {
    db: Db,
    /// What connecting needs (an import and the lease renewals use connections of their own).
    config: String,
    schema: String,
    owner: String,
    lease_secs: f64,
    /// The live writers of this store: log name → the epoch each holds.
    live: Mutex<HashMap<String, i64>>,
    /// The opens under way: log name → what the statement that took the lease read with it.
    opening: Mutex<HashMap<String, Opening>>,
    /// The ledger's hints to its listeners, sent after the commits that make them true.
    hints: Hints,
    /// Dropped with the store, which ends the renewal thread.
    _stop_renewing: mpsc::Sender<()>,
}

/// What the statement that took a log's lease read with it (the session row as it was then), and
/// the anchor line the open checked with the page of lines after it: served to the rest of that
/// open, and to nothing else. Only the thread that took the lease is served, only until the open's
/// scan is done ([`OwnedLog::opened`]) or its hold is dropped, and only under that lease: in that
/// window nothing else writes the log (every other writer is fenced by the epoch), so the header,
/// the length and the lines up to it are the log's own. The one part a non-writer may change, the
/// checkpoint document, is the one read under the lease (an open never needs a newer one: any
/// document at the resume point that fits the log gives the same state), and is read again once
/// this store saved another.
struct Opening {
    thread: ThreadId,
    epoch: i64,
    header: Vec<u8>,
    byte_length: u64,
    /// The checkpoint document read with the lease (`None`: there was none).
    checkpoint: Option<Vec<u8>>,
    /// Whether `checkpoint` is still the one to serve (`false` once this store saved another).
    checkpoint_current: bool,
    /// The anchor line, with the lines after it: read by the lease's statement at the anchor of
    /// the checkpoint document (`checkpoint_end`), or by [`LogBackend::line_ending_at`].
    anchor: Option<AnchorRead>,
}

/// The line that ends at an anchor (`end`), and the first page of the lines after it.
struct AnchorRead {
    end: u64,
    line: Option<Vec<u8>>,
    /// The lines that end within [`PAGE_BYTES`] after `end` (taken by the open's tail reader).
    page: Option<Vec<u8>>,
    /// Where `page` ends.
    page_end: u64,
}

impl AnchorRead {
    /// From the rows that end from `end` to [`PAGE_BYTES`] after it (their ends and lines, in
    /// order): the first is the anchor line when it ends at `end` (otherwise no line ends there,
    /// and the page is not kept).
    fn of(end: u64, ends: &[i64], lines: Vec<Vec<u8>>) -> Self {
        let at = i64::try_from(end).unwrap_or(i64::MAX);
        let mut rows = ends.iter().copied().zip(lines);
        let Some((_, line)) = rows.next().filter(|(first, _)| *first == at) else {
            return Self {
                end,
                line: None,
                page: None,
                page_end: end,
            };
        };
        let mut page = Vec::new();
        let mut page_end = end;
        for (row_end, bytes) in rows {
            page.extend_from_slice(&bytes);
            page_end = u64::try_from(row_end).unwrap_or(page_end);
        }
        Self {
            end,
            line: Some(line),
            page: Some(page),
            page_end,
        }
    }
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgStore")
            .field("owner", &self.inner.owner)
            .finish_non_exhaustive()
    }
}

impl PgStore {
    /// Connects to the database `config` (a libpq connection string or URL, TLS as its `sslmode`
    /// and `sslrootcert` say), brings the schema up to date (refusing one newer than this build),
    /// and starts renewing leases. A schema name `PostgreSQL` would not keep as it is (empty,
    /// longer than 63 bytes) is refused before anything is sent ([`PgError::BadName`]).
    pub fn connect(config: &str, options: &PgOptions) -> Result<Self, PgError> {
        crate::check_schema_name(&options.schema)?;
        let db = Db::start(config, &options.schema)?;
        let schema = options.schema.clone();
        if options.migrate {
            db.run(move |connection| crate::schema::migrate(connection.client()?, &schema))?;
        } else {
            db.run(move |connection| crate::schema::check(connection.client()?, &schema))?;
        }
        let owner = options.owner.clone().unwrap_or_else(default_owner);
        let (stop, stopped) = mpsc::channel();
        let inner = Arc::new(Inner {
            db,
            config: config.to_owned(),
            schema: options.schema.clone(),
            owner: owner.clone(),
            lease_secs: options.lease.as_secs_f64(),
            live: Mutex::new(HashMap::new()),
            opening: Mutex::new(HashMap::new()),
            hints: Hints::new(config, &options.schema, &owner),
            _stop_renewing: stop,
        });
        let weak = Arc::downgrade(&inner);
        let every = options.renew_every.min(options.lease / 2);
        // Renewals run on a connection of their own: a long statement of this store (an import,
        // a lock waited for) must not let its writers' leases run out.
        let renewals = Db::start(config, &options.schema)?;
        thread::Builder::new()
            .name("ask-user-pg-lease".into())
            .spawn(move || renew_leases(&weak, &renewals, &stopped, every))
            .map_err(|e| PgError::Thread(e.to_string()))?;
        Ok(Self { inner })
    }

    /// This store's owner name (what the session rows of its writers carry).
    pub fn owner(&self) -> &str {
        &self.inner.owner
    }

    /// The names of every log in the store, sorted.
    pub fn log_names(&self) -> Result<Vec<String>, PgError> {
        self.inner.db.run(|connection| {
            let rows = connection
                .client()?
                .query("SELECT name FROM ask_user_sessions ORDER BY name", &[])
                .map_err(PgError::Query)?;
            Ok(rows.iter().map(|row| row.get(0)).collect())
        })
    }

    /// The secret `name` every process of this store shares: the one stored, else `candidate`,
    /// stored now (the first process to ask writes it; one that asks at the same moment reads
    /// the winner's). A secret is never changed once stored.
    pub fn shared_secret(&self, name: &str, candidate: &[u8]) -> Result<Vec<u8>, PgError> {
        let (name, candidate) = (name.to_owned(), candidate.to_vec());
        self.inner.db.run(move |connection| {
            let client = connection.client()?;
            client
                .execute(
                    "INSERT INTO ask_user_secrets (name, value) VALUES ($1, $2) \
                     ON CONFLICT (name) DO NOTHING",
                    &[&name, &candidate],
                )
                .map_err(PgError::Query)?;
            let row = client
                .query_one(
                    "SELECT value FROM ask_user_secrets WHERE name = $1",
                    &[&name],
                )
                .map_err(PgError::Query)?;
            Ok(row.get(0))
        })
    }

    pub(crate) fn db(&self) -> &Db {
        &self.inner.db
    }

    /// Hints the listeners of session `name` (its workers, its host) that the ledger has
    /// something new for them, after the commit that made it so (see [`hints`](crate::hints)).
    pub(crate) fn hint(&self, name: &str) {
        self.inner.hints.send(name);
    }

    /// A new connection to the same database and schema, on a thread of its own.
    pub(crate) fn second_connection(&self) -> Result<Db, PgError> {
        Db::start(&self.inner.config, &self.inner.schema)
    }

    fn fail(op: &'static str, name: &str, error: PgError) -> StoreError {
        StoreError::io(op, &location(name), io::Error::other(error))
    }

    fn not_found(name: &str) -> StoreError {
        StoreError::io(
            "open",
            &location(name),
            io::Error::new(io::ErrorKind::NotFound, "no such session log"),
        )
    }

    /// Runs `sql`, whose one parameter is the log's name, and maps the row it returns, if any.
    fn by_name<T: Send + 'static>(
        &self,
        op: &'static str,
        name: &str,
        sql: &'static str,
        map: fn(&postgres::Row) -> T,
    ) -> Result<Option<T>, StoreError> {
        if !crate::text::may_exist(name) {
            return Ok(None);
        }
        let key = name.to_owned();
        self.inner
            .db
            .run(move |connection| {
                // Prepared once per connection: each later use is one round trip.
                let statement = connection.statement(sql)?;
                let row = connection
                    .client()?
                    .query_opt(&statement, &[&key])
                    .map_err(PgError::Query)?;
                Ok(row.as_ref().map(map))
            })
            .map_err(|e| Self::fail(op, name, e))
    }

    /// Runs `read` on what the open of the log `name` under way on this thread read with its
    /// lease (see [`Opening`]); `None` when there is no such open.
    fn opening<T>(&self, name: &str, read: impl FnOnce(&mut Opening) -> Option<T>) -> Option<T> {
        let mut opening = lock(&self.inner.opening);
        let entry = opening.get_mut(name)?;
        if entry.thread != thread::current().id() {
            return None;
        }
        read(entry)
    }

    /// The header line and byte length of the log `name`.
    pub(crate) fn head(&self, name: &str) -> Result<(Vec<u8>, u64), StoreError> {
        if let Some(head) = self.opening(name, |o| Some((o.header.clone(), o.byte_length))) {
            return Ok(head);
        }
        let (header, length) = self
            .by_name(
                "read",
                name,
                "SELECT header, byte_length FROM ask_user_sessions WHERE name = $1",
                |row| (row.get::<_, Vec<u8>>(0), row.get::<_, i64>(1)),
            )?
            .ok_or_else(|| Self::not_found(name))?;
        Ok((header, u64::try_from(length).unwrap_or(0)))
    }

    /// The line that ends at `byte_end`, if one does. In an open under way on this thread (see
    /// [`Opening`]) the same statement reads the first page of lines after it, for the open's
    /// tail reader, and a second ask for the same line (or one the lease's statement read, at
    /// the checkpoint's anchor) is answered from what it read.
    fn line_ending(&self, name: &str, byte_end: u64) -> Result<Option<Vec<u8>>, PgError> {
        let opening = self.opening(name, |o| {
            Some(match &o.anchor {
                Some(read) if read.end == byte_end => Some(read.line.clone()),
                _ => None,
            })
        });
        let key = name.to_owned();
        let end = i64::try_from(byte_end).unwrap_or(i64::MAX);
        match opening {
            None => self.inner.db.run(move |connection| {
                let statement = connection.statement(
                    "SELECT line FROM ask_user_lines WHERE name = $1 AND byte_end = $2",
                )?;
                let row = connection
                    .client()?
                    .query_opt(&statement, &[&key, &end])
                    .map_err(PgError::Query)?;
                Ok(row.map(|row| row.get(0)))
            }),
            Some(Some(line)) => Ok(line),
            Some(None) => {
                let (ends, lines) = self.inner.db.run(move |connection| {
                    let statement = connection.statement(
                        "SELECT byte_end, line FROM ask_user_lines
                         WHERE name = $1 AND byte_end >= $2 AND byte_end <= $2 + $3
                         ORDER BY byte_end",
                    )?;
                    let rows = connection
                        .client()?
                        .query(&statement, &[&key, &end, &PAGE_BYTES])
                        .map_err(PgError::Query)?;
                    Ok(rows
                        .iter()
                        .map(|row| (row.get::<_, i64>(0), row.get::<_, Vec<u8>>(1)))
                        .unzip::<_, _, Vec<i64>, Vec<Vec<u8>>>())
                })?;
                let read = AnchorRead::of(byte_end, &ends, lines);
                let line = read.line.clone();
                self.opening(name, |o| {
                    o.anchor = Some(read);
                    Some(())
                });
                Ok(line)
            }
        }
    }

    /// Takes the lease of the log `name`, and reads the session row with it (in the same
    /// statement, so what it read is the row under the new lease): `Ok(None)` while another
    /// writer holds it.
    fn take_lease(&self, name: &str) -> Result<Option<Taken>, StoreError> {
        if !crate::text::may_exist(name) {
            return Err(Self::not_found(name));
        }
        let key = name.to_owned();
        let owner = self.inner.owner.clone();
        let lease = self.inner.lease_secs;
        let taken = self
            .inner
            .db
            .run(move |connection| {
                // An owner whose lease ran out is taken over (and fenced), and named in a
                // warning. A row another transaction holds is skipped, not waited for: it is
                // being written, so it is taken (`Locked`). The statement commits on its own,
                // without waiting for its flush (`synchronous_commit` off for this transaction
                // only): a lease is not a write of the log. Every write under it is fenced by the
                // epoch in its own transaction, committed durably, which flushes the lease's
                // commit with it (the write-ahead log is flushed in order); a lease a crash of the
                // server lost was never used to write, and its writer's next write, on a new
                // connection, is fenced. What another owner saw of it in the meantime (a lease
                // held: `Locked`) is only a refusal to retry.
                let take = connection.statement(
                    "UPDATE ask_user_sessions s
                     SET owner = $2, epoch = s.epoch + 1,
                         lease_until = now() + make_interval(secs => $3)
                     FROM (SELECT name, owner FROM ask_user_sessions
                           WHERE name = $1 FOR UPDATE SKIP LOCKED) AS previous,
                          (SELECT set_config('synchronous_commit', 'off', true)) AS relaxed
                     WHERE s.name = previous.name
                       AND (s.owner IS NULL OR s.lease_until < now())
                     RETURNING s.epoch, previous.owner,
                               coalesce(s.ledger_length = s.byte_length, false),
                               s.header, s.byte_length, s.checkpoint, s.checkpoint_end,
                               (SELECT array_agg(l.byte_end ORDER BY l.byte_end)
                                FROM ask_user_lines l
                                WHERE s.checkpoint IS NOT NULL AND l.name = s.name
                                  AND l.byte_end >= s.checkpoint_end
                                  AND l.byte_end <= s.checkpoint_end + $4),
                               (SELECT array_agg(l.line ORDER BY l.byte_end)
                                FROM ask_user_lines l
                                WHERE s.checkpoint IS NOT NULL AND l.name = s.name
                                  AND l.byte_end >= s.checkpoint_end
                                  AND l.byte_end <= s.checkpoint_end + $4)",
                )?;
                let client = connection.client()?;
                let row = client
                    .query_opt(&take, &[&key, &owner, &lease, &PAGE_BYTES])
                    .map_err(PgError::Query)?;
                if let Some(row) = row {
                    if let Some(previous) = row.get::<_, Option<String>>(1) {
                        tracing::warn!(log = %key, %previous, "took the session over: its owner's lease ran out");
                    }
                    return Ok(Some(Some(Taken {
                        epoch: row.get(0),
                        in_line: row.get(2),
                        header: row.get(3),
                        byte_length: u64::try_from(row.get::<_, i64>(4)).unwrap_or(0),
                        checkpoint: row.get(5),
                        anchor: row
                            .get::<_, Option<i64>>(6)
                            .filter(|_| row.get::<_, Option<&[u8]>>(5).is_some())
                            .and_then(|end| u64::try_from(end).ok())
                            .map(|end| {
                                let ends: Vec<i64> = row.get::<_, Option<_>>(7).unwrap_or_default();
                                let lines: Vec<Vec<u8>> =
                                    row.get::<_, Option<_>>(8).unwrap_or_default();
                                AnchorRead::of(end, &ends, lines)
                            }),
                    })));
                }
                let exists = client
                    .query_opt("SELECT 1 FROM ask_user_sessions WHERE name = $1", &[&key])
                    .map_err(PgError::Query)?
                    .is_some();
                Ok(exists.then_some(None))
            })
            .map_err(|e| Self::fail("open", name, e))?;
        taken.ok_or_else(|| Self::not_found(name))
    }

    /// Writes every ledger row the log implies, fenced by the writer's `epoch`, and records that
    /// the ledger is in line with the log as it is now (`ledger_length`).
    fn reconcile(
        inner: &Inner,
        name: &str,
        epoch: i64,
        ledger: &LedgerFold,
    ) -> Result<(), StoreError> {
        let plan = ledger.snapshot();
        let key = name.to_owned();
        let owner = inner.owner.clone();
        let fenced = inner
            .db
            .run(move |connection| {
                let mut tx = connection.client()?.transaction().map_err(PgError::Query)?;
                let still_ours = tx
                    .execute(
                        "UPDATE ask_user_sessions SET ledger_length = byte_length
                         WHERE name = $1 AND epoch = $2 AND owner = $3",
                        &[&key, &epoch, &owner],
                    )
                    .map_err(PgError::Query)?
                    == 1;
                if !still_ours {
                    return Ok(true);
                }
                plan.apply(&mut tx, &key)?;
                tx.commit().map_err(PgError::Commit)?;
                Ok(false)
            })
            .map_err(|e| StoreError::io("open", &location(name), io::Error::other(e)))?;
        if fenced {
            return Err(StoreError::Fenced {
                path: location(name),
            });
        }
        Ok(())
    }

    /// Gives the lease back (when the writer is dropped or its open fails), waiting for it: a
    /// process that exits next must not leave its lease to run out.
    fn release(inner: &Inner, name: &str, epoch: i64) {
        {
            let mut live = lock(&inner.live);
            if live.get(name) == Some(&epoch) {
                live.remove(name);
            }
        }
        let key = name.to_owned();
        let owner = inner.owner.clone();
        let released = inner.db.run(move |connection| {
            let release = connection.statement(
                "UPDATE ask_user_sessions SET owner = NULL, lease_until = NULL
                 WHERE name = $1 AND epoch = $2 AND owner = $3",
            )?;
            connection
                .client()?
                .execute(&release, &[&key, &epoch, &owner])
                .map_err(PgError::Query)
        });
        if let Err(error) = released {
            // The lease then runs out by itself.
            tracing::warn!(log = name, %error, "cannot release the lease");
        }
    }
}

/// `host:pid:random`, unique among the owners of one database.
fn default_owner() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map_or_else(|_| "host".into(), |h| h.trim().to_owned());
    let mut bytes = [0u8; 4];
    let _ = getrandom::fill(&mut bytes);
    format!(
        "{host}:{}:{:08x}",
        std::process::id(),
        u32::from_le_bytes(bytes)
    )
}

/// Renews the leases of the store's live writers every `every`, until the store is dropped.
fn renew_leases(inner: &Weak<Inner>, db: &Db, stopped: &mpsc::Receiver<()>, every: Duration) {
    loop {
        match stopped.recv_timeout(every) {
            Err(RecvTimeoutError::Timeout) => {}
            Ok(()) | Err(RecvTimeoutError::Disconnected) => return,
        }
        let Some(inner) = inner.upgrade() else {
            return;
        };
        let (names, epochs): (Vec<String>, Vec<i64>) = lock(&inner.live)
            .iter()
            .map(|(name, epoch)| (name.clone(), *epoch))
            .unzip();
        if names.is_empty() {
            continue;
        }
        let owner = inner.owner.clone();
        let lease = inner.lease_secs;
        drop(inner);
        let renewed = db.run(move |connection| {
            connection
                .client()?
                .execute(
                    "UPDATE ask_user_sessions s
                     SET lease_until = now() + make_interval(secs => $4)
                     FROM unnest($1::text[], $2::bigint[]) AS w(name, epoch)
                     WHERE s.name = w.name AND s.epoch = w.epoch AND s.owner = $3",
                    &[&names, &epochs, &owner, &lease],
                )
                .map_err(PgError::Query)
        });
        if let Err(error) = renewed {
            tracing::warn!(%error, "cannot renew the writers' leases");
        }
    }
}

/// Where the log `name` lives, for messages: `pg:<name>`.
fn location(name: &str) -> PathBuf {
    PathBuf::from(format!("pg:{name}"))
}

impl LogBackend for PgStore {
    type Owned = PgHold;
    type Reader = Lines;

    fn location(&self, name: &str) -> PathBuf {
        location(name)
    }

    fn exists(&self, name: &str) -> Result<bool, StoreError> {
        Ok(self
            .by_name(
                "read",
                name,
                "SELECT 1 FROM ask_user_sessions WHERE name = $1",
                |_| (),
            )?
            .is_some())
    }

    fn list(&self) -> Result<Vec<String>, StoreError> {
        let mut names = self
            .log_names()
            .map_err(|error| StoreError::io("list", Path::new("pg:"), io::Error::other(error)))?;
        // Byte order, as the file store lists its logs (the database's collation may differ).
        names.sort();
        Ok(names)
    }

    /// Creates the log `name`, which must be a usable session name
    /// ([`check_session_name`](crate::check_session_name)).
    fn create(&self, name: &str, header_line: &[u8]) -> Result<(), StoreError> {
        crate::check_session_name(name).map_err(|e| {
            StoreError::io(
                "create",
                &location(name),
                io::Error::new(io::ErrorKind::InvalidInput, e),
            )
        })?;
        let key = name.to_owned();
        let header = header_line.to_vec();
        let created = self
            .inner
            .db
            .run(move |connection| {
                let length = i64::try_from(header.len()).unwrap_or(i64::MAX);
                let rows = connection
                    .client()?
                    .execute(
                        "INSERT INTO ask_user_sessions (name, header, byte_length)
                         VALUES ($1, $2, $3) ON CONFLICT (name) DO NOTHING",
                        &[&key, &header, &length],
                    )
                    .map_err(PgError::Query)?;
                Ok(rows == 1)
            })
            .map_err(|e| Self::fail("create", name, e))?;
        if created {
            Ok(())
        } else {
            Err(StoreError::Exists {
                path: location(name),
            })
        }
    }

    /// Takes the lease: [`StoreError::Locked`] while another writer holds it (one whose lease ran
    /// out is taken over, and fenced).
    fn acquire(&self, name: &str) -> Result<PgHold, StoreError> {
        let Some(taken) = self.take_lease(name)? else {
            return Err(StoreError::Locked {
                path: location(name),
            });
        };
        let Taken {
            epoch,
            in_line,
            header,
            byte_length,
            checkpoint,
            anchor,
        } = taken;
        lock(&self.inner.live).insert(name.to_owned(), epoch);
        lock(&self.inner.opening).insert(
            name.to_owned(),
            Opening {
                thread: thread::current().id(),
                epoch,
                header,
                byte_length,
                checkpoint,
                checkpoint_current: true,
                anchor,
            },
        );
        Ok(PgHold {
            inner: Arc::clone(&self.inner),
            name: name.to_owned(),
            location: location(name),
            epoch,
            in_line,
            state: WriterState::Live,
            ledger: None,
            resume: None,
        })
    }

    /// The log's lines from `offset`. In an open under way on this thread (see [`Opening`]) the
    /// reader knows where the log ends (so it asks for no page past it), and starts with the page
    /// read with the anchor line when it starts there; no header is read for a reader past it.
    fn reader(&self, name: &str, offset: u64) -> Result<Lines, StoreError> {
        let db = self.inner.db.clone();
        let known = self.opening(name, |o| {
            let page = match &mut o.anchor {
                Some(read) if read.end == offset => {
                    read.page.take().map(|page| (page, read.page_end))
                }
                _ => None,
            };
            Some((o.header.clone(), o.byte_length, page))
        });
        if let Some((header_line, byte_length, page)) = known {
            let lines = match page {
                _ if offset == 0 => Lines::new(db, name, header_line.len() as u64, header_line),
                Some((page, page_end)) => Lines::new(db, name, page_end, page),
                None => Lines::new(db, name, offset, Vec::new()),
            };
            return Ok(lines.ending_at(byte_length));
        }
        Ok(if offset == 0 {
            let (header_line, _) = self.head(name)?;
            Lines::new(db, name, header_line.len() as u64, header_line)
        } else {
            Lines::new(db, name, offset, Vec::new())
        })
    }

    fn head(&self, name: &str) -> Result<(Vec<u8>, u64), StoreError> {
        PgStore::head(self, name)
    }

    fn line_ending_at(
        &self,
        name: &str,
        start: u64,
        end: u64,
    ) -> Result<Option<Vec<u8>>, StoreError> {
        let line = self
            .line_ending(name, end)
            .map_err(|e| Self::fail("read", name, e))?;
        // Rows are lines: the one ending at `end` starts where the line before it ended.
        Ok(line.filter(|line| end - line.len() as u64 >= start))
    }

    fn line_of(&self, name: &str, byte_offset: u64) -> Result<u64, StoreError> {
        let (header, _) = self.head(name)?;
        let key = name.to_owned();
        let end = i64::try_from(byte_offset).unwrap_or(i64::MAX);
        let after_header = self
            .inner
            .db
            .run(move |connection| {
                let row = connection
                    .client()?
                    .query_one(
                        "SELECT count(*) FROM ask_user_lines WHERE name = $1 AND byte_end <= $2",
                        &[&key, &end],
                    )
                    .map_err(PgError::Query)?;
                Ok(row.get::<_, i64>(0))
            })
            .map_err(|e| Self::fail("read", name, e))?;
        let header_line = u64::from(byte_offset >= header.len() as u64);
        Ok(header_line + u64::try_from(after_header).unwrap_or(0))
    }

    fn is_writing(&self, name: &str) -> Result<bool, StoreError> {
        self.by_name(
            "read",
            name,
            "SELECT owner IS NOT NULL AND lease_until > now()
             FROM ask_user_sessions WHERE name = $1",
            |row| row.get::<_, bool>(0),
        )?
        .ok_or_else(|| Self::not_found(name))
    }

    /// In an open under way on this thread, the document read with its lease (see [`Opening`]).
    fn load_checkpoint(&self, name: &str) -> Result<Option<Vec<u8>>, StoreError> {
        if let Some(document) =
            self.opening(name, |o| o.checkpoint_current.then(|| o.checkpoint.clone()))
        {
            return Ok(document);
        }
        self.by_name(
            "read",
            name,
            "SELECT checkpoint FROM ask_user_sessions WHERE name = $1",
            |row| row.get::<_, Option<Vec<u8>>>(0),
        )?
        .ok_or_else(|| Self::not_found(name))
    }

    fn save_checkpoint(&self, name: &str, document: &[u8]) -> Result<PathBuf, StoreError> {
        // An open under way reads the checkpoint again after this.
        if let Some(opening) = lock(&self.inner.opening).get_mut(name) {
            opening.checkpoint = None;
            opening.checkpoint_current = false;
        }
        let key = name.to_owned();
        // Where its anchor ends, for the next lease to read the anchor line with the row.
        let anchor_end = CheckpointDocument::read(document)
            .ok()
            .and_then(|document| document.resume_end())
            .and_then(|end| i64::try_from(end).ok());
        let document = document.to_vec();
        let saved = self
            .inner
            .db
            .run(move |connection| {
                connection
                    .client()?
                    .execute(
                        "UPDATE ask_user_sessions SET checkpoint = $2, checkpoint_end = $3
                         WHERE name = $1",
                        &[&key, &document, &anchor_end],
                    )
                    .map_err(PgError::Query)
            })
            .map_err(|e| Self::fail("write", name, e))?;
        if saved == 0 {
            return Err(Self::not_found(name));
        }
        Ok(PathBuf::from(format!("pg:{name}.checkpoint")))
    }
}

/// A lease just taken, and the session row read with it.
struct Taken {
    epoch: i64,
    /// The ledger was brought in line with the whole log and kept there by every append since
    /// (under the lease nothing else changes that).
    in_line: bool,
    header: Vec<u8>,
    byte_length: u64,
    checkpoint: Option<Vec<u8>>,
    /// The line at the checkpoint's anchor and the page after it, read with the lease.
    anchor: Option<AnchorRead>,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum WriterState {
    Live,
    /// A commit whose outcome is unknown (the connection broke): refuse every append.
    Poisoned,
    /// Another writer took the log over.
    Fenced,
}

/// The hold of one log's writer: its lease at `epoch`, and the ledger folded from the log (once
/// the open's scan is done). Dropping it gives the lease back, unless another writer took it.
pub struct PgHold {
    inner: Arc<Inner>,
    name: String,
    location: PathBuf,
    epoch: i64,
    /// Whether the ledger was in line with the whole log when the lease was taken.
    in_line: bool,
    state: WriterState,
    ledger: Option<LedgerFold>,
    /// An open resumed at a checkpoint: the ledger's fold starts from its state at the first
    /// append (see [`OwnedLog::opened`]).
    resume: Option<Resume>,
}

/// Where the ledger's fold of a writer opened at a checkpoint starts: the point, and the
/// checkpoint document read with the lease.
struct Resume {
    resumed: Resumed,
    document: Vec<u8>,
}

impl std::fmt::Debug for PgHold {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgHold")
            .field("name", &self.name)
            .field("epoch", &self.epoch)
            .field("state", &self.state)
            .finish_non_exhaustive()
    }
}

impl PgHold {
    /// Stops renewing this writer's lease (only if the store's live entry is this writer's).
    fn forget_lease(&self) {
        let mut live = lock(&self.inner.live);
        if live.get(&self.name) == Some(&self.epoch) {
            live.remove(&self.name);
        }
    }

    /// Ends this writer's open: what its lease statement read is served no more (see
    /// [`Opening`]).
    fn end_opening(&self) {
        let mut opening = lock(&self.inner.opening);
        if opening
            .get(&self.name)
            .is_some_and(|o| o.epoch == self.epoch)
        {
            opening.remove(&self.name);
        }
    }
}

impl PgHold {
    /// Another handle to this hold's store.
    fn store(&self) -> PgStore {
        PgStore {
            inner: Arc::clone(&self.inner),
        }
    }

    /// The checkpoint document the open resumed at, read with the lease while the open is under
    /// way (kept unread: the first append checks it).
    fn checkpoint_read(&self) -> Result<Vec<u8>, String> {
        SessionStore::load_checkpoint(&self.store(), &self.name)
            .map_err(|e| e.to_string())?
            .ok_or_else(|| "no checkpoint document".into())
    }

    /// Starts the ledger's fold from the checkpoint the open resumed at, at the first append
    /// since.
    fn start_ledger(&mut self) -> Result<(), StoreError> {
        if let Some(resume) = self.resume.take() {
            match self.fold_from(&resume) {
                Ok(fold) => self.ledger = Some(fold),
                Err(why) => {
                    tracing::debug!(log = %self.location.display(), reason = %why, "the ledger is folded from the whole log");
                    if let Err(error) = self.fold_whole(&resume.resumed.header) {
                        // The next append tries again.
                        self.resume = Some(resume);
                        return Err(error);
                    }
                }
            }
        }
        Ok(())
    }

    /// The fold from `resume`'s checkpoint state, carried on over the lines after it, when the
    /// document is the projection's and its anchor fits the log at the point the open resumed
    /// at; else why not.
    fn fold_from(&self, resume: &Resume) -> Result<LedgerFold, String> {
        let Resumed {
            header,
            at,
            lines_after,
        } = &resume.resumed;
        let document = CheckpointDocument::read(&resume.document).map_err(|e| e.to_string())?;
        if document.anchor().byte_length != at.byte_offset {
            return Err("the checkpoint document is not at the resume point".into());
        }
        match SessionStore::resolve_anchor(&self.store(), &self.name, document.anchor())
            .map_err(|e| e.to_string())?
        {
            Ok((_, position)) if position.expected_seq == at.expected_seq => {}
            Ok(_) => return Err("the checkpoint's next seq differs".into()),
            Err(mismatch) => return Err(mismatch.to_string()),
        }
        let state = document.state().map_err(|e| e.to_string())?;
        let mut fold = FoldVisitor::carrying(LedgerFold::resume(header, state, *at));
        if *lines_after {
            SessionStore::scan_from(&self.store(), &self.name, *at, &mut fold)
                .map_err(|e| e.to_string())?;
        }
        fold.fold.ok_or_else(|| "the fold was lost".into())
    }

    /// Folds the whole log and reconciles the ledger with it.
    fn fold_whole(&mut self, header: &SessionHeader) -> Result<(), StoreError> {
        let mut whole = FoldVisitor::default();
        SessionStore::read(&self.store(), &self.name, &mut whole)?;
        let ledger = whole.fold.unwrap_or_else(|| LedgerFold::new(header));
        PgStore::reconcile(&self.inner, &self.name, self.epoch, &ledger)?;
        self.ledger = Some(ledger);
        Ok(())
    }
}

impl Drop for PgHold {
    fn drop(&mut self) {
        self.end_opening();
        if self.state != WriterState::Fenced {
            PgStore::release(&self.inner, &self.name, self.epoch);
        }
    }
}

/// One appended batch as rows.
pub(crate) struct BatchRows {
    pub(crate) line_nos: Vec<i64>,
    pub(crate) byte_ends: Vec<i64>,
    pub(crate) seqs: Vec<i64>,
    pub(crate) lines: Vec<Vec<u8>>,
}

impl BatchRows {
    fn new(batch: &str, at: ScanPosition, events: &[LogEvent]) -> Self {
        let mut rows = Self {
            line_nos: Vec::with_capacity(events.len()),
            byte_ends: Vec::with_capacity(events.len()),
            seqs: Vec::with_capacity(events.len()),
            lines: Vec::with_capacity(events.len()),
        };
        let mut end = at.byte_offset;
        // Each event is one line (`LogEvent::to_line` checked it), in order.
        for ((index, line), event) in batch.split_inclusive('\n').enumerate().zip(events) {
            end += line.len() as u64;
            rows.line_nos
                .push(i64::try_from(at.line + index as u64).unwrap_or(i64::MAX));
            rows.byte_ends.push(i64::try_from(end).unwrap_or(i64::MAX));
            rows.seqs.push(i64::try_from(event.seq).unwrap_or(i64::MAX));
            rows.lines.push(line.as_bytes().to_vec());
        }
        rows
    }
}

/// How an append transaction ended.
enum Appended {
    Done,
    Fenced,
}

impl OwnedLog for PgHold {
    type Fold = FoldVisitor;

    fn fold(&self) -> FoldVisitor {
        FoldVisitor::default()
    }

    /// The ledger in line with the log, fenced by the writer's epoch.
    ///
    /// * An open that read the whole log reconciles the ledger with all of it (a log imported,
    ///   or written before the ledger kept `ledger_length`; otherwise this changes nothing, since
    ///   the ledger is written with every append).
    /// * An open resumed at a checkpoint, of a log whose ledger was in line when the lease was
    ///   taken, writes nothing: every append since the checkpoint wrote its ledger rows in its own
    ///   transaction (which is what kept `ledger_length` in line). It keeps the checkpoint
    ///   document read with the lease, and the first append checks its anchor against the
    ///   resume point and starts the fold from its state, carried on over the lines after it
    ///   (a document that does not fit means the whole log, below); a writer that only opens
    ///   pays nothing for the ledger.
    /// * Otherwise (an imported log, a checkpoint document replaced since the host read it), the
    ///   ledger cannot start where the checkpoint left it: its fold reads the whole log (the host
    ///   still read only the lines after the checkpoint) and the whole ledger is reconciled.
    fn opened(&mut self, header: &SessionHeader, fold: FoldVisitor) -> Result<(), StoreError> {
        let whole = match fold.resumed {
            None => fold.fold,
            Some(resumed) => {
                let kept = if self.in_line {
                    self.checkpoint_read()
                } else {
                    Err("the ledger is not in line with the log".into())
                };
                // The scan is done: from here on every read goes to the database.
                self.end_opening();
                match kept {
                    Ok(document) => {
                        self.resume = Some(Resume { resumed, document });
                        return Ok(());
                    }
                    Err(why) => {
                        tracing::debug!(log = %self.location.display(), reason = %why, "the ledger is folded from the whole log");
                        return self.fold_whole(header);
                    }
                }
            }
        };
        self.end_opening();
        let ledger = whole.unwrap_or_else(|| LedgerFold::new(header));
        PgStore::reconcile(&self.inner, &self.name, self.epoch, &ledger)?;
        self.ledger = Some(ledger);
        Ok(())
    }

    /// Appends are transactions: only a foreign writer can leave a line without its end, and it
    /// is never cut here.
    fn cut_torn_tail(&mut self, torn: TornTail) -> Result<PathBuf, StoreError> {
        Err(StoreError::io(
            "open",
            &self.location,
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "the row at byte {} has no line end; remove or complete it",
                    torn.byte_offset
                ),
            ),
        ))
    }

    /// One transaction, fenced by the writer's epoch and the log's length: the lines, and the
    /// ledger's changes the lines make.
    fn append(
        &mut self,
        at: ScanPosition,
        batch: &str,
        events: &[LogEvent],
        written: &[SessionEvent],
    ) -> Result<(), StoreError> {
        self.end_opening();
        self.start_ledger()?;
        let Some(ledger_fold) = &mut self.ledger else {
            return Err(StoreError::io(
                "append to",
                &self.location,
                io::Error::other("the log was not opened"),
            ));
        };
        let rows = BatchRows::new(batch, at, events);
        let ledger = ledger_fold.plan(at.line + 1, written);
        let name = self.name.clone();
        let owner = self.inner.owner.clone();
        let epoch = self.epoch;
        let lease = self.inner.lease_secs;
        let old_length = i64::try_from(at.byte_offset).unwrap_or(i64::MAX);
        let new_length = i64::try_from(at.byte_offset + batch.len() as u64).unwrap_or(i64::MAX);
        let outcome = self.inner.db.run(move |connection| {
            let fence = connection.statement(
                "UPDATE ask_user_sessions
                 SET byte_length = $5, lease_until = now() + make_interval(secs => $6),
                     ledger_length = CASE WHEN ledger_length = $4::bigint THEN $5::bigint END
                 WHERE name = $1 AND epoch = $2 AND owner = $3 AND byte_length = $4",
            )?;
            let insert = connection.statement(
                "INSERT INTO ask_user_lines (name, line_no, byte_end, seq, line)
                 SELECT $1, * FROM unnest($2::bigint[], $3::bigint[], $4::bigint[], $5::bytea[])",
            )?;
            let ledger_statements = ledger.statements(connection)?;
            let client = connection.client()?;
            let mut tx = client.transaction().map_err(PgError::Query)?;
            let params: [&(dyn postgres::types::ToSql + Sync); 6] =
                [&name, &epoch, &owner, &old_length, &new_length, &lease];
            let fenced = tx.execute(&fence, &params).map_err(PgError::Query)? == 0;
            if fenced {
                tx.rollback().map_err(PgError::Query)?;
                return Ok(Appended::Fenced);
            }
            let params: [&(dyn postgres::types::ToSql + Sync); 5] = [
                &name,
                &rows.line_nos,
                &rows.byte_ends,
                &rows.seqs,
                &rows.lines,
            ];
            tx.execute(&insert, &params).map_err(PgError::Query)?;
            ledger.apply_with(&mut tx, &name, ledger_statements.as_ref())?;
            tx.commit().map_err(PgError::Commit)?;
            Ok(Appended::Done)
        });
        match outcome {
            Ok(Appended::Done) => {
                ledger_fold.commit();
                Ok(())
            }
            Ok(Appended::Fenced) => {
                self.state = WriterState::Fenced;
                self.forget_lease();
                tracing::warn!(log = %self.location.display(), "writer fenced: the log was taken over");
                Err(StoreError::Fenced {
                    path: self.location.clone(),
                })
            }
            Err(error) => {
                // A failed commit may have committed (the reply was lost with the connection):
                // the writer no longer knows where the log ends.
                let ambiguous = matches!(error, PgError::Commit(_) | PgError::Closed);
                if ambiguous {
                    self.state = WriterState::Poisoned;
                    // A poisoned writer stops renewing: its lease runs out, and another writer
                    // may take the log over.
                    self.forget_lease();
                }
                Err(StoreError::AppendFailed {
                    path: self.location.clone(),
                    source: io::Error::other(error),
                    rollback: ambiguous.then(|| {
                        io::Error::other("the commit's outcome is unknown; reopen the log")
                    }),
                })
            }
        }
    }

    fn refusal(&self) -> Option<StoreError> {
        match self.state {
            WriterState::Live => None,
            WriterState::Poisoned => Some(StoreError::Poisoned {
                path: self.location.clone(),
            }),
            WriterState::Fenced => Some(StoreError::Fenced {
                path: self.location.clone(),
            }),
        }
    }
}
