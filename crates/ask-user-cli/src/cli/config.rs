//! `ask-user`'s configuration file, and `ask-user config`, which prints the configuration in
//! effect and where each value came from. The crate README's section "The configuration file" is
//! the file's contract: which file is read, every key with its default, the secrets and their
//! `…_env` keys, the errors (`PATH:LINE:COL: message`) and the printout.
//!
//! Each library owns its table as one serde type with its defaults and checks: [`WebSettings`]
//! (`[web]`), [`NotifyConfig`] (`[notify]`), [`PgSettings`] (`[pg]`), [`McpSettings`] (`[mcp]`).
//! Reading the file (`…_env` secrets, where each value came from, errors at their line) is
//! `settings_file`'s. Here are the top-level keys, finding the file, and the printout.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use ask_user_mcp::{McpSettings, TlsFiles, TlsFilesError};
use ask_user_notify::NotifyConfig;
use ask_user_pg::PgSettings;
use ask_user_terminal::sanitize::visible;
use ask_user_web::WebSettings;
use clap::Args;
use serde::de::Error as _;
use serde::{Deserialize, Deserializer};
use settings_file::{EnvReader, Located, Printout, Read, Table, quote};

use super::{CliError, Exit, Mode};

/// The libraries' tables: each one's secret keys and the other names its type takes.
const TABLES: &[Table] = &[
    Table {
        path: "notify",
        secrets: NotifyConfig::SECRET_KEYS,
        other_names: NotifyConfig::JSON_NAMES,
    },
    Table {
        path: "pg",
        secrets: PgSettings::SECRET_KEYS,
        other_names: &[],
    },
    Table {
        path: "mcp",
        secrets: McpSettings::SECRET_KEYS,
        other_names: &[],
    },
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
    #[serde(default, deserialize_with = "tool_ask_user::file_keys::mode")]
    pub(crate) mode: Option<Mode>,
    /// `timeout`: the timed tool's default window in seconds (-1: indefinitely).
    #[serde(default, deserialize_with = "tool_ask_user::file_keys::timeout")]
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
    /// `[mcp]` `tls_cert` and `tls_key`, checked.
    #[serde(skip)]
    pub(crate) mcp_tls: Option<TlsFiles>,
    /// Where every key of the file is and came from.
    #[serde(skip)]
    read: Read,
}

fn state_dir<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<PathBuf>, D::Error> {
    let text = String::deserialize(deserializer)?;
    let path = ask_user_mcp::home_path(&text);
    path.map(Some)
        .map_err(|e| D::Error::custom(format_args!("`state_dir` {e}")))
}

/// A loaded configuration.
#[derive(Debug)]
pub(crate) struct Loaded {
    /// The settings (the defaults when no file was read).
    pub(crate) config: Config,
    /// The file read, if one was.
    pub(crate) path: Option<PathBuf>,
    /// Where the file was looked for, and how that place was found; `None` when neither
    /// `XDG_CONFIG_HOME` nor `HOME` is set.
    pub(crate) looked_at: Option<Located>,
}

impl Loaded {
    /// The file `--config` named, to hand to a process this one starts (an inbox).
    pub(crate) fn explicit_path(&self) -> Option<&Path> {
        let given = self.looked_at.as_ref().is_some_and(|at| at.given);
        self.path.as_deref().filter(|_| given)
    }
}

/// Loads the configuration: the file `explicit` names (it must exist), else
/// `$XDG_CONFIG_HOME/ask-user/config.toml` (an absolute one), else
/// `$HOME/.config/ask-user/config.toml`, when it exists; else the built-in defaults. Secrets
/// named by `…_env` keys are read from the environment here.
pub(crate) fn load(explicit: Option<&Path>) -> Result<Loaded, CliError> {
    let given = explicit.map(|path| (path, "--config"));
    let looked_at = settings_file::locate("ask-user", given, |name| std::env::var_os(name));
    let mut loaded = Loaded {
        config: Config::default(),
        path: None,
        looked_at,
    };
    let Some(at) = &loaded.looked_at else {
        return Ok(loaded);
    };
    let Some(text) = at.read().map_err(|e| bad_config(e.to_string()))? else {
        return Ok(loaded);
    };
    loaded.config = parse(&text, &at.path, &|name| std::env::var(name))?;
    let secrets = loaded.config.read.secrets_in_file();
    if !secrets.is_empty() && at.readable_by_others() {
        let path = at.path.display().to_string();
        eprintln!(
            "warning: {} holds {} and other users can read it: `chmod 600 {}`, or read them from the environment (`…_env` keys)",
            super::visible(&path),
            secrets.join(", "),
            super::visible(&ask_user_terminal::listing::shell_word(&path)),
        );
    }
    loaded.path = Some(at.path.clone());
    Ok(loaded)
}

