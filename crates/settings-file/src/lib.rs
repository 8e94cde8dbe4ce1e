//! A TOML settings file read into any serde type, the way a person can trust it: a secret can
//! stay out of the file (`token_env = "VAR"` reads `token` from `$VAR`), every value keeps where
//! it came from (its line, or its variable), and every error names the file, the line and the
//! column of its key and quotes no value (a value under the wrong key may be a secret).
//!
//! The caller describes its tables ([`Table`]): which keys are secret (and so take an `…_env`
//! key) and which other names a key answers to. [`read`] does the rest:
//!
//! ```
//! use settings_file::{Source, Table, read};
//! use std::path::Path;
//!
//! #[derive(serde::Deserialize)]
//! struct Settings {
//!     db: Db,
//! }
//! #[derive(serde::Deserialize)]
//! struct Db {
//!     url: String,
//!     password: String,
//! }
//!
//! const TABLES: &[Table] = &[Table {
//!     path: "db",
//!     secrets: &[("password", "the database password")],
//!     other_names: &[],
//! }];
//! let text = "[db]\nurl = \"db.internal\"\npassword_env = \"DB_PASSWORD\"\n";
//! let env = |name: &str| match name {
//!     "DB_PASSWORD" => Ok("hunter2".to_owned()),
//!     _ => Err(std::env::VarError::NotPresent),
//! };
//! let (settings, read): (Settings, _) = read(text, Path::new("app.toml"), TABLES, &env).unwrap();
//! assert_eq!(settings.db.password, "hunter2");
//! assert_eq!(read.source("db.url"), Some(&Source::Line(2)));
//! assert!(matches!(read.source("db.password"), Some(Source::Env { variable, .. }) if variable == "DB_PASSWORD"));
//! ```

use std::collections::BTreeMap;
use std::env::VarError;
use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use toml::Spanned;
use toml::de::{DeArray, DeTable, DeValue};

/// Pairs of names: a key and what it is, or another name and the key it stands for.
pub type Names = &'static [(&'static str, &'static str)];

/// What the reader knows of one table of the file.
#[derive(Clone, Copy, Debug)]
pub struct Table {
    /// The table's path: `notify`, `notify.ntfy`, `notify.webhooks[]` (`[]`: each element of an
    /// array of tables).
    pub path: &'static str,
    /// Its secret keys, each with what it is: paths below it (`("ntfy.token", "the ntfy
    /// token")`, `("webhooks[].secret", …)` for each element); a key ending in `[]` is a list,
    /// which its variable gives separated by commas or white space. Each takes
    /// `KEY_env = "VARIABLE"` in its place.
    pub secrets: Names,
    /// Other names its serde type takes for a key (`("notifyAfter", "after")`): the value is the
    /// key's, and a message listing the table's keys leaves them out.
    pub other_names: Names,
}

/// Reads the environment variable an `…_env` key names.
pub type EnvReader<'a> = &'a dyn Fn(&str) -> Result<String, VarError>;

/// Where a value of the file came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// The file, at this line (1-based).
    Line(usize),
    /// The environment variable an `…_env` key names, for a secret.
    Env {
        /// The variable's name.
        variable: String,
        /// What the secret is (its [`Table::secrets`] entry).
        what: &'static str,
    },
}

/// A file that cannot be used: `PATH:LINE:COL: message`, or `PATH: message` without a place.
/// The message quotes no value of the file.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SettingsError(String);

impl SettingsError {
    /// The whole line: `PATH:LINE:COL: message`.
    #[must_use]
    pub fn message(&self) -> &str {
        &self.0
    }
}

/// One key of the file: where its value is, and where that came from.
#[derive(Clone, Debug)]
struct Place {
    key: Range<usize>,
    value: Range<usize>,
    /// The line and column (1-based) of the value.
    at: (usize, usize),
    source: Source,
}

/// What reading a file learnt besides the settings: where every key is and came from, to name a
/// value's source ([`Read::source`]) and to report a later check's error at its key
/// ([`Read::error_at`]).
#[derive(Clone, Debug, Default)]
pub struct Read {
    path: PathBuf,
    keys: BTreeMap<String, Place>,
    unavailable: Vec<Unavailable>,
    in_file: Vec<String>,
}

