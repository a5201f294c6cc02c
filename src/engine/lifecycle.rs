//! The local model's life in the server. It loads while the server already
//! answers (`/health` says "loading" with the progress, as llama-server
//! does; HUD facts are served; model work is refused with "loading" until
//! the first load is in). Then, after `--keep-alive` without model work, it
//! is released with its buffers, as Ollama's `keep_alive` does: HUD facts
//! go on, `/health` says "released", and the next question, chat or
//! compaction loads it again and then runs. The cached prompts (a few MiB
//! of KV state) stay across the release, so the HUD's first question after
//! it decodes only what is new.
//!
//! Those are one state, `Phase` (loading, ready, released, failed),
//! behind one lock and changed in one place; `/health`, `status`, `watch`,
//! the metrics and model work read it, and watchers are told each change.

use super::local::{KeptCache, LoadError, LoadProgress, LocalConfig, ModelHandle, ModelThread};
use super::{
    Backend, Details, Engine, EngineDetails, EngineError, EngineInfo, Event, GenerateRequest, HealthCell, HealthState,
};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

/// How long the model stays loaded while idle (`--keep-alive`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeepAlive {
    Never,
    After(std::time::Duration),
}

impl KeepAlive {
    /// `5m`, `30s`, `1h30m`, `250ms`, plain seconds (`300`), `0`; a leading
    /// `-` keeps the model forever.
    pub fn parse(text: &str) -> Result<KeepAlive, String> {
        let text = text.trim();
        let bad = || format!("{text:?} is not a duration: write it as 30s, 5m, 1h (0 releases at once, -1 never)");
        if let Some(rest) = text.strip_prefix('-') {
            return if rest.is_empty() {
                Err(bad())
            } else {
                Ok(KeepAlive::Never)
            };
        }
        if let Ok(seconds) = text.parse::<u64>() {
            return Ok(KeepAlive::After(std::time::Duration::from_secs(seconds)));
        }
        let mut total = std::time::Duration::ZERO;
        let mut rest = text;
        while !rest.is_empty() {
            let digits = rest.find(|c: char| !c.is_ascii_digit() && c != '.').ok_or_else(bad)?;
            let number: f64 = rest[..digits].parse().map_err(|_| bad())?;
            let unit_len = rest[digits..]
                .find(|c: char| c.is_ascii_digit())
                .unwrap_or(rest.len() - digits);
            let seconds = match &rest[digits..digits + unit_len] {
                "ms" => number / 1000.0,
                "s" => number,
                "m" => number * 60.0,
                "h" => number * 3600.0,
                _ => return Err(bad()),
            };
            total += std::time::Duration::try_from_secs_f64(seconds).map_err(|_| bad())?;
            rest = &rest[digits + unit_len..];
        }
        if text.is_empty() {
            return Err(bad());
        }
        Ok(KeepAlive::After(total))
    }
}

impl std::fmt::Display for KeepAlive {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            KeepAlive::Never => f.write_str("never"),
            KeepAlive::After(d) => write!(f, "{d:?}"),
        }
    }
}

/// The local engine through its life. Cheap to clone.
#[derive(Clone)]
pub struct Lifecycle(Arc<Inner>);

struct Inner {
    config: LocalConfig,
    /// The model's name until the loaded engine tells its own.
    name: String,
    keep_alive: KeepAlive,
    /// Where the model is: the one state `/health`, `status`, `watch`, the
    /// metrics and model work read. Changed by [`Inner::enter`] and
    /// [`Inner::set`] (a release, which checks `in_flight` under its lock).
    phase: Mutex<Phase>,
    /// The model thread while loaded. Loads, releases and the stop hold it,
    /// one at a time, while they change the phase.
    thread: tokio::sync::Mutex<Option<ModelThread>>,
    /// The phase's health told to watchers (and the loaded engine's own
    /// changes, passed on while it is the current one).
    told: HealthCell,
    stopping: AtomicBool,
    /// Model work taken and not yet ended. Counted in under the phase's
    /// lock by the work that saw the phase, so a release that checks it
    /// under the same lock never takes the engine from work that took it.
    in_flight: AtomicUsize,
    /// When model work last ended, in ms since `started`.
    last_work: AtomicU64,
    started: Instant,
}

