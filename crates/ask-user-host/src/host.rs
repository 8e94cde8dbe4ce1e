//! Host sessions: one agent each, whose every step is durable in a [`SessionStore`].
//!
//! A [`HostRuntime`] is what a process holds once: the store, the user-questions seam and its
//! agent registry, the tool (legacy or timed), late answers and the live projections. It serves
//! many sessions at once ([`HostRuntime::create`], [`HostRuntime::open`]); each [`Host`] is one
//! live session with its agent (a root, or a child of an owner) and its durable inbox. Every event
//! goes through the session's [`Journal`]: appended durably first, then applied to the
//! projection, then reported to late answers as
//! [`HostEvent::Committed`](pending_answer::HostEvent::Committed), in log order.
//!
//! What a turn looks like in the log, as the reference writes it: `agent/inbox/spliced` (a queued
//! message, e.g. a late reply), `turn/start`, `agent/inbox/spliced` (the turn claims the queue),
//! `step/start`, `user/message` (admission), `request/header`, `tool/call`, `tool/result`,
//! `step/end`, `turn/end`.

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};

use pending_answer::{
    ChangeSignal, DeskChanges, InMemoryProjectionHost, LateAnswers, ProjectionHost,
};
use serde_json::json;
use session_log::{
    JsonlStore, MemoryStore, NewSession, OpenReport, OpenedAtCheckpoint, Record, RepairReport,
    SessionStore, SessionWriter, StoreError, repair_interrupted,
};
use tool_ask_user::{AskUserConfig, AskUserTool, LateAnswerRoute, ToolContext, ToolOutcome};
use user_questions::sync::lock_unpoisoned;
use user_questions::{
    AgentHandle, AgentRegistry, CallId, CancellationToken, HostBindings, InMemoryAgentRegistry,
    SessionId, SessionRef, UserMessage, UserQuestions, UserQuestionsConfig, same_agent,
};
use user_questions_projection::UserQuestionsState;

use crate::agent::{HostAgent, Restore};
use crate::checkpoint::{CheckpointPolicy, CheckpointWrite, OpenPlan, load_projection};
use crate::journal::{Journal, JournalError};
use crate::tools::{ToolCall, ToolResult, ToolSpec};

/// Where a single-session host keeps its session log ([`Host::open`]).
#[derive(Clone, Debug)]
pub enum LogTarget {
    /// In memory only (a [`MemoryStore`] of its own).
    Memory,
    /// Create a new log at this path (it must not exist).
    Create(PathBuf),
    /// Open this log for write (resume repair runs first), or create it if it does not exist.
    OpenOrCreate(PathBuf),
    /// Open this existing log for write (resume repair runs first).
    Open(PathBuf),
}

/// What opening a session found in an existing log.
#[derive(Debug, Default)]
pub struct Resumed {
    /// The open report: findings (corrupt lines, torn tail, gaps) and what was left unfinished.
    pub report: Option<OpenReport>,
    /// What resume repair appended.
    pub repair: Option<RepairReport>,
    /// Messages restored into the inbox from `agent/inbox/spliced` records.
    pub restored_inbox: usize,
}

/// How to build a single-session host with [`Host::open`].
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
    /// The model the session's requests go to (its `request/header` records it).
    pub model: ModelInfo,
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
            .field("model", &self.model)
            .finish()
    }
}

impl HostOptions {
    /// Options for a host with the given tool config and log.
    pub fn new(tool: Option<AskUserConfig>, log: LogTarget) -> Self {
        Self {
            tool,
            log,
            session_id: new_session_id(),
            agent_id: "root".to_owned(),
            registry: None,
            owner: None,
            model: ModelInfo::default(),
        }
    }

    /// With the model the session's requests go to.
    #[must_use]
    pub fn with_model(mut self, model: ModelInfo) -> Self {
        self.model = model;
        self
    }
}

/// The model a session's requests go to, as its `request/header` records it
/// (`{"provider":…,"model":…}`, SPEC §7.5). A host that knows neither says `unknown`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModelInfo {
    /// Who serves the model: an API provider, an MCP client's name, `ask-user-demo`.
    pub provider: String,
    /// The model's name.
    pub model: String,
}

