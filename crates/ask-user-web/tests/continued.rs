//! A late answer goes to the desk at once, and the desk waits for the host's announcement that
//! its call is continued, never for a clock: the surface over a seam whose "host" (this test)
//! publishes the lifecycle events itself, and a desk that takes an answer only once the call is
//! continued (through the one rule, `pending_answer::when_continued`) and records it.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::http::StatusCode;
use common::sse::{answer, open};
use pending_answer::{
    Accepted, DeskError, DeskSession, LateRefusal, NotWaiting, QuestionDesk, Queued, SessionView,
    Submission, when_continued,
};
use serde_json::json;
use user_questions::{
    AgentHandle, AnswerBatch, CallId, HostBindings, InMemoryAgent, InMemoryAgentRegistry,
    InMemorySession, Question, QuestionEvent, QuestionEventKind, QuestionOption, SessionId,
    TimedAskRequest, TimedOutcome, UserQuestions, UserQuestionsConfig,
};

/// A desk with no questions of its own that takes an answer once its call is continued (the
/// "host" says so), and records it.
struct Recording {
    seam: UserQuestions,
    continued: AtomicBool,
    /// Submissions handed to the desk.
    submitted: AtomicUsize,
    answers: Mutex<Vec<(String, CallId, AnswerBatch)>>,
    /// The time left of a window kept elsewhere, as a host told it.
    window: Mutex<Option<Duration>>,
}

#[user_questions::async_trait]
impl QuestionDesk for Recording {
    async fn sessions(&self) -> Result<Vec<DeskSession>, DeskError> {
        Ok(Vec::new())
    }

    fn window_left(&self, _session: &str, _call_id: &CallId) -> Option<Duration> {
        *self.window.lock().unwrap()
    }

    async fn views(&self, _session: Option<&str>) -> Result<Vec<SessionView>, DeskError> {
        Ok(Vec::new())
    }

    async fn submit(&self, submission: Submission) -> Result<Accepted, LateRefusal> {
        self.submitted.fetch_add(1, Ordering::SeqCst);
        let Submission {
            session,
            call_id,
            answers,
            ..
        } = submission;
        let answers = answers.into_batch(None);
        let attempt = || {
            let taken = if self.continued.load(Ordering::SeqCst) {
                self.answers.lock().unwrap().push((
                    session.clone(),
                    call_id.clone(),
                    answers.clone(),
                ));
                Ok(Accepted::Queued(Queued {
                    call_id: call_id.clone(),
                    message_id: "reply-1".to_owned(),
                }))
            } else {
                Err(LateRefusal::NotWaiting(NotWaiting::Closing))
            };
            std::future::ready(taken)
        };
        when_continued(
            &self.seam,
            &SessionId::from(session.as_str()),
            &call_id,
            attempt,
        )
        .await
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
    scene_with(ask_user_web::WebOptions::default())
}

fn scene_with(options: ask_user_web::WebOptions) -> Scene {
    let registry = InMemoryAgentRegistry::new();
    let agent: AgentHandle = InMemoryAgent::new("root", InMemorySession::new("s1"), []);
    registry.enter_root(Arc::clone(&agent));
    let seam = UserQuestions::new(
        UserQuestionsConfig::default(),
        HostBindings::with_registry(registry),
    )
    .unwrap();
    let desk = Arc::new(Recording {
        seam: seam.clone(),
        continued: AtomicBool::new(false),
        submitted: AtomicUsize::new(0),
        answers: Mutex::new(Vec::new()),
        window: Mutex::new(None),
    });
    let web = ask_user_web::WebSurface::new(
        &seam,
        Some(Arc::clone(&desk) as Arc<dyn QuestionDesk>),
        options,
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

fn announce_continued(scene: &Scene) {
    scene.desk.continued.store(true, Ordering::SeqCst);
    scene.seam.publish(QuestionEvent {
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
async fn an_answer_before_the_announcement_goes_to_the_desk_which_waits_for_it() {
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
    // Handed to the desk at once; the desk took nothing before the call is continued, and
    // refused nothing either.
    assert_eq!(scene.desk.submitted.load(Ordering::SeqCst), 1);
    assert!(!answered.is_finished());
    assert!(scene.desk.answers.lock().unwrap().is_empty());
    announce_continued(&scene);
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
    announce_continued(&scene);
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
async fn a_call_never_announced_refuses_its_answer_once_the_desk_gave_up_waiting() {
    let scene = scene();
    let router = scene.web.router();
    let token = scene.web.token().to_owned();
    pending_call(&scene).await;
    // The host's log failed: no announcement ever comes.
    let start = tokio::time::Instant::now();
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
    assert_eq!(start.elapsed(), pending_answer::CONTINUED_WITHIN);
    assert!(scene.desk.answers.lock().unwrap().is_empty());
}

/// The inbox's page keeps no countdown of its own (each host keeps its window): a card shows the
/// time left its desk knows, and none when the desk knows nothing.
#[tokio::test(start_paused = true)]
async fn a_card_whose_window_runs_elsewhere_shows_the_time_left_its_desk_knows() {
    let scene = scene_with(ask_user_web::WebOptions {
        countdowns: false,
        ..ask_user_web::WebOptions::default()
    });
    *scene.desk.window.lock().unwrap() = Some(Duration::from_secs(42));
    let router = scene.web.router();
    let token = scene.web.token().to_owned();
    let mut page = open(&router, &token, "tab-1").await;
    let request = TimedAskRequest::new([db()], Arc::clone(&scene.agent));
    let asked = tokio::spawn({
        let seam = scene.seam.clone();
        async move {
            seam.ask_timed(request, CallId::from("call-1"), 600_000)
                .await
        }
    });
    let card = page.until_card("call-1", "open").await;
    assert_eq!(card["remainingMs"], 42_000, "{card}");
    // A page that comes now gets the same in its snapshot.
    let mut later = open(&router, &token, "tab-2").await;
    let card = later.until_card("call-1", "open").await;
    assert_eq!(card["remainingMs"], 42_000, "{card}");
    *scene.desk.window.lock().unwrap() = None;
    let mut unknown = open(&router, &token, "tab-3").await;
    let card = unknown.until_card("call-1", "open").await;
    assert_eq!(card["remainingMs"], serde_json::Value::Null, "{card}");
    asked.abort();
}
