//! The projection checkpoint cache (SPEC §9.6, scenarios L8–L10): exact content, atomic writes,
//! every stale condition, and resumed folds that equal a full refold, on real files.
// Test code stops at its first broken expectation: unwrap and expect are assertions here.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs;
use std::path::{Path, PathBuf};

use ask_user_host::{
    Checkpoint, CheckpointPolicy, CheckpointWrite, ProjectionLoad, ProjectionSource, RefoldReason,
    StaleReason,
};
use ask_user_testkit::logs::{
    append_raw, call, ev, full_fold, line_ends, load_file_projection as load_projection, lt_log,
    names, reply, result, scope_arguments, session, temp_log,
};
use serde_json::{Value, json};
use session_log::{
    AnchorMismatch, LogAnchor, LogWriter, checkpoint_path, sha256_hex, stage_checkpoint,
    write_checkpoint,
};
use user_questions_projection::{ActiveState, CorruptReason, STATE_VERSION, SeqGap};

/// Loads with [`CheckpointPolicy::Refresh`] and checks the result against a full refold.
#[track_caller]
fn load(path: &Path) -> ProjectionLoad {
    let loaded = load_projection(path, CheckpointPolicy::Refresh).unwrap();
    let full = full_fold(path);
    assert_eq!(loaded.state, full.state, "equals a full refold");
    assert_eq!(loaded.next_seq, full.report.end.expected_seq);
    assert_eq!(loaded.event_count, full.report.end.events);
    assert_eq!(loaded.byte_length, full.report.end.byte_offset);
    assert_eq!(loaded.torn_tail, full.report.torn_tail);
    loaded
}

fn written(load: &ProjectionLoad) -> &Path {
    match &load.checkpoint {
        CheckpointWrite::Written(path) => path,
        other => panic!("expected a written checkpoint, got {other:?}"),
    }
}

#[test]
fn sha256_is_the_standard_one() {
    assert_eq!(
        sha256_hex(b"abc"),
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    );
}

#[test]
fn checkpoint_content_is_exact() {
    let (dir, path) = temp_log();
    drop(lt_log(&path));
    let loaded = load(&path);
    assert_eq!(
        loaded.source,
        ProjectionSource::Refold(RefoldReason::NoCheckpoint)
    );
    let ckpt = written(&loaded).to_owned();
    assert_eq!(
        ckpt,
        dir.path()
            .join("session.jsonl.userQuestions.checkpoint.json")
    );
    assert_eq!(ckpt, checkpoint_path(&path));

    let log = fs::read(&path).unwrap();
    let ends = line_ends(&log);
    let header_hash = sha256_hex(&log[..ends[0]]);
    let last_hash = sha256_hex(&log[ends[ends.len() - 2]..]);
    let expected = format!(
        concat!(
            r#"{{"key":"userQuestions","stateVersion":2,"log":{{"sessionId":"lt","headerHash":"{}","#,
            r#""eventCount":4,"byteLength":{},"lastRecordHash":"{}"}},"state":{{"inheritedEventCount":0,"#,
            r#""timed":true,"questions":{{"active":[{{"callId":"ask-timed","questions":[{{"id":"scope","#,
            r#""question":"Which scope?","options":[{{"label":"Tool only"}},{{"label":"Everything"}}]}}],"#,
            r#""state":"open"}}],"settled":[]}}}},"#,
            // The log read clean, so the document says what a writer opening it there needs.
            r#""open":{{"log":{{"lines":5,"unfinished":{{"calls":[{{"callId":"ask-timed","#,
            r#""name":"ask_user_question","seq":3,"line":5,"turn":1,"step":1}}],"#,
            r#""steps":[{{"turn":1,"step":1}}],"turns":[1],"unidentifiedCalls":[]}}}},"#,
            r#""host":{{"nextTurn":[],"nextStep":[],"lastTurn":1,"callIds":["ask-timed"]}}}}}}"#
        ),
        header_hash,
        log.len(),
        last_hash
    );
    assert_eq!(fs::read_to_string(&ckpt).unwrap(), expected);
    assert_eq!(names(dir.path()).len(), 2, "no temporary file left");
}

