//! The machine's inbox and the commands without paths, as whole processes: `ask-user mcp` with a
//! surface starts one inbox for every server of a state directory, `ask-user inbox --url` finds
//! it, `pending` lists every session of the state directory and `answer` finds a call's session
//! by its id alone; and the configuration file sets what the flags leave out.
//! (The whole path with two clients, the page and ntfy buttons is `mcp_python.rs`'s.)

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_ask-user");
const WAIT: Duration = Duration::from_secs(30);

/// `ask-user` with a throwaway home: no configuration file but the one a test writes.
fn ask_user(home: &Path) -> Command {
    let mut command = Command::new(BIN);
    command
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("XDG_STATE_HOME", home.join("state"))
        .env_remove("ASK_USER_WEBHOOK_SECRET");
    command
}

/// An `ask-user mcp` on stdio whose stdin stays open (a client that connected and waits), and
/// the lines of its stderr.
struct Server {
    child: Child,
    lines: mpsc::Receiver<String>,
}

impl Server {
    fn start(home: &Path, args: &[&str]) -> Self {
        Self::run(home, &[&["mcp"], args].concat())
    }

    /// `ask-user ARGS`, its stdin kept open, the lines of its stderr collected.
    fn run(home: &Path, args: &[&str]) -> Self {
        let mut child = ask_user(home)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let (tx, lines) = mpsc::channel();
        let stderr = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        Self { child, lines }
    }

    fn until(&self, needle: &str) -> String {
        self.lines_until(needle).pop().unwrap()
    }

    /// Every line printed up to the first that contains `needle`, that one last.
    fn lines_until(&self, needle: &str) -> Vec<String> {
        let mut said = Vec::new();
        loop {
            let line = self
                .lines
                .recv_timeout(WAIT)
                .unwrap_or_else(|e| panic!("never printed {needle:?} (printed {said:?}): {e}"));
            let found = line.contains(needle);
            said.push(line);
            if found {
                return said;
            }
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The page's address a server's line names (`http://ADDR/`).
fn page_of(line: &str) -> String {
    let at = line
        .find("http://")
        .unwrap_or_else(|| panic!("no address: {line}"));
    line[at..].split_whitespace().next().unwrap().to_owned()
}

/// Kills the inbox a test's servers started (its process id is in `inbox.json`).
struct InboxGuard<'a>(&'a Path);

impl Drop for InboxGuard<'_> {
    fn drop(&mut self) {
        if let Ok(text) = std::fs::read_to_string(self.0.join("inbox.json"))
            && let Ok(address) = serde_json::from_str::<Value>(&text)
            && let Some(pid) = address["pid"].as_u64()
            && pid > 0
        {
            let _ = Command::new("kill").arg(pid.to_string()).status();
        }
    }
}

#[test]
fn an_mcp_server_with_a_surface_starts_one_inbox_for_every_server_of_its_state_directory() {
    let home = tempfile::tempdir().unwrap();
    let state = home.path().join("sessions");
    let state_arg = state.to_str().unwrap();
    let _inbox = InboxGuard(&state);
    let args = [
        "--mode",
        "timed",
        "--state-dir",
        state_arg,
        "--web",
        "--web-addr",
        "127.0.0.1:0",
    ];
    let first = Server::start(home.path(), &args);
    let line = first.until("ask-user mcp: logs in");
    let page = page_of(&line);
    assert!(page.starts_with("http://127.0.0.1:"), "{line}");
    assert!(
        line.contains(state_arg),
        "it says where its logs go: {line}"
    );
    // A second server (another client's session) finds the inbox that runs.
    let second = Server::start(home.path(), &["--inbox", "--state-dir", state_arg]);
    let again = second.until("ask-user mcp: logs in");
    assert_eq!(page_of(&again), page, "one inbox for both: {again}");
    let out = ask_user(home.path())
        .args(["inbox", "--url", "--state-dir", state_arg])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let url = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    assert!(
        url.starts_with(&format!("{page}?token=")),
        "{url} vs {page}"
    );
    // The token is only there: a server's line ends up in its client's logs.
    let token = url.split("?token=").nth(1).unwrap();
    assert!(!line.contains(token) && !again.contains(token), "{line}");
    // Starting one more inbox by hand says which one runs (without its token), and starts
    // nothing.
    let out = ask_user(home.path())
        .args(["inbox", "--state-dir", state_arg])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains(&page) && !said.contains(token), "{said}");
    let log = std::fs::read_to_string(state.join("inbox.log")).unwrap_or_default();
    assert!(
        !log.contains(token),
        "the token stays out of inbox.log: {log}"
    );
    // The socket and the address file are the owner's alone.
    for name in ["inbox.sock", "inbox.json", "inbox.log"] {
        let mode = std::fs::metadata(state.join(name))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o077, 0, "{name} is {mode:o}");
    }
}

