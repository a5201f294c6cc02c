//! The local engine: one OS thread owns the llama.cpp model and context
//! (`LlamaContext` is not `Send`). The async side talks to it through a
//! [`ModelHandle`]: commands go over a bounded channel, results come back on a
//! oneshot (load) or an unbounded channel of [`Event`]s (generation), which
//! the thread stops feeding as soon as the receiver is dropped.

pub mod cpu;
mod forced;
mod kept;
mod load;
mod prompt;
mod sampler;
mod slots;
pub mod supervisor;
mod text;
mod worker;

use super::{
    Backend, Details, EngineDetails, EngineError, EngineInfo, Event, GenerateRequest, HealthCell, HealthState,
};
use crate::gguf::{self, GgufError};
use serde::Serialize;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

pub use kept::KeptCache;
pub use text::{StopMatcher, Utf8Stream};

/// How the local model is loaded and run.
#[derive(Debug, Clone)]
pub struct LocalConfig {
    /// The GGUF file.
    pub path: PathBuf,
    /// Context tokens per prompt (each KV slot holds this many); 0: the
    /// model's training context.
    pub ctx: u32,
    pub threads: u32,
    /// Layers offloaded to the GPU (999: all).
    pub gpu_layers: u32,
    pub flash_attn: FlashAttn,
    /// Tokens per prompt-processing batch.
    pub batch: u32,
    /// Prompts whose KV cache is kept, least recently used evicted first.
    pub kv_slots: u32,
    /// Requests that may wait for the model thread.
    pub queue: u32,
    /// Niceness of the model's compute threads (Linux).
    pub nice: i32,
    /// Decode with fewer than `threads` while other processes keep cores
    /// busy (CPU only; see `load`).
    pub adapt_threads: bool,
}

impl LocalConfig {
    pub const CTX: u32 = 4096;
    /// All layers in a GPU build, none in a CPU build.
    pub const GPU_LAYERS: u32 = if cfg!(any(
        feature = "cuda",
        feature = "metal",
        feature = "vulkan",
        feature = "dynamic-backends"
    )) {
        999
    } else {
        0
    };
    /// Off on CPU, llama.cpp's choice on a GPU (see [`FlashAttn::Auto`]).
    pub const FLASH_ATTN: FlashAttn = FlashAttn::Auto;
    pub const BATCH: u32 = 512;
    /// One for the HUD's questions (they share a key) and one for chats.
    /// Each slot is a KV stream of `ctx` cells: with SmolLM2 at 4096 tokens,
    /// 2 slots make an RSS of 306 MiB (llama-server `-np 2`: 309 MiB), 4
    /// slots 487 MiB; and every stream costs each decode step (tg128 with 4
    /// slots was 4-8 % behind llama-bench, with 1 at parity).
    pub const KV_SLOTS: u32 = 2;
    pub const QUEUE: u32 = 32;
    /// Normal priority. llama.cpp's compute threads meet at a barrier every
    /// step, so a niced thread that loses its core to any other process
    /// holds all of them up: with one busy loop beside it on 2 cores, a
    /// 64-token answer took 60 s at nice 10 and 1.5 s at nice 0.
    pub const NICE: i32 = 0;

    /// The default thread count: every available core.
    pub fn all_cores() -> u32 {
        std::thread::available_parallelism().map_or(4, |n| n.get() as u32)
    }

    /// The defaults, for `path`.
    pub fn new(path: PathBuf) -> LocalConfig {
        LocalConfig {
            path,
            ctx: Self::CTX,
            threads: Self::all_cores(),
            gpu_layers: Self::GPU_LAYERS,
            flash_attn: Self::FLASH_ATTN,
            batch: Self::BATCH,
            kv_slots: Self::KV_SLOTS,
            queue: Self::QUEUE,
            nice: Self::NICE,
            adapt_threads: true,
        }
    }
}

/// Flash attention policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum FlashAttn {
    Off,
    On,
    /// Off when no layer is offloaded: on CPU it is several times slower for
    /// small models at long context depths. With layers on a GPU, llama.cpp's
    /// own choice, on where the back-end supports it, where it is faster
    /// (docs/performance.md has both measurements).
    Auto,
}

