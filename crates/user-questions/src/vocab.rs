//! The question and answer vocabulary (SPEC §1), with the exact wire names, key order and
//! omission rules: field order is key order, and an unset optional key is absent, never `null`.

use serde::ser::SerializeMap;
use serde::{Deserialize, Serialize, Serializer};

use crate::ids::CallId;

/// One choice offered to the person (SPEC §1.1).
///
/// A recommendation is expressed only by putting the option first and appending ` (Recommended)`
/// to its label; nothing parses or strips that suffix.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuestionOption {
    /// Text shown to the person, and the value returned in [`AnswerItem::selected`].
    pub label: String,
    /// One-line help for capable interfaces.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

impl QuestionOption {
    /// An option with a label and no description.
    pub fn new(label: impl Into<String>) -> Self {
        Self {
            label: label.into(),
            description: None,
        }
    }

    /// Adds a description.
    #[must_use]
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }
}

/// A presentation intent (SPEC §1.2). It changes how a question is shown, never how it is answered.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum QuestionIntent {
    /// A plan review: `approve` names the option label that approves; every other option declines.
    PlanReview {
        /// The label of the approving option.
        approve: String,
        /// The logged tool call whose arguments contain the plan under review.
        #[serde(rename = "callId", default, skip_serializing_if = "Option::is_none")]
        call_id: Option<CallId>,
    },
}

impl QuestionIntent {
    /// The wire name of the intent (`plan-review`), used in error messages.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::PlanReview { .. } => "plan-review",
        }
    }
}

/// One question in the service vocabulary (SPEC §1.3).
///
/// Key order on the wire: `id, question, detail, header, options, multiSelect, intent`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Question {
    /// Caller-stable id, echoed in the answer.
    pub id: String,
    /// The question text.
    pub question: String,
    /// Supporting text (markdown for a plan review).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// Short heading.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub header: Option<String>,
    /// Choices; absent and `[]` are distinct values.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub options: Option<Vec<QuestionOption>>,
    /// Whether several options may be chosen; absent means single-select, an explicit `false` is
    /// kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub multi_select: Option<bool>,
    /// Presentation intent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intent: Option<QuestionIntent>,
}

impl Question {
    /// A bare question with an id and a text.
    pub fn new(id: impl Into<String>, question: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            question: question.into(),
            detail: None,
            header: None,
            options: None,
            multi_select: None,
            intent: None,
        }
    }

    /// Sets the options.
    #[must_use]
    pub fn with_options(mut self, options: impl IntoIterator<Item = QuestionOption>) -> Self {
        self.options = Some(options.into_iter().collect());
        self
    }

    /// Sets the header.
    #[must_use]
    pub fn with_header(mut self, header: impl Into<String>) -> Self {
        self.header = Some(header.into());
        self
    }

    /// Sets `multiSelect`.
    #[must_use]
    pub fn with_multi_select(mut self, multi_select: bool) -> Self {
        self.multi_select = Some(multi_select);
        self
    }

    /// Sets the detail text.
    #[must_use]
    pub fn with_detail(mut self, detail: impl Into<String>) -> Self {
        self.detail = Some(detail.into());
        self
    }

    /// Sets the intent.
    #[must_use]
    pub fn with_intent(mut self, intent: QuestionIntent) -> Self {
        self.intent = Some(intent);
        self
    }

    /// Whether more than one option may be selected (`multiSelect` absent means no).
    pub fn is_multi_select(&self) -> bool {
        self.multi_select == Some(true)
    }

    /// The options, or an empty slice when there are none.
    pub fn options(&self) -> &[QuestionOption] {
        self.options.as_deref().unwrap_or_default()
    }
}

/// One answered question (SPEC §1.5). Key order `id, selected, custom`; `custom` is omitted when
/// unset.
///
/// A skipped question is `{"id":…,"selected":[]}` with no `custom`: a completed item, not pending.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AnswerItem {
    /// The question id.
    pub id: String,
    /// The chosen option labels.
    pub selected: Vec<String>,
    /// Free text: supplements `selected` for a multi-select question, overrides it for a
    /// single-select one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub custom: Option<String>,
}

impl AnswerItem {
    /// An item selecting the given labels.
    pub fn selected<I, S>(id: impl Into<String>, labels: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Self {
            id: id.into(),
            selected: labels.into_iter().map(Into::into).collect(),
            custom: None,
        }
    }

    /// An item carrying only free text.
    pub fn custom(id: impl Into<String>, text: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            selected: Vec::new(),
            custom: Some(text.into()),
        }
    }

    /// An explicitly skipped question.
    pub fn skipped(id: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            selected: Vec::new(),
            custom: None,
        }
    }

    /// Adds free text to the item.
    #[must_use]
    pub fn with_custom(mut self, text: impl Into<String>) -> Self {
        self.custom = Some(text.into());
        self
    }
}

/// The answers to one call: `{"answers":[…]}` (SPEC §1.5).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AnswerBatch {
    /// One item per question, in the answerer's order.
    pub answers: Vec<AnswerItem>,
}

impl AnswerBatch {
    /// A batch of the given items.
    pub fn new(answers: impl IntoIterator<Item = AnswerItem>) -> Self {
        Self {
            answers: answers.into_iter().collect(),
        }
    }
}

