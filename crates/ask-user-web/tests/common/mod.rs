//! A small host for the web surface's tests: the real host runtime over the in-memory store,
//! with the timed tool, one session, a `LiveDesk` over it, and the surface registered.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

pub mod sse;

use std::sync::Arc;

use ask_user_host::{Host, HostRuntime, LiveDesk, SessionOptions};
use ask_user_web::{WebOptions, WebSurface};
use pending_answer::QuestionDesk;
use serde_json::Value;
use session_log::MemoryStore;
use tokio::task::JoinHandle;
use tool_ask_user::{AskUserConfig, ToolOutcome};
use user_questions::{AnswererGuard, CallId, CancellationToken, QuestionEvent, QuestionEvents};

/// Arguments of a one-question call with two options.
pub const DB_QUESTION: &str = r#"{"questions":[{"id":"db","header":"Database","question":"Which database?","options":[{"label":"PostgreSQL","description":"Relational."},{"label":"SQLite","description":"Embedded."}]}]}"#;

/// The demo's two questions: a single-select with descriptions and a multi-select.
pub const DEMO_QUESTIONS: &str = r#"{"questions":[{"id":"db","header":"Database","question":"Which database should the new orders service use?","options":[{"label":"PostgreSQL (Recommended)","description":"Relational with strong consistency; the team already runs it in production."},{"label":"SQLite","description":"Embedded file database: simplest to operate, one writer at a time."},{"label":"DynamoDB","description":"Managed key-value store: scales without tuning, no joins."}]},{"id":"checks","header":"CI checks","question":"Which checks should run on every pull request?","multi_select":true,"options":[{"label":"Unit tests","description":"Fast: under a minute."},{"label":"Lint","description":"Formatting and static analysis."},{"label":"Integration tests","description":"Start a database container: about five minutes."},{"label":"Docs build","description":"Catches broken links in the handbook."}]}]}"#;

pub struct Fixture {
    pub runtime: HostRuntime,
    pub host: Arc<Host>,
    pub web: WebSurface,
    pub desk: Arc<LiveDesk>,
    pub events: QuestionEvents,
    _guard: AnswererGuard,
}

impl Fixture {
    /// A host with the timed tool (`window` seconds) and the surface registered.
    pub fn new(window: i64) -> Self {
        Self::with_options(window, WebOptions::default())
    }

    pub fn with_options(window: i64, options: WebOptions) -> Self {
        let runtime =
            HostRuntime::new(MemoryStore::new(), Some(AskUserConfig::timed_secs(window))).unwrap();
        let host = Arc::new(runtime.create("s1", SessionOptions::named("s1")).unwrap());
        let desk = LiveDesk::of([&host]);
        let events = runtime.seam().subscribe();
        let web = WebSurface::new(
            runtime.seam(),
            Some(Arc::clone(&desk) as Arc<dyn QuestionDesk>),
            options,
        )
        .unwrap();
        let guard = web.register(runtime.seam());
        Self {
            runtime,
            host,
            web,
            desk,
            events,
            _guard: guard,
        }
    }

    /// Starts a turn with one call of the tool, on a task of its own.
    pub fn ask(&self, call_id: &str, arguments: &str) -> JoinHandle<ToolOutcome> {
        let host = Arc::clone(&self.host);
        let call_id = CallId::from(call_id);
        let arguments = arguments.to_owned();
        host.begin_turn().unwrap();
        host.begin_step().unwrap();
        host.log_request_header().unwrap();
        tokio::spawn(async move {
            host.call_tool(&call_id, &arguments, CancellationToken::new())
                .await
                .unwrap()
        })
    }

    /// The events the seam published so far.
    pub fn seam_events(&mut self) -> Vec<QuestionEvent> {
        self.events.drain()
    }
}

/// The `answers` value of a foreground result text, or `None`.
pub fn answers_of(outcome: &ToolOutcome) -> Option<Value> {
    let value: Value = serde_json::from_str(&outcome.text).ok()?;
    value.get("answers").cloned()
}

/// Whether the result is pending.
pub fn is_pending(outcome: &ToolOutcome) -> bool {
    outcome.text.starts_with(r#"{"pending":true"#)
}
