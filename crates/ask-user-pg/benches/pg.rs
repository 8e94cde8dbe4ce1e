//! `PostgreSQL` figures, each beside its anchor measured in the same run on the same server
//! (`ASK_USER_PG_URL`; without it the bench says so and stops):
//!
//! 1. **Answer admission** (`PgStore::record_answer`: the question's row held, the batch validated,
//!    the first answer inserted, committed, the workers' hint queued to the store's hint sender)
//!    with N concurrent front ends, each on its own connection, against a bare single-row
//!    `INSERT` committed on its own, by the same N connections: p50, p99 and throughput, the p50
//!    ratio (goal: ≤ 3×) and the throughput ratio (goal at 16: ≥ 0.5×); and the CPU each
//!    operation took, of this process and of the server's processes (on a machine of two cores,
//!    16 front ends are bound by it).
//! 2. **Resume of a large session**: `HostRuntime::open` (scan, fold, inbox, repair) of the
//!    200,000-event log of `gen-big.py` from `PostgreSQL` against the same log from its JSONL
//!    file, cold (no checkpoint: the whole log read; goal ≤ 4×) and at the checkpoint the open
//!    before wrote (only the lines after it read; goal ≤ 2×).
//!
//! `cargo bench -p ask-user-pg --bench pg`; `ASK_USER_BENCH_EVENTS` sizes the large log.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::cast_precision_loss,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss
)]

#[path = "../../user-questions-projection/benches/common/mod.rs"]
mod common;

use std::fs::File;
use std::io::BufReader;
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

use ask_user_host::{HostRuntime, SessionOptions};
use ask_user_pg::{PgOptions, PgStore};
use ask_user_testkit::process;
use session_log::{JsonlStore, SessionStore};
use user_questions::{AnswerBatch, AnswerItem, CallId, Provenance, QuestionLimits};

fn main() {
    let Some(url) = ask_user_testkit::pg::pg_url() else {
        return;
    };
    let schema = ask_user_testkit::pg::fresh_schema();
    let options = PgOptions::in_schema(&schema);
    let store = PgStore::connect(&url, &options).unwrap();
    // `ASK_USER_BENCH_PARTS`: which parts run (`admission,resume` by default).
    let parts = std::env::var("ASK_USER_BENCH_PARTS").unwrap_or_else(|_| "admission,resume".into());
    if parts.split(',').any(|part| part == "admission") {
        println!("== answer admission against a bare INSERT … COMMIT, same server, same run");
        for fronts in [1usize, 4, 16] {
            admission(&url, &options, &store, fronts, 200);
        }
    }
    if parts.split(',').any(|part| part == "resume") {
        resume(&url, &schema, &store);
    }
    ask_user_testkit::pg::drop_schema(&url, &schema);
}

/// What one run of [`concurrently`] took: each operation's latency, the wall time, and the CPU
/// seconds of this process and of the server's processes over the run.
struct Run {
    latencies: Vec<Duration>,
    wall: Duration,
    client_cpu: f64,
    server_cpu: f64,
}

/// `utime + stime` in seconds of this process, and of every `postgres` process of the machine.
fn cpu_now() -> (f64, f64) {
    let ticks = process::clock_ticks_per_second();
    let own = process::cpu_ticks("self") as f64 / ticks;
    let mut server = 0;
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let path = entry.path();
        if std::fs::read_to_string(path.join("comm")).is_ok_and(|c| c.trim() == "postgres") {
            server += process::cpu_ticks(&entry.file_name().to_string_lossy());
        }
    }
    (own, server as f64 / ticks)
}

