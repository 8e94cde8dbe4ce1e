//! The `card` example as a person uses it: a real process on a pseudo-terminal, driven with key
//! presses, its screen read back through a terminal emulator (vt100).
//!
//! Each test waits for text on the emulated screen before it presses the next key, with generous
//! timeouts; the only deliberate waits of real time are the short question windows themselves.
//! The example binary is the one `cargo test` builds; it is (re)built once through cargo first (a
//! no-op when fresh), so a test run that names only this target never drives a stale binary.
// Test code stops at its first broken expectation: unwrap and expect are assertions here.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use ask_user_testkit::pty::{DOWN, ENTER, Pty, UP};

/// The `card` example, built with the cargo that runs the tests.
fn card_example() -> &'static Path {
    static EXAMPLE: OnceLock<PathBuf> = OnceLock::new();
    EXAMPLE.get_or_init(|| {
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let mut command = Command::new(cargo);
        command.args([
            "build",
            "--package",
            "ask-user-terminal",
            "--example",
            "card",
            "--message-format=json-render-diagnostics",
        ]);
        // Build with the profile this test was built with (target/<profile>/deps/<test>).
        let exe = std::env::current_exe().unwrap();
        if exe
            .parent()
            .and_then(Path::parent)
            .and_then(Path::file_name)
            == Some("release".as_ref())
        {
            command.arg("--release");
        }
        let output = command
            .stderr(Stdio::inherit())
            .output()
            .expect("run cargo build");
        assert!(output.status.success(), "building the card example failed");
        let stdout = String::from_utf8(output.stdout).unwrap();
        stdout
            .lines()
            .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
            .filter(|message| message["target"]["name"] == "card")
            .find_map(|message| message["executable"].as_str().map(PathBuf::from))
            .expect("cargo reported the card example's executable")
    })
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// The `card` example with `args` on a pseudo-terminal.
fn spawn(args: &[&str]) -> Pty {
    Pty::spawn_with(card_example(), args)
}

const CTRL_C: &str = "\x03";

#[test]
fn pty_arrow_toggle_type_and_submit_a_batch() {
    let batch = fixture("batch.json");
    let mut pty = spawn(&[batch.to_str().unwrap()]);
    // The key hints are the card's last line, so the whole card has been drawn.
    let screen = pty.expect("Esc cancel");
    assert!(
        screen.contains("Which scope should the change cover?"),
        "{screen}"
    );
    assert!(
        screen.contains("❯ ( ) 1. Tool only (Recommended)"),
        "{screen}"
    );
    assert!(screen.contains("Only the tool package."), "{screen}");
    assert!(pty.screen.screen().alternate_screen());
    // Arrow to "Everything" and confirm: the card moves on to the second question.
    pty.send(DOWN);
    pty.expect("❯ ( ) 2. Everything");
    pty.send(ENTER);
    pty.expect("Which targets should the release build?");
    // Toggle macos and windows, then open "Other" and type.
    pty.send(&format!("{DOWN} "));
    pty.expect("[x] 2. macos");
    pty.send(&format!("{DOWN} "));
    pty.expect("[x] 3. windows");
    pty.send(&format!("{DOWN}{UP}{DOWN}"));
    pty.expect("❯ [ ] 4. Other");
    pty.send(ENTER);
    pty.expect("type your answer");
    pty.send("arm64 too");
    pty.expect("> arm64 too");
    pty.send(ENTER);
    assert_eq!(pty.finish(), 0);
    assert_eq!(
        pty.lines()[0],
        r#"{"answers":[{"id":"scope","selected":["Everything"]},{"id":"targets","selected":["macos","windows"],"custom":"arm64 too"}]}"#
    );
    pty.assert_restored();
}