/// Who answered: a person or a rule (SPEC §9.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AnsweredBy {
    /// A person answered through an interface.
    Human,
    /// A rule (scripted answerer, policy) answered on the person's behalf.
    Rule,
}

/// Which answerer produced an answer, and whether a person or a rule did (SPEC §9.1).
///
/// Never part of model-facing JSON: it travels in tool-result metadata, the late reply's source
/// and the projection's settled entries.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Provenance {
    /// The registration name of the answerer (never empty once the seam has stamped it).
    pub answerer: String,
    /// Person or rule.
    pub answered_by: AnsweredBy,
}

impl Provenance {
    /// Provenance for a person answering through the named surface.
    pub fn human(answerer: impl Into<String>) -> Self {
        Self {
            answerer: answerer.into(),
            answered_by: AnsweredBy::Human,
        }
    }

    /// Provenance for a rule answering under the given name.
    pub fn rule(answerer: impl Into<String>) -> Self {
        Self {
            answerer: answerer.into(),
            answered_by: AnsweredBy::Rule,
        }
    }

    /// Where the answer came from, in words for a person, to follow "answered": "on the page",
    /// "with a notification's answer button", "in the claude-code form", "from the shell", "at
    /// the terminal" for the surfaces' default names ([`surface_names`]), "by NAME" for any
    /// other, and "by the rule NAME" for a rule. The name comes from a registration or a log:
    /// show the text through the sanitiser.
    pub fn described(&self) -> String {
        use surface_names::{BUTTON_SUFFIX, FORM_PREFIX, SHELL, TERMINAL, WEB};
        let name = self.answerer.as_str();
        if self.answered_by == AnsweredBy::Rule {
            return format!("by the rule {name:?}");
        }
        match name {
            WEB => "on the page".to_owned(),
            TERMINAL => "at the terminal".to_owned(),
            SHELL => "from the shell".to_owned(),
            _ if name.ends_with(BUTTON_SUFFIX) => "with a notification's answer button".to_owned(),
            _ => match name.strip_prefix(FORM_PREFIX) {
                Some(client) => format!("in the {client} form"),
                None => format!("by {name:?}"),
            },
        }
    }
}

/// The registration (provenance) names the surfaces of this workspace use by default, which
/// [`Provenance::described`] puts in words.
pub mod surface_names {
    /// The web page (`ask-user-web`).
    pub const WEB: &str = "web";
    /// Appended to the web surface's name for an answer given with a notification's one-time
    /// answer button (`web-button`).
    pub const BUTTON_SUFFIX: &str = "-button";
    /// The terminal card (`ask-user-terminal`).
    pub const TERMINAL: &str = "terminal";
    /// `ask-user answer` in a shell.
    pub const SHELL: &str = "ask-user-cli";
    /// Before the client's name: an MCP client's form (`mcp-elicitation:claude-code`).
    pub const FORM_PREFIX: &str = "mcp-elicitation:";
}

/// An accepted answer with its provenance (SPEC §1.6).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Answered {
    /// The answer batch.
    pub answers: AnswerBatch,
    /// Who answered. Build values with [`Answered::human`] or [`Answered::rule`]: they leave the
    /// answerer name empty, and the seam stamps the registration name of the answerer that returned
    /// the value.
    pub provenance: Provenance,
}

impl Answered {
    /// An answer a person gave.
    pub fn human(answers: AnswerBatch) -> Self {
        Self {
            answers,
            provenance: Provenance::human(String::new()),
        }
    }

    /// An answer a rule gave.
    pub fn rule(answers: AnswerBatch) -> Self {
        Self {
            answers,
            provenance: Provenance::rule(String::new()),
        }
    }
}

/// The outcome of a timed ask (SPEC §1.6).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TimedOutcome {
    /// Answered within the foreground window.
    Answered(Answered),
    /// The window closed without an answer; the question stays answerable as a late answer.
    Pending {
        /// The call that went pending.
        call_id: CallId,
    },
}

/// How a request is keyed (SPEC §1.4). Absent means a blocking request with no card key.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum WaitKey {
    /// An indefinite wait keyed by the tool call (timed-mode tool with `timeout: -1`).
    Indefinite {
        /// The tool call.
        call_id: CallId,
    },
    /// A foreground timed wait. Only [`UserQuestions::ask_timed`](crate::UserQuestions::ask_timed)
    /// builds it; answerers must claim the wait before starting a countdown of their own.
    #[non_exhaustive]
    Timed {
        /// The tool call.
        call_id: CallId,
    },
}

impl WaitKey {
    /// The keyed call.
    pub fn call_id(&self) -> &CallId {
        match self {
            Self::Indefinite { call_id } | Self::Timed { call_id } => call_id,
        }
    }

    /// Whether this is a foreground timed wait.
    pub fn is_timed(&self) -> bool {
        matches!(self, Self::Timed { .. })
    }

    pub(crate) fn timed(call_id: CallId) -> Self {
        Self::Timed { call_id }
    }
}

/// Transport form: `{"callId":"…"}` and `{"callId":"…","timed":true}`.
impl Serialize for WaitKey {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let timed = self.is_timed();
        let mut map = serializer.serialize_map(Some(if timed { 2 } else { 1 }))?;
        map.serialize_entry("callId", self.call_id())?;
        if timed {
            map.serialize_entry("timed", &true)?;
        }
        map.end()
    }
}
