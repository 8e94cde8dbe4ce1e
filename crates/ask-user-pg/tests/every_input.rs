//! Every input the file store takes, the database takes too: U+0000, lone surrogate escapes,
//! every control character, the escape's own mark and 4 KiB texts, in questions, option labels,
//! custom answers, call ids, a session's header and log lines, are stored, listed, answered and
//! exported byte for byte, with the JSONL store beside it as the reference. Against a real
//! `PostgreSQL` server (`ASK_USER_PG_URL`).
// Test code stops at its first broken expectation.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::BufReader;
use std::path::Path;

use ask_user_host::{HostRuntime, SessionOptions};
use ask_user_pg::{PgStore, QuestionState, admit_answers};
use ask_user_testkit::logs::{TIME, call, ev, result, session, timed_request_header};
use proptest::prelude::*;
use serde_json::{Value, json};
use session_log::{JsonlStore, LogEvent, SessionStore};
use user_questions::{AnswerBatch, AnswerItem, CallId, Provenance, Question, QuestionLimits};

/// In a generated text: spliced into the call's `arguments` JSON text as the lone surrogate
/// escape `\ud800` (the projection reads it as U+FFFD, in both stores alike).
const NESTED_SURROGATE: char = '\u{E000}';

/// One generated session: its header's texts, its timed question and the answer it gets.
#[derive(Clone, Debug)]
struct Case {
    /// `cwd`, `origin`, `agentPreset` and `parentSession` of the header.
    header: [String; 4],
    call_id: String,
    question: String,
    chip: String,
    labels: Vec<String>,
    pick: usize,
    custom: Option<String>,
    /// A text put in a log line of its own (with lone surrogate escapes in the line itself).
    note: String,
}

/// Every C0 and C1 control character, DEL, and the characters an escape could trip on.
fn every_control() -> String {
    (0u32..0x20)
        .chain(0x7f..0xa0)
        .filter_map(char::from_u32)
        .chain(['\u{FDD0}', '\u{FFFE}', '\u{2028}', '\u{2029}', '\u{FEFF}'])
        .collect()
}

/// The events of one turn asking `case`'s question, ended with it pending, and a line of its
/// own holding `case.note` beside lone surrogate escapes.
fn events(case: &Case) -> Vec<LogEvent> {
    let options: Vec<Value> = case.labels.iter().map(|l| json!({"label": l})).collect();
    let question =
        json!({"id": "q", "question": case.question, "header": case.chip, "options": options});
    let arguments = json!({"questions": [question]})
        .to_string()
        .replace(NESTED_SURROGATE, "\\ud800");
    let pending = json!({"pending": true, "callId": case.call_id}).to_string();
    let note = format!(
        r#"{{"turn":1,"text":{},"raw":"\ud800 \udfff \udc00\ud800 \u0000 \u001f"}}"#,
        json!(case.note)
    );
    let note = serde_json::value::RawValue::from_string(note).unwrap();
    vec![
        ev("turn/start", 0, json!({"turn": 1})),
        ev("step/start", 1, json!({"turn": 1, "step": 1})),
        ev("request/header", 2, timed_request_header()),
        ev(
            "tool/call",
            3,
            call(1, 1, &case.call_id, "ask_user_question", &arguments),
        ),
        ev("tool/result", 4, result(1, 1, &case.call_id, &pending)),
        ev("step/end", 5, json!({"turn": 1, "step": 1})),
        LogEvent::new("note/test", 6, note).at(TIME),
        ev(
            "turn/end",
            7,
            json!({"turn": 1, "reason": {"kind": "completed"}}),
        ),
    ]
}

/// `bytes` with every `"time":<digits>` read as `"time":0` (the time of the lines admission
/// appends is the clock's).
fn timeless(bytes: &[u8]) -> Vec<u8> {
    const KEY: &[u8] = b"\"time\":";
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i..].starts_with(KEY) {
            out.extend_from_slice(KEY);
            i += KEY.len();
            let digits = bytes[i..].iter().take_while(|b| b.is_ascii_digit()).count();
            if digits > 0 {
                out.push(b'0');
                i += digits;
            }
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    out
}

