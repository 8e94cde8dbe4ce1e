//! The card's local countdown for a timed question (SPEC §4.7, answerer obligations).
//!
//! Its deadline is derived from the claim: `now + remaining_ms()` at the moment the wait was
//! claimed, so it ends when the host's own deadline would have. "Take time" holds it: a held
//! countdown never falls due. Releasing the hold restores the original deadline, which may already
//! have passed — exactly what the host does when the last claim on an overdue wait goes away.
//!
//! All instants are `tokio::time::Instant`, so tests drive it with a paused clock.

use std::time::Duration;

use tokio::time::Instant;

/// A countdown to a fixed deadline that can be held.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Countdown {
    deadline: Instant,
    held: bool,
}

impl Countdown {
    /// A countdown of `remaining_ms` milliseconds from `now` (the claim's
    /// [`remaining_ms`](user_questions::WaitClaim::remaining_ms)).
    pub fn new(now: Instant, remaining_ms: u64) -> Self {
        Self {
            deadline: now + Duration::from_millis(remaining_ms),
            held: false,
        }
    }

    /// The deadline.
    pub fn deadline(&self) -> Instant {
        self.deadline
    }

    /// Time left at `now` (zero once the deadline has passed), whether or not it is held.
    pub fn remaining(&self, now: Instant) -> Duration {
        self.deadline.saturating_duration_since(now)
    }

    /// Stops the countdown from falling due until [`Countdown::release`].
    pub fn hold(&mut self) {
        self.held = true;
    }

    /// Lets the original deadline apply again.
    pub fn release(&mut self) {
        self.held = false;
    }

    /// Whether the countdown is held.
    pub fn is_held(&self) -> bool {
        self.held
    }

    /// When the countdown falls due: `None` while held.
    pub fn due_at(&self) -> Option<Instant> {
        (!self.held).then_some(self.deadline)
    }

    /// Whether it has fallen due at `now`.
    pub fn is_due(&self, now: Instant) -> bool {
        !self.held && now >= self.deadline
    }

    /// The whole seconds to show at `now`, rounded up, so the display reads `0:00` only when
    /// the time is really up.
    pub fn display_secs(&self, now: Instant) -> u64 {
        self.remaining(now)
            .as_millis()
            .div_ceil(1000)
            .try_into()
            .unwrap_or(u64::MAX)
    }

    /// When the displayed seconds next change (for redrawing exactly when needed); `None` while
    /// held or once the time is up.
    pub fn next_tick(&self, now: Instant) -> Option<Instant> {
        if self.held {
            return None;
        }
        let shown = self.display_secs(now);
        if shown == 0 {
            return None;
        }
        Some(self.deadline - Duration::from_secs(shown - 1))
    }
}

/// Formats whole seconds as `m:ss` (or `h:mm:ss` from an hour).
pub fn format_secs(secs: u64) -> String {
    let (hours, minutes, seconds) = (secs / 3600, secs / 60 % 60, secs % 60);
    if hours > 0 {
        format!("{hours}:{minutes:02}:{seconds:02}")
    } else {
        format!("{minutes}:{seconds:02}")
    }
}
