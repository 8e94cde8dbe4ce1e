//! The reader decodes the lines of a chunk on two threads: it must give exactly what the
//! one-thread reader gives (every record with its line, offset, bytes, `seq`, gap and position,
//! every finding, the end position) on the corpus, on hostile logs and on random cuts of both,
//! however the input arrives (whole, or a few bytes per read).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fmt::Write as _;
use std::io::{BufReader, Read};
use std::path::PathBuf;

use session_log::{LogScanner, Scanned, SessionEvent};

/// Everything a scan yields, as text (every type involved is `Debug`, and equal values print the
/// same).
fn scan(bytes: &[u8], parallel_from: usize, read_size: usize, max_line: u64) -> String {
    let reader = BufReader::with_capacity(
        read_size.max(1),
        Trickle {
            bytes,
            at: 0,
            read_size,
        },
    );
    let (header, scanner) = match LogScanner::open(reader) {
        Ok(opened) => opened,
        Err(error) => return format!("open error: {error}"),
    };
    let mut scanner = scanner
        .with_parallel_from(parallel_from)
        .with_max_line(max_line);
    let mut out = format!("{header:?}\n");
    let mut expected = scanner.position().expected_seq;
    while let Some(line) = scanner.next_line().unwrap() {
        // Each record is also what the one-line decoder gives for that line, with the `seq` it
        // was due: a check that does not go through the reader's batches at all.
        if let Scanned::Record(record) = &line {
            let text = String::from_utf8_lossy(&record.raw[..record.raw.len() - 1]);
            let alone = SessionEvent::from_record(&text, expected).unwrap();
            assert_eq!(record.record, alone, "line {}", record.line);
            expected = record.after.expected_seq;
        }
        writeln!(out, "{line:?}").unwrap();
    }
    write!(out, "{:?}", scanner.into_report()).unwrap();
    out
}

/// A reader that hands out at most `read_size` bytes per read, and fails once it has handed out
/// `fail_at` bytes (never, by default).
struct Trickle<'a> {
    bytes: &'a [u8],
    at: usize,
    read_size: usize,
}

/// What a scan of a reader that fails after `fail_at` bytes yields: the lines before the failure,
/// then the error, with where the scan stood.
fn scan_failing(bytes: &[u8], fail_at: usize, parallel_from: usize, read_size: usize) -> String {
    let reader = BufReader::with_capacity(
        read_size.max(1),
        Failing {
            inner: Trickle {
                bytes: &bytes[..fail_at],
                at: 0,
                read_size,
            },
        },
    );
    let Ok((_, scanner)) = LogScanner::open(reader) else {
        return "no header".to_owned();
    };
    let mut scanner = scanner.with_parallel_from(parallel_from);
    let mut out = String::new();
    loop {
        match scanner.next_line() {
            Ok(Some(line)) => writeln!(out, "{line:?}").unwrap(),
            Ok(None) => {
                writeln!(out, "end").unwrap();
                break;
            }
            Err(error) => {
                writeln!(out, "error: {error}").unwrap();
                break;
            }
        }
    }
    write!(out, "{:?}", scanner.position()).unwrap();
    out
}

/// A reader that fails once its input is used up.
struct Failing<'a> {
    inner: Trickle<'a>,
}

impl Read for Failing<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self.inner.read(buf)? {
            0 => Err(std::io::Error::other("the disk went away")),
            n => Ok(n),
        }
    }
}