/// A table of the file left out because a secret of it could not be read: the variable its
/// `…_env` key names is not set, is empty or is not UTF-8. A command that needs the table fails
/// with [`Unavailable::error`]; one that does not goes on without it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unavailable {
    /// The table left out: `notify.ntfy`, `notify.webhooks[1]`, `pg`.
    pub table: String,
    /// The `…_env` key: `notify.ntfy.topic_env`.
    pub key: String,
    /// The variable it names.
    pub variable: String,
    /// The error, at the `…_env` key's line: "the environment variable NAME is not set".
    pub error: SettingsError,
}

impl Read {
    /// The tables left out because a secret of theirs could not be read, in file order.
    #[must_use]
    pub fn unavailable(&self) -> &[Unavailable] {
        &self.unavailable
    }

    /// The secret keys the file gives in itself (not through an `…_env` key), in file order:
    /// such a file should be readable by its owner alone.
    #[must_use]
    pub fn secrets_in_file(&self) -> &[String] {
        &self.in_file
    }

    /// Where the value at `key` (`notify.webhooks[0].url`) came from; `None` for a key the file
    /// does not set (its default).
    #[must_use]
    pub fn source(&self, key: &str) -> Option<&Source> {
        self.keys.get(key).map(|place| &place.source)
    }

    /// An error about the value at `key` found after reading (a check of the settings type): at
    /// the line of the value, and its column when `column`; the variable a secret came from
    /// named in place of its key. Without the key, at the file.
    #[must_use]
    pub fn error_at(&self, key: &str, message: &str, column: bool) -> SettingsError {
        let file = self.path.display();
        match self.keys.get(key) {
            Some(place) if column => {
                let (line, col) = place.at;
                SettingsError(format!(
                    "{file}:{line}:{col}: {}",
                    from_env(key, place, message)
                ))
            }
            Some(place) => SettingsError(format!("{file}:{}: {message}", place.at.0)),
            None => SettingsError(format!("{file}: {message}")),
        }
    }
}

/// Reads `text`, the file at `path`, into `T`: each `KEY_env` key of a secret of `tables` is
/// replaced by `KEY` with the value of the variable it names (read by `env`), then `T` is
/// deserialised. A table whose secret's variable is not set (or empty) is left out, as if the
/// file did not have it, and listed in [`Read::unavailable`]: only a command that needs it fails.
///
/// # Errors
///
/// The first problem, at its line: TOML that does not parse, a key `T` refuses (the message lists
/// the keys it takes, with their `…_env` keys), an `…_env` key that names no variable, a secret
/// given both ways.
pub fn read<T: DeserializeOwned>(
    text: &str,
    path: &Path,
    tables: &[Table],
    env: EnvReader<'_>,
) -> Result<(T, Read), SettingsError> {
    let mut reader = Reader {
        text,
        path,
        env,
        tables,
        keys: BTreeMap::new(),
        unavailable: Vec::new(),
        in_file: Vec::new(),
    };
    let mut doc = DeTable::parse(text).map_err(|e| reader.toml_error(&e))?;
    reader.walk(doc.get_mut(), "", "")?;
    let settings =
        T::deserialize(toml::de::Deserializer::from(doc)).map_err(|e| reader.toml_error(&e))?;
    let read = Read {
        path: path.to_path_buf(),
        keys: reader.keys,
        unavailable: reader.unavailable,
        in_file: reader.in_file,
    };
    Ok((settings, read))
}

/// The table at `path` as its header is written: `[notify.ntfy]`, `[[notify.webhooks]]` for
/// `notify.webhooks[0]`.
#[must_use]
pub fn header(path: &str) -> String {
    match path.rsplit_once('[') {
        Some((array, _)) => format!("[[{}]]", pattern(array)),
        None => format!("[{path}]"),
    }
}

