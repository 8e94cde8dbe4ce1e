//! The terminal answerer end to end on a virtual terminal, under tokio's paused clock.
// Test code stops at its first broken expectation: unwrap and expect are assertions here.
#![allow(clippy::unwrap_used, clippy::expect_used)]
// Windows and deadlines are written in the SPEC's unit, milliseconds, so they read like the SPEC.
#![allow(clippy::duration_suboptimal_units)]

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ask_user_terminal::{Display, Key, TerminalAnswerer, TerminalOptions, VirtualTerminal};
use pending_answer::{
    Accepted, DeskError, DeskSession, LateRefusal, NotWaiting, QuestionDesk, Queued, SessionView,
    Submission, when_continued,
};
use tokio::task::JoinHandle;
use tokio::time::{Instant, advance};
use user_questions::{
    AgentHandle, AnswerBatch, AnswerItem, AnsweredBy, AnswererGuard, AskError, AskRequest, CallId,
    CancellationToken, HostBindings, InMemoryAgent, InMemoryAgentRegistry, InMemorySession,
    Provenance, Question, QuestionEvent, QuestionEventKind, QuestionOption, SessionId,
    TimedAskRequest, TimedOutcome, UserQuestions, UserQuestionsConfig, WaitKey,
};

fn scope() -> Question {
    Question::new("scope", "Which scope?")
        .with_header("Scope")
        .with_options([
            QuestionOption::new("Tool only"),
            QuestionOption::new("Everything"),
        ])
}

fn confirm() -> Question {
    Question::new("confirm", "Proceed?")
        .with_options([QuestionOption::new("yes"), QuestionOption::new("no")])
}

type LateReplies = Arc<Mutex<VecDeque<Result<(), LateRefusal>>>>;

/// A late answer the desk took: the session, the call, the answers and who gave them.
#[derive(Clone, Debug)]
struct Taken {
    session: String,
    call_id: CallId,
    answers: AnswerBatch,
    provenance: Provenance,
}

/// The host's desk: it takes a late answer once its call is continued (the host announced it,
/// through the one rule, `when_continued`), answering as `replies` says next (`Ok` when empty).
struct TestDesk {
    seam: UserQuestions,
    continued: std::sync::atomic::AtomicBool,
    taken: Mutex<Vec<Taken>>,
    replies: LateReplies,
}

impl TestDesk {
    /// What a host does once a call's pending result is in its log: the call takes late answers,
    /// and `LateAnswers` publishes `continued`.
    fn announce(&self, call_id: &CallId) {
        self.continued
            .store(true, std::sync::atomic::Ordering::SeqCst);
        announce_continued(&self.seam, call_id);
    }
}

#[user_questions::async_trait]
impl QuestionDesk for TestDesk {
    async fn sessions(&self) -> Result<Vec<DeskSession>, DeskError> {
        Ok(Vec::new())
    }

    async fn views(&self, _session: Option<&str>) -> Result<Vec<SessionView>, DeskError> {
        Ok(Vec::new())
    }

