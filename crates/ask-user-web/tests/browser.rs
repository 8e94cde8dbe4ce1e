//! The page in a real browser: Debian's Chromium, headless, driven through chromedriver by a
//! `WebDriver` client (fantoccini), against a real loopback server and the real host runtime.
//!
//! Without chromedriver the tests say so and pass, except under `CI=true`, where they fail: CI
//! installs `chromium` and `chromium-driver` and must run them. Windows are real time here (a
//! browser cannot run on tokio's paused clock), so they are short; the timings printed are the
//! figures the closing notes quote (`cargo test -p ask-user-web --test browser -- --nocapture`).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use ask_user_terminal::{Display, Key, TerminalAnswerer, TerminalOptions, VirtualTerminal};
use ask_user_web::WebServer;
use common::{DB_QUESTION, Fixture, answers_of, is_pending};
use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{Value, json};
use tokio::process::{Child, Command};
use tool_ask_user::ToolOutcome;

/// One browser at a time: the machine has two cores.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn chromedriver() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("ASK_USER_CHROMEDRIVER") {
        return Some(PathBuf::from(path));
    }
    ["/usr/bin/chromedriver", "/usr/lib/chromium/chromedriver"]
        .into_iter()
        .map(PathBuf::from)
        .find(|p| p.exists())
}

fn chromium() -> PathBuf {
    std::env::var_os("ASK_USER_CHROMIUM")
        .map_or_else(|| PathBuf::from("/usr/bin/chromium"), PathBuf::from)
}

struct Browser {
    client: Client,
    _driver: Child,
    _profile: tempfile::TempDir,
}

impl Browser {
    /// A headless Chromium, or `None` (with the reason printed) when there is no chromedriver
    /// outside CI.
    async fn start() -> Option<Self> {
        let Some(driver_path) = chromedriver() else {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "CI=true but chromedriver is missing: install chromium and chromium-driver"
            );
            eprintln!("SKIPPED: no chromedriver (apt-get install chromium chromium-driver)");
            return None;
        };
        let port = {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            listener.local_addr().unwrap().port()
        };
        let driver = Command::new(&driver_path)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", driver_path.display()));
        let profile = tempfile::tempdir().unwrap();
        let caps = json!({
            "goog:chromeOptions": {
                "binary": chromium(),
                "args": [
                    "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic",
                    "--no-first-run", "--disable-background-networking",
                    "--disable-component-update", "--disable-sync",
                    "--disable-dev-shm-usage", "--window-size=420,860",
                    format!("--user-data-dir={}", profile.path().display()),
                ]
            }
        });
        let Value::Object(caps) = caps else {
            unreachable!()
        };
        let url = format!("http://127.0.0.1:{port}");
        let started = Instant::now();
        let client = loop {
            let connector = hyper_util::client::legacy::connect::HttpConnector::new();
            match ClientBuilder::new(connector)
                .capabilities(caps.clone())
                .connect(&url)
                .await
            {
                Ok(client) => break client,
                Err(error) if started.elapsed() < Duration::from_secs(20) => {
                    let _ = error;
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                Err(error) => panic!("chromedriver did not start a browser: {error}"),
            }
        };
        Some(Self {
            client,
            _driver: driver,
            _profile: profile,
        })
    }

    async fn card(&self, call_id: &str, state: &str) -> fantoccini::elements::Element {
        self.client
            .wait()
            .at_most(Duration::from_secs(10))
            .for_element(Locator::Css(&format!(
                r#"article[data-call-id="{call_id}"][data-state="{state}"]"#
            )))
            .await
            .unwrap_or_else(|e| panic!("no {state} card for {call_id}: {e}"))
    }

    async fn click(&self, css: &str) {
        self.client
            .wait()
            .at_most(Duration::from_secs(5))
            .for_element(Locator::Css(css))
            .await
            .unwrap_or_else(|e| panic!("nothing matches {css}: {e}"))
            .click()
            .await
            .unwrap();
    }