impl Config {
    /// The tables left out because a secret of theirs is not in the environment (the variable
    /// its `…_env` key names is not set or empty): a command that needs one fails
    /// ([`Config::needs`]), one that would only use it as a surface goes on without it and says so.
    pub(crate) fn unavailable(&self) -> &[settings_file::Unavailable] {
        self.read.unavailable()
    }

    /// `Err` naming the key when a table at or below `table` (`pg`, `mcp`) was left out for a
    /// secret not in the environment: the command needs it.
    pub(crate) fn needs(&self, table: &str) -> Result<(), CliError> {
        match (self.unavailable().iter())
            .find(|u| u.table == table || u.table.starts_with(&format!("{table}.")))
        {
            Some(unavailable) => Err(bad_config(unavailable.error.to_string())),
            None => Ok(()),
        }
    }

    /// `[pg]`, which a command that may keep its sessions in the database needs whole.
    pub(crate) fn pg(&self) -> Result<&PgSettings, CliError> {
        self.needs("pg")?;
        Ok(&self.pg)
    }

    /// The surfaces of the file left out for a secret not in the environment, one line each for
    /// stderr: "[notify.ntfy] is not used: " and the error at its key.
    pub(crate) fn unused_surfaces(&self) -> Vec<String> {
        (self.unavailable().iter())
            .filter(|u| u.table.starts_with("notify") || u.table.starts_with("web"))
            .map(|u| {
                format!(
                    "{} is not used: {} (pass the variable in the server's environment, e.g. `env` in the client's configuration, or give the key in the file)",
                    settings_file::header(&u.table),
                    u.error
                )
            })
            .collect()
    }
}

fn bad_config(message: String) -> CliError {
    CliError::new("BAD_CONFIG", message, Exit::Usage)
}

/// Parses and checks a configuration file's text; `path` names it in errors and sources, `env`
/// reads the variables `…_env` keys name.
pub(crate) fn parse(text: &str, path: &Path, env: EnvReader<'_>) -> Result<Config, CliError> {
    let bad = |e: settings_file::SettingsError| bad_config(e.to_string());
    let (mut config, read): (Config, Read) =
        settings_file::read(text, path, TABLES, env).map_err(bad)?;
    let tls = |table: &str, e: TlsFilesError| {
        // `tls_cert` without `tls_key` is reported at its line alone, as it always was.
        let column = e != TlsFilesError::CertAlone;
        bad(read.error_at(&format!("{table}.{}", e.key()), &e.to_string(), column))
    };
    config.web.tls().map_err(|e| tls("web", e))?;
    config.mcp_tls = config.mcp.tls().map_err(|e| tls("mcp", e))?;
    config.notify.check().map_err(|e| {
        let key = e
            .key()
            .map_or_else(|| "notify".into(), |key| format!("notify.{key}"));
        bad(read.error_at(&key, &e.to_string(), true))
    })?;
    config.read = read;
    Ok(config)
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
        Err(e) => Err(CliError::failure(
            "INTERNAL",
            format!("cannot write to stdout: {e}"),
        )),
    }
}

/// The printout of `ask-user config`; `state_default` is the built-in state directory.
fn render(loaded: &Loaded, state_default: Option<PathBuf>) -> String {
    let config = &loaded.config;
    let file = loaded.path.as_deref().unwrap_or(Path::new(""));
    let escape = |line: &str| visible(line).into_owned();
    let mut out = Printout::new(&config.read, file, &escape);
    out.line("# The configuration in effect. A command-line flag overrides it.");
    out.line(&match (&loaded.path, &loaded.looked_at) {
        (Some(path), Some(at)) => format!("# file: {} (from {})", path.display(), at.how),
        (None, Some(at)) => {
            format!(
                "# file: none ({} from {} does not exist)",
                at.path.display(),
                at.how
            )
        }
        _ => "# file: none (neither XDG_CONFIG_HOME nor HOME is set)".to_owned(),
    });
    for unavailable in config.unavailable() {
        out.line(&format!(
            "# {} left out: {}",
            settings_file::header(&unavailable.table),
            unavailable.error
        ));
    }
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

    config.web.print(&mut out);
    config.notify.print(&mut out);
    config.pg.print(&mut out);
    config.mcp.print(&mut out);
    out.finish()
}
