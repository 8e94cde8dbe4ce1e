//! Exactly-once settlement under faults, as whole processes against a real `PostgreSQL` server:
//! three `ask-user worker` processes and three answering front ends (`ask-user answer`), all
//! talking to the database through a TCP proxy that cuts connections at random (mid-transaction
//! included); workers and front ends killed with SIGKILL at random and workers restarted; leases
//! running out and taken over (workers stalled with SIGSTOP past their lease, then resumed, so
//! their next append is fenced); the server itself restarted once. Then, with the faults stopped
//! and the workers left to finish:
//!
//! * every acknowledged answer (exit 0) is in the ledger as given, and admitted;
//! * every answered call has exactly one admitted reply in its session's log, and every other
//!   question none;
//! * no `seq` is written twice or skipped, and no line is corrupt, in any exported log;
//! * each session's ledger equals the projection replayed from its exported JSONL log.
//!
//! The size is `ASK_USER_FAULT_SESSIONS` × `ASK_USER_FAULT_QUESTIONS` (default 20 × 10: 200
//! questions, under a minute); `ASK_USER_FAULT_SEED` replays a run. The figures are printed.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Write as _;
use std::io::{self, BufReader};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use ask_user_pg::{PgOptions, PgStore};
use ask_user_testkit::pg::{fresh_schema, pg_url};
use session_log::{EventBody, LogVisitor, Scanned, SessionStore};
use user_questions_projection::fold_log;

const BIN: &str = env!("CARGO_BIN_EXE_ask-user");
const LABELS: [&str; 2] = ["Tool only", "Everything"];

/// A small deterministic generator (xorshift64*), so a failing run can be replayed by its seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A TCP proxy to the server that can cut any of its connections.
struct Proxy {
    port: u16,
    conns: Arc<Mutex<HashMap<u64, (TcpStream, TcpStream)>>>,
    cuts: AtomicUsize,
}

impl Proxy {
    fn start(upstream: (String, u16)) -> Arc<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let proxy = Arc::new(Self {
            port: listener.local_addr().unwrap().port(),
            conns: Arc::new(Mutex::new(HashMap::new())),
            cuts: AtomicUsize::new(0),
        });
        let conns = Arc::clone(&proxy.conns);
        thread::spawn(move || {
            let next = AtomicU64::new(0);
            for client in listener.incoming() {
                let Ok(client) = client else { continue };
                let Ok(server) = TcpStream::connect((upstream.0.as_str(), upstream.1)) else {
                    continue;
                };
                let id = next.fetch_add(1, Ordering::Relaxed);
                conns.lock().unwrap().insert(
                    id,
                    (client.try_clone().unwrap(), server.try_clone().unwrap()),
                );
                for (mut from, mut to) in [
                    (client.try_clone().unwrap(), server.try_clone().unwrap()),
                    (server, client),
                ] {
                    let conns = Arc::clone(&conns);
                    thread::spawn(move || {
                        let _ = io::copy(&mut from, &mut to);
                        let _ = to.shutdown(Shutdown::Both);
                        let _ = from.shutdown(Shutdown::Both);
                        conns.lock().unwrap().remove(&id);
                    });
                }
            }
        });
        proxy
    }

    /// Cuts one connection at random (whatever it was doing); whether there was one.
    fn cut(&self, rng: &mut Rng) -> bool {
        let conns = self.conns.lock().unwrap();
        if conns.is_empty() {
            return false;
        }
        let ids: Vec<u64> = conns.keys().copied().collect();
        let id = ids[usize::try_from(rng.below(ids.len() as u64)).unwrap()];
        let (a, b) = &conns[&id];
        let _ = a.shutdown(Shutdown::Both);
        let _ = b.shutdown(Shutdown::Both);
        self.cuts.fetch_add(1, Ordering::Relaxed);
        true
    }
}