impl FlashAttn {
    /// llama.h's value: LLAMA_FLASH_ATTN_TYPE_AUTO = -1, _DISABLED = 0,
    /// _ENABLED = 1.
    pub fn llama_type(self, offloaded: bool) -> i32 {
        match self {
            FlashAttn::Off => 0,
            FlashAttn::On => 1,
            FlashAttn::Auto if offloaded => -1,
            FlashAttn::Auto => 0,
        }
    }
}

/// The llama.cpp grammar that admits exactly the JSON documents of `schema`,
/// written compactly: at most one space between tokens, no newlines or
/// indentation, which would cost generated tokens and say nothing.
pub fn json_schema_grammar(schema: &serde_json::Value) -> Result<String, EngineError> {
    check_schema(schema).map_err(|why| EngineError::InvalidInput(format!("the JSON schema cannot be used: {why}")))?;
    let grammar = llama_cpp_2::json_schema_to_grammar(&schema.to_string())
        .map_err(|e| EngineError::InvalidInput(format!("the JSON schema cannot be used as a grammar: {e}")))?;
    Ok(grammar
        .lines()
        .map(|line| {
            if line.starts_with("space ::=") {
                "space ::= \" \"?"
            } else {
                line
            }
        })
        .collect::<Vec<_>>()
        .join("\n"))
}

/// Largest count a schema may ask to be spelled out (`maxLength`,
/// `minItems`, a pattern's `{n,m}`): llama.cpp writes each repetition into
/// the grammar.
const MAX_SCHEMA_COUNT: u64 = 1000;

/// Refuses what llama.cpp's schema conversion or grammar would crash or
/// blow up on, so that no client's schema can end the process: a `pattern`
/// that is not a valid regular expression or spells out too much (a
/// reversed range `[z-a]` fails an assertion in llama.cpp; `a{2,1}` grows
/// without end), and counts that are too large or whose minimum exceeds
/// their maximum.
fn check_schema(schema: &serde_json::Value) -> Result<(), String> {
    use serde_json::Value;
    let count = |o: &serde_json::Map<String, Value>, key: &str| -> Result<Option<u64>, String> {
        match o.get(key) {
            None => Ok(None),
            Some(v) => match v.as_u64() {
                Some(n) if n <= MAX_SCHEMA_COUNT => Ok(Some(n)),
                _ => Err(format!(
                    "`{key}` must be a whole number up to {MAX_SCHEMA_COUNT}, not {v}"
                )),
            },
        }
    };
    match schema {
        Value::Object(o) => {
            for (min, max) in [
                ("minLength", "maxLength"),
                ("minItems", "maxItems"),
                ("minProperties", "maxProperties"),
            ] {
                if let (Some(lo), Some(hi)) = (count(o, min)?, count(o, max)?) {
                    if lo > hi {
                        return Err(format!("`{min}` {lo} is above `{max}` {hi}"));
                    }
                }
            }
            if let Some(pattern) = o.get("pattern") {
                let pattern = pattern.as_str().ok_or("`pattern` must be a string")?;
                regex::RegexBuilder::new(pattern)
                    .size_limit(1 << 16)
                    .build()
                    .map_err(|e| {
                        format!(
                            "`pattern` {pattern:?} is not usable: {}",
                            e.to_string().lines().last().unwrap_or("invalid")
                        )
                    })?;
                static BOUND: std::sync::LazyLock<regex::Regex> =
                    std::sync::LazyLock::new(|| regex::Regex::new(r"\{(\d+)(?:,(\d*))?\}").expect("a valid pattern"));
                for c in BOUND.captures_iter(pattern) {
                    let too_big = |m: Option<regex::Match>| {
                        m.is_some_and(|m| m.as_str().parse::<u64>().map_or(true, |n| n > MAX_SCHEMA_COUNT))
                    };
                    if too_big(c.get(1)) || too_big(c.get(2)) {
                        return Err(format!("`pattern` repeats more than {MAX_SCHEMA_COUNT} times"));
                    }
                }
            }
            o.values().try_for_each(check_schema)
        }
        Value::Array(items) => items.iter().try_for_each(check_schema),
        _ => Ok(()),
    }
}

