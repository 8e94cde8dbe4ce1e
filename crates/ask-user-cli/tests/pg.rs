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
    // Every question and answer of the session: its owner's alone, whatever the umask.
    let mode =
        std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&file).unwrap().permissions());
    assert_eq!(mode & 0o777, 0o600);
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

/// The lines of `bytes`, each with its line end.
fn lines(bytes: &[u8]) -> Vec<&[u8]> {
    bytes.split_inclusive(|b| *b == b'\n').collect()
}

/// The `data` of the last `user/message` line of `bytes`.
fn last_reply(bytes: &[u8]) -> serde_json::Value {
    lines(bytes)
        .into_iter()
        .rev()
        .map(|line| serde_json::from_slice::<serde_json::Value>(line).unwrap())
        .find(|line| line["type"] == "user/message")
        .expect("a reply")["data"]
        .clone()
}

/// A session log the file store takes, `s.jsonl` in `dir`, with U+0000 in its header, its
/// timed question and a label, the question continued.
fn log_with_nul(dir: &std::path::Path) -> std::path::PathBuf {
    use ask_user_testkit::logs::{call, ev, result, session, timed_request_header};
    use serde_json::json;
    let files = session_log::JsonlStore::new(dir);
    let mut header = session("s");
    header.cwd = Some("/tmp/a\0b".into());
    let arguments = json!({"questions": [{"id": "scope", "question": "Which\0 scope?",
        "options": [{"label": "Tool\0only"}, {"label": "Every\u{1}thing"}]}]})
    .to_string();
    let mut writer = files.create("s.jsonl", &header).unwrap();
    writer
        .append(&[
            ev("turn/start", 0, json!({"turn": 1})),
            ev("step/start", 1, json!({"turn": 1, "step": 1})),
            ev("request/header", 2, timed_request_header()),
            ev(
                "tool/call",
                3,
                call(1, 1, "ask-1", "ask_user_question", &arguments),
            ),
            ev(
                "tool/result",
                4,
                result(1, 1, "ask-1", r#"{"pending":true,"callId":"ask-1"}"#),
            ),
            ev("step/end", 5, json!({"turn": 1, "step": 1})),
            ev(
                "turn/end",
                6,
                json!({"turn": 1, "reason": {"kind": "completed"}}),
            ),
        ])
        .unwrap();
    drop(writer);
    dir.join("s.jsonl")
}

#[test]
fn nul_in_a_question_a_label_an_answer_and_a_header_goes_through_every_command() {
    let Some(url) = pg_url() else { return };
    let schema = fresh_schema();
    let dir = tempfile::tempdir().unwrap();
    let log = log_with_nul(dir.path());
    let asked = std::fs::read(&log).unwrap();
    let local = dir.path().join("local.jsonl");
    std::fs::write(&local, &asked).unwrap();
    let answers = dir.path().join("answers.json");
    std::fs::write(
        &answers,
        r#"{"answers":[{"id":"scope","selected":["Tool\u0000only"],"custom":"free\u0000text"}]}"#,
    )
    .unwrap();
    let pg = ["--pg", url.as_str(), "--pg-schema", schema.as_str()];
    let with = |command: &str, rest: &[&str]| -> Output {
        let mut args = vec![command];
        args.extend_from_slice(&pg);
        args.extend_from_slice(rest);
        run(&args)
    };

    let imported = with("import", &[log.to_str().unwrap(), "--name", "s"]);
    assert!(imported.status.success(), "{}", text(&imported.stderr));
    assert!(
        !text(&imported.stderr).contains("warning"),
        "{}",
        text(&imported.stderr)
    );
    let listed = with("pending", &["s", "--json"]);
    assert!(listed.status.success(), "{}", text(&listed.stderr));
    let view: serde_json::Value = serde_json::from_slice(&listed.stdout).unwrap();
    let question = &view["active"][0]["questions"][0];
    assert_eq!(question["question"], "Which\0 scope?", "{view}");
    assert_eq!(question["options"][0]["label"], "Tool\0only");

    let answered = with(
        "answer",
        &[
            "s",
            "ask-1",
            "--answers",
            answers.to_str().unwrap(),
            "--admit",
        ],
    );
    assert!(answered.status.success(), "{}", text(&answered.stderr));
    assert!(
        text(&answered.stderr).contains("1 reply admitted"),
        "{}",
        text(&answered.stderr)
    );
    let exported = with("export", &["s"]);
    assert!(exported.status.success(), "{}", text(&exported.stderr));

    // The file store, answered the same way, holds the same log.
    let answered = run(&[
        "answer",
        local.to_str().unwrap(),
        "ask-1",
        "--answers",
        answers.to_str().unwrap(),
    ]);
    assert!(answered.status.success(), "{}", text(&answered.stderr));
    let file = std::fs::read(&local).unwrap();
    assert!(
        exported.stdout.starts_with(&asked),
        "the imported lines, byte for byte"
    );
    let (db_reply, file_reply) = (last_reply(&exported.stdout), last_reply(&file));
    assert_eq!(db_reply["content"], file_reply["content"]);
    assert_eq!(db_reply["source"], file_reply["source"]);
    assert!(
        db_reply["content"].to_string().contains(r"free\\u0000text"),
        "{db_reply}"
    );
    ask_user_testkit::pg::drop_schema(&url, &schema);
}

#[test]
fn mcp_pg_takes_a_question_with_nul() {
    use serde_json::json;
    use std::io::{BufRead, BufReader, Write};
    use std::process::Stdio;
    let Some(url) = pg_url() else { return };
    let schema = fresh_schema();
    let state = tempfile::tempdir().unwrap();
    let mut server = Command::new(BIN)
        .args([
            "mcp",
            "--mode",
            "timed",
            "--pg",
            &url,
            "--pg-schema",
            &schema,
            "--state-dir",
        ])
        .arg(state.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut stdin = server.stdin.take().unwrap();
    let (tx, lines) = std::sync::mpsc::channel::<String>();
    let stdout = server.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let mut response = |id: u64, method: &str, params: serde_json::Value| -> serde_json::Value {
        let request = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        writeln!(stdin, "{request}").unwrap();
        if method == "initialize" {
            writeln!(
                stdin,
                r#"{{"jsonrpc":"2.0","method":"notifications/initialized"}}"#
            )
            .unwrap();
        }
        stdin.flush().unwrap();
        loop {
            let line = lines
                .recv_timeout(std::time::Duration::from_secs(30))
                .unwrap();
            let message: serde_json::Value = serde_json::from_str(&line).unwrap();
            if message["id"] == id {
                return message;
            }
        }
    };
    response(
        1,
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {},
               "clientInfo": {"name": "pg-test", "version": "1"}}),
    );
    let called = response(
        2,
        "tools/call",
        json!({"name": "ask_user_question", "arguments": {"timeout": 1, "questions": [
            {"id": "q", "question": "Which\u{0} one?", "options": [{"label": "A\u{0}"}, {"label": "B"}]}]}}),
    );
    let result = &called["result"];
    assert_ne!(result["isError"], true, "{called}");
    let value: serde_json::Value =
        serde_json::from_str(result["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(value["pending"], true, "{called}");
    let _ = server.kill();
    let _ = server.wait();
    let listed = run(&["pending", "--pg", &url, "--pg-schema", &schema, "--json"]);
    assert!(listed.status.success(), "{}", text(&listed.stderr));
    let listed: serde_json::Value = serde_json::from_slice(&listed.stdout).unwrap();
    assert_eq!(
        listed["questions"][0]["questions"][0]["question"], "Which\0 one?",
        "{listed}"
    );
    ask_user_testkit::pg::drop_schema(&url, &schema);
}

#[test]
fn schema_names_and_connection_settings_are_checked_and_errors_say_what_the_server_said() {
    let Some(url) = pg_url() else { return };
    let long = "s".repeat(64);
    let cases: [&[&str]; 4] = [
        &["pending", "--pg", &url, "--pg-schema", ""],
        &["pending", "--pg", &url, "--pg-schema", &long],
        &["worker", "--once", "--pg", &url, "--pg-schema", &long],
        &["export", "--pg", &url, "--pg-schema", "", "s"],
    ];
    for args in cases {
        let refused = run(args);
        assert_eq!(
            refused.status.code(),
            Some(2),
            "{args:?}: {}",
            text(&refused.stderr)
        );
        let said = text(&refused.stderr);
        assert!(
            said.contains("BAD_USAGE") && said.contains("schema name"),
            "{said}"
        );
    }
    let bad_mode = format!("{url} sslmode=strict");
    let refused = run(&["pending", "--pg", &bad_mode]);
    assert_eq!(refused.status.code(), Some(2), "{}", text(&refused.stderr));
    assert!(
        text(&refused.stderr).contains("DB_SETTINGS"),
        "{}",
        text(&refused.stderr)
    );

    let nowhere = format!("{url} dbname=no_such_database password=sekrit");
    let refused = run(&["pending", "--pg", &nowhere]);
    let said = text(&refused.stderr);
    assert_eq!(refused.status.code(), Some(6), "{said}");
    assert!(
        said.contains("database \"no_such_database\" does not exist")
            && said.contains("SQLSTATE 3D000"),
        "{said}"
    );
    assert!(!said.contains("sekrit"), "{said}");
}

#[test]
fn import_refuses_a_session_name_pending_could_not_name() {
    let Some(url) = pg_url() else { return };
    let schema = fresh_schema();
    let store = PgStore::connect(&url, &PgOptions::in_schema(&schema)).unwrap();
    ask_user_testkit::logs::create_pending(&store, "s1", &["ask-1"]);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("s1.jsonl");
    let mut bytes = Vec::new();
    store.export("s1", &mut bytes).unwrap();
    std::fs::write(&file, bytes).unwrap();
    let refused = run(&[
        "import",
        "--pg",
        &url,
        "--pg-schema",
        &schema,
        file.to_str().unwrap(),
        "--name",
        "",
    ]);
    let said = text(&refused.stderr);
    assert_eq!(refused.status.code(), Some(2), "{said}");
    assert!(
        said.contains("BAD_USAGE") && said.contains("empty"),
        "{said}"
    );
    assert_eq!(store.log_names().unwrap(), ["s1"], "nothing imported");
    ask_user_testkit::pg::drop_schema(&url, &schema);
}

#[test]
fn tls_from_the_command_line_and_from_the_configuration_file() {
    let Some(server) = ask_user_testkit::pg::tls_server() else {
        return;
    };
    let schema = fresh_schema();
    let ca = server.ca.display().to_string();
    let verified = format!("{} sslmode=verify-full sslrootcert={ca}", server.url);
    let worked = run(&[
        "worker",
        "--once",
        "--pg",
        &verified,
        "--pg-schema",
        &schema,
    ]);
    assert!(worked.status.success(), "{}", text(&worked.stderr));

    // The configuration file's `[pg] url` carries the same settings.
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config.toml");
    std::fs::write(
        &config,
        format!("[pg]\nurl = {verified:?}\nschema = {schema:?}\n"),
    )
    .unwrap();
    let listed = run(&["--config", config.to_str().unwrap(), "pending"]);
    assert!(listed.status.success(), "{}", text(&listed.stderr));
    assert_eq!(text(&listed.stdout), "no open or continued questions\n");

    // A host name the certificate does not name is refused, and said so.
    let by_address = verified.replace("host=localhost hostaddr=127.0.0.1", "host=127.0.0.1");
    let refused = run(&["pending", "--pg", &by_address, "--pg-schema", &schema]);
    let said = text(&refused.stderr);
    assert_eq!(refused.status.code(), Some(6), "{said}");
    assert!(said.contains("does not name the host"), "{said}");
}
