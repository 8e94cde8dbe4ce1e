//! The question ledger: every timed question of a session as its log says it stands, and the
//! answers front ends give it.
//!
//! * The **questions** are written by the session's writer, in the transaction of the append that
//!   changed them ([`LedgerFold`], folded with the projection of `user-questions-projection`), so
//!   the ledger can never disagree with the log: a question is `open` while its tool call runs,
//!   `continued` once the call ended unanswered, `settled` once a reply is admitted.
//! * An **answer** is one row per call, inserted with `ON CONFLICT DO NOTHING` after the batch is
//!   validated against the stored questions, in one transaction that holds the question's row: the
//!   first answer from any front end wins and a second gets `REPLY_QUEUED` (the front ends' side:
//!   [`answers`](crate::answers)).
//! * **Admission** marks the answer admitted in the transaction that appends its `user/message`
//!   (the fold sees the question settle), or, for an open question answered in its window from
//!   the ledger, its `tool/result` (whose provenance names [`LEDGER_ANSWERER`]), so a retry
//!   after that commit finds nothing to do.
//!
//! [`LEDGER_ANSWERER`]: crate::LEDGER_ANSWERER

use std::collections::HashMap;
use std::fmt;

use postgres::{Statement, ToStatement, Transaction};
use session_log::{EventBody, LogVisitor, ScanPosition, Scanned, SessionEvent, SessionHeader};
use user_questions::{CallId, Question};
use user_questions_projection::{ActiveState, Replay, UserQuestionsState};

use crate::PgError;
use crate::db::Connection;
use crate::text::to_db;

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

    /// A fold resumed at `at` from the projection `state` there (a checkpoint's): the ledger is
    /// taken to say what the state says of every call, as it does when it is in line with the
    /// log up to `at`. What settled each call settled before `at` is not known; only the
    /// whole-log [`snapshot`](Self::snapshot) needs it, and a resumed fold never takes one.
    pub(crate) fn resume(
        header: &SessionHeader,
        state: UserQuestionsState,
        at: ScanPosition,
    ) -> Self {
        let replay = Replay::resume(header, state, at);
        let view = replay.state().view();
        let active = view
            .active
            .iter()
            .map(|entry| (entry.call_id.clone(), entry.state))
            .collect();
        let settled = view.settled.len();
        Self {
            fold: Fold {
                replay,
                active,
                settled,
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
            .map(|e| to_db(e.call_id.as_str()).into_owned())
            .collect();
        LedgerPlan {
            changes,
            active: Some(active),
        }
    }
}

/// Folds the open scan's records into the ledger's fold (the store's hold runs it beside the
/// caller's visitor). It reads nothing but the lines it is shown: a scan that resumes at a
/// checkpoint leaves the fold out and says where it resumed, and the store starts the fold from
/// the checkpoint's state (see [`PgHold`](crate::PgHold)).
#[derive(Default)]
pub struct FoldVisitor {
    pub(crate) fold: Option<LedgerFold>,
    /// Where the scan resumed, when it did.
    pub(crate) resumed: Option<Resumed>,
}

/// Where an open's scan resumed: the log's header, the point, and whether any line follows it.
pub(crate) struct Resumed {
    pub(crate) header: SessionHeader,
    pub(crate) at: ScanPosition,
    pub(crate) lines_after: bool,
}

impl FoldVisitor {
    /// A visitor that carries `fold` on over the lines it is shown.
    pub(crate) fn carrying(fold: LedgerFold) -> Self {
        Self {
            fold: Some(fold),
            resumed: None,
        }
    }
}

impl LogVisitor for FoldVisitor {
    fn header(&mut self, header: &SessionHeader) {
        self.fold = Some(LedgerFold::new(header));
    }

    fn resumed(&mut self, header: &SessionHeader, at: ScanPosition) {
        if self.fold.is_none() {
            self.resumed = Some(Resumed {
                header: header.clone(),
                at,
                lines_after: false,
            });
        }
    }

    fn line(&mut self, scanned: &Scanned<'_>) {
        if let Some(resumed) = &mut self.resumed {
            resumed.lines_after = true;
        }
        if let (Some(fold), Scanned::Record(record)) = (&mut self.fold, scanned)
            && let Some(event) = record.record.event()
        {
            fold.fold.observe(record.line, event, &mut HashMap::new());
        }
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
         SELECT $1, u.c, u.s, u.q, u.seq
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
            calls.push(to_db(call.as_str()).into_owned());
            states.push(change.state.as_str());
            questions.push(change.questions.clone());
            let seq = i64::try_from(change.seq).unwrap_or(i64::MAX);
            seqs.push(seq);
            let (by, in_window) = match change.state {
                QuestionState::Settled => (
                    Some(to_db(&change.settled_by.message).into_owned()),
                    change.settled_by.ledger_window,
                ),
                QuestionState::Dropped => (None, false),
                QuestionState::Open | QuestionState::Continued => continue,
            };
            ended_calls.push(to_db(call.as_str()).into_owned());
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

impl fmt::Display for QuestionState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