/// The bare word (letters, digits, `_`, `-`) that starts at `offset` of `text`, if any.
fn bare_word(text: &str, offset: usize) -> &str {
    let rest = text.get(offset..).unwrap_or("");
    let end = rest
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-'))
        .unwrap_or(rest.len());
    let word = &rest[..end];
    if word.starts_with(|c: char| c.is_ascii_alphabetic()) && word != "true" && word != "false" {
        word
    } else {
        ""
    }
}

/// `path` with each index of an array left out: `notify.webhooks[0]` is `notify.webhooks[]`.
fn pattern(path: &str) -> String {
    let mut index = false;
    path.chars()
        .filter(|&c| {
            index = (index || c == '[') && c != ']';
            !index || c == '['
        })
        .collect()
}

fn join(base: &str, key: &str) -> String {
    match base {
        "" => key.to_owned(),
        _ => format!("{base}.{key}"),
    }
}

/// Reads the file: the `…_env` secrets into their keys, every key's place and source, errors at
/// their line.
struct Reader<'a> {
    text: &'a str,
    path: &'a Path,
    env: EnvReader<'a>,
    tables: &'a [Table],
    keys: BTreeMap<String, Place>,
    unavailable: Vec<Unavailable>,
    in_file: Vec<String>,
}

impl Reader<'_> {
    fn table(&self, pattern: &str) -> Option<&Table> {
        self.tables.iter().find(|table| table.path == pattern)
    }

    /// The secret keys of the table at `pattern` (a table's own, or one below a table of
    /// [`Table`]): each key, what it is, and whether it is a list.
    fn secrets(&self, pattern: &str) -> Vec<(String, &'static str, bool)> {
        let all = self.tables.iter().flat_map(|table| {
            (table.secrets.iter()).map(|&(key, what)| (join(table.path, key), what))
        });
        all.filter_map(|(path, what)| {
            let (table, key) = path.rsplit_once('.')?;
            let (key, list) = key
                .strip_suffix("[]")
                .map_or((key, false), |key| (key, true));
            (table == pattern).then(|| (key.to_owned(), what, list))
        })
        .collect()
    }

    /// The line and column (1-based) of `offset`.
    fn at(&self, offset: usize) -> (usize, usize) {
        let before = self.text.get(..offset).unwrap_or(self.text);
        let column = before.rsplit('\n').next().unwrap_or("").chars().count() + 1;
        (before.matches('\n').count() + 1, column)
    }

    fn place(&self, key: Range<usize>, value: Range<usize>, source: Option<Source>) -> Place {
        let at = self.at(value.start);
        let source = source.unwrap_or(Source::Line(at.0));
        Place {
            key,
            value,
            at,
            source,
        }
    }

    fn error(&self, span: &Range<usize>, message: &str) -> SettingsError {
        let (line, column) = self.at(span.start);
        SettingsError(format!(
            "{}:{line}:{column}: {message}",
            self.path.display()
        ))
    }

    /// Reads the secrets the `…_env` keys of `table` (at `path`; `pattern` without indexes) name
    /// into their keys, and notes where every key is and came from. `false`: a secret's variable
    /// is not set, and the table is to be left out (noted in `unavailable`).
    fn walk(
        &mut self,
        table: &mut DeTable<'_>,
        path: &str,
        pattern: &str,
    ) -> Result<bool, SettingsError> {
        for (key, what, list) in self.secrets(pattern) {
            let env_key = format!("{key}_env");
            let Some((name_key, name)) = table.remove_entry(env_key.as_str()) else {
                if table.contains_key(key.as_str()) {
                    self.in_file.push(join(path, &key));
                }
                continue;
            };
            let span = name.span();
            if table.contains_key(key.as_str()) {
                return Err(self.error(&span, &format!("give `{key}` or `{env_key}`, not both")));
            }
            let (variable, text) = match self.variable(&env_key, name.get_ref(), &span)? {
                Ok(found) => found,
                Err((variable, error)) => {
                    self.unavailable.push(Unavailable {
                        table: path.to_owned(),
                        key: join(path, &env_key),
                        variable,
                        error,
                    });
                    return Ok(false);
                }
            };
            let item =
                |text: &str| Spanned::new(span.clone(), DeValue::String(text.to_owned().into()));
            let value = if list {
                let items = text.split(|c: char| c == ',' || c.is_whitespace());
                let items: DeArray<'_> = items.filter(|t| !t.is_empty()).map(item).collect();
                if items.is_empty() {
                    let message =
                        format!("`{env_key}`: the environment variable {variable} holds none");
                    return Err(self.error(&span, &message));
                }
                DeValue::Array(items)
            } else {
                item(&text).into_inner()
            };
            let source = Source::Env { variable, what };
            let place = self.place(name_key.span(), span.clone(), Some(source));
            self.keys.insert(join(path, &key), place);
            table.insert(
                Spanned::new(name_key.span(), key.into()),
                Spanned::new(span, value),
            );
        }
        let other_names = self
            .table(pattern)
            .map_or(&[][..], |table| table.other_names);
        let mut left_out = Vec::new();
        for (key, value) in table.iter_mut() {
            // A value under another name of its key (`notifyAfter`) is the key's.
            let name = (other_names.iter().find(|n| n.0 == key.get_ref()))
                .map_or(key.get_ref().as_ref(), |n| n.1);
            let (path, pattern) = (join(path, name), join(pattern, name));
            let key_span = key.span();
            let place = self.place(key_span.clone(), value.span(), None);
            self.keys.entry(path.clone()).or_insert(place);
            match value.get_mut() {
                DeValue::Table(inner) => {
                    let kept = self.walk(inner, &path, &pattern)?;
                    if !kept {
                        left_out.push(key.get_ref().to_string());
                    }
                }
                DeValue::Array(items) => {
                    let mut keep = Vec::with_capacity(items.len());
                    for (i, item) in items.iter_mut().enumerate() {
                        let place = self.place(key_span.clone(), item.span(), None);
                        let kept = match item.get_mut() {
                            DeValue::Table(inner) => {
                                let path = format!("{path}[{i}]");
                                self.keys.insert(path.clone(), place);
                                self.walk(inner, &path, &format!("{pattern}[]"))?
                            }
                            _ => true,
                        };
                        keep.push(kept);
                    }
                    if keep.contains(&false) {
                        let all = std::mem::replace(items, std::iter::empty().collect());
                        *items = (all.into_iter().zip(keep))
                            .filter_map(|(item, kept)| kept.then_some(item))
                            .collect();
                    }
                }
                _ => {}
            }
        }
        for key in left_out {
            table.remove(key.as_str());
        }
        Ok(true)
    }

    /// The variable an `…_env` key names (`name`, at `span`), and its value; the inner error
    /// names a variable that is not set, empty or not UTF-8.
    #[allow(clippy::type_complexity)]
    fn variable(
        &self,
        env_key: &str,
        name: &DeValue<'_>,
        span: &Range<usize>,
    ) -> Result<Result<(String, String), (String, SettingsError)>, SettingsError> {
        let name = match name {
            DeValue::String(name)
                if !name.is_empty()
                    && !name.starts_with(|c: char| c.is_ascii_digit())
                    && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') =>
            {
                name.to_string()
            }
            _ => {
                let message =
                    format!("`{env_key}` names an environment variable: letters, digits and '_'");
                return Err(self.error(span, &message));
            }
        };
        let problem = match (self.env)(&name) {
            Ok(value) if !value.is_empty() => return Ok(Ok((name, value))),
            Ok(_) => "is empty",
            Err(VarError::NotPresent) => "is not set",
            Err(VarError::NotUnicode(_)) => "is not UTF-8",
        };
        let message = format!("`{env_key}`: the environment variable {name} {problem}");
        let error = self.error(span, &message);
        Ok(Err((name, error)))
    }

    /// An error of the TOML reader or of the settings type, at its line. Its message quotes no
    /// value; one listing a table's keys lists its `…_env` keys too; one about a secret read from
    /// a variable names the variable.
    fn toml_error(&self, error: &toml::de::Error) -> SettingsError {
        let mut message = toml_message(error.message());
        let Some(span) = error.span() else {
            return SettingsError(format!("{}: {message}", self.path.display()));
        };
        // A bare word where a value goes (`mode = timed`): TOML reads it as a broken boolean
        // or number; the person meant text.
        let word = bare_word(self.text, span.start);
        if message.starts_with("invalid ") && !word.is_empty() {
            message = format!("{message}: text needs quotes, as in \"{word}\"");
        }
        if let Some((path, _)) = self.keys.iter().find(|(_, place)| place.key == span) {
            let table = path.rsplit_once('.').map_or("", |(table, _)| table);
            message = self.with_env_keys(&message, &pattern(table));
        }
        let missing = message
            .strip_prefix("missing field `")
            .and_then(|rest| rest.strip_suffix('`'));
        if let Some(field) = missing {
            let secret = |path: &String| self.secrets(&pattern(path)).iter().any(|s| s.0 == field);
            let table =
                (self.keys.iter()).find(|(path, place)| place.value == span && secret(path));
            if let Some((path, _)) = table {
                message = format!("{} needs `{field}` or `{field}_env`", header(path));
            }
        }
        match self.keys.iter().find(|(_, place)| place.value == span) {
            Some((path, place)) => self.error(&span, &from_env(path, place, &message)),
            None => self.error(&span, &message),
        }
    }

    /// serde's `unknown field `x`, expected …` for the table at `pattern`, with the keys it
    /// takes: its other names left out, each secret key's `…_env` key after it.
    fn with_env_keys(&self, message: &str, pattern: &str) -> String {
        let Some((head, expected)) = message.split_once(", expected ") else {
            return message.to_owned();
        };
        let secrets = self.secrets(pattern);
        let other_names = self
            .table(pattern)
            .map_or(&[][..], |table| table.other_names);
        let other = |key: &str| other_names.iter().any(|name| name.0 == key);
        let mut keys = Vec::new();
        for key in (expected.split('`').skip(1).step_by(2)).filter(|key| !other(key)) {
            keys.push(format!("`{key}`"));
            if secrets.iter().any(|s| s.0 == key) {
                keys.push(format!("`{key}_env`"));
            }
        }
        let expected = match keys.as_slice() {
            _ if !head.starts_with("unknown field `") => return message.to_owned(),
            [] => return message.to_owned(),
            [one] => one.clone(),
            [a, b] => format!("{a} or {b}"),
            all => format!("one of {}", all.join(", ")),
        };
        format!("{head}, expected {expected}")
    }
}

