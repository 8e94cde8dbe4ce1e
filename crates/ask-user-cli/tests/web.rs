//! `--web` and `ask-user serve` as whole processes, spoken to over loopback HTTP the way the page
//! speaks (the page itself runs in a real browser in `ask-user-web`'s browser tests): the demo
//! answered on the page in its window, the demo answered late on the page, and a continued
//! question of a log answered through `serve`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_ask-user");
const WAIT: Duration = Duration::from_secs(30);

/// A running command and the lines it writes on stderr.
struct Running {
    child: Child,
    lines: mpsc::Receiver<String>,
    seen: Vec<String>,
}

impl Running {
    fn start(args: &[&str]) -> Self {
        let mut child = Command::new(BIN)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let (tx, lines) = mpsc::channel();
        let stderr = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Self {
            child,
            lines,
            seen: Vec::new(),
        }
    }

    /// Lines until one contains `needle`.
    fn until(&mut self, needle: &str) -> String {
        loop {
            match self.lines.recv_timeout(WAIT) {
                Ok(line) => {
                    self.seen.push(line.clone());
                    if line.contains(needle) {
                        return line;
                    }
                }
                Err(error) => panic!(
                    "never printed {needle:?} ({error}); stderr so far:\n{}",
                    self.seen.join("\n")
                ),
            }
        }
    }

    /// The page's address and token, from the printed URL.
    fn url(&mut self) -> (String, String) {
        let line = self.until("http://127.0.0.1:");
        let url = &line[line.find("http://").unwrap()..];
        let url = url.split_whitespace().next().unwrap();
        let rest = url.strip_prefix("http://").unwrap();
        let (addr, query) = rest.split_once("/?token=").unwrap();
        (addr.to_owned(), query.to_owned())
    }

    /// Lines for `quiet`; panics if one contains `needle`.
    fn never_for(&mut self, quiet: Duration, needle: &str) {
        let until = std::time::Instant::now() + quiet;
        while let Some(left) = until.checked_duration_since(std::time::Instant::now()) {
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    assert!(
                        !line.contains(needle),
                        "printed {needle:?} too soon; stderr so far:\n{}\n{line}",
                        self.seen.join("\n")
                    );
                    self.seen.push(line);
                }
                Err(mpsc::RecvTimeoutError::Timeout) => return,
                Err(mpsc::RecvTimeoutError::Disconnected) => panic!("it exited"),
            }
        }
    }

    fn exit_code(mut self) -> (i32, Vec<String>) {
        let status = self.child.wait().unwrap();
        self.seen.extend(self.lines.try_iter());
        let mut stdout = String::new();
        self.child
            .stdout
            .take()
            .unwrap()
            .read_to_string(&mut stdout)
            .unwrap();
        self.seen.extend(stdout.lines().map(str::to_owned));
        (status.code().unwrap_or(-1), std::mem::take(&mut self.seen))
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Sends one raw HTTP/1.1 request (with `Connection: close`) to `addr`; the status and the JSON
/// body.
fn exchange(addr: &str, request: &str) -> (u16, Value) {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(WAIT)).unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let status = response[9..12].parse().unwrap();
    let json = response.split("\r\n\r\n").nth(1).unwrap_or("null");
    (status, serde_json::from_str(json).unwrap_or(Value::Null))
}

