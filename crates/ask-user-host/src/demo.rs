//! A scripted model (no LLM) that runs one realistic exchange through a [`Host`], the whole
//! path a person meets: it asks a two-question batch through the timed tool; answered in the
//! window, it decides; let pass, the result is `pending`, the model goes on with work that does
//! not depend on the answer, and a late answer (queued through the host's desk, the late-reply
//! facet) is admitted by a new turn as the follow-up user message, which settles the question.
//!
//! `ask-user demo` is this model with the terminal card, the page and notifications wired in;
//! `examples/scripted_model.rs` runs it headless with a scripted answerer. What happens is
//! reported through [`Shown`], for the caller to print.

use std::time::Duration;

use tool_ask_user::ToolOutcome;
use user_questions::{AnswerBatch, CallId, CancellationToken, ContentBlock, Question};

use crate::{Host, HostError, ModelInfo};

/// The demo's tool call id.
pub const DEMO_CALL_ID: &str = "call_demo_1";

/// The model's arguments: one single-select question with a recommended option, one
/// multi-select question.
pub const DEMO_ARGUMENTS: &str = r#"{"questions":[{"id":"db","header":"Database","question":"Which database should the new orders service use?","options":[{"label":"PostgreSQL (Recommended)","description":"Relational with strong consistency; the team already runs it in production."},{"label":"SQLite","description":"Embedded file database: simplest to operate, one writer at a time."},{"label":"DynamoDB","description":"Managed key-value store: scales without tuning, no joins."}]},{"id":"checks","header":"CI checks","question":"Which checks should run on every pull request?","multi_select":true,"options":[{"label":"Unit tests","description":"Fast: under a minute."},{"label":"Lint","description":"Formatting and static analysis."},{"label":"Integration tests","description":"Start a database container: about five minutes."},{"label":"Docs build","description":"Catches broken links in the handbook."}]}]}"#;

/// Work the scripted model does while the question is pending: none of it depends on the answer.
const INDEPENDENT_WORK: [&str; 3] = [
    "creating the service's workspace layout",
    "writing the README skeleton",
    "adding the HTTP health-check endpoint",
];

/// How long each piece of independent work takes.
pub const WORK_PACE: Duration = Duration::from_millis(1200);

/// Something the demo shows the person as it happens.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shown<'a> {
    /// What the model says (`model › …`).
    Model(&'a str),
    /// JSON the model or the tool passes, under its label: `model → ask_user_question `,
    /// `tool  → model `, `user  → model `, `view  › `.
    Json(&'static str, &'a str),
}

/// How a [`ScriptedModel::play`] ended.
#[derive(Clone, Debug, PartialEq)]
pub enum Played {
    /// The call ended without answers: an error result, or cancelled.
    Stopped,
    /// Answered in the window: the model decided.
    Answered,
    /// The call went pending with these questions and the model worked on; then, when the
    /// caller chose to `wait`, a late reply was admitted (`admitted`) or the wait was cancelled.
    Pending {
        /// The questions still waiting for an answer.
        questions: Vec<Question>,
        /// Whether the model waited for a late reply.
        waited: bool,
        /// Whether a late reply was admitted, which settled the question.
        admitted: bool,
    },
}

/// The scripted model over `host`: each method is one step of the exchange, recorded through
/// the host and shown through `show`. `cancel` ends the call and the waits (Ctrl-C).
pub struct ScriptedModel<'a> {
    host: &'a Host,
    cancel: CancellationToken,
    show: &'a (dyn Fn(Shown<'_>) + Send + Sync),
}

impl<'a> ScriptedModel<'a> {
    /// The model as a `request/header` records it.
    #[must_use]
    pub fn info() -> ModelInfo {
        ModelInfo::new("ask-user-demo", "scripted")
    }