/// Where the local model is in its life.
enum Phase {
    /// Being loaded: the first time (`known` is `None`: model work is
    /// refused), or again after a release (model work waits for it).
    Loading {
        progress: Arc<LoadProgress>,
        known: Option<EngineInfo>,
    },
    /// Loaded: model work goes to it.
    Ready(Engine),
    /// Released after the keep-alive with no model work; the cached prompts
    /// wait for the next load.
    Released { known: EngineInfo, kept: Option<KeptCache> },
    /// A load failed: model work is refused with the reason.
    Failed { reason: String, known: Option<EngineInfo> },
}

impl Phase {
    fn health(&self) -> HealthState {
        match self {
            Phase::Loading { .. } => HealthState::Loading,
            // The loaded engine's own, not the copy told to watchers,
            // which may lag it by a moment.
            Phase::Ready(engine) => engine.health(),
            Phase::Released { .. } => HealthState::Released,
            Phase::Failed { reason, .. } => HealthState::Failed { reason: reason.clone() },
        }
    }

    /// What the last loaded engine said of itself.
    fn known(&self) -> Option<EngineInfo> {
        match self {
            Phase::Ready(engine) => Some(engine.info()),
            Phase::Released { known, .. } => Some(known.clone()),
            Phase::Loading { known, .. } | Phase::Failed { known, .. } => known.clone(),
        }
    }
}

impl Inner {
    fn phase(&self) -> std::sync::MutexGuard<'_, Phase> {
        self.phase.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The one transition: the new phase, told to watchers.
    fn enter(&self, phase: Phase) {
        self.set(&mut self.phase(), phase);
    }

    /// [`Self::enter`], where the caller holds the phase's lock.
    fn set(&self, slot: &mut Phase, phase: Phase) {
        let health = phase.health();
        *slot = phase;
        self.told.set(health);
    }

    fn current(&self) -> Option<Engine> {
        match &*self.phase() {
            Phase::Ready(engine) => Some(engine.clone()),
            _ => None,
        }
    }
}

impl Lifecycle {
    pub fn new(name: String, config: LocalConfig, keep_alive: KeepAlive) -> Lifecycle {
        let lifecycle = Lifecycle(Arc::new(Inner {
            config,
            name,
            keep_alive,
            phase: Mutex::new(Phase::Loading {
                progress: Arc::default(),
                known: None,
            }),
            thread: tokio::sync::Mutex::new(None),
            told: HealthCell::default(),
            stopping: AtomicBool::new(false),
            in_flight: AtomicUsize::new(0),
            last_work: AtomicU64::new(0),
            started: Instant::now(),
        }));
        if let KeepAlive::After(idle) = keep_alive {
            if !idle.is_zero() {
                tokio::spawn(release_when_idle(Arc::downgrade(&lifecycle.0), idle));
            }
        }
        lifecycle
    }

    /// Loads the model: the first load, whose failure the server reports.
    pub async fn load(&self) -> Result<(), LoadError> {
        let mut thread = self.0.thread.lock().await;
        self.load_into(&mut thread).await.map(drop)
    }

    /// The first load failed: `/health` says why until the server stops.
    pub fn failed(&self, reason: String) {
        self.0.enter(Phase::Failed { reason, known: None });
    }

    /// Stops the model thread, within `limit`; `false` when it is still
    /// decoding then (a long prompt stops only between its batches).
    pub async fn stop(&self, limit: Duration) -> bool {
        self.begin_shutdown();
        let thread = match tokio::time::timeout(limit, self.0.thread.lock()).await {
            Ok(mut thread) => thread.take(),
            Err(_) => return false,
        };
        match thread {
            Some(thread) => tokio::time::timeout(limit, thread.shutdown()).await.is_ok(),
            None => true,
        }
    }

