//! The HTTP server: start-up in order (the engine: check and load the model,
//! or reach the remote engine; bind; serve), the routes, and graceful
//! shutdown.

pub mod access;
pub mod chat;
pub mod error;
pub mod events;
pub mod hud;
pub mod instance;
pub mod listen;
pub(crate) mod metrics;

pub use error::ApiError;

use crate::cli::{ApiSettings, Missing, Serve, ServeEngine};
use crate::engine::lifecycle::Lifecycle;
use crate::engine::Engine;
use anyhow::Context;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{on, MethodFilter, MethodRouter};
use axum::{Extension, Json, Router};
use error::BodyLimit;
use evolve_hud_api::routes::{Method, Route, RouteId, ROUTES};
use metrics_exporter_prometheus::PrometheusHandle;
use tokio_util::sync::CancellationToken;

/// Shared state of the handlers. Cheap to clone.
#[derive(Clone)]
pub struct AppState {
    pub engine: Engine,
    pub access: std::sync::Arc<access::Access>,
    pub hud: std::sync::Arc<crate::hud::Hud>,
    /// `--model-name`, or the local model's file name; `None`: the remote
    /// engine's model id.
    pub model_name: Option<String>,
    pub metrics: PrometheusHandle,
    /// Unix time the server started.
    pub started: u64,
    /// Longest a chat completion waits in the model's queue.
    pub queue_timeout: std::time::Duration,
    /// Cancelled at SIGINT or SIGTERM: event streams end.
    pub shutdown: CancellationToken,
}

/// Runs `evolve-hud serve` until SIGINT or SIGTERM, with its flags
/// resolved ([`ServeConfig::resolve`](crate::cli::ServeConfig::resolve)).
pub async fn run(resolved: Serve) -> anyhow::Result<()> {
    let Serve { engine, api } = resolved;
    // Signals are taken over before anything else: a SIGTERM that arrives
    // any time after this, even before the port is bound, stops in order.
    let signals = Signals::install()?;
    // Refuse a bad binding before loading anything.
    if !api.host.is_loopback() {
        if !api.allow_remote {
            anyhow::bail!(
                "refusing to listen on {}, which other machines can reach; pass --allow-remote to do it anyway (and set a token)",
                api.host
            );
        }
        tracing::warn!(
            host = %api.host,
            token = api.credentials.token.is_some(),
            "listening beyond loopback: other machines can reach the API and read session contents"
        );
    }
    // One server per port: a second one leaves before loading anything.
    let instance = instance::claim(api.port)?;
    let metrics = metrics::install().context("installing the metrics recorder")?;
    let address = std::net::SocketAddr::new(api.host, api.port);
    let shutdown = CancellationToken::new();
    match engine {
        ServeEngine::Facts { missing } => {
            match &missing {
                Some(Missing {
                    details: evolve_hud_api::EngineDetails::Missing { missing, fix },
                    ..
                }) => tracing::warn!(
                    "no model ({missing}): serving the HUD's facts only, and restarting once the model is on disk; `{fix}` gets it"
                ),
                _ => tracing::info!("--no-model: serving the HUD's facts only; model work is refused"),
            }
            let listener = listen::Listeners::bind(address).await?;
            let port = listener.local_addr()?.port();
            let kept = listener.hand_over();
            let (details, arrived) = match missing {
                Some(Missing { details, model }) => (
                    Some(details),
                    Some(tokio::spawn(model_arrives(model, shutdown.clone()))),
                ),
                None => (None, None),
            };
            serve(
                api,
                metrics,
                crate::engine::none::NoModel::engine(details),
                listener,
                shutdown,
                signals,
            )
            .await?;
            if let Some(arrived) = arrived {
                if arrived.await.unwrap_or(false) {
                    drop(instance);
                    return restart_in_place(port, &kept);
                }
            }
        }
        ServeEngine::Remote(remote) => {
            tracing::info!(engine = %crate::redact::url(&remote.url), "using a remote engine; no model is loaded here");
            let engine = crate::engine::remote::RemoteEngine::start(remote)?;
            let listener = listen::Listeners::bind(address).await?;
            serve(api, metrics, Engine::new(engine), listener, shutdown, signals).await?;
        }
        ServeEngine::Local {
            config: local,
            keep_alive,
        } => {
            // Bound before the model loads: the port answers at once, `/health`
            // says "loading" with the progress, and HUD facts are served.
            let listener = listen::Listeners::bind(address).await?;
            let name = local
                .path
                .file_stem()
                .map_or_else(|| "model".into(), |s| s.to_string_lossy().into_owned());
            let path = local.path.clone();
            let lifecycle = Lifecycle::new(name, local, keep_alive);
            let server = tokio::spawn(serve(
                api,
                metrics,
                Engine::new(lifecycle.clone()),
                listener,
                shutdown.clone(),
                signals,
            ));
            tracing::info!(model = %path.display(), "loading model");
            match lifecycle.load().await {
                Ok(()) => {
                    let served = server.await.context("the HTTP server task")?;
                    // Whatever ended the server, the model thread is stopped
                    // before returning: a process exiting under a running
                    // llama.cpp thread crashes. It stops between tokens; a long
                    // prompt being decoded does not, so the wait is bounded.
                    if !lifecycle.stop(DRAIN).await {
                        if let Err(e) = &served {
                            tracing::error!("{e:#}");
                        }
                        drop(instance);
                        exit_now("the model thread is still decoding", i32::from(served.is_err()));
                    }
                    served?;
                }
                // A signal during the load: an orderly stop.
                Err(crate::engine::local::LoadError::Cancelled) => {
                    server.await.context("the HTTP server task")??;
                }
                Err(e) => {
                    let error = anyhow::Error::new(e).context(format!("cannot serve {}", path.display()));
                    lifecycle.failed(format!("{error:#}"));
                    shutdown.cancel();
                    let _ = server.await;
                    return Err(error);
                }
            }
        }
    }
    drop(instance);
    tracing::info!("stopped");
    Ok(())
}

