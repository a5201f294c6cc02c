//! `evolve-hud`: parse the command line, set up logging, hand over to the library.

use clap::Parser;
use evolve_hud::cli::{Cli, Command};

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Serve(config) => {
            evolve_hud::logging::init(config.server.log_format);
            let runtime = match tokio::runtime::Runtime::new() {
                Ok(rt) => rt,
                Err(err) => return fail(&anyhow::Error::new(err).context("starting the async runtime")),
            };
            match runtime.block_on(evolve_hud::server::run(config)) {
                Ok(()) => std::process::ExitCode::SUCCESS,
                Err(err) => fail(&err),
            }
        }
        Command::Hook(args) => evolve_hud::hook::run(&args),
        Command::InstallShim(args) => match evolve_hud::install::run(&args) {
            Ok(()) => std::process::ExitCode::SUCCESS,
            Err(err) => fail(&err),
        },
    }
}

/// Prints the error chain on one line each, the way a user reads it, and exits non-zero.
fn fail(err: &anyhow::Error) -> std::process::ExitCode {
    eprintln!("error: {err}");
    for cause in err.chain().skip(1) {
        eprintln!("  caused by: {cause}");
    }
    std::process::ExitCode::FAILURE
}
