//! `ask-user`'s configuration file, and `ask-user config`, which prints the configuration in
//! effect and where each value came from.
//!
//! # The configuration file
//!
//! One TOML file sets the surfaces once, instead of in every client's snippet. The file read is
//!
//! 1. the one `--config FILE` names (a global option: `ask-user --config FILE COMMAND` or
//!    `ask-user COMMAND --config FILE`); it must exist;
//! 2. else `$XDG_CONFIG_HOME/ask-user/config.toml`, when `XDG_CONFIG_HOME` is set to an absolute
//!    path (an empty or relative value is ignored, as the XDG base directory specification says);
//! 3. else `$HOME/.config/ask-user/config.toml`.
//!
//! A file missing at 2. or 3. is no error: the built-in defaults apply. A flag given on the
//! command line overrides the file, and the file overrides the built-in default. A boolean flag
//! (`--notify-text`, `--bell`, `--notify-ignore-claims`) can only turn its setting on; the webhooks
//! of `--notify-webhook` are added to the file's.
//!
//! Every key is optional. A file that is not valid TOML, a key the table below does not list, a
//! value of the wrong type or out of range are errors, reported as one line naming the file, the
//! line and the column, with the exit status of a usage error (2):
//!
//! ```text
//! error[BAD_CONFIG]: /home/me/.config/ask-user/config.toml:7:1: unknown field `bel`, expected one of `after`, `text`, `bell`, `ignore_claims`, `ntfy`, `webhooks`
//! ```
//!
//! | key | value | the flag it stands for | built-in default |
//! | --- | --- | --- | --- |
//! | `state_dir` | a directory; a leading `~/` is `$HOME/` | `mcp --state-dir` | `$XDG_STATE_HOME/ask-user/mcp`, else `~/.local/state/ask-user/mcp` |
//! | `mode` | `"legacy"` or `"timed"` | `--mode` | `"legacy"` |
//! | `timeout` | the timed tool's default window, whole seconds: `-1` (wait indefinitely) or 1 to 2147483 | `--timeout` | `120` |
//! | `[web]` `addr` | where to serve the page, `"IP:PORT"`; other than loopback serves other machines too | `--web-addr`, `serve --addr`, `inbox --addr` | 127.0.0.1 on a free port (the inbox: where it served last, else 127.0.0.1:8766) |
//! | `[web]` `public_url` | the page's address as another device reaches it, `http://` or `https://` | `--web-public-url` | the address served |
//! | `[web]` `tls_cert`, `tls_key` | serve the page over HTTPS with this PEM certificate chain and private key (both or neither; a leading `~/` is `$HOME/`) | | plain HTTP |
//! | `[mcp]` `tokens` (secret) | the bearer tokens `mcp --http` takes (`Authorization: Bearer TOKEN`), a list of 32 to 512 characters each of letters, digits and `-._~+/` (e.g. `openssl rand -hex 32`); with any, every request needs one, and the server may listen beyond loopback | | no tokens: loopback only |
//! | `[mcp]` `tls_cert`, `tls_key` | serve `mcp --http` over HTTPS with this PEM certificate chain and private key (both or neither) | `mcp --tls-cert`, `--tls-key` | plain HTTP |
//! | `[notify]` `after` | notify when nobody has claimed or answered a question after this many seconds, 0 to 86400 (a fraction allowed) | `--notify-after` | `10` |
//! | `[notify]` `text` | put the question text into notifications | `--notify-text` | `false` |
//! | `[notify]` `bell` | ring the terminal's bell, with an OSC 9 desktop notification | `--bell` | `false` |
//! | `[notify]` `ignore_claims` | notify even when a page shows the question | `--notify-ignore-claims` | `false` |
//! | `[notify.ntfy]` `topic` (secret) | the ntfy topic to push to: 1 to 64 letters, digits, `-` or `_` | `--ntfy` | no ntfy |
//! | `[notify.ntfy]` `server` | the ntfy server, `http://` or `https://` | `--ntfy-server` | `"https://ntfy.sh"` |
//! | `[notify.ntfy]` `token` (secret) | an access token for a protected ntfy server, sent as `Authorization: Bearer` | | none |
//! | `[[notify.webhooks]]` `url` | post signed notifications (Standard Webhooks) here, `http://` or `https://`; one table per webhook | `--notify-webhook` | no webhook |
//! | `[[notify.webhooks]]` `secret` (secret) | the webhook's `whsec_…` signing secret; required | `--webhook-secret` | |
//! | `[pg]` `url` (secret) | keep sessions in this PostgreSQL database: a libpq connection string or a `postgres://` URL; `sslmode` (`require`, `verify-full`, …) and `sslrootcert` go in it | `--pg` | log files, no database |
//! | `[pg]` `schema` | the database schema of the tables | `--pg-schema` | `"ask_user"` |
//!
//! ## Secrets
//!
//! `secret`, `token`, `tokens`, `topic` (on a public ntfy server anyone who knows the topic reads
//! it) and the `[pg]` `url` (it may hold a password) are secrets. Each can be written in the file,
//! or left out of it: the key with `_env` appended (`secret_env`, `token_env`, `tokens_env`,
//! `topic_env`, `url_env`) names an environment variable to read it from when the command starts
//! (for `tokens_env`, one or more tokens separated by spaces or commas). The variable must be set and
//! not empty, else the command stops with an error naming it; giving both forms of one key is an
//! error too. No variable name is fixed: choose your own. A file holding a secret should be
//! readable by its owner only (`chmod 600`).
//!
//! A secret is never printed or logged. `ask-user config` shows a webhook secret, an ntfy token,
//! an ntfy topic and each MCP token as `********`; of a `[pg]` `url` only the password is masked: the value of a
//! `password` keyword in a connection string, the password of a URL's user info and a `password`
//! query parameter (a value that is neither form is masked whole). Webhook URLs and the ntfy
//! server are shown as their scheme, host and port only, since a path or user info can carry a
//! credential too.
//!
//! ## An example
//!
//! ```toml
//! # ~/.config/ask-user/config.toml
//! mode = "timed"
//! timeout = 300
//!
//! [web]
//! addr = "127.0.0.1:8766"
//! public_url = "http://192.168.1.20:8766"
//!
//! [notify]
//! after = 20
//! bell = true
//!
//! [notify.ntfy]
//! topic_env = "ASK_USER_NTFY_TOPIC"
//!
//! [[notify.webhooks]]
//! url = "https://hooks.example.com/ask-user"
//! secret_env = "ASK_USER_WEBHOOK_SECRET"
//!
//! [pg]
//! url = "host=db.internal user=ask dbname=agents"
//! schema = "ask_user"
//!
//! [mcp]
//! tokens_env = "ASK_USER_MCP_TOKENS"
//! tls_cert = "~/.config/ask-user/cert.pem"
//! tls_key = "~/.config/ask-user/key.pem"
//! ```
//!
//! # `ask-user config`
//!
//! Prints the configuration in effect: the file read (or why none was), then one
//! `key = value  # from SOURCE` line per setting in the order of the table above, where
//! SOURCE is the file and line (`/home/me/.config/ask-user/config.toml:2`), `env NAME` (a secret
//! named by an `_env` key) or `built-in default`. A setting with no value and no default is a
//! comment, `# key: not set (…)`. Command-line flags of the other commands do not apply to it.

