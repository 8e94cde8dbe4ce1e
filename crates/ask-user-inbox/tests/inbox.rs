//! The inbox and a linked host over an in-memory stream: a question handed over, answered on
//! either side, going pending and continued, answered late through the host, and the host gone.
// Test code stops at its first broken expectation: unwrap and expect are assertions here.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use ask_user_inbox::{Connect, Inbox, InboxLink, LinkedHost, LinkedSession, Stream};
use pending_answer::{
    Accepted, DeskError, DeskQuestion, DeskSession, LateRefusal, QuestionDesk, Queued, SessionView,
    Submission,
};
use tokio::sync::{mpsc, oneshot};
use user_questions::{
    AgentHandle, AnswerBatch, AnswerItem, AnswerRequest, Answered, Answerer, AnswererError,
    AnswererGuard, AskRequest, CallId, HostBindings, InMemoryAgent, InMemoryAgentRegistry,
    InMemorySession, Next, Provenance, Question, QuestionEvent, QuestionEventKind, QuestionOption,
    Received, RegisterOptions, SessionId, TimedAskRequest, TimedOutcome, UserQuestions,
    UserQuestionsConfig, async_trait,
};

/// Far longer than any wait here: a broken test fails instead of hanging.
const NEVER: Duration = Duration::from_secs(30);

fn question() -> Question {
    Question::new("db", "Which database?").with_options([
        QuestionOption::new("PostgreSQL"),
        QuestionOption::new("SQLite"),
    ])
}

fn batch(label: &str) -> AnswerBatch {
    AnswerBatch::new([AnswerItem::selected("db", [label])])
}

/// An answerer that answers when the test says so: a page, a form.
#[derive(Clone, Default)]
struct Hand {
    waiting: Arc<Mutex<Vec<oneshot::Sender<AnswerBatch>>>>,
    seen: Arc<tokio::sync::Notify>,
}

impl Hand {
    /// Waits for a request to reach the hand, then answers it.
    async fn answer(&self, batch: AnswerBatch) {
        let sender = tokio::time::timeout(NEVER, async {
            loop {
                let notified = self.seen.notified();
                if let Some(sender) = self.waiting.lock().unwrap().pop() {
                    return sender;
                }
                notified.await;
            }
        })
        .await
        .expect("no request reached the hand");
        sender.send(batch).unwrap();
    }

    async fn reached(&self) {
        tokio::time::timeout(NEVER, async {
            loop {
                let notified = self.seen.notified();
                if !self.waiting.lock().unwrap().is_empty() {
                    return;
                }
                notified.await;
            }
        })
        .await
        .expect("no request reached the hand");
    }
}

/// The hand as an answerer: it waits for the test and races the rest of the waterfall, as the
/// page does (with nobody else there, the hand alone).
struct HandAnswerer(Hand);

#[async_trait]
impl Answerer for HandAnswerer {
    async fn answer(
        &self,
        request: &AnswerRequest,
        next: Next<'_>,
    ) -> Result<Answered, AnswererError> {
        let (tx, mut rx) = oneshot::channel();
        self.0.waiting.lock().unwrap().push(tx);
        self.0.seen.notify_waiters();
        let rest = next.run();
        tokio::pin!(rest);
        let mut rest_done = false;
        loop {
            tokio::select! {
                answers = &mut rx => return match answers {
                    Ok(answers) => Ok(Answered::human(answers)),
                    Err(_) => Err(user_questions::UserQuestionError::ask_aborted().into()),
                },
                result = &mut rest, if !rest_done => match result {
                    Err(error) if error.is(&user_questions::ErrorCode::NoProvider) => rest_done = true,
                    other => return other,
                },
                () = request.cancel.cancelled() => {
                    return Err(user_questions::UserQuestionError::ask_aborted().into());
                }
            }
        }
    }
}

/// The host's side of the test: a seam, one agent, and its desk.
struct Host {
    seam: UserQuestions,
    agent: AgentHandle,
    desk: Arc<HostDesk>,
}

