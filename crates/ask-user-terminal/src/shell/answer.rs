//! An answer typed in a shell (`ask-user answer`), taken where the call stands: in its window
//! through the machine's inbox (racing the other surfaces, first answer wins), else late through
//! the desk, which queues the reply and admits it. Every refusal says where the call stands and
//! what to do, in words a person reads, with a stable code and a [`RefusalKind`] a command turns
//! into its exit status.

use std::path::Path;

use ask_user_inbox::{InWindowRefusal, answer_in_window, connect};
use pending_answer::{
    Accepted, DeskError, DeskErrorKind, DeskState, LateRefusal, NotWaiting, QuestionDesk, Queued,
    Submission,
};
use user_questions::{AnswerBatch, BoxError, CallId, Provenance, Question, UserMessage};

use super::{answer_problems, in_question_order};
use crate::listing::model_text;
use crate::sanitize::visible;

/// Where a shell's answer goes.
#[derive(Clone, Copy, Debug)]
pub enum AnswerTo<'a> {
    /// A named session: a log's path, or (`in_database`) a database session's name.
    Session {
        /// The session as the desk names it.
        name: &'a str,
        /// The desk is a database's (its refusals say "of this session", not "in this log").
        in_database: bool,
    },
    /// The one session of the desk that has the call: answered in its window through the inbox
    /// listening on `inbox` (its socket) when the call is open there, else late.
    Call {
        /// The inbox's socket (`Rendezvous::socket`).
        inbox: &'a Path,
    },
}

/// An answer given from a shell: the call, the answers, who gave them, and how hints name the
/// program.
#[derive(Clone, Debug)]
pub struct ShellAnswer<'a> {
    /// The call answered.
    pub call_id: CallId,
    /// The answers as typed.
    pub batch: AnswerBatch,
    /// The answers came from flags: their items are put in the order of the stored questions
    /// ([`in_question_order`]) before they are checked.
    pub from_flags: bool,
    /// Who answered (`Provenance::human("shell")`).
    pub provenance: Provenance,
    /// The command hints start with ([`program_word`](super::program_word)).
    pub program: &'a str,
}

/// What a shell's answer did.
#[derive(Debug)]
pub enum ShellAnswered {
    /// Taken in its window through the inbox: the call's own tool result carries it.
    InWindow,
    /// Admitted into the session in a turn of its own: `reply` is what the model reads;
    /// `settled` says whether the projection shows the question settled.
    Admitted {
        /// The admitted reply.
        reply: Box<UserMessage>,
        /// The projection settled the call.
        settled: bool,
    },
    /// Accepted for whoever runs the session to admit (queued for a live session, or recorded
    /// in a database's ledger) as `answer_id`.
    Accepted {
        /// The session that has the call.
        session: String,
        /// The answer's id.
        answer_id: String,
    },
}

/// What kind of refusal a [`ShellRefusal`] is; a command's exit status follows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RefusalKind {
    /// No session has the call, or it takes no answer (`UNKNOWN_CALL`, `NOT_WAITING`).
    NotContinued,
    /// The answers do not fit the questions (`BAD_ANSWER`).
    BadAnswer,
    /// A reply for the call is already queued (`REPLY_QUEUED`).
    ReplyQueued,
    /// The question is settled already (`ALREADY_ANSWERED`).
    AlreadyAnswered,
    /// In its window, another surface answered first (`ANSWERED_ELSEWHERE`).
    AnsweredElsewhere,
    /// Its window closed and its pending result is not durable yet (`NOT_DURABLE`).
    NotDurable,
    /// In its window at a process no inbox reaches (`IN_WINDOW_ELSEWHERE`).
    InWindowElsewhere,
    /// The command must name more (`AMBIGUOUS`), or asks what cannot be done.
    Usage,
    /// A session, its store or the inbox cannot be used or reached.
    Store,
    /// An unexpected failure.
    Internal,
}

