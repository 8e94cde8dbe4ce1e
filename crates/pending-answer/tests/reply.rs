//! The late-reply message (SPEC §6): the exact text and source, snapshots of built messages, and
//! the recogniser, checked against the projection's own reading of the same message.
// Helpers outside `#[test]` functions unwrap too: a panic there is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use pending_answer::{LateReply, read_reply, reply_message, reply_text};
use serde_json::json;
use user_questions::{
    AnswerBatch, CallId, ContentBlock, MessageSource, Provenance, Question, QuestionIntent,
    UserMessage,
};
use user_questions_projection::{SessionEvent, UserQuestionsState};

/// The tools of a `request/header` that offers the timed `ask_user_question` (SPEC §8.3).
const TIMED_TOOLS: &str = r#"[{"name":"ask_user_question","parameters":{"type":"object","properties":{"questions":{"type":"array"},"timeout":{"type":"integer"}}}}]"#;

fn questions(value: serde_json::Value) -> Vec<Question> {
    serde_json::from_value(value).unwrap()
}

/// The built message, rendered for a snapshot: the compact source, then the exact reply text.
fn rendered(call_id: &str, questions: &[Question], answers: &AnswerBatch) -> String {
    let message = reply_message(
        "00000000-0000-4000-8000-000000000000",
        &CallId::from(call_id),
        questions,
        answers,
        Some(Provenance::human("ui")),
    );
    let text = message.content[0].as_text().expect("a text block");
    format!(
        "id: {}\nrole: {}\nsource: {}\ntext: {text}\n",
        message.id,
        message.role,
        serde_json::to_string(&message.source).unwrap()
    )
}

#[test]
fn s31_test_vector_byte_for_byte() {
    let text = reply_text(
        &CallId::from(LT),
        &questions(json!([q_scope()])),
        &tool_only(),
    );
    assert_eq!(text, TEST_VECTOR);
}

#[test]
fn message_shape_and_key_order() {
    let message = reply_message(
        "m-1",
        &CallId::from(LT),
        &questions(json!([q_scope()])),
        &tool_only(),
        Some(Provenance::rule("policy")),
    );
    let expected = format!(
        r#"{{"id":"m-1","role":"user","source":{{"kind":"user-question-reply","callId":"ask-timed","outcome":"answered","provenance":{{"answerer":"policy","answeredBy":"rule"}}}},"content":[{{"type":"text","text":{}}}]}}"#,
        serde_json::to_string(TEST_VECTOR).unwrap()
    );
    assert_eq!(serde_json::to_string(&message).unwrap(), expected);

    // Provenance is an optional trailing key of the source.
    let bare = reply_message(
        "m-2",
        &CallId::from(LT),
        &questions(json!([q_scope()])),
        &tool_only(),
        None,
    );
    assert_eq!(
        serde_json::to_string(&bare.source).unwrap(),
        r#"{"kind":"user-question-reply","callId":"ask-timed","outcome":"answered"}"#
    );
}

#[test]
fn snapshot_single_select() {
    insta::assert_snapshot!(rendered(LT, &questions(json!([q_scope()])), &tool_only()));
}

#[test]
fn snapshot_multi_select() {
    let asked = questions(json!([{
        "id":"targets","question":"Which targets?","header":"Targets",
        "options":[{"label":"linux","description":"x86_64 and aarch64"},{"label":"macos"},{"label":"windows"}],
        "multiSelect":true
    }]));
    let answers =
        batch(json!([{"id":"targets","selected":["linux","windows"],"custom":"and wasm32"}]));
    insta::assert_snapshot!(rendered("call-multi", &asked, &answers));
}

#[test]
fn snapshot_custom_answer() {
    let asked = questions(json!([{
        "id":"pkg","question":"Which package manager?","header":"Setup",
        "options":[{"label":"pnpm (Recommended)","description":"Fast, disk-efficient."},{"label":"npm"}],
        "multiSelect":false
    }]));
    let answers = batch(json!([{"id":"pkg","selected":[],"custom":"bun"}]));
    insta::assert_snapshot!(rendered("call-custom", &asked, &answers));
}

#[test]
fn snapshot_skipped_answer() {
    let asked = questions(json!([
        {"id":"scope","question":"Which scope?","options":[{"label":"Tool only"},{"label":"Everything"}]},
        {"id":"notes","question":"Anything else?"}
    ]));
    let answers =
        batch(json!([{"id":"scope","selected":["Everything"]},{"id":"notes","selected":[]}]));
    insta::assert_snapshot!(rendered("call-skip", &asked, &answers));
}

#[test]
fn snapshot_unicode() {
    let asked = questions(json!([{
        "id":"langue","question":"Quelle langue préférez-vous ? 🌍 「日本語」も可",
        "header":"Übersetzung",
        "options":[{"label":"Français ✓"},{"label":"日本語","description":"tab\there, \"quoted\", back\\slash"}]
    }]));
    let answers = batch(
        json!([{"id":"langue","selected":["日本語"],"custom":"line one\nline two \u{2028} 😀"}]),
    );
    insta::assert_snapshot!(rendered("call-ü", &asked, &answers));
}