/// The host's desk: what its late answers got.
#[derive(Default)]
struct HostDesk {
    late: Mutex<Vec<(String, CallId, AnswerBatch)>>,
    /// Held by a test to keep a late answer in the host's hands a while.
    pause: tokio::sync::RwLock<()>,
    /// The host no longer serves its sessions (an HTTP server's session ended).
    forgot: std::sync::atomic::AtomicBool,
}

impl LinkedHost for Host {
    fn session(&self, id: &SessionId) -> Option<LinkedSession> {
        (id.as_str() == "s1").then(|| LinkedSession {
            name: "log-1.jsonl".to_owned(),
            client: Some("claude-code".to_owned()),
            cwd: Some("/work/app".to_owned()),
        })
    }

    fn desk(&self) -> Arc<dyn QuestionDesk> {
        Arc::clone(&self.desk) as Arc<dyn QuestionDesk>
    }
}

#[async_trait]
impl QuestionDesk for HostDesk {
    async fn sessions(&self) -> Result<Vec<DeskSession>, DeskError> {
        Ok(Vec::new())
    }

    async fn views(&self, _session: Option<&str>) -> Result<Vec<SessionView>, DeskError> {
        Ok(Vec::new())
    }

    async fn submit(&self, submission: Submission) -> Result<Accepted, LateRefusal> {
        let _unpaused = self.pause.read().await;
        if self.forgot.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(LateRefusal::UnknownSession(submission.session));
        }
        let Submission {
            session,
            call_id,
            answers,
            ..
        } = submission;
        self.late
            .lock()
            .unwrap()
            .push((session, call_id.clone(), answers.into_batch(None)));
        Ok(Accepted::Queued(Queued {
            call_id,
            message_id: "reply-1".to_owned(),
        }))
    }
}

/// A fallback desk that records what it was asked to answer.
#[derive(Default)]
struct Fallback {
    answered: Mutex<Vec<(String, CallId)>>,
}

#[async_trait]
impl QuestionDesk for Fallback {
    async fn sessions(&self) -> Result<Vec<DeskSession>, DeskError> {
        Ok(Vec::new())
    }

    async fn views(&self, _session: Option<&str>) -> Result<Vec<SessionView>, DeskError> {
        Ok(Vec::new())
    }

    async fn answerable(&self) -> Result<Vec<DeskQuestion>, DeskError> {
        Ok(Vec::new())
    }

    async fn submit(&self, submission: Submission) -> Result<Accepted, LateRefusal> {
        self.answered
            .lock()
            .unwrap()
            .push((submission.session, submission.call_id));
        Ok(Accepted::Recorded {
            answer_id: "a1".to_owned(),
        })
    }
}

/// An inbox with its "page": a hand registered at the front of its seam.
struct Served {
    inbox: Inbox,
    fallback: Arc<Fallback>,
    page: Hand,
    _page: AnswererGuard,
}

fn served() -> Served {
    let fallback = Arc::new(Fallback::default());
    let inbox = Inbox::new(Arc::clone(&fallback) as Arc<dyn QuestionDesk>).unwrap();
    let page = Hand::default();
    let page_guard = inbox.seam().register(
        Arc::new(HandAnswerer(page.clone())),
        RegisterOptions::global("web").prepended(),
    );
    Served {
        inbox,
        fallback,
        page,
        _page: page_guard,
    }
}

struct World {
    inbox: Inbox,
    fallback: Arc<Fallback>,
    page: Hand,
    _page: AnswererGuard,
    /// The inbox the host's next connection reaches (a restarted one replaces it).
    current: Arc<Mutex<Inbox>>,
    host: Arc<Host>,
    link: Option<InboxLink>,
    /// Ends the current connection (the host process dying) when sent.
    kill: mpsc::UnboundedSender<()>,
}

