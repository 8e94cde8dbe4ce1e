//! The log reading layer: `seq` assignment (§7.3, §7.4), findings (§9.6), header rules and forks
//! (§7.2), and the deliberate reading differences of §7.8. Scenario ids L4–L6 and L12 are the
//! reading parts of §12.8; the store crate adds the file-level parts.
// Test code stops at its first broken expectation: unwrap and expect are assertions here.
#![allow(clippy::unwrap_used, clippy::expect_used)]
// Fixture builders take JSON values by value so that call sites can pass `json!` literals.
#![allow(clippy::needless_pass_by_value)]

mod common;

use common::*;
use serde_json::json;
use user_questions_projection::{
    ActiveState, CorruptReason, CutRule, EventBody, FoldedLog, HeaderError, LogFinding, LogScanner,
    OpenError, Scanned, SeqGap, SessionEvent, SessionHeader, TornTail, fold_log, seq_after_record,
};

const V4_HEADER: &str =
    r#"{"type":"session","version":4,"id":"s1","createdAt":0,"isSeeded":false}"#;

/// A log from a header and raw record lines (each gets its `\n`).
fn log(header: &str, lines: &[&str]) -> String {
    let mut out = format!("{header}\n");
    for line in lines {
        out.push_str(line);
        out.push('\n');
    }
    out
}

#[track_caller]
fn fold(text: &str) -> FoldedLog {
    fold_log(text.as_bytes()).unwrap()
}

#[track_caller]
fn fold_bytes(bytes: &[u8]) -> FoldedLog {
    fold_log(bytes).unwrap()
}

/// The records of a timed call that goes pending, with explicit seqs 0..=2.
fn continued_call() -> Vec<String> {
    vec![
        with_seq(&timed_header(), 0),
        with_seq(&call1(), 1),
        with_seq(&pending("call_ask_1"), 2),
    ]
}

fn view_json(folded: &FoldedLog) -> String {
    serde_json::to_string(folded.state.view()).unwrap()
}

