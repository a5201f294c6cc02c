//! The model thread: owns backend, model and context, and runs commands one
//! at a time. Prompts keep their KV cache in a small pool of sequences, so a
//! prompt that extends a cached one only decodes its new tokens.

use super::forced::Forced;
use super::prompt::{Prompter, ValidPrompt};
use super::slots::{common_prefix, Placement, Slots};
use super::text::{StopMatcher, Utf8Stream};
use super::LocalConfig;
use super::{BenchTest, Command, Health, Job, LoadError, ModelInfo, TemplateSource};
use crate::engine::{Completion, EngineError, Event, FinishReason, GenerateRequest, HealthState, SamplingParams};
use crate::gguf::GgufSummary;
use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::data::LlamaTokenData;
use llama_cpp_2::token::data_array::LlamaTokenDataArray;
use llama_cpp_2::token::LlamaToken;
use llama_cpp_2::DecodeError;
use std::collections::VecDeque;
use std::num::NonZeroU32;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, oneshot};

/// Lowers the calling thread's scheduling priority by `nice` (Linux keeps
/// niceness per thread; elsewhere this is a no-op).
fn lower_priority(nice: i32) {
    #[cfg(target_os = "linux")]
    if nice > 0 {
        // SAFETY: plain syscalls on the current thread's id.
        let rc = unsafe { libc::setpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t, nice) };
        if rc != 0 {
            tracing::warn!(nice, error = %std::io::Error::last_os_error(), "could not lower the model thread's priority");
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = nice;
}

/// The llama.cpp backend, started once for the process and never freed, so
/// that nothing (the vocabulary shared for counting tokens included)
/// outlives it.
fn backend() -> Result<&'static LlamaBackend, LoadError> {
    static BACKEND: std::sync::OnceLock<Result<LlamaBackend, String>> = std::sync::OnceLock::new();
    BACKEND
        .get_or_init(|| {
            load_backend_modules();
            LlamaBackend::init().map_err(|e| e.to_string())
        })
        .as_ref()
        .map_err(|e| LoadError::Backend(e.clone()))
}

/// With the `dynamic-backends` feature, llama.cpp's back-ends are modules
/// (`libggml-cpu-*.so`, `libggml-cuda.so`, …) loaded from the executable's
/// directory, then from the build's own; the best CPU variant and any GPU
/// back-end found there are used.
fn load_backend_modules() {
    #[cfg(feature = "dynamic-backends")]
    {
        if let Some(dir) = std::env::current_exe()
            .ok()
            .and_then(|p| p.parent().map(ToOwned::to_owned))
        {
            llama_cpp_2::llama_backend::load_backends_from_path(&dir);
        }
        if llama_cpp_2::list_llama_ggml_backend_devices().is_empty() {
            llama_cpp_2::llama_backend::load_backends();
        }
    }
}

