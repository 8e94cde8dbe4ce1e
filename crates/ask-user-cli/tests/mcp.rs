//! `ask-user mcp` as a whole process over stdio, spoken to line by line in JSON-RPC: a timed
//! question answered late from another shell and collected with the companion tool across a
//! server restart, and bad input of every kind.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::needless_pass_by_value
)]

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_ask-user");
const READ_TIMEOUT: Duration = Duration::from_secs(30);

/// A running `ask-user mcp` and the lines it writes on stdout.
struct Server {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
    next_id: u64,
    /// Every line sent and received, for the failure message.
    transcript: Vec<String>,
}

impl Server {
    fn start(state: &Path, args: &[&str]) -> Self {
        let mut child = Command::new(BIN)
            .arg("mcp")
            .args(args)
            .arg("--state-dir")
            .arg(state)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let stdin = child.stdin.take();
        Self {
            child,
            stdin,
            lines,
            next_id: 1,
            transcript: Vec::new(),
        }
    }

    fn send_raw(&mut self, line: &str) {
        self.transcript.push(format!("> {line}"));
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{line}").unwrap();
        stdin.flush().unwrap();
    }

    fn send(&mut self, message: &Value) {
        self.send_raw(&message.to_string());
    }

    fn recv(&mut self) -> Value {
        let line = self.lines.recv_timeout(READ_TIMEOUT).unwrap_or_else(|e| {
            panic!(
                "no line from the server ({e}):\n{}",
                self.transcript.join("\n")
            )
        });
        self.transcript.push(format!("< {line}"));
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON on stdout ({e}): {line}"))
    }

    /// Sends a request and returns its response, answering nothing in between.
    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        let message = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.send(&message);
        loop {
            let message = self.recv();
            if message["id"] == id && message.get("method").is_none() {
                return message;
            }
        }
    }

    fn initialize(&mut self, elicitation: bool) {
        let capabilities = if elicitation {
            json!({"elicitation": {"form": {}}})
        } else {
            json!({})
        };
        let response = self.request(
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": capabilities,
                   "clientInfo": {"name": "line-client", "version": "1"}}),
        );
        assert_eq!(
            response["result"]["protocolVersion"], "2025-11-25",
            "{response}"
        );
        self.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    }

    fn call(&mut self, name: &str, arguments: Value) -> Value {
        let params = json!({"name": name, "arguments": arguments});
        self.request("tools/call", params)
    }

    /// Stops the server by closing its stdin (what a client does), and waits for it.
    fn stop(mut self) {
        drop(self.stdin.take());
        let status = self.child.wait().unwrap();
        assert!(status.success(), "ask-user mcp exited with {status}");
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn texts(response: &Value) -> Vec<String> {
    response["result"]["content"]
        .as_array()
        .unwrap_or_else(|| panic!("not a tool result: {response}"))
        .iter()
        .map(|c| c["text"].as_str().unwrap().to_owned())
        .collect()
}

fn logs(dir: &Path) -> Vec<PathBuf> {
    let mut logs: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    logs.sort();
    logs
}

fn events(log: &Path) -> Vec<Value> {
    std::fs::read_to_string(log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).expect("every log line is JSON"))
        .collect()
}

fn question() -> Value {
    json!({"questions": [{"id": "db", "question": "Which database?",
        "options": [{"label": "PostgreSQL"}, {"label": "SQLite"}]}]})
}

fn ask_user(args: &[&str]) -> std::process::Output {
    Command::new(BIN).args(args).output().unwrap()
}

