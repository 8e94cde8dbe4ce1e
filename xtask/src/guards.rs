//! The guards that fail generation and `--check` (SPEC §10): completeness, harvest and
//! description length. Each returns every offender it finds, so one run reports them all.

use std::collections::BTreeSet;
use std::fmt;
use std::path::{Component, Path};

use crate::model::{CrateCatalog, Definition, ToolCrate};
use crate::workspace::Member;

/// The description budget in Unicode scalar values: every character is paid on every request.
pub const DESCRIPTION_BUDGET: usize = 200;

/// A registered exception to the description budget for one tool variant.
#[derive(Clone, Copy, Debug)]
pub struct Ceiling {
    /// `"<tool name> <variant id>"`.
    pub key: &'static str,
    /// The largest description length allowed for that variant.
    pub limit: usize,
    /// Why the variant needs more than the budget; must not be empty.
    pub justification: &'static str,
}

/// A workspace crate that carries a tool marker without registering model-facing tools.
#[derive(Clone, Copy, Debug)]
pub struct Exemption {
    /// The package name.
    pub crate_name: &'static str,
    /// Why the marker does not mean a tool; must not be empty.
    pub reason: &'static str,
}

/// One reason the catalog cannot be generated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Failure {
    /// A workspace crate registers model-facing tools but is not in the manifest.
    NotInManifest {
        /// The crate.
        crate_name: String,
        /// The markers found, as text.
        markers: Vec<String>,
    },
    /// A manifest entry names a crate that is not a workspace member.
    UnknownCrate {
        /// The crate the manifest names.
        crate_name: String,
    },
    /// An exemption that names no marker-carrying member, or gives no reason.
    BadExemption {
        /// The exempted crate.
        crate_name: String,
        /// What is wrong with it.
        problem: &'static str,
    },
    /// A manifest entry yields no definition at all.
    NoDefinition {
        /// The crate.
        crate_name: String,
    },
    /// A manifest entry yields a definition that cannot be catalogued.
    BadDefinition {
        /// The crate.
        crate_name: String,
        /// What is wrong, naming the tool or variant.
        problem: String,
    },
    /// A description over its budget or ceiling.
    DescriptionTooLong {
        /// The tool name.
        tool: String,
        /// The variant id.
        variant: String,
        /// The description length in Unicode scalar values.
        length: usize,
        /// The allowed length.
        limit: usize,
    },
    /// A definition (or one of its samples) that costs more tokens than its budget.
    OverTokenBudget {
        /// The tool name.
        tool: String,
        /// The variant id.
        variant: String,
        /// `the definition`, or the sample's label.
        what: String,
        /// What it costs.
        tokens: usize,
        /// Its budget.
        budget: usize,
    },
    /// A token budget that no catalogued variant uses, or that is registered twice.
    BadTokenBudget {
        /// The budget key.
        key: String,
        /// What is wrong with it.
        problem: &'static str,
    },
    /// A ceiling that no catalogued variant uses, or that has no justification.
    BadCeiling {
        /// The ceiling key.
        key: String,
        /// What is wrong with it.
        problem: &'static str,
    },
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotInManifest {
                crate_name,
                markers,
            } => write!(
                f,
                "completeness: `{crate_name}` registers model-facing tools ({}) but is not in \
                 the manifest (xtask/src/manifest.rs)",
                markers.join(", ")
            ),
            Self::UnknownCrate { crate_name } => write!(
                f,
                "completeness: the manifest lists `{crate_name}`, which is not a workspace member"
            ),
            Self::BadExemption {
                crate_name,
                problem,
            } => write!(f, "completeness: exemption for `{crate_name}`: {problem}"),
            Self::NoDefinition { crate_name } => {
                write!(f, "harvest: `{crate_name}` yields no definition")
            }
            Self::BadDefinition {
                crate_name,
                problem,
            } => write!(f, "harvest: `{crate_name}`: {problem}"),
            Self::DescriptionTooLong {
                tool,
                variant,
                length,
                limit,
            } => write!(f, "description length: {tool} [{variant}] {length}>{limit}"),
            Self::BadCeiling { key, problem } => {
                write!(f, "description length: ceiling {key:?}: {problem}")
            }
            Self::OverTokenBudget {
                tool,
                variant,
                what,
                tokens,
                budget,
            } => write!(
                f,
                "token budget: {tool} [{variant}] {what} costs {tokens} tokens, {} over its \
                 budget of {budget}",
                tokens.saturating_sub(*budget)
            ),
            Self::BadTokenBudget { key, problem } => {
                write!(f, "token budget: {key:?}: {problem}")
            }
        }
    }
}