/// Why the model could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error(transparent)]
    Gguf(#[from] GgufError),
    #[error("llama.cpp could not load {path}: {reason}")]
    Model { path: PathBuf, reason: String },
    #[error("llama.cpp could not create a context of {ctx} tokens: {reason}")]
    Context { ctx: u32, reason: String },
    #[error("the llama.cpp backend failed to start: {0}")]
    Backend(String),
    #[error("the model thread stopped while loading")]
    ThreadDied,
    #[error("loading was cancelled")]
    Cancelled,
}

/// Where the chat template comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TemplateSource {
    /// The GGUF's Jinja template, rendered as written.
    Jinja,
    /// The template in the GGUF metadata, as llama.cpp's built-in
    /// rendering applies it (the Jinja one could not be rendered).
    Gguf,
    /// ChatML, used when the GGUF has no template llama.cpp understands.
    ChatmlFallback,
}

/// Facts about the loaded model, fixed after load.
#[derive(Debug, Clone, Serialize)]
pub struct ModelInfo {
    pub path: PathBuf,
    /// `general.name`, or the file stem.
    pub name: String,
    pub architecture: Option<String>,
    pub size_bytes: u64,
    /// Bytes of the model's tensors (llama-bench's "size").
    pub tensor_bytes: u64,
    pub params: u64,
    pub layers: u32,
    pub ctx: u32,
    pub ctx_train: u32,
    pub threads: u32,
    pub gpu_layers: u32,
    pub backend: String,
    /// What ggml's CPU back-end was compiled with (`AVX2`, `AVX512`, …;
    /// never `AMX_INT8` in our builds, see [`cpu`]).
    pub cpu_features: Vec<String>,
    /// The CPU module ggml chose (`zen4`, `haswell`, …) where its back-ends
    /// are modules (the portable build); None where the back-end is linked in.
    pub cpu_variant: Option<String>,
    pub template: TemplateSource,
    pub add_bos: bool,
}

/// Load and liveness state, shared between the model thread and `/health`.
#[derive(Debug, Default)]
pub struct Health {
    state: HealthCell,
    restarts: AtomicU32,
    last_fault: Mutex<Option<String>>,
}

impl Health {
    pub fn get(&self) -> HealthState {
        self.state.get()
    }

    fn set_ready(&self) {
        self.state.loaded();
    }

    /// Back to ready after the context was rebuilt.
    fn set_ready_again(&self) {
        self.state.set(HealthState::Ready);
    }

    /// Records a fault the model thread recovered from.
    fn count_restart(&self, reason: &str) {
        self.restarts.fetch_add(1, Ordering::AcqRel);
        if let Ok(mut last) = self.last_fault.lock() {
            *last = Some(reason.to_owned());
        }
    }

    /// Times the model thread rebuilt its context after a panic, and why it
    /// last did.
    pub fn restarts(&self) -> (u32, Option<String>) {
        let last = self.last_fault.lock().ok().and_then(|l| l.clone());
        (self.restarts.load(Ordering::Acquire), last)
    }

    fn set_failed(&self, reason: String) {
        self.state.set(HealthState::Failed { reason });
    }
}

/// A generation checked and tokenized by the caller, with the caller's span.
struct Job {
    request: GenerateRequest,
    prompt: prompt::ValidPrompt,
    events: mpsc::UnboundedSender<Event>,
    span: tracing::Span,
}

enum Command {
    Generate(Job),
    Bench {
        test: BenchTest,
        reply: oneshot::Sender<Result<std::time::Duration, EngineError>>,
    },
    Shutdown,
    /// Stop, handing back the cached prompts worth keeping.
    Release(oneshot::Sender<KeptCache>),
}

/// One throughput measurement, as llama-bench makes it: `Prompt(n)` decodes
/// `n` tokens as prompt batches, `Generate(n)` decodes `n` tokens one at a
/// time; into an empty KV sequence, with no tokenizing or sampling.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BenchTest {
    Prompt(u32),
    Generate(u32),
}

