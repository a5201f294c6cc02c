//! `serve`'s flags: the model and how it runs, or a remote engine; the
//! HTTP server; the HUD.

use crate::engine::lifecycle::KeepAlive;
use crate::engine::local::{FlashAttn, LocalConfig};
use crate::engine::remote::RemoteConfig;
use crate::hud::HudConfig;
use crate::registry::ModelArg;
use crate::secret::Secret;
use clap::{Args, ValueEnum};
use std::net::IpAddr;
use std::path::PathBuf;

/// Everything `serve` needs.
#[derive(Debug, Clone, Args)]
pub struct ServeConfig {
    #[command(flatten)]
    pub model: ModelConfig,
    #[command(flatten)]
    pub serving: ServingConfig,
    #[command(flatten)]
    pub engine: EngineArgs,
    #[command(flatten)]
    pub server: ServerConfig,
    #[command(flatten)]
    pub hud: HudArgs,
}

/// A remote engine to send model work to, instead of loading a model.
#[derive(Debug, Clone, Args)]
pub struct EngineArgs {
    /// An OpenAI-compatible engine (llama-server, vLLM, Ollama) to send model
    /// work to, such as http://gpu-box:8080/v1; no model is loaded here and
    /// the HUD state stays here.
    #[arg(long, env = "EVOLVE_HUD_ENGINE", conflicts_with = "model")]
    pub engine: Option<String>,

    /// Load no model and use no engine: the HUD's facts only, at once and
    /// in a few MiB. Model work (the HUD's questions, chat, the model's
    /// part of compaction texts) is refused with the reason.
    #[arg(long, env = "EVOLVE_HUD_NO_MODEL", conflicts_with_all = ["model", "engine"], value_parser = clap::builder::BoolishValueParser::new())]
    pub no_model: bool,

    /// When the model cannot be had (not on disk, not a GGUF file), serve
    /// the HUD's facts instead of exiting, say why in /health with the
    /// command that fixes it, and restart in place once the model is on
    /// disk. Nothing is downloaded. The plugin starts its sidecar so.
    #[arg(long, env = "EVOLVE_HUD_FACTS_WITHOUT_MODEL", value_parser = clap::builder::BoolishValueParser::new())]
    pub facts_without_model: bool,

    /// The engine's model to use. Default: the first the engine lists.
    #[arg(long, env = "EVOLVE_HUD_ENGINE_MODEL", requires = "engine")]
    pub engine_model: Option<String>,

    /// File holding a bearer token the engine wants (never logged).
    #[arg(long, env = "EVOLVE_HUD_ENGINE_TOKEN_FILE", requires = "engine")]
    pub engine_token_file: Option<PathBuf>,

    /// Longest wait, in milliseconds, for the engine to start answering, and
    /// for each next piece of a streamed answer.
    #[arg(long, env = "EVOLVE_HUD_ENGINE_TIMEOUT_MS", default_value_t = RemoteConfig::TIMEOUT.as_millis() as u64)]
    pub engine_timeout_ms: u64,

    /// Requests sent to the engine at once; more are answered 429.
    #[arg(long, env = "EVOLVE_HUD_ENGINE_PARALLEL", default_value_t = RemoteConfig::MAX_IN_FLIGHT, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub engine_parallel: u32,
}

impl EngineArgs {
    /// The remote engine's configuration, when `--engine` is given.
    pub fn remote(&self) -> anyhow::Result<Option<RemoteConfig>> {
        let Some(url) = &self.engine else {
            return Ok(None);
        };
        Ok(Some(RemoteConfig {
            url: url.clone(),
            model: self.engine_model.clone(),
            token: self.engine_token_file.as_deref().map(Secret::from_file).transpose()?,
            timeout: std::time::Duration::from_millis(self.engine_timeout_ms.max(1)),
            max_in_flight: self.engine_parallel as usize,
        }))
    }
}