/// One request with the page's token; the status and the JSON body.
fn http(addr: &str, method: &str, path: &str, token: &str, body: Option<&Value>) -> (u16, Value) {
    let body = body.map(Value::to_string).unwrap_or_default();
    let sep = if path.contains('?') { '&' } else { '?' };
    exchange(
        addr,
        &format!(
            "{method} {path}{sep}token={token} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        ),
    )
}

/// Opens the event stream as a page does and reads it until `needle` appears; the stream stays
/// open (the page is looking) until the returned socket is dropped.
fn watch(addr: &str, token: &str, needle: &str) -> TcpStream {
    watch_seen(addr, token, needle).0
}

/// [`watch`], with what the stream said until `needle`.
fn watch_seen(addr: &str, token: &str, needle: &str) -> (TcpStream, String) {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(WAIT)).unwrap();
    write!(
        stream,
        "GET /events?client=tab-1&token={token} HTTP/1.1\r\nHost: {addr}\r\nAccept: text/event-stream\r\n\r\n"
    )
    .unwrap();
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    while !String::from_utf8_lossy(&seen).contains(needle) {
        let n = stream.read(&mut buf).unwrap();
        assert!(
            n > 0,
            "the stream ended: {}",
            String::from_utf8_lossy(&seen)
        );
        seen.extend_from_slice(&buf[..n]);
    }
    (stream, String::from_utf8_lossy(&seen).into_owned())
}

fn demo_answers() -> Value {
    json!({"answers": [
        {"id": "db", "selected": ["SQLite"]},
        {"id": "checks", "selected": ["Unit tests", "Lint"]},
    ]})
}

#[test]
fn demo_web_is_answered_on_the_page_in_its_window() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("demo.jsonl");
    let mut demo = Running::start(&[
        "demo",
        "--web",
        "--window",
        "120",
        "--log",
        log.to_str().unwrap(),
    ]);
    let (addr, token) = demo.url();
    let _page = watch(&addr, &token, "call_demo_1");
    let (status, body) = http(
        &addr,
        "POST",
        "/cards/call_demo_1/answer",
        &token,
        Some(&demo_answers()),
    );
    assert_eq!(
        (status, body),
        (200, json!({"ok": true, "path": "foreground"}))
    );
    let (code, lines) = demo.exit_code();
    let text = lines.join("\n");
    assert_eq!(code, 0, "{text}");
    assert!(
        text.contains("Going with SQLite; every pull request will run: Unit tests, Lint."),
        "{text}"
    );
}

#[test]
fn demo_web_takes_a_late_answer_on_the_page() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("demo.jsonl");
    let mut demo = Running::start(&[
        "demo",
        "--web",
        "--window",
        "1",
        "--log",
        log.to_str().unwrap(),
    ]);
    let (addr, token) = demo.url();
    demo.until("still open on the page");
    let (status, body) = http(
        &addr,
        "POST",
        "/cards/call_demo_1/answer",
        &token,
        Some(&demo_answers()),
    );
    assert_eq!((status, body), (200, json!({"ok": true, "path": "late"})));
    let (code, lines) = demo.exit_code();
    let text = lines.join("\n");
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("answer_to_pending_question"), "{text}");
    assert!(text.contains("Going with SQLite"), "{text}");
}