    fn current(&self) -> Option<Engine> {
        self.0.current()
    }

    /// Loading, then ready: the model thread started into `thread`, with
    /// the cached prompts a release kept.
    async fn load_into(&self, thread: &mut Option<ModelThread>) -> Result<Engine, LoadError> {
        if let Some(engine) = self.current() {
            return Ok(engine);
        }
        if self.0.stopping.load(Ordering::Acquire) {
            return Err(LoadError::Cancelled);
        }
        let progress = Arc::new(LoadProgress::default());
        let (known, kept) = match &mut *self.0.phase() {
            Phase::Released { known, kept } => (Some(known.clone()), kept.take()),
            other => (other.known(), None),
        };
        self.0.enter(Phase::Loading {
            progress: progress.clone(),
            known,
        });
        let started = Instant::now();
        let (model, started_thread) = ModelHandle::start_with(&self.0.config, progress.clone(), kept).await?;
        let engine = Engine::new(model);
        if progress.is_cancelled() {
            engine.begin_shutdown();
        }
        *thread = Some(started_thread);
        self.0.enter(Phase::Ready(engine.clone()));
        self.0.last_work.store(self.now_ms(), Ordering::Release);
        tracing::debug!(ms = started.elapsed().as_millis() as u64, "model in memory");
        // The loaded engine's health changes (a panic, a model file changed
        // on disk) are told while it is the current one.
        let mut changes = engine.watch_health();
        self.0.told.set(changes.borrow_and_update().clone());
        let weak = Arc::downgrade(&self.0);
        let watched = engine.clone();
        tokio::spawn(async move {
            while changes.changed().await.is_ok() {
                let state = changes.borrow_and_update().clone();
                let Some(inner) = weak.upgrade() else { return };
                if !inner.current().is_some_and(|c| c.same(&watched)) {
                    return;
                }
                inner.told.set(state);
            }
        });
        Ok(engine)
    }

    /// The loaded engine, loading it again if it was released.
    async fn loaded(&self) -> Result<Engine, EngineError> {
        let mut thread = self.0.thread.lock().await;
        let known = match &*self.0.phase() {
            Phase::Failed { reason, .. } => return Err(EngineError::Unavailable(reason.clone())),
            Phase::Ready(engine) => return Ok(engine.clone()),
            other => other.known(),
        };
        tracing::info!("loading the model again for model work");
        match self.load_into(&mut thread).await {
            Ok(engine) => Ok(engine),
            Err(LoadError::Cancelled) => Err(EngineError::Unavailable("the server is shutting down".into())),
            Err(e) => {
                let reason = format!("loading the model again failed: {e}");
                tracing::error!("{reason}");
                self.0.enter(Phase::Failed {
                    reason: reason.clone(),
                    known,
                });
                Err(EngineError::Unavailable(reason))
            }
        }
    }

    fn now_ms(&self) -> u64 {
        self.0.started.elapsed().as_millis() as u64
    }

    /// Model work ended: its time is noted, and with `--keep-alive 0` the
    /// model goes at once.
    fn work_ended(&self) {
        self.0.last_work.store(self.now_ms(), Ordering::Release);
        let left = self.0.in_flight.fetch_sub(1, Ordering::AcqRel) - 1;
        if left == 0 && self.0.keep_alive == KeepAlive::After(Duration::ZERO) {
            let this = self.clone();
            tokio::spawn(async move { this.release(Duration::ZERO).await });
        }
    }

