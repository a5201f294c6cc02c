//! The model thread's supervisor: starts llama.cpp's backend, loads the
//! model, warms it up, then serves commands through a [`Worker`], and
//! rebuilds the worker's context after a panic (giving up after too many).

use super::kept::KeptCache;
use super::prompt::Prompter;
use super::worker::Worker;
use super::LocalConfig;
use super::{Command, Health, LoadError, LoadProgress, ModelInfo};
use crate::engine::{EngineError, Event, HealthState};
use crate::gguf::GgufSummary;
use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::model::LlamaModel;
use std::collections::VecDeque;
use std::panic::{catch_unwind, AssertUnwindSafe};
use tokio_util::sync::CancellationToken;

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
            let backend = LlamaBackend::init().map_err(|e| e.to_string());
            if backend.is_ok() {
                let (module, features) = cpu_code_started();
                tracing::info!(module = %module, features = %features, "the CPU code that runs: {module} ({features})");
            }
            backend
        })
        .as_ref()
        .map_err(|e| LoadError::Backend(e.clone()))
}

/// The CPU code ggml runs, in words, once the backend has started: the
/// module it chose for this CPU (or the built-in back-end) and its
/// compiled features.
fn cpu_code_started() -> (String, String) {
    let module = super::cpu::variant().map_or_else(
        || "ggml's built-in CPU back-end".to_owned(),
        |v| format!("ggml's {v} module"),
    );
    let features = super::cpu::features();
    let features = if features.is_empty() {
        "no SIMD features".to_owned()
    } else {
        features.join(" ")
    };
    (module, features)
}

/// [`cpu_code_started`], starting the backend where nothing has yet (as
/// `doctor` does, which loads no model).
pub fn cpu_code() -> Result<(String, String), String> {
    backend().map_err(|e| e.to_string())?;
    Ok(cpu_code_started())
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

/// What the model thread loads, and where it reports the load's progress.
pub(super) struct Start {
    pub config: LocalConfig,
    pub path: std::path::PathBuf,
    pub summary: GgufSummary,
    pub progress: Arc<LoadProgress>,
    /// Cached prompts an earlier load kept across a release.
    pub kept: Option<KeptCache>,
}

/// Entry point of the model thread.
pub(super) fn run(
    Start {
        config,
        path,
        summary,
        progress,
        kept,
    }: Start,
    loaded: oneshot::Sender<Result<(ModelInfo, Arc<Prompter>), LoadError>>,
    mut rx: mpsc::Receiver<Command>,
    health: Arc<Health>,
    stopping: CancellationToken,
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
    // The weights are mapped from the file: one rewritten under us would be
    // read half old, half new, or fault (SIGBUS) where it was cut.
    let stamp = crate::gguf::FileStamp::of(&path).ok();
    // Compute threads spawned from here on (llama.cpp's OpenMP team) inherit it.
    lower_priority(config.nice);

    // Tests hold the load back to see the server while it loads.
    #[cfg(feature = "fault-injection")]
    if let Some(ms) = std::env::var("EVOLVE_HUD_FAULT_LOAD_MS")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
    {
        let until = Instant::now() + Duration::from_millis(ms);
        while Instant::now() < until && progress.step(0.0) {
            std::thread::sleep(Duration::from_millis(10));
        }
        if progress.is_cancelled() {
            let _ = loaded.send(Err(LoadError::Cancelled));
            return;
        }
    }
    let backend = match backend() {
        Ok(b) => b,
        Err(e) => {
            let _ = loaded.send(Err(e));
            return;
        }
    };
    let mut params = std::pin::pin!({
        let progress = progress.clone();
        LlamaModelParams::default()
            .with_n_gpu_layers(config.gpu_layers)
            .with_progress_callback(move |fraction| progress.step(fraction))
    });
    use super::cpu::{amx_guard, features, AmxGuard};
    match amx_guard(&features(), backend.supports_gpu_offload(), config.gpu_layers) {
        AmxGuard::None => {}
        AmxGuard::KeepOut => {
            // See `cpu`: every weight in the plain CPU buffer type, none in AMX's.
            tracing::warn!("this CPU back-end has ggml's AMX kernels, which crash on AMX CPUs; keeping the weights out of them (slower)");
            params.as_mut().add_cpu_buft_override(c".");
        }
        AmxGuard::Warn => {
            tracing::warn!("this CPU back-end has ggml's AMX kernels, which crash on AMX CPUs; offload every layer (--gpu-layers 999) or use a build without them");
        }
    }
    let model = match LlamaModel::load_from_file(backend, &path, &params) {
        Ok(m) => Arc::new(m),
        Err(_) if progress.is_cancelled() => {
            let _ = loaded.send(Err(LoadError::Cancelled));
            return;
        }
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
    // Only into the file the cache was taken from: a file changed while the
    // model was out would read another model's keys and values.
    if let Some(kept) = kept.filter(|k| k.stamp.is_some() && k.stamp == stamp) {
        let restored = worker.restore(kept);
        tracing::debug!(tokens = restored, "cached prompts kept across the release put back");
    }

    // A panic while serving a command fails that command, drops the context
    // (its KV cache may be half-written) and builds a fresh one; the model's
    // weights are read-only and stay. Panics that keep coming mark the model
    // failed for good.
    let mut panics = Panics::default();
    let mut worker = Some(worker);
    while let Some(command) = rx.blocking_recv() {
        let Some(w) = worker.as_mut() else { break };
        if let Some(change) = stamp
            .as_ref()
            .and_then(|s| s.change(&crate::gguf::FileStamp::of(&path)))
        {
            let reason = format!(
                "the model file {} changed on disk since it was loaded ({change}); model requests are refused \
                 so that it is not read while it changes, HUD facts are still served. Restart the sidecar to \
                 load the new file (`evolve-hud stop`; the plugin starts it again)",
                path.display()
            );
            tracing::error!("{reason}");
            health.set_failed(reason.clone());
            match command {
                Command::Generate(job) => {
                    let _ = job.events.send(Event::Failed(EngineError::Unavailable(reason)));
                }
                Command::Bench { reply, .. } => {
                    let _ = reply.send(Err(EngineError::Unavailable(reason)));
                }
                Command::Shutdown | Command::Release(_) => {}
            }
            break;
        }
        // /health learns of a panic before the failed request is answered.
        let verdict = match command {
            Command::Shutdown => break,
            Command::Release(reply) => {
                let kept = w.keep_cache(stamp);
                tracing::debug!(
                    tokens = kept.tokens(),
                    bytes = kept.bytes(),
                    "cached prompts kept across the release"
                );
                let _ = reply.send(kept);
                break;
            }
            Command::Generate(job) if stopping.is_cancelled() => {
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
