//! A real `PostgreSQL` server for tests: `ASK_USER_PG_URL` names it (`.ci/run` starts a throwaway
//! cluster and sets it, with `ASK_USER_PG_CTL` to restart it). Without it a test says so and
//! returns, except under `CI=true`, where it fails: these tests never pass silently in CI.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// The server's connection string, or `None` (after saying why) when there is none outside CI.
///
/// # Panics
///
/// Under `CI=true` without `ASK_USER_PG_URL`.
pub fn pg_url() -> Option<String> {
    if let Ok(url) = std::env::var("ASK_USER_PG_URL") {
        return Some(url);
    }
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "ASK_USER_PG_URL is not set: the PostgreSQL tests need a server (.ci/run starts one)"
    );
    eprintln!("skipped: ASK_USER_PG_URL is not set (no PostgreSQL server)");
    None
}

/// A schema name no other test of any process uses.
pub fn fresh_schema() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!(
        "t_{}_{}_{}",
        std::process::id(),
        nanos % 1_000_000_000_000,
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// Drops `schema` and everything in it, if the server is there (a test's cleanup: never fails).
pub fn drop_schema(url: &str, schema: &str) {
    if let Ok(mut client) = postgres::Client::connect(url, postgres::NoTls) {
        let quoted = schema.replace('"', "\"\"");
        let _ = client.batch_execute(&format!("DROP SCHEMA IF EXISTS \"{quoted}\" CASCADE"));
    }
}
