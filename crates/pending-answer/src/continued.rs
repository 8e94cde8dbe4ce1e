//! Awaiting a call's continuation: the one rule of the way back for an answer given as a window
//! closed, with its one deadline.
//!
//! A timed question whose window closed is not answerable late at once: the seam publishes
//! `pending` when the window closes, and only once the host has committed the call's pending
//! result does the projection mark it continued, and late answers publish `continued`
//! ([`QuestionEventKind::Continued`]). An answer that comes in between (a person who pressed
//! Enter just as the window closed) is refused as [`NotWaiting::Closing`]; a desk takes it through
//! [`when_continued`], which awaits the announcement (at most [`CONTINUED_WITHIN`]) and tries
//! again. Nothing polls: the announcement wakes the wait.

use std::time::Duration;

use user_questions::{
    CallId, QuestionEventKind, QuestionEvents, Received, SessionId, UserQuestions,
};

use crate::outcome::{LateRefusal, NotWaiting};

/// The longest an answer given as a call's window closed waits for the host to announce the call
/// continued (its pending result durable). The announcement normally follows within
/// milliseconds; a host whose log failed never makes it, and the answer is then refused as the
/// host's own check says.
pub const CONTINUED_WITHIN: Duration = Duration::from_secs(10);

/// Runs `attempt` (a desk's way to take an answer: queue it in a live session, say), and when it
/// is refused because the call is [closing](NotWaiting::Closing), waits for `call_id` of `session`
/// to be announced continued in `seam`'s events (or to end otherwise, or for
/// [`CONTINUED_WITHIN`]) and runs it once more: its second outcome is the answer. The events are
/// subscribed before the first attempt, so the announcement cannot be missed.
///
/// Cancel safe: dropping the future drops the attempt in progress (each attempt decides what a
/// dropped future leaves).
pub async fn when_continued<T, F, A>(
    seam: &UserQuestions,
    session: &SessionId,
    call_id: &CallId,
    mut attempt: F,
) -> Result<T, LateRefusal>
where
    F: FnMut() -> A,
    A: Future<Output = Result<T, LateRefusal>>,
{
    let mut events = seam.subscribe();
    match attempt().await {
        Err(LateRefusal::NotWaiting(NotWaiting::Closing)) => {
            let waited = tokio::time::timeout(
                CONTINUED_WITHIN,
                continued(&mut events, Some(session), call_id),
            )
            .await;
            tracing::debug!(%call_id, ?waited, "an answer given as the window closed waited for the continuation");
            attempt().await
        }
        outcome => outcome,
    }
}

/// How the wait for a call's continuation ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Continuation {
    /// The call is continued: a late answer is taken now.
    Continued,
    /// The call ended some other way (answered, cancelled): no late answer will be taken.
    Ended,
    /// Events were lost (the subscriber fell behind) or the seam is gone: the caller cannot tell,
    /// and submits anyway, so the host's own check decides.
    Unknown,
}

/// Waits until `call_id` of `session` is continued, or ends otherwise, reading the seam's
/// lifecycle events from `events`.
///
/// `events` must have been subscribed before the call's window could close (a surface
/// subscribes when it shows the question), so the `continued` event cannot be missed; events of
/// other calls are skipped. Cancel safe: dropping the future loses no event of this call that
/// it had not read yet.
pub async fn continued(
    events: &mut QuestionEvents,
    session: Option<&SessionId>,
    call_id: &CallId,
) -> Continuation {
    loop {
        let event = match events.recv().await {
            Some(Received::Event(event)) => event,
            Some(Received::Missed(_)) | None => return Continuation::Unknown,
        };
        let ours = event.call_id.as_ref() == Some(call_id)
            && session.is_none_or(|session| event.session_id.as_ref() == Some(session));
        if !ours {
            continue;
        }
        match event.kind {
            QuestionEventKind::Continued => return Continuation::Continued,
            QuestionEventKind::Answered { .. } | QuestionEventKind::Cancelled { .. } => {
                return Continuation::Ended;
            }
            QuestionEventKind::Opened { .. }
            | QuestionEventKind::Claimed { .. }
            | QuestionEventKind::Pending => {}
        }
    }
}
