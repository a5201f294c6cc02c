//! `cargo bench --bench throughput`: the same measurement as
//! `evolve-hud bench` (see `evolve_hud::bench`), on the test model unless
//! `EVOLVE_HUD_BENCH_MODEL` names another GGUF. `EVOLVE_HUD_BENCH_ARGS`
//! passes further `evolve-hud bench` flags, such as `--threads 4 -r 3`.

#[path = "../tests/common/mod.rs"]
mod common;

use clap::Parser;
use evolve_hud::cli::{Cli, Command};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let model = std::env::var("EVOLVE_HUD_BENCH_MODEL")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|_| common::test_model());
    let extra = std::env::var("EVOLVE_HUD_BENCH_ARGS").unwrap_or_default();
    let mut argv = vec!["evolve-hud".to_owned(), "bench".into(), "--model".into()];
    argv.push(model.to_string_lossy().into_owned());
    argv.extend(extra.split_whitespace().map(str::to_owned));
    // `cargo bench` passes `--bench`; it is not ours.
    let Command::Bench(args) = Cli::try_parse_from(&argv)?.command else {
        unreachable!("parsed as bench")
    };
    let report = evolve_hud::bench::run(&args).await?;
    print!("{}", evolve_hud::bench::markdown(&report));
    println!("\n{}", serde_json::to_string(&report)?);
    Ok(())
}
