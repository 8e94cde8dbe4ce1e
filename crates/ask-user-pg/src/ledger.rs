//! The question ledger: every timed question of a session as its log says it stands, and the
//! answers front ends give it.
//!
//! * The **questions** are written by the session's writer, in the transaction of the append that
//!   changed them ([`LedgerFold`], folded with the projection of `user-questions-projection`), so
//!   the ledger can never disagree with the log: a question is `open` while its tool call runs,
//!   `continued` once the call ended unanswered, `settled` once a reply is admitted.
//! * An **answer** is one row per call, inserted with `ON CONFLICT DO NOTHING` after the batch is
//!   validated against the stored questions, in one transaction that holds the question's row: the
//!   first answer from any front end wins and a second gets `REPLY_QUEUED`.
//! * **Admission** marks the answer admitted in the transaction that appends its `user/message`
//!   (the fold sees the question settle), or, for an open question answered in its window from
//!   the ledger, its `tool/result` (whose provenance names [`LEDGER_ANSWERER`]), so a retry
//!   after that commit finds nothing to do.
//!
//! [`LEDGER_ANSWERER`]: crate::LEDGER_ANSWERER

use std::collections::HashMap;
use std::fmt;

use postgres::{Statement, ToStatement, Transaction};
use session_log::{EventBody, LogVisitor, Scanned, SessionEvent, SessionHeader};
use user_questions::{AnswerBatch, CallId, Provenance, Question, QuestionLimits};
use user_questions_projection::{ActiveState, Replay};

use crate::PgError;
use crate::db::Connection;
use crate::store::PgStore;

/// A question's state in the ledger.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QuestionState {
    /// Its tool call is running: answered in its own window, by the surfaces racing there.
    Open,
    /// The call ended unanswered: a late answer from any front end settles it.
    Continued,
    /// A reply was admitted (or the call was answered in its window).
    Settled,
    /// The log no longer shows it as a question (its call ended in an error, say): nothing
    /// answers it.
    Dropped,
}

impl QuestionState {
    /// The ledger's spelling (`open`, `continued`, `settled`, `dropped`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Open => "open",
            Self::Continued => "continued",
            Self::Settled => "settled",
            Self::Dropped => "dropped",
        }
    }

    pub(crate) fn parse(text: &str) -> Option<Self> {
        match text {
            "open" => Some(Self::Open),
            "continued" => Some(Self::Continued),
            "settled" => Some(Self::Settled),
            "dropped" => Some(Self::Dropped),
            _ => None,
        }
    }
}

/// One change of a question, to be written with the append that caused it.
#[derive(Clone, Debug)]
struct Change {
    state: QuestionState,
    /// The questions as JSON (`[]` for a call first seen settled).
    questions: String,
    seq: u64,
    /// For a settled call: what settled it, which admits the ledger's answer it names.
    settled_by: SettledBy,
}

/// What settled a call.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct SettledBy {
    /// The id of the `user/message` that settled it (empty when it was not a late reply): it
    /// admits the ledger's answer of that id.
    message: String,
    /// It was answered in its window by the ledger's answer ([`LedgerAnswerer`]'s, named in the
    /// result's provenance): it admits the call's one answer in the ledger.
    ///
    /// [`LedgerAnswerer`]: crate::LedgerAnswerer
    ledger_window: bool,
}

/// The projection of one session as its writer keeps it, turning each appended batch into the
/// ledger rows it changes.
pub(crate) struct LedgerFold {
    fold: Fold,
    /// The fold after the batch being appended, adopted once it commits.
    staged: Option<Fold>,
}

/// The projection replay and what the ledger was told of it.
#[derive(Clone)]
struct Fold {
    replay: Replay,
    /// What the ledger says of each active call.
    active: HashMap<CallId, ActiveState>,
    /// How many settled calls the ledger was told of.
    settled: usize,
    /// What settled each settled call.
    settled_by: HashMap<CallId, SettledBy>,
}

