//! Checks on question batches and answer batches (SPEC §4.3 step 4, §9.2, §9.3).
//!
//! Batches hold at most a handful of questions, so the checks scan linearly instead of building
//! sets: no allocation on the success path.

use std::borrow::Cow;

use crate::config::QuestionLimits;
use crate::error::UserQuestionError;
use crate::ids::CallId;
use crate::util::quoted;
use crate::vocab::{AnswerBatch, AnswerItem, Question, QuestionIntent};

/// Checks every intent (SPEC §4.3 step 4): `approve` must name one of that question's own option
/// labels, then `detail` must be present. Errors are `BAD_INTENT`.
pub fn check_intents(questions: &[Question]) -> Result<(), UserQuestionError> {
    for question in questions {
        let Some(intent) = &question.intent else {
            continue;
        };
        match intent {
            QuestionIntent::PlanReview { approve, .. } => {
                if !question.options().iter().any(|o| &o.label == approve) {
                    return Err(UserQuestionError::bad_intent_approve(
                        &question.id,
                        intent.kind(),
                        approve,
                    ));
                }
            }
        }
        if question.detail.is_none() {
            return Err(UserQuestionError::bad_intent_detail(
                &question.id,
                intent.kind(),
            ));
        }
    }
    Ok(())
}

/// The hard caps of SPEC §9.3, in order: a repeated id, too many questions, an options count
/// that is neither 0 nor within `min_options..=max_options`. Errors are `BAD_QUESTIONS`.
///
/// The seam runs this in `ask`; the timed tool runs it before dispatch so that a bad batch never
/// registers a wait.
pub fn check_question_limits(
    questions: &[Question],
    limits: &QuestionLimits,
) -> Result<(), UserQuestionError> {
    for (at, question) in questions.iter().enumerate() {
        if questions[..at].iter().any(|q| q.id == question.id) {
            return Err(UserQuestionError::repeated_question_id(&question.id));
        }
    }
    if questions.len() > limits.max_questions {
        return Err(UserQuestionError::too_many_questions(
            questions.len(),
            limits.max_questions,
        ));
    }
    for question in questions {
        let count = question.options().len();
        if count != 0 && !(limits.min_options..=limits.max_options).contains(&count) {
            return Err(UserQuestionError::options_out_of_range(
                &question.id,
                count,
                limits.min_options,
                limits.max_options,
            ));
        }
    }
    for question in questions {
        if let Some(what) = unanswerable(question) {
            return Err(UserQuestionError::unanswerable_question(
                &shown_id(&question.id),
                &what,
            ));
        }
    }
    Ok(())
}

/// The longest question id accepted, in UTF-8 bytes: ids are keys, echoed in every answer.
pub const MAX_ID_BYTES: usize = 128;
/// The longest question text accepted, in UTF-8 bytes: a question a person reads on a card.
pub const MAX_QUESTION_BYTES: usize = 4096;
/// The longest option label accepted, in UTF-8 bytes: a label is shown and returned as the answer.
pub const MAX_LABEL_BYTES: usize = 256;

/// An id as an error message may quote it: at most [`MAX_ID_BYTES`] of it.
fn shown_id(id: &str) -> String {
    if id.len() <= MAX_ID_BYTES {
        return id.to_owned();
    }
    let mut end = MAX_ID_BYTES;
    while !id.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &id[..end])
}