/// A header the model made too long is cut for the page of `serve` as for the card of
/// `ask --web` (the seam's twelve characters, SPEC §9.3): the log holds it whole.
#[test]
fn serve_shows_a_logged_header_cut_as_the_cards_are() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("s.jsonl");
    let args = dir.path().join("args.json");
    std::fs::write(
        &args,
        r#"{"questions":[{"id":"go","header":"Deployment target","question":"Ship it?","options":[{"label":"yes"},{"label":"no"}]}]}"#,
    )
    .unwrap();
    let asked = Command::new(BIN)
        .args([
            "ask",
            "--mode",
            "timed",
            "--timeout",
            "1",
            "--call-id",
            "call-h",
            "--log",
        ])
        .arg(&log)
        .arg(&args)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&asked.stdout).starts_with(r#"{"pending":true"#),
        "{asked:?}"
    );
    let mut serve = Running::start(&["serve", log.to_str().unwrap()]);
    let (addr, token) = serve.url();
    let (page, seen) = watch_seen(&addr, &token, "call-h");
    drop(page);
    assert!(seen.contains(r#""header":"Deployment "#), "{seen}");
    assert!(!seen.contains("Deployment target"), "{seen}");
    // The log holds it whole.
    let (_, view) = http(&addr, "GET", "/pending", &token, None);
    assert_eq!(
        view["sessions"][0]["active"][0]["questions"][0]["header"],
        "Deployment target"
    );
    drop(serve);
}

#[test]
fn serve_answers_a_continued_question_of_a_log() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("s.jsonl");
    let args = dir.path().join("args.json");
    std::fs::write(
        &args,
        r#"{"questions":[{"id":"go","question":"Ship it?","options":[{"label":"yes"},{"label":"no"}]}]}"#,
    )
    .unwrap();
    let asked = Command::new(BIN)
        .args([
            "ask",
            "--mode",
            "timed",
            "--timeout",
            "1",
            "--call-id",
            "call-9",
            "--log",
        ])
        .arg(&log)
        .arg(&args)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&asked.stdout).starts_with(r#"{"pending":true"#),
        "{asked:?}"
    );

    let mut serve = Running::start(&["serve", log.to_str().unwrap()]);
    let (addr, token) = serve.url();
    let (status, view) = http(&addr, "GET", "/pending", &token, None);
    assert_eq!(status, 200);
    assert_eq!(view["sessions"][0]["active"][0]["callId"], "call-9");
    assert_eq!(view["sessions"][0]["active"][0]["state"], "continued");
    let page = watch(&addr, &token, "call-9");
    drop(page);

    let bad = json!({"answers": [{"id": "go", "selected": ["maybe"]}]});
    let (status, body) = http(&addr, "POST", "/cards/call-9/answer", &token, Some(&bad));
    assert_eq!((status, body["code"].as_str()), (400, Some("BAD_ANSWER")));
    let good = json!({"answers": [{"id": "go", "selected": ["yes"]}]});
    let (status, body) = http(&addr, "POST", "/cards/call-9/answer", &token, Some(&good));
    assert_eq!((status, body), (200, json!({"ok": true, "path": "late"})));
    // Admitted into the log: settled, and nothing is waiting any more.
    let (status, body) = http(&addr, "POST", "/cards/call-9/answer", &token, Some(&good));
    assert_eq!((status, body["code"].as_str()), (410, Some("NOT_WAITING")));
    drop(serve);
    let pending = Command::new(BIN)
        .args(["pending", "--json"])
        .arg(&log)
        .output()
        .unwrap();
    let view: Value = serde_json::from_slice(&pending.stdout).unwrap();
    assert_eq!(view["settled"][0]["callId"], "call-9");
    assert_eq!(view["settled"][0]["provenance"]["answerer"], "web");
}

#[test]
fn serve_refuses_a_missing_log_and_a_foreign_address_needs_asking() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("none.jsonl");
    let out = Command::new(BIN)
        .arg("serve")
        .arg(&missing)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(6));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no session log"));
    // A file that is not a session log is refused, as `pending` refuses it.
    let not_a_log = dir.path().join("passwd");
    std::fs::write(&not_a_log, "root:x:0:0:root:/root:/bin/bash\n").unwrap();
    let out = Command::new(BIN)
        .arg("serve")
        .arg(&not_a_log)
        .args(["--addr", "127.0.0.1:0"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(6), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("unreadable header"),
        "{out:?}"
    );
    let out = Command::new(BIN)
        .args(["demo", "--web-addr", "127.0.0.1:0"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "--web-addr needs --web");
}

/// An ntfy-shaped receiver: takes every POST, answers 200, and hands over its path and body.
fn ntfy_receiver() -> (String, mpsc::Receiver<(String, Value)>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { break };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut request_line = String::new();
            reader.read_line(&mut request_line).unwrap();
            let mut length = 0;
            loop {
                let mut line = String::new();
                reader.read_line(&mut line).unwrap();
                if line == "\r\n" || line.is_empty() {
                    break;
                }
                if let Some((name, value)) = line.split_once(':')
                    && name.eq_ignore_ascii_case("content-length")
                {
                    length = value.trim().parse().unwrap();
                }
            }
            let mut body = vec![0; length];
            reader.read_exact(&mut body).unwrap();
            let path = request_line
                .split_whitespace()
                .nth(1)
                .unwrap_or("")
                .to_owned();
            let _ = tx.send((path, serde_json::from_slice(&body).unwrap_or(Value::Null)));
            let _ = stream
                .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}");
        }
    });
    (addr, rx)
}

