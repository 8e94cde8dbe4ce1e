//! The `ask-user` binary as a person uses it: a real process on a pseudo-terminal, driven with
//! key presses, its screen read back through a terminal emulator (vt100).
//!
//! Each test waits for text on the emulated screen before it presses the next key, with generous
//! timeouts; the only deliberate waits of real time are the short question windows themselves
//! and the demo's independent work (about 3.6 s). Cargo builds `ask-user` for this target itself
//! (`CARGO_BIN_EXE_ask-user`). The `card` example is driven the same way in `ask-user-terminal`.
// Test code stops at its first broken expectation: unwrap and expect are assertions here.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use ask_user_testkit::pty::{DOWN, ENTER, Pty};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

const ASK_USER: &str = env!("CARGO_BIN_EXE_ask-user");

/// `ask-user ARGS` without a terminal, to read a log back; returns stdout.
#[track_caller]
fn ask_user(args: &[&str]) -> String {
    let output = Command::new(ASK_USER)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    String::from_utf8(output.stdout).unwrap()
}

/// The `userQuestions` view of a log, as `ask-user pending LOG --json` prints it.
#[track_caller]
fn view(log: &Path) -> serde_json::Value {
    serde_json::from_str(&ask_user(&["pending", log.to_str().unwrap(), "--json"])).unwrap()
}

/// The records of a log.
fn records(log: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn pty_demo_answered_in_time() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("demo.jsonl");
    let mut pty = Pty::spawn_with(ASK_USER, &["demo", "--log", log.to_str().unwrap()]);
    // The intro comes first; the window starts when the person is ready.
    let intro = pty.expect("press Enter when you are ready");
    assert!(!intro.contains("closes in"), "no card yet: {intro}");
    pty.send(ENTER);
    let screen = pty.expect("Esc ");
    assert!(
        screen.contains("Which database should the new orders service use?"),
        "{screen}"
    );
    assert!(
        screen.contains("closes in 0:"),
        "a live countdown: {screen}"
    );
    // Choose SQLite with the arrows.
    pty.send(DOWN);
    pty.expect("❯ ( ) 2. SQLite");
    pty.send(ENTER);
    pty.expect("Which checks should run on every pull request?");
    // Toggle two checks, then type free text for "Other".
    pty.send(" ");
    pty.expect("[x] 1. Unit tests");
    pty.send(&format!("{DOWN}{DOWN} "));
    pty.expect("[x] 3. Integration tests");
    pty.send("5");
    pty.expect("type your answer");
    pty.send("load tests");
    pty.expect("> load tests");
    pty.send(ENTER);
    assert_eq!(pty.finish(), 0);
    pty.assert_restored();
    let screen = unwrapped(&pty.contents());
    assert!(
        screen.contains(
            "model › Thanks. Going with SQLite; every pull request will run: Unit tests, Integration tests, load tests."
        ),
        "{screen}"
    );
    let answers = serde_json::json!([
        {"id":"db","selected":["SQLite"]},
        {"id":"checks","selected":["Unit tests","Integration tests"],"custom":"load tests"}
    ]);
    assert!(
        screen.contains(&format!(
            "tool  → model {}",
            serde_json::json!({ "answers": answers })
        )),
        "the model-facing result is shown: {screen}"
    );
    assert_eq!(
        view(&log),
        serde_json::json!({"active":[],"settled":[{"callId":"call_demo_1","answers":answers,
            "provenance":{"answerer":"terminal","answeredBy":"human"}}]})
    );
}

/// The demo's normal-screen text with its JSON lines put back on one line: they wrap at JSON
/// boundaries, continuing under the JSON's first character (14 columns after `tool  → model `
/// and `user  → model `, 8 after `view  › `).
fn unwrapped(screen: &str) -> String {
    screen
        .replace(&format!("\n{}", " ".repeat(14)), "")
        .replace(&format!("\n{}", " ".repeat(8)), "")
}

/// Ctrl-C while the demo waits for Enter stops it at once, with the interrupted status.
#[test]
fn pty_demo_interrupted_before_it_starts_exits_130() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("stopped.jsonl");
    let mut pty = Pty::spawn_with(ASK_USER, &["demo", "--log", log.to_str().unwrap()]);
    pty.expect("press Enter when you are ready");
    pty.send("\u{3}");
    assert_eq!(pty.finish(), 130);
    pty.assert_restored();
}

