//! The reference host: one live session whose every step is durable.
//!
//! A [`Host`] owns what an agent framework would own for the `ask_user_question` path: the session
//! log (through the [store](crate::store)), a live agent (a root, or a child of an owner) with a
//! durable inbox, the agent
//! registry, the user-questions seam, the tool (legacy or timed), late answers, and the
//! `userQuestions` projection kept live from the events it commits. Every event goes through one
//! [`Journal`]: appended and fsynced first, then applied to the projection, then reported to late
//! answers as [`HostEvent::Committed`](pending_answer::HostEvent::Committed), in log order.
//!
//! What a turn looks like in the log, as the reference writes it: `agent/inbox/spliced` (a queued
//! message, e.g. a late reply), `turn/start`, `agent/inbox/spliced` (the turn claims the queue),
//! `step/start`, `user/message` (admission), `request/header`, `tool/call`, `tool/result`,
//! `step/end`, `turn/end`.

mod agent;
mod journal;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use pending_answer::{InMemoryProjectionHost, LateAnswers, ProjectionHost};
use serde_json::json;
use tool_ask_user::{AskUserConfig, AskUserTool, ToolContext, ToolOutcome};
use user_questions::{
    AgentHandle, CallId, CancellationToken, HostBindings, InMemoryAgentRegistry, SessionId,
    SessionRef, UserMessage, UserQuestions, UserQuestionsConfig,
};
use user_questions_projection::UserQuestionsState;

pub use agent::HostAgent;
pub use journal::{Journal, JournalError};

use crate::store::{
    CheckpointPolicy, LogWriter, NewSession, OpenReport, RepairReport, StoreError, load_projection,
};

/// Where the host keeps its session log.
#[derive(Clone, Debug)]
pub enum LogTarget {
    /// No log: events are numbered and folded in memory only.
    Memory,
    /// Create a new log at this path (it must not exist).
    Create(PathBuf),
    /// Open this log for write (resume repair runs first), or create it if it does not exist.
    OpenOrCreate(PathBuf),
    /// Open this existing log for write (resume repair runs first).
    Open(PathBuf),
}

/// What opening the host found in an existing log.
#[derive(Debug, Default)]
pub struct Resumed {
    /// The open report: findings (corrupt lines, torn tail, gaps) and what was left unfinished.
    pub report: Option<OpenReport>,
    /// What resume repair appended.
    pub repair: Option<RepairReport>,
    /// Messages restored into the inbox from `agent/inbox/spliced` records.
    pub restored_inbox: usize,
}

/// How to build a host.
#[derive(Clone)]
pub struct HostOptions {
    /// The tool configuration (`None`: legacy).
    pub tool: Option<AskUserConfig>,
    /// Where the log lives.
    pub log: LogTarget,
    /// The id of a new session (ignored when an existing log is opened).
    pub session_id: SessionId,
    /// The agent's id.
    pub agent_id: String,
    /// The agent registry to enter the agent in (default: a registry of its own).
    pub registry: Option<Arc<InMemoryAgentRegistry>>,
    /// The agent that owns this one: the agent is entered as a live child of `owner` (and then
    /// may not ask the person, SPEC §4.4) instead of as a live root.
    pub owner: Option<AgentHandle>,
}

impl std::fmt::Debug for HostOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostOptions")
            .field("tool", &self.tool)
            .field("log", &self.log)
            .field("session_id", &self.session_id)
            .field("agent_id", &self.agent_id)
            .field("registry", &self.registry.is_some())
            .field("owner", &self.owner.as_ref().map(|o| o.id().clone()))
            .finish()
    }
}

impl HostOptions {
    /// Options for a host with the given tool config and log.
    pub fn new(tool: Option<AskUserConfig>, log: LogTarget) -> Self {
        Self {
            tool,
            log,
            session_id: SessionId::from(format!("session-{}", pending_answer::new_message_id())),
            agent_id: "root".to_owned(),
            registry: None,
            owner: None,
        }
    }
}