/// Per-operation latencies of `per_front` operations on each of `fronts` threads, run together;
/// the CPU is counted until every thread is done, before their connections close.
fn concurrently(
    fronts: usize,
    per_front: usize,
    make: impl Fn(usize) -> Box<dyn FnMut(usize) + Send>,
) -> Run {
    let barrier = Arc::new(Barrier::new(fronts + 1));
    let handles: Vec<_> = (0..fronts)
        .map(|f| {
            let mut op = make(f);
            let barrier = Arc::clone(&barrier);
            thread::spawn(move || {
                barrier.wait();
                let latencies = (0..per_front)
                    .map(|i| {
                        let start = Instant::now();
                        op(i);
                        start.elapsed()
                    })
                    .collect::<Vec<_>>();
                (latencies, op)
            })
        })
        .collect();
    let (client_before, server_before) = cpu_now();
    barrier.wait();
    let start = Instant::now();
    let mut latencies = Vec::new();
    let mut ops = Vec::new();
    for handle in handles {
        let (times, op) = handle.join().unwrap();
        latencies.extend(times);
        ops.push(op);
    }
    let wall = start.elapsed();
    let (client_after, server_after) = cpu_now();
    drop(ops);
    latencies.sort();
    Run {
        latencies,
        wall,
        client_cpu: client_after - client_before,
        server_cpu: server_after - server_before,
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index]
}

fn admission(url: &str, options: &PgOptions, store: &PgStore, fronts: usize, per_front: usize) {
    // One session per front end, with `per_front` continued questions each.
    let run = format!("r{fronts}");
    for f in 0..fronts {
        let name = format!("{run}-{f}");
        let calls: Vec<String> = (0..per_front).map(|i| format!("c{i}")).collect();
        let refs: Vec<&str> = calls.iter().map(String::as_str).collect();
        ask_user_testkit::logs::create_pending(store, &name, &refs);
    }
    let mut db = postgres::Client::connect(url, postgres::NoTls).unwrap();
    db.batch_execute(&format!(
        "CREATE TABLE \"{}\".bench_bare_{run} (id bigint PRIMARY KEY, body text NOT NULL)",
        options.schema
    ))
    .unwrap();
    let bare = concurrently(fronts, per_front, |f| {
        let mut client = postgres::Client::connect(url, postgres::NoTls).unwrap();
        let table = format!("\"{}\".bench_bare_{run}", options.schema);
        let statement = client
            .prepare(&format!("INSERT INTO {table} (id, body) VALUES ($1, $2)"))
            .unwrap();
        Box::new(move |i| {
            let id = i64::try_from(f * 1_000_000 + i).unwrap();
            client
                .execute(&statement, &[&id, &"{\"answers\":[]}"])
                .unwrap();
        })
    });
    let ours = concurrently(fronts, per_front, |f| {
        let store = PgStore::connect(url, options).unwrap();
        let name = format!("{run}-{f}");
        Box::new(move |i| {
            let batch = AnswerBatch::new([AnswerItem::selected("scope", ["Tool only"])]);
            store
                .record_answer(
                    &name,
                    &CallId::from(format!("c{i}")),
                    &batch,
                    &Provenance::human("bench"),
                    &QuestionLimits::default(),
                )
                .unwrap();
        })
    });
    let ops = (fronts * per_front) as f64;
    let line = |what: &str, run: &Run| {
        println!(
            "  {fronts:>2} front ends  {what:<26} p50 {:>7.3} ms  p99 {:>7.3} ms  {:>7.0} /s  CPU per op: client {:>4.0} µs, server {:>4.0} µs",
            percentile(&run.latencies, 0.5).as_secs_f64() * 1e3,
            percentile(&run.latencies, 0.99).as_secs_f64() * 1e3,
            ops / run.wall.as_secs_f64(),
            run.client_cpu / ops * 1e6,
            run.server_cpu / ops * 1e6,
        );
    };
    line("bare INSERT … COMMIT", &bare);
    line("PgStore::record_answer", &ours);
    println!(
        "  {fronts:>2} front ends  p50 ratio answer / bare: {:.2}× (goal ≤ 3×)   throughput ratio: {:.2}× (goal ≥ 0.5× at 16)",
        percentile(&ours.latencies, 0.5).as_secs_f64()
            / percentile(&bare.latencies, 0.5).as_secs_f64(),
        bare.wall.as_secs_f64() / ours.wall.as_secs_f64()
    );
}