#[test]
fn detail_is_kept_and_intent_never_written() {
    let mut asked = questions(json!([{
        "id":"plan","question":"Approve?","detail":"# Plan","header":"Review",
        "options":[{"label":"Approve"},{"label":"Refuse"}],"multiSelect":false
    }]));
    asked[0].intent = Some(QuestionIntent::PlanReview {
        approve: "Approve".into(),
        call_id: None,
    });
    let text = reply_text(
        &CallId::from("c"),
        &asked,
        &batch(json!([{"id":"plan","selected":["Approve"]}])),
    );
    assert_eq!(
        text,
        r##"{"kind":"answer_to_pending_question","tool":"ask_user_question","callId":"c","questions":[{"id":"plan","question":"Approve?","detail":"# Plan","header":"Review","options":[{"label":"Approve"},{"label":"Refuse"}],"multiSelect":false}],"answers":[{"id":"plan","selected":["Approve"]}]}"##
    );
}

/// Folds `message`, logged as a `user/message`, into a state where `call_id` is continued.
fn settle(call_id: &str, message: &UserMessage) -> Vec<user_questions::AnswerItem> {
    let mut state = UserQuestionsState::new(0);
    let questions_args = json!({"questions":[q_scope()]}).to_string();
    for event in [
        SessionEvent::request_header(0, TIMED_TOOLS),
        SessionEvent::tool_call(1, call_id, "ask_user_question", &questions_args),
        SessionEvent::tool_result(2, call_id, r#"{"pending":true}"#, false),
    ] {
        state.apply_in_place(&event);
    }
    let (event_type, data) = user_message(message);
    let line = json!({"type":event_type,"data":data}).to_string();
    let event = SessionEvent::from_record(&line, 3)
        .unwrap()
        .into_events()
        .next()
        .unwrap();
    state.apply_in_place(&event);
    let settled = &state.view().settled;
    assert_eq!(settled.len(), 1, "the reply settles {call_id}");
    settled[0].answers.clone()
}

#[test]
fn recogniser_reads_what_the_projection_settles() {
    #[track_caller]
    fn check(text: &str, expected: Option<serde_json::Value>) {
        let mut message = reply_message(
            "m-1",
            &CallId::from(LT),
            &[],
            &AnswerBatch::default(),
            Some(origin()),
        );
        message.content = vec![ContentBlock::text(text)];
        let reply = read_reply(&message).unwrap();
        assert_eq!(
            reply,
            LateReply {
                message_id: "m-1".into(),
                call_id: CallId::from(LT),
                provenance: Some(origin()),
                answers: expected.map(batch),
            }
        );
        // The fold settles with the same batch, or with none.
        assert_eq!(
            settle(LT, &message),
            reply.answers.map(|b| b.answers).unwrap_or_default()
        );
    }

    check(
        TEST_VECTOR,
        Some(json!([{"id":"scope","selected":["Tool only"]}])),
    );
    // Lenient: only `answers` is read; other keys and the questions may be anything.
    check(
        r#"{"answers":[{"id":"scope","selected":[],"custom":"later"}],"questions":"gone","extra":1}"#,
        Some(json!([{"id":"scope","selected":[],"custom":"later"}])),
    );
    check(" {\"answers\":[]}\n", Some(json!([])));
    // No batch: not JSON, not an object, a wrong type, an item with an extra key.
    check("no json here", None);
    check(r#"[{"answers":[]}]"#, None);
    check(r#"{"answers":"nope"}"#, None);
    check(
        r#"{"answers":[{"id":"scope","selected":[],"note":"x"}]}"#,
        None,
    );
    check(
        r#"{"answers":[{"id":"scope","selected":[],"custom":null}]}"#,
        None,
    );
}

#[test]
fn recognition_goes_by_the_source_alone() {
    // The same JSON text from the person is an ordinary message.
    let ordinary = UserMessage::user_text("m-1", TEST_VECTOR);
    assert_eq!(read_reply(&ordinary), None);

    // A reply source without a call id names nothing.
    let mut nameless = reply_message(
        "m-2",
        &CallId::from(LT),
        &questions(json!([q_scope()])),
        &tool_only(),
        None,
    );
    nameless.source.call_id = None;
    assert_eq!(read_reply(&nameless), None);

    // Another source kind with a call id is not a reply either.
    let mut plugin = nameless.clone();
    plugin.source = MessageSource::of_kind("plugin");
    plugin.source.call_id = Some(CallId::from(LT));
    assert_eq!(read_reply(&plugin), None);

    // A reply with no text block, or an older `dismissed` outcome, is still a reply.
    let mut empty = reply_message("m-3", &CallId::from(LT), &[], &AnswerBatch::default(), None);
    empty.content.clear();
    empty.source.outcome = Some("dismissed".into());
    let reply = read_reply(&empty).unwrap();
    assert_eq!((reply.call_id.as_str(), reply.answers), (LT, None));
}

#[test]
fn a_reply_decoded_from_a_transport_keeps_unknown_source_keys() {
    let message: UserMessage = serde_json::from_value(json!({
        "id":"m-1","role":"user",
        "source":{"kind":"user-question-reply","callId":"ask-timed","outcome":"answered","surface":"web"},
        "content":[{"type":"text","text":TEST_VECTOR}]
    }))
    .unwrap();
    let reply = read_reply(&message).unwrap();
    assert_eq!(reply.answers, Some(tool_only()));
    assert_eq!(reply.provenance, None);
    assert_eq!(
        serde_json::to_string(&message.source).unwrap(),
        r#"{"kind":"user-question-reply","callId":"ask-timed","outcome":"answered","surface":"web"}"#
    );
}
