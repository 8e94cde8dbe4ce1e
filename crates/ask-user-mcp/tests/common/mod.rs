//! An in-process MCP client for the server: rmcp on both ends over `tokio::io::duplex`.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use ask_user_mcp::{AskUserMcp, McpOptions};
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, ClientRequest,
    ElicitRequestParams, ElicitResult, ElicitationAction, Implementation,
    ProgressNotificationParam, ProtocolVersion, ServerResult,
};
use rmcp::service::{
    NotificationContext, PeerRequestOptions, RequestContext, RequestHandle, RunningService,
};
use rmcp::{ClientHandler, ErrorData as McpError, RoleClient, ServiceExt};
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};
use tool_ask_user::AskUserConfig;

/// What the test client's user does with a form.
pub enum Reply {
    /// Answer at once.
    Now(ElicitResult),
    /// Hand the form to the test, which answers through the sender.
    Hold,
}

/// A form the client received and the test holds.
pub struct HeldForm {
    pub params: ElicitRequestParams,
    pub reply: oneshot::Sender<ElicitResult>,
}

#[derive(Clone)]
pub struct TestClient {
    name: String,
    elicitation: bool,
    protocol: ProtocolVersion,
    replies: Arc<Mutex<VecDeque<Reply>>>,
    pub forms: Arc<Mutex<Vec<ElicitRequestParams>>>,
    held: mpsc::UnboundedSender<HeldForm>,
    pub progress: Arc<Mutex<Vec<ProgressNotificationParam>>>,
    /// Forms the server withdrew (`notifications/cancelled`) while the test held them.
    pub withdrawn: Arc<Mutex<usize>>,
    /// The roots the client lists, when it declares the `roots` capability.
    pub roots: Option<Vec<String>>,
    /// Whether it declares the tasks extension (SEP-2663).
    pub tasks: bool,
}

impl ClientHandler for TestClient {
    fn get_info(&self) -> ClientConfig {
        let mut capabilities = json!({});
        if self.elicitation {
            capabilities["elicitation"] = json!({"form": {}});
        }
        if self.roots.is_some() {
            capabilities["roots"] = json!({});
        }
        if self.tasks {
            capabilities["extensions"] = json!({"io.modelcontextprotocol/tasks": {}});
        }
        let capabilities: ClientCapabilities = serde_json::from_value(capabilities).unwrap();
        ClientConfig::new(capabilities, Implementation::new(self.name.clone(), "1.0"))
            .with_protocol_version(self.protocol.clone())
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, McpError> {
        self.forms.lock().unwrap().push(request.clone());
        let reply = self.replies.lock().unwrap().pop_front();
        match reply {
            Some(Reply::Now(result)) => Ok(result),
            Some(Reply::Hold) | None => {
                let (tx, rx) = oneshot::channel();
                let _ = self.held.send(HeldForm {
                    params: request,
                    reply: tx,
                });
                tokio::select! {
                    answer = rx => answer
                        .map_err(|_| McpError::internal_error("the test dropped the form", None)),
                    () = context.ct.cancelled() => {
                        *self.withdrawn.lock().unwrap() += 1;
                        Err(McpError::internal_error("withdrawn", None))
                    }
                }
            }
        }
    }

    #[allow(deprecated)] // Roots are deprecated by SEP-2577; clients still send them.
    async fn list_roots(
        &self,
        _context: RequestContext<RoleClient>,
    ) -> Result<rmcp::model::ListRootsResult, McpError> {
        let roots = self.roots.clone().unwrap_or_default();
        Ok(rmcp::model::ListRootsResult::new(
            roots.into_iter().map(rmcp::model::Root::new).collect(),
        ))
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.progress.lock().unwrap().push(params);
    }
}

/// A server and a connected client.
pub struct Harness {
    pub dir: tempfile::TempDir,
    pub server: AskUserMcp,
    pub client: RunningService<RoleClient, TestClient>,
    pub handler: TestClient,
    pub held: mpsc::UnboundedReceiver<HeldForm>,
    /// The MCP session's id (its log's and its questions').
    pub session: user_questions::SessionId,
    /// The MCP session's log name.
    pub log: String,
}

/// What the test client is: its capabilities and protocol.
#[derive(Clone)]
pub struct ClientSetup {
    pub elicitation: bool,
    pub protocol: ProtocolVersion,
    pub roots: Option<Vec<String>>,
}

impl ClientSetup {
    pub fn new(elicitation: bool) -> Self {
        Self {
            elicitation,
            protocol: ProtocolVersion::V_2025_11_25,
            roots: None,
        }
    }

