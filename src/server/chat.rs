//! The OpenAI-compatible API: `/v1/chat/completions` and `/v1/models`.

use super::error::{ApiError, JsonBody};
use super::AppState;
use crate::engine::{
    ChatMessage, Completion, EngineError, Event, FinishReason, GenerateRequest, Prompt, SamplingParams,
};
use axum::extract::State;
use axum::response::sse::{Event as SseEvent, Sse};
use axum::response::{IntoResponse, Response};
use axum::Json;
use evolve_hud_api::openai::{
    self, ChatChunk, ChatCompletion, ChatRequest, Choice, ChunkChoice, Content, Delta, Message, ModelEntry, ModelList,
    PromptTokensDetails, ResponseFormat, Stop, Timings, Usage,
};
use futures_util::stream::{self, Stream, StreamExt};
use serde_json::{json, Value};
use std::convert::Infallible;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};
use tokio::sync::mpsc::UnboundedReceiver;
use tokio_stream::wrappers::UnboundedReceiverStream;

/// `max_tokens` when the request names none.
pub const DEFAULT_MAX_TOKENS: u32 = 512;
const MAX_STOPS: usize = 4;

/// Checks a chat completion request and turns it into the engine's. Fields
/// the server does not use (`user`, penalties, ...) are accepted and
/// ignored; `response_format` holds the output to JSON, or to a JSON schema,
/// by a grammar. Offered `tools` are never called: the answer is text, which
/// `tool_choice` `auto` (the default) allows; a request that demands a call
/// (`required`, or a named function) is refused, as is `n` above 1, rather
/// than answered with something else than asked for. `max_tokens` is capped
/// at the engine's context size where it is known.
pub fn generate_request(request: ChatRequest, ctx: Option<u32>) -> Result<GenerateRequest, ApiError> {
    let ctx = ctx.unwrap_or(u32::MAX);
    let invalid = |m: String| Err(ApiError::InvalidRequest(m));
    let messages = match request.messages {
        None => return invalid("`messages` is required".into()),
        Some(m) if m.is_empty() => return invalid("`messages` must hold at least one message".into()),
        Some(m) => m,
    };
    let messages = messages
        .into_iter()
        .enumerate()
        .map(|(i, m)| chat_message(m, i))
        .collect::<Result<Vec<_>, _>>()?;
    // Like llama-server and Ollama, a limit past the context is capped at
    // it (clients such as OpenCode ask for 32000): generation stops when
    // the context is full.
    let max_tokens = match request.max_tokens {
        None => DEFAULT_MAX_TOKENS.min(ctx),
        Some(n) if n < 1 => return invalid(format!("`max_tokens` must be at least 1, got {n}")),
        Some(n) => n.min(i64::from(ctx)) as u32,
    };
    let offers_tools = request.tools.as_ref().is_some_and(|t| !t.is_empty());
    let demands_call = match &request.tool_choice {
        None | Some(Value::Null) => false,
        Some(Value::String(choice)) => choice != "auto" && choice != "none",
        Some(_) => true,
    };
    if offers_tools && demands_call {
        return invalid(
            "`tool_choice`: this server answers in text and never calls tools; use \"auto\" or \"none\"".into(),
        );
    }
    if request.n.is_some_and(|n| n != 1) {
        return invalid("`n`: this server gives one choice per request".into());
    }
    let json_schema = match &request.response_format {
        Some(format) => response_schema(format)?,
        None => None,
    };
    let temperature = request.temperature.unwrap_or(SamplingParams::TEMPERATURE);
    if !(0.0..=2.0).contains(&temperature) {
        return invalid(format!("`temperature` must be between 0 and 2, got {temperature}"));
    }
    let top_p = request.top_p.unwrap_or(SamplingParams::TOP_P);
    if !(top_p > 0.0 && top_p <= 1.0) {
        return invalid(format!("`top_p` must be in (0, 1], got {top_p}"));
    }
    let top_k = match request.top_k {
        None => SamplingParams::TOP_K,
        Some(k) if k <= 0 => 0,
        Some(k) => u32::try_from(k).unwrap_or(u32::MAX),
    };
    let min_p = request.min_p.unwrap_or(SamplingParams::MIN_P);
    if !(0.0..=1.0).contains(&min_p) {
        return invalid(format!("`min_p` must be between 0 and 1, got {min_p}"));
    }
    let stop = match request.stop {
        None => Vec::new(),
        Some(Stop::One(s)) => vec![s],
        Some(Stop::Many(v)) => v,
    };
    if stop.len() > MAX_STOPS {
        return invalid(format!("`stop` may hold at most {MAX_STOPS} strings"));
    }
    // llama.cpp treats u32::MAX as "pick a random seed".
    let seed = request.seed.map_or(u32::MAX, |s| (s % u64::from(u32::MAX)) as u32);
    Ok(GenerateRequest {
        prompt: Prompt::Chat(messages),
        params: SamplingParams {
            max_tokens,
            temperature,
            top_k,
            top_p,
            min_p,
            seed,
            stop,
            json_schema,
        },
        cache_key: None,
        started: None,
    })
}