// The module documentation is the README's section on the file, which names PostgreSQL plainly.
#![allow(clippy::doc_markdown)]

use std::env::VarError;
use std::fmt;
use std::io::Write as _;
use std::net::SocketAddr;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::Duration;

use ask_user_notify::{NotifyConfig, NtfyConfig, Secret, WebhookConfig};
use ask_user_terminal::sanitize::visible;
use clap::{Args, ValueEnum};
use serde::Deserialize;
use toml::Spanned;

use super::{CliError, Exit, Mode};

/// What `ask-user config` prints in place of a secret.
const MASK: &str = "********";

/// The file's path under a configuration directory.
const FILE_NAME: [&str; 2] = ["ask-user", "config.toml"];

/// The built-in defaults the table of the module documentation lists.
const DEFAULT_NOTIFY_AFTER_SECS: f64 = 10.0;
const DEFAULT_NTFY_SERVER: &str = "https://ntfy.sh";
const DEFAULT_PG_SCHEMA: &str = "ask_user";

// --- where a value came from -------------------------------------------------------------------

/// Where a setting's value came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Source {
    /// A command-line flag (its name, such as `--web-addr`).
    Flag(&'static str),
    /// The configuration file, at this line (1-based).
    File {
        /// The file.
        path: PathBuf,
        /// The line of the value.
        line: usize,
    },
    /// The environment variable an `…_env` key of the file names.
    Env(String),
    /// The built-in default.
    Default,
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Flag(flag) => f.write_str(flag),
            Self::File { path, line } => write!(f, "{}:{line}", path.display()),
            Self::Env(name) => write!(f, "env {name}"),
            Self::Default => f.write_str("built-in default"),
        }
    }
}

/// A value and where it came from.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Setting<T> {
    /// The value.
    pub(crate) value: T,
    /// Where it came from.
    pub(crate) source: Source,
}

#[allow(
    dead_code,
    reason = "the commands resolve their flags with these as they take their defaults from the file"
)]
impl<T: Clone> Setting<T> {
    /// The flag's value when it was given (`flag`, named `flag_name`), else the file's.
    pub(crate) fn pick(
        flag: Option<T>,
        flag_name: &'static str,
        file: Option<&Self>,
    ) -> Option<Self> {
        match flag {
            Some(value) => Some(Self {
                value,
                source: Source::Flag(flag_name),
            }),
            None => file.cloned(),
        }
    }

    /// The flag's value when it was given, else the file's, else `default`.
    pub(crate) fn resolve(
        flag: Option<T>,
        flag_name: &'static str,
        file: Option<&Self>,
        default: T,
    ) -> Self {
        Self::pick(flag, flag_name, file).unwrap_or(Self {
            value: default,
            source: Source::Default,
        })
    }
}

/// A secret text (a database URL, a token, an ntfy topic). Its `Debug` and `Display` show
/// `********`; only [`SecretString::expose`] gives the text, to hand to a client.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct SecretString(String);

impl SecretString {
    /// The secret itself: for a client, never for a message or a log line.
    pub(crate) fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for SecretString {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(MASK)
    }
}

impl fmt::Display for SecretString {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(MASK)
    }
}

// --- the configuration -------------------------------------------------------------------------

/// The configuration file's settings, checked; every one optional (absent: the flag's default).
#[derive(Debug, Default)]
pub(crate) struct Config {
    /// `state_dir`: where `mcp` keeps its session logs.
    pub(crate) state_dir: Option<Setting<PathBuf>>,
    /// `mode`: the tool definition.
    pub(crate) mode: Option<Setting<Mode>>,
    /// `timeout`: the timed tool's default window in seconds (-1: indefinitely).
    pub(crate) timeout: Option<Setting<i64>>,
    /// `[web]`.
    pub(crate) web: WebSection,
    /// `[notify]`.
    pub(crate) notify: NotifySection,
    /// `[pg]`.
    pub(crate) pg: PgSection,
    /// `[mcp]`.
    pub(crate) mcp: McpSection,
}

/// A certificate chain and key to serve HTTPS with (`tls_cert` and `tls_key`, read when a
/// server starts).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct TlsFiles {
    /// `tls_cert`.
    pub(crate) cert: Setting<PathBuf>,
    /// `tls_key`.
    pub(crate) key: Setting<PathBuf>,
}

impl TlsFiles {
    /// The certificate and key, read and checked.
    pub(crate) fn load(&self) -> Result<ask_user_mcp::ServerTls, CliError> {
        ask_user_mcp::ServerTls::from_pem_files(&self.cert.value, &self.key.value)
            .map_err(|e| CliError::new("BAD_TLS", e.to_string(), Exit::Usage))
    }
}

/// `[mcp]`.
#[derive(Debug, Default)]
pub(crate) struct McpSection {
    /// `tokens` or `tokens_env`.
    pub(crate) tokens: Option<Setting<Vec<ask_user_mcp::BearerToken>>>,
    /// `tls_cert` and `tls_key`.
    pub(crate) tls: Option<TlsFiles>,
}

/// `[web]`.
#[derive(Debug, Default)]
pub(crate) struct WebSection {
    /// `addr`: where to serve the page.
    pub(crate) addr: Option<Setting<SocketAddr>>,
    /// `public_url`: the page's address as another device reaches it.
    pub(crate) public_url: Option<Setting<String>>,
    /// `tls_cert` and `tls_key`.
    pub(crate) tls: Option<TlsFiles>,
}

