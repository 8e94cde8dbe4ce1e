//! The one synchronisation helper of this crate.

use std::sync::{Mutex, MutexGuard, PoisonError};

/// Locks a mutex, recovering from poisoning: every critical section in this crate leaves its data
/// consistent before anything in it can panic, so the data behind a poisoned lock is still valid.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