/// What makes a question unanswerable as written, if anything (SPEC §9.3, extended): where the
/// answer would be ambiguous or the question cannot be shown, a clear error the model can fix;
/// nothing is guessed on its behalf.
fn unanswerable(question: &Question) -> Option<String> {
    let id = &question.id;
    if id.trim().is_empty() {
        return Some("the id is empty. Give every question a short, unique id.".to_owned());
    }
    if id.len() > MAX_ID_BYTES {
        return Some(format!(
            "the id is {} bytes (allowed: at most {MAX_ID_BYTES}). Use a short id.",
            id.len()
        ));
    }
    if id.chars().any(char::is_control) {
        return Some("the id holds control characters. Use letters, digits, - or _.".to_owned());
    }
    if question.question.trim().is_empty() {
        return Some("the question text is empty. Say what you are asking.".to_owned());
    }
    if question.question.len() > MAX_QUESTION_BYTES {
        return Some(format!(
            "the question is {} bytes (allowed: at most {MAX_QUESTION_BYTES}). Ask it shorter.",
            question.question.len()
        ));
    }
    let options = question.options();
    for (at, option) in options.iter().enumerate() {
        let label = &option.label;
        if label.trim().is_empty() {
            return Some(format!(
                "option {} has an empty label. Give every option a label.",
                at + 1
            ));
        }
        if label.len() > MAX_LABEL_BYTES {
            return Some(format!(
                "option {} has a label of {} bytes (allowed: at most {MAX_LABEL_BYTES}). Put \
                 details into its description.",
                at + 1,
                label.len()
            ));
        }
        if options[..at].iter().any(|o| o.label == *label) {
            return Some(format!(
                "two options are labelled {}; an answer names its option by label, so each \
                 label must be unique.",
                quoted(label)
            ));
        }
    }
    None
}

/// Truncates every header longer than `header_max_chars` Unicode scalar values to that many
/// (no ellipsis). Borrows when nothing needs truncating.
pub fn truncate_headers<'q>(
    questions: &'q [Question],
    limits: &QuestionLimits,
) -> Cow<'q, [Question]> {
    let too_long = |q: &Question| {
        q.header
            .as_deref()
            .is_some_and(|h| h.chars().nth(limits.header_max_chars).is_some())
    };
    if !questions.iter().any(too_long) {
        return Cow::Borrowed(questions);
    }
    let truncated = questions
        .iter()
        .map(|q| {
            let mut q = q.clone();
            if let Some(header) = &mut q.header
                && let Some((cut, _)) = header.char_indices().nth(limits.header_max_chars)
            {
                tracing::debug!(question = %q.id, max = limits.header_max_chars, "header truncated");
                header.truncate(cut);
            }
            q
        })
        .collect();
    Cow::Owned(truncated)
}

/// One way an answer batch does not fit its questions (SPEC §9.2). `Display` is the violation as
/// `BAD_ANSWER` states it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AnswerViolation {
    /// Rule 1: an item names no question of the call.
    UnknownId {
        /// The item's id.
        id: String,
    },
    /// Rule 2: an id answered twice.
    RepeatedId {
        /// The id.
        id: String,
    },
    /// Rule 3: a question without an item.
    Missing {
        /// The question's id.
        id: String,
    },
    /// Rule 3: the item count differs from the question count.
    Count {
        /// Items.
        answers: usize,
        /// Questions.
        questions: usize,
    },
    /// Rule 4: a label that is not one of the question's options.
    UnknownLabel {
        /// The label.
        label: String,
        /// The question's id.
        id: String,
    },
    /// Rule 5: several labels for a single-select question.
    SeveralLabels {
        /// The question's id.
        id: String,
        /// How many.
        count: usize,
    },
    /// Rule 6: custom text over the cap.
    CustomTooLong {
        /// The question's id.
        id: String,
        /// Its length in bytes.
        bytes: usize,
        /// The cap.
        max: usize,
    },
}

impl std::fmt::Display for AnswerViolation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::UnknownId { id } => write!(f, "unknown question id {}", quoted(id)),
            Self::RepeatedId { id } => {
                write!(f, "question id {} is answered more than once", quoted(id))
            }
            Self::Missing { id } => write!(
                f,
                "question {} has no answer; answer each question exactly once",
                quoted(id)
            ),
            Self::Count { answers, questions } => write!(
                f,
                "{answers} answers for {questions} questions; answer each question exactly once"
            ),
            Self::UnknownLabel { label, id } => write!(
                f,
                "label {} is not an option of question {}",
                quoted(label),
                quoted(id)
            ),
            Self::SeveralLabels { id, count } => write!(
                f,
                "single-select question {} has {count} labels (allowed: at most 1)",
                quoted(id)
            ),
            Self::CustomTooLong { id, bytes, max } => write!(
                f,
                "custom text of question {} is {bytes} bytes (allowed: at most {max})",
                quoted(id)
            ),
        }
    }
}

