//! One request to the remote engine: the chat completion request built from
//! a [`GenerateRequest`], its streamed answer read chunk by chunk into
//! events, and the engine's failures turned into [`EngineError`]s.

use super::{Inner, RemoteConfig};
use crate::engine::{ChatMessage, Completion, EngineError, Event, FinishReason, GenerateRequest};
use eventsource_stream::Eventsource;
use evolve_hud_api::openai::{
    self, ChatChunk, ChatRequest, Content, ErrorBody, JsonSchemaFormat, ResponseFormat, StreamOptions, Timings, Usage,
};
use futures_util::StreamExt;
use std::time::Instant;
use tokio::sync::mpsc;

impl Inner {
    /// The chat completion request for the engine.
    pub(super) fn body(&self, request: &GenerateRequest, messages: &[ChatMessage]) -> ChatRequest {
        let known = self.known();
        let p = &request.params;
        ChatRequest {
            model: known.model,
            messages: Some(
                messages
                    .iter()
                    .map(|m| openai::Message {
                        role: m.role.clone(),
                        content: Some(Content::Text(m.content.clone())),
                    })
                    .collect(),
            ),
            max_tokens: Some(i64::from(p.max_tokens)),
            temperature: Some(p.temperature.max(0.0)),
            top_p: Some(p.top_p),
            top_k: Some(i64::from(p.top_k)),
            min_p: Some(p.min_p),
            stop: (!p.stop.is_empty()).then(|| openai::Stop::Many(p.stop.clone())),
            // llama.cpp's "random seed" stays unset.
            seed: (p.seed != u32::MAX).then_some(u64::from(p.seed)),
            stream: true,
            stream_options: Some(StreamOptions { include_usage: true }),
            response_format: p.json_schema.as_ref().map(|schema| ResponseFormat::JsonSchema {
                json_schema: JsonSchemaFormat {
                    name: Some("answer".into()),
                    schema: Some((**schema).clone()),
                    strict: Some(true),
                },
            }),
            cache_prompt: Some(true),
            id_slot: request
                .cache_key
                .as_deref()
                .zip(known.slots)
                .map(|(key, slots)| slot_of(key, slots)),
            ..ChatRequest::default()
        }
    }

    /// Sends one request and streams its answer into `events`.
    pub(super) async fn complete(
        &self,
        body: ChatRequest,
        events: &mpsc::UnboundedSender<Event>,
    ) -> Result<Completion, EngineError> {
        let url = self.endpoint("chat/completions");
        let started = Instant::now();
        let timeout = self.config.timeout;
        let response = tokio::time::timeout(timeout, self.client.post(url.clone()).json(&body).send())
            .await
            .map_err(|_| unavailable(format!("the engine did not answer within {} ms", timeout.as_millis())))?
            .map_err(|e| unavailable(describe(e, &url)))?;
        let status = response.status();
        if !status.is_success() {
            return Err(upstream_error(response).await);
        }
        let mut stream = response.bytes_stream().eventsource();
        let mut tally = Tally::default();
        let mut first_text = None;
        loop {
            let next = tokio::time::timeout(timeout, stream.next()).await.map_err(|_| {
                unavailable(format!(
                    "the engine paused for over {} ms mid-answer",
                    timeout.as_millis()
                ))
            })?;
            let event = match next {
                None => break,
                Some(Ok(event)) => event,
                Some(Err(e)) => return Err(unavailable(format!("reading the engine's stream: {}", stream_error(e)))),
            };
            let data = event.data.trim();
            if data == "[DONE]" {
                break;
            }
            let chunk: ChatChunk = serde_json::from_str(data).map_err(|_| {
                EngineError::Backend(format!(
                    "the engine sent a stream chunk that is not JSON of a chat completion chunk: {:?}",
                    evolve_hud_api::clean::clean_line(data, 80)
                ))
            })?;
            if let Some(error) = &chunk.error {
                return Err(EngineError::Backend(format!(
                    "the engine failed mid-answer: {}",
                    error.message()
                )));
            }
            if let Some(text) = tally.take(chunk) {
                first_text.get_or_insert_with(Instant::now);
                if events.send(Event::Text(text)).is_err() {
                    break;
                }
            }
        }
        tally.finish(started, first_text)
    }
}

/// What a stream said about itself, over its chunks.
#[derive(Default)]
struct Tally {
    pieces: u32,
    finish: Option<FinishReason>,
    usage: Option<Usage>,
    timings: Option<Timings>,
}

impl Tally {
    /// Takes one chunk; returns its text.
    fn take(&mut self, chunk: ChatChunk) -> Option<String> {
        if chunk.usage.is_some() {
            self.usage = chunk.usage;
        }
        if chunk.timings.is_some() {
            self.timings = chunk.timings;
        }
        let choice = chunk.choices.into_iter().next()?;
        match choice.finish_reason {
            Some(openai::FinishReason::Length) => self.finish = Some(FinishReason::Length),
            Some(_) => self.finish = Some(FinishReason::Stop),
            None => {}
        }
        let text = choice.delta.content.filter(|t| !t.is_empty())?;
        self.pieces += 1;
        Some(text)
    }

