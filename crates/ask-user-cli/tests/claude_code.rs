//! Native asks of a real Claude Code (SPEC §9.7, §12.11), pinned in `tests/agents/package-lock.json`,
//! its model stood in for by `tests/agents/anthropic_model.py` on loopback: the model calls Bash,
//! Claude Code's `PermissionRequest` hook (installed by `ask-user hooks install claude-code`)
//! asks the machine's inbox, and the test answers on the inbox page or from the shell. In print
//! mode (`-p`) no dialog of its own is shown and a prompt without a hook decision is refused.
//!
//! The interactive terminal UI runs under tmux (`--permission-mode manual`, its first-run
//! questions answered in a seeded `~/.claude.json`): its own dialog and picker race the inbox.
//!
//! It needs `ASK_USER_CLAUDE` (the `claude` command; `.ci/run` installs it with `npm ci`),
//! tmux, and Python (`ASK_USER_PYTHON`, else `python3`). Without `ASK_USER_CLAUDE` the tests fail when
//! `CI=true`, and otherwise say they were skipped.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use ask_user_testkit::process::{Running, free_port, json_receiver, post_json, wait_for_port};
use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_ask-user");

/// The key Claude Code is given: any, since the model is scripted.
const API_KEY: &str = "sk-ant-scripted-model-000000000000000000";

/// The model's Bash call.
fn bash(command: &str) -> Value {
    json!({"name": "Bash", "input": {"command": command, "description": "Make the file"}})
}

/// How long a step may take on a loaded two-core machine.
const WITHIN: Duration = Duration::from_mins(1);

fn claude() -> Option<PathBuf> {
    ask_user_testkit::required_env("ASK_USER_CLAUDE", "the `claude` command of Claude Code")
        .map(PathBuf::from)
}

/// One person's machine: a home, a project folder, the inbox, the scripted model.
struct Machine {
    home: tempfile::TempDir,
    project: tempfile::TempDir,
    model_log: PathBuf,
    model_port: u16,
    page: String,
    token: String,
    _model: Running,
    _inbox: Running,
}

impl Machine {
    /// The model calls `tool` (`{"name","input"}`); the bridge's hooks are installed, and
    /// `extra_hook` (a `PermissionRequest` command of the person's own) too when given.
    fn start(tool: &Value, extra_hook: Option<&str>) -> Self {
        Self::start_with(tool, extra_hook, &[])
    }

    /// As [`Machine::start`], the inbox started with `inbox_args` too (notifications).
    fn start_with(tool: &Value, extra_hook: Option<&str>, inbox_args: &[&str]) -> Self {
        let home = tempfile::tempdir().unwrap();
        let project = tempfile::tempdir().unwrap();
        let model_log = home.path().join("model.log");
        let model_port = free_port();
        let python = std::env::var("ASK_USER_PYTHON").unwrap_or_else(|_| "python3".into());
        let model = Command::new(python)
            .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/agents/anthropic_model.py"))
            .arg(model_port.to_string())
            .arg(&model_log)
            .arg(tool.to_string())
            .spawn()
            .unwrap();
        let model = Running(model);
        // What Claude Code's first run would have asked: onboarding done, this key approved, the
        // project folder trusted.
        let folder = project.path().canonicalize().unwrap();
        let seeded = json!({
            "hasCompletedOnboarding": true,
            "customApiKeyResponses": {"approved": [&API_KEY[API_KEY.len() - 20..]], "rejected": []},
            "projects": {folder.display().to_string(): {"hasTrustDialogAccepted": true}},
        });
        std::fs::write(home.path().join(".claude.json"), seeded.to_string()).unwrap();
        let installed = Self::ask_user(home.path(), &["hooks", "install", "claude-code"]);
        assert!(installed.contains("installed in"), "{installed}");
        if let Some(extra) = extra_hook {
            let file = home.path().join(".claude/settings.json");
            let mut settings: Value =
                serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
            settings["hooks"]["PermissionRequest"]
                .as_array_mut()
                .unwrap()
                .push(json!({"matcher": "*", "hooks": [{"type": "command", "command": extra}]}));
            std::fs::write(&file, settings.to_string()).unwrap();
        }
        // The inbox, on a free port; the hook finds it through the state directory.
        let (inbox, url) = ask_user_testkit::process::start_reading_line(
            Self::command(home.path())
                .args(["inbox", "--addr", "127.0.0.1:0"])
                .args(inbox_args),
        );
        let (page, token) = url.split_once("/?token=").expect("the inbox's URL");
        wait_for_port(model_port, WITHIN, "the scripted model");
        Self {
            page: page.to_owned(),
            token: token.to_owned(),
            home,
            project,
            model_log,
            model_port,
            _model: model,
            _inbox: inbox,
        }
    }

