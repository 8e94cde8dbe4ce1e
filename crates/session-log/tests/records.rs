//! Typed records (SPEC §7.5): every constructor writes the reference's bytes, and every record the
//! workspace writes reads back through the one reader with its typed body, the host's own
//! bookkeeping events (`turn/start`, `step/*`, `agent/inbox/spliced`) included.
// Test code stops at its first broken expectation: unwrap and expect are assertions here.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::json;
use session_log::{
    EventBody, InboxTarget, Record, SessionEvent, SpliceEdit, StepRef, ToolResultRecord, TurnStart,
};
use user_questions::{CallId, ErrorCode, UserMessage};

const TIME: i64 = 1_782_000_000_000;

/// The line a record is written as, at `seq` and the fixed time, without its `\n`.
#[track_caller]
fn line(record: Record, seq: u64) -> String {
    let (line, _) = record.into_event(seq).unwrap().at(TIME).to_line().unwrap();
    line.strip_suffix('\n').unwrap().to_owned()
}

/// The body a line decodes to.
#[track_caller]
fn body(line: &str) -> EventBody {
    SessionEvent::from_record(line, 0)
        .unwrap()
        .into_events()
        .next()
        .unwrap()
        .body
}

#[track_caller]
fn check(record: Record, seq: u64, expected: &str) {
    assert_eq!(line(record, seq), expected);
}

#[test]
fn every_constructor_writes_the_reference_bytes() {
    check(
        Record::turn_start(1),
        0,
        r#"{"type":"turn/start","seq":0,"time":1782000000000,"data":{"turn":1}}"#,
    );
    check(
        Record::step_start(1, 2),
        1,
        r#"{"type":"step/start","seq":1,"time":1782000000000,"data":{"turn":1,"step":2}}"#,
    );
    check(
        Record::step_end(1, 2),
        2,
        r#"{"type":"step/end","seq":2,"time":1782000000000,"data":{"turn":1,"step":2}}"#,
    );
    check(
        Record::turn_end(1, "interrupted"),
        3,
        r#"{"type":"turn/end","seq":3,"time":1782000000000,"data":{"turn":1,"reason":{"kind":"interrupted"}}}"#,
    );
    check(
        Record::tool_call(
            1,
            2,
            CallId::from("c1"),
            "ask_user_question",
            r#"{"questions":[]}"#,
        ),
        4,
        r#"{"type":"tool/call","seq":4,"time":1782000000000,"data":{"turn":1,"step":2,"callId":"c1","name":"ask_user_question","arguments":"{\"questions\":[]}"}}"#,
    );
    check(
        Record::request_header(
            json!({"provider":"p","model":"m"}),
            vec![json!({"name":"t"})],
            "initial",
        ),
        5,
        r#"{"type":"request/header","seq":5,"time":1782000000000,"data":{"header":{"config":{"provider":"p","model":"m"},"tools":[{"name":"t"}]},"reason":"initial"}}"#,
    );
    check(
        Record::assistant_text(1, 2, "hi"),
        6,
        r#"{"type":"assistant/message","seq":6,"time":1782000000000,"data":{"turn":1,"step":2,"message":{"role":"assistant","content":[{"type":"text","text":"hi"}]}},"surfaceOp":"append"}"#,
    );
    let result = ToolResultRecord::new(Some(1), Some(2), "m1", CallId::from("c1"), "x", true)
        .with_error("UserQuestionError", ErrorCode::NoProvider)
        .with_meta(Some(
            json!({"provenance":{"answerer":"a","answeredBy":"human"}}),
        ));
    check(
        Record::ToolResult(result),
        7,
        r#"{"type":"tool/result","seq":7,"time":1782000000000,"data":{"turn":1,"step":2,"message":{"id":"m1","role":"tool","toolCallId":"c1","content":[{"type":"text","text":"x"}],"isError":true},"error":{"name":"UserQuestionError","code":"NO_PROVIDER"},"meta":{"provenance":{"answerer":"a","answeredBy":"human"}}},"surfaceOp":"append"}"#,
    );
    let unknown_turn = ToolResultRecord::new(None, None, "m2", CallId::from("c2"), "y", false);
    check(
        Record::ToolResult(unknown_turn),
        8,
        r#"{"type":"tool/result","seq":8,"time":1782000000000,"data":{"message":{"id":"m2","role":"tool","toolCallId":"c2","content":[{"type":"text","text":"y"}],"isError":false}},"surfaceOp":"append"}"#,
    );
    check(
        Record::UserMessage(UserMessage::user_text("u1", "hello")),
        9,
        r#"{"type":"user/message","seq":9,"time":1782000000000,"data":{"id":"u1","role":"user","source":{"kind":"user"},"content":[{"type":"text","text":"hello"}]},"surfaceOp":"append"}"#,
    );
}