    /// The completion, from the engine's usage and timings where it sent
    /// them (llama-server's `timings` hold the cache hits), else measured here.
    fn finish(self, started: Instant, first_text: Option<Instant>) -> Result<Completion, EngineError> {
        let finish = self
            .finish
            .ok_or_else(|| EngineError::Backend("the engine's stream ended before the answer did".into()))?;
        let usage = self.usage.unwrap_or_default();
        let timings = self.timings.unwrap_or_default();
        let cached = timings
            .cache_n
            .or_else(|| usage.prompt_tokens_details.as_ref()?.cached_tokens)
            .unwrap_or(0);
        let prompt_tokens = usage
            .prompt_tokens
            .or_else(|| Some(timings.prompt_n? + cached))
            .unwrap_or(0);
        let completion_tokens = usage.completion_tokens.or(timings.predicted_n).unwrap_or(self.pieces);
        let first = first_text.unwrap_or_else(Instant::now);
        let measured_prompt = first.duration_since(started).as_secs_f64() * 1000.0;
        let measured_generation = first.elapsed().as_secs_f64() * 1000.0;
        Ok(Completion {
            prompt_tokens,
            cached_tokens: cached.min(prompt_tokens),
            completion_tokens,
            // An engine does not say which tokens its grammar decided.
            forced_tokens: 0,
            finish_reason: finish,
            prompt_ms: timings.prompt_ms.unwrap_or(measured_prompt),
            generation_ms: timings.predicted_ms.unwrap_or(measured_generation),
        })
    }
}

/// The slot a cache key is pinned to: the same key, the same slot.
fn slot_of(key: &str, slots: u32) -> u32 {
    // FNV-1a: stable across runs and builds, unlike std's hasher.
    let hash = key.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    (hash % u64::from(slots.max(1))) as u32
}

fn unavailable(reason: String) -> EngineError {
    EngineError::Unavailable(format!("engine: {reason}"))
}

/// A reqwest error in words, naming `url` with its credentials masked.
/// reqwest never prints headers (the token, basic auth), but its text names
/// the URL with its query, so that is taken out.
pub(super) fn describe(e: reqwest::Error, url: &reqwest::Url) -> String {
    let url = crate::redact::url(url.as_str());
    let e = e.without_url();
    if e.is_connect() {
        format!("cannot connect to {url}")
    } else if e.is_timeout() {
        format!("{url} did not answer in time")
    } else {
        // reqwest's own text ("error sending request") says little; the
        // cause (a reset, a closed connection) is further down the chain.
        let mut text = format!("{url}: {e}");
        let mut source = std::error::Error::source(&e);
        while let Some(cause) = source {
            text.push_str(&format!(": {cause}"));
            source = cause.source();
        }
        text
    }
}

/// An error reading the streamed answer, without the URL that reqwest's
/// own errors carry.
fn stream_error(e: eventsource_stream::EventStreamError<reqwest::Error>) -> String {
    match e {
        eventsource_stream::EventStreamError::Transport(e) => e.without_url().to_string(),
        other => other.to_string(),
    }
}

/// An error status from the engine, with its message and `Retry-After`.
async fn upstream_error(response: reqwest::Response) -> EngineError {
    let status = response.status().as_u16();
    let retry_after = response
        .headers()
        .get(reqwest::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    let text = tokio::time::timeout(RemoteConfig::PROBE_TIMEOUT, response.text())
        .await
        .ok()
        .and_then(Result::ok)
        .unwrap_or_default();
    let message = match serde_json::from_str::<ErrorBody>(&text) {
        Ok(body) => body.error.message(),
        _ if text.trim().is_empty() => "(no message)".to_owned(),
        _ => evolve_hud_api::clean::clean_line(text.trim(), 200),
    };
    EngineError::Upstream {
        status,
        message,
        retry_after,
    }
}

/// Whether an error says the engine is unwell (it counts against the
/// breaker), rather than that a request was wrong or the engine busy.
pub(super) fn counts_against(e: &EngineError) -> bool {
    match e {
        EngineError::Unavailable(_) | EngineError::Backend(_) => true,
        EngineError::Upstream { status, .. } => *status >= 500 && *status != 503,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn chunk(value: serde_json::Value) -> ChatChunk {
        serde_json::from_value(value).expect("a chunk")
    }

    #[test]
    fn a_key_keeps_its_slot() {
        assert_eq!(slot_of("hud:questions", 4), slot_of("hud:questions", 4));
        assert!(slot_of("a", 4) < 4);
        assert_eq!(slot_of("anything", 1), 0);
        let spread: std::collections::HashSet<u32> = (0..64).map(|i| slot_of(&format!("s{i}"), 4)).collect();
        assert_eq!(spread.len(), 4, "keys spread over the slots");
    }

    #[test]
    fn usage_and_timings_fill_the_completion() {
        let mut t = Tally::default();
        assert_eq!(
            t.take(chunk(
                json!({"choices":[{"delta":{"content":"hi"},"finish_reason":null}]})
            )),
            Some("hi".into())
        );
        t.take(chunk(json!({"choices":[{"delta":{},"finish_reason":"length"}],
            "usage":{"prompt_tokens":50,"completion_tokens":3},
            "timings":{"cache_n":40,"prompt_n":10,"prompt_ms":12.5,"predicted_n":3,"predicted_ms":30.0}})));
        let done = t.finish(Instant::now(), None).expect("finished");
        assert_eq!(
            (done.prompt_tokens, done.cached_tokens, done.completion_tokens),
            (50, 40, 3)
        );
        assert_eq!(done.finish_reason, FinishReason::Length);
        assert_eq!((done.prompt_ms, done.generation_ms), (12.5, 30.0));
        assert!(
            Tally::default().finish(Instant::now(), None).is_err(),
            "a stream cut short is an error"
        );
    }
}
