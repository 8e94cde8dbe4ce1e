//! Hostile or unbounded input to the reader and the stores: a line that never ends is skipped in
//! bounded memory, a device, FIFO or directory is refused before it is read, and a log of a newer
//! format is read but never written.
// Test code stops at its first broken expectation: unwrap and expect are assertions here.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufReader, Read};

use ask_user_testkit::logs::{ev, session, temp_log};
use serde_json::json;
use session_log::{
    CorruptReason, HeaderError, JsonlStore, LogScanner, LogWriter, MAX_LINE_LEN, MemoryStore,
    OpenError, Scanned, SessionStore, StoreError, read_log, writer_is_live,
};

const HEADER: &str = r#"{"type":"session","version":4,"id":"s1","createdAt":0,"isSeeded":false}"#;

/// The corrupt lines and record seqs a scan finds.
fn scan(
    reader: impl std::io::BufRead,
    max_line: Option<u64>,
) -> (Vec<(u64, CorruptReason)>, Vec<u64>) {
    let (_, scanner) = LogScanner::open(reader).unwrap();
    let mut scanner = match max_line {
        Some(max) => scanner.with_max_line(max),
        None => scanner,
    };
    let (mut corrupt, mut seqs) = (Vec::new(), Vec::new());
    while let Some(line) = scanner.next_line().unwrap() {
        match line {
            Scanned::Record(record) => seqs.push(record.record.first_seq()),
            Scanned::Corrupt(c) => corrupt.push((c.line, c.reason)),
        }
    }
    (corrupt, seqs)
}

#[test]
fn a_line_over_the_limit_is_skipped_and_reported_with_its_line_number() {
    let padded = format!(
        r#"{{"type":"x","seq":1,"data":{{"pad":"{}"}}}}"#,
        "a".repeat(10_000)
    );
    let log = format!(
        "{HEADER}\n{}\n{padded}\n{}\n",
        r#"{"type":"turn/start","seq":0,"data":{"turn":1}}"#,
        r#"{"type":"turn/end","seq":1,"data":{"turn":1}}"#
    );
    let (corrupt, seqs) = scan(log.as_bytes(), Some(1_000));
    assert_eq!(corrupt, [(3, CorruptReason::TooLong { limit: 1_000 })]);
    assert_eq!(seqs, [0, 1], "the skipped line consumes no seq");
    // Under the default limit the same line is a record.
    let (corrupt, seqs) = scan(log.as_bytes(), None);
    assert!(corrupt.is_empty());
    assert_eq!(seqs, [0, 1, 1]);
}

#[test]
fn a_line_longer_than_the_default_limit_is_skipped_without_holding_it() {
    // 64 MiB and a bit of one byte, produced lazily: the reader must count it, not keep it.
    let huge = std::io::repeat(b'x').take(MAX_LINE_LEN + 10);
    let header = format!("{HEADER}\n");
    let reader = header
        .as_bytes()
        .chain(huge)
        .chain(&b"\n{\"type\":\"turn/start\",\"seq\":0,\"data\":{\"turn\":1}}\n"[..]);
    let (corrupt, seqs) = scan(BufReader::with_capacity(1 << 16, reader), None);
    assert_eq!(
        corrupt,
        [(
            2,
            CorruptReason::TooLong {
                limit: MAX_LINE_LEN
            }
        )]
    );
    assert_eq!(seqs, [0]);
}

#[test]
fn a_first_line_that_never_ends_is_a_header_error_not_a_hang() {
    let endless = std::io::repeat(b'{').take(MAX_LINE_LEN + 2);
    let error = LogScanner::open(BufReader::new(endless)).err().unwrap();
    assert!(matches!(
        error,
        OpenError::Header(HeaderError::TooLong {
            limit: MAX_LINE_LEN
        })
    ));
}

#[cfg(unix)]
#[test]
fn devices_fifos_and_directories_are_refused_before_they_are_read() {
    let dir = tempfile::tempdir().unwrap();
    let zero = dir.path().join("zero.jsonl");
    std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
    let fifo = dir.path().join("fifo.jsonl");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let sub = dir.path().join("dir.jsonl");
    std::fs::create_dir(&sub).unwrap();
    for (path, kind) in [
        (&zero, "a character device"),
        (&fifo, "a FIFO"),
        (&sub, "a directory"),
    ] {
        let refused = |result: Result<(), StoreError>| match result {
            Err(StoreError::NotAFile { kind: found, .. }) => assert_eq!(found, kind),
            other => panic!("{}: {other:?}", path.display()),
        };
        refused(read_log(path).map(drop));
        refused(LogWriter::open(path).map(drop));
        refused(writer_is_live(path).map(drop));
        let (store, name) = JsonlStore::for_file(path).unwrap();
        refused(store.read(&name, &mut ()).map(drop));
        refused(store.open(&name, &mut ()).map(drop));
        refused(store.line_of(&name, 0).map(drop));
    }
}

#[cfg(unix)]
#[test]
fn a_checkpoint_that_leads_to_a_device_is_refused() {
    let (dir, path) = temp_log();
    drop(LogWriter::create(&path, &session("s")).unwrap());
    std::os::unix::fs::symlink("/dev/zero", session_log::checkpoint_path(&path)).unwrap();
    let (store, name) = JsonlStore::for_file(&path).unwrap();
    assert!(matches!(
        store.load_checkpoint(&name),
        Err(StoreError::NotAFile { .. })
    ));
    drop(dir);
}

/// A log whose header has format version 99, a record, and a torn tail.
fn newer_log() -> Vec<u8> {
    let mut bytes = HEADER
        .replace("\"version\":4", "\"version\":99")
        .into_bytes();
    bytes.extend_from_slice(
        b"\n{\"type\":\"turn/start\",\"seq\":0,\"data\":{\"turn\":1}}\n{\"type\":",
    );
    bytes
}

#[test]
fn a_log_of_a_newer_format_is_read_but_never_written() {
    let (_dir, path) = temp_log();
    std::fs::write(&path, newer_log()).unwrap();
    let report = read_log(&path).unwrap();
    assert_eq!(report.header.version, Some(99));
    assert!(report.scan.torn_tail.is_some());
    match LogWriter::open(&path) {
        Err(StoreError::NewerFormat {
            version: 99,
            supported: 4,
            ..
        }) => {}
        other => panic!("{:?}", other.map(|_| ())),
    }
    assert_eq!(
        std::fs::read(&path).unwrap(),
        newer_log(),
        "nothing was cut or appended"
    );

    let memory = MemoryStore::new();
    memory.insert_bytes("s", newer_log());
    assert!(matches!(
        memory.open("s", &mut ()),
        Err(StoreError::NewerFormat { version: 99, .. })
    ));
    assert_eq!(memory.bytes("s").unwrap(), newer_log());
    assert!(
        !memory.is_writing("s").unwrap(),
        "the refused open gave ownership back"
    );
    assert_eq!(memory.read("s", &mut ()).unwrap().header.version, Some(99));
    // The current format stays writable.
    let (_dir, current) = temp_log();
    let mut writer = LogWriter::create(&current, &session("ok")).unwrap();
    writer
        .append(&[ev("turn/start", 0, json!({"turn":1}))])
        .unwrap();
}
