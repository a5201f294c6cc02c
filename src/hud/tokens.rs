//! Counting the HUD's tokens the way the agent's main model does.

use crate::engine::Engine;
use std::path::Path;

/// Counts HUD tokens the way the agent's main model does.
pub enum TokenCounter {
    /// A `tokenizer.json` of the main model.
    Tokenizer(Box<tokenizers::Tokenizer>),
    /// The engine's vocabulary where it can count here (the local model);
    /// else an estimate of one token per 3 bytes, on the high side for
    /// code and English, so the HUD stays within its budget.
    Engine(Engine),
}

impl TokenCounter {
    /// Loads a `tokenizer.json`.
    pub fn from_file(path: &Path) -> anyhow::Result<Self> {
        let t = tokenizers::Tokenizer::from_file(path)
            .map_err(|e| anyhow::anyhow!("cannot load tokenizer {}: {e}", path.display()))?;
        Ok(TokenCounter::Tokenizer(Box::new(t)))
    }

    /// One token per whitespace-separated word: a stand-in for a tokenizer,
    /// so tests and fuzzing exercise the HUD's budget without a model file.
    pub fn words() -> Self {
        use tokenizers::models::wordlevel::WordLevel;
        use tokenizers::pre_tokenizers::whitespace::WhitespaceSplit;
        let model = WordLevel::builder()
            .vocab([("[UNK]".to_owned(), 0)].into_iter().collect())
            .unk_token("[UNK]".to_owned())
            .build()
            .expect("a one-word vocabulary builds: this is a bug");
        let mut tokenizer = tokenizers::Tokenizer::new(model);
        tokenizer.with_pre_tokenizer(Some(WhitespaceSplit));
        TokenCounter::Tokenizer(Box::new(tokenizer))
    }

    pub fn count(&self, text: &str) -> usize {
        match self {
            TokenCounter::Tokenizer(t) => t
                .encode(text, false)
                .map_or_else(|_| text.len().div_ceil(3), |e| e.len()),
            TokenCounter::Engine(e) => e.count_tokens(text).unwrap_or_else(|| text.len().div_ceil(3)),
        }
    }

    /// Whether counts are real tokens now, not the estimate (the local
    /// model may still be loading): a HUD rendered with the estimate is
    /// rendered again once they are.
    pub fn exact(&self) -> bool {
        match self {
            TokenCounter::Tokenizer(_) => true,
            TokenCounter::Engine(e) => e.count_tokens("").is_some(),
        }
    }
}
