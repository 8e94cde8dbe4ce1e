//! `cargo xtask dist`: every artefact of a release this machine can build, into `target/dist/`,
//! from one release profile and the workspace's one version:
//!
//! * the PyPI wheel (`ask-user`, the binary as its script: maturin with `bindings = "bin"`, for a
//!   `manylinux2014` target through zig);
//! * the npm launcher `ask-user` and the platform package of this target (`npm pack`);
//! * the Claude Desktop bundle of this target (`mcpb pack`, its manifest validated first);
//! * the MCP Registry's `server.json`, checked;
//! * every published crate as its `.crate` file (`cargo package --workspace`);
//! * `SHA256SUMS` over all of them.
//!
//! The tools it runs are found on `PATH` or named by `MATURIN`, `NPM` and `MCPB`; maturin needs
//! the `ziglang` package beside it for a `manylinux` target. docs/release.md is the recipe.

pub mod manifests;
pub mod platform;
pub mod release;

use std::ffi::OsString;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, bail};
use sha2::{Digest, Sha256};

use self::platform::Platform;
use self::release::{BINARY, MCP_NAME, Metadata, PACKAGE};

/// Where the artefacts go, under cargo's target directory (`target/`, or `CARGO_TARGET_DIR`).
pub const DIST_DIR: &str = "dist";

/// The Cargo profile of the shipped binary (release, stripped: the root `Cargo.toml`).
pub const PROFILE: &str = "shipped";

/// The default target: this machine's.
pub const DEFAULT_TARGET: &str = "x86_64-unknown-linux-gnu";

/// One artefact written.
#[derive(Debug)]
pub struct Artefact {
    /// Its path.
    pub path: PathBuf,
    /// Its size in bytes.
    pub bytes: u64,
}

/// Builds every artefact for `target` into [`DIST_DIR`] under cargo's target directory (emptied
/// first), from the workspace at `root`; returns them.
///
/// # Errors
///
/// The workspace has more than one version, the target is not one this machine builds, a tool
/// is missing or fails, or a manifest breaks its registry's rules.
pub fn dist(root: &Path, target: &str) -> anyhow::Result<Vec<Artefact>> {
    let metadata = metadata(root)?;
    let version = metadata.version()?;
    let Some(platform) = platform::of_target(target) else {
        bail!("{target} is no platform of the release (xtask/src/dist/platform.rs)");
    };
    let Some(compatibility) = platform.wheel.filter(|_| platform.os == "linux") else {
        bail!("{target} is built on its own machine (docs/release.md): this one builds Linux");
    };
    let out = metadata.target_directory.join(DIST_DIR);
    if out.exists() {
        fs::remove_dir_all(&out).with_context(|| format!("emptying {}", out.display()))?;
    }
    fs::create_dir_all(&out)?;
    check_pypi_readme(root)?;
    println!(
        "dist: {PACKAGE} {version} for {target} into {}",
        out.display()
    );

    // One release profile for both builds, which share every dependency: maturin builds the
    // wheel (the `ask_user` module, whose `ask-user` script runs the command line in it), then
    // the binary npm and the bundle ship, each for the same `manylinux` target through zig.
    let maturin = |directory: &Path, extra: &[&str], out: &Path| -> anyhow::Result<()> {
        let mut maturin = tool("MATURIN", "maturin");
        maturin
            .current_dir(directory)
            .args(["build", "--profile", PROFILE])
            .args(extra)
            .args([
                "--target",
                target,
                "--compatibility",
                compatibility,
                "--zig",
            ])
            .arg("--out")
            .arg(out);
        run(&mut maturin, "maturin build")
    };
    maturin(&root.join("packaging/pypi"), &[], &out)?;
    let scratch = out.join("binary-wheel");
    maturin(
        &root.join("crates/ask-user-cli"),
        &["--bindings", "bin"],
        &scratch,
    )?;
    fs::remove_dir_all(&scratch)?;
    let binary = (metadata.target_directory.join(target))
        .join(PROFILE)
        .join(platform.exe);
    if !binary.is_file() {
        bail!("maturin built no {}", binary.display());
    }

    let npm_dir = out.join("npm");
    npm_packages(root, &npm_dir, &version, platform, &binary)?;
    mcpb_bundle(&out, &version, platform, &binary)?;

    let server = manifests::server_json(&version);
    let problems = manifests::server_json_problems(&server, &version);
    if !problems.is_empty() {
        bail!(
            "server.json breaks the registry's rules: {}",
            problems.join("; ")
        );
    }
    write_json(&out.join("server.json"), &server)?;

    let published = metadata.published();
    crates(
        root,
        &metadata.target_directory,
        &out.join("crates"),
        &version,
        &published,
    )?;
    fs::remove_dir_all(&npm_dir)?;
    fs::remove_dir_all(out.join("mcpb"))?;
    let artefacts = listing(&out)?;
    let mut sums = String::new();
    for artefact in &artefacts {
        let digest = Sha256::digest(fs::read(&artefact.path)?);
        let name = artefact.path.strip_prefix(&out).unwrap_or(&artefact.path);
        let _ = writeln!(sums, "{}  {}", hex(&digest), name.display());
    }
    fs::write(out.join("SHA256SUMS"), sums)?;
    Ok(artefacts)
}

