//! A hook's input: what an agent writes on a hook command's stdin (one JSON object), read into
//! the event the bridge acts on.

use serde_json::Value;
use user_questions::{Question, QuestionOption};

use crate::text::{approval, cut, destination, rule};
use crate::{APPROVAL_ID, Agent, AskKind, Choice, MAX_HOOK_INPUT, NativeAsk, NativeError};

/// At most this many `Allow always` options: with `Allow` and `Deny`, three, so a phone's
/// notification carries a button for every choice (it shows all of a question's options as
/// buttons, or none); the agent's own dialog still offers the others.
const MAX_RULES: usize = 1;

/// Whether `tool`'s prompt is `agent`'s own question picker: Claude Code's `AskUserQuestion`,
/// Codex's `request_user_input` (asked of an app-server's client).
fn question_tool(agent: Agent, tool: &str) -> bool {
    matches!(
        (agent, tool),
        (Agent::ClaudeCode, "AskUserQuestion") | (Agent::Codex, "request_user_input")
    )
}

/// What an agent's hook was called for.
#[derive(Clone, Debug, PartialEq)]
pub enum HookEvent {
    /// The agent asks its person (`PermissionRequest`): the bridge asks too, and the first answer
    /// wins.
    PermissionRequest(NativeAsk),
    /// A tool ran (`PostToolUse`): an ask about it, if one still waits, was settled at the agent.
    ToolUsed {
        /// The agent's session.
        session: String,
        /// The ask it settles ([`NativeAsk::fingerprint`]).
        fingerprint: String,
    },
    /// A permission was denied at the agent (`PermissionDenied`): an ask about it was settled
    /// there.
    Denied {
        /// The agent's session.
        session: String,
        /// The ask it settles ([`NativeAsk::fingerprint`]).
        fingerprint: String,
    },
    /// The agent tells its person something (`Notification`: waiting for input, a prompt shown).
    Notification {
        /// The agent.
        agent: Agent,
        /// The agent's session.
        session: String,
        /// Its folder, when it says.
        cwd: Option<String>,
        /// The kind, when it says (Claude Code's `permission_prompt`, `idle_prompt`, …; Gemini
        /// CLI's `ToolPermission`).
        kind: Option<String>,
        /// The message.
        message: String,
    },
    /// Any other event: nothing for the bridge to do.
    Other {
        /// The event's name.
        event: String,
    },
}

fn string<'a>(input: &'a Value, key: &'static str) -> Result<&'a str, NativeError> {
    input
        .get(key)
        .and_then(Value::as_str)
        .ok_or(NativeError::Missing(key))
}

impl HookEvent {
    /// What a notification of the agent's should tell its person away from the terminal, when
    /// its prompt is one no card can answer: Claude Code idle at its prompt (`idle_prompt`) or
    /// showing an MCP server's form (`elicitation_dialog`), Gemini CLI's own confirmation
    /// (`ToolPermission`). `None` for everything else (a permission prompt of Claude Code's is
    /// a card already).
    pub fn attention(&self) -> Option<String> {
        let Self::Notification {
            agent,
            kind,
            message,
            ..
        } = self
        else {
            return None;
        };
        let at = match agent {
            Agent::Gemini => "answer it at Gemini CLI's terminal: its hooks cannot approve",
            _ => "answer it at its terminal",
        };
        let what = match (agent, kind.as_deref()?) {
            (Agent::ClaudeCode, "idle_prompt") => "waits for your input",
            (Agent::ClaudeCode, "elicitation_dialog") => "shows an MCP server's form",
            (Agent::Gemini, "ToolPermission") => "waits for your confirmation",
            _ => return None,
        };
        let message = message.trim();
        let said = if message.is_empty() {
            String::new()
        } else {
            format!(": {message}")
        };
        Some(cut(&format!("{} {what}{said}\n({at})", agent.display())))
    }

    /// Reads what `agent` wrote on a hook command's stdin.
    ///
    /// # Errors
    ///
    /// Input longer than [`MAX_HOOK_INPUT`], not a JSON object, or without the fields its event
    /// needs (`hook_event_name`, `session_id`, `tool_name`).
    pub fn read(agent: Agent, text: &str) -> Result<Self, NativeError> {
        if text.len() > MAX_HOOK_INPUT {
            return Err(NativeError::TooLong);
        }
        let input: Value =
            serde_json::from_str(text).map_err(|e| NativeError::NotJson(e.to_string()))?;
        if !input.is_object() {
            return Err(NativeError::NotJson("not an object".into()));
        }
        let event = string(&input, "hook_event_name")?;
        let session = || string(&input, "session_id").map(str::to_owned);
        let fingerprint = || -> Result<String, NativeError> {
            let tool = string(&input, "tool_name")?;
            let tool_input = input.get("tool_input").cloned().unwrap_or(Value::Null);
            Ok(crate::fingerprint(agent, &session()?, tool, &tool_input))
        };
        Ok(match event {
            "PermissionRequest" => Self::PermissionRequest(ask(agent, &input)?),
            "PostToolUse" => Self::ToolUsed {
                session: session()?,
                fingerprint: fingerprint()?,
            },
            "PermissionDenied" => Self::Denied {
                session: session()?,
                fingerprint: fingerprint()?,
            },
            "Notification" => Self::Notification {
                agent,
                session: session()?,
                cwd: (input.get("cwd").and_then(Value::as_str)).map(str::to_owned),
                kind: (input.get("notification_type").and_then(Value::as_str)).map(str::to_owned),
                message: string(&input, "message").unwrap_or_default().to_owned(),
            },
            other => Self::Other {
                event: other.to_owned(),
            },
        })
    }
}

