//! The remote engine: model work goes to an OpenAI-compatible server
//! (llama-server, vLLM, Ollama) over HTTP; nothing is loaded here.
//!
//! - Every request streams (`stream: true`), so text arrives as it is
//!   generated and dropping the receiver closes the connection, which the
//!   engine takes as a cancel.
//! - Prompts are sent with `cache_prompt: true`, and a request with a cache
//!   key is pinned to one of llama-server's slots (`id_slot`), so the
//!   engine's prefix cache serves the HUD's append-only questions.
//! - A JSON schema becomes `response_format: json_schema`.
//! - Faults: a connect timeout, a timeout for the answer's start and for
//!   each pause inside it, and a circuit breaker: after
//!   [`Breaker::THRESHOLD`] failures in a row, requests are refused at once
//!   until a health probe (`GET /models`) succeeds again. `/health` reports
//!   the probe's verdict with the reason.

use super::{
    Backend, ChatMessage, Completion, EngineError, EngineInfo, Event, FinishReason, GenerateRequest, HealthState,
    Prompt,
};
use crate::secret::Secret;
use eventsource_stream::Eventsource;
use futures_util::StreamExt;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

/// How to reach the engine.
#[derive(Debug, Clone)]
pub struct RemoteConfig {
    /// Base URL of the OpenAI-compatible API, ending in `/v1`.
    pub url: String,
    /// The engine's model to use; `None`: the first of `GET /models`.
    pub model: Option<String>,
    pub token: Option<Secret>,
    /// Longest wait for the engine to start answering, and for each next
    /// piece of a streamed answer.
    pub timeout: Duration,
    /// Requests sent to the engine at once; more are refused with 429.
    pub max_in_flight: usize,
}

impl RemoteConfig {
    /// Default of [`RemoteConfig::timeout`].
    pub const TIMEOUT: Duration = Duration::from_secs(30);
    /// Default of [`RemoteConfig::max_in_flight`].
    pub const MAX_IN_FLIGHT: u32 = 16;
    pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);
    /// Health probes: every this often while healthy, and their own timeout.
    pub const PROBE_INTERVAL: Duration = Duration::from_secs(5);
    pub const PROBE_TIMEOUT: Duration = Duration::from_secs(3);
    /// Probes while the engine is failing, so recovery is seen quickly.
    pub const RETRY_INTERVAL: Duration = Duration::from_secs(1);
}

/// The remote engine. Cheap to clone; [`RemoteEngine::start`] also starts
/// its health probe, which ends with the last clone.
#[derive(Clone)]
pub struct RemoteEngine {
    inner: Arc<Inner>,
}

struct Inner {
    config: RemoteConfig,
    client: reqwest::Client,
    /// What the probes learnt: the model's id, context and slot count.
    known: Mutex<Known>,
    health: Mutex<HealthState>,
    breaker: Mutex<Breaker>,
    in_flight: AtomicUsize,
    stopping: AtomicBool,
    /// Wakes running generations when shutdown begins.
    shutdown: tokio::sync::Notify,
}

#[derive(Debug, Default, Clone)]
struct Known {
    model: Option<String>,
    ctx: Option<u32>,
    slots: Option<u32>,
}

/// Consecutive failures, and until when requests are refused.
#[derive(Debug, Default)]
struct Breaker {
    failures: u32,
    /// Until when, why, and whether the engine seemed down (unreachable or
    /// silent) rather than broken (answering garbage or 5xx).
    open: Option<(Instant, String, bool)>,
}

impl Breaker {
    const THRESHOLD: u32 = 3;
    const COOLDOWN: Duration = Duration::from_secs(10);

    fn fail(&mut self, reason: &str, down: bool) {
        self.failures += 1;
        if self.failures >= Self::THRESHOLD {
            self.open = Some((Instant::now() + Self::COOLDOWN, reason.to_owned(), down));
        }
    }

    fn succeed(&mut self) {
        self.failures = 0;
        self.open = None;
    }

