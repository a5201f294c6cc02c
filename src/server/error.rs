//! One error type for the HTTP edge: every failure becomes a fixed status
//! code and a body in OpenAI's shape (as llama-server and Ollama send it),
//! `{"error": {"message": "...", "type": "...", "param": null, "code": "..."}}`,
//! so OpenAI's clients show the message.

use crate::engine::EngineError;
use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use evolve_hud_api::openai::ErrorBody;
use serde::de::DeserializeOwned;

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("{0}")]
    InvalidRequest(String),
    #[error("request body is larger than the limit of {0} bytes")]
    PayloadTooLarge(usize),
    #[error("{0}")]
    NotFound(String),
    #[error("method not allowed")]
    MethodNotAllowed,
    #[error("{0}")]
    Forbidden(String),
    #[error(
        "missing or wrong bearer token; send `Authorization: Bearer <token>` with the contents of \
~/.config/evolve-hud/token (or of the sidecar's --auth-token-file)"
    )]
    Unauthorized,
    #[error("send the body as JSON, with `Content-Type: application/json`")]
    UnsupportedMediaType,
    #[error(transparent)]
    Engine(#[from] EngineError),
    #[error(transparent)]
    Hud(#[from] crate::hud::HudError),
    /// A bug: work that panicked, said in words.
    #[error("{0}")]
    Internal(String),
}

impl ApiError {
    /// The one table of status codes and `type` strings, so the two cannot
    /// disagree.
    fn status_and_kind(&self) -> (StatusCode, &'static str) {
        use crate::hud::HudError;
        match self {
            ApiError::InvalidRequest(_) => (StatusCode::BAD_REQUEST, "invalid_request_error"),
            ApiError::PayloadTooLarge(_) => (StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large"),
            ApiError::NotFound(_) => (StatusCode::NOT_FOUND, "not_found"),
            ApiError::MethodNotAllowed => (StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed"),
            ApiError::Forbidden(_) => (StatusCode::FORBIDDEN, "forbidden"),
            ApiError::Unauthorized => (StatusCode::UNAUTHORIZED, "unauthorized"),
            ApiError::UnsupportedMediaType => (StatusCode::UNSUPPORTED_MEDIA_TYPE, "unsupported_media_type"),
            ApiError::Hud(HudError::ResyncRequired(_)) => (StatusCode::CONFLICT, "resync_required"),
            ApiError::Hud(HudError::NotFound(_)) => (StatusCode::NOT_FOUND, "not_found"),
            ApiError::Internal(_) => (StatusCode::INTERNAL_SERVER_ERROR, "server_error"),
            ApiError::Engine(e) => match e {
                EngineError::Unavailable(_) => (StatusCode::SERVICE_UNAVAILABLE, "unavailable"),
                EngineError::QueueTimeout(_) => (StatusCode::SERVICE_UNAVAILABLE, "queue_timeout"),
                EngineError::Overloaded(_) => (StatusCode::TOO_MANY_REQUESTS, "overloaded"),
                EngineError::ContextExceeded { .. } | EngineError::PromptTooLong { .. } => {
                    (StatusCode::BAD_REQUEST, "context_length_exceeded")
                }
                EngineError::InvalidInput(_) => (StatusCode::BAD_REQUEST, "invalid_request_error"),
                EngineError::Backend(_) => (StatusCode::INTERNAL_SERVER_ERROR, "server_error"),
                EngineError::Upstream { status, .. } => {
                    let status = upstream_status(*status);
                    let kind = match status {
                        StatusCode::TOO_MANY_REQUESTS | StatusCode::SERVICE_UNAVAILABLE => "overloaded",
                        StatusCode::BAD_REQUEST => "invalid_request_error",
                        _ => "engine_error",
                    };
                    (status, kind)
                }
            },
        }
    }

    fn status(&self) -> StatusCode {
        self.status_and_kind().0
    }

    /// The `type` field of the body.
    pub fn kind(&self) -> &'static str {
        self.status_and_kind().1
    }

    /// The JSON body, also used for errors inside an event stream.
    pub fn body(&self) -> ErrorBody {
        ErrorBody::new(self.to_string(), self.kind())
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = self.status();
        if status.is_server_error() {
            tracing::warn!(error = %self, "request failed");
        }
        let mut response = (status, axum::Json(self.body())).into_response();
        let retry_after = match &self {
            ApiError::Engine(
                EngineError::Overloaded(_) | EngineError::Unavailable(_) | EngineError::QueueTimeout(_),
            ) => Some(1),
            // Overload of a remote engine passes through with its advice.
            ApiError::Engine(EngineError::Upstream { retry_after, .. })
                if matches!(status, StatusCode::TOO_MANY_REQUESTS | StatusCode::SERVICE_UNAVAILABLE) =>
            {
                Some(retry_after.unwrap_or(1))
            }
            _ => None,
        };
        if let Some(seconds) = retry_after {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
        }
        if matches!(self, ApiError::Unauthorized) {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        response
    }
}

/// Our status for a remote engine's error status: overload passes through,
/// a refused request is the client's 400, anything else is the engine's
/// fault (502), never ours to explain as the client's (a 401 from the engine
/// is about the engine's token, not the client's).
fn upstream_status(status: u16) -> StatusCode {
    match status {
        429 => StatusCode::TOO_MANY_REQUESTS,
        503 => StatusCode::SERVICE_UNAVAILABLE,
        400 | 404 | 413 | 422 => StatusCode::BAD_REQUEST,
        _ => StatusCode::BAD_GATEWAY,
    }
}

/// A JSON body extractor: `Content-Type: application/json` is required (a
/// web page cannot send that cross-origin without a CORS preflight, which
/// is never granted), and every rejection becomes an [`ApiError`].
pub struct JsonBody<T>(pub T);

/// Whether a `Content-Type` value is JSON: `application/json` or
/// `application/<anything>+json`, with any parameters.
fn is_json(content_type: &str) -> bool {
    let essence = content_type
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    essence == "application/json" || (essence.starts_with("application/") && essence.ends_with("+json"))
}

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for JsonBody<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let json = req
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(is_json);
        if !json {
            return Err(ApiError::UnsupportedMediaType);
        }
        let limit = req.extensions().get::<BodyLimit>().map_or(0, |l| l.0);
        let bytes = Bytes::from_request(req, state).await.map_err(|rejection| {
            if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
                ApiError::PayloadTooLarge(limit)
            } else {
                ApiError::InvalidRequest(format!("cannot read the request body: {rejection}"))
            }
        })?;
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Err(ApiError::InvalidRequest(
                "the request body is empty; send a JSON object".into(),
            ));
        }
        crate::json::from_slice(&bytes)
            .map(JsonBody)
            .map_err(|e| ApiError::InvalidRequest(format!("invalid JSON body: {e}")))
    }
}

/// The body size limit in force, so that a 413 can name it.
#[derive(Debug, Clone, Copy)]
pub struct BodyLimit(pub usize);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_content_types() {
        for ok in [
            "application/json",
            "application/json; charset=utf-8",
            "Application/JSON",
            "application/vnd.api+json",
        ] {
            assert!(is_json(ok), "{ok}");
        }
        for bad in [
            "text/plain",
            "application/x-www-form-urlencoded",
            "multipart/form-data; boundary=x",
            "",
            "json",
        ] {
            assert!(!is_json(bad), "{bad}");
        }
    }

    #[test]
    fn error_messages_in_both_shapes() {
        let openai = serde_json::to_value(ApiError::UnsupportedMediaType.body()).unwrap();
        assert_eq!(openai["error"]["type"], "unsupported_media_type");
        assert!(ErrorBody::message_of(&openai).unwrap().contains("application/json"));
        assert_eq!(
            ErrorBody::message_of(&serde_json::json!({"error": "bare"})),
            Some("bare")
        );
        assert_eq!(ErrorBody::message_of(&serde_json::json!({"ok": 1})), None);
    }
}
