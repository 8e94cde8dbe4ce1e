//! Peak heap memory while folding the large realistic logs of `gen-big.py`, counted by a global
//! allocator: `cargo bench -p user-questions-projection --bench peak_memory`.
//!
//! The fold streams line by line, so its peak should follow the longest line and the state, not
//! the size of the log. For contrast the binary also measures a reader that loads the whole file
//! first. The counting allocator lives in its own bench binary so that it cannot slow down the
//! throughput figures of the `fold` bench.
// Test code stops at its first broken expectation: unwrap and expect are assertions here.
#![allow(clippy::unwrap_used, clippy::expect_used)]
// Bench output is the product of this binary.
#![allow(clippy::print_stdout)]
// Byte counts of a few hundred MB convert to `f64` exactly enough for MiB figures.
#![allow(clippy::cast_precision_loss)]

mod common;

use std::fs::File;
use std::hint::black_box;
use std::io::BufReader;

use peak_alloc::PeakAlloc;
use user_questions_projection::fold_log;

#[global_allocator]
static ALLOCATOR: PeakAlloc = PeakAlloc;

/// Peak bytes allocated while `f` runs, above what was allocated before it.
fn peak_during<T>(f: impl FnOnce() -> T) -> (usize, T) {
    let before = ALLOCATOR.current_usage();
    ALLOCATOR.reset_peak_usage();
    let out = f();
    (ALLOCATOR.peak_usage().saturating_sub(before), out)
}

fn mib(bytes: usize) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

fn main() {
    for events in [20_000u64, 200_000] {
        let (path, summary) = common::big_log(events);
        let bytes = std::fs::read(&path).unwrap();
        let longest = bytes
            .split(|b| *b == b'\n')
            .map(<[u8]>::len)
            .max()
            .unwrap_or(0);
        let size = bytes.len();
        drop(bytes);
        println!("\n== gen-big.py --events {events}: {summary}");

        let (fold_peak, folded) = peak_during(|| {
            fold_log(BufReader::with_capacity(
                1 << 16,
                File::open(&path).unwrap(),
            ))
            .unwrap()
        });
        let state_json = folded.state.to_json().len();
        drop(folded);
        let (whole_peak, ()) = peak_during(|| {
            let text = std::fs::read_to_string(&path).unwrap();
            black_box(fold_log(text.as_bytes()).unwrap());
        });
        println!(
            "log {:>7.1} MiB, longest line {:>6.3} MiB, state {:>6.1} KiB as JSON",
            mib(size),
            mib(longest),
            state_json as f64 / 1024.0
        );
        println!(
            "peak heap, streaming fold_log:        {:>8.3} MiB",
            mib(fold_peak)
        );
        println!(
            "peak heap, whole file read then fold: {:>8.3} MiB (contrast)",
            mib(whole_peak)
        );
    }
}
