//! A late answer waits for the host's announcement that its call is continued, never for a
//! clock: the surface over a seam whose "host" (this test) publishes the lifecycle events itself,
//! and a desk that records what it is given.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::http::StatusCode;
use common::sse::{answer, open};
use pending_answer::{
    Accepted, DeskError, DeskSession, LateRefusal, QuestionDesk, Queued, SessionView,
};
use serde_json::json;
use user_questions::{
    AgentHandle, AnswerBatch, CallId, HostBindings, InMemoryAgent, InMemoryAgentRegistry,
    InMemorySession, Provenance, Question, QuestionEvent, QuestionEventKind, QuestionOption,
    SessionId, TimedAskRequest, TimedOutcome, UserQuestions, UserQuestionsConfig,
};

/// A desk with no questions of its own that takes every answer it is given.
#[derive(Default)]
struct Recording {
    answers: Mutex<Vec<(String, CallId, AnswerBatch)>>,
}

impl QuestionDesk for Recording {
    fn sessions(&self) -> Result<Vec<DeskSession>, DeskError> {
        Ok(Vec::new())
    }

    fn views(&self, _session: Option<&str>) -> Result<Vec<SessionView>, DeskError> {
        Ok(Vec::new())
    }

    fn answer(
        &self,
        session: &str,
        call_id: &CallId,
        answers: AnswerBatch,
        _provenance: Provenance,
    ) -> Result<Accepted, LateRefusal> {
        self.answers
            .lock()
            .unwrap()
            .push((session.to_owned(), call_id.clone(), answers));
        Ok(Accepted::Queued(Queued {
            call_id: call_id.clone(),
            message_id: "reply-1".to_owned(),
        }))
    }
}

struct Scene {
    seam: UserQuestions,
    agent: AgentHandle,
    desk: Arc<Recording>,
    web: ask_user_web::WebSurface,
    _guard: user_questions::AnswererGuard,
}

fn scene() -> Scene {
    let registry = InMemoryAgentRegistry::new();
    let agent: AgentHandle = InMemoryAgent::new("root", InMemorySession::new("s1"), []);
    registry.enter_root(Arc::clone(&agent));
    let seam = UserQuestions::new(
        UserQuestionsConfig::default(),
        HostBindings::with_registry(registry),
    )
    .unwrap();
    let desk = Arc::new(Recording::default());
    let web = ask_user_web::WebSurface::new(
        &seam,
        Some(Arc::clone(&desk) as Arc<dyn QuestionDesk>),
        ask_user_web::WebOptions::default(),
    )
    .unwrap();
    let guard = web.register(&seam);
    Scene {
        seam,
        agent,
        desk,
        web,
        _guard: guard,
    }
}

fn announce_continued(seam: &UserQuestions) {
    seam.publish(QuestionEvent {
        ask_id: None,
        call_id: Some(CallId::from("call-1")),
        agent_id: None,
        session_id: Some(SessionId::from("s1")),
        at_ms: 0,
        kind: QuestionEventKind::Continued,
    });
}

fn db() -> Question {
    Question::new("db", "Which database?").with_options([
        QuestionOption::new("PostgreSQL"),
        QuestionOption::new("SQLite"),
    ])
}

/// The window closes with nobody looking: the call is pending, the card continued, but nothing
/// announced it continued yet.
async fn pending_call(scene: &Scene) {
    let request = TimedAskRequest::new([db()], Arc::clone(&scene.agent));
    let outcome = scene
        .seam
        .ask_timed(request, CallId::from("call-1"), 1000)
        .await
        .unwrap();
    assert!(matches!(outcome, TimedOutcome::Pending { .. }));
}

#[tokio::test(start_paused = true)]
async fn an_answer_before_the_announcement_waits_for_it_then_goes_late() {
    let scene = scene();
    let router = scene.web.router();
    let token = scene.web.token().to_owned();
    let mut page = open(&router, &token, "tab-1").await;
    // Not looking yet when the window closes: the page shows the card turn continued.
    drop(page);
    pending_call(&scene).await;
    page = open(&router, &token, "tab-2").await;
    page.until_card("call-1", "continued").await;

    let answered = tokio::spawn({
        let (router, token) = (router.clone(), token.clone());
        async move {
            answer(
                &router,
                &token,
                "call-1",
                json!([{"id": "db", "selected": ["SQLite"]}]),
            )
            .await
        }
    });
    tokio::time::sleep(Duration::from_secs(5)).await;
    // Not given to the desk before the call is continued, and not refused either.
    assert!(!answered.is_finished());
    assert!(scene.desk.answers.lock().unwrap().is_empty());
    announce_continued(&scene.seam);
    let (status, body) = answered.await.unwrap();
    assert_eq!(
        (status, body),
        (StatusCode::OK, json!({"ok": true, "path": "late"}))
    );
    let answers = scene.desk.answers.lock().unwrap().clone();
    assert_eq!(answers.len(), 1);
    assert_eq!(answers[0].0, "s1");
    assert_eq!(answers[0].1, CallId::from("call-1"));
    page.until("queued", "call-1").await;
}

#[tokio::test(start_paused = true)]
async fn an_announced_call_takes_its_answer_at_once() {
    let scene = scene();
    let router = scene.web.router();
    let token = scene.web.token().to_owned();
    pending_call(&scene).await;
    announce_continued(&scene.seam);
    let start = tokio::time::Instant::now();
    let (status, _) = answer(
        &router,
        &token,
        "call-1",
        json!([{"id": "db", "selected": ["PostgreSQL"]}]),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(start.elapsed(), Duration::ZERO, "no wait, no polling");
    assert_eq!(scene.desk.answers.lock().unwrap().len(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_call_never_announced_refuses_its_answer_without_giving_it_to_the_desk() {
    let scene = scene();
    let router = scene.web.router();
    let token = scene.web.token().to_owned();
    pending_call(&scene).await;
    // The host's log failed: no announcement ever comes.
    let (status, body) = answer(
        &router,
        &token,
        "call-1",
        json!([{"id": "db", "selected": ["PostgreSQL"]}]),
    )
    .await;
    assert_eq!(
        (status, body["code"].as_str()),
        (StatusCode::GONE, Some("NOT_WAITING"))
    );
    assert!(scene.desk.answers.lock().unwrap().is_empty());
}
