//! Interoperability with a client nobody here wrote: the official MCP Python SDK
//! (`tests/interop/mcp_client.py`, its version pinned in `tests/interop/requirements.txt`) starts
//! `ask-user mcp`, lists the tools, answers a form, declines one, and collects a timed call's
//! pending result, over stdio, over streamable HTTP, and over HTTPS with a bearer token; and `tests/interop/inbox_path.py` runs
//! two agents' `ask-user mcp` processes (the SDK as one of the clients) against one
//! `ask-user inbox`, with an ntfy receiver, `kill -9` of the inbox and of one MCP process.
//!
//! It needs `ASK_USER_PYTHON`: a Python with the SDK installed (`.ci/run` makes one in a virtual
//! environment). Without it the test fails when `CI=true`, and otherwise says it was skipped.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_ask-user");

fn python() -> Option<String> {
    ask_user_testkit::required_env("ASK_USER_PYTHON", "a Python with `mcp` installed")
}

fn run_client(transport: &str) {
    run_client_with(transport, &[]);
}

fn run_client_with(transport: &str, extra: &[&std::ffi::OsStr]) {
    let Some(python) = python() else { return };
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/interop/mcp_client.py");
    let state = tempfile::tempdir().unwrap();
    let output = Command::new(python)
        .arg(&script)
        .args(["--binary", BIN, "--transport", transport, "--state-dir"])
        .arg(state.path())
        .args(extra)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    // The checks it passed are part of the test output.
    println!("{stdout}");
    assert!(
        output.status.success(),
        "the Python SDK client failed over {transport}:\n{stdout}\n{stderr}"
    );
    assert!(stdout.contains("ok: "), "no checks ran:\n{stdout}");
}

#[test]
fn the_python_sdk_answers_a_form_over_stdio() {
    run_client("stdio");
}

#[test]
fn the_python_sdk_answers_a_form_over_streamable_http() {
    run_client("http");
}

/// Leaving loopback safely: `mcp --http` over TLS (the certificate and key of the configuration
/// file, signed by a CA the test makes) with a bearer token; the SDK client trusts that CA only
/// and sends `Authorization: Bearer`; without the token it is refused (401).
#[test]
fn the_python_sdk_answers_a_form_over_https_with_a_bearer_token() {
    let dir = tempfile::tempdir().unwrap();
    let files = ask_user_testkit::tls::TestCa::new("ask-user test CA").write(dir.path());
    let token = "3f9a0c5e7b1d2468ace013579bdf2468";
    let config = dir.path().join("config.toml");
    std::fs::write(
        &config,
        format!(
            "[mcp]\ntokens = [\"{token}\"]\ntls_cert = {:?}\ntls_key = {:?}\n",
            files.cert.display().to_string(),
            files.key.display().to_string()
        ),
    )
    .unwrap();
    run_client_with(
        "https",
        &[
            "--config".as_ref(),
            config.as_os_str(),
            "--ca".as_ref(),
            files.ca.as_os_str(),
            "--token".as_ref(),
            token.as_ref(),
        ],
    );
}

/// Two agents, one inbox, as processes (see `tests/interop/inbox_path.py` for the path): one
/// page for both sessions, the inbox killed and started again at the same URL, one MCP process
/// killed after its question went pending, one question answered on the page in its window and
/// the other by an ntfy answer button; every question settles exactly once.
#[test]
fn two_agents_share_one_inbox_page_and_its_answer_buttons() {
    let Some(python) = python() else { return };
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/interop/inbox_path.py");
    let state = tempfile::tempdir().unwrap();
    let output = Command::new(python)
        .arg(&script)
        .args(["--binary", BIN, "--state-dir"])
        .arg(state.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    println!("{stdout}");
    let inbox_log = std::fs::read_to_string(state.path().join("inbox.log")).unwrap_or_default();
    assert!(
        output.status.success(),
        "the inbox path failed:\n{stdout}\n{stderr}\ninbox.log:\n{inbox_log}"
    );
    assert!(
        stdout.contains("ok: every question settled exactly once"),
        "the path did not finish:\n{stdout}"
    );
}
