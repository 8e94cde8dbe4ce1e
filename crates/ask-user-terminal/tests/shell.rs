//! The shell as an answering surface: the tables `ask-user pending` prints and the answer
//! `ask-user answer` reads, through `ask_user_terminal::shell`.
// Test code stops at its first broken expectation: unwrap and expect are assertions here.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use ask_user_terminal::shell::{
    Listed, TypedAnswerError, answer_problems, batch_from_flags, batch_from_json,
    in_question_order, log_table, sessions_json, sessions_table,
};
use pending_answer::{DeskQuestion, DeskSession, DeskState};
use user_questions::{AnswerBatch, CallId, Question};

fn questions() -> Vec<Question> {
    serde_json::from_str(
        r#"[{"id":"db","question":"Which database?","options":[{"label":"PostgreSQL"},{"label":"SQLite"}]},
            {"id":"note","question":"Anything else?"}]"#,
    )
    .unwrap()
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| (*s).to_owned()).collect()
}

fn question(call: &str, state: DeskState) -> DeskQuestion {
    DeskQuestion {
        session: "s\u{1b}[31m1".to_owned(),
        call_id: CallId::from(call),
        questions: questions(),
        state,
        answerable: true,
        interrupted: false,
        answered: false,
        asked_at_ms: Some(1_000),
    }
}

#[test]
fn flags_make_one_item_per_question_in_the_order_given() {
    let batch = batch_from_flags(
        &strings(&["db=SQLite", "db=PostgreSQL"]),
        &strings(&["note=later"]),
        &strings(&["other"]),
    )
    .unwrap();
    let json = serde_json::to_value(&batch).unwrap();
    assert_eq!(
        json,
        serde_json::json!({"answers":[
            {"id":"db","selected":["SQLite","PostgreSQL"]},
            {"id":"note","selected":[],"custom":"later"},
            {"id":"other","selected":[]}
        ]})
    );
    let ordered = in_question_order(
        &batch_from_flags(&strings(&["x=1", "db=SQLite"]), &[], &[]).unwrap(),
        &questions(),
    );
    let ids: Vec<&str> = ordered.answers.iter().map(|a| a.id.as_str()).collect();
    assert_eq!(ids, ["db", "x"]);
}

