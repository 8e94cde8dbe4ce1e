//! The [`SessionStore`] contract suite: one set of checks, written once, that every store
//! implementation must pass (SPEC §9.6). An implementation's test file provides a
//! [`StoreHarness`] and expands [`store_contract_tests!`](crate::store_contract_tests), which
//! gives one `#[test]` per check:
//!
//! ```ignore
//! ask_user_testkit::store_contract_tests!(my_store::Harness::new());
//! ```
//!
//! The checks: creating (header, `Exists`), appending (typed records read back as replayed, the
//! `seq` check, contiguity, invalid events, nothing of a refused batch kept), reopening (the next
//! `seq`, what is unfinished, resume repair appending once), exclusive ownership (a second writer
//! is refused until the first is gone; `is_writing`; a failed open gives ownership back), torn
//! tails (reported by a read that changes
//! nothing, saved and cut by an open for write, appends after the cut), corrupt lines (skipped,
//! kept, appended after), resumed scans, checkpoint documents, anchors, opens for write
//! from a resume point and at a checkpoint, and the listing of the logs.

use std::sync::Arc;

use session_log::{
    AnchorMismatch, EventBody, LogAnchor, LogEvent, LogVisitor, NewSession, OpenFrom, Record,
    RecordSpan, ResumePlan, ResumePoint, ScanPosition, Scanned, SessionStore, SessionWriter,
    StoreError, ToolResultRecord, repair_interrupted,
};
use user_questions::CallId;

/// What the suite needs from an implementation.
pub trait StoreHarness {
    /// A fresh, empty store.
    fn store(&self) -> Arc<dyn SessionStore>;

    /// Appends raw bytes to the log `name` of `store` behind the store's back, as a crash or a
    /// foreign writer could leave them (a torn tail, a corrupt line). Returns `false` when the
    /// store cannot hold such bytes by construction; the checks that need them then only check
    /// what they can.
    fn append_raw(&self, store: &dyn SessionStore, name: &str, bytes: &[u8]) -> bool;

    /// Whether the store can be made here (a store on a server that is missing outside CI says
    /// so and returns `false`; under `CI=true` it fails instead). The checks run only when it is.
    fn available(&self) -> bool {
        true
    }
}

/// Expands to one `#[test]` per contract check, each run against a store made by `$harness`.
#[macro_export]
macro_rules! store_contract_tests {
    ($harness:expr) => {
        $crate::store_contract_tests!(@each $harness;
            create_writes_the_header_and_refuses_a_second_create,
            appended_records_read_back_as_replayed,
            a_refused_batch_leaves_nothing,
            reopening_continues_the_seq_and_tracks_what_is_unfinished,
            resume_repair_appends_once,
            one_writer_at_a_time,
            an_open_that_fails_gives_ownership_back,
            a_torn_tail_is_reported_then_cut_on_open,
            corrupt_lines_are_skipped_and_kept,
            scans_resume_from_a_position,
            checkpoint_documents_are_replaced_whole,
            anchors_resolve_and_detect_mismatches,
            an_open_from_a_resume_point_continues_as_a_full_open,
            an_open_at_a_checkpoint_resumes_where_its_document_says,
            the_store_lists_its_logs_and_nothing_else,
        );
    };
    (@each $harness:expr; $($check:ident),* $(,)?) => {
        $(
            #[test]
            fn $check() {
                let harness = $harness;
                if $crate::store_contract::StoreHarness::available(&harness) {
                    $crate::store_contract::$check(&harness);
                }
            }
        )*
    };
}

/// Collects the events and corrupt lines a scan shows.
#[derive(Default)]
struct Collect {
    events: Vec<(u64, String)>,
    corrupt: Vec<u64>,
}

impl LogVisitor for Collect {
    fn line(&mut self, scanned: &Scanned<'_>) {
        match scanned {
            Scanned::Record(record) => {
                for event in record.record.clone().into_events() {
                    self.events.push((event.seq, event.event_type().to_owned()));
                }
            }
            Scanned::Corrupt(corrupt) => self.corrupt.push(corrupt.line),
        }
    }
}

