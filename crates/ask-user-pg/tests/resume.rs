//! Opening a `PostgreSQL` session at its checkpoint (`SessionStore::open_at_checkpoint`): the host reads
//! only the rows after the checkpoint and the ledger's fold starts there, and the session and the
//! ledger are the ones a full open gives, at every record boundary of a session with continued,
//! answered and admitted questions; later admissions (written by the resumed fold) leave the
//! same ledger. A checkpoint that does not fit, or a log whose ledger was never brought in line
//! (an import), means a full read and loses nothing. The ledger starts from the document the
//! open resumed at, whatever is saved between the open and its first append.
// Test code stops at its first broken expectation; sizes here are small.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use ask_user_host::{CheckpointPolicy, HostRuntime, SessionOptions, load_projection};
use ask_user_pg::{PgStore, Worker, admit_answers};
use ask_user_testkit::logs::line_ends;
use session_log::{JsonlStore, SessionStore, checkpoint_path};
use user_questions::{AnswerBatch, AnswerItem, CallId, Provenance, QuestionLimits};

fn answer(store: &PgStore, name: &str, call: &str) {
    store
        .record_answer(
            name,
            &CallId::from(call),
            &AnswerBatch::new([AnswerItem::selected("scope", ["Tool only"])]),
            &Provenance::human("test"),
            &QuestionLimits::default(),
        )
        .unwrap();
}

/// A session's bytes: three continued questions, the first answered and admitted (its late
/// reply settles it in a turn of its own).
fn source_log(store: &PgStore) -> Vec<u8> {
    common::create_pending(store, "src", &["c1", "c2", "c3"]);
    answer(store, "src", "c1");
    let runtime = HostRuntime::new(store.clone(), None).unwrap();
    assert_eq!(admit_answers(&runtime, store, "src").unwrap().admitted, 1);
    let mut bytes = Vec::new();
    store.export("src", &mut bytes).unwrap();
    bytes
}

/// The projection checkpoint document of `bytes[..cut]`, as a host writes it (with its open
/// state: the prefix reads clean).
fn checkpoint_at(bytes: &[u8], cut: usize) -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("prefix.jsonl");
    std::fs::write(&path, &bytes[..cut]).unwrap();
    load_projection(
        &JsonlStore::new(dir.path()),
        "prefix.jsonl",
        CheckpointPolicy::Refresh,
    )
    .unwrap();
    let document = std::fs::read(checkpoint_path(&path)).unwrap();
    assert!(
        String::from_utf8_lossy(&document).contains("\"open\""),
        "cut at {cut}: a writer can resume there"
    );
    document
}

/// Everything an open shows, as comparable text, and whether it resumed at a checkpoint.
fn open(runtime: &HostRuntime, name: &str) -> (String, bool) {
    let (host, resumed) = runtime.open(name, SessionOptions::named("s")).unwrap();
    let mut report = resumed.report.unwrap();
    let did_resume = report.resumed_at.take().is_some();
    let location = format!("pg:{name}");
    let shown = format!(
        "{report:?} {:?} {:?}",
        resumed.repair.unwrap(),
        host.projection()
    )
    .replace(&location, "pg:LOG");
    (shown, did_resume)
}

/// The ledger rows of session `name`: every question's state, every answer's outcome.
fn ledger(client: &mut postgres::Client, name: &str) -> Vec<String> {
    let mut rows: Vec<String> = client
        .query(
            "SELECT call_id, state, questions FROM ask_user_questions WHERE name = $1",
            &[&name],
        )
        .unwrap()
        .iter()
        .map(|r| {
            format!(
                "q {} {} {}",
                r.get::<_, String>(0),
                r.get::<_, String>(1),
                r.get::<_, String>(2)
            )
        })
        .collect();
    rows.extend(
        client
            .query(
                "SELECT call_id, admitted_seq, refused FROM ask_user_answers WHERE name = $1",
                &[&name],
            )
            .unwrap()
            .iter()
            .map(|r| {
                format!(
                    "a {} {:?} {:?}",
                    r.get::<_, String>(0),
                    r.get::<_, Option<i64>>(1),
                    r.get::<_, Option<String>>(2)
                )
            }),
    );
    rows.sort();
    rows
}

