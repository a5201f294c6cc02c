//! The model: one OS thread owns the llama.cpp backend, model and context
//! (`LlamaContext` is not `Send`). The async side talks to it through a
//! [`ModelHandle`]: commands go over a bounded channel, results come back on a
//! oneshot (load) or an unbounded channel of [`Event`]s (generation), which
//! the thread stops feeding as soon as the receiver is dropped.

mod text;
mod worker;

use crate::cli::ModelConfig;
use crate::gguf::{self, GgufError};
use serde::Serialize;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::{mpsc, oneshot};

pub use text::{StopMatcher, Utf8Stream};

/// One message of a chat, as the chat template receives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChatMessage {
    pub role: String,
    pub content: String,
}

/// What to feed the model.
#[derive(Debug, Clone)]
pub enum Prompt {
    /// Rendered through the model's chat template, ending with the assistant's turn.
    Chat(Vec<ChatMessage>),
    /// Used as it is (special tokens in it are parsed).
    Raw(String),
}

/// How to sample. `temperature <= 0` is greedy.
#[derive(Debug, Clone, PartialEq)]
pub struct SamplingParams {
    pub max_tokens: u32,
    pub temperature: f32,
    pub top_p: f32,
    pub seed: u32,
    pub stop: Vec<String>,
    /// A llama.cpp (GBNF) grammar the output must follow, rooted at `root`;
    /// see [`json_schema_grammar`].
    pub grammar: Option<String>,
}

/// The llama.cpp grammar that admits exactly the JSON documents of `schema`,
/// written compactly: at most one space between tokens, no newlines or
/// indentation, which would cost generated tokens and say nothing.
pub fn json_schema_grammar(schema: &serde_json::Value) -> Result<String, ModelError> {
    let grammar = llama_cpp_2::json_schema_to_grammar(&schema.to_string())
        .map_err(|e| ModelError::InvalidInput(format!("the JSON schema cannot be used as a grammar: {e}")))?;
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

/// A generation job.
#[derive(Debug, Clone)]
pub struct GenerateRequest {
    pub prompt: Prompt,
    pub params: SamplingParams,
    /// Keeps this prompt's KV cache in a slot of its own (a HUD session, say);
    /// without a key the slot with the longest shared prefix is reused.
    pub cache_key: Option<String>,
    /// Set when the model thread takes the request from its queue.
    pub started: Option<Arc<AtomicBool>>,
}

/// Why generation ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    /// End-of-generation token or a stop string.
    Stop,
    /// `max_tokens` reached, or the context is full.
    Length,
    /// The receiver went away, or the server is shutting down.
    Cancelled,
}

/// Token counts and timings of one finished generation.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Completion {
    pub prompt_tokens: u32,
    /// Prompt tokens whose KV cache was reused rather than decoded.
    pub cached_tokens: u32,
    pub completion_tokens: u32,
    pub finish_reason: FinishReason,
    pub prompt_ms: f64,
    pub generation_ms: f64,
}

impl Completion {
    /// Prompt tokens decoded per second (cached tokens excluded).
    pub fn prompt_tokens_per_second(&self) -> f64 {
        per_second(self.prompt_tokens - self.cached_tokens, self.prompt_ms)
    }

    /// Generated tokens per second.
    pub fn generation_tokens_per_second(&self) -> f64 {
        per_second(self.completion_tokens, self.generation_ms)
    }
}

fn per_second(tokens: u32, ms: f64) -> f64 {
    if ms > 0.0 {
        f64::from(tokens) * 1000.0 / ms
    } else {
        0.0
    }
}

/// What a generation sends back, in order: text pieces, then one `Done` or `Failed`.
#[derive(Debug, Clone)]
pub enum Event {
    Text(String),
    Done(Completion),
    Failed(ModelError),
}

/// A request the model could not serve.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ModelError {
    #[error("the model is not ready: {0}")]
    Unavailable(String),
    #[error("the model queue is full ({0} requests waiting); retry shortly")]
    Overloaded(usize),
    #[error("the request waited {0} ms in the model's queue without starting; retry shortly")]
    QueueTimeout(u64),
    #[error("the prompt is {prompt} tokens but the context holds {ctx}; shorten the conversation or start the server with a larger --ctx")]
    ContextExceeded { prompt: u32, ctx: u32 },
    #[error("{0}")]
    InvalidInput(String),
    #[error("llama.cpp failed: {0}")]
    Backend(String),
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
}

/// Where the chat template comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TemplateSource {
    /// The template in the GGUF metadata, applied by llama.cpp.
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
    pub backend: &'static str,
    pub template: TemplateSource,
    pub add_bos: bool,
}

/// Load and liveness state, shared between the model thread and `/health`.
#[derive(Debug, Default)]
pub struct Health {
    state: AtomicU8,
    reason: Mutex<String>,
    restarts: AtomicU32,
    last_fault: Mutex<Option<String>>,
}

/// A snapshot of [`Health`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum HealthState {
    Loading,
    Ready,
    Failed { reason: String },
}

impl Health {
    const LOADING: u8 = 0;
    const READY: u8 = 1;
    const FAILED: u8 = 2;

    pub fn get(&self) -> HealthState {
        match self.state.load(Ordering::Acquire) {
            Self::LOADING => HealthState::Loading,
            Self::READY => HealthState::Ready,
            _ => HealthState::Failed {
                reason: self.reason.lock().map(|r| r.clone()).unwrap_or_default(),
            },
        }
    }

