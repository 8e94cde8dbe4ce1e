//! Files only their owner reads (one test in a process of its own: it sets the umask).
#![allow(clippy::unwrap_used, clippy::expect_used)]
#![cfg(unix)]

use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;

use session_log::{LogWriter, NewSession, private_dir};

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

/// Under umask 022 the state directory is 0700 and a new log 0600; a log or a directory left
/// readable by others is tightened when used.
#[test]
fn the_state_directory_and_its_logs_are_their_owners_alone_whatever_the_umask() {
    nix::sys::stat::umask(nix::sys::stat::Mode::from_bits_truncate(0o022));
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("state/ask-user");
    assert!(!private_dir(&dir).unwrap());
    assert_eq!(mode(&dir), 0o700);
    assert_eq!(mode(&root.path().join("state")), 0o700);

    let log = dir.join("s1.jsonl");
    drop(LogWriter::create(&log, &NewSession::new("s1")).unwrap());
    assert_eq!(mode(&log), 0o600);
    // No leftover of the create is readable either.
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        assert_eq!(mode(&path) & 0o077, 0, "{}", path.display());
    }

    // Made readable by someone else: tightened when opened for write.
    std::fs::set_permissions(&log, std::fs::Permissions::from_mode(0o644)).unwrap();
    drop(LogWriter::open(&log).unwrap());
    assert_eq!(mode(&log), 0o600);

    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    assert!(private_dir(&dir).unwrap());
    assert_eq!(mode(&dir), 0o700);
}
