//! The one version and the names every artefact carries, read from the workspace, and the checks
//! that every crate and every path dependency agrees with it.

use anyhow::{Context, bail};
use serde::Deserialize;

/// The server's name in the MCP Registry (reverse DNS, one slash). The PyPI README's
/// `mcp-name:` marker and the npm launcher's `mcpName` carry it: the registry checks them.
pub const MCP_NAME: &str = "io.github.ask-user/ask-user";

/// The PyPI project and the npm launcher package: one name.
pub const PACKAGE: &str = "ask-user";

/// The npm scope of the platform packages (`@ask-user/linux-x64-gnu`, …).
pub const NPM_SCOPE: &str = "@ask-user";

/// The crate whose binary every channel ships, and the binary's name.
pub const BINARY_CRATE: &str = "ask-user-cli";

/// The binary.
pub const BINARY: &str = "ask-user";

/// One line of what ask-user is, for every registry (at most 100 characters: the MCP Registry's
/// limit).
pub const DESCRIPTION: &str =
    "Ask a human from an LLM agent and get the answer back to the model, even late.";

/// What `cargo metadata --no-deps` says of the workspace that a release needs.
#[derive(Debug, Deserialize)]
pub struct Metadata {
    packages: Vec<Package>,
    /// Where cargo builds (`CARGO_TARGET_DIR` when set).
    pub target_directory: std::path::PathBuf,
}

#[derive(Debug, Deserialize)]
struct Package {
    name: String,
    version: String,
    publish: Option<Vec<String>>,
    #[serde(default)]
    dependencies: Vec<Dependency>,
}

impl Package {
    /// Not `publish = false` (the test kit, xtask), which shows as an empty list.
    fn published(&self) -> bool {
        self.publish.as_ref().is_none_or(|to| !to.is_empty())
    }
}

#[derive(Debug, Deserialize)]
struct Dependency {
    name: String,
    req: String,
    kind: Option<String>,
    path: Option<String>,
}

impl Metadata {
    /// Parses `cargo metadata --format-version 1 --no-deps` output.
    ///
    /// # Errors
    ///
    /// The text is not such output.
    pub fn parse(json: &str) -> anyhow::Result<Self> {
        serde_json::from_str(json).context("cargo metadata output")
    }

    /// The crates published (not `publish = false`), by name.
    #[must_use]
    pub fn published(&self) -> Vec<String> {
        (self.packages.iter())
            .filter(|p| p.published())
            .map(|p| p.name.clone())
            .collect()
    }

    /// The release's version: the binary crate's (the workspace's `[workspace.package]`), once
    /// every published crate and every path dependency between them agree with it.
    ///
    /// # Errors
    ///
    /// Every crate or requirement that names another version, or no binary crate.
    pub fn version(&self) -> anyhow::Result<String> {
        let Some(binary) = self.packages.iter().find(|p| p.name == BINARY_CRATE) else {
            bail!("no {BINARY_CRATE} in the workspace");
        };
        let version = binary.version.clone();
        let mut problems = Vec::new();
        for package in &self.packages {
            if package.published() && package.version != version {
                problems.push(format!(
                    "{} is {}, not {version}",
                    package.name, package.version
                ));
            }
            for dep in &package.dependencies {
                let dev = dep.kind.as_deref() == Some("dev");
                let wanted = format!("^{version}");
                if dep.path.is_some() && !dev && dep.req != wanted {
                    problems.push(format!(
                        "{} depends on {} {}, not {wanted}",
                        package.name, dep.name, dep.req
                    ));
                }
            }
        }
        if !problems.is_empty() {
            bail!(
                "the workspace does not have one version ({} problem(s)): {}; the version lives in [workspace.package] of Cargo.toml and each path dependency of [workspace.dependencies] names it",
                problems.len(),
                problems.join("; ")
            );
        }
        Ok(version)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn metadata(cli: &str, lib: &str, req: &str) -> Metadata {
        Metadata::parse(&format!(
            r#"{{"packages":[
                {{"name":"ask-user-cli","version":"{cli}","publish":null,"dependencies":[
                    {{"name":"user-questions","req":"{req}","kind":null,"path":"/x"}},
                    {{"name":"serde","req":"^1","kind":null}}]}},
                {{"name":"user-questions","version":"{lib}","publish":null,"dependencies":[]}},
                {{"name":"xtask","version":"0.0.9","publish":[],"dependencies":[]}}],
               "target_directory":"/w/target"}}"#
        ))
        .unwrap()
    }

    #[test]
    fn one_version_is_the_release_version() {
        assert_eq!(
            metadata("0.2.0", "0.2.0", "^0.2.0").version().unwrap(),
            "0.2.0"
        );
    }

    #[test]
    fn a_crate_or_requirement_of_another_version_is_named() {
        let error = metadata("0.2.0", "0.1.0", "^0.1.0").version().unwrap_err();
        let error = error.to_string();
        assert!(
            error.contains("user-questions is 0.1.0, not 0.2.0"),
            "{error}"
        );
        assert!(
            error.contains("ask-user-cli depends on user-questions ^0.1.0, not ^0.2.0"),
            "{error}"
        );
        assert!(!error.contains("xtask"), "{error}");
        assert_eq!(
            metadata("0.2.0", "0.2.0", "^0.2.0").published(),
            ["ask-user-cli", "user-questions"]
        );
    }

    #[test]
    fn the_description_fits_every_registry() {
        assert!(DESCRIPTION.chars().count() <= 100);
    }
}
