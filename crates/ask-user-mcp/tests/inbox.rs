//! The server linked to the machine's inbox, in process: an rmcp client, the inbox with its page
//! (spoken to through its HTTP routes) and a notification receiver. A question shows on the page
//! and notifies; answered on the page while the client's form is open, the form is withdrawn and
//! the call returns the page's answer; answered on the page after its window, the companion
//! delivers it; a phone's answer button answers too.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;
use std::time::Duration;

use ask_user_inbox::{Connect, Inbox, InboxLink, Stream};
use ask_user_notify::{Backend, Notice, Notifier, NotifyConfig};
use ask_user_web::{TOKEN_HEADER, WebOptions, WebSurface};
use axum::body::Body;
use axum::http::{Request, StatusCode};
use common::{ClientSetup, Harness, Reply, texts};
use http_body_util::BodyExt as _;
use pending_answer::QuestionDesk;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tool_ask_user::AskUserConfig;
use user_questions::{AnswererGuard, CallId, Received};

const WAIT: Duration = Duration::from_secs(30);
const HOST: &str = "127.0.0.1:8766";

fn question() -> Value {
    json!({"questions":[{"id":"db","question":"Which database?","header":"Database",
        "options":[{"label":"PostgreSQL"},{"label":"SQLite"}]}]})
}

/// A notification receiver: every notice the inbox's notifier delivers.
struct Receiver(mpsc::UnboundedSender<Notice>);

#[user_questions::async_trait]
impl Backend for Receiver {
    fn takes_resolutions(&self) -> bool {
        true
    }

    fn wants_buttons(&self) -> bool {
        true
    }

    async fn deliver(&self, notice: &Notice) {
        let _ = self.0.send(notice.clone());
    }
}

/// The inbox with its page and notifier, over the server's state directory.
struct Machine {
    inbox: Inbox,
    page: WebSurface,
    router: axum::Router,
    notices: mpsc::UnboundedReceiver<Notice>,
    _notifier: Notifier,
    _page: AnswererGuard,
    _link: InboxLink,
}

/// The machine's inbox, its page and notifier, and the server linked to it (the link connected:
/// a question is handed to an inbox the link has reached).
async fn machine(harness: &Harness) -> Machine {
    let store = session_log::JsonlStore::new(harness.dir.path().to_path_buf());
    let fallback: Arc<dyn QuestionDesk> = Arc::new(ask_user_host::LogDesk::store(Arc::new(store)));
    let inbox = Inbox::new(fallback).unwrap();
    let options = WebOptions {
        countdowns: false,
        ..WebOptions::default()
    };
    let page = WebSurface::new(inbox.seam(), Some(inbox.desk()), options).unwrap();
    let page_guard = page.register(inbox.seam());
    let router = page.router();
    let (tx, notices) = mpsc::unbounded_channel();
    let config = NotifyConfig {
        notify_after: Duration::ZERO,
        ..NotifyConfig::default()
    };
    let links = Arc::new(Links(page.clone()));
    let notifier = Notifier::start(
        inbox.seam(),
        config,
        Some(links),
        vec![Arc::new(Receiver(tx)) as Arc<dyn Backend>],
    );
    let served = inbox.clone();
    let connect: Connect = Arc::new(move || {
        let inbox = served.clone();
        Box::pin(async move {
            let (host_end, inbox_end) = tokio::io::duplex(1 << 16);
            tokio::spawn(async move { inbox.serve_link(inbox_end).await });
            Ok(Box::new(host_end) as Stream)
        })
    });
    let link = harness.server.link_inbox(connect);
    tokio::time::timeout(WAIT, link.connected())
        .await
        .expect("the server never linked to the inbox");
    Machine {
        inbox,
        page,
        router,
        notices,
        _notifier: notifier,
        _page: page_guard,
        _link: link,
    }
}

/// The page's notification links as the binary makes them (`WebSurface::links` needs a served
/// page; here the routes answer in process under the page's base).
struct Links(WebSurface);

impl ask_user_notify::Links for Links {
    fn questions(&self, session: &str, call_id: &CallId) -> Option<Vec<user_questions::Question>> {
        self.0.questions(session, call_id)
    }

    fn card_url(&self) -> Option<String> {
        Some(format!("http://{HOST}/"))
    }

    fn answer_button(
        &self,
        session: &str,
        call_id: &CallId,
        question_id: &str,
        label: &str,
    ) -> Option<(String, String)> {
        let link = self.0.grant(session, call_id, question_id, label).ok()??;
        Some((format!("http://{HOST}{}", link.path), link.body))
    }
}

impl Machine {
    /// Waits for the inbox's seam to tell `name` of a call; its session and call id.
    async fn told(events: &mut user_questions::QuestionEvents, name: &str) -> (String, CallId) {
        tokio::time::timeout(WAIT, async {
            while let Some(received) = events.recv().await {
                if let Received::Event(event) = received
                    && event.kind.name() == name
                    && let (Some(call), Some(session)) = (event.call_id, event.session_id)
                {
                    return (session.as_str().to_owned(), call);
                }
            }
            panic!("the inbox's events ended");
        })
        .await
        .unwrap_or_else(|_| panic!("the inbox never told {name}"))
    }

