//! SPEC §12.4 (S46–S51): the timed wait on its own, under tokio's paused clock.
// Test code stops at its first broken expectation: unwrap and expect are assertions here.
#![allow(clippy::unwrap_used, clippy::expect_used)]
// Timelines are written in milliseconds, as SPEC §12 states them.
#![allow(clippy::duration_suboptimal_units)]

use std::time::Duration;

use tokio::time::advance;
use user_questions::{CancellationToken, TimedQuestionWait, WaitEnd};

const WINDOW: Duration = Duration::from_millis(5000);

async fn ms(n: u64) {
    advance(Duration::from_millis(n)).await;
    // Let the timer task observe the new time.
    for _ in 0..5 {
        tokio::task::yield_now().await;
    }
}

#[tokio::test(start_paused = true)]
async fn s46_no_claim_times_out_at_deadline() {
    let wait = TimedQuestionWait::new(&CancellationToken::new(), WINDOW);
    assert!(wait.has_timer());
    ms(4999).await;
    assert_eq!(wait.end(), None);
    ms(1).await;
    assert_eq!(wait.end(), Some(WaitEnd::TimedOut));
    assert!(wait.token().is_cancelled());
    assert!(!wait.has_timer());
}

#[tokio::test(start_paused = true)]
async fn s47_expires_inside_the_last_release() {
    let wait = TimedQuestionWait::new(&CancellationToken::new(), WINDOW);
    let first = wait.attach().unwrap();
    let second = wait.attach().unwrap();
    assert_eq!((first.remaining_ms(), second.remaining_ms()), (5000, 5000));
    assert!(!wait.has_timer());
    ms(10_000).await;
    first.release();
    assert_eq!(wait.end(), None);
    assert_eq!(wait.claims(), 1);
    second.release();
    assert_eq!(wait.end(), Some(WaitEnd::TimedOut), "no advance needed");
    assert!(!wait.has_timer());
}

#[tokio::test(start_paused = true)]
async fn s48_release_restores_the_original_deadline() {
    let wait = TimedQuestionWait::new(&CancellationToken::new(), WINDOW);
    ms(1000).await;
    let claim = wait.attach().unwrap();
    assert_eq!(claim.remaining_ms(), 4000);
    ms(2000).await;
    claim.release();
    assert!(wait.has_timer());
    ms(1999).await;
    assert_eq!(wait.end(), None);
    ms(1).await;
    assert_eq!(wait.end(), Some(WaitEnd::TimedOut));
}

#[tokio::test(start_paused = true)]
async fn s49_dropping_the_claim_releases_it() {
    let wait = TimedQuestionWait::new(&CancellationToken::new(), WINDOW);
    let claim = wait.attach().unwrap();
    drop(claim);
    ms(4999).await;
    assert_eq!(wait.end(), None);
    ms(1).await;
    assert_eq!(wait.end(), Some(WaitEnd::TimedOut));
}

#[tokio::test(start_paused = true)]
async fn s50_parent_cancellation() {
    let parent = CancellationToken::new();
    let wait = TimedQuestionWait::new(&parent, WINDOW);
    let a = wait.attach().unwrap();
    let b = wait.attach().unwrap();
    parent.cancel();
    assert_eq!(a.ended().await, WaitEnd::ParentCancelled);
    assert_eq!(b.ended().await, WaitEnd::ParentCancelled);
    assert_eq!(wait.end(), Some(WaitEnd::ParentCancelled));
    assert!(!wait.has_timer());
    // A later close does not replace the first end.
    wait.close(WaitEnd::Settled);
    assert_eq!(wait.end(), Some(WaitEnd::ParentCancelled));

    let live_parent = CancellationToken::new();
    let other = TimedQuestionWait::new(&live_parent, WINDOW);
    ms(5000).await;
    assert_eq!(other.end(), Some(WaitEnd::TimedOut));
    assert!(!live_parent.is_cancelled());
}

#[tokio::test(start_paused = true)]
async fn s50_parent_cancelled_without_claims_stops_the_timer() {
    let parent = CancellationToken::new();
    let wait = TimedQuestionWait::new(&parent, WINDOW);
    assert!(wait.has_timer());
    parent.cancel();
    assert!(!wait.has_timer());
    assert_eq!(wait.ended().await, WaitEnd::ParentCancelled);
    ms(10_000).await;
    assert_eq!(wait.end(), Some(WaitEnd::ParentCancelled));
}

#[tokio::test(start_paused = true)]
async fn s51_closed_at_construction_and_overdue_attach() {
    let parent = CancellationToken::new();
    parent.cancel();
    let wait = TimedQuestionWait::new(&parent, WINDOW);
    assert!(wait.attach().is_none());
    assert!(!wait.has_timer());
    assert_eq!(wait.end(), Some(WaitEnd::ParentCancelled));

    // Move the clock past the deadline without letting the timer task run.
    let wait = TimedQuestionWait::new(&CancellationToken::new(), WINDOW);
    advance(Duration::from_millis(6000)).await;
    assert!(wait.attach().is_none());
    assert_eq!(wait.end(), Some(WaitEnd::TimedOut));
    assert!(!wait.has_timer());
}

#[tokio::test(start_paused = true)]
async fn claim_after_close_is_none_and_ended_resolves() {
    let wait = TimedQuestionWait::new(&CancellationToken::new(), WINDOW);
    let claim = wait.attach().unwrap();
    wait.close(WaitEnd::Shutdown);
    assert_eq!(claim.ended().await, WaitEnd::Shutdown);
    assert!(wait.attach().is_none());
    drop(claim);
    assert!(!wait.has_timer());
}

#[tokio::test(start_paused = true)]
async fn overdue_claim_while_another_holds_is_granted() {
    let wait = TimedQuestionWait::new(&CancellationToken::new(), WINDOW);
    let held = wait.attach().unwrap();
    ms(6000).await;
    let late = wait
        .attach()
        .expect("the wait is still held, so it is live");
    assert_eq!(late.remaining_ms(), 0);
    drop(held);
    assert_eq!(wait.end(), None);
    drop(late);
    assert_eq!(wait.end(), Some(WaitEnd::TimedOut));
}

#[tokio::test(start_paused = true)]
async fn claims_released_on_a_plain_thread_rearm_the_timer() {
    let wait = TimedQuestionWait::new(&CancellationToken::new(), WINDOW);
    let claim = wait.attach().unwrap();
    // A UI relay may hold its claim on a thread of its own, outside any Tokio runtime.
    std::thread::spawn(move || drop(claim)).join().unwrap();
    assert_eq!(wait.claims(), 0);
    assert!(wait.has_timer(), "the release re-armed the timer");
    ms(5000).await;
    assert_eq!(wait.end(), Some(WaitEnd::TimedOut));
}

#[tokio::test(start_paused = true)]
async fn closing_releases_every_claim() {
    let wait = TimedQuestionWait::new(&CancellationToken::new(), WINDOW);
    let a = wait.attach().unwrap();
    let b = wait.attach().unwrap();
    assert_eq!(wait.claims(), 2);
    wait.close(WaitEnd::Settled);
    assert_eq!(wait.claims(), 0);
    drop((a, b));
    assert_eq!(wait.claims(), 0);
}