fn event(record: Record, seq: u64) -> LogEvent {
    record.into_event(seq).expect("records serialise")
}

fn turn(seq: u64, turn: u64) -> LogEvent {
    event(Record::turn_start(turn), seq)
}

fn read(store: &dyn SessionStore, name: &str) -> (session_log::OpenReport, Collect) {
    let mut collect = Collect::default();
    let report = store.read(name, &mut collect).expect("read");
    (report, collect)
}

/// `create` writes exactly the header; a second `create` of the name is refused.
pub fn create_writes_the_header_and_refuses_a_second_create(harness: &dyn StoreHarness) {
    let store = harness.store();
    assert!(!store.exists("s").unwrap());
    let writer = store.create("s", &NewSession::new("sess-1")).unwrap();
    assert_eq!(writer.header().id.as_str(), "sess-1");
    assert_eq!(writer.next_seq(), 0);
    assert!(store.exists("s").unwrap());
    let (report, seen) = read(&*store, "s");
    assert_eq!(report.header.id.as_str(), "sess-1");
    assert!(report.is_clean());
    assert!(seen.events.is_empty());
    drop(writer);
    let again = store.create("s", &NewSession::new("sess-2"));
    assert!(
        matches!(again, Err(StoreError::Exists { .. })),
        "a second create is refused"
    );
    assert_eq!(read(&*store, "s").0.header.id.as_str(), "sess-1");
}

/// What `append` returns is what a read of the log shows, in order, with `seq`s.
pub fn appended_records_read_back_as_replayed(harness: &dyn StoreHarness) {
    let store = harness.store();
    let mut writer = store.create("s", &NewSession::new("s")).unwrap();
    let call = CallId::from("c1");
    let batch = [
        turn(0, 1),
        event(Record::step_start(1, 1), 1),
        event(
            Record::tool_call(1, 1, call.clone(), "ask_user_question", "{}"),
            2,
        ),
    ];
    let returned = writer.append(&batch).unwrap();
    assert_eq!(returned.len(), 3);
    assert_eq!(writer.next_seq(), 3);
    match &returned[2].body {
        EventBody::ToolCall(decoded) => {
            assert_eq!(decoded.call_id.as_ref(), Some(&call));
            assert_eq!((decoded.turn, decoded.step), (Some(1), Some(1)));
        }
        other => panic!("expected a tool call, got {other:?}"),
    }
    let result = ToolResultRecord::new(Some(1), Some(1), "m1", call, "{}", false);
    writer
        .append(&[event(Record::ToolResult(result), 3)])
        .unwrap();
    assert!(
        writer.interrupted().calls.is_empty(),
        "the call has its result"
    );
    let (report, seen) = read(&*store, "s");
    let types: Vec<_> = seen.events.iter().map(|(s, t)| (*s, t.as_str())).collect();
    assert_eq!(
        types,
        [
            (0, "turn/start"),
            (1, "step/start"),
            (2, "tool/call"),
            (3, "tool/result")
        ]
    );
    assert_eq!(report.scan.end, writer.position());
    assert!(
        writer.append(&[]).unwrap().is_empty(),
        "an empty batch writes nothing"
    );
}

/// A batch with a wrong first `seq`, a gap inside it, or an invalid event leaves no trace.
pub fn a_refused_batch_leaves_nothing(harness: &dyn StoreHarness) {
    let store = harness.store();
    let mut writer = store.create("s", &NewSession::new("s")).unwrap();
    writer.append(&[turn(0, 1)]).unwrap();
    let before = read(&*store, "s").0.scan.end;
    assert!(matches!(
        writer.append(&[turn(5, 2)]),
        Err(StoreError::SeqMismatch {
            expected: 1,
            found: 5
        })
    ));
    assert!(matches!(
        writer.append(&[turn(1, 2), turn(3, 3)]),
        Err(StoreError::NotContiguous { index: 1, .. })
    ));
    let not_an_object = LogEvent::new(
        "x/y",
        2,
        serde_json::value::RawValue::from_string("[1]".to_owned()).unwrap(),
    );
    assert!(matches!(
        writer.append(&[turn(1, 2), not_an_object]),
        Err(StoreError::InvalidEvent { seq: 2, .. })
    ));
    assert_eq!(read(&*store, "s").0.scan.end, before, "nothing was written");
    assert_eq!(writer.next_seq(), 1);
    writer.append(&[turn(1, 2)]).unwrap();
}