/// A press of an ntfy `http` action button, as the ntfy app sends it: its method, URL, headers
/// and body, nothing else (no page token, no origin).
fn press(action: &Value) -> (u16, Value) {
    let url = action["url"].as_str().unwrap();
    let rest = url.strip_prefix("http://").unwrap();
    let (addr, path) = rest.split_at(rest.find('/').unwrap());
    let body = action["body"].as_str().unwrap();
    exchange(
        addr,
        &format!(
            "{} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            action["method"].as_str().unwrap(),
            action["headers"]["Content-Type"].as_str().unwrap(),
            body.len()
        ),
    )
}

#[test]
fn demo_web_ntfy_sends_answer_buttons_and_a_press_answers_once() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("demo.jsonl");
    let (ntfy, pushes) = ntfy_receiver();
    let mut demo = Running::start(&[
        "demo",
        "--web",
        "--ntfy",
        "ask-user-test",
        "--ntfy-server",
        &format!("http://{ntfy}"),
        "--notify-after",
        "1",
        "--window",
        "120",
        "--log",
        log.to_str().unwrap(),
    ]);
    let (addr, token) = demo.url();
    let (path, push) = pushes.recv_timeout(WAIT).expect("an ntfy push");
    assert_eq!(path, "/");
    assert_eq!(push["topic"], "ask-user-test");
    assert_eq!(push["priority"], 4);
    assert_eq!(
        push["title"],
        "Database: your agent is waiting for an answer"
    );
    // The tap opens the page with its token, as the page's own address carries it.
    assert_eq!(push["click"], format!("http://{addr}/?token={token}"));
    assert!(
        !push.to_string().contains("Which database"),
        "no question text unless asked for: {push}"
    );
    let actions = push["actions"].as_array().unwrap();
    let labels: Vec<&str> = actions
        .iter()
        .map(|a| a["label"].as_str().unwrap())
        .collect();
    assert_eq!(labels, ["PostgreSQL (Recommended)", "SQLite", "DynamoDB"]);
    let sqlite = &actions[1];
    assert_eq!(sqlite["action"], "http");
    assert!(
        sqlite["url"]
            .as_str()
            .unwrap()
            .starts_with(&format!("http://{addr}/cards/call_demo_1/answer?grant="))
    );

    let (status, body) = press(sqlite);
    assert_eq!(
        (status, body),
        (200, json!({"ok": true, "path": "foreground"}))
    );
    let (status, body) = press(sqlite);
    assert_eq!(
        (status, body["code"].as_str()),
        (403, Some("BAD_GRANT")),
        "used once"
    );
    let (code, lines) = demo.exit_code();
    let text = lines.join("\n");
    assert_eq!(code, 0, "{text}");
    assert!(
        text.contains("Going with SQLite; every pull request will run: no required checks."),
        "{text}"
    );
}

/// `inbox --pg` is the page of a database's sessions (`ask-user mcp --pg` keeps its MCP sessions
/// there), as `serve --pg` serves it.
#[test]
fn inbox_pg_serves_the_questions_of_every_session_of_the_database() {
    let Some(url) = ask_user_testkit::pg::pg_url() else {
        return;
    };
    let schema = ask_user_testkit::pg::fresh_schema();
    let options = ask_user_pg::PgOptions::in_schema(&schema);
    let store = ask_user_pg::PgStore::connect(&url, &options).unwrap();
    ask_user_testkit::logs::create_pending(&store, "mcp-1", &["ask-1"]);
    let mut inbox = Running::start(&[
        "inbox",
        "--pg",
        &url,
        "--pg-schema",
        &schema,
        "--addr",
        "127.0.0.1:0",
    ]);
    let (addr, token) = inbox.url();
    let (status, view) = http(&addr, "GET", "/pending", &token, None);
    assert_eq!(status, 200);
    assert_eq!(view["sessions"][0]["session"], "mcp-1");
    assert_eq!(view["sessions"][0]["active"][0]["callId"], "ask-1");
    let good =
        json!({"session": "mcp-1", "answers": [{"id": "scope", "selected": ["Everything"]}]});
    let (status, body) = http(&addr, "POST", "/cards/ask-1/answer", &token, Some(&good));
    assert_eq!((status, body), (200, json!({"ok": true, "path": "late"})));
    drop(inbox);
    assert_eq!(store.unadmitted("mcp-1").unwrap().len(), 1, "in the ledger");
    ask_user_testkit::pg::drop_schema(&url, &schema);
}

