//! Argument validation (SPEC §5.5): the tool runtime's check of the raw arguments text against a
//! definition's `parameters` schema, before the tool maps anything.
//!
//! The check is driven by the schema the model was shown, so it can never disagree with it. It
//! understands the keywords our schemas use: `type` (`object`, `array`, `string`, `integer`,
//! `boolean`), `properties`, `required` and `items`. Extra keys are allowed everywhere
//! (no schema of ours closes an object), and are neither checked nor forwarded.
//!
//! Every violation is listed, each with its JSON path (`questions[1].options[0].label`) and the
//! broken rule, joined by `; ` into one `INVALID_ARGS` error (gist E-ARGS). Never a bare serde
//! message, never a panic.
//!
//! How the text is read, and why:
//!
//! * Each level is split into raw JSON values ([`RawValue`]); a value is decoded only where the
//!   schema declares it. Skipping a raw value is iterative in `serde_json`, so undeclared parts
//!   nested to any depth cost no recursion and hit no depth limit.
//! * Numbers are judged from their exact decimal text: `120`, `120.0` and `1.2e2` are the integer
//!   120; `1.5` and `2147483.0000000001` are not integers; an integral value beyond `i64` (even
//!   `1e400`) is an integer that saturates to `i64::MIN`/`i64::MAX`, so range checks reject it as
//!   out of range instead of failing to parse it (SPEC §5.3 step 1).
//! * A repeated key: the last value wins, as in `JSON.parse` and in our log reader (SPEC §7.8).
//! * An escaped lone surrogate (`\uD800` without its pair) in a declared string becomes U+FFFD, as
//!   the log reader reads the same text (SPEC §7.8), since a Rust `String` cannot hold it.
//!
//! The result is a cleaned [`Value`] holding only the declared, checked properties; the tool's
//! argument types deserialise from it and cannot fail on anything the check accepted.

use std::borrow::Cow;
use std::collections::HashMap;

use serde::de::DeserializeOwned;
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use user_questions::{ErrorCode, QuestionLimits, UserQuestionError};

/// The largest arguments text checked (1 MiB): a batch of at most eight questions is a few KiB,
/// and a larger text is refused before it is parsed.
pub const MAX_ARGUMENTS_BYTES: usize = 1 << 20;

/// The most violations an `INVALID_ARGS` message lists; the rest are counted. The message the
/// model reads stays a few KiB whatever the arguments hold.
pub const MAX_LISTED_VIOLATIONS: usize = 12;

/// What the check does with an undeclared key that differs from a declared one only in case, `_`
/// or `-` (`multiSelect` or `multiselect` for `multi_select`): the model most likely meant the
/// declared key, and dropping the key silently would change the question.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum NearMisses {
    /// Dropped like any other undeclared key (the legacy tool: its accepted arguments are
    /// frozen).
    Dropped,
    /// Refused: an `INVALID_ARGS` violation names the declared key (the timed tool).
    Refused,
}

/// Checks `arguments` against `parameters` and deserialises the checked value into `T`. Before
/// any of that: the size bound, and the question-count limit (a batch with too many questions is
/// refused for that, not for each problem of each question).
pub(crate) fn parse<T: DeserializeOwned>(
    parameters: &Value,
    arguments: &str,
    limits: &QuestionLimits,
    near_misses: NearMisses,
) -> Result<T, UserQuestionError> {
    if arguments.len() > MAX_ARGUMENTS_BYTES {
        return Err(invalid_args(&format!(
            "the arguments are {} bytes; at most {MAX_ARGUMENTS_BYTES} are accepted",
            arguments.len()
        )));
    }
    if let Some(count) = question_count(arguments)
        && count > limits.max_questions
    {
        return Err(UserQuestionError::too_many_questions(
            count,
            limits.max_questions,
        ));
    }
    let checked = check(parameters, arguments, near_misses)?;
    serde_json::from_value(checked).map_err(|error| {
        // Unreachable while the argument types and the schema come from the same types; kept as
        // a defined outcome rather than a panic.
        invalid_args(&format!(
            "the arguments do not match the tool's argument types ({error})"
        ))
    })
}

/// How many elements `questions` has, when the arguments are an object whose `questions` is an
/// array (counted without decoding the elements); `None` otherwise (the full check reports it).
fn question_count(arguments: &str) -> Option<usize> {
    #[derive(serde::Deserialize)]
    struct Top<'a> {
        #[serde(borrow)]
        questions: Option<&'a RawValue>,
    }
    let top: Top<'_> = serde_json::from_str(arguments).ok()?;
    let elements: Vec<serde::de::IgnoredAny> = serde_json::from_str(top.questions?.get()).ok()?;
    Some(elements.len())
}