/// The workspace's one version (`cargo metadata`), every crate and path dependency checked.
///
/// # Errors
///
/// `cargo metadata` fails, or the workspace has more than one version.
pub fn workspace_version(root: &Path) -> anyhow::Result<String> {
    metadata(root)?.version()
}

/// `cargo metadata --no-deps` of the workspace at `root`.
fn metadata(root: &Path) -> anyhow::Result<Metadata> {
    let output = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
        .current_dir(root)
        .args(["metadata", "--format-version", "1", "--no-deps"])
        .output()
        .context("running cargo metadata")?;
    if !output.status.success() {
        bail!(
            "cargo metadata failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    Metadata::parse(&String::from_utf8_lossy(&output.stdout))
}

/// The PyPI README carries the registry's ownership marker.
fn check_pypi_readme(root: &Path) -> anyhow::Result<()> {
    let path = root.join("packaging/pypi/README.md");
    let readme = fs::read_to_string(&path).with_context(|| format!("{}", path.display()))?;
    if !readme.contains(&format!("mcp-name: {MCP_NAME}")) {
        bail!(
            "{} lacks `mcp-name: {MCP_NAME}`: the MCP Registry looks for it",
            path.display()
        );
    }
    Ok(())
}

/// The launcher and this platform's package, packed.
fn npm_packages(
    root: &Path,
    dir: &Path,
    version: &str,
    platform: &Platform,
    binary: &Path,
) -> anyhow::Result<()> {
    let out = dir.parent().context("npm dir")?;
    let launcher = dir.join(PACKAGE);
    fs::create_dir_all(launcher.join("bin"))?;
    let sources = root.join("packaging/npm");
    fs::copy(
        sources.join("ask-user.js"),
        launcher.join("bin/ask-user.js"),
    )?;
    executable(&launcher.join("bin/ask-user.js"))?;
    fs::copy(sources.join("README.md"), launcher.join("README.md"))?;
    write_json(
        &launcher.join("package.json"),
        &manifests::npm_launcher(version),
    )?;

    let own = dir.join(platform.npm);
    fs::create_dir_all(own.join("bin"))?;
    fs::copy(binary, own.join("bin").join(platform.exe))?;
    executable(&own.join("bin").join(platform.exe))?;
    fs::write(
        own.join("README.md"),
        format!(
            "# {}\n\nThe `{BINARY}` binary for {} {}, installed by the [`{PACKAGE}`](https://www.npmjs.com/package/{PACKAGE}) package: run `npx -y {PACKAGE} mcp --mode timed`.\n",
            manifests::npm_name(platform),
            platform.os,
            platform.cpu
        ),
    )?;
    write_json(
        &own.join("package.json"),
        &manifests::npm_platform(version, platform),
    )?;
    for package in [&launcher, &own] {
        let mut npm = tool("NPM", "npm");
        npm.current_dir(package)
            .args(["pack", "--silent", "--pack-destination"])
            .arg(out);
        run(&mut npm, "npm pack")?;
    }
    Ok(())
}

/// The Claude Desktop bundle of this platform: its manifest validated, then packed.
fn mcpb_bundle(
    out: &Path,
    version: &str,
    platform: &Platform,
    binary: &Path,
) -> anyhow::Result<()> {
    let dir = out.join("mcpb").join(platform.npm);
    fs::create_dir_all(dir.join("server"))?;
    fs::copy(binary, dir.join("server").join(platform.exe))?;
    executable(&dir.join("server").join(platform.exe))?;
    let manifest = dir.join("manifest.json");
    write_json(&manifest, &manifests::mcpb_manifest(version, platform))?;
    run(
        tool("MCPB", "mcpb").arg("validate").arg(&manifest),
        "mcpb validate",
    )?;
    let bundle = out.join(format!("{PACKAGE}-{version}-{}.mcpb", platform.npm));
    run(
        tool("MCPB", "mcpb").arg("pack").arg(&dir).arg(&bundle),
        "mcpb pack",
    )
}

/// Every published crate (`published`) of this version as its `.crate` file.
fn crates(
    root: &Path,
    target_directory: &Path,
    dir: &Path,
    version: &str,
    published: &[String],
) -> anyhow::Result<()> {
    let mut cargo = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    cargo.current_dir(root).args([
        "package",
        "--workspace",
        "--no-verify",
        "--allow-dirty",
        "--quiet",
    ]);
    run(&mut cargo, "cargo package")?;
    fs::create_dir_all(dir)?;
    let packaged = target_directory.join("package");
    for entry in fs::read_dir(&packaged)? {
        let path = entry?.path();
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        let crate_of = name.strip_suffix(&format!("-{version}.crate"));
        if crate_of.is_some_and(|c| published.iter().any(|p| p == c)) {
            fs::copy(&path, dir.join(&*name))?;
        }
    }
    Ok(())
}

/// A tool: the program the environment variable `var` names, else `program` on `PATH`.
fn tool(var: &str, program: &str) -> Command {
    Command::new(std::env::var_os(var).unwrap_or_else(|| OsString::from(program)))
}

/// Runs `command`, its output shown; an error naming `what` when it cannot start or fails.
fn run(command: &mut Command, what: &str) -> anyhow::Result<()> {
    let status = command
        .status()
        .with_context(|| format!("{what}: cannot start {}", command.get_program().display()))?;
    if !status.success() {
        bail!("{what} failed ({status})");
    }
    Ok(())
}

fn write_json(path: &Path, value: &serde_json::Value) -> anyhow::Result<()> {
    let mut text = serde_json::to_string_pretty(value)?;
    text.push('\n');
    fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}

#[cfg(unix)]
fn executable(path: &Path) -> anyhow::Result<()> {
    use std::os::unix::fs::PermissionsExt as _;
    fs::set_permissions(path, fs::Permissions::from_mode(0o755))?;
    Ok(())
}

#[cfg(not(unix))]
fn executable(_path: &Path) -> anyhow::Result<()> {
    Ok(())
}

/// The files under `dir`, sorted, with their sizes.
fn listing(dir: &Path) -> anyhow::Result<Vec<Artefact>> {
    let mut artefacts = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(dir) = todo.pop() {
        for entry in fs::read_dir(&dir)? {
            let entry = entry?;
            let path = entry.path();
            if entry.file_type()?.is_dir() {
                todo.push(path);
            } else {
                let bytes = entry.metadata()?.len();
                artefacts.push(Artefact { path, bytes });
            }
        }
    }
    artefacts.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(artefacts)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().fold(String::new(), |mut out, b| {
        let _ = write!(out, "{b:02x}");
        out
    })
}
