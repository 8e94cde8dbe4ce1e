//! A bridged ask against a real inbox, linked over in-memory streams, with a "page" registered
//! in the inbox's seam that the test answers by hand (SPEC §9.7, N1, N2, N4, N5).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use ask_user_bridge::{BridgeOptions, Ended, ask, withdraw};
use ask_user_host::LogDesk;
use ask_user_inbox::{Connect, Inbox};
use futures::FutureExt as _;
use native_asks::{APPROVAL_ID, Agent, Decision, HookEvent, NativeAsk};
use pending_answer::{DeskState, QuestionDesk};
use serde_json::json;
use session_log::JsonlStore;
use tokio::sync::{Notify, oneshot};
use tokio_util::sync::CancellationToken;
use user_questions::{
    AnswerBatch, AnswerItem, AnswerRequest, Answered, Answerer, AnswererError, AnswererGuard, Next,
    RegisterOptions, async_trait,
};

/// The "page": it waits for the test to answer, or for the inbox to withdraw the question.
#[derive(Clone, Default)]
struct Page {
    waiting: Arc<Mutex<Vec<oneshot::Sender<AnswerBatch>>>>,
    seen: Arc<Notify>,
    withdrawn: Arc<Notify>,
}

impl Page {
    async fn answer(&self, batch: AnswerBatch) {
        let sender = loop {
            let notified = self.seen.notified();
            if let Some(sender) = self.waiting.lock().unwrap().pop() {
                break sender;
            }
            notified.await;
        };
        sender.send(batch).unwrap();
    }
}

/// Like the real page, it races the rest of the inbox's waterfall (the host's own outcome).
#[async_trait]
impl Answerer for Page {
    async fn answer(
        &self,
        request: &AnswerRequest,
        next: Next<'_>,
    ) -> Result<Answered, AnswererError> {
        let (tx, rx) = oneshot::channel();
        self.waiting.lock().unwrap().push(tx);
        self.seen.notify_waiters();
        let rest = next.run();
        tokio::pin!(rest);
        let ended = tokio::select! {
            Ok(answers) = rx => return Ok(Answered::human(answers)),
            result = &mut rest => result,
            () = request.cancel.cancelled() => Err(user_questions::UserQuestionError::ask_aborted().into()),
        };
        self.withdrawn.notify_waiters();
        ended
    }
}

struct World {
    dir: tempfile::TempDir,
    inbox: Inbox,
    page: Page,
    _page: AnswererGuard,
}

fn world() -> World {
    let dir = tempfile::tempdir().unwrap();
    let fallback = Arc::new(LogDesk::store(Arc::new(JsonlStore::new(dir.path()))));
    let inbox = Inbox::new(fallback as Arc<dyn QuestionDesk>).unwrap();
    let page = Page::default();
    let guard = inbox.seam().register(
        Arc::new(page.clone()),
        RegisterOptions::global("web").prepended(),
    );
    World {
        dir,
        inbox,
        page,
        _page: guard,
    }
}

impl World {
    /// The bridge's options: each connection is an in-memory stream the inbox serves.
    fn options(&self) -> BridgeOptions {
        let inbox = self.inbox.clone();
        let connect: Connect = Arc::new(move || {
            let inbox = inbox.clone();
            async move {
                let (ours, theirs) = tokio::io::duplex(1 << 16);
                tokio::spawn(async move { inbox.serve_link(theirs).await });
                Ok(Box::new(ours) as ask_user_inbox::Stream)
            }
            .boxed()
        });
        BridgeOptions {
            state_dir: self.dir.path().to_path_buf(),
            connect,
            reach_within: Duration::from_secs(5),
            window: None,
        }
    }
}

impl World {
    /// Bridges `ask` in a task of its own, stopped by `stop`.
    fn bridge(
        &self,
        ask: &NativeAsk,
        stop: &CancellationToken,
    ) -> tokio::task::JoinHandle<Result<Ended, ask_user_bridge::BridgeError>> {
        let (ask, options, stop) = (ask.clone(), self.options(), stop.clone());
        tokio::spawn(async move { ask_user_bridge::ask(&ask, &options, &stop).await })
    }
}

fn bash_ask() -> NativeAsk {
    let input = json!({
        "session_id": "2f0c", "cwd": "/work/shop", "hook_event_name": "PermissionRequest",
        "tool_name": "Bash", "tool_input": {"command": "npm test"},
        "permission_suggestions": [{"type": "addRules", "rules": [{"toolName": "Bash", "ruleContent": "npm test:*"}], "behavior": "allow", "destination": "localSettings"}]
    });
    match HookEvent::read(Agent::ClaudeCode, &input.to_string()).unwrap() {
        HookEvent::PermissionRequest(ask) => ask,
        other => panic!("{other:?}"),
    }
}

fn pick(labels: &[&str], custom: Option<&str>) -> AnswerBatch {
    let mut item = AnswerItem::selected(APPROVAL_ID, labels.iter().copied());
    item.custom = custom.map(str::to_owned);
    AnswerBatch::new([item])
}

