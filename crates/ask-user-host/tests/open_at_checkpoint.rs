//! Opening a log for write at its checkpoint (SPEC §9.6, issue: the checkpoint end to end): the
//! host reads only the lines after the checkpoint, and the session it gets is the one a full open
//! gives: the same open report (what is unfinished, where the log ends, the findings), the same
//! resume repair, projection, inbox, next turn and call ids. Checked on every corpus log and on
//! synthetic logs (a queued reply in the inbox, open calls, corrupt lines, a torn tail), cut at
//! several record boundaries; and every checkpoint that does not fit means a full open.
// Test code stops at its first broken expectation: unwrap and expect are assertions here.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use ask_user_host::{
    CHECKPOINT_LAG, CheckpointPolicy, HostError, HostRuntime, SessionOptions, load_projection,
};
use ask_user_testkit::logs::{append_raw, call, corpus_files, ev, line_ends, result, session};
use serde_json::{Value, json};
use session_log::{
    InboxTarget, JsonlStore, LogWriter, MemoryStore, Record, SessionStore, checkpoint_path,
};
use user_questions::{CallId, CancellationToken, UserMessage};

/// Everything a session opened from a log shows, as comparable text (every type is `Debug`).
#[derive(Debug, PartialEq)]
struct Session {
    report: String,
    repair: String,
    projection: String,
    inbox: Vec<UserMessage>,
    restored_inbox: usize,
    next_turn: Value,
    duplicate_refused: Option<bool>,
    log_after: Vec<u8>,
}

/// Opens `name` in `store` as a host does and records what the session shows; whether the open
/// resumed at the checkpoint.
fn open(store: &Arc<dyn SessionStore>, name: &str, prefix_call: Option<&str>) -> (Session, bool) {
    let runtime = HostRuntime::with_registry(
        store.clone(),
        None,
        user_questions::InMemoryAgentRegistry::new(),
    )
    .unwrap();
    let (host, resumed) = runtime.open(name, SessionOptions::default()).unwrap();
    let mut report = resumed.report.unwrap();
    let resumed_at = report.resumed_at.take().is_some();
    // The torn tail's sidecar is named after the log.
    report.torn_tail_saved_to = report.torn_tail_saved_to.map(|sidecar| {
        let file = sidecar.file_name().unwrap().to_string_lossy().into_owned();
        PathBuf::from(file.replacen(name, "LOG", 1))
    });
    let repair = resumed.repair.unwrap();
    let inbox = host.host_agent().next_turn();
    let duplicate_refused = prefix_call.map(|id| {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let outcome =
            runtime.block_on(host.call_tool(&CallId::from(id), "{}", CancellationToken::new()));
        matches!(outcome, Err(HostError::DuplicateCallId(_)))
    });
    // The next turn's number; what it claims (the restored inbox) is compared above.
    host.begin_turn().unwrap();
    let log_after = log_bytes(&**store, name);
    let last = log_after[..log_after.len() - 1]
        .rsplit(|b| *b == b'\n')
        .next()
        .unwrap();
    let next_turn: Value = serde_json::from_slice(last).unwrap();
    let session = Session {
        report: format!("{report:?}"),
        repair: format!("{repair:?}"),
        projection: format!("{:?}", host.projection()),
        inbox,
        restored_inbox: resumed.restored_inbox,
        next_turn: next_turn["data"].clone(),
        duplicate_refused,
        // Without the repair's fresh ids and times, the lines the open appended are the same.
        log_after: strip_fresh(&log_after),
    };
    (session, resumed_at)
}

fn log_bytes(store: &dyn SessionStore, name: &str) -> Vec<u8> {
    /// The records' lines, read back through a scan.
    struct Raw(Vec<u8>);
    impl session_log::LogVisitor for Raw {
        fn line(&mut self, scanned: &session_log::Scanned<'_>) {
            if let session_log::Scanned::Record(record) = scanned {
                self.0.extend_from_slice(record.raw);
            }
        }
    }
    if let Some(path) = store.file_path(name) {
        return fs::read(path).unwrap();
    }
    let mut raw = Raw(Vec::new());
    store.read(name, &mut raw).unwrap();
    raw.0
}

/// The log with every `"time"` and every `"msg-…"` id blanked: what the repair writes fresh.
fn strip_fresh(bytes: &[u8]) -> Vec<u8> {
    let text = String::from_utf8_lossy(bytes);
    let mut out = String::new();
    for line in text.split_inclusive('\n') {
        match serde_json::from_str::<Value>(line) {
            Ok(mut value) => {
                if let Some(object) = value.as_object_mut() {
                    object.remove("time");
                    if let Some(data) = object.get_mut("data").and_then(Value::as_object_mut)
                        && data
                            .get("messageId")
                            .and_then(Value::as_str)
                            .is_some_and(|id| id.starts_with("msg-"))
                    {
                        data.remove("messageId");
                    }
                }
                out.push_str(&value.to_string());
                out.push('\n');
            }
            Err(_) => out.push_str(line),
        }
    }
    out.into_bytes()
}

