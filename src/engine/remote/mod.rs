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
//! - The URL may carry credentials (`http://user:pw@host/v1?api_key=K`):
//!   they are sent (the user as basic auth, the query on every request)
//!   but never shown: `/health`, the log and error messages get
//!   [`crate::redact::url`]'s copy.
//!
//! Here: the engine and its state; [`client`]: one request and its
//! streamed answer; [`probe`]: the health probe; [`breaker`]: the breaker.

mod breaker;
mod client;
mod probe;

use super::{
    Backend, Details, EngineDetails, EngineError, EngineInfo, Event, GenerateRequest, HealthCell, HealthState, Prompt,
};
use crate::secret::Secret;
use breaker::{Breaker, Failure};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::mpsc;

/// How to reach the engine.
#[derive(Clone)]
pub struct RemoteConfig {
    /// Base URL of the OpenAI-compatible API, ending in `/v1`; any
    /// credentials in it are masked in its `Debug`.
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

impl std::fmt::Debug for RemoteConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteConfig")
            .field("url", &crate::redact::url(&self.url))
            .field("model", &self.model)
            .field("token", &self.token)
            .field("timeout", &self.timeout)
            .field("max_in_flight", &self.max_in_flight)
            .finish()
    }
}

/// The remote engine. Cheap to clone; [`RemoteEngine::start`] also starts
/// its health probe, which ends with the last clone.
#[derive(Clone)]
pub struct RemoteEngine {
    inner: Arc<Inner>,
}

struct Inner {
    config: RemoteConfig,
    /// [`RemoteConfig::url`] parsed, without a trailing `/`.
    base: reqwest::Url,
    /// The base URL as it may be shown: credentials masked.
    shown: String,
    client: reqwest::Client,
    /// What the probes learnt: the model's id, context and slot count.
    known: Mutex<Known>,
    /// The probe's verdict.
    health: HealthCell,
    breaker: Mutex<Breaker>,
    in_flight: AtomicUsize,
    stopping: AtomicBool,
    /// Cancelled when shutdown begins: running generations end, and one
    /// spawned just before (not yet polled) sees it as soon as it runs,
    /// which a `Notify::notify_waiters` would not tell it.
    shutdown: tokio_util::sync::CancellationToken,
}

#[derive(Debug, Default, Clone)]
struct Known {
    model: Option<String>,
    ctx: Option<u32>,
    slots: Option<u32>,
}

impl RemoteEngine {
    /// Builds the client and starts probing the engine; does not wait for
    /// it: a server whose engine is down starts, says so on `/health`, and
    /// recovers when the engine comes up.
    pub fn start(config: RemoteConfig) -> anyhow::Result<RemoteEngine> {
        let shown = crate::redact::url(config.url.trim());
        let mut base = reqwest::Url::parse(config.url.trim()).map_err(|e| {
            anyhow::anyhow!("--engine {shown:?} is not a URL: {e}; give one such as http://127.0.0.1:8080/v1")
        })?;
        // Paths are appended to the base's, so `/v1/` would give `/v1//models`.
        let path = base.path().trim_end_matches('/').to_owned();
        base.set_path(&path);
        let shown = crate::redact::url(base.as_str());
        if crate::redact::has_credentials(&config.url) {
            tracing::warn!(
                engine = %shown,
                "the --engine URL carries credentials, which `ps` and the shell history show to others; \
            give the engine's token in a file with --engine-token-file (EVOLVE_HUD_ENGINE_TOKEN_FILE) instead"
            );
        }
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
        let inner = Arc::new(Inner {
            known: Mutex::new(Known {
                model: config.model.clone(),
                ..Known::default()
            }),
            config,
            base,
            shown,
            client,
            health: HealthCell::default(),
            breaker: Mutex::new(Breaker::default()),
            in_flight: AtomicUsize::new(0),
            stopping: AtomicBool::new(false),
            shutdown: tokio_util::sync::CancellationToken::new(),
        });
        tokio::spawn(probe::probe_loop(Arc::downgrade(&inner)));
        Ok(RemoteEngine { inner })
    }

    /// The engine's base URL as it may be shown: credentials masked.
    pub fn url(&self) -> &str {
        &self.inner.shown
    }
}

