//! The `SessionStore` contract suite (`ask_user_testkit::store_contract`), unchanged, against
//! `PgStore` on a real `PostgreSQL` server (`ASK_USER_PG_URL`).
// Test code stops at its first broken expectation; sizes here are small.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::cast_possible_truncation,
    clippy::cast_possible_wrap
)]

mod common;

use std::sync::Arc;

use ask_user_testkit::store_contract::StoreHarness;
use common::Schemas;
use session_log::SessionStore;

/// A store in a fresh schema per check; raw lines are planted as rows with a plain client (a
/// torn tail cannot be: an append is a transaction, so `append_raw` refuses bytes without a line
/// end and those checks only check what they can).
struct Pg(Option<Schemas>);

impl Pg {
    fn new() -> Self {
        Self(common::pg_url().map(|url| Schemas {
            url,
            made: std::sync::Mutex::new(Vec::new()),
        }))
    }
}

impl StoreHarness for Pg {
    fn store(&self) -> Arc<dyn SessionStore> {
        let schemas = self.0.as_ref().expect("a server");
        let (store, schema) = common::store(&schemas.url);
        let store = Arc::new(store);
        schemas
            .made
            .lock()
            .unwrap()
            .push((Arc::clone(&store), schema));
        store
    }

    fn append_raw(&self, store: &dyn SessionStore, name: &str, bytes: &[u8]) -> bool {
        if !bytes.ends_with(b"\n") {
            return false;
        }
        let schemas = self.0.as_ref().expect("a server");
        let made = schemas.made.lock().unwrap();
        let target = std::ptr::from_ref(store).cast::<()>();
        let schema = made
            .iter()
            .find(|(s, _)| std::ptr::eq(Arc::as_ptr(s).cast::<()>(), target))
            .map(|(_, schema)| schema.clone())
            .expect("a store of this harness");
        let mut client = common::client(&schemas.url, &schema);
        let mut tx = client.transaction().unwrap();
        let row = tx
            .query_one(
                "SELECT byte_length, line_count FROM ask_user_sessions WHERE name = $1",
                &[&name],
            )
            .unwrap();
        let (mut end, mut count): (i64, i64) = (row.get(0), row.get(1));
        for line in bytes.split_inclusive(|b| *b == b'\n') {
            end += line.len() as i64;
            count += 1;
            tx.execute(
                "INSERT INTO ask_user_lines (name, line_no, byte_end, seq, line)
                 VALUES ($1, $2, $3, NULL, $4)",
                &[&name, &count, &end, &line],
            )
            .unwrap();
        }
        tx.execute(
            "UPDATE ask_user_sessions SET byte_length = $2, line_count = $3 WHERE name = $1",
            &[&name, &end, &count],
        )
        .unwrap();
        tx.commit().unwrap();
        true
    }
}

/// The checks of `store_contract_tests!`, each run only when a server is there (each check returns at once otherwise, after
/// `pg_url` has said why, or failed under `CI=true`).
macro_rules! pg_contract {
    ($($check:ident),* $(,)?) => {
        $(
            #[test]
            fn $check() {
                let harness = Pg::new();
                if harness.0.is_some() {
                    ask_user_testkit::store_contract::$check(&harness);
                }
            }
        )*
    };
}

pg_contract!(
    create_writes_the_header_and_refuses_a_second_create,
    appended_records_read_back_as_replayed,
    a_refused_batch_leaves_nothing,
    reopening_continues_the_seq_and_tracks_what_is_unfinished,
    resume_repair_appends_once,
    one_writer_at_a_time,
    an_open_that_fails_gives_ownership_back,
    a_torn_tail_is_reported_then_cut_on_open,
    corrupt_lines_are_skipped_and_kept,
    scans_resume_from_a_position,
    checkpoint_documents_are_replaced_whole,
    anchors_resolve_and_detect_mismatches,
);