/// `message` about the value at `path`, naming the variable a secret was read from: in place of
/// its key where the message names it, else in front.
fn from_env(path: &str, place: &Place, message: &str) -> String {
    let Source::Env { variable, what } = &place.source else {
        return message.to_owned();
    };
    let key = format!("`{}`", path.rsplit('.').next().unwrap_or(path));
    if message.contains(&key) {
        message.replace(&key, &format!("env {variable}"))
    } else {
        format!("{what} in {variable}: {message}")
    }
}

/// A TOML error's message, on one line, quoting no value of the file: serde's messages quote a
/// string of the wrong type (`invalid type: string "…"`), which may be a secret put under the
/// wrong key. Key names (in backticks) stay.
fn toml_message(message: &str) -> String {
    let line = message
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join("; ");
    if line.contains("whsec_") {
        return "the file is not a valid configuration (a value near a secret is wrong)".to_owned();
    }
    // serde writes a string it did not expect as `string "…"` (Rust's escaping inside).
    let mut out = String::with_capacity(line.len());
    let mut rest = line.as_str();
    while let Some(found) = rest.find("string \"") {
        let open = found + "string \"".len();
        out.push_str(&rest[..open]);
        out.push('…');
        let mut escaped = false;
        let close = rest[open..].char_indices().find_map(|(i, c)| {
            let end = !escaped && c == '"';
            escaped = !escaped && c == '\\';
            end.then_some(open + i)
        });
        if let Some(close) = close {
            rest = &rest[close..];
        } else {
            out.push('"');
            rest = "";
        }
    }
    out.push_str(rest);
    out
}