#[test]
fn inbox_splices_write_removed_count_only_when_they_remove() {
    let message = UserMessage::user_text("u1", "hi");
    check(
        Record::inbox_splice(InboxTarget::NextTurn, 0, 0, vec![message]),
        0,
        r#"{"type":"agent/inbox/spliced","seq":0,"time":1782000000000,"data":{"target":"next-turn","start":0,"inserted":[{"id":"u1","role":"user","source":{"kind":"user"},"content":[{"type":"text","text":"hi"}]}]}}"#,
    );
    check(
        Record::inbox_splice(InboxTarget::NextStep, 1, 2, Vec::new()),
        1,
        r#"{"type":"agent/inbox/spliced","seq":1,"time":1782000000000,"data":{"target":"next-step","start":1,"removedCount":2,"inserted":[]}}"#,
    );
}

#[test]
fn other_records_are_kept_verbatim() {
    let data = serde_json::value::RawValue::from_string(r#"{"b":1,"a":[2]}"#.to_owned()).unwrap();
    check(
        Record::Other {
            event_type: "session/title".to_owned(),
            data,
        },
        0,
        r#"{"type":"session/title","seq":0,"time":1782000000000,"data":{"b":1,"a":[2]}}"#,
    );
}

#[test]
fn bookkeeping_events_read_back_typed() {
    assert_eq!(
        body(&line(Record::turn_start(3), 0)),
        EventBody::TurnStart(TurnStart { turn: Some(3) })
    );
    assert_eq!(
        body(&line(Record::step_start(3, 4), 0)),
        EventBody::StepStart(StepRef {
            turn: Some(3),
            step: Some(4)
        })
    );
    assert_eq!(
        body(&line(Record::step_end(3, 4), 0)),
        EventBody::StepEnd(StepRef {
            turn: Some(3),
            step: Some(4)
        })
    );
    match body(&line(
        Record::tool_call(3, 4, CallId::from("c"), "bash", "{}"),
        0,
    )) {
        EventBody::ToolCall(call) => assert_eq!((call.turn, call.step), (Some(3), Some(4))),
        other => panic!("{other:?}"),
    }
    let message = UserMessage::user_text("u1", "hi");
    match body(&line(
        Record::inbox_splice(InboxTarget::NextTurn, 2, 1, vec![message.clone()]),
        0,
    )) {
        EventBody::InboxSpliced(splice) => {
            assert_eq!(splice.target.as_deref(), Some("next-turn"));
            assert_eq!(
                splice.edit(),
                Some(SpliceEdit {
                    start: 2,
                    removed_count: 1,
                    inserted: vec![message]
                })
            );
        }
        other => panic!("{other:?}"),
    }
}

/// `turn` and `step` as read from a record's text (a step event's `StepRef`).
#[track_caller]
fn step_ref(raw: &str) -> Option<StepRef> {
    match SessionEvent::from_record(raw, 0)
        .ok()?
        .event()?
        .body
        .clone()
    {
        EventBody::StepStart(at) | EventBody::StepEnd(at) => Some(at),
        other => panic!("{other:?}"),
    }
}

#[test]
fn turn_and_step_are_read_leniently() {
    let both = |turn, step| Some(StepRef { turn, step });
    assert_eq!(
        step_ref(r#"{"type":"step/start","data":{"turn":1,"step":2}}"#),
        both(Some(1), Some(2))
    );
    assert_eq!(
        step_ref(r#"{"data":{"step":2,"turn":1},"type":"step/start"}"#),
        both(Some(1), Some(2)),
        "key order does not matter"
    );
    assert_eq!(
        step_ref(r#"{"type":"step/end","data":{"turn":1,"turn":3}}"#),
        both(Some(3), None),
        "a repeated key keeps its last value"
    );
    assert_eq!(
        step_ref(r#"{"type":"step/end","data":{"turn":"1","step":-1}}"#),
        both(None, None),
        "values of other types read as absent"
    );
    assert_eq!(
        step_ref(r#"{"type":"step/end","data":{"turn":[1],"step":{"a":1}}}"#),
        both(None, None)
    );
    assert_eq!(
        step_ref(r#"{"type":"step/end","data":null}"#),
        both(None, None)
    );
    assert_eq!(
        step_ref(r#"{"type":"step/end","data":{"turn":1},"data":{"step":4}}"#),
        both(None, Some(4)),
        "a repeated data keeps the last"
    );
    assert_eq!(
        step_ref(r#"{"type":"step/end","data":{"turn":1,"text":"\ud800"},"z":1}"#),
        both(Some(1), None),
        "a lone surrogate does not make the record unreadable"
    );
    assert_eq!(step_ref("not json"), None);
    let deep = format!(
        r#"{{"type":"step/start","data":{{"deep":{}{},"turn":2}}}}"#,
        "[".repeat(100_000),
        "]".repeat(100_000)
    );
    assert_eq!(
        step_ref(&deep),
        both(Some(2), None),
        "deep values are skipped without recursion"
    );
}

/// The edit an `agent/inbox/spliced` data object reads as.
#[track_caller]
fn splice(data: &str) -> (Option<String>, Option<SpliceEdit>) {
    let raw = format!(r#"{{"type":"agent/inbox/spliced","seq":0,"data":{data}}}"#);
    match body(&raw) {
        EventBody::InboxSpliced(splice) => {
            let edit = splice.edit();
            (splice.target, edit)
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn inbox_splices_are_read_leniently_and_never_corrupt_the_line() {
    let edit = |start, removed_count| {
        Some(SpliceEdit {
            start,
            removed_count,
            inserted: Vec::new(),
        })
    };
    let next_turn = Some("next-turn".to_owned());
    assert_eq!(
        splice(r#"{"target":"next-turn"}"#),
        (next_turn.clone(), edit(0, 0)),
        "absent counts are 0 and no insertion"
    );
    assert_eq!(
        splice(r#"{"target":"next-turn","start":1,"removedCount":2,"inserted":[]}"#),
        (next_turn.clone(), edit(1, 2))
    );
    // Any key of the wrong shape makes the edit unreadable; the record still reads.
    for bad in [
        r#"{"target":7}"#,
        r#"{"start":0}"#,
        r#"{"target":"next-turn","start":null}"#,
        r#"{"target":"next-turn","removedCount":-1}"#,
        r#"{"target":"next-turn","inserted":{}}"#,
        r#"{"target":"next-turn","inserted":[{"id":5}]}"#,
        r"[]",
    ] {
        assert_eq!(splice(bad).1, None, "{bad}");
    }
    assert_eq!(
        splice(r#"{"target":"elsewhere","start":0}"#),
        (Some("elsewhere".to_owned()), edit(0, 0)),
        "an unknown queue is read as written; the host decides"
    );
}

/// A `request/header` reads back its tools as logged and the model its config names (an MCP
/// session's client); a config without a string model reads as none.
#[test]
fn a_request_header_reads_back_its_tools_and_model() {
    let written = line(
        Record::request_header(
            json!({"provider":"mcp","model":"claude-code 2.1.328"}),
            vec![json!({"name":"t"})],
            "initial",
        ),
        5,
    );
    let EventBody::RequestHeader(header) = body(&written) else {
        panic!("{written}");
    };
    assert_eq!(header.tools.as_deref(), Some(r#"[{"name":"t"}]"#));
    assert_eq!(header.model.as_deref(), Some("claude-code 2.1.328"));
    for config in [r#"{"model":7}"#, r#""m""#, "{}"] {
        let line = format!(
            r#"{{"type":"request/header","seq":0,"data":{{"header":{{"config":{config},"tools":[]}}}}}}"#
        );
        let EventBody::RequestHeader(header) = body(&line) else {
            panic!("{line}");
        };
        assert_eq!(header.model, None, "{line}");
        assert_eq!(header.tools.as_deref(), Some("[]"), "{line}");
    }
}
