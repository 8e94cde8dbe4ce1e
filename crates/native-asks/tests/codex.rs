//! What Codex's app-server asks its client (`item/fileChange/requestApproval`,
//! `item/tool/requestUserInput`), as question batches, with the shapes observed from Codex CLI
//! 0.171 (SPEC §9.7), and the answers back in Codex's own shape.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::needless_pass_by_value
)]

use native_asks::{APPROVAL_ID, Agent, AskKind, Decision, NativeAsk};
use serde_json::json;
use user_questions::{AnswerBatch, AnswerItem};

fn prompt(tool: &str, input: serde_json::Value) -> NativeAsk {
    let prompt = json!({"session_id": "01a2-thread", "cwd": "/work/shop", "tool_name": tool, "tool_input": input});
    NativeAsk::from_prompt(Agent::Codex, &prompt).unwrap()
}

fn answered(id: &str, selected: &[&str], custom: Option<&str>) -> AnswerBatch {
    AnswerBatch::new(vec![AnswerItem {
        id: id.into(),
        selected: selected.iter().map(|s| (*s).to_owned()).collect(),
        custom: custom.map(str::to_owned),
    }])
}

#[test]
fn a_file_change_says_each_file_and_its_diff() {
    let ask = prompt(
        "apply_patch",
        json!({"changes": [
            {"path": "/work/shop/hello.txt", "kind": {"type": "add"}, "diff": "hello\nworld\n"},
            {"path": "/work/shop/a.rs", "kind": {"type": "update", "move_path": null}, "diff": "@@ -1 +1 @@\n-a\n+b\n"},
        ]}),
    );
    assert!(matches!(ask.kind, AskKind::Approval { .. }));
    assert_eq!(
        ask.questions[0].question,
        "Allow Codex to change these files in /work/shop?\n\nadd /work/shop/hello.txt\n+ hello\n+ world\n\nupdate /work/shop/a.rs\n@@ -1 +1 @@\n-a\n+b\n"
    );
    let decision = ask.decide(&answered(APPROVAL_ID, &["Allow"], None), "inbox page");
    assert_eq!(
        decision,
        Some(Decision::Allow {
            always: None,
            updated_input: None
        })
    );
}

#[test]
fn request_user_input_is_answered_under_codexs_own_ids() {
    let ask = prompt(
        "request_user_input",
        json!({"questions": [
            {"id": "db", "header": "Database", "question": "Which database?", "isOther": true,
             "options": [{"label": "SQLite", "description": "a file"}, {"label": "Postgres", "description": "a server"}]},
            {"id": "name", "header": "Name", "question": "What name?", "isOther": true, "options": null},
        ]}),
    );
    assert_eq!(ask.kind, AskKind::Questions);
    assert_eq!(ask.questions.len(), 2);
    assert_eq!(ask.questions[0].question, "Which database?");
    let answers = AnswerBatch::new(vec![
        AnswerItem {
            id: ask.questions[0].id.clone(),
            selected: vec!["SQLite".into()],
            custom: None,
        },
        AnswerItem {
            id: ask.questions[1].id.clone(),
            selected: vec![],
            custom: Some("shop, the second".into()),
        },
    ]);
    let Some(Decision::Allow {
        updated_input: Some(response),
        ..
    }) = ask.decide(&answers, "shell")
    else {
        panic!()
    };
    assert_eq!(
        response,
        json!({"answers": {"db": {"answers": ["SQLite"]}, "name": {"answers": ["shop, the second"]}}})
    );
    // Nothing chosen: no decision.
    let skipped = AnswerBatch::new(vec![]);
    assert_eq!(ask.decide(&skipped, "shell"), None);
}
