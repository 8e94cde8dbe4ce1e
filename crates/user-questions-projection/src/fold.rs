//! The fold (SPEC §8.1, §8.3, §8.4): `apply(&State, &SessionEvent) -> Applied`.
//!
//! Every rule is split in two: [`plan`] looks at the state and the event and decides which change,
//! if any, a §8.4 rule makes, without copying anything; [`commit`] performs that change. `apply`
//! clones the state only when there is a change, so `Unchanged` costs no allocation; the replay
//! driver commits in place. Both run the same two functions, so live tracking and replay cannot
//! drift apart.

use user_questions::{AnswerItem, CallId, ErrorCode, Provenance, Question, TOOL_NAME};

use crate::state::{
    ActiveQuestion, ActiveState, RestoreError, SettledQuestion, UserQuestionsState,
    UserQuestionsView,
};
use session_log::{EventBody, ResultError, SessionEvent, SessionHeader, TextReading};

use crate::readers::{declares_timed, questions_from_arguments, questions_from_object_text};

/// The projection key (SPEC §1.7).
pub const PROJECTION_KEY: &str = "userQuestions";

/// The state version (SPEC §8.1). Any change to the fold's semantics or the state's fields bumps
/// it, so that cached checkpoints are refolded.
pub const STATE_VERSION: u32 = 2;

/// What [`apply`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Applied {
    /// No rule changed anything; the caller keeps its state (and publishes nothing).
    Unchanged,
    /// A rule made a change (even if the new state happens to equal the old one).
    Changed(UserQuestionsState),
}

/// The initial state (§8.2). The header is not read: the log reader decides the inherited count
/// from it (§7.2) and passes it here.
pub fn init(_header: &SessionHeader, inherited_event_count: u64) -> UserQuestionsState {
    UserQuestionsState::new(inherited_event_count)
}

/// Applies one committed event (§8.4). Pure: no I/O, no clock.
pub fn apply(state: &UserQuestionsState, event: &SessionEvent) -> Applied {
    match plan(state, event) {
        None => Applied::Unchanged,
        Some(change) => {
            let mut next = state.clone();
            commit(&mut next, change);
            Applied::Changed(next)
        }
    }
}

/// The view of a state (`state.questions`).
pub fn view(state: &UserQuestionsState) -> &UserQuestionsView {
    state.view()
}

/// Restores a cached state (§8.6).
pub fn restore(json: &str) -> Result<UserQuestionsState, RestoreError> {
    UserQuestionsState::restore(json)
}

impl UserQuestionsState {
    /// Applies one event; see [`apply`].
    pub fn apply(&self, event: &SessionEvent) -> Applied {
        apply(self, event)
    }

    /// Applies one event in place; returns whether a rule made a change. Equivalent to [`apply`]
    /// followed by replacing the state on `Changed`.
    pub fn apply_in_place(&mut self, event: &SessionEvent) -> bool {
        match plan(self, event) {
            None => false,
            Some(change) => {
                commit(self, change);
                true
            }
        }
    }
}

/// One §8.4 change. Indices point into `active` as it was when the change was planned.
enum Change<'e> {
    SetTimed(bool),
    /// Remove any active entry with this id and append it with these questions and state.
    Append {
        call_id: &'e CallId,
        questions: Vec<Question>,
        state: ActiveState,
    },
    Continue(usize),
    Settle {
        index: usize,
        answers: Vec<AnswerItem>,
        provenance: Option<&'e Provenance>,
    },
    Drop(usize),
}

fn plan<'e>(state: &UserQuestionsState, event: &'e SessionEvent) -> Option<Change<'e>> {
    if event.seq < state.inherited_event_count() {
        return None;
    }
    let active = &state.view().active;
    let position = |call_id: &CallId| active.iter().position(|a| a.call_id == *call_id);
    match &event.body {
        EventBody::RequestHeader(header) => {
            let timed = header.tools.as_deref().is_some_and(declares_timed);
            (timed != state.timed()).then_some(Change::SetTimed(timed))
        }
        EventBody::ToolCall(call) => {
            if !state.timed() || call.name.as_deref() != Some(TOOL_NAME) {
                return None;
            }
            let call_id = call.call_id.as_ref()?;
            Some(Change::Append {
                call_id,
                questions: questions_from_arguments(call.arguments.as_deref()?)?,
                state: ActiveState::Open,
            })
        }
        EventBody::ToolResult(result) => {
            let index = position(result.call_id.as_ref()?)?;
            let unknown_outcome = matches!(
                &result.error,
                ResultError::Present {
                    code: Some(ErrorCode::ToolOutcomeUnknown)
                }
            );
            if result.text.pending || unknown_outcome {
                return Some(Change::Continue(index));
            }
            match (&result.error, result.is_error, &result.text.answers) {
                (ResultError::Absent, false, Some(answers)) => Some(Change::Settle {
                    index,
                    answers: answers.clone(),
                    provenance: result.provenance.as_ref(),
                }),
                _ => Some(Change::Drop(index)),
            }
        }
        EventBody::Dispatch(dispatch) => {
            if dispatch.name.as_deref() != Some(TOOL_NAME)
                || dispatch.is_error
                || !dispatch.text.pending
            {
                return None;
            }
            let call_id = dispatch.sub_call_id.as_ref()?;
            Some(Change::Append {
                call_id,
                questions: questions_from_object_text(dispatch.arguments.as_deref()?)?,
                state: ActiveState::Continued,
            })
        }
        EventBody::UserMessage(message) => {
            let index = position(message.reply_call_id()?)?;
            Some(Change::Settle {
                index,
                answers: batch_or_empty(&message.text),
                provenance: message.source.as_ref()?.provenance.as_ref(),
            })
        }
        // `turn/*`, `step/*`, inbox edits, seed markers, other tools and unknown types.
        _ => None,
    }
}

fn commit(state: &mut UserQuestionsState, change: Change<'_>) {
    match change {
        Change::SetTimed(timed) => state.set_timed(timed),
        Change::Append {
            call_id,
            questions,
            state: entry_state,
        } => {
            let view = state.view_mut();
            view.active.retain(|a| a.call_id != *call_id);
            view.active.push(ActiveQuestion {
                call_id: call_id.clone(),
                questions,
                state: entry_state,
            });
        }
        Change::Continue(index) => {
            state.view_mut().active[index].state = ActiveState::Continued;
        }
        Change::Settle {
            index,
            answers,
            provenance,
        } => {
            let view = state.view_mut();
            let entry = view.active.remove(index);
            view.settled.push(SettledQuestion {
                call_id: entry.call_id,
                answers,
                provenance: provenance.cloned(),
            });
        }
        Change::Drop(index) => {
            state.view_mut().active.remove(index);
        }
    }
}

/// An answer batch as the fold settles it: the items, or `[]` when a reply carried none.
fn batch_or_empty(text: &TextReading) -> Vec<AnswerItem> {
    text.answers.clone().unwrap_or_default()
}