/// Why a shell's answer was not used: a stable code, a message for the person, what kind of
/// refusal it is, and what else they should see.
#[derive(Debug)]
pub struct ShellRefusal {
    /// What kind of refusal.
    pub kind: RefusalKind,
    /// The stable code (`UNKNOWN_CALL`, `BAD_ANSWER`, …).
    pub code: String,
    /// The message, with every id and label from a log escaped.
    pub message: String,
    /// A reply an earlier session had queued, admitted now instead of this answer: the model
    /// reads it, and the person should see it.
    pub admitted: Option<Box<UserMessage>>,
    /// What the session's host failed with while delivering (code `DELIVERY_FAILED`), for a
    /// caller that knows its store's codes.
    pub undelivered: Option<BoxError>,
}

impl ShellRefusal {
    fn new(kind: RefusalKind, code: &str, message: String) -> Self {
        Self {
            kind,
            code: code.to_owned(),
            message,
            admitted: None,
            undelivered: None,
        }
    }
}

impl From<DeskError> for ShellRefusal {
    fn from(error: DeskError) -> Self {
        let kind = match error.kind() {
            DeskErrorKind::Usage => RefusalKind::Usage,
            DeskErrorKind::Internal => RefusalKind::Internal,
            DeskErrorKind::UnknownSession | DeskErrorKind::Store | DeskErrorKind::Unreachable => {
                RefusalKind::Store
            }
        };
        Self::new(kind, error.code(), visible(&error.to_string()).into_owned())
    }
}

/// The text the model reads of an admitted reply (escaped for a terminal), if it has text.
#[must_use]
pub fn reply_text(reply: &UserMessage) -> Option<String> {
    (reply.content.iter())
        .find_map(user_questions::ContentBlock::as_text)
        .map(|text| model_text(text).into_owned())
}