/// A reopened log continues at its next `seq` and knows what was left unfinished.
pub fn reopening_continues_the_seq_and_tracks_what_is_unfinished(harness: &dyn StoreHarness) {
    let store = harness.store();
    let mut writer = store.create("s", &NewSession::new("s")).unwrap();
    writer
        .append(&[
            turn(0, 1),
            event(Record::step_start(1, 1), 1),
            event(Record::tool_call(1, 1, CallId::from("c1"), "bash", "{}"), 2),
        ])
        .unwrap();
    drop(writer);
    let mut seen = Collect::default();
    let (writer, report) = store.open("s", &mut seen).unwrap();
    assert_eq!(writer.next_seq(), 3);
    assert_eq!(seen.events.len(), 3, "the open's scan shows every record");
    assert_eq!(report.interrupted.calls.len(), 1);
    assert_eq!(report.interrupted.calls[0].call_id, "c1");
    assert_eq!(report.interrupted.calls[0].turn, Some(1));
    assert_eq!(report.interrupted.turns, [1]);
    assert_eq!(writer.interrupted(), report.interrupted);
}

/// Resume repair through the trait appends a result, a step end and a turn end once.
pub fn resume_repair_appends_once(harness: &dyn StoreHarness) {
    let store = harness.store();
    let mut writer = store.create("s", &NewSession::new("s")).unwrap();
    writer
        .append(&[
            turn(0, 1),
            event(Record::step_start(1, 1), 1),
            event(Record::tool_call(1, 1, CallId::from("c1"), "bash", "{}"), 2),
        ])
        .unwrap();
    drop(writer);
    let (mut writer, _) = store.open("s", &mut ()).unwrap();
    let repair = repair_interrupted(writer.as_mut()).unwrap();
    assert_eq!(repair.results.len(), 1);
    assert_eq!(repair.closed_steps.len(), 1);
    assert_eq!(repair.closed_turns, [1]);
    assert!(writer.interrupted().is_empty());
    assert!(repair_interrupted(writer.as_mut()).unwrap().is_empty());
    drop(writer);
    let (writer, report) = store.open("s", &mut ()).unwrap();
    assert!(report.interrupted.is_empty());
    assert_eq!(writer.next_seq(), 6);
}

/// Only one writer at a time; a read needs no ownership.
pub fn one_writer_at_a_time(harness: &dyn StoreHarness) {
    let store = harness.store();
    let writer = store.create("s", &NewSession::new("s")).unwrap();
    assert!(store.is_writing("s").unwrap());
    assert!(matches!(
        store.open("s", &mut ()),
        Err(StoreError::Locked { .. })
    ));
    read(&*store, "s");
    drop(writer);
    assert!(!store.is_writing("s").unwrap());
    let (writer, _) = store.open("s", &mut ()).unwrap();
    assert!(store.is_writing("s").unwrap());
    drop(writer);
}

/// An open whose visitor panics leaves the log free for the next open.
pub fn an_open_that_fails_gives_ownership_back(harness: &dyn StoreHarness) {
    struct Panics;
    impl LogVisitor for Panics {
        fn line(&mut self, _: &Scanned<'_>) {
            panic!("a visitor fails half-way");
        }
    }
    let store = harness.store();
    let mut writer = store.create("s", &NewSession::new("s")).unwrap();
    writer.append(&[turn(0, 1)]).unwrap();
    drop(writer);
    let failed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let _ = store.open("s", &mut Panics);
    }));
    assert!(failed.is_err());
    assert!(!store.is_writing("s").unwrap(), "ownership was given back");
    let (writer, _) = store.open("s", &mut ()).unwrap();
    assert_eq!(writer.next_seq(), 1);
}

