//! Leases and fencing, migrations, the question ledger, first-answer-wins, admission exactly
//! once, and export/import, against a real `PostgreSQL` server (`ASK_USER_PG_URL`).
// Test code stops at its first broken expectation; sizes here are small.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::cast_possible_truncation,
    clippy::cast_possible_wrap
)]

mod common;

use std::io::BufReader;

use ask_user_host::HostRuntime;
use std::time::Duration;

use ask_user_pg::{
    AnswerError, PgError, PgStore, QuestionState, SCHEMA_VERSION, Worker, WorkerEvent,
    admit_answers,
};
use common::{client, create_pending, drop_schema, options, pending_turn};
use session_log::{EventBody, LogVisitor, NewSession, Scanned, SessionStore, StoreError};
use user_questions::{AnswerBatch, AnswerItem, CallId, Provenance, QuestionLimits};
use user_questions_projection::Replay;

fn scope(label: &str) -> AnswerBatch {
    AnswerBatch::new([AnswerItem::selected("scope", [label])])
}

fn human() -> Provenance {
    Provenance::human("test-front-end")
}

/// A front end's answer `label` to `call` of session `s`.
fn answer(store: &PgStore, call: &CallId, label: &str) -> Result<String, AnswerError> {
    store.record_answer(
        "s",
        call,
        &scope(label),
        &human(),
        &QuestionLimits::default(),
    )
}

/// The replies (`user/message` with a reply source) the log holds for `call_id`.
fn replies_in_log(store: &PgStore, name: &str, call_id: &str) -> usize {
    struct Count<'a>(&'a str, usize);
    impl LogVisitor for Count<'_> {
        fn line(&mut self, scanned: &Scanned<'_>) {
            if let Scanned::Record(record) = scanned
                && let Some(event) = record.record.event()
                && let EventBody::UserMessage(message) = &event.body
                && message.reply_call_id().map(CallId::as_str) == Some(self.0)
            {
                self.1 += 1;
            }
        }
    }
    let mut count = Count(call_id, 0);
    store.read(name, &mut count).unwrap();
    count.1
}

/// The ids of the late replies in the log.
fn reply_ids(store: &PgStore, name: &str) -> std::collections::BTreeSet<String> {
    struct Ids(std::collections::BTreeSet<String>);
    impl LogVisitor for Ids {
        fn line(&mut self, scanned: &Scanned<'_>) {
            if let Scanned::Record(record) = scanned
                && let Some(event) = record.record.event()
                && let EventBody::UserMessage(message) = &event.body
                && message.reply_call_id().is_some()
            {
                self.0.extend(message.id.clone());
            }
        }
    }
    let mut ids = Ids(std::collections::BTreeSet::new());
    store.read(name, &mut ids).unwrap();
    ids.0
}

/// The projection replayed from the log's rows.
fn replayed(store: &PgStore, name: &str) -> user_questions_projection::UserQuestionsState {
    struct Fold(Option<Replay>);
    impl LogVisitor for Fold {
        fn header(&mut self, header: &session_log::SessionHeader) {
            self.0 = Some(Replay::new(header));
        }
        fn line(&mut self, scanned: &Scanned<'_>) {
            if let (Some(replay), Scanned::Record(record)) = (&mut self.0, scanned) {
                replay.apply_record(record.line, &record.record);
            }
        }
    }
    let mut fold = Fold(None);
    store.read(name, &mut fold).unwrap();
    fold.0.unwrap().finish().0
}

