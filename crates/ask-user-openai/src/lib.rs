#![doc = include_str!("../README.md")]

use std::sync::Arc;

use ask_user_host::{Host, HostError, ToolResult, ToolSpec};
use async_openai::types::chat::{
    ChatCompletionMessageToolCalls, ChatCompletionRequestAssistantMessage,
    ChatCompletionRequestAssistantMessageContent, ChatCompletionRequestMessage,
    ChatCompletionRequestToolMessage, ChatCompletionRequestToolMessageContent,
    ChatCompletionRequestUserMessage, ChatCompletionRequestUserMessageContent,
    ChatCompletionResponseMessage, ChatCompletionTool, ChatCompletionTools, FunctionObject,
};
use user_questions::{CallId, CancellationToken, UserMessage};

pub use async_openai;

/// The application's tools other than `ask_user_question`: called with the tool's name and the
/// raw argument text the model sent, and `cancel` (cancelled when the caller gives up: return
/// [`ToolResult::aborted`] then).
#[async_trait::async_trait]
pub trait ToolHandler: Send + Sync {
    /// Runs one call of the tool `name`.
    async fn call(&self, name: &str, arguments: &str, cancel: CancellationToken) -> ToolResult;
}

/// No other tools: every call of another tool is an error the model reads.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoOtherTools;

#[async_trait::async_trait]
impl ToolHandler for NoOtherTools {
    async fn call(&self, name: &str, _arguments: &str, _cancel: CancellationToken) -> ToolResult {
        ToolResult::error(format!("there is no tool {name:?}"))
    }
}

#[async_trait::async_trait]
impl<T: ToolHandler + ?Sized> ToolHandler for Arc<T> {
    async fn call(&self, name: &str, arguments: &str, cancel: CancellationToken) -> ToolResult {
        (**self).call(name, arguments, cancel).await
    }
}

/// `ask_user_question` as a Chat Completions tool, in the mode of the host's tool (legacy or
/// timed): the same name, description and parameters a `request/header` records.
pub fn ask_tool(host: &Host) -> ChatCompletionTools {
    let definition = host.tool().definition();
    function_tool(
        &definition.name,
        &definition.description,
        definition.parameters.clone(),
    )
}

/// Another tool as a Chat Completions tool.
pub fn tool(spec: &ToolSpec) -> ChatCompletionTools {
    function_tool(&spec.name, &spec.description, spec.parameters.clone())
}

/// Every tool the model is offered: `ask_user_question` first, then `others`, which the host is
/// told of too (its `request/header` lists the same tools).
///
/// # Errors
///
/// The host's, when the change of tools cannot be logged.
pub fn tools(host: &Host, others: &[ToolSpec]) -> Result<Vec<ChatCompletionTools>, HostError> {
    host.set_tools(others.iter().cloned())?;
    Ok(std::iter::once(ask_tool(host))
        .chain(others.iter().map(tool))
        .collect())
}

fn function_tool(
    name: &str,
    description: &str,
    parameters: serde_json::Value,
) -> ChatCompletionTools {
    ChatCompletionTools::Function(ChatCompletionTool {
        function: FunctionObject {
            name: name.to_owned(),
            description: Some(description.to_owned()),
            parameters: Some(parameters),
            strict: None,
        },
    })
}

/// The assistant message the model returned, as the history's next request message (its text
/// and its tool calls, as they were).
pub fn assistant_message(message: &ChatCompletionResponseMessage) -> ChatCompletionRequestMessage {
    #[allow(deprecated)]
    ChatCompletionRequestMessage::Assistant(ChatCompletionRequestAssistantMessage {
        content: message
            .content
            .clone()
            .map(ChatCompletionRequestAssistantMessageContent::Text),
        refusal: message.refusal.clone(),
        name: None,
        audio: None,
        tool_calls: message.tool_calls.clone(),
        function_call: None,
    })
}

/// A user message of the host (a late reply `begin_turn` claimed) as a request message: its
/// text blocks joined.
pub fn user_message(message: &UserMessage) -> ChatCompletionRequestMessage {
    let text: Vec<&str> = message.content.iter().filter_map(|b| b.as_text()).collect();
    ChatCompletionRequestMessage::User(ChatCompletionRequestUserMessage {
        content: ChatCompletionRequestUserMessageContent::Text(text.join("\n")),
        name: None,
    })
}

/// Starts the host's next turn: the late replies queued since are claimed (the turn's first
/// step admits them into the log, which settles their questions), and returned as user messages
/// for this turn's first request. Call it where the loop would start any turn.
///
/// # Errors
///
/// The host's, when the turn cannot be logged.
pub fn begin_turn(host: &Host) -> Result<Vec<ChatCompletionRequestMessage>, HostError> {
    let replies = host.begin_turn()?;
    Ok(replies.iter().map(user_message).collect())
}

