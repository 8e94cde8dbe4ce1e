//! A real `PostgreSQL` server for tests: `ASK_USER_PG_URL` names it (`.ci/run` starts a throwaway
//! cluster and sets it, with `ASK_USER_PG_CTL` to restart it), and `ASK_USER_PG_TLS_URL` a second
//! one that speaks only TLS, its certificate signed by the CA in `ASK_USER_PG_CA` (`.ci/pg-tls`
//! starts it). Without them a test says so and returns, except under `CI=true`, where it fails:
//! these tests never pass silently in CI.

use std::path::PathBuf;
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

/// A server that takes TCP connections over TLS only (`.ci/pg-tls`), whose certificate names
/// the host `localhost` only.
#[derive(Clone, Debug)]
pub struct TlsServer {
    /// Its connection string without TLS settings: `host=localhost hostaddr=127.0.0.1 port=…`.
    pub url: String,
    /// The certificate of the CA that signed the server's.
    pub ca: PathBuf,
}

/// The TLS server, or `None` (after saying why) when there is none outside CI.
///
/// # Panics
///
/// Under `CI=true` without `ASK_USER_PG_TLS_URL` and `ASK_USER_PG_CA`.
pub fn tls_server() -> Option<TlsServer> {
    if let (Ok(url), Ok(ca)) = (
        std::env::var("ASK_USER_PG_TLS_URL"),
        std::env::var("ASK_USER_PG_CA"),
    ) {
        return Some(TlsServer {
            url,
            ca: PathBuf::from(ca),
        });
    }
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "ASK_USER_PG_TLS_URL and ASK_USER_PG_CA are not set: the TLS tests need a server that speaks TLS (.ci/run starts one with .ci/pg-tls)"
    );
    eprintln!("skipped: ASK_USER_PG_TLS_URL is not set (no PostgreSQL server with TLS)");
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