    /// `ask-user` as the person runs it: their home, no configuration file.
    fn command(home: &Path) -> Command {
        let mut command = Command::new(BIN);
        command
            .env("HOME", home)
            .env("XDG_STATE_HOME", home.join(".local/state"))
            .env("XDG_CONFIG_HOME", home.join(".config"))
            .env_remove("ASK_USER_WEBHOOK_SECRET");
        command
    }

    fn ask_user(home: &Path, args: &[&str]) -> String {
        let output = Self::command(home).args(args).output().unwrap();
        assert!(output.status.success(), "{output:?}");
        String::from_utf8(output.stdout).unwrap()
    }

    /// Claude Code's environment: the person's home, `ask-user` on its `PATH`, the scripted
    /// model, nothing sent anywhere else.
    fn agent_env(&self) -> Vec<(&'static str, String)> {
        let home = self.home.path();
        let path = format!(
            "{}:{}",
            Path::new(BIN).parent().unwrap().display(),
            std::env::var("PATH").unwrap_or_default()
        );
        vec![
            ("HOME", home.display().to_string()),
            (
                "XDG_STATE_HOME",
                home.join(".local/state").display().to_string(),
            ),
            (
                "XDG_CONFIG_HOME",
                home.join(".config").display().to_string(),
            ),
            ("PATH", path),
            (
                "ANTHROPIC_BASE_URL",
                format!("http://127.0.0.1:{}", self.model_port),
            ),
            ("ANTHROPIC_API_KEY", API_KEY.to_owned()),
            ("DISABLE_AUTOUPDATER", "1".to_owned()),
            ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1".to_owned()),
            ("DISABLE_TELEMETRY", "1".to_owned()),
            // MCP tools listed to the model as they are, not behind a tool search.
            ("ENABLE_TOOL_SEARCH", "false".to_owned()),
        ]
    }

    /// Claude Code in print mode, with the bridge's hooks.
    fn claude(&self, claude: &Path) -> Running {
        let child = Command::new(claude)
            .args(["-p", "make the file", "--permission-mode", "default"])
            .current_dir(self.project.path())
            .envs(self.agent_env())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        Running(child)
    }

    /// What `ask-user pending --json` lists.
    fn pending(&self) -> Vec<Value> {
        let listed: Value =
            serde_json::from_str(&Self::ask_user(self.home.path(), &["pending", "--json"]))
                .unwrap();
        listed["questions"].as_array().cloned().unwrap_or_default()
    }

