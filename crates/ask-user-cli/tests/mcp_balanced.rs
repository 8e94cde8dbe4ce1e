//! Any instance serves any round: `ask-user mcp --http --pg` processes over one database behind
//! Debian's nginx, round robin, spoken to in the stateless revision (2026-07-28) with a bearer
//! token. A form's first round is served by one instance and its second by the other; `kill -9`
//! of the instance holding a timed call's window leaves the question continued, answerable from
//! the shell, and the other instance hands the late answer to the companion tool.
//!
//! nginx is `ASK_USER_NGINX`, else `/usr/sbin/nginx` (`.ci/run` installs it); without it the
//! test says so and returns, except under `CI=true`, where it fails.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fmt::Write as _;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ask_user_testkit::pg::{drop_schema, fresh_schema, pg_url};
use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_ask-user");
const TOKEN: &str = "7c1e9a4b2d6f80351e9c7a2b4d6f8013";
const STARTUP: Duration = Duration::from_secs(30);

fn nginx() -> Option<PathBuf> {
    let path = std::env::var_os("ASK_USER_NGINX")
        .map_or_else(|| PathBuf::from("/usr/sbin/nginx"), PathBuf::from);
    if path.is_file() {
        return Some(path);
    }
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "{} is missing: the load-balancer test needs Debian's nginx (.ci/run installs it)",
        path.display()
    );
    eprintln!("skipped: no nginx at {}", path.display());
    None
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A child process killed when dropped, with what it wrote on stderr.
struct Process {
    child: Child,
    stderr: Arc<Mutex<Vec<String>>>,
}

impl Process {
    fn stderr(&self) -> String {
        self.stderr.lock().unwrap().join("\n")
    }

    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Spawns `command` with its stderr collected; the lines that contain `ready` are sent on the
/// channel too.
fn spawned(
    mut command: Command,
    ready: Option<String>,
) -> (Process, std::sync::mpsc::Receiver<String>) {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let lines = Arc::new(Mutex::new(Vec::new()));
    let (tx, rx) = std::sync::mpsc::channel();
    let kept = Arc::clone(&lines);
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if ready.as_deref().is_some_and(|ready| line.contains(ready)) {
                let _ = tx.send(line.clone());
            }
            kept.lock().unwrap().push(line);
        }
    });
    let process = Process {
        child,
        stderr: lines,
    };
    (process, rx)
}

/// Spawns `command`, collecting its stderr; returns once a line of it contains `ready` (that
/// line too).
fn spawn_until(command: Command, ready: &str) -> (Process, String) {
    let (process, rx) = spawned(command, Some(ready.to_owned()));
    let line = rx
        .recv_timeout(STARTUP)
        .unwrap_or_else(|_| panic!("never ready:\n{}", process.stderr()));
    (process, line)
}

/// One `ask-user mcp --http --pg` instance: the process and its port.
struct Instance {
    process: Process,
    port: u16,
}

fn instance(config: &Path, url: &str, schema: &str, timed: bool) -> Instance {
    let state = tempfile::tempdir().unwrap().keep();
    let mut command = Command::new(BIN);
    command
        .arg("--config")
        .arg(config)
        .args(["mcp", "--http", "127.0.0.1:0", "--pg", url, "--pg-schema"])
        .arg(schema)
        .arg("--state-dir")
        .arg(&state);
    if timed {
        command.args(["--mode", "timed"]);
    }
    let (process, line) = spawn_until(command, "serving MCP at");
    let port = line
        .split("127.0.0.1:")
        .nth(1)
        .and_then(|rest| rest.split('/').next())
        .and_then(|port| port.parse().ok())
        .unwrap_or_else(|| panic!("no port in {line:?}"));
    Instance { process, port }
}