#[test]
fn inbox_url_says_when_none_runs() {
    let home = tempfile::tempdir().unwrap();
    let out = ask_user(home.path())
        .args(["inbox", "--url"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(out.stdout.is_empty());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("no inbox runs for"),
        "{out:?}"
    );
}

/// A continued call `call_id` in the log `name` of `dir`, from a timed `ask` whose window closes.
fn continued(home: &Path, dir: &Path, name: &str, call_id: &str, question: &str) {
    std::fs::create_dir_all(dir).unwrap();
    let arguments = format!(
        r#"{{"questions":[{{"id":"q","question":"{question}","options":[{{"label":"yes"}},{{"label":"no"}}]}}]}}"#
    );
    let mut child = ask_user(home)
        .args([
            "ask",
            "--mode",
            "timed",
            "--timeout",
            "1",
            "--call-id",
            call_id,
            "--log",
        ])
        .arg(dir.join(name))
        .arg("-")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(arguments.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        String::from_utf8_lossy(&out.stdout).contains(r#""pending":true"#),
        "{out:?}"
    );
}

#[test]
fn pending_lists_every_session_of_the_state_directory_and_answer_finds_a_call_by_its_id() {
    let home = tempfile::tempdir().unwrap();
    // The default state directory: `ask-user mcp`'s, under XDG_STATE_HOME.
    let state = home.path().join("state/ask-user/mcp");
    continued(home.path(), &state, "older.jsonl", "call_a", "Ship it?");
    // Call times are kept in milliseconds: the second is newer.
    std::thread::sleep(Duration::from_millis(20));
    continued(home.path(), &state, "newer.jsonl", "call_b", "Tag it?");
    let out = ask_user(home.path()).arg("pending").output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[0].split_whitespace().collect::<Vec<_>>(),
        ["SESSION", "CALL", "ID", "STATE", "AGE", "QUESTIONS"],
        "{text}"
    );
    // Newest first, each with its session.
    let words = |line: &str| {
        line.split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" ")
    };
    assert_eq!(words(lines[1]), "newer.jsonl call_b continued", "{text}");
    assert_eq!(words(lines[3]), "older.jsonl call_a continued", "{text}");
    assert!(text.ends_with("2 open or continued\n"), "{text}");
    let json = ask_user(home.path())
        .args(["pending", "--json"])
        .output()
        .unwrap();
    let listed: Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(listed["questions"][0]["callId"], "call_b");
    assert!(listed["questions"][0]["askedAtMs"].as_i64().is_some());

    // The call id alone names the question; the session is found in the state directory.
    let out = ask_user(home.path())
        .args(["answer", "call_a", "--pick", "q=yes"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stdout).contains(r#""selected":["yes"]"#));
    let out = ask_user(home.path())
        .args(["answer", "call_a", "--pick", "q=no"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(9), "answered once only: {out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("error[ALREADY_ANSWERED]: call call_a is answered already"),
        "{out:?}"
    );
    let out = ask_user(home.path()).arg("pending").output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        !text.contains("call_a") && text.contains("call_b"),
        "{text}"
    );
}

#[test]
fn a_missing_state_directory_lists_nothing() {
    let home = tempfile::tempdir().unwrap();
    let out = ask_user(home.path()).arg("pending").output().unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "no open or continued questions\n"
    );
}

#[test]
fn the_configuration_file_sets_what_the_flags_leave_out() {
    let home = tempfile::tempdir().unwrap();
    let config = home.path().join("config/ask-user");
    std::fs::create_dir_all(&config).unwrap();
    let state = home.path().join("elsewhere");
    std::fs::write(
        config.join("config.toml"),
        format!(
            "state_dir = {:?}\nmode = \"timed\"\ntimeout = 45\n",
            state.to_str().unwrap()
        ),
    )
    .unwrap();
    // The mode and the window from the file.
    let out = ask_user(home.path()).arg("schema").output().unwrap();
    let schema: Value = serde_json::from_slice(&out.stdout).unwrap();
    let timeout = &schema["parameters"]["properties"]["timeout"];
    assert!(timeout.is_object(), "timed from the file: {schema}");
    assert!(timeout.to_string().contains("45"), "{timeout}");
    // A flag overrides the file.
    let out = ask_user(home.path())
        .args(["schema", "--mode", "legacy"])
        .output()
        .unwrap();
    let schema: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(schema["parameters"]["properties"]["timeout"].is_null());
    // The state directory from the file: `pending` lists it.
    continued(home.path(), &state, "s.jsonl", "call_c", "Merge?");
    let out = ask_user(home.path()).arg("pending").output().unwrap();
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("call_c"),
        "{out:?}"
    );
    // A malformed file stops every command, naming the file and the line.
    std::fs::write(config.join("config.toml"), "mode = \"timed\"\nbogus = 1\n").unwrap();
    let out = ask_user(home.path()).arg("pending").output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("config.toml:2"), "{err}");
    assert!(err.contains("bogus"), "{err}");
}

