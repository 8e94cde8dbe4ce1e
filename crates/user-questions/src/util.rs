//! Small helpers shared by the modules of this crate.

// Every critical section in this crate leaves its data consistent before it can panic (none of
// them calls into user code), so the data behind a poisoned lock is still valid.
pub(crate) use crate::sync::lock_unpoisoned as lock;

/// Wall-clock Unix milliseconds, for event times and ages only (deadlines use the monotonic
/// clock); 0 before 1970.
pub fn now_unix_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// JSON-quotes a string for an error message, escaped as `serde_json` escapes it.
pub(crate) fn quoted(text: &str) -> String {
    serde_json::Value::from(text).to_string()
}
