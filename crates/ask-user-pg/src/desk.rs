//! The ledger as a question desk, and what a process needs to show the ledger's questions or run
//! one of its sessions live: [`PgDesk`] (every open and continued question of the database,
//! answered first-answer-wins), [`follow_ledger`] (a surface's cards kept in step with the
//! ledger, and remote claims held while a person looks), and [`PgStore::attach_live`] (the
//! answerer and the feed a live host of a database session needs).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ask_user_host::{CheckpointPolicy, Host, load_projection};
use pending_answer::{
    Accepted, Answers, ChangeSignal, DeskChanges, DeskError, DeskErrorKind, DeskQuestion,
    DeskSession, DeskState, LateRefusal, NotWaiting, QuestionDesk, SessionView, Submission,
};
use session_log::SessionStore;
use user_questions::sync::lock_unpoisoned;
use user_questions::{
    AnswererGuard, CallId, CancellationToken, ErrorCode, QuestionLimits, UserQuestionError,
    async_trait,
};

use crate::answerer::LedgerAnswerer;
use crate::answers::{AnswerError, LedgerQuestion};
use crate::feed::LedgerFeed;
use crate::ledger::QuestionState;
use crate::store::PgStore;

/// How long a claim of a surface on a question open elsewhere lives unless renewed.
pub const CLAIM_LEASE: Duration = Duration::from_secs(15);
/// How often a surface renews its claims while a person looks.
pub const CLAIM_RENEW: Duration = Duration::from_secs(5);

/// Every open and continued question of every session in the database, as the ledger holds
/// them, each session named by its name. An answer goes to the ledger (the first answer wins,
/// [`Accepted::Recorded`]): the host that runs an open question's call takes it in its window
/// (its [`LedgerAnswerer`]), and a continued question's answer is admitted by the session's
/// worker, or by the host that runs it live.
///
/// Its changes: while a surface watches it, it follows the ledger ([`follow_ledger`], every
/// second, woken early by nothing: a lost hint costs at most that) and ticks when the ledger's
/// questions changed; while a person looks ([`QuestionDesk::looking`]) it claims the questions
/// open elsewhere, so their hosts do not count their windows down. [`PgDesk::close`] releases
/// those claims on the way out.
#[derive(Clone, Debug)]
pub struct PgDesk {
    store: PgStore,
    limits: QuestionLimits,
    watch: Arc<Watch>,
}

/// The desk's follower of the ledger.
#[derive(Debug, Default)]
struct Watch {
    changes: ChangeSignal,
    looking: AtomicBool,
    /// The follower running now, stopped by its token.
    follower: Mutex<Option<(CancellationToken, tokio::task::JoinHandle<()>)>>,
}

/// How often the desk's follower looks at the ledger.
pub const FOLLOW_EVERY: Duration = Duration::from_secs(1);

impl PgDesk {
    /// The questions of `store`'s database, answers checked against the default limits.
    pub fn new(store: PgStore) -> Self {
        Self {
            store,
            limits: QuestionLimits::default(),
            watch: Arc::default(),
        }
    }

    /// The store.
    pub fn store(&self) -> &PgStore {
        &self.store
    }

    /// Stops following the ledger and releases the claims held for a person looking (they would
    /// run out by themselves after [`CLAIM_LEASE`]).
    pub async fn close(&self) {
        let follower = lock_unpoisoned(&self.watch.follower).take();
        if let Some((stop, task)) = follower {
            stop.cancel();
            let _ = task.await;
        }
    }

    fn unknown_session(session: &str) -> DeskError {
        DeskError::new(
            DeskErrorKind::UnknownSession,
            "UNKNOWN_SESSION",
            format!("no session {session:?} in the database"),
        )
    }

    /// Runs `work` with the store off the caller's task (the database client blocks).
    async fn blocking<T: Send + 'static>(
        &self,
        work: impl FnOnce(&PgStore) -> T + Send + 'static,
    ) -> Result<T, DeskError> {
        let store = self.store.clone();
        tokio::task::spawn_blocking(move || work(&store))
            .await
            .map_err(DeskError::from)
    }

    /// Starts the follower when none runs (and a runtime is there to run it). It ends with its
    /// last watcher, releasing its claims (nothing waits for its ticks then), or on
    /// [`close`](Self::close).
    fn follow(&self) {
        let mut follower = lock_unpoisoned(&self.watch.follower);
        if follower
            .as_ref()
            .is_some_and(|(_, task)| !task.is_finished())
            || tokio::runtime::Handle::try_current().is_err()
        {
            return;
        }
        let stop = CancellationToken::new();
        let client = format!("desk-{}-{}", std::process::id(), session_log::now_ms());
        let (watch, store, follower_stop) =
            (Arc::clone(&self.watch), self.store.clone(), stop.clone());
        let task = tokio::spawn(async move {
            let (looking, changed) = (Arc::clone(&watch), Arc::clone(&watch));
            let ended = follower_stop.clone();
            let unwatched = async move {
                tokio::select! {
                    () = watch.changes.unwatched() => ended.cancel(),
                    () = ended.cancelled() => {}
                }
            };
            tokio::join!(
                follow_ledger(
                    store,
                    client,
                    FOLLOW_EVERY,
                    move || looking.looking.load(Ordering::Relaxed),
                    move || changed.changes.tick(),
                    follower_stop,
                ),
                unwatched
            );
        });
        *follower = Some((stop, task));
    }
}

