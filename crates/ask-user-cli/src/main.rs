//! The `ask-user` command line: see `ask-user --help` and the crate README.

use std::process::ExitCode;

use ask_user_cli::cli;
use clap::Parser;

fn main() -> ExitCode {
    let args = match cli::Cli::try_parse() {
        Ok(args) => args,
        Err(error) => return ExitCode::from(cli::report_parse_error(&error).code()),
    };
    cli::init_tracing(args.verbose);
    match run(args) {
        Ok(exit) => exit,
        Err(error) => {
            // Anything that escaped the commands' own error handling: one line, no backtrace.
            eprintln!(
                "error[INTERNAL]: {}",
                ask_user_cli::terminal::sanitize::visible(&format!("{error:#}"))
            );
            ExitCode::from(cli::Exit::Failure.code())
        }
    }
}

fn run(args: cli::Cli) -> anyhow::Result<ExitCode> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let exit = runtime.block_on(cli::run(args));
    // A blocking read of stdin (the demo waiting for Enter when Ctrl-C came first) must not keep
    // the process alive: everything the command does has finished inside `block_on`.
    runtime.shutdown_timeout(std::time::Duration::from_millis(200));
    Ok(ExitCode::from(exit.code()))
}
