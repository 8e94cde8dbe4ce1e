//! The `tool_call` tracing span. Alone in its test binary: `tracing` caches per-callsite
//! interest process-wide, so a capture test that shares a binary with concurrently running tests
//! can miss its events.
// Test code stops at its first broken expectation: unwrap and expect are assertions here.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::Write;
use std::sync::{Arc, Mutex};

use common::*;

const GO: &str =
    r#"{"questions":[{"id":"go","question":"Go?","options":[{"label":"yes"},{"label":"no"}]}]}"#;

/// A writer that collects formatted `tracing` output.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn each_call_runs_in_a_tool_call_span() {
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::DEBUG)
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .finish();
    let w = world();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let answerer = TestAnswerer::new(Behaviour::FirstLabel);
    let _guard = answerer.register(&w.seam);
    tracing::subscriber::with_default(subscriber, || {
        runtime.block_on(w.timed(120).execute("{}", ctx("call_traced")));
        runtime.block_on(w.legacy().execute(GO, ctx("call_answered")));
    });
    let output = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    assert!(
        output.contains(r#"tool_call{tool="ask_user_question" call_id=call_traced mode="timed"}"#),
        "{output}"
    );
    assert!(output.contains("code=\"INVALID_ARGS\""), "{output}");
    assert!(
        output.contains(r#"tool_call{tool="ask_user_question" call_id=call_answered mode="legacy" answerer="ui"}"#),
        "{output}"
    );
}