    /// Ready, then released, when the model has had no work for `idle` and
    /// none is running: the thread and its buffers go, the cached prompts
    /// stay for the next load.
    async fn release(&self, idle: Duration) {
        let mut thread = self.0.thread.lock().await;
        let engine = {
            // Model work counts itself in under this lock (`generate`): with
            // none in flight now, any that comes finds the model released
            // and waits for the next load.
            let mut phase = self.0.phase();
            let quiet = self.now_ms().saturating_sub(self.0.last_work.load(Ordering::Acquire));
            if self.0.in_flight.load(Ordering::Acquire) > 0 || Duration::from_millis(quiet) < idle || thread.is_none() {
                return;
            }
            let Phase::Ready(engine) = &*phase else { return };
            let engine = engine.clone();
            self.0.set(
                &mut phase,
                Phase::Released {
                    known: engine.info(),
                    kept: None,
                },
            );
            engine
        };
        let Some(model_thread) = thread.take() else { return };
        engine.begin_shutdown();
        let kept = model_thread.release().await;
        drop(engine);
        // The allocator keeps freed heap for reuse; give it back.
        #[cfg(all(target_os = "linux", target_env = "gnu"))]
        // SAFETY: malloc_trim only returns free memory to the system.
        unsafe {
            libc::malloc_trim(0);
        }
        tracing::info!(
            keep_alive = %self.0.keep_alive,
            kept_tokens = kept.as_ref().map_or(0, KeptCache::tokens),
            kept_kib = kept.as_ref().map_or(0, |k| k.bytes() / 1024),
            "model released after no model work for the keep-alive; HUD facts go on, the next question loads it again \
             (its cached prompts kept)"
        );
        // Nothing else changes the phase while the thread's lock is held.
        if let Phase::Released { kept: slot, .. } = &mut *self.0.phase() {
            *slot = kept;
        }
    }

    /// Passes `inner` on to `tx` until either ends, then marks the work ended.
    fn forward(&self, mut inner: mpsc::UnboundedReceiver<Event>, tx: mpsc::UnboundedSender<Event>) {
        let this = self.clone();
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    event = inner.recv() => match event {
                        Some(event) => if tx.send(event).is_err() { break },
                        None => break,
                    },
                    () = tx.closed() => break,
                }
            }
            this.work_ended();
        });
    }
}

/// Releases the model once it has had no work for `idle`.
async fn release_when_idle(inner: Weak<Inner>, idle: Duration) {
    loop {
        let wait = {
            let Some(inner) = inner.upgrade() else { return };
            let quiet = Duration::from_millis(
                (inner.started.elapsed().as_millis() as u64).saturating_sub(inner.last_work.load(Ordering::Acquire)),
            );
            if inner.in_flight.load(Ordering::Acquire) > 0 {
                // Work running past the keep-alive: look again in a while,
                // not at every tick.
                idle.min(Duration::from_secs(1))
            } else {
                idle.saturating_sub(quiet)
            }
        };
        tokio::time::sleep(wait.max(Duration::from_millis(100))).await;
        let Some(inner) = inner.upgrade() else { return };
        if inner.stopping.load(Ordering::Acquire) {
            return;
        }
        let lifecycle = Lifecycle(inner);
        if lifecycle.current().is_some() {
            lifecycle.release(idle).await;
        }
    }
}