/// One `ask-user worker` slot: its process, restarted after a kill, and all it printed.
struct WorkerSlot {
    child: Child,
    logs: Vec<std::path::PathBuf>,
}

fn start_worker(
    url: &str,
    schema: &str,
    dir: &std::path::Path,
    n: usize,
) -> (Child, std::path::PathBuf) {
    let log = dir.join(format!("worker-{n}.log"));
    let file = std::fs::File::create(&log).unwrap();
    let child = Command::new(BIN)
        .args([
            "worker",
            "--pg",
            url,
            "--pg-schema",
            schema,
            "--poll",
            "1",
            "--lease",
            "1.5",
        ])
        .stdin(Stdio::null())
        .stdout(file.try_clone().unwrap())
        .stderr(file)
        .spawn()
        .unwrap();
    (child, log)
}

/// How one `ask-user answer` process ended.
enum Attempt {
    /// Exit 0: this answer was accepted.
    Accepted,
    /// Exit 5 (`REPLY_QUEUED`) or 9 (`ALREADY_ANSWERED`): another answer was first (perhaps one
    /// of an earlier attempt that was killed after its commit).
    Queued,
    /// Killed, or failed for want of the database: whether it was accepted is unknown.
    Unknown,
}

fn answer_once(
    url: &str,
    schema: &str,
    session: &str,
    call: &str,
    label: &str,
    kill_after: Option<Duration>,
) -> Attempt {
    let mut child = Command::new(BIN)
        .args([
            "answer",
            "--pg",
            url,
            "--pg-schema",
            schema,
            session,
            call,
            "--pick",
            &format!("scope={label}"),
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    if let Some(after) = kill_after {
        thread::sleep(after);
        let _ = child.kill();
    }
    match child.wait().unwrap().code() {
        Some(0) => Attempt::Accepted,
        Some(5 | 9) => Attempt::Queued,
        _ => Attempt::Unknown,
    }
}

/// The ids of the late replies per call in a scan.
#[derive(Default)]
struct Replies(BTreeMap<String, Vec<String>>);

impl LogVisitor for Replies {
    fn line(&mut self, scanned: &Scanned<'_>) {
        if let Scanned::Record(record) = scanned
            && let Some(event) = record.record.event()
            && let EventBody::UserMessage(message) = &event.body
            && let Some(call) = message.reply_call_id()
        {
            self.0
                .entry(call.as_str().to_owned())
                .or_default()
                .push(message.id.clone().unwrap_or_default());
        }
    }
}

/// The server's TCP address, and `url` pointed at `port` on loopback instead (the proxy).
fn via_proxy(url: &str) -> ((String, u16), impl Fn(u16) -> String) {
    let config: postgres::Config = url.parse().unwrap();
    let host = match &config.get_hosts()[0] {
        postgres::config::Host::Tcp(host) => host.clone(),
        postgres::config::Host::Unix(_) => panic!("the fault test needs a TCP server address"),
    };
    let upstream_port = config.get_ports().first().copied().unwrap_or(5432);
    let mut rest = String::new();
    if let Some(user) = config.get_user() {
        let _ = write!(rest, " user={user}");
    }
    if let Some(db) = config.get_dbname() {
        let _ = write!(rest, " dbname={db}");
    }
    if let Some(password) = config.get_password() {
        let _ = write!(rest, " password={}", String::from_utf8_lossy(password));
    }
    ((host, upstream_port), move |port| {
        format!("host=127.0.0.1 port={port}{rest}")
    })
}

fn restart_server() -> bool {
    let Ok(ctl) = std::env::var("ASK_USER_PG_CTL") else {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "ASK_USER_PG_CTL is not set: the fault test restarts the server (.ci/run sets it)"
        );
        eprintln!("server not restarted: ASK_USER_PG_CTL is not set");
        return false;
    };
    let mut words = ctl.split_whitespace();
    let program = words.next().unwrap();
    let status = Command::new(program)
        .args(words)
        .args(["restart", "-m", "fast", "-w", "-t", "60"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success(), "pg_ctl restart failed");
    true
}

#[test]
#[allow(clippy::too_many_lines)]
fn every_answered_question_settles_exactly_once_under_faults() {
    let Some(url) = pg_url() else { return };
    let sessions = env_or("ASK_USER_FAULT_SESSIONS", 20);
    let per_session = env_or("ASK_USER_FAULT_QUESTIONS", 10);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap();
    // Never 0: xorshift would stay 0.
    let seed = env_or(
        "ASK_USER_FAULT_SEED",
        (now.as_secs() << 30) ^ u64::from(now.subsec_nanos()) | 1,
    );
    eprintln!("fault test: seed {seed} (ASK_USER_FAULT_SEED replays it)");
    let schema = fresh_schema();
    let store = PgStore::connect(&url, &PgOptions::in_schema(&schema)).unwrap();
    let mut questions = Vec::new();
    for s in 0..sessions {
        let name = format!("s{s}");
        let calls: Vec<String> = (0..per_session).map(|q| format!("call-{s}-{q}")).collect();
        let refs: Vec<&str> = calls.iter().map(String::as_str).collect();
        ask_user_testkit::logs::create_pending(&store, &name, &refs);
        questions.extend(calls.into_iter().map(|c| (name.clone(), c)));
    }
    let (upstream, at_port) = via_proxy(&url);
    let proxy = Proxy::start(upstream);
    let proxied_url = at_port(proxy.port);
    let dir = tempfile::tempdir().unwrap();

    // Three workers.
    let mut workers: Vec<WorkerSlot> = (0..3)
        .map(|n| {
            let (child, log) = start_worker(&proxied_url, &schema, dir.path(), n);
            WorkerSlot {
                child,
                logs: vec![log],
            }
        })
        .collect();

    // Three front ends: each question is answered by one or two of them (racing), with a
    // random label; some of their processes are killed mid-way; an attempt whose outcome is
    // unknown is retried, as a person would.
    let queue: Arc<Mutex<Vec<(String, String)>>> = Arc::new(Mutex::new(questions.clone()));
    let acknowledged: Arc<Mutex<BTreeMap<String, String>>> = Arc::new(Mutex::new(BTreeMap::new()));
    let attempts = Arc::new(AtomicUsize::new(0));
    let front_kills = Arc::new(AtomicUsize::new(0));
    let queued_replies = Arc::new(AtomicUsize::new(0));
    let mut front_ends = Vec::new();
    for f in 0..3u64 {
        let (queue, acknowledged, attempts, front_kills, queued_replies) = (
            Arc::clone(&queue),
            Arc::clone(&acknowledged),
            Arc::clone(&attempts),
            Arc::clone(&front_kills),
            Arc::clone(&queued_replies),
        );
        let (url, schema) = (proxied_url.clone(), schema.clone());
        front_ends.push(thread::spawn(move || {
            let mut rng = Rng(seed ^ (f + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15));
            loop {
                let Some((session, call)) = ({
                    let mut queue = queue.lock().unwrap();
                    if queue.is_empty() {
                        None
                    } else {
                        let i = usize::try_from(rng.below(queue.len() as u64)).unwrap();
                        Some(queue.swap_remove(i))
                    }
                }) else {
                    return;
                };
                let label = LABELS[usize::try_from(rng.below(2)).unwrap()];
                let kill = rng.chance(15).then(|| Duration::from_millis(rng.below(60)));
                if kill.is_some() {
                    front_kills.fetch_add(1, Ordering::Relaxed);
                }
                attempts.fetch_add(1, Ordering::Relaxed);
                match answer_once(&url, &schema, &session, &call, label, kill) {
                    Attempt::Accepted => {
                        let previous = acknowledged
                            .lock()
                            .unwrap()
                            .insert(call.clone(), label.to_owned());
                        assert!(previous.is_none(), "two answers acknowledged for {call}");
                        // Sometimes a second front end races the first (it must lose).
                        if rng.chance(30) {
                            queue.lock().unwrap().push((session, call));
                        }
                    }
                    Attempt::Queued => {
                        queued_replies.fetch_add(1, Ordering::Relaxed);
                    }
                    Attempt::Unknown => queue.lock().unwrap().push((session, call)),
                }
            }
        }));
    }

    // Faults while the front ends run: kill and restart workers, cut connections, restart the
    // server once halfway.
    let mut rng = Rng(seed);
    let total = questions.len();
    let (mut worker_kills, mut restarts, mut stalls) = (0, 0, 0);
    let started = Instant::now();
    while !front_ends.iter().all(thread::JoinHandle::is_finished) {
        thread::sleep(Duration::from_millis(100 + rng.below(200)));
        if rng.chance(25) {
            let slot = &mut workers[usize::try_from(rng.below(3)).unwrap()];
            let _ = slot.child.kill();
            let _ = slot.child.wait();
            worker_kills += 1;
            let n = 3 + worker_kills;
            let (child, log) = start_worker(&proxied_url, &schema, dir.path(), n);
            slot.child = child;
            slot.logs.push(log);
        }
        if rng.chance(35) {
            proxy.cut(&mut rng);
        }
        if rng.chance(8) {
            // A stall past the lease (a long pause, a partition): another worker takes the
            // session over, and the stalled one's next append must be fenced.
            let pid = workers[usize::try_from(rng.below(3)).unwrap()]
                .child
                .id()
                .to_string();
            stalls += 1;
            thread::spawn(move || {
                let signal = |name: &str| {
                    let _ = Command::new("kill")
                        .args([name, pid.as_str()])
                        .stderr(Stdio::null())
                        .status();
                };
                signal("-STOP");
                thread::sleep(Duration::from_millis(2500));
                signal("-CONT");
            });
        }
        let answered = acknowledged.lock().unwrap().len();
        if restarts == 0 && answered * 2 >= total && restart_server() {
            restarts += 1;
        }
        assert!(
            started.elapsed() < Duration::from_mins(10),
            "the front ends did not finish"
        );
    }
    for f in front_ends {
        f.join().unwrap();
    }

    // The faults stop; the workers finish admitting.
    let deadline = Instant::now() + Duration::from_mins(2);
    loop {
        let waiting: usize = (0..sessions)
            .map(|s| {
                store
                    .unadmitted(&format!("s{s}"))
                    .map_or(usize::MAX / 4, |a| a.len())
            })
            .sum();
        if waiting == 0 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{waiting} answers never admitted"
        );
        thread::sleep(Duration::from_millis(200));
    }
    for slot in &mut workers {
        let _ = slot.child.kill();
        let _ = slot.child.wait();
    }

    // The checks.
    let acknowledged = acknowledged.lock().unwrap().clone();
    let mut db = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    let rows = db
        .query(
            &format!(
                "SELECT call_id, batch::text, admitted_seq, answer_id, refused
                 FROM \"{schema}\".ask_user_answers"
            ),
            &[],
        )
        .unwrap();
    let mut answered: BTreeMap<String, String> = BTreeMap::new();
    let mut answer_ids: BTreeMap<String, String> = BTreeMap::new();
    for row in &rows {
        let call: String = row.get(0);
        let batch: serde_json::Value = serde_json::from_str(row.get(1)).unwrap();
        let admitted: Option<i64> = row.get(2);
        let refused: Option<String> = row.get(4);
        assert!(
            admitted.is_some(),
            "{call} answered but not admitted (refused: {refused:?})"
        );
        let label = batch["answers"][0]["selected"][0]
            .as_str()
            .unwrap()
            .to_owned();
        answered.insert(call.clone(), label);
        answer_ids.insert(call, row.get(3));
    }
    for (call, label) in &acknowledged {
        assert_eq!(
            answered.get(call),
            Some(label),
            "the acknowledged answer of {call} is the one kept"
        );
    }
    let mut replies_total = 0;
    let mut settled_total = 0;
    for s in 0..sessions {
        let name = format!("s{s}");
        let mut bytes = Vec::new();
        store.export(&name, &mut bytes).unwrap();
        let folded = fold_log(BufReader::new(bytes.as_slice())).unwrap();
        assert!(
            folded.report.seq_gaps.is_empty(),
            "{name}: seq gaps {:?}",
            folded.report.seq_gaps
        );
        assert!(
            folded.report.corrupt_lines.is_empty(),
            "{name}: corrupt lines"
        );
        assert!(folded.report.torn_tail.is_none());
        let mut replies = Replies::default();
        store.read(&name, &mut replies).unwrap();
        let settled: BTreeSet<String> = folded
            .state
            .view()
            .settled
            .iter()
            .map(|q| q.call_id.as_str().to_owned())
            .collect();
        for q in 0..per_session {
            let call = format!("call-{s}-{q}");
            let ids = replies.0.get(&call).cloned().unwrap_or_default();
            let count = ids.len();
            let expected = usize::from(answered.contains_key(&call));
            assert_eq!(count, expected, "{call}: {count} admitted replies");
            if let Some(id) = answer_ids.get(&call) {
                assert_eq!(
                    &ids[0], id,
                    "{call}: the admitted reply is the ledger's answer"
                );
            }
            assert_eq!(settled.contains(&call), expected == 1, "{call} settled?");
            replies_total += count;
        }
        settled_total += settled.len();
        // The ledger equals the projection of the exported log, state for state.
        let ledger: BTreeSet<(String, String)> = store
            .questions(Some(&name))
            .unwrap()
            .into_iter()
            .map(|q| (q.call_id.as_str().to_owned(), q.state.as_str().to_owned()))
            .collect();
        let active: BTreeSet<(String, String)> = folded
            .state
            .view()
            .active
            .iter()
            .map(|q| {
                let state = serde_json::to_value(q.state).unwrap();
                (
                    q.call_id.as_str().to_owned(),
                    state.as_str().unwrap().to_owned(),
                )
            })
            .collect();
        assert_eq!(ledger, active, "{name}: the ledger is the log's projection");
    }
    let logged = |what: &str| -> usize {
        workers
            .iter()
            .flat_map(|w| &w.logs)
            .map(|log| {
                std::fs::read_to_string(log)
                    .unwrap_or_default()
                    .matches(what)
                    .count()
            })
            .sum()
    };
    let (takeovers, fenced) = (logged("took the session over"), logged("writer fenced"));
    let epochs: i64 = db
        .query_one(
            &format!("SELECT sum(epoch)::bigint FROM \"{schema}\".ask_user_sessions"),
            &[],
        )
        .unwrap()
        .get(0);
    eprintln!(
        "fault test: {total} questions in {sessions} sessions; {} answer attempts by 3 front ends \
         ({} killed), {} acknowledged, {} told REPLY_QUEUED; 3 workers, {worker_kills} killed and \
         restarted, {stalls} stalled past their lease; {} connections cut; {restarts} server restart(s); {epochs} session owner \
         changes, {takeovers} lease takeovers, {fenced} fenced writes; {} answered calls = {replies_total} admitted replies = \
         {settled_total} settled questions",
        attempts.load(Ordering::Relaxed),
        front_kills.load(Ordering::Relaxed),
        acknowledged.len(),
        queued_replies.load(Ordering::Relaxed),
        proxy.cuts.load(Ordering::Relaxed),
        answered.len(),
    );
    assert_eq!(answered.len(), replies_total);
    assert_eq!(answered.len(), settled_total);
    assert!(
        acknowledged.len() >= total * 8 / 10,
        "most questions were answered"
    );
    ask_user_testkit::pg::drop_schema(&url, &schema);
}
