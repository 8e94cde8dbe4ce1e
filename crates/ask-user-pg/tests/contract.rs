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

    fn available(&self) -> bool {
        self.0.is_some()
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
                "SELECT byte_length,
                        (SELECT coalesce(max(line_no), 0) FROM ask_user_lines WHERE name = $1)
                 FROM ask_user_sessions WHERE name = $1",
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
            "UPDATE ask_user_sessions SET byte_length = $2 WHERE name = $1",
            &[&name, &end],
        )
        .unwrap();
        tx.commit().unwrap();
        true
    }
}

ask_user_testkit::store_contract_tests!(Pg::new());
