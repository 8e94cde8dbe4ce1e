//! What `PostgreSQL`'s `text` cannot hold, and the names the store takes.
//!
//! A `text` value holds any character but U+0000, and a log may hold that character anywhere (a
//! call id, a message id): every text the store copies from a log or takes from a caller into a
//! `text` column goes through [`to_db`], and comes back through [`from_db`]. The escape uses
//! U+FDD0, a noncharacter (Unicode reserves it for a program's internal use, so interchanged text
//! does not carry it): U+0000 is stored as U+FDD0 `0`, and U+FDD0 itself as U+FDD0 U+FDD0; any
//! other text is stored as it is, so the rows of ordinary ids read as they always did.
//!
//! JSON documents need no escape: they are stored as their JSON text (the ledger's `text`
//! columns, not `jsonb`, which refuses U+0000 and even its escape `\u0000`), and JSON spells
//! every control character as an escape, so the text never holds U+0000 itself. Log lines,
//! headers and checkpoints are `bytea`: any bytes.

use std::borrow::Cow;

use crate::PgError;

/// The escape mark: a noncharacter.
const MARK: char = '\u{FDD0}';

/// `text` as stored: U+0000 and the mark escaped (see the [module docs](self)).
pub(crate) fn to_db(text: &str) -> Cow<'_, str> {
    if !text.contains(['\0', MARK]) {
        return Cow::Borrowed(text);
    }
    let mut stored = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\0' => {
                stored.push(MARK);
                stored.push('0');
            }
            MARK => {
                stored.push(MARK);
                stored.push(MARK);
            }
            c => stored.push(c),
        }
    }
    Cow::Owned(stored)
}

/// The text [`to_db`] stored as `stored`. A mark that escapes nothing (a row written by hand) is
/// kept as it is.
pub(crate) fn from_db(stored: &str) -> Cow<'_, str> {
    if !stored.contains(MARK) {
        return Cow::Borrowed(stored);
    }
    let mut text = String::with_capacity(stored.len());
    let mut chars = stored.chars().peekable();
    while let Some(c) = chars.next() {
        if c != MARK {
            text.push(c);
            continue;
        }
        match chars.peek() {
            Some('0') => {
                chars.next();
                text.push('\0');
            }
            Some(&MARK) => {
                chars.next();
                text.push(MARK);
            }
            _ => text.push(MARK),
        }
    }
    Cow::Owned(text)
}

/// Whether a session of name `name` can be in the database at all: no stored name holds U+0000
/// (`text` cannot), so a lookup of one that does finds nothing, without asking the server.
pub(crate) fn may_exist(name: &str) -> bool {
    !name.contains('\0')
}

/// The longest session name: a file's name can be no longer, so a session moves between the
/// file store and the database under its name (and a `NOTIFY` payload holds it easily).
pub const MAX_SESSION_NAME: usize = 255;

/// The longest schema name `PostgreSQL` keeps (`NAMEDATALEN` − 1): a longer one is cut, so two
/// different names would address the same schema.
pub const MAX_SCHEMA_NAME: usize = 63;

/// Checks that `name` can name a session: not empty (`pending` and `answer` could not name it),
/// at most [`MAX_SESSION_NAME`] bytes, and without U+0000 (which no command line can pass).
pub fn check_session_name(name: &str) -> Result<(), PgError> {
    let why = if name.is_empty() {
        "is empty"
    } else if name.len() > MAX_SESSION_NAME {
        "is longer than 255 bytes"
    } else if name.contains('\0') {
        "holds U+0000"
    } else {
        return Ok(());
    };
    Err(PgError::BadName {
        what: "session",
        name: name.to_owned(),
        why,
    })
}

/// Checks that `schema` can name a `PostgreSQL` schema as it is: not empty, at most
/// [`MAX_SCHEMA_NAME`] bytes (`PostgreSQL` cuts a longer name silently), and without U+0000.
pub fn check_schema_name(schema: &str) -> Result<(), PgError> {
    let why = if schema.is_empty() {
        "is empty"
    } else if schema.len() > MAX_SCHEMA_NAME {
        "is longer than 63 bytes, the most PostgreSQL keeps of a name"
    } else if schema.contains('\0') {
        "holds U+0000"
    } else {
        return Ok(());
    };
    Err(PgError::BadName {
        what: "schema",
        name: schema.to_owned(),
        why,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_escape_round_trips_and_leaves_ordinary_text_alone() {
        for text in [
            "",
            "ask-1",
            "\0",
            "a\0b",
            "\u{FDD0}",
            "\u{FDD0}0",
            "\u{FDD0}\u{FDD0}",
            "\0\u{FDD0}\0",
            "0\u{FDD0}",
            "\u{1}\u{1f}\u{7f}\u{85}\u{2028}\u{10ffff}",
        ] {
            let stored = to_db(text);
            assert!(!stored.contains('\0'), "{text:?} -> {stored:?}");
            assert_eq!(from_db(&stored), text, "{text:?} -> {stored:?}");
        }
        assert!(matches!(to_db("ask-1"), Cow::Borrowed(_)));
        assert_eq!(to_db("a\0b"), "a\u{FDD0}0b");
        // A mark that escapes nothing reads as itself.
        assert_eq!(from_db("a\u{FDD0}"), "a\u{FDD0}");
        assert_eq!(from_db("a\u{FDD0}x"), "a\u{FDD0}x");
    }

    #[test]
    fn names_are_checked() {
        assert!(check_session_name("s1").is_ok());
        assert!(check_session_name(&"n".repeat(255)).is_ok());
        for bad in ["", "a\0b", &"n".repeat(256)] {
            let error = check_session_name(bad).unwrap_err();
            assert_eq!(error.code(), "BAD_USAGE", "{error}");
        }
        assert!(check_schema_name(&"s".repeat(63)).is_ok());
        for bad in ["", "a\0b", &"s".repeat(64), &"é".repeat(32)] {
            let error = check_schema_name(bad).unwrap_err();
            assert_eq!(error.code(), "BAD_USAGE", "{error}");
        }
    }
}