#[tokio::test]
async fn n1_an_approval_answered_on_the_page_is_the_agents_allow_and_is_recorded() {
    let world = world();
    let ask = bash_ask();
    let bridged = world.bridge(&ask, &CancellationToken::new());
    // The card shows what the agent offers; the session is labelled with the agent and folder.
    world.page.seen.notified().await;
    let sessions = world.inbox.sessions();
    assert_eq!(
        sessions[0].label().as_deref(),
        Some("Claude Code · /work/shop")
    );
    world
        .page
        .answer(pick(&["Allow always: Bash(npm test:*)"], None))
        .await;
    let ended = bridged.await.unwrap().unwrap();
    let Ended::Decided { decision, surface } = ended else {
        panic!("{ended:?}")
    };
    assert_eq!(surface, "inbox page");
    assert!(matches!(
        decision,
        Decision::Allow {
            always: Some(_),
            ..
        }
    ));
    // The ask is a session log of the state directory, settled with that answer.
    let desk = LogDesk::store(Arc::new(JsonlStore::new(world.dir.path())));
    let views = desk.views(None).await.unwrap();
    assert_eq!(views.len(), 1);
    assert!(views[0].session.starts_with("claude-code-2f0c-"));
    assert_eq!(views[0].view.settled.len(), 1);
    assert!(views[0].view.active.is_empty());
}

#[tokio::test]
async fn n2_a_denial_with_text_reaches_the_agent_as_its_message() {
    let world = world();
    let bridged = world.bridge(&bash_ask(), &CancellationToken::new());
    world
        .page
        .answer(pick(&["Deny"], Some("run pnpm test instead")))
        .await;
    assert_eq!(
        bridged.await.unwrap().unwrap(),
        Ended::Decided {
            decision: Decision::Deny {
                message: "run pnpm test instead (denied from the inbox page)".into()
            },
            surface: "inbox page".into()
        }
    );
}

#[tokio::test]
async fn n4_settled_at_the_agent_the_card_is_withdrawn_and_nothing_is_decided() {
    let world = world();
    let ask = bash_ask();
    let bridged = world.bridge(&ask, &CancellationToken::new());
    world.page.seen.notified().await;
    let withdrawn = world.page.withdrawn.notified();
    // The agent's tool ran (its PostToolUse names the same tool and input).
    assert_eq!(withdraw(world.dir.path(), &ask.fingerprint()).await, 1);
    assert_eq!(bridged.await.unwrap().unwrap(), Ended::Withdrawn);
    tokio::time::timeout(Duration::from_secs(2), withdrawn)
        .await
        .expect("the page's card is withdrawn within 2 s");
    // The call ended cancelled: nothing waits in the log.
    let desk = LogDesk::store(Arc::new(JsonlStore::new(world.dir.path())));
    let sessions = desk.sessions().await.unwrap();
    assert!(
        sessions.iter().all(|s| s
            .questions
            .iter()
            .all(|q| q.state != DeskState::Open && q.state != DeskState::Continued)),
        "{sessions:?}"
    );
    // Nobody waits any more: a second withdraw reaches none.
    assert_eq!(withdraw(world.dir.path(), &ask.fingerprint()).await, 0);
}

#[tokio::test(start_paused = true)]
async fn n5_no_inbox_means_no_question_and_no_decision() {
    let dir = tempfile::tempdir().unwrap();
    let connect: Connect =
        Arc::new(|| async { Err(std::io::Error::from(std::io::ErrorKind::NotFound)) }.boxed());
    let options = BridgeOptions {
        state_dir: dir.path().to_path_buf(),
        connect,
        reach_within: Duration::from_secs(5),
        window: None,
    };
    let ended = ask(&bash_ask(), &options, &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(ended, Ended::Unreachable);
    assert!(
        std::fs::read_dir(dir.path()).unwrap().next().is_none(),
        "nothing recorded"
    );
}

#[tokio::test]
async fn the_agent_going_away_withdraws_the_ask() {
    let world = world();
    let stop = CancellationToken::new();
    let bridged = world.bridge(&bash_ask(), &stop);
    world.page.seen.notified().await;
    stop.cancel();
    assert_eq!(bridged.await.unwrap().unwrap(), Ended::Withdrawn);
}

/// Codex's prompt waits for its hook: once the window passes unanswered, the card is withdrawn
/// and no decision is given, so the person at the terminal decides.
#[tokio::test]
async fn a_window_that_passes_unanswered_gives_no_decision() {
    let world = world();
    let options = BridgeOptions {
        window: Some(Duration::from_millis(300)),
        ..world.options()
    };
    let withdrawn = world.page.withdrawn.notified();
    let ended = ask(&bash_ask(), &options, &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(ended, Ended::WindowPassed);
    tokio::time::timeout(Duration::from_secs(2), withdrawn)
        .await
        .expect("the page's card is withdrawn");
}
