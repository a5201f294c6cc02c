//! The engine: where model work goes. The HUD's questions, the compaction
//! and heartbeat texts and the chat API all talk to an [`Engine`], never to
//! llama.cpp or an HTTP client directly. Two implementations plug in:
//!
//! - [`local`]: one OS thread that owns the llama.cpp backend, model and
//!   context (`serve --model`);
//! - [`remote`]: an OpenAI-compatible engine over HTTP, such as llama-server,
//!   vLLM or Ollama (`serve --engine URL`); the HUD state stays here.
//!
//! Work is queued with [`Engine::generate`], which answers at once: with an
//! error (overloaded, unavailable, invalid) or with a receiver of
//! [`Event`]s. Dropping the receiver cancels the work.

use crate::telemetry::Telemetry;
pub use evolve_hud_api::model::{ChatMessage, GenerateRequest, Prompt, SamplingParams};
pub use evolve_hud_api::{EngineDetails, HealthState};

pub mod lifecycle;
pub mod local;
pub mod none;
pub mod remote;

use serde::Serialize;
use std::sync::Arc;
use tokio::sync::mpsc;

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
    /// Completion tokens the JSON schema decided, decoded in batches rather
    /// than sampled one by one (local engine only).
    pub forced_tokens: u32,
    pub finish_reason: FinishReason,
    pub prompt_ms: f64,
    pub generation_ms: f64,
}

impl Completion {
    /// Prompt tokens decoded per second (cached tokens excluded).
    pub fn prompt_tokens_per_second(&self) -> f64 {
        per_second(self.prompt_tokens.saturating_sub(self.cached_tokens), self.prompt_ms)
    }

    /// Generated tokens per second.
    pub fn generation_tokens_per_second(&self) -> f64 {
        per_second(self.completion_tokens, self.generation_ms)
    }

    /// Counts this generation in the metrics, labelled by the work it was
    /// for (`chat`, the chat API; `hud`, the HUD's questions), and keeps it
    /// in `telemetry`'s recent-activity window that `watch` shows.
    pub fn record(&self, work: &'static str, telemetry: &Telemetry) {
        telemetry.completion(self.completion_tokens, self.generation_ms);
        self.count(work);
    }

    /// Counts this generation in the metrics only: [`Completion::record`]'s,
    /// and `warmup` (the start the HUD's questions share, decoded once
    /// ahead, whose single token says nothing of the generation speed
    /// `watch` shows).
    pub fn count(&self, work: &'static str) {
        metrics::counter!("evolve_hud_prompt_tokens_total", "work" => work).increment(u64::from(self.prompt_tokens));
        metrics::counter!("evolve_hud_prompt_tokens_cached_total", "work" => work)
            .increment(u64::from(self.cached_tokens));
        metrics::counter!("evolve_hud_completion_tokens_total", "work" => work)
            .increment(u64::from(self.completion_tokens));
        metrics::counter!("evolve_hud_completion_tokens_forced_total", "work" => work)
            .increment(u64::from(self.forced_tokens));
        metrics::histogram!("evolve_hud_prompt_seconds", "work" => work).record(self.prompt_ms / 1000.0);
        metrics::histogram!("evolve_hud_generation_seconds", "work" => work).record(self.generation_ms / 1000.0);
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
    Failed(EngineError),
}

/// A request the engine could not serve.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EngineError {
    #[error("the model is not ready: {0}")]
    Unavailable(String),
    #[error("the model queue is full ({0} requests waiting); retry shortly")]
    Overloaded(usize),
    #[error("the request waited {0} ms in the model's queue without starting; retry shortly")]
    QueueTimeout(u64),
    #[error("the prompt is {prompt} tokens but the context holds {ctx}; shorten the conversation or start the server with a larger --ctx")]
    ContextExceeded { prompt: u32, ctx: u32 },
    /// Refused on its size alone, before any tokenizing: no tokenization of
    /// it could fit.
    #[error("the prompt is {bytes} bytes, more than a context of {ctx} tokens can hold (no token of this model is longer than {longest} bytes); shorten the conversation or start the server with a larger --ctx")]
    PromptTooLong { bytes: usize, ctx: u32, longest: usize },
    #[error("{0}")]
    InvalidInput(String),
    #[error("the model failed: {0}")]
    Backend(String),
    /// The remote engine answered with an error status.
    #[error("the engine answered {status}: {message}")]
    Upstream {
        status: u16,
        message: String,
        /// Seconds, from the engine's `Retry-After`.
        retry_after: Option<u64>,
    },
}

