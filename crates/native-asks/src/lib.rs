#![doc = include_str!("../README.md")]

mod hook;
mod text;

use serde_json::{Map, Value, json};
use user_questions::{AnswerBatch, AnswerItem, Question};

pub use hook::HookEvent;

/// The id of an approval's one question.
pub const APPROVAL_ID: &str = "decision";

/// The most characters a question's text keeps; the rest is counted, not shown.
pub const MAX_TEXT: usize = 4000;

/// The most bytes of a hook's input read.
pub const MAX_HOOK_INPUT: usize = 1 << 20;

/// An agent whose own prompts can be answered from outside.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Agent {
    /// Claude Code: its `PermissionRequest` hook runs beside its dialog.
    ClaudeCode,
    /// Codex CLI: its `PermissionRequest` hook runs before its dialog, which waits for it.
    Codex,
    /// Gemini CLI: its hooks cannot approve; its `Notification` hook tells that a confirmation
    /// waits.
    Gemini,
}

impl Agent {
    /// The agent's name in commands and session names: `claude-code`, `codex`, `gemini`.
    pub fn name(self) -> &'static str {
        match self {
            Self::ClaudeCode => "claude-code",
            Self::Codex => "codex",
            Self::Gemini => "gemini",
        }
    }

    /// The agent's name for a person: `Claude Code`, `Codex`, `Gemini CLI`.
    pub fn display(self) -> &'static str {
        match self {
            Self::ClaudeCode => "Claude Code",
            Self::Codex => "Codex",
            Self::Gemini => "Gemini CLI",
        }
    }

    /// The agent named `name` ([`Agent::name`]).
    pub fn from_name(name: &str) -> Option<Self> {
        [Self::ClaudeCode, Self::Codex, Self::Gemini]
            .into_iter()
            .find(|agent| agent.name() == name)
    }
}

/// One prompt of an agent, as a question batch.
#[derive(Clone, Debug, PartialEq)]
pub struct NativeAsk {
    /// The agent asking.
    pub agent: Agent,
    /// The agent's session id.
    pub session: String,
    /// The agent's folder, when it says.
    pub cwd: Option<String>,
    /// The tool the prompt is about (`Bash`, `Edit`, `AskUserQuestion`, …).
    pub tool: String,
    /// The tool's input, as the agent gave it.
    pub input: Value,
    /// An approval, or the agent's own questions.
    pub kind: AskKind,
    /// What the surfaces show.
    pub questions: Vec<Question>,
}

/// What kind of prompt a [`NativeAsk`] is.
#[derive(Clone, Debug, PartialEq)]
pub enum AskKind {
    /// An approval: one question ([`APPROVAL_ID`]) with one option per choice.
    Approval {
        /// The choices, in the order of the options.
        choices: Vec<Choice>,
    },
    /// The agent's own question tool: its questions, one to one.
    Questions,
}

/// A choice an approval offers.
#[derive(Clone, Debug, PartialEq)]
pub enum Choice {
    /// Allow this once.
    AllowOnce,
    /// Allow, and add the rule the agent suggests.
    AllowAlways {
        /// The rule as a person reads it (`Bash(npm test:*)`).
        rule: String,
        /// The agent's suggestion, handed back as it came.
        suggestion: Value,
    },
    /// Deny; free text is the message the agent's model reads.
    Deny,
}

impl Choice {
    /// The option's label: `Allow`, `Allow always: RULE`, `Deny`.
    pub fn label(&self) -> String {
        match self {
            Self::AllowOnce => "Allow".to_owned(),
            Self::AllowAlways { rule, .. } => format!("Allow always: {rule}"),
            Self::Deny => "Deny".to_owned(),
        }
    }
}

/// An agent's decision on its prompt.
#[derive(Clone, Debug, PartialEq)]
pub enum Decision {
    /// Allowed.
    Allow {
        /// The rule to add (`updatedPermissions`), for `Allow always`.
        always: Option<Value>,
        /// The tool's input with the answers in it, for a question tool.
        updated_input: Option<Value>,
    },
    /// Denied, with the message the agent's model reads.
    Deny {
        /// The message.
        message: String,
    },
}

impl Decision {
    /// What the agent's `PermissionRequest` hook prints on stdout.
    pub fn hook_output(&self) -> Value {
        let decision = match self {
            Self::Allow {
                always,
                updated_input,
            } => {
                let mut decision = Map::new();
                decision.insert("behavior".into(), "allow".into());
                if let Some(input) = updated_input {
                    decision.insert("updatedInput".into(), input.clone());
                }
                if let Some(rule) = always {
                    decision.insert("updatedPermissions".into(), json!([rule]));
                }
                Value::Object(decision)
            }
            Self::Deny { message } => json!({"behavior": "deny", "message": message}),
        };
        json!({"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": decision}})
    }
}

impl NativeAsk {
    /// The timed tool's arguments for this ask: its questions, waiting indefinitely
    /// (`"timeout": -1`): a native ask has no window of ours; the agent's own dialog races it.
    pub fn arguments(&self) -> String {
        let questions: Vec<Value> = self
            .questions
            .iter()
            .map(|q| {
                let mut question = Map::new();
                question.insert("id".into(), q.id.clone().into());
                question.insert("question".into(), q.question.clone().into());
                if let Some(header) = &q.header {
                    question.insert("header".into(), header.clone().into());
                }
                if let Some(options) = &q.options {
                    let options: Vec<Value> = options
                        .iter()
                        .map(|o| match &o.description {
                            Some(d) => json!({"label": o.label, "description": d}),
                            None => json!({"label": o.label}),
                        })
                        .collect();
                    question.insert("options".into(), options.into());
                }
                if let Some(multi) = q.multi_select {
                    question.insert("multi_select".into(), multi.into());
                }
                Value::Object(question)
            })
            .collect();
        json!({"questions": questions, "timeout": -1}).to_string()
    }

