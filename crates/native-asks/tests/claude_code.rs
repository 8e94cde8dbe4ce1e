//! Claude Code's `PermissionRequest` hook input as question batches, and the answers back as the
//! hook's output, with the shapes observed from Claude Code 2.1.328 (SPEC §9.7, N1–N3).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::needless_pass_by_value
)]

use native_asks::{APPROVAL_ID, Agent, AskKind, Choice, Decision, HookEvent, MAX_TEXT, NativeAsk};
use serde_json::{Value, json};
use user_questions::{AnswerBatch, AnswerItem};

fn permission_request(tool: &str, input: Value, suggestions: Value) -> String {
    json!({
        "session_id": "2f0c-session",
        "transcript_path": "/home/p/.claude/projects/x/2f0c-session.jsonl",
        "cwd": "/work/shop",
        "permission_mode": "default",
        "hook_event_name": "PermissionRequest",
        "tool_name": tool,
        "tool_input": input,
        "permission_suggestions": suggestions,
    })
    .to_string()
}

fn ask(agent: Agent, text: &str) -> NativeAsk {
    match HookEvent::read(agent, text).unwrap() {
        HookEvent::PermissionRequest(ask) => ask,
        other => panic!("{other:?}"),
    }
}

fn bash() -> NativeAsk {
    ask(
        Agent::ClaudeCode,
        &permission_request(
            "Bash",
            json!({"command": "npm test", "description": "Run the test suite"}),
            json!([{
                "type": "addRules",
                "rules": [{"toolName": "Bash", "ruleContent": "npm test:*"}],
                "behavior": "allow",
                "destination": "localSettings"
            }]),
        ),
    )
}

fn pick(id: &str, labels: &[&str], custom: Option<&str>) -> AnswerBatch {
    let mut item = AnswerItem::selected(id, labels.iter().copied());
    item.custom = custom.map(str::to_owned);
    AnswerBatch::new([item])
}

#[test]
fn a_bash_approval_is_one_question_with_what_the_agent_offers() {
    let ask = bash();
    assert_eq!(ask.session, "2f0c-session");
    assert_eq!(ask.cwd.as_deref(), Some("/work/shop"));
    let AskKind::Approval { choices } = &ask.kind else {
        panic!("{:?}", ask.kind)
    };
    let labels: Vec<String> = choices.iter().map(Choice::label).collect();
    assert_eq!(labels, ["Allow", "Allow always: Bash(npm test:*)", "Deny"]);
    insta::assert_json_snapshot!("bash_approval_questions", ask.questions);
    let arguments: Value = serde_json::from_str(&ask.arguments()).unwrap();
    assert_eq!(
        arguments["timeout"], -1,
        "no window of ours: the dialog races it"
    );
    assert_eq!(arguments["questions"][0]["id"], APPROVAL_ID);
}

#[test]
fn n1_allow_once_and_allow_always_become_the_hooks_allow() {
    let ask = bash();
    let once = ask
        .decide(&pick(APPROVAL_ID, &["Allow"], None), "page")
        .unwrap();
    assert_eq!(
        once.hook_output(),
        json!({"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": {"behavior": "allow"}}})
    );
    let always = ask
        .decide(
            &pick(APPROVAL_ID, &["Allow always: Bash(npm test:*)"], None),
            "phone",
        )
        .unwrap();
    insta::assert_json_snapshot!("bash_allow_always_output", always.hook_output());
}

#[test]
fn n2_a_denial_hands_the_model_the_persons_text_and_names_the_surface() {
    let ask = bash();
    let with_text = ask
        .decide(
            &pick(APPROVAL_ID, &["Deny"], Some("use pnpm, not npm")),
            "page",
        )
        .unwrap();
    assert_eq!(
        with_text,
        Decision::Deny {
            message: "use pnpm, not npm (denied from the page)".into()
        }
    );
    let bare = ask
        .decide(&pick(APPROVAL_ID, &["Deny"], None), "phone")
        .unwrap();
    assert_eq!(
        bare.hook_output()["hookSpecificOutput"]["decision"],
        json!({"behavior": "deny", "message": "Denied from the phone."})
    );
    // Free text alone never allows: it is a reason to deny.
    let text_alone = ask.decide(&pick(APPROVAL_ID, &[], Some("not now")), "shell");
    assert!(matches!(text_alone, Some(Decision::Deny { .. })));
}

#[test]
fn silence_is_not_consent_a_skip_or_an_unknown_label_gives_no_decision() {
    let ask = bash();
    assert_eq!(ask.decide(&pick(APPROVAL_ID, &[], None), "page"), None);
    assert_eq!(
        ask.decide(&pick(APPROVAL_ID, &["Yes please"], None), "page"),
        None
    );
    assert_eq!(ask.decide(&AnswerBatch::new([]), "page"), None);
}

