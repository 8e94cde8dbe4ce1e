//! The session log file (SPEC §9.6, scenarios L1–L7): creating, appending, failing appends,
//! torn tails at every cut point, corrupt middle lines, gaps, fixtures, and the single writer.
//! Every test works on real files in a temporary directory.
// Test code stops at its first broken expectation: unwrap and expect are assertions here.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::cell::RefCell;
use std::fs;
use std::io::{self, Write};
use std::rc::Rc;

use ask_user_testkit::logs::{
    append_raw, ev, finished_log, full_fold, line_ends, lt_log, names, result, session, temp_log,
};
use serde_json::json;
use serde_json::value::RawValue;
use session_log::{
    LogEvent, LogFile, LogWriter, NewSession, SESSION_FORMAT_VERSION, StoreError, read_log,
};
use user_questions_projection::{CorruptReason, HeaderError, SeqGap, TornTail};

#[test]
fn l1_create_then_append_three_events() {
    let (dir, path) = temp_log();
    let mut writer = LogWriter::create(&path, &session("s1")).unwrap();
    assert_eq!(writer.next_seq(), 0);
    writer
        .append(&[
            ev("turn/start", 0, json!({"turn":1})),
            ev("step/start", 1, json!({"turn":1,"step":1})),
            ev("step/end", 2, json!({"turn":1,"step":1})),
        ])
        .unwrap();
    let expected = concat!(
        r#"{"type":"session","version":4,"id":"s1","createdAt":1781999999000,"isSeeded":false,"delegationDepth":0}"#,
        "\n",
        r#"{"type":"turn/start","seq":0,"time":1782000000000,"data":{"turn":1}}"#,
        "\n",
        r#"{"type":"step/start","seq":1,"time":1782000000000,"data":{"turn":1,"step":1}}"#,
        "\n",
        r#"{"type":"step/end","seq":2,"time":1782000000000,"data":{"turn":1,"step":1}}"#,
        "\n",
    );
    assert_eq!(fs::read_to_string(&path).unwrap(), expected);
    assert_eq!(writer.next_seq(), 3);
    assert_eq!(writer.position().byte_offset, expected.len() as u64);

    let err = writer
        .append(&[ev("turn/end", 5, json!({"turn":1})), ev("x", 6, json!({}))])
        .unwrap_err();
    assert!(
        matches!(
            err,
            StoreError::SeqMismatch {
                expected: 3,
                found: 5
            }
        ),
        "{err}"
    );
    assert_eq!(err.code(), "SEQ_MISMATCH");
    assert_eq!(
        fs::read_to_string(&path).unwrap(),
        expected,
        "file unchanged"
    );
    assert_eq!(writer.next_seq(), 3);
    writer
        .append(&[ev("turn/end", 3, json!({"turn":1}))])
        .unwrap();
    drop(writer);
    assert_eq!(names(dir.path()), ["session.jsonl"], "no temporary files");
    let report = read_log(&path).unwrap();
    assert!(report.is_clean());
    assert_eq!(report.scan.end.events, 4);
    assert_eq!(report.header.version, Some(SESSION_FORMAT_VERSION));
}

#[test]
fn create_writes_every_header_key_in_order() {
    let (_dir, path) = temp_log();
    let session = NewSession {
        cwd: Some("/work".to_owned()),
        parent_session: Some("parent".to_owned()),
        is_seeded: true,
        origin: Some("subagent".to_owned()),
        delegation_depth: 1,
        agent_preset: Some("reviewer".to_owned()),
        ..session("child")
    };
    drop(LogWriter::create(&path, &session).unwrap());
    assert_eq!(
        fs::read_to_string(&path).unwrap(),
        concat!(
            r#"{"type":"session","version":4,"id":"child","createdAt":1781999999000,"cwd":"/work","parentSession":"parent","isSeeded":true,"origin":"subagent","delegationDepth":1,"agentPreset":"reviewer"}"#,
            "\n"
        )
    );
    let header = read_log(&path).unwrap().header;
    assert_eq!(header.id.as_str(), "child");
    assert_eq!(header.is_seeded, Some(true));
    assert_eq!(header.seed_length, None);
    assert_eq!(header.delegation_depth, 1);
}

