//! Errors as `ask_user.AskUserError` (defined in Python, `ask_user/_errors.py`), each with the
//! SPEC code.

use std::fmt::Display;

use ask_user_host::HostError;
use pending_answer::LateRefusal;
use pyo3::prelude::*;

/// `AskUserError(code, message)`.
pub(crate) fn ask_error(code: &str, message: impl Display) -> PyErr {
    let message = message.to_string();
    Python::attach(|py| {
        let made = py
            .import("ask_user._errors")
            .and_then(|m| m.getattr("AskUserError"))
            .and_then(|class| class.call1((code, message)));
        match made {
            Ok(value) => PyErr::from_value(value),
            Err(error) => error,
        }
    })
}

/// `(code, message)`, for an error raised on the event loop when a future ends.
pub(crate) fn parts(code: &str, message: &impl Display) -> (String, String) {
    (code.to_owned(), message.to_string())
}

/// A host's error, with its code.
pub(crate) fn host(error: &HostError) -> PyErr {
    ask_error(error.code(), error)
}

/// A configuration that does not hold.
pub(crate) fn config(error: tool_ask_user::ConfigError) -> PyErr {
    ask_error("BAD_CONFIG", error)
}

/// A late answer refused, with the code the shell uses for it.
pub(crate) fn refusal(refusal: &LateRefusal) -> PyErr {
    let code = refusal.code().unwrap_or(match refusal {
        LateRefusal::UnknownSession(_) => "UNKNOWN_SESSION",
        LateRefusal::NoAgent => "NO_AGENT",
        LateRefusal::NotWaiting(_) => "NOT_WAITING",
        LateRefusal::Unavailable(_) => "UNAVAILABLE",
        _ => "UNDELIVERED",
    });
    ask_error(code, refusal)
}

/// JSON from Python that does not parse as what it should be.
pub(crate) fn bad_json(what: &str, error: &serde_json::Error) -> PyErr {
    ask_error("BAD_ARGUMENT", format!("{what}: {error}"))
}
