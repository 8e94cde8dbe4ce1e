//! Awaiting a call's continuation: the helper an answering surface uses to take a late answer
//! the moment it may, instead of polling.
//!
//! A timed question whose window closed is not answerable late at once: the seam publishes
//! `pending` when the window closes, and only once the host has committed the call's pending
//! result does the projection mark it continued, and late answers publish `continued`
//! ([`QuestionEventKind::Continued`]). A surface that got an answer in between (a person who
//! pressed Enter just as the window closed) awaits [`continued`] and then submits.

use user_questions::{CallId, QuestionEventKind, QuestionEvents, Received, SessionId};

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
