//! `ask_user._native`: the Rust half of the `ask_user` Python package (see the README). The
//! Python half (`packaging/pypi/python/ask_user/`) wraps it in the API people use; this module
//! passes JSON text across, so the Python side owns the shapes Python code sees.

mod answerer;
mod bench;
mod bridge;
mod cli;
mod error;
mod host;
mod inbox;

use pyo3::prelude::*;

/// The tool's definition for `mode` (`"timed"` or `"legacy"`) and `timeout` (seconds, or `-1`),
/// as JSON `{"name", "description", "parameters"}`.
#[pyfunction]
fn definition(mode: &str, timeout: i64) -> PyResult<String> {
    let config = host::config(mode, timeout)?;
    let definition = tool_ask_user::definition(&config).map_err(error::config)?;
    Ok(host::definition_json(&definition))
}

/// `text` safe for a terminal: every control or invisible format character shown as its escape
/// (`\u{1b}`), line breaks kept when `keep_lines` (the seam's one sanitiser).
#[pyfunction]
#[pyo3(signature = (text, keep_lines=true))]
fn visible(text: &str, keep_lines: bool) -> String {
    if keep_lines {
        user_questions::sanitize::visible_lines(text).into_owned()
    } else {
        user_questions::sanitize::visible(text).into_owned()
    }
}

/// The module.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_class::<host::PyHost>()?;
    m.add_class::<answerer::Registration>()?;
    m.add_class::<answerer::NextHandle>()?;
    m.add_class::<answerer::Done>()?;
    m.add_class::<inbox::PyInboxLink>()?;
    m.add_function(wrap_pyfunction!(definition, m)?)?;
    m.add_function(wrap_pyfunction!(visible, m)?)?;
    m.add_function(wrap_pyfunction!(cli::run_cli, m)?)?;
    m.add_function(wrap_pyfunction!(cli::default_state_dir, m)?)?;
    m.add_function(wrap_pyfunction!(bench::rust_round_trips, m)?)?;
    m.add_function(wrap_pyfunction!(bridge::shutdown, m)?)?;
    m.add_class::<bridge::CancelWith>()?;
    Ok(())
}