/// `[notify]`.
#[derive(Debug, Default)]
pub(crate) struct NotifySection {
    /// `after`: when to notify.
    pub(crate) after: Option<Setting<Duration>>,
    /// `text`: put the question text into notifications (`--notify-text`).
    pub(crate) text: Option<Setting<bool>>,
    /// `bell`: the terminal's bell (`--bell`).
    pub(crate) bell: Option<Setting<bool>>,
    /// `ignore_claims`: notify even when a page shows the question (`--notify-ignore-claims`).
    pub(crate) ignore_claims: Option<Setting<bool>>,
    /// `[notify.ntfy]`.
    pub(crate) ntfy: Option<NtfySection>,
    /// `[[notify.webhooks]]`, in file order.
    pub(crate) webhooks: Vec<WebhookSection>,
}

/// `[notify.ntfy]`.
pub(crate) struct NtfySection {
    /// `topic` or `topic_env`.
    pub(crate) topic: Setting<SecretString>,
    /// `server`.
    pub(crate) server: Option<Setting<String>>,
    /// `token` or `token_env`.
    pub(crate) token: Option<Setting<SecretString>>,
}

impl fmt::Debug for NtfySection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NtfySection")
            .field("topic", &self.topic)
            .field(
                "server",
                &self.server.as_ref().map(|s| url_origin(&s.value)),
            )
            .field("token", &self.token)
            .finish()
    }
}

/// One `[[notify.webhooks]]`.
pub(crate) struct WebhookSection {
    /// `url`.
    pub(crate) url: Setting<String>,
    /// `secret` or `secret_env`.
    pub(crate) secret: Setting<Secret>,
}

impl fmt::Debug for WebhookSection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WebhookSection")
            .field("url", &url_origin(&self.url.value))
            .field("secret", &self.secret)
            .finish()
    }
}

/// `[pg]`.
#[derive(Debug, Default)]
pub(crate) struct PgSection {
    /// `url` or `url_env`.
    pub(crate) url: Option<Setting<SecretString>>,
    /// `schema`.
    pub(crate) schema: Option<Setting<String>>,
}

impl Config {
    /// `state_dir`.
    pub(crate) fn state_dir(&self) -> Option<&Path> {
        self.state_dir.as_ref().map(|s| s.value.as_path())
    }

    /// `mode`.
    pub(crate) fn mode(&self) -> Option<Mode> {
        self.mode.as_ref().map(|s| s.value)
    }

    /// `timeout`, in seconds.
    pub(crate) fn timeout(&self) -> Option<i64> {
        self.timeout.as_ref().map(|s| s.value)
    }

    /// `[web]` `addr`.
    pub(crate) fn web_addr(&self) -> Option<SocketAddr> {
        self.web.addr.as_ref().map(|s| s.value)
    }

    /// `[web]` `public_url`.
    pub(crate) fn web_public_url(&self) -> Option<&str> {
        self.web.public_url.as_ref().map(|s| s.value.as_str())
    }

    /// `[web]` `tls_cert` and `tls_key`, read: the page's TLS, if it has one.
    pub(crate) fn web_tls(&self) -> Result<Option<ask_user_mcp::ServerTls>, CliError> {
        self.web.tls.as_ref().map(TlsFiles::load).transpose()
    }

    /// `[mcp]` `tokens`.
    pub(crate) fn mcp_tokens(&self) -> &[ask_user_mcp::BearerToken] {
        self.mcp.tokens.as_ref().map_or(&[], |s| s.value.as_slice())
    }

    /// `[pg]` `url`.
    pub(crate) fn pg_url(&self) -> Option<&SecretString> {
        self.pg.url.as_ref().map(|s| &s.value)
    }

    /// `[pg]` `schema`.
    pub(crate) fn pg_schema(&self) -> Option<&str> {
        self.pg.schema.as_ref().map(|s| s.value.as_str())
    }

    /// The file's notifications, the base the `--notify-*` flags add to (what
    /// `--notify-config FILE` gives otherwise), the ntfy token included.
    pub(crate) fn notify_config(&self) -> NotifyConfig {
        let notify = &self.notify;
        let flag = |s: &Option<Setting<bool>>| s.as_ref().is_some_and(|s| s.value);
        let mut config = NotifyConfig::default();
        if let Some(after) = &notify.after {
            config.notify_after = after.value;
        }
        config.include_text = flag(&notify.text);
        config.terminal = flag(&notify.bell);
        config.ignore_claims = flag(&notify.ignore_claims);
        config.ntfy = notify.ntfy.as_ref().map(|ntfy| NtfyConfig {
            topic: ntfy.topic.value.expose().to_owned(),
            server: ntfy
                .server
                .as_ref()
                .map_or_else(|| DEFAULT_NTFY_SERVER.to_owned(), |s| s.value.clone()),
            token: ntfy.token.as_ref().map(|t| t.value.expose().to_owned()),
        });
        config.webhooks = notify
            .webhooks
            .iter()
            .map(|hook| WebhookConfig {
                url: hook.url.value.clone(),
                secret: hook.secret.value.clone(),
            })
            .collect();
        config
    }
}

/// How the file's path was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Lookup {
    /// `--config FILE`.
    Flag,
    /// Under `$XDG_CONFIG_HOME`.
    XdgConfigHome,
    /// Under `$HOME/.config`.
    Home,
}

impl fmt::Display for Lookup {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Flag => "--config",
            Self::XdgConfigHome => "$XDG_CONFIG_HOME",
            Self::Home => "$HOME",
        })
    }
}

/// A loaded configuration.
#[derive(Debug)]
pub(crate) struct Loaded {
    /// The settings (empty when no file was read).
    pub(crate) config: Config,
    /// The file read, if one was.
    pub(crate) path: Option<PathBuf>,
    /// Where the file was looked for, and how that place was found; `None` when neither
    /// `XDG_CONFIG_HOME` nor `HOME` is set.
    pub(crate) looked_at: Option<(PathBuf, Lookup)>,
}

/// The configuration every command reads, loaded once before it runs.
static CURRENT: std::sync::OnceLock<Loaded> = std::sync::OnceLock::new();

/// Keeps `loaded` as the configuration in effect (the first one kept stays).
pub(crate) fn install(loaded: Loaded) {
    let _ = CURRENT.set(loaded);
}

