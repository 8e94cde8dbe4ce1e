//! Argument validation (SPEC §5.5, gist E-ARGS) through `execute`: every violation with its JSON
//! path and rule, one `INVALID_ARGS` error, never a bare serde message, never a panic; and what
//! valid but unusual arguments do.
// Test code stops at its first broken expectation: unwrap and expect are assertions here.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use serde_json::json;
use tool_ask_user::AskUserTool;

/// Runs `arguments` through both modes (timed with an agent and `timeout` only where given) and
/// expects `INVALID_ARGS` with exactly this message.
#[track_caller]
fn check(arguments: &str, message: &str) {
    let w = world();
    let answerer = TestAnswerer::new(Behaviour::FirstLabel);
    let _guard = answerer.register(&w.seam);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .unwrap();
    for tool in [w.legacy(), w.timed(120)] {
        let outcome = runtime.block_on(tool.execute(arguments, ctx_for("call_args", &w.r)));
        assert_invalid_args(&outcome, &[]);
        assert_eq!(
            outcome.text,
            format!("Error: Invalid arguments: {message}."),
            "{arguments}"
        );
    }
    assert_eq!(answerer.calls(), 0, "no answerer sees invalid arguments");
}

/// Runs `arguments` through one tool and returns the outcome.
fn run(tool: &AskUserTool, arguments: &str, w: &World) -> tool_ask_user::ToolOutcome {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .unwrap();
    runtime.block_on(tool.execute(arguments, ctx_for("call_args", &w.r)))
}