#[test]
fn a_timed_question_answered_from_the_shell_reaches_the_model_through_the_companion() {
    let state = tempfile::tempdir().unwrap();
    let mut server = Server::start(state.path(), &["--mode", "timed", "--timeout", "1"]);
    server.initialize(false);
    let tools = server.request("tools/list", json!({}));
    let names: Vec<&str> = tools["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["ask_user_question", "ask_user_question_answer"]);

    // No elicitation: the one-second window passes and the call is pending.
    let pending = server.call("ask_user_question", question());
    let pending_texts = texts(&pending);
    let value: Value = serde_json::from_str(&pending_texts[0]).unwrap();
    assert_eq!(value["pending"], true);
    // One block, saying what happens over MCP: the model asks the companion later.
    assert_eq!(pending_texts.len(), 1, "{pending}");
    assert!(
        value["message"]
            .as_str()
            .unwrap()
            .contains("ask_user_question_answer")
    );
    assert!(!pending_texts[0].contains("user message"), "{pending}");
    let call_id = value["callId"].as_str().unwrap().to_owned();
    let log = logs(state.path()).pop().unwrap();
    let log_arg = log.to_str().unwrap();

    // The log is free between calls: another shell lists the question and answers it.
    let listed = ask_user(&["pending", log_arg, "--json"]);
    assert!(listed.status.success());
    assert!(String::from_utf8_lossy(&listed.stdout).contains(&call_id));
    let answered = ask_user(&["answer", log_arg, &call_id, "--pick", "db=SQLite"]);
    assert!(
        answered.status.success(),
        "{}",
        String::from_utf8_lossy(&answered.stderr)
    );

    // The model collects the reply with the companion tool.
    let reply = server.call("ask_user_question_answer", json!({"callId": call_id}));
    let reply: Value = serde_json::from_str(&texts(&reply)[0]).unwrap();
    assert_eq!(reply["kind"], "answer_to_pending_question");
    assert_eq!(reply["callId"], call_id.as_str());
    assert_eq!(
        reply["answers"],
        json!([{"id": "db", "selected": ["SQLite"]}])
    );
    server.stop();

    // A new server process (a restart) finds the call in the earlier session's log.
    let mut restarted = Server::start(state.path(), &["--mode", "timed", "--timeout", "1"]);
    restarted.initialize(false);
    let again = restarted.call("ask_user_question_answer", json!({"callId": call_id}));
    assert_eq!(
        serde_json::from_str::<Value>(&texts(&again)[0]).unwrap(),
        reply
    );
    restarted.stop();

    // Settled exactly once: one admitted reply, and a replay of the log agrees.
    let events = events(&log);
    let admitted = events
        .iter()
        .filter(|e| {
            e["type"] == "user/message" && e["data"]["source"]["callId"] == call_id.as_str()
        })
        .count();
    assert_eq!(admitted, 1);
    let listed = ask_user(&["pending", log_arg, "--json"]);
    let listed: Value = serde_json::from_slice(&listed.stdout).unwrap();
    assert_eq!(
        listed["settled"].as_array().map(Vec::len),
        Some(1),
        "{listed}"
    );
}

#[test]
fn a_question_answered_while_no_server_runs_is_collected_by_the_next_server() {
    let state = tempfile::tempdir().unwrap();
    let mut server = Server::start(state.path(), &["--mode", "timed", "--timeout", "1"]);
    server.initialize(false);
    let pending = server.call("ask_user_question", question());
    let call_id = serde_json::from_str::<Value>(&texts(&pending)[0]).unwrap()["callId"]
        .as_str()
        .unwrap()
        .to_owned();
    let early = server.call("ask_user_question_answer", json!({"callId": call_id}));
    assert!(texts(&early)[0].starts_with(r#"{"pending":true"#));
    server.stop();

    // Answered while no server runs; then the next server's companion call returns it.
    let log = logs(state.path()).pop().unwrap();
    let answered = ask_user(&[
        "answer",
        log.to_str().unwrap(),
        &call_id,
        "--custom",
        "db=DuckDB",
    ]);
    assert!(answered.status.success());
    let mut next = Server::start(state.path(), &["--mode", "timed", "--timeout", "1"]);
    next.initialize(false);
    let reply = next.call("ask_user_question_answer", json!({"callId": call_id}));
    let reply: Value = serde_json::from_str(&texts(&reply)[0]).unwrap();
    assert_eq!(
        reply["answers"],
        json!([{"id": "db", "selected": [], "custom": "DuckDB"}])
    );
    next.stop();
}

#[test]
fn bad_input_gets_a_clear_error_and_the_server_serves_on() {
    let state = tempfile::tempdir().unwrap();
    let mut server = Server::start(state.path(), &["--mode", "timed", "--timeout", "30"]);
    server.initialize(true);

    // Malformed JSON-RPC: a line that is not JSON is dropped (rmcp answers nothing to it), a
    // request of the wrong shape is an "Invalid request" error; the server serves on.
    server.send_raw("{this is not json");
    server.send_raw(r#"{"jsonrpc":"2.0","id":"x","method":42}"#);
    let invalid = server.recv();
    assert_eq!(invalid["error"]["code"], -32600, "{invalid}");
    let tools = server.request("tools/list", json!({}));
    assert_eq!(
        tools["result"]["tools"].as_array().unwrap().len(),
        2,
        "{tools}"
    );

    // An unknown tool is a protocol error that names it.
    let unknown = server.call("rm_rf", json!({}));
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
    assert!(
        unknown["error"]["message"]
            .as_str()
            .unwrap()
            .contains("rm_rf")
    );

    // Arguments that fail the schema: the tool's own error, as the model reads it.
    let invalid = server.call("ask_user_question", json!({"questions": "which?"}));
    assert_eq!(invalid["result"]["isError"], true, "{invalid}");
    assert!(texts(&invalid)[0].starts_with("Error: "));

    // The companion with bad arguments or an unknown call id.
    // Without a call id: every reply waiting in the session, here none.
    let none = server.call("ask_user_question_answer", json!({}));
    assert_ne!(none["result"]["isError"], true, "{none}");
    assert!(
        texts(&none)[0].contains("No late answer is waiting"),
        "{none}"
    );
    for (arguments, fragment) in [
        (json!({"callId": 7}), "must be a string"),
        (json!({"callId": "x", "extra": 1}), "unknown argument"),
        (json!({"callId": "call_unknown"}), "not a question"),
    ] {
        let response = server.call("ask_user_question_answer", arguments);
        assert_eq!(response["result"]["isError"], true, "{response}");
        assert!(texts(&response)[0].contains(fragment), "{response}");
    }

    // Form answers the form could not have produced: BAD_ANSWER, each time.
    for content in [
        json!({"q01": "MySQL"}),
        json!({"q01": 5}),
        json!({"zz": "?"}),
        json!(["SQLite"]),
    ] {
        let id = server.next_id;
        server.next_id += 1;
        server.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "ask_user_question", "arguments": question()}}));
        let form = server.recv();
        assert_eq!(form["method"], "elicitation/create", "{form}");
        server.send(&json!({"jsonrpc": "2.0", "id": form["id"],
            "result": {"action": "accept", "content": content}}));
        let result = loop {
            let message = server.recv();
            if message["id"] == id {
                break message;
            }
        };
        assert_eq!(result["result"]["isError"], true, "{result}");
        assert!(
            texts(&result)[0].contains("does not fit the questions"),
            "{result}"
        );
    }

    // The server still serves, and the log is intact: every line is JSON, and every tool/call
    // has its tool/result.
    let tools = server.request("tools/list", json!({}));
    assert!(tools["result"]["tools"].is_array());
    server.stop();
    let log = logs(state.path()).pop().unwrap();
    let events = events(&log);
    let calls = events.iter().filter(|e| e["type"] == "tool/call").count();
    let results = events.iter().filter(|e| e["type"] == "tool/result").count();
    assert_eq!((calls, results), (5, 5));
    let codes: Vec<&str> = events
        .iter()
        .filter(|e| e["type"] == "tool/result")
        .map(|e| e["data"]["error"]["code"].as_str().unwrap_or("-"))
        .collect();
    assert_eq!(
        codes,
        [
            "INVALID_ARGS",
            "BAD_ANSWER",
            "BAD_ANSWER",
            "BAD_ANSWER",
            "BAD_ANSWER"
        ]
    );
}

