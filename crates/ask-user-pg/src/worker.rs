//! Admission: the step that turns accepted answers into admitted replies, run by whichever
//! process holds the session's lease (a worker, or `ask-user answer` when no worker does).
//!
//! Under the lease, each accepted answer goes through `LateAnswers::answer` (which appends it to
//! the session's durable inbox), then one turn claims and admits every queued reply. The
//! `user/message` of each is appended in the transaction that marks its answer admitted, so:
//! a crash before that commit leaves the answer unadmitted (the next owner admits it: a reply
//! already in the inbox is admitted as it is, never queued twice), and a retry after it finds
//! nothing to do.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::thread;
use std::time::Duration;

use std::collections::HashMap;
use std::time::Instant;

use ask_user_host::{Host, HostError, HostRuntime, SessionOptions};
use pending_answer::LateRefusal;
use postgres::fallible_iterator::FallibleIterator;
use session_log::StoreError;
use user_questions::SessionId;
use user_questions::sync::lock_unpoisoned as lock;

use crate::PgError;
use crate::store::PgStore;

/// What one admission pass did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Admitted {
    /// Replies admitted (each settles its question).
    pub admitted: usize,
    /// Accepted answers the session could not take (the question is no longer continued there,
    /// or another reply settled it); the ledger records them as refused, never admitted.
    pub refused: usize,
    /// Another process holds the session's lease: it admits them.
    pub busy: bool,
}

/// Admits the accepted answers of session `name` here when no worker holds it (`answer --pg …
/// --admit`), and says what happened, a line for the person. The answers are durable in the
/// ledger already: a failed admission is said, and left to a worker, never a failure of the
/// answer.
#[must_use]
pub fn admit_here(store: &PgStore, name: &str) -> String {
    let admitted = HostRuntime::new(store.clone(), None)
        .map_err(|e| e.to_string())
        .and_then(|runtime| admit_answers(&runtime, store, name).map_err(|e| e.to_string()));
    match admitted {
        Ok(a) if a.busy => "the session is held by a worker, which admits it".to_owned(),
        Ok(a) if a.admitted > 0 => format!(
            "{} repl{} admitted; the question is settled",
            a.admitted,
            if a.admitted == 1 { "y" } else { "ies" }
        ),
        Ok(_) => "not admitted here: the question is in its window (the host running it takes the answer), or another reply settled it first".to_owned(),
        Err(error) => format!(
            "warning: not admitted here ({}); a worker admits it",
            user_questions::sanitize::visible(&error)
        ),
    }
}

/// Why admission failed. What was committed stays; the rest is admitted by the next pass.
#[derive(Debug, thiserror::Error)]
pub enum AdmitError {
    /// The database failed.
    #[error(transparent)]
    Db(#[from] PgError),
    /// Opening or writing the session failed.
    #[error(transparent)]
    Host(#[from] HostError),
    /// The reply could not be queued in the session's inbox (its journal failed).
    #[error(transparent)]
    Undelivered(user_questions::BoxError),
}

/// Admits the accepted answers of session `name` if this process can take its lease.
/// `runtime` must be a runtime over `store`.
pub fn admit_answers(
    runtime: &HostRuntime,
    store: &PgStore,
    name: &str,
) -> Result<Admitted, AdmitError> {
    // An answer to a question still shown open (its host died in the window) is admitted too:
    // opening the session repairs the call, and the question becomes continued.
    let waiting = !store.unadmitted(name)?.is_empty()
        || store
            .questions(Some(name))?
            .iter()
            .any(|q| q.state == crate::QuestionState::Open && q.answered);
    if !waiting {
        return Ok(Admitted::default());
    }
    let Some(host) = open_session(runtime, name)? else {
        return Ok(Admitted {
            busy: true,
            ..Admitted::default()
        });
    };
    admit_in(&host, store, name)
}

/// Opens session `name` for write; `None` while another process holds it.
fn open_session(runtime: &HostRuntime, name: &str) -> Result<Option<Host>, AdmitError> {
    let options = SessionOptions::named(SessionId::from(name));
    match runtime.open(name, options) {
        Ok((host, _)) => Ok(Some(host)),
        Err(HostError::Store(StoreError::Locked { .. })) => Ok(None),
        Err(error) => Err(error.into()),
    }
}

/// Admits the accepted answers of session `name` through `host`, which holds its lease: each in
/// a turn of its own, as the `user/message` whose id is the answer's id.
fn admit_in(host: &Host, store: &PgStore, name: &str) -> Result<Admitted, AdmitError> {
    let (mut admitted, mut refused) = (0, 0);
    for answer in store.unadmitted(name)? {
        let offered = host.late().queue_as(
            &answer.call_id,
            answer.batch.clone(),
            answer.provenance.clone(),
            answer.answer_id.clone(),
        );
        match offered {
            // Queued now, or a reply for the call is queued already: this answer's own (queued
            // by an owner that stopped before admitting it), or one from elsewhere, which then
            // settles the call and refuses this answer in the same transaction.
            Ok(_) | Err(LateRefusal::ReplyQueued { .. }) => {}
            Err(LateRefusal::NotWaiting(_)) => {
                store.refuse(
                    name,
                    &answer,
                    "the session no longer shows the question as continued",
                )?;
                refused += 1;
                continue;
            }
            Err(LateRefusal::Undelivered(error)) => return Err(AdmitError::Undelivered(error)),
            Err(refusal) => {
                store.refuse(name, &answer, &refusal.to_string())?;
                refused += 1;
                continue;
            }
        }
        if let Some(reply) = host.late().settle(&answer.call_id)? {
            if reply.id == answer.answer_id {
                admitted += 1;
            } else {
                refused += 1;
            }
        }
    }
    Ok(Admitted {
        admitted,
        refused,
        busy: false,
    })
}

/// What a [`Worker`] reports as it goes.
#[derive(Debug)]
pub enum WorkerEvent<'a> {
    /// Replies admitted in a session.
    Admitted {
        /// The session.
        session: &'a str,
        /// What the pass did.
        admitted: &'a Admitted,
    },
    /// Admission failed in a session (it is tried again on the next pass).
    Failed {
        /// The session.
        session: &'a str,
        /// Why.
        error: &'a AdmitError,
    },
    /// The database could not be asked (the worker retries every poll).
    Unavailable(&'a PgError),
}

impl std::fmt::Display for WorkerEvent<'_> {
    /// What a person reads of it: `session S: 2 replies admitted`, `session S: admission failed,
    /// retried on the next pass: …`, `database unavailable, retrying: …`. The session's name is
    /// the database's: a terminal shows it through a sanitiser.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Admitted { session, admitted } => {
                let n = admitted.admitted;
                let plural = if n == 1 { "y" } else { "ies" };
                write!(f, "session {session}: {n} repl{plural} admitted")?;
                match admitted.refused {
                    0 => Ok(()),
                    left => write!(f, ", {left} left (the question is not continued there)"),
                }
            }
            Self::Failed { session, error } => write!(
                f,
                "session {session}: admission failed, retried on the next pass: {error}"
            ),
            Self::Unavailable(error) => write!(f, "database unavailable, retrying: {error}"),
        }
    }
}