/// Checks `arguments` against `parameters`; returns the declared parts of the arguments.
pub(crate) fn check(
    parameters: &Value,
    arguments: &str,
    near_misses: NearMisses,
) -> Result<Value, UserQuestionError> {
    let root: &RawValue = serde_json::from_str(arguments)
        .map_err(|error| invalid_args(&format!("the arguments are not valid JSON ({error})")))?;
    let mut run = Checker {
        violations: Vec::new(),
        unlisted: 0,
        near_misses,
    };
    let value = run.value(parameters, root, "");
    if run.violations.is_empty() {
        Ok(value.unwrap_or(Value::Object(Map::new())))
    } else {
        let mut details = run.violations.join("; ");
        if run.unlisted > 0 {
            details = format!("{details}; and {} more problems", run.unlisted);
        }
        Err(invalid_args(&details))
    }
}

/// An `INVALID_ARGS` error (name `ToolArgsError`) with the E-ARGS prefix.
pub(crate) fn invalid_args(details: &str) -> UserQuestionError {
    UserQuestionError::new(
        ErrorCode::InvalidArgs,
        format!("Invalid arguments: {details}."),
    )
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Object,
    Array,
    String,
    Number,
    Boolean,
    Null,
}

impl Kind {
    /// The kind of a raw JSON value, from its first byte (the text is valid JSON).
    fn of(raw: &RawValue) -> Self {
        match raw.get().trim_start().as_bytes().first() {
            Some(b'{') => Self::Object,
            Some(b'[') => Self::Array,
            Some(b'"') => Self::String,
            Some(b't' | b'f') => Self::Boolean,
            Some(b'n') => Self::Null,
            _ => Self::Number,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Self::Object => "an object",
            Self::Array => "an array",
            Self::String => "a string",
            Self::Number => "a number",
            Self::Boolean => "a boolean",
            Self::Null => "null",
        }
    }
}

struct Checker {
    violations: Vec<String>,
    unlisted: usize,
    near_misses: NearMisses,
}

impl Checker {
    /// Records a violation: listed while fewer than [`MAX_LISTED_VIOLATIONS`] are, else counted.
    fn record(&mut self, violation: String) {
        if self.violations.len() < MAX_LISTED_VIOLATIONS {
            // A violation quotes at most a path; bound it all the same.
            let mut violation = violation;
            if violation.len() > 300 {
                let mut end = 300;
                while !violation.is_char_boundary(end) {
                    end -= 1;
                }
                violation.truncate(end);
                violation.push('…');
            }
            self.violations.push(violation);
        } else {
            self.unlisted += 1;
        }
    }

    /// Checks one value against one schema; returns the checked value, or `None` when it is wrong
    /// (the violation is recorded) or the schema names no type we check (accepted, not forwarded).
    fn value(&mut self, schema: &Value, raw: &RawValue, path: &str) -> Option<Value> {
        let declared = schema.get("type").and_then(Value::as_str)?;
        let kind = Kind::of(raw);
        match (declared, kind) {
            ("object", Kind::Object) => self.object(schema, raw, path),
            ("array", Kind::Array) => self.array(schema, raw, path),
            ("string", Kind::String) => match decode_string(raw.get()) {
                Ok(text) => Some(Value::String(text)),
                Err(error) => {
                    self.record(format!(
                        "{} is not a valid JSON string ({error})",
                        subject(path)
                    ));
                    None
                }
            },
            ("integer", Kind::Number) => {
                if let Some(integer) = integer_value(raw.get()) {
                    Some(Value::from(integer))
                } else {
                    self.record(format!(
                        "{} must be an integer, not a fractional number",
                        subject(path)
                    ));
                    None
                }
            }
            ("boolean", Kind::Boolean) => Some(Value::Bool(raw.get().trim() == "true")),
            ("object" | "array" | "string" | "integer" | "boolean", _) => {
                let expected = match declared {
                    "object" => "an object",
                    "array" => "an array",
                    "string" => "a string",
                    "integer" => "an integer",
                    _ => "a boolean",
                };
                self.record(format!(
                    "{} must be {expected}, not {}",
                    subject(path),
                    kind.name()
                ));
                None
            }
            _ => None,
        }
    }