/// Entry point of the model thread.
pub(super) fn run(
    config: LocalConfig,
    path: std::path::PathBuf,
    summary: GgufSummary,
    loaded: oneshot::Sender<Result<(ModelInfo, Arc<Prompter>), LoadError>>,
    mut rx: mpsc::Receiver<Command>,
    health: Arc<Health>,
    stopping: Arc<AtomicBool>,
) {
    // Whatever ends this thread, /health must say so.
    struct Sentinel(Arc<Health>);
    impl Drop for Sentinel {
        fn drop(&mut self) {
            if std::thread::panicking() {
                self.0.set_failed("the model thread panicked".into());
            } else if !matches!(self.0.get(), HealthState::Failed { .. }) {
                self.0.set_failed("the model thread stopped".into());
            }
        }
    }
    let _sentinel = Sentinel(health.clone());
    // Compute threads spawned from here on (llama.cpp's OpenMP team) inherit it.
    lower_priority(config.nice);

    let backend = match backend() {
        Ok(b) => b,
        Err(e) => {
            let _ = loaded.send(Err(e));
            return;
        }
    };
    let mut params = std::pin::pin!(LlamaModelParams::default().with_n_gpu_layers(config.gpu_layers));
    if super::cpu::has_amx(&super::cpu::features()) {
        if config.gpu_layers == 0 {
            // See `cpu`: every weight in the plain CPU buffer type, none in AMX's.
            tracing::warn!("this CPU back-end has ggml's AMX kernels, which crash on AMX CPUs; keeping the weights out of them (slower)");
            params.as_mut().add_cpu_buft_override(c".");
        } else {
            tracing::warn!("this CPU back-end has ggml's AMX kernels, which crash on AMX CPUs; offload every layer (--gpu-layers 999) or use a build without them");
        }
    }
    let model = match LlamaModel::load_from_file(backend, &path, &params) {
        Ok(m) => Arc::new(m),
        Err(e) => {
            let _ = loaded.send(Err(LoadError::Model {
                path: path.clone(),
                reason: e.to_string(),
            }));
            return;
        }
    };
    let (prompter, template) = Prompter::new(model.clone());
    let prompter = Arc::new(prompter);
    let mut worker = match Worker::new(backend, &model, &config, &path, &summary, template) {
        Ok(w) => w,
        Err(e) => {
            let _ = loaded.send(Err(e));
            return;
        }
    };
    tracing::info!(
        model = %worker.info.name, ctx = worker.info.ctx, threads = worker.info.threads,
        gpu_layers = worker.info.gpu_layers, template = ?worker.info.template, "model loaded"
    );
    if loaded.send(Ok((worker.info.clone(), prompter))).is_err() {
        return;
    }
    match worker.warmup() {
        Ok(()) => health.set_ready(),
        Err(e) => {
            tracing::error!(error = %e, "warm-up failed");
            health.set_failed(format!("warm-up failed: {e}"));
        }
    }

    // A panic while serving a command fails that command, drops the context
    // (its KV cache may be half-written) and builds a fresh one; the model's
    // weights are read-only and stay. Panics that keep coming mark the model
    // failed for good.
    let mut panics = Panics::default();
    let mut worker = Some(worker);
    while let Some(command) = rx.blocking_recv() {
        let Some(w) = worker.as_mut() else { break };
        // /health learns of a panic before the failed request is answered.
        let verdict = match command {
            Command::Shutdown => break,
            Command::Generate(job) if stopping.load(Ordering::Acquire) => {
                let _ = job.events.send(Event::Failed(EngineError::Unavailable(
                    "the server is shutting down".into(),
                )));
                continue;
            }
            Command::Generate(job) => {
                let events = job.events.clone();
                let Err(panic) = catch_unwind(AssertUnwindSafe(|| w.generate(job, &stopping))) else {
                    continue;
                };
                let (verdict, error) = panics.record(&health, &*panic);
                let _ = events.send(Event::Failed(error));
                verdict
            }
            Command::Bench { test, reply } => match catch_unwind(AssertUnwindSafe(|| w.bench(test))) {
                Ok(result) => {
                    let _ = reply.send(result);
                    continue;
                }
                Err(panic) => {
                    let (verdict, error) = panics.record(&health, &*panic);
                    let _ = reply.send(Err(error));
                    verdict
                }
            },
        };
        if verdict == Verdict::GiveUp {
            break;
        }
        // Free the old context before allocating the new one.
        drop(worker.take());
        match Worker::new(backend, &model, &config, &path, &summary, template) {
            Ok(w) => {
                tracing::warn!("model context rebuilt after a panic");
                worker = Some(w);
                health.set_ready_again();
            }
            Err(e) => {
                health.set_failed(format!("rebuilding the model context after a panic failed: {e}"));
                break;
            }
        }
    }
}

#[derive(Debug, PartialEq, Eq)]
enum Verdict {
    Rebuild,
    GiveUp,
}

/// Recent panics of the model thread: up to [`Panics::MAX`] within
/// [`Panics::WINDOW`] are recovered from, then the model is failed for good.
#[derive(Default)]
struct Panics(VecDeque<Instant>);

impl Panics {
    const MAX: usize = 3;
    const WINDOW: Duration = Duration::from_secs(600);

