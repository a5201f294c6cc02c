//! Cached prompts carried across a keep-alive release: the worker copies
//! them out of the context it frees, and the next load of the same file
//! puts them back.

use llama_cpp_2::context::session::SeqState;
use llama_cpp_2::token::LlamaToken;

/// The most KV state a release keeps for the next load (see
/// [`KeptCache`]): the HUD's questions share a start of a few hundred
/// tokens, a few MiB of state on the small models this runs.
pub(super) const KEEP_BYTES: usize = 24 << 20;

/// Cached prompts carried across a release: each slot's tokens and its KV
/// state, copied out of the context before it is freed and put back into the
/// next one, so that the first question after a reload decodes only what is
/// new. Valid only for the file it was taken from (checked at the reload).
pub struct KeptCache {
    pub(super) stamp: Option<crate::gguf::FileStamp>,
    pub(super) slots: Vec<KeptSlot>,
}

pub(super) struct KeptSlot {
    pub index: usize,
    pub key: Option<String>,
    pub tokens: Vec<LlamaToken>,
    pub state: SeqState,
}

impl KeptCache {
    pub fn bytes(&self) -> usize {
        self.slots.iter().map(|s| s.state.byte_len()).sum()
    }

    pub fn tokens(&self) -> usize {
        self.slots.iter().map(|s| s.tokens.len()).sum()
    }
}