#[test]
fn a_taken_over_lease_fences_the_first_writer() {
    let Some(url) = common::pg_url() else { return };
    let schema = common::fresh_schema();
    let first = PgStore::connect(&url, &options(&schema)).unwrap();
    let second = PgStore::connect(&url, &options(&schema)).unwrap();
    let mut writer = first.create("s", &NewSession::new("s")).unwrap();
    writer.append(&pending_turn(0, 1, "ask-1")[..2]).unwrap();

    // While the lease is live nobody else gets the log.
    let refused = second.open("s", &mut ()).err().expect("locked");
    assert!(matches!(refused, StoreError::Locked { .. }), "{refused}");
    assert!(second.is_writing("s").unwrap());

    // The first writer stalls past its lease (its clock is the database's): the second takes over.
    client(&url, &schema)
        .execute(
            "UPDATE ask_user_sessions SET lease_until = now() - interval '1 second'",
            &[],
        )
        .unwrap();
    let (mut taker, report) = second.open("s", &mut ()).unwrap();
    assert_eq!(report.scan.end.expected_seq, 2);

    let events = pending_turn(0, 1, "ask-1");
    let fenced = writer.append(&events[2..3]).unwrap_err();
    assert!(matches!(fenced, StoreError::Fenced { .. }), "{fenced}");
    assert_eq!(fenced.code(), "WRITER_FENCED");
    assert!(writer.is_poisoned(), "a fenced writer stops");
    assert!(matches!(
        writer.append(&events[2..3]).unwrap_err(),
        StoreError::Fenced { .. }
    ));
    taker.append(&events[2..3]).unwrap();
    drop(writer);
    // Dropping the fenced writer did not free the new owner's lease.
    assert!(second.is_writing("s").unwrap());
    drop(taker);

    let seqs: Vec<i64> = client(&url, &schema)
        .query("SELECT seq FROM ask_user_lines ORDER BY line_no", &[])
        .unwrap()
        .iter()
        .map(|row| row.get(0))
        .collect();
    assert_eq!(seqs, [0, 1, 2], "no seq written twice");
    drop_schema(&url, &schema);
}

#[test]
fn migrations_apply_once_and_a_newer_schema_is_refused() {
    let Some(url) = common::pg_url() else { return };
    let schema = common::fresh_schema();
    // A read-only connection changes nothing: a missing schema stays missing.
    let read_only = ask_user_pg::PgOptions {
        migrate: false,
        ..options(&schema)
    };
    let missing = PgStore::connect(&url, &read_only).unwrap_err();
    assert_eq!(missing.code(), "DB_NO_SCHEMA", "{missing}");
    let created: bool = postgres::Client::connect(&url, postgres::NoTls)
        .unwrap()
        .query_one(
            "SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)",
            &[&schema],
        )
        .unwrap()
        .get(0);
    assert!(!created, "read only: nothing created");
    drop(PgStore::connect(&url, &options(&schema)).unwrap());
    drop(PgStore::connect(&url, &options(&schema)).unwrap());
    drop(PgStore::connect(&url, &read_only).unwrap());
    let mut db = client(&url, &schema);
    let versions: Vec<i32> = db
        .query("SELECT version FROM ask_user_schema ORDER BY version", &[])
        .unwrap()
        .iter()
        .map(|row| row.get(0))
        .collect();
    assert_eq!(versions, (1..=SCHEMA_VERSION).collect::<Vec<_>>());

    db.execute(
        "INSERT INTO ask_user_schema (version, name) VALUES ($1, 'from the future')",
        &[&(SCHEMA_VERSION + 1)],
    )
    .unwrap();
    let refused = PgStore::connect(&url, &options(&schema)).unwrap_err();
    assert!(
        matches!(refused, PgError::NewerSchema { found, .. } if found == SCHEMA_VERSION + 1),
        "{refused}"
    );
    assert_eq!(refused.code(), "DB_NEWER_SCHEMA");
    drop_schema(&url, &schema);
}

/// A shared secret is the first process's: another store of the database, asking with its own
/// candidate, reads the one stored, and it never changes.
#[test]
fn a_shared_secret_is_stored_once_and_read_by_every_process() {
    let Some(url) = common::pg_url() else { return };
    let (first, schema) = common::store(&url);
    let second = PgStore::connect(&url, &options(&schema)).unwrap();
    let stored = first.shared_secret("key", &[1; 32]).unwrap();
    assert_eq!(stored, vec![1; 32]);
    assert_eq!(second.shared_secret("key", &[2; 32]).unwrap(), vec![1; 32]);
    assert_eq!(first.shared_secret("key", &[3; 32]).unwrap(), vec![1; 32]);
    assert_eq!(
        second.shared_secret("other", &[4; 40]).unwrap(),
        vec![4; 40],
        "secrets are by name"
    );
    drop_schema(&url, &schema);
}