/// A torn tail is reported by a read, which leaves it; an open for write saves it aside and cuts
/// it, and appends go where it began.
pub fn a_torn_tail_is_reported_then_cut_on_open(harness: &dyn StoreHarness) {
    let store = harness.store();
    let mut writer = store.create("s", &NewSession::new("s")).unwrap();
    writer.append(&[turn(0, 1)]).unwrap();
    let end = writer.position();
    drop(writer);
    let tail = br#"{"type":"turn/end","seq":1,"data":{"tu"#;
    if !harness.append_raw(&*store, "s", tail) {
        return;
    }
    for _ in 0..2 {
        let torn = read(&*store, "s").0.scan.torn_tail.expect("a torn tail");
        assert_eq!(torn.byte_offset, end.byte_offset);
        assert_eq!(torn.len, tail.len() as u64);
    }
    let (mut writer, report) = store.open("s", &mut ()).unwrap();
    assert!(report.torn_tail_saved_to.is_some(), "saved before the cut");
    assert_eq!(writer.position(), end);
    writer.append(&[turn(1, 2)]).unwrap();
    drop(writer);
    let (report, seen) = read(&*store, "s");
    assert!(report.is_clean());
    assert_eq!(seen.events.len(), 2);
}

/// A corrupt line is skipped, consumes no `seq`, stays, and appends go after it.
pub fn corrupt_lines_are_skipped_and_kept(harness: &dyn StoreHarness) {
    let store = harness.store();
    let mut writer = store.create("s", &NewSession::new("s")).unwrap();
    writer.append(&[turn(0, 1)]).unwrap();
    drop(writer);
    if !harness.append_raw(&*store, "s", b"not a record\n") {
        return;
    }
    let (mut writer, report) = store.open("s", &mut ()).unwrap();
    assert_eq!(report.scan.corrupt_lines.len(), 1);
    assert_eq!(writer.next_seq(), 1);
    writer.append(&[turn(1, 2)]).unwrap();
    drop(writer);
    let (report, seen) = read(&*store, "s");
    assert_eq!(seen.corrupt, [3], "kept as physical line 3");
    assert_eq!(report.scan.corrupt_lines.len(), 1);
    assert_eq!(
        seen.events,
        [(0, "turn/start".into()), (1, "turn/start".into())]
    );
}

/// A scan from a position shows only what follows it, numbered on from it.
pub fn scans_resume_from_a_position(harness: &dyn StoreHarness) {
    let store = harness.store();
    let mut writer = store.create("s", &NewSession::new("s")).unwrap();
    writer.append(&[turn(0, 1), turn(1, 2)]).unwrap();
    let middle = writer.position();
    writer.append(&[turn(2, 3)]).unwrap();
    let end = writer.position();
    let mut seen = Collect::default();
    let report = store.scan_from("s", middle, &mut seen).unwrap();
    assert_eq!(seen.events, [(2, "turn/start".into())]);
    assert_eq!(report.end, end);
    assert_eq!(store.line_of("s", middle.byte_offset).unwrap(), middle.line);
    let mut none = Collect::default();
    store.scan_from("s", end, &mut none).unwrap();
    assert!(none.events.is_empty());
}

/// A checkpoint document is absent until saved, then read back whole; a save replaces it.
pub fn checkpoint_documents_are_replaced_whole(harness: &dyn StoreHarness) {
    let store = harness.store();
    let writer = store.create("s", &NewSession::new("s")).unwrap();
    assert_eq!(store.load_checkpoint("s").unwrap(), None);
    store.save_checkpoint("s", b"{\"a\":1}").unwrap();
    assert_eq!(
        store.load_checkpoint("s").unwrap().as_deref(),
        Some(&b"{\"a\":1}"[..])
    );
    store.save_checkpoint("s", b"{}").unwrap();
    assert_eq!(
        store.load_checkpoint("s").unwrap().as_deref(),
        Some(&b"{}"[..])
    );
    drop(writer);
}

