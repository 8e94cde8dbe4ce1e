//! The `ask-user` command line: see `ask-user --help` and the crate README.

use std::process::ExitCode;

fn main() -> ExitCode {
    ExitCode::from(ask_user_cli::run_args(std::env::args_os()))
}