/// The configuration in effect: the one installed, else none (the built-in defaults).
pub(crate) fn current() -> &'static Config {
    static NONE: std::sync::OnceLock<Config> = std::sync::OnceLock::new();
    CURRENT.get().map_or_else(
        || NONE.get_or_init(Config::default),
        |loaded| &loaded.config,
    )
}

/// The file `--config` named, to hand to a process this one starts (an inbox).
pub(crate) fn explicit_path() -> Option<&'static Path> {
    CURRENT
        .get()
        .filter(|loaded| matches!(loaded.looked_at, Some((_, Lookup::Flag))))
        .and_then(|loaded| loaded.path.as_deref())
}

/// Loads the configuration: the file `explicit` names (it must exist), else the default file
/// when it exists (see the module documentation), else nothing (the built-in defaults). Secrets
/// named by `…_env` keys are read from the environment here.
pub(crate) fn load(explicit: Option<&Path>) -> Result<Loaded, CliError> {
    let looked_at = match explicit {
        Some(path) => Some((path.to_path_buf(), Lookup::Flag)),
        None => default_path(),
    };
    let Some((path, how)) = &looked_at else {
        return Ok(Loaded {
            config: Config::default(),
            path: None,
            looked_at,
        });
    };
    let text = match std::fs::read(path) {
        Ok(bytes) => String::from_utf8(bytes).map_err(|_| {
            bad_config(format!(
                "{}: the configuration file is not UTF-8 text",
                path.display()
            ))
        })?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && *how != Lookup::Flag => {
            return Ok(Loaded {
                config: Config::default(),
                path: None,
                looked_at,
            });
        }
        Err(e) => {
            return Err(bad_config(format!(
                "cannot read the configuration file {}: {e}",
                path.display()
            )));
        }
    };
    let config = parse(&text, path, &|name| std::env::var(name))?;
    Ok(Loaded {
        config,
        path: Some(path.clone()),
        looked_at,
    })
}

/// `$XDG_CONFIG_HOME/ask-user/config.toml`, else `$HOME/.config/ask-user/config.toml`.
fn default_path() -> Option<(PathBuf, Lookup)> {
    let var = |name: &str| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let under = |dir: PathBuf| FILE_NAME.iter().fold(dir, |dir, part| dir.join(part));
    if let Some(dir) = var("XDG_CONFIG_HOME").filter(|dir| dir.is_absolute()) {
        return Some((under(dir), Lookup::XdgConfigHome));
    }
    var("HOME").map(|home| (under(home.join(".config")), Lookup::Home))
}

fn bad_config(message: String) -> CliError {
    CliError::new("BAD_CONFIG", message, Exit::Usage)
}

// --- reading the file --------------------------------------------------------------------------

