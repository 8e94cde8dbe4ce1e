//! Every finding of the store is also a `tracing` warning (SPEC §9.6, L4). Alone in its test
//! binary, with a single test: `tracing` caches per-callsite interest process-wide, so a capture
//! test sharing a binary with concurrently running tests can miss its events.
// Test code stops at its first broken expectation: unwrap and expect are assertions here.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io;
use std::sync::{Arc, Mutex};

use ask_user_host::CheckpointPolicy;
use session_log::{LogWriter, read_log};

use ask_user_testkit::logs::{
    append_raw, ev, load_file_projection as load_projection, lt_log, session, temp_log,
};
use serde_json::json;

/// A writer that collects formatted `tracing` output.
#[derive(Clone)]
struct Capture(Arc<Mutex<String>>);

impl io::Write for Capture {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0
            .lock()
            .unwrap()
            .push_str(&String::from_utf8_lossy(buf));
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Runs `f` with a capturing subscriber and returns the warning lines it produced.
fn warnings(f: impl FnOnce()) -> Vec<String> {
    let buffer = Arc::new(Mutex::new(String::new()));
    let writer = Capture(buffer.clone());
    let subscriber = tracing_subscriber::fmt()
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .finish();
    tracing::subscriber::with_default(subscriber, f);
    let text = buffer.lock().unwrap().clone();
    text.lines()
        .filter(|l| l.contains("WARN"))
        .map(str::to_owned)
        .collect()
}

#[track_caller]
fn assert_one(lines: &[String], parts: &[&str]) {
    let found = lines
        .iter()
        .filter(|l| parts.iter().all(|p| l.contains(p)))
        .count();
    assert_eq!(found, 1, "one warning with {parts:?} in {lines:#?}");
}

#[test]
fn l4_every_finding_is_a_tracing_warning() {
    // L4: a corrupt middle line at line 5, and the gap after it.
    let (_dir, path) = temp_log();
    let mut writer = LogWriter::create(&path, &session("s1")).unwrap();
    writer
        .append(&[
            ev("a", 0, json!({})),
            ev("b", 1, json!({})),
            ev("c", 2, json!({})),
        ])
        .unwrap();
    drop(writer);
    append_raw(&path, b"{\"type\":\"d\",\"seq\":3,\n");
    append_raw(
        &path,
        b"{\"type\":\"e\",\"seq\":4,\"data\":{\"t\":\"\xff\"}}\n",
    );
    append_raw(&path, b"{\"type\":\"f\"");
    for lines in [
        warnings(|| drop(read_log(&path).unwrap())),
        warnings(|| drop(load_projection(&path, CheckpointPolicy::ReadOnly).unwrap())),
    ] {
        assert_one(&lines, &["corrupt line", "line=5", "not JSON"]);
        assert_one(&lines, &["seq gap", "line=6", "expected=3", "found=4"]);
        assert_one(&lines, &["invalid UTF-8", "line=6"]);
        assert_one(&lines, &["torn tail", "len=11"]);
    }
    let lines = warnings(|| drop(LogWriter::open(&path).unwrap()));
    assert_one(&lines, &["corrupt line", "line=5"]);
    assert_one(&lines, &["torn tail saved", "sidecar="]);

    // Resume repair.
    let (_dir, path) = temp_log();
    drop(lt_log(&path));
    let lines = warnings(|| drop(LogWriter::open_repaired(&path).unwrap()));
    assert_one(
        &lines,
        &["resume repair", "call_id=ask-timed", "result_seq=4"],
    );
    assert_one(&lines, &["interrupted step", "turn=1", "step=1"]);
    assert_one(&lines, &["interrupted turn", "turn=1"]);

    // A stale checkpoint.
    load_projection(&path, CheckpointPolicy::Refresh).unwrap();
    let ckpt = session_log::checkpoint_path(&path);
    let text = std::fs::read_to_string(&ckpt)
        .unwrap()
        .replace("\"stateVersion\":2", "\"stateVersion\":1");
    std::fs::write(&ckpt, text).unwrap();
    let lines = warnings(|| drop(load_projection(&path, CheckpointPolicy::ReadOnly).unwrap()));
    assert_one(&lines, &["stale projection checkpoint", "state version 1"]);
}
