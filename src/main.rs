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
    if let Some(from) = &args.from {
        let evolve_hud::registry::ModelSpec::Entry(entry) = &spec else {
            anyhow::bail!(
                "--from takes a registry name, whose sha256 the file is checked against; `{}` is none",
                args.name
            );
        };
        let path = evolve_hud::pull::import(entry, from)?;
        println!("copied and checked: {}", path.display());
        return Ok(());
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

/// A native build (`-C target-cpu=native`, the default: docs/performance.md)
/// uses every instruction set of the CPU that built it. On a CPU that lacks
/// one, the first such instruction kills the process with SIGILL, which says
/// nothing of why, and llama.cpp's initializers may run one before `main`.
/// So this check runs first of all, as an initializer of a higher priority
/// than theirs, and names what is missing and what to do instead.
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
#[used]
#[link_section = ".init_array.00099"]
static CHECK_INSTRUCTION_SETS: extern "C" fn() = check_instruction_sets;

#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
extern "C" fn check_instruction_sets() {
    // CPUID itself, not `is_x86_feature_detected!`, which a build with the
    // feature enabled answers at compile time.
    let cpuid = raw_cpuid::CpuId::new();
    let (basic, extended) = (cpuid.get_feature_info(), cpuid.get_extended_feature_info());
    let leaf1 = |has: fn(&raw_cpuid::FeatureInfo) -> bool| basic.as_ref().is_some_and(has);
    let leaf7 = |has: fn(&raw_cpuid::ExtendedFeatures) -> bool| extended.as_ref().is_some_and(has);
    let lzcnt = cpuid
        .get_extended_processor_and_feature_identifiers()
        .is_some_and(|i| i.has_lzcnt());
    let mut missing = String::new();
    macro_rules! check {
        ($($feature:tt => $has:expr),* $(,)?) => {$(
            if cfg!(target_feature = $feature) && !$has {
                missing.push(' ');
                missing.push_str($feature);
            }
        )*};
    }
    check!(
        "sse3" => leaf1(|i| i.has_sse3()), "ssse3" => leaf1(|i| i.has_ssse3()),
        "sse4.1" => leaf1(|i| i.has_sse41()), "sse4.2" => leaf1(|i| i.has_sse42()),
        "popcnt" => leaf1(|i| i.has_popcnt()), "movbe" => leaf1(|i| i.has_movbe()),
        "aes" => leaf1(|i| i.has_aesni()), "pclmulqdq" => leaf1(|i| i.has_pclmulqdq()),
        "avx" => leaf1(|i| i.has_avx()), "fma" => leaf1(|i| i.has_fma()), "f16c" => leaf1(|i| i.has_f16c()),
        "lzcnt" => lzcnt, "avx2" => leaf7(|e| e.has_avx2()), "bmi1" => leaf7(|e| e.has_bmi1()),
        "bmi2" => leaf7(|e| e.has_bmi2()), "adx" => leaf7(|e| e.has_adx()), "sha" => leaf7(|e| e.has_sha()),
        "gfni" => leaf7(|e| e.has_gfni()), "vaes" => leaf7(|e| e.has_vaes()),
        "vpclmulqdq" => leaf7(|e| e.has_vpclmulqdq()), "avxvnni" => leaf7(|e| e.has_avx_vnni()),
        "avx512f" => leaf7(|e| e.has_avx512f()), "avx512bw" => leaf7(|e| e.has_avx512bw()),
        "avx512cd" => leaf7(|e| e.has_avx512cd()), "avx512dq" => leaf7(|e| e.has_avx512dq()),
        "avx512vl" => leaf7(|e| e.has_avx512vl()), "avx512ifma" => leaf7(|e| e.has_avx512_ifma()),
        "avx512vbmi" => leaf7(|e| e.has_avx512vbmi()), "avx512vbmi2" => leaf7(|e| e.has_avx512vbmi2()),
        "avx512vnni" => leaf7(|e| e.has_avx512vnni()), "avx512bitalg" => leaf7(|e| e.has_avx512bitalg()),
        "avx512vpopcntdq" => leaf7(|e| e.has_avx512vpopcntdq()), "avx512bf16" => leaf7(|e| e.has_avx512_bf16()),
        "avx512fp16" => leaf7(|e| e.has_avx512_fp16()),
    );
    if missing.is_empty() {
        return;
    }
    let message = format!(
        "error: this evolve-hud was built for a CPU with instruction sets that this CPU lacks:{missing}\n\
         \x20 build it on this machine (cargo install --locked --path .), or use the portable build \
         (the npm package's binary; scripts/portable.sh)\n"
    );
    // SAFETY: write(2) reads `message.len()` bytes of a live buffer, and
    // _exit ends the process without running anything more of this build.
    unsafe {
        libc::write(2, message.as_ptr().cast(), message.len());
        libc::_exit(1);
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