#[test]
fn l10_a_valid_checkpoint_resumes_the_fold() {
    let (_dir, path) = temp_log();
    let mut writer = lt_log(&path);
    let first = load(&path);
    written(&first);

    // Nothing new: the checkpoint covers everything and is not rewritten.
    let again = load(&path);
    assert_eq!(
        again.source,
        ProjectionSource::Checkpoint {
            byte_length: first.byte_length,
            event_count: 4
        }
    );
    assert!(matches!(again.checkpoint, CheckpointWrite::UpToDate));

    // New records after the checkpoint are folded on; the result equals a full refold.
    writer
        .append(&[ev(
            "tool/result",
            4,
            result(
                1,
                1,
                "ask-timed",
                r#"{"pending":true,"callId":"ask-timed"}"#,
            ),
        )])
        .unwrap();
    let resumed = load(&path);
    assert_eq!(
        resumed.source,
        ProjectionSource::Checkpoint {
            byte_length: first.byte_length,
            event_count: 4
        }
    );
    assert_eq!(
        resumed
            .state
            .continued(&user_questions::CallId::from("ask-timed"))
            .map(|a| a.state),
        Some(ActiveState::Continued)
    );
    written(&resumed);
    writer
        .append(&[ev(
            "user/message",
            5,
            reply("ask-timed", json!([{"id":"scope","selected":[]}])),
        )])
        .unwrap();
    let settled = load(&path);
    assert_eq!(
        settled.source,
        ProjectionSource::Checkpoint {
            byte_length: resumed.byte_length,
            event_count: 5
        }
    );
    assert_eq!(settled.state.view().settled.len(), 1);

    // A read-only load never writes.
    writer
        .append(&[ev("turn/end", 6, json!({"turn":1}))])
        .unwrap();
    let before = fs::read(checkpoint_path(&path)).unwrap();
    let read_only = load_projection(&path, CheckpointPolicy::ReadOnly).unwrap();
    assert!(matches!(
        read_only.checkpoint,
        CheckpointWrite::NotRequested
    ));
    assert_eq!(read_only.state, full_fold(&path).state);
    assert_eq!(fs::read(checkpoint_path(&path)).unwrap(), before);
}

#[test]
fn a_header_only_log_is_checkpointed_at_its_header() {
    let (_dir, path) = temp_log();
    let mut writer = LogWriter::create(&path, &session("empty")).unwrap();
    let first = load(&path);
    let content: Value = serde_json::from_slice(&fs::read(written(&first)).unwrap()).unwrap();
    assert_eq!(content["log"]["eventCount"], json!(0));
    assert_eq!(
        content["log"]["lastRecordHash"],
        content["log"]["headerHash"]
    );
    assert!(matches!(load(&path).checkpoint, CheckpointWrite::UpToDate));
    writer
        .append(&[ev(
            "request/header",
            0,
            ask_user_testkit::logs::timed_request_header(),
        )])
        .unwrap();
    let resumed = load(&path);
    assert!(matches!(
        resumed.source,
        ProjectionSource::Checkpoint { .. }
    ));
    assert!(resumed.state.timed());
}

/// A log with a checkpoint: the timed call is continued.
fn checkpointed_log() -> (tempfile::TempDir, PathBuf, String) {
    let (dir, path) = temp_log();
    let mut writer = lt_log(&path);
    writer
        .append(&[ev(
            "tool/result",
            4,
            result(
                1,
                1,
                "ask-timed",
                r#"{"pending":true,"callId":"ask-timed"}"#,
            ),
        )])
        .unwrap();
    drop(writer);
    written(&load(&path));
    let content = fs::read_to_string(checkpoint_path(&path)).unwrap();
    (dir, path, content)
}

/// Edits the checkpoint (or the log) of a checkpointed log, then expects the checkpoint to be
/// discarded as stale for `expected`, the log refolded to the full fold's result, and a fresh
/// checkpoint written that the next load uses.
#[track_caller]
fn check_stale(edit: impl FnOnce(&Path, &mut Value), expected: impl Fn(&StaleReason) -> bool) {
    let (_dir, path, content) = checkpointed_log();
    let mut doc: Value = serde_json::from_str(&content).unwrap();
    edit(&path, &mut doc);
    fs::write(checkpoint_path(&path), doc.to_string()).unwrap();
    let loaded = load(&path);
    match &loaded.source {
        ProjectionSource::Refold(RefoldReason::Stale(reason)) => {
            assert!(expected(reason), "unexpected reason: {reason:?}");
        }
        other => panic!("expected a stale checkpoint, got {other:?}"),
    }
    written(&loaded);
    assert!(matches!(
        load(&path).source,
        ProjectionSource::Checkpoint { .. }
    ));
}