impl ModelInfo {
    /// `model` of `provider`.
    pub fn new(provider: impl Into<String>, model: impl Into<String>) -> Self {
        Self {
            provider: provider.into(),
            model: model.into(),
        }
    }
}

impl Default for ModelInfo {
    /// `unknown` of `unknown`.
    fn default() -> Self {
        Self::new("unknown", "unknown")
    }
}

/// A fresh session id: `session-<UUID v4>`.
pub fn new_session_id() -> SessionId {
    SessionId::from(format!("session-{}", pending_answer::new_message_id()))
}

/// How to start one session in a [`HostRuntime`].
#[derive(Clone)]
pub struct SessionOptions {
    /// The id of a new session (ignored when an existing log is opened).
    pub session_id: SessionId,
    /// The agent's id. In a runtime shared by several sessions each live agent needs its own id,
    /// since the registry knows agents by id.
    pub agent_id: String,
    /// The agent that owns this one (entered as a live child instead of a live root).
    pub owner: Option<AgentHandle>,
    /// The model the session's requests go to (its `request/header` records it).
    pub model: ModelInfo,
    /// Where the session runs (the project folder), written in a new log's header as `cwd`.
    pub cwd: Option<String>,
}

impl std::fmt::Debug for SessionOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionOptions")
            .field("session_id", &self.session_id)
            .field("agent_id", &self.agent_id)
            .field("owner", &self.owner.as_ref().map(|o| o.id().clone()))
            .field("model", &self.model)
            .field("cwd", &self.cwd)
            .finish()
    }
}

impl Default for SessionOptions {
    /// A fresh session id and the agent id `root`.
    fn default() -> Self {
        Self {
            session_id: new_session_id(),
            agent_id: "root".to_owned(),
            owner: None,
            model: ModelInfo::default(),
            cwd: None,
        }
    }
}

impl SessionOptions {
    /// A new session with this id, whose agent has the same id.
    pub fn named(id: impl Into<SessionId>) -> Self {
        let session_id = id.into();
        Self {
            agent_id: session_id.as_str().to_owned(),
            session_id,
            owner: None,
            model: ModelInfo::default(),
            cwd: None,
        }
    }

    /// With the model the session's requests go to.
    #[must_use]
    pub fn with_model(mut self, model: ModelInfo) -> Self {
        self.model = model;
        self
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
    /// The call id is already in the session's log: a second `tool/call` with it would make the
    /// first call's question unanswerable (its late answer could no longer be told apart).
    #[error("call id {0:?} is already used in this session's log; every tool call needs a new id")]
    DuplicateCallId(CallId),
    /// Another live agent of the registry already has the session's agent id (the registry knows
    /// agents by id, so the new session would silently take over the other's identity).
    #[error("agent id {0:?} is already live in this runtime; give each session its own agent id")]
    AgentIdTaken(String),
    /// A call made out of the turn and step order (a tool call outside a step, a step outside a
    /// turn, a turn inside a turn): nothing was written.
    #[error(transparent)]
    Order(OrderError),
}

/// A call out of the turn and step order of SPEC §5.7 and §7.6: what was asked, and what it needs.
/// Nothing is written when it is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{what} needs {needs}")]
pub struct OrderError {
    /// What was asked (`a tool call`, `a step`, …).
    pub what: &'static str,
    /// What it needs (`an open step`, `an open turn`, `no open turn`).
    pub needs: &'static str,
}

impl HostError {
    /// A stable code for the command line.
    pub fn code(&self) -> &'static str {
        match self {
            Self::Store(error) => error.code(),
            Self::Journal(error) => error.code(),
            Self::Config(_) => "BAD_CONFIG",
            Self::AgentIdTaken(_) => "AGENT_ID_TAKEN",
            Self::DuplicateCallId(_) => "DUPLICATE_CALL_ID",
            Self::Order(_) => "OUT_OF_ORDER",
        }
    }
}

/// What a process holds once for all its sessions. Cloning gives another handle to the same
/// runtime. See the [module docs](self).
#[derive(Clone)]
pub struct HostRuntime {
    inner: Arc<RuntimeInner>,
}

