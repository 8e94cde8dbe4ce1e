//! The policy under tokio's paused clock, with the real seam and a recording backend.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Duration;

use ask_user_notify::{Backend, Links, Notice, NoticeKind, Notifier, NotifyConfig};
use tokio::sync::mpsc;
use tokio::time::Instant;
use user_questions::{
    AgentHandle, AnswerBatch, AnswerItem, AnswerRequest, Answered, Answerer, AnswererError, CallId,
    HostBindings, InMemoryAgent, InMemoryAgentRegistry, InMemorySession, Next, Question,
    QuestionOption, RegisterOptions, TimedAskRequest, TimedOutcome, UserQuestions,
    UserQuestionsConfig, async_trait,
};

struct Recorder(mpsc::UnboundedSender<(Instant, Notice)>);

#[async_trait]
impl Backend for Recorder {
    fn takes_resolutions(&self) -> bool {
        true
    }
    fn wants_buttons(&self) -> bool {
        true
    }
    async fn deliver(&self, notice: &Notice) {
        let _ = self.0.send((Instant::now(), notice.clone()));
    }
}

/// A receiver that never answers.
struct Stuck;

#[async_trait]
impl Backend for Stuck {
    fn takes_resolutions(&self) -> bool {
        true
    }
    async fn deliver(&self, _notice: &Notice) {
        std::future::pending::<()>().await;
    }
}

/// Answers after `after`.
struct Slow(Duration);

#[async_trait]
impl Answerer for Slow {
    async fn answer(&self, _r: &AnswerRequest, _n: Next<'_>) -> Result<Answered, AnswererError> {
        tokio::time::sleep(self.0).await;
        Ok(Answered::human(AnswerBatch::new([AnswerItem::selected(
            "db",
            ["SQLite"],
        )])))
    }
}

struct Host {
    seam: UserQuestions,
    agent: AgentHandle,
}

fn host() -> Host {
    let registry = InMemoryAgentRegistry::new();
    let agent: AgentHandle = InMemoryAgent::new("root", InMemorySession::new("s1"), []);
    registry.enter_root(agent.clone());
    let seam = UserQuestions::new(
        UserQuestionsConfig::default(),
        HostBindings::with_registry(registry),
    )
    .unwrap();
    Host { seam, agent }
}

fn question() -> Question {
    Question::new("db", "Which database?")
        .with_header("Database")
        .with_options([
            QuestionOption::new("PostgreSQL"),
            QuestionOption::new("SQLite"),
        ])
}

fn ask(host: &Host, call: &str, window_ms: i64) -> tokio::task::JoinHandle<TimedOutcome> {
    let seam = host.seam.clone();
    let agent = host.agent.clone();
    let call = CallId::from(call);
    tokio::spawn(async move {
        seam.ask_timed(TimedAskRequest::new([question()], agent), call, window_ms)
            .await
            .unwrap()
    })
}

fn notifier(
    host: &Host,
    config: NotifyConfig,
    links: Option<Arc<dyn Links>>,
) -> (Notifier, mpsc::UnboundedReceiver<(Instant, Notice)>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let notifier = Notifier::start(&host.seam, config, links, vec![Arc::new(Recorder(tx))]);
    (notifier, rx)
}

async fn settle() {
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
}

#[tokio::test(start_paused = true)]
async fn one_notification_when_nobody_claims_within_notify_after() {
    let host = host();
    let (_notifier, mut rx) = notifier(&host, NotifyConfig::default(), None);
    let start = Instant::now();
    let _call = ask(&host, "c1", 60_000);
    tokio::time::sleep(Duration::from_millis(9_990)).await;
    settle().await;
    assert!(rx.try_recv().is_err(), "nothing before notify_after");
    tokio::time::sleep(Duration::from_millis(20)).await;
    settle().await;
    let (at, notice) = rx.try_recv().unwrap();
    assert_eq!(at - start, Duration::from_secs(10));
    assert_eq!(notice.kind, NoticeKind::Waiting);
    assert_eq!(
        (notice.session.as_str(), notice.call_id.as_str()),
        ("s1", "c1")
    );
    assert_eq!(notice.questions[0].id, "db");
    assert_eq!(notice.questions[0].header.as_deref(), Some("Database"));
    assert_eq!(
        notice.questions[0].question, None,
        "no text unless configured"
    );
    assert!(notice.id.starts_with("msg_"));
    tokio::time::sleep(Duration::from_secs(30)).await;
    settle().await;
    assert!(rx.try_recv().is_err(), "once");
}

