//! Shared by the bench binaries (this crate's, and the reference host's checkpoint bench, which
//! includes this file): generating the large realistic logs with `gen-big.py`.
// Test code stops at its first broken expectation (unwrap and expect are assertions); not
// every test binary uses every shared helper.
#![allow(clippy::unwrap_used, clippy::expect_used, dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// `tests/data/gen-big.py` at the workspace root: the deterministic generator of the large log.
pub fn generator() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/gen-big.py")
}

/// The log `gen-big.py --events <events>` writes, generated into the target directory on first use
/// (never committed). Returns its path and the generator's one-line summary (with the sha256).
pub fn big_log(events: u64) -> (PathBuf, String) {
    big_log_in(
        &Path::new(env!("CARGO_TARGET_TMPDIR")).join("projection-bench"),
        events,
    )
}

/// [`big_log`] in a directory of the caller's (a bench that writes files next to the log keeps
/// them apart from other benches).
pub fn big_log_in(dir: &Path, events: u64) -> (PathBuf, String) {
    std::fs::create_dir_all(dir).unwrap();
    let path = dir.join(format!("big-{events}.jsonl"));
    let summary_path = dir.join(format!("big-{events}.summary.json"));
    if !path.is_file() || !summary_path.is_file() {
        let output = Command::new("python3")
            .arg(generator())
            .arg("--events")
            .arg(events.to_string())
            .arg("--out")
            .arg(&path)
            .output()
            .expect("python3 runs gen-big.py");
        assert!(output.status.success(), "gen-big.py failed: {output:?}");
        std::fs::write(&summary_path, &output.stdout).unwrap();
    }
    let summary = std::fs::read_to_string(&summary_path).unwrap();
    (path, summary.trim().to_owned())
}
