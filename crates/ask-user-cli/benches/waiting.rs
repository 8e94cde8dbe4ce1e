//! One server, many waiting questions, beside its anchor in the same run:
//! `cargo bench -p ask-user-cli --bench waiting`.
//!
//! Ours: one `ask-user mcp --http` process with the machine's inbox page (`--web`, which starts
//! the `ask-user inbox` process: both processes are counted). The anchor: the official MCP
//! TypeScript SDK server (`benches/anchor/waiting_server.mjs`, `@modelcontextprotocol/sdk` from
//! `benches/anchor/package-lock.json`) over streamable HTTP, one transport per session, its tool's
//! calls waiting for an answer that never comes. Both get the same load on loopback: `SESSIONS`
//! sessions (handshake era, a client without forms), each with `CALLS` calls waiting.
//!
//! Every waiting call holds an HTTP/1.1 connection of its own; `ask-user mcp --http` holds up to
//! 4,096 at once (`DEFAULT_MAX_CONNECTIONS`, raising its soft descriptor limit for them), so the
//! default is the load: 100 sessions x 10 calls and 100 pages.
//!
//! Printed, each beside the anchor where it has one:
//! * resident memory per waiting question (the processes' `VmRSS` after the calls wait, less
//!   before the first session, over the number of calls);
//! * CPU while nothing happens: `utime + stime` of the processes over `IDLE_SECS` with every call
//!   waiting and (ours) `PAGES` pages connected to the inbox page's event stream;
//! * an answer on the page to its tool result: `POST /cards/{call}/answer` to the result's
//!   arrival on the call's event stream, one answer at a time for one call of each session
//!   (p50, p99, max);
//! * sessions opened and closed: the processes' resident memory and descriptors before and after
//!   `CHURN` more sessions came and went.
//!
//! `ASK_USER_BENCH_SESSIONS`, `ASK_USER_BENCH_CALLS`, `ASK_USER_BENCH_IDLE_SECS`,
//! `ASK_USER_BENCH_PAGES` and `ASK_USER_BENCH_CHURN` change the sizes. The anchor needs `node`
//! and `npm` (its packages are installed with `npm ci` into the target folder on the first run);
//! without them its figures are left out and the bench says so.
// Bench code stops at its first broken expectation: unwrap and expect are assertions here.
#![allow(clippy::unwrap_used, clippy::expect_used)]
// Counts and kilobytes of a bench convert to `f64` exactly enough for the figures.
#![allow(
    clippy::cast_precision_loss,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss
)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use ask_user_testkit::process;
use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_ask-user");

