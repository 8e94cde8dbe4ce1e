//! The manifest of tool crates, the completeness exemptions and the description ceilings: the
//! three lists a maintainer edits when a tool crate is added.
//!
//! To add a tool crate: depend on it in `xtask/Cargo.toml`, write a harvest function that builds
//! its definitions through its public API (as a host would) and reads its catalog metadata, and
//! add a [`ToolCrate`] entry. The completeness guard fails until you do.

use tool_ask_user::ToolCatalog;

use crate::guards::{Ceiling, Exemption};
use crate::model::{CrateHarvest, Definition, ErrorCodeDoc, ToolCrate};

/// The tool crates, in catalog order.
pub const MANIFEST: &[ToolCrate] = &[ToolCrate {
    crate_name: "tool-ask-user",
    harvest: tool_ask_user,
}];

/// Crates that carry a tool marker (see [`crate::workspace`]) without registering model-facing
/// tools. None today.
pub const EXEMPTIONS: &[Exemption] = &[];

/// Registered exceptions to the description budget. None today, and `ask_user_question` must
/// never have one (SPEC §10): every description character is paid on every request, so put
/// detail into property descriptions instead.
pub const CEILINGS: &[Ceiling] = &[];

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
            })
        })
        .collect();
    CrateHarvest {
        crate_name: catalog.crate_name.to_owned(),
        note: catalog.note.to_owned(),
        definitions,
    }
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|&item| item.to_owned()).collect()
}
