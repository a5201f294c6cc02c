//! Sampling for one generation: llama.cpp's sampler chain, and the
//! grammar a JSON schema becomes, checked token by token.

use crate::engine::{EngineError, SamplingParams};
use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::data::LlamaTokenData;
use llama_cpp_2::token::data_array::LlamaTokenDataArray;
use llama_cpp_2::token::LlamaToken;

/// Sampling for one generation: the chain of `params`, and the grammar the
/// output must follow, if any.
pub(super) struct Sampler {
    chain: LlamaSampler,
    grammar: Option<LlamaSampler>,
}

impl Sampler {
    pub(super) fn new(model: &LlamaModel, params: &SamplingParams) -> Result<Sampler, EngineError> {
        let chain = if params.temperature <= 0.0 {
            LlamaSampler::greedy()
        } else {
            let mut chain = Vec::with_capacity(5);
            if params.top_k > 0 {
                chain.push(LlamaSampler::top_k(params.top_k as i32));
            }
            chain.push(LlamaSampler::top_p(params.top_p, 1));
            if params.min_p > 0.0 {
                chain.push(LlamaSampler::min_p(params.min_p, 1));
            }
            chain.push(LlamaSampler::temp(params.temperature));
            chain.push(LlamaSampler::dist(params.seed));
            LlamaSampler::chain_simple(chain)
        };
        let grammar = match &params.json_schema {
            Some(schema) => {
                let grammar = super::json_schema_grammar(schema)?;
                Some(
                    LlamaSampler::grammar(model, &grammar, "root")
                        .map_err(|e| EngineError::InvalidInput(format!("the grammar was refused: {e}")))?,
                )
            }
            None => None,
        };
        Ok(Sampler { chain, grammar })
    }

    /// Picks the next token from the logits of output `idx` and accepts it.
    /// With a grammar, the chain picks first and the grammar checks only
    /// that token; the whole vocabulary goes through the grammar only when
    /// the pick breaks it (checking every token each step is slow for large
    /// vocabularies, 151k for Qwen).
    pub(super) fn sample(&mut self, ctx: &LlamaContext, idx: i32) -> LlamaToken {
        let Some(grammar) = &mut self.grammar else {
            return self.chain.sample(ctx, idx);
        };
        let mut candidates = ctx.token_data_array_ith(idx);
        candidates.apply_sampler(&mut self.chain);
        let picked = candidates.selected_token();
        let allowed = picked.is_some_and(|token| allows(grammar, token));
        let token = match picked {
            Some(token) if allowed => token,
            _ => {
                let mut candidates = ctx.token_data_array_ith(idx);
                candidates.apply_sampler(grammar);
                candidates.apply_sampler(&mut self.chain);
                // The grammar leaves at least the end of generation when it
                // is complete, so the chain always has a pick.
                candidates.selected_token().unwrap_or(LlamaToken(0))
            }
        };
        grammar.accept(token);
        self.chain.accept(token);
        token
    }

    /// Accepts `token` without sampling it, as the grammar's only choice
    /// (see [`Forced`]), if the grammar allows it.
    pub(super) fn accept_forced(&mut self, token: LlamaToken) -> bool {
        let Some(grammar) = &mut self.grammar else {
            return false;
        };
        if !allows(grammar, token) {
            return false;
        }
        grammar.accept(token);
        self.chain.accept(token);
        true
    }
}

/// Whether `grammar`, in its state now, allows `token` next.
fn allows(grammar: &mut LlamaSampler, token: LlamaToken) -> bool {
    let mut one = LlamaTokenDataArray::new(vec![LlamaTokenData::new(token, 1.0, 0.0)], false);
    one.apply_sampler(grammar);
    one.data[0].logit().is_finite()
}

/// Tokens whose pieces spell exactly `text`, or none when the vocabulary's
/// tokenizer changes the text (a leading space, say).
pub(super) fn spelling(vocab: &llama_cpp_2::vocab::LlamaVocab<'_>, text: &str) -> Vec<LlamaToken> {
    let tokens = vocab.tokenize(text.as_bytes(), false, false);
    let spelled: Vec<u8> = tokens
        .iter()
        .flat_map(|&t| vocab.token_to_piece(t, false, None))
        .collect();
    if spelled == text.as_bytes() {
        tokens
    } else {
        Vec::new()
    }
}