/// The whole API as `serve` serves it, on `engine`: the router, and the
/// token whose cancelling ends its event streams. Tests serve it in-process
/// on a scripted engine, built from the same flags.
pub fn app(api: ApiSettings, metrics: PrometheusHandle, engine: Engine) -> (Router, CancellationToken) {
    let access = access::Access::new(api.credentials, api.host, &api.allowed_origins);
    let counter = api
        .tokenizer
        .unwrap_or_else(|| crate::hud::TokenCounter::Engine(engine.clone()));
    let hud = crate::hud::Hud::new(api.hud, counter, Some(engine.clone()));
    hud.warm_questions();
    let state = AppState {
        engine: engine.clone(),
        access: std::sync::Arc::new(access),
        hud,
        model_name: api.model_name,
        metrics,
        queue_timeout: api.queue_timeout,
        shutdown: CancellationToken::new(),
        started: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
    };
    let shutdown = state.shutdown.clone();
    (router(state, api.max_body), shutdown)
}

/// Builds the API and serves it on `listener` until the shutdown signal
/// (SIGINT, SIGTERM, or `shutdown` cancelled).
async fn serve(
    api: ApiSettings,
    metrics: PrometheusHandle,
    engine: Engine,
    listeners: listen::Listeners,
    shutdown: CancellationToken,
    signals: Signals,
) -> anyhow::Result<()> {
    let local = listeners.local_addr()?;
    let token_required = api.credentials.token.is_some();
    let (app, streams) = app(api, metrics, engine.clone());
    // Clients (the plugin's launcher, tests) read the URL from this line's end.
    tracing::info!("listening on http://{local}");
    for also in listeners.addresses().iter().skip(1) {
        tracing::info!("holding {also} too, which `localhost` may name, so that no one else can listen there");
    }

    tokio::spawn(on_signals(signals, shutdown.clone(), engine));
    tokio::spawn({
        let shutdown = shutdown.clone();
        async move {
            shutdown.cancelled().await;
            streams.cancel();
        }
    });
    let server = listen::serve(listeners, app, token_required, shutdown.clone());
    // Event streams end at the signal (see `events::stream`); a request
    // still open after DRAIN is dropped with its connection.
    let deadline = async {
        shutdown.cancelled().await;
        tokio::time::sleep(DRAIN).await;
    };
    tokio::select! {
        () = server => Ok(()),
        () = deadline => {
            tracing::warn!("requests still open {DRAIN:?} after the signal; closing their connections");
            Ok(())
        }
    }
}