/// Every violation of an answer batch against its questions (SPEC §9.2), in rule order and,
/// within a rule, in item order: what [`validate_answers`] reports the first of. A surface that
/// shows a person their mistakes shows them all at once with this.
pub fn answer_violations(
    questions: &[Question],
    batch: &AnswerBatch,
    limits: &QuestionLimits,
) -> Vec<AnswerViolation> {
    let items = &batch.answers;
    let mut violations = Vec::new();
    // Rule 1: every item names a question of the call.
    for item in items {
        if !questions.iter().any(|q| q.id == item.id) {
            violations.push(AnswerViolation::UnknownId {
                id: item.id.clone(),
            });
        }
    }
    // Rule 2: no id twice.
    for (at, item) in items.iter().enumerate() {
        let first_repeat = items[..at].iter().filter(|e| e.id == item.id).count() == 1;
        if first_repeat {
            violations.push(AnswerViolation::RepeatedId {
                id: item.id.clone(),
            });
        }
    }
    // Rule 3: every question has an item, and the counts agree.
    let mut missing = false;
    for question in questions {
        if !items.iter().any(|item| item.id == question.id) {
            missing = true;
            violations.push(AnswerViolation::Missing {
                id: question.id.clone(),
            });
        }
    }
    if !missing && items.len() != questions.len() {
        violations.push(AnswerViolation::Count {
            answers: items.len(),
            questions: questions.len(),
        });
    }
    let paired = || {
        items
            .iter()
            .filter_map(|item| Some((item, questions.iter().find(|q| q.id == item.id)?)))
    };
    // Rule 4: labels come from the question's options.
    for (item, question) in paired() {
        for label in &item.selected {
            if !question.options().iter().any(|o| &o.label == label) {
                violations.push(AnswerViolation::UnknownLabel {
                    label: label.clone(),
                    id: question.id.clone(),
                });
            }
        }
    }
    // Rule 5: single-select questions take at most one label.
    for (item, question) in paired() {
        if !question.is_multi_select() && item.selected.len() > 1 {
            violations.push(AnswerViolation::SeveralLabels {
                id: question.id.clone(),
                count: item.selected.len(),
            });
        }
    }
    // Rule 6: custom text within the size cap.
    for (item, question) in paired() {
        if let Some(custom) = &item.custom
            && custom.len() > limits.custom_max_bytes
        {
            violations.push(AnswerViolation::CustomTooLong {
                id: question.id.clone(),
                bytes: custom.len(),
                max: limits.custom_max_bytes,
            });
        }
    }
    violations
}

/// Validates an answer batch against its questions (SPEC §9.2, first violation wins) and
/// normalises it to typed `{id, selected, custom?}` items in the submitted order.
///
/// `call_id` is named in the message when the request is keyed. Errors are `BAD_ANSWER`.
pub fn validate_answers(
    questions: &[Question],
    batch: &AnswerBatch,
    limits: &QuestionLimits,
    call_id: Option<&CallId>,
) -> Result<AnswerBatch, UserQuestionError> {
    if let Some(first) = answer_violations(questions, batch, limits).first() {
        return Err(UserQuestionError::bad_answer(
            call_id,
            questions.len(),
            &first.to_string(),
        ));
    }
    let items = &batch.answers;
    Ok(AnswerBatch {
        answers: items
            .iter()
            .map(|item| AnswerItem {
                id: item.id.clone(),
                selected: item.selected.clone(),
                custom: item.custom.clone(),
            })
            .collect(),
    })
}