    fn object(&mut self, schema: &Value, raw: &RawValue, path: &str) -> Option<Value> {
        // A map keeps the last of repeated keys; which keys exist is all the order we need, since
        // properties are visited in schema order.
        let entries: HashMap<String, &RawValue> = match serde_json::from_str(raw.get()) {
            Ok(entries) => entries,
            Err(error) => {
                self.record(format!(
                    "{} is not a valid JSON object ({error})",
                    subject(path)
                ));
                return None;
            }
        };
        let required: Vec<&str> = schema
            .get("required")
            .and_then(Value::as_array)
            .map(|names| names.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let mut checked = Map::new();
        let mut declared: Vec<&str> = Vec::new();
        if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
            for (name, property) in properties {
                declared.push(name);
                let child = child_path(path, name);
                match entries.get(name.as_str()) {
                    Some(raw) => {
                        if let Some(value) = self.value(property, raw, &child) {
                            checked.insert(name.clone(), value);
                        }
                    }
                    None if required.contains(&name.as_str()) => {
                        self.record(format!("missing required property {}", quoted(&child)));
                    }
                    None => {}
                }
            }
        }
        if self.near_misses == NearMisses::Refused {
            self.near_misses_of(&entries, &declared, path);
        }
        for name in required {
            if !declared.contains(&name) && !entries.contains_key(name) {
                self.record(format!(
                    "missing required property {}",
                    quoted(&child_path(path, name))
                ));
            }
        }
        Some(Value::Object(checked))
    }

    /// Records each undeclared key of an object that is a declared one spelled otherwise, in key
    /// order (the map's order is not the text's).
    fn near_misses_of(
        &mut self,
        entries: &HashMap<String, &RawValue>,
        declared: &[&str],
        path: &str,
    ) {
        let fold = |name: &str| -> String {
            name.chars()
                .filter(|c| !matches!(c, '_' | '-'))
                .flat_map(char::to_lowercase)
                .collect()
        };
        let mut misses: Vec<(&str, &str)> = entries
            .keys()
            .filter(|key| !declared.contains(&key.as_str()))
            .filter_map(|key| {
                let folded = fold(key);
                declared
                    .iter()
                    .find(|name| fold(name) == folded)
                    .map(|name| (key.as_str(), *name))
            })
            .collect();
        misses.sort_unstable();
        for (key, name) in misses {
            self.record(format!(
                "{} is not a property: the property is {}",
                quoted(&child_path(path, key)),
                quoted(name)
            ));
        }
    }

    fn array(&mut self, schema: &Value, raw: &RawValue, path: &str) -> Option<Value> {
        let elements: Vec<&RawValue> = match serde_json::from_str(raw.get()) {
            Ok(elements) => elements,
            Err(error) => {
                self.record(format!(
                    "{} is not a valid JSON array ({error})",
                    subject(path)
                ));
                return None;
            }
        };
        let Some(items) = schema.get("items") else {
            return Some(Value::Array(Vec::new()));
        };
        let mut checked = Vec::with_capacity(elements.len());
        for (index, element) in elements.into_iter().enumerate() {
            if let Some(value) = self.value(items, element, &format!("{path}[{index}]")) {
                checked.push(value);
            }
        }
        Some(Value::Array(checked))
    }
}

fn child_path(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_owned()
    } else {
        format!("{path}.{name}")
    }
}

/// What a violation is about: the quoted path, or the arguments as a whole.
fn subject(path: &str) -> String {
    if path.is_empty() {
        "the arguments".to_owned()
    } else {
        quoted(path)
    }
}

fn quoted(text: &str) -> String {
    Value::from(text).to_string()
}

/// Decodes a JSON string token; an escaped lone surrogate becomes U+FFFD.
fn decode_string(raw: &str) -> Result<String, serde_json::Error> {
    match serde_json::from_str(raw) {
        Ok(text) => Ok(text),
        Err(error) => match replace_lone_surrogates(raw) {
            Cow::Owned(fixed) => serde_json::from_str(&fixed),
            Cow::Borrowed(_) => Err(error),
        },
    }
}

/// Rewrites every escaped surrogate that is not part of a valid `\uHIGH\uLOW` pair to `\uFFFD`,
/// leaving other escapes (an escaped backslash before a `u`, for example) alone.
fn replace_lone_surrogates(raw: &str) -> Cow<'_, str> {
    let bytes = raw.as_bytes();
    let mut fixed = String::new();
    let mut copied = 0;
    let mut at = 0;
    while at < bytes.len() {
        if bytes[at] != b'\\' {
            at += 1;
            continue;
        }
        let Some(unit) = (bytes.get(at + 1) == Some(&b'u'))
            .then(|| hex4(bytes, at + 2))
            .flatten()
        else {
            at += 2; // A two-byte escape such as `\\` or `\"`.
            continue;
        };
        let is_high = (0xD800..0xDC00).contains(&unit);
        let is_low = (0xDC00..0xE000).contains(&unit);
        let paired = is_high
            && bytes.get(at + 6) == Some(&b'\\')
            && bytes.get(at + 7) == Some(&b'u')
            && hex4(bytes, at + 8).is_some_and(|low| (0xDC00..0xE000).contains(&low));
        if paired {
            at += 12;
        } else if is_high || is_low {
            fixed.push_str(&raw[copied..at]);
            fixed.push_str("\\uFFFD");
            at += 6;
            copied = at;
        } else {
            at += 6;
        }
    }
    if copied == 0 {
        Cow::Borrowed(raw)
    } else {
        fixed.push_str(&raw[copied..]);
        Cow::Owned(fixed)
    }
}

