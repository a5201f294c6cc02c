//! The remote engine's health probe: `GET /models` every few seconds (every
//! second while failing), which also learns the model's id, and from
//! llama-server's `/props` the context size and slot count.

use super::client::describe;
use super::{Inner, RemoteConfig};
use crate::engine::HealthState;
use evolve_hud_api::openai::{ModelEntry, ModelList};
use serde::Deserialize;
use std::sync::atomic::Ordering;

/// Probes the engine until the engine handle is dropped or shutdown begins.
pub(super) async fn probe_loop(inner: std::sync::Weak<Inner>) {
    loop {
        let Some(engine) = inner.upgrade() else { return };
        if engine.stopping.load(Ordering::Acquire) {
            return;
        }
        let wait = match probe(&engine).await {
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

/// `GET /models`: the engine answers, and serves the model asked for (the
/// first one when none was).
async fn probe(engine: &Inner) -> Result<(), String> {
    let url = engine.endpoint("models");
    let response = engine
        .client
        .get(url.clone())
        .timeout(RemoteConfig::PROBE_TIMEOUT)
        .send()
        .await
        .map_err(|e| describe(e, &url))?;
    let shown = crate::redact::url(url.as_str());
    let status = response.status();
    if !status.is_success() {
        return Err(format!("GET {shown} answered {status}"));
    }
    let list: ModelList = response
        .json()
        .await
        .map_err(|e| format!("GET {shown} did not answer a model list: {}", e.without_url()))?;
    let entry: &ModelEntry = match &engine.config.model {
        Some(name) => list.entries().iter().find(|m| m.id() == Some(name)).ok_or_else(|| {
            let ids: Vec<&str> = list.entries().iter().filter_map(ModelEntry::id).collect();
            format!("the engine does not serve the model {name:?}; it serves {ids:?}")
        })?,
        None => list
            .entries()
            .first()
            .ok_or_else(|| format!("GET {shown} lists no models"))?,
    };
    let mut known = engine.known();
    known.model = entry.id().map(str::to_owned);
    if let Some(n) = entry.max_model_len {
        known.ctx = Some(n);
    }
    if known.slots.is_none() {
        if let Some(props) = props(engine).await {
            known.ctx = Some(props.default_generation_settings.n_ctx);
            known.slots = Some(props.total_slots.max(1));
        }
    }
    engine.learn(known);
    Ok(())
}

/// llama-server's `GET /props`, the part read here.
#[derive(Deserialize)]
struct Props {
    default_generation_settings: GenerationSettings,
    total_slots: u32,
}

#[derive(Deserialize)]
struct GenerationSettings {
    /// Context tokens per slot.
    n_ctx: u32,
}

/// llama-server's `/props`: beside `/v1`, not in it; the query stays.
pub(super) fn props_url(base: &reqwest::Url) -> reqwest::Url {
    let mut root = base.clone();
    let path = root.path().strip_suffix("/v1").unwrap_or(root.path()).to_owned();
    root.set_path(&path);
    super::under(&root, "props")
}

async fn props(engine: &Inner) -> Option<Props> {
    engine
        .client
        .get(props_url(&engine.base))
        .timeout(RemoteConfig::PROBE_TIMEOUT)
        .send()
        .await
        .ok()?
        .error_for_status()
        .ok()?
        .json()
        .await
        .ok()
}
