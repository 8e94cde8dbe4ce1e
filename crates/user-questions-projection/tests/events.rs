//! The event model as other crates use it: decoding single records, the fields the late-answer
//! crate reads (`user/message` id and source, `turn/end` turn), test constructors, and the
//! scanner's behaviour on I/O errors.
// Test code stops at its first broken expectation: unwrap and expect are assertions here.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::{self, BufReader, Read};

use common::*;
use serde_json::json;
use user_questions::{ErrorCode, Provenance};
use user_questions_projection::{
    Applied, DispatchKind, EventBody, LogScanner, OpenError, ResultError, ResultLayout,
    SessionEvent, TurnEnd, UserQuestionsState, fold_log, questions_from_arguments,
};

/// The tools of a `request/header` that offers the timed `ask_user_question` (SPEC §8.3).
const TIMED_TOOLS: &str = r#"[{"name":"ask_user_question","parameters":{"type":"object","properties":{"questions":{"type":"array"},"timeout":{"type":"integer"}}}}]"#;

#[track_caller]
fn decode(line: &str, expected_seq: u64) -> SessionEvent {
    SessionEvent::from_record(line, expected_seq)
        .unwrap()
        .into_events()
        .next()
        .unwrap()
}

#[test]
fn user_message_id_and_source_for_reservations() {
    let ordinary = decode(&user_text("hello"), 4);
    assert_eq!(ordinary.seq, 4);
    let EventBody::UserMessage(message) = &ordinary.body else {
        panic!("{ordinary:?}")
    };
    assert_eq!(message.id.as_deref(), Some("u1"));
    assert_eq!(
        message.source.as_ref().unwrap().kind.as_deref(),
        Some("user")
    );
    assert_eq!(message.reply_call_id(), None);

    let line = reply_blocks(
        "call_ask_1",
        json!([{"type":"text","text":"{\"answers\":[]}"}]),
        Some(json!({"answerer":"ui","answeredBy":"human"})),
    );
    let event = decode(
        &line.replacen(r#""data":"#, r#""seq":9,"time":1700,"data":"#, 1),
        0,
    );
    assert_eq!((event.seq, event.time), (9, Some(1700)));
    let EventBody::UserMessage(message) = &event.body else {
        panic!("{event:?}")
    };
    assert_eq!(message.id.as_deref(), Some("reply-call_ask_1"));
    assert_eq!(message.reply_call_id().unwrap(), "call_ask_1");
    assert_eq!(
        message.source.as_ref().unwrap().provenance,
        Some(Provenance::human("ui"))
    );
    assert_eq!(message.text.answers.as_deref(), Some(&[][..]));

    // A message without a source, role or id is read (the reference refuses it).
    let bare = decode(r#"{"type":"user/message","data":{"content":[]}}"#, 0);
    let EventBody::UserMessage(message) = &bare.body else {
        panic!("{bare:?}")
    };
    assert_eq!((message.id.as_ref(), message.source.as_ref()), (None, None));
}

#[test]
fn turn_end_carries_its_turn() {
    let event = decode(
        &record(
            "turn/end",
            json!({"turn":3,"reason":{"kind":"interrupted"}}),
        ),
        0,
    );
    assert_eq!(event.body, EventBody::TurnEnd(TurnEnd { turn: Some(3) }));
    assert_eq!(event.event_type(), "turn/end");
    let odd = decode(&record("turn/end", json!({"turn":"3"})), 0);
    assert_eq!(odd.body, EventBody::TurnEnd(TurnEnd { turn: None }));
}

#[test]
fn decoded_bodies_are_normalised() {
    let event = decode(&error_result("call_ask_1", "ASK_CANCELLED"), 0);
    let EventBody::ToolResult(result) = &event.body else {
        panic!("{event:?}")
    };
    assert_eq!(result.layout, Some(ResultLayout::Message));
    assert_eq!(result.error, ResultError::code(ErrorCode::AskCancelled));
    assert!(result.is_error);

    let event = decode(
        &record(
            "tool/code-dispatch",
            json!({"subCallId":"r:code:1","name":"bash","arguments":{},"isError":false,"content":[]}),
        ),
        0,
    );
    assert_eq!(event.event_type(), "tool/code-dispatch");
    let EventBody::Dispatch(dispatch) = &event.body else {
        panic!("{event:?}")
    };
    assert_eq!(dispatch.kind, DispatchKind::Code);
    assert_eq!(dispatch.arguments.as_deref(), Some("{}"));

    let event = decode(&call1(), 0);
    let EventBody::ToolCall(call) = &event.body else {
        panic!("{event:?}")
    };
    // The arguments text is kept as the model sent it; the projection reads the questions.
    assert_eq!(
        call.arguments.as_deref().and_then(questions_from_arguments),
        Some(call1_questions())
    );

    let other = decode(r#"{"type":"session/title","data":{"title":"x"}}"#, 2);
    assert_eq!(other.event_type(), "session/title");
    assert_eq!(other, SessionEvent::other(2, "session/title"));
}

#[test]
fn constructors_build_what_decoding_builds() {
    let arguments = call1_arguments().to_string();
    assert_eq!(
        SessionEvent::tool_call(1, "call_ask_1", "ask_user_question", &arguments).in_step(1, 1),
        decode(&call1(), 1)
    );
    let tools = serde_json::to_string(&json!([bash_schema(), timed_schema()])).unwrap();
    // The constructor names no model; the fixture's config does.
    let mut header = SessionEvent::request_header(0, &tools);
    if let EventBody::RequestHeader(built) = &mut header.body {
        built.model = Some("m".to_owned());
    }
    assert_eq!(header, decode(&timed_header(), 0));
    assert_eq!(
        SessionEvent::tool_result(2, "call_ask_1", r#"{"pending":true}"#, false),
        decode(&result("call_ask_1", r#"{"pending":true}"#), 2)
    );
    assert_eq!(
        SessionEvent::turn_end(5, 1).at(7),
        decode(
            r#"{"type":"turn/end","seq":5,"time":7,"data":{"turn":1}}"#,
            5
        )
    );

    // A whole scenario from constructors alone.
    let mut state = UserQuestionsState::new(0);
    for event in [
        SessionEvent::request_header(0, TIMED_TOOLS),
        SessionEvent::tool_call(1, "c1", "ask_user_question", &arguments),
        SessionEvent::tool_result(2, "c1", r#"{"pending":true,"callId":"c1"}"#, false),
    ] {
        if let Applied::Changed(next) = state.apply(&event) {
            state = next;
        }
    }
    assert!(
        state
            .continued(&user_questions::CallId::from("c1"))
            .is_some()
    );
    let reply = SessionEvent::reply(
        3,
        "m1",
        "c1",
        r#"{"answers":[{"id":"scope","selected":["Everything"]}]}"#,
        Some(Provenance::rule("policy")),
    );
    let Applied::Changed(state) = state.apply(&reply) else {
        panic!("the reply settles")
    };
    assert_eq!(
        state.to_json(),
        r#"{"inheritedEventCount":0,"timed":true,"questions":{"active":[],"settled":[{"callId":"c1","answers":[{"id":"scope","selected":["Everything"]}],"provenance":{"answerer":"policy","answeredBy":"rule"}}]}}"#
    );
}

/// A reader that fails after `limit` bytes.
struct FailingReader {
    data: Vec<u8>,
    at: usize,
    limit: usize,
}

impl Read for FailingReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.at >= self.limit {
            return Err(io::Error::other("disk on fire"));
        }
        let n = buf
            .len()
            .min(self.limit - self.at)
            .min(self.data.len() - self.at);
        buf[..n].copy_from_slice(&self.data[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

#[test]
fn io_errors_stop_the_scan_and_keep_the_position() {
    let file = log_file(&[timed_header(), call1(), pending("call_ask_1")]);
    let second_line_end = file.match_indices('\n').nth(1).unwrap().0 + 1;
    let reader = FailingReader {
        data: file.clone().into_bytes(),
        at: 0,
        limit: second_line_end + 5,
    };
    let (_, mut scanner) = LogScanner::open(BufReader::with_capacity(8, reader)).unwrap();
    assert!(scanner.next_line().unwrap().is_some());
    let error = scanner.next_line().unwrap_err();
    assert_eq!(error.to_string(), "disk on fire");
    assert_eq!(scanner.position().byte_offset, second_line_end as u64);
    assert_eq!(scanner.position().expected_seq, 1);
    assert!(scanner.next_line().unwrap().is_none(), "the scan stopped");

    let reader = FailingReader {
        data: file.into_bytes(),
        at: 0,
        limit: second_line_end + 5,
    };
    assert!(matches!(
        fold_log(BufReader::with_capacity(8, reader)),
        Err(OpenError::Io(_))
    ));
}

#[test]
fn lossy_header_is_reported_as_line_one() {
    let mut bytes = br#"{"type":"session","version":4,"id":"s","cwd":"/w"#.to_vec();
    bytes.push(0xFF);
    bytes.extend_from_slice(b"\",\"createdAt\":0}\n");
    let folded = fold_log(bytes.as_slice()).unwrap();
    assert_eq!(folded.report.lossy_lines.len(), 1);
    assert_eq!(folded.report.lossy_lines[0].line, 1);
    assert_eq!(folded.header.cwd.as_deref(), Some("/w\u{FFFD}"));
}