/// The first `tool/call` id in `bytes`, if any.
fn first_call_id(bytes: &[u8]) -> Option<String> {
    String::from_utf8_lossy(bytes).lines().find_map(|line| {
        let value: Value = serde_json::from_str(line).ok()?;
        (value["type"] == "tool/call")
            .then(|| value["data"]["callId"].as_str().map(str::to_owned))?
    })
}

/// Checks one log cut at `cut` (a line end): a checkpoint of the prefix, then the rest appended,
/// opened at the checkpoint, against the whole log opened from its start. Returns whether the
/// open resumed.
fn check(bytes: &[u8], cut: usize, what: &str) -> bool {
    let dir = tempfile::tempdir().unwrap();
    let resumed_path = dir.path().join("resumed.jsonl");
    let full_path = dir.path().join("full.jsonl");
    fs::write(&resumed_path, &bytes[..cut]).unwrap();
    let store = JsonlStore::new(dir.path());
    load_projection(&store, "resumed.jsonl", CheckpointPolicy::Refresh).unwrap();
    let checkpoint: Value =
        serde_json::from_slice(&fs::read(checkpoint_path(&resumed_path)).unwrap()).unwrap();
    append_raw(&resumed_path, &bytes[cut..]);
    fs::write(&full_path, bytes).unwrap();

    let prefix_call = first_call_id(&bytes[..cut]);
    let store: Arc<dyn SessionStore> = Arc::new(JsonlStore::new(dir.path()));
    let (resumed, did_resume) = open(&store, "resumed.jsonl", prefix_call.as_deref());
    let (full, full_resumed) = open(&store, "full.jsonl", prefix_call.as_deref());
    assert!(!full_resumed, "{what}: no checkpoint, no resume");
    assert_eq!(resumed, full, "{what} cut at byte {cut}");
    // The open resumes exactly when the checkpoint says a writer can.
    assert_eq!(
        did_resume,
        checkpoint.get("open").is_some(),
        "{what} cut at byte {cut}: {checkpoint}"
    );
    did_resume
}

/// Record boundaries to cut `bytes` at: after the header, a third, two thirds, the end.
fn cuts(bytes: &[u8]) -> Vec<usize> {
    let complete = line_ends(bytes);
    let mut cuts: Vec<usize> = [0, complete.len() / 3, 2 * complete.len() / 3]
        .into_iter()
        .filter_map(|i| complete.get(i).copied())
        .collect();
    cuts.extend(complete.last());
    cuts.dedup();
    cuts
}

#[test]
fn every_corpus_log_opens_at_its_checkpoint_as_it_opens_from_its_start() {
    let mut resumed = 0;
    let mut checks = 0;
    for path in corpus_files() {
        let bytes = fs::read(&path).unwrap();
        for cut in cuts(&bytes) {
            checks += 1;
            if check(&bytes, cut, &path.display().to_string()) {
                resumed += 1;
            }
        }
    }
    assert!(
        resumed * 10 >= checks * 9,
        "{resumed} of {checks} opens resumed"
    );
}

/// A synthetic log with what the open state carries: a queued late reply and a claimed one in the
/// inbox, a finished and an unfinished call, a call without an id, open steps and turns.
fn synthetic() -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    let mut writer = LogWriter::create(&path, &session("s")).unwrap();
    let reply = |id: &str| UserMessage::user_text(id, format!("reply {id}"));
    let events = vec![
        ev("turn/start", 0, json!({"turn": 1})),
        ev("step/start", 1, json!({"turn": 1, "step": 1})),
        ev("tool/call", 2, call(1, 1, "c1", "ask_user_question", "{}")),
        ev("tool/result", 3, result(1, 1, "c1", "done")),
        Record::inbox_splice(InboxTarget::NextTurn, 0, 0, vec![reply("m1"), reply("m2")])
            .into_event(4)
            .unwrap(),
        Record::inbox_splice(InboxTarget::NextTurn, 0, 1, Vec::new())
            .into_event(5)
            .unwrap(),
        ev("step/end", 6, json!({"turn": 1, "step": 1})),
        ev(
            "turn/end",
            7,
            json!({"turn": 1, "reason": {"kind": "completed"}}),
        ),
        ev("turn/start", 8, json!({"turn": 2})),
        ev("step/start", 9, json!({"turn": 2, "step": 1})),
        ev("tool/call", 10, call(2, 1, "c2", "shell", "{}")),
        ev(
            "tool/call",
            11,
            json!({"turn": 2, "step": 1, "name": "shell"}),
        ),
        Record::inbox_splice(InboxTarget::NextStep, 0, 0, vec![reply("m3")])
            .into_event(12)
            .unwrap(),
        ev("tool/call", 13, call(2, 1, "c3", "ask_user_question", "{}")),
        ev("tool/result", 14, result(2, 1, "c3", "done")),
    ];
    writer.append(&events).unwrap();
    drop(writer);
    fs::read(&path).unwrap()
}