#[test]
fn l9_stale_checkpoints_are_discarded_and_refolded() {
    check_stale(
        |_, doc| doc["stateVersion"] = json!(1),
        |r| matches!(r, StaleReason::StateVersion { found } if found == "1"),
    );
    check_stale(
        |_, doc| doc["stateVersion"] = json!(STATE_VERSION + 1),
        |r| matches!(r, StaleReason::StateVersion { .. }),
    );
    check_stale(
        |_, doc| doc["key"] = json!("somethingElse"),
        |r| matches!(r, StaleReason::Key { found } if found == "somethingElse"),
    );
    check_stale(
        |_, doc| doc["log"]["sessionId"] = json!("another-session"),
        |r| matches!(r, StaleReason::Log(AnchorMismatch::SessionId { found }) if found == "another-session"),
    );
    check_stale(
        |_, doc| doc["log"]["headerHash"] = json!(sha256_hex(b"another header")),
        |r| *r == StaleReason::Log(AnchorMismatch::HeaderHash),
    );
    check_stale(
        |_, doc| doc["log"]["lastRecordHash"] = json!(sha256_hex(b"another record")),
        |r| *r == StaleReason::Log(AnchorMismatch::LastRecordHash),
    );
    check_stale(
        |_, doc| doc["log"]["byteLength"] = json!(doc["log"]["byteLength"].as_u64().unwrap() + 1),
        |r| matches!(r, StaleReason::Log(AnchorMismatch::PastEnd { .. })),
    );
    check_stale(
        |_, doc| doc["log"]["byteLength"] = json!(doc["log"]["byteLength"].as_u64().unwrap() - 1),
        |r| matches!(r, StaleReason::Log(AnchorMismatch::NotAtRecordEnd { .. })),
    );
    check_stale(
        |_, doc| doc["log"]["byteLength"] = json!(3),
        |r| {
            matches!(
                r,
                StaleReason::Log(AnchorMismatch::NotAtRecordEnd { byte_length: 3 })
            )
        },
    );
    check_stale(
        |_, doc| doc["state"]["extra"] = json!(1),
        |r| matches!(r, StaleReason::State(_)),
    );
    check_stale(
        |_, doc| doc["state"]["questions"]["active"][0]["callId"] = json!(""),
        |r| matches!(r, StaleReason::State(_)),
    );
    check_stale(
        |_, doc| doc["surplus"] = json!(true),
        |r| matches!(r, StaleReason::Unreadable(_)),
    );
    check_stale(
        |_, doc| *doc = json!("not a checkpoint"),
        |r| matches!(r, StaleReason::Unreadable(_)),
    );
    check_stale(
        |_, doc| doc["log"]["eventCount"] = json!(-1),
        |r| matches!(r, StaleReason::Unreadable(_)),
    );
}

#[test]
fn l9_a_checkpoint_past_the_end_after_torn_tail_truncation() {
    let (_dir, path, _) = checkpointed_log();
    let log = fs::read(&path).unwrap();
    // The last record of the log, as the checkpoint saw it, turns out to be a torn write: the
    // log is cut inside it (e.g. a failed append rolled back) and a writer truncates it.
    fs::write(&path, &log[..log.len() - 20]).unwrap();
    let (writer, report) = LogWriter::open(&path).unwrap();
    assert!(report.torn_tail_saved_to.is_some());
    drop(writer);
    let loaded = load(&path);
    assert!(
        matches!(
            &loaded.source,
            ProjectionSource::Refold(RefoldReason::Stale(StaleReason::Log(
                AnchorMismatch::PastEnd { .. }
            )))
        ),
        "{:?}",
        loaded.source
    );
    assert_eq!(
        loaded
            .state
            .active(&user_questions::CallId::from("ask-timed"))
            .map(|a| a.state),
        Some(ActiveState::Open),
        "the pending result is gone, so the call is open again"
    );
}

