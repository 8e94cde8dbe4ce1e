//! The `ask-user` binary end to end, without a terminal: every run has stdin from `/dev/null`
//! and stdout and stderr in pipes, so the terminal surface passes every question on and only
//! `--answers` scripts answer (SPEC §9.5). Each test works on real session logs in a temporary
//! directory and checks what a caller sees: stdout (the model-facing text), the exit status, the
//! one `error[CODE]: …` line on stderr, and the log as `pending` folds it.
//!
//! The only waits are for other processes (a command to end, a log line to appear), each with a
//! generous bound; nothing asserts how long anything took.
// Test code stops at its first broken expectation: unwrap and expect are assertions here.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::ffi::OsStr;
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tempfile::TempDir;

/// How long a command may take before the test gives up on it (a debug build on a loaded machine).
const PATIENCE: Duration = Duration::from_mins(1);

/// The arguments of a two-question call (a single-select and a multi-select question).
const ARGS: &str = "release-args.json";
/// Answers both questions.
const IN_TIME: &str = "script-in-time.json";
/// Times the batch out (so the timed tool reports pending at once) under the name `ci`.
const TIME_OUT: &str = "script-time-out.json";

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// What a finished command left.
#[derive(Debug)]
struct Output {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

impl Output {
    /// Asserts success and returns stdout.
    #[track_caller]
    fn ok(&self) -> &str {
        assert_eq!(self.code, Some(0), "{self:#?}");
        self.assert_no_panic();
        assert!(
            !self.stderr.lines().any(|l| l.starts_with("error")),
            "{self:#?}"
        );
        &self.stdout
    }

    /// Asserts the exit status and that stderr carries exactly one error line,
    /// `error[CODE]: message`, with this code; returns the message.
    #[track_caller]
    fn failed(&self, exit: i32, code: &str) -> &str {
        assert_eq!(self.code, Some(exit), "{self:#?}");
        self.assert_no_panic();
        let errors: Vec<&str> = self
            .stderr
            .lines()
            .filter(|l| l.starts_with("error"))
            .collect();
        assert_eq!(errors.len(), 1, "one error line: {self:#?}");
        let prefix = format!("error[{code}]: ");
        let message = errors[0]
            .strip_prefix(&prefix)
            .unwrap_or_else(|| panic!("{:?} does not start with {prefix:?}", errors[0]));
        assert!(!message.trim().is_empty(), "{self:#?}");
        message
    }