impl NativeAsk {
    /// A prompt of `agent`, in the shape its `PermissionRequest` hook is handed (`session_id`,
    /// `cwd`, `tool_name`, `tool_input`, `permission_suggestions`): how a client of the agent
    /// (Codex's app-server) turns what it is asked into an ask.
    ///
    /// # Errors
    ///
    /// Without `session_id` or `tool_name`.
    pub fn from_prompt(agent: Agent, prompt: &Value) -> Result<Self, NativeError> {
        ask(agent, prompt)
    }
}

/// The ask of a `PermissionRequest`.
fn ask(agent: Agent, input: &Value) -> Result<NativeAsk, NativeError> {
    let session = string(input, "session_id")?.to_owned();
    let tool = string(input, "tool_name")?.to_owned();
    let cwd = input.get("cwd").and_then(Value::as_str).map(str::to_owned);
    let tool_input = input.get("tool_input").cloned().unwrap_or(Value::Null);
    let (kind, questions) = if question_tool(agent, &tool) {
        (AskKind::Questions, own_questions(&tool_input))
    } else {
        let suggestions = match agent {
            // Codex takes no rules from a hook: it fails closed on `updatedPermissions`.
            Agent::Codex | Agent::Gemini => Vec::new(),
            Agent::ClaudeCode => (input.get("permission_suggestions"))
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default(),
        };
        let choices = choices(&suggestions);
        let question = Question {
            header: Some(tool.clone()),
            options: Some(options(agent, &choices)),
            multi_select: Some(false),
            ..Question::new(
                APPROVAL_ID,
                approval(agent.display(), &tool, &tool_input, cwd.as_deref()),
            )
        };
        (AskKind::Approval { choices }, vec![question])
    };
    Ok(NativeAsk {
        agent,
        session,
        cwd,
        tool,
        input: tool_input,
        kind,
        questions,
    })
}

/// Allow once, each rule the agent suggests (at most [`MAX_RULES`]), deny.
fn choices(suggestions: &[Value]) -> Vec<Choice> {
    let mut choices = vec![Choice::AllowOnce];
    choices.extend(
        suggestions
            .iter()
            .filter_map(|s| {
                rule(s).map(|rule| Choice::AllowAlways {
                    rule,
                    suggestion: s.clone(),
                })
            })
            .take(MAX_RULES),
    );
    choices.push(Choice::Deny);
    choices
}

fn options(agent: Agent, choices: &[Choice]) -> Vec<QuestionOption> {
    choices
        .iter()
        .map(|choice| {
            let description = match choice {
                Choice::AllowOnce => "Allow it this once.".to_owned(),
                Choice::AllowAlways { suggestion, .. } => format!(
                    "Allow it, and do not ask again: the rule is kept {}.",
                    destination(suggestion)
                ),
                Choice::Deny => format!(
                    "Do not allow it. What you write under Other is what {} is told.",
                    agent.display()
                ),
            };
            QuestionOption {
                description: Some(description),
                ..QuestionOption::new(choice.label())
            }
        })
        .collect()
}

/// The agent's own questions (`AskUserQuestion`'s `questions`), one to one: `q1`, `q2`, …
fn own_questions(input: &Value) -> Vec<Question> {
    let asked = input.get("questions").and_then(Value::as_array);
    (asked.into_iter().flatten())
        .enumerate()
        .map(|(i, asked)| {
            let text = asked
                .get("question")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let options: Vec<QuestionOption> = (asked.get("options").and_then(Value::as_array))
                .into_iter()
                .flatten()
                .filter_map(|option| {
                    let label = option.get("label").and_then(Value::as_str)?;
                    let description = option.get("description").and_then(Value::as_str);
                    Some(QuestionOption {
                        description: description.map(str::to_owned),
                        ..QuestionOption::new(label)
                    })
                })
                .collect();
            Question {
                header: (asked.get("header").and_then(Value::as_str)).map(str::to_owned),
                options: (!options.is_empty()).then_some(options),
                multi_select: Some(asked.get("multiSelect").and_then(Value::as_bool) == Some(true)),
                ..Question::new(format!("q{}", i + 1), cut(text))
            }
        })
        .collect()
}
