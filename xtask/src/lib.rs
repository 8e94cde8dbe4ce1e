//! Maintainer tasks for this workspace: the tool catalog (SPEC §10), and the release artefacts
//! ([`dist`]).
//!
//! `cargo xtask catalog` writes [`CATALOG_PATH`] from the definitions the tool crates of the
//! [`manifest`] register; `cargo xtask catalog --check` regenerates it in memory and compares.
//! Generation runs four guards first ([`guards`], and the token budgets of [`tokens`]) and reports
//! every offender in one error.
//!
//! Every step is a function of its inputs, so tests can feed demo tools, fake workspaces and
//! temporary files: [`generate`] takes [`Inputs`]; [`workspace::from_metadata`] takes
//! `cargo metadata` output; [`check::check_file`] takes a path. [`generate_workspace`] and
//! [`check_workspace`] wire them to this repository.

#![warn(missing_docs)]

pub mod check;
pub mod dist;
pub mod guards;
pub mod manifest;
pub mod model;
pub mod render;
pub mod tokens;
pub mod workspace;

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::Context;

use crate::check::Check;
use crate::guards::{Ceiling, Exemption, GuardFailures};
use crate::model::ToolCrate;
use crate::tokens::{TokenBudget, Tokenizer};
use crate::workspace::Member;

/// The catalog's repository-relative path.
pub const CATALOG_PATH: &str = "docs/tool-catalog.md";

/// Everything one generation run reads.
#[derive(Clone, Copy, Debug)]
pub struct Inputs<'a> {
    /// The repository root: source paths must name files under it.
    pub root: &'a Path,
    /// The workspace members and their tool markers (completeness).
    pub members: &'a [Member],
    /// The manifest of tool crates, in catalog order.
    pub manifest: &'a [ToolCrate],
    /// Crates exempt from completeness.
    pub exemptions: &'a [Exemption],
    /// Description ceilings.
    pub ceilings: &'a [Ceiling],
    /// Token budgets.
    pub token_budgets: &'a [TokenBudget],
}

/// Runs the guards and renders the catalog; any guard failure fails the whole run.
pub fn generate(inputs: &Inputs<'_>) -> Result<String, GuardFailures> {
    let mut failures = guards::completeness(inputs.members, inputs.manifest, inputs.exemptions);
    let (mut catalogs, harvest_failures) = guards::harvest(inputs.manifest, inputs.root);
    let harvested_all = harvest_failures.is_empty();
    failures.extend(harvest_failures);
    failures.extend(guards::description_lengths(&catalogs, inputs.ceilings));
    failures.extend(tokens::measure(
        &mut catalogs,
        inputs.token_budgets,
        &Tokenizer::o200k(),
        harvested_all,
    ));
    if failures.is_empty() {
        Ok(render::render(&catalogs))
    } else {
        Err(GuardFailures(failures))
    }
}

/// The repository root (the parent of this crate's directory).
pub fn project_root() -> PathBuf {
    let xtask_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    xtask_dir.parent().unwrap_or(xtask_dir).to_path_buf()
}

/// Generates the catalog of the workspace at `root` with the real manifest.
pub fn generate_workspace(root: &Path) -> anyhow::Result<String> {
    let members = workspace::load(root)?;
    let inputs = Inputs {
        root,
        members: &members,
        manifest: manifest::MANIFEST,
        exemptions: manifest::EXEMPTIONS,
        ceilings: manifest::CEILINGS,
        token_budgets: manifest::TOKEN_BUDGETS,
    };
    Ok(generate(&inputs)?)
}

/// `cargo xtask catalog --check` for the workspace at `root`.
pub fn check_workspace(root: &Path) -> anyhow::Result<Check> {
    let generated = generate_workspace(root)?;
    check::check_file(&root.join(CATALOG_PATH), CATALOG_PATH, &generated)
        .with_context(|| format!("cannot read {CATALOG_PATH}"))
}

/// `cargo xtask catalog` for the workspace at `root`: writes the catalog when it differs.
/// Returns whether the file changed.
pub fn write_workspace(root: &Path) -> anyhow::Result<bool> {
    let generated = generate_workspace(root)?;
    let path = root.join(CATALOG_PATH);
    if check::check_file(&path, CATALOG_PATH, &generated)? == Check::UpToDate {
        return Ok(false);
    }
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    fs::write(&path, generated).with_context(|| format!("cannot write {CATALOG_PATH}"))?;
    Ok(true)
}

#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