#[test]
fn l9_a_rewritten_last_record_is_detected() {
    let (_dir, path, _) = checkpointed_log();
    let text = fs::read_to_string(&path).unwrap();
    // Same length, other content: the pending result becomes an answer.
    let edited = text.replace(
        r#"{\"pending\":true,\"callId\":\"ask-timed\"}"#,
        r#"{\"answers\":[],\"callId\":\"ask-timed\"}  "#,
    );
    assert_eq!(edited.len(), text.len());
    assert_ne!(edited, text);
    fs::write(&path, edited).unwrap();
    let loaded = load(&path);
    assert_eq!(
        loaded.source,
        ProjectionSource::Refold(RefoldReason::Stale(StaleReason::Log(
            AnchorMismatch::LastRecordHash
        )))
    );
    assert_eq!(loaded.state.view().settled.len(), 1);
}

#[test]
fn l9_a_checkpoint_of_another_log_is_foreign() {
    let (dir, path, content) = checkpointed_log();
    let other = dir.path().join("other.jsonl");
    let mut writer = LogWriter::create(&other, &session("other")).unwrap();
    writer
        .append(&[ev(
            "request/header",
            0,
            ask_user_testkit::logs::timed_request_header(),
        )])
        .unwrap();
    fs::write(checkpoint_path(&other), &content).unwrap();
    let loaded = load(&other);
    assert!(matches!(
        &loaded.source,
        ProjectionSource::Refold(RefoldReason::Stale(StaleReason::Log(AnchorMismatch::SessionId { found }))) if found == "lt"
    ));
    assert!(loaded.state.view().active.is_empty());
    drop(path);
}

#[test]
fn l9_a_checkpoint_ending_at_a_corrupt_line_is_not_a_record() {
    let (_dir, path, content) = checkpointed_log();
    append_raw(&path, b"garbage\n");
    let log = fs::read(&path).unwrap();
    let mut doc: Value = serde_json::from_str(&content).unwrap();
    doc["log"]["byteLength"] = json!(log.len());
    doc["log"]["lastRecordHash"] = json!(sha256_hex(b"garbage\n"));
    fs::write(checkpoint_path(&path), doc.to_string()).unwrap();
    let loaded = load(&path);
    assert!(
        matches!(
            &loaded.source,
            ProjectionSource::Refold(RefoldReason::Stale(StaleReason::Log(
                AnchorMismatch::NotARecord(CorruptReason::NotJson(_))
            )))
        ),
        "{:?}",
        loaded.source
    );
    // The fresh checkpoint ends at the last record, before the corrupt line.
    let fresh: Value = serde_json::from_slice(&fs::read(written(&loaded)).unwrap()).unwrap();
    assert_eq!(fresh["log"]["byteLength"], json!(log.len() - 8));
}

#[test]
fn l8_a_crash_between_temp_write_and_rename_leaves_the_old_checkpoint() {
    let (dir, path, old) = checkpointed_log();
    let old_position = load(&path).source;

    // The log grows, and a new checkpoint is staged (written and synced to its temporary file)
    // but never renamed into place: the process dies.
    let (mut writer, _) = LogWriter::open(&path).unwrap();
    writer
        .append(&[ev(
            "user/message",
            5,
            reply("ask-timed", json!([{"id":"scope","selected":[]}])),
        )])
        .unwrap();
    let state = full_fold(&path).state;
    let log = fs::read(&path).unwrap();
    let ends = line_ends(&log);
    let checkpoint = Checkpoint {
        anchor: LogAnchor {
            session_id: "lt".to_owned(),
            header_hash: sha256_hex(&log[..ends[0]]),
            event_count: 6,
            byte_length: log.len() as u64,
            last_record_hash: sha256_hex(&log[ends[ends.len() - 2]..]),
        },
        state,
        open: None,
    };
    let staged = stage_checkpoint(&path, checkpoint.to_json().unwrap().as_bytes()).unwrap();
    let temp = staged.temp_path().to_owned();
    drop(staged);
    assert!(temp.exists());

    // The old checkpoint is intact and still valid; the fold resumes from it.
    assert_eq!(fs::read_to_string(checkpoint_path(&path)).unwrap(), old);
    let loaded = load_projection(&path, CheckpointPolicy::ReadOnly).unwrap();
    assert_eq!(loaded.source, old_position);
    assert_eq!(loaded.state, full_fold(&path).state);
    assert_eq!(loaded.state.view().settled.len(), 1);

    // The next write removes the leftover temporary file.
    let refreshed = load(&path);
    written(&refreshed);
    assert!(!temp.exists());
    assert_eq!(
        names(dir.path()),
        [
            "session.jsonl",
            "session.jsonl.userQuestions.checkpoint.json"
        ]
    );
}

