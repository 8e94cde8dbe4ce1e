//! The `ask-user` command, run inside the Python process (the wheel's `ask-user` script).

use pyo3::prelude::*;

/// Runs the `ask-user` command line `argv` (its first item the program's name) and returns its
/// exit status. The interpreter's lock is released while it runs.
#[pyfunction]
pub(crate) fn run_cli(py: Python<'_>, argv: Vec<String>) -> u8 {
    py.detach(|| ask_user_cli::run_args(argv))
}

/// The state directory `ask-user mcp` and the shell use by default, when one can be found.
#[pyfunction]
pub(crate) fn default_state_dir() -> Option<String> {
    ask_user_mcp::default_state_dir().map(|dir| dir.to_string_lossy().into_owned())
}