    /// A health probe got an answer: an engine that was down is back. One
    /// that answered garbage stays refused until its cooldown ends and a
    /// request succeeds.
    fn probe_answered(&mut self) {
        if self.open.as_ref().is_none_or(|(_, _, down)| *down) {
            self.succeed();
        }
    }

    /// Why requests are refused now, if they are.
    fn refusal(&self) -> Option<String> {
        let (until, reason, _) = self.open.as_ref()?;
        let left = until.checked_duration_since(Instant::now())?;
        Some(format!(
            "the engine failed {} times in a row (last: {reason}); requests are refused for {} s more, or until it answers a health probe",
            self.failures,
            left.as_secs() + 1
        ))
    }
}

impl RemoteEngine {
    /// Builds the client and starts probing the engine; does not wait for
    /// it: a server whose engine is down starts, says so on `/health`, and
    /// recovers when the engine comes up.
    pub fn start(config: RemoteConfig) -> anyhow::Result<RemoteEngine> {
        let url = config.url.trim_end_matches('/').to_owned();
        reqwest::Url::parse(&url).map_err(|e| {
            anyhow::anyhow!("--engine {url:?} is not a URL: {e}; give one such as http://127.0.0.1:8080/v1")
        })?;
        let mut headers = reqwest::header::HeaderMap::new();
        if let Some(token) = &config.token {
            let mut value = reqwest::header::HeaderValue::from_str(&format!("Bearer {}", token.expose()))
                .map_err(|_| anyhow::anyhow!("the engine token holds characters a header cannot carry"))?;
            value.set_sensitive(true);
            headers.insert(reqwest::header::AUTHORIZATION, value);
        }
        let client = reqwest::Client::builder()
            .connect_timeout(RemoteConfig::CONNECT_TIMEOUT)
            // A fresh connection per request: a generation takes far longer
            // than connecting, and a kept one can be closed by the engine
            // (llama-server's keep-alive ends after 5 s) just as a request
            // goes out on it, which fails the request unsent.
            .pool_max_idle_per_host(0)
            .default_headers(headers)
            .build()
            .map_err(|e| anyhow::anyhow!("building the engine's HTTP client: {e}"))?;
        let known = Known {
            model: config.model.clone(),
            ..Known::default()
        };
        let inner = Arc::new(Inner {
            config: RemoteConfig { url, ..config },
            client,
            known: Mutex::new(known),
            health: Mutex::new(HealthState::Loading),
            breaker: Mutex::new(Breaker::default()),
            in_flight: AtomicUsize::new(0),
            stopping: AtomicBool::new(false),
            shutdown: tokio::sync::Notify::new(),
        });
        tokio::spawn(probe_loop(Arc::downgrade(&inner)));
        Ok(RemoteEngine { inner })
    }

    /// The engine's base URL.
    pub fn url(&self) -> &str {
        &self.inner.config.url
    }
}

/// Probes the engine until the engine handle is dropped or shutdown begins.
async fn probe_loop(inner: std::sync::Weak<Inner>) {
    loop {
        let Some(engine) = inner.upgrade() else { return };
        if engine.stopping.load(Ordering::Acquire) {
            return;
        }
        let verdict = engine.probe().await;
        let wait = match verdict {
            Ok(()) => {
                engine.breaker().probe_answered();
                engine.set_health(HealthState::Ready);
                RemoteConfig::PROBE_INTERVAL
            }
            Err(reason) => {
                engine.set_health(HealthState::Failed { reason });
                RemoteConfig::RETRY_INTERVAL
            }
        };
        drop(engine);
        tokio::time::sleep(wait).await;
    }
}

