//! Agents waiting for their person where no card can answer them (SPEC §9.7): Gemini CLI's own
//! confirmation (its hooks cannot approve) and Claude Code idle at its prompt. Their
//! `Notification` hook (`ask-user hook gemini|claude-code`, installed by `ask-user hooks
//! install`) tells the machine's inbox, which tells the phone (an ntfy-shaped receiver here).
//!
//! The hook's input is the shape Gemini CLI's hooks reference documents and Claude Code 2.1.328
//! sends; the real Gemini CLI is not run here (it needs a Gemini API stand-in).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use ask_user_testkit::process::{Running, json_receiver};
use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_ask-user");

fn command(home: &Path) -> Command {
    let mut command = Command::new(BIN);
    command
        .env("HOME", home)
        .env("XDG_STATE_HOME", home.join(".local/state"))
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env_remove("ASK_USER_WEBHOOK_SECRET");
    command
}

/// The inbox of `home`, notifying the ntfy-shaped receiver on `port` (none: `None`).
fn inbox(home: &Path, port: Option<u16>) -> Running {
    let mut inbox = command(home);
    inbox.args(["inbox", "--addr", "127.0.0.1:0"]);
    if let Some(port) = port {
        let server = format!("http://127.0.0.1:{port}");
        inbox.args(["--ntfy", "phone-topic", "--ntfy-server", &server]);
    }
    let (inbox, url) = ask_user_testkit::process::start_reading_line(&mut inbox);
    assert!(url.contains("token="), "{url}");
    inbox
}

/// `ask-user hook AGENT` with `input` on stdin: its stdout and stderr.
fn hook(home: &Path, agent: &str, input: &Value) -> (String, String) {
    let mut child = command(home)
        .args(["hook", agent])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(input.to_string().as_bytes()).unwrap();
    drop(stdin);
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success(), "{output:?}");
    (
        String::from_utf8(output.stdout).unwrap(),
        String::from_utf8(output.stderr).unwrap(),
    )
}

fn notification(kind: &str, message: &str) -> Value {
    json!({"session_id": "g-7", "transcript_path": "/x.json", "cwd": "/work/shop",
        "hook_event_name": "Notification", "timestamp": "2026-12-05T12:00:00Z",
        "notification_type": kind, "message": message,
        "details": {"type": "exec", "command": "rm -rf build"}})
}

/// Gemini CLI waits for a confirmation: the phone is told, with the command and the folder,
/// escaped; Gemini reads `{}` (no decision: its hooks cannot approve).
#[test]
fn gemini_cli_waiting_for_a_confirmation_is_told_to_the_phone() {
    let home = tempfile::tempdir().unwrap();
    let (port, messages) = json_receiver();
    let _inbox = inbox(home.path(), Some(port));
    let input = notification(
        "ToolPermission",
        "Allow execution of: rm -rf build\u{1b}[2J?",
    );
    let (stdout, stderr) = hook(home.path(), "gemini", &input);
    assert_eq!(stdout.trim(), "{}");
    assert_eq!(stderr, "");
    let message = messages
        .recv_timeout(Duration::from_secs(30))
        .expect("an ntfy message");
    assert_eq!(message["topic"], "phone-topic");
    assert_eq!(message["title"], "Gemini CLI is waiting for you");
    let text = message["message"].as_str().unwrap();
    assert!(
        text.starts_with(
            "Gemini CLI waits for your confirmation: Allow execution of: rm -rf build"
        ),
        "{text}"
    );
    assert!(
        text.contains("/work/shop") && !text.contains('\u{1b}'),
        "{text}"
    );
    // A notification no card can answer asks nothing: `pending` lists no question.
    let pending = command(home.path()).args(["pending"]).output().unwrap();
    assert!(
        String::from_utf8_lossy(&pending.stdout).contains("no open or continued questions"),
        "{pending:?}"
    );
}

/// Claude Code idle at its prompt is told; its permission prompt is not (a card shows it),
/// and an inbox that notifies nobody says so on the hook's stderr.
#[test]
fn claude_code_idle_is_told_and_an_inbox_that_notifies_nobody_says_so() {
    let home = tempfile::tempdir().unwrap();
    let (port, messages) = json_receiver();
    let inbox_running = inbox(home.path(), Some(port));
    let (stdout, _) = hook(
        home.path(),
        "claude-code",
        &notification(
            "permission_prompt",
            "Claude needs your permission to use Bash",
        ),
    );
    assert_eq!(stdout, "");
    hook(
        home.path(),
        "claude-code",
        &notification("idle_prompt", "Claude is waiting for your input"),
    );
    let message = messages
        .recv_timeout(Duration::from_secs(30))
        .expect("an ntfy message");
    assert_eq!(message["title"], "Claude Code is waiting for you");
    assert!(
        (message["message"].as_str().unwrap()).starts_with("Claude Code waits for your input"),
        "{message}"
    );
    assert!(
        messages.recv_timeout(Duration::from_millis(500)).is_err(),
        "the permission prompt was not told this way"
    );
    drop(inbox_running);
    let _quiet = inbox(home.path(), None);
    let (_, stderr) = hook(
        home.path(),
        "claude-code",
        &notification("idle_prompt", "Claude is waiting for your input"),
    );
    assert!(stderr.contains("notifies nobody"), "{stderr}");
}
