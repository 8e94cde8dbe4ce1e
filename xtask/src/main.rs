//! `cargo xtask`: maintainer tasks. See the crate README.

use std::process::ExitCode;

use xtask::check::Check;
use xtask::{CATALOG_PATH, check_workspace, project_root, write_workspace};

const USAGE: &str = "\
usage: cargo xtask catalog [--check]
       cargo xtask dist [--target TRIPLE]
       cargo xtask version

  catalog          write docs/tool-catalog.md from the registered tool definitions
  catalog --check  fail (exit 1) when docs/tool-catalog.md is not what `catalog` would write
  dist             build every release artefact this machine can build into target/dist/
                   (default target x86_64-unknown-linux-gnu; docs/release.md)
  version          print the release version, once every crate agrees with it";

fn main() -> ExitCode {
    let args = std::env::args().skip(1).collect::<Vec<_>>();
    let args = args.iter().map(String::as_str).collect::<Vec<_>>();
    let root = project_root();
    let result = match args.as_slice() {
        ["catalog"] => write_workspace(&root).map(|changed| {
            if changed {
                println!("wrote {CATALOG_PATH}");
            } else {
                println!("{CATALOG_PATH} is up to date");
            }
            ExitCode::SUCCESS
        }),
        ["catalog", "--check"] => check_workspace(&root).map(|check| {
            match &check {
                Check::UpToDate => println!("{CATALOG_PATH} is up to date"),
                Check::Stale(difference) => eprintln!("{difference}"),
            }
            ExitCode::from(check.exit_code())
        }),
        ["dist"] => dist(&root, xtask::dist::DEFAULT_TARGET),
        ["dist", "--target", target] => dist(&root, target),
        ["version"] => xtask::dist::workspace_version(&root).map(|version| {
            println!("{version}");
            ExitCode::SUCCESS
        }),
        ["help" | "-h" | "--help"] => {
            println!("{USAGE}");
            Ok(ExitCode::SUCCESS)
        }
        _ => {
            eprintln!("{USAGE}");
            // 2, like other command-line tools for a usage error, so it differs from a stale
            // catalog's 1.
            Ok(ExitCode::from(2))
        }
    };
    result.unwrap_or_else(|error| {
        eprintln!("error: {error:#}");
        ExitCode::FAILURE
    })
}

/// `dist`: builds the artefacts and lists them with their sizes.
fn dist(root: &std::path::Path, target: &str) -> anyhow::Result<ExitCode> {
    let started = std::time::Instant::now();
    let artefacts = xtask::dist::dist(root, target)?;
    for artefact in &artefacts {
        let path = artefact.path.strip_prefix(root).unwrap_or(&artefact.path);
        println!("{:>12} bytes  {}", artefact.bytes, path.display());
    }
    println!(
        "dist: {} artefacts in {:.0} s",
        artefacts.len(),
        started.elapsed().as_secs_f64()
    );
    Ok(ExitCode::SUCCESS)
}