fn size(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A server under test: its processes (the first the one spoken to) and its MCP URL.
struct Server {
    name: &'static str,
    children: Vec<Child>,
    pids: Vec<u32>,
    mcp: String,
    /// The inbox page's base URL and token (ours only).
    page: Option<(String, String)>,
}

impl Drop for Server {
    fn drop(&mut self) {
        for pid in &self.pids {
            let _ = Command::new("kill").arg(pid.to_string()).status();
        }
        for child in &mut self.children {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Server {
    fn rss_kb(&self) -> u64 {
        self.rss_each().iter().sum()
    }

    /// Each process's resident memory, in the order of `pids`.
    fn rss_each(&self) -> Vec<u64> {
        self.pids
            .iter()
            .map(|pid| status_kb(*pid, "VmRSS:"))
            .collect()
    }

    fn cpu_ticks(&self) -> u64 {
        self.pids
            .iter()
            .map(|pid| process::cpu_ticks(&pid.to_string()))
            .sum()
    }

    fn fds(&self) -> usize {
        self.pids
            .iter()
            .map(|pid| std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, Iterator::count))
            .sum()
    }
}

fn status_kb(pid: u32, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|line| line.strip_prefix(field))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|kb| kb.parse().ok())
        .unwrap_or(0)
}

/// Ours: `ask-user mcp --http` with the inbox page, in a state directory of its own.
fn start_ours(state: &Path) -> Server {
    let mut child = Command::new(BIN)
        .args([
            "mcp",
            "--http",
            "127.0.0.1:0",
            "--web",
            "--web-addr",
            "127.0.0.1:0",
        ])
        .arg("--state-dir")
        .arg(state)
        .env("XDG_CONFIG_HOME", state)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let mut mcp = None;
    for line in lines.by_ref() {
        let line = line.unwrap();
        if let Some(rest) = line.split("serving MCP at ").nth(1) {
            mcp = rest.split_whitespace().next().map(str::to_owned);
            break;
        }
    }
    std::thread::spawn(move || for _ in lines {});
    let mcp = mcp.expect("ask-user mcp did not say where it serves");
    // The inbox process it started, and the page's URL with its token.
    let url = Command::new(BIN)
        .args(["inbox", "--url", "--state-dir"])
        .arg(state)
        .output()
        .unwrap();
    let url = String::from_utf8(url.stdout).unwrap().trim().to_owned();
    let (base, token) = url.split_once("/?token=").expect("the inbox page's URL");
    let inbox = std::fs::read_to_string(state.join("inbox.pid"))
        .ok()
        .and_then(|p| p.trim().parse().ok())
        .or_else(|| pid_of_inbox(state))
        .expect("the inbox process");
    Server {
        name: "ask-user mcp + inbox",
        pids: vec![child.id(), inbox],
        children: vec![child],
        mcp,
        page: Some((base.to_owned(), token.to_owned())),
    }
}

/// The `ask-user inbox` process serving `state` (from `/proc`).
fn pid_of_inbox(state: &Path) -> Option<u32> {
    let needle = format!("inbox\0--state-dir\0{}", state.display());
    std::fs::read_dir("/proc").ok()?.find_map(|entry| {
        let pid: u32 = entry.ok()?.file_name().to_str()?.parse().ok()?;
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
        String::from_utf8_lossy(&cmdline)
            .contains(&needle)
            .then_some(pid)
    })
}

/// The anchor's folder, its packages installed (`npm ci`) on first use; `None` without npm.
fn anchor_dir() -> Option<PathBuf> {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/anchor");
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("waiting-anchor");
    std::fs::create_dir_all(&dir).ok()?;
    for file in ["package.json", "package-lock.json", "waiting_server.mjs"] {
        std::fs::copy(source.join(file), dir.join(file)).ok()?;
    }
    if !dir.join("node_modules/@modelcontextprotocol/sdk").is_dir() {
        let installed = Command::new("npm")
            .args([
                "ci",
                "--ignore-scripts",
                "--no-audit",
                "--no-fund",
                "--loglevel=error",
            ])
            .current_dir(&dir)
            .status()
            .ok()?;
        if !installed.success() {
            return None;
        }
    }
    Some(dir)
}

fn start_anchor(dir: &Path) -> Option<Server> {
    let mut child = Command::new("node")
        .arg(dir.join("waiting_server.mjs"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .ok()?;
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let port = lines
        .next()?
        .ok()?
        .strip_prefix("listening ")?
        .trim()
        .to_owned();
    std::thread::spawn(move || for _ in lines {});
    Some(Server {
        name: "TypeScript SDK server",
        pids: vec![child.id()],
        children: vec![child],
        mcp: format!("http://127.0.0.1:{port}/mcp"),
        page: None,
    })
}

fn post(
    client: &reqwest::Client,
    url: &str,
    session: Option<&str>,
    body: &Value,
) -> reqwest::RequestBuilder {
    let mut request = client
        .post(url)
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream")
        .body(body.to_string());
    if let Some(session) = session {
        request = request
            .header("Mcp-Session-Id", session)
            .header("MCP-Protocol-Version", "2025-11-25");
    }
    request
}

/// Opens a session of the handshake era (a client without forms); returns its id.
async fn open_session(client: &reqwest::Client, url: &str, name: &str) -> String {
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": name, "version": "1"}}});
    let response = post(client, url, None, &init).send().await.unwrap();
    let session = response
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .expect("a session id")
        .to_owned();
    let _ = response.text().await;
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let _ = post(client, url, Some(&session), &initialized)
        .send()
        .await
        .unwrap()
        .text()
        .await;
    session
}

async fn close_session(client: &reqwest::Client, url: &str, session: &str) {
    let _ = client
        .delete(url)
        .header("Mcp-Session-Id", session)
        .header("MCP-Protocol-Version", "2025-11-25")
        .send()
        .await;
}

/// A call waiting: the response's headers came; the task ends with when its result came.
struct Waiting {
    question: String,
    done: tokio::task::JoinHandle<Option<Instant>>,
}

async fn start_call(
    client: &reqwest::Client,
    url: &str,
    session: &str,
    id: u64,
    question: String,
) -> Waiting {
    let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
        "name": "ask_user_question",
        "arguments": {"questions": [{"id": "q", "question": question,
                                     "options": [{"label": "Yes"}, {"label": "No"}]}]}}});
    let mut response = post(client, url, Some(session), &call)
        .send()
        .await
        .unwrap();
    let done = tokio::spawn(async move {
        let mut seen = Vec::new();
        while let Ok(Some(chunk)) = response.chunk().await {
            seen.extend_from_slice(&chunk);
            if seen.windows(8).any(|w| w == b"\"result\"") {
                return Some(Instant::now());
            }
        }
        None
    });
    Waiting { question, done }
}

