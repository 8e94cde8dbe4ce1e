//! The tool object a host registers and calls, [`AskUserTool`], and [`definition`] (SPEC §5.1,
//! §5.3): the one place that chooses between the modes.
//!
//! Everything else sits below it: the mode modules (`legacy.rs`, `timed.rs`) build their own
//! definition and run their own execution, on leaf modules that import no mode module
//! (`definition.rs`, `context.rs`, `outcome.rs`, `pending.rs`, `args.rs`, `schema.rs`,
//! `config.rs`).

use std::fmt;
use std::sync::Arc;

use tracing::Instrument;
use user_questions::{TOOL_NAME, UserQuestionError, UserQuestions};

use crate::config::{AskUserConfig, AskUserMode, ConfigError, LateAnswerRoute};
use crate::context::ToolContext;
use crate::definition::ToolDefinition;
use crate::outcome::ToolOutcome;
use crate::registry::{RegistryError, ToolGuard, ToolRegistry};
use crate::{legacy, timed};

/// The definition for a configuration: the legacy one, or the timed one whose `timeout`
/// description states the configured default and the way its late answers take
/// ([`AskUserConfig::late_answers`]: a user message, or the companion tool over MCP). Fails when the timeout is out of range (in both
/// modes, SPEC §2.1). Needs no seam, so hosts and the catalog generator can call it.
pub fn definition(config: &AskUserConfig) -> Result<ToolDefinition, ConfigError> {
    config.validate()?;
    Ok(match config.mode {
        AskUserMode::Legacy => legacy::definition(),
        AskUserMode::Timed => timed::definition(config.timeout, config.late_answers),
    })
}

/// The `ask_user_question` tool on top of a seam, in the mode its configuration chooses. Cheap to
/// clone.
#[derive(Clone)]
pub struct AskUserTool {
    seam: UserQuestions,
    config: AskUserConfig,
    definition: Arc<ToolDefinition>,
}

impl AskUserTool {
    /// Builds the tool; `None` means the default configuration (legacy). Fails when the timeout
    /// is out of range, in either mode (SPEC §2.1).
    pub fn new(seam: UserQuestions, config: Option<AskUserConfig>) -> Result<Self, ConfigError> {
        let config = config.unwrap_or_default();
        let definition = definition(&config)?;
        Ok(Self {
            seam,
            config,
            definition: Arc::new(definition),
        })
    }

    /// The one definition this tool offers.
    pub fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    /// The configuration in force.
    pub fn config(&self) -> &AskUserConfig {
        &self.config
    }

    /// Legacy or timed.
    pub fn mode(&self) -> AskUserMode {
        self.config.mode
    }

    /// Whether a call of this tool can end pending and take a late answer (the timed mode): a
    /// host offers the way back to late answers (an MCP server's companion tool, say) only then.
    /// The one place that decides it, so no host compares modes itself.
    pub fn takes_late_answers(&self) -> bool {
        match self.config.mode {
            AskUserMode::Legacy => false,
            AskUserMode::Timed => true,
        }
    }

    /// How a late answer to this tool's calls reaches the model: the route its texts state.
    pub fn late_answers(&self) -> LateAnswerRoute {
        self.config.late_answers
    }

    /// The pending result of call `call_id` as this tool renders it: its notice states this
    /// tool's route ([`AskUserTool::late_answers`]). A host that repeats a pending result (an MCP
    /// server's companion tool, asked before the person answered) shows the model these bytes.
    pub fn pending_outcome(&self, call_id: &user_questions::CallId) -> ToolOutcome {
        ToolOutcome::pending_via(call_id, self.config.late_answers)
    }

    /// The questions a call with the raw `arguments` would put to the answerers, as they would
    /// see them: checked as [`execute`](Self::execute) checks them (arguments, limits, intents)
    /// and with headers cut to the seam's limit. Nothing is asked and nothing is logged: a host
    /// that must show the questions before it runs the call (a form sent in one round and answered
    /// in the next) uses it. The error is the one `execute` would report for these arguments
    /// (its result: [`ToolOutcome::typed_error`]).
    pub fn questions(
        &self,
        arguments: &str,
    ) -> Result<Vec<user_questions::Question>, UserQuestionError> {
        let questions = match self.config.mode {
            AskUserMode::Legacy => legacy::questions(&self.seam, &self.definition, arguments)?,
            AskUserMode::Timed => timed::questions(&self.seam, &self.definition, arguments)?,
        };
        if questions.is_empty() {
            return Err(UserQuestionError::empty_questions());
        }
        let limits = self.seam.limits();
        user_questions::check_intents(&questions)?;
        user_questions::check_question_limits(&questions, limits)?;
        Ok(user_questions::truncate_headers(&questions, limits).into_owned())
    }

    /// Registers this tool's definition (exactly one) on `registry`; dropping the guard
    /// unregisters it.
    pub fn register(&self, registry: &ToolRegistry) -> Result<ToolGuard, RegistryError> {
        registry.register(self.definition().clone())
    }

    /// Executes one call with the raw arguments text the model sent (SPEC §5.3).
    ///
    /// Never panics and never fails: every problem is an error outcome. Runs inside a `tracing`
    /// span `tool_call` with the fields `tool`, `call_id` and `mode`, and `answerer` once an
    /// answer has come back.
    ///
    /// Cancel safety: cancelling `ctx.cancel` ends a waiting call promptly with `ASK_ABORTED`.
    /// Dropping the future drops the seam request (its answerers' futures, and a timed wait).
    /// The host applies E-ABORT afterwards with [`ToolOutcome::abort_if_cancelled`].
    pub async fn execute(&self, arguments: &str, ctx: ToolContext) -> ToolOutcome {
        let mode = self.config.mode;
        let span = tracing::info_span!(
            "tool_call",
            tool = TOOL_NAME,
            call_id = %ctx.call_id,
            mode = mode.as_str(),
            answerer = tracing::field::Empty,
        );
        async move {
            let outcome = match mode {
                AskUserMode::Legacy => {
                    legacy::execute(&self.seam, &self.definition, arguments, ctx).await
                }
                AskUserMode::Timed => {
                    timed::execute(
                        &self.seam,
                        &self.definition,
                        self.config.timeout,
                        self.config.late_answers,
                        arguments,
                        ctx,
                    )
                    .await
                }
            };
            if let Some(answerer) = outcome
                .meta
                .as_ref()
                .and_then(|meta| meta.pointer("/provenance/answerer"))
                .and_then(serde_json::Value::as_str)
            {
                tracing::Span::current().record("answerer", answerer);
            }
            tracing::debug!(
                is_error = outcome.is_error,
                code = outcome.error.as_ref().map(|e| e.code.as_str()),
                "tool call finished"
            );
            outcome
        }
        .instrument(span)
        .await
    }
}

impl fmt::Debug for AskUserTool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AskUserTool")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}