#[tokio::test(start_paused = true)]
async fn a_claim_within_notify_after_means_no_waiting_notice_and_pending_is_told_once() {
    let host = host();
    let (_notifier, mut rx) = notifier(&host, NotifyConfig::default(), None);
    let call = ask(&host, "c1", 20_000);
    tokio::time::sleep(Duration::from_secs(5)).await;
    let claim = host
        .seam
        .attach_wait(&host.agent, &"c1".into())
        .unwrap()
        .unwrap();
    tokio::time::sleep(Duration::from_mins(1)).await;
    settle().await;
    assert!(rx.try_recv().is_err(), "someone is looking");
    drop(claim);
    assert!(matches!(call.await.unwrap(), TimedOutcome::Pending { .. }));
    settle().await;
    let (_, notice) = rx.try_recv().unwrap();
    assert_eq!(notice.kind, NoticeKind::Pending);
    assert!(rx.try_recv().is_err());
}

#[tokio::test(start_paused = true)]
async fn a_short_window_notifies_at_half_of_it() {
    let host = host();
    let (_notifier, mut rx) = notifier(&host, NotifyConfig::default(), None);
    let start = Instant::now();
    let call = ask(&host, "c1", 6_000);
    assert!(matches!(call.await.unwrap(), TimedOutcome::Pending { .. }));
    settle().await;
    let (at, waiting) = rx.try_recv().unwrap();
    assert_eq!(
        (waiting.kind, at - start),
        (NoticeKind::Waiting, Duration::from_secs(3))
    );
    let (_, pending) = rx.try_recv().unwrap();
    assert_eq!(pending.kind, NoticeKind::Pending);
}

#[tokio::test(start_paused = true)]
async fn an_answer_before_notify_after_sends_nothing_after_it_the_resolution() {
    let host = host();
    let (_notifier, mut rx) = notifier(&host, NotifyConfig::default(), None);
    let slow = host.seam.register(
        Arc::new(Slow(Duration::from_secs(5))),
        RegisterOptions::global("terminal"),
    );
    assert!(matches!(
        ask(&host, "c1", 60_000).await.unwrap(),
        TimedOutcome::Answered(_)
    ));
    tokio::time::sleep(Duration::from_mins(1)).await;
    settle().await;
    assert!(rx.try_recv().is_err(), "answered in time: nothing at all");
    drop(slow);

    let _slow = host.seam.register(
        Arc::new(Slow(Duration::from_secs(15))),
        RegisterOptions::global("terminal"),
    );
    assert!(matches!(
        ask(&host, "c2", 60_000).await.unwrap(),
        TimedOutcome::Answered(_)
    ));
    settle().await;
    let (_, waiting) = rx.try_recv().unwrap();
    assert_eq!(waiting.kind, NoticeKind::Waiting);
    let (_, resolved) = rx.try_recv().unwrap();
    assert_eq!(
        resolved.kind,
        NoticeKind::Answered {
            by: "terminal".into()
        }
    );
    assert_eq!(resolved.call_id, "c2");
}

#[tokio::test(start_paused = true)]
async fn a_receiver_that_never_answers_does_not_slow_an_ask() {
    let host = host();
    let notifier = Notifier::start(
        &host.seam,
        NotifyConfig::default(),
        None,
        vec![Arc::new(Stuck)],
    );
    let _answer = host.seam.register(
        Arc::new(Slow(Duration::from_secs(11))),
        RegisterOptions::global("terminal"),
    );
    // Every question is notified (nobody answers within 10 s): the stuck backend's queue fills.
    let mut calls = Vec::new();
    for n in 0..80 {
        calls.push(ask(&host, &format!("c{n}"), 60_000));
    }
    let start = Instant::now();
    for call in calls {
        assert!(matches!(call.await.unwrap(), TimedOutcome::Answered(_)));
    }
    assert_eq!(
        start.elapsed(),
        Duration::from_secs(11),
        "each ask takes its answerer's time only"
    );
    settle().await;
    let stats = notifier.stats();
    assert!(stats.dropped > 0, "{stats:?}");
    assert_eq!(stats.missed_events, 0);
}

struct StaticLinks;