    async fn text(&self, css: &str) -> String {
        self.client
            .find(Locator::Css(css))
            .await
            .unwrap_or_else(|e| panic!("nothing matches {css}: {e}"))
            .text()
            .await
            .unwrap()
    }

    async fn wait_text(&self, css: &str, needle: &str) -> String {
        let started = Instant::now();
        loop {
            if let Ok(element) = self.client.find(Locator::Css(css)).await
                && let Ok(text) = element.text().await
                && text.contains(needle)
            {
                return text;
            }
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "{css} never showed {needle:?}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    async fn quit(self) {
        let _ = self.client.close().await;
    }
}

/// Polls `condition` until it holds (at most 15 s); returns how long that took.
async fn until(what: &str, mut condition: impl FnMut() -> bool) -> Duration {
    let started = Instant::now();
    while !condition() {
        assert!(started.elapsed() < Duration::from_secs(15), "never: {what}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    started.elapsed()
}

/// One browser scenario: the browser (alone on the machine), a host with `window` seconds
/// of window, and its page served on loopback. `None` when there is no browser (outside CI).
struct Scene {
    browser: Browser,
    fx: Fixture,
    server: WebServer,
    _one: tokio::sync::MutexGuard<'static, ()>,
}

async fn scene(window: i64) -> Option<Scene> {
    let one = lock().await;
    let browser = Browser::start().await?;
    let fx = Fixture::new(window);
    let server = fx.web.bind("127.0.0.1:0".parse().unwrap()).await.unwrap();
    Some(Scene {
        browser,
        fx,
        server,
        _one: one,
    })
}

async fn finished(call: tokio::task::JoinHandle<ToolOutcome>) -> ToolOutcome {
    tokio::time::timeout(Duration::from_secs(15), call)
        .await
        .expect("the call never ended")
        .unwrap()
}

async fn lock() -> tokio::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_card_renders_and_a_click_answers_as_web() {
    let Some(Scene {
        browser,
        mut fx,
        server,
        _one,
    }) = scene(120).await
    else {
        return;
    };
    let call = fx.ask("call-1", common::DEMO_QUESTIONS);
    let started = Instant::now();
    browser.client.goto(&server.url()).await.unwrap();
    browser.card("call-1", "open").await;
    let shown = started.elapsed();
    let legend = browser
        .text(r#"article[data-call-id="call-1"] fieldset legend"#)
        .await;
    assert!(
        legend.contains("Which database should the new orders service use?"),
        "{legend}"
    );
    assert!(browser.text(".clock").await.contains("s left"));
    // The screenshot in the README.
    let png = browser.client.screenshot().await.unwrap();
    let target = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("web-card.png");
    std::fs::write(&target, &png).unwrap();
    if std::env::var_os("ASK_USER_UPDATE_SCREENSHOT").is_some() {
        let docs = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/web-card.png");
        std::fs::write(docs, &png).unwrap();
    }

    browser.click(r#"input[name="q0"][value="SQLite"]"#).await;
    browser
        .click(r#"input[name="q1"][value="Unit tests"]"#)
        .await;
    browser.click(r#"input[name="q1"][value="Lint"]"#).await;
    let clicked = Instant::now();
    browser.click("button.submit").await;
    let outcome = finished(call).await;
    let answered = clicked.elapsed();
    assert_eq!(
        answers_of(&outcome).unwrap(),
        json!([{"id": "db", "selected": ["SQLite"]}, {"id": "checks", "selected": ["Unit tests", "Lint"]}])
    );
    assert!(fx.seam_events().iter().any(|e| matches!(
        &e.kind,
        user_questions::QuestionEventKind::Answered { provenance, .. } if provenance.answerer == "web"
    )));
    browser
        .wait_text("article[data-call-id=\"call-1\"]", "Answered.")
        .await;
    println!(
        "scenario card-renders-click-answers: card shown {} ms after load, answered {} ms after the click",
        shown.as_millis(),
        answered.as_millis()
    );
    browser.quit().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_open_past_the_window_keeps_the_wait_open() {
    let Some(Scene {
        browser,
        fx,
        server,
        _one,
    }) = scene(1).await
    else {
        return;
    };
    browser.client.goto(&server.url()).await.unwrap();
    let call = fx.ask("call-1", DB_QUESTION);
    browser.card("call-1", "open").await;
    // Three windows later the person is still looking: the call still waits.
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(!call.is_finished(), "the window closed under an open page");
    assert_eq!(fx.web.claims_held(), 1);
    browser
        .wait_text(".clock", "pending: answer any time")
        .await;
    browser.click(r#"input[value="PostgreSQL"]"#).await;
    browser.click("button.submit").await;
    let outcome = finished(call).await;
    assert_eq!(
        answers_of(&outcome).unwrap()[0]["selected"][0],
        "PostgreSQL"
    );
    println!(
        "scenario open-past-window: the wait stayed open 3 s past a 1 s window and was answered in the foreground"
    );
    browser.quit().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closing_the_tab_releases_the_claim_and_the_call_goes_pending() {
    let Some(Scene {
        browser,
        fx,
        server,
        _one,
    }) = scene(1).await
    else {
        return;
    };
    let first = browser.client.window().await.unwrap();
    let tab = browser.client.new_window(true).await.unwrap();
    browser.client.switch_to_window(tab.handle).await.unwrap();
    browser.client.goto(&server.url()).await.unwrap();
    let call = fx.ask("call-1", DB_QUESTION);
    browser.card("call-1", "open").await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(!call.is_finished());
    let closed = Instant::now();
    browser.client.close_window().await.unwrap();
    until("the claim is released", || fx.web.claims_held() == 0).await;
    let released = closed.elapsed();
    let outcome = finished(call).await;
    let pending_after = closed.elapsed();
    assert!(is_pending(&outcome), "{}", outcome.text);
    // The goodbye beacon, not the reconnect grace (4 s), released it.
    assert!(
        released < Duration::from_secs(3),
        "released after {released:?}"
    );
    println!(
        "scenario close-tab: claim released {} ms after the close command, call pending after {} ms",
        released.as_millis(),
        pending_after.as_millis()
    );
    browser.client.switch_to_window(first).await.unwrap();
    browser.quit().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn navigating_away_releases_the_claim_and_coming_back_answers_late() {
    let Some(Scene {
        browser,
        fx,
        server,
        _one,
    }) = scene(1).await
    else {
        return;
    };
    browser.client.goto(&server.url()).await.unwrap();
    let call = fx.ask("call-1", DB_QUESTION);
    browser.card("call-1", "open").await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(!call.is_finished());
    let left = Instant::now();
    // Another page of the same server: the first one is hidden (and may stay in the
    // back/forward cache), which must not keep its claim.
    browser
        .client
        .goto(&format!(
            "http://{}/pending?token={}",
            server.local_addr(),
            fx.web.token()
        ))
        .await
        .unwrap();
    until("the claim is released", || fx.web.claims_held() == 0).await;
    let released = left.elapsed();
    let outcome = finished(call).await;
    assert!(is_pending(&outcome));
    fx.host.end_turn("completed").unwrap();

    // Back: the page connects again and shows the question as continued.
    browser.client.back().await.unwrap();
    let restored: bool = browser
        .client
        .execute(
            "return performance.getEntriesByType('navigation')[0].type === 'back_forward'",
            vec![],
        )
        .await
        .unwrap()
        .as_bool()
        .unwrap_or(false);
    browser.card("call-1", "continued").await;
    browser
        .wait_text(".clock", "pending: answer any time")
        .await;
    browser.click(r#"input[value="SQLite"]"#).await;
    browser.click("button.submit").await;
    let text = browser
        .wait_text("article[data-call-id=\"call-1\"]", "next turn")
        .await;
    // The late reply is shown as the questions paired with their answers.
    assert!(
        text.contains("Which database?") && text.contains("SQLite"),
        "{text}"
    );

    let reply = fx.host.begin_turn().unwrap();
    assert_eq!(reply.len(), 1);
    // The turn's first step admits it.
    fx.host.begin_step().unwrap();
    let state = fx.host.projection();
    let settled = &state.view().settled;
    assert_eq!(settled[0].call_id.as_str(), "call-1");
    assert_eq!(settled[0].provenance.as_ref().unwrap().answerer, "web");
    println!(
        "scenario navigate-away: claim released {} ms after the navigation command; back ({}) showed the continued question and a late answer settled it",
        released.as_millis(),
        if restored {
            "restored from the back/forward cache"
        } else {
            "reloaded"
        }
    );
    browser.quit().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_tabs_are_two_claims() {
    let Some(Scene {
        browser,
        fx,
        server,
        _one,
    }) = scene(1).await
    else {
        return;
    };
    browser.client.goto(&server.url()).await.unwrap();
    let first = browser.client.window().await.unwrap();
    let call = fx.ask("call-1", DB_QUESTION);
    browser.card("call-1", "open").await;
    let tab = browser.client.new_window(true).await.unwrap();
    browser.client.switch_to_window(tab.handle).await.unwrap();
    browser.client.goto(&server.url()).await.unwrap();
    browser.card("call-1", "open").await;
    until("two claims", || fx.web.claims_held() == 2).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let closed = Instant::now();
    browser.client.close_window().await.unwrap();
    until("one claim left", || fx.web.claims_held() == 1).await;
    let one_left = closed.elapsed();
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!call.is_finished(), "the first tab still holds the wait");
    browser.client.switch_to_window(first).await.unwrap();
    browser.client.goto("about:blank").await.unwrap();
    until("no claim left", || fx.web.claims_held() == 0).await;
    assert!(is_pending(&finished(call).await));
    println!(
        "scenario two-tabs: two claims; closing one left one ({} ms), leaving the other released the wait",
        one_left.as_millis()
    );
    browser.quit().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn terminal_and_browser_race_and_exactly_one_answer_wins() {
    let Some(Scene {
        browser,
        fx,
        server,
        _one,
    }) = scene(120).await
    else {
        return;
    };
    let vt = VirtualTerminal::new(80, 30);
    let terminal = TerminalAnswerer::new(
        fx.runtime.seam(),
        TerminalOptions::new().with_display(Display::virtual_terminal(vt.clone())),
    );
    let _terminal = terminal.register(fx.runtime.seam());
    browser.client.goto(&server.url()).await.unwrap();

    // The browser first: the terminal's card closes.
    let call = fx.ask("call-1", DB_QUESTION);
    browser.card("call-1", "open").await;
    tokio::time::timeout(Duration::from_secs(10), vt.wait_for("Which database?"))
        .await
        .expect("the terminal shows the card too");
    browser.click(r#"input[value="SQLite"]"#).await;
    browser.click("button.submit").await;
    let outcome = finished(call).await;
    assert_eq!(answers_of(&outcome).unwrap()[0]["selected"][0], "SQLite");
    tokio::time::timeout(
        Duration::from_secs(10),
        vt.wait_until(|s| !s.contains("Which database?")),
    )
    .await
    .expect("the terminal card closed");
    fx.host.end_turn("completed").unwrap();

    // The terminal first: the page's card says so, and the page cannot answer too.
    let call = fx.ask("call-2", DB_QUESTION);
    browser.card("call-2", "open").await;
    tokio::time::timeout(Duration::from_secs(10), vt.wait_for("Which database?"))
        .await
        .unwrap();
    vt.press(Key::Enter);
    let started = Instant::now();
    let outcome = loop {
        if call.is_finished() {
            break finished(call).await;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "the terminal never answered:\n{}",
            vt.screen()
        );
        // A card of one question submits on Enter; press again if it asks to confirm.
        tokio::time::sleep(Duration::from_millis(300)).await;
        if !call.is_finished() {
            vt.press(Key::Enter);
        }
    };
    assert_eq!(
        answers_of(&outcome).unwrap()[0]["selected"][0],
        "PostgreSQL"
    );
    // The page says which surface won.
    browser
        .wait_text(
            "article[data-call-id=\"call-2\"]",
            "Answered at the terminal.",
        )
        .await;
    let (status, body) = answer_over_http(&server, fx.web.token(), "call-2").await;
    assert_eq!((status, body["code"].as_str()), (410, Some("NOT_WAITING")));
    let results: Vec<Value> = outcome_texts(&fx);
    assert_eq!(results.len(), 2, "exactly one result per call: {results:?}");
    println!(
        "scenario race: browser-first closed the terminal card; terminal-first took the page's card down; one answer each"
    );
    browser.quit().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn model_text_is_shown_as_text_never_run() {
    let Some(Scene {
        browser,
        fx,
        server,
        _one,
    }) = scene(120).await
    else {
        return;
    };
    let hostile = r#"{"questions":[{"id":"x","header":"<b>hdr</b>","question":"<script>window.pwned=1</script>\u001b[2J\u202eevil","options":[{"label":"<img src=x onerror=\"window.pwned=2\">","description":"<iframe src=javascript:window.pwned=3>"},{"label":"ok"}]}]}"#;
    let call = fx.ask("call-1", hostile);
    browser.client.goto(&server.url()).await.unwrap();
    browser.card("call-1", "open").await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let pwned = browser
        .client
        .execute("return typeof window.pwned", vec![])
        .await
        .unwrap();
    assert_eq!(pwned, "undefined");
    let injected = browser
        .client
        .execute(
            "return document.querySelectorAll('main script, main img, main iframe, main b').length",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(injected, 0);
    let legend = browser.text("fieldset legend").await;
    assert!(
        legend.contains("<script>window.pwned=1</script>"),
        "{legend}"
    );
    assert!(
        legend.contains("\\u{1b}[2J") && legend.contains("\\u{202e}evil"),
        "{legend}"
    );
    assert!(browser.text("label.opt").await.contains("<img src=x"));
    browser.click(r#"input[value="ok"]"#).await;
    browser.click("button.submit").await;
    assert_eq!(
        answers_of(&finished(call).await).unwrap()[0]["selected"][0],
        "ok"
    );
    browser.quit().await;
}

/// A late answer over plain HTTP, as a second front end would send it.
/// When the host stops serving, the page says the session has ended (nothing more will come)
/// and stays so, instead of reconnecting forever.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_says_when_its_session_has_ended() {
    let Some(Scene {
        browser,
        fx,
        server,
        _one,
    }) = scene(120).await
    else {
        return;
    };
    let call = fx.ask("call-1", common::DEMO_QUESTIONS);
    browser.client.goto(&server.url()).await.unwrap();
    browser.card("call-1", "open").await;
    browser.click(r#"input[name="q0"][value="SQLite"]"#).await;
    browser.click(r#"input[name="q1"][value="Lint"]"#).await;
    browser.click("button.submit").await;
    finished(call).await;
    browser.wait_text("#status", "Connected").await;
    server.stop().await;
    let ended = "The session has ended: nothing more will come to this page.";
    browser.wait_text("#status", ended).await;
    // Past the page's reconnect delay, it still says so: it does not try again.
    tokio::time::sleep(Duration::from_secs(4)).await;
    assert_eq!(browser.text("#status").await, ended);
    drop(server);
    browser.quit().await;
}

async fn answer_over_http(server: &WebServer, token: &str, call_id: &str) -> (u16, Value) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let body = json!({"answers": [{"id": "db", "selected": ["SQLite"]}]}).to_string();
    let mut stream = tokio::net::TcpStream::connect(server.local_addr())
        .await
        .unwrap();
    let request = format!(
        "POST /cards/{call_id}/answer?token={token} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        server.local_addr(),
        body.len()
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).await.unwrap();
    let status = response[9..12].parse().unwrap();
    let json = response.split("\r\n\r\n").nth(1).unwrap_or("null");
    (status, serde_json::from_str(json).unwrap_or(Value::Null))
}

/// The tool results logged so far.
fn outcome_texts(fx: &Fixture) -> Vec<Value> {
    struct Results(Vec<Value>);
    impl session_log::LogVisitor for Results {
        fn line(&mut self, line: &session_log::Scanned<'_>) {
            if let session_log::Scanned::Record(record) = line
                && let Ok(value) = serde_json::from_slice::<Value>(record.raw)
                && value["type"] == "tool/result"
            {
                self.0.push(value);
            }
        }
    }
    let mut results = Results(Vec::new());
    fx.runtime.store().read("s1", &mut results).unwrap();
    results.0
}

/// A host linked to the inbox: one agent in one session, as an `ask-user mcp` process is.
struct LinkedHost {
    seam: user_questions::UserQuestions,
    agent: user_questions::AgentHandle,
    session: ask_user_inbox::LinkedSession,
    link: ask_user_inbox::InboxLink,
}

struct Names(ask_user_inbox::LinkedSession, user_questions::SessionId);

impl ask_user_inbox::LinkedHost for Names {
    fn session(&self, id: &user_questions::SessionId) -> Option<ask_user_inbox::LinkedSession> {
        (id == &self.1).then(|| self.0.clone())
    }

    fn desk(&self) -> std::sync::Arc<dyn pending_answer::QuestionDesk> {
        std::sync::Arc::new(pending_answer::NoSessions)
    }
}

fn linked_host(inbox: &ask_user_inbox::Inbox, name: &str, client: &str, cwd: &str) -> LinkedHost {
    use user_questions::{HostBindings, InMemoryAgent, InMemoryAgentRegistry, InMemorySession};
    let registry = InMemoryAgentRegistry::new();
    let agent: user_questions::AgentHandle = InMemoryAgent::new(
        format!("agent-{name}"),
        InMemorySession::new(format!("id-{name}")),
        [],
    );
    registry.enter_root(std::sync::Arc::clone(&agent));
    let seam = user_questions::UserQuestions::new(
        user_questions::UserQuestionsConfig::default(),
        HostBindings::with_registry(registry),
    )
    .unwrap();
    let session = ask_user_inbox::LinkedSession {
        name: format!("{name}.jsonl"),
        client: Some(client.to_owned()),
        cwd: Some(cwd.to_owned()),
    };
    let served = inbox.clone();
    let connect: ask_user_inbox::Connect = std::sync::Arc::new(move || {
        let inbox = served.clone();
        Box::pin(async move {
            let (host_end, inbox_end) = tokio::io::duplex(1 << 16);
            tokio::spawn(async move { inbox.serve_link(inbox_end).await });
            Ok(Box::new(host_end) as ask_user_inbox::Stream)
        })
    });
    let names = Names(session.clone(), agent.session().id().clone());
    let link = ask_user_inbox::InboxLink::start(&seam, std::sync::Arc::new(names), connect);
    LinkedHost {
        seam,
        agent,
        session,
        link,
    }
}

impl LinkedHost {
    fn ask(
        &self,
        call_id: &str,
        question: &str,
    ) -> tokio::task::JoinHandle<user_questions::TimedOutcome> {
        let seam = self.seam.clone();
        let agent = std::sync::Arc::clone(&self.agent);
        let question = user_questions::Question::new("pick", question).with_options([
            user_questions::QuestionOption::new("Yes"),
            user_questions::QuestionOption::new("No"),
        ]);
        let call_id = user_questions::CallId::from(call_id);
        tokio::spawn(async move {
            seam.ask_timed(
                user_questions::TimedAskRequest::new([question], agent),
                call_id,
                120_000,
            )
            .await
            .unwrap()
        })
    }
}

/// The inbox and its page as `ask-user inbox` serves them (no countdowns: each host's window
/// decides), on loopback.
async fn inbox_page() -> (
    ask_user_inbox::Inbox,
    ask_user_web::WebSurface,
    user_questions::AnswererGuard,
    WebServer,
) {
    inbox_page_at("127.0.0.1:0".parse().unwrap(), None).await
}

/// [`inbox_page`] at `addr` with `token` (the kept address and token of a restarted inbox).
async fn inbox_page_at(
    addr: std::net::SocketAddr,
    token: Option<String>,
) -> (
    ask_user_inbox::Inbox,
    ask_user_web::WebSurface,
    user_questions::AnswererGuard,
    WebServer,
) {
    let inbox =
        ask_user_inbox::Inbox::new(std::sync::Arc::new(pending_answer::NoSessions)).unwrap();
    let options = ask_user_web::WebOptions {
        countdowns: false,
        returns: true,
        token,
        ..ask_user_web::WebOptions::default()
    };
    let page = ask_user_web::WebSurface::new(inbox.seam(), Some(inbox.desk()), options).unwrap();
    let guard = page.register(inbox.seam());
    let server = page.bind(addr).await.unwrap();
    (inbox, page, guard, server)
}

/// An open page follows the inbox across a restart (same address, same token): told the inbox
/// stopped, it waits, reconnects by itself and shows the questions of the new one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_open_page_follows_the_inbox_across_a_restart() {
    let _one = lock().await;
    let Some(browser) = Browser::start().await else {
        return;
    };
    let (inbox, page, guard, server) = inbox_page().await;
    let (addr, token) = (server.local_addr(), page.token().to_owned());
    browser.client.goto(&server.url()).await.unwrap();
    browser.wait_text("#status", "Connected").await;
    server.stop().await;
    drop((guard, page, inbox, server));
    browser.wait_text("#status", "reconnect").await;
    let (inbox, _page, _guard, _server) = inbox_page_at(addr, Some(token)).await;
    let host = linked_host(&inbox, "shop", "claude-code", "~/src/shop");
    tokio::time::timeout(Duration::from_secs(15), host.link.connected())
        .await
        .expect("the host never linked to the new inbox");
    let _call = host.ask("call_after_restart", "Still there?");
    browser.card("call_after_restart", "open").await;
    browser.wait_text("#status", "Connected").await;
    browser.quit().await;
}

/// Three agents' sessions linked to `inbox`: Claude Code, Codex and Gemini CLI, each in a folder.
fn three_hosts(inbox: &ask_user_inbox::Inbox) -> [LinkedHost; 3] {
    [
        linked_host(
            inbox,
            "mcp-1796487398-2c5cf5db-e558-4b27-93ec-8eb0f0e11c4b",
            "claude-code 2.1.328",
            "/home/ana/src/shop-frontend/checkout-redesign",
        ),
        linked_host(
            inbox,
            "mcp-1796487411-9a0e55c1-1d2b-4c3e-8f4a-5b6c7d8e9f00",
            "codex-mcp-client 0.171.0",
            "/home/ana/src/payments-api",
        ),
        linked_host(
            inbox,
            "mcp-1796487420-77aa31e0-2b3c-4d5e-9f60-718293a4b5c6",
            "gemini-cli-mcp-client 0.61.0",
            "/home/ana/src/docs-site",
        ),
    ]
}

/// The page at 1280 and at 390 pixels wide (the README's screenshots): at 390 the origin line
/// wraps between its fields, never inside one.
async fn screenshots(browser: &Browser) {
    for (width, height, name) in [(1280, 1000, "inbox-1280.png"), (390, 1500, "inbox-390.png")] {
        browser.client.set_window_size(width, height).await.unwrap();
        tokio::time::sleep(Duration::from_millis(300)).await;
        let broken = browser
            .client
            .execute(
                "return [...document.querySelectorAll('.origin .field')].filter((f) => f.getClientRects().length !== 1).length",
                vec![],
            )
            .await
            .unwrap();
        assert_eq!(
            broken,
            json!(0),
            "a field wrapped inside itself at {width} px"
        );
        let png = browser.client.screenshot().await.unwrap();
        std::fs::write(PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name), &png).unwrap();
        if std::env::var_os("ASK_USER_UPDATE_SCREENSHOT").is_some() {
            let docs = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("../../docs")
                .join(name);
            std::fs::write(docs, &png).unwrap();
        }
    }
}

/// The machine's inbox in a browser: three agents' sessions (three clients, three folders) on
/// one page, each card naming its session's client and folder and its age, answered one by one;
/// each answer reaches its own agent. The screenshots in the README (`docs/inbox-1280.png`,
/// `docs/inbox-390.png`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_inbox_page_shows_three_sessions_and_each_is_answered_in_turn() {
    let _one = lock().await;
    let Some(browser) = Browser::start().await else {
        return;
    };
    let (inbox, page, _page, server) = inbox_page().await;
    let hosts = three_hosts(&inbox);
    // A link hands questions to the inbox once it has reached it (before, the host's own
    // surfaces answer alone): the three links connect first.
    for host in &hosts {
        tokio::time::timeout(Duration::from_secs(15), host.link.connected())
            .await
            .expect("a host never linked to the inbox");
    }
    let questions = [
        "Ship the checkout redesign behind a flag?",
        "Drop the v1 endpoints in this release?",
        "Publish the migration guide today?",
    ];
    let calls: Vec<_> = hosts
        .iter()
        .zip(questions)
        .map(|(host, question)| host.ask(&format!("call_{}", host.session.name), question))
        .collect();
    // The labels reach the page as the sessions link (the inbox's desk names where each runs):
    // wait for them, then load it.
    until("three sessions linked", || inbox.sessions().len() == 3).await;
    page.refresh().await;
    browser.client.goto(&server.url()).await.unwrap();
    for host in &hosts {
        let card = browser
            .card(&format!("call_{}", host.session.name), "open")
            .await;
        let origin = card
            .find(Locator::Css(".origin"))
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        // The card names the folder, the session and the age; its agent heads its group.
        let fields: Vec<&str> = origin.lines().collect();
        let session = &host.session.name["mcp-1796487398-".len()..][..8];
        assert_eq!(
            fields[..2],
            [
                host.session.cwd.as_deref().unwrap(),
                &format!("session {session}")
            ],
            "{origin}"
        );
        assert!(fields[2].starts_with("asked "), "{origin}");
        // The time left in the host's window, as the host told the inbox.
        let clock = card
            .find(Locator::Css(".clock"))
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert!(clock.ends_with(" s left"), "{clock}");
        let agent = browser
            .client
            .execute(
                "return arguments[0].closest('section.group').querySelector('h2.agent').textContent",
                vec![serde_json::to_value(&card).unwrap()],
            )
            .await
            .unwrap();
        assert_eq!(agent, host.session.client.as_deref().unwrap());
    }
    screenshots(&browser).await;
    // Answered one by one: each answer reaches its own agent, and only that card goes.
    for ((host, call), choice) in hosts.iter().zip(calls).zip(["Yes", "No", "Yes"]) {
        let call_id = format!("call_{}", host.session.name);
        browser
            .click(&format!(
                r#"article[data-call-id="{call_id}"] input[name="q0"][value="{choice}"]"#
            ))
            .await;
        browser
            .click(&format!(
                r#"article[data-call-id="{call_id}"] button.submit"#
            ))
            .await;
        let outcome = tokio::time::timeout(Duration::from_secs(15), call)
            .await
            .expect("the agent never got its answer")
            .unwrap();
        let user_questions::TimedOutcome::Answered(answered) = outcome else {
            panic!("{call_id}: {outcome:?}")
        };
        assert_eq!(
            answered.answers,
            user_questions::AnswerBatch::new([user_questions::AnswerItem::selected(
                "pick",
                [choice]
            )])
        );
        assert_eq!(answered.provenance.answerer, "web");
    }
    browser.quit().await;
}
