//! What the seam needs from the host (SPEC §4.1): live agents, their registry, their sessions and
//! their queued messages, plus small in-memory implementations for tests and reference hosts.
//!
//! Identity is by pointer: two handles are the same agent only when they point to the same live
//! object ([`same_agent`]), never because their ids are equal.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use tokio::sync::Notify;

use crate::ids::{AgentId, CallId, ScopeId, SessionId};
use crate::util::lock;
use crate::vocab::Provenance;

/// An error a host call returned (for example a failed follow-up delivery).
pub type HostError = Box<dyn std::error::Error + Send + Sync>;

/// A live agent. Implemented by the host.
pub trait Agent: Send + Sync {
    /// The agent's id (not its identity: see [`same_agent`]).
    fn id(&self) -> &AgentId;
    /// The live session instance the agent writes to.
    fn session(&self) -> SessionRef;
    /// This agent's answerer scope, then its ancestors' scopes, nearest first.
    fn scope_chain(&self) -> Vec<ScopeId>;
    /// A snapshot of the agent's queued input (next-turn and next-step queues).
    fn queued_messages(&self) -> Vec<UserMessage>;
    /// Queues `message` as ordinary input for the agent's next turn and wakes the agent if idle.
    fn followup(&self, message: UserMessage) -> Result<(), HostError>;
}

/// A handle to a live agent; its identity is the identity of the pointee.
pub type AgentHandle = Arc<dyn Agent>;

/// A live session instance. A session resumed after a restart is a new instance with the same id.
pub trait Session: Send + Sync {
    /// The durable session id.
    fn id(&self) -> &SessionId;
}

/// A handle to a live session instance; identity by pointer, like [`AgentHandle`].
pub type SessionRef = Arc<dyn Session>;

/// Whether two handles point to the same live agent (data pointers compared; vtables ignored).
pub fn same_agent(a: &AgentHandle, b: &AgentHandle) -> bool {
    std::ptr::addr_eq(Arc::as_ptr(a), Arc::as_ptr(b))
}

/// Whether two handles point to the same live session instance.
pub fn same_session(a: &SessionRef, b: &SessionRef) -> bool {
    std::ptr::addr_eq(Arc::as_ptr(a), Arc::as_ptr(b))
}

/// The host's registry of live agents (SPEC §4.1).
pub trait AgentRegistry: Send + Sync {
    /// The live handle for an id, if an agent with that id is live.
    fn get(&self, id: &AgentId) -> Option<AgentHandle>;
    /// Whether `agent` is live and was entered with no owner.
    fn is_root(&self, agent: &AgentHandle) -> bool;
}

/// What the host lends the seam. Both parts are optional; without a registry every request that
/// names an agent fails with `CALLER_NOT_LIVE`.
#[derive(Clone, Default)]
pub struct HostBindings {
    /// The agent registry.
    pub registry: Option<Arc<dyn AgentRegistry>>,
}

impl HostBindings {
    /// Bindings with a registry.
    pub fn with_registry(registry: Arc<dyn AgentRegistry>) -> Self {
        Self {
            registry: Some(registry),
        }
    }
}

impl fmt::Debug for HostBindings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HostBindings")
            .field("registry", &self.registry.is_some())
            .finish()
    }
}

/// Where a user message came from. Key order `kind, callId, outcome, provenance`, then any other
/// keys the host keeps.
///
/// Reading is lenient, as the projection reads logs (SPEC §7.8): a known key whose value has the
/// wrong shape (a non-string `callId`, a malformed `provenance`) is kept untouched among the other
/// keys instead of failing the whole message, so nothing a host restores is lost. A missing or
/// non-string `kind` reads as an empty kind, which is never written back.
#[derive(Clone, Debug, PartialEq)]
pub struct MessageSource {
    /// The source kind: `user`, `plugin`, `model`, `tool`, or [`MessageSource::REPLY_KIND`].
    pub kind: String,
    /// For a late reply: the call it answers.
    pub call_id: Option<CallId>,
    /// For a late reply: always `answered`.
    pub outcome: Option<String>,
    /// For a late reply: who answered (our extension, SPEC §9.1).
    pub provenance: Option<Provenance>,
    /// Other keys of the source, kept as they are.
    pub extra: serde_json::Map<String, serde_json::Value>,
}