/// An inbox with a "page" (a hand registered at the front of its seam) and one host linked to it
/// over in-memory streams; `host_hand` answers at the host (its client's form).
fn world(host_hand: Option<&Hand>) -> (World, Option<AnswererGuard>) {
    let Served {
        inbox,
        fallback,
        page,
        _page: page_guard,
    } = served();
    let current = Arc::new(Mutex::new(inbox.clone()));
    let registry = InMemoryAgentRegistry::new();
    let agent: AgentHandle = InMemoryAgent::new("root", InMemorySession::new("s1"), []);
    registry.enter_root(Arc::clone(&agent));
    let seam = UserQuestions::new(
        UserQuestionsConfig::default(),
        HostBindings::with_registry(registry),
    )
    .unwrap();
    let form = host_hand.map(|hand| {
        seam.register(
            Arc::new(HandAnswerer(hand.clone())),
            RegisterOptions::global("mcp-elicitation:claude-code"),
        )
    });
    let host = Arc::new(Host {
        seam: seam.clone(),
        agent,
        desk: Arc::default(),
    });
    let (kill, kills) = mpsc::unbounded_channel::<()>();
    let kills = Arc::new(tokio::sync::Mutex::new(kills));
    let reached = Arc::clone(&current);
    let connect: Connect = Arc::new(move || {
        let inbox = reached.lock().unwrap().clone();
        let kills = Arc::clone(&kills);
        Box::pin(async move {
            let (host_end, inbox_end) = tokio::io::duplex(64 * 1024);
            tokio::spawn(async move {
                let mut kills = kills.lock().await;
                tokio::select! {
                    () = inbox.serve_link(inbox_end) => {}
                    _ = kills.recv() => {}
                }
            });
            Ok(Box::new(host_end) as Stream)
        })
    });
    let link = InboxLink::start(&seam, Arc::clone(&host) as Arc<dyn LinkedHost>, connect);
    (
        World {
            inbox,
            fallback,
            page,
            _page: page_guard,
            current,
            host,
            link: Some(link),
            kill,
        },
        form,
    )
}

impl World {
    /// `call_1` asked with a short window, gone pending, and continued at the host.
    async fn continued_call(&self) {
        let mut events = self.inbox.seam().subscribe();
        let asked = self.ask_timed(200);
        self.page.reached().await;
        assert!(matches!(finish(asked).await, TimedOutcome::Pending { .. }));
        announce_continued(&self.host.seam);
        World::inbox_told(&mut events, "continued").await;
    }

    async fn linked(&self) {
        tokio::time::timeout(NEVER, self.link.as_ref().unwrap().connected())
            .await
            .unwrap();
    }

    fn ask_timed(&self, window_ms: i64) -> tokio::task::JoinHandle<TimedOutcome> {
        let seam = self.host.seam.clone();
        let agent = Arc::clone(&self.host.agent);
        tokio::spawn(async move {
            seam.ask_timed(
                TimedAskRequest::new([question()], agent),
                CallId::from("call_1"),
                window_ms,
            )
            .await
            .unwrap()
        })
    }

    /// Waits for the inbox's seam to tell each of `names` of `call_1`, in any order.
    async fn inbox_told_all(events: &mut user_questions::QuestionEvents, names: &[&str]) {
        let mut left: Vec<&str> = names.to_vec();
        tokio::time::timeout(NEVER, async {
            while let Some(received) = events.recv().await {
                if let Received::Event(event) = received
                    && event.call_id == Some(CallId::from("call_1"))
                {
                    left.retain(|name| *name != event.kind.name());
                    if left.is_empty() {
                        return;
                    }
                }
            }
            panic!("the inbox's events ended");
        })
        .await
        .unwrap_or_else(|_| panic!("the inbox never told all of {names:?}"));
    }

    /// Waits for the inbox's seam to tell `kind` of `call_1`.
    async fn inbox_told(events: &mut user_questions::QuestionEvents, name: &str) {
        tokio::time::timeout(NEVER, async {
            while let Some(received) = events.recv().await {
                if let Received::Event(event) = received
                    && event.kind.name() == name
                    && event.call_id == Some(CallId::from("call_1"))
                {
                    assert_eq!(event.session_id, Some(SessionId::from("log-1.jsonl")));
                    return;
                }
            }
            panic!("the inbox's events ended");
        })
        .await
        .unwrap_or_else(|_| panic!("the inbox never told {name}"));
    }
}

async fn finish<T>(task: tokio::task::JoinHandle<T>) -> T {
    tokio::time::timeout(NEVER, task).await.unwrap().unwrap()
}

/// A late answer to `call_1` given in the inbox (the page does this through the desk).
async fn answer_late_in_the_inbox(inbox: &Inbox) -> Accepted {
    inbox
        .desk()
        .submit(Submission::new(
            "log-1.jsonl",
            CallId::from("call_1"),
            batch("SQLite"),
            Provenance::human("web"),
        ))
        .await
        .unwrap()
}

