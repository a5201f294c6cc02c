//! `evolve-hud`: parse the command line, set up logging, hand over to the library.

use clap::Parser;
use evolve_hud::cli::{Cli, Command};

fn main() -> std::process::ExitCode {
    let cli = Cli::parse_from(evolve_hud::cli::with_llama_flags(std::env::args_os()));
    match cli.command {
        Command::Serve(config) => {
            evolve_hud::logging::init(config.server.log_format);
            let serve = match config.resolve() {
                Ok(serve) => serve,
                Err(err) => return fail(&err),
            };
            let runtime = match tokio::runtime::Runtime::new() {
                Ok(rt) => rt,
                Err(err) => return fail(&anyhow::Error::new(err).context("starting the async runtime")),
            };
            match runtime.block_on(evolve_hud::server::run(serve)) {
                Ok(()) => std::process::ExitCode::SUCCESS,
                Err(err) => fail(&err),
            }
        }
        Command::Hook(args) => evolve_hud::hook::run(&args),
        Command::Watch(args) => evolve_hud::watch::run(&args),
        Command::Status(args) => evolve_hud::watch::status(&args),
        Command::Doctor(args) => evolve_hud::doctor::run(&args),
        Command::Service(args) => match evolve_hud::service::run(&args) {
            Ok(message) => {
                print!("{message}");
                std::process::ExitCode::SUCCESS
            }
            Err(err) => fail(&err),
        },
        Command::Stop(args) => match evolve_hud::server::instance::stop(args.port()) {
            Ok(message) => {
                println!("{message}");
                std::process::ExitCode::SUCCESS
            }
            Err(err) => fail(&err),
        },
        Command::Pull(args) => match pull(&args) {
            Ok(()) => std::process::ExitCode::SUCCESS,
            Err(err) => fail(&err),
        },
        Command::Models(args) => match evolve_hud::registry::Registry::load(args.registry.as_deref()) {
            Ok(registry) => {
                print!("{}", evolve_hud::pull::list(&registry));
                std::process::ExitCode::SUCCESS
            }
            Err(err) => fail(&err),
        },
        Command::Bench(mut args) => {
            evolve_hud::logging::init(evolve_hud::cli::LogFormat::Text);
            if let Err(err) = args.model.resolve_model() {
                return fail(&err);
            }
            let report = tokio::runtime::Runtime::new()
                .map_err(anyhow::Error::from)
                .and_then(|rt| rt.block_on(evolve_hud::bench::run(&args)));
            match report {
                Ok(r) if args.json => {
                    println!("{}", serde_json::to_string_pretty(&r).unwrap_or_default());
                    std::process::ExitCode::SUCCESS
                }
                Ok(r) => {
                    print!("{}", evolve_hud::bench::markdown(&r));
                    std::process::ExitCode::SUCCESS
                }
                Err(err) => fail(&err),
            }
        }
        Command::InstallShim(args) => match evolve_hud::install::run(&args) {
            Ok(()) => std::process::ExitCode::SUCCESS,
            Err(err) => fail(&err),
        },
    }
}

/// `evolve-hud pull`: fetch, check, and say where the file is.
fn pull(args: &evolve_hud::cli::PullArgs) -> anyhow::Result<()> {
    use evolve_hud::pull::{fetch, Fetched, Options};
    let registry = evolve_hud::registry::Registry::load(args.registry.as_deref())?;
    let spec = evolve_hud::registry::resolve(&args.name, &registry)?;
    if let evolve_hud::registry::ModelSpec::Path(p) = &spec {
        anyhow::bail!(
            "`{}` is a file path; pull takes a registry name or hf:owner/repo/file.gguf",
            p.display()
        );
    }
    // Checked means against a pinned sha256; a hub file or an unpinned
    // entry is only hashed (the sha256 is printed, to pin).
    let pinned = matches!(&spec, evolve_hud::registry::ModelSpec::Entry(e) if e.sha256.is_some());
    let checked = if pinned {
        " and checked"
    } else {
        " (not checked: no pinned sha256)"
    };
    match fetch(&spec, &Options::from_env(args.offline, args.allow_unpinned))? {
        Fetched::Cached(p) => println!(
            "already present{}: {}",
            if pinned { " (checked)" } else { checked },
            p.display()
        ),
        Fetched::Downloaded(p) => println!("downloaded{checked}: {}", p.display()),
        Fetched::Local(p) => println!("{}", p.display()),
    }
    Ok(())
}

/// Prints the error chain on one line each, the way a user reads it, and exits non-zero.
fn fail(err: &anyhow::Error) -> std::process::ExitCode {
    eprintln!("error: {err}");
    for cause in err.chain().skip(1) {
        eprintln!("  caused by: {cause}");
    }
    std::process::ExitCode::FAILURE
}
