//! The tool definition a host offers the model (SPEC §5.1, §5.2): the type only. Each mode module
//! (`legacy.rs`, `timed.rs`) builds its own; `tool.rs` picks one for a configuration.

use serde::Serialize;
use serde_json::Value;

/// One `ask_user_question` definition: name, description, parameters and output schemas.
///
/// Serialised, it is exactly `{"name":…,"description":…,"parameters":…}`: the entry a host puts
/// in `request/header.tools` (SPEC §7.6). The output schema documents the result value and is not
/// sent to the model, so it is not serialised.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ToolDefinition {
    /// Always `ask_user_question`.
    pub name: String,
    /// The model-facing tool description (at most 200 characters).
    pub description: String,
    /// The model-facing JSON Schema of the arguments. The timed schema declares `timeout` in
    /// `properties`; the legacy schema never does (the projection's timed marker, SPEC §8.3).
    pub parameters: Value,
    /// The JSON Schema of the result value: the answers object (legacy), or `oneOf` the pending
    /// object and the answers object (timed).
    #[serde(skip)]
    pub output_schema: Value,
}

impl ToolDefinition {
    /// Whether `parameters.properties` declares `timeout`: the projection's timed marker.
    pub fn declares_timeout(&self) -> bool {
        self.parameters
            .get("properties")
            .and_then(Value::as_object)
            .is_some_and(|properties| properties.contains_key("timeout"))
    }
}