    #[must_use]
    pub fn with_roots(mut self, roots: &[&str]) -> Self {
        self.roots = Some(roots.iter().map(|&root| root.to_owned()).collect());
        self
    }
}

pub fn accept(content: Value) -> ElicitResult {
    ElicitResult::new(ElicitationAction::Accept).with_content(content)
}

pub fn action(action: ElicitationAction) -> ElicitResult {
    ElicitResult::new(action)
}

impl Harness {
    /// A server in `mode` (None: legacy) with a client that supports form elicitation or not.
    pub async fn start(tool: Option<AskUserConfig>, elicitation: bool) -> Self {
        let dir = tempfile::tempdir().unwrap();
        Self::start_in(dir, tool, elicitation).await
    }

    pub async fn start_in(
        dir: tempfile::TempDir,
        tool: Option<AskUserConfig>,
        elicitation: bool,
    ) -> Self {
        Self::start_speaking(dir, tool, elicitation, ProtocolVersion::V_2025_11_25).await
    }

    /// A server and a client that asks for protocol `protocol`.
    pub async fn start_speaking(
        dir: tempfile::TempDir,
        tool: Option<AskUserConfig>,
        elicitation: bool,
        protocol: ProtocolVersion,
    ) -> Self {
        let setup = ClientSetup {
            protocol,
            ..ClientSetup::new(elicitation)
        };
        Self::start_as(dir, tool, setup).await
    }

    /// A server and a client set up as `setup` says.
    pub async fn start_as(
        dir: tempfile::TempDir,
        tool: Option<AskUserConfig>,
        setup: ClientSetup,
    ) -> Self {
        // Stateless clients with forms are served in their era (tasks): the tests of that era
        // connect modern-only clients. The default, offering them the handshake, is `clients.rs`'s.
        let server = AskUserMcp::new(
            McpOptions::new(dir.path())
                .with_tool(tool)
                .with_stateless_forms(true),
        )
        .unwrap();
        let connected = connect_as(&server, setup).await;
        Self {
            dir,
            server,
            client: connected.client,
            handler: connected.handler,
            held: connected.held,
            session: connected.session,
            log: connected.log,
        }
    }

    /// Queues what the user does with the next form.
    pub fn reply(&self, reply: Reply) {
        self.handler.replies.lock().unwrap().push_back(reply);
    }

    pub async fn call(&self, name: &str, arguments: Value) -> CallToolResult {
        let params = CallToolRequestParams::new(name.to_owned())
            .with_arguments(arguments.as_object().cloned().unwrap());
        self.client.peer().call_tool(params).await.unwrap()
    }

    /// Sends a tools/call and returns its handle (to cancel it, or to await it later).
    pub async fn send_call(&self, name: &str, arguments: Value) -> RequestHandle<RoleClient> {
        let params = CallToolRequestParams::new(name.to_owned())
            .with_arguments(arguments.as_object().cloned().unwrap());
        let request = ClientRequest::CallToolRequest(rmcp::model::CallToolRequest::new(params));
        self.client
            .peer()
            .send_request_with_option(request, PeerRequestOptions::no_options())
            .await
            .unwrap()
    }

    /// The session logs in the state directory.
    pub fn logs(&self) -> Vec<PathBuf> {
        logs_in(self.dir.path())
    }

