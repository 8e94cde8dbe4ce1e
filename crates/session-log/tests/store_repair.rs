//! Resume repair (SPEC §7.6, §8.7): a crash between a logged `tool/call` and its `tool/result`
//! leaves the call without a result; reopening for write appends the `TOOL_OUTCOME_UNKNOWN` result
//! and closes the interrupted step and turn, so a timed question becomes continued and answerable.
// Test code stops at its first broken expectation: unwrap and expect are assertions here.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs;

use ask_user_testkit::logs::{
    TIME, append_raw, call, ev, finished_log, full_fold, lt_log, reply, result, session, temp_log,
};
use serde_json::{Value, json};
use session_log::{
    LogWriter, OpenCall, StepRecord, TOOL_OUTCOME_UNKNOWN_TEXT, read_log, repair_interrupted,
};
use user_questions_projection::ActiveState;

/// The lines after the first `skip` of a log, as JSON values without their `time`.
fn lines_after(path: &std::path::Path, skip: usize) -> Vec<Value> {
    fs::read_to_string(path)
        .unwrap()
        .lines()
        .skip(skip)
        .map(|l| {
            let mut v: Value = serde_json::from_str(l).unwrap();
            v.as_object_mut().unwrap().remove("time");
            v
        })
        .collect()
}

#[test]
fn a_dangling_timed_call_becomes_continued_after_repair() {
    let (_dir, path) = temp_log();
    drop(lt_log(&path));
    // Before repair the call is open, and the read-only open says it was interrupted.
    let folded = full_fold(&path);
    assert_eq!(
        folded
            .state
            .active(&user_questions::CallId::from("ask-timed"))
            .map(|a| a.state),
        Some(ActiveState::Open)
    );
    let report = read_log(&path).unwrap();
    assert_eq!(
        report.interrupted.calls,
        [OpenCall {
            call_id: "ask-timed".to_owned(),
            name: Some("ask_user_question".to_owned()),
            seq: 3,
            line: 5,
            turn: Some(1),
            step: Some(1),
        }]
    );
    assert_eq!(report.interrupted.steps, [StepRecord { turn: 1, step: 1 }]);
    assert_eq!(report.interrupted.turns, [1]);
    let before = fs::read(&path).unwrap();

    let (writer, _, repair) = LogWriter::open_repaired(&path).unwrap();
    assert_eq!(repair.results.len(), 1);
    assert_eq!(repair.results[0].call.call_id, "ask-timed");
    assert_eq!(repair.results[0].result_seq, 4);
    assert_eq!(repair.closed_steps, [StepRecord { turn: 1, step: 1 }]);
    assert_eq!(repair.closed_turns, [1]);
    assert!(writer.interrupted().is_empty());
    assert_eq!(writer.next_seq(), 7);
    drop(writer);

    // Append-only: the old bytes are a prefix of the new file.
    let after = fs::read(&path).unwrap();
    assert_eq!(&after[..before.len()], before.as_slice());
    assert_eq!(
        lines_after(&path, 5),
        [
            json!({"type":"tool/result","seq":4,"data":{"turn":1,"step":1,"message":{
                "id":"interrupted-tool-result-ask-timed-4","role":"tool","toolCallId":"ask-timed",
                "content":[{"type":"text","text":TOOL_OUTCOME_UNKNOWN_TEXT}],"isError":true},
                "error":{"name":"ToolOutcomeUnknownError","code":"TOOL_OUTCOME_UNKNOWN"}},
                "sourceEventSeqs":[3],"surfaceOp":"append"}),
            json!({"type":"step/end","seq":5,"data":{"turn":1,"step":1}}),
            json!({"type":"turn/end","seq":6,"data":{"turn":1,"reason":{"kind":"interrupted"}}}),
        ]
    );

    let folded = full_fold(&path);
    assert!(folded.report.is_clean());
    assert_eq!(
        folded
            .state
            .continued(&user_questions::CallId::from("ask-timed"))
            .map(|a| a.state),
        Some(ActiveState::Continued)
    );

    // Continued means answerable: a late reply admitted into the log settles it.
    let (mut writer, report) = LogWriter::open(&path).unwrap();
    assert!(report.interrupted.is_empty());
    writer
        .append(&[
            ev("turn/start", 7, json!({"turn":2})),
            ev(
                "user/message",
                7 + 1,
                reply(
                    "ask-timed",
                    json!([{"id":"scope","selected":["Everything"]}]),
                ),
            )
            .surface_append(),
        ])
        .unwrap();
    let folded = full_fold(&path);
    assert!(folded.state.view().active.is_empty());
    assert_eq!(folded.state.view().settled[0].call_id.as_str(), "ask-timed");
    assert_eq!(
        folded.state.view().settled[0].answers[0].selected,
        ["Everything"]
    );
}

#[test]
fn g21_text_conveys_the_gist() {
    let text = TOOL_OUTCOME_UNKNOWN_TEXT.to_lowercase();
    for fact in [
        "unknown",
        "stopped",
        "read-only",
        "idempotent",
        "side effects",
        "verify",
        "ask the person",
        "never repeat",
    ] {
        assert!(text.contains(fact), "G21 text lacks {fact:?}");
    }
}