fn db(error: &crate::PgError) -> DeskError {
    let kind = match error {
        crate::PgError::BadName { .. } | crate::PgError::Settings(_) => DeskErrorKind::Usage,
        _ => DeskErrorKind::Unreachable,
    };
    DeskError::new(kind, error.code(), error.to_string())
}

fn desk_question(question: LedgerQuestion) -> DeskQuestion {
    let LedgerQuestion {
        session,
        call_id,
        state,
        questions,
        answered,
    } = question;
    DeskQuestion {
        session,
        call_id,
        questions,
        state: match state {
            QuestionState::Open => DeskState::Open,
            QuestionState::Continued => DeskState::Continued,
            QuestionState::Settled | QuestionState::Dropped => DeskState::Settled,
        },
        // An open question's host takes the ledger's answer in its window.
        answerable: matches!(state, QuestionState::Open | QuestionState::Continued),
        interrupted: false,
        answered,
        asked_at_ms: None,
    }
}

#[async_trait]
impl QuestionDesk for PgDesk {
    async fn sessions(&self) -> Result<Vec<DeskSession>, DeskError> {
        let questions = self
            .blocking(|store| store.questions(None))
            .await?
            .map_err(|e| db(&e))?;
        let mut sessions: Vec<DeskSession> = Vec::new();
        for question in questions {
            let question = desk_question(question);
            match sessions.last_mut() {
                Some(last) if last.session == question.session => last.questions.push(question),
                _ => sessions.push(DeskSession {
                    session: question.session.clone(),
                    questions: vec![question],
                    settled: None,
                    writing: false,
                    agent: None,
                    folder: None,
                }),
            }
        }
        Ok(sessions)
    }

    async fn views(&self, session: Option<&str>) -> Result<Vec<SessionView>, DeskError> {
        let session = session.map(str::to_owned);
        self.blocking(move |store| views(store, session.as_deref()))
            .await?
    }

    async fn find(&self, call_id: &CallId) -> Result<Vec<DeskQuestion>, DeskError> {
        let call_id = call_id.clone();
        let questions = self
            .blocking(|store| store.questions(None))
            .await?
            .map_err(|e| db(&e))?;
        Ok(questions
            .into_iter()
            .filter(|q| q.call_id == call_id)
            .map(desk_question)
            .collect())
    }

    async fn submit(&self, submission: Submission) -> Result<Accepted, LateRefusal> {
        let limits = self.limits.clone();
        let recorded = self
            .blocking(move |store| record(store, submission, &limits))
            .await
            .map_err(LateRefusal::Unavailable)?;
        if recorded.is_ok() {
            self.watch.changes.tick();
        }
        recorded
    }

    fn changes(&self) -> DeskChanges {
        let changes = self.watch.changes.subscribe();
        self.follow();
        changes
    }

    fn looking(&self, looking: bool) {
        self.watch.looking.store(looking, Ordering::Relaxed);
    }
}

/// The projection view of `session`, or of every session with a question to answer.
fn views(store: &PgStore, session: Option<&str>) -> Result<Vec<SessionView>, DeskError> {
    let names: Vec<String> = if let Some(session) = session {
        let exists = SessionStore::exists(store, session)
            .map_err(|e| DeskError::from_error(DeskErrorKind::Unreachable, e.code(), e))?;
        if !exists {
            return Err(PgDesk::unknown_session(session));
        }
        vec![session.to_owned()]
    } else {
        // The sessions that have a question to answer.
        let mut names: Vec<String> = store
            .questions(None)
            .map_err(|e| db(&e))?
            .into_iter()
            .map(|q| q.session)
            .collect();
        names.dedup();
        names
    };
    let mut views = Vec::new();
    for name in names {
        match load_projection(store, &name, CheckpointPolicy::ReadOnly) {
            Ok(load) => views.push(SessionView {
                session: name,
                view: load.state.view().clone(),
            }),
            Err(error) if session.is_none() => {
                tracing::warn!(%error, session = %name, "a session cannot be read");
            }
            Err(error) => {
                return Err(DeskError::from_error(
                    DeskErrorKind::Store,
                    error.code(),
                    error,
                ));
            }
        }
    }
    Ok(views)
}