/// `ask-user pending --pg … --json`'s questions.
fn pg_questions(url: &str, schema: &str) -> Vec<Value> {
    let listed = ask_user(&["pending", "--pg", url, "--pg-schema", schema, "--json"]);
    assert!(
        listed.status.success(),
        "{}",
        String::from_utf8_lossy(&listed.stderr)
    );
    let listed: Value = serde_json::from_slice(&listed.stdout).unwrap();
    listed["questions"].as_array().unwrap().clone()
}

#[test]
fn mcp_pg_questions_are_answered_from_another_shell_in_the_window_and_late() {
    let Some(url) = ask_user_testkit::pg::pg_url() else {
        return;
    };
    let schema = ask_user_testkit::pg::fresh_schema();
    let state = tempfile::tempdir().unwrap();
    let mut server = Server::start(
        state.path(),
        &[
            "--mode",
            "timed",
            "--timeout",
            "60",
            "--pg",
            &url,
            "--pg-schema",
            &schema,
        ],
    );
    server.initialize(false);

    // In the window: the call waits; another shell finds it open in the database and answers.
    let id = server.next_id;
    server.next_id += 1;
    server.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": "ask_user_question", "arguments": question()}}));
    let started = std::time::Instant::now();
    let open = loop {
        let questions = pg_questions(&url, &schema);
        if let Some(q) = questions.iter().find(|q| q["state"] == "open") {
            break q.clone();
        }
        assert!(
            started.elapsed() < READ_TIMEOUT,
            "never open: {questions:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    let (session, call_id) = (
        open["session"].as_str().unwrap(),
        open["callId"].as_str().unwrap(),
    );
    let pg = ["--pg", &url, "--pg-schema", &schema];
    let answered = Command::new(BIN)
        .arg("answer")
        .args(pg)
        .args([session, call_id, "--pick", "db=SQLite"])
        .output()
        .unwrap();
    assert!(answered.status.success(), "{answered:?}");
    let response = loop {
        let message = server.recv();
        if message["id"] == id {
            break message;
        }
    };
    let value: Value = serde_json::from_str(&texts(&response)[0]).unwrap();
    assert_eq!(
        value["answers"],
        json!([{"id": "db", "selected": ["SQLite"]}]),
        "{response}"
    );

    // Late: a one-second window passes; the answer from the shell waits in the ledger, a
    // worker admits it while no request holds the session, and the companion reads it back.
    let mut late = question();
    late["timeout"] = json!(1);
    let pending = server.call("ask_user_question", late);
    let value: Value = serde_json::from_str(&texts(&pending)[0]).unwrap();
    assert_eq!(value["pending"], true, "{pending}");
    let late_call = value["callId"].as_str().unwrap().to_owned();
    let answered = Command::new(BIN)
        .arg("answer")
        .args(pg)
        .args([session, &late_call, "--pick", "db=PostgreSQL"])
        .output()
        .unwrap();
    assert!(answered.status.success(), "{answered:?}");
    let worked = Command::new(BIN)
        .args(["worker", "--once"])
        .args(pg)
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&worked.stdout),
        format!("session {session}: 1 reply admitted\n")
    );
    let reply = server.call("ask_user_question_answer", json!({"callId": late_call}));
    let reply: Value = serde_json::from_str(&texts(&reply)[0]).unwrap();
    assert_eq!(reply["kind"], "answer_to_pending_question", "{reply}");
    assert_eq!(
        reply["answers"],
        json!([{"id": "db", "selected": ["PostgreSQL"]}])
    );
    server.stop();
    assert!(pg_questions(&url, &schema).is_empty(), "both settled");
    assert!(
        logs(state.path()).is_empty(),
        "nothing in the state directory"
    );
    ask_user_testkit::pg::drop_schema(&url, &schema);
}

