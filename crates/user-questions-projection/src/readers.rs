//! The `ask_user_question`-specific readers of SPEC §8.3 and §8.5: whether a logged tool list
//! declares the timed schema (the projection's only timed marker), and the questions of a call
//! from its arguments. They read the texts `session-log` keeps for them, with its lenient JSON
//! readers: extra keys tolerated, the last of a repeated key winning, any nesting depth, a present
//! key of the wrong type (including `null`) making the whole reading fail.

use session_log::json::{RawObject, RawValue, fix_lone_surrogates, raw_array, raw_string};
use user_questions::{Question, QuestionOption, TOOL_NAME};

/// Whether `tools` (the JSON text of a `request/header`'s `header.tools`) declares the timed
/// schema (§8.3): an array holding an object whose `name` is the string `ask_user_question` and
/// whose `parameters` is an object whose `properties` is an object with the key `timeout`.
pub fn declares_timed(tools: &str) -> bool {
    // Escaped lone surrogates (in a property name, say) read as U+FFFD, as the record reader
    // reads them.
    let fixed = fix_lone_surrogates(tools);
    let Ok(tools) = serde_json::from_str::<&RawValue>(&fixed) else {
        return false;
    };
    raw_array(tools).is_some_and(|tools| tools.into_iter().any(timed_schema))
}

fn timed_schema(tool: &RawValue) -> bool {
    let Some(tool) = RawObject::parse(tool) else {
        return false;
    };
    let named = tool
        .get("name")
        .and_then(raw_string)
        .is_some_and(|name| name == TOOL_NAME);
    named
        && tool
            .get("parameters")
            .and_then(RawObject::parse)
            .and_then(|parameters| parameters.get("properties"))
            .and_then(RawObject::parse)
            .is_some_and(|properties| properties.keys().any(|key| key == "timeout"))
}

/// Reads the questions of an `ask_user_question` call from its `arguments` text (§8.5).
/// `None` means unreadable: the call is not tracked.
pub fn questions_from_arguments(arguments: &str) -> Option<Vec<Question>> {
    let fixed = fix_lone_surrogates(arguments);
    let object = RawObject::parse_str(&fixed)?;
    questions_from_object(&object)
}

/// Reads the questions from an arguments object given as its JSON text (a programmatic
/// dispatch logs the object itself, not a string).
pub(crate) fn questions_from_object_text(text: &str) -> Option<Vec<Question>> {
    let fixed = fix_lone_surrogates(text);
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