#[test]
fn serve_pg_sends_a_page_answer_to_the_ledger_and_a_worker_admits_it() {
    let Some(url) = ask_user_testkit::pg::pg_url() else {
        return;
    };
    let schema = ask_user_testkit::pg::fresh_schema();
    let options = ask_user_pg::PgOptions::in_schema(&schema);
    let store = ask_user_pg::PgStore::connect(&url, &options).unwrap();
    // Two sessions ask with the same call id: a page's answer names its session.
    ask_user_testkit::logs::create_pending(&store, "s1", &["ask-1"]);
    ask_user_testkit::logs::create_pending(&store, "s2", &["ask-1"]);

    let mut serve = Running::start(&["serve", "--pg", &url, "--pg-schema", &schema]);
    let (addr, token) = serve.url();
    let (status, view) = http(&addr, "GET", "/pending", &token, None);
    assert_eq!(status, 200);
    assert_eq!(view["sessions"][0]["session"], "s1");
    assert_eq!(view["sessions"][0]["active"][0]["callId"], "ask-1");
    drop(watch(&addr, &token, "ask-1"));

    let unnamed = json!({"answers": [{"id": "scope", "selected": ["Everything"]}]});
    let (status, body) = http(&addr, "POST", "/cards/ask-1/answer", &token, Some(&unnamed));
    assert_eq!((status, body["code"].as_str()), (409, Some("AMBIGUOUS")));
    let good = json!({"session": "s1", "answers": [{"id": "scope", "selected": ["Everything"]}]});
    let (status, body) = http(&addr, "POST", "/cards/ask-1/answer", &token, Some(&good));
    assert_eq!((status, body), (200, json!({"ok": true, "path": "late"})));
    let again = json!({"session": "s1", "answers": [{"id": "scope", "selected": ["Tool only"]}]});
    let (status, body) = http(&addr, "POST", "/cards/ask-1/answer", &token, Some(&again));
    assert_eq!((status, body["code"].as_str()), (409, Some("REPLY_QUEUED")));

    let worked = Command::new(BIN)
        .args(["worker", "--once", "--pg", &url, "--pg-schema", &schema])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&worked.stdout),
        "session s1: 1 reply admitted\n"
    );
    let (status, body) = http(&addr, "POST", "/cards/ask-1/answer", &token, Some(&again));
    assert_eq!((status, body["code"].as_str()), (410, Some("NOT_WAITING")));
    drop(serve);
    assert!(store.questions(Some("s1")).unwrap().is_empty(), "settled");
    assert!(
        store.unadmitted("s2").unwrap().is_empty(),
        "s2 was never answered"
    );
    assert_eq!(
        store.questions(Some("s2")).unwrap().len(),
        1,
        "s2 still asks"
    );
    ask_user_testkit::pg::drop_schema(&url, &schema);
}

/// `demo --pg --web` in `schema` with a window of `window` seconds.
fn demo_pg(url: &str, schema: &str, window: &str) -> Running {
    Running::start(&[
        "demo",
        "--pg",
        url,
        "--pg-schema",
        schema,
        "--web",
        "--window",
        window,
    ])
}