#[test]
fn the_ledger_follows_the_log_and_the_first_answer_wins() {
    let Some(url) = common::pg_url() else { return };
    let (store, schema) = common::store(&url);
    let mut writer = store.create("s", &NewSession::new("s")).unwrap();
    let turn = pending_turn(0, 1, "ask-1");
    writer.append(&turn[..4]).unwrap();
    let open = store.questions(Some("s")).unwrap();
    assert_eq!(open.len(), 1);
    assert_eq!(open[0].state, QuestionState::Open, "the call is running");
    assert_eq!(open[0].questions[0].id, "scope");
    let call = CallId::from("ask-1");
    // Answered in its window from elsewhere: taken, but not a late answer yet.
    let id = answer(&store, &call, "Tool only").unwrap();
    assert!(store.unadmitted("s").unwrap().is_empty());

    // The window closed unanswered (no surface here read the ledger): a late one now.
    writer.append(&turn[4..]).unwrap();
    drop(writer);
    assert_eq!(
        store.questions(Some("s")).unwrap()[0].state,
        QuestionState::Continued
    );
    let second = answer(&store, &call, "Everything").unwrap_err();
    assert!(matches!(second, AnswerError::ReplyQueued(_)), "{second}");
    // A reply queued is said before the batch is checked (SPEC §4.8 step 3).
    let bad = store
        .record_answer(
            "s",
            &call,
            &AnswerBatch::new([AnswerItem::selected("scope", ["No such option"])]),
            &human(),
            &QuestionLimits::default(),
        )
        .unwrap_err();
    assert!(matches!(bad, AnswerError::ReplyQueued(_)), "{bad}");
    assert_eq!(second.code(), "REPLY_QUEUED");
    let waiting = store.unadmitted("s").unwrap();
    assert_eq!(waiting.len(), 1);
    assert_eq!(waiting[0].answer_id, id);
    assert_eq!(
        waiting[0].batch,
        scope("Tool only"),
        "the first answer is kept"
    );
    assert!(store.questions(Some("s")).unwrap()[0].answered);
    drop_schema(&url, &schema);
}

#[test]
fn bad_answers_are_refused_and_change_nothing() {
    let Some(url) = common::pg_url() else { return };
    let (store, schema) = common::store(&url);
    create_pending(&store, "s", &["ask-1"]);
    let limits = QuestionLimits::default();
    let call = CallId::from("ask-1");
    let cases: Vec<(Result<String, AnswerError>, &str)> = vec![
        (
            store.record_answer("nobody", &call, &scope("Tool only"), &human(), &limits),
            "UNKNOWN_SESSION",
        ),
        (
            answer(&store, &CallId::from("ask-9"), "Tool only"),
            "UNKNOWN_CALL",
        ),
        (answer(&store, &call, "Not an option"), "BAD_ANSWER"),
        (
            store.record_answer(
                "s",
                &call,
                &AnswerBatch::new([AnswerItem::custom("other-question", "x")]),
                &human(),
                &limits,
            ),
            "BAD_ANSWER",
        ),
        (
            // A huge batch: far more items than questions.
            store.record_answer(
                "s",
                &call,
                &AnswerBatch::new((0..10_000).map(|i| AnswerItem::custom(format!("q{i}"), "x"))),
                &human(),
                &limits,
            ),
            "BAD_ANSWER",
        ),
    ];
    for (outcome, code) in cases {
        let error = outcome.unwrap_err();
        assert_eq!(error.code(), code, "{error}");
    }
    let rows: i64 = client(&url, &schema)
        .query_one("SELECT count(*) FROM ask_user_answers", &[])
        .unwrap()
        .get(0);
    assert_eq!(rows, 0, "nothing written");
    assert_eq!(
        store.questions(Some("s")).unwrap()[0].state,
        QuestionState::Continued
    );
    drop_schema(&url, &schema);
}