/// The HUD's budget, limits and model part.
#[derive(Debug, Clone, Args)]
pub struct HudArgs {
    /// Tokens the HUD may take, counted with --hud-tokenizer.
    #[arg(long, env = "EVOLVE_HUD_BUDGET", default_value_t = HudConfig::default().budget.tokens)]
    pub hud_budget: usize,

    /// `tokenizer.json` of the agent's main model, to count the budget in its
    /// tokens. Without it the local model's vocabulary counts.
    #[arg(long, env = "EVOLVE_HUD_TOKENIZER")]
    pub hud_tokenizer: Option<PathBuf>,

    /// Tool calls listed in the HUD at most.
    #[arg(long, env = "EVOLVE_HUD_CALLS", default_value_t = HudConfig::default().budget.calls)]
    pub hud_calls: usize,

    /// Let the local model read failed outputs that no parser knows, for
    /// findings checked against them: on or off (also true/false, yes/no, 1/0).
    #[arg(long, env = "EVOLVE_HUD_EXTRACT", default_value_t = HudConfig::default().extract, action = clap::ArgAction::Set, value_parser = clap::builder::BoolishValueParser::new())]
    pub hud_extract: bool,

    /// Quiet milliseconds after a change before the model is asked.
    #[arg(long, env = "EVOLVE_HUD_DEBOUNCE_MS", default_value_t = HudConfig::default().debounce.as_millis() as u64)]
    pub hud_debounce_ms: u64,

    /// Longest one answer of the model may take, in milliseconds.
    #[arg(long, env = "EVOLVE_HUD_EXTRACT_TIMEOUT_MS", default_value_t = HudConfig::default().extract_timeout.as_millis() as u64)]
    pub hud_extract_timeout_ms: u64,

    /// Sessions kept (least recently synced evicted first).
    #[arg(long, env = "EVOLVE_HUD_MAX_SESSIONS", default_value_t = HudConfig::default().max_sessions)]
    pub hud_max_sessions: usize,

    /// Tool calls kept per session (oldest dropped first).
    #[arg(long, env = "EVOLVE_HUD_MAX_CALLS", default_value_t = HudConfig::default().limits.max_calls)]
    pub hud_max_calls: usize,

    /// Bytes of session state kept over all sessions.
    #[arg(long, env = "EVOLVE_HUD_MAX_STATE_BYTES", default_value_t = HudConfig::default().max_bytes)]
    pub hud_max_state_bytes: usize,
}

impl HudArgs {
    pub fn config(&self) -> HudConfig {
        use crate::hud::{render::Budget, session::Limits};
        HudConfig {
            budget: Budget {
                tokens: self.hud_budget,
                calls: self.hud_calls.max(1),
            },
            limits: Limits {
                max_calls: self.hud_max_calls.max(1),
                ..Limits::default()
            },
            max_sessions: self.hud_max_sessions.max(1),
            max_bytes: self.hud_max_state_bytes,
            extract: self.hud_extract,
            debounce: std::time::Duration::from_millis(self.hud_debounce_ms),
            extract_timeout: std::time::Duration::from_millis(self.hud_extract_timeout_ms),
        }
    }
}

/// How the model is loaded and run.
#[derive(Debug, Clone, Args)]
pub struct ModelConfig {
    /// A GGUF file, a registry name (`evolve-hud models`), or a hub file as
    /// hf:owner/repo/file.gguf[@revision]. Names and hub files are downloaded
    /// into the Hugging Face cache when missing.
    #[arg(long, short = 'm', env = "EVOLVE_HUD_MODEL")]
    pub model: Option<ModelArg>,

    /// The GGUF file to load, once [`ModelConfig::resolve_model`] has found
    /// or fetched what `--model` names.
    #[arg(skip)]
    pub file: Option<PathBuf>,

    /// Context tokens per prompt (each KV slot holds this many). 0 uses the
    /// model's training context. Default: the registry entry's, else 4096.
    #[arg(long, short = 'c', visible_alias = "ctx-size", env = "EVOLVE_HUD_CTX")]
    pub ctx: Option<u32>,

