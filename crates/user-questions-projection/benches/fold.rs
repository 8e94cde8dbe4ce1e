//! Throughput of the fold on the large realistic logs of `gen-big.py`, against its anchors, in one
//! run: `cargo bench -p user-questions-projection --bench fold`.
//!
//! * **cold fold**: `fold_log` over a buffered file reader (header, seq assignment, findings,
//!   reading and folding every record).
//! * **anchor, typed parse (the floor)**: a streamed `BufRead::read_until` of every line, then
//!   `serde_json::from_str` into `{type: &str, seq: Option<u64>}` with `data` skipped as
//!   `IgnoredAny`: the least work `serde_json` can do to check that each line is one JSON object
//!   and read what the fold needs of every line. The goal is a fold faster than this.
//! * **anchor, `Value` parse**: the same reading with `data` parsed into a `serde_json::Value`: a
//!   full parse of every line, what a straightforward reader (or the reference's `JSON.parse`)
//!   does.
//! * **limit, line split**: the file read in the scanner's chunks and its lines counted with
//!   `memchr` on one thread, nothing parsed: what no one-thread reader of every line can beat.
//! * The TypeScript reference is not run here: its figure is one recorded on this machine in an
//!   earlier run, and is labelled so.
//! * **incremental**: resuming from the position and state after all but the last 1, 10 and 1 000
//!   records (what a host does after appending them), and the live path (decode each new record
//!   with `SessionEvent::from_record` and `apply` it).
//!
//! Each figure is the median of several runs; ratios compare figures of the same run.
// Test code stops at its first broken expectation: unwrap and expect are assertions here.
#![allow(clippy::unwrap_used, clippy::expect_used)]
// Bench output is the product of this binary.
#![allow(clippy::print_stdout)]
// Byte counts of a few hundred MB convert to `f64` exactly enough for MB/s figures.
#![allow(clippy::cast_precision_loss)]

mod common;

use std::fs::File;
use std::hint::black_box;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::time::{Duration, Instant};

use serde::Deserialize;
use serde::de::IgnoredAny;
use user_questions_projection::{
    Applied, LogScanner, ScanPosition, Scanned, SessionEvent, UserQuestionsState, fold_log,
    resume_fold,
};

const RUNS: usize = 7;

#[derive(Deserialize)]
#[allow(dead_code)] // Fields are parsed to be measured, not read.
struct TypedRecord {
    #[serde(rename = "type")]
    kind: String,
    seq: Option<u64>,
    seq0: Option<u64>,
    time: Option<i64>,
    time0: Option<i64>,
    data: Option<serde_json::Value>,
    #[serde(rename = "sourceEventSeqs")]
    source_event_seqs: Option<Vec<u64>>,
    #[serde(rename = "surfaceOp")]
    surface_op: Option<String>,
    ignorable: Option<bool>,
}

#[derive(Deserialize)]
#[allow(dead_code)] // Fields are parsed to be measured, not read.
struct SkimRecord<'a> {
    #[serde(rename = "type", borrow)]
    kind: &'a str,
    seq: Option<u64>,
    data: Option<IgnoredAny>,
}

/// The lines of the file, found with `memchr` in chunks the size the scanner reads; nothing
/// parsed.
fn split_lines(path: &Path) -> usize {
    use std::io::Read;
    let mut file = File::open(path).unwrap();
    let mut buf = vec![0; session_log::READ_CHUNK];
    let mut lines = 0;
    loop {
        let n = file.read(&mut buf).unwrap();
        if n == 0 {
            break;
        }
        lines += memchr::memchr_iter(b'\n', &buf[..n]).count();
    }
    black_box(lines)
}

/// The reference's cold load and fold of the 107 MB log, recorded on this machine in an earlier
/// run (not measured here): about 67 MB/s.
const REFERENCE_RECORDED_MB_S: f64 = 67.0;

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn measure(mut f: impl FnMut()) -> Duration {
    f(); // warm the page cache and the allocator
    median(
        (0..RUNS)
            .map(|_| {
                let start = Instant::now();
                f();
                start.elapsed()
            })
            .collect(),
    )
}

/// Like [`measure`], with a fresh input per run made, and the output dropped, outside the timed
/// part (cloning and dropping the state is the caller's cost, not the fold's).
fn measure_with<I, O>(mut setup: impl FnMut() -> I, mut f: impl FnMut(I) -> O) -> Duration {
    drop(f(setup()));
    median(
        (0..RUNS * 3)
            .map(|_| {
                let input = setup();
                let start = Instant::now();
                let output = f(input);
                let elapsed = start.elapsed();
                drop(output);
                elapsed
            })
            .collect(),
    )
}

fn reader(path: &Path) -> BufReader<File> {
    BufReader::with_capacity(1 << 16, File::open(path).unwrap())
}

/// Every line after the header, parsed as `T` (the anchors).
fn parse_every_line<T: for<'a> Deserialize<'a>>(path: &Path) -> usize {
    parse_lines(path, |text| {
        black_box(serde_json::from_str::<T>(text).unwrap());
    })
}