/// nginx in the foreground as one process, its files in `dir`: one listening port per upstream
/// (round robin over its instances' ports), each response naming the instance that served it
/// (`X-Upstream`).
fn start_nginx(nginx: &Path, dir: &Path, upstreams: &[(u16, [u16; 2])]) -> Process {
    let mut http = String::new();
    for (index, (listen, ports)) in upstreams.iter().enumerate() {
        let _ = write!(
            http,
            "upstream mcp{index} {{ server 127.0.0.1:{}; server 127.0.0.1:{}; }}\n\
             server {{\n  listen 127.0.0.1:{listen};\n  location / {{\n    \
             proxy_pass http://mcp{index};\n    proxy_http_version 1.1;\n    \
             proxy_buffering off;\n    proxy_read_timeout 120s;\n    \
             add_header X-Upstream $upstream_addr always;\n  }}\n}}\n",
            ports[0], ports[1]
        );
    }
    let d = dir.display();
    let conf = format!(
        "daemon off;\nmaster_process off;\nworker_processes 1;\npid {d}/nginx.pid;\n\
         error_log {d}/error.log info;\nevents {{ worker_connections 64; }}\n\
         http {{\naccess_log {d}/access.log;\nclient_body_temp_path {d}/body;\n\
         proxy_temp_path {d}/proxy;\nfastcgi_temp_path {d}/fastcgi;\nuwsgi_temp_path {d}/uwsgi;\n\
         scgi_temp_path {d}/scgi;\n{http}}}\n"
    );
    std::fs::write(dir.join("nginx.conf"), conf).unwrap();
    let mut command = Command::new(nginx);
    command
        .arg("-p")
        .arg(dir)
        .arg("-e")
        .arg(dir.join("error.log"))
        .arg("-c")
        .arg(dir.join("nginx.conf"));
    let (process, _) = spawned(command, None);
    let started = Instant::now();
    for (listen, _) in upstreams {
        while std::net::TcpStream::connect(("127.0.0.1", *listen)).is_err() {
            let log = std::fs::read_to_string(dir.join("error.log")).unwrap_or_default();
            assert!(
                started.elapsed() < STARTUP,
                "nginx never listened:\n{}\n{log}",
                process.stderr()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    process
}

/// A reply through the balancer: its status, the instance that served it, and its JSON-RPC
/// message (a JSON body, or the first `data:` of an event stream), `Null` when there is none.
struct Reply {
    status: u16,
    upstream: String,
    message: Value,
}

/// One stateless `tools/call` of `name` through the balancer on `port`, as a client that shows
/// forms.
async fn call(port: u16, name: &str, mut params: Value) -> Reply {
    params["name"] = json!(name);
    params["_meta"] = ask_user_testkit::mcp::stateless_meta("balanced-test");
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params});
    let response = reqwest::Client::new()
        .post(format!("http://127.0.0.1:{port}/mcp"))
        .bearer_auth(TOKEN)
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", "2026-07-28")
        .header("Mcp-Method", "tools/call")
        .header("Mcp-Name", name)
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let upstream = response
        .headers()
        .get("x-upstream")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let text = response.text().await.unwrap_or_default();
    let message = ask_user_testkit::mcp::reply_message(&text).unwrap_or(Value::Null);
    Reply {
        status,
        upstream,
        message,
    }
}

fn text_of(reply: &Reply) -> String {
    reply.message["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| {
            panic!(
                "no text ({} from {}): {}",
                reply.status, reply.upstream, reply.message
            )
        })
        .to_owned()
}

fn question(timeout: Option<u64>) -> Value {
    let mut arguments = json!({"questions": [{
        "id": "db", "question": "Which database?",
        "options": [{"label": "SQLite"}, {"label": "PostgreSQL"}]}]});
    if let Some(seconds) = timeout {
        arguments["timeout"] = json!(seconds);
    }
    arguments
}

fn run(args: &[&str]) -> Output {
    Command::new(BIN).args(args).output().unwrap()
}

/// The types of every record of the database's session logs, in order per log (on a thread
/// of its own: the synchronous client runs a runtime of its own).
fn kinds(url: &str, schema: &str) -> Vec<String> {
    std::thread::scope(|scope| scope.spawn(|| kinds_now(url, schema)).join().unwrap())
}

fn kinds_now(url: &str, schema: &str) -> Vec<String> {
    let mut client = postgres::Client::connect(url, postgres::NoTls).unwrap();
    let quoted = schema.replace('"', "\"\"");
    client
        .query(
            &format!(
                "SELECT convert_from(line, 'UTF8') FROM \"{quoted}\".ask_user_lines \
                 ORDER BY name, line_no"
            ),
            &[],
        )
        .unwrap()
        .iter()
        .filter_map(|row| {
            let line: String = row.get(0);
            let value: Value = serde_json::from_str(&line).ok()?;
            value["type"].as_str().map(str::to_owned)
        })
        .collect()
}

