//! The timed `ask_user_question` definition (SPEC §5.1–§5.4): opt-in. It waits for a foreground
//! window, then returns a pending result so the model can go on while the question stays
//! answerable; `timeout: -1` makes one call wait indefinitely.
//!
//! Its schema declares the `timeout` property, which is how the projection tells a timed session
//! from a legacy one (SPEC §8.3). How a late answer reaches the model is a configuration choice
//! ([`LateAnswerRoute`]): as a user message (the default), or through the companion tool
//! `ask_user_question_answer` (an MCP server). It changes only the `timeout` description and the
//! pending notice; the schema's shape, `timeout` included, and the execution stay the same. It shares no argument type, description or mapping code with the
//! legacy definition (`legacy.rs`). The pending result value and its notice live in `pending.rs`,
//! shared with the rendering.
//!
//! Execution order (SPEC §5.3): check the arguments; check `timeout` (E-T1); check the question
//! limits before any dispatch, so a repeated id registers no wait and reaches no answerer; then a
//! positive timeout needs a live agent (E-T2) and runs `ask_timed`, and `-1` runs an indefinite
//! `ask` keyed by the call id.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use user_questions::{
    AskRequest, Question, QuestionOption, TOOL_NAME, TimedAskRequest, TimedOutcome,
    UserQuestionError, UserQuestions, WaitKey, check_question_limits,
};

use crate::args;
use crate::config::{INDEFINITE_TIMEOUT, LateAnswerRoute, is_valid_timeout};
use crate::context::ToolContext;
use crate::definition::ToolDefinition;
use crate::outcome::ToolOutcome;
use crate::pending::PendingResult;
use crate::schema::schema_of;

/// The tool description (gist G10). At most 200 characters (SPEC §10).
pub(crate) const DESCRIPTION: &str = "Ask the person 1-4 short questions in their words only when you need a fact, preference or decision. Skipped: empty selected, no custom. Pending: no answer yet, not permission.";

/// Stands for the configured default in the `timeout` description.
const DEFAULT_PLACEHOLDER: &str = "{default}";

/// The `timeout` description when late answers are fetched with the companion tool
/// ([`LateAnswerRoute::CompanionTool`]), in place of the doc comment of `Args::timeout` (which
/// says a late answer comes as a user message).
const TIMEOUT_COMPANION: &str = "Seconds (default {default}); usually omit. While pending, do only independent work; later call ask_user_question_answer with the callId. -1 (no limit) only if work needs the answer.";

/// The timed tool's arguments.
#[derive(Deserialize, JsonSchema)]
struct Args {
    questions: Vec<ArgQuestion>,
    /// Seconds (default {default}); usually omit. While pending, do only independent work; a late
    /// answer comes as a user message. -1 (no limit) only if work needs the answer.
    timeout: Option<i64>,
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

/// The answers result value (output schema; not model-facing).
#[derive(JsonSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)] // Schema-only: it documents the result shape and is never built.
struct Answers {
    /// The submitted batch, one item per question. A skipped question has an empty `selected` and
    /// no `custom`; unlike pending, the batch is complete.
    answers: Vec<AnswerItem>,
}

/// One answered question in the result value.
#[derive(JsonSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)] // Schema-only: it documents the result shape and is never built.
struct AnswerItem {
    /// The question id echoed from the request.
    id: String,
    /// The chosen option labels; empty with no `custom` means the person skipped the question.
    selected: Vec<String>,
    /// Optional free-text answer; absent for a skipped question.
    custom: Option<String>,
}

/// The timed definition with the given default wait (already checked), worded for `route`.
pub(crate) fn definition(default_timeout: i64, route: LateAnswerRoute) -> ToolDefinition {
    let mut parameters = schema_of::<Args>();
    if let Some(Value::String(text)) = parameters.pointer_mut("/properties/timeout/description") {
        if route == LateAnswerRoute::CompanionTool {
            TIMEOUT_COMPANION.clone_into(text);
        }
        *text = text.replace(DEFAULT_PLACEHOLDER, &default_timeout.to_string());
    }
    let output_schema = serde_json::json!({
        "oneOf": [schema_of::<PendingResult<'static>>(), schema_of::<Answers>()],
    });
    ToolDefinition {
        name: TOOL_NAME.to_owned(),
        description: DESCRIPTION.to_owned(),
        parameters,
        output_schema,
    }
}

/// SPEC §5.3, timed.
/// What a call is told of a `timeout` out of range.
const TIMEOUT_RANGE: &str =
    "\"timeout\" must be -1 (wait indefinitely) or a whole number of seconds from 1 to 2147483";

/// The questions a call with `arguments` asks, checked as [`execute`] checks them before it
/// asks (its timeout included); the error it would report otherwise.
pub(crate) fn questions(
    seam: &UserQuestions,
    definition: &ToolDefinition,
    arguments: &str,
) -> Result<Vec<Question>, UserQuestionError> {
    let args: Args = args::parse(
        &definition.parameters,
        arguments,
        seam.limits(),
        args::NearMisses::Refused,
    )?;
    if args
        .timeout
        .is_some_and(|timeout| !is_valid_timeout(timeout))
    {
        return Err(args::invalid_args(TIMEOUT_RANGE));
    }
    Ok(map(args.questions))
}

pub(crate) async fn execute(
    seam: &UserQuestions,
    definition: &ToolDefinition,
    default_timeout: i64,
    route: LateAnswerRoute,
    arguments: &str,
    ctx: ToolContext,
) -> ToolOutcome {
    let args: Args = match args::parse(
        &definition.parameters,
        arguments,
        seam.limits(),
        args::NearMisses::Refused,
    ) {
        Ok(args) => args,
        Err(error) => return ToolOutcome::typed_error(&error),
    };
    // Step 1: the wait, per call or by default.
    let timeout = args.timeout.unwrap_or(default_timeout);
    if !is_valid_timeout(timeout) {
        return ToolOutcome::typed_error(&args::invalid_args(TIMEOUT_RANGE));
    }
    // Step 2: structural limits before any dispatch: no wait registered, no answerer called.
    let questions = map(args.questions);
    if let Err(error) = check_question_limits(&questions, seam.limits()) {
        return ToolOutcome::typed_error(&error);
    }
    let ToolContext {
        call_id,
        agent,
        cancel,
    } = ctx;
    if timeout == INDEFINITE_TIMEOUT {
        // Step 5: indefinite, keyed by the call; the agent is optional.
        let request = AskRequest {
            questions,
            agent,
            cancel: Some(cancel),
            wait: Some(WaitKey::Indefinite { call_id }),
        };
        return match seam.ask(request).await {
            Ok(answered) => ToolOutcome::answered(&answered),
            Err(error) => ToolOutcome::error(&error),
        };
    }
    // Step 4: a foreground window needs the live agent that asks.
    let Some(agent) = agent else {
        return ToolOutcome::uncoded_error("A timed question can only be asked from a live agent.");
    };
    let request = TimedAskRequest {
        questions,
        agent,
        cancel: Some(cancel),
    };
    match seam.ask_timed(request, call_id, timeout * 1000).await {
        Ok(TimedOutcome::Answered(answered)) => ToolOutcome::answered(&answered),
        Ok(TimedOutcome::Pending { call_id }) => ToolOutcome::pending_via(&call_id, route),
        Err(error) => ToolOutcome::error(&error),
    }
}

/// SPEC §5.4: arguments to service vocabulary.
fn map(questions: Vec<ArgQuestion>) -> Vec<Question> {
    questions
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