/// Every guard failure of one generation run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GuardFailures(pub Vec<Failure>);

impl fmt::Display for GuardFailures {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the tool catalog cannot be generated:")?;
        for failure in &self.0 {
            write!(f, "\n  - {failure}")?;
        }
        Ok(())
    }
}

impl std::error::Error for GuardFailures {}

/// Completeness: every member with a tool marker is in the manifest or exempted; every manifest
/// entry is a member; every exemption is justified and still needed.
pub fn completeness(
    members: &[Member],
    manifest: &[ToolCrate],
    exemptions: &[Exemption],
) -> Vec<Failure> {
    let listed = manifest
        .iter()
        .map(|entry| entry.crate_name)
        .collect::<BTreeSet<_>>();
    let exempt = exemptions
        .iter()
        .map(|exemption| exemption.crate_name)
        .collect::<BTreeSet<_>>();
    let mut failures = Vec::new();
    for member in members {
        if member.registers_tools()
            && !listed.contains(member.name.as_str())
            && !exempt.contains(member.name.as_str())
        {
            failures.push(Failure::NotInManifest {
                crate_name: member.name.clone(),
                markers: member.markers.iter().map(ToString::to_string).collect(),
            });
        }
    }
    for entry in manifest {
        if !members.iter().any(|member| member.name == entry.crate_name) {
            failures.push(Failure::UnknownCrate {
                crate_name: entry.crate_name.to_owned(),
            });
        }
    }
    for exemption in exemptions {
        let problem = if exemption.reason.trim().is_empty() {
            Some("it gives no reason")
        } else if !members
            .iter()
            .any(|member| member.name == exemption.crate_name && member.registers_tools())
        {
            Some("no workspace member of that name carries a tool marker; remove the exemption")
        } else {
            None
        };
        if let Some(problem) = problem {
            failures.push(Failure::BadExemption {
                crate_name: exemption.crate_name.to_owned(),
                problem,
            });
        }
    }
    failures
}

/// Harvest: runs each manifest entry and keeps the crates whose every definition can be
/// catalogued. `root` is the repository root, against which source paths are checked.
pub fn harvest(manifest: &[ToolCrate], root: &Path) -> (Vec<CrateCatalog>, Vec<Failure>) {
    let mut catalogs = Vec::new();
    let mut failures = Vec::new();
    for entry in manifest {
        let crate_name = entry.crate_name;
        let harvested = (entry.harvest)();
        let mut problems = Vec::new();
        if harvested.crate_name != crate_name {
            problems.push(format!(
                "its catalog metadata names the crate `{}`",
                harvested.crate_name
            ));
        }
        if harvested.definitions.is_empty() {
            failures.push(Failure::NoDefinition {
                crate_name: crate_name.to_owned(),
            });
        }
        let mut definitions = Vec::new();
        for definition in harvested.definitions {
            match definition {
                Ok(definition) => {
                    problems.extend(shape_problems(&definition));
                    problems.extend(source_problem(&definition, root));
                    definitions.push(definition);
                }
                Err(problem) => problems.push(problem),
            }
        }
        problems.extend(variant_problems(&definitions));
        if problems.is_empty() && !definitions.is_empty() {
            // A stable sort keeps each tool's variants in the crate's order (default first).
            definitions.sort_by(|a, b| a.name.cmp(&b.name));
            catalogs.push(CrateCatalog {
                crate_name: crate_name.to_owned(),
                note: harvested.note,
                definitions,
            });
        } else {
            failures.extend(problems.into_iter().map(|problem| Failure::BadDefinition {
                crate_name: crate_name.to_owned(),
                problem,
            }));
        }
    }
    (catalogs, failures)
}

