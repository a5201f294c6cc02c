//! Model work as the HUD, the chat API and the compaction texts ask for it,
//! and as every engine, local or remote, takes it: the prompt, how to
//! sample, and which cache slot to keep it in.

use serde::Serialize;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// One message of a chat, as the chat template receives it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ChatMessage {
    pub role: String,
    pub content: String,
}

/// What to feed the model.
#[derive(Debug, Clone)]
pub enum Prompt {
    /// Rendered through the model's chat template, ending with the assistant's turn.
    Chat(Vec<ChatMessage>),
    /// Used as it is (special tokens in it are parsed). Local engine only.
    Raw(String),
}

/// How to sample. `temperature <= 0` is greedy. The chain is llama.cpp's
/// order: top-k, top-p, min-p, temperature, then the draw.
#[derive(Debug, Clone, PartialEq)]
pub struct SamplingParams {
    pub max_tokens: u32,
    pub temperature: f32,
    /// 0: off.
    pub top_k: u32,
    pub top_p: f32,
    /// 0: off.
    pub min_p: f32,
    pub seed: u32,
    pub stop: Vec<String>,
    /// A JSON schema the output must follow: a llama.cpp grammar locally,
    /// `response_format` for a remote engine.
    pub json_schema: Option<Arc<serde_json::Value>>,
}

impl SamplingParams {
    /// llama-server's defaults, which chat clients expect of a local model.
    pub const TEMPERATURE: f32 = 0.8;
    pub const TOP_K: u32 = 40;
    pub const TOP_P: f32 = 0.95;
    pub const MIN_P: f32 = 0.05;
}

/// A generation job.
#[derive(Debug, Clone)]
pub struct GenerateRequest {
    pub prompt: Prompt,
    pub params: SamplingParams,
    /// Keeps this prompt's KV cache in a slot of its own (the HUD's
    /// questions, say); without a key the slot with the longest shared
    /// prefix is reused. A remote llama-server is asked for a slot by it.
    pub cache_key: Option<String>,
    /// Set when the engine takes the request from its queue.
    pub started: Option<Arc<AtomicBool>>,
}
