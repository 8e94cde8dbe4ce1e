//! What a configuration file says of the database: [`PgSettings`] (`url` and `schema`), and the
//! connection string as a [`ConnString`], whose `Debug` and `Display` never show a password.

use std::fmt;
use std::ops::Range;

use serde::{Deserialize, Deserializer};

use crate::tls::{keywords, url_query, url_scheme};

/// The schema the tables live in when nothing names one.
pub const DEFAULT_SCHEMA: &str = "ask_user";

/// What [`ConnString`] shows in place of a password.
const MASK: &str = "********";

/// The database settings of a configuration file (`[pg]` in `ask-user`'s): serde's form, checked
/// as it is read. Unknown keys are refused.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PgSettings {
    /// `url`: the connection string, libpq's `key=value` form or a `postgres://` URL (TLS as its
    /// `sslmode` and `sslrootcert` say); not blank. `None`: no database.
    #[serde(default, deserialize_with = "url")]
    pub url: Option<ConnString>,
    /// `schema`: the schema the tables live in, not empty; [`DEFAULT_SCHEMA`] by default.
    #[serde(default = "default_schema", deserialize_with = "schema")]
    pub schema: String,
}

impl PgSettings {
    /// The keys whose values are secrets (the connection string may hold a password), each with
    /// what it is: a configuration file may say where to read them from instead.
    pub const SECRET_KEYS: &'static [(&'static str, &'static str)] =
        &[("url", "the connection string")];

    /// The `[pg]` table in a printout of the settings in effect (`ask-user config`), the
    /// connection string's password masked.
    pub fn print(&self, out: &mut settings_file::Printout<'_>) {
        use settings_file::quote;
        out.table("pg");
        let url = self.url.as_ref().map(|url| quote(&url.to_string()));
        out.entry("url", url, "log files, no database");
        out.set("schema", quote(&self.schema));
    }
}

impl Default for PgSettings {
    fn default() -> Self {
        Self {
            url: None,
            schema: default_schema(),
        }
    }
}

fn default_schema() -> String {
    DEFAULT_SCHEMA.to_owned()
}

fn url<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<ConnString>, D::Error> {
    let text = String::deserialize(deserializer)?;
    if text.trim().is_empty() {
        return Err(serde::de::Error::custom("`url` is empty"));
    }
    Ok(Some(ConnString(text)))
}

fn schema<'de, D: Deserializer<'de>>(deserializer: D) -> Result<String, D::Error> {
    let schema = String::deserialize(deserializer)?;
    if schema.is_empty() {
        return Err(serde::de::Error::custom("`schema` is empty"));
    }
    Ok(schema)
}

/// A connection string, which may hold a password. Its `Debug` and `Display` show it with each
/// password masked: the value of a `password` keyword, the password of a URL's user info (to its
/// last `@`) and a `password` query parameter (a key holding `password`, in any case); a text that
/// reads as neither form is masked whole. Only [`ConnString::expose`] gives the text, to hand to
/// a client.
#[derive(Clone, PartialEq, Eq)]
pub struct ConnString(String);

impl ConnString {
    /// `text` as a connection string.
    pub fn new(text: impl Into<String>) -> Self {
        Self(text.into())
    }

    /// The text itself: for a client ([`PgStore::connect`](crate::PgStore::connect)), never for a
    /// message or a log line.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// The byte ranges to mask; `None` when the text reads as neither form.
    fn passwords(&self) -> Option<Vec<Range<usize>>> {
        let text = &self.0;
        let is_password = |key: &str| key.to_ascii_lowercase().contains("password");
        let Some(scheme_len) = url_scheme(text) else {
            let params = keywords(text).ok()?;
            return Some(
                params
                    .into_iter()
                    .filter(|p| is_password(&p.key) && !p.span.is_empty())
                    .map(|p| p.span)
                    .collect(),
            );
        };
        // The user info's password, to the last `@`: a password may hold `/`, `?`, `#` or `@`
        // unencoded (masking too much is harmless; too little is not).
        let user_info = text[scheme_len..].rfind('@').and_then(|at| {
            let colon = text[scheme_len..scheme_len + at].find(':')?;
            Some(scheme_len + colon + 1..scheme_len + at)
        });
        let query = url_query(text, scheme_len)
            .params
            .into_iter()
            .filter(|p| is_password(&p.key))
            .map(|p| p.span);
        Some(user_info.into_iter().chain(query).collect())
    }
}

impl fmt::Display for ConnString {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Some(hidden) = self.passwords() else {
            return f.write_str(MASK);
        };
        let mut in_mask = false;
        for (i, c) in self.0.char_indices() {
            if hidden.iter().any(|r| r.contains(&i)) {
                if !in_mask {
                    f.write_str(MASK)?;
                    in_mask = true;
                }
            } else {
                in_mask = false;
                fmt::Write::write_char(f, c)?;
            }
        }
        Ok(())
    }
}

impl fmt::Debug for ConnString {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ConnString({:?})", self.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_password_is_masked_in_every_form_and_nothing_else_is() {
        for (url, shown) in [
            (
                "host=db user=ask password=hunter2 dbname=agents",
                "host=db user=ask password=******** dbname=agents",
            ),
            (
                "host=db password = 'two words \\' quote' dbname=x",
                "host=db password = ******** dbname=x",
            ),
            ("host=db user=ask", "host=db user=ask"),
            (
                "postgres://ask:hunter2@db:5432/agents",
                "postgres://ask:********@db:5432/agents",
            ),
            (
                "postgresql://ask:pa/ss@word@db/agents",
                "postgresql://ask:********@db/agents",
            ),
            (
                "postgres://db/agents?user=ask&password=hunter2&sslmode=disable",
                "postgres://db/agents?user=ask&password=********&sslmode=disable",
            ),
            (
                "POSTGRES://db/agents?pass%77ord=hunter2",
                "POSTGRES://db/agents?pass%77ord=********",
            ),
            ("postgres://ask@db/agents", "postgres://ask@db/agents"),
            // Neither form: all of it.
            ("hunter2", MASK),
            ("host=db password='unterminated", MASK),
        ] {
            let conn = ConnString::new(url);
            assert_eq!(conn.to_string(), shown, "{url}");
            assert_eq!(format!("{conn:?}"), format!("ConnString({shown:?})"));
            assert_eq!(conn.expose(), url);
        }
    }

    #[test]
    fn settings_take_a_url_and_a_schema_or_its_default() {
        let settings: PgSettings = serde_json::from_str(r#"{"url":"host=db password=x"}"#).unwrap();
        assert_eq!(settings.schema, DEFAULT_SCHEMA);
        assert_eq!(settings.url.unwrap().expose(), "host=db password=x");
        for (text, says) in [
            (r#"{"url":" "}"#, "`url` is empty"),
            (r#"{"schema":""}"#, "`schema` is empty"),
            (r#"{"host":"db"}"#, "unknown field `host`"),
        ] {
            let error = serde_json::from_str::<PgSettings>(text).unwrap_err();
            assert!(error.to_string().starts_with(says), "{text}: {error}");
        }
    }
}