/// An error of the host: the log, or an inconsistent configuration.
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    /// The session log failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Committing an event failed.
    #[error(transparent)]
    Journal(#[from] JournalError),
    /// The tool configuration is invalid.
    #[error("invalid tool configuration: {0}")]
    Config(String),
}

impl HostError {
    /// A stable code for the command line.
    pub fn code(&self) -> &'static str {
        match self {
            Self::Store(error) => error.code(),
            Self::Journal(error) => error.code(),
            Self::Config(_) => "BAD_CONFIG",
        }
    }
}

/// Turn and step counters.
#[derive(Debug, Default)]
struct Position {
    turn: u64,
    step: u64,
    in_turn: bool,
    in_step: bool,
    header_logged: bool,
}

/// One live session of the reference host: one agent (a live root, or a child of an owner), its
/// session log, and the seam, tool and late answers it uses. See the [module docs](self).
pub struct Host {
    seam: UserQuestions,
    tool: AskUserTool,
    late: LateAnswers,
    agent: Arc<HostAgent>,
    journal: Arc<Journal>,
    projections: Arc<InMemoryProjectionHost>,
    _registry: Arc<InMemoryAgentRegistry>,
    position: Mutex<Position>,
}

impl Host {
    /// Opens (or creates) the session and builds the live host around it. For an existing log,
    /// resume repair runs first, the inbox is restored from the log, and the projection is loaded
    /// from its checkpoint (or refolded) and the checkpoint refreshed.
    pub fn open(options: HostOptions) -> Result<(Self, Resumed), HostError> {
        let registry = options.registry.clone().unwrap_or_default();
        let seam = UserQuestions::new(
            UserQuestionsConfig::default(),
            HostBindings::with_registry(registry.clone()),
        )
        .map_err(|e| HostError::Config(e.to_string()))?;
        let tool = AskUserTool::new(seam.clone(), options.tool)
            .map_err(|e| HostError::Config(e.to_string()))?;
        let projections = InMemoryProjectionHost::new();
        let late = LateAnswers::new(&seam, Some(projections.clone() as Arc<dyn ProjectionHost>));

        let path = match &options.log {
            LogTarget::Memory => None,
            LogTarget::Create(path) | LogTarget::OpenOrCreate(path) | LogTarget::Open(path) => {
                Some(path.clone())
            }
        };
        let exists = path.as_deref().is_some_and(Path::exists);
        let mut resumed = Resumed::default();
        let mut restore = agent::Restore::default();
        let (writer, session_id, state) = match (&options.log, path) {
            (LogTarget::Memory, _) | (_, None) => (None, options.session_id, None),
            (target, Some(path))
                if matches!(target, LogTarget::Create(_))
                    || (matches!(target, LogTarget::OpenOrCreate(_)) && !exists) =>
            {
                let writer = LogWriter::create(&path, &NewSession::new(options.session_id))?;
                let id = writer.header().id.clone();
                (Some(writer), id, None)
            }
            (_, Some(path)) => {
                let (mut writer, report) = LogWriter::open_with(&path, &mut restore)?;
                let repair = crate::store::repair_interrupted(&mut writer)?;
                let load = load_projection(&path, CheckpointPolicy::Refresh)?;
                let id = writer.header().id.clone();
                resumed.report = Some(report);
                resumed.repair = Some(repair);
                (Some(writer), id, Some(load.state))
            }
        };

        let session: SessionRef = Arc::new(HostSession { id: session_id });
        if let Some(state) = state {
            projections.seed(&session, state);
        }
        let journal = Journal::new(writer, session.clone(), projections.clone(), late.clone());
        let agent = HostAgent::new(&options.agent_id, session, journal.clone());
        resumed.restored_inbox = agent.restore(&restore);
        match &options.owner {
            Some(owner) => registry.enter_child(agent.clone() as AgentHandle, owner),
            None => registry.enter_root(agent.clone() as AgentHandle),
        }
        let position = Position {
            turn: restore.last_turn,
            ..Position::default()
        };
        Ok((
            Self {
                seam,
                tool,
                late,
                agent,
                journal,
                projections,
                _registry: registry,
                position: Mutex::new(position),
            },
            resumed,
        ))
    }

