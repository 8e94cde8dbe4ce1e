//! Session-log fixtures: real logs in temporary directories, events of the shapes SPEC §7.5
//! gives (with fixed times, so bytes are reproducible), and the full fold every faster path must
//! equal.

use std::fs;
use std::io::BufReader;
use std::path::{Path, PathBuf};

use ask_user_host::{CheckpointPolicy, ProjectionLoad};
use serde_json::{Value, json};
use session_log::{JsonlStore, LogEvent, LogWriter, NewSession, SessionWriter, StoreError};
use user_questions_projection::{FoldedLog, fold_log};

/// The fixed `time` of fixture events, so that log bytes are reproducible.
pub const TIME: i64 = 1_782_000_000_000;

/// A temporary directory and a log path inside it.
pub fn temp_log() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("session.jsonl");
    (dir, path)
}

/// A session whose header bytes are fixed.
pub fn session(id: &str) -> NewSession {
    let mut session = NewSession::new(id);
    session.created_at = 1_781_999_999_000;
    session
}

/// An event with the fixed time.
pub fn ev(event_type: &str, seq: u64, data: Value) -> LogEvent {
    LogEvent::from_data(event_type, seq, &data)
        .unwrap()
        .at(TIME)
}

/// The `tools` entry of the timed `ask_user_question` schema.
pub fn timed_schema() -> Value {
    json!({"name":"ask_user_question","description":"Ask the person.","parameters":{"type":"object","properties":{"questions":{"type":"array"},"timeout":{"type":"integer"}}}})
}

/// A `request/header` data object offering the timed schema.
pub fn timed_request_header() -> Value {
    json!({"header":{"config":{"provider":"p","model":"m"},"tools":[timed_schema()]},"reason":"initial"})
}

/// The arguments text of an `ask_user_question` call with the `Q_SCOPE` question.
pub fn scope_arguments() -> String {
    json!({"questions":[{"id":"scope","question":"Which scope?","options":[{"label":"Tool only"},{"label":"Everything"}]}]}).to_string()
}

/// A `tool/call` data object.
pub fn call(turn: u64, step: u64, call_id: &str, name: &str, arguments: &str) -> Value {
    json!({"turn":turn,"step":step,"callId":call_id,"name":name,"arguments":arguments})
}

/// A newest-layout `tool/result` data object with one text block.
pub fn result(turn: u64, step: u64, call_id: &str, text: &str) -> Value {
    json!({"turn":turn,"step":step,"message":{"id":format!("m-{call_id}"),"role":"tool","toolCallId":call_id,"content":[{"type":"text","text":text}],"isError":false}})
}

/// A late-reply `user/message` data object for `call_id`.
pub fn reply(call_id: &str, answers: Value) -> Value {
    json!({"id":format!("reply-{call_id}"),"role":"user","source":{"kind":"user-question-reply","callId":call_id,"outcome":"answered"},"content":[{"type":"text","text":json!({"answers":answers}).to_string()}]})
}

/// Fixture LT (SPEC §12): turn 1, step 1, the timed header, and the timed call `ask-timed`
/// without a result, as a crash leaves it. Returns the writer (still holding the lock).
pub fn lt_log(path: &Path) -> LogWriter {
    let mut writer = LogWriter::create(path, &session("lt")).unwrap();
    writer
        .append(&[
            ev("turn/start", 0, json!({"turn":1})),
            ev("step/start", 1, json!({"turn":1,"step":1})),
            ev("request/header", 2, timed_request_header()),
            ev(
                "tool/call",
                3,
                call(1, 1, "ask-timed", "ask_user_question", &scope_arguments()),
            ),
        ])
        .unwrap();
    writer
}

