//! The tool's keys of a configuration file (`mode`, `timeout` at the top of `ask-user`'s), read
//! with serde (`#[serde(default, deserialize_with = "tool_ask_user::file_keys::mode")]`); each
//! says what the key takes when the file wrote something else.

use serde::de::Error as _;
use serde::{Deserialize, Deserializer};

use crate::{AskUserMode, MAX_TIMEOUT_SECS, is_valid_timeout};

/// A value as the file wrote it, to say what a key takes when it is of another type.
#[derive(Deserialize)]
#[serde(untagged)]
enum Raw {
    Text(String),
    Number(i64),
    Other(serde::de::IgnoredAny),
}

/// `mode`: `"legacy"` or `"timed"`.
///
/// # Errors
///
/// Anything else, saying what the key takes.
pub fn mode<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<AskUserMode>, D::Error> {
    match Raw::deserialize(deserializer)? {
        Raw::Text(text) if text == "legacy" => Ok(Some(AskUserMode::Legacy)),
        Raw::Text(text) if text == "timed" => Ok(Some(AskUserMode::Timed)),
        _ => Err(D::Error::custom(
            r#"`mode` takes "legacy" or "timed", in quotes"#,
        )),
    }
}

/// `timeout`: the timed tool's default window in seconds, -1 (wait indefinitely) or 1 to
/// [`MAX_TIMEOUT_SECS`].
///
/// # Errors
///
/// Anything else, saying what the key takes.
pub fn timeout<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<i64>, D::Error> {
    let Raw::Number(secs) = Raw::deserialize(deserializer)? else {
        return Err(D::Error::custom(format_args!(
            "`timeout` takes a number of seconds without quotes: -1 (wait indefinitely) or 1 to {MAX_TIMEOUT_SECS}"
        )));
    };
    if !is_valid_timeout(secs) {
        return Err(D::Error::custom(format_args!(
            "`timeout` is -1 (wait indefinitely) or 1 to {MAX_TIMEOUT_SECS} seconds"
        )));
    }
    Ok(Some(secs))
}