#[test]
fn a_bell_in_the_configuration_file_alone_starts_no_inbox_for_a_server() {
    let home = tempfile::tempdir().unwrap();
    let config = home.path().join("config/ask-user");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(config.join("config.toml"), "[notify]\nbell = true\n").unwrap();
    let state = home.path().join("sessions");
    let server = Server::start(home.path(), &["--state-dir", state.to_str().unwrap()]);
    let line = server.until("ask-user mcp: logs in");
    assert!(line.contains("pending"), "no inbox: {line}");
    assert!(!state.join("inbox.sock").exists());
}

/// A secret whose variable is not set fails only the command that needs it, naming the key:
/// `pending`, `answer` and `schema` run; `mcp` runs and says, once, which configured surface it
/// leaves out and why; `config` says so too; a command that needs `[pg]` fails.
#[test]
fn a_missing_secret_fails_only_the_command_that_needs_it() {
    let home = tempfile::tempdir().unwrap();
    let config = home.path().join("config/ask-user");
    std::fs::create_dir_all(&config).unwrap();
    let state = home.path().join("sessions");
    let file = config.join("config.toml");
    std::fs::write(
        &file,
        "[notify.ntfy]\ntopic_env = \"ASK_USER_TEST_TOPIC_NOT_SET\"\n",
    )
    .unwrap();
    let state_arg = state.to_str().unwrap();
    continued(home.path(), &state, "s.jsonl", "call_c", "Merge?");
    let out = ask_user(home.path())
        .args(["pending", "--state-dir", state_arg])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let out = ask_user(home.path())
        .args([
            "answer",
            "call_nobody",
            "--skip",
            "q",
            "--state-dir",
            state_arg,
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    let out = ask_user(home.path()).arg("config").output().unwrap();
    let printed = String::from_utf8_lossy(&out.stdout);
    assert!(
        printed.contains("# [notify.ntfy] left out: ")
            && printed.contains("ASK_USER_TEST_TOPIC_NOT_SET is not set"),
        "{printed}"
    );
    let server = Server::start(home.path(), &["--state-dir", state_arg]);
    let line = server.until("[notify.ntfy] is not used");
    assert!(
        line.contains("config.toml:2:13: `topic_env`: the environment variable ASK_USER_TEST_TOPIC_NOT_SET is not set"),
        "{line}"
    );
    assert!(
        line.contains("`env` in the client's configuration"),
        "{line}"
    );

    std::fs::write(&file, "[pg]\nurl_env = \"ASK_USER_TEST_PG_NOT_SET\"\n").unwrap();
    let out = ask_user(home.path())
        .args(["pending", "--state-dir", state_arg])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains("error[BAD_CONFIG]")
            && said.contains(
                "`url_env`: the environment variable ASK_USER_TEST_PG_NOT_SET is not set"
            ),
        "{said}"
    );
}

/// The inbox's own log lines escape what a peer sent (a hostile message tag reaches stderr as
/// text, never as terminal control), and a state directory others could read is made private
/// when the inbox starts, with a warning.
#[test]
fn the_inbox_escapes_a_peers_bytes_and_keeps_its_directory_private() {
    let home = tempfile::tempdir().unwrap();
    let state = home.path().join("state-dir");
    std::fs::create_dir_all(&state).unwrap();
    std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o755)).unwrap();
    let state_arg = state.display().to_string();
    let inbox = Server::run(
        home.path(),
        &["inbox", "--addr", "127.0.0.1:0", "--state-dir", &state_arg],
    );
    let mut said = inbox.lines_until("on one page");
    assert_eq!(
        std::fs::metadata(&state).unwrap().permissions().mode() & 0o777,
        0o700
    );
    let mut peer = std::os::unix::net::UnixStream::connect(state.join("inbox.sock")).unwrap();
    peer.write_all(b"{\"t\":\"\\u001b[31mX\\u0007\"}\n")
        .unwrap();
    said.extend(inbox.lines_until("cannot be read"));
    let warned = said.last().unwrap().clone();
    drop(inbox);
    assert!(
        said.iter().any(|l| l.contains("made private")),
        "no warning for the state directory: {said:?}"
    );
    assert!(
        !said
            .iter()
            .any(|l| l.contains('\u{1b}') || l.contains('\u{7}')),
        "a raw control byte reached stderr: {said:?}"
    );
    assert!(warned.contains("\\u{1b}[31mX\\u{7}"), "{warned}");
}