/// The engine's own details for `/health`, and for `/v1/models` what it
/// knows of the model.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Details {
    /// `None` for an engine with nothing to add.
    #[serde(flatten)]
    pub kind: Option<EngineDetails>,
    /// The loaded model's metadata (local engine only).
    #[serde(skip)]
    pub model_meta: Option<Arc<local::ModelInfo>>,
}

/// An engine's health, told to whoever watches it. The engines write it
/// from where they learn it (the model thread, the health probe); readers
/// take [`HealthCell::get`] or wait for a change on [`HealthCell::watch`].
#[derive(Debug)]
pub struct HealthCell(tokio::sync::watch::Sender<HealthState>);

impl Default for HealthCell {
    fn default() -> Self {
        HealthCell(tokio::sync::watch::Sender::new(HealthState::Loading))
    }
}

impl HealthCell {
    pub fn get(&self) -> HealthState {
        self.0.borrow().clone()
    }

    /// Sets the state; returns whether it changed (watchers hear only changes).
    pub fn set(&self, state: HealthState) -> bool {
        self.0.send_if_modified(|current| {
            if *current == state {
                return false;
            }
            *current = state;
            true
        })
    }

    /// Loading becomes ready; a failed state stays.
    pub fn loaded(&self) {
        self.0.send_if_modified(|current| {
            if *current != HealthState::Loading {
                return false;
            }
            *current = HealthState::Ready;
            true
        });
    }

    pub fn watch(&self) -> tokio::sync::watch::Receiver<HealthState> {
        self.0.subscribe()
    }
}

/// What the rest of the server needs to know about an engine.
#[derive(Debug, Clone, Serialize)]
pub struct EngineInfo {
    /// `local` or `remote`.
    pub kind: &'static str,
    /// The model's name: `general.name` locally, the engine's model id remotely.
    pub model: String,
    /// Context tokens per prompt, when known; `max_tokens` is capped at it.
    pub ctx: Option<u32>,
}

/// One engine implementation. All methods answer at once: none waits for
/// model work.
pub trait Backend: Send + Sync + 'static {
    /// Queues a generation. Fails at once when the engine is overloaded or
    /// gone, or the request cannot fit; otherwise events arrive on the
    /// returned receiver, and dropping it cancels the generation.
    fn generate(&self, request: GenerateRequest) -> Result<mpsc::UnboundedReceiver<Event>, EngineError>;
    /// Loading, ready, or failed with a reason.
    fn health(&self) -> HealthState;
    /// Changes of the engine's health as they happen; [`Backend::health`]
    /// says what it is then.
    fn watch_health(&self) -> tokio::sync::watch::Receiver<HealthState>;
    fn info(&self) -> EngineInfo;
    /// Details for `/health` and `/v1/models` (restarts, the engine's URL, ...).
    fn details(&self) -> Details;
    /// Tokens of `text` in the model's vocabulary, when the engine can count
    /// them here without waiting.
    fn count_tokens(&self, text: &str) -> Option<usize>;
    /// Requests waiting for the engine.
    fn queued(&self) -> usize;
    /// Cancels running generations and refuses new ones.
    fn begin_shutdown(&self);
}

/// The server's handle to its engine, and what it tells of its work.
/// Cheap to clone.
#[derive(Clone)]
pub struct Engine {
    backend: Arc<dyn Backend>,
    telemetry: Arc<Telemetry>,
}

impl Engine {
    pub fn new(backend: impl Backend) -> Engine {
        Engine {
            backend: Arc::new(backend),
            telemetry: Arc::default(),
        }
    }

    /// Whether both are the same engine.
    pub fn same(&self, other: &Engine) -> bool {
        Arc::ptr_eq(&self.backend, &other.backend)
    }

    pub fn telemetry(&self) -> &Telemetry {
        &self.telemetry
    }

    /// [`Backend::generate`] from async code: the prompt's template is
    /// rendered and its text tokenized on a blocking thread ([`crate::cpu`]),
    /// in the caller's span, so that a long prompt never holds up the async
    /// workers (the agent's HUD syncs).
    pub async fn submit(&self, request: GenerateRequest) -> Result<mpsc::UnboundedReceiver<Event>, EngineError> {
        let engine = self.clone();
        let span = tracing::Span::current();
        crate::cpu::run(move || span.in_scope(|| engine.generate(request)))
            .await
            .map_err(|e| EngineError::Backend(format!("preparing the prompt: {e}")))?
    }
}

impl std::ops::Deref for Engine {
    type Target = dyn Backend;

    fn deref(&self) -> &Self::Target {
        &*self.backend
    }
}