#[test]
fn l4_corrupt_middle_line_is_skipped_and_reported() {
    let mut lines = continued_call();
    lines.push(with_seq(&turn_start(), 3));
    lines.push(r#"{"type":"turn/end","seq":4,"data":{"turn":1"#.to_owned()); // line 6: not JSON
    lines.push(with_seq(&reply("call_ask_1", "{}"), 5));
    let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
    let text = log(V4_HEADER, &lines);
    let folded = fold(&text);
    let corrupt = &folded.report.corrupt_lines;
    assert_eq!(corrupt.len(), 1);
    assert_eq!(corrupt[0].line, 6);
    let offset = text.find(r#"{"type":"turn/end""#).unwrap() as u64;
    assert_eq!(corrupt[0].byte_offset, offset);
    assert_eq!(corrupt[0].len, lines[4].len() as u64 + 1);
    assert!(matches!(corrupt[0].reason, CorruptReason::NotJson(_)));
    // The skipped line consumed no seq, so the next explicit seq is a gap.
    assert_eq!(
        folded.report.seq_gaps,
        [SeqGap {
            line: 7,
            expected: 4,
            found: 5
        }]
    );
    // The reply after it is folded: the reference would still show the call continued.
    assert_eq!(view_json(&folded), call1_settled("[]"));
    assert_eq!(folded.report.end.expected_seq, 6);
    assert_eq!(folded.report.end.byte_offset, text.len() as u64);
}

#[test]
fn l5_seq_gap_is_reported_and_the_explicit_value_used() {
    let mut lines = Vec::new();
    for seq in 0..8 {
        lines.push(with_seq(&turn_start(), seq));
    }
    lines.push(with_seq(&turn_start(), 9));
    lines.push(turn_start()); // no seq: gets 10
    let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
    let folded = fold(&log(V4_HEADER, &lines));
    assert_eq!(
        folded.report.seq_gaps,
        [SeqGap {
            line: 10,
            expected: 8,
            found: 9
        }]
    );
    assert_eq!(folded.report.end.expected_seq, 11);
    assert_eq!(folded.report.end.events, 10);
}

#[test]
fn l6_missing_header_positional_seq_and_packed_rows() {
    for (text, expected) in [
        ("", HeaderError::Missing),
        (V4_HEADER, HeaderError::Missing),
        ("\n", HeaderError::NotJson(String::new())),
        (
            "{\"type\":\"turn/start\",\"data\":{}}\n",
            HeaderError::NotSession,
        ),
        ("{\"type\":\"session\",\"id\":5}\n", HeaderError::NoId),
        (
            "{\"type\":\"session\",\"id\":\"s\",\"version\":\"4\"}\n",
            HeaderError::BadVersion,
        ),
        (
            "{\"type\":\"session\",\"id\":\"s\",\"version\":4.5}\n",
            HeaderError::BadVersion,
        ),
        ("[1]\n", HeaderError::NotJson(String::new())),
    ] {
        let error = fold_log(text.as_bytes()).expect_err(text);
        match (error, expected) {
            (OpenError::Header(HeaderError::NotJson(_)), HeaderError::NotJson(_)) => {}
            (OpenError::Header(actual), expected) => assert_eq!(actual, expected, "{text:?}"),
            (other, _) => panic!("{text:?}: {other}"),
        }
    }

    // A fixture without seq/time: positional seqs; a packed row of 4 members takes 4.
    let packed = record(
        "reasoning-chunks",
        json!({"turn":1,"step":1,"index":0,"dt":[1,1,1],"texts":["a","b","c","d"]}),
    );
    let text = log(
        r#"{"type":"session","id":"fixture","createdAt":0}"#,
        &[&turn_start(), &packed, &turn_start()],
    );
    let (_, mut scanner) = LogScanner::open(text.as_bytes()).unwrap();
    let mut seqs = Vec::new();
    while let Some(Scanned::Record(r)) = scanner.next_line().unwrap() {
        seqs.extend(
            r.record
                .into_events()
                .map(|e| (e.seq, e.event_type().to_owned())),
        );
    }
    assert_eq!(
        seqs,
        [
            (0, "turn/start".to_owned()),
            (1, "assistant/chunk".to_owned()),
            (2, "assistant/chunk".to_owned()),
            (3, "assistant/chunk".to_owned()),
            (4, "assistant/chunk".to_owned()),
            (5, "turn/start".to_owned()),
        ]
    );
    assert!(scanner.report().is_clean());
    assert_eq!(scanner.position().expected_seq, 6);
    // The fixture header has no version: reported, read as 0.
    assert_eq!(fold(&text).findings, [LogFinding::VersionMissing]);
}

#[test]
fn packed_rows_with_seq0_and_malformed_rows() {
    let text = log(
        V4_HEADER,
        &[
            &with_seq(&turn_start(), 0),
            r#"{"type":"tool-call-chunks","seq0":1,"time0":5,"data":{"turn":1,"step":1,"index":0,"dt":[1],"id":"c","name":"bash","args":["{","}"]}}"#,
            &with_seq(&turn_start(), 3),
            r#"{"type":"text-chunks","seq0":4}"#,
            r#"{"type":"text-chunks","seq0":4,"data":{"texts":"abc"}}"#,
            r#"{"type":"tool-call-chunks","seq0":4,"data":{"texts":["a"]}}"#,
            r#"{"type":"text-chunks","seq0":-4,"data":{"texts":["a"]}}"#,
            r#"{"type":"text-chunks","seq0":4,"data":{"texts":[]}}"#,
            &with_seq(&turn_start(), 4),
        ],
    );
    let folded = fold(&text);
    let reasons: Vec<_> = folded
        .report
        .corrupt_lines
        .iter()
        .map(|c| (c.line, c.reason.clone()))
        .collect();
    assert_eq!(
        reasons,
        [
            (5, CorruptReason::MalformedPackedRow),
            (6, CorruptReason::MalformedPackedRow),
            (7, CorruptReason::MalformedPackedRow),
            (8, CorruptReason::BadSeq),
        ]
    );
    // An empty packed row occupies no seq.
    assert!(folded.report.seq_gaps.is_empty(), "{:?}", folded.report);
    assert_eq!(folded.report.end.expected_seq, 5);
}

#[test]
fn corrupt_line_reasons() {
    #[track_caller]
    fn check(line: &str, expected: &CorruptReason) {
        let text = log(V4_HEADER, &[line, &turn_start()]);
        let folded = fold(&text);
        let corrupt = &folded.report.corrupt_lines;
        assert_eq!(corrupt.len(), 1, "{line:?}: {corrupt:?}");
        assert_eq!(corrupt[0].line, 2);
        assert_eq!(corrupt[0].byte_offset, V4_HEADER.len() as u64 + 1);
        match (&corrupt[0].reason, expected) {
            (CorruptReason::NotJson(_), CorruptReason::NotJson(_)) => {}
            (actual, expected) => assert_eq!(actual, expected, "{line:?}"),
        }
        // The line consumed no seq.
        assert_eq!(folded.report.end.expected_seq, 1);
        assert!(SessionEvent::from_record(line, 0).is_err());
    }
    let not_json = CorruptReason::NotJson(String::new());
    check("", &CorruptReason::Blank);
    check("   \t\r", &CorruptReason::Blank);
    check("null", &CorruptReason::NotObject);
    check("[1,2]", &CorruptReason::NotObject);
    check("42", &CorruptReason::NotObject);
    check(r#""turn/start""#, &CorruptReason::NotObject);
    check("{not json", &not_json);
    check(r#"{"type":"turn/start"} {"type":"turn/end"}"#, &not_json);
    check(r#"{"type":"turn/start"}x"#, &not_json);
    check(r#"{"data":{}}"#, &CorruptReason::NoType);
    check(r#"{"type":7,"data":{}}"#, &CorruptReason::NoType);
    check(r#"{"type":null}"#, &CorruptReason::NoType);
    for seq in [
        "-1",
        "1.5",
        "\"3\"",
        "null",
        "true",
        "1e3",
        "18446744073709551616",
    ] {
        check(
            &format!(r#"{{"type":"turn/start","seq":{seq}}}"#),
            &CorruptReason::BadSeq,
        );
    }
    check(
        r#"{"type":"turn/start","seq":0,"data":{"turn":1},}"#,
        &not_json,
    );
}

#[test]
fn torn_tail_is_reported_and_never_decoded() {
    let complete = log(
        V4_HEADER,
        &continued_call()
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
    );
    let fragment = with_seq(&reply("call_ask_1", "{}"), 3);
    let text = format!("{complete}{fragment}");
    let folded = fold(&text);
    assert_eq!(
        folded.report.torn_tail,
        Some(TornTail {
            byte_offset: complete.len() as u64,
            len: fragment.len() as u64
        })
    );
    assert_eq!(folded.report.end.byte_offset, complete.len() as u64);
    // The complete-looking last line is a torn tail: the call is still continued.
    assert_eq!(view_json(&folded), call1_active("continued"));
    assert_eq!(folded.state, fold(&complete).state);
}

#[test]
fn fork_cut_by_format_version() {
    let parent_call = [with_seq(&timed_header(), 0), with_seq(&call1(), 1)];
    let own = |seq: u64| {
        vec![
            with_seq(&record("session/end-seed", json!({"inherited":true})), seq),
            with_seq(&timed_header(), seq + 1),
            with_seq(&ask("call_child"), seq + 2),
        ]
    };
    let child_view = r#""callId":"call_child""#;
    let lines_for = |header: &str, records: &[String]| {
        log(
            header,
            &records.iter().map(String::as_str).collect::<Vec<_>>(),
        )
    };
    let forked: Vec<String> = parent_call.iter().cloned().chain(own(2)).collect();

    // Version 4, seeded, marker at seq 2: the parent's call and header are not inherited.
    let v4_seeded = r#"{"type":"session","version":4,"id":"c","createdAt":0,"isSeeded":true}"#;
    let folded = fold(&lines_for(v4_seeded, &forked));
    assert_eq!(folded.state.inherited_event_count(), 2);
    let view = view_json(&folded);
    assert!(
        view.contains(child_view) && !view.contains("call_ask_1"),
        "{view}"
    );
    assert!(folded.findings.is_empty(), "{:?}", folded.findings);

    // Without its own header the child is legacy: the parent's timed header is not inherited.
    let no_header: Vec<String> = parent_call
        .iter()
        .cloned()
        .chain([
            with_seq(&record("session/end-seed", json!({"inherited":true})), 2),
            with_seq(&ask("call_child"), 3),
        ])
        .collect();
    let folded = fold(&lines_for(v4_seeded, &no_header));
    assert!(!folded.state.timed());
    assert_eq!(view_json(&folded), EMPTY_VIEW);

    // A plain end-seed is a resume marker, not a cut; the last inherited marker wins.
    let mut two_markers = forked.clone();
    two_markers.push(with_seq(&record("session/end-seed", json!({})), 5));
    two_markers.push(with_seq(
        &record("session/end-seed", json!({"inherited":true})),
        6,
    ));
    two_markers.push(with_seq(&timed_header(), 7));
    two_markers.push(with_seq(&ask("call_late"), 8));
    let folded = fold(&lines_for(v4_seeded, &two_markers));
    assert_eq!(folded.state.inherited_event_count(), 6);
    let view = view_json(&folded);
    assert!(
        view.contains("call_late") && !view.contains(child_view),
        "{view}"
    );

    // Seeded without a marker: reported, folded as unseeded.
    let folded = fold(&lines_for(v4_seeded, &parent_call));
    assert_eq!(folded.findings, [LogFinding::SeededWithoutMarker]);
    assert_eq!(view_json(&folded), call1_active("open"));

    // Unseeded with a marker: reported, ignored.
    let folded = fold(&lines_for(V4_HEADER, &forked));
    assert_eq!(
        folded.findings,
        [LogFinding::UnseededMarker { line: 4, seq: 2 }]
    );
    assert_eq!(folded.state.inherited_event_count(), 0);
    assert!(view_json(&folded).contains("call_ask_1"));

    // Versions 0 and 1: `seedLength` decides; markers and `isSeeded` are not consulted.
    for header in [
        r#"{"type":"session","version":1,"id":"c","createdAt":0,"seedLength":2,"isSeeded":false}"#,
        r#"{"type":"session","id":"c","createdAt":0,"seedLength":2}"#,
    ] {
        let folded = fold(&lines_for(header, &forked));
        assert_eq!(folded.state.inherited_event_count(), 2, "{header}");
        assert!(view_json(&folded).contains(child_view));
    }
    let v0_marker_elsewhere =
        r#"{"type":"session","version":0,"id":"c","createdAt":0,"seedLength":1,"isSeeded":true}"#;
    let folded = fold(&lines_for(v0_marker_elsewhere, &forked));
    assert_eq!(folded.state.inherited_event_count(), 1);
    assert!(folded.findings.is_empty());
    for bad in ["-1", "1.5", "\"2\"", "9007199254740992"] {
        let header = format!(
            r#"{{"type":"session","version":0,"id":"c","createdAt":0,"seedLength":{bad}}}"#
        );
        let parsed = SessionHeader::parse(&header).unwrap();
        assert_eq!(parsed.cut_rule(), CutRule::Fixed(0), "{bad}");
    }

    // A marker that is not above every earlier seq (after a backwards jump) still cuts, reported.
    let out_of_order: Vec<String> = vec![
        with_seq(&timed_header(), 0),
        with_seq(&call1(), 9),
        with_seq(&record("session/end-seed", json!({"inherited":true})), 5),
        with_seq(&timed_header(), 6),
        with_seq(&ask("call_child"), 7),
    ];
    let folded = fold(&lines_for(v4_seeded, &out_of_order));
    assert_eq!(
        folded.findings,
        [LogFinding::MarkerOutOfOrder { line: 4, seq: 5 }]
    );
    let view = view_json(&folded);
    assert!(
        view.contains(child_view) && !view.contains("call_ask_1"),
        "{view}"
    );
}

#[test]
fn l12_lone_surrogates_become_replacement_characters() {
    // In the record itself: the arguments string holds a lone surrogate.
    let record_level = r#"{"type":"tool/call","seq":1,"data":{"callId":"call_ask_1","name":"ask_user_question","arguments":"{\"questions\":[{\"id\":\"scope\",\"question\":\"Which \uD800 scope?\"}]}"}}"#;
    // In the argument text: the JSON inside the string escapes a lone surrogate.
    let argument_level = r#"{"type":"tool/call","seq":1,"data":{"callId":"call_ask_1","name":"ask_user_question","arguments":"{\"questions\":[{\"id\":\"scope\",\"question\":\"Which \\uDC00 scope?\"}]}"}}"#;
    for line in [record_level, argument_level] {
        let folded = fold(&log(V4_HEADER, &[&with_seq(&timed_header(), 0), line]));
        assert!(folded.report.is_clean(), "{:?}", folded.report);
        let active = &folded.state.view().active;
        assert_eq!(active.len(), 1, "{line}");
        assert_eq!(active[0].questions[0].question, "Which \u{FFFD} scope?");
    }
    // A valid pair is kept; an escaped backslash before `u` is not an escape.
    let kept = r#"{"type":"tool/call","seq":1,"data":{"callId":"c","name":"ask_user_question","arguments":"{\"questions\":[{\"id\":\"\\\\uD800\",\"question\":\"\uD83D\uDE00\"}]}"}}"#;
    let folded = fold(&log(V4_HEADER, &[&with_seq(&timed_header(), 0), kept]));
    let question = &folded.state.view().active[0].questions[0];
    assert_eq!(question.id, "\\uD800");
    assert_eq!(question.question, "😀");
    // In a reply text and a result text too.
    let mut lines = continued_call();
    lines.push(
        r#"{"type":"user/message","seq":3,"data":{"id":"r","source":{"kind":"user-question-reply","callId":"call_ask_1"},"content":[{"type":"text","text":"{\"answers\":[{\"id\":\"scope\",\"selected\":[],\"custom\":\"\\uD800x\\udfff\"}]}"}]}}"#
            .to_owned(),
    );
    let folded = fold(&log(
        V4_HEADER,
        &lines.iter().map(String::as_str).collect::<Vec<_>>(),
    ));
    assert_eq!(
        folded.state.view().settled[0].answers[0].custom.as_deref(),
        Some("\u{FFFD}x\u{FFFD}")
    );
}

#[test]
fn l12_invalid_utf8_is_read_lossily_and_reported() {
    let mut bytes = log(V4_HEADER, &[&with_seq(&timed_header(), 0)]).into_bytes();
    let call_offset = bytes.len() as u64;
    let call = with_seq(&call1(), 1).replace("Which scope?", "Which \u{1}scope?");
    bytes.extend(
        call.as_bytes()
            .iter()
            .map(|b| if *b == 1 { 0xFF } else { *b }),
    );
    bytes.push(b'\n');
    let folded = fold_bytes(&bytes);
    assert_eq!(folded.report.lossy_lines.len(), 1);
    assert_eq!(folded.report.lossy_lines[0].line, 3);
    assert_eq!(folded.report.lossy_lines[0].byte_offset, call_offset);
    assert!(folded.report.corrupt_lines.is_empty());
    assert_eq!(
        folded.state.view().active[0].questions[0].question,
        "Which \u{FFFD}scope?"
    );
}

#[test]
fn l12_deep_nesting_of_300_levels_is_read_without_report() {
    let deep = format!("{}{}", "[".repeat(300), "]".repeat(300));
    let line = format!(r#"{{"type":"assistant/message","seq":3,"data":{{"nested":{deep}}}}}"#);
    let mut lines = continued_call();
    lines.push(line);
    let folded = fold(&log(
        V4_HEADER,
        &lines.iter().map(String::as_str).collect::<Vec<_>>(),
    ));
    assert!(folded.report.is_clean(), "{:?}", folded.report);
    assert_eq!(view_json(&folded), call1_active("continued"));
}

/// Nesting a million levels deep, in records and in argument and message texts: no stack
/// overflow, no panic, the fold goes on.
#[test]
fn deep_nesting_of_a_million_levels() {
    const DEPTH: usize = 1_000_000;
    let arrays = format!("{}{}", "[".repeat(DEPTH), "]".repeat(DEPTH));
    let objects = format!("{}1{}", r#"{"a":"#.repeat(DEPTH), "}".repeat(DEPTH));
    let json_text = |s: &str| serde_json::to_string(s).unwrap();
    let lines = vec![
        with_seq(&timed_header(), 0),
        // An ignored event whose data nests deeply.
        format!(r#"{{"type":"assistant/message","seq":1,"data":{arrays}}}"#),
        // An unknown envelope key that nests deeply.
        format!(r#"{{"type":"turn/start","seq":2,"extra":{objects},"data":{{}}}}"#),
        // Deep nesting where the fold reads: a header's tools, a call's arguments (extra key and
        // the questions themselves), a result text, a reply text.
        format!(
            r#"{{"type":"request/header","seq":3,"data":{{"header":{{"tools":[{}, {}]}}}}}}"#,
            serde_json::to_string(&timed_schema()).unwrap(),
            arrays
        ),
        format!(
            r#"{{"type":"tool/call","seq":4,"data":{{"callId":"deep_extra","name":"ask_user_question","arguments":{}}}}}"#,
            json_text(&format!(
                r#"{{"questions":[{{"id":"x","question":"Q?","extra":{arrays}}}]}}"#
            ))
        ),
        format!(
            r#"{{"type":"tool/call","seq":5,"data":{{"callId":"deep_questions","name":"ask_user_question","arguments":{}}}}}"#,
            json_text(&format!(r#"{{"questions":{arrays}}}"#))
        ),
        with_seq(&call1(), 6),
        format!(
            r#"{{"type":"tool/result","seq":7,"data":{{"message":{{"toolCallId":"call_ask_1","content":[{{"type":"text","text":{}}}]}}}}}}"#,
            json_text(&format!(r#"{{"pending":true,"x":{objects}}}"#))
        ),
        format!(
            r#"{{"type":"user/message","seq":8,"data":{{"source":{{"kind":"user-question-reply","callId":"deep_extra"}},"content":[{{"type":"text","text":{}}}]}}}}"#,
            json_text(&format!(r#"{{"answers":[],"x":{arrays}}}"#))
        ),
        // A whole line that is only nesting: not an object, reported.
        arrays.clone(),
        with_seq(&turn_start(), 9),
    ];
    let text = log(
        V4_HEADER,
        &lines.iter().map(String::as_str).collect::<Vec<_>>(),
    );
    let folded = fold(&text);
    assert_eq!(folded.report.corrupt_lines.len(), 1);
    assert_eq!(
        folded.report.corrupt_lines[0].reason,
        CorruptReason::NotObject
    );
    assert!(folded.report.seq_gaps.is_empty());
    assert!(folded.state.timed());
    let view = folded.state.view();
    assert_eq!(view.active.len(), 1);
    assert_eq!(view.active[0].call_id, "call_ask_1");
    assert_eq!(view.active[0].state, ActiveState::Continued);
    assert_eq!(view.settled.len(), 1);
    assert_eq!(view.settled[0].call_id, "deep_extra");
}

#[test]
fn l12_repeated_keys_keep_the_last_value() {
    let repeated = r#"{"type":"tool/call","seq":1,"data":{"callId":"call_ask_1","name":"ask_user_question","arguments":"{\"questions\":[{\"id\":\"first\",\"question\":\"First?\"}]}","arguments":"{\"questions\":[{\"id\":\"last\",\"question\":\"Last?\"}]}"}}"#;
    let folded = fold(&log(V4_HEADER, &[&with_seq(&timed_header(), 0), repeated]));
    assert_eq!(folded.state.view().active[0].questions[0].id, "last");

    // Repeated envelope keys: the last `type` and `seq` win, whatever the key order.
    let cases = [
        // `data` before `type`.
        r#"{"data":{"turn":3},"seq":1,"type":"turn/end"}"#,
        // `type` repeated after `data` was read for the first type.
        r#"{"type":"turn/start","seq":1,"data":{"turn":3},"type":"turn/end"}"#,
        // `seq` repeated.
        r#"{"type":"turn/end","seq":7,"data":{"turn":3},"seq":1}"#,
        // `data` repeated.
        r#"{"type":"turn/end","seq":1,"data":{"turn":9},"data":{"turn":3}}"#,
    ];
    for line in cases {
        let record = SessionEvent::from_record(line, 1).unwrap();
        let event = record.event().unwrap();
        assert_eq!(event.seq, 1, "{line}");
        assert_eq!(
            event.body,
            EventBody::TurnEnd(user_questions_projection::TurnEnd { turn: Some(3) }),
            "{line}"
        );
    }
    // Repeated keys inside an answer item, a question and a provenance.
    let mut lines = continued_call();
    lines.push(r#"{"type":"user/message","seq":3,"data":{"source":{"kind":"user-question-reply","callId":"call_ask_1","provenance":{"answerer":"a","answeredBy":"rule","answerer":"ui"}},"content":[{"type":"text","text":"{\"answers\":[{\"id\":\"x\",\"selected\":[],\"id\":\"scope\"}]}"}]}}"#.to_owned());
    let folded = fold(&log(
        V4_HEADER,
        &lines.iter().map(String::as_str).collect::<Vec<_>>(),
    ));
    let settled = &folded.state.view().settled[0];
    assert_eq!(settled.answers[0].id, "scope");
    assert_eq!(settled.provenance.as_ref().unwrap().answerer, "ui");
}

#[test]
fn l12_crlf_line_endings_read_as_lf() {
    let mut lines = continued_call();
    lines.push(with_seq(&reply("call_ask_1", "{}"), 3));
    let lf = log(
        V4_HEADER,
        &lines.iter().map(String::as_str).collect::<Vec<_>>(),
    );
    let crlf = lf.replace('\n', "\r\n");
    let (a, b) = (fold(&lf), fold(&crlf));
    assert!(b.report.is_clean(), "{:?}", b.report);
    assert_eq!(a.state, b.state);
    assert_eq!(a.header, b.header);
    assert_eq!(b.report.end.byte_offset, crlf.len() as u64);
}

#[test]
fn l12_byte_order_mark_is_a_hard_error() {
    let text = format!("\u{feff}{}", log(V4_HEADER, &[&with_seq(&turn_start(), 0)]));
    assert!(matches!(
        fold_log(text.as_bytes()),
        Err(OpenError::Header(HeaderError::ByteOrderMark))
    ));
    assert_eq!(
        SessionHeader::parse(&format!("\u{feff}{V4_HEADER}")),
        Err(HeaderError::ByteOrderMark)
    );
}

#[test]
fn l12_bad_middle_lines_are_reported_and_later_events_folded() {
    for bad in [
        "",
        "null",
        &format!("{} trailing", with_seq(&turn_start(), 3)),
    ] {
        let mut lines = continued_call();
        lines.push(bad.to_owned());
        lines.push(with_seq(&reply("call_ask_1", "{}"), 3));
        let folded = fold(&log(
            V4_HEADER,
            &lines.iter().map(String::as_str).collect::<Vec<_>>(),
        ));
        assert_eq!(folded.report.corrupt_lines.len(), 1, "{bad:?}");
        assert_eq!(folded.report.corrupt_lines[0].line, 5);
        assert!(folded.report.seq_gaps.is_empty());
        assert_eq!(view_json(&folded), call1_settled("[]"), "{bad:?}");
    }
    // A seq jump: reported, and the later reply folded.
    let mut lines = continued_call();
    lines.push(with_seq(&reply("call_ask_1", "{}"), 40));
    let folded = fold(&log(
        V4_HEADER,
        &lines.iter().map(String::as_str).collect::<Vec<_>>(),
    ));
    assert_eq!(
        folded.report.seq_gaps,
        [SeqGap {
            line: 5,
            expected: 3,
            found: 40
        }]
    );
    assert_eq!(view_json(&folded), call1_settled("[]"));
}

#[test]
fn l12_seeded_v4_header_without_marker_folds_as_unseeded() {
    let seeded = r#"{"type":"session","version":4,"id":"c","createdAt":0,"isSeeded":true}"#;
    let lines = continued_call();
    let folded = fold(&log(
        seeded,
        &lines.iter().map(String::as_str).collect::<Vec<_>>(),
    ));
    assert_eq!(folded.findings, [LogFinding::SeededWithoutMarker]);
    assert_eq!(view_json(&folded), call1_active("continued"));
}

#[test]
fn reading_tolerance_of_the_reference() {
    // Unknown event types, a header without provider or model, a message without role or id.
    let mut lines = continued_call();
    lines.push(r#"{"type":"brand/new-event","seq":3,"data":{"x":1}}"#.to_owned());
    lines.push(
        r#"{"type":"request/header","seq":4,"data":{"header":{"tools":[]},"reason":"change"}}"#
            .to_owned(),
    );
    let folded = fold(&log(
        V4_HEADER,
        &lines.iter().map(String::as_str).collect::<Vec<_>>(),
    ));
    assert!(folded.report.is_clean());
    assert!(
        !folded.state.timed(),
        "the later header without the schema is legacy"
    );
    // A call that is already tracked stays tracked.
    assert_eq!(view_json(&folded), call1_active("continued"));

    // A non-string `arguments` is unreadable; a non-string `callId` is not tracked.
    for data in [
        json!({"callId":"c","name":"ask_user_question","arguments":call1_arguments()}),
        json!({"callId":7,"name":"ask_user_question","arguments":call1_arguments().to_string()}),
        json!({"callId":"c","name":"ask_user_question"}),
    ] {
        check_no_change(&record("tool/call", data));
    }
    // Events whose `data` is missing or not an object are read and change nothing.
    for line in [
        r#"{"type":"tool/result"}"#,
        r#"{"type":"tool/result","data":[1]}"#,
        r#"{"type":"user/message","data":"x"}"#,
        r#"{"type":"tool/ptc-dispatch","data":null}"#,
    ] {
        check_no_change(line);
    }
    // A `request/header` without a readable `tools` array is a legacy header.
    let mut timed = Folder::new();
    timed.push_all(&[timed_header(), call1()]);
    assert!(timed.push(r#"{"type":"request/header","data":5}"#));
    assert!(!timed.state.timed());
}

#[track_caller]
fn check_no_change(line: &str) {
    let mut folder = Folder::new();
    folder.push_all(&[timed_header(), call1()]);
    let before = folder.state.clone();
    assert!(!folder.push(line), "{line}");
    assert_eq!(folder.state, before);
}

#[test]
fn header_fields_and_tolerance() {
    let header = SessionHeader::parse(
        r#"{"type":"session","version":4,"id":"s","createdAt":5,"cwd":"/w","parentSession":"p","isSeeded":true,"origin":"subagent","delegationDepth":2,"agentPreset":"a","unknown":{"x":[1]}}"#,
    )
    .unwrap();
    assert_eq!(header.id, "s");
    assert_eq!(header.created_at, Some(5));
    assert_eq!(header.cwd.as_deref(), Some("/w"));
    assert_eq!(header.parent_session.as_deref(), Some("p"));
    assert_eq!(header.origin.as_deref(), Some("subagent"));
    assert_eq!(header.delegation_depth, 2);
    assert_eq!(header.agent_preset.as_deref(), Some("a"));
    assert_eq!(header.cut_rule(), CutRule::Markers { seeded: true });
    let minimal = SessionHeader::parse(r#"{"type":"session","id":"s"}"#).unwrap();
    assert_eq!(minimal.version, None);
    assert_eq!(minimal.delegation_depth, 0);
    assert_eq!(minimal.cut_rule(), CutRule::Fixed(0));
    let v2 =
        SessionHeader::parse(r#"{"type":"session","version":2,"id":"s","seedLength":3}"#).unwrap();
    assert_eq!(v2.cut_rule(), CutRule::Markers { seeded: false });
}

#[test]
fn checkpoint_resume_seq_after_record() {
    assert_eq!(
        seq_after_record(with_seq(&turn_start(), 41).as_bytes(), 7),
        Ok(42)
    );
    assert_eq!(seq_after_record(turn_start().as_bytes(), 7), Ok(7));
    assert_eq!(
        seq_after_record(
            br#"{"type":"text-chunks","seq0":10,"data":{"texts":["a","b"]}}
"#,
            3
        ),
        Ok(12)
    );
    assert_eq!(
        seq_after_record(b"{broken\n", 3).map_err(|e| matches!(e, CorruptReason::NotJson(_))),
        Err(true)
    );
}