/// The ledger rows an appended batch changes.
pub(crate) struct LedgerPlan {
    changes: HashMap<CallId, Change>,
    /// For a whole-log plan: the calls the log lists as open or continued (any other unsettled
    /// row is dropped).
    active: Option<Vec<String>>,
}

impl Fold {
    /// Applies one event, recording what it changed in `changes`.
    fn observe(&mut self, line: u64, event: &SessionEvent, changes: &mut HashMap<CallId, Change>) {
        if !self.replay.apply_event(line, event) {
            return;
        }
        let view = self.replay.state().view();
        for entry in &view.active {
            if self.active.get(&entry.call_id) != Some(&entry.state) {
                self.active.insert(entry.call_id.clone(), entry.state);
                changes.insert(
                    entry.call_id.clone(),
                    Change {
                        state: active_state(entry.state),
                        questions: questions_json(&entry.questions),
                        seq: event.seq,
                        settled_by: SettledBy::default(),
                    },
                );
            }
        }
        let settled_by = match &event.body {
            EventBody::UserMessage(message) => SettledBy {
                message: message.id.clone().unwrap_or_default(),
                ledger_window: false,
            },
            EventBody::ToolResult(result) => SettledBy {
                message: String::new(),
                ledger_window: result
                    .provenance
                    .as_ref()
                    .is_some_and(|p| p.answerer == crate::LEDGER_ANSWERER),
            },
            _ => SettledBy::default(),
        };
        // Settled calls are listed in settlement order and never removed.
        for entry in view.settled.get(self.settled..).unwrap_or_default() {
            self.active.remove(&entry.call_id);
            self.settled_by
                .insert(entry.call_id.clone(), settled_by.clone());
            changes.insert(
                entry.call_id.clone(),
                Change {
                    state: QuestionState::Settled,
                    questions: "[]".into(),
                    seq: event.seq,
                    settled_by: settled_by.clone(),
                },
            );
        }
        self.settled = view.settled.len();
        // A call the projection no longer lists, unsettled, is dropped.
        let gone: Vec<CallId> = self
            .active
            .keys()
            .filter(|call| !view.active.iter().any(|e| &e.call_id == *call))
            .cloned()
            .collect();
        for call in gone {
            self.active.remove(&call);
            changes.insert(
                call,
                Change {
                    state: QuestionState::Dropped,
                    questions: "[]".into(),
                    seq: event.seq,
                    settled_by: SettledBy::default(),
                },
            );
        }
    }
}

fn active_state(state: ActiveState) -> QuestionState {
    match state {
        ActiveState::Open => QuestionState::Open,
        ActiveState::Continued => QuestionState::Continued,
    }
}

fn questions_json(questions: &[Question]) -> String {
    serde_json::to_string(questions).unwrap_or_else(|_| "[]".into())
}

impl LedgerFold {
    /// A fold of a log whose header is `header`, before any record.
    pub(crate) fn new(header: &SessionHeader) -> Self {
        Self {
            fold: Fold {
                replay: Replay::new(header),
                active: HashMap::new(),
                settled: 0,
                settled_by: HashMap::new(),
            },
            staged: None,
        }
    }

    /// The rows `written` (a batch about to be appended from line `first_line` on) changes;
    /// [`LedgerFold::commit`] adopts the fold once the batch is in.
    pub(crate) fn plan(&mut self, first_line: u64, written: &[SessionEvent]) -> LedgerPlan {
        let mut fold = self.fold.clone();
        let mut changes = HashMap::new();
        for (index, event) in written.iter().enumerate() {
            fold.observe(first_line + index as u64, event, &mut changes);
        }
        self.staged = Some(fold);
        LedgerPlan {
            changes,
            active: None,
        }
    }

    /// Adopts the fold of the last planned batch (it was committed).
    pub(crate) fn commit(&mut self) {
        if let Some(fold) = self.staged.take() {
            self.fold = fold;
        }
    }

