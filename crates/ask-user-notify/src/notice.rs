//! One notification, as every backend receives it, and its webhook payload.

use serde::Serialize;
use serde_json::{Value, json};
use user_questions::Question;

/// What a notification says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NoticeKind {
    /// Nobody claimed or answered the question within `notify_after`.
    Waiting,
    /// The window closed: the question is pending and can be answered any time.
    Pending,
    /// Resolved: answered (`by` is the provenance's answerer).
    Answered {
        /// Who answered.
        by: String,
    },
    /// Resolved: cancelled (the error code, when there is one).
    Cancelled {
        /// The code.
        code: Option<String>,
    },
    /// An agent waits for its person at its own terminal, where no card can answer it (Claude
    /// Code idle at its prompt, Gemini CLI's confirmation): `text` says what it waits for.
    Attention {
        /// The agent's name for a person (`Claude Code`, `Gemini CLI`).
        agent: String,
        /// What it waits for.
        text: String,
    },
}

impl NoticeKind {
    /// The webhook event type: `question.waiting`, `question.pending`, `question.answered`,
    /// `question.cancelled`, `agent.attention`.
    pub fn event_type(&self) -> &'static str {
        match self {
            Self::Attention { .. } => "agent.attention",
            Self::Waiting => "question.waiting",
            Self::Pending => "question.pending",
            Self::Answered { .. } => "question.answered",
            Self::Cancelled { .. } => "question.cancelled",
        }
    }
}

/// A question in a notification: its id, header and option labels; its prose only when the
/// configuration includes text.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NoticeQuestion {
    /// The question id.
    pub id: String,
    /// The header.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub header: Option<String>,
    /// The option labels (empty when only a count is known).
    pub options: Vec<String>,
    /// How many options there are.
    pub option_count: usize,
    /// Whether several options may be chosen (`None` when only a summary is known).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub multi_select: Option<bool>,
    /// The question text, with `text` (`include_text`) only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub question: Option<String>,
    /// The supporting text, with `text` (`include_text`) only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

impl NoticeQuestion {
    pub(crate) fn from_summary(id: &str, header: Option<&str>, options: usize) -> Self {
        Self {
            id: id.to_owned(),
            header: header.map(str::to_owned),
            options: Vec::new(),
            option_count: options,
            multi_select: None,
            question: None,
            detail: None,
        }
    }

    pub(crate) fn from_question(question: &Question, include_text: bool) -> Self {
        Self {
            id: question.id.clone(),
            header: question.header.clone(),
            options: question.options().iter().map(|o| o.label.clone()).collect(),
            option_count: question.options().len(),
            multi_select: Some(question.is_multi_select()),
            question: include_text.then(|| question.question.clone()),
            detail: if include_text {
                question.detail.clone()
            } else {
                None
            },
        }
    }
}

/// An answer button: pressing it sends `body` with `POST` to `url` and answers the call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Button {
    /// The option label shown on the button.
    pub label: String,
    /// The one-time URL.
    pub url: String,
    /// The JSON body to send.
    pub body: String,
}

/// One notification.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Notice {
    /// Its id (`msg_…`): the `webhook-id` of every attempt to deliver it.
    pub id: String,
    /// What it says.
    pub kind: NoticeKind,
    /// The session id.
    pub session: String,
    /// The call id.
    pub call_id: String,
    /// When it was made, Unix milliseconds.
    pub at_ms: i64,
    /// The questions.
    pub questions: Vec<NoticeQuestion>,
    /// The web card's URL, when a web surface shows it, without the page's token (what webhooks
    /// get).
    pub url: Option<String>,
    /// The page's URL with its token (the page's capability, as the page's own address carries
    /// it), for a person's tap on a phone's notification (ntfy's `click`); never in a webhook.
    pub open_url: Option<String>,
    /// Answer buttons, when the call's first question is single-select with at most three
    /// options and a web surface takes one-time answers.
    pub buttons: Vec<Button>,
}

impl Notice {
    /// The webhook payload: `{"type","timestamp","data":{…}}` (the Standard Webhooks shape).
    /// Buttons are not in it: their URLs are capabilities for the person's own device.
    pub fn payload(&self) -> Value {
        let mut data = json!({
            "session": self.session,
            "callId": self.call_id,
            "questions": self.questions,
        });
        if let Some(url) = &self.url {
            data["url"] = json!(url);
        }
        match &self.kind {
            NoticeKind::Answered { by } => data["answeredBy"] = json!(by),
            NoticeKind::Cancelled { code } => data["code"] = json!(code),
            NoticeKind::Attention { agent, text } => {
                data["agent"] = json!(agent);
                data["message"] = json!(text);
            }
            NoticeKind::Waiting | NoticeKind::Pending => {}
        }
        json!({
            "type": self.kind.event_type(),
            "timestamp": user_questions::time::rfc3339(self.at_ms),
            "data": data,
        })
    }

    /// A short title for a push notification.
    pub fn title(&self) -> String {
        let header = self
            .questions
            .first()
            .and_then(|q| q.header.clone())
            .unwrap_or_else(|| "ask-user".to_owned());
        match &self.kind {
            NoticeKind::Attention { agent, .. } => format!("{agent} is waiting for you"),
            NoticeKind::Waiting => format!("{header}: your agent is waiting for an answer"),
            NoticeKind::Pending => format!("{header}: answer any time"),
            NoticeKind::Answered { .. } => format!("{header}: answered"),
            NoticeKind::Cancelled { .. } => format!("{header}: closed"),
        }
    }

    /// The body of a push notification: the question text when included, else a pointer to
    /// the page; what a button press does when there are buttons.
    pub fn message(&self) -> String {
        if let NoticeKind::Attention { text, .. } = &self.kind {
            return text.clone();
        }
        let mut lines: Vec<String> = self
            .questions
            .iter()
            .filter_map(|q| q.question.clone())
            .collect();
        if lines.is_empty() {
            lines.push(match self.questions.len() {
                1 => "A question is waiting.".to_owned(),
                n => format!("{n} questions are waiting."),
            });
        }
        if let NoticeKind::Pending = self.kind {
            lines.push("The agent went on with other work; your answer still reaches it.".into());
        }
        if !self.buttons.is_empty() && self.questions.len() > 1 {
            lines.push(format!(
                "A button answers \"{}\" and skips the other {}; open the page to answer all.",
                self.questions[0].id,
                self.questions.len() - 1
            ));
        }
        lines.join("\n")
    }
}

/// A fresh notification id, `msg_` and 24 random hex digits (the operating system's random
/// source; a counter-based id if it fails, still unique in the process).
pub(crate) fn new_id() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static FALLBACK: AtomicU64 = AtomicU64::new(0);
    let mut bytes = [0u8; 12];
    if getrandom::fill(&mut bytes).is_ok() {
        use std::fmt::Write as _;
        bytes.iter().fold(String::from("msg_"), |mut id, b| {
            let _ = write!(id, "{b:02x}");
            id
        })
    } else {
        format!("msg_local{}", FALLBACK.fetch_add(1, Ordering::Relaxed))
    }
}