#[test]
fn repair_is_idempotent() {
    let (_dir, path) = temp_log();
    drop(lt_log(&path));
    let (writer, _, first) = LogWriter::open_repaired(&path).unwrap();
    assert!(!first.is_empty());
    let mut writer = writer;
    let once = fs::read(&path).unwrap();
    let again = repair_interrupted(&mut writer).unwrap();
    assert!(again.is_empty(), "{again:?}");
    drop(writer);
    let (_writer, _, third) = LogWriter::open_repaired(&path).unwrap();
    assert!(third.is_empty(), "{third:?}");
    assert_eq!(fs::read(&path).unwrap(), once);
}

#[test]
fn a_log_with_complete_results_is_left_untouched() {
    let (_dir, path) = temp_log();
    let mut writer = finished_log(&path);
    // Results in the older layouts count too (§7.7): nested (B) and flat (C).
    writer
        .append(&[
            ev("turn/start", 14, json!({"turn":3})),
            ev("step/start", 15, json!({"turn":3,"step":1})),
            ev("tool/call", 16, call(3, 1, "b-1", "read", "{}")),
            ev("tool/call", 17, call(3, 1, "c-1", "grep", "{}")),
            ev(
                "tool/result",
                18,
                json!({"turn":3,"step":1,"message":{"id":"m","role":"user","content":[
                    {"type":"tool-result","toolCallId":"b-1","isError":false,
                     "content":[{"type":"text","text":"ok"}]}]}}),
            ),
            ev(
                "tool/result",
                19,
                json!({"turn":3,"step":1,"callId":"c-1","content":[{"type":"text","text":"ok"}],"isError":false}),
            ),
            ev("step/end", 20, json!({"turn":3,"step":1})),
            ev("turn/end", 21, json!({"turn":3,"reason":{"kind":"completed"}})),
        ])
        .unwrap();
    assert!(
        writer.interrupted().is_empty(),
        "{:?}",
        writer.interrupted()
    );
    drop(writer);
    let before = fs::read(&path).unwrap();
    let (writer, report, repair) = LogWriter::open_repaired(&path).unwrap();
    assert!(report.interrupted.is_empty());
    assert!(repair.is_empty(), "{repair:?}");
    assert_eq!(writer.next_seq(), 22);
    drop(writer);
    assert_eq!(fs::read(&path).unwrap(), before);
}

#[test]
fn a_call_whose_step_already_ended_gets_only_its_result() {
    let (_dir, path) = temp_log();
    let mut writer = lt_log(&path);
    writer
        .append(&[
            ev("step/end", 4, json!({"turn":1,"step":1})),
            ev("turn/end", 5, json!({"turn":1,"reason":{"kind":"aborted"}})),
        ])
        .unwrap();
    drop(writer);
    let (_writer, _, repair) = LogWriter::open_repaired(&path).unwrap();
    assert_eq!(repair.results.len(), 1);
    assert!(repair.closed_steps.is_empty());
    assert!(repair.closed_turns.is_empty());
    assert_eq!(
        lines_after(&path, 7)[0]["data"]["turn"],
        json!(1),
        "turn and step come from the call"
    );
}

#[test]
fn open_steps_and_turns_without_dangling_calls_are_closed() {
    let (_dir, path) = temp_log();
    let mut writer = LogWriter::create(&path, &session("s1")).unwrap();
    writer
        .append(&[
            ev("turn/start", 0, json!({"turn":1})),
            ev("step/start", 1, json!({"turn":1,"step":1})),
            ev("step/end", 2, json!({"turn":1,"step":1})),
            ev("step/start", 3, json!({"turn":1,"step":2})),
            ev("assistant/chunk", 4, json!({"turn":1,"step":2,"chunk":{}})),
        ])
        .unwrap();
    drop(writer);
    let (_writer, _, repair) = LogWriter::open_repaired(&path).unwrap();
    assert!(repair.results.is_empty());
    assert_eq!(repair.closed_steps, [StepRecord { turn: 1, step: 2 }]);
    assert_eq!(repair.closed_turns, [1]);
    assert_eq!(
        lines_after(&path, 6),
        [
            json!({"type":"step/end","seq":5,"data":{"turn":1,"step":2}}),
            json!({"type":"turn/end","seq":6,"data":{"turn":1,"reason":{"kind":"interrupted"}}}),
        ]
    );
}

