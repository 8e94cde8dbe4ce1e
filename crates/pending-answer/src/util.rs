//! Small helpers: poison-tolerant locking and session-instance identity (SPEC §0.3).

use std::sync::{Arc, Weak};

use user_questions::{Session, SessionRef};

// Every critical section in this crate leaves its map consistent before anything in it can panic
// (none of them calls into the host), so the data behind a poisoned lock is still valid.
pub(crate) use user_questions::sync::lock_unpoisoned as lock;

/// The map key of a live session instance: the address of the data it points to (vtables are
/// ignored, as in `same_session`).
pub(crate) fn session_key(session: &SessionRef) -> usize {
    Arc::as_ptr(session).cast::<()>().addr()
}

/// A session instance held without keeping it alive. An entry keyed by [`session_key`] stores one,
/// and is treated as gone once the instance has been dropped.
pub(crate) struct SessionSlot {
    session: Weak<dyn Session>,
}

impl SessionSlot {
    pub(crate) fn new(session: &SessionRef) -> Self {
        Self {
            session: Arc::downgrade(session),
        }
    }

    /// Whether the instance is still alive.
    pub(crate) fn is_live(&self) -> bool {
        self.session.strong_count() > 0
    }

    /// Whether this slot holds exactly `session`, alive.
    pub(crate) fn is(&self, session: &SessionRef) -> bool {
        self.is_live() && std::ptr::addr_eq(self.session.as_ptr(), Arc::as_ptr(session))
    }
}

/// Wall-clock Unix milliseconds, for lifecycle events only.
pub(crate) fn now_unix_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}
