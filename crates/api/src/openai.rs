//! The OpenAI chat protocol on the wire, in one place: the request, the
//! answer, the streamed chunk, usage, the model list and the error body.
//! The server reads requests and writes answers with these types; the
//! remote engine writes requests and reads answers with the same ones.
//!
//! Reading is lenient, as engines differ: fields an engine may leave out
//! are optional, unknown fields are ignored, and llama-server's extensions
//! (`top_k`, `min_p`, `cache_prompt`, `id_slot`, `timings`) are included.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// `POST /v1/chat/completions`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ChatRequest {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Optional here so that a request without it gets a clear error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub messages: Option<Vec<Message>>,
    #[serde(default, alias = "max_completion_tokens", skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_p: Option<f32>,
    /// llama-server's extension.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_k: Option<i64>,
    /// llama-server's extension.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_p: Option<f32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop: Option<Stop>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    #[serde(default)]
    pub stream: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream_options: Option<StreamOptions>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_format: Option<ResponseFormat>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub n: Option<i64>,
    /// llama-server: keep the prompt's KV cache for the next request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_prompt: Option<bool>,
    /// llama-server: the slot to run in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id_slot: Option<u32>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct StreamOptions {
    #[serde(default)]
    pub include_usage: bool,
}

/// `{"type": "text"}`, `{"type": "json_object"}` or
/// `{"type": "json_schema", "json_schema": {"name", "schema", "strict"}}`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ResponseFormat {
    Text,
    JsonObject,
    JsonSchema { json_schema: JsonSchemaFormat },
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct JsonSchemaFormat {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strict: Option<bool>,
}

/// One message of a request, or the answer's message.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Message {
    pub role: String,
    #[serde(default)]
    pub content: Option<Content>,
}

/// Message content: a string, or an array of `{type: "text", text}` parts.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Content {
    Text(String),
    Parts(Vec<ContentPart>),
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ContentPart {
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Stop {
    One(String),
    Many(Vec<String>),
}

/// Why an answer ended, as the protocol names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    Stop,
    Length,
    ToolCalls,
    ContentFilter,
    /// A reason this side does not know; the answer ended all the same.
    #[serde(other)]
    Other,
}

/// A whole answer (`stream: false`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ChatCompletion {
    pub id: String,
    /// `chat.completion`.
    pub object: String,
    pub created: u64,
    pub model: String,
    pub choices: Vec<Choice>,
    pub usage: Usage,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timings: Option<Timings>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Choice {
    pub index: u32,
    pub message: Message,
    pub finish_reason: Option<FinishReason>,
}

/// One event of a streamed answer. Every field may be missing from an
/// engine's chunk; an `error` ends the stream.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ChatChunk {
    #[serde(default)]
    pub id: String,
    /// `chat.completion.chunk`.
    #[serde(default)]
    pub object: String,
    #[serde(default)]
    pub created: u64,
    #[serde(default)]
    pub model: String,
    #[serde(default)]
    pub choices: Vec<ChunkChoice>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timings: Option<Timings>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorField>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ChunkChoice {
    #[serde(default)]
    pub index: u32,
    #[serde(default)]
    pub delta: Delta,
    #[serde(default)]
    pub finish_reason: Option<FinishReason>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Delta {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
}

/// Token counts. An engine may leave any of them out.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Usage {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_tokens: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_tokens: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_tokens: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_tokens_details: Option<PromptTokensDetails>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PromptTokensDetails {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_tokens: Option<u32>,
}

/// llama-server's timings of an answer; `cache_n` counts the prompt tokens
/// its cache served.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Timings {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_n: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_n: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_per_second: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub predicted_n: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub predicted_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub predicted_per_second: Option<f64>,
}

/// `GET /v1/models`. Ollama's native list names its entries `models` and
/// their ids `name`; llama-server sends both lists.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ModelList {
    #[serde(default)]
    pub object: String,
    #[serde(default)]
    pub data: Vec<ModelEntry>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub models: Vec<ModelEntry>,
}