    /// Every row the whole log implies, to bring the ledger in line with it on open (a log
    /// imported, or written before the ledger existed): rows of calls the log no longer lists
    /// as open or continued, unsettled, are dropped.
    pub(crate) fn snapshot(&self) -> LedgerPlan {
        let mut changes = HashMap::new();
        let view = self.fold.replay.state().view();
        for entry in &view.settled {
            changes.insert(
                entry.call_id.clone(),
                Change {
                    state: QuestionState::Settled,
                    questions: "[]".into(),
                    seq: 0,
                    settled_by: self
                        .fold
                        .settled_by
                        .get(&entry.call_id)
                        .cloned()
                        .unwrap_or_default(),
                },
            );
        }
        for entry in &view.active {
            changes.insert(
                entry.call_id.clone(),
                Change {
                    state: active_state(entry.state),
                    questions: questions_json(&entry.questions),
                    seq: 0,
                    settled_by: SettledBy::default(),
                },
            );
        }
        let active = view
            .active
            .iter()
            .map(|e| e.call_id.as_str().to_owned())
            .collect();
        LedgerPlan {
            changes,
            active: Some(active),
        }
    }
}

/// Folds the open scan's records into the ledger's fold, beside the caller's visitor.
pub(crate) struct FoldVisitor<'a> {
    pub(crate) fold: Option<LedgerFold>,
    pub(crate) inner: &'a mut dyn LogVisitor,
}

impl LogVisitor for FoldVisitor<'_> {
    fn header(&mut self, header: &SessionHeader) {
        self.fold = Some(LedgerFold::new(header));
        self.inner.header(header);
    }

    fn line(&mut self, scanned: &Scanned<'_>) {
        if let (Some(fold), Scanned::Record(record)) = (&mut self.fold, scanned)
            && let Some(event) = record.record.event()
        {
            fold.fold.observe(record.line, event, &mut HashMap::new());
        }
        self.inner.line(scanned);
    }
}

/// The prepared statements of [`LedgerPlan::apply_with`].
pub(crate) struct LedgerStatements {
    questions: Statement,
    answers: Statement,
}

/// Writes the questions' new states; the claims of remote surfaces on a question that left its
/// window go with it.
const UPSERT_QUESTIONS: &str = "WITH up AS (
         INSERT INTO ask_user_questions AS q (name, call_id, state, questions, changed_seq)
         SELECT $1, u.c, u.s, u.q::jsonb, u.seq
         FROM unnest($2::text[], $3::text[], $4::text[], $5::bigint[]) AS u(c, s, q, seq)
         ON CONFLICT (name, call_id) DO UPDATE SET
             state = EXCLUDED.state,
             questions = CASE WHEN EXCLUDED.state IN ('settled', 'dropped') THEN q.questions
                              ELSE EXCLUDED.questions END,
             changed_seq = EXCLUDED.changed_seq
         WHERE q.state IS DISTINCT FROM EXCLUDED.state
         RETURNING q.call_id, q.state
     )
     DELETE FROM ask_user_claims c USING up
     WHERE c.name = $1 AND c.call_id = up.call_id AND up.state <> 'open'";

/// Settles the answers of calls that settled or were dropped: the answer whose id is the
/// settling `user/message`'s is admitted, and so is the call's answer when the ledger's answer
/// settled it in its window (`w`); any other (a reply from elsewhere settled the call, or the
/// question was dropped) is refused, so it is never admitted later.
const SETTLE_ANSWERS: &str = "UPDATE ask_user_answers a SET
         admitted_seq = CASE WHEN a.answer_id = u.m OR u.w THEN u.seq END,
         refused = CASE WHEN a.answer_id = u.m OR u.w THEN NULL
                        WHEN u.m IS NULL THEN 'the question was dropped from its session'
                        ELSE 'another reply settled the question' END
     FROM unnest($2::text[], $3::bigint[], $4::text[], $5::bool[]) AS u(c, seq, m, w)
     WHERE a.name = $1 AND a.call_id = u.c AND a.admitted_seq IS NULL AND a.refused IS NULL";