/// Where a program's settings file is looked for, and how that place was found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Located {
    /// The file's path.
    pub path: PathBuf,
    /// How it was found: the caller's name for a file it was given (`--config`),
    /// `$XDG_CONFIG_HOME` or `$HOME`.
    pub how: &'static str,
    /// The file was given: it must exist.
    pub given: bool,
}

/// Where the settings file of the program `app` is: `given` (a path and how it was given), else
/// `$XDG_CONFIG_HOME/APP/config.toml` (an absolute one), else `$HOME/.config/APP/config.toml`;
/// `None` when neither variable is set. `var` reads the environment.
pub fn locate(
    app: &str,
    given: Option<(&Path, &'static str)>,
    var: impl Fn(&str) -> Option<std::ffi::OsString>,
) -> Option<Located> {
    if let Some((path, how)) = given {
        let path = path.to_path_buf();
        return Some(Located {
            path,
            how,
            given: true,
        });
    }
    let var = |name| var(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    let (dir, how) = match var("XDG_CONFIG_HOME").filter(|dir| dir.is_absolute()) {
        Some(dir) => (dir, "$XDG_CONFIG_HOME"),
        None => (var("HOME")?.join(".config"), "$HOME"),
    };
    let path = dir.join(app).join("config.toml");
    Some(Located {
        path,
        how,
        given: false,
    })
}

/// The largest settings file read: far beyond any real one, so a wrong path (a device, a log)
/// fails at once instead of filling memory.
pub const MAX_FILE: u64 = 1024 * 1024;

impl Located {
    /// The file's text; `None` when it does not exist and was not given.
    ///
    /// # Errors
    ///
    /// It cannot be read, is not a regular file (a FIFO, a device, a directory), is larger than
    /// [`MAX_FILE`], is not UTF-8 text, is a symbolic link to nothing, or was given and does
    /// not exist.
    pub fn read(&self) -> Result<Option<String>, SettingsError> {
        use std::io::Read as _;
        let path = self.path.display();
        let cannot = |e: std::io::Error| {
            SettingsError(format!("cannot read the configuration file {path}: {e}"))
        };
        let meta = match std::fs::metadata(&self.path) {
            Ok(meta) => meta,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                // A link left pointing at nothing is a mistake to say, not "no file".
                if std::fs::symlink_metadata(&self.path).is_ok() {
                    return Err(SettingsError(format!(
                        "{path}: the configuration file is a symbolic link to a file that does not exist"
                    )));
                }
                return if self.given { Err(cannot(e)) } else { Ok(None) };
            }
            Err(e) => return Err(cannot(e)),
        };
        if !meta.is_file() {
            return Err(SettingsError(format!(
                "{path}: the configuration file is not a regular file ({})",
                file_kind(&meta)
            )));
        }
        let too_big = || {
            SettingsError(format!(
                "{path}: the configuration file is larger than {} KiB",
                MAX_FILE / 1024
            ))
        };
        if meta.len() > MAX_FILE {
            return Err(too_big());
        }
        let mut bytes = Vec::new();
        let file = std::fs::File::open(&self.path).map_err(cannot)?;
        file.take(MAX_FILE + 1)
            .read_to_end(&mut bytes)
            .map_err(cannot)?;
        if bytes.len() as u64 > MAX_FILE {
            return Err(too_big());
        }
        String::from_utf8(bytes)
            .map(Some)
            .map_err(|_| SettingsError(format!("{path}: the configuration file is not UTF-8 text")))
    }

    /// Whether users other than its owner may read the file (on unix; never elsewhere).
    #[must_use]
    pub fn readable_by_others(&self) -> bool {
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            std::fs::metadata(&self.path).is_ok_and(|m| m.permissions().mode() & 0o044 != 0)
        }
        #[cfg(not(unix))]
        false
    }
}

