//! What every MCP session of the process shares: the host runtime, the logs, the options and
//! the tool list.

use std::path::PathBuf;
use std::time::Duration;

use std::fmt;
use std::sync::Arc;

use ask_user_host::{Host, HostRuntime};
use rmcp::model::Tool;
use tool_ask_user::AskUserConfig;

use ask_user_http::{HttpLimits, ServerTls};

pub use crate::auth::{BearerToken, BearerTokenError};
pub use crate::mrtr::RequestStateKey;

/// How often a waiting call reports progress when its request carries a progress token.
pub const DEFAULT_PROGRESS_INTERVAL: Duration = Duration::from_secs(15);

/// What a host wires into each MCP session while a request has it open: called with the log's
/// name and the session's host when a request opens it; what it returns is kept until the
/// request's turn ends (for example a surface registered on the host's seam for that session).
#[derive(Clone)]
pub struct SessionHook(
    #[allow(clippy::type_complexity)] pub Arc<dyn Fn(&str, &Host) -> Box<dyn Send> + Send + Sync>,
);

impl fmt::Debug for SessionHook {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SessionHook")
    }
}

/// How to run the server.
#[derive(Clone, Debug)]
pub struct McpOptions {
    /// The tool configuration: `None` is legacy (the default), `Some` may choose timed mode. The
    /// server words a timed tool for its companion (`LateAnswerRoute::CompanionTool`) whatever
    /// `late_answers` says: over MCP no user message reaches the conversation.
    pub tool: Option<AskUserConfig>,
    /// Where the session logs go: one JSONL log per MCP session.
    pub state_dir: PathBuf,
    /// The progress interval of a waiting call.
    pub progress_interval: Duration,
    /// Wired into each session while a request has it open (none by default).
    pub on_open: Option<SessionHook>,
    /// Streamable HTTP's limits: connections, sessions, origins.
    pub http: McpHttpOptions,
    /// The key that seals a form's state between the rounds of a stateless (2026-07-28) call;
    /// `None` (the default): the one kept in the state directory (`request-state.key`, made on
    /// first use) for [`AskUserMcp::new`](crate::AskUserMcp::new), a fresh one per process for
    /// [`AskUserMcp::with_store`](crate::AskUserMcp::with_store). Server instances that serve one
    /// client's rounds between them need the same key.
    pub request_state_key: Option<RequestStateKey>,
    /// Serve clients that show forms in the stateless era (2026-07-28) in timed mode too: their
    /// timed forms come through tasks (with the tasks extension; none without it) and stay on
    /// the client's screen after the window. `false` (the default): such a client's
    /// `server/discover` is offered the handshake era only, where the form shows while the window
    /// lasts and is withdrawn when it closes; a client that speaks only the stateless era then
    /// cannot connect, and needs this.
    pub stateless_forms: bool,
}

/// The limits of streamable HTTP ([`AskUserMcp::serve_http`](crate::AskUserMcp::serve_http)), its
/// TLS and its bearer tokens.
#[derive(Clone, Debug)]
pub struct McpHttpOptions {
    /// The server's timeouts and connection cap ([`HttpLimits::default`]'s timeouts: a head in
    /// 10 s, a body in 20 s, 20 s idle; [`DEFAULT_MAX_CONNECTIONS`] connections, since every call
    /// that waits for a person holds one). A response in progress (a call that waits, a client's
    /// standalone event stream) has no timeout.
    pub limits: HttpLimits,
    /// Live sessions at most ([`DEFAULT_MAX_SESSIONS`]); past it, a new client's `initialize`
    /// is answered `503` with a JSON-RPC error that says so.
    pub max_sessions: usize,
    /// A session with no request in progress (no response streaming, no standalone stream open)
    /// is closed after this long ([`DEFAULT_SESSION_IDLE`]); its client gets `404` and
    /// initializes again.
    pub session_idle: Duration,
    /// Browser origins taken besides the server's own (`http://` and the `Host` of the request,
    /// with the port served), exactly (`http://localhost:5173`); empty by default. A request
    /// without `Origin` (a client that is not a browser) is always taken.
    pub allowed_origins: Vec<String>,
    /// The certificate and key to serve HTTPS with; `None` (the default): plain HTTP.
    pub tls: Option<ServerTls>,
    /// The bearer tokens a request may carry (`Authorization: Bearer TOKEN`); empty by default.
    /// When there are any, every request needs one of them (`401` with `WWW-Authenticate`
    /// otherwise), and the server may be bound beyond loopback; without any it serves loopback
    /// only. See [`BearerToken`].
    pub bearer_tokens: Vec<BearerToken>,
}

