//! For people and tools watching the sidecar: `GET /v1/status`, one
//! snapshot, and `GET /v1/events`, a stream of server-sent events:
//!
//! - `status`: at once, every [`STATUS_EVERY`], and whenever the engine's
//!   health changes, a [`StatusView`];
//! - `hud`: every session's [`HudEvent`] at once, then one whenever a
//!   session's HUD text or model status changes (a sync that changes
//!   nothing sends nothing);
//! - `removed`: `{"session_id": …}` when a session is dropped.
//!
//! A stream holds a broadcast receiver and nothing else: a client that goes
//! away is dropped with it. One that falls behind gets every session afresh.

use super::AppState;
use crate::hud::Change;
use axum::extract::State;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::Json;
use evolve_hud_api::{HudEvent, Removed, StatusView, StreamEvent, STATUS_EVERY};
use futures_util::{Stream, StreamExt};
use std::collections::{HashMap, VecDeque};
use std::convert::Infallible;
use tokio::sync::broadcast::error::RecvError;

fn status_of(state: &AppState) -> StatusView {
    let health = state.health();
    StatusView {
        ready: health.ready(),
        health,
        queue: state.engine.queued(),
        activity: state.engine.telemetry().snapshot(),
        sessions: state.hud.list(),
    }
}

pub async fn status(State(state): State<AppState>) -> Json<StatusView> {
    Json(status_of(&state))
}

/// `GET /v1/events`.
pub async fn stream(State(state): State<AppState>) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    // Subscribed before the first snapshot, so no change falls between.
    let changes = state.hud.subscribe();
    let health = state.engine.watch_health();
    let state_shutdown = state.shutdown.clone();
    let mut watcher = Watcher {
        state,
        changes,
        health,
        health_told: true,
        sent: HashMap::new(),
        queue: VecDeque::new(),
        tick: tokio::time::interval(STATUS_EVERY),
    };
    watcher.resync().await;
    metrics::gauge!("evolve_hud_event_streams").increment(1.0);
    let shutdown = state_shutdown;
    let events = futures_util::stream::unfold(watcher, |mut w| async move {
        let event = w.next().await;
        Some((Ok(event), w))
    })
    // A stream never ends by itself; the server's shutdown ends it.
    .take_until(shutdown.cancelled_owned());
    Sse::new(events).keep_alive(KeepAlive::default())
}

/// One client's stream.
struct Watcher {
    state: AppState,
    changes: tokio::sync::broadcast::Receiver<Change>,
    health: tokio::sync::watch::Receiver<crate::engine::HealthState>,
    /// Whether the engine still tells of health changes.
    health_told: bool,
    /// What this client was last sent per session: the HUD text and model
    /// status.
    sent: HashMap<String, (String, String)>,
    queue: VecDeque<Event>,
    tick: tokio::time::Interval,
}

impl Drop for Watcher {
    fn drop(&mut self) {
        metrics::gauge!("evolve_hud_event_streams").decrement(1.0);
    }
}

impl Watcher {
    async fn next(&mut self) -> Event {
        loop {
            if let Some(event) = self.queue.pop_front() {
                return event;
            }
            tokio::select! {
                _ = self.tick.tick() => self.status(),
                changed = self.health.changed(), if self.health_told => match changed {
                    Ok(()) => self.status(),
                    // The engine is gone; the ticks still tell.
                    Err(_) => self.health_told = false,
                },
                change = self.changes.recv() => match change {
                    Ok(Change::Updated(id)) => self.updated(&id).await,
                    Ok(Change::Removed(id)) => self.removed(&id),
                    Err(RecvError::Lagged(_)) => self.resync().await,
                    Err(RecvError::Closed) => std::future::pending::<()>().await,
                },
            }
        }
    }

    fn status(&mut self) {
        let status = status_of(&self.state);
        self.queue.push_back(sse(&StreamEvent::Status(Box::new(status))));
    }

    /// Queues the session's HUD if it differs from what this client has.
    async fn updated(&mut self, id: &str) {
        let (Ok(view), Some(session)) = (super::hud::view_of(&self.state, id).await, self.state.hud.listed(id)) else {
            return self.removed(id);
        };
        let seen = (view.hud.clone(), view.model_status.to_string());
        if self.sent.get(id) != Some(&seen) {
            self.sent.insert(id.to_owned(), seen);
            self.queue
                .push_back(sse(&StreamEvent::Hud(Box::new(HudEvent { view, session }))));
        }
    }

    fn removed(&mut self, id: &str) {
        if self.sent.remove(id).is_some() {
            let removed = Removed {
                session_id: id.to_owned(),
            };
            self.queue.push_back(sse(&StreamEvent::Removed(removed)));
        }
    }

    /// Every session as it is now, and the removal of those gone.
    async fn resync(&mut self) {
        let held: Vec<String> = self.state.hud.list().into_iter().map(|s| s.session_id).collect();
        let gone: Vec<String> = self.sent.keys().filter(|id| !held.contains(id)).cloned().collect();
        gone.iter().for_each(|id| self.removed(id));
        for id in &held {
            self.updated(id).await;
        }
    }
}

fn sse(event: &StreamEvent) -> Event {
    Event::default().event(event.name()).data(event.data())
}