    /// Logs a panic, marks /health and says what to do; the error is the
    /// failed request's answer.
    fn record(&mut self, health: &Health, panic: &(dyn std::any::Any + Send)) -> (Verdict, EngineError) {
        let message = panic
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "(no message)".to_owned());
        let reason = format!("the model thread panicked: {message}");
        tracing::error!(%reason, "model command failed");
        self.0.retain(|t| t.elapsed() < Self::WINDOW);
        self.0.push_back(Instant::now());
        let verdict = if self.0.len() >= Self::MAX {
            health.set_failed(format!(
                "{reason} ({} panics within {} minutes); model requests are refused until \
                 evolve-hud is restarted, HUD facts are still served",
                Self::MAX,
                Self::WINDOW.as_secs() / 60
            ));
            Verdict::GiveUp
        } else {
            health.set_failed(format!("{reason}; rebuilding its context"));
            health.count_restart(&reason);
            Verdict::Rebuild
        };
        (verdict, EngineError::Backend(reason))
    }
}

struct Worker<'m> {
    model: &'m LlamaModel,
    ctx: LlamaContext<'m>,
    batch: LlamaBatch<'static>,
    slots: Slots<LlamaToken>,
    info: ModelInfo,
}

impl<'m> Worker<'m> {
    fn new(
        backend: &LlamaBackend,
        model: &'m LlamaModel,
        config: &LocalConfig,
        path: &std::path::Path,
        summary: &GgufSummary,
        template: TemplateSource,
    ) -> Result<Self, LoadError> {
        let ctx_train = model.n_ctx_train();
        let ctx_size = match config.ctx {
            0 => ctx_train,
            n => n,
        };
        if ctx_size > ctx_train && ctx_train > 0 {
            tracing::warn!(
                ctx = ctx_size,
                ctx_train,
                "--ctx exceeds the context the model was trained for"
            );
        }
        let threads = config.threads;
        let batch = config.batch.clamp(1, ctx_size.max(1));
        let gpu_layers = if backend.supports_gpu_offload() {
            config.gpu_layers.min(model.n_layer() + 1)
        } else {
            0
        };
        let flash = config.flash_attn.llama_type(gpu_layers > 0);
        // Each slot gets a KV stream of its own, `ctx_size` cells long, so a
        // prompt's attention spans only its own cache, not every cached prompt.
        let params = LlamaContextParams::default()
            .with_n_ctx(NonZeroU32::new(ctx_size.saturating_mul(config.kv_slots)))
            .with_n_batch(batch)
            .with_n_ubatch(batch)
            .with_n_seq_max(config.kv_slots)
            .with_kv_unified(false)
            .with_n_threads(threads as i32)
            .with_n_threads_batch(threads as i32)
            .with_flash_attention_policy(flash);
        let ctx = model.new_context(backend, params).map_err(|e| LoadError::Context {
            ctx: ctx_size,
            reason: e.to_string(),
        })?;

        let name = model
            .meta_val_str("general.name")
            .ok()
            .filter(|n| !n.trim().is_empty())
            .unwrap_or_else(|| file_stem(path));
        let info = ModelInfo {
            path: path.to_owned(),
            name,
            architecture: summary.architecture.clone(),
            size_bytes: summary.file_size,
            tensor_bytes: model.size(),
            params: model.n_params(),
            layers: model.n_layer(),
            ctx: ctx.n_ctx() / config.kv_slots,
            ctx_train,
            threads,
            gpu_layers,
            backend: backend_name(gpu_layers),
            cpu_features: super::cpu::features(),
            template,
            add_bos: model.vocab().should_add_bos(),
        };
        Ok(Worker {
            model,
            ctx,
            batch: LlamaBatch::new(batch as usize, 1),
            slots: Slots::new(config.kv_slots as usize),
            info,
        })
    }

    /// One short decode, so the first request does not pay for lazy set-up.
    fn warmup(&mut self) -> Result<(), EngineError> {
        let tokens = self.model.vocab().tokenize(b"Hello", false, false);
        self.decode(0, 0, &tokens)?;
        self.clear_slot(0);
        Ok(())
    }

    fn generate(&mut self, job: Job, stopping: &AtomicBool) {
        let Job {
            request,
            prompt,
            events,
            span,
        } = job;
        if events.is_closed() {
            // Given up on while queued (a client that left, a stale summary).
            return;
        }
        if let Some(started) = &request.started {
            started.store(true, Ordering::Release);
        }
        // The caller's span, so the work shows under the request that asked.
        let _enter = span.enter();
        let event = match self.try_generate(&request, &prompt, &events, stopping) {
            Ok(done) => Event::Done(done),
            Err(e) => {
                tracing::debug!(error = %e, "generation failed");
                Event::Failed(e)
            }
        };
        let _ = events.send(event);
    }