impl Links for StaticLinks {
    fn questions(&self, _s: &str, _c: &CallId) -> Option<Vec<Question>> {
        Some(vec![question().with_detail("Pick one.")])
    }
    fn card_url(&self) -> Option<String> {
        Some("http://127.0.0.1:1/".into())
    }
    fn answer_button(
        &self,
        _s: &str,
        c: &CallId,
        q: &str,
        label: &str,
    ) -> Option<(String, String)> {
        Some((
            format!("http://127.0.0.1:1/cards/{c}/answer?grant={label}"),
            format!(r#"{{"q":"{q}"}}"#),
        ))
    }
}

#[tokio::test(start_paused = true)]
async fn links_add_labels_buttons_and_text_only_when_configured() {
    for include_text in [false, true] {
        let host = host();
        let config = NotifyConfig {
            include_text,
            ..NotifyConfig::default()
        };
        let (_notifier, mut rx) = notifier(&host, config, Some(Arc::new(StaticLinks)));
        let _call = ask(&host, "c1", 60_000);
        tokio::time::sleep(Duration::from_secs(11)).await;
        settle().await;
        let (_, notice) = rx.try_recv().unwrap();
        assert_eq!(notice.questions[0].options, ["PostgreSQL", "SQLite"]);
        assert_eq!(notice.url.as_deref(), Some("http://127.0.0.1:1/"));
        assert_eq!(notice.buttons.len(), 2);
        assert_eq!(notice.buttons[1].label, "SQLite");
        let text = notice.payload().to_string();
        assert_eq!(text.contains("Which database?"), include_text, "{text}");
        assert_eq!(text.contains("Pick one."), include_text, "{text}");
        assert!(
            !text.contains("grant="),
            "buttons stay off webhooks: {text}"
        );
    }
}

#[tokio::test(start_paused = true)]
async fn ignoring_claims_notifies_although_a_surface_shows_the_question() {
    let host = host();
    let config = NotifyConfig {
        ignore_claims: true,
        ..NotifyConfig::default()
    };
    let (_notifier, mut rx) = notifier(&host, config, None);
    let _call = ask(&host, "c1", 60_000);
    tokio::time::sleep(Duration::from_secs(1)).await;
    let _claim = host
        .seam
        .attach_wait(&host.agent, &"c1".into())
        .unwrap()
        .unwrap();
    tokio::time::sleep(Duration::from_secs(10)).await;
    settle().await;
    assert_eq!(rx.try_recv().unwrap().1.kind, NoticeKind::Waiting);
}

#[tokio::test(start_paused = true)]
async fn a_blocking_ask_without_a_call_id_is_followed_by_its_ask_id() {
    let host = host();
    let (_notifier, mut rx) = notifier(&host, NotifyConfig::default(), None);
    let _slow = host.seam.register(
        Arc::new(Slow(Duration::from_secs(30))),
        RegisterOptions::global("terminal"),
    );
    let seam = host.seam.clone();
    let _ask = tokio::spawn(async move {
        let _ = seam
            .ask(user_questions::AskRequest::new([question()]))
            .await;
    });
    tokio::time::sleep(Duration::from_secs(11)).await;
    settle().await;
    let (_, notice) = rx.try_recv().unwrap();
    assert_eq!(notice.kind, NoticeKind::Waiting);
    assert!(notice.call_id.starts_with("ask:"), "{}", notice.call_id);
}

/// An agent waiting at its own terminal: one notification to every backend, no card and no
/// buttons, its webhook event `agent.attention`, its agent's and message's text escaped on a
/// phone.
#[tokio::test]
async fn an_announcement_reaches_every_backend_without_buttons() {
    let host = host();
    let (notifier, mut rx) = notifier(&host, NotifyConfig::default(), None);
    notifier.announce(
        "Gemini CLI",
        "g-1",
        "Gemini CLI waits for your confirmation: rm\u{1b}[2J -rf build",
    );
    let (_, notice) = rx.recv().await.unwrap();
    assert_eq!(
        notice.kind,
        NoticeKind::Attention {
            agent: "Gemini CLI".into(),
            text: "Gemini CLI waits for your confirmation: rm\u{1b}[2J -rf build".into()
        }
    );
    assert!(notice.buttons.is_empty() && notice.questions.is_empty());
    assert_eq!(notice.title(), "Gemini CLI is waiting for you");
    let payload = notice.payload();
    assert_eq!(payload["type"], "agent.attention");
    assert_eq!(payload["data"]["agent"], "Gemini CLI");
    assert_eq!(payload["data"]["session"], "g-1");
    let ntfy = ask_user_notify::Ntfy::new(
        ask_user_notify::NtfyConfig {
            topic: "t".into(),
            server: "http://127.0.0.1:9/".into(),
            token: None,
        },
        ask_user_notify::RetryPolicy::default(),
    )
    .unwrap();
    let message = ntfy.message(&notice);
    assert_eq!(message["title"], "Gemini CLI is waiting for you");
    assert_eq!(message["tags"][0], "bell");
    assert!(!message.to_string().contains('\u{1b}'), "{message}");
}
