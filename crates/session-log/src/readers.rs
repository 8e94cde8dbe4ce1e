//! The readers of SPEC §8.5: questions from tool arguments, pending JSON and answer batches from a
//! first text block, and provenance (§9.1). They are lenient where the reference is (extra keys,
//! repeated keys with the last value winning, any nesting depth) and strict where it is (a present
//! key of the wrong type, including `null`, makes the whole reading fail).

use serde_json::value::RawValue;
use user_questions::{AnswerItem, AnsweredBy, Provenance, Question, QuestionOption};

use crate::lenient::{RawObject, raw_array, raw_is_true, raw_string};
use crate::text::{fix_lone_surrogates, is_json_ws};

/// Reads the questions of an `ask_user_question` call from its `arguments` text (§8.5).
/// `None` means unreadable: the call is not tracked.
pub fn questions_from_arguments(arguments: &str) -> Option<Vec<Question>> {
    let fixed = fix_lone_surrogates(arguments);
    let object = RawObject::parse_str(&fixed)?;
    questions_from_object(&object)
}

/// Reads the questions from an arguments object given as raw JSON (a programmatic dispatch).
pub(crate) fn questions_from_raw_object(raw: &RawValue) -> Option<Vec<Question>> {
    let fixed = fix_lone_surrogates(raw.get());
    let object = RawObject::parse_str(&fixed)?;
    questions_from_object(&object)
}

fn questions_from_object(object: &RawObject<'_>) -> Option<Vec<Question>> {
    let items = raw_array(object.get("questions")?)?;
    if items.is_empty() {
        return None;
    }
    items.into_iter().map(question).collect()
}

fn question(raw: &RawValue) -> Option<Question> {
    let object = RawObject::parse(raw)?;
    let mut question = Question::new(
        raw_string(object.get("id")?)?,
        raw_string(object.get("question")?)?,
    );
    if let Some(header) = object.get("header") {
        question.header = Some(raw_string(header)?);
    }
    if let Some(options) = object.get("options") {
        let options = raw_array(options)?
            .into_iter()
            .map(option)
            .collect::<Option<Vec<_>>>()?;
        question.options = Some(options);
    }
    if let Some(multi) = object.get("multi_select") {
        question.multi_select = Some(raw_bool(multi)?);
    }
    Some(question)
}

fn option(raw: &RawValue) -> Option<QuestionOption> {
    let object = RawObject::parse(raw)?;
    let mut option = QuestionOption::new(raw_string(object.get("label")?)?);
    if let Some(description) = object.get("description") {
        option.description = Some(raw_string(description)?);
    }
    Some(option)
}

fn raw_bool(raw: &RawValue) -> Option<bool> {
    match raw.get() {
        "true" => Some(true),
        "false" => Some(false),
        _ => None,
    }
}

/// What the fold needs from a first text block (§8.5): whether it is pending JSON, and the answer
/// batch it holds, if any. The default means "no text, or no JSON object".
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TextReading {
    /// The text parses as a JSON object whose `pending` is the boolean `true`.
    pub pending: bool,
    /// The text parses as a JSON object whose `answers` is an array of strict items.
    pub answers: Option<Vec<AnswerItem>>,
}

impl TextReading {
    /// Reads a decoded text block.
    pub fn read(text: &str) -> Self {
        let fixed = fix_lone_surrogates(text);
        let Some(object) = RawObject::parse_str(&fixed) else {
            return Self::default();
        };
        Self {
            pending: object.get("pending").is_some_and(raw_is_true),
            answers: object.get("answers").and_then(answer_items),
        }
    }

    /// Reads the raw JSON string literal of a text block without decoding it when it cannot hold a
    /// JSON object: most tool outputs are long prose, and only a text whose first significant
    /// character is `{` needs decoding. `None` when the raw value is not a string.
    pub(crate) fn read_raw(raw: &RawValue) -> Option<Self> {
        let literal = raw.get().as_bytes();
        if literal.first() != Some(&b'"') {
            return None;
        }
        let mut i = 1;
        loop {
            match literal.get(i) {
                Some(b) if is_json_ws(*b) => i += 1,
                Some(b'\\') => match literal.get(i + 1) {
                    Some(b'n' | b'r' | b't') => i += 2,
                    // `\u` escapes (possibly whitespace or `{`) and anything else: decode to be sure.
                    _ => break,
                },
                Some(b'{') => break,
                _ => return Some(Self::default()),
            }
        }
        Some(raw_string(raw).map_or_else(Self::default, |text| Self::read(&text)))
    }
}

/// Reads an `answers` array of strict items (§8.5): exactly `id` (string), `selected` (array of
/// strings) and optionally `custom` (string). Any other key or a wrong type means no batch.
fn answer_items(raw: &RawValue) -> Option<Vec<AnswerItem>> {
    raw_array(raw)?.into_iter().map(answer_item).collect()
}

fn answer_item(raw: &RawValue) -> Option<AnswerItem> {
    let object = RawObject::parse(raw)?;
    if object
        .keys()
        .any(|k| !matches!(k, "id" | "selected" | "custom"))
    {
        return None;
    }
    let id = raw_string(object.get("id")?)?;
    let selected = raw_array(object.get("selected")?)?
        .into_iter()
        .map(raw_string)
        .collect::<Option<Vec<_>>>()?;
    let custom = match object.get("custom") {
        Some(custom) => Some(raw_string(custom)?),
        None => None,
    };
    Some(AnswerItem {
        id,
        selected,
        custom,
    })
}

/// Reads a well-formed provenance `{"answerer":"…","answeredBy":"human"|"rule"}` (§9.1); anything
/// else (extra keys, wrong types) is `None` and the settled entry carries no provenance.
pub(crate) fn provenance(raw: &RawValue) -> Option<Provenance> {
    let object = RawObject::parse(raw)?;
    if object
        .keys()
        .any(|k| !matches!(k, "answerer" | "answeredBy"))
    {
        return None;
    }
    let answerer = raw_string(object.get("answerer")?)?;
    let answered_by = match raw_string(object.get("answeredBy")?)?.as_str() {
        "human" => AnsweredBy::Human,
        "rule" => AnsweredBy::Rule,
        _ => return None,
    };
    Some(Provenance {
        answerer,
        answered_by,
    })
}
