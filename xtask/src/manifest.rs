//! The manifest of tool crates, the completeness exemptions and the description ceilings: the
//! three lists a maintainer edits when a tool crate is added.
//!
//! To add a tool crate: depend on it in `xtask/Cargo.toml`, write a harvest function that builds
//! its definitions through its public API (as a host would) and reads its catalog metadata, and
//! add a [`ToolCrate`] entry. The completeness guard fails until you do.

use tool_ask_user::{AskUserMode, LateAnswerRoute, ToolCatalog, ToolOutcome};
use user_questions::{AnswerBatch, AnswerItem, CallId, Question, QuestionOption};

use crate::guards::{Ceiling, Exemption};
use crate::model::{CrateHarvest, Definition, ErrorCodeDoc, Sample, ToolCrate};
use crate::tokens::TokenBudget;

/// The tool crates, in catalog order.
pub const MANIFEST: &[ToolCrate] = &[
    ToolCrate {
        crate_name: "tool-ask-user",
        harvest: tool_ask_user,
    },
    ToolCrate {
        crate_name: "ask-user-mcp",
        harvest: ask_user_mcp,
    },
];

/// Crates that carry a tool marker (see [`crate::workspace`]) without registering model-facing
/// tools. None today.
pub const EXEMPTIONS: &[Exemption] = &[];

/// Registered exceptions to the description budget. None today, and `ask_user_question` must
/// never have one (SPEC §10): every description character is paid on every request, so put
/// detail into property descriptions instead.
pub const CEILINGS: &[Ceiling] = &[];

/// Registered token budgets: each holds a definition to what it costs in every request where the
/// tool is visible (`o200k_base` tokens of name, description and parameters as compact JSON).
/// They are 0.8× the reference's definitions (255 and 314 tokens); lowering one is always fine,
/// raising one needs a reason in the commit. The timed definition worded for MCP has the timed
/// budget: it says where a late answer comes from in other words, not in more of them.
pub const TOKEN_BUDGETS: &[TokenBudget] = &[
    TokenBudget {
        key: "ask_user_question legacy",
        tokens: 204,
    },
    TokenBudget {
        key: "ask_user_question timed",
        tokens: 251,
    },
    TokenBudget {
        key: "ask_user_question timed-mcp",
        tokens: 251,
    },
    // The reference has no such tool; its late answers arrive as user messages. This keeps the
    // companion well under the timed definition, its optional callId (every late answer waiting)
    // included.
    TokenBudget {
        key: "ask_user_question_answer default",
        tokens: 80,
    },
];

/// The budget of the companion's "nothing is waiting" text with one pending call named: a short
/// sentence and a call id, well under a pending result.
const NOTHING_WAITING_BUDGET: usize = 40;

/// A realistic call id of the reference's provider (34 characters), for the samples.
pub const SAMPLE_CALL_ID: &str = "call_00_ET_sBOnFnMNrptvzTOpSwBg669";

fn tool_ask_user() -> CrateHarvest {
    from_tool_ask_user_catalog(&tool_ask_user::CATALOG)
}

/// Harvests a `tool-ask-user` style catalog: each variant's definition is built with
/// [`tool_ask_user::CatalogVariant::definition`], the function a host uses.
fn from_tool_ask_user_catalog(catalog: &ToolCatalog) -> CrateHarvest {
    let definitions = catalog
        .variants
        .iter()
        .map(|variant| {
            let built = variant
                .definition()
                .map_err(|error| format!("{} [{}]: {error}", catalog.tool_name, variant.id))?;
            if built.name != catalog.tool_name {
                return Err(format!(
                    "{} [{}]: the built definition is named `{}`",
                    catalog.tool_name, variant.id, built.name
                ));
            }
            Ok(Definition {
                name: built.name,
                variant_id: variant.id.to_owned(),
                variant_label: variant.label.to_owned(),
                description: built.description,
                parameters: built.parameters,
                source_path: variant.source_path.to_owned(),
                requires: strings(variant.requires),
                writes: strings(variant.writes),
                error_codes: variant
                    .error_codes
                    .iter()
                    .map(|code| ErrorCodeDoc {
                        code: code.as_str().to_owned(),
                        meaning: code.meaning().to_owned(),
                    })
                    .collect(),
                samples: if variant.config.mode == AskUserMode::Timed {
                    timed_samples(variant.config.late_answers)
                } else {
                    Vec::new()
                },
                cost: None,
            })
        })
        .collect();
    CrateHarvest {
        crate_name: catalog.crate_name.to_owned(),
        note: catalog.note.to_owned(),
        definitions,
    }
}