/// The median time of `runs` opens of the log `file` by `file_runtime` and of `pg` by
/// `pg_runtime`, taken in turns (one of each, `before` first), so that whatever else the machine
/// does weighs on both alike; and whether every open resumed at a checkpoint.
fn paired_open_times(
    (file_runtime, file): (&HostRuntime, &str),
    (pg_runtime, pg): (&HostRuntime, &str),
    runs: usize,
    before: &mut dyn FnMut(),
) -> ((Duration, Duration), bool) {
    let mut resumed_every = true;
    let mut open = |runtime: &HostRuntime, name: &str| {
        let start = Instant::now();
        let (host, resumed) = runtime.open(name, SessionOptions::named(name)).unwrap();
        let elapsed = start.elapsed();
        resumed_every &= resumed.report.is_some_and(|r| r.resumed_at.is_some());
        drop(host);
        elapsed
    };
    let (mut file_times, mut pg_times): (Vec<Duration>, Vec<Duration>) = (0..runs)
        .map(|_| {
            before();
            (open(file_runtime, file), open(pg_runtime, pg))
        })
        .unzip();
    file_times.sort();
    pg_times.sort();
    ((file_times[runs / 2], pg_times[runs / 2]), resumed_every)
}

/// How many opens at the checkpoint are timed (each takes a millisecond or so: enough of them
/// for a steady median).
const AT_CHECKPOINT_RUNS: usize = 41;

fn resume(url: &str, schema: &str, store: &PgStore) {
    let events = std::env::var("ASK_USER_BENCH_EVENTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200_000);
    let (path, summary) = common::big_log(events);
    println!("\n== resume of a large session: gen-big.py --events {events}: {summary}");
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("big.jsonl");
    std::fs::copy(&path, &copy).unwrap();
    let start = Instant::now();
    let report = store
        .import("big", &mut BufReader::new(File::open(&copy).unwrap()))
        .unwrap();
    println!(
        "  import into PostgreSQL: {} lines, {} bytes in {:.2} s (recorded once, not compared)",
        report.lines,
        report.byte_length,
        start.elapsed().as_secs_f64()
    );
    let file_runtime = HostRuntime::new(JsonlStore::new(dir.path()), None).unwrap();
    let pg_runtime = HostRuntime::new(store.clone(), None).unwrap();
    // The first open of each repairs what the log leaves unfinished and brings the ledger in line
    // with the imported log; the figures are of the opens after it, as a worker taking the
    // session over sees them.
    drop(
        file_runtime
            .open("big.jsonl", SessionOptions::named("big.jsonl"))
            .unwrap(),
    );
    drop(
        pg_runtime
            .open("big", SessionOptions::named("big"))
            .unwrap(),
    );
    let checkpoint = session_log::checkpoint_path(&copy);
    let mut client = postgres::Client::connect(url, postgres::NoTls).unwrap();
    // The import's rows vacuumed and analysed now, as autovacuum soon would: otherwise it may
    // start on them in the middle of the timed opens.
    client
        .batch_execute(&format!(
            "VACUUM (ANALYZE) \"{schema}\".ask_user_lines, \"{schema}\".ask_user_sessions"
        ))
        .unwrap();
    let forget =
        format!("UPDATE \"{schema}\".ask_user_sessions SET checkpoint = NULL WHERE name = 'big'");
    let ((file_cold, pg_cold), _) = paired_open_times(
        (&file_runtime, "big.jsonl"),
        (&pg_runtime, "big"),
        3,
        &mut || {
            let _ = std::fs::remove_file(&checkpoint);
            client.batch_execute(&forget).unwrap();
        },
    );
    // Each cold open wrote a checkpoint at the log's end: the opens now resume there.
    let ((file_at, pg_at), resumed) = paired_open_times(
        (&file_runtime, "big.jsonl"),
        (&pg_runtime, "big"),
        AT_CHECKPOINT_RUNS,
        &mut || {},
    );
    assert!(resumed, "the opens resumed at the checkpoint");
    assert!(store.exists("big").unwrap());
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!(
        "  HostRuntime::open cold           JSONL file {:>8.1} ms   PostgreSQL {:>8.1} ms   ratio {:.2}× (goal ≤ 4×)",
        ms(file_cold),
        ms(pg_cold),
        pg_cold.as_secs_f64() / file_cold.as_secs_f64()
    );
    println!(
        "  HostRuntime::open at checkpoint  JSONL file {:>8.2} ms   PostgreSQL {:>8.2} ms   ratio {:.2}× (goal ≤ 2×)",
        ms(file_at),
        ms(pg_at),
        pg_at.as_secs_f64() / file_at.as_secs_f64()
    );
}
