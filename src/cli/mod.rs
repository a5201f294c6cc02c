//! The command line. Each flag has an `EVOLVE_HUD_*` environment fallback, and
//! the structs here are the configuration the rest of the crate receives.

mod serve;

pub use crate::client::SidecarArgs;
pub use crate::engine::local::FlashAttn;
pub use crate::secret::Secret;
pub use crate::watch::{StatusArgs, WatchArgs};
pub use serve::{
    ApiSettings, Credentials, EngineArgs, HudArgs, LogFormat, Missing, ModelConfig, Serve, ServeConfig, ServeEngine,
    ServerConfig,
};

use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

/// Local-model companion for the OpenCode coding agent.
#[derive(Debug, Parser)]
#[command(name = "evolve-hud", version, about)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve the HTTP API on localhost, with a GGUF model loaded here or a
    /// remote engine (--engine).
    Serve(Box<ServeConfig>),
    /// Install the OpenCode plugin that shows the HUD to the agent.
    InstallShim(InstallShimArgs),
    /// Download a registry model (or hf:owner/repo/file.gguf) into the
    /// Hugging Face cache, resuming a partial download, and check its sha256.
    Pull(PullArgs),
    /// List the registry's models and which are on disk.
    Models(ModelsArgs),
    /// Measure token throughput (llama-bench's pp and tg) and the chat API's
    /// time to first token.
    Bench(BenchArgs),
    /// Answer an opencode-evolve hook (JSON on stdin, JSONL on stdout) by
    /// asking the running sidecar.
    Hook(HookArgs),
    /// Watch the running sidecar in the terminal: every session's HUD as the
    /// agent gets it, live, with the model's state.
    Watch(WatchArgs),
    /// Print the running sidecar's health and sessions once (exit 1 when it
    /// cannot be reached), for scripts and status lines.
    Status(StatusArgs),
    /// Stop the sidecar serving on a port of this machine (SIGTERM, then
    /// wait for it to end).
    Stop(StopArgs),
    /// Check everything a HUD needs (binary, model, sidecar, plugin, port
    /// and token), each with its fix.
    Doctor(DoctorArgs),
    /// Run the sidecar as a user service: a systemd user unit (Linux) or a
    /// launchd agent (macOS).
    Service(ServiceArgs),
}

#[derive(Debug, Clone, Args)]
pub struct DoctorArgs {
    #[command(flatten)]
    pub sidecar: SidecarArgs,
    /// The project whose `.opencode/plugins/` is checked.
    #[arg(long, default_value = ".")]
    pub project: PathBuf,
    /// Registry file to use instead of the built-in models.toml.
    #[arg(long, env = "EVOLVE_HUD_REGISTRY")]
    pub registry: Option<PathBuf>,
}

#[derive(Debug, Clone, Args)]
pub struct ServiceArgs {
    #[command(subcommand)]
    pub action: ServiceAction,
}

#[derive(Debug, Clone, Subcommand)]
pub enum ServiceAction {
    /// Write the unit (or agent) that runs `evolve-hud serve` at login, and
    /// say how to enable it.
    Install {
        /// The model to serve (a GGUF file or a registry name); by default
        /// the registry's default model.
        #[arg(long, short = 'm')]
        model: Option<String>,
        /// The port to serve on.
        #[arg(long, default_value_t = evolve_hud_api::DEFAULT_PORT)]
        port: u16,
    },
    /// Remove the unit (or agent).
    Uninstall,
}

#[derive(Debug, Clone, Args)]
pub struct StopArgs {
    /// The port the sidecar serves on. Default: the launch record's
    /// (`install-shim --port`, `service install --port`), else 8377.
    #[arg(long, env = "EVOLVE_HUD_PORT")]
    pub port: Option<u16>,
}

impl StopArgs {
    pub fn port(&self) -> u16 {
        self.port.unwrap_or_else(crate::launch::sidecar_port)
    }
}

/// `evolve-hud pull`.
#[derive(Debug, Clone, Args)]
pub struct PullArgs {
    /// Registry name, or hf:owner/repo/file.gguf[@revision].
    pub name: String,

    /// Download even when the registry pins no sha256 (it is printed).
    #[arg(long)]
    pub allow_unpinned: bool,

    /// Use only the cache (also HF_HUB_OFFLINE=1).
    #[arg(long)]
    pub offline: bool,

    /// Take the model from this file (downloaded elsewhere, or from a
    /// mirror) instead of the Hub: its size and sha256 are checked against
    /// the registry entry, then it is copied into evolve-hud's cache, where
    /// `serve` finds it by name.
    #[arg(long, value_name = "FILE", conflicts_with = "offline")]
    pub from: Option<PathBuf>,

    /// Registry file to use instead of the built-in models.toml.
    #[arg(long, env = "EVOLVE_HUD_REGISTRY")]
    pub registry: Option<PathBuf>,
}

/// `evolve-hud models`.
#[derive(Debug, Clone, Args)]
pub struct ModelsArgs {
    /// Registry file to use instead of the built-in models.toml.
    #[arg(long, env = "EVOLVE_HUD_REGISTRY")]
    pub registry: Option<PathBuf>,
}

