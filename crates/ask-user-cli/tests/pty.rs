//! The `ask-user` binary as a person uses it: a real process on a pseudo-terminal, driven with
//! key presses, its screen read back through a terminal emulator (vt100).
//!
//! Each test waits for text on the emulated screen before it presses the next key, with generous
//! timeouts; the only deliberate waits of real time are the short question windows themselves
//! and the demo's independent work (about 3.6 s). Cargo builds `ask-user` for this target itself
//! (`CARGO_BIN_EXE_ask-user`). The `card` example is driven the same way in `ask-user-terminal`.
// Test code stops at its first broken expectation: unwrap and expect are assertions here.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

use nix::sys::termios::LocalFlags;
use portable_pty::{Child, CommandBuilder, MasterPty, PtySize, native_pty_system};

const ROWS: u16 = 40;
const COLS: u16 = 160;
/// How long any expected screen may take to appear (a debug build on a loaded CI machine).
const PATIENCE: Duration = Duration::from_secs(20);

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// A process on a pseudo-terminal, and an emulator of the screen it draws.
struct Pty {
    child: Box<dyn Child + Send + Sync>,
    master: Box<dyn MasterPty + Send>,
    writer: Box<dyn Write + Send>,
    output: Receiver<Vec<u8>>,
    screen: vt100::Parser,
    closed: bool,
}

impl Pty {
    fn spawn_with(program: impl AsRef<std::ffi::OsStr>, args: &[&str]) -> Self {
        let pair = native_pty_system()
            .openpty(PtySize {
                rows: ROWS,
                cols: COLS,
                pixel_width: 0,
                pixel_height: 0,
            })
            .unwrap();
        let mut command = CommandBuilder::new(program);
        command.args(args);
        command.env("TERM", "xterm-256color");
        let child = pair.slave.spawn_command(command).unwrap();
        // Only the child keeps the terminal's other end, so reading ends when it exits.
        drop(pair.slave);
        let mut reader = pair.master.try_clone_reader().unwrap();
        let writer = pair.master.take_writer().unwrap();
        let (tx, output) = channel();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n @ 1..) = reader.read(&mut buf) {
                if tx.send(buf[..n].to_vec()).is_err() {
                    break;
                }
            }
        });
        Self {
            child,
            master: pair.master,
            writer,
            output,
            screen: vt100::Parser::new(ROWS.try_into().unwrap(), COLS.try_into().unwrap(), 0),
            closed: false,
        }
    }

    fn contents(&self) -> String {
        self.screen.screen().contents()
    }

    /// Reads what arrives within `wait`; false once the process's side is closed.
    fn pump(&mut self, wait: Duration) -> bool {
        match self.output.recv_timeout(wait) {
            Ok(bytes) => {
                self.screen.process(&bytes);
                while let Ok(bytes) = self.output.try_recv() {
                    self.screen.process(&bytes);
                }
                true
            }
            Err(RecvTimeoutError::Timeout) => true,
            Err(RecvTimeoutError::Disconnected) => {
                self.closed = true;
                false
            }
        }
    }

    /// Waits until the screen shows `needle`; returns the screen.
    #[track_caller]
    fn expect(&mut self, needle: &str) -> String {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let contents = self.contents();
            if contents.contains(needle) {
                return contents;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(
                !left.is_zero() && !self.closed,
                "the screen never showed {needle:?}; it shows:\n{contents}"
            );
            self.pump(left.min(Duration::from_millis(200)));
        }
    }

    /// Keeps reading for `period` and checks the screen shows `needle` all along.
    #[track_caller]
    fn expect_for(&mut self, needle: &str, period: Duration) {
        let until = Instant::now() + period;
        while Instant::now() < until {
            self.pump(
                until
                    .saturating_duration_since(Instant::now())
                    .min(Duration::from_millis(50)),
            );
            let contents = self.contents();
            assert!(
                contents.contains(needle) && !self.closed,
                "the screen stopped showing {needle:?}; it shows:\n{contents}"
            );
        }
    }

    fn send(&mut self, keys: &str) {
        self.writer.write_all(keys.as_bytes()).unwrap();
        self.writer.flush().unwrap();
    }

    /// Waits for the process to end and for its last output; returns the exit code.
    #[track_caller]
    fn finish(&mut self) -> u32 {
        let deadline = Instant::now() + PATIENCE;
        while self.pump(Duration::from_millis(50)) {
            assert!(
                Instant::now() < deadline,
                "the process did not end; it shows:\n{}",
                self.contents()
            );
        }
        let status = self.child.wait().unwrap();
        status.exit_code()
    }

    /// The terminal is as the process found it: normal screen, cursor shown, no bracketed paste,
    /// canonical input with echo (raw mode off).
    #[track_caller]
    fn assert_restored(&self) {
        let screen = self.screen.screen();
        assert!(!screen.alternate_screen(), "still in the alternate screen");
        assert!(!screen.hide_cursor(), "the cursor is still hidden");
        assert!(!screen.bracketed_paste(), "bracketed paste is still on");
        let termios = self.master.get_termios().expect("the pty's termios");
        assert!(
            termios.local_flags.contains(LocalFlags::ICANON),
            "raw mode is still on"
        );
        assert!(
            termios.local_flags.contains(LocalFlags::ECHO),
            "echo is still off"
        );
    }

    /// The lines of the normal screen, trailing spaces trimmed.
    fn lines(&self) -> Vec<String> {
        self.contents()
            .lines()
            .map(|l| l.trim_end().to_owned())
            .collect()
    }
}

const DOWN: &str = "\x1b[B";
const ENTER: &str = "\r";

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
    let screen = pty.contents();
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

#[test]
fn pty_demo_left_alone_goes_pending_and_is_answered_late_in_the_card() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("late.jsonl");
    let mut pty = Pty::spawn_with(
        ASK_USER,
        &["demo", "--window", "1", "--log", log.to_str().unwrap()],
    );
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
    pty.expect(r#"→ model {"kind":"answer_to_pending_question","tool":"ask_user_question","callId":"call_demo_1""#);
    pty.expect(r#"projection › {"active":[],"settled":[{"callId":"call_demo_1""#);
    assert_eq!(pty.finish(), 0);
    pty.assert_restored();
    // The whole story, in order, on the normal screen.
    let screen = pty.contents();
    let mut from = 0;
    for step in [
        r#"tool  → model {"pending":true,"callId":"call_demo_1""#,
        "model › No answer yet, and that is not a yes.",
        "model › · creating the service's workspace layout",
        "model › · adding the HTTP health-check endpoint",
        "host  › the question is still open in the card",
        r#"user  → model {"kind":"answer_to_pending_question","tool":"ask_user_question","callId":"call_demo_1""#,
        r#"projection › {"active":[],"settled":[{"callId":"call_demo_1""#,
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