/// On open: the rows the log no longer lists as open or continued, unsettled, are dropped, and
/// their waiting answers refused.
const DROP_STALE: &str = "WITH dropped AS (
         UPDATE ask_user_questions SET state = 'dropped'
         WHERE name = $1 AND state IN ('open', 'continued') AND NOT (call_id = ANY($2::text[]))
         RETURNING call_id
     )
     UPDATE ask_user_answers a SET refused = 'the question was dropped from its session'
     FROM dropped d
     WHERE a.name = $1 AND a.call_id = d.call_id AND a.admitted_seq IS NULL AND a.refused IS NULL";

impl LedgerPlan {
    /// The statements [`LedgerPlan::apply_with`] runs, prepared on `connection`; `None` when the
    /// plan changes nothing.
    pub(crate) fn statements(
        &self,
        connection: &mut Connection,
    ) -> Result<Option<LedgerStatements>, PgError> {
        if self.changes.is_empty() && self.active.is_none() {
            return Ok(None);
        }
        Ok(Some(LedgerStatements {
            questions: connection.statement(UPSERT_QUESTIONS)?,
            answers: connection.statement(SETTLE_ANSWERS)?,
        }))
    }

    /// Writes the rows in `tx`: question states, and the admission (or refusal) of answers whose
    /// call settled or was dropped.
    pub(crate) fn apply(&self, tx: &mut Transaction<'_>, name: &str) -> Result<(), PgError> {
        self.write(tx, name, UPSERT_QUESTIONS, SETTLE_ANSWERS)
    }

    /// [`LedgerPlan::apply`] with the statements prepared beforehand.
    pub(crate) fn apply_with(
        &self,
        tx: &mut Transaction<'_>,
        name: &str,
        statements: Option<&LedgerStatements>,
    ) -> Result<(), PgError> {
        match statements {
            Some(s) => self.write(tx, name, &s.questions, &s.answers),
            None => Ok(()),
        }
    }

    fn write<S: ToStatement + ?Sized>(
        &self,
        tx: &mut Transaction<'_>,
        name: &str,
        questions_statement: &S,
        answers_statement: &S,
    ) -> Result<(), PgError> {
        if let Some(active) = &self.active {
            tx.execute(DROP_STALE, &[&name, active])
                .map_err(PgError::Query)?;
        }
        if self.changes.is_empty() {
            return Ok(());
        }
        let mut calls = Vec::with_capacity(self.changes.len());
        let mut states = Vec::with_capacity(self.changes.len());
        let mut questions = Vec::with_capacity(self.changes.len());
        let mut seqs = Vec::with_capacity(self.changes.len());
        let (mut ended_calls, mut ended_seqs, mut ended_by) = (Vec::new(), Vec::new(), Vec::new());
        let mut ended_in_window = Vec::new();
        for (call, change) in &self.changes {
            calls.push(call.as_str().to_owned());
            states.push(change.state.as_str());
            questions.push(change.questions.clone());
            let seq = i64::try_from(change.seq).unwrap_or(i64::MAX);
            seqs.push(seq);
            let (by, in_window) = match change.state {
                QuestionState::Settled => (
                    Some(change.settled_by.message.clone()),
                    change.settled_by.ledger_window,
                ),
                QuestionState::Dropped => (None, false),
                QuestionState::Open | QuestionState::Continued => continue,
            };
            ended_calls.push(call.as_str().to_owned());
            ended_seqs.push(seq);
            ended_by.push(by);
            ended_in_window.push(in_window);
        }
        tx.execute(
            questions_statement,
            &[&name, &calls, &states, &questions, &seqs],
        )
        .map_err(PgError::Query)?;
        if !ended_calls.is_empty() {
            tx.execute(
                answers_statement,
                &[
                    &name,
                    &ended_calls,
                    &ended_seqs,
                    &ended_by,
                    &ended_in_window,
                ],
            )
            .map_err(PgError::Query)?;
        }
        Ok(())
    }
}

