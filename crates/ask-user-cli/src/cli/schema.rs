//! `ask-user schema`: the tool definition the model sees.

use clap::Args;

use super::{CliError, Exit, ToolArgs};

/// Arguments of `schema`.
#[derive(Debug, Args)]
pub struct SchemaArgs {
    #[command(flatten)]
    tool: ToolArgs,
}

pub(super) fn run(args: &SchemaArgs, file: &super::config::Config) -> Result<Exit, CliError> {
    let config = args.tool.config(file.mode, file.timeout)?;
    let definition = tool_ask_user::definition(&config)
        .map_err(|e| CliError::new("BAD_CONFIG", e.to_string(), Exit::Usage))?;
    let text = serde_json::to_string_pretty(&definition)
        .map_err(|e| CliError::failure("INTERNAL", e.to_string()))?;
    println!("{text}");
    Ok(Exit::Ok)
}
