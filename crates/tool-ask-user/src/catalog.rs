//! Catalog metadata for `cargo xtask catalog` (SPEC §10), as plain public data, so the catalog is
//! generated from what this crate registers and cannot drift from it.
//!
//! The xtask builds each variant's definition with [`CatalogVariant::definition`] (the same
//! function a host uses) and reads name, description and parameters from it; everything else it
//! needs is here.

use user_questions::{ErrorCode, TOOL_NAME};

use crate::config::{AskUserConfig, ConfigError, LateAnswerRoute};
use crate::definition::ToolDefinition;
use crate::tool::definition;

/// What the catalog shows for this crate.
#[derive(Clone, Copy, Debug)]
pub struct ToolCatalog {
    /// The crate name, also the catalog anchor.
    pub crate_name: &'static str,
    /// The model-visible tool name.
    pub tool_name: &'static str,
    /// The catalogued definitions: default variant first.
    pub variants: &'static [CatalogVariant],
    /// The crate's note paragraph (gist G22).
    pub note: &'static str,
}

/// One catalogued definition of the tool.
#[derive(Clone, Copy, Debug)]
pub struct CatalogVariant {
    /// The variant id (`legacy`, `timed`, `timed-mcp`): keys description ceilings and token
    /// budgets, appears in gate errors.
    pub id: &'static str,
    /// The variant label shown in headings and the tool map.
    pub label: &'static str,
    /// The configuration the definition is built with.
    pub config: AskUserConfig,
    /// Repository-relative path of the source file that defines this variant.
    pub source_path: &'static str,
    /// What the variant needs from the host.
    pub requires: &'static [&'static str],
    /// What the variant writes to, or changes in, the session log and its projections.
    pub writes: &'static [&'static str],
    /// The error codes the variant's results can carry; [`ErrorCode::meaning`] gives each one's
    /// one-line meaning. Answerers may add codes of their own, which pass through unchanged.
    pub error_codes: &'static [ErrorCode],
}

impl CatalogVariant {
    /// Builds the definition exactly as a host would.
    pub fn definition(&self) -> Result<ToolDefinition, ConfigError> {
        definition(&self.config)
    }
}

/// Error codes both variants can return.
const LEGACY_CODES: &[ErrorCode] = &[
    ErrorCode::InvalidArgs,
    ErrorCode::EmptyQuestions,
    ErrorCode::BadQuestions,
    ErrorCode::CallerNotLive,
    ErrorCode::DelegatedCaller,
    ErrorCode::NoProvider,
    ErrorCode::AskCancelled,
    ErrorCode::AskTimedOut,
    ErrorCode::AskAborted,
    ErrorCode::BadAnswer,
    ErrorCode::Aborted,
];

/// The timed variant adds `DUPLICATE_WAIT` (two foreground waits under one call id).
const TIMED_CODES: &[ErrorCode] = &[
    ErrorCode::InvalidArgs,
    ErrorCode::EmptyQuestions,
    ErrorCode::BadQuestions,
    ErrorCode::CallerNotLive,
    ErrorCode::DelegatedCaller,
    ErrorCode::NoProvider,
    ErrorCode::AskCancelled,
    ErrorCode::AskTimedOut,
    ErrorCode::AskAborted,
    ErrorCode::BadAnswer,
    ErrorCode::Aborted,
    ErrorCode::DuplicateWait,
];

/// The catalog metadata of `tool-ask-user`: legacy (default) first, then timed (opt-in) built with
/// `mode: timed, timeout: 120`, then the same timed definition worded for a host whose late answers
/// are fetched with the companion tool (`late_answers: companion_tool`, what `ask-user mcp --mode
/// timed` registers).
pub const CATALOG: ToolCatalog = ToolCatalog {
    crate_name: "tool-ask-user",
    tool_name: TOOL_NAME,
    variants: &[
        CatalogVariant {
            id: "legacy",
            label: "legacy (default)",
            config: AskUserConfig::LEGACY,
            source_path: "crates/tool-ask-user/src/legacy.rs",
            requires: &["UserQuestions", "Answerer"],
            writes: &["tool/result", "tool/result.meta.provenance"],
            error_codes: LEGACY_CODES,
        },
        CatalogVariant {
            id: "timed",
            label: "timed (opt-in)",
            config: AskUserConfig::timed_secs(120),
            source_path: "crates/tool-ask-user/src/timed.rs",
            requires: &["UserQuestions", "Answerer", "AgentRegistry", "LateAnswers"],
            writes: &[
                "tool/result",
                "tool/result.meta.provenance",
                "userQuestions",
            ],
            error_codes: TIMED_CODES,
        },
        CatalogVariant {
            id: "timed-mcp",
            label: "timed over MCP (opt-in)",
            config: AskUserConfig::timed_secs(120)
                .with_late_answers(LateAnswerRoute::CompanionTool),
            source_path: "crates/tool-ask-user/src/timed.rs",
            requires: &[
                "UserQuestions",
                "Answerer",
                "AgentRegistry",
                "LateAnswers",
                "ask_user_question_answer",
            ],
            writes: &[
                "tool/result",
                "tool/result.meta.provenance",
                "userQuestions",
            ],
            error_codes: TIMED_CODES,
        },
    ],
    note: "The legacy tool holds the call until an answerer returns the person's answer. The timed variant returns pending when its window closes and takes late answers as user messages; over MCP, where no message reaches the conversation, its texts tell the model to fetch them with ask_user_question_answer.",
};