    /// The seam (register answerers here).
    pub fn seam(&self) -> &UserQuestions {
        &self.seam
    }

    /// The tool the model is offered.
    pub fn tool(&self) -> &AskUserTool {
        &self.tool
    }

    /// Late answers for this session.
    pub fn late_answers(&self) -> &LateAnswers {
        &self.late
    }

    /// The session's live agent (a root, or a child when the host was opened with an owner).
    pub fn agent(&self) -> AgentHandle {
        self.agent.clone()
    }

    /// The agent with its inbox.
    pub fn host_agent(&self) -> &Arc<HostAgent> {
        &self.agent
    }

    /// The live session instance.
    pub fn session(&self) -> SessionRef {
        self.journal.session().clone()
    }

    /// The session id.
    pub fn session_id(&self) -> SessionId {
        self.journal.session().id().clone()
    }

    /// The log path, when the session is durable.
    pub fn log_path(&self) -> Option<PathBuf> {
        self.journal.path()
    }

    /// The `userQuestions` projection as it stands.
    pub fn projection(&self) -> UserQuestionsState {
        self.projections
            .user_questions(self.journal.session())
            .unwrap_or_else(|| UserQuestionsState::new(0))
    }

    fn position(&self) -> std::sync::MutexGuard<'_, Position> {
        crate::sync::lock(&self.position)
    }

    /// Starts a turn: `turn/start`, then the turn claims the whole next-turn inbox (each claimed
    /// message is reported as [`HostEvent::InboxClaimed`](pending_answer::HostEvent::InboxClaimed)). Returns the claimed messages, to be
    /// admitted with [`Host::admit`].
    pub fn begin_turn(&self) -> Result<Vec<UserMessage>, HostError> {
        let turn = self.start_turn()?;
        Ok(self.agent.claim_next_turn(&self.agent(), turn)?)
    }

    /// Starts a turn that claims only the queued message `message_id` (a late reply); other
    /// queued messages stay for a later turn.
    pub fn begin_turn_with(&self, message_id: &str) -> Result<Option<UserMessage>, HostError> {
        let turn = self.start_turn()?;
        Ok(self.agent.claim_one(&self.agent(), message_id, turn)?)
    }

    /// Logs `turn/start` for the next turn; the counters move only once it is durable.
    fn start_turn(&self) -> Result<u64, HostError> {
        let turn = self.position().turn + 1;
        self.journal
            .commit("turn/start", &json!({ "turn": turn }))?;
        let mut position = self.position();
        position.turn = turn;
        position.step = 0;
        position.in_turn = true;
        position.in_step = false;
        Ok(turn)
    }

    /// Starts a step.
    pub fn begin_step(&self) -> Result<(), HostError> {
        let (turn, step) = {
            let position = self.position();
            (position.turn, position.step + 1)
        };
        self.journal
            .commit("step/start", &json!({ "turn": turn, "step": step }))?;
        let mut position = self.position();
        position.step = step;
        position.in_step = true;
        Ok(())
    }

    /// Admits a claimed message: logs it as `user/message` (the projection settles a late reply).
    pub fn admit(&self, message: &UserMessage) -> Result<(), HostError> {
        self.journal.commit_message("user/message", message)?;
        Ok(())
    }

    /// Logs the `request/header` snapshot with the tool list the model is offered (SPEC §7.6):
    /// `initial` the first time in a fresh log, `resume` the first time after reopening.
    pub fn log_request_header(&self) -> Result<(), HostError> {
        if self.position().header_logged {
            return Ok(());
        }
        let reason = if self.journal.resumed() {
            "resume"
        } else {
            "initial"
        };
        let header = json!({
            "header": {
                "config": { "provider": "reference-host", "model": "scripted" },
                "tools": [self.tool.definition()],
            },
            "reason": reason,
        });
        self.journal.commit("request/header", &header)?;
        self.position().header_logged = true;
        Ok(())
    }

    /// Logs an assistant message with one text block.
    pub fn assistant_text(&self, text: &str) -> Result<(), HostError> {
        let (turn, step) = {
            let position = self.position();
            (position.turn, position.step)
        };
        self.journal.commit_message_data(
            "assistant/message",
            &json!({
                "turn": turn,
                "step": step,
                "message": { "role": "assistant", "content": [{ "type": "text", "text": text }] },
            }),
        )?;
        Ok(())
    }

    /// Runs one `ask_user_question` call as a tool runtime does (SPEC §5.7): logs `tool/call`
    /// with the raw arguments, executes the tool with the agent and `cancel`, applies E-ABORT,
    /// and logs `tool/result`. Returns the outcome the model reads.
    ///
    /// Cancel safety: cancel through `cancel`, not by dropping the future, so the result is
    /// logged; a dropped future leaves the call without a result, which resume repair turns into
    /// `TOOL_OUTCOME_UNKNOWN` on the next open.
    pub async fn call_tool(
        &self,
        call_id: &CallId,
        arguments: &str,
        cancel: CancellationToken,
    ) -> Result<ToolOutcome, HostError> {
        let (turn, step) = {
            let position = self.position();
            (position.turn, position.step)
        };
        self.journal.commit(
            "tool/call",
            &json!({
                "turn": turn,
                "step": step,
                "callId": call_id,
                "name": user_questions::TOOL_NAME,
                "arguments": arguments,
            }),
        )?;
        let ctx = ToolContext::new(call_id.clone())
            .with_agent(self.agent())
            .with_cancel(cancel.clone());
        let outcome = self
            .tool
            .execute(arguments, ctx)
            .await
            .abort_if_cancelled(&cancel);
        let message_id = format!("msg-{}", pending_answer::new_message_id());
        self.journal.commit_message_data(
            "tool/result",
            &outcome.tool_result_data(turn, step, &message_id, call_id),
        )?;
        Ok(outcome)
    }

    /// Ends the step.
    pub fn end_step(&self) -> Result<(), HostError> {
        let (turn, step) = {
            let position = self.position();
            if !position.in_step {
                return Ok(());
            }
            (position.turn, position.step)
        };
        self.journal
            .commit("step/end", &json!({ "turn": turn, "step": step }))?;
        self.position().in_step = false;
        Ok(())
    }

    /// Ends the turn with `reason.kind` (`completed`, `aborted`, …).
    pub fn end_turn(&self, reason: &str) -> Result<(), HostError> {
        self.end_step()?;
        let turn = {
            let position = self.position();
            if !position.in_turn {
                return Ok(());
            }
            position.turn
        };
        self.journal.commit(
            "turn/end",
            &json!({ "turn": turn, "reason": { "kind": reason } }),
        )?;
        self.position().in_turn = false;
        Ok(())
    }

    /// Resolves when input (a late reply, for example) is queued for the next turn. Cancel safe.
    pub async fn wait_for_input(&self) {
        self.agent.wait_for_input().await;
    }

    /// Refreshes the projection checkpoint next to the log (a no-op for a session in memory).
    pub fn checkpoint(&self) -> Result<(), HostError> {
        if let Some(path) = self.journal.path() {
            load_projection(&path, CheckpointPolicy::Refresh)?;
        }
        Ok(())
    }
}

/// The live session instance: it only knows its id (identity by pointer).
struct HostSession {
    id: SessionId,
}

impl user_questions::Session for HostSession {
    fn id(&self) -> &SessionId {
        &self.id
    }
}