    /// The model over `host`.
    pub fn new(
        host: &'a Host,
        cancel: CancellationToken,
        show: &'a (dyn Fn(Shown<'_>) + Send + Sync),
    ) -> Self {
        Self { host, cancel, show }
    }

    /// The whole exchange: [`open`](Self::open), `ready` (the caller's moment before the
    /// window starts), [`call`](Self::call); then [`decide_now`](Self::decide_now) when answered,
    /// [`stop`](Self::stop) when not, or for a pending call
    /// [`work_while_pending`](Self::work_while_pending) and, unless cancelled and when `wait`
    /// says so given the questions still waiting, [`admit_late_reply`](Self::admit_late_reply).
    ///
    /// # Errors
    ///
    /// The host's.
    pub async fn play(
        &self,
        ready: impl Future<Output = ()>,
        wait: impl FnOnce(&[Question]) -> bool,
    ) -> Result<Played, HostError> {
        self.open()?;
        ready.await;
        let outcome = self.call().await?;
        if self.cancel.is_cancelled() || outcome.is_error {
            self.stop()?;
            return Ok(Played::Stopped);
        }
        if let Some(batch) = outcome.answers() {
            self.decide_now(&batch)?;
            return Ok(Played::Answered);
        }
        self.work_while_pending().await?;
        let questions = (self.host.projection().active(&DEMO_CALL_ID.into()))
            .map(|a| a.questions.clone())
            .unwrap_or_default();
        let waited = !self.cancel.is_cancelled() && wait(&questions);
        let admitted = waited && self.admit_late_reply().await?;
        Ok(Played::Pending {
            questions,
            waited,
            admitted,
        })
    }

    /// Turn 1, step 1, before the call: the model says why it asks and what it calls with.
    ///
    /// # Errors
    ///
    /// The host's.
    pub fn open(&self) -> Result<(), HostError> {
        self.host.begin_turn()?;
        self.host.begin_step()?;
        self.host.log_request_header()?;
        self.say("I need two decisions from you before I scaffold the orders service.")?;
        (self.show)(Shown::Json("model → ask_user_question ", DEMO_ARGUMENTS));
        Ok(())
    }

    /// The call, in the window: its outcome as the model reads it. Ends the step.
    ///
    /// # Errors
    ///
    /// The host's.
    pub async fn call(&self) -> Result<ToolOutcome, HostError> {
        let call_id = CallId::from(DEMO_CALL_ID);
        let outcome = (self.host)
            .call_tool(&call_id, DEMO_ARGUMENTS, self.cancel.clone())
            .await?;
        (self.show)(Shown::Json("tool  → model ", &outcome.text));
        self.host.end_step()?;
        Ok(outcome)
    }

    /// Answered in the window: the model decides in a new step and the turn ends.
    ///
    /// # Errors
    ///
    /// The host's.
    pub fn decide_now(&self, batch: &AnswerBatch) -> Result<(), HostError> {
        self.host.begin_step()?;
        self.say(&decision(batch))?;
        self.host.end_turn("completed")
    }

    /// The call ended without answers (an error result, or Ctrl-C): the turn ends.
    ///
    /// # Errors
    ///
    /// The host's.
    pub fn stop(&self) -> Result<(), HostError> {
        self.host.end_turn(self.reason())
    }

    /// Pending: the model does the work that does not depend on the answer, then ends its turn.
    ///
    /// # Errors
    ///
    /// The host's.
    pub async fn work_while_pending(&self) -> Result<(), HostError> {
        self.host.begin_step()?;
        self.say(
            "No answer yet, and that is not a yes. I will do the work that does not depend on it.",
        )?;
        for work in INDEPENDENT_WORK {
            tokio::select! {
                () = self.cancel.cancelled() => break,
                () = tokio::time::sleep(WORK_PACE) => {}
            }
            self.host.assistant_text(&format!("Done: {work}."))?;
            (self.show)(Shown::Model(&format!("· {work}")));
        }
        self.host.end_turn(self.reason())
    }

    /// Waits for a late reply (until `cancel`) and admits it: `true` when one was admitted. A
    /// reply queued just before `cancel` is admitted rather than left.
    ///
    /// # Errors
    ///
    /// The host's.
    pub async fn admit_late_reply(&self) -> Result<bool, HostError> {
        tokio::select! {
            () = self.cancel.cancelled() => {
                if self.host.late().waiting().is_empty() {
                    return Ok(false);
                }
            }
            () = self.host.wait_for_input() => {}
        }
        // The turn claims the reply and its first step admits it; the projection settles it.
        let claimed = self.host.begin_turn()?;
        self.host.begin_step()?;
        for message in &claimed {
            if let Some(text) = message.content.iter().find_map(ContentBlock::as_text) {
                (self.show)(Shown::Json("user  → model ", text));
            }
        }
        let view = serde_json::to_string(self.host.projection().view()).unwrap_or_default();
        (self.show)(Shown::Json("view  › ", &view));
        let answers = (claimed.iter())
            .filter_map(pending_answer::read_reply)
            .find_map(|reply| reply.answers);
        match answers {
            Some(batch) => self.say(&decision(&batch))?,
            None => self.say("Thanks for the reply.")?,
        }
        self.host.end_turn("completed")?;
        Ok(true)
    }

    fn say(&self, text: &str) -> Result<(), HostError> {
        self.host.assistant_text(text)?;
        (self.show)(Shown::Model(text));
        Ok(())
    }

    fn reason(&self) -> &'static str {
        if self.cancel.is_cancelled() {
            "aborted"
        } else {
            "completed"
        }
    }
}

/// What the scripted model decides from the answers.
#[must_use]
pub fn decision(batch: &AnswerBatch) -> String {
    let pick = |id: &str| {
        let answer = batch.answers.iter().find(|a| a.id == id);
        answer.map_or_else(Vec::new, |a| {
            let mut parts = a.selected.clone();
            parts.extend(a.custom.clone());
            parts
        })
    };
    let (db, checks) = (pick("db"), pick("checks"));
    let db = if db.is_empty() {
        "no database choice (skipped), so I will leave storage behind an interface".to_owned()
    } else {
        db.join(", ")
    };
    let checks = if checks.is_empty() {
        "no required checks".to_owned()
    } else {
        checks.join(", ")
    };
    format!("Thanks. Going with {db}; every pull request will run: {checks}.")
}