impl Inner {
    fn breaker(&self) -> std::sync::MutexGuard<'_, Breaker> {
        self.breaker.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn known(&self) -> Known {
        self.known.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    fn set_health(&self, state: HealthState) {
        let mut health = self.health.lock().unwrap_or_else(|p| p.into_inner());
        if *health != state {
            match &state {
                HealthState::Failed { reason } => {
                    tracing::warn!(engine = %self.config.url, %reason, "engine unavailable")
                }
                _ => tracing::info!(engine = %self.config.url, "engine ready"),
            }
            *health = state;
        }
    }

    /// `GET /models`: the engine answers, and serves the model asked for
    /// (the first one when none was). llama-server's `/props` adds the
    /// context size and slot count.
    async fn probe(&self) -> Result<(), String> {
        let url = format!("{}/models", self.config.url);
        let response = self
            .client
            .get(&url)
            .timeout(RemoteConfig::PROBE_TIMEOUT)
            .send()
            .await
            .map_err(|e| describe(&e, &url))?;
        let status = response.status();
        if !status.is_success() {
            return Err(format!("GET {url} answered {status}"));
        }
        let body: Value = response
            .json()
            .await
            .map_err(|e| format!("GET {url} did not answer a model list: {e}"))?;
        let models = body["data"]
            .as_array()
            .or_else(|| body["models"].as_array())
            .ok_or_else(|| format!("GET {url} did not answer a model list"))?;
        let id_of = |m: &Value| m["id"].as_str().or_else(|| m["name"].as_str()).map(str::to_owned);
        let wanted = self.config.model.clone();
        let entry = match &wanted {
            Some(name) => models
                .iter()
                .find(|m| id_of(m).as_deref() == Some(name))
                .ok_or_else(|| {
                    let ids: Vec<String> = models.iter().filter_map(id_of).collect();
                    format!("the engine does not serve the model {name:?}; it serves {ids:?}")
                })?,
            None => models.first().ok_or_else(|| format!("GET {url} lists no models"))?,
        };
        let mut known = self.known();
        known.model = id_of(entry);
        // vLLM: `max_model_len` on the model entry.
        if let Some(n) = entry["max_model_len"].as_u64() {
            known.ctx = Some(n as u32);
        }
        if known.slots.is_none() {
            if let Some((ctx, slots)) = self.props().await {
                known.ctx = Some(ctx);
                known.slots = Some(slots);
            }
        }
        *self.known.lock().unwrap_or_else(|p| p.into_inner()) = known;
        Ok(())
    }

    /// llama-server's `GET /props`: context tokens per slot and slot count.
    async fn props(&self) -> Option<(u32, u32)> {
        let root = self.config.url.strip_suffix("/v1").unwrap_or(&self.config.url);
        let body: Value = self
            .client
            .get(format!("{root}/props"))
            .timeout(RemoteConfig::PROBE_TIMEOUT)
            .send()
            .await
            .ok()?
            .error_for_status()
            .ok()?
            .json()
            .await
            .ok()?;
        let ctx = body["default_generation_settings"]["n_ctx"].as_u64()?;
        let slots = body["total_slots"].as_u64()?;
        Some((ctx as u32, slots.max(1) as u32))
    }

    /// The chat completion request for the engine.
    fn body(&self, request: &GenerateRequest, messages: &[ChatMessage]) -> Value {
        let known = self.known();
        let p = &request.params;
        let mut body = json!({
            "messages": messages,
            "max_tokens": p.max_tokens,
            "temperature": p.temperature.max(0.0),
            "top_p": p.top_p,
            "top_k": p.top_k,
            "min_p": p.min_p,
            "stream": true,
            "stream_options": { "include_usage": true },
            "cache_prompt": true,
        });
        if let Some(model) = &known.model {
            body["model"] = json!(model);
        }
        // llama.cpp's "random seed" stays unset.
        if p.seed != u32::MAX {
            body["seed"] = json!(p.seed);
        }
        if !p.stop.is_empty() {
            body["stop"] = json!(p.stop);
        }
        if let Some(schema) = &p.json_schema {
            body["response_format"] = json!({
                "type": "json_schema",
                "json_schema": { "name": "answer", "schema": &**schema, "strict": true },
            });
        }
        if let (Some(key), Some(slots)) = (&request.cache_key, known.slots) {
            body["id_slot"] = json!(slot_of(key, slots));
        }
        body
    }

    /// Sends one request and streams its answer into `events`.
    async fn complete(&self, body: Value, events: &mpsc::UnboundedSender<Event>) -> Result<Completion, EngineError> {
        let url = format!("{}/chat/completions", self.config.url);
        let started = Instant::now();
        let timeout = self.config.timeout;
        let response = tokio::time::timeout(timeout, self.client.post(&url).json(&body).send())
            .await
            .map_err(|_| unavailable(format!("the engine did not answer within {} ms", timeout.as_millis())))?
            .map_err(|e| unavailable(describe(&e, &url)))?;
        let status = response.status();
        if !status.is_success() {
            return Err(upstream_error(response).await);
        }
        let mut stream = response.bytes_stream().eventsource();
        let mut tally = Tally::default();
        let mut first_text = None;
        loop {
            let next = tokio::time::timeout(timeout, stream.next()).await.map_err(|_| {
                unavailable(format!(
                    "the engine paused for over {} ms mid-answer",
                    timeout.as_millis()
                ))
            })?;
            let event = match next {
                None => break,
                Some(Ok(event)) => event,
                Some(Err(e)) => return Err(unavailable(format!("reading the engine's stream: {e}"))),
            };
            let data = event.data.trim();
            if data == "[DONE]" {
                break;
            }
            let chunk: Value = serde_json::from_str(data).map_err(|_| {
                EngineError::Backend(format!(
                    "the engine sent a stream chunk that is not JSON: {:?}",
                    crate::hud::text::clean_line(data, 80)
                ))
            })?;
            if let Some(error) = chunk.get("error") {
                return Err(EngineError::Backend(format!(
                    "the engine failed mid-answer: {}",
                    error_message(error)
                )));
            }
            if let Some(text) = tally.take(&chunk) {
                first_text.get_or_insert_with(Instant::now);
                if events.send(Event::Text(text)).is_err() {
                    break;
                }
            }
        }
        tally.finish(started, first_text)
    }
}

/// What a stream said about itself, over its chunks.
#[derive(Default)]
struct Tally {
    pieces: u32,
    finish: Option<FinishReason>,
    usage: Option<Value>,
    timings: Option<Value>,
}

impl Tally {
    /// Takes one chunk; returns its text.
    fn take(&mut self, chunk: &Value) -> Option<String> {
        if chunk["usage"].is_object() {
            self.usage = Some(chunk["usage"].clone());
        }
        if chunk["timings"].is_object() {
            self.timings = Some(chunk["timings"].clone());
        }
        let choice = &chunk["choices"][0];
        match choice["finish_reason"].as_str() {
            Some("length") => self.finish = Some(FinishReason::Length),
            Some(_) => self.finish = Some(FinishReason::Stop),
            None => {}
        }
        let text = choice["delta"]["content"].as_str().filter(|t| !t.is_empty())?;
        self.pieces += 1;
        Some(text.to_owned())
    }

