//! Native asks of a real Codex CLI (SPEC §9.7), pinned in `tests/agents/package-lock.json`, its
//! model stood in for by `tests/agents/responses_model.py` on loopback: the model runs a command
//! that needs an approval, Codex's `PermissionRequest` hook (installed and trusted by `ask-user
//! hooks install codex`, which asks Codex's own app-server for the hook's hash) asks the
//! machine's inbox, and the test answers from the shell with `ask-user answer`.
//!
//! Codex is run as `codex exec --approve-for-me`, the way it runs its hook without a terminal
//! (`-c approval_policy="on-request"`, a read-only sandbox, the command asking for more); and as
//! `ask-user codex PROMPT`, our client of `codex app-server`, whose file-change approval and
//! `request_user_input` are answered on the inbox page.
//!
//! It needs `ASK_USER_CODEX` (the `codex` command; `.ci/run` installs it with `npm ci`) and
//! Python (`ASK_USER_PYTHON`, else `python3`). Without `ASK_USER_CODEX` the tests fail when
//! `CI=true`, and otherwise say they were skipped.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use ask_user_testkit::process::{Running, free_port, post_json, wait_for_port};
use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_ask-user");

/// How long a step may take on a loaded two-core machine.
const WITHIN: Duration = Duration::from_mins(1);

fn codex() -> Option<PathBuf> {
    ask_user_testkit::required_env("ASK_USER_CODEX", "the `codex` command of Codex CLI")
        .map(PathBuf::from)
}

/// One person's machine: a home with Codex's configuration pointing at the scripted model, a
/// project folder, the inbox.
struct Machine {
    home: tempfile::TempDir,
    project: tempfile::TempDir,
    codex: PathBuf,
    model_log: PathBuf,
    page: String,
    token: String,
    _model: Running,
    inbox: Running,
}