    async fn post(&self, path: &str, body: &Value, token: Option<&str>) -> (StatusCode, Value) {
        let mut request = Request::builder()
            .method("POST")
            .uri(path)
            .header("host", HOST)
            .header("content-type", "application/json");
        if let Some(token) = token {
            request = request.header(TOKEN_HEADER, token);
        }
        let request = request.body(Body::from(body.to_string())).unwrap();
        let response = tower::ServiceExt::oneshot(self.router.clone(), request)
            .await
            .unwrap();
        let status = response.status();
        let bytes = response.into_body().collect().await.unwrap().to_bytes();
        (
            status,
            serde_json::from_slice(&bytes).unwrap_or(Value::Null),
        )
    }

    /// Answers `call` of `session` on the page, as a page does.
    async fn answer(&self, session: &str, call: &CallId, label: &str) -> (StatusCode, Value) {
        let body = json!({"session": session, "client": "test-page",
            "answers": [{"id": "db", "selected": [label]}]});
        self.post(
            &format!("/cards/{}/answer", call.as_str()),
            &body,
            Some(self.page.token()),
        )
        .await
    }

    /// [`answer`](Self::answer) once the card is on the page: the inbox tells `opened` when the
    /// question reaches it, and its page's card opens as the question's answerers are asked, a
    /// moment later on a loaded machine (a page answers only a card it shows).
    async fn answer_when_shown(
        &self,
        session: &str,
        call: &CallId,
        label: &str,
    ) -> (StatusCode, Value) {
        let deadline = std::time::Instant::now() + WAIT;
        loop {
            let (status, reply) = self.answer(session, call, label).await;
            if status != StatusCode::GONE || std::time::Instant::now() > deadline {
                return (status, reply);
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    async fn notice(&mut self, call: &CallId, with_buttons: bool) -> Notice {
        tokio::time::timeout(WAIT, async {
            loop {
                let notice = self.notices.recv().await.expect("the notifier stopped");
                if notice.call_id == call.as_str() && (!with_buttons || !notice.buttons.is_empty())
                {
                    return notice;
                }
            }
        })
        .await
        .expect("no notification")
    }
}

/// The label a call's result selected for `db`, once the call returns.
async fn answer_of(call: rmcp::service::RequestHandle<rmcp::RoleClient>) -> String {
    let result = tokio::time::timeout(WAIT, call.await_response())
        .await
        .unwrap()
        .unwrap();
    let rmcp::model::ServerResult::CallToolResult(result) = result else {
        panic!("not a tool result: {result:?}")
    };
    let value: Value = serde_json::from_str(&texts(&result)[0]).unwrap();
    assert_eq!(value["answers"][0]["id"], "db", "{value}");
    value["answers"][0]["selected"][0]
        .as_str()
        .unwrap()
        .to_owned()
}

const TIMED: Option<AskUserConfig> = Some(AskUserConfig::timed_secs(120));

#[tokio::test]
async fn the_page_answering_first_withdraws_the_open_form_and_the_call_gets_its_answer() {
    let mut harness = Harness::start(TIMED, true).await;
    let mut machine = machine(&harness).await;
    let mut events = machine.inbox.seam().subscribe();
    harness.reply(Reply::Hold);
    let mut arguments = question();
    arguments["timeout"] = json!(60);
    let call = harness.send_call("ask_user_question", arguments).await;
    // The client shows its form, and the same question is on the inbox's page and notified.
    let _form = tokio::time::timeout(WAIT, harness.held.recv())
        .await
        .unwrap()
        .unwrap();
    let (session, call_id) = Machine::told(&mut events, "opened").await;
    assert_eq!(
        session, harness.log,
        "the page names the session by its log"
    );
    let notice = machine.notice(&call_id, false).await;
    assert_eq!(notice.session, harness.log);
    let (status, reply) = machine.answer(&session, &call_id, "SQLite").await;
    assert_eq!(status, StatusCode::OK, "{reply}");
    assert_eq!(reply["path"], "foreground");
    assert_eq!(answer_of(call).await, "SQLite");
    // The form still open on the client is withdrawn.
    tokio::time::timeout(WAIT, async {
        while *harness.handler.withdrawn.lock().unwrap() == 0 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("the form was never withdrawn");
    let settled = harness
        .events()
        .into_iter()
        .filter(|e| e["type"] == "tool/result")
        .count();
    assert_eq!(settled, 1);
}

#[tokio::test]
async fn answered_on_the_page_after_its_window_the_companion_delivers_it() {
    let harness = Harness::start(TIMED, false).await;
    let machine = machine(&harness).await;
    let mut events = machine.inbox.seam().subscribe();
    let mut arguments = question();
    arguments["timeout"] = json!(1);
    let pending = harness.call("ask_user_question", arguments).await;
    let value: Value = serde_json::from_str(&texts(&pending)[0]).unwrap();
    assert_eq!(value["pending"], true);
    let (session, call_id) = Machine::told(&mut events, "continued").await;
    assert_eq!(call_id.as_str(), value["callId"]);
    let (status, reply) = machine.answer(&session, &call_id, "PostgreSQL").await;
    assert_eq!(status, StatusCode::OK, "{reply}");
    assert_eq!(reply["path"], "late");
    let delivered = harness
        .call(
            "ask_user_question_answer",
            json!({"callId": call_id.as_str()}),
        )
        .await;
    let text = &texts(&delivered)[0];
    assert!(
        text.contains(r#""answers":[{"id":"db","selected":["PostgreSQL"]}]"#),
        "{text}"
    );
    // The page takes the card down once the reply is admitted.
    Machine::told(&mut events, "answered").await;
}

#[tokio::test]
async fn a_phones_answer_button_answers_a_question_of_a_client_without_forms() {
    let harness = Harness::start_as(
        tempfile::tempdir().unwrap(),
        None,
        ClientSetup::new(false).with_roots(&["file:///work/app"]),
    )
    .await;
    let mut machine = machine(&harness).await;
    let mut events = machine.inbox.seam().subscribe();
    // A legacy call from a client without forms waits for the inbox instead of NO_PROVIDER.
    let call = harness.send_call("ask_user_question", question()).await;
    let (_, call_id) = Machine::told(&mut events, "opened").await;
    // While it waits, the inbox learns the session's client and folder (`roots/list`).
    tokio::time::timeout(WAIT, async {
        while machine
            .inbox
            .sessions()
            .first()
            .and_then(|s| s.cwd.clone())
            .is_none_or(|cwd| cwd != "/work/app")
        {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the session's folder never reached the inbox");
    let sessions = machine.inbox.sessions();
    assert_eq!(sessions.len(), 1);
    assert_eq!(sessions[0].client.as_deref(), Some("test-client 1.0"));
    assert_eq!(sessions[0].cwd.as_deref(), Some("/work/app"));
    assert_eq!(
        sessions[0].label().as_deref(),
        Some("test-client 1.0 · /work/app")
    );
    let notice = machine.notice(&call_id, true).await;
    let button = notice
        .buttons
        .iter()
        .find(|b| b.label == "PostgreSQL")
        .expect("a PostgreSQL button");
    let path = button.url.strip_prefix(&format!("http://{HOST}")).unwrap();
    let body: Value = serde_json::from_str(&button.body).unwrap();
    // The button's request carries no page token: its grant is its capability.
    let (status, reply) = machine.post(path, &body, None).await;
    assert_eq!(status, StatusCode::OK, "{reply}");
    assert_eq!(answer_of(call).await, "PostgreSQL");
    let (again, _) = machine.post(path, &body, None).await;
    assert_ne!(again, StatusCode::OK, "a grant answers once");
}

/// A timed call of the stateless revision runs as a task while its client polls; the page of the
/// machine's inbox answers it in its window (first answer wins), the task completes with that
/// answer, and its form is taken off the task.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_is_answered_on_the_page_while_the_client_polls() {
    let harness = Harness::start(TIMED, true).await;
    let machine = machine(&harness).await;
    let mut events = machine.inbox.seam().subscribe();
    let stateless = common::connect_stateless_as(&harness.server, true, true).await;
    let mut arguments = question();
    arguments["timeout"] = json!(60);
    let params = rmcp::model::CallToolRequestParams::new("ask_user_question")
        .with_arguments(arguments.as_object().cloned().unwrap());
    let rmcp::model::CallToolResponse::Task(created) = stateless
        .client
        .peer()
        .call_tool_once(params)
        .await
        .unwrap()
    else {
        panic!("a task");
    };
    let id = created.task.task_id;
    let (session, call_id) = Machine::told(&mut events, "opened").await;
    assert_eq!(call_id.as_str(), id, "the task is the call");
    let poll = || async {
        stateless
            .client
            .peer()
            .get_task(rmcp::model::GetTaskParams::new(&id))
            .await
            .unwrap()
            .task
    };
    let deadline = std::time::Instant::now() + WAIT;
    while poll().await.status() != rmcp::model::TaskStatus::InputRequired {
        assert!(
            std::time::Instant::now() < deadline,
            "the form never went on the task"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let (status, reply) = machine
        .answer_when_shown(&session, &call_id, "SQLite")
        .await;
    assert_eq!(status, StatusCode::OK, "{reply}");
    let done = loop {
        let task = poll().await;
        if task.status().is_terminal() {
            break task;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "never completed: {task:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let rmcp::model::TaskPayload::Completed { result } = &done.payload else {
        panic!("{done:?}")
    };
    assert_eq!(
        result["content"][0]["text"],
        r#"{"answers":[{"id":"db","selected":["SQLite"]}]}"#
    );
    // The form is off the task: an update finds none waiting.
    let mut responses = rmcp::model::InputResponses::new();
    responses.insert(
        "ask_user_question".to_owned(),
        json!({"action": "accept", "content": {"q01": "PostgreSQL"}}),
    );
    assert!(
        stateless
            .client
            .peer()
            .update_task(rmcp::model::UpdateTaskParams::new(&id, responses))
            .await
            .is_err()
    );
}