impl Inner {
    fn breaker(&self) -> std::sync::MutexGuard<'_, Breaker> {
        self.breaker.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn known(&self) -> Known {
        self.known.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// `path` under the base URL: the engine's `/v1/models` is
    /// `endpoint("models")`.
    fn endpoint(&self, path: &str) -> reqwest::Url {
        under(&self.base, path)
    }

    fn learn(&self, known: Known) {
        *self.known.lock().unwrap_or_else(|p| p.into_inner()) = known;
    }

    fn set_health(&self, state: HealthState) {
        let reason = match &state {
            HealthState::Failed { reason } => Some(reason.clone()),
            _ => None,
        };
        if self.health.set(state) {
            match reason {
                Some(reason) => tracing::warn!(engine = %self.shown, %reason, "engine unavailable"),
                None => tracing::info!(engine = %self.shown, "engine ready"),
            }
        }
    }
}

/// `path` under `base`, its query (an `api_key=`) kept, where appending
/// to the text would put the path inside the query.
fn under(base: &reqwest::Url, path: &str) -> reqwest::Url {
    let mut url = base.clone();
    let joined = format!("{}/{path}", url.path().trim_end_matches('/'));
    url.set_path(&joined);
    url
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
                    () = inner.shutdown.cancelled() => Err(EngineError::Unavailable("the server is shutting down".into())),
                };
                let event = match result {
                    Ok(done) => {
                        inner.breaker().succeed();
                        Event::Done(done)
                    }
                    Err(e) => {
                        tracing::debug!(error = %e, "engine request failed");
                        if client::counts_against(&e) {
                            let failure = match e {
                                EngineError::Unavailable(_) => Failure::Down,
                                _ => Failure::Broken,
                            };
                            inner.breaker().fail(&e.to_string(), failure);
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
        self.inner.health.get()
    }

    fn watch_health(&self) -> tokio::sync::watch::Receiver<HealthState> {
        self.inner.health.watch()
    }

    fn info(&self) -> EngineInfo {
        let known = self.inner.known();
        EngineInfo {
            kind: "remote",
            model: known.model.unwrap_or_else(|| "unknown".into()),
            ctx: known.ctx,
        }
    }

    fn details(&self) -> Details {
        Details {
            kind: Some(EngineDetails::Remote {
                engine_url: self.inner.shown.clone(),
                slots: self.inner.known().slots,
                in_flight: self.queued(),
            }),
            model_meta: None,
        }
    }

    fn count_tokens(&self, _text: &str) -> Option<usize> {
        None
    }

    fn queued(&self) -> usize {
        self.inner.in_flight.load(Ordering::Acquire)
    }

    fn begin_shutdown(&self) {
        self.inner.stopping.store(true, Ordering::Release);
        self.inner.shutdown.cancel();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(text: &str) -> reqwest::Url {
        reqwest::Url::parse(text).expect("a URL")
    }

    #[test]
    fn paths_go_under_the_base_and_its_query_stays() {
        let base = url("http://user:pw@[::1]:8080/v1?api_key=K&api-version=2");
        assert_eq!(
            under(&base, "chat/completions").as_str(),
            "http://user:pw@[::1]:8080/v1/chat/completions?api_key=K&api-version=2"
        );
        assert_eq!(under(&url("http://h:1/v1/"), "models").as_str(), "http://h:1/v1/models");
        assert_eq!(under(&url("http://h"), "models").as_str(), "http://h/models");
        assert_eq!(
            probe::props_url(&url("http://h:1/v1?k=K")).as_str(),
            "http://h:1/props?k=K"
        );
        assert_eq!(
            probe::props_url(&url("http://h:1/api")).as_str(),
            "http://h:1/api/props"
        );
    }

    #[tokio::test]
    async fn the_shown_url_and_debug_mask_credentials() {
        let config = RemoteConfig {
            url: "http://user:PASSWORD@127.0.0.1:9/v1/?api_key=KEY".into(),
            model: None,
            token: None,
            timeout: RemoteConfig::TIMEOUT,
            max_in_flight: 1,
        };
        assert!(!format!("{config:?}").contains("PASSWORD"), "{config:?}");
        let engine = RemoteEngine::start(config).expect("started");
        assert_eq!(engine.url(), "http://***@127.0.0.1:9/v1?api_key=***");
        let Some(EngineDetails::Remote { engine_url, .. }) = engine.details().kind else {
            panic!("remote details")
        };
        assert_eq!(engine_url, engine.url());
        let bad = RemoteConfig {
            url: "http://user:PASSWORD@host:notaport/v1".into(),
            ..RemoteConfig::clone(&engine.inner.config)
        };
        let err = RemoteEngine::start(bad).err().expect("not a URL").to_string();
        assert!(err.contains("is not a URL") && !err.contains("PASSWORD"), "{err}");
    }
}
