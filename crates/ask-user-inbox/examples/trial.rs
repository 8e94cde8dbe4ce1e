//! The inbox under the loads of a hostile trial, with its memory and the cost of one question
//! measured before and after:
//!
//! 1. 100,000 session names, each over a link that then closes;
//! 2. 100 links that each start a line of almost `MAX_LINE` bytes and stall.
//!
//! ```sh
//! cargo run --release -p ask-user-inbox --example trial
//! ```
//!
//! Prints the resident memory (Linux `/proc/self/statm`) and the time one question takes from a
//! link's `open` to the answer it receives, on a fresh inbox and after each load.
// A measuring program stops at its first broken step: expect is its assertion.
#![allow(clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use ask_user_inbox::{Inbox, LINE_WITHIN, MAX_LINE};
use pending_answer::NoSessions;
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};
use user_questions::{
    AnswerBatch, AnswerItem, AnswerRequest, Answered, Answerer, AnswererError, Next,
    RegisterOptions, async_trait,
};

/// A page that answers every question at once with its first option.
struct Page;

#[async_trait]
impl Answerer for Page {
    async fn answer(
        &self,
        request: &AnswerRequest,
        _next: Next<'_>,
    ) -> Result<Answered, AnswererError> {
        let items = request.questions.iter().map(|q| {
            let first = q.options().first().map(|o| o.label.clone());
            AnswerItem::selected(q.id.clone(), first)
        });
        Ok(Answered::human(AnswerBatch::new(items)))
    }
}

/// Resident memory in MiB.
fn rss_mib() -> f64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: f64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0.0);
    pages * 4096.0 / (1024.0 * 1024.0)
}

/// A link of its own that opens one question and waits for the answer the page gives.
async fn one_question(inbox: &Inbox, n: usize) -> Duration {
    let (ours, theirs) = tokio::io::duplex(64 * 1024);
    let serving = inbox.clone();
    tokio::spawn(async move { serving.serve_link(theirs).await });
    let (read, mut write) = tokio::io::split(ours);
    let started = Instant::now();
    let open = format!(
        "{{\"t\":\"open\",\"session\":\"q{n}.jsonl\",\"call\":\"call_{n}\",\"questions\":[{{\"id\":\"q\",\"question\":\"Which?\",\"options\":[{{\"label\":\"a\"}},{{\"label\":\"b\"}}]}}],\"timed\":false,\"askedAtMs\":0}}\n"
    );
    write.write_all(open.as_bytes()).await.expect("written");
    let mut lines = BufReader::new(read).lines();
    while let Some(line) = lines.next_line().await.expect("read") {
        if line.contains("\"t\":\"answer\"") {
            return started.elapsed();
        }
    }
    panic!("the link closed without an answer");
}

#[tokio::main]
async fn main() {
    let inbox = Inbox::new(Arc::new(NoSessions)).expect("an inbox");
    let _page = inbox
        .seam()
        .register(Arc::new(Page), RegisterOptions::global("web").prepended());
    one_question(&inbox, 0).await;
    let fresh = one_question(&inbox, 1).await;
    println!(
        "fresh inbox: {:.1} MiB, one question answered in {:?}",
        rss_mib(),
        fresh
    );

    let started = Instant::now();
    for i in 0..100_000 {
        let (mut ours, theirs) = tokio::io::duplex(4096);
        let serving = inbox.clone();
        let served = tokio::spawn(async move { serving.serve_link(theirs).await });
        let announce = format!(
            "{{\"t\":\"session\",\"session\":\"s{i}.jsonl\",\"client\":\"c\",\"cwd\":\"/w\"}}\n"
        );
        ours.write_all(announce.as_bytes()).await.expect("written");
        drop(ours);
        served.await.expect("the link ends");
    }
    let after = one_question(&inbox, 2).await;
    println!(
        "after 100,000 sessions over links that closed ({:?}): {:.1} MiB, {} sessions kept, one question answered in {:?} ({:.1}x fresh)",
        started.elapsed(),
        rss_mib(),
        inbox.sessions().len(),
        after,
        after.as_secs_f64() / fresh.as_secs_f64()
    );

    let mut stalled = Vec::new();
    // Just under the longest line taken, with the line's start.
    let partial = vec![b'x'; MAX_LINE - 64];
    for _ in 0..100 {
        let (mut ours, theirs) = tokio::io::duplex(MAX_LINE);
        let serving = inbox.clone();
        tokio::spawn(async move { serving.serve_link(theirs).await });
        ours.write_all(b"{\"t\":\"hello\",\"pid\":\"")
            .await
            .expect("written");
        ours.write_all(&partial).await.expect("written");
        stalled.push(ours);
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    println!(
        "100 links each holding a partial line of {} KiB: {:.1} MiB, {} links",
        MAX_LINE / 1024,
        rss_mib(),
        inbox.links()
    );
    tokio::time::sleep(LINE_WITHIN + Duration::from_secs(2)).await;
    let later = one_question(&inbox, 3).await;
    println!(
        "{} s later: {:.1} MiB, {} links, one question answered in {:?}",
        (LINE_WITHIN + Duration::from_secs(2)).as_secs(),
        rss_mib(),
        inbox.links(),
        later
    );
    drop(stalled);
}