impl ModelList {
    /// The entries: OpenAI's list, else Ollama's.
    pub fn entries(&self) -> &[ModelEntry] {
        if self.data.is_empty() {
            &self.models
        } else {
            &self.data
        }
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ModelEntry {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Ollama's name for the id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default)]
    pub object: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owned_by: Option<String>,
    /// vLLM: the context length.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_model_len: Option<u32>,
    /// This server: what it knows of the model (GGUF metadata locally).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Value>,
}

/// An error answer: `{"error": {"message", "type", "param", "code"}}`.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ErrorBody {
    pub error: ErrorField,
}

/// The `error` of an answer or chunk: OpenAI's object, or a bare string
/// as some engines send it.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(untagged)]
pub enum ErrorField {
    Detail(ErrorDetail),
    Text(String),
    Other(Value),
}

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ErrorDetail {
    pub message: String,
    /// A kind of error, such as `invalid_request_error`.
    #[serde(rename = "type", default)]
    pub kind: Option<String>,
    #[serde(default)]
    pub param: Option<String>,
    /// This server repeats the kind; llama-server sends the HTTP status.
    #[serde(default)]
    pub code: Option<Value>,
}

impl ModelEntry {
    /// The model's id, under either name.
    pub fn id(&self) -> Option<&str> {
        self.id.as_deref().or(self.name.as_deref())
    }
}

impl ErrorField {
    /// The message, or the whole error in one clipped line.
    pub fn message(&self) -> String {
        match self {
            ErrorField::Detail(d) => d.message.clone(),
            ErrorField::Text(t) => t.clone(),
            ErrorField::Other(v) => crate::clean::clean_line(&v.to_string(), 200),
        }
    }
}

impl ErrorBody {
    /// A body of this server's: the message and its kind.
    pub fn new(message: String, kind: &str) -> ErrorBody {
        ErrorBody {
            error: ErrorField::Detail(ErrorDetail {
                message,
                kind: Some(kind.to_owned()),
                param: None,
                code: Some(Value::String(kind.to_owned())),
            }),
        }
    }

    /// The message of an error answer: OpenAI's shape, or a bare
    /// `{"error": "..."}` as some engines send it.
    pub fn message_of(value: &Value) -> Option<&str> {
        let error = value.get("error")?;
        error.as_str().or_else(|| error.get("message")?.as_str())
    }
}

impl std::fmt::Display for ErrorBody {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&serde_json::to_string(self).map_err(|_| std::fmt::Error)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_engine_chunk_reads_with_fields_left_out() {
        let chunk: ChatChunk = serde_json::from_value(json!({
            "choices": [{ "delta": { "content": "hi" }, "finish_reason": "eos_token" }],
            "timings": { "cache_n": 7, "prompt_n": 3 },
        }))
        .unwrap();
        assert_eq!(chunk.choices[0].delta.content.as_deref(), Some("hi"));
        assert_eq!(chunk.choices[0].finish_reason, Some(FinishReason::Other));
        assert_eq!(chunk.timings.unwrap().cache_n, Some(7));
        assert!(chunk.usage.is_none());
    }

    #[test]
    fn model_lists_read_as_engines_send_them() {
        let llama: ModelList = serde_json::from_value(json!({
            "models": [{ "name": "q.gguf", "model": "q.gguf" }],
            "object": "list",
            "data": [{ "id": "q.gguf", "object": "model", "meta": { "n_ctx_train": 32768 } }],
        }))
        .unwrap();
        assert_eq!(llama.entries()[0].id(), Some("q.gguf"));
        let ollama: ModelList = serde_json::from_value(json!({ "models": [{ "name": "qwen" }] })).unwrap();
        assert_eq!(ollama.entries()[0].id(), Some("qwen"));
    }

    #[test]
    fn errors_read_in_every_shape_engines_send() {
        let llama: ErrorBody =
            serde_json::from_value(json!({"error": {"code": 500, "message": "boom", "type": "server_error"}})).unwrap();
        assert_eq!(llama.error.message(), "boom");
        let bare: ErrorBody = serde_json::from_value(json!({"error": "bare"})).unwrap();
        assert_eq!(bare.error.message(), "bare");
        let odd: ErrorBody = serde_json::from_value(json!({"error": {"why": 1}})).unwrap();
        assert_eq!(odd.error.message(), r#"{"why":1}"#);
        let ours = serde_json::to_value(ErrorBody::new("no".into(), "not_found")).unwrap();
        assert_eq!(
            ours,
            json!({"error": {"message": "no", "type": "not_found", "param": null, "code": "not_found"}})
        );
        assert_eq!(ErrorBody::message_of(&ours), Some("no"));
    }

    #[test]
    fn a_request_written_for_an_engine_leaves_unset_fields_out() {
        let request = ChatRequest {
            messages: Some(vec![Message {
                role: "user".into(),
                content: Some(Content::Text("hi".into())),
            }]),
            stream: true,
            ..ChatRequest::default()
        };
        assert_eq!(
            serde_json::to_value(&request).unwrap(),
            json!({"messages": [{"role": "user", "content": "hi"}], "stream": true})
        );
    }
}
