//! The scripted answerer (SPEC §9.5): answers from rules, for CI, evals and headless hosts.
//!
//! Nothing answers on a person's behalf without an explicit rule: a question that matches no rule
//! makes the whole request decline, so other answerers may answer or the request fails closed.

use std::path::Path;

use async_trait::async_trait;
use serde::Deserialize;

use crate::answerer::{AnswerRequest, Answerer, Next};
use crate::error::{AnswererError, UserQuestionError};
use crate::vocab::{AnswerBatch, AnswerItem, Answered, Provenance, Question};

/// Which questions a rule applies to.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RuleMatch {
    /// The question id must be equal.
    pub id: String,
    /// When given, must be a substring of the question text.
    #[serde(default)]
    pub question_contains: Option<String>,
}

impl RuleMatch {
    fn fits(&self, question: &Question) -> bool {
        self.id == question.id
            && self
                .question_contains
                .as_deref()
                .is_none_or(|needle| question.question.contains(needle))
    }
}

/// The answer a rule gives to one question.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptedAnswer {
    /// Option labels.
    pub selected: Vec<String>,
    /// Free text.
    #[serde(default)]
    pub custom: Option<String>,
}

/// An action a rule takes instead of answering.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
pub enum ScriptAction {
    /// Return `ASK_TIMED_OUT` (pending in timed mode, an error in blocking mode).
    #[serde(rename = "timeOut")]
    TimeOut,
    /// Return `ASK_CANCELLED`.
    #[serde(rename = "cancel")]
    Cancel,
}

/// What a matched rule does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RuleOutcome {
    /// Answer the question.
    Answer(ScriptedAnswer),
    /// Take an action for the whole request.
    Action(ScriptAction),
}

/// One rule: a match and an outcome.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScriptRule {
    /// Which question.
    pub matcher: RuleMatch,
    /// What to do.
    pub outcome: RuleOutcome,
}

/// A script that could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum ScriptError {
    /// The file could not be read.
    #[error("cannot read answer script {path}: {source}")]
    Io {
        /// The path.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The JSON does not fit the script format (unknown keys included).
    #[error("invalid answer script: {0}")]
    Format(#[from] serde_json::Error),
    /// A rule has both or neither of `answer` and `action`.
    #[error("invalid answer script: rule {index} needs exactly one of \"answer\" and \"action\"")]
    Rule {
        /// Zero-based rule index.
        index: usize,
    },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ScriptFile {
    #[serde(default = "default_name")]
    answerer: String,
    rules: Vec<RuleFile>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RuleFile {
    #[serde(rename = "match")]
    matcher: RuleMatch,
    #[serde(default)]
    answer: Option<ScriptedAnswer>,
    #[serde(default)]
    action: Option<ScriptAction>,
}

fn default_name() -> String {
    "scripted".to_owned()
}

/// Answers from rules; its answers are marked `answeredBy: "rule"`.
#[derive(Clone, Debug)]
pub struct ScriptedAnswerer {
    name: String,
    rules: Vec<ScriptRule>,
}

impl ScriptedAnswerer {
    /// An answerer with this provenance name and these rules.
    pub fn new(name: impl Into<String>, rules: impl IntoIterator<Item = ScriptRule>) -> Self {
        Self {
            name: name.into(),
            rules: rules.into_iter().collect(),
        }
    }

    /// An answerer named `scripted` that answers questions by id.
    pub fn from_answers<I, S>(answers: I) -> Self
    where
        I: IntoIterator<Item = (S, ScriptedAnswer)>,
        S: Into<String>,
    {
        Self::new(
            default_name(),
            answers.into_iter().map(|(id, answer)| ScriptRule {
                matcher: RuleMatch {
                    id: id.into(),
                    question_contains: None,
                },
                outcome: RuleOutcome::Answer(answer),
            }),
        )
    }

    /// Reads a script from JSON text (`{"answerer":…,"rules":[…]}`).
    pub fn from_json(text: &str) -> Result<Self, ScriptError> {
        let file: ScriptFile = serde_json::from_str(text)?;
        let rules = file
            .rules
            .into_iter()
            .enumerate()
            .map(|(index, rule)| {
                let outcome = match (rule.answer, rule.action) {
                    (Some(answer), None) => RuleOutcome::Answer(answer),
                    (None, Some(action)) => RuleOutcome::Action(action),
                    (Some(_), Some(_)) | (None, None) => return Err(ScriptError::Rule { index }),
                };
                Ok(ScriptRule {
                    matcher: rule.matcher,
                    outcome,
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self::new(file.answerer, rules))
    }

    /// Reads a script from a JSON file.
    pub fn from_path(path: impl AsRef<Path>) -> Result<Self, ScriptError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|source| ScriptError::Io {
            path: path.display().to_string(),
            source,
        })?;
        Self::from_json(&text)
    }

    /// The provenance name; register the answerer under it.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The rules, in order.
    pub fn rules(&self) -> &[ScriptRule] {
        &self.rules
    }
}

#[async_trait]
impl Answerer for ScriptedAnswerer {
    async fn answer(
        &self,
        request: &AnswerRequest,
        next: Next<'_>,
    ) -> Result<Answered, AnswererError> {
        let mut items = Vec::with_capacity(request.questions.len());
        let mut action = None;
        let mut unmatched = None;
        for question in &request.questions {
            match self.rules.iter().find(|rule| rule.matcher.fits(question)) {
                None => {
                    unmatched.get_or_insert(question.id.as_str());
                }
                Some(rule) => match &rule.outcome {
                    RuleOutcome::Action(act) => {
                        action.get_or_insert(*act);
                    }
                    RuleOutcome::Answer(answer) => items.push(AnswerItem {
                        id: question.id.clone(),
                        selected: answer.selected.clone(),
                        custom: answer.custom.clone(),
                    }),
                },
            }
        }
        if let Some(action) = action {
            tracing::debug!(answerer = %self.name, ?action, "scripted action");
            return Err(match action {
                ScriptAction::TimeOut => UserQuestionError::ask_timed_out(),
                ScriptAction::Cancel => UserQuestionError::ask_cancelled(),
            }
            .into());
        }
        if let Some(question) = unmatched {
            tracing::debug!(answerer = %self.name, question, "no rule matches; declining");
            return next.run().await;
        }
        tracing::debug!(answerer = %self.name, answers = items.len(), "scripted answer");
        Ok(Answered {
            answers: AnswerBatch { answers: items },
            provenance: Provenance::rule(self.name.clone()),
        })
    }
}