/// The page's open cards: (session, call id, question text), from the snapshot its event
/// stream starts with.
async fn cards(client: &reqwest::Client, page: &(String, String)) -> Vec<(String, String, String)> {
    let (base, token) = page;
    let Ok(mut response) = client
        .get(format!("{base}/events?token={token}&client=bench-lister"))
        .header("Accept", "text/event-stream")
        .send()
        .await
    else {
        return Vec::new();
    };
    let mut text = String::new();
    let snapshot = loop {
        let Ok(Some(chunk)) = response.chunk().await else {
            return Vec::new();
        };
        text.push_str(&String::from_utf8_lossy(&chunk));
        let line = text
            .lines()
            .find_map(|line| line.strip_prefix("data: "))
            .filter(|_| text.contains("}\n"));
        if let Some(data) = line.and_then(|d| serde_json::from_str::<Value>(d).ok()) {
            break data;
        }
    };
    let mut found = Vec::new();
    collect_cards(&snapshot, None, &mut found);
    found
}

/// Every object with a `callId` and questions under `value`, with the session it is under.
fn collect_cards(value: &Value, session: Option<&str>, found: &mut Vec<(String, String, String)>) {
    match value {
        Value::Object(map) => {
            let session = map
                .get("session")
                .or_else(|| map.get("name"))
                .and_then(Value::as_str)
                .or(session);
            if let (Some(call), Some(question)) = (
                map.get("callId").and_then(Value::as_str),
                map.get("questions")
                    .and_then(|q| q.get(0))
                    .and_then(|q| q.get("question"))
                    .and_then(Value::as_str),
            ) {
                found.push((
                    session.unwrap_or_default().to_owned(),
                    call.to_owned(),
                    question.to_owned(),
                ));
                return;
            }
            for child in map.values() {
                collect_cards(child, session, found);
            }
        }
        Value::Array(items) => {
            for item in items {
                collect_cards(item, session, found);
            }
        }
        _ => {}
    }
}

struct Figures {
    per_question_kb: f64,
    /// The same, for each process of the server (ours: the MCP server, then the inbox).
    per_question_each_kb: Vec<f64>,
    idle_cpu_percent: f64,
    latencies: Vec<Duration>,
    churn: Option<(u64, u64, usize, usize)>,
}

