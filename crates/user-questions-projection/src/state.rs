//! The projection state (SPEC §8.2) and its strict restore from a checkpoint (§8.6).
//!
//! Serialisation is exact: field order is key order, and an unset optional key is absent. The
//! state has no `Deserialize`: the only way in from JSON is [`UserQuestionsState::restore`], which
//! refuses anything but the exact shape, so a cached state can never smuggle in what the fold
//! could not have produced.

use std::collections::HashSet;

use serde::{Deserialize, Deserializer, Serialize};
use user_questions::{AnswerItem, CallId, Provenance, Question, QuestionOption};

use session_log::MAX_INHERITED_EVENT_COUNT;

/// The projection state: `{"inheritedEventCount":…,"timed":…,"questions":{"active":[…],"settled":[…]}}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UserQuestionsState {
    inherited_event_count: u64,
    timed: bool,
    questions: UserQuestionsView,
}

/// The view (`state.questions`): open and continued calls, and settled answers.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct UserQuestionsView {
    /// Open and continued calls, in ask order, with unique call ids.
    pub active: Vec<ActiveQuestion>,
    /// Settled calls, in settlement order (a call id may appear more than once).
    pub settled: Vec<SettledQuestion>,
}

/// An active call: `{"callId":…,"questions":[…],"state":"open"|"continued"}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ActiveQuestion {
    /// The tool call (or programmatic sub-call) id.
    pub call_id: CallId,
    /// The questions, as asked (at least one).
    pub questions: Vec<Question>,
    /// Open or continued.
    pub state: ActiveState,
}

/// Whether an active call can still be answered in time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ActiveState {
    /// The tool call is running: it can be answered in the foreground.
    Open,
    /// The tool call ended without an answer: only a late answer can settle it.
    Continued,
}

/// A settled call: `{"callId":…,"answers":[…],"provenance"?:{…}}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SettledQuestion {
    /// The call id.
    pub call_id: CallId,
    /// The answers (`[]` when a reply carried no readable batch).
    pub answers: Vec<AnswerItem>,
    /// Who answered, when the log recorded it (§9.1).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provenance: Option<Provenance>,
}

/// Where one call stands in the projection: the one answer every reader asks for (late answers
/// before they queue a reply, the MCP companion before it fetches one, the database ledger when
/// it records a question's state), from [`UserQuestionsState::standing`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Standing<'a> {
    /// Its tool call is running: only its own call (its foreground window) takes the answer.
    Open(&'a ActiveQuestion),
    /// Its tool call ended pending: only a late answer settles it (SPEC §4.8).
    Continued(&'a ActiveQuestion),
    /// Settled (in its window, or by an admitted late reply): the first settlement of the call.
    Settled(&'a SettledQuestion),
    /// The projection does not know the call: never asked here, a legacy call, or one that ended
    /// without an answer and without going pending.
    Unknown,
}

impl<'a> Standing<'a> {
    /// The active entry of an open or continued call.
    pub fn active(self) -> Option<&'a ActiveQuestion> {
        match self {
            Self::Open(active) | Self::Continued(active) => Some(active),
            Self::Settled(_) | Self::Unknown => None,
        }
    }
}

/// Why a cached state was refused (§8.6). The host then refolds from the log.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RestoreError {
    /// Not the exact §8.2 shape (a missing or extra key, a wrong type, an unknown state).
    #[error("not a userQuestions state: {0}")]
    Shape(String),
    /// An empty `callId`.
    #[error("a {list} entry has an empty callId")]
    EmptyCallId {
        /// `active` or `settled`.
        list: &'static str,
    },
    /// Two active entries with one `callId`.
    #[error("callId {0:?} is active twice")]
    DuplicateActive(CallId),
    /// An active entry without questions.
    #[error("active callId {0:?} has no questions")]
    NoQuestions(CallId),
    /// `inheritedEventCount` above 2^53 − 1.
    #[error("inheritedEventCount {0} is above 2^53 - 1")]
    InheritedEventCount(u64),
}

impl UserQuestionsState {
    /// The initial state: nothing asked, legacy, with the given inherited prefix (§8.2).
    pub fn new(inherited_event_count: u64) -> Self {
        Self {
            inherited_event_count,
            timed: false,
            questions: UserQuestionsView::default(),
        }
    }

    /// Events with a `seq` below this belong to a fork's parent and are ignored.
    pub fn inherited_event_count(&self) -> u64 {
        self.inherited_event_count
    }

    /// Whether the `request/header` in effect declares the timed schema.
    pub fn timed(&self) -> bool {
        self.timed
    }

    /// The view: active and settled calls.
    pub fn view(&self) -> &UserQuestionsView {
        &self.questions
    }