/// An anchor taken at the end resolves to that position, stays valid while the log grows, and
/// any mismatch (another session, another record) is told apart.
pub fn anchors_resolve_and_detect_mismatches(harness: &dyn StoreHarness) {
    let store = harness.store();
    let mut writer = store.create("s", &NewSession::new("s")).unwrap();
    let header_anchor = store
        .anchor_at("s", writer.position(), None)
        .unwrap()
        .expect("the header can be anchored");
    let appended = writer.append(&[turn(0, 1), turn(1, 2)]).unwrap();
    assert_eq!(appended.len(), 2);
    let end = writer.position();
    let (after, span) = last_record(&*store);
    assert_eq!(after, end);
    let anchor = store.anchor_at("s", end, Some(span)).unwrap().unwrap();
    assert_eq!(anchor.event_count, 2);
    assert_eq!(anchor.byte_length, end.byte_offset);
    writer.append(&[turn(2, 3)]).unwrap();
    let (header, at) = store.resolve_anchor("s", &anchor).unwrap().unwrap();
    assert_eq!(header.id.as_str(), "s");
    assert_eq!(
        (at.byte_offset, at.expected_seq, at.events),
        (end.byte_offset, 2, 2)
    );
    let (_, at) = store.resolve_anchor("s", &header_anchor).unwrap().unwrap();
    assert_eq!(at.expected_seq, 0);

    let mut other = anchor.clone();
    "another".clone_into(&mut other.session_id);
    assert!(matches!(
        store.resolve_anchor("s", &other).unwrap(),
        Err(AnchorMismatch::SessionId { .. })
    ));
    let mut other = anchor.clone();
    other.last_record_hash = "0".repeat(64);
    assert_eq!(
        store.resolve_anchor("s", &other).unwrap(),
        Err(AnchorMismatch::LastRecordHash)
    );
    let mut other = anchor.clone();
    other.byte_length += 1_000_000;
    assert!(matches!(
        store.resolve_anchor("s", &other).unwrap(),
        Err(AnchorMismatch::PastEnd { .. })
    ));
    let mut other = anchor;
    other.header_hash = "0".repeat(64);
    assert_eq!(
        store.resolve_anchor("s", &other).unwrap(),
        Err(AnchorMismatch::HeaderHash)
    );
    drop(writer);
}

/// An open for write from a checkpointed point ([`SessionStore::open_from`]) shows only the lines
/// after it and gives the writer a full open gives (next `seq`, end, what is unfinished); an
/// anchor or a resume point that does not fit is refused with ownership given back. A store that
/// always reads the whole log says so ([`OpenFrom::Unsupported`]) and is checked no further.
pub fn an_open_from_a_resume_point_continues_as_a_full_open(harness: &dyn StoreHarness) {
    let store = harness.store();
    let (mut writer, end, anchor, resume) = calls_left_open(&*store, &["c1", "c2"]);
    let result = ToolResultRecord::new(
        Some(1),
        Some(1),
        "m1".to_owned(),
        CallId::from("c1"),
        "done",
        false,
    );
    writer
        .append(&[event(Record::ToolResult(result), 4), turn(5, 2)])
        .unwrap();
    drop(writer);

    let mut seen = Collect::default();
    let (resumed, report) = match store.open_from("s", &anchor, &resume, &mut seen).unwrap() {
        OpenFrom::Resumed { writer, report } => (writer, report),
        OpenFrom::Unsupported => return,
        OpenFrom::Stale(mismatch) => panic!("the anchor fits: {mismatch}"),
    };
    assert_eq!(
        seen.events,
        [(4, "tool/result".to_owned()), (5, "turn/start".to_owned())],
        "only the lines after the point"
    );
    assert_eq!(
        report.resumed_at.map(|at| at.byte_offset),
        Some(end.byte_offset)
    );
    let (next_seq, position, interrupted) = (
        resumed.next_seq(),
        resumed.position(),
        resumed.interrupted(),
    );
    assert_eq!(interrupted, report.interrupted);
    drop(resumed);
    let (full, full_report) = store.open("s", &mut ()).unwrap();
    assert_eq!(
        (next_seq, position, interrupted),
        (full.next_seq(), full.position(), full.interrupted())
    );
    assert_eq!(full_report.scan.end, report.scan.end);
    assert_eq!(full.interrupted().calls[0].call_id, "c2");
    // Refused while another writer holds the log; stale points give ownership back.
    assert!(matches!(
        store.open_from("s", &anchor, &resume, &mut ()),
        Err(StoreError::Locked { .. })
    ));
    drop(full);
    let mut other = anchor.clone();
    other.last_record_hash = "0".repeat(64);
    assert!(matches!(
        store.open_from("s", &other, &resume, &mut ()).unwrap(),
        OpenFrom::Stale(AnchorMismatch::LastRecordHash)
    ));
    let mut misfit = resume.clone();
    misfit.unfinished.calls[0].seq = 99;
    assert!(matches!(
        store.open_from("s", &anchor, &misfit, &mut ()).unwrap(),
        OpenFrom::Stale(AnchorMismatch::ResumePoint { .. })
    ));
    let (writer, _) = store.open("s", &mut ()).unwrap();
    assert_eq!(writer.next_seq(), 6);
}