    /// Registry file to use instead of the built-in models.toml.
    #[arg(long, env = "EVOLVE_HUD_REGISTRY")]
    pub registry: Option<PathBuf>,

    /// Use only models already on disk (also HF_HUB_OFFLINE=1).
    #[arg(long)]
    pub offline: bool,

    /// Download a registry model or hub file whose sha256 is not pinned
    /// (and print the sha256 to pin).
    #[arg(long)]
    pub allow_unpinned: bool,

    /// CPU threads for decoding. Defaults to the number of available cores
    /// (so does 0). While other processes keep cores busy, the model decodes
    /// with the free ones (at least 1) unless --fixed-threads is given.
    #[arg(long, short = 't', env = "EVOLVE_HUD_THREADS")]
    pub threads: Option<u32>,

    /// Always decode with --threads threads, however busy the machine is.
    /// Without it, a request finding other processes running decodes on the
    /// cores they leave free: llama.cpp's threads wait for each other at
    /// every step, so one without a core of its own slows them all.
    #[arg(long, env = "EVOLVE_HUD_FIXED_THREADS", value_parser = clap::builder::BoolishValueParser::new())]
    pub fixed_threads: bool,

    /// Model layers to offload to the GPU (needs a `cuda`, `metal` or `vulkan`
    /// build; 999 means all). 0 in CPU builds, all layers in GPU builds.
    /// Also llama.cpp's `-ngl N`.
    #[arg(long, visible_alias = "n-gpu-layers", env = "EVOLVE_HUD_GPU_LAYERS", default_value_t = LocalConfig::GPU_LAYERS)]
    pub gpu_layers: u32,

    /// Flash attention. `auto`: off on CPU, where it is several times slower
    /// for small models at long context depths; llama.cpp's choice (on, where
    /// supported) when layers are offloaded to a GPU. Also llama.cpp's `-fa`;
    /// given bare, `on`.
    #[arg(long, env = "EVOLVE_HUD_FLASH_ATTN", value_enum, default_value_t = LocalConfig::FLASH_ATTN, num_args = 0..=1, default_missing_value = "on")]
    pub flash_attn: FlashAttn,

    /// Tokens per prompt-processing batch. Also llama.cpp's `-b N`.
    #[arg(long, short = 'b', visible_alias = "batch-size", env = "EVOLVE_HUD_BATCH", default_value_t = LocalConfig::BATCH)]
    pub batch: u32,

    /// How many prompts keep their KV cache between requests (least recently
    /// used is evicted first). Prompts that share a prefix with the cached
    /// one only decode the new tokens. Also llama.cpp's `-np N` and
    /// `--parallel N`.
    #[arg(long, visible_alias = "parallel", env = "EVOLVE_HUD_KV_SLOTS", default_value_t = LocalConfig::KV_SLOTS, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub kv_slots: u32,
}

/// How a serving model takes work and gives back memory: `serve`'s own
/// flags beside the model's (`bench` has no queue and keeps its model).
#[derive(Debug, Clone, Args)]
pub struct ServingConfig {
    /// Requests that may wait for the model before new ones are turned away
    /// with 429.
    #[arg(long, env = "EVOLVE_HUD_QUEUE", default_value_t = LocalConfig::QUEUE, value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub queue: u32,

    /// Scheduling niceness of the model's compute threads (Linux). 0 keeps
    /// the process's priority; a higher value lets other work run first, at
    /// a steep cost to the model whenever anything else is busy (its
    /// threads wait for the slowest of them at every step).
    #[arg(long, env = "EVOLVE_HUD_NICE", default_value_t = LocalConfig::NICE, value_parser = clap::value_parser!(i32).range(0..=19))]
    pub nice: i32,