impl Read for Trickle<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = buf
            .len()
            .min(self.read_size)
            .min(self.bytes.len() - self.at);
        buf[..n].copy_from_slice(&self.bytes[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

fn assert_same(bytes: &[u8], what: &str) {
    let sequential = scan(bytes, usize::MAX, 1 << 20, session_log::MAX_LINE_LEN);
    for (parallel_from, read_size) in [(1, 1 << 20), (1, 7), (4096, 1 << 20), (1, 65_536)] {
        let parallel = scan(bytes, parallel_from, read_size, session_log::MAX_LINE_LEN);
        assert_eq!(
            parallel, sequential,
            "{what}: parallel_from {parallel_from}, reads of {read_size} B differ"
        );
    }
    // A small line limit: overlong lines are skipped the same way.
    assert_eq!(
        scan(bytes, 1, 13, 200),
        scan(bytes, usize::MAX, 1 << 20, 200),
        "{what}: with a 200-byte line limit"
    );
}

fn corpus() -> Vec<(String, Vec<u8>)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/dsh-sessions");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    files.sort();
    assert!(files.len() >= 160, "the corpus is there: {}", files.len());
    files
        .into_iter()
        .map(|p| (p.display().to_string(), std::fs::read(&p).unwrap()))
        .collect()
}

fn hostile() -> Vec<(String, Vec<u8>)> {
    let header = br#"{"type":"session","version":4,"id":"s","createdAt":1}"#;
    let mut logs = Vec::new();
    let mut log = |name: &str, lines: &[&[u8]]| {
        let mut bytes = header.to_vec();
        bytes.push(b'\n');
        for line in lines {
            bytes.extend_from_slice(line);
        }
        logs.push((name.to_owned(), bytes));
    };
    log(
        "mixed findings",
        &[
            b"{\"type\":\"turn/start\",\"data\":{\"turn\":1}}\n",
            b"\n",
            b"   \n",
            b"{not json\n",
            b"[1,2]\n",
            b"{\"type\":\"x\",\"seq\":7,\"data\":{}}\n",
            b"{\"type\":\"x\",\"data\":{\"t\":\"\xff\xfe bad utf-8\"}}\n",
            b"{\"type\":\"assistant/text-chunks\",\"seq0\":20,\"data\":{\"chunks\":[\"a\",\"b\",\"c\"]}}\n",
            b"{\"type\":\"assistant/text-chunks\",\"data\":{\"chunks\":[\"d\"]}}\n",
            b"{\"type\":\"tool/call\",\"seq\":\"nine\",\"data\":{}}\n",
            b"{\"type\":\"x\",\"data\":{\"s\":\"\\ud800 lone surrogate\"}}\n",
            b"{\"type\":\"torn\",\"data\":{",
        ],
    );
    let overlong = format!(
        "{{\"type\":\"x\",\"data\":{{\"pad\":\"{}\"}}}}\n",
        "y".repeat(5000)
    );
    let many: Vec<Vec<u8>> = (0..2000)
        .map(|i| {
            if i % 97 == 0 {
                overlong.clone().into_bytes()
            } else if i % 31 == 0 {
                b"{broken\n".to_vec()
            } else {
                format!("{{\"type\":\"tool/result\",\"data\":{{\"callId\":\"c{i}\",\"content\":[{{\"type\":\"text\",\"text\":\"{i}\"}}]}}}}\n").into_bytes()
            }
        })
        .collect();
    let refs: Vec<&[u8]> = many.iter().map(Vec::as_slice).collect();
    log("many lines, overlong and broken ones among them", &refs);
    logs
}

#[test]
fn the_parallel_reader_reads_the_corpus_exactly_as_the_sequential_one() {
    for (name, bytes) in corpus() {
        assert_same(&bytes, &name);
    }
}

#[test]
fn the_parallel_reader_reads_hostile_logs_exactly_as_the_sequential_one() {
    for (name, bytes) in hostile() {
        assert_same(&bytes, &name);
    }
}

#[test]
fn the_parallel_reader_reads_random_cuts_exactly_as_the_sequential_one() {
    // A fixed-seed generator: cuts at arbitrary bytes, mid-line and mid-character included.
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut logs = hostile();
    logs.extend(corpus().into_iter().step_by(7));
    for (name, bytes) in logs {
        for _ in 0..6 {
            let cut = usize::try_from(next() % (bytes.len() as u64 + 1)).unwrap();
            assert_same(&bytes[..cut], &format!("{name} cut at {cut}"));
        }
    }
}

#[test]
fn a_read_that_fails_gives_the_lines_before_it_then_the_error_as_the_sequential_one() {
    let (_, bytes) = corpus()
        .into_iter()
        .max_by_key(|(_, bytes)| bytes.len())
        .unwrap();
    for fail_at in [bytes.len() / 3, bytes.len() / 2, bytes.len() - 1] {
        let sequential = scan_failing(&bytes, fail_at, usize::MAX, 1 << 20);
        assert!(
            sequential.contains("error: the disk went away"),
            "{sequential}"
        );
        for (parallel_from, read_size) in [(1, 4096), (1, 1 << 20), (4096, 65_536)] {
            assert_eq!(
                scan_failing(&bytes, fail_at, parallel_from, read_size),
                sequential,
                "failing at {fail_at}, parallel_from {parallel_from}, reads of {read_size} B"
            );
        }
    }
}