#[test]
fn admission_settles_each_answer_exactly_once() {
    let Some(url) = common::pg_url() else { return };
    let (store, schema) = common::store(&url);
    create_pending(&store, "s", &["ask-1", "ask-2"]);
    for call in ["ask-1", "ask-2"] {
        answer(&store, &CallId::from(call), "Everything").unwrap();
    }
    let ids: Vec<String> = store
        .unadmitted("s")
        .unwrap()
        .into_iter()
        .map(|a| a.answer_id)
        .collect();
    // A worker that keeps the session open: its second pass finds nothing and writes nothing.
    let runtime = HostRuntime::new(store.clone(), None).unwrap();
    let worker = Worker::new(
        &url,
        store.clone(),
        runtime,
        Duration::from_secs(1),
        Duration::from_mins(1),
    );
    let mut seen = Vec::new();
    worker.pass(&mut |event| seen.push(format!("{event:?}")));
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert!(seen[0].contains("admitted: 2"), "{seen:?}");
    let length = store.read("s", &mut ()).unwrap().scan.end;
    worker.pass(&mut |event| panic!("nothing to do, yet {event:?}"));
    assert_eq!(
        store.read("s", &mut ()).unwrap().scan.end,
        length,
        "a retry after the commit is a no-op"
    );
    drop(worker);
    let runtime = HostRuntime::new(store.clone(), None).unwrap();
    let again = admit_answers(&runtime, &store, "s").unwrap();
    assert_eq!(again.admitted, 0);
    for call in ["ask-1", "ask-2"] {
        assert_eq!(replies_in_log(&store, "s", call), 1);
    }
    // Each reply is the `user/message` whose id is its answer's.
    assert_eq!(reply_ids(&store, "s"), ids.into_iter().collect());
    assert!(store.unadmitted("s").unwrap().is_empty());
    assert!(
        store.questions(Some("s")).unwrap().is_empty(),
        "all settled"
    );
    let state = replayed(&store, "s");
    assert_eq!(state.view().settled.len(), 2);
    assert!(state.view().active.is_empty());
    let after_settle = answer(&store, &CallId::from("ask-1"), "Tool only").unwrap_err();
    assert_eq!(after_settle.code(), "ALREADY_SETTLED");
    drop_schema(&url, &schema);
}

#[test]
fn a_reply_queued_by_an_owner_that_died_is_admitted_once() {
    let Some(url) = common::pg_url() else { return };
    let (store, schema) = common::store(&url);
    create_pending(&store, "s", &["ask-1"]);
    let call = CallId::from("ask-1");
    answer(&store, &call, "Tool only").unwrap();
    // An owner queues the reply in the session's durable inbox, then stops before admitting it.
    {
        let runtime = HostRuntime::new(store.clone(), None).unwrap();
        let (host, _) = runtime
            .open("s", ask_user_host::SessionOptions::named("s"))
            .unwrap();
        let answer = store.unadmitted("s").unwrap().remove(0);
        host.late_answers()
            .queue_as(
                &host.agent(),
                &call,
                answer.batch,
                answer.provenance,
                answer.answer_id,
            )
            .unwrap();
    }
    assert_eq!(store.unadmitted("s").unwrap().len(), 1, "not admitted yet");
    let runtime = HostRuntime::new(store.clone(), None).unwrap();
    let admitted = admit_answers(&runtime, &store, "s").unwrap();
    assert_eq!(admitted.admitted, 1);
    assert_eq!(replies_in_log(&store, "s", "ask-1"), 1);
    assert!(store.unadmitted("s").unwrap().is_empty());
    drop_schema(&url, &schema);
}

/// The JSONL of a session with one pending question, exported from a schema of its own.
fn pending_log(url: &str) -> Vec<u8> {
    let mut log = Vec::new();
    let (source, schema) = common::store(url);
    create_pending(&source, "src", &["ask-1"]);
    source.export("src", &mut log).unwrap();
    drop_schema(url, &schema);
    log
}

#[test]
fn an_import_with_a_line_past_the_limit_is_refused_and_leaves_nothing() {
    let Some(url) = common::pg_url() else { return };
    let (store, schema) = common::store(&url);
    let mut log = pending_log(&url);
    // A record line one byte past what any reader keeps.
    let limit = usize::try_from(session_log::MAX_LINE_LEN).unwrap();
    log.extend(std::iter::repeat_n(b'x', limit + 1));
    log.push(b'\n');
    let refused = store
        .import("big", &mut BufReader::new(log.as_slice()))
        .unwrap_err();
    assert!(
        matches!(refused, ask_user_pg::ExportError::LineTooLong { line, .. } if line > 1),
        "{refused}"
    );
    assert!(!store.exists("big").unwrap(), "nothing imported");
    drop_schema(&url, &schema);
}