/// Waits until the model `model` names is on disk (looked for every 2 s,
/// nothing downloaded), then ends the server to make room for a sidecar
/// that loads it. `true` when it did.
async fn model_arrives(model: crate::cli::ModelConfig, shutdown: CancellationToken) -> bool {
    loop {
        tokio::select! {
            () = shutdown.cancelled() => return false,
            () = tokio::time::sleep(std::time::Duration::from_secs(2)) => {}
        }
        let mut model = model.clone();
        let found = tokio::task::spawn_blocking(move || model.resolve_on_disk().is_ok()).await;
        if found.unwrap_or(false) {
            tracing::info!("the model is on disk now: restarting in place to load it");
            shutdown.cancel();
            return true;
        }
    }
}

/// Runs this binary again with the same arguments, in this process: the
/// sidecar that loads the model now on disk, on the same `port` (the one
/// bound, also where `--port 0` was given).
fn restart_in_place(port: u16, kept: &[std::os::fd::OwnedFd]) -> anyhow::Result<()> {
    use std::os::unix::process::CommandExt;
    let binary = std::env::current_exe().context("finding this binary to restart")?;
    let args = with_port(std::env::args_os().skip(1).collect(), port);
    // The lock and the log are closed on exec (CLOEXEC); the listening
    // sockets go on, so no client is refused while the new one starts.
    let (name, fds) = listen::with_handed_over(kept);
    let error = std::process::Command::new(&binary).args(&args).env(name, fds).exec();
    Err(anyhow::Error::new(error).context(format!("restarting {}", binary.display())))
}

/// `args` with `--port` set to `port`, where it was given (the command
/// line reads the same in `ps`), else at the end.
fn with_port(args: Vec<std::ffi::OsString>, port: u16) -> Vec<std::ffi::OsString> {
    let mut out = Vec::with_capacity(args.len() + 2);
    let mut set = false;
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        if arg == "--port" {
            args.next();
            if !set {
                out.extend(["--port".into(), port.to_string().into()]);
            }
            set = true;
        } else if arg.to_string_lossy().starts_with("--port=") {
            if !set {
                out.push(format!("--port={port}").into());
            }
            set = true;
        } else {
            out.push(arg);
        }
    }
    if !set {
        out.extend(["--port".into(), port.to_string().into()]);
    }
    out
}

/// How long open requests may go on after SIGINT or SIGTERM.
pub const DRAIN: std::time::Duration = std::time::Duration::from_millis(1000);

/// At the first SIGINT or SIGTERM: stop the engine taking work and begin the
/// shutdown. At a second one: exit at once.
async fn on_signals(mut signals: Signals, shutdown: CancellationToken, engine: Engine) {
    signals.next().await;
    tracing::info!("shutting down (a second signal exits at once)");
    engine.begin_shutdown();
    shutdown.cancel();
    signals.next().await;
    exit_now("second signal", 130);
}

/// Ends the process with `code` without running C++ static destructors,
/// which crash when llama.cpp's threads are still computing.
pub(crate) fn exit_now(why: &str, code: i32) -> ! {
    tracing::warn!("{why}: exiting now");
    // SAFETY: _exit only ends the process.
    unsafe { libc::_exit(code) }
}

/// The handler of each route ([`evolve_hud_api::routes`]). No default arm: a
/// route declared there without a handler here does not compile.
fn handler(route: &Route, state: &AppState) -> MethodRouter<AppState> {
    let method = match route.method {
        Method::Get => MethodFilter::GET,
        Method::Post => MethodFilter::POST,
        Method::Delete => MethodFilter::DELETE,
    };
    match route.id {
        RouteId::Health => on(method, health),
        RouteId::Identity => on(method, access::identity).with_state(state.access.clone()),
        RouteId::Metrics => on(method, metrics::render),
        RouteId::Models => on(method, chat::models),
        RouteId::ChatCompletions => on(method, chat::chat_completions),
        RouteId::Sync => on(method, hud::sync),
        RouteId::Event => on(method, hud::event),
        RouteId::Sessions => on(method, hud::list),
        RouteId::Session => on(method, hud::get),
        RouteId::ForgetSession => on(method, hud::delete),
        RouteId::Compaction => on(method, hud::compaction),
        RouteId::Heartbeat => on(method, hud::heartbeat),
        RouteId::Status => on(method, events::status),
        RouteId::Events => on(method, events::stream),
    }
}