    /// Where `call_id` stands: open or continued while it is active (a call asked again after
    /// it settled is active again), else settled, else unknown.
    pub fn standing(&self, call_id: &CallId) -> Standing<'_> {
        if let Some(active) = self.active(call_id) {
            return match active.state {
                ActiveState::Open => Standing::Open(active),
                ActiveState::Continued => Standing::Continued(active),
            };
        }
        self.questions
            .settled
            .iter()
            .find(|s| s.call_id == *call_id)
            .map_or(Standing::Unknown, Standing::Settled)
    }

    /// The active entry for a call, if any.
    pub fn active(&self, call_id: &CallId) -> Option<&ActiveQuestion> {
        self.questions.active.iter().find(|a| a.call_id == *call_id)
    }

    /// The continued entry for a call: the only calls a late answer may settle (§4.8).
    pub fn continued(&self, call_id: &CallId) -> Option<&ActiveQuestion> {
        self.active(call_id)
            .filter(|a| a.state == ActiveState::Continued)
    }

    /// Whether `call_id` was settled (it may have been asked again since, and be active too).
    pub fn is_settled(&self, call_id: &CallId) -> bool {
        self.questions.settled.iter().any(|s| s.call_id == *call_id)
    }

    /// The state as compact JSON.
    pub fn to_json(&self) -> String {
        // Serialising plain strings, booleans and integers cannot fail.
        serde_json::to_string(self).unwrap_or_default()
    }

    /// Restores a cached state, accepting only the exact §8.2 shape (§8.6): no extra keys at any
    /// level, no `null` for an optional key, non-empty and (among active entries) unique call ids,
    /// at least one question per active entry. Absent keys stay absent.
    pub fn restore(json: &str) -> Result<Self, RestoreError> {
        let dto: StateDto =
            serde_json::from_str(json).map_err(|e| RestoreError::Shape(e.to_string()))?;
        if dto.inherited_event_count > MAX_INHERITED_EVENT_COUNT {
            return Err(RestoreError::InheritedEventCount(dto.inherited_event_count));
        }
        let mut seen = HashSet::new();
        let mut active = Vec::with_capacity(dto.questions.active.len());
        for entry in dto.questions.active {
            if entry.call_id.is_empty() {
                return Err(RestoreError::EmptyCallId { list: "active" });
            }
            if !seen.insert(entry.call_id.clone()) {
                return Err(RestoreError::DuplicateActive(CallId::from(entry.call_id)));
            }
            if entry.questions.is_empty() {
                return Err(RestoreError::NoQuestions(CallId::from(entry.call_id)));
            }
            active.push(ActiveQuestion {
                call_id: CallId::from(entry.call_id),
                questions: entry.questions.into_iter().map(Into::into).collect(),
                state: entry.state,
            });
        }
        let mut settled = Vec::with_capacity(dto.questions.settled.len());
        for entry in dto.questions.settled {
            if entry.call_id.is_empty() {
                return Err(RestoreError::EmptyCallId { list: "settled" });
            }
            settled.push(SettledQuestion {
                call_id: CallId::from(entry.call_id),
                answers: entry.answers.into_iter().map(Into::into).collect(),
                provenance: entry.provenance,
            });
        }
        Ok(Self {
            inherited_event_count: dto.inherited_event_count,
            timed: dto.timed,
            questions: UserQuestionsView { active, settled },
        })
    }

    pub(crate) fn set_timed(&mut self, timed: bool) {
        self.timed = timed;
    }

    pub(crate) fn view_mut(&mut self) -> &mut UserQuestionsView {
        &mut self.questions
    }
}

// Strict DTOs for restore: every struct denies unknown fields, and optional keys use
// `present` so that a `null` is a type error rather than "absent".

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct StateDto {
    inherited_event_count: u64,
    timed: bool,
    questions: ViewDto,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ViewDto {
    active: Vec<ActiveDto>,
    settled: Vec<SettledDto>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ActiveDto {
    call_id: String,
    questions: Vec<QuestionDto>,
    state: ActiveState,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct SettledDto {
    call_id: String,
    answers: Vec<AnswerDto>,
    #[serde(default, deserialize_with = "present")]
    provenance: Option<Provenance>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct QuestionDto {
    id: String,
    question: String,
    #[serde(default, deserialize_with = "present")]
    detail: Option<String>,
    #[serde(default, deserialize_with = "present")]
    header: Option<String>,
    #[serde(default, deserialize_with = "present")]
    options: Option<Vec<OptionDto>>,
    #[serde(default, deserialize_with = "present")]
    multi_select: Option<bool>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct OptionDto {
    label: String,
    #[serde(default, deserialize_with = "present")]
    description: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AnswerDto {
    id: String,
    selected: Vec<String>,
    #[serde(default, deserialize_with = "present")]
    custom: Option<String>,
}

/// An optional key that, when present, must hold a value of the type (not `null`).
fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
}

impl From<QuestionDto> for Question {
    fn from(dto: QuestionDto) -> Self {
        let mut question = Question::new(dto.id, dto.question);
        question.detail = dto.detail;
        question.header = dto.header;
        question.options = dto.options.map(|options| {
            options
                .into_iter()
                .map(|o| QuestionOption {
                    label: o.label,
                    description: o.description,
                })
                .collect()
        });
        question.multi_select = dto.multi_select;
        question
    }
}

impl From<AnswerDto> for AnswerItem {
    fn from(dto: AnswerDto) -> Self {
        AnswerItem {
            id: dto.id,
            selected: dto.selected,
            custom: dto.custom,
        }
    }
}