/// The host publishes `continued` once its pending result is durable (its late answers do).
fn announce_continued(seam: &UserQuestions) {
    seam.publish(QuestionEvent {
        ask_id: None,
        call_id: Some(CallId::from("call_1")),
        agent_id: None,
        session_id: Some(SessionId::from("s1")),
        at_ms: 0,
        kind: QuestionEventKind::Continued,
    });
}

#[tokio::test(start_paused = true)]
async fn a_question_answered_in_the_inbox_reaches_its_host_in_the_window() {
    let (world, _form) = world(None);
    world.linked().await;
    let asked = world.ask_timed(60_000);
    world.page.answer(batch("SQLite")).await;
    match finish(asked).await {
        TimedOutcome::Answered(answered) => {
            assert_eq!(answered.answers, batch("SQLite"));
            assert_eq!(answered.provenance, Provenance::human("web"));
        }
        other @ TimedOutcome::Pending { .. } => panic!("expected the page's answer, got {other:?}"),
    }
    let sessions = world.inbox.sessions();
    assert_eq!(sessions.len(), 1);
    assert_eq!(
        sessions[0].label().as_deref(),
        Some("claude-code · /work/app")
    );
    assert!(sessions[0].linked);
}

/// Cards show the time left of a question in its window: the host tells the inbox when its
/// window closes; an untimed question has none.
#[tokio::test(start_paused = true)]
async fn the_inbox_knows_the_time_left_of_a_question_in_its_hosts_window() {
    let (world, _form) = world(None);
    world.linked().await;
    let call = CallId::from("call_1");
    let asked = world.ask_timed(60_000);
    world.page.reached().await;
    let left = world.inbox.desk().window_left("log-1.jsonl", &call);
    // Told in wall-clock time, which runs on while the test's clock is paused.
    let left = left.expect("the host told the window's end");
    assert!(
        left <= Duration::from_mins(1) && left > Duration::from_secs(50),
        "{left:?}"
    );
    assert_eq!(world.inbox.desk().window_left("other.jsonl", &call), None);
    world.page.answer(batch("SQLite")).await;
    finish(asked).await;
    assert_eq!(world.inbox.desk().window_left("log-1.jsonl", &call), None);
    // Untimed: the agent waits; no time left to tell.
    let seam = world.host.seam.clone();
    let agent = Arc::clone(&world.host.agent);
    let untimed = tokio::spawn(async move {
        seam.ask(
            user_questions::AskRequest::new([question()])
                .with_agent(agent)
                .with_wait(user_questions::WaitKey::Indefinite {
                    call_id: CallId::from("call_2"),
                }),
        )
        .await
    });
    world.page.reached().await;
    let call_2 = CallId::from("call_2");
    assert_eq!(world.inbox.desk().window_left("log-1.jsonl", &call_2), None);
    world.page.answer(batch("SQLite")).await;
    finish(untimed).await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn the_hosts_form_answering_first_closes_the_inbox_card() {
    let form = Hand::default();
    let (world, _form) = world(Some(&form));
    world.linked().await;
    let mut events = world.inbox.seam().subscribe();
    let asked = world.ask_timed(60_000);
    // The question is on the inbox's page too before the form answers.
    world.page.reached().await;
    form.answer(batch("PostgreSQL")).await;
    match finish(asked).await {
        TimedOutcome::Answered(answered) => assert_eq!(answered.answers, batch("PostgreSQL")),
        other @ TimedOutcome::Pending { .. } => panic!("expected the form's answer, got {other:?}"),
    }
    // The inbox's ask ends answered by the host: its page takes the card down.
    World::inbox_told(&mut events, "answered").await;
}

#[tokio::test(start_paused = true)]
async fn a_question_whose_window_closed_is_answered_late_through_its_host() {
    let (world, _form) = world(None);
    world.linked().await;
    let mut events = world.inbox.seam().subscribe();
    let asked = world.ask_timed(200);
    world.page.reached().await;
    assert!(matches!(finish(asked).await, TimedOutcome::Pending { .. }));
    World::inbox_told(&mut events, "pending").await;
    announce_continued(&world.host.seam);
    World::inbox_told(&mut events, "continued").await;
    // A late answer given in the inbox goes to the host that runs the session.
    let accepted = answer_late_in_the_inbox(&world.inbox).await;
    assert!(matches!(accepted, Accepted::Queued(q) if q.message_id == "reply-1"));
    let late = world.host.desk.late.lock().unwrap().clone();
    assert_eq!(
        late,
        vec![(
            "log-1.jsonl".to_owned(),
            CallId::from("call_1"),
            batch("SQLite")
        )]
    );
    assert!(world.fallback.answered.lock().unwrap().is_empty());
}

#[tokio::test(start_paused = true)]
async fn when_the_host_goes_its_question_is_continued_and_answered_through_the_logs() {
    let (mut world, _form) = world(None);
    world.linked().await;
    let mut events = world.inbox.seam().subscribe();
    let asked = world.ask_timed(60_000);
    world.page.reached().await;
    // The host process dies: its connection ends, and it never links again. The inbox tells its
    // surfaces the question is continued (answering it repairs its log first) and its ask ends
    // pending, in either order.
    world.link = None;
    world.kill.send(()).unwrap();
    World::inbox_told_all(&mut events, &["pending", "continued"]).await;
    asked.abort();
    let accepted = answer_late_in_the_inbox(&world.inbox).await;
    assert!(matches!(accepted, Accepted::Recorded { .. }));
    assert_eq!(
        world.fallback.answered.lock().unwrap().clone(),
        vec![("log-1.jsonl".to_owned(), CallId::from("call_1"))]
    );
    // Nothing of the session is left in the inbox: its continued question is the logs'.
    until(|| world.inbox.sessions().is_empty()).await;
}

#[tokio::test(start_paused = true)]
async fn a_blocking_question_of_a_client_without_forms_waits_for_the_inbox() {
    let (world, _form) = world(None);
    world.linked().await;
    let seam = world.host.seam.clone();
    let agent = Arc::clone(&world.host.agent);
    // Nobody else answers at the host: without the inbox this is NO_PROVIDER at once.
    let asked = tokio::spawn(async move {
        seam.ask(AskRequest::new([question()]).with_agent(agent))
            .await
    });
    world.page.answer(batch("PostgreSQL")).await;
    let answered = finish(asked).await.unwrap();
    assert_eq!(answered.answers, batch("PostgreSQL"));
}

#[tokio::test(start_paused = true)]
async fn the_inbox_going_and_coming_back_gets_what_is_still_open() {
    let (world, _form) = world(None);
    world.linked().await;
    let asked = world.ask_timed(60_000);
    world.page.reached().await;
    // The inbox dies and a new one starts: the link connects to it and hands the open
    // question over again, which its page answers.
    let restarted = served();
    *world.current.lock().unwrap() = restarted.inbox.clone();
    world.kill.send(()).unwrap();
    restarted.page.answer(batch("SQLite")).await;
    assert_eq!(restarted.inbox.links(), 1);
    match finish(asked).await {
        TimedOutcome::Answered(answered) => assert_eq!(answered.answers, batch("SQLite")),
        other @ TimedOutcome::Pending { .. } => panic!("expected the page's answer, got {other:?}"),
    }
}

#[tokio::test(start_paused = true)]
async fn a_late_answer_the_linked_host_no_longer_serves_goes_to_the_logs() {
    let (world, _form) = world(None);
    world.linked().await;
    world.continued_call().await;
    // The session ended at its host (still linked for others): the logs take the answer.
    world
        .host
        .desk
        .forgot
        .store(true, std::sync::atomic::Ordering::SeqCst);
    let accepted = answer_late_in_the_inbox(&world.inbox).await;
    assert!(matches!(accepted, Accepted::Recorded { .. }));
    assert_eq!(
        world.fallback.answered.lock().unwrap().clone(),
        vec![("log-1.jsonl".to_owned(), CallId::from("call_1"))]
    );
}

/// A host that closes its link right as its last call is cancelled tells the inbox first: the
/// card ends `cancelled`. Dropping the link instead cuts the connection before the cancel is
/// relayed, and the inbox keeps a timed question as continued.
#[tokio::test(start_paused = true)]
async fn a_link_closed_as_a_call_is_cancelled_leaves_the_card_cancelled_not_continued() {
    let (mut world, _form) = world(None);
    world.linked().await;
    let mut events = world.inbox.seam().subscribe();
    let asked = world.ask_timed(60_000);
    world.page.reached().await;
    asked.abort();
    let link = world.link.take().unwrap();
    tokio::time::timeout(Duration::from_secs(3), link.close(Duration::from_secs(2)))
        .await
        .expect("close waits at most its bound");
    World::inbox_told(&mut events, "cancelled").await;
}

/// A shell answers a question in its window through the inbox's socket, as the page would: the
/// host gets it with the shell's provenance; a wrong answer is refused and changes nothing; a
/// call that does not wait is said so.
#[tokio::test(start_paused = true)]
async fn a_shell_answers_in_the_window_through_the_inbox() {
    let (world, _form) = world(None);
    world.linked().await;
    let asked = world.ask_timed(60_000);
    world.page.reached().await;
    let shell = |answers: AnswerBatch, call: &'static str| {
        let inbox = world.inbox.clone();
        async move {
            let (ours, theirs) = tokio::io::duplex(64 * 1024);
            tokio::spawn(async move { inbox.serve_link(theirs).await });
            ask_user_inbox::answer_in_window(
                Box::new(ours),
                "log-1.jsonl",
                &CallId::from(call),
                answers,
                Provenance::human(user_questions::surface_names::SHELL),
            )
            .await
        }
    };
    let wrong = shell(batch("MySQL"), "call_1").await.unwrap_err();
    assert!(
        matches!(&wrong, ask_user_inbox::InWindowRefusal::BadAnswer { code, .. } if code == "BAD_ANSWER"),
        "{wrong:?}"
    );
    assert!(matches!(
        shell(batch("SQLite"), "call_9").await,
        Err(ask_user_inbox::InWindowRefusal::NotWaiting { .. })
    ));
    shell(batch("SQLite"), "call_1").await.unwrap();
    match finish(asked).await {
        TimedOutcome::Answered(answered) => {
            assert_eq!(answered.answers, batch("SQLite"));
            assert_eq!(
                answered.provenance,
                Provenance::human(user_questions::surface_names::SHELL)
            );
        }
        other @ TimedOutcome::Pending { .. } => {
            panic!("expected the shell's answer, got {other:?}")
        }
    }
}