/// The async side's handle to the model thread. Cheap to clone.
#[derive(Clone)]
pub struct ModelHandle {
    tx: mpsc::Sender<Command>,
    health: Arc<Health>,
    info: Arc<ModelInfo>,
    /// The template and tokenizer, to check prompts before they are queued.
    prompter: Arc<prompt::Prompter>,
    stopping: CancellationToken,
}

/// Owns the model thread; [`ModelThread::shutdown`] stops and joins it.
pub struct ModelThread {
    join: std::thread::JoinHandle<()>,
    tx: mpsc::Sender<Command>,
    stopping: CancellationToken,
}

/// How far a model load has come, and whether it should stop: written by
/// llama.cpp's progress callback on the model thread, read by `/health` and
/// by the signal handler that cancels a load.
#[derive(Debug, Default)]
pub struct LoadProgress {
    permille: AtomicU32,
    cancelled: AtomicBool,
}

impl LoadProgress {
    /// The share of the weights loaded, 0 to 1.
    pub fn fraction(&self) -> f32 {
        self.permille.load(Ordering::Acquire) as f32 / 1000.0
    }

    /// Asks the load to stop at its next progress step; it then fails with
    /// [`LoadError::Cancelled`].
    pub fn cancel(&self) {
        self.cancelled.store(true, Ordering::Release);
    }

    pub fn is_cancelled(&self) -> bool {
        self.cancelled.load(Ordering::Acquire)
    }

    /// Records `fraction`; false when the load is to stop.
    fn step(&self, fraction: f32) -> bool {
        self.permille
            .store((fraction.clamp(0.0, 1.0) * 1000.0) as u32, Ordering::Release);
        !self.is_cancelled()
    }
}

impl ModelHandle {
    /// Checks the file, starts the model thread and waits until the model is
    /// loaded. The thread then warms up; [`ModelHandle::health`] says `Ready`
    /// once it has.
    pub async fn start(config: &LocalConfig) -> Result<(ModelHandle, ModelThread), LoadError> {
        Self::start_with(config, Arc::default(), None).await
    }

    /// [`ModelHandle::start`], reporting to (and cancelled by) `progress`,
    /// with the cached prompts an earlier load of the same file kept.
    pub async fn start_with(
        config: &LocalConfig,
        progress: Arc<LoadProgress>,
        kept: Option<KeptCache>,
    ) -> Result<(ModelHandle, ModelThread), LoadError> {
        let path = config.path.clone();
        let summary = {
            let path = path.clone();
            tokio::task::spawn_blocking(move || gguf::check(&path))
        }
        .await
        .map_err(|_| LoadError::ThreadDied)??;
        tracing::debug!(?summary, "GGUF pre-check passed");

        let (tx, rx) = mpsc::channel(config.queue as usize);
        let (loaded_tx, loaded_rx) = oneshot::channel();
        let health = Arc::new(Health::default());
        let stopping = CancellationToken::new();
        let join = {
            let (config, health, stopping) = (config.clone(), health.clone(), stopping.clone());
            let start = supervisor::Start {
                config,
                path,
                summary,
                progress,
                kept,
            };
            std::thread::Builder::new()
                .name("model".into())
                .spawn(move || supervisor::run(start, loaded_tx, rx, health, stopping))
                .map_err(|e| LoadError::Backend(format!("cannot spawn the model thread: {e}")))?
        };
        match loaded_rx.await {
            Ok(Ok((info, prompter))) => {
                let handle = ModelHandle {
                    tx: tx.clone(),
                    health,
                    info: Arc::new(info),
                    prompter,
                    stopping: stopping.clone(),
                };
                Ok((handle, ModelThread { join, tx, stopping }))
            }
            Ok(Err(err)) => {
                let _ = join.join();
                Err(err)
            }
            Err(_) => {
                let _ = join.join();
                Err(LoadError::ThreadDied)
            }
        }
    }

    /// Facts about the loaded model.
    pub fn model_info(&self) -> &ModelInfo {
        &self.info
    }

    /// Context rebuilds after panics, and the last panic's reason.
    pub fn restarts(&self) -> (u32, Option<String>) {
        self.health.restarts()
    }