impl Backend for Lifecycle {
    fn generate(&self, request: GenerateRequest) -> Result<mpsc::UnboundedReceiver<Event>, EngineError> {
        if self.0.stopping.load(Ordering::Acquire) {
            return Err(EngineError::Unavailable("the server is shutting down".into()));
        }
        // Before the first load is in, model work is refused (the server is
        // starting); after a release, it waits for the load. The work counts
        // itself in under the lock that saw the phase (see `release`).
        let phase = self.0.phase();
        let ready = match &*phase {
            Phase::Failed { reason, .. } => return Err(EngineError::Unavailable(reason.clone())),
            Phase::Loading { progress, known: None } => {
                return Err(EngineError::Unavailable(format!(
                    "the model is loading ({:.0} %)",
                    progress.fraction() * 100.0
                )))
            }
            Phase::Ready(engine) => match engine.health() {
                HealthState::Failed { reason } => return Err(EngineError::Unavailable(reason)),
                _ => Some(engine.clone()),
            },
            Phase::Loading { .. } | Phase::Released { .. } => None,
        };
        // Tests widen the moment between seeing the phase and counting in,
        // where a release once took the engine from work that saw it.
        #[cfg(feature = "fault-injection")]
        if let Some(ms) = std::env::var("EVOLVE_HUD_FAULT_TAKE_MS")
            .ok()
            .and_then(|v| v.parse::<u64>().ok())
        {
            std::thread::sleep(Duration::from_millis(ms));
        }
        self.0.in_flight.fetch_add(1, Ordering::AcqRel);
        drop(phase);
        let (tx, rx) = mpsc::unbounded_channel();
        if let Some(engine) = ready {
            match engine.generate(request) {
                Ok(inner) => {
                    self.forward(inner, tx);
                    return Ok(rx);
                }
                Err(e) => {
                    self.work_ended();
                    return Err(e);
                }
            }
        }
        let this = self.clone();
        let span = tracing::Span::current();
        tokio::spawn(tracing::Instrument::instrument(
            async move {
                // The prompt is tokenized off the async workers, as in
                // `Engine::submit`.
                let generated = match this.loaded().await {
                    Ok(engine) => {
                        let span = tracing::Span::current();
                        crate::cpu::run(move || span.in_scope(|| engine.generate(request)))
                            .await
                            .unwrap_or_else(|e| Err(EngineError::Backend(format!("preparing the prompt: {e}"))))
                    }
                    Err(e) => Err(e),
                };
                match generated {
                    Ok(inner) => this.forward(inner, tx),
                    Err(e) => {
                        let _ = tx.send(Event::Failed(e));
                        this.work_ended();
                    }
                }
            },
            span,
        ));
        Ok(rx)
    }

    fn health(&self) -> HealthState {
        self.0.phase().health()
    }

    fn watch_health(&self) -> tokio::sync::watch::Receiver<HealthState> {
        self.0.told.watch()
    }

    fn info(&self) -> EngineInfo {
        self.0.phase().known().unwrap_or_else(|| EngineInfo {
            kind: "local",
            model: self.0.name.clone(),
            ctx: None,
        })
    }

    fn details(&self) -> Details {
        let loading = match &*self.0.phase() {
            Phase::Ready(engine) => return engine.details(),
            Phase::Loading { progress, .. } => Some(EngineDetails::Loading {
                progress: progress.fraction(),
            }),
            Phase::Released { .. } | Phase::Failed { .. } => None,
        };
        Details {
            kind: loading,
            model_meta: None,
        }
    }

    fn count_tokens(&self, text: &str) -> Option<usize> {
        self.current()?.count_tokens(text)
    }

    fn queued(&self) -> usize {
        self.current().map_or(0, |e| e.queued())
    }

    fn begin_shutdown(&self) {
        self.0.stopping.store(true, Ordering::Release);
        match &*self.0.phase() {
            Phase::Loading { progress, .. } => progress.cancel(),
            Phase::Ready(engine) => engine.begin_shutdown(),
            Phase::Released { .. } | Phase::Failed { .. } => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::KeepAlive;
    use std::time::Duration;

    #[test]
    fn keep_alive_reads_as_ollama_writes_it() {
        let after = |s: u64| Ok(KeepAlive::After(Duration::from_secs(s)));
        assert_eq!(KeepAlive::parse("5m"), after(300));
        assert_eq!(KeepAlive::parse("30s"), after(30));
        assert_eq!(KeepAlive::parse("1h"), after(3600));
        assert_eq!(KeepAlive::parse("1h30m"), after(5400));
        assert_eq!(KeepAlive::parse("300"), after(300));
        assert_eq!(KeepAlive::parse("0"), after(0));
        assert_eq!(
            KeepAlive::parse("250ms"),
            Ok(KeepAlive::After(Duration::from_millis(250)))
        );
        assert_eq!(KeepAlive::parse("-1"), Ok(KeepAlive::Never));
        assert_eq!(KeepAlive::parse("-5m"), Ok(KeepAlive::Never));
        for bad in ["", "-", "5x", "m", "five minutes", "1.2.3s"] {
            assert!(KeepAlive::parse(bad).is_err(), "{bad}");
        }
    }
}
