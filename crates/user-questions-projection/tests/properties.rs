//! Properties of the reader and the fold (proptest): a whole fold equals any split of it resumed
//! incrementally, every cut point (a torn last line) folds like the complete lines before it, and
//! garbage, huge lines and deep nesting never panic and are always reported.
// Test code stops at its first broken expectation: unwrap and expect are assertions here.
#![allow(clippy::unwrap_used, clippy::expect_used)]
// Fixture builders take JSON values by value so that call sites can pass `json!` literals.
#![allow(clippy::needless_pass_by_value)]

mod common;

use common::*;
use proptest::prelude::*;
use serde_json::json;
use user_questions_projection::{
    LogScanner, ScanPosition, Scanned, SessionEvent, fold_log, resume_fold,
};

/// One record of a random log: every rule of the fold, on a few call ids so that they interact.
fn any_record() -> impl Strategy<Value = String> {
    let id = prop::sample::select(vec!["a", "b", "c"]);
    prop_oneof![
        Just(timed_header()),
        Just(legacy_header()),
        Just(turn_start()),
        Just(user_text("hello")),
        id.clone().prop_map(ask),
        id.clone().prop_map(ask),
        id.clone().prop_map(pending),
        id.clone().prop_map(|id| result(id, r#"{"answers":[{"id":"scope","selected":["Tool only"]}]}"#)),
        id.clone().prop_map(|id| error_result(id, "ASK_CANCELLED")),
        id.clone().prop_map(unknown_outcome),
        id.clone().prop_map(|id| reply(id, &reply_json(id, json!([{"id":"scope","selected":[]}])))),
        id.clone().prop_map(|id| record(
            "tool/ptc-dispatch",
            json!({"subCallId":id,"name":"ask_user_question","arguments":call1_arguments(),"isError":false,"content":[{"type":"text","text":"{\"pending\":true}"}]}),
        )),
        (1usize..5).prop_map(|n| record(
            "text-chunks",
            json!({"turn":1,"step":1,"index":0,"texts":vec!["x"; n]}),
        )),
    ]
}

fn any_log() -> impl Strategy<Value = Vec<String>> {
    prop::collection::vec(any_record(), 0..40)
}

/// The position and state after the first `n` records of a log file.
fn prefix(file: &str, n: usize) -> (ScanPosition, user_questions_projection::UserQuestionsState) {
    let (header, mut scanner) = LogScanner::open(file.as_bytes()).unwrap();
    let mut replay = user_questions_projection::Replay::new(&header);
    for _ in 0..n {
        match scanner.next_line().unwrap() {
            Some(Scanned::Record(r)) => {
                replay.apply_record(r.line, &r.record);
            }
            other => panic!("expected a record, got {other:?}"),
        }
    }
    (scanner.position(), replay.finish().0)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    /// P17 as a property: the whole fold, an event-by-event fold through `apply`, and a fold
    /// resumed after any split all agree.
    #[test]
    fn whole_equals_any_split(lines in any_log(), split in 0usize..=40) {
        let file = log_file(&lines);
        let whole = fold_log(file.as_bytes()).unwrap();
        prop_assert!(whole.report.is_clean());

        let mut folder = Folder::new();
        folder.push_all(&lines);
        prop_assert_eq!(&folder.state, &whole.state);

        let split = split.min(lines.len());
        let (at, state) = prefix(&file, split);
        let rest = &file.as_bytes()[usize::try_from(at.byte_offset).unwrap()..];
        let resumed = resume_fold(rest, whole.header.clone(), state, at).unwrap();
        prop_assert_eq!(&resumed.state, &whole.state);
        prop_assert_eq!(resumed.report.end, whole.report.end);
    }

    /// Cutting the file anywhere (a torn last line) folds exactly like the complete lines before
    /// the cut, and reports the fragment.
    #[test]
    fn every_cut_point_folds_the_complete_lines(lines in any_log(), cut in any::<prop::sample::Index>()) {
        let file = log_file(&lines);
        let header_end = file.find('\n').unwrap() + 1;
        let at = header_end + cut.index(file.len() - header_end + 1);
        check_cut(&file, at)?;
    }

    /// Garbage lines between records never panic: each line is a record or a reported corrupt
    /// line, and every record after the garbage is still read.
    #[test]
    fn garbage_is_reported_never_fatal(
        lines in any_log(),
        garbage in prop::collection::vec((any::<prop::sample::Index>(), garbage_line()), 1..6),
    ) {
        let mut all: Vec<Vec<u8>> = lines.iter().map(|l| l.clone().into_bytes()).collect();
        for (at, bad) in &garbage {
            let at = at.index(all.len() + 1);
            all.insert(at, bad.clone());
        }
        let mut bytes = b"{\"type\":\"session\",\"version\":4,\"id\":\"s\",\"createdAt\":0}\n".to_vec();
        for line in &all {
            bytes.extend_from_slice(line);
            bytes.push(b'\n');
        }
        let folded = fold_log(bytes.as_slice()).unwrap();
        let report = &folded.report;
        prop_assert_eq!(report.end.line, all.len() as u64 + 1);
        prop_assert_eq!(report.end.byte_offset, bytes.len() as u64);
        prop_assert!(report.torn_tail.is_none());
        // Every valid record is read: lines = records + corrupt lines.
        let (_, mut scanner) = LogScanner::open(bytes.as_slice()).unwrap();
        let mut records = 0u64;
        while let Some(scanned) = scanner.next_line().unwrap() {
            if let Scanned::Record(_) = scanned {
                records += 1;
            }
        }
        prop_assert_eq!(records + report.corrupt_lines.len() as u64, all.len() as u64);
        prop_assert!(records >= lines.len() as u64);
        let invalid_utf8 = all.iter().filter(|l| std::str::from_utf8(l).is_err()).count();
        prop_assert_eq!(report.lossy_lines.len(), invalid_utf8);
    }
}

#[track_caller]
fn check_cut(file: &str, at: usize) -> Result<(), TestCaseError> {
    let cut = &file.as_bytes()[..at];
    let complete_end = cut.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
    let folded = fold_log(cut).unwrap();
    let complete = fold_log(&cut[..complete_end]).unwrap();
    prop_assert_eq!(&folded.state, &complete.state);
    prop_assert_eq!(folded.report.end, complete.report.end);
    if complete_end == at {
        prop_assert!(folded.report.torn_tail.is_none());
    } else {
        let tail = folded.report.torn_tail.unwrap();
        prop_assert_eq!(tail.byte_offset, complete_end as u64);
        prop_assert_eq!(tail.len, (at - complete_end) as u64);
    }
    Ok(())
}

/// Every cut point of one rich log, exhaustively.
#[test]
fn every_cut_point_of_a_rich_log() {
    let lines = vec![
        timed_header(),
        call1(),
        ask("call_2"),
        pending("call_ask_1"),
        result("call_2", r#"{"answers":[]}"#),
        reply("call_ask_1", &reply_json("call_ask_1", json!([]))),
    ];
    let file = log_file(&lines);
    let header_end = file.find('\n').unwrap() + 1;
    for at in header_end..=file.len() {
        check_cut(&file, at).unwrap();
    }
}

/// Lines that are mostly not records: random bytes (no `\n`), truncated and padded records,
/// deep nesting, huge lines.
fn garbage_line() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        prop::collection::vec(any::<u8>().prop_filter("no newline", |b| *b != b'\n'), 0..200),
        any_record().prop_flat_map(|r| {
            let len = r.len();
            (Just(r), 0..len).prop_map(|(r, cut)| r.as_bytes()[..cut].to_vec())
        }),
        any_record().prop_map(|r| format!("{r} x").into_bytes()),
        (1usize..200_000, any::<bool>()).prop_map(|(depth, close)| {
            let mut s = "[".repeat(depth);
            if close {
                s.push_str(&"]".repeat(depth));
            }
            s.into_bytes()
        }),
        (1usize..100_000).prop_map(|depth| {
            format!(
                r#"{{"type":"tool/call","data":{{"name":"ask_user_question","callId":"a","arguments":{}}}}}"#,
                serde_json::to_string(&format!("{}{}", "{\"q\":".repeat(depth), "}".repeat(depth))).unwrap()
            )
            .into_bytes()
        }),
        (100_000usize..2_000_000).prop_map(|len| {
            let mut s = String::from(r#"{"type":"assistant/message","data":{"text":""#);
            s.push_str(&"y".repeat(len));
            if len % 2 == 0 {
                s.push_str(r#""}}"#);
            }
            s.into_bytes()
        }),
        Just(b"null".to_vec()),
        Just(Vec::new()),
        Just(b"{\"type\":\"turn/start\",\"seq\":-1}".to_vec()),
        Just(b"\xEF\xBB\xBF{\"type\":\"turn/start\"}".to_vec()),
        Just(b"{\"type\":\"turn/start\",\"data\":\"\xFF\xFE\"}".to_vec()),
    ]
}

#[test]
fn surrogate_soup_in_records() {
    for (text, event_type) in [
        (
            r#"{"type":"x","data":"\uD800\uD800\uDC00\uDC00"}"#,
            Some("x"),
        ),
        (r#"{"type":"x","data":"\\\uD800"}"#, Some("x")),
        (r#"{"type":"\uD800","data":1}"#, Some("\u{FFFD}")),
        (
            r#"{"type":"a\uDFFF\uD83D\uDE00","data":1}"#,
            Some("a\u{FFFD}😀"),
        ),
        (r#"{"\uDFFF":1,"type":"x"}"#, Some("x")),
        (r#"{"type":"x","data":"\uD8"}"#, None),
    ] {
        let read = SessionEvent::from_record(text, 0)
            .ok()
            .map(|r| r.event().unwrap().event_type().to_owned());
        assert_eq!(read.as_deref(), event_type, "{text}");
    }
}
