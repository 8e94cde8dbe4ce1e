//! The process-wide server: one [`HostRuntime`] over the JSONL logs of a state directory, and the
//! transports that serve MCP sessions from it.

use std::io;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use ask_user_host::{HostError, HostRuntime};
use pending_answer::QuestionDesk;
use rmcp::ServiceExt;
use rmcp::model::Tool;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use session_log::{JsonlStore, SessionStore};
use tokio_util::sync::CancellationToken;
use tool_ask_user::LateAnswerRoute;
use user_questions::SessionId;

use crate::companion::{ANSWER_TOOL_DESCRIPTION, ANSWER_TOOL_NAME, answer_tool_parameters};
use crate::connection::McpConnection;
use crate::http::{Guard, HttpSessions};
use crate::sessions::Sessions;
use crate::state::ServerInner;
pub use crate::state::SessionHook;
pub use crate::state::{
    BearerToken, BearerTokenError, DEFAULT_MAX_CONNECTIONS, DEFAULT_MAX_SESSIONS,
    DEFAULT_PROGRESS_INTERVAL, DEFAULT_SESSION_IDLE, McpHttpOptions, McpOptions, McpSessionInfo,
    RequestStateKey,
};
pub use ask_user_http::{
    HomePathError, HttpLimits, ServerTls, TlsError, TlsFiles, TlsFilesError, home_path,
};

/// The path under which the streamable HTTP transport serves MCP.
pub const HTTP_PATH: &str = "/mcp";

/// The default state directory: `$XDG_STATE_HOME/ask-user/mcp`, else
/// `~/.local/state/ask-user/mcp`. `None` when neither variable is set.
pub fn default_state_dir() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_STATE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|v| !v.is_empty())
                .map(|home| Path::new(&home).join(".local").join("state"))
        })?;
    Some(base.join("ask-user").join("mcp"))
}

/// Why the server could not start or stopped.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The state directory cannot be made or used.
    #[error("state directory {path}: {source}")]
    StateDir {
        /// The directory.
        path: PathBuf,
        /// What failed.
        source: io::Error,
    },
    /// The host runtime refused the configuration.
    #[error(transparent)]
    Host(#[from] HostError),
    /// The transport failed.
    #[error("transport: {0}")]
    Transport(String),
}

/// The MCP server for `ask_user_question`: cheap to clone, one per process. Every MCP session it
/// serves ([`AskUserMcp::connection`]) is a session of one [`HostRuntime`], with its own JSONL log
/// in the state directory.
#[derive(Clone)]
pub struct AskUserMcp {
    pub(crate) inner: Arc<ServerInner>,
    /// The sessions this server serves, by session id.
    pub(crate) sessions: Arc<Sessions>,
}

impl std::fmt::Debug for AskUserMcp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AskUserMcp")
            .field("options", &self.inner.options)
            .finish_non_exhaustive()
    }
}

impl AskUserMcp {
    /// A server over the state directory of `options` (made if missing).
    pub fn new(options: McpOptions) -> Result<Self, ServeError> {
        let state_err = |source| ServeError::StateDir {
            path: options.state_dir.clone(),
            source,
        };
        // Only its owner reads the questions and answers it keeps (tightened if it was not).
        session_log::private_dir(&options.state_dir).map_err(state_err)?;
        if !options.state_dir.is_dir() {
            return Err(state_err(io::Error::other("not a directory")));
        }
        let key = match &options.request_state_key {
            Some(key) => key.clone(),
            None => RequestStateKey::load_or_create(&options.state_dir).map_err(state_err)?,
        };
        let options = options.with_request_state_key(key);
        let store = JsonlStore::new(options.state_dir.clone());
        Self::with_store(options, store)
    }

    /// A server whose sessions live in `store` (a database, say) instead of the state
    /// directory's JSONL logs. The state directory of `options` is not used.
    ///
    /// The tool is worded for MCP: whatever `late_answers` the configuration names, a timed
    /// definition and its pending result tell the model to fetch a late answer with
    /// `ask_user_question_answer` ([`LateAnswerRoute::CompanionTool`]), since MCP cannot put a
    /// user message into the client's conversation.
    pub fn with_store(
        options: McpOptions,
        store: impl SessionStore + 'static,
    ) -> Result<Self, ServeError> {
        let tool = options
            .tool
            .map(|config| config.with_late_answers(LateAnswerRoute::CompanionTool));
        let runtime = HostRuntime::new(store, tool)?;
        let tools = tools_for(&runtime);
        let state_key = match &options.request_state_key {
            Some(key) => Some(key.clone()),
            None => RequestStateKey::generate()
                .inspect_err(|error| {
                    tracing::warn!(%error, "no request-state key: forms of the stateless revision are off");
                })
                .ok(),
        };
        Ok(Self {
            inner: Arc::new(ServerInner {
                runtime,
                options,
                tools,
                http_sessions: Arc::default(),
                state_key,
                tasks: crate::tasks::Tasks::default(),
                rounds: std::sync::Mutex::default(),
            }),
            sessions: Arc::default(),
        })
    }

