//! The projection scenarios of SPEC §12.5 (P1–P20) and X2, through the public API.
// Test code stops at its first broken expectation: unwrap and expect are assertions here.
#![allow(clippy::unwrap_used, clippy::expect_used)]
// Fixture builders take JSON values by value so that call sites can pass `json!` literals.
#![allow(clippy::needless_pass_by_value)]

mod common;

use common::*;
use serde_json::json;
use user_questions::{AnsweredBy, MessageSource, Provenance, UserMessage};
use user_questions_projection::{
    ActiveState, Applied, EventBody, PROJECTION_KEY, RestoreError, STATE_VERSION, SessionEvent,
    SessionHeader, UserQuestionsState, apply, declares_timed, fold_log, init,
    questions_from_arguments, restore, resume_fold, view,
};

#[track_caller]
fn check_view<S: AsRef<str>>(lines: &[S], expected: &str) {
    assert_eq!(view_of(lines), expected);
}

#[track_caller]
fn header_is_timed(tools: serde_json::Value) -> bool {
    let line = record(
        "request/header",
        json!({"header":{"config":{},"tools":tools},"reason":"initial"}),
    );
    match &SessionEvent::from_record(&line, 0)
        .unwrap()
        .event()
        .unwrap()
        .body
    {
        EventBody::RequestHeader(h) => h.tools.as_deref().is_some_and(declares_timed),
        other => panic!("not a header: {other:?}"),
    }
}

#[test]
fn p1_schema_recognition() {
    assert!(header_is_timed(json!([timed_schema()])));
    assert!(!header_is_timed(json!([legacy_schema()])));
    let mut bash_with_timed_parameters = timed_schema();
    bash_with_timed_parameters["name"] = json!("bash");
    assert!(!header_is_timed(json!([bash_with_timed_parameters])));
    assert!(!header_is_timed(
        json!([{"name":"ask_user_question","parameters":{"type":"object"}}])
    ));
    // `properties` must be an object with the key; `parameters` must be an object.
    assert!(!header_is_timed(
        json!([{"name":"ask_user_question","parameters":{"properties":["timeout"]}}])
    ));
    assert!(!header_is_timed(
        json!([{"name":"ask_user_question","parameters":"{\"properties\":{\"timeout\":{}}}"}])
    ));
    assert!(!header_is_timed(json!("{{tools}}")));
    assert!(header_is_timed(
        json!([bash_schema(), {"name":"ask_user_question","parameters":{"properties":{"timeout":null}}}])
    ));
}

#[test]
fn p2_timed_call_opens() {
    check_view(
        &[header(&[bash_schema(), timed_schema()]), call1()],
        &call1_active("open"),
    );
}

#[test]
fn p3_legacy_never_tracked() {
    let answers = result(
        "call_ask_1",
        r#"{"answers":[{"id":"scope","selected":["Tool only"]}]}"#,
    );
    let cases: Vec<Vec<String>> = vec![
        vec![legacy_header(), call1()],
        vec![legacy_header(), call1(), answers],
        vec![legacy_header(), call1(), unknown_outcome("call_ask_1")],
        vec![call1()],
        vec![header_without_tools(), call1()],
        vec![
            record(
                "request/header",
                json!({"header":{"config":{},"tools":"{{tools}}"},"reason":"initial"}),
            ),
            call1(),
        ],
    ];
    for lines in cases {
        let mut folder = Folder::new();
        for line in &lines {
            folder.push(line);
            assert!(!folder.state.timed(), "{lines:?}");
        }
        assert_eq!(folder.view_json(), EMPTY_VIEW, "{lines:?}");
    }
}