    fn set_ready(&self) {
        let _ = self
            .state
            .compare_exchange(Self::LOADING, Self::READY, Ordering::AcqRel, Ordering::Acquire);
    }

    /// Back to ready after the context was rebuilt.
    fn set_ready_again(&self) {
        self.state.store(Self::READY, Ordering::Release);
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
        if let Ok(mut r) = self.reason.lock() {
            *r = reason;
        }
        self.state.store(Self::FAILED, Ordering::Release);
    }
}

enum Command {
    Generate {
        request: GenerateRequest,
        events: mpsc::UnboundedSender<Event>,
    },
    Bench {
        test: BenchTest,
        reply: oneshot::Sender<Result<std::time::Duration, ModelError>>,
    },
    Shutdown,
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
    /// The model, shared for tokenizing only (llama.cpp's vocabulary is
    /// read-only after load and safe to use from any thread).
    vocab: Arc<llama_cpp_2::model::LlamaModel>,
    stopping: Arc<AtomicBool>,
}

/// Owns the model thread; [`ModelThread::shutdown`] stops and joins it.
pub struct ModelThread {
    join: std::thread::JoinHandle<()>,
    tx: mpsc::Sender<Command>,
    stopping: Arc<AtomicBool>,
}

impl ModelHandle {
    /// Checks the file, starts the model thread and waits until the model is
    /// loaded. The thread then warms up; [`ModelHandle::health`] says `Ready`
    /// once it has.
    pub async fn start(config: &ModelConfig) -> Result<(ModelHandle, ModelThread), LoadError> {
        let path = config.model.clone();
        let summary = tokio::task::spawn_blocking(move || gguf::check(&path))
            .await
            .map_err(|_| LoadError::ThreadDied)??;
        tracing::debug!(?summary, "GGUF pre-check passed");

        let (tx, rx) = mpsc::channel(config.queue as usize);
        let (loaded_tx, loaded_rx) = oneshot::channel();
        let health = Arc::new(Health::default());
        let stopping = Arc::new(AtomicBool::new(false));
        let join = {
            let (config, health, stopping) = (config.clone(), health.clone(), stopping.clone());
            std::thread::Builder::new()
                .name("model".into())
                .spawn(move || worker::run(config, summary, loaded_tx, rx, health, stopping))
                .map_err(|e| LoadError::Backend(format!("cannot spawn the model thread: {e}")))?
        };
        match loaded_rx.await {
            Ok(Ok((info, vocab))) => {
                let handle = ModelHandle {
                    tx: tx.clone(),
                    health,
                    info: Arc::new(info),
                    vocab,
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
    pub fn info(&self) -> &ModelInfo {
        &self.info
    }

    /// Tokens of `text` in the model's vocabulary, without BOS, without
    /// waiting for the model thread.
    pub fn count_tokens(&self, text: &str) -> usize {
        self.vocab.vocab().tokenize(text.as_bytes(), false, false).len()
    }

    /// Loading, ready, or failed with a reason.
    pub fn health(&self) -> HealthState {
        self.health.get()
    }

    /// Context rebuilds after panics, and the last panic's reason.
    pub fn restarts(&self) -> (u32, Option<String>) {
        self.health.restarts()
    }

    /// Queues a generation. Fails at once when the queue is full or the
    /// model is gone; otherwise events arrive on the returned receiver, and
    /// dropping it cancels the generation.
    pub fn generate(&self, request: GenerateRequest) -> Result<mpsc::UnboundedReceiver<Event>, ModelError> {
        if self.stopping.load(Ordering::Acquire) {
            return Err(ModelError::Unavailable("the server is shutting down".into()));
        }
        if let HealthState::Failed { reason } = self.health() {
            return Err(ModelError::Unavailable(reason));
        }
        let (events, rx) = mpsc::unbounded_channel();
        self.tx
            .try_send(Command::Generate { request, events })
            .map_err(|e| match e {
                mpsc::error::TrySendError::Full(_) => ModelError::Overloaded(self.tx.max_capacity()),
                mpsc::error::TrySendError::Closed(_) => ModelError::Unavailable("the model thread has stopped".into()),
            })?;
        Ok(rx)
    }

    /// Runs one [`BenchTest`] on the model thread and returns its decode time.
    pub async fn bench(&self, test: BenchTest) -> Result<std::time::Duration, ModelError> {
        let (reply, rx) = oneshot::channel();
        self.tx
            .send(Command::Bench { test, reply })
            .await
            .map_err(|_| ModelError::Unavailable("the model thread has stopped".into()))?;
        rx.await
            .map_err(|_| ModelError::Unavailable("the model thread has stopped".into()))?
    }

    /// Cancels the running generation and refuses new ones, so that open
    /// streams end and graceful shutdown can finish.
    pub fn begin_shutdown(&self) {
        self.stopping.store(true, Ordering::Release);
    }

    /// Requests waiting in front of the model thread.
    pub fn queued(&self) -> usize {
        self.tx.max_capacity() - self.tx.capacity()
    }
}

impl ModelThread {
    /// Cancels the running generation, refuses queued ones and joins the thread.
    pub async fn shutdown(self) {
        self.stopping.store(true, Ordering::Release);
        let _ = self.tx.send(Command::Shutdown).await;
        let join = self.join;
        let _ = tokio::task::spawn_blocking(move || join.join()).await;
    }
}
