//! The local model's life in the server. It loads while the server already
//! answers (`/health` says "loading" with the progress, as llama-server
//! does; HUD facts are served; model work is refused with "loading" until
//! the first load is in). Then, after `--keep-alive` without model work, it
//! is released with its buffers, as Ollama's `keep_alive` does: HUD facts
//! go on, `/health` says "released", and the next question, chat or
//! compaction loads it again and then runs. The cached prompts (a few MiB
//! of KV state) stay across the release, so the HUD's first question after
//! it decodes only what is new.

use super::local::{KeptCache, LoadError, LoadProgress, LocalConfig, ModelHandle, ModelThread};
use super::{
    Backend, Details, Engine, EngineDetails, EngineError, EngineInfo, Event, GenerateRequest, HealthCell, HealthState,
};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock, Weak};
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
    /// The loaded engine, for the readers that must not wait.
    current: RwLock<Option<Engine>>,
    /// What the last loaded engine said of itself (kept while released).
    info: RwLock<Option<EngineInfo>>,
    /// The model thread while loaded; loads and releases hold it, one at a time.
    slot: tokio::sync::Mutex<Slot>,
    /// The load in progress, or the last.
    progress: Mutex<Arc<LoadProgress>>,
    /// While released: the cached prompts the next load puts back.
    kept: Mutex<Option<KeptCache>>,
    health: HealthCell,
    stopping: AtomicBool,
    /// Model work taken and not yet ended.
    in_flight: AtomicUsize,
    /// When model work last ended, in ms since `started`.
    last_work: AtomicU64,
    started: Instant,
}

enum Slot {
    /// Not loaded: before the first load, or released.
    Empty,
    Loaded(ModelThread),
    /// A load failed: model work is refused with the reason.
    Failed(String),
}

