//! `ask-user`'s configuration file, and `ask-user config`, which prints the configuration in
//! effect and where each value came from. The crate README's section "The configuration file" is
//! the file's contract: which file is read, every key with its default, the secrets and their
//! `…_env` keys, the errors (`PATH:LINE:COL: message`) and the printout.
//!
//! Each library owns its table as one serde type with its defaults and checks: [`WebSettings`]
//! (`[web]`), [`NotifyConfig`] (`[notify]`), [`PgSettings`] (`[pg]`), [`McpSettings`] (`[mcp]`).
//! Here is the binary's part: the top-level keys, finding the file, reading the secret an `X_env`
//! key names into `X` (for the keys a library declares secret), where each value came from (its
//! line or its variable), errors at the line of their key, and the printout.

use std::collections::BTreeMap;
use std::env::VarError;
use std::io::Write as _;
use std::ops::Range;
use std::path::{Path, PathBuf};

use ask_user_mcp::{McpSettings, TlsFiles, TlsFilesError};
use ask_user_notify::{NotifyConfig, redacted_url};
use ask_user_pg::PgSettings;
use ask_user_terminal::sanitize::visible;
use ask_user_web::WebSettings;
use clap::{Args, ValueEnum};
use serde::de::Error as _;
use serde::{Deserialize, Deserializer};
use toml::Spanned;
use toml::de::{DeTable, DeValue};

use super::{CliError, Exit, Mode};

/// What `ask-user config` prints in place of a secret.
const MASK: &str = "********";

/// Pairs of names: a key and what it is, another name and the key it stands for.
type Names = &'static [(&'static str, &'static str)];

/// The libraries' tables: each one's secret keys (paths below it with what each is, `[]` for each
/// element of a list) and the other names its type takes beside its keys.
const TABLES: [(&str, Names, Names); 3] = [
    (
        "notify",
        NotifyConfig::SECRET_KEYS,
        NotifyConfig::JSON_NAMES,
    ),
    ("pg", PgSettings::SECRET_KEYS, &[]),
    ("mcp", McpSettings::SECRET_KEYS, &[]),
];

/// The configuration file's settings (the built-in defaults when no file was read), and where
/// each came from.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Config {
    /// `state_dir`: where `mcp` keeps its session logs.
    #[serde(default, deserialize_with = "state_dir")]
    pub(crate) state_dir: Option<PathBuf>,
    /// `mode`: the tool definition.
    #[serde(default, deserialize_with = "mode")]
    pub(crate) mode: Option<Mode>,
    /// `timeout`: the timed tool's default window in seconds (-1: indefinitely).
    #[serde(default, deserialize_with = "timeout")]
    pub(crate) timeout: Option<i64>,
    #[serde(default)]
    pub(crate) web: WebSettings,
    /// `[notify]`, the base the `--notify-*` flags add to.
    #[serde(default)]
    pub(crate) notify: NotifyConfig,
    #[serde(default)]
    pub(crate) pg: PgSettings,
    #[serde(default)]
    pub(crate) mcp: McpSettings,
    /// `[web]` `tls_cert` and `tls_key`, checked.
    #[serde(skip)]
    pub(crate) web_tls: Option<TlsFiles>,
    /// `[mcp]` `tls_cert` and `tls_key`, checked.
    #[serde(skip)]
    pub(crate) mcp_tls: Option<TlsFiles>,
    /// Every key of the file by its path (`notify.webhooks[0].url`): where it is and came from.
    #[serde(skip)]
    keys: BTreeMap<String, Key>,
}

fn state_dir<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<PathBuf>, D::Error> {
    let text = String::deserialize(deserializer)?;
    let path = ask_user_mcp::home_path(&text);
    path.map(Some)
        .map_err(|e| D::Error::custom(format_args!("`state_dir` {e}")))
}

fn mode<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Mode>, D::Error> {
    Mode::from_str(&String::deserialize(deserializer)?, false)
        .map(Some)
        .map_err(|_| D::Error::custom("`mode` is `legacy` or `timed`"))
}

