//! rmcp's `ServerHandler` for one MCP session ([`McpConnection`]): what each request of the
//! session does, and the errors of the ones it cannot read. The session itself (its log, held
//! open only while a request runs) is `session.rs`; an `ask_user_question` call runs in
//! `calls.rs`, the companion tool in `late.rs`.
//!
//! A client's `notifications/cancelled` of a timed call withdraws it only when its reason says a
//! person cancelled it; any other cancellation (a client's timeout) ends the call pending, as its
//! window closing would (`cancels.rs` keeps the session's book of them, `limit.rs` has the rule
//! and why). A blocking call ends with its request.

use std::borrow::Cow;
use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ClientCapabilities, DiscoverResult, Implementation,
    ListToolsResult, PaginatedRequestParams, ProtocolVersion, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use user_questions::{CallId, TOOL_NAME};

use crate::calls::is_stateless;
use crate::calls::principal;
use crate::companion::ANSWER_TOOL_NAME;
use crate::late;
use crate::session::Conn;
use crate::state::ServerInner;
use crate::util::quote;

/// The highest protocol version served: 2026-07-28, the stateless revision (forms through multi
/// round-trip requests). Clients of the handshake era get every version up to 2025-11-25 by
/// `initialize`, with forms through `elicitation/create`.
pub const MAX_PROTOCOL_VERSION: ProtocolVersion = ProtocolVersion::V_2026_07_28;

/// The `ServerHandler` of one MCP session. Made by `AskUserMcp::connection`.
#[derive(Clone)]
pub struct McpConnection {
    pub(crate) inner: Arc<Conn>,
}

impl std::fmt::Debug for McpConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpConnection")
            .field("log", &self.inner.log())
            .finish_non_exhaustive()
    }
}

impl McpConnection {
    pub(crate) fn new(server: Arc<ServerInner>) -> Self {
        Self {
            inner: Arc::new(Conn::new(server)),
        }
    }

    /// The name of this session's log in the state directory (it exists once a tool was called).
    pub fn log_name(&self) -> &str {
        self.inner.log()
    }

    /// This session's id: its log's, and the one its questions' lifecycle events and desks name
    /// (the key of `AskUserMcp::session_info`).
    pub fn session_id(&self) -> &user_questions::SessionId {
        self.inner.session_id()
    }
}