// The file as TOML has it; `Config` is the checked form. No `Debug`: these hold secrets.

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    state_dir: Option<Spanned<String>>,
    mode: Option<Spanned<String>>,
    timeout: Option<Spanned<i64>>,
    web: Option<RawWeb>,
    notify: Option<RawNotify>,
    pg: Option<RawPg>,
    mcp: Option<RawMcp>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawWeb {
    addr: Option<Spanned<String>>,
    public_url: Option<Spanned<String>>,
    tls_cert: Option<Spanned<String>>,
    tls_key: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMcp {
    tokens: Option<Spanned<Vec<Spanned<String>>>>,
    tokens_env: Option<Spanned<String>>,
    tls_cert: Option<Spanned<String>>,
    tls_key: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawNotify {
    after: Option<Spanned<f64>>,
    text: Option<Spanned<bool>>,
    bell: Option<Spanned<bool>>,
    ignore_claims: Option<Spanned<bool>>,
    ntfy: Option<Spanned<RawNtfy>>,
    webhooks: Option<Vec<Spanned<RawWebhook>>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawNtfy {
    topic: Option<Spanned<String>>,
    topic_env: Option<Spanned<String>>,
    server: Option<Spanned<String>>,
    token: Option<Spanned<String>>,
    token_env: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawWebhook {
    url: Spanned<String>,
    secret: Option<Spanned<String>>,
    secret_env: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPg {
    url: Option<Spanned<String>>,
    url_env: Option<Spanned<String>>,
    schema: Option<Spanned<String>>,
}

/// Reads the environment variable a `…_env` key names.
type EnvReader<'a> = &'a dyn Fn(&str) -> Result<String, VarError>;

/// Parses and checks a configuration file's text; `path` names it in errors and sources, `env`
/// reads the variables `…_env` keys name.
pub(crate) fn parse(text: &str, path: &Path, env: EnvReader<'_>) -> Result<Config, CliError> {
    let raw: RawConfig = toml::from_str(text).map_err(|e| {
        let message = toml_message(e.message());
        bad_config(match e.span() {
            Some(span) => at(text, path, &span, &message),
            None => format!("{}: {message}", path.display()),
        })
    })?;
    Reader { text, path, env }.config(raw)
}

/// `PATH:LINE:COLUMN: message`, for the byte offset `span.start` of `text`.
fn at(text: &str, path: &Path, span: &Range<usize>, message: &str) -> String {
    let (line, column) = line_column(text, span.start);
    format!("{}:{line}:{column}: {message}", path.display())
}

/// The 1-based line and column (in characters) of a byte offset.
fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let before = text.get(..offset).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().unwrap_or("").chars().count() + 1;
    (line, column)
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

/// Checks the raw file into a [`Config`].
struct Reader<'a> {
    text: &'a str,
    path: &'a Path,
    env: EnvReader<'a>,
}

impl Reader<'_> {
    fn source<T>(&self, value: &Spanned<T>) -> Source {
        Source::File {
            path: self.path.to_path_buf(),
            line: line_column(self.text, value.span().start).0,
        }
    }

    fn setting<T>(&self, value: Spanned<T>) -> Setting<T> {
        let source = self.source(&value);
        Setting {
            value: value.into_inner(),
            source,
        }
    }

    fn error(&self, span: &Range<usize>, message: &str) -> CliError {
        bad_config(at(self.text, self.path, span, message))
    }

    /// A string setting checked by `check` (which never quotes the value).
    fn checked<T>(
        &self,
        value: Option<Spanned<String>>,
        check: impl FnOnce(&str) -> Result<T, String>,
    ) -> Result<Option<Setting<T>>, CliError> {
        let Some(value) = value else {
            return Ok(None);
        };
        let span = value.span();
        let source = self.source(&value);
        let value = check(value.get_ref()).map_err(|m| self.error(&span, &m))?;
        Ok(Some(Setting { value, source }))
    }

    /// A secret given as `key` in the file or through the variable `key_env` names.
    fn secret(
        &self,
        key: &str,
        direct: Option<Spanned<String>>,
        from_env: Option<Spanned<String>>,
    ) -> Result<Option<Setting<String>>, CliError> {
        match (direct, from_env) {
            (Some(_), Some(name)) => Err(self.error(
                &name.span(),
                &format!("give `{key}` or `{key}_env`, not both"),
            )),
            (Some(value), None) => Ok(Some(self.setting(value))),
            (None, Some(name)) => {
                let span = name.span();
                let name = name.into_inner();
                let valid = !name.is_empty()
                    && !name.starts_with(|c: char| c.is_ascii_digit())
                    && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
                if !valid {
                    return Err(self.error(
                        &span,
                        &format!(
                            "`{key}_env` names an environment variable: letters, digits and '_'"
                        ),
                    ));
                }
                let problem = match (self.env)(&name) {
                    Ok(value) if !value.is_empty() => {
                        return Ok(Some(Setting {
                            value,
                            source: Source::Env(name),
                        }));
                    }
                    Ok(_) => "is empty",
                    Err(VarError::NotPresent) => "is not set",
                    Err(VarError::NotUnicode(_)) => "is not UTF-8",
                };
                Err(self.error(
                    &span,
                    &format!("`{key}_env`: the environment variable {name} {problem}"),
                ))
            }
            (None, None) => Ok(None),
        }
    }

    fn config(&self, raw: RawConfig) -> Result<Config, CliError> {
        let state_dir = self.checked(raw.state_dir, |text| expand_home("state_dir", text))?;
        let mode = self.checked(raw.mode, |text| {
            Mode::from_str(text, false).map_err(|_| "`mode` is `legacy` or `timed`".to_owned())
        })?;
        let timeout = match raw.timeout {
            Some(value) if !tool_ask_user::is_valid_timeout(*value.get_ref()) => {
                return Err(self.error(
                    &value.span(),
                    &format!(
                        "`timeout` is -1 (wait indefinitely) or 1 to {} seconds",
                        tool_ask_user::MAX_TIMEOUT_SECS
                    ),
                ));
            }
            Some(value) => Some(self.setting(value)),
            None => None,
        };
        Ok(Config {
            state_dir,
            mode,
            timeout,
            web: match raw.web {
                Some(web) => self.web(web)?,
                None => WebSection::default(),
            },
            notify: match raw.notify {
                Some(notify) => self.notify(notify)?,
                None => NotifySection::default(),
            },
            pg: match raw.pg {
                Some(pg) => self.pg(pg)?,
                None => PgSection::default(),
            },
            mcp: match raw.mcp {
                Some(mcp) => self.mcp(mcp)?,
                None => McpSection::default(),
            },
        })
    }

    /// `tls_cert` and `tls_key` of a table: both or neither.
    fn tls(
        &self,
        cert: Option<Spanned<String>>,
        key: Option<Spanned<String>>,
    ) -> Result<Option<TlsFiles>, CliError> {
        let cert = self.checked(cert, |text| expand_home("tls_cert", text))?;
        let key_span = key.as_ref().map(Spanned::span);
        let key = self.checked(key, |text| expand_home("tls_key", text))?;
        match (cert, key) {
            (Some(cert), Some(key)) => Ok(Some(TlsFiles { cert, key })),
            (None, None) => Ok(None),
            (Some(cert), None) => Err(bad_config(format!(
                "{}: `tls_cert` needs `tls_key` beside it",
                cert.source
            ))),
            (None, Some(_)) => Err(self.error(
                &key_span.unwrap_or_default(),
                "`tls_key` needs `tls_cert` beside it",
            )),
        }
    }

    fn mcp(&self, raw: RawMcp) -> Result<McpSection, CliError> {
        let check = |text: &str, what: &str| {
            ask_user_mcp::BearerToken::new(text).map_err(|e| format!("{what}: {e}"))
        };
        let tokens = match (raw.tokens, raw.tokens_env) {
            (Some(_), Some(name)) => {
                return Err(self.error(&name.span(), "give `tokens` or `tokens_env`, not both"));
            }
            (Some(list), None) => {
                let source = self.source(&list);
                let span = list.span();
                let list = list.into_inner();
                if list.is_empty() {
                    return Err(self.error(&span, "`tokens` is empty: leave it out, or give one"));
                }
                let tokens = list
                    .into_iter()
                    .enumerate()
                    .map(|(i, token)| {
                        check(token.get_ref(), &format!("token {} of `tokens`", i + 1))
                            .map_err(|m| self.error(&token.span(), &m))
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                Some(Setting {
                    value: tokens,
                    source,
                })
            }
            (None, Some(name)) => {
                let span = name.span();
                let Some(text) = self.secret("tokens", None, Some(name))? else {
                    return Err(self.error(&span, "`tokens_env` names no variable"));
                };
                let tokens = text
                    .value
                    .split(|c: char| c == ',' || c.is_whitespace())
                    .filter(|t| !t.is_empty())
                    .enumerate()
                    .map(|(i, token)| {
                        check(token, &format!("token {} of {}", i + 1, text.source))
                            .map_err(|m| self.error(&span, &m))
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                if tokens.is_empty() {
                    return Err(self.error(&span, &format!("{} holds no token", text.source)));
                }
                Some(Setting {
                    value: tokens,
                    source: text.source,
                })
            }
            (None, None) => None,
        };
        Ok(McpSection {
            tokens,
            tls: self.tls(raw.tls_cert, raw.tls_key)?,
        })
    }

    fn web(&self, raw: RawWeb) -> Result<WebSection, CliError> {
        Ok(WebSection {
            addr: self.checked(raw.addr, |text| {
                text.parse::<SocketAddr>().map_err(|_| {
                    "`addr` is an IP address and a port, like `127.0.0.1:8766`".to_owned()
                })
            })?,
            public_url: self.checked(raw.public_url, |text| {
                if is_http_url(text) {
                    Ok(text.to_owned())
                } else {
                    Err("`public_url` is an http:// or https:// URL".to_owned())
                }
            })?,
            tls: self.tls(raw.tls_cert, raw.tls_key)?,
        })
    }

    fn notify(&self, raw: RawNotify) -> Result<NotifySection, CliError> {
        let after = match raw.after {
            Some(value) => {
                let secs = *value.get_ref();
                if !(secs.is_finite() && (0.0..=86_400.0).contains(&secs)) {
                    return Err(self.error(&value.span(), "`after` is 0 to 86400 seconds"));
                }
                let source = self.source(&value);
                Some(Setting {
                    value: Duration::from_secs_f64(secs),
                    source,
                })
            }
            None => None,
        };
        let ntfy = match raw.ntfy {
            Some(ntfy) => Some(self.ntfy(ntfy)?),
            None => None,
        };
        let webhooks = raw
            .webhooks
            .unwrap_or_default()
            .into_iter()
            .map(|hook| self.webhook(hook))
            .collect::<Result<_, _>>()?;
        Ok(NotifySection {
            after,
            text: raw.text.map(|v| self.setting(v)),
            bell: raw.bell.map(|v| self.setting(v)),
            ignore_claims: raw.ignore_claims.map(|v| self.setting(v)),
            ntfy,
            webhooks,
        })
    }

    fn ntfy(&self, raw: Spanned<RawNtfy>) -> Result<NtfySection, CliError> {
        let table = raw.span();
        let raw = raw.into_inner();
        // The notifier's own checks, one part at a time, so an error points at its line.
        let check = |topic: &str, server: &str| {
            let probe = NotifyConfig {
                ntfy: Some(NtfyConfig {
                    topic: topic.to_owned(),
                    server: server.to_owned(),
                    token: None,
                }),
                ..NotifyConfig::default()
            };
            probe.check().map_err(|e| e.to_string())
        };
        let server = self.checked(raw.server, |server| {
            check("topic", server).map(|()| server.to_owned())
        })?;
        let topic_span = match (&raw.topic, &raw.topic_env) {
            (Some(at), _) | (None, Some(at)) => at.span(),
            (None, None) => table.clone(),
        };
        let topic = self
            .secret("topic", raw.topic, raw.topic_env)?
            .ok_or_else(|| self.error(&table, "[notify.ntfy] needs `topic` or `topic_env`"))?;
        check(&topic.value, DEFAULT_NTFY_SERVER).map_err(|m| self.error(&topic_span, &m))?;
        let token = self.secret("token", raw.token, raw.token_env)?;
        Ok(NtfySection {
            topic: secret_setting(topic),
            server,
            token: token.map(secret_setting),
        })
    }

    fn webhook(&self, raw: Spanned<RawWebhook>) -> Result<WebhookSection, CliError> {
        let table = raw.span();
        let raw = raw.into_inner();
        let secret_span = match (&raw.secret, &raw.secret_env) {
            (Some(at), _) | (None, Some(at)) => at.span(),
            (None, None) => table.clone(),
        };
        let secret = self
            .secret("secret", raw.secret, raw.secret_env)?
            .ok_or_else(|| {
                self.error(&table, "[[notify.webhooks]] needs `secret` or `secret_env`")
            })?;
        let parsed = Secret::parse(&secret.value).map_err(|e| {
            let message = match &secret.source {
                Source::Env(name) => format!("the webhook secret in {name}: {e}"),
                _ => e.to_string(),
            };
            self.error(&secret_span, &message)
        })?;
        let url_span = raw.url.span();
        let url = self.setting(raw.url);
        let probe = NotifyConfig {
            webhooks: vec![WebhookConfig {
                url: url.value.clone(),
                secret: parsed.clone(),
            }],
            ..NotifyConfig::default()
        };
        probe
            .check()
            .map_err(|e| self.error(&url_span, &e.to_string()))?;
        Ok(WebhookSection {
            url,
            secret: Setting {
                value: parsed,
                source: secret.source,
            },
        })
    }

    fn pg(&self, raw: RawPg) -> Result<PgSection, CliError> {
        let url_span = raw.url.as_ref().or(raw.url_env.as_ref()).map(Spanned::span);
        let url = self.secret("url", raw.url, raw.url_env)?;
        if let (Some(url), Some(span)) = (&url, url_span)
            && url.value.trim().is_empty()
        {
            return Err(self.error(&span, "`url` is empty"));
        }
        Ok(PgSection {
            url: url.map(secret_setting),
            schema: self.checked(raw.schema, |schema| {
                if schema.is_empty() {
                    Err("`schema` is empty".to_owned())
                } else {
                    Ok(schema.to_owned())
                }
            })?,
        })
    }
}

fn secret_setting(setting: Setting<String>) -> Setting<SecretString> {
    Setting {
        value: SecretString(setting.value),
        source: setting.source,
    }
}

/// A path (`key`): a leading `~/` is the home directory.
fn expand_home(key: &str, text: &str) -> Result<PathBuf, String> {
    if text.is_empty() {
        return Err(format!("`{key}` is empty"));
    }
    let rest = match text {
        "~" => Some(""),
        _ => text.strip_prefix("~/"),
    };
    match rest {
        Some(rest) => {
            let home = std::env::var_os("HOME")
                .filter(|h| !h.is_empty())
                .ok_or_else(|| format!("`{key}` starts with `~/` but HOME is not set"))?;
            Ok(Path::new(&home).join(rest))
        }
        None => Ok(PathBuf::from(text)),
    }
}

fn is_http_url(text: &str) -> bool {
    ["http://", "https://"].iter().any(|scheme| {
        text.get(..scheme.len())
            .is_some_and(|head| head.eq_ignore_ascii_case(scheme))
            && text.len() > scheme.len()
    })
}

// --- masking -----------------------------------------------------------------------------------

/// A URL as its scheme, host and port, with `/…` when a path, a query or a fragment follows (a
/// path or user info may hold a credential: a Slack-style webhook path, an ntfy password).
fn url_origin(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return MASK.to_owned();
    };
    let end = rest.find(['/', '?', '#', '\\']).unwrap_or(rest.len());
    let authority = &rest[..end];
    let host = authority
        .rsplit_once('@')
        .map_or(authority, |(_, host)| host);
    let tail = &rest[end..];
    if tail.is_empty() || tail == "/" {
        format!("{scheme}://{host}{tail}")
    } else {
        format!("{scheme}://{host}/…")
    }
}

/// A PostgreSQL connection string or URL with its passwords masked: a `password` keyword's
/// value, a URL's user-info password, a `password` query parameter. What reads as neither form
/// is masked whole.
fn mask_pg_url(url: &str) -> String {
    let scheme = ["postgresql://", "postgres://"].into_iter().find(|scheme| {
        url.get(..scheme.len())
            .is_some_and(|head| head.eq_ignore_ascii_case(scheme))
    });
    let hidden = match scheme {
        Some(scheme) => Some(uri_passwords(url, scheme.len())),
        None => conninfo_passwords(url),
    };
    match hidden {
        Some(hidden) => apply_mask(url, &hidden),
        None => MASK.to_owned(),
    }
}

/// The byte ranges of the passwords of a `postgres://` URL whose authority starts at `start`.
fn uri_passwords(url: &str, start: usize) -> Vec<Range<usize>> {
    let mut hidden = Vec::new();
    let rest = &url[start..];
    // The user info ends at the last `@`: a password may hold `/`, `?` or `#` unencoded (masking
    // too much is harmless; too little is not).
    if let Some(at) = rest.rfind('@')
        && let Some(colon) = rest[..at].find(':')
    {
        hidden.push(start + colon + 1..start + at);
    }
    // Every `…password=` query parameter, wherever a `?` or an `&` starts one.
    for (sep, _) in url.match_indices(['?', '&']) {
        let key_start = sep + 1;
        let Some(eq) = url[key_start..].find('=').map(|i| key_start + i) else {
            continue;
        };
        let key = &url[key_start..eq];
        if key.contains(['?', '&']) || !key.to_ascii_lowercase().contains("password") {
            continue;
        }
        let end = url[eq + 1..].find('&').map_or(url.len(), |i| eq + 1 + i);
        hidden.push(eq + 1..end);
    }
    hidden
}

/// The byte ranges of the values of the `…password` keywords of a libpq connection string
/// (`key = value`, a value bare or single-quoted with backslash escapes); `None` when the text
/// does not read as one.
fn conninfo_passwords(text: &str) -> Option<Vec<Range<usize>>> {
    let bytes = text.as_bytes();
    let mut hidden = Vec::new();
    let mut i = 0;
    let skip_space = |mut i: usize| {
        while i < bytes.len() && bytes[i].is_ascii_whitespace() {
            i += 1;
        }
        i
    };
    loop {
        i = skip_space(i);
        if i == bytes.len() {
            return Some(hidden);
        }
        let key_start = i;
        while i < bytes.len() && !bytes[i].is_ascii_whitespace() && bytes[i] != b'=' {
            i += 1;
        }
        let key = &text[key_start..i];
        if key.is_empty() {
            return None;
        }
        i = skip_space(i);
        if bytes.get(i) != Some(&b'=') {
            return None;
        }
        i = skip_space(i + 1);
        let value_start = i;
        if bytes.get(i) == Some(&b'\'') {
            i += 1;
            loop {
                match bytes.get(i) {
                    None => return None,
                    Some(b'\\') => i += 2,
                    Some(b'\'') => {
                        i += 1;
                        break;
                    }
                    Some(_) => i += 1,
                }
            }
        } else {
            while i < bytes.len() && !bytes[i].is_ascii_whitespace() {
                i += if bytes[i] == b'\\' { 2 } else { 1 };
            }
        }
        let end = i.min(bytes.len());
        if key.to_ascii_lowercase().contains("password") && end > value_start {
            hidden.push(value_start..end);
        }
        i = end;
    }
}

/// `text` with each run of hidden bytes (ranges on character boundaries) as one [`MASK`].
fn apply_mask(text: &str, hidden: &[Range<usize>]) -> String {
    let is_hidden = |i: usize| hidden.iter().any(|r| r.contains(&i));
    let mut out = String::with_capacity(text.len());
    let mut in_mask = false;
    for (i, c) in text.char_indices() {
        if is_hidden(i) {
            if !in_mask {
                out.push_str(MASK);
                in_mask = true;
            }
        } else {
            in_mask = false;
            out.push(c);
        }
    }
    out
}

// --- `ask-user config` -------------------------------------------------------------------------

/// Arguments of `config`: none besides the global `--config`.
#[derive(Debug, Args)]
pub struct ConfigArgs {}

/// `ask-user config`: prints the configuration in effect.
pub(super) fn run(_args: &ConfigArgs, explicit: Option<&Path>) -> Result<Exit, CliError> {
    let loaded = load(explicit)?;
    let text = render(&loaded, ask_user_mcp::default_state_dir());
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

/// One printed line.
enum Line {
    /// `# text`, or a blank line for an empty text.
    Comment(String),
    /// `[table]` or `[[table]]`.
    Table(String),
    /// `key = value  # from source`.
    Value {
        key: &'static str,
        value: String,
        source: String,
    },
}

/// Collects the lines of the printout.
#[derive(Default)]
struct Printout {
    lines: Vec<Line>,
}

impl Printout {
    fn comment(&mut self, text: impl Into<String>) {
        self.lines.push(Line::Comment(text.into()));
    }

    fn table(&mut self, name: &str) {
        self.lines.push(Line::Comment(String::new()));
        self.lines.push(Line::Table(name.to_owned()));
    }

    fn value(&mut self, key: &'static str, value: String, source: &Source) {
        self.lines.push(Line::Value {
            key,
            value,
            source: source.to_string(),
        });
    }

    /// `key`'s setting, else its default, else the `unset` comment.
    fn setting<T>(
        &mut self,
        key: &'static str,
        setting: Option<&Setting<T>>,
        default: Option<T>,
        unset: &str,
        show: impl Fn(&T) -> String,
    ) {
        match (setting, default) {
            (Some(setting), _) => self.value(key, show(&setting.value), &setting.source),
            (None, Some(default)) => self.value(key, show(&default), &Source::Default),
            (None, None) => self.comment(format!("{key}: not set ({unset})")),
        }
    }

    /// The text, each line made safe for a terminal; the `# from` comments start at one column
    /// (past it on a longer line), the same whatever the values.
    fn finish(self) -> String {
        const COLUMN: usize = 40;
        let mut out = String::new();
        for line in self.lines {
            let text = match line {
                Line::Comment(text) if text.is_empty() => String::new(),
                Line::Comment(text) => format!("# {text}"),
                Line::Table(name) => name,
                Line::Value { key, value, source } => {
                    format!("{:<COLUMN$}  # from {source}", format!("{key} = {value}"))
                }
            };
            out.push_str(&visible(&text));
            out.push('\n');
        }
        out
    }
}

/// A TOML basic string (control characters are escaped by [`visible`] as the line prints).
fn quote(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn quote_path(path: &Path) -> String {
    quote(&path.to_string_lossy())
}

/// The printout of `ask-user config`; `state_default` is the built-in state directory.
fn render(loaded: &Loaded, state_default: Option<PathBuf>) -> String {
    let config = &loaded.config;
    let mut out = Printout::default();
    out.comment("The configuration in effect. A command-line flag overrides it.");
    match (&loaded.path, &loaded.looked_at) {
        (Some(path), Some((_, how))) => {
            out.comment(format!("file: {} (from {how})", path.display()));
        }
        (None, Some((path, how))) => out.comment(format!(
            "file: none ({} from {how} does not exist)",
            path.display()
        )),
        _ => out.comment("file: none (neither XDG_CONFIG_HOME nor HOME is set)"),
    }
    out.comment("");
    out.setting(
        "state_dir",
        config.state_dir.as_ref(),
        state_default,
        "neither XDG_STATE_HOME nor HOME is set",
        |p| quote_path(p),
    );
    out.setting(
        "mode",
        config.mode.as_ref(),
        Some(Mode::Legacy),
        "",
        |mode| match mode {
            Mode::Legacy => quote("legacy"),
            Mode::Timed => quote("timed"),
        },
    );
    out.setting(
        "timeout",
        config.timeout.as_ref(),
        Some(tool_ask_user::DEFAULT_TIMEOUT_SECS),
        "",
        i64::to_string,
    );

    render_web(&mut out, &config.web);
    render_notify(&mut out, &config.notify);
    render_pg(&mut out, &config.pg);
    render_mcp(&mut out, &config.mcp);
    out.finish()
}

fn render_web(out: &mut Printout, web: &WebSection) {
    out.table("[web]");
    match &web.addr {
        Some(addr) => out.value("addr", quote(&addr.value.to_string()), &addr.source),
        None => out.comment("addr: not set (127.0.0.1 on a free port)"),
    }
    out.setting(
        "public_url",
        web.public_url.as_ref(),
        None,
        "the address served",
        |url| quote(url),
    );
    render_tls(out, web.tls.as_ref());
}

/// `tls_cert` and `tls_key`, or a comment saying the server serves plain HTTP.
fn render_tls(out: &mut Printout, tls: Option<&TlsFiles>) {
    match tls {
        Some(tls) => {
            out.value("tls_cert", quote_path(&tls.cert.value), &tls.cert.source);
            out.value("tls_key", quote_path(&tls.key.value), &tls.key.source);
        }
        None => out.comment("tls_cert, tls_key: not set (plain HTTP)"),
    }
}

fn render_mcp(out: &mut Printout, mcp: &McpSection) {
    out.table("[mcp]");
    match &mcp.tokens {
        Some(tokens) => {
            let masked = vec![quote(MASK); tokens.value.len()].join(", ");
            out.value("tokens", format!("[{masked}]"), &tokens.source);
        }
        None => out.comment("tokens: not set (mcp --http serves loopback only)"),
    }
    render_tls(out, mcp.tls.as_ref());
}

fn render_notify(out: &mut Printout, notify: &NotifySection) {
    out.table("[notify]");
    out.setting(
        "after",
        notify.after.as_ref(),
        Some(Duration::from_secs_f64(DEFAULT_NOTIFY_AFTER_SECS)),
        "",
        |after| after.as_secs_f64().to_string(),
    );
    for (key, setting) in [
        ("text", &notify.text),
        ("bell", &notify.bell),
        ("ignore_claims", &notify.ignore_claims),
    ] {
        out.setting(key, setting.as_ref(), Some(false), "", bool::to_string);
    }
    if let Some(ntfy) = &notify.ntfy {
        out.table("[notify.ntfy]");
        out.value("topic", quote(MASK), &ntfy.topic.source);
        out.setting(
            "server",
            ntfy.server.as_ref(),
            Some(DEFAULT_NTFY_SERVER.to_owned()),
            "",
            |server| quote(&url_origin(server)),
        );
        out.setting("token", ntfy.token.as_ref(), None, "no token", |_| {
            quote(MASK)
        });
    } else {
        out.comment("");
        out.comment("[notify.ntfy]: not set (no ntfy notifications)");
    }
    if notify.webhooks.is_empty() {
        out.comment("");
        out.comment("[[notify.webhooks]]: none");
    }
    for hook in &notify.webhooks {
        out.table("[[notify.webhooks]]");
        out.value("url", quote(&url_origin(&hook.url.value)), &hook.url.source);
        out.value("secret", quote(MASK), &hook.secret.source);
    }
}

fn render_pg(out: &mut Printout, pg: &PgSection) {
    out.table("[pg]");
    out.setting(
        "url",
        pg.url.as_ref(),
        None,
        "log files, no database",
        |url| quote(&mask_pg_url(url.expose())),
    );
    out.setting(
        "schema",
        pg.schema.as_ref(),
        Some(DEFAULT_PG_SCHEMA.to_owned()),
        "",
        |schema| quote(schema),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pg_password_is_masked_in_every_form_and_nothing_else_is() {
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
            ("postgres://ask@db/agents", "postgres://ask@db/agents"),
            // Neither form: all of it.
            ("hunter2", MASK),
            ("host=db password='unterminated", MASK),
        ] {
            assert_eq!(mask_pg_url(url), shown, "{url}");
        }
    }

    #[test]
    fn a_url_shows_its_origin_only() {
        assert_eq!(
            url_origin("https://hooks.example/T0/B0/XXXX"),
            "https://hooks.example/…"
        );
        assert_eq!(
            url_origin("https://user:pw@ntfy.example:8443/"),
            "https://ntfy.example:8443/"
        );
        assert_eq!(url_origin("https://ntfy.sh"), "https://ntfy.sh");
    }

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
    fn a_flag_overrides_the_file_and_the_file_the_default() {
        let file = Setting {
            value: 30,
            source: Source::File {
                path: PathBuf::from("c.toml"),
                line: 2,
            },
        };
        let flag = Setting::resolve(Some(5), "--timeout", Some(&file), 120);
        assert_eq!(flag.source, Source::Flag("--timeout"));
        assert_eq!(flag.value, 5);
        assert_eq!(Setting::resolve(None, "--timeout", Some(&file), 120), file);
        let default = Setting::resolve(None, "--timeout", None, 120);
        assert_eq!((default.value, default.source), (120, Source::Default));
    }
}