/// `evolve-hud bench`.
#[derive(Debug, Clone, Args)]
pub struct BenchArgs {
    #[command(flatten)]
    pub model: ModelConfig,

    /// Prompt tokens per pp test (0 skips it).
    #[arg(short = 'p', long = "n-prompt", default_value_t = 512)]
    pub prompt: u32,

    /// Generated tokens per tg test (0 skips it).
    #[arg(short = 'n', long = "n-gen", default_value_t = 128)]
    pub gen: u32,

    /// Measured runs per test.
    #[arg(short = 'r', long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..))]
    pub reps: u32,

    /// Unmeasured runs before them.
    #[arg(long, default_value_t = 1)]
    pub warmup: u32,

    /// Streamed chat requests for the end-to-end numbers (0 skips them).
    #[arg(long, default_value_t = 3)]
    pub e2e_requests: u32,

    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}

/// `evolve-hud hook <name>`.
#[derive(Debug, Clone, Args)]
pub struct HookArgs {
    /// The hook: discover, heartbeat, compacting, tool_after,
    /// observe_message or execute_tool (others answer nothing).
    pub hook: String,

    #[command(flatten)]
    pub sidecar: SidecarArgs,

    /// Longest the sidecar's model may work on a heartbeat or compaction text.
    #[arg(long, env = "EVOLVE_HUD_DEADLINE_MS", default_value_t = 8000)]
    pub deadline_ms: u64,
}

/// Where and how `install-shim` installs the plugin: its files copied into
/// OpenCode's plugin folder, or its npm package named in `opencode.json`.
#[derive(Debug, Clone, Args)]
pub struct InstallShimArgs {
    /// Project whose `.opencode/plugins/` gets the plugin.
    #[arg(long, default_value = ".", conflicts_with = "global")]
    pub project: PathBuf,

    /// Install for every project: `$XDG_CONFIG_HOME/opencode/plugins/`
    /// (`~/.config/opencode/plugins/`).
    #[arg(long)]
    pub global: bool,

    /// Write the plugin's entry file to stdout instead of installing it. It
    /// imports its modules from an `evolve-hud/` folder beside it, which this
    /// does not write: install, or copy `plugin-shim/evolve-hud/` too.
    #[arg(long, conflicts_with = "uninstall")]
    pub print: bool,

    /// Name the npm package `opencode-evolve-hud` in the project's
    /// `opencode.json` (with --global, the global one) instead of copying
    /// the plugin's files: OpenCode installs it from npm on its next start,
    /// with the sidecar binary for this platform. Comments and every other
    /// setting in the file stay as they are.
    #[arg(long, conflicts_with_all = ["print", "uninstall"])]
    pub npm: bool,

    /// Remove the plugin: its copied files and its entry in `opencode.json`.
    #[arg(long)]
    pub uninstall: bool,

    /// The model the plugin has the sidecar serve when it starts one (a GGUF
    /// file or a registry name); by default the registry's default model.
    #[arg(long, short = 'm')]
    pub model: Option<String>,

    /// The port the plugin talks to, and serves its sidecar on when it
    /// starts one; recorded for every command. By default the one recorded
    /// before, else 8377.
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..))]
    pub port: Option<u16>,

    /// Registry file to check `--model` names against instead of the
    /// built-in models.toml.
    #[arg(long, env = "EVOLVE_HUD_REGISTRY")]
    pub registry: Option<PathBuf>,
}

/// llama.cpp's multi-letter short flags (`-ngl 99`, `-np 4`, `-fa on`),
/// which clap cannot declare, as the long flags they stand for.
pub const LLAMA_FLAGS: [(&str, &str); 3] = [("-ngl", "--gpu-layers"), ("-np", "--kv-slots"), ("-fa", "--flash-attn")];

