//! What a program that runs sessions of the database needs beside the store: a new session run
//! live here ([`PgStore::start_session`]), the hook that wires the ledger into every session an
//! MCP server opens ([`PgStore::live_hook`]), the one key every instance over the database seals
//! form rounds with ([`PgStore::request_state_key`]), and an export to a new file that leaves
//! nothing behind when it fails ([`PgStore::export_to_new_file`]).

use std::fmt;
use std::fs::OpenOptions;
use std::io::Write as _;
use std::path::Path;
use std::time::Duration;

use ask_user_host::{Host, HostError, HostRuntime, ModelInfo, SessionOptions};
use session_log::now_ms;
use tool_ask_user::AskUserConfig;

use crate::{ExportError, ImportReport, LiveLedger, PgError, PgStore};

/// How late a lost notification of the ledger is caught up in a live session.
pub const LIVE_POLL: Duration = Duration::from_secs(1);

/// The name of the shared secret that seals MCP form rounds (`requestState`) in the database.
pub const REQUEST_STATE_SECRET: &str = "mcp-request-state";

/// A new session of the database run live by this process: its host, its name, the ledger wired
/// into it ([`PgStore::attach_live`]) and the runtime it runs in. Dropping it stops the ledger's
/// answers reaching it.
pub struct LiveSession {
    /// The session's host.
    pub host: Host,
    /// The session's name in the database.
    pub name: String,
    /// The ledger's answers delivered to it while it runs.
    pub ledger: LiveLedger,
    /// The runtime it runs in (it outlives the host's use).
    pub runtime: HostRuntime,
}

impl fmt::Debug for LiveSession {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LiveSession")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl PgStore {
    /// Creates the session `PREFIX-<unix ms>` with the tool configuration `tool` and the model
    /// `model`, and runs it live here with the ledger attached (`config`: the connection string,
    /// for the ledger's notifications).
    ///
    /// # Errors
    ///
    /// The host's: the session cannot be created.
    pub fn start_session(
        &self,
        config: &str,
        prefix: &str,
        tool: AskUserConfig,
        model: ModelInfo,
    ) -> Result<LiveSession, HostError> {
        let runtime = HostRuntime::new(self.clone(), Some(tool))?;
        let name = format!("{prefix}-{}", now_ms());
        let options = SessionOptions::named(name.as_str()).with_model(model);
        let host = runtime.create(&name, options)?;
        let ledger = self.attach_live(config, &name, &host, LIVE_POLL);
        Ok(LiveSession {
            host,
            name,
            ledger,
            runtime,
        })
    }

    /// What wires the ledger into each session a server opens, while it has it open: for the
    /// session `name` run by `host`, [`PgStore::attach_live`]. `ask-user mcp --pg` hands it to
    /// the MCP server as its session hook.
    pub fn live_hook(
        &self,
        config: &str,
    ) -> impl Fn(&str, &Host) -> LiveLedger + Send + Sync + 'static {
        let (store, config) = (self.clone(), config.to_owned());
        move |name, host| store.attach_live(&config, name, host, LIVE_POLL)
    }

    /// The key every instance over this database seals and opens MCP form rounds with: the
    /// first instance stores its `candidate` (a fresh random key), the others read it.
    ///
    /// # Errors
    ///
    /// The database is unavailable.
    pub fn request_state_key(&self, candidate: &[u8]) -> Result<Vec<u8>, PgError> {
        self.shared_secret(REQUEST_STATE_SECRET, candidate)
    }

    /// Writes the log `name` to a new file at `path` (refused if it exists), synced to disk; a
    /// failed export removes what it wrote, so a retry is not refused by a partial log. The
    /// bytes written.
    ///
    /// # Errors
    ///
    /// The file cannot be created or written, or the export fails.
    pub fn export_to_new_file(&self, name: &str, path: &Path) -> Result<u64, ExportError> {
        // The export holds every question and answer of the session: its owner's alone.
        let mut options = OpenOptions::new();
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, session_log::FILE_MODE);
        let mut file = options.write(true).create_new(true).open(path)?;
        let written = self.export(name, &mut file).and_then(|bytes| {
            file.flush()?;
            file.sync_all()?;
            Ok(bytes)
        });
        if written.is_err() {
            drop(file);
            let _ = std::fs::remove_file(path);
        }
        written
    }
}

impl fmt::Display for ImportReport {
    /// `N lines, M bytes`, the corrupt lines kept and a torn tail left out when there are.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} lines, {} bytes", self.lines, self.byte_length)?;
        if self.corrupt > 0 {
            write!(f, ", {} corrupt lines kept", self.corrupt)?;
        }
        if let Some(torn) = self.torn_tail {
            write!(f, ", an incomplete last line of {torn} bytes left out")?;
        }
        Ok(())
    }
}