    /// Waits for the bridge's ask; its call id and questions.
    fn asked(&self) -> (String, Value) {
        let start = Instant::now();
        loop {
            if let Some(ask) = self.pending().into_iter().next() {
                return (
                    ask["callId"].as_str().unwrap().to_owned(),
                    ask["questions"].clone(),
                );
            }
            assert!(
                start.elapsed() < WITHIN,
                "Claude Code's prompt never reached the inbox"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// Answers `call` on the inbox page, as its form posts.
    fn answer_on_the_page(&self, call: &str, answers: &Value) {
        let url = format!("{}/cards/{call}/answer?token={}", self.page, self.token);
        post(&url, &json!({ "answers": answers }).to_string());
    }
}

/// Posts `body` as JSON to `url`, as a page or a notification's button does; it must succeed.
fn post(url: &str, body: &str) {
    post_json(url, body);
}

impl Machine {
    /// Adds `ask-user ARGS` to Claude Code's MCP servers (user scope) as `ask-user`.
    fn serve_mcp(&self, args: &[&str]) {
        let file = self.home.path().join(".claude.json");
        let mut seeded: Value =
            serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        seeded["mcpServers"] = json!({"ask-user": {"type": "stdio", "command": BIN, "args": args}});
        std::fs::write(&file, seeded.to_string()).unwrap();
    }

    /// How many requests for `prompt` reached the model without `tool` among their tools.
    fn requests_without(&self, tool: &str, prompt: &str) -> usize {
        let log = std::fs::read_to_string(&self.model_log).unwrap_or_default();
        log.lines()
            .filter_map(|line| serde_json::from_str::<Value>(line).ok())
            .filter(|request| {
                let body = &request["body"];
                let offered = body["tools"].as_array().into_iter().flatten();
                body["messages"].to_string().contains(prompt)
                    && !offered.into_iter().any(|t| t["name"] == tool)
            })
            .count()
    }

    /// The tool result the model received, once it has.
    fn model_result(&self) -> Value {
        let start = Instant::now();
        let result = self.model_log.with_extension("log.result");
        loop {
            // Read once it is there and whole.
            let read = std::fs::read_to_string(&result).ok();
            if let Some(value) = read.and_then(|text| serde_json::from_str(&text).ok()) {
                return value;
            }
            assert!(
                start.elapsed() < WITHIN,
                "the model never got a tool result"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The tool result the model received, and Claude Code (in print mode) ended.
    fn tool_result(&self, claude: &mut Running) -> Value {
        let result = self.model_result();
        let _ = claude.0.wait();
        result
    }
}

/// N1: a Bash approval answered on the inbox page: Claude Code runs the command and its model
/// reads the output.
#[test]
fn n1_a_bash_approval_answered_on_the_inbox_page_runs_the_command() {
    let Some(claude) = claude() else { return };
    let machine = Machine::start(&bash("touch made.txt && echo made-by-bash"), None);
    let mut agent = machine.claude(&claude);
    let (call, questions) = machine.asked();
    assert!(call.starts_with("claude-code-"), "{call}");
    let text = questions[0]["question"].as_str().unwrap();
    assert!(
        text.starts_with("Allow Claude Code to run this command in ")
            && text.contains("$ touch made.txt && echo made-by-bash"),
        "{text}"
    );
    machine.answer_on_the_page(&call, &json!([{"id": "decision", "selected": ["Allow"]}]));
    let result = machine.tool_result(&mut agent);
    assert_eq!(result["content"], "made-by-bash", "{result}");
    assert!(machine.project.path().join("made.txt").exists());
    assert!(machine.pending().is_empty(), "settled");
}

/// N2: denied with a message: the command does not run and the model reads the message.
#[test]
fn n2_a_denial_with_a_message_reaches_the_model_and_nothing_runs() {
    let Some(claude) = claude() else { return };
    let machine = Machine::start(&bash("touch made.txt && echo made-by-bash"), None);
    let mut agent = machine.claude(&claude);
    let (call, _) = machine.asked();
    machine.answer_on_the_page(
        &call,
        &json!([{"id": "decision", "selected": ["Deny"], "custom": "use the Makefile"}]),
    );
    let result = machine.tool_result(&mut agent);
    assert_eq!(result["is_error"], true, "{result}");
    assert_eq!(
        result["content"], "use the Makefile (denied from the inbox page)",
        "{result}"
    );
    assert!(!machine.project.path().join("made.txt").exists());
}

/// N4: settled at the agent first (here by another hook of the person's, which allows after a
/// moment): the tool runs, and the bridge's ask leaves the inbox within 2 s, cancelled, never
/// answered.
#[test]
fn n4_settled_at_the_agent_the_ask_leaves_the_inbox() {
    let Some(claude) = claude() else { return };
    let allow = r#"sleep 3; echo '{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"allow"}}}'"#;
    let machine = Machine::start(&bash("touch made.txt && echo made-by-bash"), Some(allow));
    let mut agent = machine.claude(&claude);
    let _ = machine.asked();
    let result = machine.tool_result(&mut agent);
    assert_eq!(result["content"], "made-by-bash", "{result}");
    let settled = Instant::now();
    while !machine.pending().is_empty() {
        assert!(
            settled.elapsed() < Duration::from_secs(2),
            "the ask is still listed 2 s after the agent settled it"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// N1 from the shell: `ask-user answer CALL_ID --pick decision=Allow` answers the prompt in its
/// window through the inbox, and Claude Code runs the command.
#[test]
fn n1_a_bash_approval_answered_from_the_shell_runs_the_command() {
    let Some(claude) = claude() else { return };
    let machine = Machine::start(&bash("touch made.txt && echo made-by-bash"), None);
    let mut agent = machine.claude(&claude);
    let (call, _) = machine.asked();
    let output = Machine::command(machine.home.path())
        .args(["answer", &call, "--pick", "decision=Nope"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(4), "{output:?}");
    let said = String::from_utf8_lossy(&output.stderr);
    assert!(
        said.contains("BAD_ANSWER") && said.contains("\"Allow\""),
        "{said}"
    );
    let said = Machine::command(machine.home.path())
        .args(["answer", &call, "--pick", "decision=Allow"])
        .output()
        .unwrap();
    assert!(said.status.success(), "{said:?}");
    assert!(
        String::from_utf8_lossy(&said.stderr).contains("answered in its window"),
        "{said:?}"
    );
    let result = machine.tool_result(&mut agent);
    assert_eq!(result["content"], "made-by-bash", "{result}");
}

/// Claude Code's interactive terminal UI in a tmux session of its own (its own server socket),
/// killed when dropped.
struct Tui {
    socket: String,
}

impl Tui {
    fn start(machine: &Machine, claude: &Path) -> Self {
        Self::start_with(machine, claude, &[])
    }

    /// [`Tui::start`], Claude Code given `args` too.
    fn start_with(machine: &Machine, claude: &Path, args: &[&str]) -> Self {
        let socket =
            format!("ask-user-test-{}", std::process::id()) + &machine.model_port.to_string();
        let env: Vec<String> = (machine.agent_env().into_iter())
            .map(|(key, value)| format!("{key}={value}"))
            .collect();
        let status = Command::new("tmux")
            .args([
                "-L",
                &socket,
                "new-session",
                "-d",
                "-x",
                "120",
                "-y",
                "40",
                "-c",
            ])
            .arg(machine.project.path())
            .arg("env")
            .args(&env)
            .arg(claude)
            .args(["--permission-mode", "manual"])
            .args(args)
            .status()
            .expect("tmux runs");
        assert!(status.success());
        let tui = Self { socket };
        tui.until("? for shortcuts");
        tui
    }

    fn tmux(&self, args: &[&str]) -> String {
        let output = Command::new("tmux")
            .args(["-L", &self.socket])
            .args(args)
            .output()
            .unwrap();
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    fn screen(&self) -> String {
        self.tmux(&["capture-pane", "-p"])
    }

    /// Waits until the screen shows `text`.
    fn until(&self, text: &str) {
        let start = Instant::now();
        while !self.screen().contains(text) {
            assert!(
                start.elapsed() < WITHIN,
                "the screen never showed {text:?}:\n{}",
                self.screen()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// Waits until the screen no longer shows `text`, for at most `within`.
    fn until_gone(&self, text: &str, within: Duration) {
        let start = Instant::now();
        while self.screen().contains(text) {
            assert!(
                start.elapsed() < within,
                "the screen still shows {text:?}:\n{}",
                self.screen()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// Types `prompt` and Enter, and waits until the screen shows `shows`. Claude Code starts a
    /// turn without waiting for its MCP servers to connect: a turn whose model was not offered
    /// `tool` yet (the scripted model says "ok") is prompted again.
    fn prompt_until(&self, machine: &Machine, tool: &str, prompt: &str, shows: &str) {
        let start = Instant::now();
        let mut without = machine.requests_without(tool, prompt);
        self.keys(&[prompt, "Enter"]);
        loop {
            let screen = self.screen();
            if screen.contains(shows) {
                return;
            }
            let now = machine.requests_without(tool, prompt);
            if now > without {
                without = now;
                std::thread::sleep(Duration::from_secs(1));
                self.keys(&[prompt, "Enter"]);
            }
            assert!(
                start.elapsed() < WITHIN,
                "the screen never showed {shows:?}:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys"];
        args.extend(keys);
        self.tmux(&args);
    }
}

impl Drop for Tui {
    fn drop(&mut self) {
        self.tmux(&["kill-server"]);
    }
}

/// N3: Claude Code's own `AskUserQuestion`, answered on the inbox page while its picker is on
/// screen: the picker closes and the model reads the answer in Claude Code's own words.
#[test]
fn n3_ask_user_question_answered_on_the_page_while_its_picker_shows() {
    let Some(claude) = claude() else { return };
    let question = json!({"name": "AskUserQuestion", "input": {"questions": [{
        "question": "Which database?", "header": "Database", "multiSelect": false,
        "options": [{"label": "PostgreSQL", "description": "Relational."}, {"label": "SQLite", "description": "Embedded."}]
    }]}});
    let machine = Machine::start(&question, None);
    let tui = Tui::start(&machine, &claude);
    tui.keys(&["pick a database", "Enter"]);
    tui.until("Which database?");
    let (call, questions) = machine.asked();
    assert_eq!(questions[0]["id"], "q1");
    assert!(
        tui.screen().contains("2. SQLite"),
        "the picker is on screen"
    );
    machine.answer_on_the_page(&call, &json!([{"id": "q1", "selected": ["SQLite"]}]));
    tui.until("Allowed by PermissionRequest hook");
    let result = machine.model_result();
    let text = result["content"].as_str().unwrap_or_default();
    assert!(
        text.contains(r#""Which database?"="SQLite""#),
        "the model reads: {result}"
    );
    assert!(machine.pending().is_empty());
}

/// N4 at the keyboard: the person says Yes in Claude Code's own dialog first; the command runs,
/// and the inbox's card is withdrawn within 2 s, never answered.
#[test]
fn n4_answered_at_the_keyboard_first_the_ask_leaves_the_inbox() {
    let Some(claude) = claude() else { return };
    let machine = Machine::start(&bash("touch made.txt && echo made-by-bash"), None);
    let tui = Tui::start(&machine, &claude);
    tui.keys(&["make the file", "Enter"]);
    tui.until("Do you want to proceed?");
    let _ = machine.asked();
    // Yes. The dialog takes keys once it is drawn whole: Enter again while it still shows.
    let pressed = Instant::now();
    tui.keys(&["Enter"]);
    while tui.screen().contains("Do you want to proceed?") {
        assert!(
            pressed.elapsed() < WITHIN,
            "the dialog never took the keyboard's Yes"
        );
        std::thread::sleep(Duration::from_millis(500));
        if tui.screen().contains("Do you want to proceed?") {
            tui.keys(&["Enter"]);
        }
    }
    let answered = Instant::now();
    while !machine.pending().is_empty() {
        assert!(
            answered.elapsed() < Duration::from_secs(2),
            "the ask is still listed 2 s after the keyboard answered"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let result = machine.model_result();
    assert_eq!(result["content"], "made-by-bash", "{result}");
}

/// N2 from a phone: the prompt's ntfy notification carries a button for every choice; its
/// Deny button denies, and the model reads where the denial came from.
#[test]
fn n2_denied_from_an_ntfy_button_the_model_reads_where_from() {
    let Some(claude) = claude() else { return };
    let (port, messages) = json_receiver();
    let server = format!("http://127.0.0.1:{port}");
    let machine = Machine::start_with(
        &bash("touch made.txt && echo made-by-bash"),
        None,
        &[
            "--ntfy",
            "phone-topic",
            "--ntfy-server",
            &server,
            "--notify-after",
            "0",
        ],
    );
    let mut agent = machine.claude(&claude);
    let _ = machine.asked();
    let message = messages.recv_timeout(WITHIN).expect("an ntfy message");
    let actions = message["actions"].as_array().cloned().unwrap_or_default();
    let labels: Vec<&str> = actions.iter().filter_map(|a| a["label"].as_str()).collect();
    assert_eq!(labels.first(), Some(&"Allow"), "{message}");
    assert_eq!(labels.last(), Some(&"Deny"), "{message}");
    let deny = actions.last().unwrap();
    post(
        deny["url"].as_str().unwrap(),
        deny["body"].as_str().unwrap(),
    );
    let result = machine.tool_result(&mut agent);
    assert_eq!(result["is_error"], true, "{result}");
    assert_eq!(
        result["content"], "Denied from the notification on a phone.",
        "{result}"
    );
    assert!(!machine.project.path().join("made.txt").exists());
}

/// SPEC (timed forms in every era): Claude Code 2.1.328 probes the 2026-07-28 era and takes
/// tasks, where a timed form would stay on its screen after the window. `ask-user mcp --mode
/// timed` offers it the handshake era: the question shows in Claude Code's own dialog while the
/// window lasts, and the dialog leaves when the window closes; the model reads `pending`.
#[test]
fn a_timed_mcp_question_shows_in_claude_codes_dialog_for_its_window_and_then_leaves() {
    let Some(claude) = claude() else { return };
    let tool = json!({"name": "mcp__ask-user__ask_user_question", "input": {"questions": [{
        "id": "db", "question": "Which database?", "header": "Database",
        "options": [{"label": "PostgreSQL"}, {"label": "SQLite"}]
    }]}});
    let machine = Machine::start(&tool, None);
    machine.serve_mcp(&["mcp", "--mode", "timed", "--timeout", "30"]);
    let tui = Tui::start_with(
        &machine,
        &claude,
        &["--allowedTools", "mcp__ask-user__ask_user_question"],
    );
    tui.prompt_until(
        &machine,
        "mcp__ask-user__ask_user_question",
        "pick a database",
        "requests your input",
    );
    assert!(tui.screen().contains("Which database?"), "{}", tui.screen());
    // Listed in the inbox too while the dialog shows: the page, a phone and the shell race it.
    let (_, questions) = machine.asked();
    assert_eq!(questions[0]["question"], "Which database?");
    tui.until_gone("requests your input", Duration::from_mins(1));
    let result = machine.model_result();
    let text = result["content"][0]["text"].as_str().unwrap_or_default();
    assert!(
        text.starts_with(r#"{"pending":true"#),
        "the model reads: {result}"
    );
}
