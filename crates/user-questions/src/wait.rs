//! The foreground timed wait and its claims (SPEC §4.7.2).
//!
//! A wait has a monotonic deadline, a private cancellation token (a child of the caller's), and at
//! most one timer. The host counts down only while nobody holds a claim; when the last claim goes,
//! the original deadline applies again, at once if it has passed.

use std::fmt;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use tokio::task::AbortHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::util::lock;

/// Why a wait ended. The first close wins.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WaitEnd {
    /// The deadline passed with no claim held.
    TimedOut,
    /// The caller's token was cancelled.
    ParentCancelled,
    /// The seam shut down.
    Shutdown,
    /// `ask_timed` finished with an outcome and closed the wait.
    Settled,
}

struct WaitShared {
    deadline: Instant,
    token: CancellationToken,
    state: Mutex<WaitState>,
    // Timers are spawned through the runtime the wait was made in, so a claim can be released
    // (and the timer re-armed) from any thread, Tokio's or not.
    runtime: tokio::runtime::Handle,
}

#[derive(Default)]
struct WaitState {
    end: Option<WaitEnd>,
    claims: u32,
    timer: Option<AbortHandle>,
}

impl WaitShared {
    fn end(&self) -> Option<WaitEnd> {
        let recorded = lock(&self.state).end;
        // The private token is a child of the caller's, so the caller's cancellation reaches it
        // synchronously, before anything is recorded: read that as the parent's end.
        recorded.or_else(|| {
            self.token
                .is_cancelled()
                .then_some(WaitEnd::ParentCancelled)
        })
    }

    fn close(&self, reason: WaitEnd) {
        let timer = {
            let mut state = lock(&self.state);
            if state.end.is_some() {
                return;
            }
            state.end = Some(if self.token.is_cancelled() {
                WaitEnd::ParentCancelled
            } else {
                reason
            });
            // Closing releases every claim (SPEC §4.7.2); a later `release` finds none to drop.
            state.claims = 0;
            state.timer.take()
        };
        if let Some(timer) = timer {
            timer.abort();
        }
        self.token.cancel();
    }

    /// Arms the timer when the wait is live, unclaimed and not yet due; expires it at once when
    /// unclaimed and overdue.
    fn schedule(self: &Arc<Self>) {
        let mut state = lock(&self.state);
        if let Some(timer) = state.timer.take() {
            timer.abort();
        }
        if state.end.is_some() || self.token.is_cancelled() || state.claims > 0 {
            return;
        }
        if Instant::now() >= self.deadline {
            drop(state);
            self.close(WaitEnd::TimedOut);
            return;
        }
        // The task holds only a weak reference, so a dropped wait frees itself; the wait owns the
        // task through its abort handle.
        let weak: Weak<Self> = Arc::downgrade(self);
        let token = self.token.clone();
        let deadline = self.deadline;
        let task = self.runtime.spawn(async move {
            tokio::select! {
                biased;
                () = token.cancelled() => {}
                () = tokio::time::sleep_until(deadline) => {
                    if let Some(shared) = weak.upgrade() {
                        shared.close(WaitEnd::TimedOut);
                    }
                }
            }
        });
        state.timer = Some(task.abort_handle());
    }

    fn attach(self: &Arc<Self>) -> Option<(WaitClaim, u32)> {
        let mut state = lock(&self.state);
        if state.end.is_some() || self.token.is_cancelled() {
            return None;
        }
        let now = Instant::now();
        if state.claims == 0 && now >= self.deadline {
            // An overdue claim expires the wait instead of reviving it.
            drop(state);
            self.close(WaitEnd::TimedOut);
            return None;
        }
        state.claims += 1;
        if let Some(timer) = state.timer.take() {
            timer.abort();
        }
        let remaining = self.deadline.saturating_duration_since(now);
        let remaining_ms = u64::try_from(remaining.as_millis()).unwrap_or(u64::MAX);
        let claims = state.claims;
        drop(state);
        Some((
            WaitClaim {
                shared: Arc::clone(self),
                remaining_ms,
                released: false,
            },
            claims,
        ))
    }

    fn release(self: &Arc<Self>) {
        {
            let mut state = lock(&self.state);
            state.claims = state.claims.saturating_sub(1);
        }
        self.schedule();
    }

    async fn ended(&self) -> WaitEnd {
        self.token.cancelled().await;
        self.end().unwrap_or(WaitEnd::ParentCancelled)
    }

    fn has_timer(&self) -> bool {
        let state = lock(&self.state);
        state.end.is_none()
            && !self.token.is_cancelled()
            && state.timer.as_ref().is_some_and(|t| !t.is_finished())
    }
}