/// Why the ledger refused an answer. Nothing was written.
#[derive(Debug, thiserror::Error)]
pub enum AnswerError {
    /// No session of that name.
    #[error("no session {0:?} in the database")]
    UnknownSession(String),
    /// The session has no timed question with that call id.
    #[error("session {session:?} has no timed question {call_id}")]
    UnknownCall {
        /// The session.
        session: String,
        /// The call id.
        call_id: CallId,
    },
    /// The question is settled already.
    #[error("call {0} is already settled")]
    Settled(CallId),
    /// The session no longer asks it (its call ended without a question to answer).
    #[error("call {0} is no longer a question in its session")]
    Dropped(CallId),
    /// Another front end answered first; its answer is the one admitted.
    #[error("a reply to call {0} is already queued; the first answer wins")]
    ReplyQueued(CallId),
    /// The batch does not fit the questions (SPEC §9.2).
    #[error("{0}")]
    BadAnswer(String),
    /// The database failed.
    #[error(transparent)]
    Db(#[from] PgError),
}

impl AnswerError {
    /// The stable code of the refusal (the SPEC's where one exists).
    pub fn code(&self) -> &'static str {
        match self {
            Self::UnknownSession(_) => "UNKNOWN_SESSION",
            Self::UnknownCall { .. } => "UNKNOWN_CALL",
            Self::Dropped(_) => "NOT_CONTINUED",
            Self::Settled(_) => "ALREADY_SETTLED",
            Self::ReplyQueued(_) => "REPLY_QUEUED",
            Self::BadAnswer(_) => "BAD_ANSWER",
            Self::Db(_) => "DB_FAILED",
        }
    }
}

/// An accepted answer not yet admitted.
#[derive(Clone, Debug, PartialEq)]
pub struct LedgerAnswer {
    /// The session.
    pub session: String,
    /// The call it answers.
    pub call_id: CallId,
    /// Its id (unique in the ledger).
    pub answer_id: String,
    /// The normalised batch.
    pub batch: AnswerBatch,
    /// Who answered.
    pub provenance: Provenance,
}

/// A question as the ledger holds it.
#[derive(Clone, Debug, PartialEq)]
pub struct LedgerQuestion {
    /// The session.
    pub session: String,
    /// The call id.
    pub call_id: CallId,
    /// Its state.
    pub state: QuestionState,
    /// The questions as asked (empty for a call the ledger first saw settled).
    pub questions: Vec<Question>,
    /// Whether an answer was accepted and waits for admission.
    pub answered: bool,
}

