//! The ledger's hints (`NOTIFY`) are sent after an answer's commit, off its statement; a hint
//! that is lost (its connection broke) delays the answer's admission by at most the worker's
//! poll, which catches everything.
// Test code stops at its first broken expectation.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use ask_user_host::HostRuntime;
use ask_user_pg::{PgOptions, PgStore, Worker, WorkerEvent};
use postgres::fallible_iterator::FallibleIterator;
use user_questions::{AnswerBatch, AnswerItem, CallId, Provenance, QuestionLimits};

fn answer(store: &PgStore, call: &str) {
    store
        .record_answer(
            "s",
            &CallId::from(call),
            &AnswerBatch::new([AnswerItem::selected("scope", ["Tool only"])]),
            &Provenance::human("test"),
            &QuestionLimits::default(),
        )
        .unwrap();
}

/// The notifications for session `s` that reach a listener within `wait`.
fn hints_for_s(listener: &mut postgres::Client, wait: Duration) -> usize {
    let mut notifications = listener.notifications();
    let mut seen = 0;
    let deadline = Instant::now() + wait;
    while let Some(left) = deadline.checked_duration_since(Instant::now()) {
        match notifications.timeout_iter(left).next().unwrap() {
            Some(n) if n.payload() == "s" => seen += 1,
            Some(_) => {}
            None => break,
        }
        if seen > 0 {
            break;
        }
    }
    seen
}

#[test]
fn an_answer_whose_hint_is_lost_is_admitted_by_the_poll() {
    let Some(url) = common::pg_url() else { return };
    let schema = common::fresh_schema();
    let owner = format!("lost-hint-{}", std::process::id());
    let front = PgStore::connect(
        &url,
        &PgOptions {
            owner: Some(owner.clone()),
            ..common::options(&schema)
        },
    )
    .unwrap();
    let store = PgStore::connect(&url, &common::options(&schema)).unwrap();
    common::create_pending(&store, "s", &["c1", "c2"]);
    let mut listener = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    listener.batch_execute("LISTEN ask_user_answers").unwrap();

    // A worker that keeps the session once it admitted to it, polling every 300 ms.
    let poll = Duration::from_millis(300);
    let worker = Worker::new(
        &url,
        store.clone(),
        HostRuntime::new(store.clone(), None).unwrap(),
        poll,
        Duration::from_mins(1),
    );
    let stop = worker.stopper();
    let (admitted, admissions) = mpsc::channel();
    let running = thread::spawn(move || {
        worker.run(&mut |event| {
            if let WorkerEvent::Admitted { admitted: a, .. } = event {
                let _ = admitted.send(a.admitted);
            }
        });
    });

    // The hint comes after the answer's commit, on the front end's hint connection.
    answer(&front, "c1");
    assert_eq!(hints_for_s(&mut listener, Duration::from_secs(10)), 1);
    assert_eq!(admissions.recv_timeout(Duration::from_secs(30)).unwrap(), 1);

    // The hint connection is cut: the next answer's hint is lost.
    let mut admin = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    let cut = admin
        .execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1",
            &[&format!("ask-user-pg hints {owner}")],
        )
        .unwrap();
    assert_eq!(cut, 1, "the front end's hint connection");
    answer(&front, "c2");
    // Still admitted: the worker's poll finds it.
    assert_eq!(admissions.recv_timeout(Duration::from_secs(30)).unwrap(), 1);
    assert_eq!(
        hints_for_s(&mut listener, Duration::from_millis(500)),
        0,
        "the hint was lost, yet the answer was admitted"
    );
    assert!(store.unadmitted("s").unwrap().is_empty());
    // The next hint goes out on a fresh connection.
    stop.stop();
    running.join().unwrap();
    drop(front);
    common::drop_schema(&url, &schema);
}
