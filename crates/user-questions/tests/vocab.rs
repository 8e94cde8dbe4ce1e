//! Wire shapes of the vocabulary (SPEC §1): names, casing, key order, omission rules.
// Test code stops at its first broken expectation: unwrap and expect are assertions here.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use user_questions::{
    AnswerBatch, AnswerItem, CallId, ContentBlock, MessageSource, Provenance, Question,
    QuestionIntent, QuestionOption, UserMessage, WaitKey,
};

fn json<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_string(value).unwrap()
}

#[test]
fn question_key_order_and_omission() {
    let full = Question::new("plan", "Approve?")
        .with_detail("# Plan")
        .with_header("Review")
        .with_options([
            QuestionOption::new("Approve").with_description("Ship it."),
            QuestionOption::new("Refuse"),
        ])
        .with_multi_select(false)
        .with_intent(QuestionIntent::PlanReview {
            approve: "Approve".into(),
            call_id: Some(CallId::from("call_plan")),
        });
    insta::assert_snapshot!(json(&full), @r##"{"id":"plan","question":"Approve?","detail":"# Plan","header":"Review","options":[{"label":"Approve","description":"Ship it."},{"label":"Refuse"}],"multiSelect":false,"intent":{"kind":"plan-review","approve":"Approve","callId":"call_plan"}}"##);
    assert_eq!(
        json(&Question::new("x", "Q?")),
        r#"{"id":"x","question":"Q?"}"#
    );
    // Absent and empty options are distinct.
    assert_eq!(
        json(&Question::new("x", "Q?").with_options([])),
        r#"{"id":"x","question":"Q?","options":[]}"#
    );
    let back: Question = serde_json::from_str(&json(&full)).unwrap();
    assert_eq!(back, full);
}

#[test]
fn answers_key_order_and_empty_custom() {
    let batch = AnswerBatch::new([
        AnswerItem::selected("targets", ["tests", "docs"]).with_custom("release notes"),
        AnswerItem::selected("labels-only", ["tests"]),
        AnswerItem::custom("notes", "ship today"),
        AnswerItem::skipped("optional"),
        AnswerItem::custom("empty", ""),
    ]);
    insta::assert_snapshot!(json(&batch), @r#"{"answers":[{"id":"targets","selected":["tests","docs"],"custom":"release notes"},{"id":"labels-only","selected":["tests"]},{"id":"notes","selected":[],"custom":"ship today"},{"id":"optional","selected":[]},{"id":"empty","selected":[],"custom":""}]}"#);
}

#[test]
fn provenance_and_wait_key() {
    assert_eq!(
        json(&Provenance::human("web")),
        r#"{"answerer":"web","answeredBy":"human"}"#
    );
    assert_eq!(
        json(&Provenance::rule("scripted")),
        r#"{"answerer":"scripted","answeredBy":"rule"}"#
    );
    assert!(
        serde_json::from_str::<Provenance>(r#"{"answerer":"a","answeredBy":"human","x":1}"#)
            .is_err()
    );
    assert_eq!(
        json(&WaitKey::Indefinite {
            call_id: CallId::from("c1")
        }),
        r#"{"callId":"c1"}"#
    );
}

#[test]
fn reply_source_shape() {
    let message = UserMessage {
        id: "m1".into(),
        role: "user".into(),
        source: MessageSource {
            kind: MessageSource::REPLY_KIND.into(),
            call_id: Some(CallId::from("ask-timed")),
            outcome: Some("answered".into()),
            provenance: Some(Provenance::human("terminal")),
            extra: serde_json::Map::new(),
        },
        content: vec![ContentBlock::text("{}")],
    };
    insta::assert_snapshot!(json(&message), @r#"{"id":"m1","role":"user","source":{"kind":"user-question-reply","callId":"ask-timed","outcome":"answered","provenance":{"answerer":"terminal","answeredBy":"human"}},"content":[{"type":"text","text":"{}"}]}"#);
    assert_eq!(message.reply_call_id().unwrap().as_str(), "ask-timed");
    // Other source keys survive a round trip.
    let ordinary: UserMessage = serde_json::from_str(
        r#"{"id":"m2","source":{"kind":"user","rpcId":"r9"},"content":[{"type":"text","text":"hi"}]}"#,
    )
    .unwrap();
    assert_eq!(ordinary.role, "user");
    assert!(ordinary.reply_call_id().is_none());
    assert_eq!(
        json(&ordinary),
        r#"{"id":"m2","role":"user","source":{"kind":"user","rpcId":"r9"},"content":[{"type":"text","text":"hi"}]}"#
    );
}

#[test]
fn messages_read_leniently_and_lose_nothing() {
    let text = r#"{"id":"m3","role":"user","source":{"kind":"user-question-reply","callId":7,"outcome":"answered","provenance":{"answerer":"web","answeredBy":"human","extra":1}},"content":[{"type":"image","data":"…"},{"type":"text","text":"hi","cache":true},{"type":"text","text":"plain"}]}"#;
    let message: UserMessage = serde_json::from_str(text).unwrap();
    // Malformed known keys are kept among the other keys, not dropped and not fatal.
    assert_eq!(message.source.kind, MessageSource::REPLY_KIND);
    assert!(message.source.call_id.is_none());
    assert!(message.source.provenance.is_none());
    assert_eq!(message.source.extra["callId"], 7);
    assert!(message.reply_call_id().is_none());
    // Other blocks survive; text with extra keys still reads as text.
    assert!(matches!(message.content[0], ContentBlock::Other(_)));
    assert_eq!(message.content[1].as_text(), Some("hi"));
    assert_eq!(message.content[2], ContentBlock::text("plain"));
    let back: serde_json::Value = serde_json::to_value(&message).unwrap();
    let original: serde_json::Value = serde_json::from_str(text).unwrap();
    assert_eq!(back, original);
    // A source without a kind reads as an empty kind and writes none back.
    let kindless: MessageSource = serde_json::from_str(r#"{"rpcId":"r1"}"#).unwrap();
    assert_eq!(kindless.kind, "");
    assert_eq!(json(&kindless), r#"{"rpcId":"r1"}"#);
}
