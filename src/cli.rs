//! The command line. Each flag has an `EVOLVE_HUD_*` environment fallback, and
//! the structs here are the configuration the rest of the crate receives.

use clap::{Args, Parser, Subcommand, ValueEnum};
use std::net::IpAddr;
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
    /// Load a GGUF model and serve the HTTP API on localhost.
    Serve(ServeConfig),
}

/// Everything `serve` needs.
#[derive(Debug, Clone, Args)]
pub struct ServeConfig {
    #[command(flatten)]
    pub model: ModelConfig,
    #[command(flatten)]
    pub server: ServerConfig,
}

/// Layers offloaded to the GPU unless `--gpu-layers` says otherwise: all of
/// them in a GPU build, none in a CPU build.
pub const DEFAULT_GPU_LAYERS: u32 = if cfg!(any(feature = "cuda", feature = "metal", feature = "vulkan")) {
    999
} else {
    0
};

/// How the model is loaded and run.
#[derive(Debug, Clone, Args)]
pub struct ModelConfig {
    /// Path to a GGUF model file.
    #[arg(long, short = 'm', env = "EVOLVE_HUD_MODEL")]
    pub model: PathBuf,

    /// Context size in tokens, shared by all cached sequences. 0 uses the
    /// model's training context.
    #[arg(long, env = "EVOLVE_HUD_CTX", default_value_t = 4096)]
    pub ctx: u32,

    /// CPU threads for decoding. Defaults to the number of available cores.
    #[arg(long, env = "EVOLVE_HUD_THREADS")]
    pub threads: Option<u32>,

    /// Model layers to offload to the GPU (needs a `cuda`, `metal` or `vulkan`
    /// build; 999 means all). 0 in CPU builds, all layers in GPU builds.
    #[arg(long, env = "EVOLVE_HUD_GPU_LAYERS", default_value_t = DEFAULT_GPU_LAYERS)]
    pub gpu_layers: u32,

    /// Flash attention. Off by default: on CPU it is several times slower for
    /// small models at long context depths.
    #[arg(long, env = "EVOLVE_HUD_FLASH_ATTN", value_enum, default_value_t = FlashAttn::Off)]
    pub flash_attn: FlashAttn,

    /// Tokens per prompt-processing batch.
    #[arg(long, env = "EVOLVE_HUD_BATCH", default_value_t = 512)]
    pub batch: u32,

    /// How many prompts keep their KV cache between requests (least recently
    /// used is evicted first). Prompts that share a prefix with the cached
    /// one only decode the new tokens.
    #[arg(long, env = "EVOLVE_HUD_KV_SLOTS", default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub kv_slots: u32,

    /// Requests that may wait for the model before new ones are turned away
    /// with 429.
    #[arg(long, env = "EVOLVE_HUD_QUEUE", default_value_t = 32, value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub queue: u32,
}

impl ModelConfig {
    /// Threads to use: the flag, or every available core.
    pub fn threads(&self) -> u32 {
        self.threads
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(4, |n| n.get() as u32))
            .max(1)
    }
}

/// Flash attention policy, passed to llama.cpp.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FlashAttn {
    Off,
    On,
    Auto,
}

/// How the HTTP server listens and logs.
#[derive(Debug, Clone, Args)]
pub struct ServerConfig {
    /// Address to bind.
    #[arg(long, env = "EVOLVE_HUD_HOST", default_value = "127.0.0.1")]
    pub host: IpAddr,

    /// Port to bind; 0 picks a free port (the log line "listening" names it).
    #[arg(long, short = 'p', env = "EVOLVE_HUD_PORT", default_value_t = 8377)]
    pub port: u16,

    /// Name under which `/v1/models` lists the model. Defaults to the file
    /// name without `.gguf`.
    #[arg(long, env = "EVOLVE_HUD_MODEL_NAME")]
    pub model_name: Option<String>,

    /// Largest accepted request body, in bytes.
    #[arg(long, env = "EVOLVE_HUD_MAX_BODY", default_value_t = 4 * 1024 * 1024)]
    pub max_body: usize,

    /// Log format on stderr. The level comes from `RUST_LOG`.
    #[arg(long, env = "EVOLVE_HUD_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
}

/// Log output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}
