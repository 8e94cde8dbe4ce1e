//! Claims of remote surfaces on open questions, as lease rows of the database's clock.
//!
//! A surface on another machine (a page of `ask-user serve --pg`, an IDE, a phone) that shows an
//! open question's card takes a claim on it ([`PgStore::claim`], about 15 s), renews it while the
//! card is shown (every 5 s) and removes it when the card closes ([`PgStore::release_claim`]). The host
//! that runs the question's call reads the claims in its [`LedgerAnswerer`](crate::LedgerAnswerer)
//! and holds one claim on its own timed wait while any lease is live, so the window does not
//! count down while a person elsewhere is looking. Only the database's clock decides whether a
//! lease is live: the host is told how long the longest one has left, never a timestamp.

use std::time::Duration;

use user_questions::CallId;

use crate::PgError;
use crate::answers::{AnswerError, LedgerAnswer, unknown};
use crate::ledger::QuestionState;
use crate::store::PgStore;
use crate::text::{may_exist, to_db};

/// What the host running an open question's call sees of it in the ledger.
#[derive(Clone, Debug, PartialEq)]
pub struct Window {
    /// The question's state (`None`: the ledger has no such question).
    pub state: Option<QuestionState>,
    /// The answer a front end gave, not yet admitted or refused.
    pub answer: Option<LedgerAnswer>,
    /// How long the longest live claim of a remote surface has left (`None`: no live claim).
    pub claimed_for: Option<Duration>,
}

const CLAIM: &str = "WITH q AS (
         SELECT state FROM ask_user_questions WHERE name = $1 AND call_id = $2
     ), stale AS (
         DELETE FROM ask_user_claims
         WHERE name = $1 AND call_id = $2 AND client <> $3 AND expires_at < now()
     ), up AS (
         INSERT INTO ask_user_claims AS c (name, call_id, client, expires_at)
         SELECT $1, $2, $3, now() + $4::bigint * interval '1 millisecond' FROM q
         WHERE q.state = 'open'
         ON CONFLICT (name, call_id, client) DO UPDATE SET expires_at = EXCLUDED.expires_at
         RETURNING (c.xmax = 0) AS fresh
     )
     SELECT (SELECT state FROM q), (SELECT count(*) FROM up WHERE fresh)";

const RELEASE: &str = "WITH gone AS (
         DELETE FROM ask_user_claims WHERE name = $1 AND call_id = $2 AND client = $3
         RETURNING 1
     )
     SELECT count(*) FROM gone";

const WINDOW: &str = "SELECT q.state,
         a.answer_id, a.batch, a.provenance,
         (SELECT ceil(extract(epoch FROM max(c.expires_at) - now()) * 1000)::bigint
          FROM ask_user_claims c
          WHERE c.name = q.name AND c.call_id = q.call_id AND c.expires_at > now())
     FROM ask_user_questions q
     LEFT JOIN ask_user_answers a ON a.name = q.name AND a.call_id = q.call_id
          AND a.admitted_seq IS NULL AND a.refused IS NULL
     WHERE q.name = $1 AND q.call_id = $2";

impl PgStore {
    /// Takes or renews the claim of surface `client` on the open question `call_id` of session
    /// `name`, live for `ttl` from now on the database's clock, and tells the host running the
    /// call when the claim is new. Returns the question's state: a claim is held only on an
    /// `Open` question (a continued one has no window to hold; a settled or dropped one nothing).
    pub fn claim(
        &self,
        name: &str,
        call_id: &CallId,
        client: &str,
        ttl: Duration,
    ) -> Result<QuestionState, AnswerError> {
        if !may_exist(name) {
            return Err(AnswerError::UnknownSession(name.to_owned()));
        }
        let (key, call, client) = (name.to_owned(), call_id.clone(), client.to_owned());
        let ttl = i64::try_from(ttl.as_millis()).unwrap_or(i64::MAX);
        let (state, fresh) = self.db().run(move |connection| {
            let claim = connection.statement(CLAIM)?;
            let row = connection
                .client()?
                .query_one(
                    &claim,
                    &[&key, &to_db(call.as_str()), &to_db(&client), &ttl],
                )
                .map_err(PgError::Query)?;
            let fresh = row.get::<_, i64>(1) > 0;
            Ok(match row.get::<_, Option<&str>>(0) {
                Some(state) => (
                    Ok(QuestionState::parse(state).unwrap_or(QuestionState::Dropped)),
                    fresh,
                ),
                None => (Err(unknown(connection, key, call)?), false),
            })
        })?;
        if fresh {
            self.hint(name);
        }
        state
    }

    /// Removes the claim of surface `client` on `call_id` of session `name` (its card closed),
    /// telling the host running the call. Returns whether there was one.
    pub fn release_claim(
        &self,
        name: &str,
        call_id: &CallId,
        client: &str,
    ) -> Result<bool, PgError> {
        if !may_exist(name) {
            return Ok(false);
        }
        let (key, call, client) = (name.to_owned(), call_id.clone(), client.to_owned());
        let released = self.db().run(move |connection| {
            let release = connection.statement(RELEASE)?;
            let row = connection
                .client()?
                .query_one(&release, &[&key, &to_db(call.as_str()), &to_db(&client)])
                .map_err(PgError::Query)?;
            Ok(row.get::<_, i64>(0) > 0)
        })?;
        if released {
            self.hint(name);
        }
        Ok(released)
    }

    /// The question `call_id` of session `name` as the host running its call sees it: its state,
    /// the answer waiting for it, and how long the longest live claim has left. One round trip.
    pub fn window(&self, name: &str, call_id: &CallId) -> Result<Window, PgError> {
        if !may_exist(name) {
            return Ok(Window {
                state: None,
                answer: None,
                claimed_for: None,
            });
        }
        let (key, call) = (name.to_owned(), call_id.clone());
        self.db().run(move |connection| {
            let window = connection.statement(WINDOW)?;
            let row = connection
                .client()?
                .query_opt(&window, &[&key, &to_db(call.as_str())])
                .map_err(PgError::Query)?;
            let Some(row) = row else {
                return Ok(Window {
                    state: None,
                    answer: None,
                    claimed_for: None,
                });
            };
            let answer = match row.get::<_, Option<String>>(1) {
                Some(answer_id) => Some(LedgerAnswer {
                    session: key.clone(),
                    call_id: call.clone(),
                    answer_id,
                    batch: serde_json::from_str(row.get(2)).map_err(PgError::Json)?,
                    provenance: serde_json::from_str(row.get(3)).map_err(PgError::Json)?,
                }),
                None => None,
            };
            let claimed_for = row
                .get::<_, Option<i64>>(4)
                .and_then(|ms| u64::try_from(ms).ok())
                .filter(|ms| *ms > 0)
                .map(Duration::from_millis);
            Ok(Window {
                state: QuestionState::parse(row.get(0)),
                answer,
                claimed_for,
            })
        })
    }
}