struct RuntimeInner {
    /// Held while a session is checked in or out of the registry, so that two sessions starting
    /// at once cannot both pass the agent-id check.
    sessions: Mutex<()>,
    store: Arc<dyn SessionStore>,
    seam: UserQuestions,
    tool: AskUserTool,
    late: LateAnswers,
    projections: Arc<InMemoryProjectionHost>,
    registry: Arc<InMemoryAgentRegistry>,
    /// Ticked when a session's questions or inbox change.
    changes: Arc<ChangeSignal>,
}

impl std::fmt::Debug for HostRuntime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostRuntime")
            .field("tool", self.inner.tool.config())
            .field("registry", &self.inner.registry)
            .finish_non_exhaustive()
    }
}

impl HostRuntime {
    /// A runtime over `store` with the tool configuration `tool` (`None`: legacy) and an agent
    /// registry of its own.
    pub fn new(
        store: impl SessionStore + 'static,
        tool: Option<AskUserConfig>,
    ) -> Result<Self, HostError> {
        Self::with_registry(Arc::new(store), tool, InMemoryAgentRegistry::new())
    }

    /// A runtime over a shared store, entering its agents in `registry`.
    pub fn with_registry(
        store: Arc<dyn SessionStore>,
        tool: Option<AskUserConfig>,
        registry: Arc<InMemoryAgentRegistry>,
    ) -> Result<Self, HostError> {
        let seam = UserQuestions::new(
            UserQuestionsConfig::default(),
            HostBindings::with_registry(registry.clone()),
        )
        .map_err(|e| HostError::Config(e.to_string()))?;
        let tool =
            AskUserTool::new(seam.clone(), tool).map_err(|e| HostError::Config(e.to_string()))?;
        let projections = InMemoryProjectionHost::new();
        let late = LateAnswers::new(&seam, Some(projections.clone() as Arc<dyn ProjectionHost>));
        Ok(Self {
            inner: Arc::new(RuntimeInner {
                sessions: Mutex::new(()),
                store,
                seam,
                tool,
                late,
                projections,
                registry,
                changes: Arc::default(),
            }),
        })
    }

    /// The seam (register answerers here).
    pub fn seam(&self) -> &UserQuestions {
        &self.inner.seam
    }

    /// The tool the model is offered.
    pub fn tool(&self) -> &AskUserTool {
        &self.inner.tool
    }

    /// Late answers, for every session of the runtime.
    pub fn late_answers(&self) -> &LateAnswers {
        &self.inner.late
    }

    /// The session store.
    pub fn store(&self) -> &Arc<dyn SessionStore> {
        &self.inner.store
    }

    /// The agent registry.
    pub fn registry(&self) -> &Arc<InMemoryAgentRegistry> {
        &self.inner.registry
    }

    /// Ticks whenever a session of the runtime commits a change of its questions or its inbox
    /// (a question asked, continued or settled, a late reply queued or claimed): what a desk over
    /// the runtime's sessions gives its surfaces.
    pub fn changes(&self) -> DeskChanges {
        self.inner.changes.subscribe()
    }

    /// Creates the session log `name` and starts its session.
    pub fn create(&self, name: &str, options: SessionOptions) -> Result<Host, HostError> {
        let _sessions = lock_unpoisoned(&self.inner.sessions);
        self.check_agent_id(&options)?;
        let writer = self.inner.store.create(
            name,
            &NewSession {
                cwd: options.cwd.clone(),
                ..NewSession::new(options.session_id.clone())
            },
        )?;
        Ok(self
            .start(name, writer, None, Restore::default(), options)
            .0)
    }

