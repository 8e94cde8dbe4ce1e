//! Interoperability with the official MCP TypeScript SDK v2 client (`@modelcontextprotocol/client`,
//! pinned in `tests/interop/package-lock.json`; `tests/interop/ts_client.mjs` drives it): the
//! same client over stdio negotiates the 2026-07-28 revision when asked to (`auto`: it probes
//! `server/discover`) and the 2025 handshake when not (`legacy`, the SDK's default), lists the
//! tools, and answers the form through its `elicitation/create` handler in both: in the new era
//! the SDK fulfils the server's multi round-trip request through that handler.
//!
//! It needs `ASK_USER_TS_CLIENT`: a folder with the SDK installed (`.ci/run` runs `npm ci` into
//! one). Without it the test fails when `CI=true`, and otherwise says it was skipped.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_ask-user");

fn client_dir() -> Option<PathBuf> {
    ask_user_testkit::required_env(
        "ASK_USER_TS_CLIENT",
        "a folder with @modelcontextprotocol/client installed",
    )
    .map(PathBuf::from)
}

/// Runs the client in `mode`, picking `pick` in the form; the JSON lines it printed, by step.
fn run_client(dir: &Path, mode: &str, pick: &str) -> Vec<Value> {
    run_client_with(dir, mode, pick, &[])
}

/// [`run_client`] with more of the script's flags (`--timeout N`, `--hold yes`).
fn run_client_with(dir: &Path, mode: &str, pick: &str, flags: &[&str]) -> Vec<Value> {
    // The script imports the SDK from the folder it sits in (a copy per test: the tests run at
    // once).
    let script = dir.join(format!(
        "ts_client-{mode}-{}.mjs",
        flags.join("").replace('-', "")
    ));
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/interop/ts_client.mjs"),
        &script,
    )
    .unwrap();
    let state = tempfile::tempdir().unwrap();
    let output = Command::new("node")
        .arg(&script)
        .args([
            "--mode",
            mode,
            "--binary",
            BIN,
            "--pick",
            pick,
            "--state-dir",
        ])
        .arg(state.path())
        .args(flags)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    println!("{stdout}");
    assert!(
        output.status.success(),
        "the TypeScript SDK client failed in mode {mode}:\n{stdout}\n{stderr}"
    );
    let steps: Vec<Value> = stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    // The answer is in the session log once: a tool/call and its tool/result.
    let logs: Vec<_> = std::fs::read_dir(state.path())
        .unwrap()
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    assert_eq!(logs.len(), 1, "{logs:?}");
    let log = std::fs::read_to_string(&logs[0]).unwrap();
    let results: Vec<Value> = log
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|event| event["type"] == "tool/result")
        .collect();
    assert_eq!(results.len(), 1, "{log}");
    steps
}

fn step<'a>(steps: &'a [Value], name: &str) -> &'a Value {
    steps
        .iter()
        .find(|s| s["step"] == name)
        .unwrap_or_else(|| panic!("no step {name}: {steps:?}"))
}

fn check_session(steps: &[Value], version: &str, pick: &str) {
    assert_eq!(step(steps, "connected")["protocolVersion"], version);
    assert_eq!(
        step(steps, "tools")["names"],
        serde_json::json!(["ask_user_question"])
    );
    let called = step(steps, "called");
    assert_eq!(called["isError"], false, "{called}");
    assert_eq!(
        called["forms"], 1,
        "one form, through the handler: {called}"
    );
    assert_eq!(
        called["text"],
        format!(r#"{{"answers":[{{"id":"db","selected":["{pick}"]}}]}}"#)
    );
}

#[test]
fn the_typescript_sdk_negotiates_the_stateless_revision_and_answers_the_form_in_rounds() {
    let Some(dir) = client_dir() else { return };
    let steps = run_client(&dir, "auto", "PostgreSQL");
    check_session(&steps, "2026-07-28", "PostgreSQL");
}

#[test]
fn the_same_typescript_client_still_speaks_the_handshake_era() {
    let Some(dir) = client_dir() else { return };
    let steps = run_client(&dir, "legacy", "SQLite");
    check_session(&steps, "2025-11-25", "SQLite");
}

/// SPEC: a timed question shows in the client's own form in every era the client speaks. The
/// client (auto negotiation, forms, no tasks) is offered the handshake era by `server/discover`,
/// falls back to `initialize`, and gets the question as `elicitation/create` while the window is
/// open; its answer is the call's result.
#[test]
fn a_timed_question_shows_in_the_clients_own_form_in_the_era_it_negotiates() {
    let Some(dir) = client_dir() else { return };
    let steps = run_client_with(&dir, "auto", "PostgreSQL", &["--timeout", "60"]);
    let called = step(&steps, "called");
    assert_eq!(step(&steps, "connected")["protocolVersion"], "2025-11-25");
    assert_eq!(called["forms"], 1, "{called}");
    assert_eq!(
        called["text"],
        r#"{"answers":[{"id":"db","selected":["PostgreSQL"]}]}"#
    );
}

/// The same form left unanswered: the window closes, the server withdraws the form (the SDK
/// aborts the handler's request) and the call returns pending.
#[test]
fn a_timed_form_left_open_is_withdrawn_when_its_window_closes() {
    let Some(dir) = client_dir() else { return };
    let steps = run_client_with(
        &dir,
        "auto",
        "PostgreSQL",
        &["--timeout", "2", "--hold", "yes"],
    );
    assert_eq!(step(&steps, "withdrawn")["aborted"], true);
    let called = step(&steps, "called");
    assert_eq!(called["forms"], 1, "{called}");
    let text = called["text"].as_str().unwrap();
    assert!(text.starts_with(r#"{"pending":true"#), "{text}");
}
