//! The legacy `ask_user_question` definition (SPEC §5.1–§5.4): the blocking tool. **Frozen.**
//!
//! Its description, its parameters schema (the doc comments of the argument types below are the
//! model-facing property descriptions) and its argument mapping are a released contract, pinned
//! by the `t6_legacy_definition_is_frozen` snapshot. Changing any of them is a product decision,
//! not a refactor. Their last change, before release, made them fit 204 `o200k_base` tokens
//! (`cargo xtask catalog` counts them and holds them to that budget).
//!
//! This module shares no argument type, description or mapping code with the timed definition
//! (`timed.rs`), so work on the timed tool cannot change it. What both use is infrastructure: the
//! schema generator (`schema.rs`), the schema-driven argument check (`args.rs`), the result
//! rendering (`outcome.rs`), whose output the snapshots pin as well, and the plain types
//! `ToolDefinition` and `ToolContext`.
//!
//! Behaviour: it always waits for an answer or an error and never reports pending; its requests
//! carry no wait key; `multi_select` maps to `multiSelect`; extra keys are dropped.

use schemars::JsonSchema;
use serde::Deserialize;
use user_questions::{
    AskRequest, Question, QuestionOption, TOOL_NAME, UserQuestionError, UserQuestions,
};

use crate::args;
use crate::context::ToolContext;
use crate::definition::ToolDefinition;
use crate::outcome::ToolOutcome;
use crate::schema::schema_of;

/// The tool description (gist G1). **Frozen.**
pub(crate) const DESCRIPTION: &str = "Ask the person 1-4 short questions only when you need a fact, choice or confirmation to go on; wait for the answers. Skipped: empty selected, no custom.";

/// The legacy tool's arguments.
#[derive(Deserialize, JsonSchema)]
struct Args {
    questions: Vec<ArgQuestion>,
}

/// One question as the model writes it; other keys are allowed (JSON Schema's default, so the
/// schema need not say it) and dropped.
#[derive(Deserialize, JsonSchema)]
struct ArgQuestion {
    /// Unique id, returned with its answer.
    id: String,
    // The name says it all: no description, so the model does not pay for one.
    #[schemars(description = "")]
    question: String,
    /// Short heading like 'Setup'.
    header: Option<String>,
    /// Choices; a recommended one first, its label ending " (Recommended)".
    options: Option<Vec<ArgOption>>,
    /// Allow several choices.
    multi_select: Option<bool>,
}

/// One option as the model writes it; other keys are allowed and dropped.
#[derive(Deserialize, JsonSchema)]
struct ArgOption {
    /// Shown; returned if chosen.
    label: String,
    // The name says it all.
    #[schemars(description = "")]
    description: Option<String>,
}

/// The result value: a closed answers object (output schema; not model-facing).
#[derive(JsonSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)] // Schema-only: it documents the result shape and is never built.
struct Output {
    answers: Vec<OutputItem>,
}

/// One answered question in the result value.
#[derive(JsonSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)] // Schema-only: it documents the result shape and is never built.
struct OutputItem {
    id: String,
    selected: Vec<String>,
    custom: Option<String>,
}

/// The legacy definition.
pub(crate) fn definition() -> ToolDefinition {
    ToolDefinition {
        name: TOOL_NAME.to_owned(),
        description: DESCRIPTION.to_owned(),
        parameters: schema_of::<Args>(),
        output_schema: schema_of::<Output>(),
    }
}

/// SPEC §5.3, legacy: validate, map, `ask` with no wait key, render.
pub(crate) async fn execute(
    seam: &UserQuestions,
    definition: &ToolDefinition,
    arguments: &str,
    ctx: ToolContext,
) -> ToolOutcome {
    let args: Args = match args::parse(
        &definition.parameters,
        arguments,
        seam.limits(),
        args::NearMisses::Dropped,
    ) {
        Ok(args) => args,
        Err(error) => return ToolOutcome::typed_error(&error),
    };
    let request = AskRequest {
        questions: map(args),
        agent: ctx.agent,
        cancel: Some(ctx.cancel),
        wait: None,
    };
    match seam.ask(request).await {
        Ok(answered) => ToolOutcome::answered(&answered),
        Err(error) => ToolOutcome::error(&error),
    }
}

/// The questions a call with `arguments` asks, checked as [`execute`] checks them; the error it
/// would report otherwise.
pub(crate) fn questions(
    seam: &UserQuestions,
    definition: &ToolDefinition,
    arguments: &str,
) -> Result<Vec<Question>, UserQuestionError> {
    args::parse::<Args>(
        &definition.parameters,
        arguments,
        seam.limits(),
        args::NearMisses::Dropped,
    )
    .map(map)
}

/// SPEC §5.4: arguments to service vocabulary.
fn map(args: Args) -> Vec<Question> {
    args.questions
        .into_iter()
        .map(|q| Question {
            id: q.id,
            question: q.question,
            detail: None,
            header: q.header,
            options: q.options.map(|options| {
                options
                    .into_iter()
                    .map(|o| QuestionOption {
                        label: o.label,
                        description: o.description,
                    })
                    .collect()
            }),
            multi_select: q.multi_select,
            intent: None,
        })
        .collect()
}
