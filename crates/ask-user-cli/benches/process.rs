//! Whole processes on the large log of `gen-big.py`, side by side in one run:
//! `cargo bench -p ask-user-cli --bench process [EVENTS]`.
//!
//! * `ask-user pending --json` cold (no checkpoint), with a valid checkpoint, and after appending
//!   1, 10 and 1 000 events to the checkpointed log;
//! * `ask-user answer` on a copy of the log, cold and with a valid checkpoint;
//! * the anchor: a process (this bench binary, re-run as a child) that reads every line with
//!   `read_until` and parses it as `{type: &str, seq: Option<u64>}` with `data` skipped: a streamed
//!   typed `serde_json` parse of the same file. Process start is in both.
//!
//! Each figure is the median of several runs; ratios compare figures of this run.
// Test code stops at its first broken expectation: unwrap and expect are assertions here.
#![allow(clippy::unwrap_used, clippy::expect_used)]
// Byte counts of a few hundred MB convert to `f64` exactly enough for MB/s figures.
#![allow(clippy::cast_precision_loss)]

#[path = "../../user-questions-projection/benches/common/mod.rs"]
mod common;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde::Deserialize;
use serde::de::IgnoredAny;

const BIN: &str = env!("CARGO_BIN_EXE_ask-user");
const RUNS: usize = 7;
/// Set in the child that is the anchor: the file to parse.
const ANCHOR_ENV: &str = "ASK_USER_BENCH_TYPED_PARSE";

#[derive(Deserialize)]
#[allow(dead_code)] // Parsed to be measured, not read.
struct Skim<'a> {
    #[serde(rename = "type", borrow)]
    kind: &'a str,
    seq: Option<u64>,
    data: Option<IgnoredAny>,
}