/// What wakes a worker or a feed.
pub(crate) enum Wake {
    /// A notification (or a reconnect): look at the ledger.
    Hint,
    /// Stop.
    Stop,
}

/// Stops a running [`Worker`] from another thread.
#[derive(Clone)]
pub struct WorkerStop(mpsc::Sender<Wake>);

impl WorkerStop {
    /// Asks the worker to stop after the session it is admitting.
    pub fn stop(&self) {
        let _ = self.0.send(Wake::Stop);
    }
}

/// Admits accepted answers of every session whose lease is free, as they come: woken by the
/// ledger's `NOTIFY` on a connection of its own (a hint only) and by a poll, which also catches up
/// after a reconnect, so no answer waits on a lost notification for longer than one poll.
///
/// A session it opened stays open (its lease held and renewed) until it has been idle for the
/// worker's `hold`: the next answer to it is admitted without opening it again. Another worker
/// takes such a session over only once this one's lease runs out (it died, or stalled), and this
/// one's next append to it is then fenced: it drops the session and goes on.
pub struct Worker {
    config: String,
    store: PgStore,
    runtime: HostRuntime,
    poll: Duration,
    hold: Duration,
    held: Mutex<HashMap<String, (Host, Instant)>>,
    wake: mpsc::Sender<Wake>,
    woken: mpsc::Receiver<Wake>,
}

impl Worker {
    /// A worker over `store` (connected with `config`) and a runtime over the same store, polling
    /// every `poll` and keeping a session open until it has been idle for `hold` (zero: closed
    /// after each admission).
    pub fn new(
        config: &str,
        store: PgStore,
        runtime: HostRuntime,
        poll: Duration,
        hold: Duration,
    ) -> Self {
        let (wake, woken) = mpsc::channel();
        Self {
            config: config.to_owned(),
            store,
            runtime,
            poll,
            hold,
            held: Mutex::new(HashMap::new()),
            wake,
            woken,
        }
    }

    /// A handle that stops the worker.
    pub fn stopper(&self) -> WorkerStop {
        WorkerStop(self.wake.clone())
    }