#[test]
fn create_never_replaces_an_existing_log() {
    let (dir, path) = temp_log();
    drop(finished_log(&path));
    let before = fs::read(&path).unwrap();
    let err = LogWriter::create(&path, &session("other")).unwrap_err();
    assert!(matches!(err, StoreError::Exists { .. }), "{err}");
    assert_eq!(err.code(), "LOG_EXISTS");
    assert_eq!(fs::read(&path).unwrap(), before);
    assert_eq!(
        names(dir.path()),
        ["session.jsonl"],
        "the temporary file is gone"
    );
}

#[test]
fn create_removes_temporary_files_of_an_interrupted_create() {
    let (dir, path) = temp_log();
    fs::write(
        dir.path().join("session.jsonl.tmp-1-2-3"),
        "{\"type\":\"sess",
    )
    .unwrap();
    drop(LogWriter::create(&path, &session("s1")).unwrap());
    assert_eq!(names(dir.path()), ["session.jsonl"]);
}

/// Appends `events` to a fresh log holding two events and expects the append to be refused
/// without writing anything.
#[track_caller]
fn check_refused(events: &[LogEvent], code: &str, message_part: &str) {
    let (_dir, path) = temp_log();
    let mut writer = LogWriter::create(&path, &session("s1")).unwrap();
    writer
        .append(&[ev("a", 0, json!({})), ev("b", 1, json!({}))])
        .unwrap();
    let before = fs::read(&path).unwrap();
    let err = writer.append(events).unwrap_err();
    assert_eq!(err.code(), code, "{err}");
    assert!(err.to_string().contains(message_part), "{err}");
    assert_eq!(fs::read(&path).unwrap(), before);
    assert_eq!(writer.next_seq(), 2);
}

fn raw_event(event_type: &str, seq: u64, data: &str) -> LogEvent {
    LogEvent::new(
        event_type,
        seq,
        RawValue::from_string(data.to_owned()).unwrap(),
    )
    .at(1)
}