    /// Opens the existing session log `name` for write and starts its session: in the open's one
    /// scan the inbox is restored and the projection folded, resume repair runs, the lines it
    /// appended are folded too, and the projection checkpoint is refreshed.
    ///
    /// When the log's checkpoint carries an open state ([`Checkpoint::open`](crate::Checkpoint)),
    /// the store opens the log at the checkpoint ([`SessionStore::open_at_checkpoint`]: the
    /// document is read, and its anchor checked, under the writer's ownership) and the scan reads
    /// only the lines after it; a checkpoint that does not fit the log, or a store that cannot
    /// resume, means a scan of the whole log. When resume repair appends nothing, the log is not
    /// read again after the open. The session is the same either way.
    pub fn open(&self, name: &str, options: SessionOptions) -> Result<(Host, Resumed), HostError> {
        let _sessions = lock_unpoisoned(&self.inner.sessions);
        self.check_agent_id(&options)?;
        let store = &*self.inner.store;
        let mut plan = OpenPlan::default();
        // A checkpoint that does not fit was a warning of the store's.
        let OpenedAtCheckpoint {
            mut writer, report, ..
        } = store.open_at_checkpoint(name, &mut plan)?;
        // One pass either way: the open scan restores the inbox and folds the projection at once.
        let fold = plan.into_fold();
        let repair = repair_interrupted(writer.as_mut())?;
        let writer_end = writer.position().byte_offset;
        let (state, restore, checkpointed) = fold.finish(store, name, &report.scan, writer_end)?;
        let (host, restored_inbox) = self.start(name, writer, Some(state), restore, options);
        host.position().checkpointed = checkpointed;
        // Repair continued the calls its host left open before any surface could hear of it:
        // they take late answers now.
        for repaired in &repair.results {
            let call_id = CallId::from(repaired.call.call_id.as_str());
            self.inner
                .late
                .announce_continued(&host.session(), &call_id);
        }
        let resumed = Resumed {
            report: Some(report),
            repair: Some(repair),
            restored_inbox,
        };
        Ok((host, resumed))
    }

    /// Opens the session log `name` if it exists, or creates it.
    pub fn open_or_create(
        &self,
        name: &str,
        options: SessionOptions,
    ) -> Result<(Host, Resumed), HostError> {
        if self.inner.store.exists(name)? {
            self.open(name, options)
        } else {
            Ok((self.create(name, options)?, Resumed::default()))
        }
    }

    /// Refuses a session whose agent id is already live in the registry, before the log is
    /// touched.
    fn check_agent_id(&self, options: &SessionOptions) -> Result<(), HostError> {
        let id = user_questions::AgentId::from(options.agent_id.as_str());
        match self.inner.registry.get(&id) {
            Some(_) => Err(HostError::AgentIdTaken(options.agent_id.clone())),
            None => Ok(()),
        }
    }

    fn start(
        &self,
        name: &str,
        writer: Box<dyn SessionWriter>,
        state: Option<UserQuestionsState>,
        restore: Restore,
        options: SessionOptions,
    ) -> (Host, usize) {
        let inner = &self.inner;
        let session: SessionRef = Arc::new(HostSession {
            id: writer.header().id.clone(),
        });
        if let Some(state) = state {
            inner.projections.seed(&session, state);
        }
        let journal = Journal::new(
            writer,
            session.clone(),
            inner.projections.clone(),
            inner.late.clone(),
            Arc::clone(&inner.changes),
        );
        let SessionOptions {
            agent_id,
            owner,
            model,
            ..
        } = options;
        let agent = HostAgent::new(&agent_id, session, journal.clone());
        let restored = agent.restore(&restore);
        match &owner {
            Some(owner) => inner
                .registry
                .enter_child(agent.clone() as AgentHandle, owner),
            None => inner.registry.enter_root(agent.clone() as AgentHandle),
        }
        let host = Host {
            runtime: self.clone(),
            name: name.to_owned(),
            agent,
            journal,
            position: Mutex::new(Position {
                turn: restore.last_turn,
                call_ids: restore.call_ids.into_iter().collect(),
                model,
                ..Position::default()
            }),
        };
        (host, restored)
    }
}

/// Turn and step counters, and the call ids the log holds.
#[derive(Debug, Default)]
struct Position {
    turn: u64,
    step: u64,
    in_turn: bool,
    in_step: bool,
    header_logged: bool,
    /// The model the requests go to and the other tools they offer (the `request/header`).
    model: ModelInfo,
    tools: Vec<ToolSpec>,
    call_ids: HashSet<CallId>,
    /// The byte length of the log the checkpoint covers, as far as this host knows (0: none).
    checkpointed: u64,
    /// What the turn claimed from the inbox, admitted by its first step.
    to_admit: Vec<UserMessage>,
}