#[test]
fn checkpoint_write_and_commit_replace_atomically() {
    let (_dir, path, old) = checkpointed_log();
    let doc: Value = serde_json::from_str(&old).unwrap();
    let checkpoint = Checkpoint {
        anchor: LogAnchor {
            session_id: "lt".to_owned(),
            header_hash: doc["log"]["headerHash"].as_str().unwrap().to_owned(),
            event_count: doc["log"]["eventCount"].as_u64().unwrap(),
            byte_length: doc["log"]["byteLength"].as_u64().unwrap(),
            last_record_hash: doc["log"]["lastRecordHash"].as_str().unwrap().to_owned(),
        },
        state: full_fold(&path).state,
        open: Some(serde_json::from_value(doc["open"].clone()).unwrap()),
    };
    let content = checkpoint.to_json().unwrap();
    assert_eq!(content, old);
    assert_eq!(
        write_checkpoint(&path, content.as_bytes()).unwrap(),
        checkpoint_path(&path)
    );
    assert_eq!(fs::read_to_string(checkpoint_path(&path)).unwrap(), old);
}

#[test]
fn findings_after_a_checkpoint_carry_physical_line_numbers() {
    let (_dir, path, _) = checkpointed_log();
    append_raw(&path, b"not json\n");
    append_raw(&path, b"{\"type\":\"n\",\"seq\":9,\"data\":{}}\n");
    append_raw(
        &path,
        b"{\"type\":\"n\",\"seq\":10,\"data\":{\"t\":\"\xff\"}}\n",
    );
    append_raw(&path, b"{\"type\":\"torn");
    let loaded = load(&path);
    assert!(matches!(loaded.source, ProjectionSource::Checkpoint { .. }));
    let full = full_fold(&path);
    assert_eq!(loaded.corrupt_lines, full.report.corrupt_lines);
    assert_eq!(loaded.corrupt_lines[0].line, 7);
    assert_eq!(loaded.seq_gaps, full.report.seq_gaps);
    assert_eq!(
        loaded.seq_gaps,
        [SeqGap {
            line: 8,
            expected: 5,
            found: 9
        }]
    );
    assert_eq!(loaded.lossy_lines, full.report.lossy_lines);
    assert_eq!(loaded.lossy_lines[0].line, 9);
    assert!(loaded.torn_tail.is_some());
    // The fresh checkpoint ends at the last record; the torn tail is not covered.
    let fresh: Value = serde_json::from_slice(&fs::read(written(&loaded)).unwrap()).unwrap();
    assert_eq!(fresh["log"]["byteLength"], json!(loaded.byte_length));
    assert_eq!(fresh["log"]["eventCount"], json!(7));
}

#[test]
fn a_gap_before_a_record_without_seq_is_not_checkpointed() {
    let (dir, path) = temp_log();
    drop(LogWriter::create(&path, &session("mixed")).unwrap());
    append_raw(
        &path,
        b"{\"type\":\"a\",\"seq\":0,\"data\":{}}\n{\"type\":\"b\",\"seq\":5,\"data\":{}}\n{\"type\":\"c\",\"data\":{}}\n",
    );
    let loaded = load(&path);
    assert!(matches!(loaded.checkpoint, CheckpointWrite::NotRecoverable));
    assert_eq!(loaded.next_seq, 7);
    assert_eq!(names(dir.path()), ["session.jsonl"]);
}