/// The JSON schema a `response_format` holds the output to, if any.
fn response_schema(format: &ResponseFormat) -> Result<Option<Arc<Value>>, ApiError> {
    let schema = match format {
        ResponseFormat::Text => return Ok(None),
        ResponseFormat::JsonObject => json!({ "type": "object" }),
        ResponseFormat::JsonSchema { json_schema } => match &json_schema.schema {
            Some(schema) => schema.clone(),
            None => {
                return Err(ApiError::InvalidRequest(
                    "`response_format.json_schema.schema` is required".into(),
                ))
            }
        },
    };
    if !schema.is_object() {
        return Err(ApiError::InvalidRequest(
            "`response_format.json_schema.schema` must be a JSON schema object".into(),
        ));
    }
    Ok(Some(Arc::new(schema)))
}

/// One message of a request as the chat template gets it.
fn chat_message(message: Message, index: usize) -> Result<ChatMessage, ApiError> {
    let role = match message.role.as_str() {
        "system" | "developer" => "system",
        "user" => "user",
        "assistant" => "assistant",
        "tool" => "tool",
        other => {
            return Err(ApiError::InvalidRequest(format!(
                "messages[{index}].role {other:?} is not one of system, developer, user, assistant, tool"
            )))
        }
    };
    let content = match message.content {
        None => String::new(),
        Some(Content::Text(t)) => t,
        Some(Content::Parts(parts)) => {
            let mut text = String::new();
            for part in parts {
                match (part.kind.as_str(), part.text) {
                    ("text", Some(t)) => text.push_str(&t),
                    (kind, _) => {
                        return Err(ApiError::InvalidRequest(format!(
                            "messages[{index}] has a content part of type {kind:?}; only text parts are supported"
                        )))
                    }
                }
            }
            text
        }
    };
    Ok(ChatMessage {
        role: role.into(),
        content,
    })
}

fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

fn finish_reason(f: FinishReason) -> openai::FinishReason {
    match f {
        FinishReason::Stop => openai::FinishReason::Stop,
        FinishReason::Length | FinishReason::Cancelled => openai::FinishReason::Length,
    }
}

fn usage(c: &Completion) -> Usage {
    Usage {
        prompt_tokens: Some(c.prompt_tokens),
        completion_tokens: Some(c.completion_tokens),
        total_tokens: Some(c.prompt_tokens + c.completion_tokens),
        prompt_tokens_details: Some(PromptTokensDetails {
            cached_tokens: Some(c.cached_tokens),
        }),
    }
}

/// llama-server's names for the same figures.
fn timings(c: &Completion) -> Timings {
    Timings {
        cache_n: None,
        prompt_n: Some(c.prompt_tokens - c.cached_tokens),
        prompt_ms: Some(c.prompt_ms),
        prompt_per_second: Some(c.prompt_tokens_per_second()),
        predicted_n: Some(c.completion_tokens),
        predicted_ms: Some(c.generation_ms),
        predicted_per_second: Some(c.generation_tokens_per_second()),
    }
}