/// The owner (`host:pid:…`) holding the lease of the session whose log has a call open, with
/// the session's name and the call id, once `pending --pg` lists it.
fn held_question(url: &str, schema: &str) -> (u32, String, String) {
    let started = Instant::now();
    loop {
        let listed = run(&["pending", "--pg", url, "--pg-schema", schema, "--json"]);
        if listed.status.success()
            && let Ok(listed) = serde_json::from_slice::<Value>(&listed.stdout)
            && let Some(question) = listed["questions"].as_array().and_then(|q| q.first())
        {
            let session = question["session"].as_str().unwrap().to_owned();
            let call_id = question["callId"].as_str().unwrap().to_owned();
            let mut client = postgres::Client::connect(url, postgres::NoTls).unwrap();
            let quoted = schema.replace('"', "\"\"");
            let owner: Option<String> = client
                .query_one(
                    &format!(
                        "SELECT owner FROM \"{quoted}\".ask_user_sessions \
                         WHERE name = $1 AND lease_until > now()"
                    ),
                    &[&session],
                )
                .map_or(None, |row| row.get(0));
            if let Some(pid) = owner
                .as_deref()
                .and_then(|o| o.split(':').nth(1))
                .and_then(|pid| pid.parse().ok())
            {
                return (pid, session, call_id);
            }
        }
        assert!(
            started.elapsed() < STARTUP,
            "no question held open: {}",
            String::from_utf8_lossy(&listed.stdout)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_instances_behind_nginx_serve_one_client_and_survive_a_kill() {
    let Some(nginx) = nginx() else { return };
    let Some(url) = pg_url() else { return };
    let schema = fresh_schema();
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config.toml");
    std::fs::write(&config, format!("[mcp]\ntokens = [\"{TOKEN}\"]\n")).unwrap();
    // The first instance makes the schema; the others start at once after it.
    let first = instance(&config, &url, &schema, false);
    let blocking = [first, instance(&config, &url, &schema, false)];
    let mut timed = [
        instance(&config, &url, &schema, true),
        instance(&config, &url, &schema, true),
    ];
    let (forms_port, timed_port) = (free_port(), free_port());
    let _nginx = start_nginx(
        &nginx,
        dir.path(),
        &[
            (forms_port, [blocking[0].port, blocking[1].port]),
            (timed_port, [timed[0].port, timed[1].port]),
        ],
    );

    forms_are_served_across_instances(forms_port, &url, &schema).await;
    a_killed_window_is_answered_through_the_other_instance(timed_port, &mut timed, &url, &schema)
        .await;
    drop(blocking);
    drop(timed);
    std::thread::scope(|scope| scope.spawn(|| drop_schema(&url, &schema)).join().unwrap());
}

/// Round one on one instance, the retry with the form's answer on the other (the key is the
/// database's); the state cannot be used again on either.
async fn forms_are_served_across_instances(port: u16, url: &str, schema: &str) {
    let arguments = question(None);
    let round = call(port, "ask_user_question", json!({"arguments": arguments})).await;
    let result = &round.message["result"];
    assert_eq!(result["resultType"], "input_required", "{}", round.message);
    let state = result["requestState"].as_str().unwrap().to_owned();
    let retry = json!({
        "arguments": arguments,
        "requestState": state,
        "inputResponses": {"ask_user_question": {"action": "accept", "content": {"q01": "PostgreSQL"}}},
    });
    let done = call(port, "ask_user_question", retry.clone()).await;
    assert_ne!(
        round.upstream, done.upstream,
        "round robin: the second round is the other instance's"
    );
    assert_eq!(
        text_of(&done),
        r#"{"answers":[{"id":"db","selected":["PostgreSQL"]}]}"#
    );
    // Sent again, to either instance: refused, nothing written.
    let before = kinds(url, schema);
    for _ in 0..2 {
        let again = call(port, "ask_user_question", retry.clone()).await;
        assert!(
            again.message["error"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("was used already")),
            "{} from {}",
            again.message,
            again.upstream
        );
    }
    assert_eq!(kinds(url, schema), before);
    assert_eq!(
        before.iter().filter(|k| *k == "tool/result").count(),
        1,
        "{before:?}"
    );
}

/// A timed call holds its window on one instance, which is killed (`kill -9`); the question is
/// continued, answered from the shell, and the other instance hands the answer to the companion.
async fn a_killed_window_is_answered_through_the_other_instance(
    port: u16,
    timed: &mut [Instance; 2],
    url: &str,
    schema: &str,
) {
    let held = tokio::spawn(call(
        port,
        "ask_user_question",
        json!({"arguments": question(Some(120))}),
    ));
    let (url_owned, schema_owned) = (url.to_owned(), schema.to_owned());
    // On a thread outside the runtime: the synchronous client runs a runtime of its own.
    let (tx, rx) = tokio::sync::oneshot::channel();
    std::thread::spawn(move || tx.send(held_question(&url_owned, &schema_owned)));
    let (pid, session, call_id) = rx.await.unwrap();
    let holder = timed
        .iter_mut()
        .find(|i| i.process.child.id() == pid)
        .expect("an instance of the test holds the window");
    holder.process.kill();
    let cut = held.await.unwrap();
    assert!(
        cut.message["result"].is_null(),
        "the killed instance answered nothing: {} {}",
        cut.status,
        cut.message
    );
    // The survivor takes the session over once the dead instance's lease ends, repairs it, and
    // finds the call continued.
    let started = Instant::now();
    let pending = loop {
        let reply = call(
            port,
            "ask_user_question_answer",
            json!({"arguments": {"callId": call_id}}),
        )
        .await;
        if reply.message["result"]["isError"] != true && !reply.message["result"].is_null() {
            break text_of(&reply);
        }
        assert!(
            started.elapsed() < Duration::from_mins(1),
            "never continued: {} {}",
            reply.status,
            reply.message
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    assert!(pending.starts_with(r#"{"pending":true"#), "{pending}");
    let answered = run(&[
        "answer",
        "--pg",
        url,
        "--pg-schema",
        schema,
        "--admit",
        "--pick",
        "db=SQLite",
        &session,
        &call_id,
    ]);
    assert!(
        answered.status.success(),
        "{}",
        String::from_utf8_lossy(&answered.stderr)
    );
    let delivered = call(
        port,
        "ask_user_question_answer",
        json!({"arguments": {"callId": call_id}}),
    )
    .await;
    let text = text_of(&delivered);
    assert!(text.contains(r#""selected":["SQLite"]"#), "{text}");
    let kinds = kinds(url, schema);
    assert_eq!(
        kinds.iter().filter(|k| *k == "tool/result").count(),
        2,
        "the form's call and the repaired timed call: {kinds:?}"
    );
}