impl Lifecycle {
    pub fn new(name: String, config: LocalConfig, keep_alive: KeepAlive) -> Lifecycle {
        let lifecycle = Lifecycle(Arc::new(Inner {
            config,
            name,
            keep_alive,
            current: RwLock::new(None),
            info: RwLock::new(None),
            slot: tokio::sync::Mutex::new(Slot::Empty),
            progress: Mutex::new(Arc::new(LoadProgress::default())),
            kept: Mutex::new(None),
            health: HealthCell::default(),
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
        let mut slot = self.0.slot.lock().await;
        self.load_into(&mut slot).await.map(drop)
    }

    /// The first load failed: `/health` says why until the server stops.
    pub fn failed(&self, reason: String) {
        self.0.health.set(HealthState::Failed { reason });
    }

    /// Stops the model thread, within `limit`; `false` when it is still
    /// decoding then (a long prompt stops only between its batches).
    pub async fn stop(&self, limit: Duration) -> bool {
        self.begin_shutdown();
        let thread = match tokio::time::timeout(limit, self.0.slot.lock()).await {
            Ok(mut slot) => std::mem::replace(&mut *slot, Slot::Empty),
            Err(_) => return false,
        };
        match thread {
            Slot::Loaded(thread) => tokio::time::timeout(limit, thread.shutdown()).await.is_ok(),
            _ => true,
        }
    }

    fn current(&self) -> Option<Engine> {
        self.0.current.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    async fn load_into(&self, slot: &mut Slot) -> Result<Engine, LoadError> {
        if let Some(engine) = self.current() {
            return Ok(engine);
        }
        if self.0.stopping.load(Ordering::Acquire) {
            return Err(LoadError::Cancelled);
        }
        let progress = Arc::new(LoadProgress::default());
        *self.0.progress.lock().unwrap_or_else(|p| p.into_inner()) = progress.clone();
        self.0.health.set(HealthState::Loading);
        let started = Instant::now();
        let kept = self.0.kept.lock().unwrap_or_else(|p| p.into_inner()).take();
        let (model, thread) = ModelHandle::start_with(&self.0.config, progress.clone(), kept).await?;
        let engine = Engine::new(model);
        if progress.is_cancelled() {
            engine.begin_shutdown();
        }
        *self.0.info.write().unwrap_or_else(|p| p.into_inner()) = Some(engine.info());
        *self.0.current.write().unwrap_or_else(|p| p.into_inner()) = Some(engine.clone());
        *slot = Slot::Loaded(thread);
        self.0.last_work.store(self.now_ms(), Ordering::Release);
        tracing::debug!(ms = started.elapsed().as_millis() as u64, "model in memory");
        // The loaded engine's health changes (a panic, a model file changed
        // on disk) are passed on while it is the current one.
        let mut changes = engine.watch_health();
        self.0.health.set(changes.borrow_and_update().clone());
        let weak = Arc::downgrade(&self.0);
        let watched = engine.clone();
        tokio::spawn(async move {
            while changes.changed().await.is_ok() {
                let state = changes.borrow_and_update().clone();
                let Some(inner) = weak.upgrade() else { return };
                let current = inner.current.read().unwrap_or_else(|p| p.into_inner()).clone();
                if !current.is_some_and(|c| c.same(&watched)) {
                    return;
                }
                inner.health.set(state);
            }
        });
        Ok(engine)
    }

    /// The loaded engine, loading it again if it was released.
    async fn loaded(&self) -> Result<Engine, EngineError> {
        let mut slot = self.0.slot.lock().await;
        if let Slot::Failed(reason) = &*slot {
            return Err(EngineError::Unavailable(reason.clone()));
        }
        if self.current().is_none() {
            tracing::info!("loading the model again for model work");
        }
        match self.load_into(&mut slot).await {
            Ok(engine) => Ok(engine),
            Err(LoadError::Cancelled) => Err(EngineError::Unavailable("the server is shutting down".into())),
            Err(e) => {
                let reason = format!("loading the model again failed: {e}");
                tracing::error!("{reason}");
                self.0.health.set(HealthState::Failed { reason: reason.clone() });
                *slot = Slot::Failed(reason.clone());
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

    /// Releases the model when it has had no work for `idle` and none is
    /// running.
    async fn release(&self, idle: Duration) {
        let mut slot = self.0.slot.lock().await;
        let quiet = self.now_ms().saturating_sub(self.0.last_work.load(Ordering::Acquire));
        if self.0.in_flight.load(Ordering::Acquire) > 0 || Duration::from_millis(quiet) < idle {
            return;
        }
        let Slot::Loaded(thread) = std::mem::replace(&mut *slot, Slot::Empty) else {
            return;
        };
        let engine = self.0.current.write().unwrap_or_else(|p| p.into_inner()).take();
        self.0.health.set(HealthState::Released);
        if let Some(engine) = &engine {
            engine.begin_shutdown();
        }
        let kept = thread.release().await;
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
        *self.0.kept.lock().unwrap_or_else(|p| p.into_inner()) = kept;
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
        let first_load = self.0.info.read().unwrap_or_else(|p| p.into_inner()).is_none();
        match (self.current(), self.health()) {
            (_, HealthState::Failed { reason }) => return Err(EngineError::Unavailable(reason)),
            // Before the first load is in, model work is refused (the
            // server is starting); after a release, it waits for the reload.
            (None, HealthState::Loading) if first_load => {
                return Err(EngineError::Unavailable(format!(
                    "the model is loading ({:.0} %)",
                    self.0.progress.lock().unwrap_or_else(|p| p.into_inner()).fraction() * 100.0
                )))
            }
            _ => {}
        }
        self.0.in_flight.fetch_add(1, Ordering::AcqRel);
        let (tx, rx) = mpsc::unbounded_channel();
        if let Some(engine) = self.current() {
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
        // The loaded engine's own, not the copy passed on to watchers,
        // which may lag it by a moment.
        match self.current() {
            Some(engine) => engine.health(),
            None => self.0.health.get(),
        }
    }

    fn watch_health(&self) -> tokio::sync::watch::Receiver<HealthState> {
        self.0.health.watch()
    }

    fn info(&self) -> EngineInfo {
        if let Some(engine) = self.current() {
            return engine.info();
        }
        let known = self.0.info.read().unwrap_or_else(|p| p.into_inner()).clone();
        known.unwrap_or_else(|| EngineInfo {
            kind: "local",
            model: self.0.name.clone(),
            ctx: None,
        })
    }

    fn details(&self) -> Details {
        match self.current() {
            Some(engine) => engine.details(),
            None => Details {
                kind: (self.0.health.get() == HealthState::Loading).then(|| EngineDetails::Loading {
                    progress: self.0.progress.lock().unwrap_or_else(|p| p.into_inner()).fraction(),
                }),
                model_meta: None,
            },
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
        self.0.progress.lock().unwrap_or_else(|p| p.into_inner()).cancel();
        if let Some(engine) = self.current() {
            engine.begin_shutdown();
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