impl fmt::Display for QuestionState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PgStore {
    /// Answers the question `call_id` of session `name` from any front end: the batch is
    /// validated against the stored questions, then one statement holds the question's row,
    /// checks it is still open or continued, inserts the answer unless one is there already (the
    /// first answer wins) and notifies the session's workers and host, committed on its own.
    /// Returns the answer's id.
    ///
    /// A continued question's answer is admitted by a [`Worker`](crate::Worker) (or
    /// [`admit_answers`](crate::admit_answers), or the live host's
    /// [`LedgerFeed`](crate::LedgerFeed)). An open question's is taken in its window by the
    /// [`LedgerAnswerer`](crate::LedgerAnswerer) of the host running the call, racing its other
    /// surfaces: when another surface answers first the ledger's answer is refused (the window
    /// is the host's, and the first answer there wins); when the window closes first the
    /// question is continued and the answer admitted as a late one.
    pub fn answer(
        &self,
        name: &str,
        call_id: &CallId,
        batch: &AnswerBatch,
        provenance: &Provenance,
        limits: &QuestionLimits,
    ) -> Result<String, AnswerError> {
        let key = name.to_owned();
        let call = call_id.clone();
        let batch = batch.clone();
        let provenance = serde_json::to_string(provenance).map_err(PgError::Json)?;
        let limits = limits.clone();
        self.db().run(move |connection| {
            // Two round trips: the question read (its questions never change once asked), then
            // one statement that holds its row, checks it is still open or continued, inserts the answer
            // unless one is there, and notifies the workers, committed on its own.
            let read = connection.statement(
                "SELECT q.state, q.questions::text,
                        EXISTS (SELECT 1 FROM ask_user_answers a
                                WHERE a.name = q.name AND a.call_id = q.call_id)
                 FROM ask_user_questions q
                 WHERE q.name = $1 AND q.call_id = $2",
            )?;
            let row = connection
                .client()?
                .query_opt(&read, &[&key, &call.as_str()])
                .map_err(PgError::Query)?;
            let Some(row) = row else {
                return Ok(Err(crate::claims::unknown(connection, key, call)?));
            };
            match QuestionState::parse(row.get(0)) {
                Some(QuestionState::Continued | QuestionState::Open) => {}
                Some(QuestionState::Settled) => return Ok(Err(AnswerError::Settled(call))),
                Some(QuestionState::Dropped) | None => return Ok(Err(AnswerError::Dropped(call))),
            }
            // A reply queued comes before the batch's check (SPEC §4.8 step 3): the second answer
            // is told the first won, whatever it holds.
            if row.get::<_, bool>(2) {
                return Ok(Err(AnswerError::ReplyQueued(call)));
            }
            let questions: Vec<Question> =
                serde_json::from_str(row.get(1)).map_err(PgError::Json)?;
            let answers =
                match user_questions::validate_answers(&questions, &batch, &limits, Some(&call)) {
                    Ok(answers) => answers,
                    Err(error) => return Ok(Err(AnswerError::BadAnswer(error.message().into()))),
                };
            let answer_id = pending_answer::new_message_id();
            let answers = serde_json::to_string(&answers).map_err(PgError::Json)?;
            let insert = connection.statement(
                "WITH q AS (
                     SELECT 1 FROM ask_user_questions
                     WHERE name = $1 AND call_id = $2 AND state IN ('open', 'continued')
                     FOR UPDATE
                 ), ins AS (
                     INSERT INTO ask_user_answers (name, call_id, answer_id, batch, provenance)
                     SELECT $1, $2, $3, $4::text::jsonb, $5::text::jsonb FROM q
                     ON CONFLICT (name, call_id) DO NOTHING
                     RETURNING 1
                 ), note AS (
                     SELECT pg_notify('ask_user_answers', $1) FROM ins
                 )
                 SELECT (SELECT count(*) FROM q), (SELECT count(*) FROM ins),
                        (SELECT count(*) FROM note)",
            )?;
            let row = connection
                .client()?
                .query_one(
                    &insert,
                    &[&key, &call.as_str(), &answer_id, &answers, &provenance],
                )
                .map_err(PgError::Commit)?;
            let (continued, inserted): (i64, i64) = (row.get(0), row.get(1));
            if continued == 0 {
                // Settled since it was read.
                return Ok(Err(AnswerError::Settled(call)));
            }
            if inserted == 0 {
                return Ok(Err(AnswerError::ReplyQueued(call)));
            }
            Ok(Ok(answer_id))
        })?
    }

    /// The accepted answers of session `name` that are not admitted yet and whose question is
    /// continued, oldest first (an open question's answer is its window's: see
    /// [`PgStore::answer`]).
    pub fn unadmitted(&self, name: &str) -> Result<Vec<LedgerAnswer>, PgError> {
        let key = name.to_owned();
        self.db().run(move |connection| {
            let rows = connection
                .client()?
                .query(
                    "SELECT a.call_id, a.answer_id, a.batch::text, a.provenance::text
                     FROM ask_user_answers a
                     JOIN ask_user_questions q ON q.name = a.name AND q.call_id = a.call_id
                     WHERE a.name = $1 AND a.admitted_seq IS NULL AND a.refused IS NULL
                       AND q.state = 'continued'
                     ORDER BY a.answered_at, a.call_id",
                    &[&key],
                )
                .map_err(PgError::Query)?;
            rows.iter()
                .map(|row| {
                    Ok(LedgerAnswer {
                        session: key.clone(),
                        call_id: CallId::from(row.get::<_, &str>(0)),
                        answer_id: row.get(1),
                        batch: serde_json::from_str(row.get(2)).map_err(PgError::Json)?,
                        provenance: serde_json::from_str(row.get(3)).map_err(PgError::Json)?,
                    })
                })
                .collect()
        })
    }

    /// Records that `answer` will never be admitted, and why.
    pub fn refuse(&self, name: &str, answer: &LedgerAnswer, why: &str) -> Result<(), PgError> {
        let (key, call, id, why) = (
            name.to_owned(),
            answer.call_id.as_str().to_owned(),
            answer.answer_id.clone(),
            why.to_owned(),
        );
        tracing::warn!(session = name, call_id = %answer.call_id, reason = %why, "accepted answer refused");
        self.db().run(move |connection| {
            connection
                .client()?
                .execute(
                    "UPDATE ask_user_answers SET refused = $4
                     WHERE name = $1 AND call_id = $2 AND answer_id = $3
                       AND admitted_seq IS NULL AND refused IS NULL",
                    &[&key, &call, &id, &why],
                )
                .map_err(PgError::Query)?;
            Ok(())
        })
    }

    /// The sessions nobody holds (their lease is free) with work for a worker, oldest first: an
    /// answer waiting for admission, or a question left open by a host that is gone (opening the
    /// session repairs the call, and the question becomes continued).
    pub fn sessions_to_admit(&self) -> Result<Vec<String>, PgError> {
        self.db().run(|connection| {
            let rows = connection
                .client()?
                .query(
                    "SELECT s.name FROM ask_user_sessions s
                     WHERE (s.owner IS NULL OR s.lease_until < now())
                       AND (EXISTS (SELECT 1 FROM ask_user_answers a
                                    WHERE a.name = s.name AND a.admitted_seq IS NULL
                                      AND a.refused IS NULL)
                            OR EXISTS (SELECT 1 FROM ask_user_questions q
                                       WHERE q.name = s.name AND q.state = 'open'))
                     ORDER BY s.created_at, s.name",
                    &[],
                )
                .map_err(PgError::Query)?;
            Ok(rows.iter().map(|row| row.get(0)).collect())
        })
    }

    /// The open and continued questions of session `name` (every session when `None`), as the
    /// ledger holds them.
    pub fn questions(&self, name: Option<&str>) -> Result<Vec<LedgerQuestion>, PgError> {
        let key = name.map(str::to_owned);
        self.db().run(move |connection| {
            let rows = connection
                .client()?
                .query(
                    "SELECT q.name, q.call_id, q.state, q.questions::text,
                            EXISTS (SELECT 1 FROM ask_user_answers a
                                    WHERE a.name = q.name AND a.call_id = q.call_id
                                      AND a.admitted_seq IS NULL AND a.refused IS NULL)
                     FROM ask_user_questions q
                     WHERE q.state IN ('open', 'continued') AND ($1::text IS NULL OR q.name = $1)
                     ORDER BY q.name, q.changed_seq, q.call_id",
                    &[&key],
                )
                .map_err(PgError::Query)?;
            rows.iter()
                .map(|row| {
                    Ok(LedgerQuestion {
                        session: row.get(0),
                        call_id: CallId::from(row.get::<_, &str>(1)),
                        state: QuestionState::parse(row.get(2)).unwrap_or(QuestionState::Settled),
                        questions: serde_json::from_str(row.get(3)).map_err(PgError::Json)?,
                        answered: row.get(4),
                    })
                })
                .collect()
        })
    }
}