    /// How long the model stays in memory with no model work (questions,
    /// chat, compaction), as Ollama's keep_alive: `30s`, `5m`, `1h`, plain
    /// seconds; `0` releases it after each piece of work, a negative value
    /// never. HUD facts are served meanwhile; the next model work loads it
    /// again.
    #[arg(long, env = "EVOLVE_HUD_KEEP_ALIVE", default_value = "5m", value_parser = KeepAlive::parse, allow_hyphen_values = true)]
    pub keep_alive: KeepAlive,
}

/// `serve`'s flags resolved into plain values before anything runs: the
/// model found (or fetched) on disk, the token and tokenizer files read, the
/// port taken from the launch record. Errors are reported here;
/// [`crate::server::run`] takes these values and resolves nothing itself.
pub struct Serve {
    pub engine: ServeEngine,
    pub api: ApiSettings,
}

/// Where model work goes.
pub enum ServeEngine {
    /// The local model, which the server loads.
    Local { config: LocalConfig, keep_alive: KeepAlive },
    /// A running OpenAI-compatible engine.
    Remote(RemoteConfig),
    /// No model: the HUD's facts only, model work refused (`--no-model`, or
    /// `--facts-without-model` with the model not to be had).
    Facts { missing: Option<Missing> },
}

/// The model `--facts-without-model` could not have: why, and how the
/// server looks for it on disk to restart once it is there.
pub struct Missing {
    pub details: evolve_hud_api::EngineDetails,
    pub model: ModelConfig,
}

/// The HTTP API's settings.
pub struct ApiSettings {
    pub host: IpAddr,
    pub port: u16,
    pub allow_remote: bool,
    pub credentials: Credentials,
    pub allowed_origins: Vec<String>,
    /// `--model-name`, or the local model's file name; `None`: the remote
    /// engine's model id.
    pub model_name: Option<String>,
    pub queue_timeout: std::time::Duration,
    pub max_body: usize,
    pub hud: HudConfig,
    /// Counts the HUD's budget (`--hud-tokenizer`); `None`: the engine's
    /// vocabulary.
    pub tokenizer: Option<crate::hud::TokenCounter>,
}

/// The secrets requests are checked against.
#[derive(Debug, Clone, Default)]
pub struct Credentials {
    /// What every request but `/health` and `/v1/identity` must send;
    /// `None` with `--no-auth`.
    pub token: Option<Secret>,
    /// The secret `/v1/identity` proves knowledge of: the token, or with
    /// `--no-auth` the user's secret if there is one.
    pub identity: Option<Secret>,
}

impl ServeConfig {
    /// Resolves the flags. With `--facts-without-model`, a model that cannot
    /// be had leaves the sidecar serving the HUD's facts
    /// ([`ServeEngine::Facts`] says why).
    pub fn resolve(mut self) -> anyhow::Result<Serve> {
        let engine = if let Some(remote) = self.engine.remote()? {
            ServeEngine::Remote(remote)
        } else if self.engine.no_model {
            ServeEngine::Facts { missing: None }
        } else if !self.engine.facts_without_model {
            self.model.resolve_model()?;
            self.local_engine()?
        } else {
            // Nothing is downloaded for a sidecar nobody asked to download.
            self.model.offline = true;
            match self.model.resolve_on_disk() {
                Ok(()) => self.local_engine()?,
                Err(e) => {
                    // A name not on disk says just that; the fix says how to get it.
                    let missing = match (&self.model.model, self.model.default_name().as_ref()) {
                        (Some(ModelArg::Name(name)), _) | (None, Some(name)) if self.model.file.is_none() => {
                            format!("the model `{name}` is not on disk")
                        }
                        _ => format!("{e:#}"),
                    };
                    let details = evolve_hud_api::EngineDetails::Missing {
                        missing,
                        fix: self.model.fix(),
                    };
                    ServeEngine::Facts {
                        missing: Some(Missing {
                            details,
                            model: self.model.clone(),
                        }),
                    }
                }
            }
        };
        let local = match &engine {
            ServeEngine::Local { config, .. } => Some(config.path.as_path()),
            _ => None,
        };
        let mut api = self.api(local)?;
        if matches!(engine, ServeEngine::Facts { .. }) {
            api.hud.extract = false;
        }
        Ok(Serve { engine, api })
    }