/// A model-facing definition has a description and an object schema for its parameters.
fn shape_problems(definition: &Definition) -> Vec<String> {
    let mut problems = Vec::new();
    if definition.description.trim().is_empty() {
        problems.push(format!(
            "{} [{}]: the description is empty",
            definition.name, definition.variant_id
        ));
    }
    if definition
        .parameters
        .get("type")
        .and_then(serde_json::Value::as_str)
        != Some("object")
    {
        problems.push(format!(
            "{} [{}]: `parameters.type` is not \"object\"",
            definition.name, definition.variant_id
        ));
    }
    problems
}

/// The source path must be repository-relative with `/` separators and name an existing file,
/// so the catalog's link works and carries no machine's absolute path.
fn source_problem(definition: &Definition, root: &Path) -> Option<String> {
    let path = &definition.source_path;
    let relative = !path.is_empty()
        && !path.contains('\\')
        && Path::new(path)
            .components()
            .all(|component| matches!(component, Component::Normal(_)));
    if !relative {
        return Some(format!(
            "{} [{}]: source path {path:?} is not a repository-relative path",
            definition.name, definition.variant_id
        ));
    }
    if !root.join(path).is_file() {
        return Some(format!(
            "{} [{}]: source file {path:?} does not exist",
            definition.name, definition.variant_id
        ));
    }
    None
}

/// Variant ids are unique per tool, and a tool with one definition uses id and label `default`.
fn variant_problems(definitions: &[Definition]) -> Vec<String> {
    let mut problems = Vec::new();
    let mut seen = BTreeSet::new();
    for definition in definitions {
        if !seen.insert((&definition.name, &definition.variant_id)) {
            problems.push(format!(
                "{} [{}]: the variant id is used twice",
                definition.name, definition.variant_id
            ));
        }
    }
    for definition in definitions {
        let variants = definitions
            .iter()
            .filter(|other| other.name == definition.name)
            .count();
        if variants == 1
            && (definition.variant_id != "default" || definition.variant_label != "default")
        {
            problems.push(format!(
                "{} [{}]: a tool with one definition must have variant id and label `default`",
                definition.name, definition.variant_id
            ));
        }
    }
    problems
}

/// Description length: each description is at most [`DESCRIPTION_BUDGET`] Unicode scalar values,
/// or at most its ceiling when one is registered; every ceiling is justified and in use.
pub fn description_lengths(catalogs: &[CrateCatalog], ceilings: &[Ceiling]) -> Vec<Failure> {
    let mut failures = Vec::new();
    let definitions = catalogs
        .iter()
        .flat_map(|catalog| &catalog.definitions)
        .collect::<Vec<_>>();
    for definition in &definitions {
        let key = ceiling_key(definition);
        let limit = ceilings
            .iter()
            .find(|ceiling| ceiling.key == key)
            .map_or(DESCRIPTION_BUDGET, |ceiling| ceiling.limit);
        let length = definition.description.chars().count();
        if length > limit {
            failures.push(Failure::DescriptionTooLong {
                tool: definition.name.clone(),
                variant: definition.variant_id.clone(),
                length,
                limit,
            });
        }
    }
    for ceiling in ceilings {
        let problem = if ceiling.justification.trim().is_empty() {
            Some("it gives no justification")
        } else if !definitions
            .iter()
            .any(|definition| ceiling_key(definition) == ceiling.key)
        {
            Some("no catalogued tool variant has this key; remove the ceiling")
        } else {
            None
        };
        if let Some(problem) = problem {
            failures.push(Failure::BadCeiling {
                key: ceiling.key.to_owned(),
                problem,
            });
        }
    }
    failures
}

/// The key ceilings are registered under: `"<tool name> <variant id>"`.
fn ceiling_key(definition: &Definition) -> String {
    format!("{} {}", definition.name, definition.variant_id)
}
