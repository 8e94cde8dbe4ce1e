//! One MCP elicitation form per question batch, and the answer batch read back from it.
//!
//! The mapping (one form per batch, fields in question order):
//!
//! | question | field `qN` | field `qN_other` |
//! |---|---|---|
//! | single-select options | a titled single-select enum (`oneOf` of `{const: label, title}`) | an optional string: "Other" |
//! | multi-select options | a titled multi-select array (`items.anyOf`) | an optional string: "Other" |
//! | no options | a string | none |
//!
//! That is the form for clients of protocol 2025-11-25 or later ([`FormStyle::Titled`]). Older
//! clients ([`FormStyle::Legacy`], 2025-06-18) know only primitive fields: a single-select
//! question is then a string `enum` with `enumNames`, and a multi-select question one boolean
//! field `qN_cM` per option.
//!
//! `N` is the question's 1-based position, zero-padded to two digits so that the fields sort in
//! question order (the schema's properties are an ordered map). The `const` of a choice is its
//! label verbatim; its `title` shows the label and its description. A field's `title` is the
//! question's header and its `description` the question text and detail (without a header, the
//! text is the title and the detail the description). There is **no `default`** anywhere (a
//! pre-filled form turns a neutral question into one-click consent) and nothing is required, so
//! any question can be skipped.

use std::collections::BTreeSet;
use std::fmt;

use serde_json::{Map, Value, json};
use user_questions::{AnswerBatch, AnswerItem, Question};

use crate::util::quote;

/// The message shown above the form.
pub const FORM_MESSAGE: &str = "The assistant is asking you. Answer what you can; you may leave any question empty to skip it.";

/// Suffix of the free-text field that goes with a question that has options.
const OTHER_SUFFIX: &str = "_other";

/// The field key of the question at `index` (0-based).
fn key(index: usize) -> String {
    format!("q{:02}", index + 1)
}

fn options(question: &Question) -> Option<&[user_questions::QuestionOption]> {
    question.options.as_deref().filter(|o| !o.is_empty())
}

fn multi(question: &Question) -> bool {
    question.multi_select == Some(true)
}

/// Which field shapes a client understands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FormStyle {
    /// Titled enums and multi-select arrays (protocol 2025-11-25 and later).
    Titled,
    /// Primitive fields only: `enum` + `enumNames`, one boolean per multi-select option
    /// (protocol 2025-06-18).
    Legacy,
}

impl FormStyle {
    /// The style for a client that asked for protocol `version` (`YYYY-MM-DD`).
    pub fn for_protocol(version: &str) -> Self {
        if version >= "2025-11-25" {
            Self::Titled
        } else {
            Self::Legacy
        }
    }
}

/// The boolean field of option `option` (0-based) of the question at `index`, in legacy style.
fn choice_key(index: usize, option: usize) -> String {
    format!("{}_c{:02}", key(index), option + 1)
}

/// The `requestedSchema` of the form for `questions` in titled style.
pub fn form_schema(questions: &[Question]) -> Value {
    form_schema_for(questions, FormStyle::Titled)
}

/// The `requestedSchema` of the form for `questions`: `{"type":"object","properties":{…}}`.
pub fn form_schema_for(questions: &[Question], style: FormStyle) -> Value {
    let mut properties = Map::new();
    for (index, question) in questions.iter().enumerate() {
        let header = question.header.as_deref().filter(|h| !h.trim().is_empty());
        let detail = question.detail.as_deref().filter(|d| !d.trim().is_empty());
        // With a header, the header is the title and the question the description; without one,
        // the question is the title. Detail follows in the description.
        let title = header.unwrap_or(&question.question);
        let description = match (header, detail) {
            (Some(_), Some(detail)) => Some(format!("{}\n\n{detail}", question.question)),
            (Some(_), None) => Some(question.question.clone()),
            (None, detail) => detail.map(str::to_owned),
        };
        let field = match options(question) {
            None => json!({"type": "string", "title": title}),
            Some(options) => {
                let choices: Vec<Value> = options
                    .iter()
                    .map(|option| {
                        let title = match option.description.as_deref() {
                            Some(d) if !d.trim().is_empty() => format!("{}: {d}", option.label),
                            _ => option.label.clone(),
                        };
                        json!({"const": option.label, "title": title})
                    })
                    .collect();
                match (style, multi(question)) {
                    (FormStyle::Titled, true) => {
                        json!({"type": "array", "title": title, "items": {"anyOf": choices}})
                    }
                    (FormStyle::Titled, false) => {
                        json!({"type": "string", "title": title, "oneOf": choices})
                    }
                    (FormStyle::Legacy, false) => json!({
                        "type": "string",
                        "title": title,
                        "enum": options.iter().map(|o| o.label.clone()).collect::<Vec<_>>(),
                        "enumNames": choices.iter().map(|c| c["title"].clone()).collect::<Vec<_>>(),
                    }),
                    (FormStyle::Legacy, true) => {
                        for (at, choice) in choices.iter().enumerate() {
                            let field = json!({
                                "type": "boolean",
                                "title": format!("{title}: {}", choice["title"].as_str().unwrap_or_default()),
                            });
                            properties.insert(choice_key(index, at), field);
                        }
                        Value::Null
                    }
                }
            }
        };
        let mut field = field;
        if let (Some(description), Some(object)) = (description, field.as_object_mut()) {
            object.insert("description".to_owned(), Value::String(description));
        }
        if !field.is_null() {
            properties.insert(key(index), field);
        }
        if options(question).is_some() {
            properties.insert(
                format!("{}{OTHER_SUFFIX}", key(index)),
                json!({
                    "type": "string",
                    "title": format!("Other: {title}"),
                    "description": "Your own answer, if none of the choices fits.",
                }),
            );
        }
    }
    json!({"type": "object", "properties": properties})
}