/// What a path that is not a regular file is, for an error.
fn file_kind(meta: &std::fs::Metadata) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt as _;
        let kind = meta.file_type();
        if kind.is_fifo() {
            return "a FIFO";
        }
        if kind.is_char_device() || kind.is_block_device() {
            return "a device";
        }
        if kind.is_socket() {
            return "a socket";
        }
    }
    if meta.is_dir() {
        "a directory"
    } else {
        "not a file"
    }
}

/// The settings in effect as a person reads them, each value with where it came from:
/// `key = value  # from FILE:LINE` (or `env VARIABLE`, or `built-in default`), under the header
/// of its table. The caller writes each key it has; each line goes through its `escape` (which
/// makes it safe for a terminal) as it is written.
pub struct Printout<'a> {
    out: String,
    read: &'a Read,
    file: String,
    table: String,
    escape: &'a dyn Fn(&str) -> String,
}

impl<'a> Printout<'a> {
    /// A printout of settings read by `read` (the default [`Read`] when no file was) from `file`.
    #[must_use]
    pub fn new(read: &'a Read, file: &Path, escape: &'a dyn Fn(&str) -> String) -> Self {
        let (out, file) = (String::new(), file.display().to_string());
        Self {
            out,
            read,
            file,
            table: String::new(),
            escape,
        }
    }