fn timeout<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<i64>, D::Error> {
    let secs = i64::deserialize(deserializer)?;
    if !tool_ask_user::is_valid_timeout(secs) {
        return Err(D::Error::custom(format_args!(
            "`timeout` is -1 (wait indefinitely) or 1 to {} seconds",
            tool_ask_user::MAX_TIMEOUT_SECS
        )));
    }
    Ok(Some(secs))
}

/// A key of the file: where the key and its value are, and where the value came from.
#[derive(Debug)]
struct Key(Range<usize>, Range<usize>, Source);

/// Where a value of the file came from.
#[derive(Debug)]
enum Source {
    /// The file, at this line (1-based).
    Line(usize),
    /// The variable (its name) an `…_env` key names, for a secret (what it is).
    Env(String, &'static str),
}

/// A loaded configuration.
#[derive(Debug)]
pub(crate) struct Loaded {
    /// The settings (the defaults when no file was read).
    pub(crate) config: Config,
    /// The file read, if one was.
    pub(crate) path: Option<PathBuf>,
    /// Where the file was looked for, and how that place was found (`--config`,
    /// `$XDG_CONFIG_HOME`, `$HOME`); `None` when neither `XDG_CONFIG_HOME` nor `HOME` is set.
    pub(crate) looked_at: Option<(PathBuf, &'static str)>,
}

impl Loaded {
    /// The file `--config` named, to hand to a process this one starts (an inbox).
    pub(crate) fn explicit_path(&self) -> Option<&Path> {
        let flagged = matches!(self.looked_at, Some((_, "--config")));
        self.path.as_deref().filter(|_| flagged)
    }
}

/// Loads the configuration: the file `explicit` names (it must exist), else
/// `$XDG_CONFIG_HOME/ask-user/config.toml` (an absolute one), else
/// `$HOME/.config/ask-user/config.toml`, when it exists; else the built-in defaults. Secrets
/// named by `…_env` keys are read from the environment here.
pub(crate) fn load(explicit: Option<&Path>) -> Result<Loaded, CliError> {
    let var = |name| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let looked_at = match explicit {
        Some(path) => Some((path.to_path_buf(), "--config")),
        None => match var("XDG_CONFIG_HOME").filter(|dir| dir.is_absolute()) {
            Some(dir) => Some((dir.join("ask-user/config.toml"), "$XDG_CONFIG_HOME")),
            None => var("HOME").map(|home| (home.join(".config/ask-user/config.toml"), "$HOME")),
        },
    };
    let mut loaded = Loaded {
        config: Config::default(),
        path: None,
        looked_at,
    };
    let Some((path, how)) = &loaded.looked_at else {
        return Ok(loaded);
    };
    let text = match std::fs::read(path) {
        Ok(bytes) => String::from_utf8(bytes).map_err(|_| {
            let path = path.display();
            bad_config(format!("{path}: the configuration file is not UTF-8 text"))
        })?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && *how != "--config" => {
            return Ok(loaded);
        }
        Err(e) => {
            let path = path.display();
            return Err(bad_config(format!(
                "cannot read the configuration file {path}: {e}"
            )));
        }
    };
    loaded.config = parse(&text, path, &|name| std::env::var(name))?;
    loaded.path = Some(path.clone());
    Ok(loaded)
}

fn bad_config(message: String) -> CliError {
    CliError::new("BAD_CONFIG", message, Exit::Usage)
}

// --- reading the file --------------------------------------------------------------------------

/// Reads the environment variable an `…_env` key names.
type EnvReader<'a> = &'a dyn Fn(&str) -> Result<String, VarError>;

/// Parses and checks a configuration file's text; `path` names it in errors and sources, `env`
/// reads the variables `…_env` keys name.
pub(crate) fn parse(text: &str, path: &Path, env: EnvReader<'_>) -> Result<Config, CliError> {
    let mut reader = Reader {
        text,
        path,
        env,
        keys: BTreeMap::new(),
    };
    let mut doc = DeTable::parse(text).map_err(|e| reader.toml_error(&e))?;
    reader.walk(doc.get_mut(), "", "")?;
    let mut config = Config::deserialize(toml::de::Deserializer::from(doc))
        .map_err(|e| reader.toml_error(&e))?;
    let tls = |table: &str, e: TlsFilesError| {
        // `tls_cert` without `tls_key` is reported at its line alone, as it always was.
        let column = e != TlsFilesError::CertAlone;
        reader.key_error(&format!("{table}.{}", e.key()), &e.to_string(), column)
    };
    config.web_tls = config.web.tls().map_err(|e| tls("web", e))?;
    config.mcp_tls = config.mcp.tls().map_err(|e| tls("mcp", e))?;
    config.notify.check().map_err(|e| {
        let key = e
            .key()
            .map_or_else(|| "notify".into(), |key| format!("notify.{key}"));
        reader.key_error(&key, &e.to_string(), true)
    })?;
    config.keys = reader.keys;
    Ok(config)
}

/// The secret keys of the table at `pattern` (its path, `[]` for an element of an array): each
/// key, what it is, and whether it is a list.
fn secrets(pattern: &str) -> Vec<(String, &'static str, bool)> {
    let all = TABLES.iter().flat_map(|(root, secrets, _)| {
        secrets
            .iter()
            .map(move |(key, what)| (format!("{root}.{key}"), *what))
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

/// The table at `path` as its header is written: `[notify.ntfy]`, `[[notify.webhooks]]`.
fn header(path: &str) -> String {
    match path.rsplit_once('[') {
        Some((array, _)) => format!("[[{}]]", pattern(array)),
        None => format!("[{path}]"),
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

/// Reads the file: the `…_env` secrets into their keys, every key's place and source, errors at
/// their line.
struct Reader<'a> {
    text: &'a str,
    path: &'a Path,
    env: EnvReader<'a>,
    keys: BTreeMap<String, Key>,
}

impl Reader<'_> {
    fn line(&self, offset: usize) -> usize {
        let before = self.text.get(..offset).unwrap_or(self.text);
        before.matches('\n').count() + 1
    }

    fn error(&self, span: &Range<usize>, message: &str) -> CliError {
        let before = self.text.get(..span.start).unwrap_or(self.text);
        let column = before.rsplit('\n').next().unwrap_or("").chars().count() + 1;
        let (path, line) = (self.path.display(), self.line(span.start));
        bad_config(format!("{path}:{line}:{column}: {message}"))
    }

    /// Reads the secrets the `…_env` keys of `table` (at `path`; `pattern` as [`secrets`] takes
    /// it) name into their keys, and notes where every key is and came from.
    fn walk(&mut self, table: &mut DeTable<'_>, path: &str, pattern: &str) -> Result<(), CliError> {
        let join = |base: &str, key: &str| match base {
            "" => key.to_owned(),
            _ => format!("{base}.{key}"),
        };
        for (key, what, list) in secrets(pattern) {
            let env_key = format!("{key}_env");
            let Some((name_key, name)) = table.remove_entry(env_key.as_str()) else {
                continue;
            };
            let span = name.span();
            if table.contains_key(key.as_str()) {
                return Err(self.error(&span, &format!("give `{key}` or `{env_key}`, not both")));
            }
            let (name, text) = self.variable(&env_key, name.get_ref(), &span)?;
            let item =
                |text: &str| Spanned::new(span.clone(), DeValue::String(text.to_owned().into()));
            let value = if list {
                let items = text.split(|c: char| c == ',' || c.is_whitespace());
                let items: toml::de::DeArray<'_> =
                    items.filter(|t| !t.is_empty()).map(item).collect();
                if items.is_empty() {
                    let message =
                        format!("`{env_key}`: the environment variable {name} holds none");
                    return Err(self.error(&span, &message));
                }
                DeValue::Array(items)
            } else {
                item(&text).into_inner()
            };
            let (source, key_span) = (Source::Env(name, what), name_key.span());
            let place = Key(key_span.clone(), span.clone(), source);
            self.keys.insert(join(path, &key), place);
            table.insert(
                Spanned::new(key_span, key.into()),
                Spanned::new(span, value),
            );
        }
        for (key, value) in table.iter_mut() {
            // A value under another name of its key (`notifyAfter`) is the key's.
            let table = TABLES.iter().find(|table| table.0 == pattern);
            let name = (table.and_then(|t| t.2.iter().find(|n| n.0 == key.get_ref())))
                .map_or(key.get_ref().as_ref(), |n| n.1);
            let (path, pattern) = (join(path, name), join(pattern, name));
            let (key, span) = (key.span(), value.span());
            let source = Source::Line(self.line(span.start));
            (self.keys.entry(path.clone())).or_insert(Key(key.clone(), span, source));
            match value.get_mut() {
                DeValue::Table(inner) => self.walk(inner, &path, &pattern)?,
                DeValue::Array(items) => {
                    for (i, item) in items.iter_mut().enumerate() {
                        let (span, line) = (item.span(), self.line(item.span().start));
                        if let DeValue::Table(inner) = item.get_mut() {
                            let path = format!("{path}[{i}]");
                            let place = Key(key.clone(), span, Source::Line(line));
                            self.keys.insert(path.clone(), place);
                            self.walk(inner, &path, &format!("{pattern}[]"))?;
                        }
                    }
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// The variable an `…_env` key names (`name`, at `span`), and its value.
    fn variable(
        &self,
        env_key: &str,
        name: &DeValue<'_>,
        span: &Range<usize>,
    ) -> Result<(String, String), CliError> {
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
            Ok(value) if !value.is_empty() => return Ok((name, value)),
            Ok(_) => "is empty",
            Err(VarError::NotPresent) => "is not set",
            Err(VarError::NotUnicode(_)) => "is not UTF-8",
        };
        let message = format!("`{env_key}`: the environment variable {name} {problem}");
        Err(self.error(span, &message))
    }

    /// An error of the TOML reader or of a library's serde type, at its line. Its message quotes
    /// no value; one listing a table's keys lists its `…_env` keys too; one about a secret read
    /// from a variable names the variable.
    fn toml_error(&self, error: &toml::de::Error) -> CliError {
        let mut message = toml_message(error.message());
        let Some(span) = error.span() else {
            return bad_config(format!("{}: {message}", self.path.display()));
        };
        if let Some((path, _)) = self.keys.iter().find(|(_, key)| key.0 == span) {
            let table = path.rsplit_once('.').map_or("", |(table, _)| table);
            message = with_env_keys(&message, &pattern(table));
        }
        let missing = message
            .strip_prefix("missing field `")
            .and_then(|rest| rest.strip_suffix('`'));
        if let Some(field) = missing {
            let secret = |path: &String| secrets(&pattern(path)).iter().any(|s| s.0 == field);
            let table = (self.keys.iter()).find(|(path, key)| key.1 == span && secret(path));
            if let Some((path, _)) = table {
                message = format!("{} needs `{field}` or `{field}_env`", header(path));
            }
        }
        match self.keys.iter().find(|(_, key)| key.1 == span) {
            Some((path, key)) => self.error(&span, &from_env(path, key, &message)),
            None => self.error(&span, &message),
        }
    }

    /// A library's error about the key at `path`, at the line (and `column`) of its value.
    fn key_error(&self, path: &str, message: &str, column: bool) -> CliError {
        match self.keys.get(path) {
            Some(key) if column => self.error(&key.1, &from_env(path, key, message)),
            Some(key) => {
                let (file, line) = (self.path.display(), self.line(key.1.start));
                bad_config(format!("{file}:{line}: {message}"))
            }
            None => bad_config(format!("{}: {message}", self.path.display())),
        }
    }
}

/// `message` about the value at `path`, naming the variable a secret was read from: in place of
/// its key where the message names it, else in front.
fn from_env(path: &str, key: &Key, message: &str) -> String {
    let Source::Env(name, what) = &key.2 else {
        return message.to_owned();
    };
    let key = format!("`{}`", path.rsplit('.').next().unwrap_or(path));
    if message.contains(&key) {
        message.replace(&key, &format!("env {name}"))
    } else {
        format!("{what} in {name}: {message}")
    }
}

/// serde's `unknown field `x`, expected …` for the table at `pattern`, with the keys it takes:
/// the other names of its type left out, each secret key's `…_env` key after it.
fn with_env_keys(message: &str, pattern: &str) -> String {
    let Some((head, expected)) = message.split_once(", expected ") else {
        return message.to_owned();
    };
    let secrets = secrets(pattern);
    let table = TABLES.iter().find(|table| table.0 == pattern);
    let other = |key: &str| table.is_some_and(|table| table.2.iter().any(|name| name.0 == key));
    let mut keys = Vec::new();
    for key in expected
        .split('`')
        .skip(1)
        .step_by(2)
        .filter(|key| !other(key))
    {
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

// --- `ask-user config` -------------------------------------------------------------------------

/// Arguments of `config`: none besides the global `--config`.
#[derive(Debug, Args)]
pub struct ConfigArgs {}

/// `ask-user config`: prints the configuration in effect.
pub(super) fn run(_args: &ConfigArgs, loaded: &Loaded) -> Result<Exit, CliError> {
    let text = render(loaded, ask_user_mcp::default_state_dir());
    let mut stdout = std::io::stdout().lock();
    match stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Ok(()) => Ok(Exit::Ok),
        // A reader that went away (`| head`) is no failure of ours.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(Exit::Ok),
        Err(e) => Err(CliError::new(
            "INTERNAL",
            format!("cannot write to stdout: {e}"),
            Exit::Failure,
        )),
    }
}

/// The lines of the printout, each made safe for a terminal as it is written.
struct Printout<'a> {
    out: String,
    config: &'a Config,
    /// The file read, as a source names it.
    file: String,
    /// The path of the table being written.
    table: String,
}

impl Printout<'_> {
    fn line(&mut self, text: &str) {
        self.out.push_str(&visible(text));
        self.out.push('\n');
    }

    fn table(&mut self, path: &str) {
        self.line("");
        self.line(&header(path));
        path.clone_into(&mut self.table);
    }

    /// `key = value  # from SOURCE` (the `# from` at one column, past it on a longer line),
    /// SOURCE where the file's value came from, else `built-in default`; without a value,
    /// `# key: not set (unset)`.
    fn entry(&mut self, key: &str, value: Option<String>, unset: &str) {
        let Some(value) = value else {
            return self.line(&format!("# {key}: not set ({unset})"));
        };
        let path = match self.table.as_str() {
            "" => key.to_owned(),
            table => format!("{table}.{key}"),
        };
        let source = match self.config.keys.get(&path).map(|key| &key.2) {
            Some(Source::Line(line)) => format!("{}:{line}", self.file),
            Some(Source::Env(name, _)) => format!("env {name}"),
            None => "built-in default".to_owned(),
        };
        self.line(&format!(
            "{:<40}  # from {source}",
            format!("{key} = {value}")
        ));
    }

    /// `key = value` of a key that always has one (its built-in default).
    fn set(&mut self, key: &str, value: String) {
        self.entry(key, Some(value), "");
    }

    /// `tls_cert` and `tls_key`, or a comment saying the server serves plain HTTP.
    fn tls(&mut self, tls: Option<&TlsFiles>) {
        match tls {
            Some(tls) => {
                self.set("tls_cert", quote(&tls.cert.to_string_lossy()));
                self.set("tls_key", quote(&tls.key.to_string_lossy()));
            }
            None => self.line("# tls_cert, tls_key: not set (plain HTTP)"),
        }
    }
}

/// A TOML basic string (control characters are escaped by [`visible`] as the line prints).
fn quote(text: &str) -> String {
    format!("\"{}\"", text.replace('\\', "\\\\").replace('"', "\\\""))
}

/// The printout of `ask-user config`; `state_default` is the built-in state directory.
fn render(loaded: &Loaded, state_default: Option<PathBuf>) -> String {
    let config = &loaded.config;
    let file = loaded.path.as_deref().unwrap_or(Path::new(""));
    let mut out = Printout {
        out: String::new(),
        config,
        file: file.display().to_string(),
        table: String::new(),
    };
    out.line("# The configuration in effect. A command-line flag overrides it.");
    out.line(&match (&loaded.path, &loaded.looked_at) {
        (Some(path), Some((_, how))) => format!("# file: {} (from {how})", path.display()),
        (None, Some((path, how))) => {
            format!(
                "# file: none ({} from {how} does not exist)",
                path.display()
            )
        }
        _ => "# file: none (neither XDG_CONFIG_HOME nor HOME is set)".to_owned(),
    });
    out.line("");
    let state_dir = config.state_dir.clone().or(state_default);
    let state_dir = state_dir.map(|dir| quote(&dir.to_string_lossy()));
    out.entry(
        "state_dir",
        state_dir,
        "neither XDG_STATE_HOME nor HOME is set",
    );
    let timed = config.mode == Some(Mode::Timed);
    out.set("mode", quote(if timed { "timed" } else { "legacy" }));
    let timeout = config
        .timeout
        .unwrap_or(tool_ask_user::DEFAULT_TIMEOUT_SECS);
    out.set("timeout", timeout.to_string());

    out.table("web");
    let addr = config.web.addr.map(|addr| quote(&addr.to_string()));
    out.entry("addr", addr, "127.0.0.1 on a free port");
    let public_url = config.web.public_url.as_deref().map(quote);
    out.entry("public_url", public_url, "the address served");
    out.tls(config.web_tls.as_ref());

    let notify = &config.notify;
    out.table("notify");
    out.set("after", notify.notify_after.as_secs_f64().to_string());
    out.set("text", notify.include_text.to_string());
    out.set("bell", notify.terminal.to_string());
    out.set("ignore_claims", notify.ignore_claims.to_string());
    if let Some(ntfy) = &notify.ntfy {
        out.table("notify.ntfy");
        out.set("topic", quote(MASK));
        out.set("server", quote(&redacted_url(&ntfy.server)));
        let token = ntfy.token.as_ref().map(|_| quote(MASK));
        out.entry("token", token, "no token");
    } else {
        out.line("");
        out.line("# [notify.ntfy]: not set (no ntfy notifications)");
    }
    if notify.webhooks.is_empty() {
        out.line("");
        out.line("# [[notify.webhooks]]: none");
    }
    for (i, hook) in notify.webhooks.iter().enumerate() {
        out.table(&format!("notify.webhooks[{i}]"));
        out.set("url", quote(&redacted_url(&hook.url)));
        out.set("secret", quote(MASK));
    }

    out.table("pg");
    let url = config.pg.url.as_ref().map(|url| quote(&url.to_string()));
    out.entry("url", url, "log files, no database");
    out.set("schema", quote(&config.pg.schema));

    out.table("mcp");
    let tokens = vec![quote(MASK); config.mcp.tokens.len()];
    let tokens = (!tokens.is_empty()).then(|| format!("[{}]", tokens.join(", ")));
    out.entry("tokens", tokens, "mcp --http serves loopback only");
    out.tls(config.mcp_tls.as_ref());
    out.out
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
    fn a_path_names_its_table_as_its_header_does() {
        assert_eq!(pattern("notify.webhooks[12].url"), "notify.webhooks[].url");
        assert_eq!(header("notify.webhooks[0]"), "[[notify.webhooks]]");
        assert_eq!(header("notify.ntfy"), "[notify.ntfy]");
        assert_eq!(
            secrets("notify.webhooks[]"),
            [("secret".to_owned(), "the webhook secret", false)]
        );
        assert_eq!(
            secrets("mcp"),
            [("tokens".to_owned(), "a bearer token", true)]
        );
    }
}