#[test]
fn n3_ask_user_question_maps_one_to_one_and_answers_under_the_question_text() {
    let input = json!({"questions": [
        {"question": "Which database?", "header": "Database", "multiSelect": false,
         "options": [{"label": "PostgreSQL", "description": "Relational."}, {"label": "SQLite", "description": "Embedded."}]},
        {"question": "Which checks on every PR?", "header": "CI", "multiSelect": true,
         "options": [{"label": "Unit tests"}, {"label": "Lint"}, {"label": "Docs"}]}
    ]});
    let ask = ask(
        Agent::ClaudeCode,
        &permission_request("AskUserQuestion", input.clone(), json!([])),
    );
    assert_eq!(ask.kind, AskKind::Questions);
    insta::assert_json_snapshot!("ask_user_question_questions", ask.questions);
    let mut checks = AnswerItem::selected("q2", ["Unit tests", "Lint"]);
    checks.custom = Some("and the e2e suite".into());
    let mut db = AnswerItem::selected("q1", ["PostgreSQL"]);
    db.custom = Some("DuckDB".into());
    let decision = ask.decide(&AnswerBatch::new([db, checks]), "page").unwrap();
    let Decision::Allow {
        updated_input: Some(updated),
        always: None,
    } = &decision
    else {
        panic!("{decision:?}")
    };
    assert_eq!(
        updated["questions"], input["questions"],
        "the questions echoed"
    );
    assert_eq!(
        updated["answers"],
        json!({"Which database?": "DuckDB", "Which checks on every PR?": "Unit tests, Lint, and the e2e suite"})
    );
    // Nothing chosen anywhere: no decision.
    assert_eq!(ask.decide(&pick("q1", &[], None), "page"), None);
}

#[test]
fn edits_writes_urls_and_other_tools_say_what_would_happen() {
    let edit = ask(
        Agent::ClaudeCode,
        &permission_request(
            "Edit",
            json!({"file_path": "/work/shop/src/db.rs", "old_string": "let pool = 4;", "new_string": "let pool = 8;\nlet idle = 2;"}),
            json!([{"type": "setMode", "mode": "acceptEdits", "destination": "session"}]),
        ),
    );
    let write = ask(
        Agent::ClaudeCode,
        &permission_request(
            "Write",
            json!({"file_path": "/work/shop/NOTES.md", "content": "# Notes\nship it"}),
            json!([]),
        ),
    );
    let fetch = ask(
        Agent::ClaudeCode,
        &permission_request(
            "WebFetch",
            json!({"url": "https://example.com/spec", "prompt": "Summarise the API"}),
            json!([]),
        ),
    );
    let mcp = ask(
        Agent::ClaudeCode,
        &permission_request("mcp__db__query", json!({"sql": "select 1"}), json!([])),
    );
    let texts: Vec<(&str, Vec<String>)> = [&edit, &write, &fetch, &mcp]
        .iter()
        .map(|a| {
            let q = &a.questions[0];
            let labels = q
                .options
                .iter()
                .flatten()
                .map(|o| o.label.clone())
                .collect();
            (q.question.as_str(), labels)
        })
        .collect();
    insta::assert_debug_snapshot!("other_tools", texts);
}

#[test]
fn a_long_command_is_cut_with_the_count_of_what_was_left_out() {
    let command = "x".repeat(MAX_TEXT + 500);
    let ask = ask(
        Agent::ClaudeCode,
        &permission_request("Bash", json!({"command": command}), json!([])),
    );
    let text = &ask.questions[0].question;
    assert!(text.chars().count() < MAX_TEXT + 60, "{}", text.len());
    assert!(text.ends_with("more characters)"), "{text}");
}

#[test]
fn codex_is_offered_allow_and_deny_only() {
    let text = json!({
        "session_id": "019a-thread",
        "cwd": "/work/shop",
        "hook_event_name": "PermissionRequest",
        "tool_name": "Bash",
        "tool_input": {"command": "cargo test", "description": "run the tests"},
        "permission_suggestions": [{"type": "addRules", "rules": [{"toolName": "Bash"}], "behavior": "allow"}]
    });
    let ask = ask(Agent::Codex, &text.to_string());
    let AskKind::Approval { choices } = &ask.kind else {
        panic!()
    };
    assert_eq!(choices, &[Choice::AllowOnce, Choice::Deny]);
    assert!(
        ask.questions[0]
            .question
            .starts_with("Allow Codex to run this command in /work/shop?")
    );
    let allow = ask
        .decide(&pick(APPROVAL_ID, &["Allow"], None), "shell")
        .unwrap();
    assert_eq!(
        allow.hook_output()["hookSpecificOutput"]["decision"],
        json!({"behavior": "allow"})
    );
}

