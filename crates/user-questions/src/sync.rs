//! The one poison-tolerant lock of the workspace.
//!
//! Every crate of this workspace keeps its shared state behind `std::sync::Mutex` and follows one
//! rule: a critical section leaves its data consistent before anything in it can panic, and never
//! calls into user code, a host or an answerer. Under that rule the data behind a poisoned lock is
//! still valid, and a panic on another thread must not take every later caller down with it.

use std::sync::{Mutex, MutexGuard, PoisonError};

/// Locks `mutex`, recovering the guard if a thread panicked while holding it (see the
/// [module docs](self) for when that is sound).
pub fn lock_unpoisoned<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
