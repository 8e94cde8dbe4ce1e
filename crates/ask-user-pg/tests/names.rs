//! Names checked before use (a schema `PostgreSQL` would cut or cannot take, a session name no
//! command could name) and database errors that say what the server said, against a real
//! `PostgreSQL` server (`ASK_USER_PG_URL`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::BufReader;

use ask_user_pg::{PgOptions, PgStore};
use session_log::{NewSession, SessionStore};

#[test]
fn schema_names_postgresql_would_cut_or_cannot_take_are_refused_before_use() {
    let Some(url) = common::pg_url() else { return };
    // Two names that PostgreSQL would both cut to the same 63 bytes, an empty one, one of 64
    // bytes in 32 characters.
    let long = format!("t_{}_{}", std::process::id(), "x".repeat(60));
    for schema in [
        String::new(),
        format!("{long}a"),
        format!("{long}b"),
        "é".repeat(32),
    ] {
        let error = PgStore::connect(&url, &PgOptions::in_schema(&schema))
            .err()
            .unwrap_or_else(|| panic!("{schema:?} was taken"));
        assert_eq!(error.code(), "BAD_USAGE", "{schema:?}: {error}");
        assert!(error.to_string().contains("schema"), "{error}");
    }
    // 63 bytes is kept as it is.
    let schema = &long[..63];
    let store = PgStore::connect(&url, &PgOptions::in_schema(schema)).unwrap();
    common::create_pending(&store, "s", &["ask-1"]);
    let found: String = common::client(&url, schema)
        .query_one(
            "SELECT nspname::text FROM pg_namespace WHERE nspname = $1",
            &[&schema],
        )
        .unwrap()
        .get(0);
    assert_eq!(found, schema);
    common::drop_schema(&url, schema);
}

#[test]
fn database_errors_name_the_servers_message_and_code_never_the_password() {
    let Some(url) = common::pg_url() else { return };
    // The server's URL in either form the store takes: keywords, or a `postgres://` URL (whose
    // query carries the same keywords).
    let conninfo = if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        let join = if url.contains('?') { '&' } else { '?' };
        format!("{url}{join}dbname=no_such_database&password=sekrit")
    } else {
        format!("{url} dbname=no_such_database password=sekrit")
    };
    let error = PgStore::connect(&conninfo, &PgOptions::in_schema(&common::fresh_schema()))
        .expect_err("no such database");
    let message = error.to_string();
    assert!(
        message.contains("database \"no_such_database\" does not exist")
            && message.contains("SQLSTATE 3D000"),
        "{message}"
    );
    assert!(
        !message.contains("sekrit") && !message.contains("password"),
        "{message}"
    );

    // A statement's error: a table gone behind the store's back.
    let (store, schema) = common::store(&url);
    common::client(&url, &schema)
        .batch_execute("DROP TABLE ask_user_claims; DROP TABLE ask_user_answers CASCADE")
        .unwrap();
    let error = store.questions(None).unwrap_err();
    let message = error.to_string();
    assert!(
        message.contains("relation \"ask_user_answers\" does not exist")
            && message.contains("SQLSTATE 42P01"),
        "{message}"
    );
    assert!(!message.contains("db error"), "{message}");
    common::drop_schema(&url, &schema);
}

#[test]
fn a_session_name_no_command_could_name_is_refused() {
    let Some(url) = common::pg_url() else { return };
    let (store, schema) = common::store(&url);
    let log = {
        let source = common::store(&url);
        common::create_pending(&source.0, "source", &["ask-1"]);
        let mut bytes = Vec::new();
        source.0.export("source", &mut bytes).unwrap();
        common::drop_schema(&url, &source.1);
        bytes
    };
    for name in [String::new(), "a\0b".into(), "n".repeat(256)] {
        let error = store
            .import(&name, &mut BufReader::new(log.as_slice()))
            .expect_err("refused");
        assert_eq!(error.code(), "BAD_USAGE", "{name:?}: {error}");
        assert!(error.to_string().contains("session name"), "{error}");
        let error = store
            .create(&name, &NewSession::new("x"))
            .err()
            .expect("refused");
        assert!(error.to_string().contains("session name"), "{error}");
    }
    assert!(store.log_names().unwrap().is_empty(), "nothing was stored");
    // Such a name finds nothing (the server is not asked what it cannot hold).
    assert!(!store.exists("a\0b").unwrap());
    assert!(store.questions(Some("a\0b")).unwrap().is_empty());
    let unknown = store
        .record_answer(
            "a\0b",
            &user_questions::CallId::from("ask-1"),
            &user_questions::AnswerBatch::default(),
            &user_questions::Provenance::human("test"),
            &user_questions::QuestionLimits::default(),
        )
        .unwrap_err();
    assert_eq!(unknown.code(), "UNKNOWN_SESSION", "{unknown}");
    // The longest name a file can have is taken.
    let longest = "n".repeat(255);
    store
        .import(&longest, &mut BufReader::new(log.as_slice()))
        .unwrap();
    assert_eq!(store.questions(Some(&longest)).unwrap().len(), 1);
    common::drop_schema(&url, &schema);
}