    /// The only session log's events, as JSON values.
    pub fn events(&self) -> Vec<Value> {
        let logs = self.logs();
        assert_eq!(logs.len(), 1, "one session log: {logs:?}");
        events(&logs[0])
    }
}

pub async fn connect(
    server: &AskUserMcp,
    elicitation: bool,
    protocol: ProtocolVersion,
) -> (
    RunningService<RoleClient, TestClient>,
    mpsc::UnboundedReceiver<HeldForm>,
    TestClient,
) {
    let setup = ClientSetup {
        protocol,
        ..ClientSetup::new(elicitation)
    };
    let connected = connect_as(server, setup).await;
    (connected.client, connected.held, connected.handler)
}

/// A client connected to a new session of the server.
pub struct Connected {
    pub client: RunningService<RoleClient, TestClient>,
    pub held: mpsc::UnboundedReceiver<HeldForm>,
    pub handler: TestClient,
    pub session: user_questions::SessionId,
    pub log: String,
}

pub async fn connect_as(server: &AskUserMcp, setup: ClientSetup) -> Connected {
    let ClientSetup {
        elicitation,
        protocol,
        roots,
    } = setup;
    let (client_io, server_io) = tokio::io::duplex(1 << 16);
    let connection = server.connection();
    let session = connection.session_id().clone();
    let log = connection.log_name().to_owned();
    tokio::spawn(async move {
        let running = connection.serve(server_io).await.unwrap();
        let _ = running.waiting().await;
    });
    let (handler, held) = TestClient::new("test-client", elicitation, protocol, roots);
    let client = handler.clone().serve(client_io).await.unwrap();
    Connected {
        client,
        held,
        handler,
        session,
        log,
    }
}

/// A client of the stateless revision (2026-07-28: `server/discover`, no `initialize`) on a new
/// connection of the server, with form elicitation or without.
pub async fn connect_stateless(server: &AskUserMcp, elicitation: bool) -> Connected {
    connect_stateless_as(server, elicitation, false).await
}

/// [`connect_stateless`], declaring the tasks extension when `tasks`.
pub async fn connect_stateless_as(
    server: &AskUserMcp,
    elicitation: bool,
    tasks: bool,
) -> Connected {
    use rmcp::{ClientLifecycleMode, ClientServiceExt as _};
    let (client_io, server_io) = tokio::io::duplex(1 << 16);
    let connection = server.connection();
    let session = connection.session_id().clone();
    let log = connection.log_name().to_owned();
    tokio::spawn(async move {
        let running = connection.serve(server_io).await.unwrap();
        let _ = running.waiting().await;
    });
    let (mut handler, held) = TestClient::new(
        "stateless-client",
        elicitation,
        ProtocolVersion::V_2026_07_28,
        None,
    );
    handler.tasks = tasks;
    let client = handler
        .clone()
        .serve_with_lifecycle(
            client_io,
            ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
        )
        .await
        .unwrap();
    Connected {
        client,
        held,
        handler,
        session,
        log,
    }
}

impl TestClient {
    /// A client named `name` of `protocol`, with form elicitation or without, listing `roots`
    /// when given; the receiver of the forms its user holds.
    pub fn new(
        name: &str,
        elicitation: bool,
        protocol: ProtocolVersion,
        roots: Option<Vec<String>>,
    ) -> (Self, mpsc::UnboundedReceiver<HeldForm>) {
        let (held_tx, held) = mpsc::unbounded_channel();
        let client = Self {
            name: name.to_owned(),
            elicitation,
            protocol,
            replies: Arc::default(),
            forms: Arc::default(),
            held: held_tx,
            progress: Arc::default(),
            withdrawn: Arc::default(),
            roots,
            tasks: false,
        };
        (client, held)
    }

    /// Queues what the user does with the next form.
    pub fn reply(&self, reply: Reply) {
        self.replies.lock().unwrap().push_back(reply);
    }
}

pub fn logs_in(dir: &Path) -> Vec<PathBuf> {
    let mut logs: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    logs.sort();
    logs
}

pub fn events(log: &Path) -> Vec<Value> {
    std::fs::read_to_string(log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The text blocks of a tool result.
pub fn texts(result: &CallToolResult) -> Vec<String> {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect()
}

/// The `tool/result` records among `events`, in log order.
pub fn results_of(events: &[Value]) -> Vec<&Value> {
    events
        .iter()
        .filter(|e| e["type"] == "tool/result")
        .collect()
}

pub fn response_result(response: ServerResult) -> CallToolResult {
    match response {
        ServerResult::CallToolResult(result) => result,
        other => panic!("not a tool result: {other:?}"),
    }
}

pub fn one_question() -> Value {
    json!({"questions": [{
        "id": "db",
        "question": "Which database?",
        "header": "Database",
        "options": [{"label": "PostgreSQL", "description": "the default"}, {"label": "SQLite"}]
    }]})
}