#[test]
fn several_dangling_calls_are_repaired_in_log_order() {
    let (_dir, path) = temp_log();
    let mut writer = lt_log(&path);
    writer
        .append(&[
            ev("tool/call", 4, call(1, 1, "bash-2", "bash", "{}")),
            ev("tool/call", 5, call(1, 1, "bash-1", "bash", "{}")),
            ev("tool/result", 6, result(1, 1, "bash-2", "done")),
            ev(
                "tool/call",
                7,
                json!({"turn":1,"step":1,"name":"bash","arguments":"{}"}),
            ),
            // A call with no readable turn or step.
            ev(
                "tool/call",
                8,
                json!({"callId":"odd","name":"x","turn":"1"}),
            ),
        ])
        .unwrap();
    drop(writer);
    let (_writer, report, repair) = LogWriter::open_repaired(&path).unwrap();
    let ids: Vec<&str> = repair
        .results
        .iter()
        .map(|r| r.call.call_id.as_str())
        .collect();
    assert_eq!(ids, ["ask-timed", "bash-1", "odd"]);
    assert_eq!(
        repair
            .results
            .iter()
            .map(|r| r.result_seq)
            .collect::<Vec<_>>(),
        [9, 10, 11]
    );
    // A call without a callId cannot be answered; it is reported, not invented.
    assert_eq!(report.interrupted.unidentified_calls.len(), 1);
    assert_eq!(repair.unidentified_calls[0].seq, 7);
    let lines = lines_after(&path, 10);
    assert_eq!(lines[2]["data"]["message"]["toolCallId"], json!("odd"));
    assert!(lines[2]["data"].get("turn").is_none());
    assert!(lines[2]["data"].get("step").is_none());
    assert_eq!(lines[2]["sourceEventSeqs"], json!([8]));
    let folded = full_fold(&path);
    assert!(folded.report.is_clean());
    assert_eq!(
        folded
            .state
            .continued(&user_questions::CallId::from("ask-timed"))
            .map(|a| a.state),
        Some(ActiveState::Continued)
    );
}

#[test]
fn a_crash_while_writing_the_result_is_repaired_after_the_torn_tail_is_cut() {
    let (dir, path) = temp_log();
    drop(lt_log(&path));
    // The process died while writing the pending result: half a line, no newline.
    let line = serde_json::to_string(&json!({"type":"tool/result","seq":4,"time":TIME,
        "data":result(1, 1, "ask-timed", r#"{"pending":true,"callId":"ask-timed"}"#)}))
    .unwrap();
    append_raw(&path, &line.as_bytes()[..line.len() / 2]);
    let (_writer, report, repair) = LogWriter::open_repaired(&path).unwrap();
    assert!(report.torn_tail_saved_to.is_some());
    assert_eq!(repair.results.len(), 1);
    assert_eq!(repair.results[0].result_seq, 4);
    assert!(
        dir.path().read_dir().unwrap().any(|e| e
            .unwrap()
            .file_name()
            .to_string_lossy()
            .contains(".torn-"))
    );
    let folded = full_fold(&path);
    assert!(folded.report.is_clean());
    assert_eq!(
        folded
            .state
            .continued(&user_questions::CallId::from("ask-timed"))
            .map(|a| a.state),
        Some(ActiveState::Continued)
    );
}

#[test]
fn a_legacy_call_is_repaired_but_never_enters_the_view() {
    let (_dir, path) = temp_log();
    let mut writer = LogWriter::create(&path, &session("s1")).unwrap();
    writer
        .append(&[
            ev("turn/start", 0, json!({"turn":1})),
            ev("step/start", 1, json!({"turn":1,"step":1})),
            ev(
                "tool/call",
                2,
                call(
                    1,
                    1,
                    "ask-legacy",
                    "ask_user_question",
                    &ask_user_testkit::logs::scope_arguments(),
                ),
            ),
        ])
        .unwrap();
    drop(writer);
    let (_writer, _, repair) = LogWriter::open_repaired(&path).unwrap();
    assert_eq!(repair.results.len(), 1);
    let folded = full_fold(&path);
    assert!(
        folded.state.view().active.is_empty(),
        "§8.3: legacy calls are not tracked"
    );
}

/// A call nobody can continue (its only waiter was killed) is ended with an error of its own
/// instead: the question leaves the projection's active questions rather than becoming
/// continued, and a second pass appends nothing.
#[test]
fn an_abandoned_timed_call_leaves_the_view_instead_of_continuing() {
    let (_dir, path) = temp_log();
    drop(lt_log(&path));
    let (dir, name) = (
        path.parent().unwrap(),
        path.file_name().unwrap().to_str().unwrap(),
    );
    let store = session_log::JsonlStore::new(dir.to_path_buf());
    let (mut writer, _) = session_log::SessionStore::open(&store, name, &mut ()).unwrap();
    let report = session_log::abandon_interrupted(
        writer.as_mut(),
        &user_questions::ErrorCode::AskAborted,
        "the bridge went away",
    )
    .unwrap();
    assert_eq!(report.results.len(), 1);
    assert_eq!(report.closed_turns, [1]);
    let again = session_log::abandon_interrupted(
        writer.as_mut(),
        &user_questions::ErrorCode::AskAborted,
        "the bridge went away",
    )
    .unwrap();
    assert!(again.is_empty());
    drop(writer);
    let last = lines_after(&path, 5);
    assert_eq!(last[0]["data"]["error"]["code"], "ASK_ABORTED");
    assert_eq!(
        last[0]["data"]["message"]["content"][0]["text"],
        "the bridge went away"
    );
    let folded = full_fold(&path);
    assert!(
        folded.state.view().active.is_empty(),
        "dropped, not continued"
    );
}