/// The command line with [`LLAMA_FLAGS`] spelled as our long flags
/// (`-ngl=99` too). Only whole words change; values are left alone.
pub fn with_llama_flags(args: impl IntoIterator<Item = std::ffi::OsString>) -> Vec<std::ffi::OsString> {
    args.into_iter()
        .map(|arg| {
            let Some(text) = arg.to_str() else { return arg };
            for (short, long) in LLAMA_FLAGS {
                if text == short {
                    return long.into();
                }
                if let Some(value) = text.strip_prefix(short).and_then(|r| r.strip_prefix('=')) {
                    return format!("{long}={value}").into();
                }
            }
            arg
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::local::LocalConfig;

    fn serve(args: &[&str]) -> ServeConfig {
        let cli = Cli::try_parse_from(["evolve-hud", "serve", "--model", "m.gguf"].iter().chain(args)).expect("parses");
        match cli.command {
            Command::Serve(mut config) => {
                config.model.resolve_model().expect("a path resolves to itself");
                *config
            }
            _ => unreachable!("serve was given"),
        }
    }

    #[test]
    fn llama_servers_flag_names_are_taken() {
        let args = [
            "evolve-hud",
            "serve",
            "--model",
            "m.gguf",
            "--ctx-size",
            "1024",
            "--n-gpu-layers",
            "0",
            "--parallel",
            "3",
            "-b",
            "256",
            "-fa",
            "--port",
            "9",
        ]
        .map(std::ffi::OsString::from);
        let Command::Serve(config) = Cli::try_parse_from(with_llama_flags(args)).expect("parses").command else {
            unreachable!("serve was given")
        };
        assert_eq!(config.model.ctx, Some(1024));
        assert_eq!(config.model.gpu_layers, 0);
        assert_eq!(config.model.kv_slots, 3);
        assert_eq!(config.model.batch, 256);
        assert_eq!(config.model.flash_attn, FlashAttn::On, "a bare -fa is on");
        assert_eq!(config.server.port(), 9);
        for (flag, value) in [("--batch-size", "64"), ("-fa", "off"), ("-fa", "auto")] {
            let args = ["evolve-hud", "serve", "--model", "m.gguf", flag, value].map(std::ffi::OsString::from);
            assert!(Cli::try_parse_from(with_llama_flags(args)).is_ok(), "{flag} {value}");
        }
    }

    #[test]
    fn each_commands_help_lists_only_its_own_options() {
        use clap::CommandFactory;
        let cli = Cli::command();
        let longs = |name: &str| -> Vec<String> {
            let command = cli.find_subcommand(name).expect("a subcommand");
            command
                .get_arguments()
                .filter_map(|a| a.get_long().map(str::to_owned))
                .collect()
        };
        let bench = longs("bench");
        for serve_only in ["queue", "keep-alive", "nice", "port", "facts-without-model"] {
            assert!(
                !bench.contains(&serve_only.to_owned()),
                "bench lists --{serve_only}: {bench:?}"
            );
        }
        let serve = longs("serve");
        for own in ["queue", "keep-alive", "nice", "ctx", "batch", "flash-attn"] {
            assert!(serve.contains(&own.to_owned()), "serve lacks --{own}");
        }
    }

    #[test]
    fn model_is_read_as_a_hub_file_a_path_or_a_name() {
        use crate::registry::ModelArg;
        let model = |spec: &str| -> Result<ModelArg, String> {
            let cli = Cli::try_parse_from(["evolve-hud", "serve", "--model", spec]).map_err(|e| e.to_string())?;
            match cli.command {
                Command::Serve(config) => Ok(config.model.model.expect("given")),
                _ => unreachable!("serve was given"),
            }
        };
        assert_eq!(model("qwen-coder"), Ok(ModelArg::Name("qwen-coder".into())));
        assert_eq!(model("./q.gguf"), Ok(ModelArg::Path("./q.gguf".into())));
        assert!(matches!(model("hf:o/r/f.gguf@v1"), Ok(ModelArg::Hub { revision, .. }) if revision == "v1"));
        let refused = model("hf:owner/file.gguf").expect_err("not a hub file");
        assert!(refused.contains("hf:owner/repo/file.gguf"), "{refused}");
        assert_eq!(serve(&[]).model.path().unwrap(), std::path::Path::new("m.gguf"));
    }

    #[test]
    fn switches_and_counts_read_as_users_write_them() {
        for (word, on) in [
            ("on", true),
            ("off", false),
            ("true", true),
            ("false", false),
            ("yes", true),
            ("0", false),
        ] {
            assert_eq!(serve(&["--hud-extract", word]).hud.hud_extract, on, "{word}");
        }
        assert_eq!(
            serve(&["--threads", "0"]).local().unwrap().threads,
            LocalConfig::all_cores()
        );
        assert_eq!(serve(&["--threads", "3"]).local().unwrap().threads, 3);
    }

    #[test]
    fn llama_cpp_short_flags_are_understood() {
        let args = [
            "evolve-hud",
            "serve",
            "--model",
            "m.gguf",
            "-c",
            "2048",
            "-t",
            "3",
            "-ngl",
            "99",
            "-np=2",
            "-fa",
            "off",
        ];
        let cli = Cli::try_parse_from(with_llama_flags(args.iter().map(Into::into))).expect("parses");
        let Command::Serve(config) = cli.command else {
            unreachable!("serve was given")
        };
        let m = &config.model;
        assert_eq!(
            (m.ctx, m.threads, m.gpu_layers, m.kv_slots),
            (Some(2048), Some(3), 99, 2)
        );
        assert_eq!(m.flash_attn, FlashAttn::Off);
        // `-p` is bench's prompt size, as in llama-bench; serve's port is --port.
        assert!(Cli::try_parse_from(["evolve-hud", "serve", "-p", "9000"]).is_err());
        assert!(Cli::try_parse_from(["evolve-hud", "bench", "-p", "64"]).is_ok());
    }

    #[test]
    fn serve_help_names_each_llama_cpp_short_flag() {
        use clap::CommandFactory;
        let help = Cli::command()
            .find_subcommand_mut("serve")
            .expect("serve")
            .render_long_help()
            .to_string();
        for (short, long) in LLAMA_FLAGS {
            let entry = help.split(long).nth(1).expect(long);
            let entry = entry.split("\n\n").next().unwrap_or(entry);
            assert!(
                entry.contains(short),
                "--help of {long} does not name {short}:\n{entry}"
            );
        }
    }
}