/// Migration 0007: a long line is stored compressed with lz4 where the server has it (a cold
/// open of a large log is mostly the server decompressing its lines), and reads back as written.
#[test]
fn long_lines_are_stored_with_lz4_where_the_server_has_it_and_read_back_unchanged() {
    let Some(url) = common::pg_url() else { return };
    let (store, schema) = common::store(&url);
    let mut log = pending_log(&url);
    // A line not a record, long and compressible like a tool's output.
    let output = format!(
        "{{\"output\":\"{}\"}}\n",
        "all tests passed; ".repeat(2_000)
    );
    log.extend_from_slice(output.as_bytes());
    store
        .import("long", &mut BufReader::new(log.as_slice()))
        .unwrap();
    let mut db = client(&url, &schema);
    let lz4 = db
        .batch_execute("SET default_toast_compression = lz4")
        .is_ok();
    let compression: Option<String> = db
        .query_one(
            "SELECT pg_column_compression(line) FROM ask_user_lines
             WHERE name = 'long' ORDER BY byte_end DESC LIMIT 1",
            &[],
        )
        .unwrap()
        .get(0);
    let expected = if lz4 { "lz4" } else { "pglz" };
    assert_eq!(
        compression.as_deref(),
        Some(expected),
        "the long line is compressed"
    );
    let mut exported = Vec::new();
    store.export("long", &mut exported).unwrap();
    assert_eq!(exported, log, "the log reads back byte for byte");
    drop_schema(&url, &schema);
}

#[test]
fn every_corpus_log_exports_byte_identical_after_import() {
    let Some(url) = common::pg_url() else { return };
    let (store, schema) = common::store(&url);
    let logs = ask_user_testkit::logs::corpus_files();
    for (index, path) in logs.iter().enumerate() {
        let bytes = std::fs::read(path).unwrap();
        let name = format!("log-{index}");
        let report = store
            .import(&name, &mut BufReader::new(bytes.as_slice()))
            .unwrap();
        let kept = bytes.len() - report.torn_tail.unwrap_or(0) as usize;
        assert_eq!(report.byte_length as usize, kept, "{}", path.display());
        let mut out = Vec::new();
        store.export(&name, &mut out).unwrap();
        assert!(
            out == bytes[..kept],
            "{} exports as imported",
            path.display()
        );
        let file = session_log::read_log(path).unwrap();
        let pg = store.read(&name, &mut ()).unwrap();
        assert_eq!(pg.scan.end.expected_seq, file.scan.end.expected_seq);
        assert_eq!(
            pg.scan.corrupt_lines.len(),
            file.scan.corrupt_lines.len(),
            "{}",
            path.display()
        );
    }
    let again = store
        .import("log-0", &mut BufReader::new(&b"{}\n"[..]))
        .unwrap_err();
    assert!(
        matches!(again, ask_user_pg::ExportError::Header(_)),
        "{again}"
    );
    let header = std::fs::read(&logs[0]).unwrap();
    let exists = store
        .import("log-0", &mut BufReader::new(header.as_slice()))
        .unwrap_err();
    assert!(
        matches!(exists, ask_user_pg::ExportError::Exists(_)),
        "{exists}"
    );
    drop_schema(&url, &schema);
}

#[test]
fn a_reply_from_elsewhere_settles_the_call_and_refuses_the_ledger_answer() {
    let Some(url) = common::pg_url() else { return };
    let (store, schema) = common::store(&url);
    create_pending(&store, "s", &["ask-1"]);
    let call = CallId::from("ask-1");
    let id = answer(&store, &call, "Tool only").unwrap();
    // A surface of the session's own host queues another reply first (not through the ledger).
    let runtime = HostRuntime::new(store.clone(), None).unwrap();
    {
        let (host, _) = runtime
            .open("s", ask_user_host::SessionOptions::named("s"))
            .unwrap();
        host.late_answers()
            .answer(&host.agent(), &call, scope("Everything"), human())
            .unwrap();
    }
    let admitted = admit_answers(&runtime, &store, "s").unwrap();
    assert_eq!((admitted.admitted, admitted.refused), (0, 1));
    assert_eq!(
        replies_in_log(&store, "s", "ask-1"),
        1,
        "one reply settles the call"
    );
    assert!(
        !reply_ids(&store, "s").contains(&id),
        "the other reply is the one admitted"
    );
    let refused: Option<String> = client(&url, &schema)
        .query_one("SELECT refused FROM ask_user_answers", &[])
        .unwrap()
        .get(0);
    assert_eq!(
        refused.as_deref(),
        Some("another reply settled the question")
    );
    assert!(
        store.unadmitted("s").unwrap().is_empty(),
        "never admitted later"
    );
    drop_schema(&url, &schema);
}