#[test]
fn later_events_name_the_ask_they_settle() {
    let ask = bash();
    let used = json!({
        "session_id": "2f0c-session", "cwd": "/work/shop", "hook_event_name": "PostToolUse",
        "tool_name": "Bash", "tool_input": {"command": "npm test", "description": "Run the test suite"},
        "tool_use_id": "toolu_01", "tool_response": {"stdout": "ok"}
    });
    let HookEvent::ToolUsed {
        session,
        fingerprint,
    } = HookEvent::read(Agent::ClaudeCode, &used.to_string()).unwrap()
    else {
        panic!()
    };
    assert_eq!(session, "2f0c-session");
    assert_eq!(fingerprint, ask.fingerprint());
    let other = json!({"session_id": "s", "hook_event_name": "Stop"});
    assert_eq!(
        HookEvent::read(Agent::ClaudeCode, &other.to_string()).unwrap(),
        HookEvent::Other {
            event: "Stop".into()
        }
    );
    let notification = json!({"session_id": "s", "hook_event_name": "Notification",
        "message": "Claude is waiting for your input", "notification_type": "idle_prompt"});
    assert!(matches!(
        HookEvent::read(Agent::ClaudeCode, &notification.to_string()).unwrap(),
        HookEvent::Notification { kind: Some(k), .. } if k == "idle_prompt"
    ));
}

#[test]
fn bad_input_is_a_clear_error() {
    for (text, expected) in [
        ("", "the hook's input is not a JSON object"),
        (
            "[1]",
            "the hook's input is not a JSON object: not an object",
        ),
        ("{}", "the hook's input has no string `hook_event_name`"),
        (
            r#"{"hook_event_name":"PermissionRequest","session_id":"s"}"#,
            "the hook's input has no string `tool_name`",
        ),
    ] {
        let error = HookEvent::read(Agent::ClaudeCode, text).unwrap_err();
        assert!(error.to_string().starts_with(expected), "{text}: {error}");
    }
    let long = format!("{{\"x\":\"{}\"}}", "a".repeat(native_asks::MAX_HOOK_INPUT));
    assert!(HookEvent::read(Agent::ClaudeCode, &long).is_err());
}

/// However many rules the agent suggests, an approval has at most three options: a phone's
/// notification then carries a button for each (it shows all of them or none).
#[test]
fn an_approval_has_at_most_three_options_so_a_phone_can_answer_it() {
    let suggestions = json!([
        {"type": "addDirectories", "directories": ["/work/shop"], "destination": "session"},
        {"type": "setMode", "mode": "acceptEdits", "destination": "session"},
        {"type": "addRules", "rules": [{"toolName": "Bash", "ruleContent": "touch:*"}], "behavior": "allow", "destination": "localSettings"}
    ]);
    let ask = ask(
        Agent::ClaudeCode,
        &permission_request("Bash", json!({"command": "touch x"}), suggestions),
    );
    let labels: Vec<String> = (ask.questions[0].options.iter().flatten())
        .map(|o| o.label.clone())
        .collect();
    assert_eq!(
        labels,
        ["Allow", "Allow always: access to /work/shop", "Deny"]
    );
}

/// A notification no card can answer becomes a word for the person away from the terminal;
/// Claude Code's permission prompt does not (it is a card already).
#[test]
fn notifications_no_card_can_answer_are_told_and_a_permission_prompt_is_not() {
    let read = |agent: Agent, kind: &str, message: &str| {
        let input = json!({"session_id": "s1", "cwd": "/work/shop", "hook_event_name": "Notification",
            "notification_type": kind, "message": message, "details": {"type": "exec"}});
        HookEvent::read(agent, &input.to_string()).unwrap()
    };
    let idle = read(
        Agent::ClaudeCode,
        "idle_prompt",
        "Claude is waiting for your input",
    );
    assert_eq!(
        idle.attention().as_deref(),
        Some(
            "Claude Code waits for your input: Claude is waiting for your input\n(answer it at its terminal)"
        )
    );
    let HookEvent::Notification { agent, cwd, .. } = &idle else {
        panic!()
    };
    assert_eq!(
        (*agent, cwd.as_deref()),
        (Agent::ClaudeCode, Some("/work/shop"))
    );
    let gemini = read(
        Agent::Gemini,
        "ToolPermission",
        "Allow execution of: rm -rf build?",
    );
    assert_eq!(
        gemini.attention().as_deref(),
        Some(
            "Gemini CLI waits for your confirmation: Allow execution of: rm -rf build?\n(answer it at Gemini CLI's terminal: its hooks cannot approve)"
        )
    );
    assert_eq!(
        read(
            Agent::ClaudeCode,
            "permission_prompt",
            "Claude needs your permission"
        )
        .attention(),
        None
    );
    assert_eq!(
        read(Agent::ClaudeCode, "auth_success", "ok").attention(),
        None
    );
    // Long text is cut like every text of an agent's.
    let long = read(Agent::Gemini, "ToolPermission", &"x".repeat(MAX_TEXT * 2));
    assert!(long.attention().unwrap().contains("more characters"));
}