async fn measure(
    server: &Server,
    sessions: usize,
    calls: usize,
    idle: Duration,
    pages: usize,
    churn: usize,
) -> Figures {
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .build()
        .unwrap();
    tokio::time::sleep(Duration::from_secs(1)).await;
    let before = server.rss_each();
    let (ids, mut waiting) = tokio::time::timeout(
        Duration::from_mins(2),
        load(&client, server, sessions, calls),
    )
    .await
    .expect("the calls never all waited (past the server's connection cap?)");
    tokio::time::sleep(Duration::from_secs(2)).await;
    let count = (sessions * calls) as f64;
    let per_question_each_kb: Vec<f64> = server
        .rss_each()
        .iter()
        .zip(&before)
        .map(|(after, before)| after.saturating_sub(*before) as f64 / count)
        .collect();
    let per_question_kb = per_question_each_kb.iter().sum();
    let streams = connect_pages(&client, server, pages).await;
    let ticks = server.cpu_ticks();
    tokio::time::sleep(idle).await;
    let used = server.cpu_ticks().saturating_sub(ticks) as f64 / process::clock_ticks_per_second();
    let idle_cpu_percent = 100.0 * used / idle.as_secs_f64();
    let latencies = answer_on_page(&client, server, &mut waiting, calls).await;
    for stream in streams {
        stream.abort();
    }
    for call in waiting {
        call.done.abort();
    }
    for session in &ids {
        close_session(&client, &server.mcp, session).await;
    }
    let churn = if churn == 0 {
        None
    } else {
        Some(come_and_go(&client, server, churn).await)
    };
    Figures {
        per_question_kb,
        per_question_each_kb,
        idle_cpu_percent,
        latencies,
        churn,
    }
}