/// A finished, realistic log of two turns: a timed question answered pending and then late, a
/// bash call with its result, and closed steps and turns. Returns the writer.
pub fn finished_log(path: &Path) -> LogWriter {
    let mut writer = lt_log(path);
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
            ev("step/start", 6, json!({"turn":1,"step":2})),
            ev(
                "tool/call",
                7,
                call(1, 2, "bash-1", "bash", r#"{"command":"ls"}"#),
            ),
            ev("tool/result", 8, result(1, 2, "bash-1", "Cargo.toml\nsrc")),
            ev("step/end", 9, json!({"turn":1,"step":2})),
            ev(
                "turn/end",
                10,
                json!({"turn":1,"reason":{"kind":"completed"}}),
            ),
            ev("turn/start", 11, json!({"turn":2})),
            ev(
                "user/message",
                12,
                reply(
                    "ask-timed",
                    json!([{"id":"scope","selected":["Tool only"]}]),
                ),
            ),
            ev(
                "turn/end",
                13,
                json!({"turn":2,"reason":{"kind":"completed"}}),
            ),
        ])
        .unwrap();
    writer
}

/// The projection of the log file at `path` through the JSONL store of its directory: what a
/// command given a log's path does.
pub fn load_file_projection(
    path: &Path,
    policy: CheckpointPolicy,
) -> Result<ProjectionLoad, StoreError> {
    let (store, name) = JsonlStore::for_file(path)?;
    ask_user_host::load_projection(&store, &name, policy)
}

/// The full fold of the log at `path`: what every faster path must equal.
pub fn full_fold(path: &Path) -> FoldedLog {
    fold_log(BufReader::new(fs::File::open(path).unwrap())).unwrap()
}

/// Appends raw bytes to a file (to plant corrupt lines and torn tails).
pub fn append_raw(path: &Path, bytes: &[u8]) {
    use std::io::Write;
    let mut file = fs::OpenOptions::new().append(true).open(path).unwrap();
    file.write_all(bytes).unwrap();
}

/// The reference corpus kept in the repository's test data (`tests/data/dsh-sessions`): every
/// `*.jsonl` file, sorted. Fails when the corpus is not there.
pub fn corpus_files() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/dsh-sessions");
    let mut files: Vec<PathBuf> = fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("the corpus at {}: {e}", dir.display()))
        .map(|entry| entry.expect("a corpus entry").path())
        .filter(|path| path.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    files.sort();
    assert!(files.len() >= 160, "the corpus is there: {}", files.len());
    files
}

/// The names of the files in `dir`, sorted.
pub fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// The byte offsets just past each line end in `bytes`.
pub fn line_ends(bytes: &[u8]) -> Vec<usize> {
    bytes
        .iter()
        .enumerate()
        .filter(|(_, b)| **b == b'\n')
        .map(|(i, _)| i + 1)
        .collect()
}

/// The events of one turn that asks the timed question `call_id` (the scope question of
/// [`scope_arguments`]) and ends with it pending: afterwards the question is continued.
pub fn pending_turn(first_seq: u64, turn: u64, call_id: &str) -> Vec<LogEvent> {
    let s = first_seq;
    vec![
        ev("turn/start", s, json!({"turn":turn})),
        ev("step/start", s + 1, json!({"turn":turn,"step":1})),
        ev("request/header", s + 2, timed_request_header()),
        ev(
            "tool/call",
            s + 3,
            call(turn, 1, call_id, "ask_user_question", &scope_arguments()),
        ),
        ev(
            "tool/result",
            s + 4,
            result(
                turn,
                1,
                call_id,
                &format!(r#"{{"pending":true,"callId":"{call_id}"}}"#),
            ),
        ),
        ev("step/end", s + 5, json!({"turn":turn,"step":1})),
        ev(
            "turn/end",
            s + 6,
            json!({"turn":turn,"reason":{"kind":"completed"}}),
        ),
    ]
}

/// Appends one [`pending_turn`] per call id to `writer`: one continued question each.
pub fn pending_turns(writer: &mut dyn SessionWriter, calls: &[&str]) {
    for (index, call_id) in calls.iter().enumerate() {
        let events = pending_turn(writer.next_seq(), index as u64 + 1, call_id);
        writer.append(&events).unwrap();
    }
}

/// Creates session `name` in `store` with one [`pending_turn`] per call id: one continued
/// question each.
///
/// # Panics
///
/// When the store refuses (a test fixture stops at the first failure).
pub fn create_pending(store: &dyn session_log::SessionStore, name: &str, calls: &[&str]) {
    let mut writer = store
        .create(name, &session_log::NewSession::new(name))
        .unwrap();
    pending_turns(writer.as_mut(), calls);
}