    fn try_generate(
        &mut self,
        request: &GenerateRequest,
        prompt: &ValidPrompt,
        events: &mpsc::UnboundedSender<Event>,
        stopping: &AtomicBool,
    ) -> Result<Completion, EngineError> {
        let tokens = &prompt.tokens;
        let n_ctx = self.info.ctx;
        let started = Instant::now();
        let slot = self.place(request.cache_key.as_deref(), tokens);
        // Keep the shared prefix, but always decode at least the last prompt
        // token: its logits start generation.
        let shared = common_prefix(self.slots.tokens(slot), tokens).min(tokens.len() - 1);
        let cached = self.truncate_slot(slot, shared);
        self.decode(slot, cached, &tokens[cached..])?;
        // Tests of the recovery above: a panic with the slot half-written.
        #[cfg(feature = "fault-injection")]
        if prompt.panic {
            panic!("fault injection: the prompt asked the model thread to panic");
        }
        let prompt_ms = started.elapsed().as_secs_f64() * 1000.0;

        let generation_started = Instant::now();
        let params = &request.params;
        let mut sampler = Sampler::new(self.model, params)?;
        let mut utf8 = Utf8Stream::default();
        let mut stops = StopMatcher::new(&params.stop);
        let room = n_ctx as usize - tokens.len();
        let limit = (params.max_tokens as usize).min(room);
        let mut generated = 0u32;
        let mut forced_tokens = 0u32;
        let mut finish = FinishReason::Length;
        let vocab = self.model.vocab();
        let mut forced = params.json_schema.as_deref().and_then(Forced::from_schema);
        while (generated as usize) < limit {
            if events.is_closed() || stopping.load(Ordering::Acquire) {
                finish = FinishReason::Cancelled;
                break;
            }
            // `sample` also accepts the token into the samplers' state.
            let token = sampler.sample(&self.ctx, self.batch.n_tokens() - 1);
            if vocab.is_eog(token) {
                finish = FinishReason::Stop;
                break;
            }
            let mut next = vec![token];
            let mut text = utf8.push(&vocab.token_to_piece(token, false, None));
            if let Some(forced) = &mut forced {
                forced.push(&text);
                // What the grammar now decides goes in with this token, in
                // one batch; each of its tokens is checked by the grammar.
                let rest = forced.rest().map(|r| spelling(&vocab, r)).unwrap_or_default();
                let room = limit - generated as usize - 1;
                for token in rest.into_iter().take(room) {
                    if !sampler.accept_forced(token) {
                        break;
                    }
                    let piece = utf8.push(&vocab.token_to_piece(token, false, None));
                    forced.push(&piece);
                    text.push_str(&piece);
                    next.push(token);
                }
            }
            generated += next.len() as u32;
            forced_tokens += next.len() as u32 - 1;
            let (out, hit) = stops.push(&text);
            if !out.is_empty() {
                let _ = events.send(Event::Text(out));
            }
            if hit {
                finish = FinishReason::Stop;
                break;
            }
            if (generated as usize) < limit {
                let pos = self.slots.tokens(slot).len();
                self.decode(slot, pos, &next)?;
            }
        }
        if finish != FinishReason::Stop {
            let (out, _) = stops.push(&utf8.finish());
            let rest = out + &stops.finish();
            if !rest.is_empty() {
                let _ = events.send(Event::Text(rest));
            }
        }
        Ok(Completion {
            prompt_tokens: tokens.len() as u32,
            cached_tokens: cached as u32,
            completion_tokens: generated,
            forced_tokens,
            finish_reason: finish,
            prompt_ms,
            generation_ms: generation_started.elapsed().as_secs_f64() * 1000.0,
        })
    }

