//! The readers of SPEC §8.5 that every decoded text block and source gets: pending JSON and answer
//! batches from a first text block, and provenance (§9.1). (What an `ask_user_question` call's
//! arguments and a tool list declare is the projection's to read.) They are lenient where the
//! reference is (extra keys, repeated keys with the last value winning, any nesting depth) and
//! strict where it is (a present key of the wrong type, including `null`, makes the whole reading
//! fail).

use serde_json::value::RawValue;
use user_questions::{AnswerItem, AnsweredBy, Provenance};

use crate::lenient::{RawObject, raw_array, raw_is_true, raw_string};
use crate::text::{fix_lone_surrogates, is_json_ws};

/// What the fold needs from a first text block (§8.5): whether it is pending JSON, and the answer
/// batch it holds, if any; and the text itself when it is a JSON object (the only texts anyone
/// interprets: a pending result, an answer batch, a late reply). The default means "no text, or
/// no JSON object".
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TextReading {
    /// The text parses as a JSON object whose `pending` is the boolean `true`.
    pub pending: bool,
    /// The text parses as a JSON object whose `answers` is an array of strict items.
    pub answers: Option<Vec<AnswerItem>>,
    /// The text, when it parses as a JSON object (e.g. the `answer_to_pending_question` JSON a
    /// model reads, or a tool's answers result).
    pub json: Option<String>,
}

impl TextReading {
    /// Reads a decoded text block.
    pub fn read(text: &str) -> Self {
        Self::read_owned(text.to_owned())
    }

    fn read_owned(text: String) -> Self {
        let (pending, answers) = {
            let fixed = fix_lone_surrogates(&text);
            let Some(object) = RawObject::parse_str(&fixed) else {
                return Self::default();
            };
            (
                object.get("pending").is_some_and(raw_is_true),
                object.get("answers").and_then(answer_items),
            )
        };
        Self {
            pending,
            answers,
            json: Some(text),
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
        Some(raw_string(raw).map_or_else(Self::default, Self::read_owned))
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