fn forget_checkpoint(client: &mut postgres::Client, name: &str) {
    client
        .execute(
            "UPDATE ask_user_sessions SET checkpoint = NULL WHERE name = $1",
            &[&name],
        )
        .unwrap();
}

fn import(store: &PgStore, name: &str, bytes: &[u8]) {
    store.import(name, &mut &bytes[..]).unwrap();
}

/// Opens the sessions `resumed` (checkpoint `document` saved) and `full` (no checkpoint) and
/// checks they show the same session and ledger; then answers `c3` in both and lets a worker
/// admit it (the resumed session's admission is written by the fold that started at the
/// checkpoint) and checks the ledgers again.
fn check_against_full(
    url: &str,
    store: &PgStore,
    client: &mut postgres::Client,
    (resumed, full): (&str, &str),
    document: Option<&[u8]>,
    what: &str,
) -> bool {
    let runtime = HostRuntime::new(store.clone(), None).unwrap();
    match document {
        Some(document) => {
            store.save_checkpoint(resumed, document).unwrap();
        }
        None => forget_checkpoint(client, resumed),
    }
    forget_checkpoint(client, full);
    let (at, did_resume) = open(&runtime, resumed);
    let (whole, full_resumed) = open(&runtime, full);
    assert!(!full_resumed, "{what}: no checkpoint, no resume");
    assert_eq!(at, whole, "{what}");
    assert_eq!(ledger(client, resumed), ledger(client, full), "{what}");
    // The resumed session's next open (the worker's) starts at the same checkpoint: the log has
    // not grown past the lag.
    answer(store, resumed, "c3");
    answer(store, full, "c3");
    let worker = Worker::new(
        url,
        store.clone(),
        HostRuntime::new(store.clone(), None).unwrap(),
        Duration::from_secs(1),
        Duration::ZERO,
    );
    let mut admitted = 0;
    worker.pass(&mut |event| {
        if let ask_user_pg::WorkerEvent::Admitted { admitted: a, .. } = event {
            admitted += a.admitted;
        } else {
            panic!("{what}: {event:?}");
        }
    });
    assert_eq!(admitted, 2, "{what}");
    assert_eq!(ledger(client, resumed), ledger(client, full), "{what}");
    did_resume
}

#[test]
fn a_session_opens_at_every_record_boundary_as_from_its_start() {
    let Some(url) = common::pg_url() else { return };
    let (store, schema) = common::store(&url);
    let mut client = common::client(&url, &schema);
    let bytes = source_log(&store);
    let ends = line_ends(&bytes);
    for (index, &cut) in ends.iter().enumerate() {
        let (resumed, full) = (format!("r{index}"), format!("f{index}"));
        import(&store, &resumed, &bytes);
        import(&store, &full, &bytes);
        // A first open brings each imported ledger in line with its log, as a worker's does.
        let runtime = HostRuntime::new(store.clone(), None).unwrap();
        drop(runtime.open(&resumed, SessionOptions::named("s")).unwrap());
        drop(runtime.open(&full, SessionOptions::named("s")).unwrap());
        let document = checkpoint_at(&bytes, cut);
        let what = format!("cut at byte {cut}");
        assert!(
            check_against_full(
                &url,
                &store,
                &mut client,
                (&resumed, &full),
                Some(&document),
                &what
            ),
            "{what}: resumed"
        );
    }
    common::drop_schema(&url, &schema);
}

