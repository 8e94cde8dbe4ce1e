//! Open questions answered and claimed from another machine, against a real `PostgreSQL` server
//! (`ASK_USER_PG_URL`): a live host runs a timed call with a `LedgerAnswerer` on its seam, and a
//! second store (another machine's front end) answers or claims the question through the ledger.
// Test code stops at its first broken expectation.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use ask_user_host::{Host, HostRuntime, SessionOptions};
use ask_user_pg::{AnswerError, LEDGER_ANSWERER, LedgerAnswerer, PgStore, QuestionState};
use common::{client, drop_schema, options};
use tool_ask_user::{AskUserConfig, ToolOutcome};
use user_questions::{
    AnswerBatch, AnswerItem, Answered, Answerer, AnswererError, CallId, CancellationToken,
    Provenance, QuestionEventKind, QuestionLimits, RegisterOptions, async_trait,
};

const ARGS: &str = r#"{"questions":[{"id":"db","question":"Which database?","options":[{"label":"SQLite"},{"label":"PostgreSQL"}]}]}"#;

fn pick(label: &str) -> AnswerBatch {
    AnswerBatch::new([AnswerItem::selected("db", [label])])
}

/// `store` (another machine's front end) answers `ask-1` with `label`, as surface `who`.
fn answer_from(store: &PgStore, label: &str, who: &str) -> Result<String, AnswerError> {
    store.record_answer(
        "s",
        &CallId::from("ask-1"),
        &pick(label),
        &Provenance::human(who),
        &QuestionLimits::default(),
    )
}

/// A live host over the database running session `s` with the timed tool of `window_secs`.
struct Live {
    runtime: HostRuntime,
    host: Arc<Host>,
}

fn live(url: &str, schema: &str, window_secs: i64) -> Live {
    let store = PgStore::connect(url, &options(schema)).unwrap();
    let runtime = HostRuntime::new(store, Some(AskUserConfig::timed_secs(window_secs))).unwrap();
    let host = Arc::new(runtime.create("s", SessionOptions::named("s")).unwrap());
    Live { runtime, host }
}

impl Live {
    /// Starts the call `ask-1` on a task; its outcome comes back on the handle.
    fn call(&self) -> tokio::task::JoinHandle<ToolOutcome> {
        self.host.begin_turn().unwrap();
        self.host.begin_step().unwrap();
        self.host.log_request_header().unwrap();
        let host = Arc::clone(&self.host);
        tokio::spawn(async move {
            host.call_tool(&CallId::from("ask-1"), ARGS, CancellationToken::new())
                .await
                .unwrap()
        })
    }

    fn ledger_answerer(&self, url: &str, schema: &str) -> user_questions::AnswererGuard {
        let store = PgStore::connect(url, &options(schema)).unwrap();
        LedgerAnswerer::new(
            url,
            store,
            "s",
            self.host.agent(),
            self.runtime.seam(),
            Duration::from_millis(200),
        )
        .register(self.runtime.seam())
    }
}