#[test]
fn p4_latest_header_wins() {
    let only_call_2 = view_of(&[legacy_header(), call1(), timed_header(), ask("call_2")]);
    assert!(only_call_2.contains(r#""callId":"call_2""#));
    assert!(!only_call_2.contains("call_ask_1"));

    check_view(
        &[timed_header(), call1(), legacy_header(), ask("call_2")],
        &call1_active("open"),
    );
    check_view(
        &[timed_header(), legacy_header(), timed_header(), call1()],
        &call1_active("open"),
    );
}

#[test]
fn p5_answer_results_settle_and_failures_drop() {
    #[track_caller]
    fn check(result_line: String, expected: &str) {
        check_view(&[timed_header(), call1(), result_line], expected);
    }
    check(
        result(
            "call_ask_1",
            r#"{"answers":[{"id":"scope","selected":["Tool only"]}]}"#,
        ),
        &call1_settled(r#"[{"id":"scope","selected":["Tool only"]}]"#),
    );
    for code in ["ASK_CANCELLED", "ASK_ABORTED", "UNEXPECTED"] {
        check(error_result("call_ask_1", code), EMPTY_VIEW);
    }
    check(result("call_ask_1", "not json at all"), EMPTY_VIEW);
    check(result("call_ask_1", r#"{"answers":"nope"}"#), EMPTY_VIEW);
    check(
        result_with("call_ask_1", r#"{"answers":[]}"#, true, json!({})),
        EMPTY_VIEW,
    );
    check(
        result("call_ask_1", r#"{"answers":[]}"#),
        &call1_settled("[]"),
    );
    check(
        result(
            "call_ask_1",
            r#"{"answers":[{"id":"scope","selected":[],"extra":1}]}"#,
        ),
        EMPTY_VIEW,
    );
    check(
        result(
            "call_ask_1",
            r#"{"answers":[{"id":"scope","selected":[],"custom":null}]}"#,
        ),
        EMPTY_VIEW,
    );
    check(
        result(
            "call_ask_1",
            r#"{"answers":[{"id":"scope","selected":[],"custom":""}]}"#,
        ),
        &call1_settled(r#"[{"id":"scope","selected":[],"custom":""}]"#),
    );
    // A present `error` key, even `null`, means no batch.
    check(
        result_with(
            "call_ask_1",
            r#"{"answers":[]}"#,
            false,
            json!({"error":null}),
        ),
        EMPTY_VIEW,
    );
}

#[test]
fn p6_pending_and_unknown_outcome_continue() {
    #[track_caller]
    fn check(result_line: String, expected: &str) {
        check_view(&[timed_header(), call1(), result_line], expected);
    }
    let continued = call1_active("continued");
    check(pending("call_ask_1"), &continued);
    check(result("call_ask_1", r#"{"pending":true}"#), &continued);
    check(
        result("call_ask_1", r#"{"pending":true,"callId":"someone-else"}"#),
        &continued,
    );
    check(unknown_outcome("call_ask_1"), &continued);
    check(
        result_with("call_ask_1", r#"{"pending":true}"#, true, json!({})),
        &continued,
    );
    check(
        result_with(
            "call_ask_1",
            r#"{"pending":true}"#,
            true,
            json!({"error":{"code":"ASK_CANCELLED"}}),
        ),
        &continued,
    );
    check(result("call_ask_1", r#"{"pending":"true"}"#), EMPTY_VIEW);
    check(result("call_ask_1", r#"{"pending":false}"#), EMPTY_VIEW);
    check(result("call_ask_1", r#"[{"pending":true}]"#), EMPTY_VIEW);
    // Pretty-printed pending JSON is still JSON.
    check(
        result("call_ask_1", "\n  {\n    \"pending\": true\n  }\n"),
        &continued,
    );
}

#[test]
fn p7_splices_never_settle_admission_does() {
    let mut folder = Folder::new();
    folder.push_all(&[timed_header(), call1(), pending("call_ask_1")]);
    let reply_message = json!({"id":"r1","role":"user","source":{"kind":"user-question-reply","callId":"call_ask_1","outcome":"answered"},"content":[{"type":"text","text":reply_json("call_ask_1", json!([]))}]});
    assert!(!folder.push(&splice_insert(reply_message)));
    assert!(!folder.push(&splice_remove()));
    assert_eq!(folder.view_json(), call1_active("continued"));
    assert!(folder.push(&reply("call_ask_1", "{}")));
    assert_eq!(folder.view_json(), call1_settled("[]"));
}

#[test]
fn p8_replies_settle_once() {
    let batch = json!([{"id":"scope","selected":["Tool only"],"custom":"also docs"}]);
    let settled =
        call1_settled(r#"[{"id":"scope","selected":["Tool only"],"custom":"also docs"}]"#);
    let continued = [timed_header(), call1(), pending("call_ask_1")];
    let mut folder = Folder::new();
    folder.push_all(&continued);
    assert!(folder.push(&reply(
        "call_ask_1",
        &reply_json("call_ask_1", batch.clone())
    )));
    assert_eq!(folder.view_json(), settled);
    // A second reply for the settled call changes nothing.
    assert!(!folder.push(&reply("call_ask_1", &reply_json("call_ask_1", json!([]))),));
    assert_eq!(folder.state.view().settled.len(), 1);

    // Splice then admission: one settled entry.
    let mut folder = Folder::new();
    folder.push_all(&continued);
    folder.push(&splice_insert(json!({"id":"r"})));
    folder.push(&reply(
        "call_ask_1",
        &reply_json("call_ask_1", batch.clone()),
    ));
    assert_eq!(folder.state.view().settled.len(), 1);

    // A reply for a still-open call settles it too.
    check_view(
        &[
            timed_header(),
            call1(),
            reply("call_ask_1", &reply_json("call_ask_1", batch.clone())),
        ],
        &settled,
    );
    // `outcome` is not inspected: an older "dismissed" reply settles.
    let dismissed = record(
        "user/message",
        json!({"id":"r","role":"user","source":{"kind":"user-question-reply","callId":"call_ask_1","outcome":"dismissed"},"content":[{"type":"text","text":"{}"}]}),
    );
    check_view(&[timed_header(), call1(), dismissed], &call1_settled("[]"));
}

fn dispatch(event_type: &str, arguments: serde_json::Value, is_error: bool, text: &str) -> String {
    record(
        event_type,
        json!({"rootCallId":"run_1","parentCallId":"run_1","subCallId":"run_1:ptc:1","name":"ask_user_question","arguments":arguments,"isError":is_error,"content":[{"type":"text","text":text}]}),
    )
}

#[test]
fn p9_programmatic_sub_calls() {
    let code_only = header(&[
        json!({"name":"run_code","description":"Run code.","parameters":{"type":"object","properties":{"code":{"type":"string"}}}}),
    ]);
    let pending_text = r#"{"pending":true,"callId":"run_1:ptc:1"}"#;
    let expected = call1_active("continued").replace("call_ask_1", "run_1:ptc:1");
    for event_type in ["tool/ptc-dispatch", "tool/code-dispatch"] {
        let d = dispatch(event_type, call1_arguments(), false, pending_text);
        check_view(&[code_only.clone(), d.clone()], &expected);
        // The same dispatch twice: one entry (and `Changed` both times).
        let mut folder = Folder::new();
        folder.push(&code_only);
        assert!(folder.push(&d));
        assert!(folder.push(&d));
        assert_eq!(folder.view_json(), expected);
        check_view(
            &[
                code_only.clone(),
                dispatch(
                    event_type,
                    json!({"questions":"invalid"}),
                    false,
                    pending_text,
                ),
            ],
            EMPTY_VIEW,
        );
        check_view(
            &[
                code_only.clone(),
                dispatch(event_type, call1_arguments(), true, pending_text),
            ],
            EMPTY_VIEW,
        );
        check_view(
            &[
                code_only.clone(),
                dispatch(event_type, call1_arguments(), false, r#"{"answers":[]}"#),
            ],
            EMPTY_VIEW,
        );
        // Arguments given as a JSON string are unreadable: they must be an object.
        check_view(
            &[
                code_only.clone(),
                dispatch(
                    event_type,
                    json!(call1_arguments().to_string()),
                    false,
                    pending_text,
                ),
            ],
            EMPTY_VIEW,
        );
    }
    // A later result naming a tracked sub-call is folded by the tool/result rule.
    check_view(
        &[
            code_only.clone(),
            dispatch("tool/ptc-dispatch", call1_arguments(), false, pending_text),
            result(
                "run_1:ptc:1",
                r#"{"answers":[{"id":"scope","selected":["Everything"]}]}"#,
            ),
        ],
        r#"{"active":[],"settled":[{"callId":"run_1:ptc:1","answers":[{"id":"scope","selected":["Everything"]}]}]}"#,
    );
}

#[test]
fn p10_unreadable_replies_settle_with_no_answers() {
    let continued = [timed_header(), call1(), pending("call_ask_1")];
    for reply_line in [
        reply("call_ask_1", "no json here"),
        reply("call_ask_1", r#"{"answers":"nope"}"#),
        reply_blocks("call_ask_1", json!([]), None),
        record(
            "user/message",
            json!({"id":"r","role":"user","source":{"kind":"user-question-reply","callId":"call_ask_1"}}),
        ),
    ] {
        let mut lines = continued.to_vec();
        lines.push(reply_line);
        check_view(&lines, &call1_settled("[]"));
    }
}

#[test]
fn p11_irrelevant_events_are_unchanged() {
    let start = [timed_header(), call1()];
    for line in [
        turn_start(),
        timed_header(),
        call("call_bash", "bash", r#"{"command":"ls"}"#),
        call(
            "call_bad",
            "ask_user_question",
            r#"{"questions": [{"id": "broken""#,
        ),
        splice_insert(json!({"id":"u","role":"user","source":{"kind":"user"},"content":[]})),
        user_text(&reply_json("call_ask_1", json!([]))),
        reply("call_other", "{}"),
        result(
            "call_other",
            r#"{"answers":[{"id":"scope","selected":["Tool only"]}]}"#,
        ),
    ] {
        let mut folder = Folder::new();
        folder.push_all(&start);
        let event = SessionEvent::from_record(&line, folder.seq)
            .unwrap()
            .into_events()
            .next()
            .unwrap();
        assert_eq!(folder.state.apply(&event), Applied::Unchanged, "{line}");
    }
}

#[test]
fn p12_reask_moves_to_the_end_and_settles_twice() {
    let mut folder = Folder::new();
    folder.push_all(&[timed_header(), call1(), ask("call_2")]);
    let ids = |f: &Folder| {
        f.state
            .view()
            .active
            .iter()
            .map(|a| (a.call_id.to_string(), a.state))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        ids(&folder),
        [
            ("call_ask_1".into(), ActiveState::Open),
            ("call_2".into(), ActiveState::Open)
        ]
    );
    folder.push(&pending("call_ask_1"));
    assert_eq!(
        ids(&folder),
        [
            ("call_ask_1".into(), ActiveState::Continued),
            ("call_2".into(), ActiveState::Open)
        ]
    );
    assert!(folder.push(&call1()), "re-asking is a change");
    assert_eq!(
        ids(&folder),
        [
            ("call_2".into(), ActiveState::Open),
            ("call_ask_1".into(), ActiveState::Open)
        ]
    );
    // Re-logging the call while it is already last is still `Changed`.
    let before = folder.state.clone();
    assert!(folder.push(&call1()));
    assert_eq!(folder.state, before);

    let answered = result(
        "call_ask_1",
        r#"{"answers":[{"id":"scope","selected":["Tool only"]}]}"#,
    );
    let mut folder = Folder::new();
    folder.push_all(&[timed_header(), call1(), answered.clone(), call1(), answered]);
    let settled = &folder.state.view().settled;
    assert_eq!(settled.len(), 2);
    assert!(settled.iter().all(|s| s.call_id == "call_ask_1"));
}

#[test]
fn p13_first_text_block_rules() {
    #[track_caller]
    fn check(content: serde_json::Value, expected: &str) {
        check_view(
            &[
                timed_header(),
                call1(),
                result_blocks("call_ask_1", content),
            ],
            expected,
        );
    }
    check(json!([]), EMPTY_VIEW);
    check(
        json!([{"type":"image","data":"…"},{"type":"text","text":"{\"pending\":true}"}]),
        &call1_active("continued"),
    );
    check(
        json!([{"type":"text","text":"Here you go:"},{"type":"text","text":"{\"pending\":true}"}]),
        EMPTY_VIEW,
    );
    check(
        json!([{"type":"text","text":"Here you go:"},{"type":"text","text":"{\"answers\":[]}"}]),
        EMPTY_VIEW,
    );
    // A text block whose `text` is not a string carries no JSON.
    check(json!([{"type":"text","text":{"pending":true}}]), EMPTY_VIEW);
    check_view(
        &[
            timed_header(),
            call1(),
            pending("call_ask_1"),
            reply_blocks(
                "call_ask_1",
                json!([{"type":"text","text":"Answers:"},{"type":"text","text":reply_json("call_ask_1", json!([{"id":"scope","selected":["Everything"]}]))}]),
                None,
            ),
        ],
        &call1_settled("[]"),
    );
}

#[track_caller]
fn rejected(json: &str) -> RestoreError {
    restore(json).expect_err(json)
}

#[test]
fn p14_restore_is_strict() {
    let full = r##"{"inheritedEventCount":3,"timed":true,"questions":{"active":[{"callId":"call_ask_1","questions":[{"id":"plan","question":"Approve?","detail":"# Plan","header":"Review","options":[{"label":"Approve","description":"Ship it."},{"label":"Refuse"}],"multiSelect":false},{"id":"bare","question":"Anything else?"}],"state":"continued"}],"settled":[{"callId":"call_ask_0","answers":[{"id":"a","selected":["x"],"custom":""},{"id":"b","selected":[]}],"provenance":{"answerer":"ui","answeredBy":"human"}}]}}"##;
    let state = restore(full).unwrap();
    assert_eq!(state.to_json(), full);
    assert_eq!(state.inherited_event_count(), 3);
    assert!(state.timed());
    let bare = &view(&state).active[0].questions[1];
    assert_eq!(bare.options, None);
    assert!(!serde_json::to_string(bare).unwrap().contains("options"));

    let entry =
        r#"{"callId":"call_ask_1","questions":[{"id":"x","question":"Q?"}],"state":"open"}"#;
    let twice = format!(
        r#"{{"inheritedEventCount":0,"timed":true,"questions":{{"active":[{entry},{entry}],"settled":[]}}}}"#
    );
    let error = rejected(&twice);
    assert!(error.to_string().contains("call_ask_1"), "{error}");
    assert!(matches!(error, RestoreError::DuplicateActive(ref id) if id == "call_ask_1"));

    assert!(matches!(
        rejected(&full.replace(r#""callId":"call_ask_1""#, r#""callId":"""#)),
        RestoreError::EmptyCallId { list: "active" }
    ));
    assert!(matches!(
        rejected(&full.replace(r#""callId":"call_ask_0""#, r#""callId":"""#)),
        RestoreError::EmptyCallId { list: "settled" }
    ));
    // An extra key anywhere is rejected.
    for (from, to) in [
        (r#""timed":true"#, r#""timed":true,"x":1"#),
        (r#""settled":["#, r#""x":1,"settled":["#),
        (r#""state":"continued""#, r#""state":"continued","x":1"#),
        (r#""id":"bare""#, r#""id":"bare","x":1"#),
        (r#""label":"Refuse""#, r#""label":"Refuse","x":1"#),
        (r#""selected":[]"#, r#""selected":[],"x":1"#),
        (r#""answeredBy":"human""#, r#""answeredBy":"human","x":1"#),
        (r#""callId":"call_ask_0""#, r#""callId":"call_ask_0","x":1"#),
        (
            r#""multiSelect":false"#,
            r#""multiSelect":false,"intent":null"#,
        ),
    ] {
        let changed = full.replacen(from, to, 1);
        assert_ne!(changed, full, "{from}");
        assert!(
            matches!(rejected(&changed), RestoreError::Shape(_)),
            "{changed}"
        );
    }
    // Wrong types, `null` for optional keys, unknown states, missing keys.
    for (from, to) in [
        (r#""header":"Review""#, r#""header":null"#),
        (r#""custom":"""#, r#""custom":null"#),
        (r#""state":"continued""#, r#""state":"pending""#),
        (r#""inheritedEventCount":3"#, r#""inheritedEventCount":-1"#),
        (r#""inheritedEventCount":3"#, r#""inheritedEventCount":3.5"#),
        (r#""timed":true,"#, ""),
        (r#""answeredBy":"human""#, r#""answeredBy":"robot""#),
    ] {
        let changed = full.replacen(from, to, 1);
        assert_ne!(changed, full, "{from}");
        assert!(
            matches!(rejected(&changed), RestoreError::Shape(_)),
            "{changed}"
        );
    }
    assert!(matches!(
        rejected(&full.replace(
            r#""inheritedEventCount":3"#,
            r#""inheritedEventCount":9007199254740992"#
        )),
        RestoreError::InheritedEventCount(_)
    ));
    assert!(matches!(
        rejected(&full.replace(
            r#""questions":[{"id":"plan""#,
            r#""questions":[],"x":[{"id":"plan""#
        )),
        RestoreError::Shape(_)
    ));
    let no_questions = r#"{"inheritedEventCount":0,"timed":true,"questions":{"active":[{"callId":"c","questions":[],"state":"open"}],"settled":[]}}"#;
    assert!(matches!(
        rejected(no_questions),
        RestoreError::NoQuestions(_)
    ));
    // Deep nesting is refused without overflowing the stack; so are repeated keys (a checkpoint
    // is written by us, so a repeated key means it was not).
    let deep = format!(
        r#"{{"inheritedEventCount":0,"timed":true,"questions":{{"active":{}{},"settled":[]}}}}"#,
        "[".repeat(1_000_000),
        "]".repeat(1_000_000)
    );
    assert!(matches!(rejected(&deep), RestoreError::Shape(_)));
    assert!(matches!(
        rejected(&full.replacen(r#""timed":true"#, r#""timed":true,"timed":true"#, 1)),
        RestoreError::Shape(_)
    ));
    // The initial state round-trips.
    let initial = UserQuestionsState::new(0);
    assert_eq!(restore(&initial.to_json()).unwrap(), initial);
}

#[test]
fn p15_argument_reader() {
    #[track_caller]
    fn check(arguments: &str, expected: Option<&str>) {
        let read = questions_from_arguments(arguments).map(|q| serde_json::to_string(&q).unwrap());
        assert_eq!(read.as_deref(), expected, "{arguments}");
    }
    check(r#"{"questions":[]}"#, None);
    check(r#"{"questions":[{"id":"x"}]}"#, None);
    check("[]", None);
    check(
        r#"{"questions":[{"id":"x","question":"Q?","header":null}]}"#,
        None,
    );
    check(
        r#"{"questions":[{"id":"x","question":"Q?"}]}"#,
        Some(r#"[{"id":"x","question":"Q?"}]"#),
    );
    check(
        r#"{"questions":[{"id":"x","question":"Q?","header":"A header of 20 chars"}]}"#,
        Some(r#"[{"id":"x","question":"Q?","header":"A header of 20 chars"}]"#),
    );
    // Extra keys are tolerated anywhere; `multi_select` becomes `multiSelect`; repeated ids stay.
    check(
        r#"{"timeout":30,"questions":[{"id":"x","question":"Q?","options":[{"label":"a","x":1}],"multi_select":false,"y":2},{"id":"x","question":"R?"}]}"#,
        Some(
            r#"[{"id":"x","question":"Q?","options":[{"label":"a"}],"multiSelect":false},{"id":"x","question":"R?"}]"#,
        ),
    );
    // Wrong types anywhere make the whole call unreadable.
    check(r#"{"questions":[{"id":1,"question":"Q?"}]}"#, None);
    check(
        r#"{"questions":[{"id":"x","question":"Q?","options":{}}]}"#,
        None,
    );
    check(
        r#"{"questions":[{"id":"x","question":"Q?","options":[{"label":"a","description":2}]}]}"#,
        None,
    );
    check(
        r#"{"questions":[{"id":"x","question":"Q?","multi_select":"yes"}]}"#,
        None,
    );
    check(r#"{"questions":[{"id":"x","question":"Q?"}, 5]}"#, None);
    check(r#"{"questions":"[]"}"#, None);
    check("not json", None);
    check(
        r#"{"questions":[{"id":"x","question":"Q?"}]} trailing"#,
        None,
    );
    assert_eq!("A header of 20 chars".chars().count(), 20);
}

#[test]
fn p16_inherited_prefix_and_init() {
    let header = SessionHeader::new("s1", 4);
    let mut state = init(&header, 2);
    for (seq, line) in [(0, timed_header()), (1, call1())] {
        let event = SessionEvent::from_record(&line, seq)
            .unwrap()
            .into_events()
            .next()
            .unwrap();
        assert_eq!(apply(&state, &event), Applied::Unchanged);
    }
    state = init(&header, 0);
    let event = |line: &str, seq| {
        SessionEvent::from_record(line, seq)
            .unwrap()
            .into_events()
            .next()
            .unwrap()
    };
    let Applied::Changed(next) = apply(&state, &event(&timed_header(), 0)) else {
        panic!("a timed header changes the state")
    };
    state = next;
    assert_eq!(
        state.to_json(),
        r#"{"inheritedEventCount":0,"timed":true,"questions":{"active":[],"settled":[]}}"#
    );
    let Applied::Changed(next) = apply(&state, &event(&call1(), 1)) else {
        panic!("a timed call changes the state")
    };
    state = next;
    assert_eq!(
        serde_json::to_string(view(&state)).unwrap(),
        call1_active("open")
    );
    assert_eq!(apply(&state, &event(&turn_start(), 2)), Applied::Unchanged);
    assert_eq!(STATE_VERSION, 2);
    assert_eq!(PROJECTION_KEY, "userQuestions");
}

/// A log exercising every rule, used for P17.
fn p17_log() -> Vec<String> {
    vec![
        turn_start(),
        timed_header(),
        call1(),
        ask("call_2"),
        pending("call_ask_1"),
        result(
            "call_2",
            r#"{"answers":[{"id":"scope","selected":["Everything"]}]}"#,
        ),
        ask("call_3"),
        unknown_outcome("call_3"),
        legacy_header(),
        ask("call_legacy"),
        reply("call_ask_1", &reply_json("call_ask_1", json!([]))),
        timed_header(),
        ask("call_4"),
        error_result("call_4", "ASK_CANCELLED"),
        record(
            "reasoning-chunks",
            json!({"turn":1,"step":1,"index":0,"dt":[1,2],"texts":["a","b","c"]}),
        ),
        dispatch(
            "tool/ptc-dispatch",
            call1_arguments(),
            false,
            r#"{"pending":true}"#,
        ),
        record("turn/end", json!({"turn":1,"reason":{"kind":"completed"}})),
    ]
}

#[test]
fn p17_whole_equals_incremental_equals_resume() {
    let lines = p17_log();
    let mut folder = Folder::new();
    folder.push_all(&lines);
    let file = log_file(&lines);
    let whole = fold_log(file.as_bytes()).unwrap();
    assert!(whole.report.is_clean(), "{:?}", whole.report);
    assert_eq!(whole.state, folder.state);
    assert_eq!(whole.state.view().active.len(), 2);
    assert_eq!(whole.state.view().settled.len(), 2);

    // Resume from a checkpoint after every record.
    let header_len = file.find('\n').unwrap() + 1;
    let mut offset = header_len;
    let mut partial = Folder::new();
    for (i, line) in file[header_len..].split_inclusive('\n').enumerate() {
        offset += line.len();
        partial.push(line.trim_end());
        let at = user_questions_projection::ScanPosition {
            byte_offset: offset as u64,
            line: i as u64 + 2,
            expected_seq: partial.seq,
            events: partial.seq,
        };
        let resumed = resume_fold(
            &file.as_bytes()[offset..],
            whole.header.clone(),
            partial.state.clone(),
            at,
        )
        .unwrap();
        assert_eq!(resumed.state, whole.state, "resumed after record {i}");
        assert_eq!(resumed.report.end, whole.report.end);
    }
}

#[test]
fn p18_result_layouts_fold_identically() {
    let text = r#"{"answers":[{"id":"scope","selected":["Tool only"]}]}"#;
    let a = result("call_ask_1", text);
    let b = record(
        "tool/result",
        json!({"turn":1,"step":1,"message":{"source":{"kind":"tool","callId":"call_ask_1"},"content":[{"type":"tool-result","toolCallId":"call_ask_1","content":[{"type":"text","text":text}],"isError":false}],"role":"user","id":"m"}}),
    );
    let c = record(
        "tool/result",
        json!({"turn":1,"step":1,"callId":"call_ask_1","content":[{"type":"text","text":text}],"isError":false}),
    );
    let expected = call1_settled(r#"[{"id":"scope","selected":["Tool only"]}]"#);
    for layout in [&a, &b, &c] {
        check_view(&[timed_header(), call1(), layout.clone()], &expected);
    }
    // The same for a pending and an error result in every layout.
    let pending_text = r#"{"pending":true}"#;
    for layout in [
        result("call_ask_1", pending_text),
        b.replace(
            &serde_json::to_string(text).unwrap(),
            &serde_json::to_string(pending_text).unwrap(),
        ),
        c.replace(
            &serde_json::to_string(text).unwrap(),
            &serde_json::to_string(pending_text).unwrap(),
        ),
    ] {
        check_view(
            &[timed_header(), call1(), layout],
            &call1_active("continued"),
        );
    }
    for layout in [
        result_with("call_ask_1", text, true, json!({})),
        b.replace(r#""isError":false"#, r#""isError":true"#),
        c.replace(r#""isError":false"#, r#""isError":true"#),
    ] {
        check_view(&[timed_header(), call1(), layout], EMPTY_VIEW);
    }
    // A result in none of the layouts is ignored.
    check_view(
        &[
            timed_header(),
            call1(),
            record(
                "tool/result",
                json!({"turn":1,"step":1,"message":{"content":[]}}),
            ),
        ],
        &call1_active("open"),
    );
}

#[test]
fn p19_reply_for_an_unknown_call_is_unchanged() {
    let mut folder = Folder::new();
    folder.push_all(&[timed_header(), call1(), pending("call_ask_1")]);
    assert!(!folder.push(&reply("c9", &reply_json("c9", json!([])))));
    assert_eq!(folder.view_json(), call1_active("continued"));
}

#[test]
fn p20_reply_source_round_trips_through_the_log() {
    for provenance in [None, Some(Provenance::human("ui"))] {
        let mut source = MessageSource::of_kind(MessageSource::REPLY_KIND);
        source.call_id = Some("call_ask_1".into());
        source.outcome = Some("answered".into());
        source.provenance.clone_from(&provenance);
        let mut message = UserMessage::user_text("msg-1", reply_json("call_ask_1", json!([])));
        message.source = source;
        // The message as the host logs it, through the seam's own serialisation.
        let line = format!(
            r#"{{"type":"user/message","seq":5,"time":1,"data":{},"surfaceOp":"append"}}"#,
            serde_json::to_string(&message).unwrap()
        );
        let record = SessionEvent::from_record(&line, 5).unwrap();
        let EventBody::UserMessage(read) = &record.event().unwrap().body else {
            panic!("not a user message")
        };
        assert_eq!(read.id.as_deref(), Some("msg-1"));
        let read_source = read.source.as_ref().unwrap();
        assert_eq!(read_source.kind.as_deref(), Some(MessageSource::REPLY_KIND));
        assert_eq!(read_source.call_id.as_ref().unwrap(), "call_ask_1");
        assert_eq!(read_source.outcome.as_deref(), Some("answered"));
        assert_eq!(read_source.provenance, provenance);
        assert_eq!(read.reply_call_id().unwrap(), "call_ask_1");
        // The source we read is the source that was written.
        let written: serde_json::Value = serde_json::to_value(&message.source).unwrap();
        let mut rebuilt = MessageSource::of_kind(read_source.kind.clone().unwrap());
        rebuilt.call_id.clone_from(&read_source.call_id);
        rebuilt.outcome.clone_from(&read_source.outcome);
        rebuilt.provenance.clone_from(&read_source.provenance);
        assert_eq!(serde_json::to_value(&rebuilt).unwrap(), written);
    }
}

#[test]
fn x2_provenance_in_the_projection() {
    let answers = r#"{"answers":[{"id":"scope","selected":["Tool only"]}]}"#;
    let with_meta = result_with(
        "call_ask_1",
        answers,
        false,
        json!({"meta":{"provenance":{"answerer":"ui","answeredBy":"human"}}}),
    );
    let state = {
        let mut f = Folder::new();
        f.push_all(&[timed_header(), call1(), with_meta]);
        f.state
    };
    let settled = &state.view().settled[0];
    assert_eq!(settled.provenance, Some(Provenance::human("ui")));
    assert!(
        state
            .to_json()
            .contains(r#""provenance":{"answerer":"ui","answeredBy":"human"}"#)
    );

    let mut f = Folder::new();
    f.push_all(&[
        timed_header(),
        call1(),
        pending("call_ask_1"),
        reply_blocks(
            "call_ask_1",
            json!([{"type":"text","text":reply_json("call_ask_1", json!([]))}]),
            Some(json!({"answerer":"scripted","answeredBy":"rule"})),
        ),
    ]);
    let settled = &f.state.view().settled[0];
    assert_eq!(
        settled.provenance.as_ref().map(|p| p.answered_by),
        Some(AnsweredBy::Rule)
    );

    // Without provenance (every reference log) the key is absent, exactly as before.
    let plain = view_of(&[timed_header(), call1(), result("call_ask_1", answers)]);
    assert_eq!(
        plain,
        call1_settled(r#"[{"id":"scope","selected":["Tool only"]}]"#)
    );
    // A malformed provenance is omitted; the answer still settles.
    for bad in [
        json!({"answerer":"ui"}),
        json!({"answerer":"ui","answeredBy":"robot"}),
        json!({"answerer":"ui","answeredBy":"human","extra":1}),
        json!("ui"),
    ] {
        let line = result_with(
            "call_ask_1",
            answers,
            false,
            json!({"meta":{"provenance":bad}}),
        );
        assert_eq!(
            view_of(&[timed_header(), call1(), line]),
            call1_settled(r#"[{"id":"scope","selected":["Tool only"]}]"#)
        );
    }
}