impl Serialize for MessageSource {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(None)?;
        if !self.kind.is_empty() {
            map.serialize_entry("kind", &self.kind)?;
        }
        if let Some(call_id) = &self.call_id {
            map.serialize_entry("callId", call_id)?;
        }
        if let Some(outcome) = &self.outcome {
            map.serialize_entry("outcome", outcome)?;
        }
        if let Some(provenance) = &self.provenance {
            map.serialize_entry("provenance", provenance)?;
        }
        for (key, value) in &self.extra {
            map.serialize_entry(key, value)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for MessageSource {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        // Takes a known key out only when its value has the expected shape.
        fn take<T: serde::de::DeserializeOwned>(
            extra: &mut serde_json::Map<String, serde_json::Value>,
            key: &str,
        ) -> Option<T> {
            let parsed = serde_json::from_value(extra.get(key)?.clone()).ok()?;
            extra.remove(key);
            Some(parsed)
        }
        let mut extra = serde_json::Map::<String, serde_json::Value>::deserialize(deserializer)?;
        let kind = take::<String>(&mut extra, "kind").unwrap_or_default();
        let call_id = take::<CallId>(&mut extra, "callId");
        let outcome = take::<String>(&mut extra, "outcome");
        let provenance = take::<Provenance>(&mut extra, "provenance");
        Ok(Self {
            kind,
            call_id,
            outcome,
            provenance,
            extra,
        })
    }
}

impl MessageSource {
    /// The source kind of a late reply to a pending question.
    pub const REPLY_KIND: &'static str = "user-question-reply";

    /// A source of the given kind with no other keys.
    pub fn of_kind(kind: impl Into<String>) -> Self {
        Self {
            kind: kind.into(),
            call_id: None,
            outcome: None,
            provenance: None,
            extra: serde_json::Map::new(),
        }
    }

    /// The call this source answers, when it is a late-reply source.
    pub fn reply_call_id(&self) -> Option<&CallId> {
        if self.kind == Self::REPLY_KIND {
            self.call_id.as_ref()
        } else {
            None
        }
    }
}

/// One content block of a user message: text, or any other block kept as it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ContentBlock {
    /// A text block: `{"type":"text","text":…}`.
    Text {
        /// The text.
        text: String,
    },
    /// Any other block (an image, a file, a text block with extra keys), kept verbatim.
    Other(serde_json::Value),
}

impl ContentBlock {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text { text: text.into() }
    }

    /// The text of a text block (also of a text block kept as [`ContentBlock::Other`] because it
    /// carries keys beyond `type` and `text`).
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Self::Text { text } => Some(text),
            Self::Other(value) => {
                if value.get("type").and_then(serde_json::Value::as_str) == Some("text") {
                    value.get("text").and_then(serde_json::Value::as_str)
                } else {
                    None
                }
            }
        }
    }
}

impl Serialize for ContentBlock {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        match self {
            Self::Text { text } => {
                let mut map = serializer.serialize_map(Some(2))?;
                map.serialize_entry("type", "text")?;
                map.serialize_entry("text", text)?;
                map.end()
            }
            Self::Other(value) => value.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for ContentBlock {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = serde_json::Value::deserialize(deserializer)?;
        let is_text = value.get("type").and_then(serde_json::Value::as_str) == Some("text")
            && value.as_object().is_some_and(|o| o.len() == 2);
        match value.get("text").and_then(serde_json::Value::as_str) {
            Some(text) if is_text => Ok(Self::Text {
                text: text.to_owned(),
            }),
            _ => Ok(Self::Other(value)),
        }
    }
}

/// A user message as the host queues and logs it (SPEC §6, §7.5).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct UserMessage {
    /// Message id (a UUID v4 text for late replies).
    pub id: String,
    /// Always `user`.
    #[serde(default = "user_role")]
    pub role: String,
    /// Where the message came from.
    pub source: MessageSource,
    /// The content blocks.
    pub content: Vec<ContentBlock>,
}

fn user_role() -> String {
    "user".to_owned()
}

impl UserMessage {
    /// An ordinary message from the person with one text block.
    pub fn user_text(id: impl Into<String>, text: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            role: user_role(),
            source: MessageSource::of_kind("user"),
            content: vec![ContentBlock::text(text)],
        }
    }

    /// The message's text as the model reads it: its text blocks, joined by newlines (blocks of
    /// other types are left out). A late reply's text is its `answer_to_pending_question` JSON
    /// (SPEC §6).
    pub fn text(&self) -> String {
        let texts: Vec<&str> = self
            .content
            .iter()
            .filter_map(ContentBlock::as_text)
            .collect();
        texts.join("\n")
    }

    /// The call this message answers, when its source is a late reply.
    pub fn reply_call_id(&self) -> Option<&CallId> {
        self.source.reply_call_id()
    }
}

/// A session instance that only knows its id.
#[derive(Debug)]
pub struct InMemorySession {
    id: SessionId,
}

impl InMemorySession {
    /// A new live session instance.
    pub fn new(id: impl Into<SessionId>) -> Arc<Self> {
        Arc::new(Self { id: id.into() })
    }
}

impl Session for InMemorySession {
    fn id(&self) -> &SessionId {
        &self.id
    }
}

/// An agent with in-memory next-turn and next-step queues, for tests and reference hosts.
///
/// [`Agent::followup`] appends to the next-turn queue and wakes [`InMemoryAgent::wait_for_input`].
pub struct InMemoryAgent {
    id: AgentId,
    session: SessionRef,
    scopes: Vec<ScopeId>,
    queues: Mutex<Queues>,
    input: Notify,
}

#[derive(Default)]
struct Queues {
    next_turn: Vec<UserMessage>,
    next_step: Vec<UserMessage>,
}

