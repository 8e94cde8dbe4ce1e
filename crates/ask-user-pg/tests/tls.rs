//! TLS to `PostgreSQL`, as libpq's `sslmode` and `sslrootcert` ask, against a server that takes TCP
//! connections over TLS only (`ASK_USER_PG_TLS_URL`, started by `.ci/pg-tls` with a CA of its own,
//! `ASK_USER_PG_CA`; its certificate names `localhost` only): a store that connects at all spoke
//! TLS. `require` and `prefer` connect; `verify-full` connects with the right CA and host name and
//! is refused, with a clear error, with another CA or a host the certificate does not name.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::BufReader;

use ask_user_pg::{PgError, PgOptions, PgStore, admit_answers};
use ask_user_testkit::pg::{TlsServer, fresh_schema, tls_server};
use session_log::SessionStore;
use user_questions::{AnswerBatch, AnswerItem, CallId, Provenance, QuestionLimits};

/// A CA that signed nothing of the test server's.
const OTHER_CA: &str = "-----BEGIN CERTIFICATE-----
MIIBozCCAUmgAwIBAgIUE2jT2XDszYvYqvtq0+CommfvYigwCgYIKoZIzj0EAwIw
HjEcMBoGA1UEAwwTbm90IHRoZSBzZXJ2ZXIncyBDQTAgFw0yNjEyMDIwMzU1MjJa
GA8yMTI2MTEwODAzNTUyMlowHjEcMBoGA1UEAwwTbm90IHRoZSBzZXJ2ZXIncyBD
QTBZMBMGByqGSM49AgEGCCqGSM49AwEHA0IABGiSaD43TknPUhrY961gwmBarv5e
vO1nsq4yThBs3cLpqtiLovzASF7MF0f1mXnhEqwNtx6r9lWwaXduLisdotqjYzBh
MB0GA1UdDgQWBBSUORe1kFUT2Z62tt1FcV1L0M9MhDAfBgNVHSMEGDAWgBSUORe1
kFUT2Z62tt1FcV1L0M9MhDAPBgNVHRMBAf8EBTADAQH/MA4GA1UdDwEB/wQEAwIB
BjAKBggqhkjOPQQDAgNIADBFAiEA39I1fOeZ2UAyIBqACACNw7cRfzjyrrTcwOMJ
mlljWHoCIBlPxW+tYuXkDPAvbc2dVeOv++5jvngE3BqWrje8JNF6
-----END CERTIFICATE-----
";

fn connect(conninfo: &str) -> Result<PgStore, PgError> {
    PgStore::connect(conninfo, &PgOptions::in_schema(&fresh_schema()))
}

/// The server's connection string with `settings` after it.
fn with(server: &TlsServer, settings: &str) -> String {
    format!("{} {settings}", server.url)
}

/// The connection string with the host `127.0.0.1`, which the certificate does not name.
fn by_address(server: &TlsServer, settings: &str) -> String {
    let url = server
        .url
        .replace("host=localhost hostaddr=127.0.0.1", "host=127.0.0.1");
    assert_ne!(url, server.url, "the test server's URL names localhost");
    format!("{url} {settings}")
}

fn refused(conninfo: &str) -> String {
    let error = connect(conninfo).expect_err("refused");
    assert_eq!(error.code(), "DB_UNAVAILABLE", "{error}");
    error.to_string()
}

#[test]
fn require_and_prefer_connect_over_tls_and_plain_is_refused_by_the_server() {
    let Some(server) = tls_server() else { return };
    connect(&with(&server, "sslmode=require")).unwrap();
    // libpq's default, `prefer`, takes the TLS the server offers.
    connect(&server.url).unwrap();
    connect(&with(&server, "sslmode=prefer")).unwrap();
    // A plain connection: the server's own words and code, never the connection string.
    let message = refused(&with(&server, "sslmode=disable password=sekrit"));
    assert!(
        message.contains("no pg_hba.conf entry") && message.contains("SQLSTATE 28000"),
        "{message}"
    );
    assert!(
        !message.contains("sekrit") && !message.contains("hostaddr"),
        "{message}"
    );
}