#[test]
fn a_checkpoint_that_does_not_fit_or_an_unreconciled_ledger_means_a_full_read() {
    let Some(url) = common::pg_url() else { return };
    let (store, schema) = common::store(&url);
    let mut client = common::client(&url, &schema);
    let bytes = source_log(&store);
    let ends = line_ends(&bytes);
    let cut = ends[ends.len() / 2];
    let document = checkpoint_at(&bytes, cut);

    // Another record at the checkpoint's byte length: stale, the host reads the whole log.
    let mut value: serde_json::Value = serde_json::from_slice(&document).unwrap();
    value["log"]["lastRecordHash"] = "0".repeat(64).into();
    let mismatched = serde_json::to_vec(&value).unwrap();
    import(&store, "stale", &bytes);
    import(&store, "stale-full", &bytes);
    let runtime = HostRuntime::new(store.clone(), None).unwrap();
    drop(runtime.open("stale", SessionOptions::named("s")).unwrap());
    drop(
        runtime
            .open("stale-full", SessionOptions::named("s"))
            .unwrap(),
    );
    let resumed = check_against_full(
        &url,
        &store,
        &mut client,
        ("stale", "stale-full"),
        Some(&mismatched),
        "a mismatched checkpoint",
    );
    assert!(!resumed, "a mismatched checkpoint is not resumed at");

    // An imported log whose ledger was never reconciled, with a checkpoint that fits: the host
    // reads only the rows after it, the ledger's fold reads the whole log, and nothing is lost.
    import(&store, "imported", &bytes);
    import(&store, "imported-full", &bytes);
    let resumed = check_against_full(
        &url,
        &store,
        &mut client,
        ("imported", "imported-full"),
        Some(&document),
        "an unreconciled ledger",
    );
    assert!(resumed, "the host still resumes at the checkpoint");
    common::drop_schema(&url, &schema);
}

#[test]
fn the_ledger_starts_from_the_checkpoint_its_open_resumed_at_though_another_is_saved_before_its_first_append()
 {
    let Some(url) = common::pg_url() else { return };
    let (store, schema) = common::store(&url);
    let mut client = common::client(&url, &schema);
    let bytes = source_log(&store);
    let ends = line_ends(&bytes);
    let (early, cut) = (ends[1], ends[ends.len() - 1]);
    let document = checkpoint_at(&bytes, cut);
    // A document at the same anchor holding another state (an earlier point's): one that would
    // start the ledger wrong if the first append read the document saved by then.
    let mut forged: serde_json::Value = serde_json::from_slice(&document).unwrap();
    let earlier: serde_json::Value = serde_json::from_slice(&checkpoint_at(&bytes, early)).unwrap();
    forged["state"] = earlier["state"].clone();
    let forged = serde_json::to_vec(&forged).unwrap();
    assert_ne!(forged, document);

    let runtime = HostRuntime::new(store.clone(), None).unwrap();
    for name in ["again", "again-full"] {
        import(&store, name, &bytes);
        drop(runtime.open(name, SessionOptions::named("s")).unwrap());
    }
    store.save_checkpoint("again", &document).unwrap();
    forget_checkpoint(&mut client, "again-full");
    let (resumed, opened) = runtime.open("again", SessionOptions::named("s")).unwrap();
    assert!(
        opened.report.unwrap().resumed_at.is_some(),
        "the open resumed at the checkpoint"
    );
    store.save_checkpoint("again", &forged).unwrap();
    let (full, _) = runtime
        .open("again-full", SessionOptions::named("s-full"))
        .unwrap();
    let call = CallId::from("c3");
    for host in [&resumed, &full] {
        host.late()
            .queue(
                &call,
                AnswerBatch::new([AnswerItem::selected("scope", ["Tool only"])]),
                Provenance::human("test"),
            )
            .unwrap();
        assert!(host.late().settle(&call).unwrap().is_some());
    }
    let rows = ledger(&mut client, "again");
    assert!(
        rows.iter().any(|row| row.starts_with("q c3 settled")),
        "{rows:?}"
    );
    assert_eq!(rows, ledger(&mut client, "again-full"));
    common::drop_schema(&url, &schema);
}