/// `POST /v1/chat/completions`.
#[tracing::instrument(skip_all, fields(stream))]
pub async fn chat_completions(
    State(state): State<AppState>,
    JsonBody(request): JsonBody<ChatRequest>,
) -> Result<Response, ApiError> {
    let stream = request.stream;
    tracing::Span::current().record("stream", stream);
    let mut generate = generate_request(request, state.engine.info().ctx)?;
    let started = Arc::new(AtomicBool::new(false));
    generate.started = Some(started.clone());
    // A prompt of up to --max-body bytes is rendered and tokenized off the
    // async workers.
    let mut events = state.engine.submit(generate).await?;
    let id = state.engine.telemetry().completion_id();
    let created = now();
    let model = state.model_name();

    // Wait for the first event, so that a request that fails before any text
    // (prompt too long, say) gets a plain HTTP error even when streaming.
    // A request still queued after `queue_timeout` is given up (dropping
    // the receiver makes the model thread skip it) and answered 503 with
    // Retry-After; one the model has started waits for its first event.
    let first = match tokio::time::timeout(state.queue_timeout, events.recv()).await {
        Ok(first) => first,
        Err(_) if !started.load(Ordering::Acquire) => {
            return Err(EngineError::QueueTimeout(state.queue_timeout.as_millis() as u64).into())
        }
        Err(_) => events.recv().await,
    }
    .ok_or_else(model_gone)?;
    if let Event::Failed(e) = first {
        return Err(e.into());
    }
    if stream {
        return Ok(sse(id, created, model, first, events, state.engine.clone()).into_response());
    }

    let mut text = String::new();
    let mut next = Some(first);
    loop {
        match next.take() {
            Some(Event::Text(t)) => text.push_str(&t),
            Some(Event::Done(done)) => {
                if done.finish_reason == FinishReason::Cancelled {
                    return Err(shutting_down().into());
                }
                done.record("chat", state.engine.telemetry());
                return Ok(Json(ChatCompletion {
                    id,
                    object: "chat.completion".into(),
                    created,
                    model,
                    choices: vec![Choice {
                        index: 0,
                        message: openai::Message {
                            role: "assistant".into(),
                            content: Some(Content::Text(text)),
                        },
                        finish_reason: Some(finish_reason(done.finish_reason)),
                    }],
                    usage: usage(&done),
                    timings: Some(timings(&done)),
                })
                .into_response());
            }
            Some(Event::Failed(e)) => return Err(e.into()),
            None => return Err(model_gone().into()),
        }
        next = Some(events.recv().await.ok_or_else(model_gone)?);
    }
}

/// The events ended without a final one: the model thread is gone.
fn model_gone() -> EngineError {
    EngineError::Unavailable("the model thread stopped".into())
}

/// The generation was cancelled because the server is stopping.
fn shutting_down() -> EngineError {
    EngineError::Unavailable("the server is shutting down".into())
}

/// The event stream of a streamed completion: a role chunk, content chunks,
/// a final chunk with `finish_reason`, `usage` and `timings`, then `[DONE]`.
/// Dropping the stream (client gone) drops the receiver, which cancels the
/// generation on the model thread.
fn sse(
    id: String,
    created: u64,
    model: String,
    first: Event,
    rest: UnboundedReceiver<Event>,
    engine: crate::engine::Engine,
) -> Sse<impl Stream<Item = Result<SseEvent, Infallible>>> {
    let chunk = move |delta: Delta, finish: Option<openai::FinishReason>, done: Option<&Completion>| {
        let c = ChatChunk {
            id: id.clone(),
            object: "chat.completion.chunk".into(),
            created,
            model: model.clone(),
            choices: vec![ChunkChoice {
                index: 0,
                delta,
                finish_reason: finish,
            }],
            usage: done.map(usage),
            timings: done.map(timings),
            error: None,
        };
        SseEvent::default().json_data(c).unwrap_or_default()
    };
    let text = |t: String| Delta {
        role: None,
        content: Some(t),
    };
    let role = chunk(
        Delta {
            role: Some("assistant".into()),
            content: Some(String::new()),
        },
        None,
        None,
    );
    // A stream that ends without a final event lost the model thread.
    let gone = Event::Failed(model_gone());
    let events = stream::once(async move { first })
        .chain(UnboundedReceiverStream::new(rest))
        .chain(stream::once(async move { gone }));
    let body = events
        .map(move |event| match event {
            Event::Text(t) => (chunk(text(t), None, None), false),
            Event::Done(done) if done.finish_reason == FinishReason::Cancelled => (
                SseEvent::default().data(ApiError::from(shutting_down()).body().to_string()),
                true,
            ),
            Event::Done(done) => {
                done.record("chat", engine.telemetry());
                let finish = Some(finish_reason(done.finish_reason));
                (chunk(Delta::default(), finish, Some(&done)), true)
            }
            Event::Failed(e) => (SseEvent::default().data(ApiError::from(e).body().to_string()), true),
        })
        // Stop after the final event; then `[DONE]`.
        .scan(false, |ended, (event, last)| {
            if *ended {
                return std::future::ready(None);
            }
            *ended = last;
            std::future::ready(Some(event))
        });
    let done = stream::once(async { SseEvent::default().data("[DONE]") });
    Sse::new(stream::once(async move { role }).chain(body).chain(done).map(Ok))
}