    fn local_engine(&self) -> anyhow::Result<ServeEngine> {
        Ok(ServeEngine::Local {
            config: self.local()?,
            keep_alive: self.serving.keep_alive,
        })
    }

    /// The API's settings, with `local` the local model's file where one
    /// is loaded (it names the model without `--model-name`).
    pub fn api(&self, local: Option<&std::path::Path>) -> anyhow::Result<ApiSettings> {
        let server = &self.server;
        let model_name = server.model_name.clone().or_else(|| {
            Some(local?.file_stem().map_or_else(
                || "model".into(),
                |s| s.to_string_lossy().trim_end_matches(".gguf").to_owned(),
            ))
        });
        let tokenizer = self
            .hud
            .hud_tokenizer
            .as_deref()
            .map(crate::hud::TokenCounter::from_file)
            .transpose()?;
        Ok(ApiSettings {
            host: server.host,
            port: server.port(),
            allow_remote: server.allow_remote,
            credentials: server.credentials()?,
            allowed_origins: server.allowed_origins.clone(),
            model_name,
            queue_timeout: std::time::Duration::from_millis(server.queue_timeout_ms),
            max_body: server.max_body,
            hud: self.hud.config(),
            tokenizer,
        })
    }

    /// The local engine's configuration: the model's, with the serving flags.
    pub fn local(&self) -> anyhow::Result<LocalConfig> {
        Ok(LocalConfig {
            queue: self.serving.queue,
            nice: self.serving.nice,
            ..self.model.local()?
        })
    }
}

impl ModelConfig {
    /// The model configuration `serve --model SPEC` would have, for the
    /// commands that check what the plugin would start.
    pub fn from_name(spec: &str) -> anyhow::Result<ModelConfig> {
        #[derive(clap::Parser)]
        struct Only {
            #[command(flatten)]
            model: ModelConfig,
        }
        let only = <Only as clap::Parser>::try_parse_from(["evolve-hud", "--model", spec])?;
        Ok(only.model)
    }

    /// The local engine's configuration: `--model` (resolved first with
    /// [`ModelConfig::resolve_model`]) and the flags.
    pub fn local(&self) -> anyhow::Result<LocalConfig> {
        Ok(LocalConfig {
            path: self.path()?.to_owned(),
            ctx: self.ctx.unwrap_or(LocalConfig::CTX),
            threads: self.threads.filter(|&t| t > 0).unwrap_or_else(LocalConfig::all_cores),
            gpu_layers: self.gpu_layers,
            flash_attn: self.flash_attn,
            batch: self.batch,
            kv_slots: self.kv_slots,
            queue: LocalConfig::QUEUE,
            nice: LocalConfig::NICE,
            adapt_threads: !self.fixed_threads,
        })
    }