/// Waits (on the real clock: the server is real) until the ledger shows `ask-1` in `state`.
async fn until_state(store: &PgStore, state: QuestionState) {
    let started = Instant::now();
    loop {
        let questions = store.questions(Some("s")).unwrap();
        if questions.iter().any(|q| q.state == state) {
            return;
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "the ledger never showed {state}: {questions:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The ledger's answer row of `ask-1`: (admitted, refused). The plain client blocks, so it runs
/// off the test's runtime.
async fn answer_row(url: &str, schema: &str) -> (bool, Option<String>) {
    let (url, schema) = (url.to_owned(), schema.to_owned());
    tokio::task::spawn_blocking(move || {
        let row = client(&url, &schema)
            .query_one(
                "SELECT admitted_seq IS NOT NULL, refused FROM ask_user_answers WHERE call_id = 'ask-1'",
                &[],
            )
            .unwrap();
        (row.get(0), row.get(1))
    })
    .await
    .unwrap()
}

/// Drops the test's schema off the test's runtime.
async fn drop_schema_async(url: &str, schema: &str) {
    let (url, schema) = (url.to_owned(), schema.to_owned());
    tokio::task::spawn_blocking(move || drop_schema(&url, &schema))
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_open_question_is_answered_in_its_window_from_another_machine() {
    let Some(url) = common::pg_url() else { return };
    let schema = common::fresh_schema();
    let live = live(&url, &schema, 120);
    let _ledger = live.ledger_answerer(&url, &schema);
    let elsewhere = PgStore::connect(&url, &options(&schema)).unwrap();
    let call = live.call();
    until_state(&elsewhere, QuestionState::Open).await;

    let id = answer_from(&elsewhere, "PostgreSQL", "phone").unwrap();
    let outcome = tokio::time::timeout(Duration::from_secs(20), call)
        .await
        .expect("answered in its window, long before it closes")
        .unwrap();
    assert!(!outcome.text.contains("pending"), "{}", outcome.text);
    assert!(outcome.text.contains("PostgreSQL"), "{}", outcome.text);
    assert_eq!(
        outcome.meta.as_ref().unwrap()["provenance"]["answerer"],
        LEDGER_ANSWERER
    );
    // The tool result that logged it admitted the ledger's answer in the same transaction.
    assert_eq!(answer_row(&url, &schema).await, (true, None), "answer {id}");
    assert_eq!(live.host.projection().view().settled.len(), 1);
    let again = answer_from(&elsewhere, "SQLite", "page").unwrap_err();
    assert!(matches!(again, AnswerError::Settled(_)), "{again}");
    drop(live);
    drop_schema_async(&url, &schema).await;
}

/// An answerer that answers once `go` fires (a person at this host's own terminal).
struct Local(tokio::sync::Mutex<Option<tokio::sync::oneshot::Receiver<()>>>);

#[async_trait]
impl Answerer for Local {
    async fn answer(
        &self,
        _request: &user_questions::AnswerRequest,
        _next: user_questions::Next<'_>,
    ) -> Result<Answered, AnswererError> {
        let go = self.0.lock().await.take();
        if let Some(go) = go {
            let _ = go.await;
        }
        Ok(Answered::human(pick("SQLite")))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_local_answer_in_the_window_refuses_the_ledgers_answer() {
    let Some(url) = common::pg_url() else { return };
    let schema = common::fresh_schema();
    let live = live(&url, &schema, 120);
    // No ledger answerer: this host answers at its own surface, after the ledger took an answer.
    let (go, gate) = tokio::sync::oneshot::channel();
    let _local = live.runtime.seam().register(
        Arc::new(Local(tokio::sync::Mutex::new(Some(gate)))),
        RegisterOptions::global("terminal"),
    );
    let elsewhere = PgStore::connect(&url, &options(&schema)).unwrap();
    let call = live.call();
    until_state(&elsewhere, QuestionState::Open).await;
    answer_from(&elsewhere, "PostgreSQL", "phone").unwrap();
    assert!(
        elsewhere.unadmitted("s").unwrap().is_empty(),
        "an open question's answer is its window's, not a late one"
    );
    go.send(()).unwrap();
    let outcome = call.await.unwrap();
    assert!(outcome.text.contains("SQLite"), "{}", outcome.text);
    let (admitted, refused) = answer_row(&url, &schema).await;
    assert!(!admitted);
    assert_eq!(
        refused.as_deref(),
        Some("another reply settled the question")
    );
    drop(live);
    drop_schema_async(&url, &schema).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_the_window_missed_is_admitted_late() {
    let Some(url) = common::pg_url() else { return };
    let schema = common::fresh_schema();
    let live = live(&url, &schema, 1);
    let elsewhere = PgStore::connect(&url, &options(&schema)).unwrap();
    let call = live.call();
    until_state(&elsewhere, QuestionState::Open).await;
    // Nothing on this host reads the ledger: the window closes, and the answer waits.
    answer_from(&elsewhere, "PostgreSQL", "phone").unwrap();
    let outcome = call.await.unwrap();
    assert!(outcome.text.contains("pending"), "{}", outcome.text);
    live.host.end_turn("completed").unwrap();
    assert_eq!(
        elsewhere.unadmitted("s").unwrap().len(),
        1,
        "now a late one"
    );
    drop(live);
    let runtime = HostRuntime::new(elsewhere.clone(), None).unwrap();
    let admitted = tokio::task::spawn_blocking(move || {
        ask_user_pg::admit_answers(&runtime, &elsewhere, "s").unwrap()
    })
    .await
    .unwrap();
    assert_eq!(admitted.admitted, 1);
    assert_eq!(answer_row(&url, &schema).await, (true, None));
    drop_schema_async(&url, &schema).await;
}

/// Waits for the seam to report a claim on the wait.
async fn until_claimed(events: &mut user_questions::QuestionEvents) {
    tokio::time::timeout(Duration::from_secs(20), async {
        while let Some(received) = events.recv().await {
            if let user_questions::Received::Event(event) = received
                && matches!(event.kind, QuestionEventKind::Claimed { .. })
            {
                return;
            }
        }
        panic!("the event stream ended");
    })
    .await
    .expect("the host claimed its wait for the remote surface");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_claim_holds_the_window_until_it_is_released() {
    let Some(url) = common::pg_url() else { return };
    let schema = common::fresh_schema();
    let live = live(&url, &schema, 2);
    let mut events = live.runtime.seam().subscribe();
    let _ledger = live.ledger_answerer(&url, &schema);
    let page = PgStore::connect(&url, &options(&schema)).unwrap();
    let call_id = CallId::from("ask-1");
    let mut call = live.call();
    until_state(&page, QuestionState::Open).await;
    let state = page
        .claim("s", &call_id, "page-1", Duration::from_mins(1))
        .unwrap();
    assert_eq!(state, QuestionState::Open);
    until_claimed(&mut events).await;
    // Past the 2 s window: still held.
    assert!(
        tokio::time::timeout(Duration::from_secs(3), &mut call)
            .await
            .is_err(),
        "the window must not close while a remote claim is live"
    );
    assert!(page.release_claim("s", &call_id, "page-1").unwrap());
    assert!(!page.release_claim("s", &call_id, "page-1").unwrap());
    let outcome = tokio::time::timeout(Duration::from_secs(20), call)
        .await
        .expect("the countdown resumes once the claim is gone")
        .unwrap();
    assert!(outcome.text.contains("pending"), "{}", outcome.text);
    // A continued question has no window to hold.
    assert_eq!(
        page.claim("s", &call_id, "page-1", Duration::from_secs(15))
            .unwrap(),
        QuestionState::Continued
    );
    drop(live);
    drop_schema_async(&url, &schema).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_claim_that_is_not_renewed_runs_out_on_the_databases_clock() {
    let Some(url) = common::pg_url() else { return };
    let schema = common::fresh_schema();
    let live = live(&url, &schema, 1);
    let mut events = live.runtime.seam().subscribe();
    let _ledger = live.ledger_answerer(&url, &schema);
    let page = PgStore::connect(&url, &options(&schema)).unwrap();
    let call = live.call();
    until_state(&page, QuestionState::Open).await;
    let claimed_at = Instant::now();
    page.claim(
        "s",
        &CallId::from("ask-1"),
        "page-1",
        Duration::from_secs(2),
    )
    .unwrap();
    until_claimed(&mut events).await;
    let outcome = tokio::time::timeout(Duration::from_secs(20), call)
        .await
        .expect("the lease ran out and the window closed")
        .unwrap();
    assert!(outcome.text.contains("pending"), "{}", outcome.text);
    assert!(
        claimed_at.elapsed() >= Duration::from_secs(2),
        "held until the 2 s lease ran out"
    );
    // The question left its window: its claims went with it.
    let (url2, schema2) = (url.clone(), schema.clone());
    let claims: i64 = tokio::task::spawn_blocking(move || {
        client(&url2, &schema2)
            .query_one("SELECT count(*) FROM ask_user_claims", &[])
            .unwrap()
            .get(0)
    })
    .await
    .unwrap();
    assert_eq!(claims, 0);
    drop(live);
    drop_schema_async(&url, &schema).await;
}

#[test]
fn claims_on_unknown_questions_are_refused() {
    let Some(url) = common::pg_url() else { return };
    let (store, schema) = common::store(&url);
    common::create_pending(&store, "s", &["ask-1"]);
    let ttl = Duration::from_secs(15);
    let unknown_call = store
        .claim("s", &CallId::from("nope"), "page", ttl)
        .unwrap_err();
    assert_eq!(unknown_call.code(), "UNKNOWN_CALL");
    let unknown_session = store
        .claim("t", &CallId::from("ask-1"), "page", ttl)
        .unwrap_err();
    assert_eq!(unknown_session.code(), "UNKNOWN_SESSION");
    assert_eq!(
        store
            .claim("s", &CallId::from("ask-1"), "page", ttl)
            .unwrap(),
        QuestionState::Continued
    );
    let rows: i64 = client(&url, &schema)
        .query_one("SELECT count(*) FROM ask_user_claims", &[])
        .unwrap()
        .get(0);
    assert_eq!(rows, 0, "nothing to hold, nothing written");
    drop_schema(&url, &schema);
}