    /// A line.
    pub fn line(&mut self, text: &str) {
        self.out.push_str(&(self.escape)(text));
        self.out.push('\n');
    }

    /// A blank line and the header of the table at `path`; the keys after it are its.
    pub fn table(&mut self, path: &str) {
        self.line("");
        self.line(&header(path));
        path.clone_into(&mut self.table);
    }

    /// `key = value  # from SOURCE` (the `# from` at one column, past it on a longer line);
    /// without a value, `# key: not set (unset)`.
    pub fn entry(&mut self, key: &str, value: Option<String>, unset: &str) {
        let Some(value) = value else {
            return self.line(&format!("# {key}: not set ({unset})"));
        };
        let source = match self.read.source(&join(&self.table, key)) {
            Some(Source::Line(line)) => format!("{}:{line}", self.file),
            Some(env) => env.to_string(),
            None => "built-in default".to_owned(),
        };
        let entry = format!("{key} = {value}");
        self.line(&format!("{entry:<40}  # from {source}"));
    }

    /// `key = value` of a key that always has one (its built-in default).
    pub fn set(&mut self, key: &str, value: String) {
        self.entry(key, Some(value), "");
    }

    /// The text.
    #[must_use]
    pub fn finish(self) -> String {
        self.out
    }
}

/// What a printout shows in place of a secret.
pub const MASK: &str = "********";

/// `text` as a TOML basic string.
#[must_use]
pub fn quote(text: &str) -> String {
    format!("\"{}\"", text.replace('\\', "\\\\").replace('"', "\\\""))
}

impl fmt::Display for Source {
    /// `PATH:LINE` is the caller's to write (it knows the file's name): this writes `line N` or
    /// `env VARIABLE`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Line(line) => write!(f, "line {line}"),
            Self::Env { variable, .. } => write!(f, "env {variable}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_toml_message_quotes_no_value() {
        assert_eq!(
            toml_message("invalid type: string \"hunter2\", expected a boolean"),
            "invalid type: string \"…\", expected a boolean"
        );
        assert_eq!(
            toml_message(r#"invalid value: string "a\"b", expected x; string "c"#),
            r#"invalid value: string "…", expected x; string "…""#
        );
        for kept in [
            "unknown field `bel`, expected `bell`",
            "invalid basic string, expected `\"`",
        ] {
            assert_eq!(toml_message(kept), kept);
        }
    }

    #[test]
    fn the_file_is_the_given_one_else_xdg_else_home() {
        let env = |vars: &'static [(&'static str, &'static str)]| {
            move |name: &str| vars.iter().find(|v| v.0 == name).map(|v| v.1.into())
        };
        let given = locate("app", Some((Path::new("x.toml"), "--config")), env(&[]));
        assert_eq!(
            given.map(|at| (at.path, at.given)),
            Some(("x.toml".into(), true))
        );
        let xdg = locate(
            "app",
            None,
            env(&[("XDG_CONFIG_HOME", "/x"), ("HOME", "/h")]),
        );
        assert_eq!(xdg.map(|at| at.path), Some("/x/app/config.toml".into()));
        // A relative XDG_CONFIG_HOME is ignored, as the XDG specification says.
        let home = locate(
            "app",
            None,
            env(&[("XDG_CONFIG_HOME", "x"), ("HOME", "/h")]),
        );
        assert_eq!(
            home.map(|at| (at.path, at.how)),
            Some(("/h/.config/app/config.toml".into(), "$HOME"))
        );
        assert_eq!(locate("app", None, env(&[("HOME", "")])), None);
    }