/// Harvests the MCP server's companion tool from the definition `tools/list` is built from.
fn ask_user_mcp() -> CrateHarvest {
    let catalog = &ask_user_mcp::CATALOG;
    let built = ask_user_mcp::companion::answer_tool_definition();
    let field = |key: &str| built.get(key).cloned().unwrap_or_default();
    let text = |key: &str| field(key).as_str().unwrap_or_default().to_owned();
    let call_id = CallId::from(SAMPLE_CALL_ID);
    let definition = Definition {
        name: text("name"),
        variant_id: catalog.variant_id.to_owned(),
        variant_label: catalog.variant_label.to_owned(),
        description: text("description"),
        parameters: field("parameters"),
        source_path: catalog.source_path.to_owned(),
        requires: strings(catalog.requires),
        writes: strings(catalog.writes),
        // Its errors are uncoded `Error: …` texts: a malformed callId, a call no session knows.
        error_codes: Vec::new(),
        samples: vec![
            Sample {
                label: "still pending (34-character call id)".to_owned(),
                text: ToolOutcome::pending_via(&call_id, LateAnswerRoute::CompanionTool).text,
                budget: None,
            },
            Sample {
                label: "nothing waiting, without callId (one call pending)".to_owned(),
                text: ask_user_mcp::companion::nothing_waiting(&[SAMPLE_CALL_ID]),
                budget: Some(NOTHING_WAITING_BUDGET),
            },
        ],
        cost: None,
    };
    CrateHarvest {
        crate_name: catalog.crate_name.to_owned(),
        note: catalog.note.to_owned(),
        definitions: vec![Ok(definition)],
    }
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|&item| item.to_owned()).collect()
}

/// What a timed call leaves in the model's context besides the definition: the pending result
/// (with [`SAMPLE_CALL_ID`], its notice worded for `route`) and a typical late reply (two
/// questions, one chosen option and one multi-select answer), both built by the crates that
/// produce them.
fn timed_samples(route: LateAnswerRoute) -> Vec<Sample> {
    let call_id = CallId::from(SAMPLE_CALL_ID);
    let questions = [
        Question::new("db", "Which database should the service use?")
            .with_header("Database")
            .with_options([
                QuestionOption::new("PostgreSQL (Recommended)"),
                QuestionOption::new("SQLite"),
            ]),
        Question::new("checks", "Which checks should run on every pull request?")
            .with_header("CI")
            .with_options([
                QuestionOption::new("Unit tests"),
                QuestionOption::new("Lint"),
            ])
            .with_multi_select(true),
    ];
    let answers = AnswerBatch::new([
        AnswerItem::selected("db", ["PostgreSQL (Recommended)"]),
        AnswerItem::selected("checks", ["Unit tests", "Lint"]),
    ]);
    vec![
        Sample {
            label: "pending result (34-character call id)".to_owned(),
            text: ToolOutcome::pending_via(&call_id, route).text,
            // 0.8x the reference's 86 tokens, over MCP too: its notice replaces the user-message
            // one, it adds no second text block.
            budget: Some(69),
        },
        Sample {
            label: "late reply (two questions answered)".to_owned(),
            text: pending_answer::reply_text(&call_id, &questions, &answers),
            budget: None,
        },
    ]
}