fn hex4(bytes: &[u8], at: usize) -> Option<u32> {
    let digits = bytes.get(at..at + 4)?;
    let text = std::str::from_utf8(digits).ok()?;
    u32::from_str_radix(text, 16).ok()
}

/// The integer a JSON number token denotes, judged exactly from its decimal text; `None` when it
/// has a fractional part. Integral values beyond `i64` saturate.
fn integer_value(token: &str) -> Option<i64> {
    let token = token.trim();
    let (negative, unsigned) = match token.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, token),
    };
    let (mantissa, exponent) = match unsigned.find(['e', 'E']) {
        Some(at) => (&unsigned[..at], &unsigned[at + 1..]),
        None => (unsigned, ""),
    };
    let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    // The significant digits, and the power of ten they are scaled by.
    let digits = format!("{whole}{fraction}");
    let digits = digits.trim_start_matches('0');
    let significant = digits.trim_end_matches('0');
    if significant.is_empty() {
        return Some(0);
    }
    let trailing_zeros = digits.len() - significant.len();
    let exponent = parse_exponent(exponent);
    let fraction_len = i64::try_from(fraction.len()).unwrap_or(i64::MAX);
    let trailing = i64::try_from(trailing_zeros).unwrap_or(i64::MAX);
    let scale = exponent
        .saturating_sub(fraction_len)
        .saturating_add(trailing);
    if scale < 0 {
        return None;
    }
    let saturated = if negative { i64::MIN } else { i64::MAX };
    // More than 19 digits cannot fit an i64.
    let total = i64::try_from(significant.len())
        .unwrap_or(i64::MAX)
        .saturating_add(scale);
    if total > 19 {
        return Some(saturated);
    }
    let mut magnitude: i128 = significant.parse().ok()?;
    for _ in 0..scale {
        magnitude *= 10;
    }
    let value = if negative { -magnitude } else { magnitude };
    Some(i64::try_from(value).unwrap_or(saturated))
}

/// The exponent of a number token (`""`, `"5"`, `"+5"`, `"-5"`), saturating.
fn parse_exponent(text: &str) -> i64 {
    let (negative, digits) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    let digits = digits.trim_start_matches('0');
    let magnitude = if digits.len() > 18 {
        i64::MAX
    } else {
        digits.parse().unwrap_or(0)
    };
    if negative { -magnitude } else { magnitude }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check_integer(token: &str, expected: Option<i64>) {
        assert_eq!(integer_value(token), expected, "{token}");
    }

    #[test]
    fn integers_are_judged_exactly() {
        check_integer("120", Some(120));
        check_integer("120.0", Some(120));
        check_integer("1.2e2", Some(120));
        check_integer("12000e-2", Some(120));
        check_integer("-1", Some(-1));
        check_integer("-1.0E0", Some(-1));
        check_integer("0", Some(0));
        check_integer("-0.0", Some(0));
        check_integer("0e-7", Some(0));
        check_integer("1.5", None);
        check_integer("12e-1", None);
        check_integer("2147483.0000000001", None);
        check_integer("9223372036854775807", Some(i64::MAX));
        check_integer("-9223372036854775808", Some(i64::MIN));
        check_integer("9223372036854775808", Some(i64::MAX));
        check_integer("-9223372036854775809", Some(i64::MIN));
        check_integer("1e400", Some(i64::MAX));
        check_integer("-1e400", Some(i64::MIN));
        check_integer("1e99999999999999999999999", Some(i64::MAX));
        check_integer("1e-99999999999999999999999", None);
        check_integer("100000000000000000000e-2", Some(1_000_000_000_000_000_000));
    }

    #[track_caller]
    fn check_surrogates(raw: &str, expected: &str) {
        assert_eq!(decode_string(raw).unwrap(), expected, "{raw}");
    }

    #[test]
    fn lone_surrogates_become_replacement_characters() {
        check_surrogates(r#""plain""#, "plain");
        check_surrogates(r#""\ud83d\ude00""#, "\u{1F600}");
        check_surrogates(r#""a\ud800b""#, "a\u{FFFD}b");
        check_surrogates(r#""\udc00""#, "\u{FFFD}");
        check_surrogates(r#""\ud800\ud800\udc00""#, "\u{FFFD}\u{10000}");
        check_surrogates(r#""\\ud800""#, "\\ud800");
        check_surrogates(r#""\\\ud800""#, "\\\u{FFFD}");
    }
}
