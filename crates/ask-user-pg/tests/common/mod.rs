//! A real `PostgreSQL` server for the tests: `ASK_USER_PG_URL` names it (`.ci/run` starts a
//! throwaway cluster and sets it). Without it a test says so and returns, except under `CI=true`,
//! where it fails: these tests never pass silently in CI.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use ask_user_pg::{PgOptions, PgStore};
use ask_user_testkit::logs::{call, ev, result, scope_arguments, timed_request_header};
use serde_json::json;
use session_log::{LogEvent, SessionStore};

/// The server's connection string, or `None` (after saying why) when there is none outside CI.
pub fn pg_url() -> Option<String> {
    if let Ok(url) = std::env::var("ASK_USER_PG_URL") {
        return Some(url);
    }
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "ASK_USER_PG_URL is not set: the PostgreSQL tests need a server (.ci/run starts one)"
    );
    eprintln!("skipped: ASK_USER_PG_URL is not set (no PostgreSQL server)");
    None
}

/// A schema name no other test uses.
pub fn fresh_schema() -> String {
    let mut bytes = [0u8; 6];
    getrandom::fill(&mut bytes).unwrap();
    let suffix = u64::from_le_bytes([
        0, 0, bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5],
    ]);
    format!("t_{suffix:012x}")
}

/// Options for a store in `schema`.
pub fn options(schema: &str) -> PgOptions {
    PgOptions {
        schema: schema.to_owned(),
        ..PgOptions::default()
    }
}

/// A store in a fresh schema.
pub fn store(url: &str) -> (PgStore, String) {
    let schema = fresh_schema();
    (PgStore::connect(url, &options(&schema)).unwrap(), schema)
}

/// A plain client with `search_path` set to `schema`, to look at or change rows behind the
/// store's back.
pub fn client(url: &str, schema: &str) -> postgres::Client {
    let mut client = postgres::Client::connect(url, postgres::NoTls).unwrap();
    client
        .batch_execute(&format!("SET search_path TO \"{schema}\""))
        .unwrap();
    client
}

/// Drops a test's schema.
pub fn drop_schema(url: &str, schema: &str) {
    if let Ok(mut client) = postgres::Client::connect(url, postgres::NoTls) {
        let _ = client.batch_execute(&format!("DROP SCHEMA IF EXISTS \"{schema}\" CASCADE"));
    }
}

/// The events of one turn that asks the timed question `call_id` and ends with it pending:
/// afterwards the question is continued.
pub fn pending_turn(first_seq: u64, turn: u64, call_id: &str) -> Vec<LogEvent> {
    let s = first_seq;
    vec![
        ev("turn/start", s, json!({"turn":turn})),
        ev("step/start", s + 1, json!({"turn":turn,"step":1})),
        ev("request/header", s + 2, timed_request_header()),
        ev(
            "tool/call",
            s + 3,
            call(turn, 1, call_id, "ask_user_question", &scope_arguments()),
        ),
        ev(
            "tool/result",
            s + 4,
            result(
                turn,
                1,
                call_id,
                &format!(r#"{{"pending":true,"callId":"{call_id}"}}"#),
            ),
        ),
        ev("step/end", s + 5, json!({"turn":turn,"step":1})),
        ev(
            "turn/end",
            s + 6,
            json!({"turn":turn,"reason":{"kind":"completed"}}),
        ),
    ]
}

/// Creates session `name` in `store` with one continued question per call id.
pub fn session_with_pending(store: &PgStore, name: &str, calls: &[&str]) {
    let mut writer = store
        .create(name, &session_log::NewSession::new(name))
        .unwrap();
    for (index, call_id) in calls.iter().enumerate() {
        let events = pending_turn(writer.next_seq(), index as u64 + 1, call_id);
        writer.append(&events).unwrap();
    }
}

/// Keeps stores alive with their schemas, dropping the schemas at the end.
pub struct Schemas {
    pub url: String,
    pub made: std::sync::Mutex<Vec<(Arc<PgStore>, String)>>,
}

impl Drop for Schemas {
    fn drop(&mut self) {
        for (_, schema) in self.made.lock().unwrap().drain(..) {
            drop_schema(&self.url, &schema);
        }
    }
}
