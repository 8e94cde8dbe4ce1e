//! What the statement that takes a writer's lease reads with it (the session row: header, length,
//! checkpoint document) serves the rest of that open only: the thread that took the lease, until
//! the open's scan is done. Another thread, or the same one once the open is done, reads the
//! database; a checkpoint this store saves in the meantime is read again. An open at a checkpoint
//! (`SessionStore::open_at_checkpoint`) reads its document, and the line at its anchor, with the
//! lease, not before or after it.
// Test code stops at its first broken expectation.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::thread;

use ask_user_pg::PgStore;
use session_log::{
    LogAnchor, LogBackend, LogVisitor, ResumePlan, ResumePoint, Scanned, SessionStore,
};

/// Looks at the store from inside an open's scan (once, at its first line), after changing the
/// checkpoint behind the store's back.
struct Probe {
    store: PgStore,
    client: postgres::Client,
    looked: bool,
}

fn checkpoint_of(store: &PgStore) -> Option<Vec<u8>> {
    SessionStore::load_checkpoint(store, "s").unwrap()
}

fn set_checkpoint(client: &mut postgres::Client, document: &[u8]) {
    client
        .execute(
            "UPDATE ask_user_sessions SET checkpoint = $2 WHERE name = $1",
            &[&"s", &document],
        )
        .unwrap();
}

impl LogVisitor for Probe {
    fn line(&mut self, _: &Scanned<'_>) {
        if std::mem::replace(&mut self.looked, true) {
            return;
        }
        set_checkpoint(&mut self.client, b"behind");
        // The open's own thread: the document read with its lease.
        assert_eq!(checkpoint_of(&self.store).as_deref(), Some(&b"first"[..]));
        // Any other thread: the database.
        let other = self.store.clone();
        let seen = thread::spawn(move || checkpoint_of(&other)).join().unwrap();
        assert_eq!(seen.as_deref(), Some(&b"behind"[..]));
        // The header and length read with the lease are the row's.
        let other = self.store.clone();
        let head = thread::spawn(move || LogBackend::head(&other, "s").unwrap())
            .join()
            .unwrap();
        assert_eq!(LogBackend::head(&self.store, "s").unwrap(), head);
        // A checkpoint this store saves is read again, on the open's thread too.
        SessionStore::save_checkpoint(&self.store, "s", b"saved").unwrap();
        assert_eq!(checkpoint_of(&self.store).as_deref(), Some(&b"saved"[..]));
    }
}

#[test]
fn the_lease_reads_serve_only_their_open() {
    let Some(url) = common::pg_url() else {
        return;
    };
    let (store, schema) = common::store(&url);
    common::create_pending(&store, "s", &["c1", "c2"]);
    let mut client = common::client(&url, &schema);
    set_checkpoint(&mut client, b"first");
    let mut probe = Probe {
        store: store.clone(),
        client: common::client(&url, &schema),
        looked: false,
    };
    let (writer, _) = SessionStore::open(&store, "s", &mut probe).unwrap();
    assert!(probe.looked, "the scan read a line");
    // The open is done: its thread reads the database, while the writer lives.
    assert_eq!(checkpoint_of(&store).as_deref(), Some(&b"saved"[..]));
    set_checkpoint(&mut client, b"later");
    assert_eq!(checkpoint_of(&store).as_deref(), Some(&b"later"[..]));
    drop(writer);
    // The next open reads the row under its own lease.
    probe.looked = false;
    set_checkpoint(&mut client, b"first");
    drop(SessionStore::open(&store, "s", &mut probe).unwrap());
    assert!(probe.looked);
    drop(probe);
    drop(store);
    common::drop_schema(&url, &schema);
}

/// Sees the document an open at a checkpoint shows it, then declines it.
struct LeasePlan {
    store: PgStore,
    client: postgres::Client,
    /// The document shown, and whether another thread saw the log being written then.
    shown: Option<(Vec<u8>, bool)>,
    whole: (),
}