impl ServerHandler for McpConnection {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().enable_tasks().build())
            .with_server_info(Implementation::new("ask-user", env!("CARGO_PKG_VERSION")))
            .with_protocol_version(MAX_PROTOCOL_VERSION)
            .with_instructions(
                "ask_user_question puts questions to the person using this client and returns their answers.",
            )
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(ProtocolVersion::known_up_to(&MAX_PROTOCOL_VERSION))
    }

    async fn discover(
        &self,
        context: RequestContext<RoleServer>,
    ) -> Result<DiscoverResult, McpError> {
        // The stateless era's probe: every version served, and the tools; but a client whose
        // timed questions' forms could not be withdrawn in that era is offered the handshake era.
        let server = self.inner.server();
        let timed = server.runtime().tool().takes_late_answers();
        let versions = if timed
            && !server.options().stateless_forms
            && forms_need_the_handshake(context.client_capabilities().as_ref())
        {
            ProtocolVersion::known_up_to(&ProtocolVersion::LATEST_WITH_INITIALIZE).to_vec()
        } else {
            self.supported_protocol_versions().into_owned()
        };
        Ok(DiscoverResult::from_server_info(versions, self.get_info()))
    }

    async fn get_task(
        &self,
        request: rmcp::model::GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::GetTaskResult, McpError> {
        let server = self.inner.server();
        // Another principal's task is as unknown to this one as one that never was.
        let seen = crate::auth::may_see(&request.task_id, &principal(&context));
        let task = match server.tasks.get(&request.task_id).filter(|_| seen) {
            Some(task) => task.detailed(),
            None => (seen
                .then(|| late::task_from_log(server, &CallId::from(request.task_id.clone()))))
            .flatten()
            .ok_or_else(|| {
                McpError::invalid_params(
                    format!(
                        "no task {} in this server's sessions",
                        quote(&request.task_id)
                    ),
                    None,
                )
            })?,
        };
        Ok(rmcp::model::GetTaskResult::new(task))
    }

    async fn update_task(
        &self,
        request: rmcp::model::UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let refused =
            |error: crate::tasks::UpdateError| McpError::invalid_params(error.to_string(), None);
        if !crate::auth::may_see(&request.task_id, &principal(&context)) {
            return Err(refused(crate::tasks::UpdateError::Unknown(request.task_id)));
        }
        self.inner
            .server()
            .tasks
            .update(&request.task_id, &request.input_responses)
            .map_err(refused)
    }

    async fn cancel_task(
        &self,
        request: rmcp::model::CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let seen = crate::auth::may_see(&request.task_id, &principal(&context));
        match self
            .inner
            .server()
            .tasks
            .get(&request.task_id)
            .filter(|_| seen)
        {
            Some(task) => {
                task.cancel.cancel();
                Ok(())
            }
            None => Err(McpError::invalid_params(
                format!("no task {} runs in this server", quote(&request.task_id)),
                None,
            )),
        }
    }

    async fn on_cancelled(
        &self,
        notification: rmcp::model::CancelledNotificationParam,
        _context: rmcp::service::NotificationContext<RoleServer>,
    ) {
        if let Some(id) = &notification.request_id {
            self.inner
                .cancels()
                .cancelled(id, notification.reason.as_deref());
        }
    }

    async fn on_initialized(&self, context: rmcp::service::NotificationContext<RoleServer>) {
        let info = context.peer.peer_info();
        self.inner
            .note_client(info.as_ref().map(|info| &info.client_info));
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        // The request's own client info (the stateless revision's `_meta`), else the handshake's.
        self.inner.note_client(context.client_info().as_ref());
        Ok(ListToolsResult::with_all_items(
            self.inner.server().tools().to_vec(),
        ))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let timed = self.inner.server().runtime().tool().takes_late_answers();
        // The request's own client info (the stateless revision's `_meta`), else the handshake's.
        self.inner.note_client(context.client_info().as_ref());
        // The stateless revision has no server-to-client requests: its roots are not asked.
        if !is_stateless(&context) {
            crate::roots::ask_once(&self.inner, &context.peer).await;
        }
        match request.name.as_ref() {
            TOOL_NAME => crate::calls::ask(&self.inner, request, context).await,
            ANSWER_TOOL_NAME if timed => {
                let principal = principal(&context);
                Ok(late::fetch_reply(&self.inner, request.arguments.as_ref(), &principal).into())
            }
            other => Err(McpError::invalid_params(
                format!(
                    "unknown tool {}: this server has {}",
                    quote(other),
                    self.inner
                        .server()
                        .tools()
                        .iter()
                        .map(|t| t.name.as_ref())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                None,
            )),
        }
    }

    /// A request rmcp could not read as any method it knows: a known method whose params are
    /// not that method's (`tools/call` with `inputResponses` that is not an object, say) is
    /// invalid params, anything else an unknown method. Nothing is done either way.
    async fn on_custom_request(
        &self,
        request: rmcp::model::CustomRequest,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::CustomResult, McpError> {
        Err(not_understood(&request.method))
    }
}

/// Whether a client that probes with these capabilities sees the form of a timed question, and
/// sees it go when the window closes, only in the handshake era: it shows forms. In the stateless
/// era such a call's form is a round of its own, which cannot be withdrawn, or a task's input
/// request, which a client reads only when it polls (Claude Code 2.1.328 polls no more while its
/// dialog is up: the form stays on screen after the window); `elicitation/create` in a session
/// is withdrawn by `notifications/cancelled`, and clients close the dialog.
pub(crate) fn forms_need_the_handshake(capabilities: Option<&ClientCapabilities>) -> bool {
    capabilities.is_some_and(crate::calls::declares_forms)
}

/// The methods a client may send this server (both eras).
const CLIENT_METHODS: &[&str] = &[
    "initialize",
    "ping",
    "server/discover",
    "tools/list",
    "tools/call",
    "tasks/get",
    "tasks/list",
    "tasks/result",
    "tasks/update",
    "tasks/cancel",
    "prompts/list",
    "prompts/get",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "resources/subscribe",
    "resources/unsubscribe",
    "completion/complete",
    "logging/setLevel",
];

/// The error for a request of `method` that could not be read.
fn not_understood(method: &str) -> McpError {
    if CLIENT_METHODS.contains(&method) {
        McpError::invalid_params(
            format!(
                "the params of {method} are not the ones it takes (a field of the wrong type or shape); nothing was done"
            ),
            None,
        )
    } else {
        McpError::new(
            rmcp::model::ErrorCode::METHOD_NOT_FOUND,
            format!("no method {} on this server", quote(method)),
            None,
        )
    }
}
