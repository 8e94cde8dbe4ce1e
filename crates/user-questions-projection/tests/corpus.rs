//! The real corpus: every log written by the reference system folds with zero findings, and the
//! views of the four logs that contain `ask_user_question` are pinned by snapshots (L11).
// Test code stops at its first broken expectation: unwrap and expect are assertions here.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs::File;
use std::io::BufReader;
use std::path::PathBuf;

use user_questions_projection::{LogScanner, Scanned, fold_log};

/// The corpus kept in the repository's test data (`tests/data/dsh-sessions` at the workspace root,
/// copied from the reference system's test snapshots; see its `SOURCE` and `LICENSE`).
fn corpus_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/dsh-sessions")
}

fn corpus_logs() -> Vec<PathBuf> {
    let mut logs: Vec<_> = std::fs::read_dir(corpus_dir())
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    logs.sort();
    logs
}

#[test]
fn l11_every_corpus_log_folds_without_findings() {
    let logs = corpus_logs();
    assert_eq!(logs.len(), 168, "the corpus has 168 logs");
    let mut events = 0;
    for path in &logs {
        let folded = fold_log(BufReader::new(File::open(path).unwrap()))
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert!(
            folded.report.is_clean(),
            "{}: {:?}",
            path.display(),
            folded.report
        );
        // Headers without `version` are reported; nothing else is.
        assert!(
            folded
                .findings
                .iter()
                .all(|f| *f == user_questions_projection::LogFinding::VersionMissing),
            "{}: {:?}",
            path.display(),
            folded.findings
        );
        events += folded.report.end.events;
    }
    assert!(events > 5000, "only {events} events decoded");
}

/// The four logs that ask. Their headers carry the placeholder `"tools":"{{tools}}"`, so as
/// recorded they are legacy sessions and the view is empty (legacy calls never enter it). The
/// snapshot also shows the same log under a timed schema, which exercises the reference's own
/// `tool/call` and `tool/result` records (layouts B and C, errors, answers with `custom`).
#[test]
fn corpus_views_of_the_logs_that_ask() {
    let timed_tools = r#""tools":[{"name":"ask_user_question","description":"Ask.","parameters":{"type":"object","properties":{"questions":{"type":"array"},"timeout":{"type":"integer"}}}}]"#;
    let mut asking = 0;
    for path in corpus_logs() {
        let text = std::fs::read_to_string(&path).unwrap();
        if !text.contains("ask_user_question") {
            continue;
        }
        asking += 1;
        assert!(
            text.contains(r#""tools":"{{tools}}""#),
            "{}",
            path.display()
        );
        let as_recorded = fold_log(text.as_bytes()).unwrap();
        let timed = fold_log(
            text.replace(r#""tools":"{{tools}}""#, timed_tools)
                .as_bytes(),
        )
        .unwrap();
        assert!(timed.report.is_clean());
        let name = path
            .file_stem()
            .unwrap()
            .to_string_lossy()
            .replace("__", "-");
        insta::assert_json_snapshot!(format!("{name}-as-recorded"), as_recorded.state);
        insta::assert_json_snapshot!(format!("{name}-under-timed-schema"), timed.state);
    }
    assert_eq!(asking, 4);
}

/// The packed rows of the corpus count one `seq` per member: the `tool/result` of the
/// question-composer log cites its `tool/call` as seq 132 (`sourceEventSeqs`), and that is the
/// seq the scanner gives the call.
#[test]
fn l6_corpus_packed_rows_count_per_member() {
    let path = corpus_dir().join("apps__web__tests__snapshots__question-composer__session.jsonl");
    let (_, mut scanner) = LogScanner::open(BufReader::new(File::open(path).unwrap())).unwrap();
    let mut call_seq = None;
    while let Some(scanned) = scanner.next_line().unwrap() {
        if let Scanned::Record(r) = scanned
            && let Some(event) = r.record.event()
            && event.event_type() == "tool/call"
        {
            call_seq = Some(event.seq);
        }
    }
    assert_eq!(call_seq, Some(132));
}