    /// Places the prompt by the slot policy and applies the placement to
    /// the cache; returns the slot.
    fn place(&mut self, key: Option<&str>, tokens: &[LlamaToken]) -> usize {
        let placement = self.slots.place(key, tokens);
        match placement {
            Placement::Reuse(_) => {}
            Placement::Clear(i) => self.clear_slot(i),
            Placement::Fork { from, to, keep } => {
                self.clear_slot(to);
                // Slots live in separate streams, which copy whole; the copy
                // is then cut to the shared prefix. A copy or cut that fails
                // leaves the fresh slot empty.
                if self.ctx.copy_kv_cache_seq(from as i32, to as i32, None, None).is_ok() {
                    self.slots.fork(from, to);
                    self.truncate_slot(to, keep);
                }
            }
        }
        placement.slot()
    }

    fn clear_slot(&mut self, index: usize) {
        if let Err(e) = self.ctx.clear_kv_cache_seq(Some(index as u32), None, None) {
            tracing::warn!(slot = index, error = %e, "clearing a KV slot failed");
        }
        self.slots.clear(index);
    }

    /// Cuts the slot's cache to its first `len` tokens and returns how many
    /// it keeps: `len`, or 0 when llama.cpp cannot remove part of a sequence
    /// (recurrent and some sliding-window caches), in which case the whole
    /// slot is cleared so its tokens never disagree with its cache.
    fn truncate_slot(&mut self, index: usize, len: usize) -> usize {
        if self.slots.tokens(index).len() <= len {
            return self.slots.tokens(index).len();
        }
        match self.ctx.clear_kv_cache_seq(Some(index as u32), Some(len as u32), None) {
            Ok(true) => {
                self.slots.truncate(index, len);
                len
            }
            _ => {
                self.clear_slot(index);
                0
            }
        }
    }

    /// Decodes `tokens` into slot `index` from position `pos`, in batches,
    /// with logits for the last token only.
    fn decode(&mut self, index: usize, pos: usize, tokens: &[LlamaToken]) -> Result<(), EngineError> {
        let chunk = self.batch_capacity();
        let mut at = pos;
        for piece in tokens.chunks(chunk) {
            self.batch.clear();
            for (i, &token) in piece.iter().enumerate() {
                let last = at + i + 1 == pos + tokens.len();
                self.batch
                    .add(token, (at + i) as i32, &[index as i32], last)
                    .map_err(|e| EngineError::Backend(e.to_string()))?;
            }
            match self.ctx.decode(&mut self.batch) {
                Ok(()) => {}
                Err(DecodeError::NoKvCacheSlot) => {
                    return Err(EngineError::ContextExceeded {
                        prompt: (pos + tokens.len()) as u32,
                        ctx: self.info.ctx,
                    })
                }
                Err(e) => {
                    // The failed batch may be partly in the cache; forget this slot.
                    self.clear_slot(index);
                    return Err(EngineError::Backend(e.to_string()));
                }
            }
            self.slots.extend(index, piece);
            at += piece.len();
        }
        Ok(())
    }

    /// Times one llama-bench style test in slot 0, which is cleared before
    /// and after: random tokens, no tokenizing or sampling.
    fn bench(&mut self, test: BenchTest) -> Result<std::time::Duration, EngineError> {
        self.clear_slot(0);
        let n_vocab = self.model.n_vocab().max(1) as u64;
        // A fixed linear congruential sequence: the same tokens every run.
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        let mut token = move || {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            LlamaToken::new(((state >> 33) % n_vocab) as i32)
        };
        let started = Instant::now();
        let result = match test {
            BenchTest::Prompt(n) => {
                let tokens: Vec<LlamaToken> = (0..n).map(|_| token()).collect();
                self.decode(0, 0, &tokens)
            }
            BenchTest::Generate(n) => (0..n as usize).try_for_each(|pos| self.decode(0, pos, &[token()])),
        };
        self.ctx.synchronize();
        let elapsed = started.elapsed();
        self.clear_slot(0);
        result.map(|()| elapsed)
    }

    fn batch_capacity(&self) -> usize {
        self.ctx.n_batch().max(1) as usize
    }
}

/// Sampling for one generation: the chain of `params`, and the grammar the
/// output must follow, if any.
struct Sampler {
    chain: LlamaSampler,
    grammar: Option<LlamaSampler>,
}

