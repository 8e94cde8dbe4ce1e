//! Stores on the tests' `PostgreSQL` server (`ask_user_testkit::pg`), and sessions to answer.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use ask_user_pg::{PgOptions, PgStore};

#[allow(unused_imports)]
pub use ask_user_testkit::logs::{create_pending, pending_turn};

#[allow(unused_imports)]
pub use ask_user_testkit::pg::{drop_schema, fresh_schema, pg_url};

/// Options for a store in `schema`.
pub fn options(schema: &str) -> PgOptions {
    PgOptions::in_schema(schema)
}

/// A store in a fresh schema.
pub fn store(url: &str) -> (PgStore, String) {
    let schema = fresh_schema();
    (PgStore::connect(url, &options(&schema)).unwrap(), schema)
}

/// A plain client with `search_path` set to `schema`, to look at or change rows behind the
/// store's back.
pub fn client(url: &str, schema: &str) -> postgres::Client {
    let mut client = postgres::Client::connect(url, postgres::NoTls).unwrap();
    client
        .batch_execute(&format!("SET search_path TO \"{schema}\""))
        .unwrap();
    client
}

/// Keeps stores alive with their schemas, dropping the schemas at the end.
pub struct Schemas {
    pub url: String,
    pub made: std::sync::Mutex<Vec<(Arc<PgStore>, String)>>,
}

impl Drop for Schemas {
    fn drop(&mut self) {
        for (_, schema) in self.made.lock().unwrap().drain(..) {
            drop_schema(&self.url, &schema);
        }
    }
}