impl ShellAnswer<'_> {
    /// Gives the answer to the call where `to` says, on `desk`.
    ///
    /// # Errors
    ///
    /// Where the call stands when it takes no answer from here, the problems of answers that do
    /// not fit, or what could not be reached.
    pub async fn give(
        &self,
        desk: &dyn QuestionDesk,
        to: AnswerTo<'_>,
    ) -> Result<ShellAnswered, ShellRefusal> {
        let (session, in_database) = match to {
            AnswerTo::Session { name, in_database } => (name.to_owned(), in_database),
            AnswerTo::Call { inbox } => {
                let found = desk.find(&self.call_id).await?;
                if found.is_empty() {
                    return Err(self.unknown_call());
                }
                let was_open = found.iter().any(|q| q.state == DeskState::Open);
                if was_open && self.in_window(desk, inbox).await? {
                    return Ok(ShellAnswered::InWindow);
                }
                (self.session_of(desk, was_open).await?, false)
            }
        };
        // The call's questions, as the desk reads them, order the flags' items.
        let given = self.batch.clone();
        let from_flags = self.from_flags;
        let compose = move |stored: Option<&[Question]>| match stored {
            Some(stored) if from_flags => in_question_order(&given, stored),
            _ => given,
        };
        let submission = Submission::composed(
            session.clone(),
            self.call_id.clone(),
            compose,
            self.provenance.clone(),
        );
        match desk.submit(submission).await {
            Ok(Accepted::Admitted { reply, settled }) => {
                Ok(ShellAnswered::Admitted { reply, settled })
            }
            Ok(
                Accepted::Queued(Queued {
                    message_id: answer_id,
                    ..
                })
                | Accepted::Recorded { answer_id },
            ) => Ok(ShellAnswered::Accepted { session, answer_id }),
            Err(refusal @ LateRefusal::BadAnswer(_)) => {
                let every = self.every_problem(desk, &session).await;
                Err(every.map_or_else(
                    || self.refused(refusal, in_database),
                    |every| ShellRefusal::new(RefusalKind::BadAnswer, "BAD_ANSWER", every),
                ))
            }
            Err(refusal) => Err(self.refused(refusal, in_database)),
        }
    }

    /// The answers as checked against `questions`.
    fn ordered(&self, questions: &[Question]) -> AnswerBatch {
        if self.from_flags {
            in_question_order(&self.batch, questions)
        } else {
            self.batch.clone()
        }
    }

    /// A question open in its window at a host linked to the inbox at `inbox` (an agent's own
    /// prompt, an MCP call) is answered there, as the page would: first answer wins. `false`
    /// when no such question waits there (no inbox runs, its host is not linked, another surface
    /// answered first, or its window closed): the caller looks at where the call stands now.
    async fn in_window(&self, desk: &dyn QuestionDesk, inbox: &Path) -> Result<bool, ShellRefusal> {
        let found = desk.find(&self.call_id).await?;
        let open: Vec<_> = (found.iter())
            .filter(|q| q.state == DeskState::Open)
            .collect();
        let ([question], Ok(stream)) = (open.as_slice(), connect(inbox).await) else {
            return Ok(false);
        };
        let batch = self.ordered(&question.questions);
        let answered = answer_in_window(
            stream,
            &question.session,
            &self.call_id,
            batch.clone(),
            self.provenance.clone(),
        );
        match answered.await {
            Ok(()) => Ok(true),
            Err(InWindowRefusal::NotWaiting { .. }) => Ok(false),
            Err(InWindowRefusal::BadAnswer { message, .. }) => {
                let every = answer_problems(&self.call_id, &question.questions, &batch);
                Err(ShellRefusal::new(
                    RefusalKind::BadAnswer,
                    "BAD_ANSWER",
                    every.unwrap_or(message),
                ))
            }
            Err(refusal @ InWindowRefusal::Unreachable(_)) => Err(ShellRefusal::new(
                RefusalKind::Store,
                "INBOX_UNREACHABLE",
                refusal.to_string(),
            )),
        }
    }

    /// Every problem of a refused answer, named against the questions the call asked (the seam
    /// names the first; a person fixing the command wants them all).
    async fn every_problem(&self, desk: &dyn QuestionDesk, session: &str) -> Option<String> {
        let found = desk.find(&self.call_id).await.unwrap_or_default();
        let stored = found.into_iter().find(|q| q.session == session)?.questions;
        answer_problems(&self.call_id, &stored, &self.ordered(&stored))
    }

    /// The session of the desk whose log has the call where a late answer reaches it: the one,
    /// or a refusal saying where the call stands instead (`was_open`: it was in its window when
    /// this began, so a settled call was answered elsewhere meanwhile).
    async fn session_of(
        &self,
        desk: &dyn QuestionDesk,
        was_open: bool,
    ) -> Result<String, ShellRefusal> {
        match desk.sessions_answering(&self.call_id).await?.as_slice() {
            [one] => Ok(one.clone()),
            [] => {
                let found = desk.find(&self.call_id).await?;
                let state = |state| found.iter().any(|q| q.state == state);
                Err(if state(DeskState::Open) {
                    self.in_window_elsewhere()
                } else if state(DeskState::Settled) && was_open {
                    self.answered_elsewhere()
                } else if state(DeskState::Settled) {
                    self.already_answered()
                } else {
                    self.unknown_call()
                })
            }
            several => Err(ShellRefusal::new(
                RefusalKind::Usage,
                "AMBIGUOUS",
                format!(
                    "call {} is continued in several sessions: {}; name the log too",
                    self.call(),
                    visible(&several.join(", "))
                ),
            )),
        }
    }

    /// The desk's refusal, as the person reads it.
    fn refused(&self, refusal: LateRefusal, in_database: bool) -> ShellRefusal {
        match refusal {
            LateRefusal::NotWaiting(NotWaiting::Settled) => self.already_answered(),
            LateRefusal::NotWaiting(NotWaiting::Open) => self.in_window_elsewhere(),
            LateRefusal::NotWaiting(NotWaiting::Closing) => ShellRefusal::new(
                RefusalKind::NotDurable,
                "NOT_DURABLE",
                format!(
                    "call {} {}: try again in a moment; if this lasts, its server could not write its log",
                    self.call(),
                    NotWaiting::Closing.reason()
                ),
            ),
            LateRefusal::NotWaiting(why) => {
                let place = if in_database {
                    "of this session"
                } else {
                    "in this log"
                };
                let unknown = (why == NotWaiting::Unknown)
                    .then(|| format!(" {place} (legacy calls never take late answers)"));
                let message = format!(
                    "call {} {}{}",
                    self.call(),
                    why.reason(),
                    unknown.unwrap_or_default()
                );
                ShellRefusal::new(RefusalKind::NotContinued, "NOT_WAITING", message)
            }
            // A reply an earlier (crashed) session accepted waited in the durable inbox: the
            // desk, the session's host now, admitted it, which settles the question with that
            // first answer.
            LateRefusal::ReplyQueued {
                settled_by: Some(reply),
                ..
            } => ShellRefusal {
                admitted: Some(reply),
                ..ShellRefusal::new(
                    RefusalKind::ReplyQueued,
                    "REPLY_QUEUED",
                    format!(
                        "a reply to call {} was already queued by an earlier session; it has been admitted now and settles the question, so this answer was not used",
                        self.call()
                    ),
                )
            },
            refusal @ LateRefusal::ReplyQueued { .. } => ShellRefusal::new(
                RefusalKind::ReplyQueued,
                "REPLY_QUEUED",
                refusal.to_string(),
            ),
            LateRefusal::BadAnswer(error) => ShellRefusal::new(
                RefusalKind::BadAnswer,
                error.code(),
                visible(error.message()).into_owned(),
            ),
            LateRefusal::UnknownSession(session) => ShellRefusal::new(
                RefusalKind::Store,
                "UNKNOWN_SESSION",
                format!(
                    "no session {session:?}{}",
                    if in_database { " in the database" } else { "" }
                ),
            ),
            LateRefusal::NotLive(error) => ShellRefusal::new(
                RefusalKind::Internal,
                error.code(),
                visible(error.message()).into_owned(),
            ),
            LateRefusal::NoAgent => ShellRefusal::new(
                RefusalKind::Internal,
                "INTERNAL",
                LateRefusal::NoAgent.to_string(),
            ),
            LateRefusal::Undelivered(error) => {
                let message = visible(&error.to_string()).into_owned();
                ShellRefusal {
                    undelivered: Some(error),
                    ..ShellRefusal::new(RefusalKind::Store, "DELIVERY_FAILED", message)
                }
            }
            LateRefusal::Unavailable(error) => error.into(),
        }
    }

    /// The call id, escaped.
    fn call(&self) -> std::borrow::Cow<'_, str> {
        visible(self.call_id.as_str())
    }

    /// `UNKNOWN_CALL`: no session has the call.
    fn unknown_call(&self) -> ShellRefusal {
        ShellRefusal::new(
            RefusalKind::NotContinued,
            "UNKNOWN_CALL",
            format!(
                "no session of the state directory has call {} (`{} pending` lists the questions that wait)",
                self.call(),
                self.program
            ),
        )
    }

    /// `ALREADY_ANSWERED`: the call is settled.
    fn already_answered(&self) -> ShellRefusal {
        ShellRefusal::new(
            RefusalKind::AlreadyAnswered,
            "ALREADY_ANSWERED",
            format!(
                "call {} is answered already: its answer reached the model, and this one was not used",
                self.call()
            ),
        )
    }

    /// `ANSWERED_ELSEWHERE`: in its window, another surface answered first.
    fn answered_elsewhere(&self) -> ShellRefusal {
        ShellRefusal::new(
            RefusalKind::AnsweredElsewhere,
            "ANSWERED_ELSEWHERE",
            format!(
                "call {} was answered elsewhere first (the client's form, the page or a phone): the first answer wins, and this one was not used",
                self.call()
            ),
        )
    }

    /// `IN_WINDOW_ELSEWHERE`: in its window at a process no inbox reaches.
    fn in_window_elsewhere(&self) -> ShellRefusal {
        ShellRefusal::new(
            RefusalKind::InWindowElsewhere,
            "IN_WINDOW_ELSEWHERE",
            format!(
                "call {} is in its window at a process this shell cannot reach (no inbox runs for the state directory, or its server is not linked to it): answer it in the client's own form, or here once its window closes; with `{} inbox` running, the questions asked from then on are answered here in their windows too",
                self.call(),
                self.program
            ),
        )
    }
}