    #[test]
    fn secrets_given_in_the_file_are_named_and_those_from_the_environment_are_not() {
        let tables = [Table {
            path: "t",
            secrets: &[("token", "a token"), ("key", "a key")],
            other_names: &[],
        }];
        let env = |_: &str| Ok("s3cret".to_owned());
        let text = "[t]\ntoken = \"in-file\"\nkey_env = \"KEY\"\n";
        let (_, given): (toml::Table, Read) =
            read(text, Path::new("f.toml"), &tables, &env).unwrap();
        assert_eq!(given.secrets_in_file(), ["t.token"]);
        let text = "[t]\ntoken_env = \"TOKEN\"\n";
        let (_, from_env): (toml::Table, Read) =
            read(text, Path::new("f.toml"), &tables, &env).unwrap();
        assert!(from_env.secrets_in_file().is_empty());
    }

    #[test]
    fn a_printout_names_where_each_value_came_from() {
        let tables = [Table {
            path: "t",
            secrets: &[("token", "a token")],
            other_names: &[],
        }];
        let env = |_: &str| Ok("s3cret".to_owned());
        let text = "[t]\nname = \"a\"\ntoken_env = \"TOKEN\"\n";
        let (_, read): (toml::Table, Read) =
            read(text, Path::new("f.toml"), &tables, &env).unwrap();
        let escape = |line: &str| line.to_owned();
        let mut out = Printout::new(&read, Path::new("f.toml"), &escape);
        out.table("t");
        out.set("name", quote("a"));
        out.set("token", quote("***"));
        out.set("other", "1".to_owned());
        out.entry("unset", None, "nothing");
        let lines: Vec<String> = out
            .finish()
            .lines()
            .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
            .collect();
        assert_eq!(
            lines,
            [
                "",
                "[t]",
                "name = \"a\" # from f.toml:2",
                "token = \"***\" # from env TOKEN",
                "other = 1 # from built-in default",
                "# unset: not set (nothing)",
            ]
        );
    }

    #[test]
    fn a_path_names_its_table_as_its_header_does() {
        assert_eq!(pattern("notify.webhooks[12].url"), "notify.webhooks[].url");
        assert_eq!(header("notify.webhooks[0]"), "[[notify.webhooks]]");
        assert_eq!(header("notify.ntfy"), "[notify.ntfy]");
    }

    #[test]
    fn a_table_whose_secret_is_not_set_is_left_out_and_said() {
        let text = "[t]\nname = \"a\"\ntoken_env = \"TOKEN\"\n[u]\nname = \"b\"\n";
        let tables = [
            Table {
                path: "t",
                secrets: &[("token", "the token")],
                other_names: &[],
            },
            Table {
                path: "u",
                secrets: &[],
                other_names: &[],
            },
        ];
        let env = |_: &str| Err(VarError::NotPresent);
        let (value, read): (toml::Value, Read) =
            read(text, Path::new("f.toml"), &tables, &env).unwrap();
        assert!(value.get("t").is_none(), "{value:?}");
        assert_eq!(value["u"]["name"].as_str(), Some("b"));
        let [unavailable] = read.unavailable() else {
            panic!("{:?}", read.unavailable());
        };
        assert_eq!(unavailable.table, "t");
        assert_eq!(unavailable.key, "t.token_env");
        assert_eq!(
            unavailable.error.message(),
            "f.toml:3:13: `token_env`: the environment variable TOKEN is not set"
        );
    }
}