impl ResumePlan for LeasePlan {
    fn resume_at(
        &mut self,
        document: &[u8],
    ) -> Option<(LogAnchor, ResumePoint, &mut dyn LogVisitor)> {
        set_checkpoint(&mut self.client, b"behind");
        let other = self.store.clone();
        let leased = thread::spawn(move || SessionStore::is_writing(&other, "s").unwrap())
            .join()
            .unwrap();
        self.shown = Some((document.to_vec(), leased));
        None
    }

    fn whole_log(&mut self) -> &mut dyn LogVisitor {
        &mut self.whole
    }
}

#[test]
fn an_open_at_a_checkpoint_reads_the_document_with_its_lease() {
    let Some(url) = common::pg_url() else {
        return;
    };
    let (store, schema) = common::store(&url);
    common::create_pending(&store, "s", &["c1"]);
    let mut client = common::client(&url, &schema);
    set_checkpoint(&mut client, b"first");
    let mut plan = LeasePlan {
        store: store.clone(),
        client,
        shown: None,
        whole: (),
    };
    let opened = store.open_at_checkpoint("s", &mut plan).unwrap();
    assert_eq!(
        plan.shown,
        Some((b"first".to_vec(), true)),
        "read under the lease"
    );
    // Declined: the whole log is read under the same lease.
    assert!(opened.report.resumed_at.is_none());
    drop(opened);
    // The next open reads the row again.
    assert!(!SessionStore::is_writing(&store, "s").unwrap());
    drop(store.open_at_checkpoint("s", &mut plan).unwrap());
    assert_eq!(plan.shown, Some((b"behind".to_vec(), true)));
    drop(plan);
    drop(store);
    common::drop_schema(&url, &schema);
}

/// Resumes at the host's checkpoint document, after changing the anchor line behind the store's
/// back.
struct AnchorPlan {
    client: postgres::Client,
    whole: (),
}

impl ResumePlan for AnchorPlan {
    fn resume_at(
        &mut self,
        document: &[u8],
    ) -> Option<(LogAnchor, ResumePoint, &mut dyn LogVisitor)> {
        let document: serde_json::Value = serde_json::from_slice(document).unwrap();
        let anchor: LogAnchor = serde_json::from_value(document["log"].clone()).unwrap();
        let resume: ResumePoint = serde_json::from_value(document["open"]["log"].clone()).unwrap();
        let end = i64::try_from(anchor.byte_length).unwrap();
        let changed = self
            .client
            .execute(
                "UPDATE ask_user_lines SET line = overlay(line placing 'X'::bytea from 2)
                 WHERE name = 's' AND byte_end = $1",
                &[&end],
            )
            .unwrap();
        assert_eq!(changed, 1, "a line ends at the anchor");
        Some((anchor, resume, &mut self.whole))
    }

    fn whole_log(&mut self) -> &mut dyn LogVisitor {
        &mut self.whole
    }
}

#[test]
fn the_lease_reads_the_anchor_line_of_the_checkpoint() {
    let Some(url) = common::pg_url() else {
        return;
    };
    let (store, schema) = common::store(&url);
    common::create_pending(&store, "s", &["c1", "c2"]);
    // The host's open writes a checkpoint a writer can resume at.
    let runtime = ask_user_host::HostRuntime::new(store.clone(), None).unwrap();
    drop(
        runtime
            .open("s", ask_user_host::SessionOptions::named("s"))
            .unwrap(),
    );
    let mut plan = AnchorPlan {
        client: common::client(&url, &schema),
        whole: (),
    };
    // The anchor line checked is the one the lease's statement read: changed afterwards, it is
    // not read again.
    let opened = store.open_at_checkpoint("s", &mut plan).unwrap();
    assert!(opened.stale.is_none());
    assert!(
        opened.report.resumed_at.is_some(),
        "resumed at the checkpoint"
    );
    drop(opened);
    // The next lease reads the changed line: the checkpoint no longer fits.
    let opened = store.open_at_checkpoint("s", &mut plan).unwrap();
    assert!(opened.stale.is_some());
    drop(opened);
    drop(plan);
    drop(runtime);
    drop(store);
    common::drop_schema(&url, &schema);
}