/// `sessions` sessions with `calls` calls waiting each (on ours, until the page lists them all).
async fn load(
    client: &reqwest::Client,
    server: &Server,
    sessions: usize,
    calls: usize,
) -> (Vec<String>, Vec<Waiting>) {
    let mut waiting = Vec::new();
    let mut ids = Vec::new();
    for s in 0..sessions {
        let session = open_session(client, &server.mcp, &format!("bench-{s}")).await;
        for c in 0..calls {
            let question = format!("Session {s}, question {c}: go on?");
            waiting.push(start_call(client, &server.mcp, &session, (c + 1) as u64, question).await);
        }
        ids.push(session);
    }
    if let Some(page) = &server.page {
        let started = Instant::now();
        while cards(client, page).await.len() < sessions * calls {
            assert!(
                started.elapsed() < Duration::from_mins(1),
                "the page never listed every question"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
    (ids, waiting)
}

/// `pages` pages on the inbox page's event stream (ours only), read until aborted.
async fn connect_pages(
    client: &reqwest::Client,
    server: &Server,
    pages: usize,
) -> Vec<tokio::task::JoinHandle<()>> {
    let mut streams = Vec::new();
    let Some((base, token)) = &server.page else {
        return streams;
    };
    for p in 0..pages {
        let response = client
            .get(format!("{base}/events?token={token}&client=bench{p}"))
            .header("Accept", "text/event-stream")
            .send()
            .await
            .unwrap();
        streams.push(tokio::spawn(async move {
            let mut response = response;
            while let Ok(Some(_)) = response.chunk().await {}
        }));
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    streams
}

/// One answer at a time on the page for the first call of each session: how long each took to
/// reach its tool result.
async fn answer_on_page(
    client: &reqwest::Client,
    server: &Server,
    waiting: &mut [Waiting],
    calls: usize,
) -> Vec<Duration> {
    let mut latencies = Vec::new();
    let Some(page) = &server.page else {
        return latencies;
    };
    let listed = cards(client, page).await;
    let (base, token) = page;
    for call in waiting.iter_mut().step_by(calls.max(1)) {
        let Some((session, call_id, _)) = listed.iter().find(|(_, _, q)| *q == call.question)
        else {
            continue;
        };
        let body = json!({"session": session, "answers": [{"id": "q", "selected": ["Yes"]}]});
        let sent = Instant::now();
        let answered = client
            .post(format!("{base}/cards/{call_id}/answer?token={token}"))
            .header("Content-Type", "application/json")
            .body(body.to_string())
            .send()
            .await
            .unwrap();
        assert!(
            answered.status().is_success(),
            "{}",
            answered.text().await.unwrap_or_default()
        );
        let arrived = (&mut call.done).await.unwrap().expect("the tool result");
        latencies.push(arrived.duration_since(sent));
    }
    latencies
}

/// `churn` sessions opened and closed one after another: (RSS before, after; descriptors
/// before, after).
async fn come_and_go(
    client: &reqwest::Client,
    server: &Server,
    churn: usize,
) -> (u64, u64, usize, usize) {
    tokio::time::sleep(Duration::from_secs(2)).await;
    let (rss, fds) = (server.rss_kb(), server.fds());
    for s in 0..churn {
        let session = open_session(client, &server.mcp, &format!("churn-{s}")).await;
        close_session(client, &server.mcp, &session).await;
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    (rss, server.rss_kb(), fds, server.fds())
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let at = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[at.min(sorted.len() - 1)]
}

fn report(name: &str, figures: &Figures) {
    println!("{name}:");
    let each: Vec<String> = figures
        .per_question_each_kb
        .iter()
        .map(|kb| format!("{kb:.1}"))
        .collect();
    println!(
        "  resident memory per waiting question: {:.1} KB (by process: {} KB)",
        figures.per_question_kb,
        each.join(" + ")
    );
    println!(
        "  CPU while nothing happens: {:.2}% of one core",
        figures.idle_cpu_percent
    );
    if !figures.latencies.is_empty() {
        let mut sorted = figures.latencies.clone();
        sorted.sort();
        println!(
            "  page answer to tool result ({} answers): p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
            sorted.len(),
            percentile(&sorted, 0.5).as_secs_f64() * 1e3,
            percentile(&sorted, 0.99).as_secs_f64() * 1e3,
            sorted.last().unwrap().as_secs_f64() * 1e3
        );
    }
    if let Some((rss_before, rss_after, fds_before, fds_after)) = figures.churn {
        println!(
            "  sessions opened and closed: RSS {rss_before} KB -> {rss_after} KB, descriptors {fds_before} -> {fds_after}"
        );
    }
}

fn main() {
    // `cargo bench` passes `--bench`; nothing else is taken.
    let sessions = size("ASK_USER_BENCH_SESSIONS", 100);
    let calls = size("ASK_USER_BENCH_CALLS", 10);
    let idle = Duration::from_secs(size("ASK_USER_BENCH_IDLE_SECS", 60) as u64);
    let pages = size("ASK_USER_BENCH_PAGES", 100);
    let churn = size("ASK_USER_BENCH_CHURN", 1000);
    println!(
        "{sessions} sessions x {calls} waiting calls; idle {} s with {pages} pages; {churn} sessions opened and closed",
        idle.as_secs()
    );
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let state = tempfile::tempdir().unwrap();
    let ours = start_ours(state.path());
    let our = runtime.block_on(measure(&ours, sessions, calls, idle, pages, churn));
    drop(ours);
    report_ours_and_anchor(&runtime, &our, sessions, calls, idle, churn);
}

fn report_ours_and_anchor(
    runtime: &tokio::runtime::Runtime,
    our: &Figures,
    sessions: usize,
    calls: usize,
    idle: Duration,
    churn: usize,
) {
    report("ask-user mcp + inbox", our);
    let Some(anchor) = anchor_dir().and_then(|dir| start_anchor(&dir)) else {
        println!("anchor: not measured (no node or npm): figures above without their anchor");
        return;
    };
    let theirs = runtime.block_on(measure(&anchor, sessions, calls, idle, 0, churn));
    report(anchor.name, &theirs);
    println!(
        "ratios (ours / anchor): memory per waiting question {:.2}x, idle CPU {:.2}x",
        our.per_question_kb / theirs.per_question_kb,
        our.idle_cpu_percent / theirs.idle_cpu_percent.max(f64::EPSILON)
    );
}
