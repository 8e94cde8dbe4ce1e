//! What the catalog is made of: each tool crate's harvested definitions, in types of our own.
//!
//! Every tool crate publishes catalog metadata in its own types (for example
//! `tool_ask_user::CATALOG`). A manifest entry ([`ToolCrate`]) turns that metadata into a
//! [`CrateHarvest`], so the guards and the renderer work on one shape and can be tested with demo
//! tools that no crate registers.

use serde_json::Value;

/// One entry of the manifest of tool crates: the crate and how to harvest its definitions.
#[derive(Clone, Copy, Debug)]
pub struct ToolCrate {
    /// The workspace crate (package) name.
    pub crate_name: &'static str,
    /// Builds the crate's definitions through its public API, as a host would.
    pub harvest: fn() -> CrateHarvest,
}

/// What a harvest yields for one crate, before any guard has looked at it.
#[derive(Clone, Debug)]
pub struct CrateHarvest {
    /// The crate name as the crate's own catalog metadata states it; it must equal the manifest's.
    pub crate_name: String,
    /// The crate's note paragraph.
    pub note: String,
    /// One item per catalogued variant, default variant first. `Err` carries why that variant
    /// could not be built (for example a configuration the tool rejects); it names the variant.
    pub definitions: Vec<Result<Definition, String>>,
}

/// One catalogued definition: a tool in one variant.
#[derive(Clone, Debug, PartialEq)]
pub struct Definition {
    /// The model-visible tool name, read from the built definition.
    pub name: String,
    /// The variant id: keys description ceilings and appears in gate errors.
    pub variant_id: String,
    /// The variant label: appears in headings and in the tool map.
    pub variant_label: String,
    /// The model-facing description, read from the built definition.
    pub description: String,
    /// The model-facing parameters schema, read from the built definition.
    pub parameters: Value,
    /// Repository-relative path (with `/`) of the source file that defines the variant.
    pub source_path: String,
    /// What the variant needs from the host.
    pub requires: Vec<String>,
    /// What the variant writes to, or changes in, the session log and its projections.
    pub writes: Vec<String>,
    /// The error codes the variant's results can carry.
    pub error_codes: Vec<ErrorCodeDoc>,
    /// Texts the variant puts in the model's context besides its definition (a pending result, a
    /// late reply), each counted next to the definition.
    pub samples: Vec<Sample>,
    /// What the definition and its samples cost, measured by generation (`None` until then).
    pub cost: Option<Cost>,
}

/// A text a variant puts in the model's context, as the model reads it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sample {
    /// What it is, e.g. "pending result (34-character call id)".
    pub label: String,
    /// The exact text.
    pub text: String,
    /// The most tokens it may cost, when a budget is registered for it.
    pub budget: Option<usize>,
}

/// What a sample costs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SampleCost {
    /// The sample's label.
    pub label: String,
    /// Its `o200k_base` tokens.
    pub tokens: usize,
    /// Its UTF-8 bytes.
    pub bytes: usize,
    /// Its budget, when one is registered.
    pub budget: Option<usize>,
}

/// What a definition costs in the model's context (`o200k_base` tokens and UTF-8 bytes).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cost {
    /// Tokens of the compact JSON of the definition's name, description and parameters.
    pub tokens: usize,
    /// Bytes of the same text.
    pub bytes: usize,
    /// The token budget it is held to.
    pub budget: usize,
    /// Each sample's label, tokens, bytes and budget.
    pub samples: Vec<SampleCost>,
}

/// An error code with its one-line meaning.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ErrorCodeDoc {
    /// The stable `SCREAMING_SNAKE` code.
    pub code: String,
    /// What the code means, in one line.
    pub meaning: String,
}

/// One crate's section of the catalog, after the harvest guard accepted it.
#[derive(Clone, Debug, PartialEq)]
pub struct CrateCatalog {
    /// The crate name, also the section's anchor.
    pub crate_name: String,
    /// The crate's note paragraph.
    pub note: String,
    /// The definitions: tools sorted by name, each tool's variants in the crate's order (default
    /// first).
    pub definitions: Vec<Definition>,
}