#[test]
fn verify_full_with_the_right_ca_and_host_connects_and_the_store_works() {
    let Some(server) = tls_server() else { return };
    let ca = server.ca.display().to_string();
    let conninfo = with(&server, &format!("sslmode=verify-full sslrootcert='{ca}'"));
    let schema = fresh_schema();
    let store = PgStore::connect(&conninfo, &PgOptions::in_schema(&schema)).unwrap();
    // Writing, answering, admitting and importing: every connection of the store (its own, the
    // lease renewals', the import's) goes over TLS.
    common::create_pending(&store, "s", &["ask-1"]);
    let answer = AnswerBatch::new([AnswerItem::selected("scope", ["Tool only"])]);
    store
        .record_answer(
            "s",
            &CallId::from("ask-1"),
            &answer,
            &Provenance::human("tls-test"),
            &QuestionLimits::default(),
        )
        .unwrap();
    let runtime = ask_user_host::HostRuntime::new(store.clone(), None).unwrap();
    assert_eq!(admit_answers(&runtime, &store, "s").unwrap().admitted, 1);
    let mut log = Vec::new();
    store.export("s", &mut log).unwrap();
    store
        .import("copy", &mut BufReader::new(log.as_slice()))
        .unwrap();
    assert!(store.exists("copy").unwrap());

    // The URL form carries the same settings.
    let port = server
        .url
        .split_whitespace()
        .find_map(|kv| kv.strip_prefix("port="))
        .unwrap();
    let url = format!(
        "postgres://postgres@localhost:{port}/postgres?hostaddr=127.0.0.1&sslmode=verify-full&sslrootcert={}",
        ca.replace('%', "%25").replace('&', "%26")
    );
    connect(&url).unwrap();
    // verify-ca checks the chain, not the host name.
    connect(&by_address(
        &server,
        &format!("sslmode=verify-ca sslrootcert='{ca}'"),
    ))
    .unwrap();
    // require with a root file checks the chain too (libpq's meaning).
    connect(&with(
        &server,
        &format!("sslmode=require sslrootcert='{ca}'"),
    ))
    .unwrap();
}

#[test]
fn verify_full_with_another_ca_or_a_host_the_certificate_does_not_name_is_refused() {
    let Some(server) = tls_server() else { return };
    let dir = tempfile::tempdir().unwrap();
    let other = dir.path().join("other-ca.crt");
    std::fs::write(&other, OTHER_CA).unwrap();
    let other = other.display().to_string();
    let ca = server.ca.display().to_string();

    let message = refused(&with(
        &server,
        &format!("sslmode=verify-full sslrootcert='{other}'"),
    ));
    assert!(
        message.contains("TLS") && message.contains("not signed by a CA of sslrootcert"),
        "{message}"
    );
    let message = refused(&with(
        &server,
        &format!("sslmode=verify-ca sslrootcert='{other}'"),
    ));
    assert!(
        message.contains("not signed by a CA of sslrootcert"),
        "{message}"
    );
    let message = refused(&with(
        &server,
        &format!("sslmode=require sslrootcert='{other}'"),
    ));
    assert!(
        message.contains("not signed by a CA of sslrootcert"),
        "{message}"
    );

    let message = refused(&by_address(
        &server,
        &format!("sslmode=verify-full sslrootcert='{ca}'"),
    ));
    assert!(
        message.contains("does not name the host") && message.contains("127.0.0.1"),
        "{message}"
    );

    // Settings that cannot work are told before anything is sent.
    for (settings, says) in [
        (
            "sslmode=verify-full sslrootcert=/nonexistent/ca.crt",
            "/nonexistent/ca.crt",
        ),
        ("sslmode=verify-fully", "verify-fully"),
    ] {
        let error = connect(&with(&server, settings)).expect_err(settings);
        assert_eq!(error.code(), "DB_SETTINGS", "{error}");
        assert!(error.to_string().contains(says), "{error}");
    }
    let empty = dir.path().join("empty.crt");
    std::fs::write(&empty, "not a certificate\n").unwrap();
    let error = connect(&with(
        &server,
        &format!("sslmode=verify-full sslrootcert='{}'", empty.display()),
    ))
    .expect_err("no certificate");
    assert!(error.to_string().contains("no PEM certificate"), "{error}");
}