/// One live session: one agent (a live root, or a child of an owner) and its session log, in a
/// [`HostRuntime`] that may serve other sessions too. Dropping it takes its agent out of the
/// registry and gives up the log. See the [module docs](self).
pub struct Host {
    runtime: HostRuntime,
    name: String,
    agent: Arc<HostAgent>,
    journal: Arc<Journal>,
    position: Mutex<Position>,
}

impl Drop for Host {
    fn drop(&mut self) {
        // Clones of the agent (a surface keeping a late card, the registry) hold the journal; the
        // log is given up now all the same, and the agent leaves the registry unless another
        // agent took its id since.
        self.journal.close();
        let _sessions = lock_unpoisoned(&self.runtime.inner.sessions);
        let registry = &self.runtime.inner.registry;
        let me = self.agent.clone() as AgentHandle;
        let ours =
            AgentRegistry::get(&**registry, me.id()).is_some_and(|live| same_agent(&live, &me));
        if ours {
            registry.exit(me.id());
        }
    }
}

impl Host {
    /// Opens (or creates) one session in a runtime of its own: the store is the log file's
    /// directory ([`JsonlStore`]) or a [`MemoryStore`] for [`LogTarget::Memory`]. For an existing
    /// log, the inbox is restored and the projection folded in the open's one scan, resume repair
    /// runs, and the checkpoint is refreshed.
    pub fn open(options: HostOptions) -> Result<(Self, Resumed), HostError> {
        let registry = options.registry.clone().unwrap_or_default();
        let (store, name): (Arc<dyn SessionStore>, String) = match &options.log {
            LogTarget::Memory => (
                Arc::new(MemoryStore::new()),
                options.session_id.as_str().to_owned(),
            ),
            LogTarget::Create(path) | LogTarget::OpenOrCreate(path) | LogTarget::Open(path) => {
                let (store, name) = JsonlStore::for_file(path)?;
                (Arc::new(store), name)
            }
        };
        let runtime = HostRuntime::with_registry(store, options.tool, registry)?;
        let session = SessionOptions {
            session_id: options.session_id,
            agent_id: options.agent_id,
            owner: options.owner,
            model: options.model,
            cwd: None,
        };
        match &options.log {
            LogTarget::Memory | LogTarget::Create(_) => {
                Ok((runtime.create(&name, session)?, Resumed::default()))
            }
            LogTarget::OpenOrCreate(_) => runtime.open_or_create(&name, session),
            LogTarget::Open(_) => runtime.open(&name, session),
        }
    }

    /// One session in memory, with a runtime of its own and the tool `tool` (e.g.
    /// [`AskUserConfig::timed_secs`]): the smallest host, for tests, examples and hosts that keep
    /// their history elsewhere. `Host::open(HostOptions::new(Some(tool), LogTarget::Memory))`
    /// with the defaults.
    pub fn in_memory(tool: AskUserConfig) -> Result<Self, HostError> {
        Ok(Self::open(HostOptions::new(Some(tool), LogTarget::Memory))?.0)
    }

    /// The runtime this session belongs to.
    pub fn runtime(&self) -> &HostRuntime {
        &self.runtime
    }

    /// The seam (register answerers here).
    pub fn seam(&self) -> &UserQuestions {
        self.runtime.seam()
    }

    /// The tool the model is offered.
    pub fn tool(&self) -> &AskUserTool {
        self.runtime.tool()
    }

    /// Late answers.
    pub fn late_answers(&self) -> &LateAnswers {
        self.runtime.late_answers()
    }

    /// The log's name in the runtime's store.
    pub fn name(&self) -> &str {
        &self.name
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

    /// Where the log lives: its path in a [`JsonlStore`], `memory:<name>` in a [`MemoryStore`].
    pub fn location(&self) -> PathBuf {
        self.journal.location()
    }

    /// The log's file, when the session's store keeps files.
    pub fn log_path(&self) -> Option<PathBuf> {
        self.runtime.store().file_path(&self.name)
    }

    /// The `userQuestions` projection as it stands.
    pub fn projection(&self) -> UserQuestionsState {
        self.runtime
            .inner
            .projections
            .user_questions(self.journal.session())
            .unwrap_or_else(|| UserQuestionsState::new(0))
    }

    fn position(&self) -> MutexGuard<'_, Position> {
        lock_unpoisoned(&self.position)
    }

