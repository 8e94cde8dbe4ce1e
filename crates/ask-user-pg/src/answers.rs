//! The front ends' side of the ledger: answers from any front end (first answer wins, in one
//! statement that holds the question's row), what waits for admission, and the questions as the
//! ledger holds them. The writer's side (the fold that keeps the question states) is
//! [`ledger`](crate::ledger).

use user_questions::{AnswerBatch, CallId, Provenance, Question, QuestionLimits};

use crate::PgError;
use crate::db::Connection;
use crate::ledger::QuestionState;
use crate::store::PgStore;
use crate::text::{from_db, may_exist, to_db};

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

impl PgStore {
    /// Records an answer to the question `call_id` of session `name` from any front end: the batch is
    /// validated against the stored questions, then one statement holds the question's row,
    /// checks it is still open or continued and inserts the answer unless one is there already
    /// (the first answer wins), committed on its own; then the session's workers and host are
    /// hinted (`NOTIFY`, sent after the commit and coalesced with other hints of this store; a
    /// lost hint is caught up by their poll). Returns the answer's id.
    ///
    /// A continued question's answer is admitted by a [`Worker`](crate::Worker) (or
    /// [`admit_answers`](crate::admit_answers), or the live host's
    /// [`LedgerFeed`](crate::LedgerFeed)). An open question's is taken in its window by the
    /// [`LedgerAnswerer`](crate::LedgerAnswerer) of the host running the call, racing its other
    /// surfaces: when another surface answers first the ledger's answer is refused (the window
    /// is the host's, and the first answer there wins); when the window closes first the
    /// question is continued and the answer admitted as a late one.
    pub fn record_answer(
        &self,
        name: &str,
        call_id: &CallId,
        batch: &AnswerBatch,
        provenance: &Provenance,
        limits: &QuestionLimits,
    ) -> Result<String, AnswerError> {
        if !may_exist(name) {
            return Err(AnswerError::UnknownSession(name.to_owned()));
        }
        let key = name.to_owned();
        let call = call_id.clone();
        let batch = batch.clone();
        let provenance = serde_json::to_string(provenance).map_err(PgError::Json)?;
        let limits = limits.clone();
        let answered = self.db().run(move |connection| {
            // Two round trips: the question read (its questions never change once asked), then
            // one statement that holds its row, checks it is still open or continued and inserts
            // the answer unless one is there, committed on its own. The workers' hint goes after
            // the commit, from the store's hint sender (`hints`): a notifying commit would wait
            // for every other notifying commit's flush.
            let read = connection.statement(
                "SELECT q.state, q.questions,
                        EXISTS (SELECT 1 FROM ask_user_answers a
                                WHERE a.name = q.name AND a.call_id = q.call_id)
                 FROM ask_user_questions q
                 WHERE q.name = $1 AND q.call_id = $2",
            )?;
            let row = connection
                .client()?
                .query_opt(&read, &[&key, &to_db(call.as_str())])
                .map_err(PgError::Query)?;
            let Some(row) = row else {
                return Ok(Err(unknown(connection, key, call)?));
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
                     SELECT $1, $2, $3, $4, $5 FROM q
                     ON CONFLICT (name, call_id) DO NOTHING
                     RETURNING 1
                 )
                 SELECT (SELECT count(*) FROM q), (SELECT count(*) FROM ins)",
            )?;
            let row = connection
                .client()?
                .query_one(
                    &insert,
                    &[
                        &key,
                        &to_db(call.as_str()),
                        &answer_id,
                        &answers,
                        &provenance,
                    ],
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
        })??;
        self.hint(name);
        Ok(answered)
    }

    /// The accepted answers of session `name` that are not admitted yet and whose question is
    /// continued, oldest first (an open question's answer is its window's: see
    /// [`PgStore::record_answer`]).
    pub fn unadmitted(&self, name: &str) -> Result<Vec<LedgerAnswer>, PgError> {
        if !may_exist(name) {
            return Ok(Vec::new());
        }
        let key = name.to_owned();
        self.db().run(move |connection| {
            let rows = connection
                .client()?
                .query(
                    "SELECT a.call_id, a.answer_id, a.batch, a.provenance
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
                        call_id: CallId::from(from_db(row.get(0)).as_ref()),
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
            to_db(answer.call_id.as_str()).into_owned(),
            answer.answer_id.clone(),
            to_db(why).into_owned(),
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
        if !name.is_none_or(may_exist) {
            return Ok(Vec::new());
        }
        let key = name.map(str::to_owned);
        self.db().run(move |connection| {
            let rows = connection
                .client()?
                .query(
                    "SELECT q.name, q.call_id, q.state, q.questions,
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
                        call_id: CallId::from(from_db(row.get(1)).as_ref()),
                        state: QuestionState::parse(row.get(2)).unwrap_or(QuestionState::Settled),
                        questions: serde_json::from_str(row.get(3)).map_err(PgError::Json)?,
                        answered: row.get(4),
                    })
                })
                .collect()
        })
    }
}

/// The refusal for a question the ledger does not have: its session is unknown, or only the call.
pub(crate) fn unknown(
    connection: &mut Connection,
    session: String,
    call_id: CallId,
) -> Result<AnswerError, PgError> {
    let found = connection
        .client()?
        .query_opt(
            "SELECT 1 FROM ask_user_sessions WHERE name = $1",
            &[&session],
        )
        .map_err(PgError::Query)?;
    Ok(if found.is_some() {
        AnswerError::UnknownCall { session, call_id }
    } else {
        AnswerError::UnknownSession(session)
    })
}