    /// Resolves `--model` to a file on disk (fetching registry models and hub
    /// files when needed) and takes the registry entry's context length
    /// unless `--ctx` was given.
    /// Without `--model`, the registry's default model (its first entry)
    /// when it is on disk. A file that is a registry entry's gets the
    /// entry's context length too, however it was named.
    pub fn resolve_model(&mut self) -> anyhow::Result<()> {
        let registry = crate::registry::Registry::load(self.registry.as_deref())?;
        let spec = match &self.model {
            Some(model) => model.resolve(&registry)?,
            None => {
                let default = registry
                    .models
                    .first()
                    .ok_or_else(|| anyhow::anyhow!("no model: give --model (a GGUF file or a registry name)"))?;
                if crate::pull::cached(default).is_none() {
                    anyhow::bail!(
                        "no model: the default model `{name}` is not on disk. Get it with `evolve-hud pull {name}` \
(where the Hub cannot be reached: `evolve-hud pull {name} --from FILE` with the file got some other way), \
or give --model (a GGUF file or a registry name), or --engine URL to use a running engine",
                        name = default.name
                    );
                }
                crate::registry::ModelSpec::Entry(default.clone())
            }
        };
        let entry = match &spec {
            crate::registry::ModelSpec::Entry(e) => Some(e.clone()),
            crate::registry::ModelSpec::Path(p) => {
                let file = p.file_name().map(|f| f.to_string_lossy().into_owned());
                registry.models.iter().find(|e| Some(&e.file) == file.as_ref()).cloned()
            }
            crate::registry::ModelSpec::Hub { .. } => None,
        };
        if let (Some(e), None) = (entry, self.ctx) {
            self.ctx = Some(e.ctx);
        }
        let options = crate::pull::Options::from_env(self.offline, self.allow_unpinned);
        self.file = Some(crate::pull::fetch(&spec, &options)?.path().to_owned());
        Ok(())
    }

    /// [`ModelConfig::resolve_model`] without downloading, and a GGUF file
    /// at the end of it.
    pub fn resolve_on_disk(&mut self) -> anyhow::Result<()> {
        self.offline = true;
        self.resolve_model()?;
        let path = self.path()?;
        crate::gguf::check(path).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
        Ok(())
    }

    /// The registry's default model's name.
    fn default_name(&self) -> Option<String> {
        crate::registry::Registry::load(self.registry.as_deref())
            .ok()
            .and_then(|r| r.models.first().map(|e| e.name.clone()))
    }

    /// The one command that gets the model `--model` names onto disk.
    /// The binary as the user's shell runs it (`crate::launch::this_command`).
    pub fn fix(&self) -> String {
        let me = crate::launch::this_command();
        match &self.model {
            Some(ModelArg::Name(name)) => format!("{me} pull {name}"),
            None => match self.default_name() {
                Some(name) => format!("{me} pull {name}"),
                None => format!("{me} install-shim --model FILE.gguf"),
            },
            Some(ModelArg::Path(_) | ModelArg::Hub { .. }) => {
                format!("{me} install-shim --model FILE.gguf   (a GGUF file on disk, or a registry name)")
            }
        }
    }

    /// The file `--model` resolved to; a model is required unless a remote
    /// engine serves.
    pub fn path(&self) -> anyhow::Result<&std::path::Path> {
        self.file.as_deref().ok_or_else(|| {
            anyhow::anyhow!(
                "no model: give --model (a GGUF file or a registry name), or --engine URL to use a running engine"
            )
        })
    }
}

impl ServerConfig {
    /// The port to serve on: `--port`, else where every client looks.
    pub fn port(&self) -> u16 {
        self.port.unwrap_or_else(crate::launch::sidecar_port)
    }
}

/// The environment variable `--auth-token` is read from: unlike a flag, the
/// environment of a process is readable by its own user alone.
const AUTH_TOKEN_VAR: &str = "EVOLVE_HUD_AUTH_TOKEN";

/// How the HTTP server listens and logs.
#[derive(Debug, Clone, Args)]
pub struct ServerConfig {
    /// Address to bind.
    #[arg(long, env = "EVOLVE_HUD_HOST", default_value = "127.0.0.1")]
    pub host: IpAddr,

    /// Port to bind; 0 picks a free port (the log line "listening" names it).
    /// Default: the launch record's (`install-shim --port`, `service install --port`), else 8377,
    /// the port every command and the plugin look at.
    #[arg(long, env = "EVOLVE_HUD_PORT")]
    pub port: Option<u16>,

    /// Name under which `/v1/models` lists the model. Defaults to the file
    /// name without `.gguf`.
    #[arg(long, env = "EVOLVE_HUD_MODEL_NAME")]
    pub model_name: Option<String>,