    async fn submit(&self, submission: Submission) -> Result<Accepted, LateRefusal> {
        let Submission {
            session,
            call_id,
            answers,
            provenance,
        } = submission;
        let answers = answers.into_batch(None);
        let attempt = || {
            let outcome = if self.continued.load(std::sync::atomic::Ordering::SeqCst) {
                let reply = self.replies.lock().unwrap().pop_front().unwrap_or(Ok(()));
                reply.map(|()| {
                    self.taken.lock().unwrap().push(Taken {
                        session: session.clone(),
                        call_id: call_id.clone(),
                        answers: answers.clone(),
                        provenance: provenance.clone(),
                    });
                    Accepted::Queued(Queued {
                        call_id: call_id.clone(),
                        message_id: "reply-1".to_owned(),
                    })
                })
            } else {
                Err(LateRefusal::NotWaiting(NotWaiting::Closing))
            };
            std::future::ready(outcome)
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

struct Host {
    seam: UserQuestions,
    agent: AgentHandle,
    vt: VirtualTerminal,
    terminal: Arc<TerminalAnswerer>,
    desk: Arc<TestDesk>,
    _guard: AnswererGuard,
}

fn host() -> Host {
    host_with(true)
}

fn host_with(late_handler: bool) -> Host {
    let registry = InMemoryAgentRegistry::new();
    let agent: AgentHandle = InMemoryAgent::new("root", InMemorySession::new("s1"), []);
    registry.enter_root(Arc::clone(&agent));
    let seam = UserQuestions::new(
        UserQuestionsConfig::default(),
        HostBindings::with_registry(registry),
    )
    .unwrap();
    let vt = VirtualTerminal::new(72, 24);
    let desk = Arc::new(TestDesk {
        seam: seam.clone(),
        continued: std::sync::atomic::AtomicBool::new(false),
        taken: Mutex::new(Vec::new()),
        replies: Arc::default(),
    });
    let mut options = TerminalOptions::new().with_display(Display::virtual_terminal(vt.clone()));
    if late_handler {
        options = options.with_desk(Arc::clone(&desk) as Arc<dyn QuestionDesk>);
    }
    let terminal = TerminalAnswerer::new(&seam, options);
    let guard = terminal.register(&seam);
    Host {
        seam,
        agent,
        vt,
        terminal,
        desk,
        _guard: guard,
    }
}

impl Host {
    fn ask(&self, request: AskRequest) -> JoinHandle<Result<TimedOutcome, AskError>> {
        let seam = self.seam.clone();
        tokio::spawn(async move { seam.ask(request).await.map(TimedOutcome::Answered) })
    }

    fn ask_timed(
        &self,
        questions: Vec<Question>,
        timeout_ms: i64,
    ) -> JoinHandle<Result<TimedOutcome, AskError>> {
        self.ask_timed_with(questions, timeout_ms, None)
    }

    fn ask_timed_with(
        &self,
        questions: Vec<Question>,
        timeout_ms: i64,
        cancel: Option<CancellationToken>,
    ) -> JoinHandle<Result<TimedOutcome, AskError>> {
        self.ask_timed_announced(questions, timeout_ms, cancel, true)
    }

    /// A timed ask; with `announce`, a pending outcome is announced continued at once, as a host
    /// does once it has logged the pending result (without, the test announces it itself).
    fn ask_timed_announced(
        &self,
        questions: Vec<Question>,
        timeout_ms: i64,
        cancel: Option<CancellationToken>,
        announce: bool,
    ) -> JoinHandle<Result<TimedOutcome, AskError>> {
        let (seam, desk) = (self.seam.clone(), Arc::clone(&self.desk));
        let mut request = TimedAskRequest::new(questions, Arc::clone(&self.agent));
        request.cancel = cancel;
        tokio::spawn(async move {
            let outcome = seam
                .ask_timed(request, CallId::from("ask-timed"), timeout_ms)
                .await;
            if announce && let Ok(TimedOutcome::Pending { call_id }) = &outcome {
                desk.announce(call_id);
            }
            outcome
        })
    }

    fn press(&self, keys: &[Key]) {
        for key in keys {
            self.vt.press(key.clone());
        }
    }
}

/// What a host publishes once a call's pending result is in its log (`LateAnswers` does it).
fn announce_continued(seam: &UserQuestions, call_id: &CallId) {
    seam.publish(QuestionEvent {
        ask_id: None,
        call_id: Some(call_id.clone()),
        agent_id: None,
        session_id: Some(SessionId::from("s1")),
        at_ms: 0,
        kind: QuestionEventKind::Continued,
    });
}

/// Far longer than any window in these tests: under the paused clock a wait that can never end
/// runs into this bound at once (the clock jumps to it), so a broken test fails instead of hanging.
const NEVER: Duration = Duration::from_secs(24 * 3600);

async fn see(vt: &VirtualTerminal, needle: &str) -> String {
    tokio::time::timeout(NEVER, vt.wait_for(needle))
        .await
        .unwrap_or_else(|_elapsed| {
            panic!(
                "the screen never showed {needle:?}; it shows:\n{}",
                vt.screen()
            )
        })
}

async fn cleared(vt: &VirtualTerminal) {
    if tokio::time::timeout(NEVER, vt.wait_until(str::is_empty))
        .await
        .is_err()
    {
        panic!(
            "the card never went away; the screen shows:\n{}",
            vt.screen()
        );
    }
}

async fn finish(ask: JoinHandle<Result<TimedOutcome, AskError>>) -> Result<TimedOutcome, AskError> {
    tokio::time::timeout(NEVER, ask)
        .await
        .expect("the ask never ended")
        .expect("the ask task panicked")
}

/// Lets every task run until it waits on something, without moving the paused clock.
async fn settle() {
    for _ in 0..100 {
        tokio::task::yield_now().await;
    }
}

#[track_caller]
fn answered(outcome: Result<TimedOutcome, AskError>) -> (AnswerBatch, Provenance) {
    match outcome {
        Ok(TimedOutcome::Answered(answered)) => (answered.answers, answered.provenance),
        other => panic!("expected an answer, got {other:?}"),
    }
}

#[track_caller]
fn error_code(outcome: Result<TimedOutcome, AskError>) -> String {
    match outcome {
        Err(error) => error.code().unwrap_or("<foreign>").to_owned(),
        other => panic!("expected an error, got {other:?}"),
    }
}

#[track_caller]
fn pending(outcome: Result<TimedOutcome, AskError>) -> CallId {
    match outcome {
        Ok(TimedOutcome::Pending { call_id }) => call_id,
        other => panic!("expected pending, got {other:?}"),
    }
}

fn terminal_human() -> Provenance {
    Provenance::human("terminal")
}

#[tokio::test(start_paused = true)]
async fn x11_headless_blocking_fails_closed_at_once() {
    let host = host();
    host.vt.set_interactive(false);
    let start = Instant::now();
    let outcome = finish(host.ask(AskRequest::new([confirm()]))).await;
    assert_eq!(error_code(outcome), "NO_PROVIDER");
    assert_eq!(start.elapsed(), Duration::ZERO);
    assert!(host.vt.printed().is_empty());
    assert!(!host.vt.is_open());
}

#[tokio::test(start_paused = true)]
async fn x11_headless_timed_is_pending_at_the_deadline() {
    let host = host();
    host.vt.set_interactive(false);
    let start = Instant::now();
    let outcome = finish(host.ask_timed(vec![scope()], 120_000)).await;
    assert_eq!(pending(outcome), CallId::from("ask-timed"));
    assert_eq!(start.elapsed(), Duration::from_millis(120_000));
    assert!(!host.vt.is_open());
    assert!(host.terminal.late_calls().is_empty());
}

#[tokio::test(start_paused = true)]
async fn headless_check_of_the_real_terminal_is_injectable() {
    let seam = UserQuestions::new(UserQuestionsConfig::default(), HostBindings::default()).unwrap();
    let checked = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = Arc::clone(&checked);
    let terminal = TerminalAnswerer::new(
        &seam,
        TerminalOptions::new().with_display(Display::terminal_with_check(move || {
            counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            false
        })),
    );
    let _guard = terminal.register(&seam);
    let error = seam.ask(AskRequest::new([confirm()])).await.unwrap_err();
    assert_eq!(error.code(), Some("NO_PROVIDER"));
    assert_eq!(checked.load(std::sync::atomic::Ordering::SeqCst), 1);
    assert!(!Display::headless().is_interactive());
}

#[tokio::test(start_paused = true)]
async fn blocking_card_answers_as_a_human_at_the_terminal() {
    let host = host();
    let ask = host.ask(AskRequest::new([scope()]).with_agent(Arc::clone(&host.agent)));
    let screen = see(&host.vt, "Which scope?").await;
    assert!(screen.contains("Esc cancel"), "{screen}");
    assert!(!screen.contains("closes in"), "{screen}");
    host.press(&[Key::Down, Key::Enter]);
    let (batch, provenance) = answered(finish(ask).await);
    assert_eq!(
        batch,
        AnswerBatch::new([AnswerItem::selected("scope", ["Everything"])])
    );
    assert_eq!(provenance, terminal_human());
    assert_eq!(provenance.answered_by, AnsweredBy::Human);
    settle().await;
    assert!(
        !host.vt.is_open(),
        "the screen is given back once no card is left"
    );
}

#[tokio::test(start_paused = true)]
async fn the_status_line_stays_under_the_card_and_follows_set_status() {
    let host = host();
    host.terminal.set_status(Some(
        "also on the page: http://127.0.0.1:8080/#t=abc".to_owned(),
    ));
    let ask = host.ask(AskRequest::new([scope()]));
    let screen = see(&host.vt, "Which scope?").await;
    assert!(
        screen.contains("also on the page: http://127.0.0.1:8080/#t=abc"),
        "{screen}"
    );
    // A status with control bytes is shown escaped, and replacing it redraws the open card.
    host.terminal
        .set_status(Some("moved to \u{1b}[31mhttp://127.0.0.1:9090/".to_owned()));
    let screen = see(&host.vt, "moved to").await;
    assert!(!screen.contains("8080"), "{screen}");
    assert!(
        screen.contains("moved to \\u{1b}[31mhttp://127.0.0.1:9090/"),
        "{screen}"
    );
    host.terminal.set_status(None);
    settle().await;
    let screen = host.vt.screen();
    assert!(!screen.contains("moved to"), "{screen}");
    assert!(screen.contains("Which scope?"), "{screen}");
    host.press(&[Key::Enter]);
    answered(finish(ask).await);
}

#[tokio::test(start_paused = true)]
async fn closing_an_unkeyed_card_cancels_the_request() {
    let host = host();
    let ask = host.ask(AskRequest::new([scope()]));
    see(&host.vt, "Which scope?").await;
    host.press(&[Key::Esc]);
    assert_eq!(error_code(finish(ask).await), "ASK_CANCELLED");
    settle().await;
    assert!(!host.vt.is_open());
}

#[tokio::test(start_paused = true)]
async fn closing_a_keyed_card_only_hides_it() {
    let host = host();
    let wait = WaitKey::Indefinite {
        call_id: "call-1".into(),
    };
    let ask = host.ask(
        AskRequest::new([scope()])
            .with_agent(Arc::clone(&host.agent))
            .with_wait(wait),
    );
    let screen = see(&host.vt, "Which scope?").await;
    assert!(screen.contains("Esc hide"), "{screen}");
    host.press(&[Key::Esc]);
    let screen = see(&host.vt, "1 question waiting").await;
    assert!(!screen.contains("closes in"), "{screen}");
    advance(Duration::from_secs(3600)).await;
    settle().await;
    assert!(!ask.is_finished(), "closing records nothing");
    host.press(&[Key::Char('x'), Key::Enter]);
    see(&host.vt, "Which scope?").await;
    host.press(&[Key::Char('2'), Key::Enter]);
    let (batch, _) = answered(finish(ask).await);
    assert_eq!(
        batch,
        AnswerBatch::new([AnswerItem::selected("scope", ["Everything"])])
    );
}

#[tokio::test(start_paused = true)]
async fn timed_card_claims_the_wait_before_showing_the_countdown() {
    let host = host();
    let mut events = host.seam.subscribe();
    let ask = host.ask_timed(vec![scope()], 5000);
    let screen = see(&host.vt, "closes in").await;
    assert!(screen.contains("closes in 0:05"), "{screen}");
    assert!(screen.contains("t take time"), "{screen}");
    let kinds: Vec<_> = events.drain().into_iter().map(|e| e.kind).collect();
    assert!(
        matches!(
            kinds.as_slice(),
            [
                QuestionEventKind::Opened { .. },
                QuestionEventKind::Claimed { claims: 1 }
            ]
        ),
        "{kinds:?}"
    );
    // The card's claim (the `Claimed` event above) stops the host's timer while the card shows;
    // `take_time_holds_the_wait_past_the_window` shows it by behaviour.
    assert_eq!(host.seam.live_waits(), 1);
    host.press(&[Key::Enter]);
    let (batch, provenance) = answered(finish(ask).await);
    assert_eq!(
        batch,
        AnswerBatch::new([AnswerItem::selected("scope", ["Tool only"])])
    );
    assert_eq!(provenance, terminal_human());
    // Nothing is left behind.
    assert_eq!(host.seam.live_waits(), 0);
}

#[tokio::test(start_paused = true)]
async fn the_countdown_ticks_and_times_out_at_the_window() {
    let host = host();
    let start = Instant::now();
    let ask = host.ask_timed(vec![scope()], 5000);
    see(&host.vt, "closes in 0:05").await;
    advance(Duration::from_millis(1500)).await;
    see(&host.vt, "closes in 0:04").await;
    advance(Duration::from_millis(3499)).await;
    let screen = see(&host.vt, "closes in 0:01").await;
    assert!(screen.contains("closes in 0:01"), "{screen}");
    settle().await;
    assert!(!ask.is_finished(), "not at 4999 ms");
    advance(Duration::from_millis(1)).await;
    assert_eq!(pending(finish(ask).await), CallId::from("ask-timed"));
    assert_eq!(start.elapsed(), Duration::from_millis(5000));
    // The card stays, now a pending question that can still be answered.
    let screen = see(&host.vt, "pending: answer any time").await;
    assert!(screen.contains("Which scope?"), "{screen}");
    assert_eq!(host.terminal.late_calls(), vec![CallId::from("ask-timed")]);
}

#[tokio::test(start_paused = true)]
async fn a_late_submission_goes_to_the_late_answer_handler() {
    let host = host();
    let ask = host.ask_timed(vec![scope(), confirm()], 1000);
    see(&host.vt, "closes in").await;
    // Half an answer before the window closes; it is kept on the pending card.
    host.press(&[Key::Char('2'), Key::Enter]);
    see(&host.vt, "Proceed?").await;
    assert_eq!(pending(finish(ask).await), CallId::from("ask-timed"));
    see(&host.vt, "pending: answer any time").await;
    host.desk
        .replies
        .lock()
        .unwrap()
        .push_back(Err(LateRefusal::ReplyQueued {
            call_id: CallId::from("ask-timed"),
            message_id: None,
            settled_by: None,
        }));
    host.press(&[Key::Char('1'), Key::Enter]);
    // The host refused it: the card stays and says why.
    let screen = see(&host.vt, "already waiting to be admitted").await;
    assert!(screen.contains("Proceed?"), "{screen}");
    assert!(host.desk.taken.lock().unwrap().is_empty());
    host.press(&[Key::Enter]);
    cleared(&host.vt).await;
    let late = host.desk.taken.lock().unwrap().clone();
    assert_eq!(late.len(), 1);
    assert_eq!(late[0].call_id, CallId::from("ask-timed"));
    assert_eq!(late[0].session, "s1");
    assert_eq!(
        late[0].answers,
        AnswerBatch::new([
            AnswerItem::selected("scope", ["Everything"]),
            AnswerItem::selected("confirm", ["yes"]),
        ])
    );
    assert_eq!(late[0].provenance, terminal_human());
    assert!(host.terminal.late_calls().is_empty());
    assert!(!host.vt.is_open());
}

/// A timed question whose window closed with no announcement yet that it is continued (the host
/// logs the pending result a while later), answered on its card in between: the answer is with
/// the desk, which waits for the continuation.
async fn answered_before_it_is_continued() -> Host {
    let host = host();
    let ask = host.ask_timed_announced(vec![confirm()], 1000, None, false);
    see(&host.vt, "closes in").await;
    assert_eq!(pending(finish(ask).await), CallId::from("ask-timed"));
    see(&host.vt, "pending: answer any time").await;
    host.press(&[Key::Char('1'), Key::Enter]);
    see(&host.vt, "Sending your answer").await;
    host
}

#[tokio::test(start_paused = true)]
async fn an_answer_as_the_window_closes_waits_for_the_continuation() {
    // The person answers before the call is continued: nothing is refused, the answer waits
    // with the desk.
    let host = answered_before_it_is_continued().await;
    settle().await;
    assert!(host.desk.taken.lock().unwrap().is_empty());
    assert_eq!(host.terminal.late_calls(), vec![CallId::from("ask-timed")]);
    // Announced: the waiting answer is taken, once, and the card closes.
    host.desk.announce(&CallId::from("ask-timed"));
    cleared(&host.vt).await;
    let late = host.desk.taken.lock().unwrap().clone();
    assert_eq!(late.len(), 1);
    assert_eq!(
        late[0].answers,
        AnswerBatch::new([AnswerItem::selected("confirm", ["yes"])])
    );
    assert!(host.terminal.late_calls().is_empty());
}

#[tokio::test(start_paused = true)]
async fn an_answer_whose_continuation_never_comes_is_refused_on_its_card() {
    // A host that never says the call is continued (its log failed, say).
    let host = answered_before_it_is_continued().await;
    advance(Duration::from_millis(9_999)).await;
    settle().await;
    assert!(host.desk.taken.lock().unwrap().is_empty(), "still waiting");
    // Ten seconds on, the desk gives up waiting and its own check refuses: the card stays and
    // says so.
    advance(Duration::from_millis(1)).await;
    let screen = see(&host.vt, "no longer waiting for an answer").await;
    assert!(screen.contains("Proceed?"), "{screen}");
    assert!(host.desk.taken.lock().unwrap().is_empty());
    assert_eq!(host.terminal.late_calls(), vec![CallId::from("ask-timed")]);
}

#[tokio::test(start_paused = true)]
async fn a_pending_card_goes_when_its_call_is_answered_elsewhere() {
    let host = host();
    let ask = host.ask_timed(vec![confirm()], 1000);
    see(&host.vt, "closes in").await;
    assert_eq!(pending(finish(ask).await), CallId::from("ask-timed"));
    see(&host.vt, "pending: answer any time").await;
    host.seam.publish(QuestionEvent {
        ask_id: None,
        call_id: Some(CallId::from("ask-timed")),
        agent_id: None,
        session_id: Some(SessionId::from("s1")),
        at_ms: 0,
        kind: QuestionEventKind::Answered {
            path: user_questions::AnswerPath::Late,
            provenance: user_questions::Provenance::human("web"),
        },
    });
    cleared(&host.vt).await;
    assert!(host.terminal.late_calls().is_empty());
    assert!(host.desk.taken.lock().unwrap().is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_refused_late_answer_shows_the_refusal_as_it_is() {
    let host = host();
    let ask = host.ask_timed(vec![confirm()], 1000);
    see(&host.vt, "closes in").await;
    assert_eq!(pending(finish(ask).await), CallId::from("ask-timed"));
    see(&host.vt, "pending: answer any time").await;
    for (refusal, message) in [
        (
            LateRefusal::NotWaiting(NotWaiting::Settled),
            "This question is no longer waiting for an answer.",
        ),
        (LateRefusal::NoAgent, "this question has no agent to answer"),
    ] {
        host.desk.replies.lock().unwrap().push_back(Err(refusal));
        host.press(&[Key::Char('1'), Key::Enter]);
        let screen = see(&host.vt, message).await;
        assert!(screen.contains("Proceed?"), "{screen}");
    }
    assert!(host.desk.taken.lock().unwrap().is_empty());
    assert_eq!(host.terminal.late_calls(), vec![CallId::from("ask-timed")]);
}

#[tokio::test(start_paused = true)]
async fn take_time_holds_the_wait_past_the_window() {
    let host = host();
    let ask = host.ask_timed(vec![scope()], 5000);
    see(&host.vt, "closes in").await;
    host.press(&[Key::Char('t')]);
    let screen = see(&host.vt, "holding: take your time").await;
    assert!(!screen.contains("t take time"), "{screen}");
    advance(Duration::from_secs(600)).await;
    settle().await;
    assert!(
        !ask.is_finished(),
        "neither the card nor the host times out while held"
    );
    host.press(&[Key::Down, Key::Enter]);
    let (batch, _) = answered(finish(ask).await);
    assert_eq!(
        batch,
        AnswerBatch::new([AnswerItem::selected("scope", ["Everything"])])
    );
}

#[tokio::test(start_paused = true)]
async fn hiding_a_held_card_lets_the_original_deadline_apply() {
    let host = host();
    let ask = host.ask_timed(vec![scope()], 5000);
    see(&host.vt, "closes in").await;
    host.press(&[Key::Char('t')]);
    see(&host.vt, "holding").await;
    advance(Duration::from_secs(2)).await;
    host.press(&[Key::Esc]);
    // Still within the window: the countdown runs on from where the deadline puts it.
    let screen = see(&host.vt, "1 question waiting").await;
    assert!(screen.contains("closes in 0:03"), "{screen}");
    host.press(&[Key::Enter]);
    see(&host.vt, "closes in 0:03").await;
    host.press(&[Key::Char('t')]);
    see(&host.vt, "holding").await;
    advance(Duration::from_secs(10)).await;
    settle().await;
    assert!(!ask.is_finished());
    // Past the deadline, hiding ends the foreground wait at once; the question stays answerable.
    let start = Instant::now();
    host.press(&[Key::Esc]);
    assert_eq!(pending(finish(ask).await), CallId::from("ask-timed"));
    assert_eq!(start.elapsed(), Duration::ZERO);
    see(&host.vt, "1 question waiting").await;
    assert_eq!(host.terminal.late_calls(), vec![CallId::from("ask-timed")]);
}

#[tokio::test(start_paused = true)]
async fn cancelling_the_turn_takes_the_card_down() {
    let host = host();
    let turn = CancellationToken::new();
    let ask = host.ask_timed_with(vec![scope()], 5000, Some(turn.clone()));
    see(&host.vt, "closes in").await;
    host.press(&[Key::Char('t')]);
    see(&host.vt, "holding").await;
    turn.cancel();
    assert_eq!(error_code(finish(ask).await), "ASK_ABORTED");
    cleared(&host.vt).await;
    settle().await;
    assert!(!host.vt.is_open());
    assert!(host.terminal.late_calls().is_empty());
    assert_eq!(host.seam.live_waits(), 0);
}

#[tokio::test(start_paused = true)]
async fn dropping_the_ask_takes_the_card_down() {
    let host = host();
    let ask = host.ask(AskRequest::new([scope()]));
    see(&host.vt, "Which scope?").await;
    ask.abort();
    cleared(&host.vt).await;
    settle().await;
    assert!(!host.vt.is_open());
}

#[tokio::test(start_paused = true)]
async fn an_unusable_terminal_passes_the_question_on() {
    let host = host();
    host.vt.set_unavailable(true);
    let outcome = finish(host.ask(AskRequest::new([confirm()]))).await;
    assert_eq!(error_code(outcome), "NO_PROVIDER");
    // A timed question: the claim is released before passing on, so the host's deadline applies
    // (nobody else answers: the seam holds until the window closes, then reports pending).
    let start = Instant::now();
    let outcome = finish(host.ask_timed(vec![scope()], 5000)).await;
    assert_eq!(pending(outcome), CallId::from("ask-timed"));
    assert_eq!(start.elapsed(), Duration::from_millis(5000));
    assert!(host.terminal.late_calls().is_empty());
}

#[tokio::test(start_paused = true)]
async fn ctrl_c_cancels_an_unkeyed_card_and_interrupts() {
    let host = host();
    let ask = host.ask(AskRequest::new([scope()]));
    see(&host.vt, "Which scope?").await;
    host.press(&[Key::Ctrl('c')]);
    assert_eq!(error_code(finish(ask).await), "ASK_CANCELLED");
    settle().await;
    assert!(!host.vt.is_open());
    assert_eq!(host.vt.interrupts(), 1);
}

#[tokio::test(start_paused = true)]
async fn ctrl_c_hides_a_timed_card_and_its_deadline_applies() {
    let host = host();
    let start = Instant::now();
    let ask = host.ask_timed(vec![scope()], 5000);
    see(&host.vt, "closes in").await;
    host.press(&[Key::Char('t'), Key::Ctrl('c')]);
    see(&host.vt, "1 question waiting").await;
    assert_eq!(host.vt.interrupts(), 1);
    assert_eq!(pending(finish(ask).await), CallId::from("ask-timed"));
    assert_eq!(start.elapsed(), Duration::from_millis(5000));
}

#[tokio::test(start_paused = true)]
async fn without_a_late_handler_the_card_goes_at_the_window() {
    let host = host_with(false);
    let ask = host.ask_timed(vec![scope()], 1000);
    see(&host.vt, "closes in").await;
    assert_eq!(pending(finish(ask).await), CallId::from("ask-timed"));
    cleared(&host.vt).await;
    settle().await;
    assert!(!host.vt.is_open());
    assert!(host.terminal.late_calls().is_empty());
    let printed = host.vt.printed();
    assert!(
        printed.iter().any(|line| line.contains("pending")),
        "{printed:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn withdrawing_a_pending_card() {
    let host = host();
    let ask = host.ask_timed(vec![scope()], 1000);
    see(&host.vt, "closes in").await;
    assert_eq!(pending(finish(ask).await), CallId::from("ask-timed"));
    see(&host.vt, "pending").await;
    host.terminal.withdraw(&"other-call".into());
    settle().await;
    assert!(host.vt.is_open());
    host.terminal.withdraw(&"ask-timed".into());
    cleared(&host.vt).await;
    assert!(host.terminal.late_calls().is_empty());
}

#[tokio::test(start_paused = true)]
async fn notes_show_above_the_card_and_then_on_the_normal_screen() {
    let host = host();
    host.terminal.note("before any card");
    settle().await;
    assert_eq!(host.vt.printed(), vec!["before any card".to_owned()]);
    let ask = host.ask(AskRequest::new([scope()]));
    see(&host.vt, "Which scope?").await;
    host.terminal.note("working on something else");
    let screen = see(&host.vt, "working on something else").await;
    assert!(screen.contains("Which scope?"), "{screen}");
    assert_eq!(
        host.vt.printed().len(),
        1,
        "not printed while the card shows"
    );
    host.press(&[Key::Enter]);
    answered(finish(ask).await);
    cleared(&host.vt).await;
    settle().await;
    assert_eq!(
        host.vt.printed(),
        vec![
            "before any card".to_owned(),
            "working on something else".to_owned()
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn notes_show_a_models_escape_sequences_instead_of_running_them() {
    let host = host();
    host.terminal
        .note("model › Deploy?\u{1b}]0;PWNED\u{7}\u{1b}[2J\u{9b}31m");
    settle().await;
    assert_eq!(
        host.vt.printed(),
        vec!["model › Deploy?\\u{1b}]0;PWNED\\u{7}\\u{1b}[2J\\u{9b}31m".to_owned()]
    );
}

#[tokio::test(start_paused = true)]
async fn a_second_request_waits_behind_the_first() {
    let host = host();
    let first = host.ask(AskRequest::new([scope()]));
    see(&host.vt, "Which scope?").await;
    let second = host.ask(AskRequest::new([confirm()]));
    let screen = see(&host.vt, "1 more question card is waiting").await;
    assert!(screen.contains("Which scope?"), "{screen}");
    host.press(&[Key::Enter]);
    let (batch, _) = answered(finish(first).await);
    assert_eq!(batch.answers[0].id, "scope");
    see(&host.vt, "Proceed?").await;
    host.press(&[Key::Down, Key::Enter]);
    let (batch, _) = answered(finish(second).await);
    assert_eq!(
        batch,
        AnswerBatch::new([AnswerItem::selected("confirm", ["no"])])
    );
}

#[tokio::test(start_paused = true)]
async fn a_foreground_card_goes_before_a_pending_one() {
    let host = host();
    let timed = host.ask_timed(vec![scope()], 1000);
    see(&host.vt, "closes in").await;
    assert_eq!(pending(finish(timed).await), CallId::from("ask-timed"));
    see(&host.vt, "pending").await;
    let blocking = host.ask(AskRequest::new([confirm()]));
    let screen = see(&host.vt, "Proceed?").await;
    assert!(
        screen.contains("1 more question card is waiting"),
        "{screen}"
    );
    host.press(&[Key::Enter]);
    answered(finish(blocking).await);
    // The pending card comes back, still answerable.
    see(&host.vt, "Which scope?").await;
    host.press(&[Key::Enter]);
    cleared(&host.vt).await;
    assert_eq!(host.desk.taken.lock().unwrap().len(), 1);
}

#[tokio::test(start_paused = true)]
async fn dropping_the_seam_gives_the_screen_back() {
    let host = host();
    let ask = host.ask_timed(vec![scope()], 1000);
    see(&host.vt, "closes in").await;
    assert_eq!(pending(finish(ask).await), CallId::from("ask-timed"));
    see(&host.vt, "pending").await;
    let Host {
        seam,
        terminal,
        _guard: guard,
        vt,
        ..
    } = host;
    drop(guard);
    drop(terminal);
    drop(seam);
    cleared(&vt).await;
    settle().await;
    assert!(!vt.is_open());
}

/// Another surface ahead of the terminal in the waterfall (a page, a phone's button): it races the
/// card and answers when told to, under its registration name.
struct Racing {
    answer: tokio::sync::Mutex<Option<tokio::sync::oneshot::Receiver<AnswerBatch>>>,
}

#[user_questions::async_trait]
impl user_questions::Answerer for Racing {
    async fn answer(
        &self,
        _request: &user_questions::AnswerRequest,
        next: user_questions::Next<'_>,
    ) -> Result<user_questions::Answered, user_questions::AnswererError> {
        let Some(answer) = self.answer.lock().await.take() else {
            return next.run().await;
        };
        tokio::select! {
            rest = next.run() => rest,
            Ok(batch) = answer => Ok(user_questions::Answered::human(batch)),
        }
    }
}

/// A racing surface named `name`, registered ahead of the terminal; send the batch it answers.
fn racing(host: &Host, name: &str) -> (tokio::sync::oneshot::Sender<AnswerBatch>, AnswererGuard) {
    let (send, answer) = tokio::sync::oneshot::channel();
    let guard = host.seam.register(
        Arc::new(Racing {
            answer: tokio::sync::Mutex::new(Some(answer)),
        }),
        user_questions::RegisterOptions::global(name).prepended(),
    );
    (send, guard)
}

/// When another surface answers first, the card says which one ("on the page", "with a
/// notification's answer button"), not only that it was answered elsewhere or withdrawn.
#[tokio::test(start_paused = true)]
async fn a_card_says_which_surface_answered_first() {
    for (name, says) in [
        (
            "web",
            "The question was answered on the page, and closed here.",
        ),
        (
            "web-button",
            "The question was answered with a notification's answer button, and closed here.",
        ),
        ("mcp-elicitation:codex", "answered in the codex form"),
        ("ask-user-cli", "answered from the shell"),
    ] {
        let host = host();
        let (answer, _racing) = racing(&host, name);
        let ask = host.ask_timed(vec![scope()], 5000);
        see(&host.vt, "closes in").await;
        answer
            .send(AnswerBatch::new([AnswerItem::selected(
                "scope",
                ["Everything"],
            )]))
            .unwrap();
        let (_, provenance) = answered(finish(ask).await);
        assert_eq!(provenance.answerer, name);
        cleared(&host.vt).await;
        settle().await;
        let printed = host.vt.printed().join("\n");
        assert!(printed.contains(says), "{name}: {printed}");
        assert!(!printed.contains("or withdrawn"), "{printed}");
    }
}

/// An unkeyed card's request cancelled by its caller: the card says the question was withdrawn.
#[tokio::test(start_paused = true)]
async fn a_card_whose_request_was_withdrawn_says_so() {
    let host = host();
    let cancel = CancellationToken::new();
    let mut request = AskRequest::new([scope()]);
    request.agent = Some(Arc::clone(&host.agent));
    request.cancel = Some(cancel.clone());
    let ask = host.ask(request);
    see(&host.vt, "Which scope?").await;
    cancel.cancel();
    assert_eq!(error_code(finish(ask).await), "ASK_ABORTED");
    cleared(&host.vt).await;
    settle().await;
    let printed = host.vt.printed().join("\n");
    assert!(
        printed.contains("The question was withdrawn, and closed here."),
        "{printed}"
    );
}

/// A pending card answered late on another surface says so as it goes.
#[tokio::test(start_paused = true)]
async fn a_pending_card_answered_on_the_page_says_so() {
    let host = host();
    let ask = host.ask_timed(vec![confirm()], 1000);
    see(&host.vt, "closes in").await;
    assert_eq!(pending(finish(ask).await), CallId::from("ask-timed"));
    see(&host.vt, "pending: answer any time").await;
    host.seam.publish(QuestionEvent {
        ask_id: None,
        call_id: Some(CallId::from("ask-timed")),
        agent_id: None,
        session_id: Some(SessionId::from("s1")),
        at_ms: 0,
        kind: QuestionEventKind::Answered {
            path: user_questions::AnswerPath::Late,
            provenance: Provenance::human("web"),
        },
    });
    cleared(&host.vt).await;
    settle().await;
    let printed = host.vt.printed().join("\n");
    assert!(
        printed.contains("The question was answered on the page."),
        "{printed}"
    );
}
