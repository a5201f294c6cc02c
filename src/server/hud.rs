//! The HUD API: `POST /v1/hud/sync`, `POST /v1/hud/event`, `GET /v1/hud`,
//! `GET` and `DELETE /v1/hud/{session}`, and the texts built from session
//! state: `POST /v1/hud/{session}/compaction` and `POST /v1/heartbeat`.

use super::error::{ApiError, JsonBody};
use super::AppState;
use crate::hud::Change;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::Json;
use evolve_hud_api::{
    CompactionRequest, CompactionView, EventAck, HeartbeatRequest, HeartbeatView, HudView, ModelStatus, SessionEvent,
    SessionList, SyncRequest, DEFAULT_DEADLINE_MS, MAX_DEADLINE_MS, MAX_SYNC_WAIT_MS,
};
use std::time::Duration;
use tokio::sync::broadcast::error::RecvError;

/// Longest accepted session id.
const MAX_SESSION_ID: usize = 256;

fn check_id(id: &str) -> Result<(), ApiError> {
    if id.is_empty() || id.len() > MAX_SESSION_ID || id.chars().any(char::is_control) {
        return Err(ApiError::InvalidRequest(format!(
            "`session_id` must be 1 to {MAX_SESSION_ID} printable characters"
        )));
    }
    Ok(())
}

/// Merges and renders at once; waits for the model only as `wait_ms` asks.
/// A sync that waits sends its head at once and its body when the wait
/// ends, so a client tells a held answer from a sidecar that hangs by the
/// time to the head, and bounds only the body by the wait.
#[tracing::instrument(skip_all, fields(session = %request.session_id, messages = request.messages.len()))]
pub async fn sync(
    State(state): State<AppState>,
    JsonBody(request): JsonBody<SyncRequest>,
) -> Result<axum::response::Response, ApiError> {
    check_id(&request.session_id)?;
    if request.wait_ms > MAX_SYNC_WAIT_MS {
        return Err(ApiError::InvalidRequest(format!(
            "`wait_ms` must be at most {MAX_SYNC_WAIT_MS}"
        )));
    }
    // Subscribed before the merge, so no change after it is missed.
    let changes = state.hud.subscribe();
    if let Some(context) = request.context {
        // A session not held yet shows it from the next sync on.
        state.hud.note_context(&request.session_id, context);
    }
    // Merged, rendered and counted off the async workers.
    let (hud, session, messages, full) = (
        state.hud.clone(),
        request.session_id.clone(),
        request.messages,
        request.full,
    );
    let view = crate::cpu::run(move || hud.sync(&session, messages, full))
        .await
        .map_err(|e| ApiError::Internal(format!("merging the session failed: {e}")))??;
    // Only for the failure the agent has just seen, so one slow question
    // holds one request, not every one after it.
    let waits = request.wait_ms > 0
        && view.model_status == ModelStatus::Pending
        && state.hud.pending_on_newest(&request.session_id);
    if !waits {
        return Ok(Json(view).into_response());
    }
    let deadline = tokio::time::Instant::now() + Duration::from_millis(request.wait_ms);
    let held = async move {
        let view = held_view(&state, &request.session_id, view, changes, deadline).await;
        Ok::<_, std::convert::Infallible>(axum::body::Bytes::from(serde_json::to_vec(&view).unwrap_or_default()))
    };
    Ok((
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        axum::body::Body::from_stream(futures_util::stream::once(held)),
    )
        .into_response())
}

/// `view` once the question settles or its first verified finding is
/// shown, or at `deadline`.
async fn held_view(
    state: &AppState,
    session: &str,
    mut view: HudView,
    mut changes: tokio::sync::broadcast::Receiver<Change>,
    deadline: tokio::time::Instant,
) -> HudView {
    let synced = view.version;
    while view.model_status == ModelStatus::Pending && view.version == synced {
        match tokio::time::timeout_at(deadline, changes.recv()).await {
            Err(_) => break,
            Ok(Ok(Change::Updated(id))) if id != session => continue,
            Ok(Ok(Change::Removed(_))) => continue,
            // This session changed, or changes were missed: look again.
            Ok(Ok(Change::Updated(_)) | Err(RecvError::Lagged(_))) => {}
            Ok(Err(RecvError::Closed)) => break,
        }
        match view_of(state, session).await {
            Ok(latest) => view = latest,
            Err(_) => break,
        }
    }
    view
}

/// Applies a forwarded OpenCode event: `202 {"known": bool}`.
pub async fn event(
    State(state): State<AppState>,
    JsonBody(event): JsonBody<SessionEvent>,
) -> Result<(StatusCode, Json<EventAck>), ApiError> {
    check_id(event.session_id())?;
    let known = state.hud.event(event);
    Ok((StatusCode::ACCEPTED, Json(EventAck { known })))
}

pub async fn get(State(state): State<AppState>, Path(session): Path<String>) -> Result<Json<HudView>, ApiError> {
    Ok(Json(view_of(&state, &session).await?))
}

/// The session's HUD, rendered off the async workers where its version is new.
pub(super) async fn view_of(state: &AppState, session: &str) -> Result<HudView, ApiError> {
    let (hud, session) = (state.hud.clone(), session.to_owned());
    let view = crate::cpu::run(move || hud.get(&session))
        .await
        .map_err(|e| ApiError::Internal(format!("rendering the HUD failed: {e}")))??;
    Ok(view)
}

pub async fn list(State(state): State<AppState>) -> Json<SessionList> {
    Json(SessionList {
        sessions: state.hud.list(),
    })
}

pub async fn delete(State(state): State<AppState>, Path(session): Path<String>) -> Result<StatusCode, ApiError> {
    if state.hud.drop_session(&session) {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(ApiError::NotFound(format!("no session {session}")))
    }
}

fn deadline(ms: Option<u64>) -> Result<Duration, ApiError> {
    match ms.unwrap_or(DEFAULT_DEADLINE_MS) {
        ms if ms <= MAX_DEADLINE_MS => Ok(Duration::from_millis(ms)),
        _ => Err(ApiError::InvalidRequest(format!(
            "`deadline_ms` must be at most {MAX_DEADLINE_MS}"
        ))),
    }
}

/// The compaction context for a session (404 for unknown sessions).
pub async fn compaction(
    State(state): State<AppState>,
    Path(session): Path<String>,
    JsonBody(request): JsonBody<CompactionRequest>,
) -> Result<Json<CompactionView>, ApiError> {
    let deadline = deadline(request.deadline_ms)?;
    Ok(Json(state.hud.compaction(&session, deadline).await?))
}

/// The heartbeat's system prompt and user text.
pub async fn heartbeat(
    State(state): State<AppState>,
    JsonBody(request): JsonBody<HeartbeatRequest>,
) -> Result<Json<HeartbeatView>, ApiError> {
    let deadline = deadline(request.deadline_ms)?;
    Ok(Json(state.hud.heartbeat(&request.exclude, deadline).await))
}