    /// Longest a chat completion may wait in the model's queue before it is
    /// answered 503 with Retry-After, in milliseconds (time spent generating
    /// does not count).
    #[arg(long, env = "EVOLVE_HUD_QUEUE_TIMEOUT_MS", default_value_t = 10_000)]
    pub queue_timeout_ms: u64,

    /// Largest accepted request body, in bytes.
    #[arg(long, env = "EVOLVE_HUD_MAX_BODY", default_value_t = 4 * 1024 * 1024)]
    pub max_body: usize,

    /// Allow binding an address other than loopback (then any Host header is
    /// accepted; set a token).
    #[arg(long)]
    pub allow_remote: bool,

    /// Web origins whose pages may call the API (`http://localhost:3000`;
    /// comma-separated, or the flag repeated). By default none: a request
    /// from a web page (an `Origin` header, or `Sec-Fetch-Site` other than
    /// `same-origin` or `none`) is refused with 403.
    #[arg(long = "allow-origin", env = "EVOLVE_HUD_ALLOWED_ORIGINS", value_delimiter = ',')]
    pub allowed_origins: Vec<String>,

    /// File holding the bearer token that every request but /health and
    /// /v1/identity must send. By default the user's own secret,
    /// ~/.config/evolve-hud/token (made on first use, readable by you alone).
    #[arg(long, env = "EVOLVE_HUD_AUTH_TOKEN_FILE")]
    pub auth_token_file: Option<PathBuf>,

    /// The bearer token itself. Prefer the file, or the environment
    /// variable: a flag shows in `ps` to every account (a warning says so).
    #[arg(long, env = AUTH_TOKEN_VAR, hide_env_values = true, value_parser = Secret::parse)]
    pub auth_token: Option<Secret>,

    /// Serve without a token: any local user or process can then read the
    /// sessions and write the HUD. Logged as a warning.
    #[arg(long, env = "EVOLVE_HUD_NO_AUTH", value_parser = clap::builder::BoolishValueParser::new())]
    pub no_auth: bool,

    /// Log format on stderr. The level comes from `RUST_LOG`.
    #[arg(long, env = "EVOLVE_HUD_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
}

impl ServerConfig {
    /// The secrets the flags ask requests to be checked against: the token
    /// given, else the user's secret (made on first use); with `--no-auth`
    /// none.
    pub fn credentials(&self) -> anyhow::Result<Credentials> {
        if self.auth_token_file.is_none() && self.auth_token.is_some() && std::env::var_os(AUTH_TOKEN_VAR).is_none() {
            tracing::warn!(
                "--auth-token puts the token on the command line, which `ps` shows to every account of this machine; \
give it in a file of yours alone with --auth-token-file (EVOLVE_HUD_AUTH_TOKEN_FILE), or in {AUTH_TOKEN_VAR}, \
which only you can read"
            );
        }
        match (self.token()?, self.no_auth) {
            (Some(_), true) => anyhow::bail!("--no-auth and a token contradict each other; pass one of them"),
            (Some(token), false) => Ok(Credentials {
                token: Some(token.clone()),
                identity: Some(token),
            }),
            (None, false) => {
                let secret = Secret::of_user()?;
                Ok(Credentials {
                    token: Some(secret.clone()),
                    identity: Some(secret),
                })
            }
            (None, true) => {
                tracing::warn!(
                    "--no-auth: any local user or process can read the sessions and write the HUD, which steers the agent; leave it out unless every user of this machine is you"
                );
                Ok(Credentials {
                    token: None,
                    identity: Secret::of_user().ok(),
                })
            }
        }
    }

    /// The token from `--auth-token-file` or `--auth-token`/`EVOLVE_HUD_AUTH_TOKEN`.
    pub fn token(&self) -> anyhow::Result<Option<Secret>> {
        match (&self.auth_token_file, &self.auth_token) {
            (Some(path), _) => Secret::from_file(path).map(Some),
            (None, token) => Ok(token.clone()),
        }
    }
}

/// Log output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}