    /// The host runtime: register more answerers on `runtime().seam()`.
    pub fn runtime(&self) -> &HostRuntime {
        &self.inner.runtime
    }

    /// The options.
    pub fn options(&self) -> &McpOptions {
        &self.inner.options
    }

    /// The tools `tools/list` returns: `ask_user_question` (in the configured mode), and in
    /// timed mode also `ask_user_question_answer`.
    pub fn tools(&self) -> &[Tool] {
        &self.inner.tools
    }

    /// A handler for one MCP session (listed for [`AskUserMcp::session_info`] while it lives).
    pub fn connection(&self) -> McpConnection {
        let connection = McpConnection::new(Arc::clone(&self.inner));
        self.sessions.register(&connection.inner);
        connection
    }

    /// What this server knows of MCP session `session` (the session id its log's header and
    /// its questions carry): its log, its client's name and its working directory. `None` for a
    /// session this process does not serve, or no longer does (its connection is gone).
    pub fn session_info(&self, session: &SessionId) -> Option<McpSessionInfo> {
        self.sessions.get(session).map(|conn| conn.info())
    }

    /// The server's sessions as a question desk, each named by its log's name in the store: a
    /// late answer to a live session goes through its connection (the reply waits in its inbox
    /// for the companion tool, once the call is continued; a log another process holds now is
    /// refused at once), one to any other session through its log (admitted in a turn of its
    /// own). What the machine's inbox submits its answers to.
    pub fn desk(&self) -> Arc<dyn QuestionDesk> {
        Arc::new(crate::desk::McpDesk::new(
            Arc::clone(&self.inner),
            Arc::clone(&self.sessions),
        ))
    }

    /// Serves one MCP session on stdin and stdout until the client goes away. A request sent
    /// before `initialize` without the per-request metadata of the 2026-07-28 revision is
    /// answered "initialize first".
    pub async fn serve_stdio(&self) -> Result<(), ServeError> {
        self.serve_io(tokio::io::stdin(), tokio::io::stdout()).await
    }

    /// [`serve_stdio`](Self::serve_stdio) on any byte streams (a pipe, a socket, a test's
    /// in-memory pair), one JSON-RPC message a line.
    pub async fn serve_io<R, W>(&self, input: R, output: W) -> Result<(), ServeError>
    where
        R: tokio::io::AsyncRead + Unpin + Send + 'static,
        W: tokio::io::AsyncWrite + Unpin + Send + 'static,
    {
        let (transport, pumps) = crate::stdio::transport(input, output);
        let served = match self.connection().serve(transport).await {
            Ok(running) => running
                .waiting()
                .await
                .map(|_| ())
                .map_err(|e| e.to_string()),
            Err(error) => Err(error.to_string()),
        };
        pumps.finish().await;
        served.map_err(ServeError::Transport)
    }

