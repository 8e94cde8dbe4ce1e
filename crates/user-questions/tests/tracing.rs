//! `tracing` output of the seam: the soft question limit (X5) and lifecycle events (SPEC §9.4).
//! Alone in its test binary: `tracing` caches per-callsite interest process-wide, so a capture
//! test that shares a binary with concurrently running tests can miss its events.
// Test code stops at its first broken expectation: unwrap and expect are assertions here.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::{Arc, Mutex};

use common::*;
use user_questions::{AskRequest, Question, UserQuestionError};

fn numbered(n: usize) -> Vec<Question> {
    (0..n)
        .map(|i| Question::new(format!("q{i}"), format!("Question {i}?")))
        .collect()
}

#[tokio::test]
async fn x5_warns_above_recommended() {
    let seam = bare_seam();
    let _g = TestAnswerer::new(Behaviour::FirstLabel).register(&seam, "ui");
    let (writer, lines) = capture();
    let subscriber = tracing_subscriber::fmt().with_writer(writer).finish();
    let _default = tracing::subscriber::set_default(subscriber);
    assert!(seam.ask(AskRequest::new(numbered(5))).await.is_ok());
    let text = lines.lock().unwrap().clone();
    assert!(
        text.contains("WARN") && text.contains("recommended"),
        "{text}"
    );
}

/// The `cancelled` lifecycle event logs its code as the stable string at info level (SPEC §9.4).
#[tokio::test]
async fn cancelled_event_logs_the_code_string() {
    let seam = bare_seam();
    let _g =
        TestAnswerer::new(Behaviour::Typed(UserQuestionError::ask_cancelled)).register(&seam, "ui");
    let (writer, lines) = capture();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(writer)
        .with_ansi(false)
        .finish();
    let _default = tracing::subscriber::set_default(subscriber);
    assert!(seam.ask(AskRequest::new([q_scope()])).await.is_err());
    let text = lines.lock().unwrap().clone();
    let cancelled = text
        .lines()
        .find(|line| line.contains("INFO") && line.contains("event=\"cancelled\""))
        .unwrap_or_else(|| panic!("no cancelled event in:\n{text}"));
    assert!(cancelled.contains("code=\"ASK_CANCELLED\""), "{cancelled}");
}

fn capture() -> (
    impl Fn() -> CaptureWriter + Send + Sync + 'static,
    Arc<Mutex<String>>,
) {
    let buffer = Arc::new(Mutex::new(String::new()));
    let b = buffer.clone();
    (move || CaptureWriter(b.clone()), buffer)
}

struct CaptureWriter(Arc<Mutex<String>>);

impl std::io::Write for CaptureWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .unwrap()
            .push_str(&String::from_utf8_lossy(buf));
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