impl Drop for WaitShared {
    fn drop(&mut self) {
        let state = self
            .state
            .get_mut()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(timer) = state.timer.take() {
            timer.abort();
        }
    }
}

/// A foreground timed wait (SPEC §4.7.2). Cloning gives another handle to the same wait.
#[derive(Clone)]
pub struct TimedQuestionWait {
    shared: Arc<WaitShared>,
}

impl TimedQuestionWait {
    /// A wait whose deadline is `timeout` from now and whose private token is a child of `parent`.
    /// If `parent` is already cancelled the wait is closed at once and no timer starts. Claims
    /// may later be taken and released from any thread: timers run on this runtime.
    ///
    /// # Panics
    ///
    /// Outside a Tokio runtime with a timer, because the wait arms its timer tasks there.
    pub fn new(parent: &CancellationToken, timeout: Duration) -> Self {
        let shared = Arc::new(WaitShared {
            deadline: Instant::now() + timeout,
            token: parent.child_token(),
            state: Mutex::new(WaitState::default()),
            runtime: tokio::runtime::Handle::current(),
        });
        if parent.is_cancelled() {
            shared.close(WaitEnd::ParentCancelled);
        } else {
            shared.schedule();
        }
        Self { shared }
    }

    /// Claims the wait: stops the host countdown while the claim is held. `None` when the wait
    /// has ended, or when it is unclaimed and overdue (it then expires with
    /// [`WaitEnd::TimedOut`]).
    pub fn attach(&self) -> Option<WaitClaim> {
        self.attach_counted().map(|(claim, _)| claim)
    }

    pub(crate) fn attach_counted(&self) -> Option<(WaitClaim, u32)> {
        self.shared.attach()
    }

    /// Ends the wait (idempotent: the first close wins), cancels the private token, stops the
    /// timer and wakes everyone waiting for the end.
    pub fn close(&self, reason: WaitEnd) {
        self.shared.close(reason);
    }

    /// How the wait ended, if it has.
    pub fn end(&self) -> Option<WaitEnd> {
        self.shared.end()
    }

    /// Resolves when the wait ends. Cancel safe.
    pub async fn ended(&self) -> WaitEnd {
        self.shared.ended().await
    }

    /// The private token answerers receive; cancelled when the wait ends.
    pub fn token(&self) -> &CancellationToken {
        &self.shared.token
    }

    /// The monotonic deadline.
    pub fn deadline(&self) -> Instant {
        self.shared.deadline
    }

    /// The number of claims held now.
    pub fn claims(&self) -> u32 {
        lock(&self.shared.state).claims
    }

    /// Whether the host countdown runs now: true while the wait is open, unclaimed and its timer
    /// is armed; false while a claim holds it, and once it has ended or its private token is
    /// cancelled (SPEC §4.7.2).
    ///
    /// A host that runs a wait of its own ([`TimedQuestionWait::new`]) uses it to show whether the
    /// window is counting down or held by a claim, and to check that ending the wait disarmed its
    /// timer (the "no timers left" check of SPEC §12).
    pub fn has_timer(&self) -> bool {
        self.shared.has_timer()
    }

    pub(crate) fn same_wait(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.shared, &other.shared)
    }
}

impl fmt::Debug for TimedQuestionWait {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TimedQuestionWait")
            .field("deadline", &self.shared.deadline)
            .field("end", &self.end())
            .field("claims", &self.claims())
            .finish()
    }
}

/// A claim on a timed wait. Dropping it, or [`WaitClaim::release`], releases it; the wait closing
/// releases it too.
#[must_use = "dropping the claim releases it at once"]
pub struct WaitClaim {
    shared: Arc<WaitShared>,
    remaining_ms: u64,
    released: bool,
}

impl WaitClaim {
    /// Whole milliseconds left until the original deadline, computed when the claim was taken
    /// (0 when it had already passed). A UI derives its local countdown from it.
    pub fn remaining_ms(&self) -> u64 {
        self.remaining_ms
    }

    /// Releases the claim now.
    pub fn release(mut self) {
        self.release_once();
    }

    /// Resolves when the wait ends (answered, timed out, cancelled or shut down). Cancel safe.
    pub async fn ended(&self) -> WaitEnd {
        self.shared.ended().await
    }

    /// How the wait ended, if it has.
    pub fn end(&self) -> Option<WaitEnd> {
        self.shared.end()
    }

    fn release_once(&mut self) {
        if !self.released {
            self.released = true;
            self.shared.release();
        }
    }
}

impl Drop for WaitClaim {
    fn drop(&mut self) {
        self.release_once();
    }
}

impl fmt::Debug for WaitClaim {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WaitClaim")
            .field("remaining_ms", &self.remaining_ms)
            .field("end", &self.end())
            .finish_non_exhaustive()
    }
}