fn export(store: &PgStore, name: &str) -> Vec<u8> {
    let mut bytes = Vec::new();
    store.export(name, &mut bytes).unwrap();
    bytes
}

/// The questions of the one continued call of the log at `path`, as the file store's fold reads
/// them.
fn file_questions(path: &Path) -> Vec<Question> {
    let folded = ask_user_testkit::logs::full_fold(path);
    let view = folded.state.view();
    assert_eq!(view.active.len(), 1, "one continued question: {view:?}");
    view.active[0].questions.clone()
}

/// Runs `case` through both stores as session `name`: the same appends, the listing, an import
/// of the file, the same answer admitted, and the exports compared with the file.
fn both_stores(store: &PgStore, name: &str, case: &Case) {
    let dir = tempfile::tempdir().unwrap();
    let files = JsonlStore::new(dir.path());
    let mut header = session(name);
    header.cwd = Some(case.header[0].clone());
    header.origin = Some(case.header[1].clone());
    header.agent_preset = Some(case.header[2].clone());
    header.parent_session = Some(case.header[3].clone());
    let events = events(case);
    for target in [&files as &dyn SessionStore, store] {
        let mut writer = target.create(name, &header).unwrap();
        writer.append(&events).unwrap();
    }
    let path = files.path(name);
    let file = std::fs::read(&path).unwrap();
    assert_eq!(export(store, name), file, "the same bytes before answering");

    // Listed as the file store's fold lists it.
    let asked = file_questions(&path);
    let listed = store.questions(Some(name)).unwrap();
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0].call_id.as_str(), case.call_id);
    assert_eq!(listed[0].state, QuestionState::Continued);
    assert_eq!(listed[0].questions, asked);

    // Imported, the file is the same session: listed, exported byte for byte.
    let copy = format!("{name}-copy");
    let report = store
        .import(&copy, &mut BufReader::new(file.as_slice()))
        .unwrap();
    assert_eq!(report.open_warning, None);
    assert_eq!(report.corrupt, 0);
    assert_eq!(export(store, &copy), file, "imported byte for byte");
    assert_eq!(store.questions(Some(&copy)).unwrap()[0].questions, asked);

    // The same answer in both, admitted the same way.
    let label = asked[0].options()[case.pick % asked[0].options().len()]
        .label
        .clone();
    let mut item = AnswerItem::selected("q", [label]);
    item.custom.clone_from(&case.custom);
    let batch = AnswerBatch::new([item]);
    let who = Provenance::human("test");
    let call_id = CallId::from(case.call_id.as_str());
    let limits = QuestionLimits::default();
    let pg_runtime = HostRuntime::new(store.clone(), None).unwrap();
    for session in [name, copy.as_str()] {
        store
            .record_answer(session, &call_id, &batch, &who, &limits)
            .unwrap();
        let admitted = admit_answers(&pg_runtime, store, session).unwrap();
        assert_eq!(admitted.admitted, 1, "{session}: {admitted:?}");
        assert!(store.questions(Some(session)).unwrap().is_empty());
    }
    let answer_id = {
        // The message id admission gave the reply: the ledger answer's.
        let bytes = export(store, name);
        let text = String::from_utf8_lossy(&bytes).into_owned();
        let line = text
            .lines()
            .rev()
            .find(|l| l.contains("\"user/message\""))
            .unwrap()
            .to_owned();
        let line: Value = serde_json::from_str(&line).unwrap();
        line["data"]["id"].as_str().unwrap().to_owned()
    };
    {
        let runtime = HostRuntime::new(files.clone(), None).unwrap();
        let (host, _) = runtime.open(name, SessionOptions::named(name)).unwrap();
        host.late_answers()
            .queue_as(&host.agent(), &call_id, batch.clone(), who, answer_id)
            .unwrap();
        assert!(host.late().settle(&call_id).unwrap().is_some());
    }
    let file = std::fs::read(&path).unwrap();
    assert_eq!(
        timeless(&export(store, name)),
        timeless(&file),
        "the same bytes once answered"
    );
}

