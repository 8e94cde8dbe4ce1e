//! Starting an inbox in the background (`Rendezvous::spawn`): the command outlives nothing it
//! should not hold (no stdin, no stdout), writes its stderr to `inbox.log` (the owner's alone),
//! and the connector starts it when nothing answers on the socket.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::PermissionsExt as _;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use ask_user_inbox::{LOG_NAME, Rendezvous};

/// Waits (real time) until `done` holds, at most 10 s.
fn until(done: impl Fn() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < Duration::from_secs(10), "timed out");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_spawned_inbox_writes_its_stderr_to_the_private_log_and_reads_no_stdin() {
    let dir = tempfile::tempdir().unwrap();
    let rendezvous = Rendezvous::new(dir.path().join("state"));
    let mut command = Command::new("sh");
    // A command that would wait forever on an inherited stdin ends at once on /dev/null.
    command.args(["-c", "cat; echo started >&2; echo not-on-stdout"]);
    rendezvous.spawn(command).unwrap();
    let log = rendezvous.dir().join(LOG_NAME);
    until(|| std::fs::read_to_string(&log).is_ok_and(|t| t.contains("started")));
    assert_eq!(std::fs::read_to_string(&log).unwrap(), "started\n");
    let mode = std::fs::metadata(&log).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    // A second start appends.
    let mut again = Command::new("sh");
    again.args(["-c", "echo again >&2"]);
    rendezvous.spawn(again).unwrap();
    until(|| std::fs::read_to_string(&log).unwrap().contains("again"));
}

/// Paused clock: the connector's wait for the started inbox passes at once.
#[tokio::test(start_paused = true)]
async fn the_connector_starts_an_inbox_once_when_none_answers() {
    let dir = tempfile::tempdir().unwrap();
    let rendezvous = Rendezvous::new(dir.path());
    let started = Arc::new(AtomicUsize::new(0));
    let connect = rendezvous.connector(Arc::new({
        let (started, rendezvous) = (Arc::clone(&started), rendezvous.clone());
        move || {
            started.fetch_add(1, Ordering::SeqCst);
            let mut command = Command::new("sh");
            command.args(["-c", "echo no-inbox-here >&2"]);
            rendezvous.spawn(command)
        }
    }));
    // Nothing binds the socket: the connector gives up after its wait, having started one.
    assert!(connect().await.is_err());
    assert_eq!(started.load(Ordering::SeqCst), 1);
    // Within RESPAWN_EVERY it does not start another.
    assert!(connect().await.is_err());
    assert_eq!(started.load(Ordering::SeqCst), 1);
}
