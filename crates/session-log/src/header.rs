//! The header record (SPEC §7.2): the first line of every session log, and the rule that decides a
//! fork's inherited prefix (`inheritedEventCount`) from the format version.

use std::fmt;

use serde_json::value::RawValue;
use user_questions::SessionId;

use crate::lenient::{RawObject, raw_string};
use crate::text::fix_lone_surrogates;

/// The largest `inheritedEventCount` a state may hold (2^53 − 1, §8.2).
pub const MAX_INHERITED_EVENT_COUNT: u64 = (1 << 53) - 1;

/// The header record of a session log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SessionHeader {
    /// `version`; `None` when absent (read as 0 and reported by the log reader).
    pub version: Option<i64>,
    /// `id`.
    pub id: SessionId,
    /// `createdAt`, when it is an integer.
    pub created_at: Option<i64>,
    /// `cwd`, when it is a string.
    pub cwd: Option<String>,
    /// `parentSession`, when it is a string.
    pub parent_session: Option<String>,
    /// `seedLength`, when it is a non-negative integer (format versions 0 and 1).
    pub seed_length: Option<u64>,
    /// `isSeeded`, when it is a boolean (format versions 2 and later).
    pub is_seeded: Option<bool>,
    /// `origin`, when it is a string.
    pub origin: Option<String>,
    /// `delegationDepth`; a missing (or non-integer) value reads as 0.
    pub delegation_depth: u64,
    /// `agentPreset`, when it is a string.
    pub agent_preset: Option<String>,
}

/// Why a header record is unreadable: the log cannot be identified, a hard error (§7.8, §9.6).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum HeaderError {
    /// The file has no complete first line (empty, or a header without its `\n`).
    #[error("no header record: the log has no complete first line")]
    Missing,
    /// The file starts with a UTF-8 byte-order mark.
    #[error("unreadable header: the log starts with a UTF-8 byte-order mark")]
    ByteOrderMark,
    /// The first line is not a JSON object.
    #[error("unreadable header: not a JSON object: {0}")]
    NotJson(String),
    /// `type` is not `"session"`.
    #[error("not a session log: the header's `type` is not \"session\"")]
    NotSession,
    /// `id` is missing or not a string.
    #[error("unreadable header: `id` is not a string")]
    NoId,
    /// `version` is present but not an integer.
    #[error("unreadable header: `version` is not an integer")]
    BadVersion,
    /// The first line is longer than the reader keeps in memory.
    #[error("unreadable header: the first line is longer than {limit} bytes")]
    TooLong {
        /// The limit in bytes.
        limit: u64,
    },
}

/// How a log's inherited prefix is decided (§7.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CutRule {
    /// Format versions 0 and 1 (or no version): `seedLength`, fixed by the header.
    Fixed(u64),
    /// Format versions 2 and later: the `seq` of the last `session/end-seed {"inherited":true}`,
    /// found while reading; only consulted when the header says `isSeeded: true`.
    Markers {
        /// `isSeeded` (absent reads as `false`).
        seeded: bool,
    },
}

impl SessionHeader {
    /// A header with the given id and format version, and nothing else.
    pub fn new(id: impl Into<SessionId>, version: i64) -> Self {
        Self {
            version: Some(version),
            id: id.into(),
            created_at: None,
            cwd: None,
            parent_session: None,
            seed_length: None,
            is_seeded: None,
            origin: None,
            delegation_depth: 0,
            agent_preset: None,
        }
    }

    /// Parses the header record's text (without its line end).
    pub fn parse(line: &str) -> Result<Self, HeaderError> {
        if line.starts_with('\u{feff}') {
            return Err(HeaderError::ByteOrderMark);
        }
        let fixed = fix_lone_surrogates(line);
        let object = match serde_json::from_str::<RawObject<'_>>(&fixed) {
            Ok(object) => object,
            Err(e) => return Err(HeaderError::NotJson(e.to_string())),
        };
        if object.get("type").and_then(raw_string).as_deref() != Some("session") {
            return Err(HeaderError::NotSession);
        }
        let id = object
            .get("id")
            .and_then(raw_string)
            .ok_or(HeaderError::NoId)?;
        let version = match object.get("version") {
            None => None,
            Some(raw) => Some(integer(raw).ok_or(HeaderError::BadVersion)?),
        };
        let string = |key: &str| object.get(key).and_then(raw_string);
        Ok(Self {
            version,
            id: SessionId::from(id),
            created_at: object.get("createdAt").and_then(integer),
            cwd: string("cwd"),
            parent_session: string("parentSession"),
            seed_length: object
                .get("seedLength")
                .and_then(integer)
                .and_then(|n| u64::try_from(n).ok()),
            is_seeded: object.get("isSeeded").and_then(|raw| match raw.get() {
                "true" => Some(true),
                "false" => Some(false),
                _ => None,
            }),
            origin: string("origin"),
            delegation_depth: object
                .get("delegationDepth")
                .and_then(integer)
                .and_then(|n| u64::try_from(n).ok())
                .unwrap_or(0),
            agent_preset: string("agentPreset"),
        })
    }

    /// The format version, with an absent `version` read as 0.
    pub fn format_version(&self) -> i64 {
        self.version.unwrap_or(0)
    }

    /// How the inherited prefix is decided (§7.2). For versions 0 and 1, a `seedLength` above
    /// 2^53 − 1 (which no state could hold) reads as 0, like any other unusable value.
    pub fn cut_rule(&self) -> CutRule {
        if self.format_version() <= 1 {
            CutRule::Fixed(
                self.seed_length
                    .filter(|n| *n <= MAX_INHERITED_EVENT_COUNT)
                    .unwrap_or(0),
            )
        } else {
            CutRule::Markers {
                seeded: self.is_seeded == Some(true),
            }
        }
    }
}

impl fmt::Display for SessionHeader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "session {} (format version {})",
            self.id,
            self.format_version()
        )
    }
}

/// An integer JSON number that fits `i64`.
fn integer(raw: &RawValue) -> Option<i64> {
    serde_json::from_str::<serde_json::Number>(raw.get())
        .ok()?
        .as_i64()
}