    /// Runs one [`BenchTest`] on the model thread and returns its decode time.
    pub async fn bench(&self, test: BenchTest) -> Result<std::time::Duration, EngineError> {
        let (reply, rx) = oneshot::channel();
        self.tx
            .send(Command::Bench { test, reply })
            .await
            .map_err(|_| EngineError::Unavailable("the model thread has stopped".into()))?;
        rx.await
            .map_err(|_| EngineError::Unavailable("the model thread has stopped".into()))?
    }
}

impl Backend for ModelHandle {
    fn generate(&self, request: GenerateRequest) -> Result<mpsc::UnboundedReceiver<Event>, EngineError> {
        if self.stopping.is_cancelled() {
            return Err(EngineError::Unavailable("the server is shutting down".into()));
        }
        if let HealthState::Failed { reason } = self.health() {
            return Err(EngineError::Unavailable(reason));
        }
        // Checked and tokenized here, so a prompt that cannot fit is refused
        // at once rather than after waiting in the queue.
        let prompt = self.prompter.validate(&request.prompt, self.info.ctx)?;
        let (events, rx) = mpsc::unbounded_channel();
        let span = tracing::Span::current();
        self.tx
            .try_send(Command::Generate(Job {
                request,
                prompt,
                events,
                span,
            }))
            .map_err(|e| match e {
                mpsc::error::TrySendError::Full(_) => EngineError::Overloaded(self.tx.max_capacity()),
                mpsc::error::TrySendError::Closed(_) => EngineError::Unavailable("the model thread has stopped".into()),
            })?;
        Ok(rx)
    }

    fn health(&self) -> HealthState {
        self.health.get()
    }

    fn watch_health(&self) -> tokio::sync::watch::Receiver<HealthState> {
        self.health.state.watch()
    }

    fn info(&self) -> EngineInfo {
        EngineInfo {
            kind: "local",
            model: self.info.name.clone(),
            ctx: Some(self.info.ctx),
        }
    }

    fn details(&self) -> Details {
        let (restarts, last_fault) = self.restarts();
        Details {
            kind: Some(EngineDetails::Local {
                restarts,
                last_fault,
                cpu_features: self.info.cpu_features.clone(),
                cpu_variant: self.info.cpu_variant.clone(),
            }),
            model_meta: Some(self.info.clone()),
        }
    }

    /// Counted with the model's vocabulary, without waiting for the model thread.
    fn count_tokens(&self, text: &str) -> Option<usize> {
        Some(self.prompter.count(text))
    }

    fn queued(&self) -> usize {
        self.tx.max_capacity() - self.tx.capacity()
    }

    fn begin_shutdown(&self) {
        self.stopping.cancel();
    }
}

impl ModelThread {
    /// Cancels the running generation, refuses queued ones and joins the thread.
    pub async fn shutdown(self) {
        self.stopping.cancel();
        let _ = self.tx.send(Command::Shutdown).await;
        let join = self.join;
        let _ = tokio::task::spawn_blocking(move || join.join()).await;
    }

    /// Stops the thread when no work is running, and hands back the cached
    /// prompts worth keeping for the next load ([`ModelHandle::start_with`]).
    pub async fn release(self) -> Option<KeptCache> {
        let (reply, kept) = oneshot::channel();
        let sent = self.tx.send(Command::Release(reply)).await.is_ok();
        self.stopping.cancel();
        let kept = if sent { kept.await.ok() } else { None };
        let join = self.join;
        let _ = tokio::task::spawn_blocking(move || join.join()).await;
        kept
    }
}

#[cfg(test)]
mod tests {
    /// The HUD's question offers the output's lines to quote: its schema
    /// becomes a grammar that spells them out.
    #[test]
    fn the_huds_question_becomes_a_grammar_that_holds_its_quotes() {
        let line = "calc.c:12:16: error: 'count' undeclared (first use in this function)".to_owned();
        let g = super::json_schema_grammar(&evolve_hud_core::extract::schema(&[line])).expect("grammar");
        assert!(g.contains("count"), "{g}");
    }
}