#[test]
fn wrong_flags_are_usage_errors_and_a_wrong_file_an_input_error() {
    let usage = |e: TypedAnswerError| matches!(e, TypedAnswerError::Usage(_));
    assert!(usage(
        batch_from_flags(&strings(&["db"]), &[], &[]).unwrap_err()
    ));
    let twice = batch_from_flags(&[], &strings(&["note=a", "note=b"]), &[]).unwrap_err();
    assert_eq!(
        twice.to_string(),
        r#"--custom is given twice for question "note""#
    );
    let both = batch_from_flags(&strings(&["db=SQLite"]), &[], &strings(&["db"])).unwrap_err();
    assert_eq!(
        both.to_string(),
        r#"question "db" is both skipped and answered"#
    );
    assert!(matches!(
        batch_from_json("{}"),
        Err(TypedAnswerError::Input(_))
    ));
    assert!(matches!(
        batch_from_json("nope"),
        Err(TypedAnswerError::Input(_))
    ));
    let bare = batch_from_json(r#"[{"id":"db","selected":["SQLite"]}]"#).unwrap();
    let wrapped = batch_from_json(r#"{"answers":[{"id":"db","selected":["SQLite"]}]}"#).unwrap();
    assert_eq!(bare, wrapped);
}

#[test]
fn every_problem_of_an_answer_is_named_with_what_would_fit() {
    let call = CallId::from("call_1");
    let batch: AnswerBatch = batch_from_flags(&strings(&["db=MySQL", "x=1"]), &[], &[]).unwrap();
    let problems = answer_problems(&call, &questions(), &batch).unwrap();
    assert!(
        problems.starts_with("the answer does not fit call call_1 (3 problems): "),
        "{problems}"
    );
    assert!(
        problems.contains(r#"its options: "PostgreSQL", "SQLite""#),
        "{problems}"
    );
    assert!(problems.contains("--skip note"), "{problems}");
    assert!(
        problems.contains(r#"the questions are "db", "note""#),
        "{problems}"
    );
    let fits = batch_from_flags(&strings(&["db=SQLite"]), &[], &strings(&["note"])).unwrap();
    assert_eq!(answer_problems(&call, &questions(), &fits), None);
}

#[test]
fn tables_show_no_raw_escape_from_a_log() {
    let session = DeskSession {
        session: "s1".to_owned(),
        questions: vec![question("call_\u{1b}]0;x\u{7}1", DeskState::Continued)],
        settled: Some(2),
        writing: true,
        agent: Some("claude-code 2.1.328\u{1b}[2J".to_owned()),
        folder: Some("/work/app".to_owned()),
    };
    let table = log_table(Some(&session), 61_000);
    assert!(
        !table.contains('\u{1b}') && !table.contains('\u{7}'),
        "{table}"
    );
    assert!(table.contains("continued"), "{table}");
    assert!(
        table.ends_with("1 active, 2 settled (a writer has the log open)\n"),
        "{table}"
    );
    assert!(log_table(None, 0).ends_with("0 active, 0 settled\n"));

    let asked = question("call_2", DeskState::Open);
    let listed = [Listed {
        question: &asked,
        agent: session.agent.as_deref(),
        folder: session.folder.as_deref(),
    }];
    let table = sessions_table(&listed, true, 61_000);
    assert!(
        table.contains("AGE") && !table.contains('\u{1b}'),
        "{table}"
    );
    // The session's cell names its agent and folder under it.
    assert!(
        table.contains("\nclaude-code 2.1.328\\u{1b}[2J") && table.contains("\n/work/app "),
        "{table}"
    );
    assert!(table.ends_with("1 open or continued\n"), "{table}");
    assert!(!sessions_table(&listed, false, 0).contains("AGE"));
    let json = sessions_json(&listed);
    assert!(!json.contains('\u{1b}'), "{json}");
    let value: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(value["questions"][0]["state"], "open");
    assert_eq!(value["questions"][0]["session"], "s\u{1b}[31m1");
    assert_eq!(
        value["questions"][0]["agent"],
        "claude-code 2.1.328\u{1b}[2J"
    );
    assert_eq!(value["questions"][0]["folder"], "/work/app");
}

/// An agent's approval has a text of several lines (what would run, and where): each line is
/// its own line of the cell, escaped on its own; a control byte inside a line is still shown
/// escaped, never raw.
#[test]
fn a_question_of_several_lines_keeps_its_lines_and_escapes_each() {
    let question: Question = serde_json::from_value(serde_json::json!({
        "id": "decision",
        "question": "Allow Claude Code to run this command in /work?\n\n$ rm -rf build \u{1b}[2J\n",
        "options": [{"label": "Allow"}, {"label": "Deny"}]
    }))
    .unwrap();
    let cell = ask_user_terminal::listing::question_cell(&question);
    assert_eq!(
        cell,
        "decision: Allow Claude Code to run this command in /work?\n  $ rm -rf build \\u{1b}[2J\n  pick one: Allow | Deny"
    );
}

/// A call no session of the desk has, answered by its id alone: `UNKNOWN_CALL`, naming the
/// command that lists what waits, and the call id escaped.
#[tokio::test]
async fn an_answer_to_a_call_nobody_has_says_so_and_names_what_lists_them() {
    use ask_user_terminal::shell::{AnswerTo, RefusalKind, ShellAnswer};
    use user_questions::{AnswerBatch, CallId, Provenance};

    let answer = ShellAnswer {
        call_id: CallId::from("call_\u{1b}[31mred"),
        batch: AnswerBatch { answers: vec![] },
        from_flags: true,
        provenance: Provenance::human("shell"),
        program: "ask-user",
    };
    let inbox = std::path::Path::new("/nonexistent/inbox.sock");
    let refusal = (answer
        .give(&pending_answer::NoSessions, AnswerTo::Call { inbox })
        .await)
        .expect_err("nobody has the call");
    assert_eq!(refusal.kind, RefusalKind::NotContinued);
    assert_eq!(refusal.code, "UNKNOWN_CALL");
    assert!(!refusal.message.contains('\u{1b}'), "{}", refusal.message);
    assert!(
        refusal.message.contains("`ask-user pending`"),
        "{}",
        refusal.message
    );

    // Named, the session is the desk's to refuse.
    let to = AnswerTo::Session {
        name: "s1",
        in_database: true,
    };
    let refusal = (answer.give(&pending_answer::NoSessions, to).await).expect_err("no session");
    assert_eq!(
        (refusal.kind, refusal.code.as_str()),
        (RefusalKind::Store, "UNKNOWN_SESSION")
    );
    assert!(
        refusal.message.ends_with("in the database"),
        "{}",
        refusal.message
    );
}

#[test]
fn a_usage_error_is_one_line_naming_the_help_to_read() {
    let rendered = "error: unexpected argument '--pik' found\n\n  tip: a similar argument exists: '--pick'\n\nUsage: ask-user answer [OPTIONS] <LOG> <CALL_ID>\n\nFor more information, try '--help'.\n";
    assert_eq!(
        ask_user_terminal::shell::usage_line(rendered),
        "unexpected argument '--pik' found; a similar argument exists: '--pick' (see `ask-user answer --help`)"
    );
}

/// A desk that refuses every answer as not waiting (a legacy call, say).
struct NotWaitingDesk;

#[user_questions::async_trait]
impl pending_answer::QuestionDesk for NotWaitingDesk {
    async fn sessions(&self) -> Result<Vec<DeskSession>, pending_answer::DeskError> {
        Ok(Vec::new())
    }

    async fn views(
        &self,
        _session: Option<&str>,
    ) -> Result<Vec<pending_answer::SessionView>, pending_answer::DeskError> {
        Ok(Vec::new())
    }

    async fn submit(
        &self,
        _submission: pending_answer::Submission,
    ) -> Result<pending_answer::Accepted, pending_answer::LateRefusal> {
        Err(pending_answer::LateRefusal::NotWaiting(
            pending_answer::NotWaiting::Unknown,
        ))
    }
}

/// Every refusal escapes the call id it names, whoever prints it.
#[tokio::test]
async fn a_refusal_of_the_desk_names_the_call_escaped() {
    use ask_user_terminal::shell::{AnswerTo, RefusalKind, ShellAnswer};
    use user_questions::Provenance;

    let answer = ShellAnswer {
        call_id: CallId::from("call_\u{1b}]0;title\u{7}x"),
        batch: AnswerBatch { answers: vec![] },
        from_flags: false,
        provenance: Provenance::human("shell"),
        program: "ask-user",
    };
    let to = AnswerTo::Session {
        name: "log.jsonl",
        in_database: false,
    };
    let refusal = answer
        .give(&NotWaitingDesk, to)
        .await
        .expect_err("not waiting");
    assert_eq!(
        (refusal.kind, refusal.code.as_str()),
        (RefusalKind::NotContinued, "NOT_WAITING")
    );
    assert!(
        !refusal.message.contains(['\u{1b}', '\u{7}']),
        "{}",
        refusal.message
    );
    assert!(
        refusal
            .message
            .ends_with("in this log (legacy calls never take late answers)"),
        "{}",
        refusal.message
    );
}