/// The case with every control character everywhere a text goes, and the mark of the
/// database's escape beside U+0000.
fn every_control_case() -> Case {
    let all = every_control();
    Case {
        header: [
            format!("/tmp/{all}"),
            all.clone(),
            "\0".into(),
            "\u{FDD0}0".into(),
        ],
        call_id: format!("ask-{all}"),
        question: format!("Which {all} scope?"),
        chip: all.clone(),
        labels: vec![format!("Tool\0only{all}"), "\u{FDD0}\0\u{FDD0}".into()],
        pick: 0,
        custom: Some(format!("free\0text {all}")),
        note: all,
    }
}

#[test]
fn nul_and_every_control_character_are_stored_listed_answered_and_exported() {
    let Some(url) = common::pg_url() else { return };
    let (store, schema) = common::store(&url);
    both_stores(&store, "controls", &every_control_case());
    let mut big = every_control_case();
    big.question = format!("{}\0", "x".repeat(4096));
    big.labels = vec![format!("{}\0", "y".repeat(4096))];
    big.custom = Some(format!("\0{}", "z".repeat(4096)));
    big.note = "\0".repeat(4096);
    both_stores(&store, "big", &big);
    common::drop_schema(&url, &schema);
}

/// A text of the characters that matter here (controls, U+0000, the escape's mark, quotes,
/// backslashes, JSON escape text, the nested lone surrogate), sometimes 4 KiB long.
fn text() -> impl Strategy<Value = String> {
    let unit = prop_oneof![
        4 => proptest::char::range('\0', '\u{1f}').prop_map(String::from),
        1 => proptest::char::range('\u{7f}', '\u{9f}').prop_map(String::from),
        3 => proptest::sample::select(vec![
            "\0", "\u{FDD0}", "\u{FDD0}0", "\"", "\\", "\\u0000", "\\ud800", "\u{2028}", "\u{FEFF}",
            "\u{202E}", "\u{10FFFF}", "é", "你", "🙂", " ",
        ])
        .prop_map(str::to_owned),
        3 => "[a-z]{1,6}",
    ];
    (
        proptest::collection::vec(unit, 0..12),
        proptest::bool::weighted(0.1),
    )
        .prop_map(|(units, big)| {
            let text = units.concat();
            if big {
                let filler = if text.is_empty() { "\0" } else { &text };
                filler.repeat(4096 / filler.len() + 1)
            } else {
                text
            }
        })
}

/// [`text`] with the nested lone surrogate sometimes in it.
fn question_text() -> impl Strategy<Value = String> {
    (text(), proptest::bool::ANY).prop_map(|(text, nested)| {
        if nested {
            format!("{text}{NESTED_SURROGATE}")
        } else {
            text
        }
    })
}

fn case() -> impl Strategy<Value = Case> {
    (
        [text(), text(), text(), text()],
        text(),
        question_text(),
        text(),
        proptest::collection::vec(question_text(), 1..4),
        any::<usize>(),
        proptest::option::of(text()),
        text(),
    )
        .prop_map(
            |(header, call_id, question, chip, labels, pick, custom, note)| Case {
                header,
                // Never empty, so that it is an id.
                call_id: format!("c{call_id}"),
                question,
                chip,
                labels,
                pick,
                custom,
                note,
            },
        )
}

#[test]
fn the_same_generated_sessions_give_the_same_bytes_in_both_stores() {
    let Some(url) = common::pg_url() else { return };
    let (store, schema) = common::store(&url);
    let cases = std::sync::atomic::AtomicUsize::new(0);
    // A modest count: each case is a few dozen round trips to the server.
    let config = ProptestConfig {
        cases: 24,
        failure_persistence: None,
        ..ProptestConfig::default()
    };
    proptest!(config, |(case in case())| {
        let n = cases.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        both_stores(&store, &format!("p{n}"), &case);
    });
    common::drop_schema(&url, &schema);
}
