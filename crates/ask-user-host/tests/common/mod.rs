//! What the host's test suites share: the timed runtime they run and the question they ask.

use std::sync::Arc;

use ask_user_host::HostRuntime;
use session_log::SessionStore;
use tool_ask_user::AskUserConfig;
use user_questions::InMemoryAgentRegistry;

/// One question with two options, as a model's raw arguments.
pub const SCOPE_ARGS: &str = r#"{"questions":[{"id":"scope","question":"Which scope?","options":[{"label":"Tool only"},{"label":"Everything"}]}]}"#;

/// A runtime over `store` with the timed tool (a 120 s window) and a registry of its own.
pub fn runtime(store: Arc<dyn SessionStore>) -> HostRuntime {
    HostRuntime::with_registry(
        store,
        Some(AskUserConfig::timed_secs(120)),
        InMemoryAgentRegistry::new(),
    )
    .unwrap()
}
