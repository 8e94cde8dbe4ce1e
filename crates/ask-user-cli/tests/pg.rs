//! The `--pg` commands as whole processes against a real `PostgreSQL` server (`ASK_USER_PG_URL`):
//! `pending`, `answer` (first answer wins, bad input refused with its exit status), `worker`
//! admitting, `answer --admit`, and `export`/`import` byte for byte.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::{Command, Output};

use ask_user_pg::{PgOptions, PgStore};
use ask_user_testkit::pg::{fresh_schema, pg_url};
use session_log::SessionStore;

const BIN: &str = env!("CARGO_BIN_EXE_ask-user");

fn run(args: &[&str]) -> Output {
    Command::new(BIN).args(args).output().unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn sessions_on_postgres_are_answered_once_from_the_command_line() {
    let Some(url) = pg_url() else { return };
    let schema = fresh_schema();
    let store = PgStore::connect(&url, &PgOptions::in_schema(&schema)).unwrap();
    ask_user_testkit::logs::create_pending(&store, "s1", &["ask-1", "ask-2"]);
    let pg = ["--pg", url.as_str(), "--pg-schema", schema.as_str()];
    let with = |rest: &[&str]| -> Output {
        let mut args: Vec<&str> = vec![rest[0]];
        args.extend_from_slice(&pg);
        args.extend_from_slice(&rest[1..]);
        run(&args)
    };

    let listed = with(&["pending"]);
    assert!(listed.status.success(), "{}", text(&listed.stderr));
    let listing = text(&listed.stdout);
    assert!(
        listing.contains("s1") && listing.contains("ask-1"),
        "{listing}"
    );
    assert!(listing.contains("continued"), "{listing}");
    assert!(
        listing.contains("pick one: Tool only | Everything"),
        "{listing}"
    );

    // First answer wins; the second front end is told so (exit 5), and bad input is refused.
    let first = with(&["answer", "s1", "ask-1", "--pick", "scope=Tool only"]);
    assert!(first.status.success(), "{}", text(&first.stderr));
    let second = with(&["answer", "s1", "ask-1", "--pick", "scope=Everything"]);
    assert_eq!(second.status.code(), Some(5), "{}", text(&second.stderr));
    assert!(text(&second.stderr).contains("REPLY_QUEUED"));
    let cases: [(&[&str], i32); 3] = [
        (&["answer", "s1", "ask-2", "--pick", "scope=Nope"], 4),
        (
            &["answer", "nobody", "ask-1", "--pick", "scope=Tool only"],
            6,
        ),
        (&["answer", "s1", "ask-9", "--custom", "scope=x"], 3),
    ];
    for (args, code) in cases {
        let refused = with(args);
        assert_eq!(
            refused.status.code(),
            Some(code),
            "{args:?}: {}",
            text(&refused.stderr)
        );
    }
    let answered = with(&["pending", "s1"]);
    assert!(text(&answered.stdout).contains("answered (admission waits)"));

    // A worker admits it.
    let worked = with(&["worker", "--once"]);
    assert!(worked.status.success(), "{}", text(&worked.stderr));
    assert_eq!(text(&worked.stdout), "session s1: 1 reply admitted\n");
    let again = with(&["worker", "--once"]);
    assert!(again.status.success(), "{}", text(&again.stderr));
    assert_eq!(text(&again.stdout), "", "nothing left to admit");
    let view: serde_json::Value =
        serde_json::from_slice(&with(&["pending", "s1", "--json"]).stdout).unwrap();
    assert_eq!(view["settled"][0]["callId"], "ask-1");
    assert_eq!(view["settled"][0]["answers"][0]["selected"][0], "Tool only");
    assert_eq!(view["active"].as_array().unwrap().len(), 1);

    // `--admit`: the front end admits it itself when nobody holds the session.
    let admitted = with(&["answer", "s1", "ask-2", "--custom", "scope=both", "--admit"]);
    assert!(admitted.status.success(), "{}", text(&admitted.stderr));
    assert!(text(&admitted.stderr).contains("1 reply admitted; the question is settled"));
    let listed = with(&["pending"]);
    // The same words as a log's empty listing, and no count of nothing after them.
    assert_eq!(text(&listed.stdout), "no open or continued questions\n");

    // Export, import under another name, export again: the same bytes.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("s1.jsonl");
    let exported = with(&["export", "s1", "-o", file.to_str().unwrap()]);
    assert!(exported.status.success(), "{}", text(&exported.stderr));
    let imported = with(&["import", file.to_str().unwrap(), "--name", "copy"]);
    assert!(imported.status.success(), "{}", text(&imported.stderr));
    let copy = with(&["export", "copy"]);
    assert_eq!(copy.stdout, std::fs::read(&file).unwrap());
    let twice = with(&["import", file.to_str().unwrap(), "--name", "copy"]);
    assert_eq!(twice.status.code(), Some(6));
    assert!(text(&twice.stderr).contains("LOG_EXISTS"));
    // The file reads as a session log with both questions settled.
    let local = run(&["pending", file.to_str().unwrap(), "--json"]);
    let view: serde_json::Value = serde_json::from_slice(&local.stdout).unwrap();
    assert_eq!(view["settled"].as_array().unwrap().len(), 2);
    assert!(store.exists("copy").unwrap());
    ask_user_testkit::pg::drop_schema(&url, &schema);
}

#[test]
fn hostile_session_names_never_reach_the_terminal_raw() {
    let Some(url) = pg_url() else { return };
    let schema = fresh_schema();
    let store = PgStore::connect(&url, &PgOptions::in_schema(&schema)).unwrap();
    let evil = "s\u{1b}]0;PWNED\u{7}\u{202e}1";
    ask_user_testkit::logs::create_pending(&store, evil, &["ask-1"]);
    let pg = ["--pg", url.as_str(), "--pg-schema", schema.as_str()];
    let table = run(&[&["pending"][..], &pg].concat());
    let json = run(&[&["pending"][..], &pg, &["--json"]].concat());
    let unknown = run(&[
        &["answer"][..],
        &pg,
        &["x\u{1b}[2J", "ask-1", "--pick", "scope=Everything"],
    ]
    .concat());
    for (what, output) in [("table", &table), ("json", &json), ("error", &unknown)] {
        let all = [text(&output.stdout), text(&output.stderr)].concat();
        assert!(
            !all.contains('\u{1b}') && !all.contains('\u{7}') && !all.contains('\u{202e}'),
            "{what}: {all:?}"
        );
        assert!(
            all.contains("\\u{1b}") || all.contains("\\u001b"),
            "{what}: shown as an escape: {all:?}"
        );
    }
    // The JSON still reads back as the same name.
    let listed: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(listed["questions"][0]["session"], evil);
    assert!(!unknown.status.success());
    ask_user_testkit::pg::drop_schema(&url, &schema);
}
