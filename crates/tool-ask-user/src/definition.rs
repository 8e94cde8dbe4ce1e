//! The tool definition a host offers the model (SPEC §5.1, §5.2), built from a configuration
//! without a seam, so the catalog generator can build it too (SPEC §10).

use serde::Serialize;
use serde_json::Value;

use crate::config::{AskUserConfig, AskUserMode, ConfigError};
use crate::{legacy, timed};

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

/// The definition for a configuration: the legacy one, or the timed one whose `timeout`
/// description states the configured default. Fails when the timeout is out of range (in both
/// modes, SPEC §2.1).
pub fn definition(config: &AskUserConfig) -> Result<ToolDefinition, ConfigError> {
    config.validate()?;
    Ok(match config.mode {
        AskUserMode::Legacy => legacy::definition(),
        AskUserMode::Timed => timed::definition(config.timeout),
    })
}
