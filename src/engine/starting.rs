//! The engine while the local model loads: the server binds and answers at
//! once (HUD facts, `/health` saying "loading" with the load's progress, as
//! llama-server does), and model work is refused with "loading" until the
//! model is in. Then every call goes to the loaded engine.

use super::local::LoadProgress;
use super::{
    Backend, DetailsKind, Engine, EngineDetails, EngineError, EngineInfo, Event, GenerateRequest, HealthCell,
    HealthState,
};
use std::sync::{Arc, OnceLock};
use tokio::sync::mpsc;

/// An engine that is loading, then the loaded one. Cheap to clone.
#[derive(Clone)]
pub struct Starting(Arc<Inner>);

struct Inner {
    /// The model's name until the loaded engine tells its own.
    name: String,
    progress: Arc<LoadProgress>,
    loaded: OnceLock<Engine>,
    /// Loading, then failed with the reason or whatever the loaded engine says.
    health: HealthCell,
}

impl Starting {
    pub fn new(name: String, progress: Arc<LoadProgress>) -> Starting {
        Starting(Arc::new(Inner {
            name,
            progress,
            loaded: OnceLock::new(),
            health: HealthCell::default(),
        }))
    }

    /// The model is in: from now on every call goes to `engine`, and its
    /// health changes are passed on to this engine's watchers.
    pub fn loaded(&self, engine: Engine) {
        let mut changes = engine.watch_health();
        self.0.health.set(changes.borrow_and_update().clone());
        if self.0.loaded.set(engine).is_err() {
            return;
        }
        let inner = self.0.clone();
        tokio::spawn(async move {
            while changes.changed().await.is_ok() {
                let state = changes.borrow_and_update().clone();
                inner.health.set(state);
            }
        });
    }

    /// The load failed: `/health` says why until the server stops.
    pub fn failed(&self, reason: String) {
        self.0.health.set(HealthState::Failed { reason });
    }

    fn engine(&self) -> Option<&Engine> {
        self.0.loaded.get()
    }
}

impl Backend for Starting {
    fn generate(&self, request: GenerateRequest) -> Result<mpsc::UnboundedReceiver<Event>, EngineError> {
        match (self.engine(), self.0.health.get()) {
            (Some(engine), _) => engine.generate(request),
            (None, HealthState::Failed { reason }) => Err(EngineError::Unavailable(reason)),
            (None, _) => Err(EngineError::Unavailable(format!(
                "the model is loading ({:.0} %)",
                self.0.progress.fraction() * 100.0
            ))),
        }
    }

    fn health(&self) -> HealthState {
        // The loaded engine's own, not the copy passed on to watchers,
        // which may lag it by a moment.
        match self.engine() {
            Some(engine) => engine.health(),
            None => self.0.health.get(),
        }
    }

    fn watch_health(&self) -> tokio::sync::watch::Receiver<HealthState> {
        self.0.health.watch()
    }

    fn info(&self) -> EngineInfo {
        match self.engine() {
            Some(engine) => engine.info(),
            None => EngineInfo {
                kind: "local",
                model: self.0.name.clone(),
                ctx: None,
            },
        }
    }

    fn details(&self) -> EngineDetails {
        match self.engine() {
            Some(engine) => engine.details(),
            None => EngineDetails {
                kind: Some(DetailsKind::Loading {
                    progress: self.0.progress.fraction(),
                }),
                model_meta: None,
            },
        }
    }

    fn count_tokens(&self, text: &str) -> Option<usize> {
        self.engine()?.count_tokens(text)
    }

    fn queued(&self) -> usize {
        self.engine().map_or(0, |e| e.queued())
    }

    fn begin_shutdown(&self) {
        self.0.progress.cancel();
        if let Some(engine) = self.engine() {
            engine.begin_shutdown();
        }
    }
}