impl Sampler {
    fn new(model: &LlamaModel, params: &SamplingParams) -> Result<Sampler, EngineError> {
        let chain = if params.temperature <= 0.0 {
            LlamaSampler::greedy()
        } else {
            let mut chain = Vec::with_capacity(5);
            if params.top_k > 0 {
                chain.push(LlamaSampler::top_k(params.top_k as i32));
            }
            chain.push(LlamaSampler::top_p(params.top_p, 1));
            if params.min_p > 0.0 {
                chain.push(LlamaSampler::min_p(params.min_p, 1));
            }
            chain.push(LlamaSampler::temp(params.temperature));
            chain.push(LlamaSampler::dist(params.seed));
            LlamaSampler::chain_simple(chain)
        };
        let grammar = match &params.json_schema {
            Some(schema) => {
                let grammar = super::json_schema_grammar(schema)?;
                Some(
                    LlamaSampler::grammar(model, &grammar, "root")
                        .map_err(|e| EngineError::InvalidInput(format!("the grammar was refused: {e}")))?,
                )
            }
            None => None,
        };
        Ok(Sampler { chain, grammar })
    }

    /// Picks the next token from the logits of output `idx` and accepts it.
    /// With a grammar, the chain picks first and the grammar checks only
    /// that token; the whole vocabulary goes through the grammar only when
    /// the pick breaks it (checking every token each step is slow for large
    /// vocabularies, 151k for Qwen).
    fn sample(&mut self, ctx: &LlamaContext, idx: i32) -> LlamaToken {
        let Some(grammar) = &mut self.grammar else {
            return self.chain.sample(ctx, idx);
        };
        let mut candidates = ctx.token_data_array_ith(idx);
        candidates.apply_sampler(&mut self.chain);
        let picked = candidates.selected_token();
        let allowed = picked.is_some_and(|token| allows(grammar, token));
        let token = match picked {
            Some(token) if allowed => token,
            _ => {
                let mut candidates = ctx.token_data_array_ith(idx);
                candidates.apply_sampler(grammar);
                candidates.apply_sampler(&mut self.chain);
                // The grammar leaves at least the end of generation when it
                // is complete, so the chain always has a pick.
                candidates.selected_token().unwrap_or(LlamaToken(0))
            }
        };
        grammar.accept(token);
        self.chain.accept(token);
        token
    }

    /// Accepts `token` without sampling it, as the grammar's only choice
    /// (see [`Forced`]), if the grammar allows it.
    fn accept_forced(&mut self, token: LlamaToken) -> bool {
        let Some(grammar) = &mut self.grammar else {
            return false;
        };
        if !allows(grammar, token) {
            return false;
        }
        grammar.accept(token);
        self.chain.accept(token);
        true
    }
}

/// Whether `grammar`, in its state now, allows `token` next.
fn allows(grammar: &mut LlamaSampler, token: LlamaToken) -> bool {
    let mut one = LlamaTokenDataArray::new(vec![LlamaTokenData::new(token, 1.0, 0.0)], false);
    one.apply_sampler(grammar);
    one.data[0].logit().is_finite()
}

/// Tokens whose pieces spell exactly `text`, or none when the vocabulary's
/// tokenizer changes the text (a leading space, say).
fn spelling(vocab: &llama_cpp_2::vocab::LlamaVocab<'_>, text: &str) -> Vec<LlamaToken> {
    let tokens = vocab.tokenize(text.as_bytes(), false, false);
    let spelled: Vec<u8> = tokens
        .iter()
        .flat_map(|&t| vocab.token_to_piece(t, false, None))
        .collect();
    if spelled == text.as_bytes() {
        tokens
    } else {
        Vec::new()
    }
}

fn file_stem(path: &std::path::Path) -> String {
    path.file_stem()
        .map_or_else(|| "model".into(), |s| s.to_string_lossy().into_owned())
}

/// The back-end the offloaded layers run on ("CUDA", "Metal", …), as
/// llama.cpp names its first GPU device; "CPU" when nothing is offloaded.
fn backend_name(gpu_layers: u32) -> String {
    use llama_cpp_2::LlamaBackendDeviceType as Type;
    let gpu = (gpu_layers > 0)
        .then(llama_cpp_2::list_llama_ggml_backend_devices)
        .into_iter()
        .flatten()
        .find(|d| matches!(d.device_type, Type::Gpu | Type::IntegratedGpu | Type::Accelerator));
    gpu.map_or_else(|| "CPU".into(), |d| format!("{} ({})", d.backend, d.description))
}