/// `kill -9` of the server in a timed call's window: the next server's companion repairs the
/// session when it first touches it (the call is continued, its pending result again), the page
/// of `serve` lists it, and `ask-user answer` answers it, which the companion then delivers.
#[test]
fn a_question_whose_server_was_killed_in_its_window_is_answerable_on_every_path() {
    let state = tempfile::tempdir().unwrap();
    let mut first = Server::start(state.path(), &["--mode", "timed"]);
    first.initialize(false);
    let mut arguments = question();
    arguments["timeout"] = json!(120);
    first.send(&json!({"jsonrpc": "2.0", "id": 99, "method": "tools/call",
        "params": {"name": "ask_user_question", "arguments": arguments}}));
    // The call is in the log, its window open.
    let log = loop {
        if let Some(log) = logs(state.path()).pop()
            && events(&log).iter().any(|e| e["type"] == "tool/call")
        {
            break log;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    first.child.kill().unwrap();
    first.child.wait().unwrap();
    let call_id = events(&log)
        .iter()
        .find(|e| e["type"] == "tool/call")
        .map(|e| e["data"]["callId"].as_str().unwrap().to_owned())
        .unwrap();

    // Listed as interrupted (the page lists it too: `LogDesk::answerable`, the host's tests).
    let listed = ask_user(&["pending", log.to_str().unwrap()]);
    assert!(
        String::from_utf8_lossy(&listed.stdout).contains("open, interrupted"),
        "{listed:?}"
    );

    // A new server (a new client session): the companion finds the call and continues it.
    let mut second = Server::start(state.path(), &["--mode", "timed"]);
    second.initialize(false);
    let again = second.call("ask_user_question_answer", json!({"callId": call_id}));
    let text = &texts(&again)[0];
    let value: Value = serde_json::from_str(text).unwrap_or_else(|_| panic!("{again}"));
    assert_eq!(value["pending"], true, "{again}");
    assert_eq!(value["callId"], call_id.as_str());
    let listed = ask_user(&["pending", log.to_str().unwrap()]);
    let listed = String::from_utf8_lossy(&listed.stdout);
    assert!(listed.contains("continued"), "repaired: {listed}");

    // Answered from a shell by the call id alone; the companion delivers it.
    let answered = Command::new(BIN)
        .args(["answer", &call_id, "--pick", "db=SQLite", "--state-dir"])
        .arg(state.path())
        .output()
        .unwrap();
    assert!(answered.status.success(), "{answered:?}");
    let delivered = second.call("ask_user_question_answer", json!({"callId": call_id}));
    assert!(
        texts(&delivered)[0].contains(r#""answers":[{"id":"db","selected":["SQLite"]}]"#),
        "{delivered}"
    );
    second.stop();
}

/// An open call of `state`'s logs other than `except` (waits until one is listed).
fn open_call(state: &Path, except: &str) -> String {
    for _ in 0..200 {
        let listed = ask_user(&[
            "pending",
            "--json",
            "--state-dir",
            &state.display().to_string(),
        ]);
        let listed: Value = serde_json::from_slice(&listed.stdout).unwrap();
        if let Some(open) = (listed["questions"].as_array().into_iter().flatten())
            .find(|q| q["state"] == "open" && q["callId"] != except)
        {
            return open["callId"].as_str().unwrap().to_owned();
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("no open question in {}", state.display());
}

/// `ask-user answer CALL_ID` from a shell, for `state`: its exit status and stderr.
fn answer_from_shell(state: &Path, call: &str) -> (Option<i32>, String) {
    let out = ask_user(&[
        "answer",
        call,
        "--pick",
        "db=SQLite",
        "--state-dir",
        &state.display().to_string(),
    ]);
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// SPEC (the shell as a surface): `ask-user answer CALL_ID` answers a question in its window,
/// racing the other surfaces, once the server is linked to the state directory's inbox (every
/// `ask-user mcp` joins one that runs); each refusal says where the call stands, with its own
/// code and exit status.
#[test]
fn the_shell_answers_a_question_in_its_window_and_says_where_a_call_stands() {
    let state = tempfile::tempdir().unwrap();
    let dir = state.path();
    let mut server = Server::start(dir, &["--mode", "timed", "--timeout", "60"]);
    server.initialize(false);

    // No inbox runs: the shell cannot reach the server in the window, and says so.
    server.send(&json!({"jsonrpc": "2.0", "id": 50, "method": "tools/call",
        "params": {"name": "ask_user_question", "arguments": question()}}));
    let first = open_call(dir, "");
    // `pending` says whose question it is and where it runs, from the log alone: the client's
    // name and version, and the server's working directory (this client declares no roots).
    let state_dir = dir.display().to_string();
    let listed = ask_user(&["pending", "--json", "--state-dir", &state_dir]);
    let listed: Value = serde_json::from_slice(&listed.stdout).unwrap();
    let here = std::env::current_dir().unwrap().display().to_string();
    assert_eq!(listed["questions"][0]["agent"], "line-client 1", "{listed}");
    assert_eq!(listed["questions"][0]["folder"], here.as_str(), "{listed}");
    let table = ask_user(&["pending", "--state-dir", &state_dir]);
    let table = String::from_utf8(table.stdout).unwrap();
    assert!(
        table.contains("\nline-client 1") && table.contains(&format!("\n{here}")),
        "{table}"
    );
    let (code, said) = answer_from_shell(dir, &first);
    assert_eq!(code, Some(12), "{said}");
    assert!(said.contains("error[IN_WINDOW_ELSEWHERE]"), "{said}");
    let (code, said) = answer_from_shell(dir, "call_nobody_1");
    assert_eq!(code, Some(3), "{said}");
    assert!(said.contains("error[UNKNOWN_CALL]"), "{said}");

    // The person starts the inbox; the running server joins it (it links again every few
    // seconds) and its next question is answered from the shell in its window.
    let (_inbox, url) = ask_user_testkit::process::start_reading_line(
        Command::new(BIN)
            .args(["inbox", "--addr", "127.0.0.1:0", "--state-dir"])
            .arg(dir),
    );
    assert!(url.contains("token="), "{url}");
    std::thread::sleep(Duration::from_secs(6));
    server.send(&json!({"jsonrpc": "2.0", "id": 51, "method": "tools/call",
        "params": {"name": "ask_user_question", "arguments": question()}}));
    let second = open_call(dir, &first);
    let (code, said) = answer_from_shell(dir, &second);
    assert_eq!(code, Some(0), "{said}");
    assert!(said.contains("answered in its window"), "{said}");
    let result = loop {
        let message = server.recv();
        if message["id"] == 51 {
            break message;
        }
    };
    assert_eq!(
        texts(&result),
        [r#"{"answers":[{"id":"db","selected":["SQLite"]}]}"#]
    );
    // Once more: the question is settled.
    let (code, said) = answer_from_shell(dir, &second);
    assert_eq!(code, Some(9), "{said}");
    assert!(said.contains("error[ALREADY_ANSWERED]"), "{said}");
}
