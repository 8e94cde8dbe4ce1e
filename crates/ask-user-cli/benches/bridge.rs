//! The bridge's cost on an agent's own path (SPEC §9.7): from the agent starting its
//! `PermissionRequest` hook to the hook's decision on stdout, beside a hook that prints the same
//! decision at once, in one run: `cargo bench -p ask-user-cli --bench bridge [RUNS]`.
//!
//! Both hooks run as Claude Code runs them, `sh -c COMMAND` with the hook's JSON on stdin:
//! * the bridge, `ask-user hook claude-code`, against an inbox already running for the state
//!   directory; the answer is given as soon as the question shows (this bench, a shell of the
//!   inbox, looks at the state directory's logs every millisecond and answers through the inbox's
//!   socket), so what is measured is the bridge, not a person;
//! * the anchor, a shell printing the decision.
//!
//! The goal: the bridge at most 50 ms more than the anchor (medians).
// Test code stops at its first broken expectation: unwrap and expect are assertions here.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read as _, Write as _};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ask_user_cli::host::LogDesk;
use ask_user_cli::store::JsonlStore;
use pending_answer::{DeskState, QuestionDesk as _};
use user_questions::{AnswerBatch, AnswerItem, Provenance};

const BIN: &str = env!("CARGO_BIN_EXE_ask-user");

/// The decision both hooks print.
const ALLOW: &str = r#"{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"allow"}}}"#;

fn hook_input(n: usize) -> String {
    serde_json::json!({
        "session_id": format!("bench-{n}"), "cwd": "/work/shop", "permission_mode": "default",
        "hook_event_name": "PermissionRequest", "tool_name": "Bash",
        "tool_input": {"command": format!("npm test -- --run {n}"), "description": "Run the tests"},
        "permission_suggestions": []
    })
    .to_string()
}

fn env<'a>(command: &'a mut Command, home: &Path) -> &'a mut Command {
    command
        .env("HOME", home)
        .env("XDG_STATE_HOME", home.join("state"))
        .env("XDG_CONFIG_HOME", home.join("config"))
}

/// Runs `sh -c script` with the hook's input on stdin; its stdout and the time to it.
fn run_hook(script: &str, home: &Path, input: &str, answer: impl FnOnce()) -> (String, Duration) {
    let start = Instant::now();
    let mut child: Child = env(&mut Command::new("sh"), home)
        .args(["-c", script])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    answer();
    let mut out = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    let elapsed = start.elapsed();
    child.wait().unwrap();
    (out, elapsed)
}

/// A shell of the inbox: answers `Allow` to the first open question the logs show.
async fn answer_when_shown(state_dir: &Path) {
    let desk = LogDesk::store(Arc::new(JsonlStore::new(state_dir)));
    let socket = ask_user_inbox::Rendezvous::new(state_dir).socket();
    loop {
        let sessions = desk.sessions().await.unwrap_or_default();
        let open = (sessions.into_iter())
            .flat_map(|s| s.questions)
            .find(|q| q.state == DeskState::Open);
        if let Some(question) = open {
            let stream = ask_user_inbox::connect(&socket).await.unwrap();
            let answers = AnswerBatch::new([AnswerItem::selected("decision", ["Allow"])]);
            let provenance = Provenance::human(user_questions::surface_names::SHELL);
            let answered = ask_user_inbox::answer_in_window(
                stream,
                &question.session,
                &question.call_id,
                answers,
                provenance,
            )
            .await;
            if answered.is_ok() {
                return;
            }
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn main() {
    let runs: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(15);
    let home = tempfile::tempdir().unwrap();
    let state_dir = home.path().join("state/ask-user/mcp");
    // The inbox runs already, as it does once any agent used it.
    // Its URL printed: it is up.
    let (inbox, _url) = ask_user_testkit::process::start_reading_line(
        env(&mut Command::new(BIN), home.path()).args(["inbox", "--addr", "127.0.0.1:0"]),
    );
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let bridge = format!("'{BIN}' hook claude-code");
    let anchor = format!("cat >/dev/null; printf '%s\\n' '{ALLOW}'");
    let (mut ours, mut theirs) = (Vec::new(), Vec::new());
    for n in 0..runs {
        let input = hook_input(n);
        let (out, took) = run_hook(&bridge, home.path(), &input, || {
            runtime.block_on(answer_when_shown(&state_dir));
        });
        assert_eq!(out.trim(), ALLOW, "the bridge's decision");
        ours.push(took);
        let (out, took) = run_hook(&anchor, home.path(), &input, || {});
        assert_eq!(out.trim(), ALLOW);
        theirs.push(took);
    }
    drop(inbox);
    let (ours, theirs) = (median(ours), median(theirs));
    let more = ours.saturating_sub(theirs);
    println!("bridge hook (answered when shown)  {:8.1} ms", ms(ours));
    println!("anchor hook (prints the decision)  {:8.1} ms", ms(theirs));
    let verdict = if more <= Duration::from_millis(50) {
        "within"
    } else {
        "ABOVE"
    };
    println!(
        "the bridge adds {:.1} ms on the agent's path ({verdict} the 50 ms goal; medians of {runs} runs)",
        ms(more)
    );
}
