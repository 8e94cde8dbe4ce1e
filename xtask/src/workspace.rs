//! Which workspace crates register model-facing tools (the input of the completeness guard).
//!
//! The rule, applied to every workspace member that `cargo metadata --no-deps` lists: a crate
//! registers model-facing tools when it has either marker
//!
//! * a **normal dependency on `schemars`** (also when renamed): model-facing argument schemas are
//!   derived with schemars, and no other crate may depend on it (the seam never does); or
//! * a **`pub const CATALOG` or `pub static CATALOG` item** at the start of a line in a `.rs` file
//!   under its `src/`: the catalog metadata a tool crate publishes for this generator.
//!
//! Dev- and build-dependencies do not count: a test may use schemars without offering a tool.
//! A crate that carries a marker without offering tools is listed in the exemptions with a reason.

use std::fmt;
use std::fs;
use std::io;
use std::path::{Component, Path, PathBuf};
use std::process::Command;

use anyhow::{Context, bail};
use serde::Deserialize;

/// A workspace member and the tool markers found in it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Member {
    /// The package name.
    pub name: String,
    /// Why the crate counts as a tool crate; empty when it does not.
    pub markers: Vec<Marker>,
}

impl Member {
    /// Whether the crate registers model-facing tools by the rule of this module.
    pub fn registers_tools(&self) -> bool {
        !self.markers.is_empty()
    }
}

/// Evidence that a crate registers model-facing tools.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Marker {
    /// A normal (not dev, not build) dependency on `schemars`.
    SchemarsDependency,
    /// A `pub const CATALOG` (or `pub static CATALOG`) item in this file, relative to the crate.
    CatalogItem {
        /// The file, relative to the crate directory, with `/` separators.
        file: String,
    },
}

impl fmt::Display for Marker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::SchemarsDependency => f.write_str("depends on `schemars`"),
            Self::CatalogItem { file } => write!(f, "declares `CATALOG` in {file}"),
        }
    }
}

/// Lists the workspace members under `root` with their markers, through `cargo metadata`.
pub fn load(root: &Path) -> anyhow::Result<Vec<Member>> {
    // Cargo sets `CARGO` for the processes it runs (`cargo xtask`, `cargo test`); use the same
    // cargo, so the toolchain cannot differ.
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let output = Command::new(cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .arg("--manifest-path")
        .arg(root.join("Cargo.toml"))
        .output()
        .context("cannot run `cargo metadata`")?;
    if !output.status.success() {
        bail!(
            "`cargo metadata` failed ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    let json = String::from_utf8(output.stdout).context("`cargo metadata` printed non-UTF-8")?;
    from_metadata(&json)
}

/// Reads members from `cargo metadata --no-deps --format-version 1` output and scans each
/// member's `src/` for the `CATALOG` marker. Members come back sorted by name.
pub fn from_metadata(json: &str) -> anyhow::Result<Vec<Member>> {
    let metadata: Metadata =
        serde_json::from_str(json).context("cannot read `cargo metadata` output")?;
    let mut members = Vec::with_capacity(metadata.packages.len());
    for package in metadata.packages {
        let dir = Path::new(&package.manifest_path)
            .parent()
            .with_context(|| format!("manifest path of `{}` has no parent", package.name))?;
        let mut markers = Vec::new();
        if package
            .dependencies
            .iter()
            .any(|dependency| dependency.name == "schemars" && dependency.kind.is_none())
        {
            markers.push(Marker::SchemarsDependency);
        }
        let mut files = Vec::new();
        rust_files(&dir.join("src"), &mut files)
            .with_context(|| format!("cannot scan the sources of `{}`", package.name))?;
        for file in files {
            let text = fs::read_to_string(&file)
                .with_context(|| format!("cannot read {}", file.display()))?;
            if text.lines().any(declares_catalog) {
                markers.push(Marker::CatalogItem {
                    file: relative(dir, &file),
                });
            }
        }
        members.push(Member {
            name: package.name,
            markers,
        });
    }
    members.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(members)
}

/// Whether a source line declares the catalog metadata item.
fn declares_catalog(line: &str) -> bool {
    let line = line.trim_start();
    ["pub const CATALOG", "pub static CATALOG"]
        .iter()
        .any(|item| {
            line.strip_prefix(item)
                .is_some_and(|rest| rest.starts_with([':', ' ']))
        })
}

/// Collects the `.rs` files under `dir`, in sorted order; a missing `src/` holds none. Symbolic
/// links to directories are not followed, so a link cycle cannot make the scan endless.
fn rust_files(dir: &Path, files: &mut Vec<PathBuf>) -> io::Result<()> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(error) => return Err(error),
    };
    let mut found = entries
        .map(|entry| entry.and_then(|entry| Ok((entry.path(), entry.file_type()?))))
        .collect::<io::Result<Vec<_>>>()?;
    found.sort_by(|(a, _), (b, _)| a.cmp(b));
    for (path, file_type) in found {
        if file_type.is_dir() {
            rust_files(&path, files)?;
        } else if path.extension().is_some_and(|extension| extension == "rs") && path.is_file() {
            files.push(path);
        }
    }
    Ok(())
}

/// `file` relative to `dir`, joined with `/` on every platform.
fn relative(dir: &Path, file: &Path) -> String {
    file.strip_prefix(dir)
        .unwrap_or(file)
        .components()
        .filter_map(|component| match component {
            Component::Normal(part) => Some(part.to_string_lossy()),
            Component::Prefix(_)
            | Component::RootDir
            | Component::CurDir
            | Component::ParentDir => None,
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// The part of `cargo metadata` output the rule reads.
#[derive(Deserialize)]
struct Metadata {
    packages: Vec<Package>,
}

#[derive(Deserialize)]
struct Package {
    name: String,
    manifest_path: String,
    dependencies: Vec<Dependency>,
}

#[derive(Deserialize)]
struct Dependency {
    /// The package name, also when the dependency is renamed.
    name: String,
    /// `None` for a normal dependency, `"dev"` or `"build"` otherwise.
    kind: Option<String>,
}