/// A plan for [`SessionStore::open_at_checkpoint`] that resumes at `at` when the document is
/// `accept`, and keeps the documents it was shown and the lines each visitor saw.
struct Plan {
    accept: &'static [u8],
    at: (LogAnchor, ResumePoint),
    shown: Vec<Vec<u8>>,
    resumed: Collect,
    whole: Collect,
}

impl ResumePlan for Plan {
    fn resume_at(
        &mut self,
        document: &[u8],
    ) -> Option<(LogAnchor, ResumePoint, &mut dyn LogVisitor)> {
        self.shown.push(document.to_vec());
        self.resumed = Collect::default();
        (document == self.accept)
            .then(|| (self.at.0.clone(), self.at.1.clone(), &mut self.resumed as _))
    }

    fn whole_log(&mut self) -> &mut dyn LogVisitor {
        self.whole = Collect::default();
        &mut self.whole
    }
}

/// An open for write at the log's checkpoint ([`SessionStore::open_at_checkpoint`]) shows the
/// document to its plan and resumes where the plan says, showing only the lines after it; with no
/// document, a document the plan declines, or an anchor that does not fit (reported), it reads
/// the whole log instead, and while another writer holds the log it is refused. A store that
/// always reads the whole log is checked no further once it has.
pub fn an_open_at_a_checkpoint_resumes_where_its_document_says(harness: &dyn StoreHarness) {
    let store = harness.store();
    let (mut writer, end, anchor, resume) = calls_left_open(&*store, &["c1"]);
    writer.append(&[turn(3, 2)]).unwrap();
    drop(writer);
    let mut plan = Plan {
        accept: b"resume here",
        at: (anchor.clone(), resume),
        shown: Vec::new(),
        resumed: Collect::default(),
        whole: Collect::default(),
    };
    let every_line: Vec<(u64, String)> = ["turn/start", "step/start", "tool/call", "turn/start"]
        .iter()
        .enumerate()
        .map(|(seq, kind)| (seq as u64, (*kind).to_owned()))
        .collect();
    // Read whole, with the writer a full open gives.
    let whole = |plan: &mut Plan, opened: session_log::OpenedAtCheckpoint| {
        assert!(opened.report.resumed_at.is_none(), "the whole log was read");
        assert_eq!(plan.whole.events, every_line);
        assert_eq!(opened.writer.next_seq(), 4);
        assert_eq!(opened.writer.interrupted().calls[0].call_id, "c1");
        opened.stale
    };

    // No document: nothing shown to the plan.
    let opened = store.open_at_checkpoint("s", &mut plan).unwrap();
    assert!(plan.shown.is_empty(), "no document, nothing shown");
    assert!(whole(&mut plan, opened).is_none());
    // The document the plan resumes at.
    store.save_checkpoint("s", b"resume here").unwrap();
    let opened = store.open_at_checkpoint("s", &mut plan).unwrap();
    let Some(at) = opened.report.resumed_at else {
        // A store that cannot resume read the whole log.
        assert!(whole(&mut plan, opened).is_none());
        return;
    };
    assert_eq!(plan.shown, [b"resume here".to_vec()]);
    assert_eq!(at.byte_offset, end.byte_offset);
    assert!(opened.stale.is_none());
    assert_eq!(
        plan.resumed.events,
        [(3, "turn/start".to_owned())],
        "only the lines after the checkpoint"
    );
    assert_eq!(opened.writer.next_seq(), 4);
    // Refused while another writer holds the log.
    assert!(matches!(
        store.open_at_checkpoint("s", &mut plan),
        Err(StoreError::Locked { .. })
    ));
    drop(opened);
    // A document the plan declines.
    store.save_checkpoint("s", b"another version").unwrap();
    let opened = store.open_at_checkpoint("s", &mut plan).unwrap();
    assert_eq!(
        plan.shown.last().map(Vec::as_slice),
        Some(&b"another version"[..])
    );
    assert!(whole(&mut plan, opened).is_none());
    // An anchor that does not fit: stale, and the whole log read instead.
    store.save_checkpoint("s", b"resume here").unwrap();
    plan.at.0.last_record_hash = "0".repeat(64);
    let opened = store.open_at_checkpoint("s", &mut plan).unwrap();
    assert!(matches!(
        whole(&mut plan, opened),
        Some(AnchorMismatch::LastRecordHash)
    ));
    drop(store.open("s", &mut ()).unwrap());
}