#[test]
fn demo_pg_takes_an_answer_given_from_another_shell_while_it_runs() {
    let Some(url) = ask_user_testkit::pg::pg_url() else {
        return;
    };
    let schema = ask_user_testkit::pg::fresh_schema();
    let mut demo = demo_pg(&url, &schema, "1");
    demo.until("the question is still open on the page");
    let options = ask_user_pg::PgOptions::in_schema(&schema);
    let store = ask_user_pg::PgStore::connect(&url, &options).unwrap();
    let names = store.log_names().unwrap();
    assert_eq!(names.len(), 1, "{names:?}");
    assert!(
        store.questions(Some(&names[0])).unwrap()[0].state == ask_user_pg::QuestionState::Continued
    );
    let answered = Command::new(BIN)
        .args([
            "answer",
            "--pg",
            &url,
            "--pg-schema",
            &schema,
            &names[0],
            "call_demo_1",
        ])
        .args([
            "--pick",
            "db=SQLite",
            "--pick",
            "checks=Unit tests",
            "--pick",
            "checks=Lint",
        ])
        .output()
        .unwrap();
    assert!(answered.status.success(), "{answered:?}");
    // The demo holds the session: the ledger's answer reaches it, and it admits it itself.
    let (code, lines) = demo.exit_code();
    assert_eq!(code, 0, "{}", lines.join("\n"));
    let said = lines.join("\n");
    assert!(said.contains("Going with SQLite"), "{said}");
    assert!(
        said.contains(&format!(
            "pending --pg '<URL>' --pg-schema {schema} {}",
            names[0]
        )),
        "{said}"
    );
    assert!(
        !said.contains(&url),
        "the connection string is never printed"
    );
    assert!(store.unadmitted(&names[0]).unwrap().is_empty(), "admitted");
    assert!(
        store.questions(Some(&names[0])).unwrap().is_empty(),
        "settled"
    );
    ask_user_testkit::pg::drop_schema(&url, &schema);
}

#[test]
fn demo_pg_window_is_held_by_a_page_of_serve_pg_and_answered_there() {
    let Some(url) = ask_user_testkit::pg::pg_url() else {
        return;
    };
    let schema = ask_user_testkit::pg::fresh_schema();
    // The demo runs the call (its own page has nobody looking); `serve --pg` is another
    // machine's front end.
    let mut demo = demo_pg(&url, &schema, "5");
    demo.url();
    let mut serve = Running::start(&["serve", "--pg", &url, "--pg-schema", &schema]);
    let (addr, token) = serve.url();
    // The card appears on the page while the call is open there, and the page looking claims it.
    let page = watch(&addr, &token, "call_demo_1");
    let mut db = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    let started = std::time::Instant::now();
    loop {
        let claims: i64 = db
            .query_one(
                &format!(
                    "SELECT count(*) FROM \"{schema}\".ask_user_claims WHERE expires_at > now()"
                ),
                &[],
            )
            .unwrap()
            .get(0);
        if claims > 0 {
            break;
        }
        assert!(
            started.elapsed() < WAIT,
            "serve --pg never claimed the open question"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // Past its 5 s window: the demo's question stays open while the page elsewhere looks.
    demo.never_for(Duration::from_secs(6), "still open");
    let (status, body) = http(
        &addr,
        "POST",
        "/cards/call_demo_1/answer",
        &token,
        Some(&demo_answers()),
    );
    assert_eq!((status, body), (200, json!({"ok": true, "path": "late"})));
    let (code, lines) = demo.exit_code();
    let said = lines.join("\n");
    assert_eq!(code, 0, "{said}");
    assert!(said.contains("Going with SQLite"), "{said}");
    assert!(
        !said.contains("still open"),
        "answered in its window: {said}"
    );
    let admitted: bool = db
        .query_one(
            &format!("SELECT admitted_seq IS NOT NULL FROM \"{schema}\".ask_user_answers"),
            &[],
        )
        .unwrap()
        .get(0);
    assert!(admitted, "the tool result admitted the ledger's answer");
    drop(page);
    drop(serve);
    ask_user_testkit::pg::drop_schema(&url, &schema);
}