/// Why the content of an accepted form does not fit the form that was sent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FormMismatch(String);

impl fmt::Display for FormMismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for FormMismatch {}

fn mismatch(message: impl Into<String>) -> FormMismatch {
    FormMismatch(message.into())
}

/// Reads the answer batch from the `content` of an accepted form for `questions`.
///
/// An absent, `null` or empty field skips its question; an "Other" text becomes `custom`. Every
/// answered question is in the batch, in question order, and a question left empty gets a skipped
/// item. Content that the form could not have produced is refused: a key the form does not have,
/// a value of the wrong type, a label that is not one of the question's.
pub fn read_form(
    questions: &[Question],
    content: Option<&Value>,
) -> Result<AnswerBatch, FormMismatch> {
    read_form_for(questions, content, FormStyle::Titled)
}

/// [`read_form`] for a form sent in `style`.
pub fn read_form_for(
    questions: &[Question],
    content: Option<&Value>,
    style: FormStyle,
) -> Result<AnswerBatch, FormMismatch> {
    let empty = Map::new();
    let content = match content {
        None | Some(Value::Null) => &empty,
        Some(Value::Object(object)) => object,
        Some(other) => {
            return Err(mismatch(format!(
                "the form content is a JSON {}, not an object",
                kind(other)
            )));
        }
    };
    let mut known = BTreeSet::new();
    let mut answers = Vec::with_capacity(questions.len());
    for (index, question) in questions.iter().enumerate() {
        let key = key(index);
        let other_key = format!("{key}{OTHER_SUFFIX}");
        let mut item = AnswerItem::skipped(question.id.clone());
        match options(question) {
            None => {
                item.custom = text(content.get(&key), &key)?;
            }
            Some(options) if style == FormStyle::Legacy && multi(question) => {
                for (at, option) in options.iter().enumerate() {
                    let choice = choice_key(index, at);
                    match content.get(&choice) {
                        None | Some(Value::Null | Value::Bool(false)) => {}
                        Some(Value::Bool(true)) => item.selected.push(option.label.clone()),
                        Some(other) => {
                            return Err(mismatch(format!(
                                "field {choice} must be true or false, got a JSON {}",
                                kind(other)
                            )));
                        }
                    }
                    known.insert(choice);
                }
                item.custom = text(content.get(&other_key), &other_key)?;
                known.insert(other_key);
            }
            Some(options) => {
                let labels: Vec<&str> = options.iter().map(|o| o.label.as_str()).collect();
                item.selected = choices(content.get(&key), &key, &labels, multi(question))?;
                item.custom = text(content.get(&other_key), &other_key)?;
                known.insert(other_key);
            }
        }
        known.insert(key);
        answers.push(item);
    }
    if let Some(unknown) = content.keys().find(|k| !known.contains(k.as_str())) {
        return Err(mismatch(format!(
            "the form has no field {}",
            quote(unknown)
        )));
    }
    Ok(AnswerBatch { answers })
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// A free-text field: absent, `null` and blank text are no answer.
fn text(value: Option<&Value>, key: &str) -> Result<Option<String>, FormMismatch> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.trim().is_empty() => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(mismatch(format!(
            "field {key} must be text, got a JSON {}",
            kind(other)
        ))),
    }
}

/// A choice field: one label (single-select) or a list of distinct labels (multi-select).
fn choices(
    value: Option<&Value>,
    key: &str,
    labels: &[&str],
    multi: bool,
) -> Result<Vec<String>, FormMismatch> {
    let label = |value: &Value| -> Result<String, FormMismatch> {
        match value {
            Value::String(s) if labels.contains(&s.as_str()) => Ok(s.clone()),
            Value::String(s) => Err(mismatch(format!(
                "field {key}: {} is not one of its choices",
                quote(s)
            ))),
            other => Err(mismatch(format!(
                "field {key}: a choice must be text, got a JSON {}",
                kind(other)
            ))),
        }
    };
    match value {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::String(s)) if s.is_empty() => Ok(Vec::new()),
        Some(Value::Array(items)) if multi => {
            let mut chosen: Vec<String> = Vec::with_capacity(items.len());
            for item in items {
                let label = label(item)?;
                if !chosen.contains(&label) {
                    chosen.push(label);
                }
            }
            Ok(chosen)
        }
        Some(single @ Value::String(_)) if !multi => Ok(vec![label(single)?]),
        Some(other) => Err(mismatch(format!(
            "field {key} must be {}, got a JSON {}",
            if multi {
                "a list of choices"
            } else {
                "one choice"
            },
            kind(other)
        ))),
    }
}