    #[track_caller]
    fn assert_no_panic(&self) {
        for sign in ["panicked", "stack backtrace", "RUST_BACKTRACE"] {
            assert!(!self.stderr.contains(sign), "{self:#?}");
        }
    }
}

/// A temporary working directory; commands run in it.
struct Session {
    dir: TempDir,
}

impl Session {
    fn new() -> Self {
        Self {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn command<S: AsRef<OsStr>>(&self, args: &[S]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_ask-user"));
        command
            .args(args)
            .current_dir(self.dir.path())
            // A panic would print its backtrace, which `Output` looks for.
            .env("RUST_BACKTRACE", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        command
    }

    /// Runs `ask-user ARGS` to its end.
    #[track_caller]
    fn run<S: AsRef<OsStr>>(&self, args: &[S]) -> Output {
        let mut child = self.command(args).spawn().unwrap();
        let stdout = drain(child.stdout.take().unwrap());
        let stderr = drain(child.stderr.take().unwrap());
        let deadline = Instant::now() + PATIENCE;
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            if Instant::now() > deadline {
                child.kill().unwrap();
                child.wait().unwrap();
                panic!(
                    "ask-user {:?} did not end",
                    args.iter().map(AsRef::as_ref).collect::<Vec<_>>()
                );
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        Output {
            code: status.code(),
            stdout: stdout.join().unwrap(),
            stderr: stderr.join().unwrap(),
        }
    }

    /// `ask-user ask --mode timed --log LOG --call-id CALL --answers SCRIPT ARGS` (the release
    /// questions), answered or timed out by the scripted answerer.
    fn ask_timed(&self, log: &str, call_id: &str, script: &str) -> Output {
        self.run(&[
            "ask",
            "--mode",
            "timed",
            "--log",
            log,
            "--call-id",
            call_id,
            "--answers",
            fixture(script).to_str().unwrap(),
            fixture(ARGS).to_str().unwrap(),
        ])
    }

    /// `ask-user ask --mode timed` on `log` with the time-out script: a continued call.
    #[track_caller]
    fn continued(&self, log: &str, call_id: &str) {
        let out = self.ask_timed(log, call_id, TIME_OUT);
        assert!(out.ok().contains(r#""pending":true"#), "{out:#?}");
    }

    /// `pending LOG --json`, parsed.
    #[track_caller]
    fn view(&self, log: &str) -> Value {
        let out = self.run(&["pending", log, "--json"]);
        serde_json::from_str(out.ok()).unwrap()
    }

    /// The bytes of every session log in the directory, by name.
    fn logs(&self) -> Vec<(String, Vec<u8>)> {
        let mut logs: Vec<(String, Vec<u8>)> = fs::read_dir(self.dir.path())
            .unwrap()
            .map(|entry| entry.unwrap().path())
            .filter(|path| path.extension() == Some("jsonl".as_ref()))
            .map(|path| {
                let name = path.file_name().unwrap().to_string_lossy().into_owned();
                (name, fs::read(&path).unwrap())
            })
            .collect();
        logs.sort();
        logs
    }

    /// The names of every file in the directory.
    fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(self.dir.path())
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    /// The names of every file in the directory but projection checkpoints.
    fn names_but_checkpoints(&self) -> Vec<String> {
        self.names()
            .into_iter()
            .filter(|n| !n.ends_with(".userQuestions.checkpoint.json"))
            .collect()
    }

    /// Starts `ask-user ask --mode timed --timeout 3600` on `log`: nobody can answer, so it
    /// holds the question (and the log's write lock) for the window. Returns once the call is
    /// logged.
    #[track_caller]
    fn holding_writer(&self, log: &str, call_id: &str) -> Running {
        let child = self
            .command(&[
                "ask",
                "--mode",
                "timed",
                "--timeout",
                "3600",
                "--log",
                log,
                "--call-id",
                call_id,
                fixture(ARGS).to_str().unwrap(),
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut running = Running(child);
        let path = self.path(log);
        let deadline = Instant::now() + PATIENCE;
        while !fs::read_to_string(&path).is_ok_and(|text| {
            text.lines()
                .any(|l| l.contains(r#""type":"tool/call""#) && l.contains(call_id))
        }) {
            assert!(
                running.0.try_wait().unwrap().is_none(),
                "ask-user ended before it logged the call"
            );
            assert!(Instant::now() < deadline, "the call was never logged");
            std::thread::sleep(Duration::from_millis(10));
        }
        running
    }
}

/// A running `ask-user`; killed (SIGKILL) when dropped, so a failing test leaves no process.
struct Running(Child);

impl Running {
    /// `kill -9`, and reap it.
    fn kill(&mut self) {
        self.0.kill().unwrap();
        let status = self.0.wait().unwrap();
        assert!(status.code().is_none(), "it died of the signal: {status:?}");
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

fn drain(mut pipe: impl Read + Send + 'static) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut text = String::new();
        pipe.read_to_string(&mut text).unwrap();
        text
    })
}

/// The lines of a log, parsed.
fn records(path: &Path) -> Vec<Value> {
    fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The row of `pending`'s table for `call_id`: its cells (call id, state, age, first question).
#[track_caller]
fn row(table: &str, call_id: &str) -> Vec<String> {
    let line = table
        .lines()
        .find(|l| l.split("  ").next() == Some(call_id))
        .unwrap_or_else(|| panic!("no row for {call_id}:\n{table}"));
    line.split("  ")
        .map(str::trim)
        .filter(|cell| !cell.is_empty())
        .map(str::to_owned)
        .collect()
}

/// The questions of `release-args.json` as the projection and the late reply state them.
fn release_questions() -> Value {
    json!([
        {"id":"scope","question":"Which scope should the change cover?","header":"Scope",
         "options":[{"label":"Tool only (Recommended)","description":"Only the tool package."},
                    {"label":"Everything","description":"Every crate in the workspace."}]},
        {"id":"targets","question":"Which targets should the release build?","header":"Targets",
         "options":[{"label":"linux"},{"label":"macos"},{"label":"windows"}],"multiSelect":true}
    ])
}

// --- schema ---------------------------------------------------------------------------------

#[test]
fn schema_legacy_has_no_timeout_and_timed_states_its_default() {
    let s = Session::new();
    let legacy: Value = serde_json::from_str(s.run(&["schema"]).ok()).unwrap();
    assert_eq!(legacy["name"], "ask_user_question");
    assert_eq!(legacy["parameters"]["type"], "object");
    let properties = legacy["parameters"]["properties"].as_object().unwrap();
    assert_eq!(properties.keys().collect::<Vec<_>>(), ["questions"]);

    let timed: Value = serde_json::from_str(
        s.run(&["schema", "--mode", "timed", "--timeout", "45"])
            .ok(),
    )
    .unwrap();
    assert_eq!(timed["name"], "ask_user_question");
    let timeout = &timed["parameters"]["properties"]["timeout"];
    assert_eq!(timeout["type"], "integer");
    let description = timeout["description"].as_str().unwrap();
    assert!(description.contains("(default 45)"), "{description}");

    let out = s.run(&["schema", "--mode", "timed", "--timeout", "0"]);
    let message = out.failed(2, "BAD_CONFIG");
    assert!(message.contains("timeout 0"), "{message}");
    assert_eq!(out.stdout, "");
}

// --- ask, answered in time --------------------------------------------------------------------

#[test]
fn ask_legacy_answered_by_script_prints_the_result_and_stays_out_of_the_projection() {
    let s = Session::new();
    let out = s.run(&[
        "ask",
        "--log",
        "legacy.jsonl",
        "--call-id",
        "legacy_1",
        "--answers",
        fixture(IN_TIME).to_str().unwrap(),
        fixture(ARGS).to_str().unwrap(),
    ]);
    assert_eq!(
        out.ok(),
        concat!(
            r#"{"answers":[{"id":"scope","selected":["Everything"]},"#,
            r#"{"id":"targets","selected":["linux","macos"],"custom":"arm64 too"}]}"#,
            "\n"
        )
    );
    // The call and its result are logged, but legacy calls never enter the projection.
    let types: Vec<Value> = records(&s.path("legacy.jsonl"))
        .iter()
        .map(|r| r["type"].clone())
        .collect();
    assert!(types.contains(&json!("tool/call")), "{types:?}");
    assert!(types.contains(&json!("tool/result")), "{types:?}");
    assert_eq!(s.view("legacy.jsonl"), json!({"active":[],"settled":[]}));
}

#[test]
fn ask_timed_answered_by_script_in_time_settles_with_scripted_provenance() {
    let s = Session::new();
    let out = s.ask_timed("timed.jsonl", "timed_1", IN_TIME);
    let answers = json!([
        {"id":"scope","selected":["Everything"]},
        {"id":"targets","selected":["linux","macos"],"custom":"arm64 too"}
    ]);
    assert_eq!(out.ok(), format!("{}\n", json!({ "answers": answers })));
    assert_eq!(
        s.view("timed.jsonl"),
        json!({"active":[],"settled":[{
            "callId":"timed_1",
            "answers":answers,
            "provenance":{"answerer":"scripted","answeredBy":"rule"}
        }]})
    );
    // The table lists open and continued questions only.
    let table = s.run(&["pending", "timed.jsonl"]);
    assert_eq!(
        table.ok(),
        "no open or continued questions\n0 active, 1 settled\n"
    );
}

// --- pending, then answered late ------------------------------------------------------------

/// The demo's hint and `answer --help`'s example never answer for the person: placeholders where
/// they must choose, the choices listed (the recommended option is one of them, not pre-filled).
/// Pasted unchanged, the hint is refused and the question stays waiting; with the person's
/// choices in place of the placeholders, the help's example answers the demo's own log.
#[test]
fn hints_and_help_never_answer_for_the_person() {
    let s = Session::new();
    // Headless, the demo needs a script: one that does not answer lets the window pass.
    let script = fixture(TIME_OUT);
    let demo = s.run(&[
        "demo",
        "--window",
        "1",
        "--log",
        "demo.jsonl",
        "--answers",
        script.to_str().unwrap(),
    ]);
    assert_eq!(demo.code, Some(0), "{demo:#?}");
    let printed = format!("{}{}", demo.stdout, demo.stderr);
    assert!(!printed.contains("--pick db='PostgreSQL"), "{printed}");
    let hint = printed
        .lines()
        .map(str::trim)
        .find(|l| l.contains(" answer demo.jsonl call_demo_1 "))
        .unwrap_or_else(|| panic!("no hint: {printed}"));
    assert!(
        hint.ends_with("--pick db=LABEL --pick checks=LABEL…"),
        "{hint}"
    );
    assert!(
        printed.contains("db: pick one: 'PostgreSQL (Recommended)' | SQLite | DynamoDB"),
        "{printed}"
    );
    assert!(printed.contains("checks: pick any (repeat --pick): 'Unit tests' | Lint"));
    let pasted = Command::new("sh")
        .arg("-c")
        .arg(hint)
        .current_dir(s.dir.path())
        .output()
        .unwrap();
    assert_eq!(pasted.status.code(), Some(4), "{pasted:#?}");
    assert_eq!(s.view("demo.jsonl")["active"][0]["state"], "continued");

    let help = s.run(&["answer", "--help"]);
    let example = help
        .ok()
        .lines()
        .find(|l| l.trim_start().starts_with("ask-user answer demo.jsonl"))
        .unwrap_or_else(|| panic!("no example: {help:#?}"))
        .trim()
        .to_owned();
    assert!(!example.contains("PostgreSQL"), "{example}");
    let chosen = example
        .replacen(
            "ask-user",
            &format!("'{}'", env!("CARGO_BIN_EXE_ask-user")),
            1,
        )
        .replacen("db=LABEL", "db=SQLite", 1)
        .replacen("checks=LABEL", "checks='Unit tests'", 1)
        .replacen("checks=LABEL", "checks=Lint", 1)
        .replacen("checks=TEXT", "checks='fuzzing too'", 1);
    let ran = Command::new("sh")
        .arg("-c")
        .arg(&chosen)
        .current_dir(s.dir.path())
        .output()
        .unwrap();
    assert!(
        ran.status.success(),
        "{chosen}: {}",
        String::from_utf8_lossy(&ran.stderr)
    );
    let settled = &s.view("demo.jsonl")["settled"][0];
    assert_eq!(settled["callId"], "call_demo_1");
    assert_eq!(settled["answers"][0]["selected"], json!(["SQLite"]));
    assert_eq!(
        settled["answers"][1]["selected"],
        json!(["Unit tests", "Lint"])
    );
}

/// The printed hint runs as printed in a shell: the binary's own path (it is not on `PATH` here),
/// and a log path and a call id that need quoting.
#[test]
fn the_pending_hint_runs_as_printed() {
    let s = Session::new();
    let log = "odd dir's log.jsonl";
    let call_id = "call 'one' $HOME";
    let out = s.ask_timed(log, call_id, TIME_OUT);
    assert!(out.ok().contains(r#""pending":true"#), "{out:#?}");
    let hint = out
        .stderr
        .lines()
        .find(|l| l.starts_with("pending: answer later with `"))
        .unwrap_or_else(|| panic!("no hint: {out:#?}"));
    let command = hint.split('`').nth(1).unwrap();
    // The hint chooses nothing: the person puts their choices in for the placeholders.
    assert!(
        command.ends_with(" --pick scope=LABEL --pick targets=LABEL…"),
        "{command}"
    );
    let command = command
        .replace("--pick scope=LABEL", "--pick scope=Everything")
        .replace("--pick targets=LABEL…", "--skip targets");
    assert!(out.stderr.contains("  targets: pick any"), "{out:#?}");
    assert!(
        command.starts_with(&format!("'{}' answer", env!("CARGO_BIN_EXE_ask-user")))
            || command.starts_with(&format!("{} answer", env!("CARGO_BIN_EXE_ask-user"))),
        "{command}"
    );
    let ran = Command::new("sh")
        .arg("-c")
        .arg(&command)
        .current_dir(s.dir.path())
        .output()
        .unwrap();
    assert!(
        ran.status.success(),
        "{command}: {}",
        String::from_utf8_lossy(&ran.stderr)
    );
    assert_eq!(s.view(log)["settled"][0]["callId"], call_id);
}

#[test]
fn ask_timed_timing_out_prints_pending_and_pending_lists_it_continued() {
    let s = Session::new();
    let out = s.ask_timed("late.jsonl", "late_1", TIME_OUT);
    let pending: Value = serde_json::from_str(out.ok()).unwrap();
    let pending = pending.as_object().unwrap();
    assert_eq!(
        pending.keys().collect::<Vec<_>>(),
        ["pending", "callId", "message"]
    );
    assert_eq!(pending["pending"], true);
    assert_eq!(pending["callId"], "late_1");
    assert!(
        pending["message"]
            .as_str()
            .unwrap()
            .contains("not permission"),
        "{pending:?}"
    );
    assert!(
        out.stderr.contains("ask-user answer late.jsonl late_1"),
        "the next step is named: {out:#?}"
    );

    // Before: continued.
    let table = s.run(&["pending", "late.jsonl"]);
    let text = table.ok();
    let cells = row(text, "late_1");
    assert_eq!(cells[1], "continued", "{text}");
    assert!(
        cells[3].starts_with("scope: Which scope should the change cover?"),
        "{text}"
    );
    assert!(
        text.contains("targets: Which targets should the release build?"),
        "{text}"
    );
    // The labels `--pick` takes are listed under their questions.
    assert!(
        text.contains("pick one: Everything | Tool only (Recommended)")
            || text.contains("pick one: Tool only (Recommended) | Everything"),
        "{text}"
    );
    assert!(text.contains("pick any: "), "{text}");
    assert!(text.ends_with("1 active, 0 settled\n"), "{text}");
    assert_eq!(
        s.view("late.jsonl"),
        json!({"active":[{"callId":"late_1","questions":release_questions(),"state":"continued"}],
               "settled":[]})
    );
}

#[test]
fn answer_settles_a_pending_question_late_and_a_second_answer_is_refused() {
    let s = Session::new();
    s.continued("late.jsonl", "late_1");
    assert_eq!(s.view("late.jsonl")["active"][0]["state"], "continued");

    // The late answer: the §6 reply text on stdout, admitted into the log.
    let out = s.run(&[
        "answer",
        "late.jsonl",
        "late_1",
        "--pick",
        "scope=Everything",
        "--pick",
        "targets=linux",
        "--pick",
        "targets=windows",
        "--custom",
        "targets=arm64 too",
    ]);
    let answers = json!([
        {"id":"scope","selected":["Everything"]},
        {"id":"targets","selected":["linux","windows"],"custom":"arm64 too"}
    ]);
    assert_eq!(
        out.ok(),
        format!(
            "{}\n",
            json!({"kind":"answer_to_pending_question","tool":"ask_user_question",
                   "callId":"late_1","questions":release_questions(),"answers":answers})
        )
    );
    assert!(out.stderr.contains("the question is settled"), "{out:#?}");
    let log = records(&s.path("late.jsonl"));
    let reply = log
        .iter()
        .find(|r| r["type"] == "user/message")
        .expect("the reply is admitted as a user message");
    assert_eq!(
        reply["data"]["source"],
        json!({"kind":"user-question-reply","callId":"late_1","outcome":"answered",
               "provenance":{"answerer":"ask-user-cli","answeredBy":"human"}})
    );
    assert_eq!(reply["surfaceOp"], "append");

    // After: settled, with the person as the answerer.
    assert_eq!(
        s.view("late.jsonl"),
        json!({"active":[],"settled":[{
            "callId":"late_1",
            "answers":answers,
            "provenance":{"answerer":"ask-user-cli","answeredBy":"human"}
        }]})
    );
    assert_eq!(
        s.run(&["pending", "late.jsonl"]).ok(),
        "no open or continued questions\n0 active, 1 settled\n"
    );

    // A second answer is refused and changes nothing.
    let before = s.logs();
    let out = s.run(&[
        "answer",
        "late.jsonl",
        "late_1",
        "--pick",
        "scope=Everything",
    ]);
    let message = out.failed(9, "ALREADY_ANSWERED");
    assert!(message.contains("late_1") && message.contains("answered already"));
    assert_eq!(s.logs(), before);
}

/// `answer`'s batch flags (and `--answers FILE` when `file` holds the file's text), each on a
/// fresh continued call: the answers the reply carries and the projection settles.
#[track_caller]
fn check_batch(flags: &[&str], file: Option<&str>, answers: &Value) {
    let s = Session::new();
    s.continued("b.jsonl", "b_1");
    let mut args = vec!["answer", "b.jsonl", "b_1"];
    args.extend(flags);
    if let Some(text) = file {
        fs::write(s.path("answers.json"), text).unwrap();
        args.extend(["--answers", "answers.json"]);
    }
    let out = s.run(&args);
    let reply: Value = serde_json::from_str(out.ok()).unwrap();
    assert_eq!(&reply["answers"], answers, "{flags:?} {file:?}");
    assert_eq!(
        s.view("b.jsonl")["settled"][0]["answers"],
        *answers,
        "{flags:?} {file:?}"
    );
}

#[test]
fn answer_takes_picks_custom_text_skips_and_answer_files() {
    // Items follow the questions' order, whatever the order of the flags.
    check_batch(
        &["--skip", "targets", "--pick", "scope=Everything"],
        None,
        &json!([{"id":"scope","selected":["Everything"]},{"id":"targets","selected":[]}]),
    );
    check_batch(
        &["--custom", "scope=only the docs", "--pick", "targets=macos"],
        None,
        &json!([{"id":"scope","selected":[],"custom":"only the docs"},
                {"id":"targets","selected":["macos"]}]),
    );
    let file = r#"{"answers":[{"id":"scope","selected":["Tool only (Recommended)"]},
                              {"id":"targets","selected":[],"custom":"riscv"}]}"#;
    let expected = json!([{"id":"scope","selected":["Tool only (Recommended)"]},
                          {"id":"targets","selected":[],"custom":"riscv"}]);
    check_batch(&[], Some(file), &expected);
    // A bare list is read too.
    let list = serde_json::to_string(&expected).unwrap();
    check_batch(&[], Some(&list), &expected);
}

// --- every error exit -----------------------------------------------------------------------

/// Appends what a host that crashed after queuing a late reply leaves in the log: an
/// `agent/inbox/spliced` record inserting the `user-question-reply` message for `call_id`
/// into the next-turn inbox, never admitted.
fn queue_reply(path: &Path, call_id: &str) {
    let text = fs::read_to_string(path).unwrap();
    let last: Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    let seq = last["seq"].as_u64().unwrap() + 1;
    let reply = json!({"kind":"answer_to_pending_question","tool":"ask_user_question",
        "callId":call_id,"questions":release_questions(),
        "answers":[{"id":"scope","selected":["Everything"]},{"id":"targets","selected":["linux"]}]});
    let message = json!({
        "id":"0b7e4a59-2f1c-4d3e-9a8b-5c6d7e8f9a01",
        "role":"user",
        "source":{"kind":"user-question-reply","callId":call_id,"outcome":"answered",
                  "provenance":{"answerer":"another-ui","answeredBy":"human"}},
        "content":[{"type":"text","text":reply.to_string()}],
    });
    let record = json!({"type":"agent/inbox/spliced","seq":seq,"time":last["time"],
        "data":{"target":"next-turn","start":0,"inserted":[message]}});
    fs::write(path, format!("{text}{record}\n")).unwrap();
}

/// `answer LOG CALL FLAGS…`.
fn answer<'a>(log: &'a str, call: &'a str, flags: &[&'a str]) -> Vec<&'a str> {
    [&["answer", log, call][..], flags].concat()
}

/// Runs a command that must fail: its exit status; exactly one error line on stderr with this
/// code and a message containing each of `says`; stdout empty unless the failure is a tool
/// result the model reads (exit 7); and no session log in the directory changed.
#[track_caller]
fn check(s: &Session, args: &[&str], exit: i32, code: &str, says: &[&str]) -> Output {
    let before = s.logs();
    let names = s.names_but_checkpoints();
    let out = s.run(args);
    let message = out.failed(exit, code).to_owned();
    for part in says {
        assert!(
            message.contains(part),
            "{args:?}: {message:?} lacks {part:?}"
        );
    }
    if exit != 7 {
        assert_eq!(out.stdout, "", "{args:?}");
    }
    assert_eq!(s.logs(), before, "{args:?} changed a log");
    // Nor did it leave a new file (a sidecar, a temporary file). Opening a log for write may
    // refresh its checkpoint, which is a cache.
    assert_eq!(s.names_but_checkpoints(), names, "{args:?} left a file");
    out
}

/// A directory of session logs in every state a failing command meets: `continued.jsonl`
/// (call `waiting`), `settled.jsonl` (call `done`, answered late), `legacy.jsonl` (legacy call
/// `legacy_1`), `queued.jsonl` (call `queued_1`, with a reply queued by a host that then
/// crashed), `not-a-log.jsonl`, `empty.jsonl`, and `not-json.json`.
fn failing_ground() -> Session {
    let s = Session::new();
    s.continued("continued.jsonl", "waiting");
    s.continued("settled.jsonl", "done");
    s.run(&[
        "answer",
        "settled.jsonl",
        "done",
        "--pick",
        "scope=Everything",
        "--skip",
        "targets",
    ])
    .ok();
    s.run(&[
        "ask",
        "--log",
        "legacy.jsonl",
        "--call-id",
        "legacy_1",
        "--answers",
        fixture(IN_TIME).to_str().unwrap(),
        fixture(ARGS).to_str().unwrap(),
    ])
    .ok();
    s.continued("queued.jsonl", "queued_1");
    queue_reply(&s.path("queued.jsonl"), "queued_1");
    fs::write(s.path("not-a-log.jsonl"), "hello, world\n").unwrap();
    fs::write(s.path("empty.jsonl"), "").unwrap();
    fs::write(s.path("not-json.json"), "scope=Everything").unwrap();
    s
}

/// Both questions of `release-args.json` answered.
const BOTH: [&str; 4] = ["--pick", "scope=Everything", "--pick", "targets=linux"];

/// Unknown and legacy calls (exit 3), a settled one (exit 9).
#[test]
fn exit_3_when_the_call_is_not_waiting_for_a_late_answer() {
    let s = &failing_ground();
    check(
        s,
        &answer("continued.jsonl", "nobody", &BOTH),
        3,
        "NOT_WAITING",
        &["nobody"],
    );
    check(
        s,
        &answer("settled.jsonl", "done", &BOTH),
        9,
        "ALREADY_ANSWERED",
        &["done", "answered already"],
    );
    check(
        s,
        &answer("legacy.jsonl", "legacy_1", &BOTH),
        3,
        "NOT_WAITING",
        &["legacy_1", "legacy"],
    );
}

/// A wrong label, a missing question, two labels for a single-select question, an unknown question.
#[test]
fn exit_4_bad_answer_against_the_stored_questions() {
    let s = &failing_ground();
    check(
        s,
        &answer(
            "continued.jsonl",
            "waiting",
            &["--pick", "scope=Nothing", "--pick", "targets=linux"],
        ),
        4,
        "BAD_ANSWER",
        &["\"Nothing\"", "scope"],
    );
    check(
        s,
        &answer(
            "continued.jsonl",
            "waiting",
            &["--pick", "scope=Everything"],
        ),
        4,
        "BAD_ANSWER",
        &["\"targets\"", "no answer"],
    );
    check(
        s,
        &answer(
            "continued.jsonl",
            "waiting",
            &[
                "--pick",
                "scope=Everything",
                "--pick",
                "scope=Tool only (Recommended)",
                "--skip",
                "targets",
            ],
        ),
        4,
        "BAD_ANSWER",
        &["scope"],
    );
    check(
        s,
        &answer(
            "continued.jsonl",
            "waiting",
            &[
                "--pick",
                "scope=Everything",
                "--skip",
                "targets",
                "--skip",
                "extra",
            ],
        ),
        4,
        "BAD_ANSWER",
        &["extra"],
    );
}

/// Every problem of one answer at once, with the labels that would fit and the flag that skips.
#[test]
fn exit_4_bad_answer_lists_every_problem_and_the_valid_labels() {
    let s = &failing_ground();
    check(
        s,
        &answer("continued.jsonl", "waiting", &["--pick", "scope=Nothing"]),
        4,
        "BAD_ANSWER",
        &[
            "2 problems",
            "\"Nothing\" is not an option of question \"scope\"",
            "its options: ",
            "\"Everything\"",
            "\"targets\" has no answer",
            "--skip targets",
        ],
    );
}

/// A reply queued before a crash still counts (SPEC §4.8 step 3, §4.9).
#[test]
fn exit_5_reply_queued_in_the_durable_inbox() {
    let s = &failing_ground();
    // A reply an earlier (crashed) session accepted waits in the durable inbox. `answer` is the
    // session's host now: it reports REPLY_QUEUED, and admits that first reply rather than leave
    // the question blocked; the new answer is not used.
    let out = s.run(&answer(
        "queued.jsonl",
        "queued_1",
        &[
            "--pick",
            "scope=Tool only (Recommended)",
            "--skip",
            "targets",
        ],
    ));
    let message = out.failed(5, "REPLY_QUEUED");
    assert!(message.contains("queued_1"), "{message}");
    assert!(message.contains("not used"), "{message}");
    assert!(
        out.stderr.contains("1 queued message(s) restored"),
        "{out:#?}"
    );
    let admitted: Value = serde_json::from_str(out.stdout.trim()).unwrap();
    assert_eq!(
        admitted["answers"],
        json!([{"id":"scope","selected":["Everything"]},{"id":"targets","selected":["linux"]}])
    );
    let view = s.view("queued.jsonl");
    assert_eq!(view["active"], json!([]));
    assert_eq!(view["settled"][0]["callId"], "queued_1");
    assert_eq!(view["settled"][0]["answers"], admitted["answers"]);
    assert_eq!(
        view["settled"][0]["provenance"],
        json!({"answerer":"another-ui","answeredBy":"human"})
    );
    // The queued message itself was admitted, exactly once.
    let log = fs::read_to_string(s.path("queued.jsonl")).unwrap();
    assert_eq!(log.matches(r#""type":"user/message""#).count(), 1, "{log}");
    assert!(log.contains(r#""id":"0b7e4a59-2f1c-4d3e-9a8b-5c6d7e8f9a01","role":"user""#));
    // Nothing is queued any more: the next answer finds the question settled.
    check(
        s,
        &answer("queued.jsonl", "queued_1", &BOTH),
        9,
        "ALREADY_ANSWERED",
        &["answered already"],
    );
}

/// Any turn the host runs admits what was queued for it first: `ask` on a log where an earlier
/// session left a late reply queued admits that reply, and the question it answers settles.
#[test]
fn ask_admits_a_reply_an_earlier_session_left_queued() {
    let s = Session::new();
    s.continued("q.jsonl", "queued_1");
    queue_reply(&s.path("q.jsonl"), "queued_1");
    let out = s.ask_timed("q.jsonl", "next_1", IN_TIME);
    assert!(out.ok().starts_with(r#"{"answers":"#), "{out:#?}");
    assert!(out.stderr.contains("admitted 1 message(s)"), "{out:#?}");
    let view = s.view("q.jsonl");
    let settled: Vec<&str> = view["settled"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["callId"].as_str().unwrap())
        .collect();
    assert_eq!(settled, ["queued_1", "next_1"]);
}

/// A missing log, a file that is not a session log, an empty file. (A log locked by a running
/// writer: `a_log_held_by_a_running_writer_is_refused_and_pending_still_reads_it`.)
#[test]
fn exit_6_when_the_session_log_cannot_be_used() {
    let s = &failing_ground();
    let args = fixture(ARGS);
    let args = args.to_str().unwrap();
    check(
        s,
        &answer("missing.jsonl", "waiting", &BOTH),
        6,
        "LOG_IO",
        &["missing.jsonl"],
    );
    check(
        s,
        &["pending", "missing.jsonl"],
        6,
        "LOG_IO",
        &["missing.jsonl"],
    );
    check(
        s,
        &answer("not-a-log.jsonl", "waiting", &BOTH),
        6,
        "LOG_HEADER",
        &["not-a-log.jsonl"],
    );
    check(
        s,
        &["pending", "not-a-log.jsonl"],
        6,
        "LOG_HEADER",
        &["not-a-log.jsonl"],
    );
    check(
        s,
        &["pending", "empty.jsonl", "--json"],
        6,
        "LOG_HEADER",
        &["empty.jsonl"],
    );
    check(
        s,
        &["ask", "--log", "not-a-log.jsonl", args],
        6,
        "LOG_HEADER",
        &["not-a-log.jsonl"],
    );
}

/// The error result is on stdout, as the model reads it.
#[test]
fn exit_7_when_the_tool_result_is_an_error() {
    let s = &failing_ground();
    let args = fixture(ARGS);
    let args = args.to_str().unwrap();
    let out = check(s, &["ask", args], 7, "NO_PROVIDER", &[]);
    assert!(out.stdout.starts_with("Error: "), "{out:#?}");
    assert!(out.stdout.contains("Nobody can answer"), "{out:#?}");
    let out = check(
        s,
        &[
            "ask",
            "--answers",
            fixture("script-wrong-label.json").to_str().unwrap(),
            args,
        ],
        7,
        "BAD_ANSWER",
        &[],
    );
    assert!(out.stdout.starts_with("Error: "), "{out:#?}");
    assert!(out.stdout.contains("Nothing at all"), "{out:#?}");
}

/// Arguments, answer scripts and answer files.
#[test]
fn exit_8_when_an_input_file_is_unreadable_or_invalid() {
    let s = &failing_ground();
    let args = fixture(ARGS);
    let args = args.to_str().unwrap();
    check(
        s,
        &["ask", "no-such-args.json"],
        8,
        "BAD_INPUT",
        &["no-such-args.json"],
    );
    check(
        s,
        &[
            "ask",
            "--answers",
            fixture("script-unknown-key.json").to_str().unwrap(),
            args,
        ],
        8,
        "BAD_INPUT",
        &["fallback"],
    );
    check(
        s,
        &answer(
            "continued.jsonl",
            "waiting",
            &["--answers", "no-such-answers.json"],
        ),
        8,
        "BAD_INPUT",
        &["no-such-answers.json"],
    );
    check(
        s,
        &answer(
            "continued.jsonl",
            "waiting",
            &["--answers", "not-json.json"],
        ),
        8,
        "BAD_INPUT",
        &["not JSON"],
    );
}

/// clap's own usage errors and the commands' are all one `error[…]` line.
#[test]
#[allow(clippy::too_many_lines)] // one table of bad command lines
fn exit_2_on_bad_usage() {
    let s = &failing_ground();
    let args = fixture(ARGS);
    let args = args.to_str().unwrap();
    check(
        s,
        &answer("continued.jsonl", "waiting", &[]),
        2,
        "BAD_USAGE",
        &["--pick", "not provided", "ask-user answer --help"],
    );
    check(
        s,
        &answer("continued.jsonl", "waiting", &["--pick", "scope"]),
        2,
        "BAD_USAGE",
        &["--pick", "ID=VALUE"],
    );
    check(
        s,
        &answer(
            "continued.jsonl",
            "waiting",
            &["--custom", "scope=a", "--custom", "scope=b"],
        ),
        2,
        "BAD_USAGE",
        &["twice"],
    );
    check(
        s,
        &answer(
            "continued.jsonl",
            "waiting",
            &["--skip", "scope", "--pick", "scope=Everything"],
        ),
        2,
        "BAD_USAGE",
        &["skipped and answered"],
    );
    check(
        s,
        &answer(
            "continued.jsonl",
            "waiting",
            &["--answers", "not-json.json", "--pick", "scope=Everything"],
        ),
        2,
        "BAD_USAGE",
        &["--answers", "cannot be used with", "ask-user answer --help"],
    );
    check(
        s,
        &["pending", "continued.jsonl", "--all"],
        2,
        "BAD_USAGE",
        &["--all", "ask-user pending --help"],
    );
    check(
        s,
        &["ask", "--mode", "sometimes", args],
        2,
        "BAD_USAGE",
        &["sometimes"],
    );
    check(
        s,
        &["schema", "--mode", "timed", "--timeout", "0"],
        2,
        "BAD_CONFIG",
        &["timeout 0"],
    );
    check(s, &["demo"], 2, "NO_TERMINAL", &["--answers"]);
    // A misspelt command or flag: clap's "did you mean", kept in the one line.
    check(
        s,
        &["answr", "call_1"],
        2,
        "BAD_USAGE",
        &["a similar subcommand exists: 'answer'"],
    );
    check(
        s,
        &["answer", "call_1", "--pik", "db=x"],
        2,
        "BAD_USAGE",
        &[
            "a similar argument exists: '--pick'",
            "ask-user answer --help",
        ],
    );
    // The demo's window is --timeout, as everywhere else.
    check(
        s,
        &["demo", "--timeout", "0"],
        2,
        "BAD_USAGE",
        &["--timeout needs a positive number of seconds"],
    );
    // A timed question nobody could answer late: without a log the session ends with `ask`.
    check(
        s,
        &["ask", "--mode", "timed", args],
        2,
        "BAD_USAGE",
        &["needs --log FILE"],
    );
}

#[test]
fn ask_legacy_without_any_answerer_fails_closed_and_logs_the_error_result() {
    let s = Session::new();
    let out = s.run(&[
        "ask",
        "--log",
        "closed.jsonl",
        "--call-id",
        "closed_1",
        fixture(ARGS).to_str().unwrap(),
    ]);
    out.failed(7, "NO_PROVIDER");
    assert!(out.stdout.starts_with("Error: "), "{out:#?}");
    let log = records(&s.path("closed.jsonl"));
    let result = log.iter().find(|r| r["type"] == "tool/result").unwrap();
    assert_eq!(result["data"]["message"]["isError"], true);
    assert_eq!(result["data"]["message"]["toolCallId"], "closed_1");
    assert_eq!(result["data"]["error"]["code"], "NO_PROVIDER");
    assert_eq!(
        format!(
            "{}\n",
            result["data"]["message"]["content"][0]["text"]
                .as_str()
                .unwrap()
        ),
        out.stdout,
        "stdout is what the model reads"
    );
}

#[test]
fn a_log_held_by_a_running_writer_is_refused_and_pending_still_reads_it() {
    let s = Session::new();
    let _writer = s.holding_writer("held.jsonl", "held_1");
    let args = fixture(ARGS);
    let out = check(
        &s,
        &[
            "answer",
            "held.jsonl",
            "held_1",
            "--pick",
            "scope=Everything",
            "--skip",
            "targets",
        ],
        6,
        "LOG_LOCKED",
        &["held.jsonl"],
    );
    assert_eq!(out.stdout, "");
    check(
        &s,
        &[
            "ask",
            "--log",
            "held.jsonl",
            "--answers",
            fixture(IN_TIME).to_str().unwrap(),
            args.to_str().unwrap(),
        ],
        6,
        "LOG_LOCKED",
        &["held.jsonl"],
    );
    // Reading needs no lock: the call is open (its writer is alive, so not interrupted).
    let table = s.run(&["pending", "held.jsonl"]);
    let text = table.ok();
    assert_eq!(row(text, "held_1")[1], "open", "{text}");
    assert!(
        text.ends_with("1 active, 0 settled (a writer has the log open)\n"),
        "{text}"
    );
    assert_eq!(
        s.view("held.jsonl"),
        json!({"active":[{"callId":"held_1","questions":release_questions(),"state":"open"}],"settled":[]})
    );
}

// --- a crash ----------------------------------------------------------------------------------

#[test]
fn crash_kill_9_then_pending_shows_it_interrupted_and_answer_repairs_and_settles_it() {
    let s = Session::new();
    let log = s.path("crash.jsonl");
    let mut writer = s.holding_writer("crash.jsonl", "crash1");
    writer.kill();
    let at_kill = fs::read(&log).unwrap();
    assert!(at_kill.ends_with(b"\n"), "every acknowledged line is whole");
    let names = s.names();
    assert_eq!(names, ["crash.jsonl"]);

    // `pending` reads the log as it is: open and interrupted, and writes nothing.
    let table = s.run(&["pending", "crash.jsonl"]);
    let text = table.ok();
    let cells = row(text, "crash1");
    assert_eq!(cells[1], "open, interrupted", "{text}");
    assert!(text.ends_with("1 active, 0 settled\n"), "{text}");
    assert_eq!(
        s.view("crash.jsonl"),
        json!({"active":[{"callId":"crash1","questions":release_questions(),"state":"open"}],"settled":[]})
    );
    assert_eq!(
        fs::read(&log).unwrap(),
        at_kill,
        "pending never modifies the log"
    );
    assert_eq!(s.names(), names, "pending writes no file");

    // `answer` opens the log for write: resume repair makes the call continued, then the
    // reply is admitted.
    let out = s.run(&[
        "answer",
        "crash.jsonl",
        "crash1",
        "--pick",
        "scope=Tool only (Recommended)",
        "--pick",
        "targets=macos",
    ]);
    let reply: Value = serde_json::from_str(out.ok()).unwrap();
    assert_eq!(reply["callId"], "crash1");
    assert!(
        out.stderr.contains("TOOL_OUTCOME_UNKNOWN"),
        "the repair is reported: {out:#?}"
    );
    let answers = json!([{"id":"scope","selected":["Tool only (Recommended)"]},
                         {"id":"targets","selected":["macos"]}]);
    assert_eq!(
        s.view("crash.jsonl"),
        json!({"active":[],"settled":[{"callId":"crash1","answers":answers,
               "provenance":{"answerer":"ask-user-cli","answeredBy":"human"}}]})
    );

    // Nothing acknowledged before the kill is missing: the old log is a byte prefix of the new.
    let after = fs::read(&log).unwrap();
    assert!(after.starts_with(&at_kill), "the log was rewritten");
    let added: Vec<Value> = std::str::from_utf8(&after[at_kill.len()..])
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let types: Vec<&str> = added.iter().map(|r| r["type"].as_str().unwrap()).collect();
    assert_eq!(
        types[..3],
        ["tool/result", "step/end", "turn/end"],
        "the repair comes first"
    );
    assert_eq!(added[0]["data"]["error"]["code"], "TOOL_OUTCOME_UNKNOWN");
    assert_eq!(added[0]["data"]["message"]["toolCallId"], "crash1");
    assert_eq!(added[2]["data"]["reason"]["kind"], "interrupted");
    assert!(types.contains(&"user/message"), "{types:?}");
}

// --- a torn tail ------------------------------------------------------------------------------

#[test]
fn l3_torn_tail_pending_reports_it_and_answer_and_ask_save_it_and_go_on() {
    let torn = br#"{"type":"turn/start","seq":7,"da"#;
    let s = Session::new();
    s.continued("torn.jsonl", "torn_1");
    let log = s.path("torn.jsonl");
    let whole = fs::read(&log).unwrap();
    let mut cut = whole.clone();
    cut.extend_from_slice(torn);
    fs::write(&log, &cut).unwrap();
    let names = s.names();

    // Read only: reported, left in place.
    for json in [false, true] {
        let args: &[&str] = if json {
            &["pending", "torn.jsonl", "--json"]
        } else {
            &["pending", "torn.jsonl"]
        };
        let out = s.run(args);
        let text = out.ok();
        assert!(text.contains("torn_1"), "{text}");
        assert!(out.stderr.contains("torn tail"), "{out:#?}");
        assert!(
            out.stderr.contains(&format!("byte_offset={}", whole.len())),
            "{out:#?}"
        );
        assert_eq!(fs::read(&log).unwrap(), cut, "pending never truncates");
        assert_eq!(s.names(), names);
    }

    // Open for write (`answer`): saved to the sidecar, truncated, and the answer goes on.
    let out = s.run(&[
        "answer",
        "torn.jsonl",
        "torn_1",
        "--pick",
        "scope=Everything",
        "--skip",
        "targets",
    ]);
    out.ok();
    let sidecar = format!("torn.jsonl.torn-{}", whole.len());
    assert!(out.stderr.contains(&sidecar), "{out:#?}");
    assert_eq!(fs::read(s.path(&sidecar)).unwrap(), torn);
    let after = fs::read(&log).unwrap();
    assert!(after.starts_with(&whole));
    assert_eq!(
        after[whole.len()],
        b'{',
        "the next record starts on a clean line"
    );
    assert_eq!(s.view("torn.jsonl")["settled"][0]["callId"], "torn_1");
    records(&log); // every line parses

    // Open for write (`ask --log`): the same.
    let whole = after;
    let mut cut = whole.clone();
    cut.extend_from_slice(torn);
    fs::write(&log, &cut).unwrap();
    let out = s.ask_timed("torn.jsonl", "torn_2", IN_TIME);
    assert!(out.ok().starts_with(r#"{"answers":"#));
    let sidecar = format!("torn.jsonl.torn-{}", whole.len());
    assert_eq!(fs::read(s.path(&sidecar)).unwrap(), torn);
    let after = fs::read(&log).unwrap();
    assert!(after.starts_with(&whole));
    let settled: Vec<Value> = s.view("torn.jsonl")["settled"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["callId"].clone())
        .collect();
    assert_eq!(settled, ["torn_1", "torn_2"]);
}

// --- help -----------------------------------------------------------------------------------

#[test]
fn help_on_every_command_shows_an_example() {
    let s = Session::new();
    let top = s.run(&["--help"]);
    let text = top.ok();
    for command in ["demo", "ask", "pending", "answer", "schema", "mcp"] {
        assert!(text.contains(command), "{text}");
    }
    assert!(text.contains("ask-user demo"), "{text}");
    for command in [
        "demo", "ask", "pending", "answer", "schema", "mcp", "inbox", "hooks", "codex",
    ] {
        let out = s.run(&[command, "--help"]);
        let text = out.ok();
        assert!(text.contains("Example:"), "{command}: {text}");
        assert!(
            text.contains(&format!("ask-user {command}")),
            "{command}: {text}"
        );
        // The help of `help` is the same page.
        assert_eq!(s.run(&["help", command]).ok(), text, "{command}");
    }
    // `mcp` has no log argument for `--pg` to turn into a session name.
    let mcp = s.run(&["mcp", "--help"]);
    assert!(
        !mcp.ok().contains("a session is named, not a path"),
        "{mcp:#?}"
    );
    assert!(
        mcp.ok()
            .contains("instead of log files in the state directory")
    );
}

/// A log path that leads to a device or a FIFO fails at once with a clear error: `pending` on a
/// symlink to `/dev/zero` used to grow without bound and never return.
#[cfg(unix)]
#[test]
fn exit_6_when_the_log_is_not_a_regular_file() {
    let s = Session::new();
    std::os::unix::fs::symlink("/dev/zero", s.path("zero.jsonl")).unwrap();
    let fifo = s.path("fifo.jsonl");
    assert!(
        Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    for log in ["zero.jsonl", "fifo.jsonl"] {
        for args in [
            vec!["pending", log],
            vec!["pending", "--json", log],
            answer(log, "waiting", &BOTH),
        ] {
            let out = s.run(&args);
            let message = out.failed(6, "LOG_NOT_A_FILE");
            assert!(
                message.contains("not a regular file"),
                "{args:?}: {message}"
            );
        }
    }
}

/// `ask --call-id ID` on a log where `ID` is continued used to replace the waiting question
/// silently, so it could never be answered; now it is refused and the first question stays.
#[test]
fn exit_2_when_the_call_id_is_already_in_the_log() {
    let s = Session::new();
    s.continued("demo.jsonl", "call_demo_1");
    let before = records(&s.path("demo.jsonl"))
        .iter()
        .filter(|r| r["type"] == "tool/call")
        .count();
    let out = s.ask_timed("demo.jsonl", "call_demo_1", IN_TIME);
    let message = out.failed(2, "DUPLICATE_CALL_ID");
    assert!(message.contains("call_demo_1"), "{message}");
    assert_eq!(out.stdout, "");
    let calls = records(&s.path("demo.jsonl"))
        .iter()
        .filter(|r| r["type"] == "tool/call")
        .count();
    assert_eq!(calls, before, "no second tool/call was logged");
    let table = s.run(&["pending", "demo.jsonl"]);
    assert_eq!(row(table.ok(), "call_demo_1")[1], "continued");
    s.run(&answer("demo.jsonl", "call_demo_1", &BOTH)).ok();
}

/// Whether `text` holds a character a terminal would interpret (ESC, BEL, CSI, DEL, …).
fn has_terminal_controls(text: &str) -> bool {
    text.chars()
        .any(|c| c.is_control() && c != '\n' || ('\u{202a}'..='\u{202e}').contains(&c))
}

/// A question holding `\u{1b}]0;PWNED\u{7}\u{1b}[2J` set the terminal's title and cleared the
/// screen through `pending`; the call id reached the hints and error lines raw. Every output path
/// now shows such text escaped: the table, `--json`, the hints and the error line.
#[test]
fn text_from_a_model_or_a_log_never_reaches_the_terminal_raw() {
    let s = Session::new();
    let hostile = "Ship it?\u{1b}]0;PWNED\u{7}\u{1b}[2J\u{9b}31m";
    // (An id with control characters is refused as BAD_QUESTIONS; the question text is free.)
    let args = json!({"questions":[{"id":"scope","question":hostile}]});
    let args_path = s.path("hostile-args.json");
    fs::write(&args_path, args.to_string()).unwrap();
    let call_id = "call\u{1b}]0;PWNED\u{7}";
    let out = s.run(&[
        "ask",
        "--mode",
        "timed",
        "--log",
        "h.jsonl",
        "--timeout",
        "1",
        "--call-id",
        call_id,
        args_path.to_str().unwrap(),
    ]);
    let printed = out.ok();
    assert!(!has_terminal_controls(printed), "{printed:?}");
    assert!(!has_terminal_controls(&out.stderr), "{:?}", out.stderr);
    assert!(
        out.stderr.contains("call\\u{1b}]0;PWNED\\u{7}"),
        "{}",
        out.stderr
    );

    let table = s.run(&["pending", "h.jsonl"]);
    let text = table.ok();
    assert!(!has_terminal_controls(text), "{text:?}");
    assert!(
        text.contains("scope: Ship it?\\u{1b}]0;PWNED\\u{7}\\u{1b}[2J\\u{9b}31m"),
        "{text}"
    );

    let json = s.run(&["pending", "--json", "h.jsonl"]);
    let text = json.ok();
    assert!(!has_terminal_controls(text), "{text:?}");
    let view: Value = serde_json::from_str(text).unwrap();
    assert_eq!(
        view["active"][0]["questions"][0]["question"], hostile,
        "the same value"
    );

    let refused = s.run(&["answer", "h.jsonl", "other\u{1b}[2J", "--skip", "x"]);
    assert!(refused.code.is_some_and(|c| c != 0));
    assert!(
        !has_terminal_controls(&refused.stderr),
        "{:?}",
        refused.stderr
    );
}

/// The store's and the host's warnings (and debug logs) quote a log's text through tracing: a
/// hostile log cannot drive the terminal through them either, at any verbosity.
#[test]
fn warnings_about_a_hostile_log_are_escaped_too() {
    let s = Session::new();
    s.continued("w.jsonl", "waiting");
    let esc = "\u{1b}]0;PWNED\u{7}\u{1b}[2J";
    let mut log = fs::read_to_string(s.path("w.jsonl")).unwrap();
    // A corrupt line, an event type and a call id of its own, all holding escape sequences.
    let lines = [
        format!("{{not json {esc}\n"),
        format!("{}\n", json!({"type": format!("x{esc}"), "data": {}})),
        format!(
            "{}\n",
            json!({"type": "tool/result", "data": {"callId": format!("c{esc}"), "content": []}})
        ),
        format!("torn {esc}"),
    ];
    log.push_str(&lines.concat());
    fs::write(s.path("w.jsonl"), log).unwrap();
    for args in [
        vec!["-vv", "pending", "w.jsonl"],
        vec!["-vv", "pending", "w.jsonl", "--json"],
        vec![
            "-vv",
            "answer",
            "w.jsonl",
            "waiting",
            "--pick",
            "scope=Everything",
            "--skip",
            "targets",
        ],
    ] {
        let out = s.run(&args);
        assert!(
            !has_terminal_controls(&out.stderr),
            "{args:?}: {:?}",
            out.stderr
        );
        assert!(
            !has_terminal_controls(&out.stdout),
            "{args:?}: {:?}",
            out.stdout
        );
    }
}