/// Every line after the header, parsed as a [`SkimRecord`] borrowing its `type`.
fn skim_every_line(path: &Path) -> usize {
    parse_lines(path, |text| {
        black_box(serde_json::from_str::<SkimRecord<'_>>(text).unwrap());
    })
}

fn parse_lines(path: &Path, mut parse: impl FnMut(&str)) -> usize {
    let mut reader = reader(path);
    let mut buf = Vec::new();
    reader.read_until(b'\n', &mut buf).unwrap();
    let mut parsed = 0;
    loop {
        buf.clear();
        if reader.read_until(b'\n', &mut buf).unwrap() == 0 {
            break;
        }
        parse(std::str::from_utf8(&buf).unwrap());
        parsed += 1;
    }
    parsed
}

fn mb_per_s(bytes: u64, time: Duration) -> f64 {
    bytes as f64 / 1e6 / time.as_secs_f64()
}

/// The position and state after all but the last `n` lines, to resume from.
fn checkpoint(path: &Path, lines: u64, n: u64) -> (ScanPosition, UserQuestionsState) {
    let (header, mut scanner) = LogScanner::open(reader(path)).unwrap();
    let mut replay = user_questions_projection::Replay::new(&header);
    while scanner.position().line < lines - n {
        if let Some(Scanned::Record(r)) = scanner.next_line().unwrap() {
            replay.apply_record(r.line, &r.record);
        }
    }
    (scanner.position(), replay.state().clone())
}

fn bench_file(events: u64) {
    let (path, summary) = common::big_log(events);
    let bytes = std::fs::metadata(&path).unwrap().len();
    println!("\n== gen-big.py --events {events}: {summary}");

    let cold = measure(|| {
        black_box(fold_log(reader(&path)).unwrap());
    });
    let typed = measure(|| {
        black_box(parse_every_line::<TypedRecord>(&path));
    });
    let skim = measure(|| {
        black_box(skim_every_line(&path));
    });
    let split = measure(|| {
        black_box(split_lines(&path));
    });
    let folded = fold_log(reader(&path)).unwrap();
    assert!(folded.report.is_clean(), "{:?}", folded.report);
    let view = folded.state.view();
    println!(
        "view: {} active, {} settled; {} events in {} lines",
        view.active.len(),
        view.settled.len(),
        folded.report.end.events,
        folded.report.end.line
    );
    println!(
        "cold fold                      {:>8.1} ms  {:>7.1} MB/s",
        cold.as_secs_f64() * 1e3,
        mb_per_s(bytes, cold)
    );
    println!(
        "anchor: typed parse (floor)    {:>8.1} ms  {:>7.1} MB/s   fold is {:.2}x its speed",
        skim.as_secs_f64() * 1e3,
        mb_per_s(bytes, skim),
        skim.as_secs_f64() / cold.as_secs_f64()
    );
    println!(
        "anchor: Value parse            {:>8.1} ms  {:>7.1} MB/s   fold is {:.2}x its speed",
        typed.as_secs_f64() * 1e3,
        mb_per_s(bytes, typed),
        typed.as_secs_f64() / cold.as_secs_f64()
    );
    println!(
        "limit: memchr line split       {:>8.1} ms  {:>7.1} MB/s   fold is {:.2}x its speed",
        split.as_secs_f64() * 1e3,
        mb_per_s(bytes, split),
        split.as_secs_f64() / cold.as_secs_f64()
    );
    println!(
        "reference (TypeScript)         recorded in an earlier run, not measured here: {REFERENCE_RECORDED_MB_S:.0} MB/s (fold is {:.1}x that)",
        mb_per_s(bytes, cold) / REFERENCE_RECORDED_MB_S
    );

    // Incremental: the host has folded all but the last `n` records and appends them.
    let data = std::fs::read(&path).unwrap();
    let header = folded.header.clone();
    for n in [1, 10, 1000] {
        let (at, state) = checkpoint(&path, folded.report.end.line, n);
        let tail = &data[usize::try_from(at.byte_offset).unwrap()..];
        let resumed = measure_with(
            || (header.clone(), state.clone()),
            |(header, state)| black_box(resume_fold(tail, header, state, at).unwrap()),
        );
        let result = resume_fold(tail, header.clone(), state.clone(), at).unwrap();
        assert_eq!(result.state, folded.state, "resume equals a full fold");
        let live = measure_with(
            || state.clone(),
            |mut state| {
                let mut seq = at.expected_seq;
                for line in tail.split_inclusive(|b| *b == b'\n') {
                    let text = std::str::from_utf8(&line[..line.len() - 1]).unwrap();
                    let record = SessionEvent::from_record(text, seq).unwrap();
                    seq = record.next_seq();
                    for event in record.into_events() {
                        if let Applied::Changed(next) = state.apply(&event) {
                            state = next;
                        }
                    }
                }
                black_box(state);
            },
        );
        println!(
            "append {n:>4} records ({:>9} B): resume_fold {:>9.1} µs ({:>6.1} MB/s), live apply {:>9.1} µs",
            tail.len(),
            resumed.as_secs_f64() * 1e6,
            mb_per_s(tail.len() as u64, resumed),
            live.as_secs_f64() * 1e6,
        );
    }
}

fn main() {
    // `cargo bench` passes `--bench`; a filter argument selects sizes.
    let sizes: Vec<u64> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let sizes = if sizes.is_empty() {
        vec![20_000, 200_000]
    } else {
        sizes
    };
    for events in sizes {
        bench_file(events);
    }
}