/// An agent waiting at its own terminal (its hook tells the inbox): each follower of
/// `attention()` hears it, cut to its bound; with nobody following, the hook is told 0.
#[tokio::test]
async fn an_agents_attention_reaches_the_notifiers_cut_and_nobody_is_told_when_none_listen() {
    let served = served();
    let tell = |attention: ask_user_inbox::Attention| {
        let inbox = served.inbox.clone();
        async move {
            let (ours, theirs) = tokio::io::duplex(64 * 1024);
            tokio::spawn(async move { inbox.serve_link(theirs).await });
            ask_user_inbox::tell_attention(Box::new(ours), &attention).await
        }
    };
    let attention = |message: String| ask_user_inbox::Attention {
        agent: "Gemini CLI".into(),
        session: "g-1".into(),
        cwd: Some("/work/shop".into()),
        message,
    };
    assert_eq!(tell(attention("nobody hears".into())).await, Ok(0));
    let mut heard = served.inbox.attention();
    let long = "\u{1b}[31m".to_owned() + &"y".repeat(ask_user_inbox::MAX_ATTENTION + 10);
    assert_eq!(tell(attention(long)).await, Ok(1));
    let got = heard.recv().await.unwrap();
    assert_eq!(
        (got.agent.as_str(), got.cwd.as_deref()),
        ("Gemini CLI", Some("/work/shop"))
    );
    assert!(
        got.message.ends_with("… (15 more characters)"),
        "{}",
        got.message
    );
    assert!(
        got.message.starts_with("\u{1b}[31m"),
        "kept as said: escaped where shown"
    );
}