#[test]
fn pty_take_time_holds_past_the_window() {
    let scope = fixture("scope.json");
    let mut pty = spawn(&[scope.to_str().unwrap(), "--timed", "1500"]);
    pty.expect("closes in 0:0");
    pty.send("t");
    pty.expect("holding: take your time");
    // Well past the 1.5 s window, the card is still held and the process still waiting.
    pty.expect_for("holding: take your time", Duration::from_millis(2500));
    pty.send("2");
    pty.expect("(•) 2. Everything");
    pty.send(ENTER);
    assert_eq!(pty.finish(), 0);
    assert_eq!(
        pty.lines()[0],
        r#"{"answers":[{"id":"scope","selected":["Everything"]}]}"#
    );
    pty.assert_restored();
}

#[test]
fn pty_left_alone_goes_pending_and_is_answered_late() {
    let scope = fixture("scope.json");
    let mut pty = spawn(&[
        scope.to_str().unwrap(),
        "--timed",
        "1000",
        "--call-id",
        "call_7",
    ]);
    pty.expect("closes in 0:01");
    // The window closes: the outcome is pending, and the card stays, answerable.
    pty.expect("pending: answer any time");
    pty.expect(r#"{"pending":true,"callId":"call_7"}"#);
    pty.expect("Which scope should the change cover?");
    pty.send(DOWN);
    pty.expect("❯ ( ) 2. Everything");
    pty.send(ENTER);
    assert_eq!(pty.finish(), 0);
    assert_eq!(
        pty.lines()[..2],
        [
            r#"{"pending":true,"callId":"call_7"}"#.to_owned(),
            r#"late: {"answers":[{"id":"scope","selected":["Everything"]}]}"#.to_owned(),
        ]
    );
    pty.assert_restored();
}

#[test]
fn pty_stdout_carries_only_the_outcome() {
    // The card draws on stderr; with stdout redirected to a file, the file holds exactly the
    // model-facing JSON: no escape sequence, no terminal query.
    let out = std::env::temp_dir().join(format!("ask-user-card-{}.out", std::process::id()));
    let scope = fixture("scope.json");
    let script = format!(
        "exec '{}' '{}' > '{}'",
        card_example().display(),
        scope.display(),
        out.display()
    );
    let mut pty = Pty::spawn_with("/bin/sh", &["-c", &script]);
    pty.expect("Which scope should the change cover?");
    pty.send(ENTER);
    assert_eq!(pty.finish(), 0);
    pty.assert_restored();
    let written = std::fs::read_to_string(&out).unwrap();
    std::fs::remove_file(&out).unwrap();
    assert_eq!(
        written,
        "{\"answers\":[{\"id\":\"scope\",\"selected\":[\"Tool only (Recommended)\"]}]}\n"
    );
}

#[test]
fn pty_ctrl_c_restores_the_terminal() {
    let scope = fixture("scope.json");
    let mut pty = spawn(&[scope.to_str().unwrap()]);
    pty.expect("Which scope should the change cover?");
    pty.send(CTRL_C);
    pty.finish();
    // The interrupt reached the process as SIGINT, after the terminal was given back.
    assert!(!pty.child.wait().unwrap().success());
    pty.assert_restored();
}

#[test]
fn without_a_terminal_the_card_fails_closed() {
    let scope = fixture("scope.json");
    let run = |args: &[&str]| {
        let start = Instant::now();
        let output = Command::new(card_example())
            .arg(&scope)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        (output, start.elapsed())
    };
    // Blocking: nobody else can answer, so it fails at once with NO_PROVIDER.
    let (output, _) = run(&[]);
    assert_eq!(output.status.code(), Some(1));
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(stdout.starts_with("Error: Nobody can answer"), "{stdout}");
    assert!(
        output.stderr.is_empty(),
        "nothing was drawn: {:?}",
        String::from_utf8_lossy(&output.stderr)
    );
    // Timed: pending once the window has closed, never a hang.
    let (output, took) = run(&["--timed", "300"]);
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(
        String::from_utf8(output.stdout).unwrap(),
        "{\"pending\":true,\"callId\":\"call_card\"}\n"
    );
    assert!(took >= Duration::from_millis(300), "{took:?}");
}
