//! No engine at all (`serve --no-model`): the HUD's facts only. Model work
//! is refused with the reason; nothing is loaded or reached.

use super::{Backend, Details, Engine, EngineError, EngineInfo, Event, GenerateRequest, HealthCell, HealthState};
use tokio::sync::mpsc;

/// The engine of a sidecar that serves HUD facts only; with why, when it
/// has no model because none could be had.
pub struct NoModel(HealthCell, Option<evolve_hud_api::EngineDetails>);

impl NoModel {
    pub fn engine(missing: Option<evolve_hud_api::EngineDetails>) -> Engine {
        let health = HealthCell::default();
        health.set(HealthState::Ready);
        Engine::new(NoModel(health, missing))
    }
}

impl Backend for NoModel {
    fn generate(&self, _: GenerateRequest) -> Result<mpsc::UnboundedReceiver<Event>, EngineError> {
        Err(EngineError::Unavailable(match &self.1 {
            Some(evolve_hud_api::EngineDetails::Missing { missing, fix }) => {
                format!("this sidecar serves HUD facts only: {missing}; `{fix}` gets the model")
            }
            _ => "this sidecar serves HUD facts only (--no-model); start it with --model or --engine for model work"
                .into(),
        }))
    }

    fn health(&self) -> HealthState {
        self.0.get()
    }

    fn watch_health(&self) -> tokio::sync::watch::Receiver<HealthState> {
        self.0.watch()
    }

    fn info(&self) -> EngineInfo {
        EngineInfo {
            kind: "none",
            model: "none".into(),
            ctx: None,
        }
    }

    fn details(&self) -> Details {
        Details {
            kind: self.1.clone(),
            ..Details::default()
        }
    }

    fn count_tokens(&self, _: &str) -> Option<usize> {
        None
    }

    fn queued(&self) -> usize {
        0
    }

    fn begin_shutdown(&self) {}
}
