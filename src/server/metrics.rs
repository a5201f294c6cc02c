//! Prometheus metrics, all prefixed `evolve_hud_`.

use axum::extract::{MatchedPath, Request, State};
use axum::http::Method;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};
use std::time::Instant;

use super::AppState;

/// Installs the process-wide recorder.
pub fn install() -> anyhow::Result<PrometheusHandle> {
    let handle = PrometheusBuilder::new()
        .set_buckets(&[0.001, 0.005, 0.025, 0.1, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0])?
        .install_recorder()?;
    metrics::describe_counter!(
        "evolve_hud_http_requests_total",
        "HTTP requests by route, method and status"
    );
    metrics::describe_histogram!(
        "evolve_hud_http_request_duration_seconds",
        "HTTP request duration by route"
    );
    metrics::describe_counter!(
        "evolve_hud_prompt_tokens_total",
        "prompt tokens of finished generations"
    );
    metrics::describe_counter!(
        "evolve_hud_prompt_tokens_cached_total",
        "prompt tokens served from the KV cache"
    );
    metrics::describe_counter!("evolve_hud_completion_tokens_total", "generated tokens");
    metrics::describe_counter!(
        "evolve_hud_completion_tokens_forced_total",
        "generated tokens the JSON schema decided, decoded in batches instead of sampled"
    );
    metrics::describe_histogram!("evolve_hud_prompt_seconds", "prompt processing time per generation");
    metrics::describe_histogram!("evolve_hud_generation_seconds", "token generation time per generation");
    metrics::describe_gauge!("evolve_hud_model_queue_depth", "requests waiting for the model thread");
    metrics::describe_counter!(
        "evolve_hud_hud_questions_not_taken_total",
        "HUD questions the engine did not take (busy, down, or still queued at the deadline), asked again"
    );
    Ok(handle)
}

/// Counts and times every request.
pub async fn track(req: Request, next: Next) -> Response {
    let started = Instant::now();
    let path = req
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| "unmatched".to_owned(), |p| p.as_str().to_owned());
    // Label values come from a fixed set: a client cannot create series.
    let method = match *req.method() {
        Method::GET => "GET",
        Method::POST => "POST",
        Method::DELETE => "DELETE",
        Method::HEAD => "HEAD",
        Method::OPTIONS => "OPTIONS",
        Method::PUT => "PUT",
        Method::PATCH => "PATCH",
        _ => "other",
    };
    let response = next.run(req).await;
    let status = response.status().as_u16().to_string();
    metrics::counter!("evolve_hud_http_requests_total", "path" => path.clone(), "method" => method, "status" => status)
        .increment(1);
    metrics::histogram!("evolve_hud_http_request_duration_seconds", "path" => path).record(started.elapsed());
    response
}

/// `GET /metrics`.
pub async fn render(State(state): State<AppState>) -> impl IntoResponse {
    metrics::gauge!("evolve_hud_model_queue_depth").set(state.engine.queued() as f64);
    ([("content-type", "text/plain; version=0.0.4")], state.metrics.render())
}