/// All routes, with the body limit and request metrics applied.
pub fn router(state: AppState, max_body: usize) -> Router {
    ROUTES
        .iter()
        .fold(Router::new(), |router, route| {
            router.route(route.path, handler(route, &state))
        })
        .fallback(|| async { ApiError::NotFound("no such route; see the README for the API".into()) })
        .method_not_allowed_fallback(|| async { ApiError::MethodNotAllowed })
        .layer(axum::middleware::from_fn_with_state(
            state.access.clone(),
            access::guard,
        ))
        .layer(axum::middleware::from_fn(metrics::track))
        .layer(DefaultBodyLimit::max(max_body))
        .layer(Extension(BodyLimit(max_body)))
        .layer(trace_layer())
        .with_state(state)
}

/// A span per request with its method and matched path (never the URI, which
/// holds session ids, nor headers, which hold the token), and its status and
/// latency at the end, all at debug: the default filter shows none of it.
/// Failures stay at debug too; `ApiError` already warns about server errors.
fn trace_layer() -> tower_http::trace::TraceLayer<
    tower_http::classify::SharedClassifier<tower_http::classify::ServerErrorsAsFailures>,
    impl Fn(&axum::extract::Request) -> tracing::Span + Clone,
> {
    use tower_http::trace::{DefaultOnFailure, DefaultOnRequest, DefaultOnResponse, TraceLayer};
    use tracing::Level;
    TraceLayer::new_for_http()
        .make_span_with(|request: &axum::extract::Request| {
            let path = request
                .extensions()
                .get::<axum::extract::MatchedPath>()
                .map(axum::extract::MatchedPath::as_str);
            tracing::debug_span!("request", method = %request.method(), path)
        })
        .on_request(DefaultOnRequest::new().level(Level::DEBUG))
        .on_response(DefaultOnResponse::new().level(Level::DEBUG))
        .on_failure(DefaultOnFailure::new().level(Level::DEBUG))
}

impl AppState {
    /// The name the API serves the model under.
    pub fn model_name(&self) -> String {
        self.model_name.clone().unwrap_or_else(|| self.engine.info().model)
    }
}

/// `GET /health`: 200 once the engine can take work (the local model warmed
/// up, or the remote engine answering), 503 otherwise. With the token, the
/// reason and what the sidecar serves; without it, the state alone.
async fn health(State(state): State<AppState>, headers: axum::http::HeaderMap) -> Response {
    let health = state.health();
    let status = if health.ready() {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    if state.access.holds_token(&headers) {
        (status, Json(health)).into_response()
    } else {
        (status, Json(health.public())).into_response()
    }
}

impl AppState {
    /// `/health`'s body: the engine's state with the reason, the model, the
    /// engine kind and its details.
    pub fn health(&self) -> evolve_hud_api::Health {
        evolve_hud_api::Health {
            state: self.engine.health(),
            model: self.model_name(),
            engine: self.engine.info().kind.to_owned(),
            details: self.engine.details().kind,
            hud_clip: self.hud.clip_rule(),
        }
    }
}

/// SIGINT and SIGTERM, taken over from the moment `install` returns (the
/// handlers are registered then, not when first awaited).
struct Signals {
    #[cfg(unix)]
    interrupt: tokio::signal::unix::Signal,
    #[cfg(unix)]
    terminate: tokio::signal::unix::Signal,
}

impl Signals {
    fn install() -> anyhow::Result<Signals> {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{signal, SignalKind};
            Ok(Signals {
                interrupt: signal(SignalKind::interrupt()).context("handling SIGINT")?,
                terminate: signal(SignalKind::terminate()).context("handling SIGTERM")?,
            })
        }
        #[cfg(not(unix))]
        Ok(Signals {})
    }

    /// The next SIGINT or SIGTERM.
    async fn next(&mut self) {
        #[cfg(unix)]
        tokio::select! {
            _ = self.interrupt.recv() => {},
            _ = self.terminate.recv() => {},
        }
        #[cfg(not(unix))]
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_restart_keeps_the_port_it_had_where_it_was_given() {
        let args = |a: &[&str]| a.iter().map(std::ffi::OsString::from).collect::<Vec<_>>();
        assert_eq!(
            super::with_port(args(&["serve", "--port", "0", "-m", "x.gguf"]), 4000),
            args(&["serve", "--port", "4000", "-m", "x.gguf"])
        );
        assert_eq!(
            super::with_port(args(&["serve", "--port=0", "-m", "x.gguf"]), 4000),
            args(&["serve", "--port=4000", "-m", "x.gguf"])
        );
        assert_eq!(
            super::with_port(args(&["serve"]), 8377),
            args(&["serve", "--port", "8377"])
        );
    }
}