#[test]
fn append_checks_seqs_and_shapes_before_writing() {
    check_refused(&[ev("a", 1, json!({}))], "SEQ_MISMATCH", "next seq is 2");
    check_refused(&[ev("a", 3, json!({}))], "SEQ_MISMATCH", "starts at 3");
    check_refused(
        &[ev("a", 2, json!({})), ev("b", 4, json!({}))],
        "SEQ_NOT_CONTIGUOUS",
        "event 1 of the batch has seq 4, expected 3",
    );
    check_refused(
        &[ev("a", 2, json!({})), ev("b", 2, json!({}))],
        "SEQ_NOT_CONTIGUOUS",
        "expected 3",
    );
    check_refused(
        &[raw_event("a", 2, "[1]")],
        "INVALID_EVENT",
        "not a JSON object",
    );
    check_refused(
        &[raw_event("a", 2, "null")],
        "INVALID_EVENT",
        "not a JSON object",
    );
    check_refused(
        &[raw_event("a", 2, "{\n\"pretty\": true\n}")],
        "INVALID_EVENT",
        "line break",
    );
    // A packed chunk row type would read back as several events (or as a corrupt row).
    check_refused(
        &[raw_event("text-chunks", 2, r#"{"texts":["a","b"]}"#)],
        "INVALID_EVENT",
        "seq 2",
    );
    check_refused(
        &[raw_event("reasoning-chunks", 2, r#"{"turn":1}"#)],
        "INVALID_EVENT",
        "does not read back",
    );
    // A valid event before an invalid one is not written either.
    check_refused(
        &[ev("ok", 2, json!({})), raw_event("a", 3, "7")],
        "INVALID_EVENT",
        "seq 3",
    );
}

#[test]
fn an_empty_batch_writes_nothing() {
    let (_dir, path) = temp_log();
    let mut writer = LogWriter::create(&path, &session("s1")).unwrap();
    let before = fs::read(&path).unwrap();
    writer.append(&[]).unwrap();
    assert_eq!(fs::read(&path).unwrap(), before);
    assert_eq!(writer.next_seq(), 0);
}

#[test]
fn envelope_keys_follow_the_spec_order() {
    let (_dir, path) = temp_log();
    let mut writer = LogWriter::create(&path, &session("s1")).unwrap();
    let surface =
        RawValue::from_string(r#"{"op":"replace","start":0,"end":0}"#.to_owned()).unwrap();
    writer
        .append(&[
            ev("user/message", 0, json!({"b":1,"a":2}))
                .with_source_event_seqs(vec![4, 5])
                .surface_append()
                .ignorable(),
            LogEvent {
                surface_op: Some(surface),
                ..ev("user/message", 1, json!({}))
            },
        ])
        .unwrap();
    let text = fs::read_to_string(&path).unwrap();
    let lines: Vec<&str> = text.lines().skip(1).collect();
    assert_eq!(
        lines,
        [
            r#"{"type":"user/message","seq":0,"time":1782000000000,"data":{"b":1,"a":2},"ignorable":true,"sourceEventSeqs":[4,5],"surfaceOp":"append"}"#,
            r#"{"type":"user/message","seq":1,"time":1782000000000,"data":{},"surfaceOp":{"op":"replace","start":0,"end":0}}"#,
        ]
    );
}

/// Faults to inject into the writer's file.
#[derive(Default)]
struct Faults {
    /// Fail the next write after writing this many bytes of it.
    write_after: Option<usize>,
    /// Fail the next `sync_data`.
    sync: bool,
    /// Fail every `set_len`.
    set_len: bool,
}

/// The log file with injectable faults (L2).
struct FaultyFile {
    inner: fs::File,
    faults: Rc<RefCell<Faults>>,
}

impl Write for FaultyFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut faults = self.faults.borrow_mut();
        if let Some(n) = faults.write_after.take() {
            self.inner.write_all(&buf[..n.min(buf.len())])?;
            return Err(io::Error::other("injected write failure"));
        }
        self.inner.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

impl LogFile for FaultyFile {
    fn set_len(&mut self, len: u64) -> io::Result<()> {
        if self.faults.borrow().set_len {
            return Err(io::Error::other("injected truncate failure"));
        }
        self.inner.set_len(len)
    }

    fn sync_data(&mut self) -> io::Result<()> {
        if std::mem::take(&mut self.faults.borrow_mut().sync) {
            return Err(io::Error::other("injected sync failure"));
        }
        self.inner.sync_data()
    }
}

fn batch(first: u64) -> Vec<LogEvent> {
    (first..first + 3)
        .map(|seq| ev("note", seq, json!({"text":"x".repeat(100)})))
        .collect()
}

#[test]
fn l2_a_failed_write_mid_batch_is_truncated_away() {
    let (_dir, path) = temp_log();
    let faults = Rc::new(RefCell::new(Faults::default()));
    let mut writer = LogWriter::create(&path, &session("s1"))
        .unwrap()
        .map_file(|inner| FaultyFile {
            inner,
            faults: faults.clone(),
        });
    writer.append(&batch(0)).unwrap();
    let before = fs::read(&path).unwrap();

    faults.borrow_mut().write_after = Some(150);
    let err = writer.append(&batch(3)).unwrap_err();
    assert_eq!(err.code(), "APPEND_FAILED");
    assert!(err.to_string().contains("injected write failure"), "{err}");
    assert!(err.to_string().contains("truncated away"), "{err}");
    assert_eq!(
        fs::read(&path).unwrap(),
        before,
        "truncated to its previous length"
    );
    assert!(!writer.is_poisoned());
    assert_eq!(writer.next_seq(), 3);

    faults.borrow_mut().sync = true;
    let err = writer.append(&batch(3)).unwrap_err();
    assert!(err.to_string().contains("injected sync failure"), "{err}");
    assert_eq!(
        fs::read(&path).unwrap(),
        before,
        "an unsynced batch is truncated too"
    );

    // The same seqs can be written once the fault is gone, exactly once each.
    writer.append(&batch(3)).unwrap();
    drop(writer);
    let report = read_log(&path).unwrap();
    assert!(report.is_clean(), "{report:?}");
    assert_eq!(report.scan.end.events, 6);
}

#[test]
fn l2_a_failing_truncate_poisons_the_writer() {
    let (_dir, path) = temp_log();
    let faults = Rc::new(RefCell::new(Faults::default()));
    let mut writer = LogWriter::create(&path, &session("s1"))
        .unwrap()
        .map_file(|inner| FaultyFile {
            inner,
            faults: faults.clone(),
        });
    writer.append(&batch(0)).unwrap();
    let before = fs::read(&path).unwrap();
    *faults.borrow_mut() = Faults {
        write_after: Some(200),
        sync: false,
        set_len: true,
    };
    let err = writer.append(&batch(3)).unwrap_err();
    assert!(
        matches!(
            err,
            StoreError::AppendFailed {
                rollback: Some(_),
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("poisoned"), "{err}");
    assert!(writer.is_poisoned());
    *faults.borrow_mut() = Faults::default();
    for attempt in [batch(3), batch(4)] {
        let err = writer.append(&attempt).unwrap_err();
        assert!(matches!(err, StoreError::Poisoned { .. }), "{err}");
        assert_eq!(err.code(), "WRITER_POISONED");
    }
    drop(writer);

    // The partial batch is still there; reopening treats what follows the last line end as a torn
    // tail, and complete partial lines as records that were never acknowledged.
    let written = fs::read(&path).unwrap();
    assert_eq!(&written[..before.len()], before.as_slice());
    assert_eq!(written.len(), before.len() + 200);
    let (writer, report) = LogWriter::open(&path).unwrap();
    assert_eq!(
        report.scan.end.events, 4,
        "one complete line of the failed batch"
    );
    assert!(report.torn_tail_saved_to.is_some());
    assert_eq!(writer.next_seq(), 4);
}

#[test]
fn l3_torn_tail_is_saved_truncated_and_reported() {
    let (dir, path) = temp_log();
    drop(finished_log(&path));
    let clean = fs::read(&path).unwrap();
    append_raw(&path, br#"{"type":"turn/st"#);
    let torn = fs::read(&path).unwrap();
    let expected = TornTail {
        byte_offset: clean.len() as u64,
        len: 16,
    };

    // Read-only: reported, file untouched, no sidecar.
    let report = read_log(&path).unwrap();
    assert_eq!(report.scan.torn_tail, Some(expected));
    assert_eq!(report.torn_tail_saved_to, None);
    assert_eq!(fs::read(&path).unwrap(), torn);
    assert_eq!(names(dir.path()), ["session.jsonl"]);

    // For write: saved to the sidecar, truncated, reported.
    let (mut writer, report) = LogWriter::open(&path).unwrap();
    assert_eq!(report.scan.torn_tail, Some(expected));
    let sidecar = dir
        .path()
        .join(format!("session.jsonl.torn-{}", clean.len()));
    assert_eq!(
        report.torn_tail_saved_to.as_deref(),
        Some(sidecar.as_path())
    );
    assert_eq!(fs::read(&sidecar).unwrap(), br#"{"type":"turn/st"#);
    assert_eq!(fs::read(&path).unwrap(), clean);

    // The next append starts on a clean line.
    writer
        .append(&[ev("turn/start", 14, json!({"turn":3}))])
        .unwrap();
    drop(writer);
    let text = fs::read_to_string(&path).unwrap();
    assert!(text.ends_with(
        "\n{\"type\":\"turn/start\",\"seq\":14,\"time\":1782000000000,\"data\":{\"turn\":3}}\n"
    ));
    let report = read_log(&path).unwrap();
    assert!(report.is_clean(), "{report:?}");
    assert_eq!(report.scan.end.events, 15);
}

#[test]
fn a_second_torn_tail_at_the_same_offset_gets_its_own_sidecar() {
    let (dir, path) = temp_log();
    drop(finished_log(&path));
    let clean = fs::read(&path).unwrap();
    let offset = clean.len();
    let first = dir.path().join(format!("session.jsonl.torn-{offset}"));
    append_raw(&path, b"first");
    drop(LogWriter::open(&path).unwrap());
    // An open interrupted between saving and truncating finds its own sidecar and reuses it.
    append_raw(&path, b"first");
    let (_, report) = LogWriter::open(&path).unwrap();
    assert_eq!(report.torn_tail_saved_to.as_deref(), Some(first.as_path()));
    // Other bytes at the same offset go to a new name; nothing is overwritten.
    append_raw(&path, b"second");
    let (_, report) = LogWriter::open(&path).unwrap();
    let second = dir.path().join(format!("session.jsonl.torn-{offset}.1"));
    assert_eq!(report.torn_tail_saved_to.as_deref(), Some(second.as_path()));
    assert_eq!(fs::read(&first).unwrap(), b"first");
    assert_eq!(fs::read(&second).unwrap(), b"second");
    assert_eq!(fs::read(&path).unwrap(), clean);
}

#[test]
fn torn_tails_at_every_cut_point() {
    // A real log of the kind a crash leaves: a timed question, its pending result, the step end.
    let (dir, full_path) = temp_log();
    let mut writer = lt_log(&full_path);
    writer
        .append(&[
            ev(
                "tool/result",
                4,
                result(
                    1,
                    1,
                    "ask-timed",
                    r#"{"pending":true,"callId":"ask-timed"}"#,
                ),
            ),
            ev("step/end", 5, json!({"turn":1,"step":1})),
        ])
        .unwrap();
    drop(writer);
    let full = fs::read(&full_path).unwrap();
    let ends = line_ends(&full);
    let header_end = ends[0];
    let path = dir.path().join("cut.jsonl");
    for cut in 0..=full.len() {
        let prefix = &full[..cut];
        fs::write(&path, prefix).unwrap();
        if cut < header_end {
            // No complete header record: a hard error, and the file is left alone.
            let err = read_log(&path).unwrap_err();
            assert!(
                matches!(
                    err,
                    StoreError::Header {
                        source: HeaderError::Missing,
                        ..
                    }
                ),
                "cut {cut}: {err}"
            );
            let err = LogWriter::open(&path).unwrap_err();
            assert_eq!(err.code(), "LOG_HEADER", "cut {cut}");
            assert_eq!(fs::read(&path).unwrap(), prefix, "cut {cut}");
            continue;
        }
        let boundary = ends.iter().copied().filter(|e| *e <= cut).max().unwrap();
        let records = ends.iter().filter(|e| **e <= cut).count() as u64 - 1;
        let torn = (cut > boundary).then_some(TornTail {
            byte_offset: boundary as u64,
            len: (cut - boundary) as u64,
        });

        let report = read_log(&path).unwrap();
        assert_eq!(report.scan.torn_tail, torn, "cut {cut}");
        assert!(report.scan.corrupt_lines.is_empty(), "cut {cut}");
        assert_eq!(report.scan.end.events, records, "cut {cut}");
        assert_eq!(
            fs::read(&path).unwrap(),
            prefix,
            "cut {cut}: read-only open"
        );

        let (mut writer, report) = LogWriter::open(&path).unwrap();
        assert_eq!(report.scan.torn_tail, torn, "cut {cut}");
        let sidecar = dir.path().join(format!("cut.jsonl.torn-{boundary}"));
        if torn.is_some() {
            assert_eq!(
                report.torn_tail_saved_to.as_deref(),
                Some(sidecar.as_path())
            );
            assert_eq!(
                fs::read(&sidecar).unwrap(),
                &full[boundary..cut],
                "cut {cut}"
            );
            fs::remove_file(&sidecar).unwrap();
        } else {
            assert_eq!(report.torn_tail_saved_to, None);
        }
        assert_eq!(fs::read(&path).unwrap(), &full[..boundary], "cut {cut}");
        assert_eq!(writer.next_seq(), records, "cut {cut}");
        writer
            .append(&[ev("turn/start", records, json!({"turn":9}))])
            .unwrap();
        drop(writer);
        let after = fs::read(&path).unwrap();
        assert_eq!(&after[..boundary], &full[..boundary]);
        assert!(
            after[boundary..].starts_with(b"{\"type\":\"turn/start\""),
            "cut {cut}"
        );
        let report = read_log(&path).unwrap();
        assert!(report.is_clean(), "cut {cut}: {report:?}");
        assert_eq!(report.scan.end.events, records + 1);
    }
    assert_eq!(names(dir.path()), ["cut.jsonl", "session.jsonl"]);
}

/// A log with explicit seqs whose line 5 is `corrupt`: lines 2–4 hold seqs 0–2, lines 6–7 hold
/// seqs 4–5 (the writer that wrote line 5 had given it seq 3).
fn log_with_corrupt_line_5(corrupt: &[u8]) -> (tempfile::TempDir, std::path::PathBuf, usize) {
    let (dir, path) = temp_log();
    let mut writer = LogWriter::create(&path, &session("s1")).unwrap();
    writer
        .append(&[
            ev("a", 0, json!({})),
            ev("b", 1, json!({})),
            ev("c", 2, json!({})),
        ])
        .unwrap();
    drop(writer);
    let offset = fs::read(&path).unwrap().len();
    append_raw(&path, corrupt);
    append_raw(
        &path,
        concat!(
            r#"{"type":"e","seq":4,"data":{}}"#,
            "\n",
            r#"{"type":"f","seq":5,"data":{}}"#,
            "\n"
        )
        .as_bytes(),
    );
    (dir, path, offset)
}

#[test]
fn l4_corrupt_middle_line_is_skipped_reported_and_kept() {
    let corrupt = b"{\"type\":\"d\",\"seq\":3,\"data\":{\n";
    let (_dir, path, offset) = log_with_corrupt_line_5(corrupt);
    let original = fs::read(&path).unwrap();

    let report = read_log(&path).unwrap();
    assert_eq!(report.scan.corrupt_lines.len(), 1);
    let line = &report.scan.corrupt_lines[0];
    assert_eq!(
        (line.line, line.byte_offset, line.len),
        (5, offset as u64, corrupt.len() as u64)
    );
    assert!(
        matches!(line.reason, CorruptReason::NotJson(_)),
        "{:?}",
        line.reason
    );
    assert_eq!(
        report.scan.seq_gaps,
        [SeqGap {
            line: 6,
            expected: 3,
            found: 4
        }]
    );
    assert_eq!(report.scan.end.events, 5, "events after it are decoded");
    assert_eq!(fs::read(&path).unwrap(), original);

    // Opening for write neither deletes nor rewrites it; appends go after it.
    let (mut writer, report) = LogWriter::open(&path).unwrap();
    assert_eq!(report.scan.corrupt_lines[0].line, 5);
    assert_eq!(writer.next_seq(), 6);
    writer.append(&[ev("g", 6, json!({}))]).unwrap();
    drop(writer);
    let after = fs::read(&path).unwrap();
    assert_eq!(&after[..original.len()], original.as_slice());
    assert_eq!(&after[offset..offset + corrupt.len()], corrupt);
    let report = read_log(&path).unwrap();
    assert_eq!(report.scan.corrupt_lines[0].line, 5);
    assert_eq!(report.scan.corrupt_lines[0].byte_offset, offset as u64);
    assert_eq!(report.scan.end.events, 6);
}

#[test]
fn corrupt_middle_lines_of_every_kind() {
    #[track_caller]
    fn check(corrupt: &[u8], reason: &CorruptReason) {
        let (_dir, path, offset) = log_with_corrupt_line_5(corrupt);
        let original = fs::read(&path).unwrap();
        for report in [read_log(&path).unwrap(), LogWriter::open(&path).unwrap().1] {
            let line = &report.scan.corrupt_lines[..];
            assert_eq!(line.len(), 1, "{}", String::from_utf8_lossy(corrupt));
            assert_eq!(&line[0].reason, reason);
            assert_eq!(
                (line[0].line, line[0].byte_offset, line[0].len),
                (5, offset as u64, corrupt.len() as u64)
            );
            assert_eq!(report.scan.end.events, 5);
            assert_eq!(report.scan.end.expected_seq, 6);
        }
        assert_eq!(fs::read(&path).unwrap(), original);
    }
    check(b"\n", &CorruptReason::Blank);
    check(b"   \r\n", &CorruptReason::Blank);
    check(b"null\n", &CorruptReason::NotObject);
    check(b"[1,2]\n", &CorruptReason::NotObject);
    check(b"{\"seq\":3,\"data\":{}}\n", &CorruptReason::NoType);
    check(b"{\"type\":7,\"seq\":3}\n", &CorruptReason::NoType);
    check(b"{\"type\":\"d\",\"seq\":-3}\n", &CorruptReason::BadSeq);
    check(b"{\"type\":\"d\",\"seq\":\"3\"}\n", &CorruptReason::BadSeq);
    check(
        b"{\"type\":\"text-chunks\",\"seq0\":3,\"data\":{\"turn\":1}}\n",
        &CorruptReason::MalformedPackedRow,
    );
    let (_dir, path, _) = log_with_corrupt_line_5(b"{\"type\":\"d\",\"seq\":3} trailing\n");
    assert!(matches!(
        read_log(&path).unwrap().scan.corrupt_lines[0].reason,
        CorruptReason::NotJson(_)
    ));
}

#[test]
fn invalid_utf8_is_read_lossily_and_reported() {
    let (_dir, path, offset) =
        log_with_corrupt_line_5(b"{\"type\":\"d\",\"seq\":3,\"data\":{\"t\":\"\xff\xfe\"}}\n");
    let original = fs::read(&path).unwrap();
    let report = read_log(&path).unwrap();
    assert!(report.scan.corrupt_lines.is_empty());
    assert!(report.scan.seq_gaps.is_empty());
    assert_eq!(report.scan.lossy_lines.len(), 1);
    assert_eq!(
        (
            report.scan.lossy_lines[0].line,
            report.scan.lossy_lines[0].byte_offset
        ),
        (5, offset as u64)
    );
    assert_eq!(report.scan.end.events, 6);
    drop(LogWriter::open(&path).unwrap());
    assert_eq!(fs::read(&path).unwrap(), original);
}

#[test]
fn l5_seq_jump_is_a_reported_gap_and_events_are_kept() {
    let (_dir, path) = temp_log();
    let mut writer = LogWriter::create(&path, &session("s1")).unwrap();
    writer
        .append(&(0..8).map(|s| ev("n", s, json!({}))).collect::<Vec<_>>())
        .unwrap();
    drop(writer);
    append_raw(&path, b"{\"type\":\"n\",\"seq\":9,\"data\":{}}\n");
    let report = read_log(&path).unwrap();
    assert_eq!(
        report.scan.seq_gaps,
        [SeqGap {
            line: 10,
            expected: 8,
            found: 9
        }]
    );
    assert_eq!(report.scan.end.events, 9);
    let (mut writer, _) = LogWriter::open(&path).unwrap();
    assert_eq!(
        writer.next_seq(),
        10,
        "one past the last record, not the event count"
    );
    assert!(writer.append(&[ev("n", 9, json!({}))]).is_err());
    writer.append(&[ev("n", 10, json!({}))]).unwrap();
}

#[test]
fn l6_missing_header_is_a_hard_error() {
    #[track_caller]
    fn check(content: &[u8], expected: &HeaderError) {
        let (_dir, path) = temp_log();
        fs::write(&path, content).unwrap();
        for err in [
            read_log(&path).unwrap_err(),
            LogWriter::open(&path).unwrap_err(),
        ] {
            match &err {
                StoreError::Header { source, .. } => assert_eq!(
                    std::mem::discriminant(source),
                    std::mem::discriminant(expected),
                    "{err}"
                ),
                other => panic!("expected a header error, got {other}"),
            }
            assert!(err.to_string().contains("session.jsonl"), "{err}");
        }
        assert_eq!(fs::read(&path).unwrap(), content, "left untouched");
    }
    check(b"", &HeaderError::Missing);
    check(br#"{"type":"session","id":"s1"}"#, &HeaderError::Missing);
    check(
        b"{\"type\":\"turn/start\",\"data\":{}}\n",
        &HeaderError::NotSession,
    );
    check(
        b"not json\n{\"type\":\"a\"}\n",
        &HeaderError::NotJson(String::new()),
    );
    check(b"{\"type\":\"session\"}\n", &HeaderError::NoId);
    check(
        b"\xEF\xBB\xBF{\"type\":\"session\",\"id\":\"s1\"}\n",
        &HeaderError::ByteOrderMark,
    );

    let (_dir, path) = temp_log();
    let err = read_log(&path).unwrap_err();
    assert_eq!(err.code(), "LOG_IO", "{err}");
    assert!(
        LogWriter::open(&path).is_err(),
        "open for write never creates"
    );
    assert!(!path.exists());
}

#[test]
fn l6_fixture_without_seq_gets_positional_seqs_and_packed_rows_count_per_member() {
    let (_dir, path) = temp_log();
    fs::write(
        &path,
        concat!(
            r#"{"type":"session","id":"fixture","createdAt":0}"#,
            "\n",
            r#"{"type":"turn/start","data":{"turn":1}}"#,
            "\n",
            r#"{"type":"reasoning-chunks","time0":5,"data":{"turn":1,"step":1,"index":0,"dt":[0,1,1,1],"texts":["a","b","c","d"]}}"#,
            "\n",
            r#"{"type":"step/end","data":{"turn":1,"step":1}}"#,
            "\n",
        ),
    )
    .unwrap();
    let report = read_log(&path).unwrap();
    assert!(report.is_clean(), "{report:?}");
    assert_eq!(report.header.version, None);
    assert_eq!(report.scan.end.events, 6, "1 + 4 packed members + 1");
    assert_eq!(report.scan.end.expected_seq, 6);
    let (mut writer, _) = LogWriter::open(&path).unwrap();
    assert_eq!(writer.next_seq(), 6);
    writer
        .append(&[ev("turn/end", 6, json!({"turn":1}))])
        .unwrap();
    drop(writer);
    assert_eq!(read_log(&path).unwrap().scan.end.events, 7);
    assert!(read_log(&path).unwrap().scan.seq_gaps.is_empty());
}

#[test]
fn l7_a_second_writer_gets_a_lock_error() {
    let (_dir, path) = temp_log();
    let writer = finished_log(&path);
    let err = LogWriter::open(&path).unwrap_err();
    assert!(matches!(err, StoreError::Locked { .. }), "{err}");
    assert_eq!(err.code(), "LOG_LOCKED");
    assert!(err.to_string().contains("already open for write"), "{err}");
    // Readers take no lock.
    assert!(read_log(&path).unwrap().is_clean());
    drop(writer);
    let (writer, _) = LogWriter::open(&path).unwrap();
    assert!(matches!(
        LogWriter::open_repaired(&path).unwrap_err(),
        StoreError::Locked { .. }
    ));
    drop(writer);
}

#[test]
fn a_visitor_sees_every_line_in_the_open_scan() {
    struct Count {
        headers: usize,
        records: usize,
        corrupt: usize,
    }
    impl session_log::LogVisitor for Count {
        fn header(&mut self, _: &user_questions_projection::SessionHeader) {
            self.headers += 1;
        }
        fn line(&mut self, scanned: &user_questions_projection::Scanned<'_>) {
            match scanned {
                user_questions_projection::Scanned::Record(_) => self.records += 1,
                user_questions_projection::Scanned::Corrupt(_) => self.corrupt += 1,
            }
        }
    }
    let (_dir, path, _) = log_with_corrupt_line_5(b"garbage\n");
    let mut count = Count {
        headers: 0,
        records: 0,
        corrupt: 0,
    };
    session_log::read_log_with(&path, &mut count).unwrap();
    assert_eq!((count.headers, count.records, count.corrupt), (1, 5, 1));
    let mut count = Count {
        headers: 0,
        records: 0,
        corrupt: 0,
    };
    LogWriter::open_with(&path, &mut count).unwrap();
    assert_eq!((count.headers, count.records, count.corrupt), (1, 5, 1));
}

#[test]
fn what_the_writer_appends_is_what_the_fold_reads() {
    let (_dir, path) = temp_log();
    let writer = finished_log(&path);
    let folded = full_fold(&path);
    assert!(folded.report.is_clean());
    assert_eq!(folded.report.end.expected_seq, writer.next_seq());
    assert_eq!(folded.report.end.byte_offset, writer.position().byte_offset);
    assert_eq!(folded.report.end.line, writer.position().line);
    let view = folded.state.view();
    assert!(view.active.is_empty());
    assert_eq!(view.settled.len(), 1);
    assert_eq!(view.settled[0].call_id.as_str(), "ask-timed");
}

#[test]
fn create_in_a_missing_directory_is_an_io_error() {
    let (dir, _) = temp_log();
    let path = dir.path().join("missing").join("session.jsonl");
    let err = LogWriter::create(&path, &session("s1")).unwrap_err();
    assert_eq!(err.code(), "LOG_IO", "{err}");
    assert!(err.to_string().contains("missing"), "{err}");
}

#[cfg(unix)]
#[test]
fn a_log_whose_file_name_is_not_utf8_is_reached_through_its_path() {
    use session_log::{JsonlStore, SessionStore};
    use std::os::unix::ffi::OsStrExt;

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(std::ffi::OsStr::from_bytes(b"\xff.jsonl"));
    let (store, name) = JsonlStore::for_file(&path).unwrap();
    let writer = store.create(&name, &session("s")).unwrap();
    assert_eq!(writer.location(), path);
    drop(writer);
    assert!(path.exists());
    let (writer, _) = store.open(&name, &mut ()).unwrap();
    assert_eq!(writer.location(), path);
    assert_eq!(store.file_path(&name), Some(path));
}

/// `log_names` lists the `*.jsonl` regular files of the store's directory, sorted: not its
/// checkpoints, torn-tail copies or directories.
#[test]
fn the_store_lists_its_logs_and_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    let store = session_log::JsonlStore::new(dir.path());
    for name in ["b.jsonl", "a.jsonl"] {
        use session_log::SessionStore as _;
        store
            .create(
                name,
                &session_log::NewSession::new(user_questions::SessionId::from("s")),
            )
            .unwrap();
    }
    std::fs::write(
        dir.path().join("a.jsonl.userQuestions.checkpoint.json"),
        "{}",
    )
    .unwrap();
    std::fs::write(dir.path().join("a.jsonl.torn-12"), "x").unwrap();
    std::fs::create_dir(dir.path().join("c.jsonl")).unwrap();
    assert_eq!(store.log_names().unwrap(), ["a.jsonl", "b.jsonl"]);
}