/// The environment of `ask-user` and Codex: the person's `home`, both on `PATH`.
fn env(home: &Path, codex: &Path) -> Vec<(&'static str, String)> {
    let path = format!(
        "{}:{}:{}",
        Path::new(BIN).parent().unwrap().display(),
        codex.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let at = |sub: &str| home.join(sub).display().to_string();
    vec![
        ("HOME", home.display().to_string()),
        ("CODEX_HOME", at(".codex")),
        ("XDG_STATE_HOME", at(".local/state")),
        ("XDG_CONFIG_HOME", at(".config")),
        ("PATH", path),
    ]
}

/// Codex's configuration before the bridge: the scripted model (`gpt-5.5`: Codex's own
/// metadata for it offers `apply_patch`), approvals on request.
fn config(port: u16) -> String {
    format!(
        "# the person's own\nmodel = \"gpt-5.5\"\nmodel_provider = \"scripted\"\napproval_policy = \"on-request\"\nsandbox_mode = \"read-only\"\n\n[features]\nplugins = false\n\n[model_providers.scripted]\nname = \"scripted\"\nbase_url = \"http://127.0.0.1:{port}/v1\"\nwire_api = \"responses\"\n"
    )
}

impl Machine {
    /// The model runs `command` outside the sandbox (so Codex asks); the bridge is not
    /// installed yet.
    fn start(codex: PathBuf, command: &str) -> Self {
        let call = json!([{"name": "exec_command", "arguments": {
            "cmd": command, "sandbox_permissions": "require_escalated",
            "justification": "Make the file"}}]);
        Self::scripted(codex, &call)
    }

    /// The model makes `calls` (see `responses_model.py`).
    fn scripted(codex: PathBuf, calls: &Value) -> Self {
        let home = tempfile::tempdir().unwrap();
        let project = tempfile::tempdir().unwrap();
        let model_log = home.path().join("model.log");
        let port = free_port();
        std::fs::create_dir_all(home.path().join(".codex")).unwrap();
        std::fs::write(home.path().join(".codex/config.toml"), config(port)).unwrap();
        let python = std::env::var("ASK_USER_PYTHON").unwrap_or_else(|_| "python3".into());
        let model = Command::new(python)
            .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/agents/responses_model.py"))
            .arg(port.to_string())
            .arg(&model_log)
            .arg(calls.to_string())
            .spawn()
            .unwrap();
        let (inbox, url) = ask_user_testkit::process::start_reading_line(
            Command::new(BIN).envs(env(home.path(), &codex)).args([
                "inbox",
                "--addr",
                "127.0.0.1:0",
            ]),
        );
        let (page, token) = url.split_once("/?token=").expect("the inbox's URL");
        let (page, token) = (page.to_owned(), token.to_owned());
        wait_for_port(port, WITHIN, "the scripted model");
        Self {
            home,
            project,
            codex,
            model_log,
            page,
            token,
            _model: Running(model),
            inbox,
        }
    }

    fn env(&self) -> Vec<(&'static str, String)> {
        env(self.home.path(), &self.codex)
    }

    /// `ask-user` as the person runs it, in the project folder.
    fn command(&self) -> Command {
        let mut command = Command::new(BIN);
        (command.current_dir(self.project.path()))
            .envs(self.env())
            .env_remove("ASK_USER_WEBHOOK_SECRET");
        command
    }

    fn ask_user(&self, args: &[&str]) -> String {
        let output = self.command().args(args).output().unwrap();
        assert!(output.status.success(), "{output:?}");
        String::from_utf8(output.stdout).unwrap()
    }

    fn settings(&self) -> String {
        std::fs::read_to_string(self.home.path().join(".codex/config.toml")).unwrap()
    }

    /// `codex exec --approve-for-me`: approvals go to its `PermissionRequest` hook.
    fn exec(&self) -> Running {
        self.exec_in(self.project.path())
    }

    /// The same, in `folder`.
    fn exec_in(&self, folder: &Path) -> Running {
        let child = Command::new(&self.codex)
            .args([
                "exec",
                "--approve-for-me",
                "--skip-git-repo-check",
                "make the file",
            ])
            .current_dir(folder)
            .envs(self.env())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        Running(child)
    }

    /// Waits for the bridge's ask; its call id and questions.
    fn asked(&self) -> (String, Value) {
        self.asked_after(&[])
    }

    /// Waits for an ask whose call is not one of `seen`.
    fn asked_after(&self, seen: &[&str]) -> (String, Value) {
        let start = Instant::now();
        loop {
            let listed: Value =
                serde_json::from_str(&self.ask_user(&["pending", "--json"])).unwrap();
            let fresh = (listed["questions"].as_array().into_iter().flatten())
                .find(|q| !seen.contains(&q["callId"].as_str().unwrap_or_default()));
            if let Some(ask) = fresh {
                return (
                    ask["callId"].as_str().unwrap().to_owned(),
                    ask["questions"].clone(),
                );
            }
            assert!(
                start.elapsed() < WITHIN,
                "Codex's prompt never reached the inbox"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// The tool output the model received, once Codex ended.
    fn tool_output(&self, codex: &mut Running) -> String {
        let outputs = self.tool_outputs();
        let _ = codex.0.wait();
        outputs[0]["output"].as_str().unwrap().to_owned()
    }

    /// Answers `call` on the inbox page, as its form posts.
    fn answer_on_the_page(&self, call: &str, answers: &Value) {
        let url = format!("{}/cards/{call}/answer?token={}", self.page, self.token);
        post_json(&url, &json!({ "answers": answers }).to_string());
    }

    /// What `ask-user pending --json` lists now.
    fn pending(&self) -> Vec<Value> {
        let listed: Value = serde_json::from_str(&self.ask_user(&["pending", "--json"])).unwrap();
        listed["questions"].as_array().cloned().unwrap_or_default()
    }

    /// The processes of this machine's home (by their environment) whose command line has
    /// `words` in a row.
    fn processes(&self, words: &[&str]) -> Vec<i32> {
        let home = format!("HOME={}", self.home.path().display());
        let mut found = Vec::new();
        for entry in std::fs::read_dir("/proc").unwrap().flatten() {
            let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
                continue;
            };
            let read = |what: &str| std::fs::read(entry.path().join(what)).unwrap_or_default();
            let split = |bytes: Vec<u8>| -> Vec<String> {
                (bytes.split(|b| *b == 0))
                    .map(|part| String::from_utf8_lossy(part).into_owned())
                    .collect()
            };
            let (command, environ) = (split(read("cmdline")), split(read("environ")));
            let has = command.windows(words.len()).any(|w| w == words);
            if has && environ.contains(&home) {
                found.push(pid);
            }
        }
        found
    }

    /// Sends `signal` to each process of `pids`.
    fn signal(pids: &[i32], signal: &str) {
        for pid in pids {
            let _ = Command::new("kill")
                .args([signal, &pid.to_string()])
                .status();
        }
    }

    /// Every tool output the model received, once it has them all.
    fn tool_outputs(&self) -> Vec<Value> {
        let start = Instant::now();
        let result = self.model_log.with_extension("log.result");
        loop {
            let read = std::fs::read_to_string(&result).ok();
            if let Some(value) = read.and_then(|text| serde_json::from_str::<Value>(&text).ok()) {
                return value.as_array().unwrap().clone();
            }
            assert!(
                start.elapsed() < WITHIN,
                "the model never got the command's output"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

/// `ask-user hooks install codex`, twice, trusted by the real Codex; then uninstalled, the
/// configuration byte for byte as before (N6).
#[test]
fn n6_codex_install_twice_trusted_by_codex_then_uninstall_leaves_the_config_byte_identical() {
    let Some(codex) = codex() else { return };
    let machine = Machine::start(codex, "true");
    let before = machine.settings();
    let said = machine.ask_user(&["hooks", "install", "codex"]);
    assert!(
        said.contains("installed in") && said.contains("trusted for Codex"),
        "{said}"
    );
    let installed = machine.settings();
    assert!(
        installed.starts_with(&before),
        "theirs kept as written:\n{installed}"
    );
    assert!(
        installed.contains("trusted_hash = \"sha256:"),
        "{installed}"
    );
    let again = machine.ask_user(&["hooks", "install", "codex"]);
    assert!(
        again.contains("already installed") && again.contains("Codex already trusts it"),
        "{again}"
    );
    assert_eq!(machine.settings(), installed);
    let status = machine.ask_user(&["hooks", "status", "codex"]);
    assert!(
        status.contains("PermissionRequest") && status.contains("(Codex: trusted)"),
        "{status}"
    );
    let said = machine.ask_user(&["hooks", "uninstall", "codex"]);
    assert!(said.contains("is as it was"), "{said}");
    assert_eq!(machine.settings(), before);
}

/// N1 with Codex: a command approval answered from the shell through the hook; Codex runs the
/// command and its model reads the output.
#[test]
fn n1_codex_command_approval_answered_from_the_shell_runs_the_command() {
    let Some(codex) = codex() else { return };
    let machine = Machine::start(codex, "touch made.txt && echo made-by-codex");
    machine.ask_user(&["hooks", "install", "codex"]);
    let mut agent = machine.exec();
    let (call, questions) = machine.asked();
    assert!(call.starts_with("codex-"), "{call}");
    let text = questions[0]["question"].as_str().unwrap();
    assert!(
        text.contains("$ touch made.txt && echo made-by-codex"),
        "{text}"
    );
    let labels: Vec<&str> = (questions[0]["options"].as_array().unwrap().iter())
        .map(|o| o["label"].as_str().unwrap())
        .collect();
    assert_eq!(labels, ["Allow", "Deny"]);
    let said = machine
        .command()
        .args(["answer", &call, "--pick", "decision=Allow"])
        .output()
        .unwrap();
    assert!(said.status.success(), "{said:?}");
    let output = machine.tool_output(&mut agent);
    assert!(output.contains("made-by-codex"), "{output}");
    assert!(machine.project.path().join("made.txt").exists());
}

/// N2 with Codex: denied from the shell with a message; nothing runs, and Codex's model reads
/// the message and where it came from.
#[test]
fn n2_codex_command_denied_from_the_shell_the_model_reads_the_message() {
    let Some(codex) = codex() else { return };
    let machine = Machine::start(codex, "touch made.txt && echo made-by-codex");
    machine.ask_user(&["hooks", "install", "codex"]);
    let mut agent = machine.exec();
    let (call, _) = machine.asked();
    let said = machine
        .command()
        .args(["answer", &call, "--pick", "decision=Deny"])
        .args(["--custom", "decision=Not here: use the scratch folder"])
        .output()
        .unwrap();
    assert!(said.status.success(), "{said:?}");
    let output = machine.tool_output(&mut agent);
    assert!(
        output.contains("Not here: use the scratch folder (denied from the shell)"),
        "{output}"
    );
    assert!(!machine.project.path().join("made.txt").exists());
}

/// Through our client of Codex's app-server (`ask-user codex PROMPT`): a file-change approval and
/// Codex's own `request_user_input` answered on the inbox page; Codex writes the file and its
/// model reads the answer under the question's own id.
#[test]
fn n3_codex_app_server_file_change_and_question_answered_on_the_page() {
    let Some(codex) = codex() else { return };
    let calls = json!([
        {"name": "apply_patch", "input": "*** Begin Patch\n*** Add File: hello.txt\n+hello from codex\n*** End Patch\n"},
        {"name": "request_user_input", "arguments": {"questions": [{"id": "db", "header": "Database",
            "question": "Which database?", "options": [
                {"label": "SQLite", "description": "a file"},
                {"label": "Postgres", "description": "a server"}]}]}},
    ]);
    let machine = Machine::scripted(codex, &calls);
    let mut turn = machine.command();
    turn.args([
        "codex",
        "-c",
        "features.default_mode_request_user_input=true",
    ])
    .arg("add a greeting")
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let turn = turn.spawn().unwrap();
    let (call, questions) = machine.asked();
    let text = questions[0]["question"].as_str().unwrap();
    let file = machine
        .project
        .path()
        .canonicalize()
        .unwrap()
        .join("hello.txt");
    assert!(
        text.contains(&format!("add {}\n+ hello from codex", file.display())),
        "{text}"
    );
    machine.answer_on_the_page(&call, &json!([{"id": "decision", "selected": ["Allow"]}]));
    let (second, questions) = machine.asked_after(&[&call]);
    assert_eq!(questions[0]["question"], "Which database?");
    assert_eq!(questions[0]["options"][0]["label"], "SQLite");
    let id = questions[0]["id"].as_str().unwrap();
    machine.answer_on_the_page(&second, &json!([{"id": id, "selected": ["SQLite"]}]));
    let outputs = machine.tool_outputs();
    let ended = turn.wait_with_output().unwrap();
    assert!(ended.status.success(), "{ended:?}");
    assert_eq!(String::from_utf8_lossy(&ended.stdout).trim(), "done");
    let patched = outputs[0]["output"].as_str().unwrap();
    assert!(patched.contains("A hello.txt"), "{patched}");
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "hello from codex\n"
    );
    let answered: Value = serde_json::from_str(outputs[1]["output"].as_str().unwrap()).unwrap();
    assert_eq!(
        answered,
        json!({"answers": {"db": {"answers": ["SQLite"]}}})
    );
}

impl Drop for Machine {
    fn drop(&mut self) {
        // An inbox a hook started when this machine's was killed.
        Self::signal(&self.processes(&["inbox", "--state-dir"]), "-KILL");
    }
}

/// N5 with Codex: the inbox is killed (`SIGKILL`) while Codex's hook waits; the hook's link
/// starts an inbox again and hands the ask over, nothing is lost, the shell's answer reaches
/// Codex once, and a second answer is refused.
#[test]
fn n5_codex_inbox_killed_while_the_hook_waits_the_answer_still_reaches_codex() {
    let Some(codex) = codex() else { return };
    let mut machine = Machine::start(codex, "touch made.txt && echo made-by-codex");
    machine.ask_user(&["hooks", "install", "codex"]);
    let mut agent = machine.exec();
    let (call, _) = machine.asked();
    let _ = machine.inbox.0.kill();
    let _ = machine.inbox.0.wait();
    // The ask is still listed: its log keeps it, and the link comes back.
    assert_eq!(machine.pending()[0]["callId"], call.as_str());
    let start = Instant::now();
    let answered = loop {
        let said = (machine.command())
            .args(["answer", &call, "--pick", "decision=Allow"])
            .output()
            .unwrap();
        if said.status.success() {
            break said;
        }
        assert!(start.elapsed() < WITHIN, "never answerable again: {said:?}");
        std::thread::sleep(Duration::from_millis(300));
    };
    assert!(
        String::from_utf8_lossy(&answered.stderr).contains("answered in its window"),
        "{answered:?}"
    );
    let output = machine.tool_output(&mut agent);
    assert!(output.contains("made-by-codex"), "{output}");
    let again = (machine.command())
        .args(["answer", &call, "--pick", "decision=Deny"])
        .output()
        .unwrap();
    assert!(!again.status.success(), "answered twice: {again:?}");
}

/// Codex asks through its hook; the hook is sent `signal`; the ask must leave `pending` within
/// `within`, and then cannot be answered, and nothing runs. The machine, for more checks.
fn hook_killed(codex: PathBuf, signal: &str, within: Duration) -> Machine {
    let machine = Machine::start(codex, "touch made.txt && echo made-by-codex");
    machine.ask_user(&["hooks", "install", "codex"]);
    let agent = machine.exec();
    let (call, _) = machine.asked();
    let hooks = machine.processes(&["hook", "codex"]);
    assert_eq!(hooks.len(), 1, "one bridge waits");
    Machine::signal(&hooks, signal);
    let start = Instant::now();
    while !machine.pending().is_empty() {
        assert!(
            start.elapsed() < within,
            "still listed: {:?}",
            machine.pending()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let said = (machine.command())
        .args(["answer", &call, "--pick", "decision=Allow"])
        .output()
        .unwrap();
    assert!(
        !said.status.success(),
        "an ended ask was answered: {said:?}"
    );
    drop(agent);
    assert!(!machine.project.path().join("made.txt").exists());
    machine
}

/// A hook killed (`SIGTERM`, as an agent stops a hook) while its ask waits: the ask leaves the
/// inbox within 2 s and ends cancelled, never answered.
#[test]
fn n7_codex_hook_killed_the_ask_leaves_the_inbox() {
    let Some(codex) = codex() else { return };
    hook_killed(codex, "-TERM", Duration::from_secs(2));
}

/// Two agents asking at once: both asks are in the inbox, each answer reaches its own agent.
#[test]
fn two_codex_agents_asking_at_once_each_get_their_own_answer() {
    let Some(codex) = codex() else { return };
    let machine = Machine::start(codex, "touch made.txt && echo made-by-codex");
    machine.ask_user(&["hooks", "install", "codex"]);
    let other = tempfile::tempdir().unwrap();
    let mut first = machine.exec();
    let (one, _) = machine.asked();
    let mut second = machine.exec_in(other.path());
    let (two, questions) = machine.asked_after(&[&one]);
    let folder = other.path().canonicalize().unwrap();
    let text = questions[0]["question"].as_str().unwrap();
    assert!(text.contains(&folder.display().to_string()), "{text}");
    assert_eq!(machine.pending().len(), 2);
    // The second first: it allows; the first is denied.
    for (call, pick) in [(&two, "decision=Allow"), (&one, "decision=Deny")] {
        let said = (machine.command())
            .args(["answer", call, "--pick", pick])
            .output()
            .unwrap();
        assert!(said.status.success(), "{said:?}");
    }
    let (first, second) = (first.0.wait().unwrap(), second.0.wait().unwrap());
    assert!(first.success() && second.success());
    assert!(folder.join("made.txt").exists(), "the allowed one ran");
    assert!(
        !machine.project.path().join("made.txt").exists(),
        "the denied one did not"
    );
}

/// A hook killed outright (`SIGKILL`: nothing of it runs again) leaves its log's call open with
/// no writer; the inbox's sweep ends it `ASK_ABORTED` within seconds, so no surface lists an ask
/// nobody waits on, and it cannot be answered.
#[test]
fn n7_codex_hook_killed_outright_its_ask_is_ended_and_leaves_the_inbox() {
    let Some(codex) = codex() else { return };
    let machine = hook_killed(codex, "-KILL", Duration::from_secs(10));
    let state = machine.home.path().join(".local/state/ask-user/mcp");
    let log = (std::fs::read_dir(&state).unwrap().flatten())
        .map(|e| e.path())
        .find(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("codex-")
        })
        .expect("the ask's log");
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.contains("ASK_ABORTED"), "{text}");
}