#[test]
fn t17_missing_questions_and_wrong_types() {
    check("{}", r#"missing required property "questions""#);
    check(
        r#"{"questions":"ask"}"#,
        r#""questions" must be an array, not a string"#,
    );
    check(
        r#"{"questions":null}"#,
        r#""questions" must be an array, not null"#,
    );
    check(
        r#"{"questions":[7]}"#,
        r#""questions[0]" must be an object, not a number"#,
    );
    check(
        r#"{"questions":[{"id":1,"question":"Q?"}]}"#,
        r#""questions[0].id" must be a string, not a number"#,
    );
    check(
        r#"{"questions":[{"id":"a"}]}"#,
        r#"missing required property "questions[0].question""#,
    );
    check(
        r#"{"questions":[{"id":"a","question":"Q?","header":null}]}"#,
        r#""questions[0].header" must be a string, not null"#,
    );
    check(
        r#"{"questions":[{"id":"a","question":"Q?","multi_select":"yes"}]}"#,
        r#""questions[0].multi_select" must be a boolean, not a string"#,
    );
    check(
        r#"{"questions":[{"id":"a","question":"Q?","options":{"label":"x"}}]}"#,
        r#""questions[0].options" must be an array, not an object"#,
    );
}

/// Every violation is listed, in schema order, joined by `; `.
#[test]
fn every_violation_is_listed_with_its_path() {
    check(
        &json!({"questions":[
            {"id":"a","question":"A?"},
            {"id":"b","question":"B?","options":[{"label":3},{"description":"no label"}],"multi_select":1},
            {"question":false}
        ]})
        .to_string(),
        concat!(
            r#""questions[1].options[0].label" must be a string, not a number; "#,
            r#"missing required property "questions[1].options[1].label"; "#,
            r#""questions[1].multi_select" must be a boolean, not a number; "#,
            r#"missing required property "questions[2].id"; "#,
            r#""questions[2].question" must be a string, not a boolean"#,
        ),
    );
}

#[test]
fn arguments_that_are_not_a_json_object() {
    check("[]", "the arguments must be an object, not an array");
    check("null", "the arguments must be an object, not null");
    check(r#""{}""#, "the arguments must be an object, not a string");
    let w = world();
    for text in [
        "",
        "{",
        r#"{"questions":[}"#,
        "{} {}",
        "{\"questions\":[]}x",
    ] {
        for tool in [w.legacy(), w.timed(120)] {
            let outcome = run(&tool, text, &w);
            assert_invalid_args(
                &outcome,
                &["Invalid arguments: the arguments are not valid JSON ("],
            );
        }
    }
}

/// Timed only: `timeout` is checked by the schema (type) and then by range (E-T1); legacy ignores
/// an extra `timeout` key whatever its value.
#[test]
fn timeout_type_is_checked_in_timed_mode_only() {
    let w = world();
    let answerer = TestAnswerer::new(Behaviour::FirstLabel);
    let _guard = answerer.register(&w.seam);
    let arguments = r#"{"questions":[{"id":"q","question":"Q?"}],"timeout":"soon"}"#;
    let timed = run(&w.timed(120), arguments, &w);
    assert_eq!(
        timed.text,
        r#"Error: Invalid arguments: "timeout" must be an integer, not a string."#
    );
    let legacy = run(&w.legacy(), arguments, &w);
    assert_eq!(legacy.text, r#"{"answers":[{"id":"q","selected":[]}]}"#);
}

/// A key the model most likely meant, spelled otherwise (`multiSelect`, the casing the late reply
/// uses, or `multiselect`): the timed tool refuses it naming the declared key, so the question
/// does not silently turn single-select; the legacy tool's accepted arguments are frozen, so it
/// drops the key as it always has.
#[test]
fn a_misspelled_key_is_refused_by_the_timed_tool_and_dropped_by_the_legacy_one() {
    let w = world();
    let answerer = TestAnswerer::new(Behaviour::FirstLabel);
    let _guard = answerer.register(&w.seam);
    let arguments = r#"{"questions":[{"id":"q","question":"Q?","multiSelect":true,"options":[{"label":"a"},{"label":"b"}]},{"id":"r","question":"R?","multiselect":true,"Header":"H"}]}"#;
    let timed = run(&w.timed(120), arguments, &w);
    assert_invalid_args(&timed, &[]);
    assert_eq!(
        timed.text,
        r#"Error: Invalid arguments: "questions[0].multiSelect" is not a property: the property is "multi_select"; "questions[1].Header" is not a property: the property is "header"; "questions[1].multiselect" is not a property: the property is "multi_select"."#
    );
    assert_eq!(answerer.calls(), 0, "no answerer sees the refused call");
    let legacy = run(&w.legacy(), arguments, &w);
    assert_eq!(
        legacy.text,
        r#"{"answers":[{"id":"q","selected":["a"]},{"id":"r","selected":[]}]}"#
    );
    assert!(!answerer.last().questions[0].is_multi_select());
    // The declared spelling is taken by both.
    let right = r#"{"questions":[{"id":"q","question":"Q?","multi_select":true,"options":[{"label":"a"},{"label":"b"}]}]}"#;
    for tool in [w.timed(120), w.legacy()] {
        run(&tool, right, &w);
        assert!(answerer.last().questions[0].is_multi_select());
    }
}

/// Unusual but valid arguments: deep nesting in undeclared keys, repeated keys (the last wins),
/// escaped lone surrogates (read as U+FFFD), huge numbers in undeclared keys.
#[test]
fn unusual_valid_arguments() {
    let w = world();
    let answerer = TestAnswerer::new(Behaviour::FirstLabel);
    let _guard = answerer.register(&w.seam);
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    let cases = [
        (
            format!(
                r#"{{"questions":[{{"id":"q","question":"Q?","extra":{deep}}}],"more":{deep}}}"#
            ),
            r#"{"answers":[{"id":"q","selected":[]}]}"#,
        ),
        (
            r#"{"questions":"first","questions":[{"id":"q","id":"last","question":"Q?"}]}"#
                .to_owned(),
            r#"{"answers":[{"id":"last","selected":[]}]}"#,
        ),
        (
            r#"{"questions":[{"id":"q\ud800","question":"Q?\ud83d\ude00"}],"n":1e400}"#.to_owned(),
            "{\"answers\":[{\"id\":\"q\u{FFFD}\",\"selected\":[]}]}",
        ),
    ];
    for (arguments, expected) in &cases {
        for tool in [w.legacy(), w.timed(-1)] {
            let outcome = run(&tool, arguments, &w);
            assert_eq!(&outcome.text, expected);
        }
    }
    assert_eq!(answerer.last().questions[0].question, "Q?\u{1F600}");
}

/// Rendered messages never leak a bare serde message: every text starts with the E-ARGS prefix.
#[test]
fn messages_are_never_bare_serde_errors() {
    let w = world();
    for arguments in ["{", "{}", r#"{"questions":[{"id":"\ud800"}]}"#, "42"] {
        let outcome = run(&w.timed(120), arguments, &w);
        assert!(
            outcome.text.starts_with("Error: Invalid arguments: "),
            "{}",
            outcome.text
        );
    }
}

/// A huge argument text used to produce a tool error of about its own size (a 3 MB file of a
/// million empty questions gave a 105 MB error): now the size bound and the question limit come
/// first, and any error the model reads is bounded.
#[test]
fn arguments_over_the_size_bound_are_refused_before_parsing() {
    let w = world();
    let huge = format!(
        r#"{{"questions":[{}{{}}]}}"#,
        "{},".repeat(tool_ask_user::MAX_ARGUMENTS_BYTES / 3)
    );
    for tool in [w.legacy(), w.timed(120)] {
        let outcome = run(&tool, &huge, &w);
        assert_invalid_args(&outcome, &[]);
        assert!(
            outcome.text.contains(&format!(
                "the arguments are {} bytes; at most 1048576 are accepted",
                huge.len()
            )),
            "{}",
            outcome.text
        );
    }
}

#[test]
fn too_many_questions_are_refused_for_that_before_their_problems_are_listed() {
    let w = world();
    let many = format!(r#"{{"questions":[{}{{}}]}}"#, "{},".repeat(100_000));
    for tool in [w.legacy(), w.timed(120)] {
        let outcome = run(&tool, &many, &w);
        assert!(outcome.is_error);
        assert_eq!(
            outcome.error.as_ref().unwrap().code.as_str(),
            "BAD_QUESTIONS"
        );
        assert!(outcome.text.len() < 300, "{}", outcome.text);
        assert!(outcome.text.contains("100001"), "{}", outcome.text);
    }
}

#[test]
fn an_invalid_args_message_lists_the_first_problems_and_counts_the_rest() {
    // Eight questions (the limit), each missing both required properties and with a wrong-typed
    // header and options: 32 problems.
    let question = r#"{"header":1,"options":"x"}"#;
    let arguments = format!(r#"{{"questions":[{}]}}"#, [question; 8].join(","));
    let w = world();
    for tool in [w.legacy(), w.timed(120)] {
        let outcome = run(&tool, &arguments, &w);
        assert_invalid_args(&outcome, &[]);
        let listed = outcome.text.matches("; ").count() + 1;
        assert_eq!(
            listed,
            tool_ask_user::MAX_LISTED_VIOLATIONS + 1,
            "{}",
            outcome.text
        );
        assert!(
            outcome.text.ends_with(&format!(
                "; and {} more problems.",
                32 - tool_ask_user::MAX_LISTED_VIOLATIONS
            )),
            "{}",
            outcome.text
        );
        assert!(outcome.text.len() < 4096);
    }
}

/// `questions` shows what a call would ask without asking: for valid arguments the very questions
/// the answerers see (a header past the limit cut as the seam cuts it), for invalid ones the
/// error outcome `execute` returns, in both modes; no answerer is called by it.
#[test]
fn questions_are_what_the_call_would_ask_or_its_error() {
    let w = world();
    let answerer = TestAnswerer::new(Behaviour::FirstLabel);
    let _guard = answerer.register(&w.seam);
    let long_header = "H".repeat(200);
    let arguments = json!({"questions": [{
        "id": "db", "question": "Which database?", "header": long_header,
        "options": [{"label": "PostgreSQL"}, {"label": "SQLite"}],
    }]})
    .to_string();
    for tool in [w.legacy(), w.timed(120)] {
        let before = answerer.calls();
        let shown = tool.questions(&arguments).unwrap();
        assert_eq!(answerer.calls(), before, "questions asks no answerer");
        run(&tool, &arguments, &w);
        assert_eq!(answerer.last().questions, shown);
        for bad in [
            r#"{"questions": []}"#,
            "not json",
            r#"{"questions": [{"id": 1}]}"#,
        ] {
            let error = tool_ask_user::ToolOutcome::typed_error(&tool.questions(bad).unwrap_err());
            assert_eq!(error.text, run(&tool, bad, &w).text, "{bad}");
            assert!(error.is_error);
        }
    }
    // The timed tool's own checks: its timeout.
    let error = w
        .timed(120)
        .questions(r#"{"questions": [{"id": "a", "question": "?"}], "timeout": 0}"#)
        .unwrap_err();
    assert!(
        error.to_string().contains("\"timeout\" must be -1"),
        "{error}"
    );
}