#[test]
fn a_fork_resumes_with_its_inherited_cut() {
    let (_dir, path) = temp_log();
    let fork = session_log::NewSession {
        is_seeded: true,
        ..session("fork")
    };
    let mut writer = LogWriter::create(&path, &fork).unwrap();
    let args = scope_arguments();
    writer
        .append(&[
            ev(
                "request/header",
                0,
                ask_user_testkit::logs::timed_request_header(),
            ),
            ev(
                "tool/call",
                1,
                call(1, 1, "parent-call", "ask_user_question", &args),
            ),
        ])
        .unwrap();
    written(&load(&path));
    writer
        .append(&[
            ev("session/end-seed", 2, json!({"inherited":true})),
            ev(
                "request/header",
                3,
                ask_user_testkit::logs::timed_request_header(),
            ),
            ev(
                "tool/call",
                4,
                call(2, 1, "child-call", "ask_user_question", &args),
            ),
        ])
        .unwrap();
    let loaded = load(&path);
    assert!(matches!(loaded.source, ProjectionSource::Checkpoint { .. }));
    assert_eq!(loaded.state.inherited_event_count(), 2);
    let ids: Vec<&str> = loaded
        .state
        .view()
        .active
        .iter()
        .map(|a| a.call_id.as_str())
        .collect();
    assert_eq!(ids, ["child-call"]);
}

#[test]
fn l11_every_corpus_log_opens_read_only_without_findings() {
    let mut count = 0;
    for path in ask_user_testkit::logs::corpus_files() {
        let before = fs::read(&path).unwrap();
        let report =
            session_log::read_log(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert!(report.scan.corrupt_lines.is_empty(), "{}", path.display());
        assert!(report.scan.torn_tail.is_none(), "{}", path.display());
        assert_eq!(
            fs::read(&path).unwrap(),
            before,
            "read-only opens change nothing"
        );
        count += 1;
    }
    assert_eq!(count, 168);
}

#[test]
fn l10_every_corpus_log_resumes_to_its_full_fold() {
    let dir = tempfile::tempdir().unwrap();
    let mut count = 0;
    for source in ask_user_testkit::logs::corpus_files() {
        let log = dir.path().join(source.file_name().unwrap());
        let bytes = fs::read(&source).unwrap();
        let ends = line_ends(&bytes);
        // Checkpoint the first half, then let the log grow to its full length.
        let half = ends[ends.len() / 2];
        fs::write(&log, &bytes[..half]).unwrap();
        let first = load(&log);
        assert!(
            matches!(first.checkpoint, CheckpointWrite::Written(_)),
            "{}: {:?}",
            source.display(),
            first.checkpoint
        );
        fs::write(&log, &bytes).unwrap();
        let resumed = load(&log);
        assert!(
            matches!(resumed.source, ProjectionSource::Checkpoint { .. }),
            "{}: {:?}",
            source.display(),
            resumed.source
        );
        let full = full_fold(&log);
        assert_eq!(resumed.corrupt_lines, full.report.corrupt_lines);
        assert_eq!(resumed.seq_gaps, full.report.seq_gaps);
        count += 1;
    }
    assert!(count >= 100, "only {count} corpus logs");
}

#[test]
fn a_last_record_longer_than_a_read_block_is_hashed_whole() {
    let (_dir, path) = temp_log();
    let mut writer = lt_log(&path);
    let output = "line of tool output\n".repeat(20_000);
    writer
        .append(&[ev("tool/result", 4, result(1, 1, "bash-0", &output))])
        .unwrap();
    written(&load(&path));
    let log = fs::read(&path).unwrap();
    let ends = line_ends(&log);
    let long_record = &log[ends[ends.len() - 2]..];
    assert!(long_record.len() > 4 * 65_536);
    let doc: Value = serde_json::from_slice(&fs::read(checkpoint_path(&path)).unwrap()).unwrap();
    assert_eq!(doc["log"]["lastRecordHash"], json!(sha256_hex(long_record)));

    // Loading reads the long record backwards from byteLength, block by block, and agrees.
    writer
        .append(&[ev(
            "tool/result",
            5,
            result(
                1,
                1,
                "ask-timed",
                r#"{"pending":true,"callId":"ask-timed"}"#,
            ),
        )])
        .unwrap();
    let resumed = load(&path);
    assert!(matches!(
        resumed.source,
        ProjectionSource::Checkpoint { event_count: 5, .. }
    ));
    assert!(
        resumed
            .state
            .continued(&user_questions::CallId::from("ask-timed"))
            .is_some()
    );
}