/// The default of [`McpHttpOptions::max_sessions`]: 256 (a session costs some 40 KB).
pub const DEFAULT_MAX_SESSIONS: usize = 256;

/// The default connection cap of [`McpHttpOptions::limits`]: 4,096. Each call waiting for a
/// person holds a connection of its own (its response streams until the answer), so the cap is
/// also the most calls that can wait at once; the process's descriptor limit lowers it (see
/// [`HttpLimits::max_connections`]).
pub const DEFAULT_MAX_CONNECTIONS: usize = 4096;

/// The default of [`McpHttpOptions::session_idle`]: 120 s.
pub const DEFAULT_SESSION_IDLE: Duration = Duration::from_mins(2);

impl Default for McpHttpOptions {
    fn default() -> Self {
        Self {
            limits: HttpLimits {
                max_connections: DEFAULT_MAX_CONNECTIONS,
                ..HttpLimits::default()
            },
            max_sessions: DEFAULT_MAX_SESSIONS,
            session_idle: DEFAULT_SESSION_IDLE,
            allowed_origins: Vec::new(),
            tls: None,
            bearer_tokens: Vec::new(),
        }
    }
}

impl McpOptions {
    /// Legacy mode, logs in `state_dir`, progress every 15 s.
    pub fn new(state_dir: impl Into<PathBuf>) -> Self {
        Self {
            tool: None,
            state_dir: state_dir.into(),
            progress_interval: DEFAULT_PROGRESS_INTERVAL,
            on_open: None,
            http: McpHttpOptions::default(),
            request_state_key: None,
            stateless_forms: false,
        }
    }

    /// With [`McpOptions::stateless_forms`].
    #[must_use]
    pub fn with_stateless_forms(mut self, stateless_forms: bool) -> Self {
        self.stateless_forms = stateless_forms;
        self
    }

    /// With these limits for streamable HTTP.
    #[must_use]
    pub fn with_http(mut self, http: McpHttpOptions) -> Self {
        self.http = http;
        self
    }

    /// With this key for forms' states ([`McpOptions::request_state_key`]).
    #[must_use]
    pub fn with_request_state_key(mut self, key: RequestStateKey) -> Self {
        self.request_state_key = Some(key);
        self
    }

    /// With this hook run for each session a request opens.
    #[must_use]
    pub fn with_session_hook(mut self, hook: SessionHook) -> Self {
        self.on_open = Some(hook);
        self
    }

    /// With this tool configuration.
    #[must_use]
    pub fn with_tool(mut self, tool: Option<AskUserConfig>) -> Self {
        self.tool = tool;
        self
    }

    /// With this progress interval.
    #[must_use]
    pub fn with_progress_interval(mut self, every: Duration) -> Self {
        self.progress_interval = every;
        self
    }
}

/// What this server knows of one MCP session it serves ([`AskUserMcp::session_info`]): enough for
/// an inbox to say which client a question came from, and where.
///
/// [`AskUserMcp::session_info`]: crate::AskUserMcp::session_info
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct McpSessionInfo {
    /// The session log's name in the store (`mcp-<time>-<uuid>.jsonl`).
    pub log: String,
    /// The client's name and version (`clientInfo`: `claude-code 2.1.328`), once the client
    /// told them.
    pub client: Option<String>,
    /// The client's first root as a path, when the client declared the `roots` capability and
    /// answered `roots/list` (asked once, on the session's first tool call) with a `file://` root;
    /// else the server's working directory (clients start a stdio server in the project).
    pub cwd: Option<String>,
}

/// The process-wide state behind `AskUserMcp` and every session's handler.
pub(crate) struct ServerInner {
    pub(crate) runtime: HostRuntime,
    pub(crate) options: McpOptions,
    pub(crate) tools: Vec<Tool>,
    /// Live streamable HTTP sessions, over every router made.
    pub(crate) http_sessions: Arc<std::sync::atomic::AtomicUsize>,
    /// What seals forms' states between rounds; `None` only when no key could be made (then
    /// forms of the stateless revision are not offered: its calls run without them).
    pub(crate) state_key: Option<RequestStateKey>,
    /// The timed calls this process runs as tasks.
    pub(crate) tasks: crate::tasks::Tasks,
    /// The calls whose form's second round runs now: the same round sent again meanwhile is
    /// refused as used, as it is once the call is in the log.
    pub(crate) rounds: std::sync::Mutex<std::collections::HashSet<String>>,
}

impl ServerInner {
    pub(crate) fn runtime(&self) -> &HostRuntime {
        &self.runtime
    }

    pub(crate) fn options(&self) -> &McpOptions {
        &self.options
    }

    pub(crate) fn tools(&self) -> &[Tool] {
        &self.tools
    }
}