#[test]
fn a_synthetic_log_opens_at_every_record_boundary_as_from_its_start() {
    let bytes = synthetic();
    let ends: Vec<usize> = line_ends(&bytes);
    for &cut in &ends {
        assert!(check(&bytes, cut, "synthetic"), "cut at {cut} resumed");
    }
    // A torn tail after the checkpoint is saved and cut as a full open does.
    let mut torn = bytes.clone();
    torn.extend_from_slice(br#"{"type":"turn/start","da"#);
    assert!(check(
        &torn,
        ends[ends.len() / 2],
        "torn tail after the checkpoint"
    ));
}

#[test]
fn a_log_with_findings_before_the_checkpoint_is_always_opened_from_its_start() {
    let bytes = synthetic();
    let ends = line_ends(&bytes);
    // A corrupt line, a lossy line and a seq gap, each before the cut.
    for bad in [
        &b"{not json\n"[..],
        &b"{\"type\":\"x\",\"data\":{\"t\":\"\xff\"}}\n"[..],
        &b"{\"type\":\"x\",\"seq\":90,\"data\":{}}\n"[..],
    ] {
        let mut dirty = bytes[..ends[3]].to_vec();
        dirty.extend_from_slice(bad);
        dirty.extend_from_slice(&bytes[ends[3]..]);
        let cut = line_ends(&dirty)[8];
        assert!(!check(&dirty, cut, "a finding before the cut"));
    }
    // A header with invalid UTF-8 is a lossy line no visitor sees as a line.
    let header_end = ends[0];
    let mut lossy_header = bytes[..header_end - 2].to_vec();
    lossy_header.extend_from_slice(b",\"cwd\":\"\xff\"}\n");
    lossy_header.extend_from_slice(&bytes[header_end..]);
    let cut = line_ends(&lossy_header)[5];
    assert!(!check(&lossy_header, cut, "a lossy header"));
    // After the cut, the finding is in the part the resumed open reads and reports.
    let mut dirty = bytes.clone();
    dirty.extend_from_slice(b"{not json\n");
    dirty.extend_from_slice(br#"{"type":"turn/start","data":{"turn":3}}"#);
    dirty.push(b'\n');
    assert!(check(&dirty, ends[5], "a finding after the cut"));
}

/// A log and its checkpoint (with an open state), in a directory of its own.
fn checkpointed() -> (tempfile::TempDir, PathBuf, Value) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    fs::write(&path, synthetic()).unwrap();
    let store = JsonlStore::new(dir.path());
    load_projection(&store, "s.jsonl", CheckpointPolicy::Refresh).unwrap();
    let doc: Value = serde_json::from_slice(&fs::read(checkpoint_path(&path)).unwrap()).unwrap();
    assert!(doc.get("open").is_some());
    (dir, path, doc)
}

fn open_resumes(dir: &Path) -> bool {
    let store: Arc<dyn SessionStore> = Arc::new(JsonlStore::new(dir));
    open(&store, "s.jsonl", None).1
}

/// A change to a checkpoint document or to its log.
type Edit = fn(&mut Value, &Path);

#[test]
fn a_checkpoint_that_does_not_fit_means_a_full_open() {
    let full = {
        let (dir, path, _) = checkpointed();
        fs::remove_file(checkpoint_path(&path)).unwrap();
        let store: Arc<dyn SessionStore> = Arc::new(JsonlStore::new(dir.path()));
        open(&store, "s.jsonl", Some("c1")).0
    };
    let edits: [(&str, Edit); 8] = [
        ("another last record", |doc, _| {
            doc["log"]["lastRecordHash"] = json!("00");
        }),
        ("past the end", |doc, _| {
            doc["log"]["byteLength"] = json!(1_u64 << 40);
        }),
        ("the log rewritten", |_, path| {
            let bytes = fs::read(path).unwrap();
            let rewritten = String::from_utf8(bytes)
                .unwrap()
                .replace("\"c3\"", "\"c9\"");
            fs::write(path, rewritten).unwrap();
        }),
        ("a call past the anchor", |doc, _| {
            doc["open"]["log"]["unfinished"]["calls"][0]["seq"] = json!(1000);
        }),
        ("a line count before a call", |doc, _| {
            doc["open"]["log"]["lines"] = json!(2);
        }),
        ("a call listed twice", |doc, _| {
            let call = doc["open"]["log"]["unfinished"]["calls"][0].clone();
            doc["open"]["log"]["unfinished"]["calls"]
                .as_array_mut()
                .unwrap()
                .push(call);
        }),
        ("an unknown member", |doc, _| {
            doc["open"]["host"]["extra"] = json!(1);
        }),
        ("an open state of the wrong shape", |doc, _| {
            doc["open"] = json!([1, 2]);
        }),
    ];
    for (what, edit) in edits {
        let (dir, path, mut doc) = checkpointed();
        edit(&mut doc, &path);
        fs::write(checkpoint_path(&path), doc.to_string()).unwrap();
        let rewritten = what == "the log rewritten";
        assert!(!open_resumes(dir.path()), "{what}: opened from its start");
        if !rewritten {
            // Opened again (the open wrote a fresh checkpoint): the same session as a full open.
            let store: Arc<dyn SessionStore> = Arc::new(JsonlStore::new(dir.path()));
            fs::write(&path, synthetic()).unwrap();
            fs::remove_file(checkpoint_path(&path)).unwrap();
            assert_eq!(open(&store, "s.jsonl", Some("c1")).0, full, "{what}");
        }
    }
}

#[test]
fn a_header_that_no_longer_reads_fails_the_open_as_without_a_checkpoint() {
    let (dir, path, _) = checkpointed();
    let bytes = fs::read(&path).unwrap();
    let header_end = line_ends(&bytes)[0];
    let mut broken = b"{not a header}\n".to_vec();
    broken.extend_from_slice(&bytes[header_end..]);
    fs::write(&path, &broken).unwrap();
    let store: Arc<dyn SessionStore> = Arc::new(JsonlStore::new(dir.path()));
    let runtime =
        HostRuntime::with_registry(store, None, user_questions::InMemoryAgentRegistry::new())
            .unwrap();
    let error = runtime
        .open("s.jsonl", SessionOptions::default())
        .err()
        .expect("no header, no session");
    assert_eq!(error.code(), "LOG_HEADER", "{error}");
}

#[test]
fn the_memory_store_opens_at_the_checkpoint_too() {
    let bytes = synthetic();
    let ends = line_ends(&bytes);
    let cut = ends[6];
    let make = |with_checkpoint: bool| {
        let store = MemoryStore::new();
        store.insert_bytes("s", bytes[..cut].to_vec());
        if with_checkpoint {
            load_projection(&store, "s", CheckpointPolicy::Refresh).unwrap();
        }
        store.insert_bytes("s", bytes.clone());
        Arc::new(store) as Arc<dyn SessionStore>
    };
    let (resumed, did_resume) = open(&make(true), "s", Some("c1"));
    let (full, full_resumed) = open(&make(false), "s", Some("c1"));
    assert!(did_resume && !full_resumed);
    assert_eq!(resumed, full);
}

#[test]
fn a_host_rewrites_its_checkpoint_only_once_the_log_has_grown_past_the_lag() {
    let (dir, path, _) = checkpointed();
    let written = || fs::read(checkpoint_path(&path)).unwrap();
    let store: Arc<dyn SessionStore> = Arc::new(JsonlStore::new(dir.path()));
    let runtime =
        HostRuntime::with_registry(store, None, user_questions::InMemoryAgentRegistry::new())
            .unwrap();
    let before = written();
    let (host, resumed) = runtime.open("s.jsonl", SessionOptions::default()).unwrap();
    assert!(resumed.report.unwrap().resumed_at.is_some());
    // The open repaired the log (a few hundred bytes): the checkpoint stays.
    assert_eq!(written(), before);
    assert!(!host.checkpoint_if_behind(CHECKPOINT_LAG).unwrap());
    assert_eq!(written(), before);
    // Past the lag, it is rewritten, and then up to date.
    let text = "x".repeat(usize::try_from(CHECKPOINT_LAG).unwrap());
    host.begin_turn().unwrap();
    host.begin_step().unwrap();
    host.assistant_text(&text).unwrap();
    assert!(host.checkpoint_if_behind(CHECKPOINT_LAG).unwrap());
    assert_ne!(written(), before);
    assert!(!host.checkpoint_if_behind(CHECKPOINT_LAG).unwrap());
    drop(host);
    // The next open resumes at the fresh checkpoint, past the long line.
    let store: Arc<dyn SessionStore> = Arc::new(JsonlStore::new(dir.path()));
    assert!(open(&store, "s.jsonl", None).1);
}