    /// Live streamable HTTP sessions (of every router this server made).
    pub fn http_sessions(&self) -> usize {
        self.inner
            .http_sessions
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The streamable HTTP service at [`HTTP_PATH`], one MCP session per client session, at most
    /// [`McpHttpOptions::max_sessions`] at once, each closed once idle for
    /// [`McpHttpOptions::session_idle`]. With [`McpHttpOptions::bearer_tokens`], every request
    /// carries one of them (`401` otherwise) and any `Host` is taken; without, only loopback
    /// `Host` headers unless `allowed_hosts` says otherwise. An `Origin` is taken only when it is
    /// the server's own (the scheme served and the request's `Host`) or an allowed one; `cancel`
    /// ends every session. Not knowing where it is served, it takes the server's own origin and
    /// loopback hosts with any port; [`serve_http`](Self::serve_http) only with the one it serves.
    pub fn http_router(
        &self,
        allowed_hosts: Option<Vec<String>>,
        cancel: CancellationToken,
    ) -> axum::Router {
        self.router_for(allowed_hosts, cancel, None)
    }

    fn router_for(
        &self,
        allowed_hosts: Option<Vec<String>>,
        cancel: CancellationToken,
        port: Option<u16>,
    ) -> axum::Router {
        // No SSE priming event (`id: 0`, an empty `data:`, `retry:`): it only helps a client
        // resume a stream, which this server cannot (it keeps no event store), and clients that
        // negotiated 2025-06-18 do not expect it (the official SDKs send it only to 2025-11-25 and
        // later); Gemini CLI fails to parse it.
        let mut config = StreamableHttpServerConfig::default()
            .with_cancellation_token(cancel.clone())
            .with_sse_retry(None);
        let http = &self.inner.options.http;
        if let Some(hosts) = allowed_hosts {
            config = config.with_allowed_hosts(hosts);
        } else if !http.bearer_tokens.is_empty() {
            // A token is needed: a page of another site that rebinds its name to this server
            // has none, so any name may reach it (the one its certificate names, say).
            config = config.disable_allowed_hosts();
        } else if let Some(port) = port {
            // Loopback names with the port served: a `Host` naming another port is no request
            // meant for this server.
            config = config.with_allowed_hosts(
                ["localhost", "127.0.0.1", "[::1]"].map(|host| format!("{host}:{port}")),
            );
        }
        let sessions = HttpSessions::new(http, Arc::clone(&self.inner.http_sessions), cancel);
        let guard = Guard {
            sessions: Arc::clone(&sessions),
            port,
            allowed_origins: http.allowed_origins.clone().into(),
            tokens: http.bearer_tokens.clone().into(),
            scheme: if http.tls.is_some() {
                "https://"
            } else {
                "http://"
            },
            max_body: config.max_request_body_bytes,
        };
        let server = self.clone();
        let service = StreamableHttpService::new(move || Ok(server.connection()), sessions, config);
        axum::Router::new().nest_service(HTTP_PATH, service).layer(
            axum::middleware::from_fn_with_state(guard, crate::http::guard),
        )
    }

    /// Serves streamable HTTP on `listener` until `cancel` is cancelled, within the options'
    /// [`HttpLimits`] (timeouts for a request's head and body and for an idle connection, a
    /// cap on connections); a response in progress has no timeout. Over TLS when the options
    /// have [`McpHttpOptions::tls`].
    ///
    /// # Errors
    ///
    /// [`ServeError::Transport`] when `listener` is bound beyond loopback and the options have
    /// no [`McpHttpOptions::bearer_tokens`]: a server anyone on the network could use is never
    /// started.
    pub async fn serve_http(
        &self,
        listener: tokio::net::TcpListener,
        cancel: CancellationToken,
    ) -> Result<(), ServeError> {
        let local = listener
            .local_addr()
            .map_err(|e| ServeError::Transport(e.to_string()))?;
        let http = &self.inner.options.http;
        if !local.ip().is_loopback() && http.bearer_tokens.is_empty() {
            return Err(ServeError::Transport(no_token_beyond_loopback(local)));
        }
        let router = self.router_for(None, cancel.clone(), Some(local.port()));
        ask_user_http::serve_with(listener, router, http.limits, http.tls.clone(), cancel).await;
        Ok(())
    }

    /// Binds `addr` for [`AskUserMcp::serve_http`], refusing an address beyond loopback unless
    /// `authenticated` (the options have bearer tokens).
    pub async fn bind_http(
        addr: SocketAddr,
        authenticated: bool,
    ) -> Result<tokio::net::TcpListener, ServeError> {
        if !authenticated && !addr.ip().is_loopback() {
            return Err(ServeError::Transport(no_token_beyond_loopback(addr)));
        }
        tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|e| ServeError::Transport(format!("cannot listen on {addr}: {e}")))
    }
}

/// Why a server without tokens is not served at `addr`.
fn no_token_beyond_loopback(addr: SocketAddr) -> String {
    format!(
        "{addr} is not a loopback address: serving MCP beyond loopback needs bearer tokens (`[mcp] tokens` in the configuration file), so that only clients given one are served"
    )
}

/// `ask_user_question` exactly as the tool crate defines it for this configuration (description
/// and parameters, the bytes the catalog shows), plus the companion in timed mode.
fn tools_for(runtime: &HostRuntime) -> Vec<Tool> {
    let definition = runtime.tool().definition();
    let mut tools = vec![Tool::new(
        definition.name.clone(),
        definition.description.clone(),
        object(&definition.parameters),
    )];
    if runtime.tool().takes_late_answers() {
        tools.push(
            Tool::new(
                ANSWER_TOOL_NAME,
                ANSWER_TOOL_DESCRIPTION,
                object(&answer_tool_parameters()),
            )
            .with_annotations(rmcp::model::ToolAnnotations::new().read_only(true)),
        );
    }
    tools
}

fn object(value: &serde_json::Value) -> Arc<serde_json::Map<String, serde_json::Value>> {
    Arc::new(value.as_object().cloned().unwrap_or_default())
}