impl InMemoryAgent {
    /// A new agent writing to `session`, whose scope chain is `scopes` (own scope first).
    pub fn new(
        id: impl Into<AgentId>,
        session: SessionRef,
        scopes: impl IntoIterator<Item = ScopeId>,
    ) -> Arc<Self> {
        Arc::new(Self {
            id: id.into(),
            session,
            scopes: scopes.into_iter().collect(),
            queues: Mutex::new(Queues::default()),
            input: Notify::new(),
        })
    }

    /// A snapshot of the next-turn queue.
    pub fn next_turn(&self) -> Vec<UserMessage> {
        lock(&self.queues).next_turn.clone()
    }

    /// A snapshot of the next-step queue.
    pub fn next_step(&self) -> Vec<UserMessage> {
        lock(&self.queues).next_step.clone()
    }

    /// Queues a message for the next step of the running turn.
    pub fn push_next_step(&self, message: UserMessage) {
        lock(&self.queues).next_step.push(message);
        self.input.notify_one();
    }

    /// Queues a message for the next turn.
    pub fn push_next_turn(&self, message: UserMessage) {
        lock(&self.queues).next_turn.push(message);
        self.input.notify_one();
    }

    /// Removes the message with this id from either queue and returns it.
    pub fn remove(&self, message_id: &str) -> Option<UserMessage> {
        let mut guard = lock(&self.queues);
        let queues = &mut *guard;
        for queue in [&mut queues.next_turn, &mut queues.next_step] {
            if let Some(at) = queue.iter().position(|m| m.id == message_id) {
                return Some(queue.remove(at));
            }
        }
        None
    }

    /// Takes the first message of the next-turn queue (what a turn would claim).
    pub fn take_next_turn(&self) -> Option<UserMessage> {
        let mut queues = lock(&self.queues);
        if queues.next_turn.is_empty() {
            None
        } else {
            Some(queues.next_turn.remove(0))
        }
    }

    /// Resolves when input has been queued since the last call (or is already waiting).
    ///
    /// Cancel safe: dropping the future loses no input; the queues keep it.
    pub async fn wait_for_input(&self) {
        if !lock(&self.queues).next_turn.is_empty() {
            return;
        }
        self.input.notified().await;
    }
}

impl fmt::Debug for InMemoryAgent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InMemoryAgent")
            .field("id", &self.id)
            .field("session", self.session.id())
            .field("scopes", &self.scopes)
            .finish_non_exhaustive()
    }
}

impl Agent for InMemoryAgent {
    fn id(&self) -> &AgentId {
        &self.id
    }

    fn session(&self) -> SessionRef {
        Arc::clone(&self.session)
    }

    fn scope_chain(&self) -> Vec<ScopeId> {
        self.scopes.clone()
    }

    fn queued_messages(&self) -> Vec<UserMessage> {
        let queues = lock(&self.queues);
        queues
            .next_turn
            .iter()
            .chain(&queues.next_step)
            .cloned()
            .collect()
    }

    fn followup(&self, message: UserMessage) -> Result<(), HostError> {
        self.push_next_turn(message);
        Ok(())
    }
}

/// An in-memory [`AgentRegistry`]: agents are entered as roots or as children of an owner.
#[derive(Default)]
pub struct InMemoryAgentRegistry {
    live: Mutex<HashMap<AgentId, Entry>>,
}

struct Entry {
    handle: AgentHandle,
    owner: Option<AgentId>,
}

impl InMemoryAgentRegistry {
    /// An empty registry.
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// Enters a live agent with no owner (a live root). Replaces any agent with the same id.
    pub fn enter_root(&self, agent: AgentHandle) {
        let id = agent.id().clone();
        lock(&self.live).insert(
            id,
            Entry {
                handle: agent,
                owner: None,
            },
        );
    }

    /// Enters a live agent owned by `owner` (a live child). Replaces any agent with the same id.
    pub fn enter_child(&self, agent: AgentHandle, owner: &AgentHandle) {
        let id = agent.id().clone();
        lock(&self.live).insert(
            id,
            Entry {
                handle: agent,
                owner: Some(owner.id().clone()),
            },
        );
    }

    /// Removes the agent with this id; returns whether one was live.
    pub fn exit(&self, id: &AgentId) -> bool {
        lock(&self.live).remove(id).is_some()
    }
}

impl AgentRegistry for InMemoryAgentRegistry {
    fn get(&self, id: &AgentId) -> Option<AgentHandle> {
        lock(&self.live).get(id).map(|e| Arc::clone(&e.handle))
    }

    fn is_root(&self, agent: &AgentHandle) -> bool {
        lock(&self.live)
            .get(agent.id())
            .is_some_and(|e| same_agent(&e.handle, agent) && e.owner.is_none())
    }
}

impl fmt::Debug for InMemoryAgentRegistry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let live = lock(&self.live);
        let mut ids: Vec<_> = live.keys().collect();
        ids.sort();
        f.debug_struct("InMemoryAgentRegistry")
            .field("live", &ids)
            .finish()
    }
}
