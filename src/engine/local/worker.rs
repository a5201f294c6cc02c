//! The worker: one llama.cpp context on the model thread, running one
//! command at a time. Prompts keep their KV cache in a small pool of
//! sequences, so a prompt that extends a cached one only decodes its new
//! tokens.

use super::forced::Forced;
use super::kept::{KeptCache, KeptSlot, KEEP_BYTES};
use super::prompt::ValidPrompt;
use super::sampler::{spelling, Sampler};
use super::slots::{common_prefix, Placement, Slots};
use super::text::{StopMatcher, Utf8Stream};
use super::LocalConfig;
use super::{BenchTest, Job, LoadError, ModelInfo, TemplateSource};
use crate::engine::{Completion, EngineError, Event, FinishReason, GenerateRequest, SamplingParams};
use crate::gguf::GgufSummary;
use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::context::session::{LlamaStateSeqFlags, SeqState};
use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::token::LlamaToken;
use llama_cpp_2::DecodeError;
use std::num::NonZeroU32;
use std::sync::atomic::Ordering;
use std::time::Instant;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// How long the load must ask for another thread count (seen before
/// requests this far apart) before the context is built again with it.
const SETTLE: std::time::Duration = std::time::Duration::from_secs(2);

/// What one generation produced.
struct Generated {
    tokens: u32,
    /// Of them, the tokens the grammar decided (see [`Forced`]).
    forced: u32,
    finish: FinishReason,
}

/// After a sampled piece `text`: the tokens a JSON schema now decides (the
/// rest of an enum value or key, say), up to `room`, each checked by the
/// grammar and pushed onto `next` to go into the same batch; returns their
/// text.
fn decided(
    forced: &mut Forced,
    text: &str,
    sampler: &mut Sampler,
    vocab: &llama_cpp_2::vocab::LlamaVocab<'_>,
    utf8: &mut Utf8Stream,
    room: usize,
    next: &mut Vec<LlamaToken>,
) -> String {
    forced.push(text);
    let rest = forced.rest().map(|r| spelling(vocab, r)).unwrap_or_default();
    let mut out = String::new();
    for token in rest.into_iter().take(room) {
        if !sampler.accept_forced(token) {
            break;
        }
        let piece = utf8.push(&vocab.token_to_piece(token, false, None));
        forced.push(&piece);
        out.push_str(&piece);
        next.push(token);
    }
    out
}

pub(super) struct Worker<'m> {
    model: &'m LlamaModel,
    backend: &'m LlamaBackend,
    /// The context's settings, to build it again with another thread count.
    params: LlamaContextParams,
    ctx: LlamaContext<'m>,
    /// Threads the context decodes with now; up to `info.threads`, fewer
    /// while other processes keep cores busy (unless `adapt` is off).
    threads: u32,
    adapt: bool,
    /// Cores this process may use, read once.
    cores: usize,
    /// Another thread count the load asked for, and since when.
    asked: Option<(u32, Instant)>,
    batch: LlamaBatch<'static>,
    slots: Slots<LlamaToken>,
    pub(super) info: ModelInfo,
}

