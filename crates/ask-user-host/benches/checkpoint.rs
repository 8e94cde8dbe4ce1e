//! The projection checkpoint cache on the large realistic logs of `gen-big.py`, in one run:
//! `cargo bench -p ask-user-host --bench checkpoint [EVENTS...]` (default 20 000 and 200 000).
//!
//! * **full refold**: `load_projection` without a checkpoint (header read, scan, fold of every
//!   record), and its anchor, the projection crate's `fold_log` over a buffered reader.
//! * **checkpoint load**: `load_projection` with a valid checkpoint at the end of the log (0 new
//!   records) and 1 000 records before it (resuming over them).
//! * **checkpoint write**: `Checkpoint::save` through the JSONL store (temporary file, `fsync`,
//!   rename, directory `fsync`).
//! * **open scans**: `read_log` (the read-only open report), for comparison with the refold.
//!
//! The log is generated into the target directory on first use (never committed). Each figure is
//! the median of several runs; ratios compare figures of the same run.
// Test code stops at its first broken expectation: unwrap and expect are assertions here.
#![allow(clippy::unwrap_used, clippy::expect_used)]
// Bench output is the product of this binary.
#![allow(clippy::print_stdout)]
// Byte counts of a few hundred MB convert to `f64` exactly enough for MB/s figures.
#![allow(clippy::cast_precision_loss)]

use std::fs::{self, File};
use std::hint::black_box;
use std::io::BufReader;
use std::path::Path;
use std::time::{Duration, Instant};

use ask_user_host::{
    Checkpoint, CheckpointPolicy, CheckpointWrite, ProjectionLoad, ProjectionSource,
};
use session_log::{JsonlStore, LogAnchor, checkpoint_path, read_log, sha256_hex};
use user_questions_projection::fold_log;

const RUNS: usize = 7;

// The generator wrapper is the projection benches' own, so both measure the same bytes.
#[path = "../../user-questions-projection/benches/common/mod.rs"]
mod common;

/// The projection of the log file at `log`, through the JSONL store of its directory.
fn load_projection(log: &Path, policy: CheckpointPolicy) -> ProjectionLoad {
    ask_user_testkit::logs::load_file_projection(log, policy).unwrap()
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

fn measure(mut f: impl FnMut()) -> Duration {
    f();
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

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn mb_per_s(bytes: u64, time: Duration) -> f64 {
    bytes as f64 / 1e6 / time.as_secs_f64()
}

fn bench_file(dir: &Path, events: u64) {
    let (source, summary) = common::big_log_in(dir, events);
    println!("\n== gen-big.py --events {events}: {summary}");
    let bytes = fs::read(&source).unwrap();
    let size = bytes.len() as u64;
    let ends = ask_user_testkit::logs::line_ends(&bytes);

    // A working copy, so that checkpoints land next to it and never next to the generated file.
    let log = dir.join(format!("work-{events}.jsonl"));
    fs::write(&log, &bytes).unwrap();
    let ckpt = checkpoint_path(&log);
    let _ = fs::remove_file(&ckpt);

    let anchor = measure(|| {
        black_box(fold_log(BufReader::new(File::open(&log).unwrap())).unwrap());
    });
    let refold = measure(|| {
        let _ = fs::remove_file(&ckpt);
        let loaded = load_projection(&log, CheckpointPolicy::ReadOnly);
        assert!(matches!(loaded.source, ProjectionSource::Refold(_)));
        black_box(loaded);
    });
    let open = measure(|| {
        black_box(read_log(&log).unwrap());
    });

    let full = load_projection(&log, CheckpointPolicy::Refresh);
    assert!(matches!(full.checkpoint, CheckpointWrite::Written(_)));
    let ckpt_size = fs::metadata(&ckpt).unwrap().len();
    let at_end = measure(|| {
        let loaded = load_projection(&log, CheckpointPolicy::ReadOnly);
        assert!(matches!(loaded.source, ProjectionSource::Checkpoint { .. }));
        black_box(loaded);
    });
    let view = full.state.view();
    println!(
        "log: {size} B, {} events in {} lines; view: {} active, {} settled; checkpoint {ckpt_size} B",
        full.event_count,
        ends.len(),
        view.active.len(),
        view.settled.len()
    );

    let checkpoint = Checkpoint {
        anchor: LogAnchor {
            session_id: full.header.id.as_str().to_owned(),
            header_hash: sha256_hex(&bytes[..ends[0]]),
            event_count: full.event_count,
            byte_length: full.byte_length,
            last_record_hash: sha256_hex(&bytes[ends[ends.len() - 2]..]),
        },
        state: full.state.clone(),
        open: None,
    };
    let (store, name) = JsonlStore::for_file(&log).unwrap();
    let write = measure(|| {
        black_box(checkpoint.save(&store, &name).unwrap());
    });

    // A checkpoint 1 000 records before the end: taken on the prefix, then the log grows.
    let prefix_end = ends[ends.len() - 1001];
    fs::write(&log, &bytes[..prefix_end]).unwrap();
    let prefix = load_projection(&log, CheckpointPolicy::Refresh);
    assert!(matches!(prefix.checkpoint, CheckpointWrite::Written(_)));
    fs::write(&log, &bytes).unwrap();
    let behind = measure(|| {
        let loaded = load_projection(&log, CheckpointPolicy::ReadOnly);
        assert!(matches!(loaded.source, ProjectionSource::Checkpoint { .. }));
        black_box(loaded);
    });
    let resumed = load_projection(&log, CheckpointPolicy::ReadOnly);
    assert_eq!(resumed.state, full.state, "resume equals a full refold");

    println!(
        "anchor: fold_log (projection crate)      {:>9.3} ms  {:>7.1} MB/s",
        ms(anchor),
        mb_per_s(size, anchor)
    );
    println!(
        "full refold (load_projection, no ckpt)   {:>9.3} ms  {:>7.1} MB/s  {:.2}x the anchor's time",
        ms(refold),
        mb_per_s(size, refold),
        refold.as_secs_f64() / anchor.as_secs_f64()
    );
    println!(
        "read-only open report (read_log)         {:>9.3} ms  {:>7.1} MB/s",
        ms(open),
        mb_per_s(size, open)
    );
    println!(
        "checkpoint load, 0 new records           {:>9.3} ms  refold is {:.0}x slower",
        ms(at_end),
        refold.as_secs_f64() / at_end.as_secs_f64()
    );
    println!(
        "checkpoint load + 1 000 new records      {:>9.3} ms  refold is {:.0}x slower ({} B read)",
        ms(behind),
        refold.as_secs_f64() / behind.as_secs_f64(),
        size - prefix_end as u64
    );
    println!(
        "checkpoint write (temp, fsync, rename)   {:>9.3} ms",
        ms(write)
    );
    let _ = fs::remove_file(&ckpt);
    let _ = fs::remove_file(&log);
}

fn main() {
    // `cargo bench` passes `--bench`; number arguments select sizes.
    let sizes: Vec<u64> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let sizes = if sizes.is_empty() {
        vec![20_000, 200_000]
    } else {
        sizes
    };
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("store-bench");
    fs::create_dir_all(&dir).unwrap();
    for events in sizes {
        bench_file(&dir, events);
    }
}