    /// Runs until stopped; `report` sees every admission and failure.
    pub fn run(&self, report: &mut dyn FnMut(&WorkerEvent<'_>)) {
        let stopped = Arc::new(AtomicBool::new(false));
        let _stop_listening = SetOnDrop(Arc::clone(&stopped));
        let wake = self.wake.clone();
        listen(&self.config, move || wake.send(Wake::Hint).is_ok(), stopped);
        loop {
            self.pass(report);
            // Wait for a hint, a stop or the poll; hints that piled up meanwhile make one pass.
            match self.woken.recv_timeout(self.poll) {
                Ok(Wake::Stop) | Err(mpsc::RecvTimeoutError::Disconnected) => return,
                Ok(Wake::Hint) | Err(mpsc::RecvTimeoutError::Timeout) => {}
            }
            while let Ok(wake) = self.woken.try_recv() {
                if matches!(wake, Wake::Stop) {
                    return;
                }
            }
        }
    }

    /// Runs on the blocking pool until `stop` resolves, then stops and waits for the pass under
    /// way to end; `report` sees every admission and failure. A worker never ends by itself:
    /// an error is one that panicked.
    ///
    /// # Errors
    ///
    /// The worker's task panicked.
    pub async fn run_until(
        self,
        stop: impl Future<Output = ()>,
        mut report: impl FnMut(&WorkerEvent<'_>) + Send + 'static,
    ) -> Result<(), tokio::task::JoinError> {
        let stopper = self.stopper();
        let mut run = tokio::task::spawn_blocking(move || self.run(&mut report));
        tokio::select! {
            () = stop => stopper.stop(),
            ended = &mut run => return ended,
        }
        run.await
    }

    /// One pass: the sessions this worker holds, then those with answers and a free lease; then
    /// the held sessions idle for longer than the hold are closed.
    pub fn pass(&self, report: &mut dyn FnMut(&WorkerEvent<'_>)) {
        let mut held = lock(&self.held);
        let names: Vec<String> = held.keys().cloned().collect();
        for session in &names {
            let waiting = match self.store.unadmitted(session) {
                Ok(waiting) => waiting,
                Err(error) => {
                    report(&WorkerEvent::Unavailable(&error));
                    return;
                }
            };
            if waiting.is_empty() {
                continue;
            }
            let outcome = held
                .get(session)
                .map(|(host, _)| admit_in(host, &self.store, session));
            settle(&mut held, session, outcome, report);
        }
        let free = match self.store.sessions_to_admit() {
            Ok(names) => names,
            Err(error) => {
                report(&WorkerEvent::Unavailable(&error));
                return;
            }
        };
        for session in &free {
            if held.contains_key(session) {
                continue;
            }
            let outcome = match open_session(&self.runtime, session) {
                Ok(Some(host)) => {
                    let outcome = admit_in(&host, &self.store, session);
                    held.insert(session.clone(), (host, Instant::now()));
                    Some(outcome)
                }
                // Another worker was quicker.
                Ok(None) => None,
                Err(error) => Some(Err(error)),
            };
            settle(&mut held, session, outcome, report);
        }
        held.retain(|_, (_, used)| used.elapsed() < self.hold);
    }
}

/// Reports an admission; a failed one closes the session (the next pass opens it afresh, or
/// another worker has it).
fn settle(
    held: &mut HashMap<String, (Host, Instant)>,
    session: &str,
    outcome: Option<Result<Admitted, AdmitError>>,
    report: &mut dyn FnMut(&WorkerEvent<'_>),
) {
    match outcome {
        Some(Ok(admitted)) => {
            if let Some((_, used)) = held.get_mut(session) {
                *used = Instant::now();
            }
            if admitted.admitted > 0 || admitted.refused > 0 {
                report(&WorkerEvent::Admitted {
                    session,
                    admitted: &admitted,
                });
            }
        }
        Some(Err(error)) => {
            held.remove(session);
            report(&WorkerEvent::Failed {
                session,
                error: &error,
            });
        }
        None => {}
    }
}

/// Forwards the ledger's notifications as hints, on a connection of its own, reconnecting after
/// a failure (and then hinting once, to catch up); ends once `stopped` is set.
pub(crate) fn listen(
    config: &str,
    mut hint: impl FnMut() -> bool + Send + 'static,
    stopped: Arc<AtomicBool>,
) {
    let config = config.to_owned();
    let spawned = thread::Builder::new()
        .name("ask-user-pg-listen".into())
        .spawn(move || {
            while !stopped.load(Ordering::Relaxed) {
                // The store's connect: its timeouts and keepalives bound every wait here too.
                let Ok(mut client) = crate::db::connect(&config, "public") else {
                    thread::sleep(Duration::from_secs(1));
                    continue;
                };
                if client.batch_execute("LISTEN ask_user_answers").is_err() {
                    thread::sleep(Duration::from_secs(1));
                    continue;
                }
                if !hint() {
                    return;
                }
                let mut notifications = client.notifications();
                while !stopped.load(Ordering::Relaxed) {
                    // A fresh iterator per wait: one whose timeout has passed no longer waits.
                    match notifications.timeout_iter(Duration::from_secs(1)).next() {
                        Ok(Some(_)) => {
                            if !hint() {
                                return;
                            }
                        }
                        Ok(None) => {}
                        // The connection broke: reconnect.
                        Err(_) => break,
                    }
                }
            }
        });
    if let Err(error) = spawned {
        tracing::warn!(%error, "cannot start the notification listener; polling only");
    }
}

/// Sets the flag when dropped.
struct SetOnDrop(Arc<AtomicBool>);

impl Drop for SetOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}