    /// What names this ask in a later event of the same agent (the tool having run, or the ask
    /// denied at the keyboard): the agent, its session, the tool and its input.
    pub fn fingerprint(&self) -> String {
        fingerprint(self.agent, &self.session, &self.tool, &self.input)
    }

    /// The agent's decision for `answers`, given on `surface` (`page`, `shell`, …): `None` when
    /// they choose nothing (a skip), so the agent's own dialog decides.
    pub fn decide(&self, answers: &AnswerBatch, surface: &str) -> Option<Decision> {
        match &self.kind {
            AskKind::Approval { choices } => {
                let item = answers.answers.iter().find(|a| a.id == APPROVAL_ID)?;
                Self::approval(choices, item, surface)
            }
            AskKind::Questions => self.answered_questions(answers),
        }
    }

    fn approval(choices: &[Choice], item: &AnswerItem, surface: &str) -> Option<Decision> {
        let text = item
            .custom
            .as_deref()
            .map(str::trim)
            .filter(|t| !t.is_empty());
        let chosen = item
            .selected
            .first()
            .and_then(|label| choices.iter().find(|c| c.label() == *label));
        let deny = |text: Option<&str>| Decision::Deny {
            message: match text {
                Some(text) => format!("{text} (denied from the {surface})"),
                None => format!("Denied from the {surface}."),
            },
        };
        match (chosen, text) {
            (Some(Choice::AllowOnce), _) => Some(Decision::Allow {
                always: None,
                updated_input: None,
            }),
            (Some(Choice::AllowAlways { suggestion, .. }), _) => Some(Decision::Allow {
                always: Some(suggestion.clone()),
                updated_input: None,
            }),
            // Free text alone is a denial with a reason: what the person wrote never allows.
            (Some(Choice::Deny), text) | (None, text @ Some(_)) => Some(deny(text)),
            (None, None) => None,
        }
    }

    fn answered_questions(&self, answers: &AnswerBatch) -> Option<Decision> {
        // The agent reads each answer under its question's own text (ours may be cut).
        let asked = self.input.get("questions").and_then(Value::as_array);
        let mut answered = Map::new();
        for (i, question) in self.questions.iter().enumerate() {
            let Some(item) = answers.answers.iter().find(|a| a.id == question.id) else {
                continue;
            };
            let key = (asked.and_then(|asked| asked.get(i)))
                .and_then(|q| q.get("question"))
                .and_then(Value::as_str)
                .unwrap_or(&question.question);
            let text = item
                .custom
                .as_deref()
                .map(str::trim)
                .filter(|t| !t.is_empty());
            let multi = question.multi_select == Some(true);
            let mut parts: Vec<&str> = match text {
                // Free text overrides a single-select choice.
                Some(_) if !multi => Vec::new(),
                _ => item.selected.iter().map(String::as_str).collect(),
            };
            parts.extend(text);
            if !parts.is_empty() {
                answered.insert(key.to_owned(), parts.join(", ").into());
            }
        }
        if answered.is_empty() {
            return None;
        }
        if self.agent == Agent::Codex {
            return Some(Decision::Allow {
                always: None,
                updated_input: Some(self.codex_answers(answers)),
            });
        }
        let mut input = match &self.input {
            Value::Object(input) => input.clone(),
            _ => Map::new(),
        };
        input.insert("answers".into(), Value::Object(answered));
        Some(Decision::Allow {
            always: None,
            updated_input: Some(Value::Object(input)),
        })
    }
}

impl NativeAsk {
    /// Codex's answer to its `request_user_input`: `{"answers": {ID: {"answers": [...]}}}`, under
    /// each question's own id, the labels chosen and the free text, each on its own.
    fn codex_answers(&self, answers: &AnswerBatch) -> Value {
        let asked = self.input.get("questions").and_then(Value::as_array);
        let mut answered = Map::new();
        for (i, question) in self.questions.iter().enumerate() {
            let Some(item) = answers.answers.iter().find(|a| a.id == question.id) else {
                continue;
            };
            let id = (asked.and_then(|asked| asked.get(i)))
                .and_then(|q| q.get("id"))
                .and_then(Value::as_str)
                .unwrap_or(&question.id);
            let text = (item.custom.as_deref().map(str::trim)).filter(|t| !t.is_empty());
            let parts: Vec<&str> = (item.selected.iter().map(String::as_str))
                .chain(text)
                .collect();
            answered.insert(id.to_owned(), json!({ "answers": parts }));
        }
        json!({ "answers": answered })
    }
}

/// See [`NativeAsk::fingerprint`].
fn fingerprint(agent: Agent, session: &str, tool: &str, input: &Value) -> String {
    format!("{}\u{1f}{session}\u{1f}{tool}\u{1f}{input}", agent.name())
}

/// Why a hook's input cannot be read.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum NativeError {
    /// Longer than [`MAX_HOOK_INPUT`].
    #[error("the hook's input is longer than {MAX_HOOK_INPUT} bytes")]
    TooLong,
    /// Not a JSON object.
    #[error("the hook's input is not a JSON object: {0}")]
    NotJson(String),
    /// A field it needs is missing or not a string.
    #[error("the hook's input has no string `{0}`")]
    Missing(&'static str),
}