#[test]
fn a_dead_hosts_open_question_answered_is_repaired_and_admitted_by_a_worker() {
    let Some(url) = common::pg_url() else { return };
    let (store, schema) = common::store(&url);
    let mut writer = store.create("s", &NewSession::new("s")).unwrap();
    // The host died while its tool call was waiting: no result.
    writer.append(&pending_turn(0, 1, "ask-1")[..4]).unwrap();
    drop(writer);
    let call = CallId::from("ask-1");
    // Answered while it still shows open: kept until the question is continued.
    answer(&store, &call, "Tool only").unwrap();
    assert_eq!(
        store.sessions_to_admit().unwrap(),
        ["s"],
        "a worker has work there"
    );
    let runtime = HostRuntime::new(store.clone(), None).unwrap();
    let worker = Worker::new(
        &url,
        store.clone(),
        runtime,
        Duration::from_secs(1),
        Duration::ZERO,
    );
    // One pass: resume repair makes the question continued, then its answer is admitted.
    let mut admitted = 0;
    worker.pass(&mut |event| match event {
        WorkerEvent::Admitted { admitted: a, .. } => admitted += a.admitted,
        other => panic!("{other:?}"),
    });
    assert_eq!(admitted, 1);
    assert!(store.questions(Some("s")).unwrap().is_empty(), "settled");
    assert_eq!(replies_in_log(&store, "s", "ask-1"), 1);
    drop_schema(&url, &schema);
}

#[test]
fn admit_answers_repairs_a_dead_hosts_open_question_and_admits_its_answer() {
    let Some(url) = common::pg_url() else { return };
    let (store, schema) = common::store(&url);
    let mut writer = store.create("s", &NewSession::new("s")).unwrap();
    writer.append(&pending_turn(0, 1, "ask-1")[..4]).unwrap();
    drop(writer);
    answer(&store, &CallId::from("ask-1"), "Tool only").unwrap();
    assert!(
        store.unadmitted("s").unwrap().is_empty(),
        "not a late one yet"
    );
    let runtime = HostRuntime::new(store.clone(), None).unwrap();
    let admitted = admit_answers(&runtime, &store, "s").unwrap();
    assert_eq!((admitted.admitted, admitted.busy), (1, false));
    assert_eq!(replies_in_log(&store, "s", "ask-1"), 1);
    drop_schema(&url, &schema);
}

#[test]
fn a_call_that_ends_without_a_question_is_dropped_from_the_ledger() {
    let Some(url) = common::pg_url() else { return };
    let (store, schema) = common::store(&url);
    let mut writer = store.create("s", &NewSession::new("s")).unwrap();
    let mut turn = pending_turn(0, 1, "ask-1");
    // The call's result is an error, not `pending`: nothing waits for an answer.
    turn[4] = ask_user_testkit::logs::ev(
        "tool/result",
        4,
        serde_json::json!({"turn":1,"step":1,"message":{"id":"m-1","role":"tool","toolCallId":"ask-1","content":[{"type":"text","text":"{\"error\":{\"code\":\"ASK_ABORTED\"}}"}],"isError":true}}),
    );
    writer.append(&turn[..4]).unwrap();
    assert_eq!(store.questions(Some("s")).unwrap().len(), 1);
    writer.append(&turn[4..]).unwrap();
    drop(writer);
    assert!(
        store.questions(Some("s")).unwrap().is_empty(),
        "not listed any more"
    );
    let state: String = client(&url, &schema)
        .query_one("SELECT state FROM ask_user_questions", &[])
        .unwrap()
        .get(0);
    assert!(
        replayed(&store, "s").view().active.is_empty(),
        "the projection agrees"
    );
    assert_eq!(state, "dropped");
    let refused = answer(&store, &CallId::from("ask-1"), "Tool only").unwrap_err();
    assert_eq!(refused.code(), "NOT_CONTINUED");
    drop_schema(&url, &schema);
}