impl<'m> Worker<'m> {
    pub(super) fn new(
        backend: &'m LlamaBackend,
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
        let ctx = model
            .new_context(backend, params.clone())
            .map_err(|e| LoadError::Context {
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
            cpu_variant: super::cpu::variant(),
            template,
            add_bos: model.vocab().should_add_bos(),
        };
        metrics::gauge!("evolve_hud_decode_threads").set(f64::from(threads));
        Ok(Worker {
            model,
            backend,
            params,
            ctx,
            threads,
            // Offloaded layers do not wait on CPU cores.
            adapt: config.adapt_threads && gpu_layers == 0,
            cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
            asked: None,
            batch: LlamaBatch::new(batch as usize, 1),
            slots: Slots::new(config.kv_slots as usize),
            info,
        })
    }

    /// One short decode, so the first request does not pay for lazy set-up.
    pub(super) fn warmup(&mut self) -> Result<(), EngineError> {
        let tokens = self.model.vocab().tokenize(b"Hello", false, false);
        self.decode(0, 0, &tokens)?;
        self.clear_slot(0);
        Ok(())
    }

    /// Copies the cached prompts out, the most worth keeping first, up to
    /// [`KEEP_BYTES`] of state; `stamp` names the model file they belong to.
    pub(super) fn keep_cache(&self, stamp: Option<crate::gguf::FileStamp>) -> KeptCache {
        let mut kept = KeptCache {
            stamp,
            slots: Vec::new(),
        };
        let mut room = KEEP_BYTES;
        for index in self.slots.by_worth() {
            let size = self
                .ctx
                .state_seq_get_size_ext(index as i32, LlamaStateSeqFlags::empty());
            if size > room {
                continue;
            }
            if let Ok(state) = self.ctx.state_seq_get(index as i32, LlamaStateSeqFlags::empty()) {
                room -= state.byte_len();
                kept.slots.push(KeptSlot {
                    index,
                    key: self.slots.key(index).map(str::to_owned),
                    tokens: self.slots.tokens(index).to_vec(),
                    state,
                });
            }
        }
        kept
    }

    /// Puts cached prompts kept by [`Worker::keep_cache`] back; a slot whose
    /// state does not fit this context stays empty. Returns the tokens put back.
    pub(super) fn restore(&mut self, kept: KeptCache) -> usize {
        let mut restored = 0;
        // The least worth keeping first, so that the most worth keeping is
        // the most recently used again, the last to be evicted.
        for slot in kept.slots.into_iter().rev() {
            if slot.index >= self.slots.count() {
                continue;
            }
            match self.ctx.state_seq_set(&slot.state, slot.index as i32) {
                Ok(()) => {
                    restored += slot.tokens.len();
                    self.slots.restore(slot.index, slot.key, slot.tokens);
                }
                Err(e) => {
                    tracing::warn!(slot = slot.index, error = %e, "a kept prompt cache did not fit the new context");
                    self.clear_slot(slot.index);
                }
            }
        }
        restored
    }

    pub(super) fn generate(&mut self, job: Job, stopping: &CancellationToken) {
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
        if let Err(e) = self.fit_threads() {
            tracing::warn!(error = %e, "keeping the model's thread count");
        }
        let event = match self.try_generate(&request, &prompt, &events, stopping) {
            Ok(done) => Event::Done(done),
            Err(e) => {
                tracing::debug!(error = %e, "generation failed");
                Event::Failed(e)
            }
        };
        let _ = events.send(event);
    }

    /// Decodes the next request on the cores other processes leave free
    /// (at most `--threads`): a thread that waits for a core holds up the
    /// others at every step. A new count builds the context again and copies
    /// the cached prompts into it; the count changes only when the load does.
    fn fit_threads(&mut self) -> Result<(), EngineError> {
        if !self.adapt {
            return Ok(());
        }
        let Some(busy) = super::load::busy_elsewhere() else {
            return Ok(());
        };
        let wanted = super::load::threads_for(self.info.threads, self.cores, busy);
        if wanted == self.threads {
            self.asked = None;
            return Ok(());
        }
        // Only a load that lasts, as each change rebuilds the context and
        // copies the cached prompts; at once while nothing is cached.
        match self.asked {
            _ if !self.slots.holds_any() => {}
            Some((asked, since)) if asked == wanted && since.elapsed() >= SETTLE => {}
            Some((asked, _)) if asked == wanted => return Ok(()),
            _ => {
                self.asked = Some((wanted, Instant::now()));
                return Ok(());
            }
        }
        self.asked = None;
        let started = Instant::now();
        let params = self
            .params
            .clone()
            .with_n_threads(wanted as i32)
            .with_n_threads_batch(wanted as i32);
        // The cached prompts move to the new context: each slot's KV state
        // is copied out, and into the same sequence there.
        let saved: Vec<(usize, Option<SeqState>)> = (0..self.slots.count())
            .filter(|&i| !self.slots.tokens(i).is_empty())
            .map(|i| (i, self.ctx.state_seq_get(i as i32, LlamaStateSeqFlags::empty()).ok()))
            .collect();
        self.ctx = self
            .model
            .new_context(self.backend, params)
            .map_err(|e| EngineError::Backend(format!("building the context with {wanted} threads: {e}")))?;
        let mut kept = 0;
        for (index, state) in saved {
            match state.map(|s| self.ctx.state_seq_set(&s, index as i32)) {
                Some(Ok(())) => kept += self.slots.tokens(index).len(),
                _ => {
                    // Not carried over: the slot starts empty.
                    let _ = self.ctx.clear_kv_cache_seq(Some(index as u32), None, None);
                    self.slots.clear(index);
                }
            }
        }
        tracing::info!(
            from = self.threads,
            to = wanted,
            busy_elsewhere = busy,
            cached_tokens_kept = kept,
            ms = started.elapsed().as_millis() as u64,
            "decoding threads changed with the machine's load"
        );
        self.threads = wanted;
        metrics::gauge!("evolve_hud_decode_threads").set(f64::from(wanted));
        metrics::counter!("evolve_hud_decode_thread_changes_total").increment(1);
        Ok(())
    }

    fn try_generate(
        &mut self,
        request: &GenerateRequest,
        prompt: &ValidPrompt,
        events: &mpsc::UnboundedSender<Event>,
        stopping: &CancellationToken,
    ) -> Result<Completion, EngineError> {
        let tokens = &prompt.tokens;
        let started = Instant::now();
        let (slot, cached) = self.prefill(request.cache_key.as_deref(), tokens)?;
        // Tests of the recovery above: a panic with the slot half-written.
        #[cfg(feature = "fault-injection")]
        if prompt.panic {
            panic!("fault injection: the prompt asked the model thread to panic");
        }
        let prompt_ms = started.elapsed().as_secs_f64() * 1000.0;
        let generation_started = Instant::now();
        let room = self.info.ctx as usize - tokens.len();
        let limit = (request.params.max_tokens as usize).min(room);
        let generated = self.sample(slot, &request.params, limit, events, stopping)?;
        Ok(Completion {
            prompt_tokens: tokens.len() as u32,
            cached_tokens: cached as u32,
            completion_tokens: generated.tokens,
            forced_tokens: generated.forced,
            finish_reason: generated.finish,
            prompt_ms,
            generation_ms: generation_started.elapsed().as_secs_f64() * 1000.0,
        })
    }

    /// Places the prompt in a slot and decodes what the slot's cache lacks;
    /// returns the slot and the prompt tokens its cache already held.
    fn prefill(&mut self, key: Option<&str>, tokens: &[LlamaToken]) -> Result<(usize, usize), EngineError> {
        let slot = self.place(key, tokens);
        // Keep the shared prefix, but always decode at least the last prompt
        // token: its logits start generation.
        let shared = common_prefix(self.slots.tokens(slot), tokens).min(tokens.len() - 1);
        let cached = self.truncate_slot(slot, shared);
        self.decode(slot, cached, &tokens[cached..])?;
        Ok((slot, cached))
    }

    /// Samples up to `limit` tokens after the prompt in `slot`, sending the
    /// text to `events` as it is complete (stop strings held back), until
    /// the end of generation, a stop string, or a cancel.
    fn sample(
        &mut self,
        slot: usize,
        params: &SamplingParams,
        limit: usize,
        events: &mpsc::UnboundedSender<Event>,
        stopping: &CancellationToken,
    ) -> Result<Generated, EngineError> {
        let mut sampler = Sampler::new(self.model, params)?;
        let mut utf8 = Utf8Stream::default();
        let mut stops = StopMatcher::new(&params.stop);
        let mut forced = params.json_schema.as_deref().and_then(Forced::from_schema);
        let vocab = self.model.vocab();
        let mut out = Generated {
            tokens: 0,
            forced: 0,
            finish: FinishReason::Length,
        };
        while (out.tokens as usize) < limit {
            if events.is_closed() || stopping.is_cancelled() {
                out.finish = FinishReason::Cancelled;
                break;
            }
            // `sample` also accepts the token into the samplers' state.
            let token = sampler.sample(&self.ctx, self.batch.n_tokens() - 1);
            if vocab.is_eog(token) {
                out.finish = FinishReason::Stop;
                break;
            }
            let mut next = vec![token];
            let mut text = utf8.push(&vocab.token_to_piece(token, false, None));
            if let Some(forced) = &mut forced {
                let room = limit - out.tokens as usize - 1;
                let more = decided(forced, &text, &mut sampler, &vocab, &mut utf8, room, &mut next);
                text.push_str(&more);
            }
            out.tokens += next.len() as u32;
            out.forced += next.len() as u32 - 1;
            let (shown, hit) = stops.push(&text);
            if !shown.is_empty() {
                let _ = events.send(Event::Text(shown));
            }
            if hit {
                out.finish = FinishReason::Stop;
                break;
            }
            if (out.tokens as usize) < limit {
                let pos = self.slots.tokens(slot).len();
                self.decode(slot, pos, &next)?;
            }
        }
        if out.finish != FinishReason::Stop {
            let (shown, _) = stops.push(&utf8.finish());
            let rest = shown + &stops.finish();
            if !rest.is_empty() {
                let _ = events.send(Event::Text(rest));
            }
        }
        Ok(out)
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
    pub(super) fn bench(&mut self, test: BenchTest) -> Result<std::time::Duration, EngineError> {
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