/// The anchor process: every line of the file parsed as [`Skim`].
fn typed_parse(path: &Path) {
    let mut reader = BufReader::with_capacity(1 << 16, std::fs::File::open(path).unwrap());
    let mut buf = Vec::new();
    let mut lines = 0_u64;
    loop {
        buf.clear();
        if reader.read_until(b'\n', &mut buf).unwrap() == 0 {
            break;
        }
        let text = std::str::from_utf8(&buf).unwrap();
        std::hint::black_box(serde_json::from_str::<Skim<'_>>(text).unwrap());
        lines += 1;
    }
    println!("{lines}");
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

/// Runs `command` (made fresh by `make`) `RUNS` times after one warm-up, with `setup` before each
/// run outside the timing; checks it succeeds.
fn time(mut setup: impl FnMut(), mut make: impl FnMut() -> Command) -> Duration {
    let mut run = || {
        setup();
        let mut command = make();
        command.stdout(Stdio::null()).stderr(Stdio::null());
        let start = Instant::now();
        let status = command.status().unwrap();
        let elapsed = start.elapsed();
        assert!(status.success(), "{command:?} failed: {status}");
        elapsed
    };
    run();
    median((0..RUNS).map(|_| run()).collect())
}

fn pending(log: &Path) -> Command {
    let mut command = Command::new(BIN);
    command.arg("pending").arg(log).arg("--json");
    command
}

fn checkpoint_of(log: &Path) -> PathBuf {
    let mut name = log.as_os_str().to_owned();
    name.push(session_log::CHECKPOINT_SUFFIX);
    PathBuf::from(name)
}

fn write_checkpoint(log: &Path) {
    let (store, name) = session_log::JsonlStore::for_file(log).unwrap();
    ask_user_host::load_projection(&store, &name, ask_user_host::CheckpointPolicy::Refresh)
        .unwrap();
    assert!(checkpoint_of(log).is_file());
}

fn append_events(log: &Path, n: usize) {
    let mut file = std::fs::OpenOptions::new().append(true).open(log).unwrap();
    for i in 0..n {
        writeln!(
            file,
            r#"{{"type":"bench/note","time":1,"data":{{"n":{i}}}}}"#
        )
        .unwrap();
    }
}

fn ms(time: Duration) -> f64 {
    time.as_secs_f64() * 1e3
}

fn bench(events: u64) {
    let (big, summary) = common::big_log_in(
        &Path::new(env!("CARGO_TARGET_TMPDIR")).join("process-bench"),
        events,
    );
    let bytes = std::fs::metadata(&big).unwrap().len();
    println!("\n== gen-big.py --events {events}: {summary}");
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("big.jsonl");
    std::fs::copy(&big, &log).unwrap();
    let gb_s = |time: Duration| bytes as f64 / 1e9 / time.as_secs_f64();

    let exe = std::env::current_exe().unwrap();
    let anchor = time(
        || {},
        || {
            let mut command = Command::new(&exe);
            command.env(ANCHOR_ENV, &log);
            command
        },
    );
    let cold = time(|| {}, || pending(&log));
    println!(
        "anchor: typed parse process      {:>8.1} ms  {:>5.2} GB/s",
        ms(anchor),
        gb_s(anchor)
    );
    println!(
        "pending --json, cold             {:>8.1} ms  {:>5.2} GB/s  {:.2}x the anchor's speed",
        ms(cold),
        gb_s(cold),
        anchor.as_secs_f64() / cold.as_secs_f64()
    );
    let version = time(
        || {},
        || {
            let mut command = Command::new(BIN);
            command.arg("--version");
            command
        },
    );
    println!("process start (ask-user --version) {:>6.1} ms", ms(version));

    write_checkpoint(&log);
    let hit = time(|| {}, || pending(&log));
    println!(
        "pending --json, checkpoint hit   {:>8.1} ms  {:>5.1}% of cold ({:.1}% without process start)",
        ms(hit),
        100.0 * hit.as_secs_f64() / cold.as_secs_f64(),
        100.0 * (hit.saturating_sub(version)).as_secs_f64()
            / cold.saturating_sub(version).as_secs_f64()
    );
    for n in [1, 10, 1000] {
        append_events(&log, n);
        let after = time(|| {}, || pending(&log));
        println!("pending --json, +{n:>4} events      {:>8.1} ms", ms(after));
        write_checkpoint(&log);
    }

    // `answer` settles the log's continued question: each run gets a fresh copy.
    let (call, questions) = continued_call(&big);
    let copy = dir.path().join("answer.jsonl");
    let answer = |copy: &Path| {
        let mut command = Command::new(BIN);
        command.arg("answer").arg(copy).arg(&call);
        for id in &questions {
            command.arg("--custom").arg(format!("{id}=bench"));
        }
        command
    };
    // The copy is made durable before the run, so that the answer's first fsync does not also
    // write back the 100 MB the copy left in the page cache.
    let fresh = || {
        std::fs::copy(&big, &copy).unwrap();
        std::fs::File::open(&copy).unwrap().sync_all().unwrap();
        let _ = std::fs::remove_file(checkpoint_of(&copy));
    };
    let answer_cold = time(fresh, || answer(&copy));
    let answer_warm = time(
        || {
            fresh();
            write_checkpoint(&copy);
        },
        || answer(&copy),
    );
    println!(
        "answer, cold                     {:>8.1} ms",
        ms(answer_cold)
    );
    println!(
        "answer, checkpoint               {:>8.1} ms  {:.1}% of cold",
        ms(answer_warm),
        100.0 * answer_warm.as_secs_f64() / answer_cold.as_secs_f64()
    );
}

/// The call id of the log's continued question, and its question ids.
fn continued_call(log: &Path) -> (String, Vec<String>) {
    let output = Command::new(BIN)
        .arg("pending")
        .arg(log)
        .arg("--json")
        .output()
        .unwrap();
    let view: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let entry = &view["active"][0];
    let ids = entry["questions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|q| q["id"].as_str().unwrap().to_owned())
        .collect();
    (entry["callId"].as_str().unwrap().to_owned(), ids)
}

fn main() {
    if let Some(path) = std::env::var_os(ANCHOR_ENV) {
        typed_parse(Path::new(&path));
        return;
    }
    let sizes: Vec<u64> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    for events in if sizes.is_empty() {
        vec![200_000]
    } else {
        sizes
    } {
        bench(events);
    }
}