    /// The completion, from the engine's usage and timings where it sent
    /// them (llama-server's `timings` hold the cache hits), else measured here.
    fn finish(self, started: Instant, first_text: Option<Instant>) -> Result<Completion, EngineError> {
        let finish = self
            .finish
            .ok_or_else(|| EngineError::Backend("the engine's stream ended before the answer did".into()))?;
        let u32_of = |v: &Value| v.as_u64().map(|n| n as u32);
        let usage = self.usage.unwrap_or(Value::Null);
        let timings = self.timings.unwrap_or(Value::Null);
        let cached = u32_of(&timings["cache_n"])
            .or_else(|| u32_of(&usage["prompt_tokens_details"]["cached_tokens"]))
            .unwrap_or(0);
        let prompt_tokens = u32_of(&usage["prompt_tokens"])
            .or_else(|| Some(u32_of(&timings["prompt_n"])? + cached))
            .unwrap_or(0);
        let completion_tokens = u32_of(&usage["completion_tokens"])
            .or_else(|| u32_of(&timings["predicted_n"]))
            .unwrap_or(self.pieces);
        let first = first_text.unwrap_or_else(Instant::now);
        let measured_prompt = first.duration_since(started).as_secs_f64() * 1000.0;
        let measured_generation = first.elapsed().as_secs_f64() * 1000.0;
        Ok(Completion {
            prompt_tokens,
            cached_tokens: cached.min(prompt_tokens),
            completion_tokens,
            // An engine does not say which tokens its grammar decided.
            forced_tokens: 0,
            finish_reason: finish,
            prompt_ms: timings["prompt_ms"].as_f64().unwrap_or(measured_prompt),
            generation_ms: timings["predicted_ms"].as_f64().unwrap_or(measured_generation),
        })
    }
}

/// The slot a cache key is pinned to: the same key, the same slot.
fn slot_of(key: &str, slots: u32) -> u32 {
    // FNV-1a: stable across runs and builds, unlike std's hasher.
    let hash = key.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    (hash % u64::from(slots.max(1))) as u32
}

fn unavailable(reason: String) -> EngineError {
    EngineError::Unavailable(format!("engine: {reason}"))
}

/// A reqwest error in words, without the token (reqwest never prints headers).
fn describe(e: &reqwest::Error, url: &str) -> String {
    if e.is_connect() {
        format!("cannot connect to {url}")
    } else if e.is_timeout() {
        format!("{url} did not answer in time")
    } else {
        // reqwest's own text ("error sending request") says little; the
        // cause (a reset, a closed connection) is further down the chain.
        let mut text = format!("{url}: {e}");
        let mut source = std::error::Error::source(e);
        while let Some(cause) = source {
            text.push_str(&format!(": {cause}"));
            source = cause.source();
        }
        text
    }
}

/// `{"error": {"message": ...}}`, `{"error": "..."}` or anything else.
fn error_message(error: &Value) -> String {
    error["message"]
        .as_str()
        .or_else(|| error.as_str())
        .map_or_else(|| crate::hud::text::clean_line(&error.to_string(), 200), str::to_owned)
}

/// An error status from the engine, with its message and `Retry-After`.
async fn upstream_error(response: reqwest::Response) -> EngineError {
    let status = response.status().as_u16();
    let retry_after = response
        .headers()
        .get(reqwest::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    let text = tokio::time::timeout(RemoteConfig::PROBE_TIMEOUT, response.text())
        .await
        .ok()
        .and_then(Result::ok)
        .unwrap_or_default();
    let message = match serde_json::from_str::<Value>(&text) {
        Ok(body) if body.get("error").is_some() => error_message(&body["error"]),
        _ if text.trim().is_empty() => "(no message)".to_owned(),
        _ => crate::hud::text::clean_line(text.trim(), 200),
    };
    EngineError::Upstream {
        status,
        message,
        retry_after,
    }
}

/// Whether an error says the engine is unwell (it counts against the
/// breaker), rather than that a request was wrong or the engine busy.
fn counts_against(e: &EngineError) -> bool {
    match e {
        EngineError::Unavailable(_) | EngineError::Backend(_) => true,
        EngineError::Upstream { status, .. } => *status >= 500 && *status != 503,
        _ => false,
    }
}

/// Counts a request in flight until dropped.
struct InFlight(Arc<Inner>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Backend for RemoteEngine {
    fn generate(&self, request: GenerateRequest) -> Result<mpsc::UnboundedReceiver<Event>, EngineError> {
        let inner = &self.inner;
        if inner.stopping.load(Ordering::Acquire) {
            return Err(EngineError::Unavailable("the server is shutting down".into()));
        }
        if let Some(refusal) = inner.breaker().refusal() {
            return Err(EngineError::Unavailable(refusal));
        }
        let messages = match &request.prompt {
            Prompt::Chat(messages) => messages,
            Prompt::Raw(_) => {
                return Err(EngineError::InvalidInput(
                    "a raw prompt needs the local engine; send chat messages".into(),
                ))
            }
        };
        let body = inner.body(&request, messages);
        if inner.in_flight.fetch_add(1, Ordering::AcqRel) >= inner.config.max_in_flight {
            inner.in_flight.fetch_sub(1, Ordering::AcqRel);
            return Err(EngineError::Overloaded(inner.config.max_in_flight));
        }
        let guard = InFlight(inner.clone());
        let (events, rx) = mpsc::unbounded_channel();
        if let Some(started) = &request.started {
            started.store(true, Ordering::Release);
        }
        let span = tracing::debug_span!("engine", cache_key = request.cache_key.as_deref());
        tokio::spawn(tracing::Instrument::instrument(
            async move {
                let inner = guard.0.clone();
                let result = tokio::select! {
                    result = inner.complete(body, &events) => result,
                    // The receiver went away: dropping the request closes
                    // the connection, which cancels it on the engine.
                    () = events.closed() => return,
                    () = inner.shutdown.notified() => Err(EngineError::Unavailable("the server is shutting down".into())),
                };
                let event = match result {
                    Ok(done) => {
                        inner.breaker().succeed();
                        Event::Done(done)
                    }
                    Err(e) => {
                        tracing::debug!(error = %e, "engine request failed");
                        if counts_against(&e) {
                            let down = matches!(e, EngineError::Unavailable(_));
                            inner.breaker().fail(&e.to_string(), down);
                        }
                        Event::Failed(e)
                    }
                };
                let _ = events.send(event);
                drop(guard);
            },
            span,
        ));
        Ok(rx)
    }

    fn health(&self) -> HealthState {
        if let Some(refusal) = self.inner.breaker().refusal() {
            return HealthState::Failed { reason: refusal };
        }
        self.inner.health.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    fn info(&self) -> EngineInfo {
        let known = self.inner.known();
        EngineInfo {
            kind: "remote",
            model: known.model.unwrap_or_else(|| "unknown".into()),
            ctx: known.ctx,
        }
    }

    fn details(&self) -> Value {
        let known = self.inner.known();
        json!({ "engine": self.inner.config.url, "slots": known.slots, "in_flight": self.queued() })
    }

    fn count_tokens(&self, _text: &str) -> Option<usize> {
        None
    }

    fn queued(&self) -> usize {
        self.inner.in_flight.load(Ordering::Acquire)
    }

    fn begin_shutdown(&self) {
        self.inner.stopping.store(true, Ordering::Release);
        self.inner.shutdown.notify_waiters();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_keeps_its_slot() {
        assert_eq!(slot_of("hud:questions", 4), slot_of("hud:questions", 4));
        assert!(slot_of("a", 4) < 4);
        assert_eq!(slot_of("anything", 1), 0);
        let spread: std::collections::HashSet<u32> = (0..64).map(|i| slot_of(&format!("s{i}"), 4)).collect();
        assert_eq!(spread.len(), 4, "keys spread over the slots");
    }

    #[test]
    fn the_breaker_opens_after_repeated_failures_and_closes_on_success() {
        let mut b = Breaker::default();
        b.fail("x", true);
        b.fail("x", true);
        assert!(b.refusal().is_none());
        b.fail("connection refused", true);
        let why = b.refusal().expect("open");
        assert!(why.contains("3 times") && why.contains("connection refused"), "{why}");
        b.probe_answered();
        assert!(b.refusal().is_none(), "a down engine that answers again is used again");

        for _ in 0..3 {
            b.fail("garbage", false);
        }
        b.probe_answered();
        assert!(
            b.refusal().is_some(),
            "a broken engine stays refused while it cools down"
        );
        b.succeed();
        assert!(b.refusal().is_none());
    }

    #[test]
    fn usage_and_timings_fill_the_completion() {
        let mut t = Tally::default();
        assert_eq!(
            t.take(&json!({"choices":[{"delta":{"content":"hi"},"finish_reason":null}]})),
            Some("hi".into())
        );
        t.take(&json!({"choices":[{"delta":{},"finish_reason":"length"}],
            "usage":{"prompt_tokens":50,"completion_tokens":3},
            "timings":{"cache_n":40,"prompt_n":10,"prompt_ms":12.5,"predicted_n":3,"predicted_ms":30.0}}));
        let done = t.finish(Instant::now(), None).expect("finished");
        assert_eq!(
            (done.prompt_tokens, done.cached_tokens, done.completion_tokens),
            (50, 40, 3)
        );
        assert_eq!(done.finish_reason, FinishReason::Length);
        assert_eq!((done.prompt_ms, done.generation_ms), (12.5, 30.0));
        assert!(
            Tally::default().finish(Instant::now(), None).is_err(),
            "a stream cut short is an error"
        );
    }
}