/// `GET /v1/models`.
pub async fn models(State(state): State<AppState>) -> Json<ModelList> {
    let meta = match state.engine.details().model_meta {
        Some(info) => serde_json::to_value(&*info),
        None => serde_json::to_value(state.engine.info()),
    };
    Json(ModelList {
        object: "list".into(),
        data: vec![ModelEntry {
            id: Some(state.model_name()),
            name: None,
            object: "model".into(),
            created: Some(state.started),
            owned_by: Some("evolve-hud".into()),
            max_model_len: None,
            meta: meta.ok(),
        }],
        models: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(body: &str) -> Result<GenerateRequest, ApiError> {
        let request = serde_json::from_str::<ChatRequest>(body).map_err(|e| ApiError::InvalidRequest(e.to_string()))?;
        generate_request(request, Some(4096))
    }

    #[test]
    fn defaults() {
        let g = parse(r#"{"messages":[{"role":"user","content":"hi"}]}"#).unwrap();
        assert_eq!(g.params.max_tokens, DEFAULT_MAX_TOKENS);
        // llama-server's sampling defaults.
        assert_eq!(
            (g.params.temperature, g.params.top_k, g.params.top_p, g.params.min_p),
            (0.8, 40, 0.95, 0.05)
        );
        let g = parse(r#"{"messages":[{"role":"user","content":"hi"}],"top_k":0,"min_p":0.1}"#).unwrap();
        assert_eq!((g.params.top_k, g.params.min_p), (0, 0.1));
        assert!(parse(r#"{"messages":[{"role":"user","content":"hi"}],"min_p":2}"#).is_err());
        assert_eq!(g.params.seed, u32::MAX);
        assert_eq!(g.params.json_schema, None);
    }

    #[test]
    fn tools_are_accepted_only_when_a_call_is_not_demanded() {
        for body in [
            r#"{"messages":[{"role":"user","content":"hi"}],"tools":[]}"#,
            r#"{"messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f"}}]}"#,
            r#"{"messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":"auto","n":1}"#,
            r#"{"messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":"none"}"#,
        ] {
            assert!(parse(body).is_ok(), "{body}");
        }
    }

    #[test]
    fn long_limits_are_capped_at_the_context() {
        let g = parse(r#"{"messages":[{"role":"user","content":"hi"}],"max_tokens":32000}"#).unwrap();
        assert_eq!(g.params.max_tokens, 4096);
    }

    #[test]
    fn response_formats_become_grammars() {
        let g =
            parse(r#"{"messages":[{"role":"user","content":"hi"}],"response_format":{"type":"json_object"}}"#).unwrap();
        assert_eq!(g.params.json_schema.as_deref(), Some(&json!({"type": "object"})));
        let schema = r#"{"type":"json_schema","json_schema":{"name":"n","schema":{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}}}"#;
        let g = parse(&format!(
            r#"{{"messages":[{{"role":"user","content":"hi"}}],"response_format":{schema}}}"#
        ))
        .unwrap();
        assert!(g
            .params
            .json_schema
            .is_some_and(|s| s["properties"]["n"]["type"] == "integer"));
        let g = parse(r#"{"messages":[{"role":"user","content":"hi"}],"response_format":{"type":"text"}}"#).unwrap();
        assert_eq!(g.params.json_schema, None);
    }

    #[test]
    fn content_parts_and_roles() {
        let g = parse(r#"{"messages":[{"role":"developer","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]},{"role":"assistant","content":null}]}"#).unwrap();
        let Prompt::Chat(m) = g.prompt else {
            panic!("chat prompt")
        };
        assert_eq!(
            m[0],
            ChatMessage {
                role: "system".into(),
                content: "ab".into()
            }
        );
        assert_eq!(m[1].content, "");
    }

    #[test]
    fn rejections() {
        for body in [
            r#"{}"#,
            r#"{"messages":[]}"#,
            r#"{"messages":[{"role":"wizard","content":"x"}]}"#,
            r#"{"messages":[{"role":"user","content":[{"type":"image_url"}]}]}"#,
            r#"{"messages":[{"role":"user","content":"x"}],"max_tokens":0}"#,
            r#"{"messages":[{"role":"user","content":"x"}],"max_tokens":-5}"#,
            r#"{"messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_schema","json_schema":{"name":"x"}}}"#,
            r#"{"messages":[{"role":"user","content":"x"}],"response_format":{"type":"xml"}}"#,
            r#"{"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":"required"}"#,
            r#"{"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":{"type":"function","function":{"name":"f"}}}"#,
            r#"{"messages":[{"role":"user","content":"x"}],"n":2}"#,
            r#"{"messages":[{"role":"user","content":"x"}],"temperature":3}"#,
            r#"{"messages":[{"role":"user","content":"x"}],"top_p":0}"#,
            r#"{"messages":[{"role":"user","content":"x"}],"stop":["a","b","c","d","e"]}"#,
            r#"{"messages":"hi"}"#,
        ] {
            assert!(matches!(parse(body), Err(ApiError::InvalidRequest(_))), "{body}");
        }
    }
}