/// Creates the log `s`: a turn and a step with the tool calls `calls` (`seq` 0, 1, 2 …), all
/// open. The writer, the end after the last call, its anchor, and the resume point there.
fn calls_left_open(
    store: &dyn SessionStore,
    calls: &[&str],
) -> (Box<dyn SessionWriter>, ScanPosition, LogAnchor, ResumePoint) {
    let mut writer = store.create("s", &NewSession::new("s")).unwrap();
    let mut events = vec![turn(0, 1), event(Record::step_start(1, 1), 1)];
    for (seq, call) in (2..).zip(calls) {
        events.push(event(
            Record::tool_call(1, 1, CallId::from(*call), "bash", "{}"),
            seq,
        ));
    }
    writer.append(&events).unwrap();
    let (end, span) = last_record(store);
    let anchor = store.anchor_at("s", end, Some(span)).unwrap().unwrap();
    let resume = ResumePoint {
        lines: end.line,
        unfinished: writer.interrupted(),
    };
    (writer, end, anchor, resume)
}

/// Where the last record of the log `s` lies, and the position after it, found through a scan.
fn last_record(store: &dyn SessionStore) -> (ScanPosition, RecordSpan) {
    struct Last(Option<(ScanPosition, RecordSpan)>);
    impl LogVisitor for Last {
        fn line(&mut self, scanned: &Scanned<'_>) {
            if let Scanned::Record(record) = scanned {
                let span = RecordSpan {
                    byte_offset: record.byte_offset,
                    len: record.raw.len(),
                };
                self.0 = Some((record.after, span));
            }
        }
    }
    let mut last = Last(None);
    store.read("s", &mut last).unwrap();
    last.0.expect("the log has a record")
}

/// `list` names every log, sorted, once each, and nothing that is not a log (a checkpoint, a
/// torn tail's sidecar).
pub fn the_store_lists_its_logs_and_nothing_else(harness: &dyn StoreHarness) {
    let store = harness.store();
    assert_eq!(store.list().unwrap(), Vec::<String>::new());
    for name in ["b.jsonl", "a.jsonl"] {
        let mut writer = store.create(name, &NewSession::new(name)).unwrap();
        writer.append(&[turn(0, 1)]).unwrap();
    }
    store.save_checkpoint("a.jsonl", b"{}").unwrap();
    // A torn tail cut by an open for write leaves a sidecar where the store keeps one.
    if harness.append_raw(&*store, "b.jsonl", b"{\"type\":\"turn/st") {
        drop(store.open("b.jsonl", &mut ()).unwrap());
    }
    assert_eq!(store.list().unwrap(), ["a.jsonl", "b.jsonl"]);
    // A log that is being written is listed too.
    let _writer = store.open("a.jsonl", &mut ()).unwrap();
    assert_eq!(store.list().unwrap(), ["a.jsonl", "b.jsonl"]);
}
