//! The local countdown of a timed card, under tokio's paused clock.
// Test code stops at its first broken expectation: unwrap and expect are assertions here.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use ask_user_terminal::{Countdown, format_secs};
use tokio::time::{Instant, advance};

const MS: Duration = Duration::from_millis(1);

#[tokio::test(start_paused = true)]
async fn counts_down_from_the_claims_remaining_time() {
    let countdown = Countdown::new(Instant::now(), 5000);
    assert_eq!(countdown.deadline(), Instant::now() + 5000 * MS);
    assert_eq!(countdown.display_secs(Instant::now()), 5);
    assert_eq!(
        countdown.next_tick(Instant::now()),
        Some(Instant::now() + 1000 * MS)
    );
    advance(999 * MS).await;
    assert_eq!(countdown.display_secs(Instant::now()), 5, "rounded up");
    advance(MS).await;
    assert_eq!(countdown.display_secs(Instant::now()), 4);
    assert_eq!(countdown.remaining(Instant::now()), 4000 * MS);
    advance(3999 * MS).await;
    assert_eq!(
        countdown.display_secs(Instant::now()),
        1,
        "never 0:00 while time is left"
    );
    assert!(!countdown.is_due(Instant::now()));
    advance(MS).await;
    assert!(countdown.is_due(Instant::now()));
    assert_eq!(countdown.display_secs(Instant::now()), 0);
    assert_eq!(countdown.next_tick(Instant::now()), None);
    advance(10_000 * MS).await;
    assert_eq!(countdown.remaining(Instant::now()), Duration::ZERO);
}

#[tokio::test(start_paused = true)]
async fn a_zero_claim_is_due_at_once() {
    let countdown = Countdown::new(Instant::now(), 0);
    assert!(countdown.is_due(Instant::now()));
    assert_eq!(countdown.due_at(), Some(Instant::now()));
}

#[tokio::test(start_paused = true)]
async fn holding_stops_it_and_releasing_restores_the_original_deadline() {
    let start = Instant::now();
    let mut countdown = Countdown::new(start, 5000);
    countdown.hold();
    assert!(countdown.is_held());
    assert_eq!(countdown.due_at(), None);
    assert_eq!(countdown.next_tick(Instant::now()), None);
    advance(60_000 * MS).await;
    assert!(!countdown.is_due(Instant::now()));
    countdown.release();
    // The deadline never moved: released after it, the countdown is due at once.
    assert_eq!(countdown.due_at(), Some(start + 5000 * MS));
    assert!(countdown.is_due(Instant::now()));
}

#[test]
fn formats_minutes_and_hours() {
    for (secs, text) in [
        (0, "0:00"),
        (5, "0:05"),
        (59, "0:59"),
        (60, "1:00"),
        (125, "2:05"),
        (3600, "1:00:00"),
        (3725, "1:02:05"),
    ] {
        assert_eq!(format_secs(secs), text);
    }
}