/// Waits until `done` (the inbox works in tasks of its own).
async fn until(done: impl Fn() -> bool) {
    tokio::time::timeout(NEVER, async {
        while !done() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("never came");
}

/// A connection of the test's own to the inbox, speaking raw protocol lines: a hostile or
/// broken peer.
struct RawLink {
    lines: tokio::io::Lines<tokio::io::BufReader<tokio::io::ReadHalf<tokio::io::DuplexStream>>>,
    write: tokio::io::WriteHalf<tokio::io::DuplexStream>,
}

impl RawLink {
    fn to(inbox: &Inbox) -> Self {
        use tokio::io::AsyncBufReadExt as _;
        let (ours, theirs) = tokio::io::duplex(64 * 1024);
        let inbox = inbox.clone();
        tokio::spawn(async move { inbox.serve_link(theirs).await });
        let (read, write) = tokio::io::split(ours);
        Self {
            lines: tokio::io::BufReader::new(read).lines(),
            write,
        }
    }

    async fn send_raw(&mut self, text: &str) {
        use tokio::io::AsyncWriteExt as _;
        self.write.write_all(text.as_bytes()).await.unwrap();
    }

    async fn send(&mut self, message: &serde_json::Value) {
        self.send_raw(&format!("{message}\n")).await;
    }

    /// The next line the inbox sends within `within`; `None` when nothing came or the inbox
    /// closed the connection.
    async fn next(&mut self, within: Duration) -> Option<serde_json::Value> {
        let line = tokio::time::timeout(within, self.lines.next_line())
            .await
            .ok()?
            .unwrap()?;
        Some(serde_json::from_str(&line).unwrap())
    }

    /// Whether the inbox closed the connection within `within`.
    async fn closed(&mut self, within: Duration) -> bool {
        matches!(
            tokio::time::timeout(within, self.lines.next_line()).await,
            Ok(Ok(None) | Err(_))
        )
    }
}

fn question_json() -> serde_json::Value {
    serde_json::to_value([question()]).unwrap()
}

/// A second link cannot act for the first link's session: its `session` does not relabel it,
/// its `open` does not take the question, its forged `over` does not end it. The page's answer
/// reaches the host that asked, and nothing reaches the other link.
#[tokio::test(start_paused = true)]
async fn a_link_cannot_take_or_end_another_links_question() {
    let (world, _form) = world(None);
    world.linked().await;
    let asked = world.ask_timed(60_000);
    world.page.reached().await;
    let mut hostile = RawLink::to(&world.inbox);
    hostile
        .send(&serde_json::json!({"t": "session", "session": "log-1.jsonl", "client": "attacker", "cwd": "/tmp"}))
        .await;
    hostile
        .send(
            &serde_json::json!({"t": "open", "session": "log-1.jsonl", "call": "call_1",
            "questions": question_json(), "timed": true, "askedAtMs": 0}),
        )
        .await;
    hostile
        .send(
            &serde_json::json!({"t": "over", "session": "log-1.jsonl", "call": "call_1",
            "how": {"how": "pending"}}),
        )
        .await;
    hostile
        .send(&serde_json::json!({"t": "continued", "session": "log-1.jsonl", "call": "call_1"}))
        .await;
    hostile
        .send(
            &serde_json::json!({"t": "settled", "session": "log-1.jsonl", "call": "call_1",
            "provenance": {"answerer": "attacker", "answeredBy": "human"}}),
        )
        .await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let sessions = world.inbox.sessions();
    assert_eq!(sessions.len(), 1);
    assert_eq!(sessions[0].client.as_deref(), Some("claude-code"));
    world.page.answer(batch("SQLite")).await;
    match finish(asked).await {
        TimedOutcome::Answered(answered) => assert_eq!(answered.answers, batch("SQLite")),
        other @ TimedOutcome::Pending { .. } => panic!("the forged end won: {other:?}"),
    }
    assert_eq!(hostile.next(Duration::from_secs(1)).await, None);
}

/// What became of a late answer is the word of the link it went to: another link's forged
/// `late-reply` is dropped, and the host's own reply is the one the page is told.
#[tokio::test(start_paused = true)]
async fn a_forged_late_reply_is_refused_and_the_hosts_word_counts() {
    let (world, _form) = world(None);
    world.linked().await;
    world.continued_call().await;
    let mut hostile = RawLink::to(&world.inbox);
    let held = world.host.desk.pause.write().await;
    let inbox = world.inbox.clone();
    let answering = tokio::spawn(async move { answer_late_in_the_inbox(&inbox).await });
    tokio::time::sleep(Duration::from_millis(200)).await;
    hostile
        .send(&serde_json::json!({"t": "late-reply", "id": 1,
            "result": {"outcome": "not-waiting", "why": "settled"}}))
        .await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!answering.is_finished(), "the forged word was taken");
    drop(held);
    let accepted = finish(answering).await;
    assert!(matches!(accepted, Accepted::Queued(q) if q.message_id == "reply-1"));
    assert_eq!(world.host.desk.late.lock().unwrap().len(), 1);
}

/// The inbox forgets a session once its link closed and nothing of it is in its seam: many
/// sessions over links that come and go leave nothing behind.
#[tokio::test(start_paused = true)]
async fn sessions_of_links_that_closed_are_forgotten() {
    let served = served();
    for i in 0..1000 {
        let mut link = RawLink::to(&served.inbox);
        link.send(
            &serde_json::json!({"t": "session", "session": format!("s{i}.jsonl"),
            "client": "c", "cwd": "/w"}),
        )
        .await;
        drop(link);
    }
    until(|| served.inbox.links() == 0).await;
    assert_eq!(served.inbox.sessions(), Vec::new());
}

/// One connection more than the inbox takes is told so and closed; the others stay.
#[tokio::test(start_paused = true)]
async fn a_link_beyond_the_cap_is_refused_with_a_reason() {
    let served = served();
    let mut links = Vec::new();
    for _ in 0..ask_user_inbox::MAX_LINKS {
        links.push(RawLink::to(&served.inbox));
    }
    until(|| served.inbox.links() == ask_user_inbox::MAX_LINKS).await;
    let mut one_more = RawLink::to(&served.inbox);
    let refused = one_more.next(NEVER).await.expect("a refusal");
    assert_eq!(refused["t"], "refused");
    assert_eq!(refused["code"], "TOO_MANY_LINKS");
    assert!(one_more.closed(NEVER).await);
    assert_eq!(served.inbox.links(), ask_user_inbox::MAX_LINKS);
    drop(links);
    until(|| served.inbox.links() == 0).await;
}

/// A peer that starts a line and stalls is disconnected after `LINE_WITHIN`; one that sends
/// whole lines slowly is not.
#[tokio::test(start_paused = true)]
async fn a_line_left_unfinished_ends_its_connection() {
    let served = served();
    let mut stalled = RawLink::to(&served.inbox);
    let mut slow = RawLink::to(&served.inbox);
    stalled.send_raw(r#"{"t":"hello","pid":"#).await;
    until(|| served.inbox.links() == 2).await;
    for _ in 0..3 {
        tokio::time::sleep(ask_user_inbox::LINE_WITHIN / 2).await;
        slow.send(&serde_json::json!({"t": "hello", "pid": 1}))
            .await;
    }
    assert!(stalled.closed(Duration::ZERO).await);
    until(|| served.inbox.links() == 1).await;
}

/// A long-lived link whose every call is a session of its own (a server in the stateless era)
/// keeps at most `MAX_IDLE_SESSIONS_PER_LINK` idle sessions: the least recently announced go.
#[tokio::test(start_paused = true)]
async fn a_link_keeps_a_bounded_number_of_idle_sessions() {
    let served = served();
    let mut link = RawLink::to(&served.inbox);
    let total = ask_user_inbox::MAX_IDLE_SESSIONS_PER_LINK + 200;
    for i in 0..total {
        link.send(&serde_json::json!({"t": "session", "session": format!("s{i}.jsonl")}))
            .await;
    }
    let last = format!("s{}.jsonl", total - 1);
    until(|| served.inbox.sessions().iter().any(|s| s.name == last)).await;
    let sessions = served.inbox.sessions();
    assert_eq!(sessions.len(), ask_user_inbox::MAX_IDLE_SESSIONS_PER_LINK);
    assert!(!sessions.iter().any(|s| s.name == "s0.jsonl"));
}
