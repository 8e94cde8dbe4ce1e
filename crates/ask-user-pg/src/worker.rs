//! Admission: the step that turns accepted answers into admitted replies, run by whichever
//! process holds the session's lease (a worker, or `ask-user answer` when no worker does).
//!
//! Under the lease, each accepted answer goes through `LateAnswers::answer` (which appends it to
//! the session's durable inbox), then one turn claims and admits every queued reply. The
//! `user/message` of each is appended in the transaction that marks its answer admitted, so:
//! a crash before that commit leaves the answer unadmitted (the next owner admits it: a reply
//! already in the inbox is admitted as it is, never queued twice), and a retry after it finds
//! nothing to do.

use ask_user_host::{HostError, HostRuntime, SessionOptions};
use session_log::StoreError;
use user_questions::{AskError, ErrorCode, SessionId};

use crate::PgError;
use crate::store::PgStore;

/// What one admission pass did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Admitted {
    /// Replies admitted (each settles its question).
    pub admitted: usize,
    /// Accepted answers the session could not take (its projection no longer shows the question
    /// as continued); they stay in the ledger, unadmitted.
    pub refused: usize,
    /// Another process holds the session's lease: it admits them.
    pub busy: bool,
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
    /// The seam refused an answer for a reason other than a reply already queued.
    #[error(transparent)]
    Ask(#[from] AskError),
}

/// Admits the accepted answers of session `name` if this process can take its lease.
/// `runtime` must be a runtime over `store`.
pub fn admit_answers(
    runtime: &HostRuntime,
    store: &PgStore,
    name: &str,
) -> Result<Admitted, AdmitError> {
    if store.unadmitted(name)?.is_empty() {
        return Ok(Admitted::default());
    }
    let options = SessionOptions::named(SessionId::from(name));
    let host = match runtime.open(name, options) {
        Ok((host, _)) => host,
        Err(HostError::Store(StoreError::Locked { .. })) => {
            return Ok(Admitted {
                busy: true,
                ..Admitted::default()
            });
        }
        Err(error) => return Err(error.into()),
    };
    // Read again under the lease: another process may have admitted some meanwhile.
    let mut refused = 0;
    for answer in store.unadmitted(name)? {
        match host.late_answers().answer(
            &host.agent(),
            &answer.call_id,
            answer.batch,
            answer.provenance,
        ) {
            Ok(true) => {}
            Ok(false) => {
                tracing::warn!(session = name, call_id = %answer.call_id, "accepted answer for a question that is not continued; left unadmitted");
                refused += 1;
            }
            // Queued by an earlier owner that stopped before admitting it: admitted below.
            Err(AskError::Question(error)) if error.is(&ErrorCode::ReplyQueued) => {}
            Err(error) => return Err(error.into()),
        }
    }
    let replies = host.begin_turn()?;
    if !replies.is_empty() {
        host.begin_step()?;
        for reply in &replies {
            host.admit(reply)?;
        }
    }
    host.end_turn("completed")?;
    Ok(Admitted {
        admitted: replies.len(),
        refused,
        busy: false,
    })
}