/// Runs the tool calls of one assistant message, in order, each recorded in the host's log
/// (`tool/call` with the provider's call id and the model's raw arguments, then `tool/result`):
/// `ask_user_question` through the host ([`Host::call_tool`]), every other tool through
/// `handler`. Returns the tool messages to append to the history, one per call. The assistant's
/// text, if any, is logged first.
///
/// Cancel through `cancel`: the calls then end as cancelled calls and are logged so; a dropped
/// future leaves an unfinished call that resume repair closes.
///
/// # Errors
///
/// The host's: a call id the session used already, or a log that cannot be written.
pub async fn run_tool_calls(
    host: &Host,
    message: &ChatCompletionResponseMessage,
    handler: &dyn ToolHandler,
    cancel: &CancellationToken,
) -> Result<Vec<ChatCompletionRequestMessage>, HostError> {
    if let Some(text) = message.content.as_deref().filter(|t| !t.is_empty()) {
        host.assistant_text(text)?;
    }
    let mut replies = Vec::new();
    for call in message.tool_calls.iter().flatten() {
        let (id, name, arguments) = match call {
            ChatCompletionMessageToolCalls::Function(call) => (
                call.id.as_str(),
                call.function.name.as_str(),
                call.function.arguments.as_str(),
            ),
            ChatCompletionMessageToolCalls::Custom(call) => (
                call.id.as_str(),
                call.custom_tool.name.as_str(),
                call.custom_tool.input.as_str(),
            ),
        };
        let call_id = CallId::from(id);
        let text = if name == user_questions::TOOL_NAME {
            host.call_tool(&call_id, arguments, cancel.child_token())
                .await?
                .text
        } else {
            let run = handler.call(name, arguments, cancel.child_token());
            host.run_tool(&call_id, name, arguments, run).await?.text
        };
        replies.push(ChatCompletionRequestMessage::Tool(
            ChatCompletionRequestToolMessage {
                content: ChatCompletionRequestToolMessageContent::Text(text),
                tool_call_id: id.to_owned(),
            },
        ));
    }
    Ok(replies)
}

/// How a turn could not run to its end.
#[derive(Debug, thiserror::Error)]
pub enum TurnError {
    /// The host could not log a step of it.
    #[error(transparent)]
    Host(#[from] HostError),
    /// The provider's request failed.
    #[error("the model's request failed: {0}")]
    OpenAi(#[from] async_openai::error::OpenAIError),
    /// The provider answered with no choice.
    #[error("the model answered with no message")]
    NoChoice,
    /// The model kept calling tools for more steps than the turn allows.
    #[error("the model called tools for {0} steps without an answer")]
    TooManySteps(usize),
}

/// The most model requests one turn makes ([`run_turn`]).
pub const MAX_STEPS: usize = 32;

/// One turn of a Chat Completions agent loop, recorded step by step in the host's log: the late
/// replies queued since the last turn are admitted and appended to `history` ([`begin_turn`]),
/// then each step sends `history` with `request`'s model, tools and settings, appends the
/// assistant message, and runs its tool calls ([`run_tool_calls`]), until the model answers
/// without calling a tool. Returns that answer's text; `history` holds the whole exchange.
///
/// `request` is a template: its `messages` are replaced by `history` each step. Its `tools`
/// should come from [`tools`], so that the log's `request/header` lists what the model saw.
///
/// # Errors
///
/// [`TurnError`]: the host's, the provider's, or [`MAX_STEPS`] steps without an answer. The
/// turn is ended in the log as `error` then.
pub async fn run_turn<C: async_openai::config::Config>(
    client: &async_openai::Client<C>,
    host: &Host,
    request: &async_openai::types::chat::CreateChatCompletionRequest,
    history: &mut Vec<ChatCompletionRequestMessage>,
    handler: &dyn ToolHandler,
    cancel: &CancellationToken,
) -> Result<String, TurnError> {
    history.extend(begin_turn(host)?);
    let outcome = steps(client, host, request, history, handler, cancel).await;
    host.end_turn(if outcome.is_ok() {
        "completed"
    } else {
        "error"
    })?;
    outcome
}

async fn steps<C: async_openai::config::Config>(
    client: &async_openai::Client<C>,
    host: &Host,
    request: &async_openai::types::chat::CreateChatCompletionRequest,
    history: &mut Vec<ChatCompletionRequestMessage>,
    handler: &dyn ToolHandler,
    cancel: &CancellationToken,
) -> Result<String, TurnError> {
    for _ in 0..MAX_STEPS {
        host.begin_step()?;
        host.log_request_header()?;
        let mut this = request.clone();
        this.messages.clone_from(history);
        let response = client.chat().create(this).await?;
        let message = response
            .choices
            .into_iter()
            .next()
            .ok_or(TurnError::NoChoice)?
            .message;
        history.push(assistant_message(&message));
        let calls = message.tool_calls.as_ref().is_some_and(|c| !c.is_empty());
        let replies = run_tool_calls(host, &message, handler, cancel).await?;
        history.extend(replies);
        host.end_step()?;
        if !calls {
            return Ok(message.content.unwrap_or_default());
        }
    }
    Err(TurnError::TooManySteps(MAX_STEPS))
}