#[test]
fn pty_demo_left_alone_goes_pending_and_is_answered_late_in_the_card() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("late.jsonl");
    let mut pty = Pty::spawn_with(
        ASK_USER,
        &["demo", "--window", "1", "--log", log.to_str().unwrap()],
    );
    pty.expect("press Enter when you are ready");
    pty.send(ENTER);
    pty.expect("Which database should the new orders service use?");
    // The window closes: the model reads pending and goes on with independent work. (Above a
    // card, notes are wrapped to its width and runs of spaces close up, so these needles avoid
    // the demo's aligning double spaces; the normal screen is checked exactly at the end.)
    pty.expect(r#"→ model {"pending":true,"callId":"call_demo_1""#);
    pty.expect("model › No answer yet, and that is not a yes.");
    pty.expect("model › · adding the HTTP health-check endpoint");
    pty.expect("› the question is still open in the card");
    // The card is still there, and answerable.
    let screen = pty.expect("Which database should the new orders service use?");
    assert!(screen.contains("PostgreSQL (Recommended)"), "{screen}");
    pty.send("1");
    pty.expect("(•) 1. PostgreSQL (Recommended)");
    pty.send(ENTER);
    pty.expect("Which checks should run on every pull request?");
    pty.send("2");
    pty.expect("[x] 2. Lint");
    pty.send(ENTER);
    pty.expect(r#"→ model {"kind":"answer_to_pending_question","tool":"ask_user_question","#);
    pty.expect(r#"› {"active":[],"settled":[{"callId":"call_demo_1""#);
    assert_eq!(pty.finish(), 0);
    pty.assert_restored();
    // The whole story, in order, on the normal screen (the JSON lines wrapped at their commas).
    let screen = unwrapped(&pty.contents());
    let mut from = 0;
    for step in [
        r#"tool  → model {"pending":true,"callId":"call_demo_1""#,
        "model › No answer yet, and that is not a yes.",
        "model › · creating the service's workspace layout",
        "model › · adding the HTTP health-check endpoint",
        "host  › the question is still open in the card",
        r#"user  → model {"kind":"answer_to_pending_question","tool":"ask_user_question","callId":"call_demo_1""#,
        r#"view  › {"active":[],"settled":[{"callId":"call_demo_1""#,
    ] {
        let at = screen[from..]
            .find(step)
            .unwrap_or_else(|| panic!("{step:?} is missing or out of order:\n{screen}"));
        from += at + step.len();
    }
    assert!(
        screen.contains("model › Thanks. Going with PostgreSQL (Recommended); every pull request will run: Lint."),
        "{screen}"
    );

    // The log: the reply queued in the durable inbox, a new turn, its claim, its admission.
    let records = records(&log);
    let at = |what: &str, found: &dyn Fn(&serde_json::Value) -> bool| {
        records
            .iter()
            .position(found)
            .unwrap_or_else(|| panic!("no {what} in the log: {records:#?}"))
    };
    let is_reply = |m: &serde_json::Value| {
        m["source"]["kind"] == "user-question-reply" && m["source"]["callId"] == "call_demo_1"
    };
    let queued = at("queued reply", &|r| {
        r["type"] == "agent/inbox/spliced"
            && r["data"]["inserted"]
                .as_array()
                .is_some_and(|i| i.iter().any(is_reply))
    });
    let turn = at("turn/start after it", &|r| {
        r["type"] == "turn/start" && r["data"]["turn"] == 2
    });
    let claim = at("claim", &|r| {
        r["type"] == "agent/inbox/spliced" && r["data"]["removedCount"] == 1
    });
    let admitted = at("admitted reply", &|r| {
        r["type"] == "user/message" && is_reply(&r["data"])
    });
    assert!(
        queued < turn && turn < claim && claim < admitted,
        "{queued} {turn} {claim} {admitted}: {records:#?}"
    );
    assert_eq!(
        view(&log),
        serde_json::json!({"active":[],"settled":[{"callId":"call_demo_1",
            "answers":[{"id":"db","selected":["PostgreSQL (Recommended)"]},{"id":"checks","selected":["Lint"]}],
            "provenance":{"answerer":"terminal","answeredBy":"human"}}]})
    );
}

#[test]
fn pty_ask_timed_take_time_holds_past_the_window() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("held.jsonl");
    let arguments = fixture("release-args.json");
    let mut pty = Pty::spawn_with(
        ASK_USER,
        &[
            "ask",
            "--mode",
            "timed",
            "--timeout",
            "1",
            "--log",
            log.to_str().unwrap(),
            "--call-id",
            "held_1",
            arguments.to_str().unwrap(),
        ],
    );
    pty.expect("closes in 0:0");
    pty.send("t");
    pty.expect("holding: take your time");
    // Well past the 1 s window, the card is still held and the call still waiting.
    pty.expect_for("holding: take your time", Duration::from_secs(2));
    pty.send("2");
    pty.expect("(•) 2. Everything");
    pty.send(ENTER);
    pty.expect("Which targets should the release build?");
    pty.send("1");
    pty.expect("[x] 1. linux");
    pty.send(ENTER);
    assert_eq!(pty.finish(), 0);
    pty.assert_restored();
    let answers = serde_json::json!([
        {"id":"scope","selected":["Everything"]},{"id":"targets","selected":["linux"]}
    ]);
    let lines = pty.lines();
    assert!(
        lines.contains(&serde_json::json!({ "answers": answers }).to_string()),
        "{lines:#?}"
    );
    assert!(!pty.contents().contains("pending"), "{lines:#?}");
    assert_eq!(
        view(&log),
        serde_json::json!({"active":[],"settled":[{"callId":"held_1","answers":answers,
            "provenance":{"answerer":"terminal","answeredBy":"human"}}]})
    );
}

#[test]
fn pty_ask_with_stdout_redirected_writes_only_the_outcome_there() {
    // The card is on the terminal (stderr); stdout is a file, which gets exactly the text the
    // model reads, and nothing else.
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("outcome.txt");
    let arguments = fixture("release-args.json");
    let script = format!(
        "exec '{ASK_USER}' ask '{}' > '{}'",
        arguments.display(),
        out.display()
    );
    let mut pty = Pty::spawn_with("/bin/sh", &["-c", &script]);
    pty.expect("Which scope should the change cover?");
    pty.send(ENTER);
    pty.expect("Which targets should the release build?");
    pty.send(&format!("{DOWN}{DOWN} "));
    pty.expect("[x] 3. windows");
    pty.send(ENTER);
    assert_eq!(pty.finish(), 0);
    pty.assert_restored();
    assert_eq!(
        std::fs::read_to_string(&out).unwrap(),
        concat!(
            r#"{"answers":[{"id":"scope","selected":["Tool only (Recommended)"]},"#,
            r#"{"id":"targets","selected":["windows"]}]}"#,
            "\n"
        )
    );
    assert!(
        !pty.contents().contains(r#"{"answers""#),
        "{}",
        pty.contents()
    );
}