    /// The session's late replies: queue a person's answer, take a waiting reply into the current
    /// step, or settle it in a turn of its own ([`LateReplies`](crate::LateReplies)).
    pub fn late(&self) -> crate::LateReplies<'_> {
        crate::LateReplies::new(self)
    }

    /// Starts a turn: `turn/start`, then, when late replies reach the model as user messages
    /// (the tool's default route, [`LateAnswerRoute::UserMessage`]), the turn claims the whole
    /// next-turn inbox: each claimed message is reported as
    /// [`HostEvent::InboxClaimed`](pending_answer::HostEvent::InboxClaimed), returned for the
    /// application to put before the model, and admitted (`user/message`) by the turn's first
    /// [`begin_step`](Self::begin_step). With the companion route
    /// ([`LateAnswerRoute::CompanionTool`]) nothing is claimed: replies wait until the model asks
    /// for them ([`LateReplies::take`](crate::LateReplies::take)).
    ///
    /// # Errors
    ///
    /// [`HostError::Order`] inside a turn; the log's error.
    pub fn begin_turn(&self) -> Result<Vec<UserMessage>, HostError> {
        self.between_turns("a turn")?;
        let turn = self.start_turn()?;
        if self.tool().late_answers() != LateAnswerRoute::UserMessage {
            return Ok(Vec::new());
        }
        let claimed = self.agent.claim_next_turn(&self.agent(), turn)?;
        self.position().to_admit.clone_from(&claimed);
        Ok(claimed)
    }

    /// Starts a turn that claims no late reply: the replies wait until `late().take` takes them
    /// into one of its steps. For an agent framework that gives a late answer back to the call
    /// that asked (LangGraph's resume of an interrupted tool, Pydantic AI's deferred tool
    /// results) rather than as a user message.
    pub fn begin_turn_unclaimed(&self) -> Result<(), HostError> {
        self.between_turns("a turn")?;
        self.start_turn()?;
        Ok(())
    }

    /// Whether a step is open now: a tool call, an assistant message or a request header may be
    /// logged.
    pub fn step_open(&self) -> bool {
        self.position().in_step
    }

    /// The open turn's number, or the order error of `what` outside a step.
    pub(crate) fn in_step(&self, what: &'static str) -> Result<u64, OrderError> {
        let position = self.position();
        if position.in_step {
            Ok(position.turn)
        } else {
            Err(OrderError {
                what,
                needs: "an open step",
            })
        }
    }

    /// The last turn's number, or the order error of `what` inside a turn.
    pub(crate) fn between_turns(&self, what: &'static str) -> Result<u64, OrderError> {
        let position = self.position();
        if position.in_turn {
            Err(OrderError {
                what,
                needs: "no open turn",
            })
        } else {
            Ok(position.turn)
        }
    }

    /// A whole turn `turn` was written in one batch (a reply settled in a turn of its own).
    pub(crate) fn turn_written(&self, turn: u64) {
        let mut position = self.position();
        position.turn = turn;
        position.step = 1;
        position.in_turn = false;
        position.in_step = false;
    }

    /// Admits a claimed message: logs it as `user/message` (the projection settles a late reply).
    pub(crate) fn admit_claimed(&self, message: &UserMessage) -> Result<(), HostError> {
        self.journal.commit(Record::UserMessage(message.clone()))?;
        Ok(())
    }

    /// Logs `turn/start` for the next turn; the counters move only once it is durable.
    fn start_turn(&self) -> Result<u64, HostError> {
        let turn = self.position().turn + 1;
        self.journal.commit(Record::turn_start(turn))?;
        let mut position = self.position();
        position.turn = turn;
        position.step = 0;
        position.in_turn = true;
        position.in_step = false;
        Ok(turn)
    }

    /// Starts a step. The turn's first step admits what
    /// the turn claimed from the inbox ([`begin_turn`](Self::begin_turn)): each message is logged
    /// as `user/message`, which settles a late reply.
    ///
    /// # Errors
    ///
    /// [`HostError::Order`] outside a turn; the log's error.
    pub fn begin_step(&self) -> Result<(), HostError> {
        if !self.position().in_turn {
            return Err(HostError::Order(OrderError {
                what: "a step",
                needs: "an open turn",
            }));
        }
        let (turn, step) = {
            let position = self.position();
            (position.turn, position.step + 1)
        };
        self.journal.commit(Record::step_start(turn, step))?;
        let to_admit = {
            let mut position = self.position();
            position.step = step;
            position.in_step = true;
            std::mem::take(&mut position.to_admit)
        };
        for message in &to_admit {
            self.admit_claimed(message)?;
        }
        Ok(())
    }

    /// Logs the `request/header` snapshot (SPEC §7.6): the provider and model the session was
    /// given ([`SessionOptions::with_model`], [`Host::set_model`]) and the tools the model is
    /// offered, `ask_user_question` first, then the agent's other tools
    /// ([`Host::set_tools`]). `initial` the first time in a fresh
    /// log, `resume` the first time after reopening; once logged, later calls log nothing until
    /// the model or the tools change.
    pub fn log_request_header(&self) -> Result<(), HostError> {
        self.in_step("a request header")?;
        if self.position().header_logged {
            return Ok(());
        }
        let reason = if self.journal.resumed() {
            "resume"
        } else {
            "initial"
        };
        self.commit_request_header(reason)
    }

    /// Sets the agent's other tools (the ones besides `ask_user_question`), which every
    /// `request/header` lists after it; call it before the first request. If this host has
    /// logged a `request/header` already, a new one with reason `change` is logged now, so the
    /// log always shows what the model was offered.
    pub fn set_tools(&self, tools: impl IntoIterator<Item = ToolSpec>) -> Result<(), HostError> {
        let logged = {
            let mut position = self.position();
            position.tools = tools.into_iter().collect();
            position.header_logged
        };
        if logged {
            self.commit_request_header("change")?;
        }
        Ok(())
    }

    /// Changes the provider and model the requests go to; a `request/header` with reason
    /// `change` is logged now if one was logged already.
    pub fn set_model(&self, model: ModelInfo) -> Result<(), HostError> {
        let logged = {
            let mut position = self.position();
            position.model = model;
            position.header_logged
        };
        if logged {
            self.commit_request_header("change")?;
        }
        Ok(())
    }

    fn commit_request_header(&self, reason: &'static str) -> Result<(), HostError> {
        let data_error = |source| JournalError::Data {
            event_type: "request/header".to_owned(),
            source,
        };
        let ask = serde_json::to_value(self.tool().definition()).map_err(data_error)?;
        let (config, tools) = {
            let position = self.position();
            let mut tools = vec![ask];
            for spec in &position.tools {
                tools.push(serde_json::to_value(spec).map_err(data_error)?);
            }
            let model = &position.model;
            (
                json!({ "provider": model.provider, "model": model.model }),
                tools,
            )
        };
        self.journal
            .commit(Record::request_header(config, tools, reason))?;
        self.position().header_logged = true;
        Ok(())
    }

    /// Logs an assistant message with one text block.
    pub fn assistant_text(&self, text: &str) -> Result<(), HostError> {
        self.in_step("an assistant message")?;
        let (turn, step) = {
            let position = self.position();
            (position.turn, position.step)
        };
        self.journal
            .commit(Record::assistant_text(turn, step, text))?;
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
        let (turn, step) = self.take_call_id(call_id)?;
        self.journal.commit(Record::tool_call(
            turn,
            step,
            call_id.clone(),
            user_questions::TOOL_NAME,
            arguments,
        ))?;
        let ctx = ToolContext::new(call_id.clone())
            .with_agent(self.agent())
            .with_cancel(cancel.clone());
        let outcome = self
            .tool()
            .execute(arguments, ctx)
            .await
            .abort_if_cancelled(&cancel);
        let record = ToolResult::from(&outcome).into_record(turn, step, call_id.clone());
        self.journal.commit(Record::ToolResult(record))?;
        Ok(outcome)
    }

    /// Logs the `tool/call` of another tool of the agent (`name`, the raw `arguments` text the
    /// model sent) in the current turn and step, and returns the call, to be finished with its
    /// result ([`ToolCall::finish`]): the application runs the tool in between. A call dropped
    /// unfinished logs the `TOOL_OUTCOME_UNKNOWN` result resume repair gives an interrupted
    /// call; a call the process never finished gets that result from the next open's repair.
    /// `ask_user_question` itself goes through [`Host::call_tool`], which runs it.
    ///
    /// Call ids are unique in a session across all tools ([`HostError::DuplicateCallId`]).
    pub fn record_tool_call(
        &self,
        call_id: &CallId,
        name: &str,
        arguments: &str,
    ) -> Result<ToolCall, HostError> {
        let (turn, step) = self.take_call_id(call_id)?;
        self.journal.commit(Record::tool_call(
            turn,
            step,
            call_id.clone(),
            name,
            arguments,
        ))?;
        Ok(ToolCall::new(
            self.journal.clone(),
            call_id.clone(),
            turn,
            step,
        ))
    }

    /// Runs one call of another tool: logs its `tool/call` ([`Host::record_tool_call`]), awaits
    /// `run` (the application's tool), logs the result it gives, and returns it.
    ///
    /// Cancel safety: dropping the future before `run` ends logs the `TOOL_OUTCOME_UNKNOWN`
    /// result of an interrupted call; to record a cancellation as the reference runtime does,
    /// let `run` return [`ToolResult::aborted`].
    pub async fn run_tool<F>(
        &self,
        call_id: &CallId,
        name: &str,
        arguments: &str,
        run: F,
    ) -> Result<ToolResult, HostError>
    where
        F: Future<Output = ToolResult>,
    {
        let call = self.record_tool_call(call_id, name, arguments)?;
        let result = run.await;
        call.finish(result.clone())?;
        Ok(result)
    }

    /// Takes a fresh call id for a call in the current turn and step.
    fn take_call_id(&self, call_id: &CallId) -> Result<(u64, u64), HostError> {
        let mut position = self.position();
        if position.call_ids.contains(call_id) {
            return Err(HostError::DuplicateCallId(call_id.clone()));
        }
        if !position.in_step {
            return Err(HostError::Order(OrderError {
                what: "a tool call",
                needs: "an open step",
            }));
        }
        // Taken before the call is logged; a call whose logging fails keeps its id taken,
        // which only costs the caller a fresh id.
        position.call_ids.insert(call_id.clone());
        Ok((position.turn, position.step))
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
        self.journal.commit(Record::step_end(turn, step))?;
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
        self.journal.commit(Record::turn_end(turn, reason))?;
        self.position().in_turn = false;
        Ok(())
    }

    /// Resolves when input (a late reply, for example) is queued for the next turn. Cancel safe.
    pub async fn wait_for_input(&self) {
        self.agent.wait_for_input().await;
    }

    /// Refreshes the projection checkpoint of the log.
    pub fn checkpoint(&self) -> Result<(), HostError> {
        let load = load_projection(
            &**self.runtime.store(),
            &self.name,
            CheckpointPolicy::Refresh,
        )?;
        if matches!(
            load.checkpoint,
            CheckpointWrite::Written(_) | CheckpointWrite::UpToDate
        ) {
            self.position().checkpointed = load.byte_length;
        }
        Ok(())
    }

    /// Refreshes the checkpoint only once the log has grown at least `lag` bytes past the one this
    /// host knows of (the one it opened at or wrote; [`CHECKPOINT_LAG`](crate::CHECKPOINT_LAG) is the host's own rule).
    /// Returns whether it did. A reader or the next open folds what lies after the checkpoint,
    /// so a checkpoint a little behind costs them only those bytes.
    pub fn checkpoint_if_behind(&self, lag: u64) -> Result<bool, HostError> {
        let checkpointed = self.position().checkpointed;
        let end = self.journal.end().unwrap_or(0);
        if checkpointed > 0 && end.saturating_sub(checkpointed) < lag {
            return Ok(false);
        }
        self.checkpoint()?;
        Ok(true)
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
