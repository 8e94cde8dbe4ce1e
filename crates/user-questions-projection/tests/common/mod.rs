//! Fixtures of SPEC §12.5: schemas, the CALL1 call, and builders for newest-layout records, plus
//! a fold that applies records one by one through the public API.
// Test code stops at its first broken expectation (unwrap and expect are assertions); not
// every test binary uses every shared helper.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]
// Fixture builders take JSON values by value so that call sites can pass `json!` literals.
#![allow(clippy::needless_pass_by_value)]

use serde_json::{Value, json};
use user_questions::{Question, QuestionOption};
use user_questions_projection::{Applied, SessionEvent, UserQuestionsState};

pub fn timed_schema() -> Value {
    json!({"name":"ask_user_question","description":"Ask the user.","parameters":{"type":"object","properties":{"questions":{"type":"array"},"timeout":{"type":"integer"}}}})
}

pub fn legacy_schema() -> Value {
    json!({"name":"ask_user_question","description":"Ask the user.","parameters":{"type":"object","properties":{"questions":{"type":"array"}}}})
}

pub fn bash_schema() -> Value {
    json!({"name":"bash","description":"Run a command.","parameters":{"type":"object","properties":{"command":{"type":"string"}}}})
}

/// A record line without `seq`/`time` (positional seq, as in normalised fixtures), `type` first as
/// writers put it.
pub fn record(event_type: &str, data: Value) -> String {
    format!(r#"{{"type":{},"data":{data}}}"#, json!(event_type))
}

pub fn header(tools: &[Value]) -> String {
    record(
        "request/header",
        json!({"header":{"config":{"provider":"p","model":"m"},"tools":tools},"reason":"initial"}),
    )
}

pub fn header_without_tools() -> String {
    record(
        "request/header",
        json!({"header":{"config":{"provider":"p","model":"m"}},"reason":"initial"}),
    )
}

pub fn timed_header() -> String {
    header(&[bash_schema(), timed_schema()])
}

pub fn legacy_header() -> String {
    header(&[bash_schema(), legacy_schema()])
}

/// The arguments object of CALL1 (model-facing `multi_select`).
pub fn call1_arguments() -> Value {
    json!({"questions":[{"id":"scope","question":"Which scope?","header":"Scope","options":[{"label":"Tool only","description":"Only the tool package."},{"label":"Everything"}],"multi_select":true}]})
}

pub fn call(call_id: &str, name: &str, arguments: &str) -> String {
    record(
        "tool/call",
        json!({"turn":1,"step":1,"callId":call_id,"name":name,"arguments":arguments}),
    )
}

/// CALL1: `tool/call` `call_ask_1` with the §12.5 arguments.
pub fn call1() -> String {
    call(
        "call_ask_1",
        "ask_user_question",
        &call1_arguments().to_string(),
    )
}

pub fn ask(call_id: &str) -> String {
    call(call_id, "ask_user_question", &call1_arguments().to_string())
}

/// The questions CALL1 asks, in service vocabulary (`multiSelect`).
pub fn call1_questions() -> Vec<Question> {
    vec![
        Question::new("scope", "Which scope?")
            .with_header("Scope")
            .with_options([
                QuestionOption::new("Tool only").with_description("Only the tool package."),
                QuestionOption::new("Everything"),
            ])
            .with_multi_select(true),
    ]
}

/// A newest-layout (A) `tool/result` whose content is one text block; `extra` keys are merged
/// into `data` (e.g. `error`, `meta`).
pub fn result_with(call_id: &str, text: &str, is_error: bool, extra: Value) -> String {
    let mut data = json!({"turn":1,"step":1,"message":{"id":"m","role":"tool","toolCallId":call_id,"content":[{"type":"text","text":text}],"isError":is_error}});
    if let Value::Object(extra) = extra {
        data.as_object_mut().unwrap().extend(extra);
    }
    record("tool/result", data)
}

pub fn result(call_id: &str, text: &str) -> String {
    result_with(call_id, text, false, json!({}))
}

/// A `tool/result` with explicit content blocks.
pub fn result_blocks(call_id: &str, content: Value) -> String {
    record(
        "tool/result",
        json!({"turn":1,"step":1,"message":{"id":"m","role":"tool","toolCallId":call_id,"content":content,"isError":false}}),
    )
}

pub fn error_result(call_id: &str, code: &str) -> String {
    result_with(
        call_id,
        &format!("Error: {code}"),
        true,
        json!({"error":{"name":"UserQuestionError","code":code}}),
    )
}

pub fn unknown_outcome(call_id: &str) -> String {
    result_with(
        call_id,
        "The tool call was interrupted; its outcome is unknown.",
        true,
        json!({"error":{"name":"ToolOutcomeUnknownError","code":"TOOL_OUTCOME_UNKNOWN"}}),
    )
}

pub fn pending(call_id: &str) -> String {
    result(
        call_id,
        &json!({"pending":true,"callId":call_id,"message":"Not answered yet."}).to_string(),
    )
}

/// A late-reply `user/message` with the given content blocks.
pub fn reply_blocks(call_id: &str, content: Value, provenance: Option<Value>) -> String {
    let mut source = json!({"kind":"user-question-reply","callId":call_id,"outcome":"answered"});
    if let Some(p) = provenance {
        source["provenance"] = p;
    }
    record(
        "user/message",
        json!({"id":format!("reply-{call_id}"),"role":"user","source":source,"content":content}),
    )
}

pub fn reply(call_id: &str, text: &str) -> String {
    reply_blocks(call_id, json!([{"type":"text","text":text}]), None)
}

/// The full reply JSON of §6 for CALL1 with the given answers.
pub fn reply_json(call_id: &str, answers: Value) -> String {
    json!({"kind":"answer_to_pending_question","tool":"ask_user_question","callId":call_id,"questions":[{"id":"scope","question":"Which scope?"}],"answers":answers}).to_string()
}

pub fn user_text(text: &str) -> String {
    record(
        "user/message",
        json!({"id":"u1","role":"user","source":{"kind":"user"},"content":[{"type":"text","text":text}]}),
    )
}

pub fn splice_insert(message: Value) -> String {
    record(
        "agent/inbox/spliced",
        json!({"target":"next-turn","start":0,"inserted":[message]}),
    )
}

pub fn splice_remove() -> String {
    record(
        "agent/inbox/spliced",
        json!({"target":"next-turn","start":0,"removedCount":1,"inserted":[]}),
    )
}

pub fn turn_start() -> String {
    record("turn/start", json!({"turn":1}))
}

/// A fold through the public API, one record at a time.
pub struct Folder {
    pub state: UserQuestionsState,
    pub seq: u64,
}

impl Folder {
    pub fn new() -> Self {
        Self::with_inherited(0)
    }

    pub fn with_inherited(inherited: u64) -> Self {
        Self {
            state: UserQuestionsState::new(inherited),
            seq: 0,
        }
    }

    /// Applies one record; returns whether it changed the state.
    #[track_caller]
    pub fn push(&mut self, line: &str) -> bool {
        let record = SessionEvent::from_record(line, self.seq)
            .unwrap_or_else(|e| panic!("not a record ({e}): {line}"));
        self.seq = record.next_seq();
        let mut changed = false;
        for event in record.into_events() {
            if let Applied::Changed(next) = self.state.apply(&event) {
                self.state = next;
                changed = true;
            }
        }
        changed
    }

    #[track_caller]
    pub fn push_all<S: AsRef<str>>(&mut self, lines: &[S]) -> &mut Self {
        for line in lines {
            self.push(line.as_ref());
        }
        self
    }

    /// The view as compact JSON.
    pub fn view_json(&self) -> String {
        serde_json::to_string(self.state.view()).unwrap()
    }
}

/// Folds the records from an empty state and returns the view as compact JSON.
#[track_caller]
pub fn view_of<S: AsRef<str>>(lines: &[S]) -> String {
    let mut folder = Folder::new();
    folder.push_all(lines);
    folder.view_json()
}

pub const EMPTY_VIEW: &str = r#"{"active":[],"settled":[]}"#;

/// The view JSON with CALL1 active in the given state.
pub fn call1_active(state: &str) -> String {
    format!(
        r#"{{"active":[{{"callId":"call_ask_1","questions":[{{"id":"scope","question":"Which scope?","header":"Scope","options":[{{"label":"Tool only","description":"Only the tool package."}},{{"label":"Everything"}}],"multiSelect":true}}],"state":"{state}"}}],"settled":[]}}"#
    )
}

/// The view JSON with CALL1 settled with the given answers JSON.
pub fn call1_settled(answers: &str) -> String {
    format!(r#"{{"active":[],"settled":[{{"callId":"call_ask_1","answers":{answers}}}]}}"#)
}

/// A log file: a version-4 header, then the records with explicit `seq`s from 0.
pub fn log_file<S: AsRef<str>>(lines: &[S]) -> String {
    let mut out =
        String::from(r#"{"type":"session","version":4,"id":"s1","createdAt":0,"isSeeded":false}"#);
    out.push('\n');
    let mut seq = 0;
    for line in lines {
        let line = line.as_ref();
        let record = SessionEvent::from_record(line, seq).unwrap();
        if record.is_packed() {
            out.push_str(&line.replacen(r#","data":"#, &format!(r#","seq0":{seq},"data":"#), 1));
        } else {
            out.push_str(&with_seq(line, seq));
        }
        out.push('\n');
        seq = record.next_seq();
    }
    out
}

/// The record with an explicit `seq` after its `type`.
pub fn with_seq(line: &str, seq: u64) -> String {
    line.replacen(r#","data":"#, &format!(r#","seq":{seq},"data":"#), 1)
}