/// Records `submission` in the ledger (first answer wins).
fn record(
    store: &PgStore,
    submission: Submission,
    limits: &QuestionLimits,
) -> Result<Accepted, LateRefusal> {
    let Submission {
        session,
        call_id,
        answers,
        provenance,
    } = submission;
    let answers = match answers {
        Answers::Batch(batch) => batch,
        // The call's questions as the ledger keeps them.
        compose @ Answers::Compose(_) => {
            let questions = store
                .questions(Some(&session))
                .map_err(|e| LateRefusal::Unavailable(db(&e)))?
                .into_iter()
                .find(|q| q.call_id == call_id)
                .map(|q| q.questions);
            compose.into_batch(questions.as_deref())
        }
    };
    match store.record_answer(&session, &call_id, &answers, &provenance, limits) {
        Ok(answer_id) => Ok(Accepted::Recorded { answer_id }),
        Err(AnswerError::UnknownSession(session)) => Err(LateRefusal::UnknownSession(session)),
        Err(AnswerError::UnknownCall { .. }) => Err(LateRefusal::NotWaiting(NotWaiting::Unknown)),
        Err(AnswerError::Settled(_)) => Err(LateRefusal::NotWaiting(NotWaiting::Settled)),
        Err(AnswerError::Dropped(_)) => Err(LateRefusal::NotWaiting(NotWaiting::Dropped)),
        Err(AnswerError::ReplyQueued(call_id)) => Err(LateRefusal::ReplyQueued {
            call_id,
            message_id: None,
            settled_by: None,
        }),
        Err(AnswerError::BadAnswer(message)) => Err(LateRefusal::BadAnswer(
            UserQuestionError::new(ErrorCode::BadAnswer, message),
        )),
        Err(AnswerError::Db(error)) => Err(LateRefusal::Unavailable(db(&error))),
    }
}

/// What keeps a session of the database live in a process: the ledger's answers to its open
/// questions taken in their windows (and remote claims holding them), its continued questions'
/// answers fed to its inbox. Dropping it stops both.
pub struct LiveLedger {
    _answerer: AnswererGuard,
    _feed: LedgerFeed,
}

impl std::fmt::Debug for LiveLedger {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LiveLedger")
    }
}

impl PgStore {
    /// Wires the ledger into `host`, which runs the database session `name` live in this
    /// process: a [`LedgerAnswerer`] in its seam's waterfall takes an answer given anywhere to an
    /// open question in its window (and holds the window while a remote surface claims it), and
    /// a [`LedgerFeed`] offers the answers of its continued questions to its late answers, which
    /// the host admits in its own next turn. `config` is the connection string (each needs a
    /// connection of its own to listen for the ledger's notifications); `poll` bounds how late a
    /// lost notification is caught up.
    pub fn attach_live(&self, config: &str, name: &str, host: &Host, poll: Duration) -> LiveLedger {
        let answerer =
            LedgerAnswerer::new(config, self.clone(), name, host.agent(), host.seam(), poll)
                .register(host.seam());
        let feed = LedgerFeed::start(
            config,
            self.clone(),
            name,
            host.late_answers().clone(),
            host.agent(),
            poll,
        );
        LiveLedger {
            _answerer: answerer,
            _feed: feed,
        }
    }
}

/// Keeps a surface that shows the ledger's questions in step with it, until `stop` fires: every
/// `every`, the open and continued questions are read, and `changed` is called whenever they
/// differ from the last look (the surface shows a fresh list). While `looking()` says a person
/// looks, it holds a claim (a lease row of the database's clock, [`CLAIM_LEASE`], renewed every
/// [`CLAIM_RENEW`]) on every question open elsewhere, so the host that runs it does not count its
/// window down; claims are released when nobody looks any more, when the question leaves its
/// window, and when `stop` fires. `client` names the claims (unique per process).
pub async fn follow_ledger(
    store: PgStore,
    client: String,
    every: Duration,
    looking: impl Fn() -> bool + Send,
    changed: impl Fn() + Send,
    stop: CancellationToken,
) {
    let mut seen: Vec<(String, CallId, QuestionState)> = Vec::new();
    let mut held: HashMap<(String, CallId), Instant> = HashMap::new();
    loop {
        // Once stopped, one more look releases every claim held.
        let stopping = stop.is_cancelled();
        let looking = !stopping && looking();
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
                    changed();
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
