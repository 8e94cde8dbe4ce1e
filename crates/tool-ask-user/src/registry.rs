//! A minimal, host-agnostic tool registry: registration returns a guard, and dropping the guard
//! unregisters the tool (SPEC §5.1). It lists definitions only; a real host brings its own
//! registry, which also maps names to executors.

use std::fmt;
use std::sync::{Arc, Mutex, Weak};

// No critical section here can leave the list half-changed.
use user_questions::sync::lock_unpoisoned as lock;

use crate::definition::ToolDefinition;

/// Registered tool definitions, in registration order. Cheap to clone; clones share the list.
#[derive(Clone, Default)]
pub struct ToolRegistry {
    inner: Arc<Mutex<State>>,
}

#[derive(Default)]
struct State {
    next_id: u64,
    tools: Vec<(u64, ToolDefinition)>,
}

/// Why a definition could not be registered.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RegistryError {
    /// A tool with this name is already registered: a model must see each name once.
    #[error("a tool named {0:?} is already registered")]
    DuplicateName(String),
}

impl ToolRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers a definition; it stays listed while the guard lives.
    pub fn register(&self, definition: ToolDefinition) -> Result<ToolGuard, RegistryError> {
        let mut state = lock(&self.inner);
        if state.tools.iter().any(|(_, d)| d.name == definition.name) {
            return Err(RegistryError::DuplicateName(definition.name));
        }
        state.next_id += 1;
        let id = state.next_id;
        state.tools.push((id, definition));
        Ok(ToolGuard {
            registry: Arc::downgrade(&self.inner),
            id: Some(id),
        })
    }

    /// The registered definitions, in registration order: serialised, the `tools` array of a
    /// `request/header` (SPEC §7.6).
    pub fn definitions(&self) -> Vec<ToolDefinition> {
        lock(&self.inner)
            .tools
            .iter()
            .map(|(_, d)| d.clone())
            .collect()
    }

    /// The registered definition with this name.
    pub fn get(&self, name: &str) -> Option<ToolDefinition> {
        lock(&self.inner)
            .tools
            .iter()
            .find(|(_, d)| d.name == name)
            .map(|(_, d)| d.clone())
    }
}

impl fmt::Debug for ToolRegistry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<String> = lock(&self.inner)
            .tools
            .iter()
            .map(|(_, d)| d.name.clone())
            .collect();
        f.debug_struct("ToolRegistry")
            .field("tools", &names)
            .finish()
    }
}

/// Keeps a tool registered. Dropping it, or [`ToolGuard::dispose`], unregisters; both are
/// idempotent.
#[must_use = "dropping the guard unregisters the tool at once"]
pub struct ToolGuard {
    registry: Weak<Mutex<State>>,
    id: Option<u64>,
}

impl ToolGuard {
    /// Unregisters now. Calling it again, or dropping the guard afterwards, does nothing.
    pub fn dispose(&mut self) {
        if let Some(id) = self.id.take()
            && let Some(registry) = self.registry.upgrade()
        {
            let removed = {
                let mut state = lock(&registry);
                state
                    .tools
                    .iter()
                    .position(|(tool_id, _)| *tool_id == id)
                    .map(|at| state.tools.remove(at))
            };
            drop(removed);
        }
    }
}

impl Drop for ToolGuard {
    fn drop(&mut self) {
        self.dispose();
    }
}

impl fmt::Debug for ToolGuard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolGuard")
            .field("registered", &self.id.is_some())
            .finish_non_exhaustive()
    }
}
