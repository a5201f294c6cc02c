//! From a [`Prompt`] to the tokens the model decodes: the chat template and
//! the tokenizer. It runs on the caller's side, before a request is queued,
//! so a prompt that cannot fit is refused at once and never holds a place in
//! the model's queue.
//!
//! It reads the loaded model's vocabulary and template, which llama.cpp
//! never changes after load; its tokenizer is safe to call from any thread,
//! and the backend lives as long as the process (see `worker::backend`), so
//! nothing here can outlive it.

use crate::engine::{ChatMessage, EngineError, Prompt};
use llama_cpp_2::model::{LlamaChatMessage, LlamaChatTemplate, LlamaModel};
use llama_cpp_2::token::LlamaToken;
use std::sync::Arc;

/// The chat template applied to [`Prompt::Chat`].
pub(super) enum Template {
    /// The GGUF's own Jinja template, rendered as its authors wrote it (as
    /// llama-server's `--jinja` does): Qwen's default system prompt, say.
    Jinja(Box<Jinja>),
    /// llama.cpp's built-in rendering of a template it recognises.
    Gguf(LlamaChatTemplate),
    ChatMl,
}

/// A Jinja chat template with the model's special tokens.
pub(super) struct Jinja {
    env: minijinja::Environment<'static>,
    bos: String,
    eos: String,
}

impl Jinja {
    const NAME: &'static str = "chat_template";

    fn new(source: String, bos: String, eos: String) -> Result<Jinja, minijinja::Error> {
        let mut env = minijinja::Environment::new();
        // Templates written for Python's Jinja call str methods
        // (`.strip()`, `.startswith()`) and `raise_exception`. One that
        // needs more (Llama 3's `strftime_now`) fails the check at load
        // and llama.cpp's rendering is used.
        env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
        env.add_function("raise_exception", |message: String| -> Result<(), minijinja::Error> {
            Err(minijinja::Error::new(minijinja::ErrorKind::InvalidOperation, message))
        });
        env.add_template_owned(Self::NAME, source)?;
        Ok(Jinja { env, bos, eos })
    }

    fn render(&self, messages: &[ChatMessage]) -> Result<String, minijinja::Error> {
        self.env.get_template(Self::NAME)?.render(minijinja::context! {
            messages => messages,
            add_generation_prompt => true,
            bos_token => &self.bos,
            eos_token => &self.eos,
        })
    }
}

/// Turns prompts into tokens for one loaded model.
pub(super) struct Prompter {
    pub(super) model: Arc<LlamaModel>,
    pub(super) template: Template,
    /// Bytes of the vocabulary's longest token: a prompt longer than the
    /// context times this cannot fit, and is refused before any work.
    longest_token: usize,
}

/// A prompt checked against the context: its tokens, ready to decode.
#[derive(Debug)]
pub(super) struct ValidPrompt {
    pub(super) tokens: Vec<LlamaToken>,
    /// Test builds: the prompt asked the model thread to panic.
    #[cfg(feature = "fault-injection")]
    pub(super) panic: bool,
}

impl Prompter {
    /// The GGUF's Jinja template; else the template as llama.cpp applies it;
    /// else ChatML.
    pub(super) fn new(model: Arc<LlamaModel>) -> (Prompter, super::TemplateSource) {
        let longest_token = {
            let vocab = model.vocab();
            (0..model.n_vocab())
                .map(|t| vocab.token_to_piece(LlamaToken::new(t), true, None).len())
                .max()
                .unwrap_or(1)
                .max(1)
        };
        let probe = [LlamaChatMessage::new("user".into(), "hi".into()).expect("no NUL in a literal")];
        let jinja = model.chat_template(None).ok().and_then(|t| {
            let vocab = model.vocab();
            let piece = |token| String::from_utf8_lossy(&vocab.token_to_piece(token, true, None)).into_owned();
            let jinja = Jinja::new(t.to_string().ok()?, piece(vocab.bos()), piece(vocab.eos()));
            let checked = jinja.and_then(|j| {
                let hi = [ChatMessage { role: "user".into(), content: "hi".into() }];
                j.render(&hi).map(|_| j)
            });
            checked
                .inspect_err(|e| tracing::warn!(error = %e, "the GGUF's Jinja chat template cannot be rendered; using llama.cpp's"))
                .ok()
        });
        if let Some(jinja) = jinja {
            return (
                Prompter {
                    model,
                    template: Template::Jinja(Box::new(jinja)),
                    longest_token,
                },
                super::TemplateSource::Jinja,
            );
        }
        let (template, source) = match model.chat_template(None) {
            Ok(t) if model.apply_chat_template(&t, &probe, true).is_ok() => {
                (Template::Gguf(t), super::TemplateSource::Gguf)
            }
            Ok(_) => {
                tracing::warn!("llama.cpp does not recognise the GGUF's chat template; using ChatML");
                (Template::ChatMl, super::TemplateSource::ChatmlFallback)
            }
            Err(_) => {
                tracing::warn!("the GGUF has no chat template; using ChatML");
                (Template::ChatMl, super::TemplateSource::ChatmlFallback)
            }
        };
        (
            Prompter {
                model,
                template,
                longest_token,
            },
            source,
        )
    }

    /// The prompt's tokens, refused when empty or when they leave no room to
    /// generate in a context of `ctx` tokens.
    pub(super) fn validate(&self, prompt: &Prompt, ctx: u32) -> Result<ValidPrompt, EngineError> {
        // A prompt that cannot fit whatever its tokens is refused before the
        // template is rendered or anything tokenized.
        let bytes = match prompt {
            Prompt::Chat(messages) => messages.iter().map(|m| m.content.len()).sum(),
            Prompt::Raw(text) => text.len(),
        };
        if bytes > ctx as usize * self.longest_token {
            return Err(EngineError::PromptTooLong {
                bytes,
                ctx,
                longest: self.longest_token,
            });
        }
        let text = match prompt {
            Prompt::Chat(messages) => self.render(messages)?,
            Prompt::Raw(text) => text.clone(),
        };
        let tokens = self.tokenize(&text);
        if tokens.is_empty() {
            return Err(EngineError::InvalidInput("the prompt is empty".into()));
        }
        if tokens.len() >= ctx as usize {
            return Err(EngineError::ContextExceeded {
                prompt: tokens.len() as u32,
                ctx,
            });
        }
        Ok(ValidPrompt {
            tokens,
            #[cfg(feature = "fault-injection")]
            panic: text.contains("<<evolve-hud:panic>>"),
        })
    }

    /// Tokens of `text` without BOS or special tokens: the HUD's budget count.
    pub(super) fn count(&self, text: &str) -> usize {
        self.model.vocab().tokenize(text.as_bytes(), false, false).len()
    }

    fn render(&self, messages: &[ChatMessage]) -> Result<String, EngineError> {
        match &self.template {
            Template::Jinja(jinja) => jinja
                .render(messages)
                .map_err(|e| EngineError::InvalidInput(format!("the model's chat template refused the messages: {e}"))),
            Template::Gguf(template) => {
                let chat = messages
                    .iter()
                    .map(|m| LlamaChatMessage::new(m.role.clone(), m.content.clone()))
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|_| EngineError::InvalidInput("message text must not contain NUL characters".into()))?;
                self.model
                    .apply_chat_template(template, &chat, true)
                    .map_err(|e| EngineError::Backend(format!("applying the chat template: {e}")))
            }
            Template::ChatMl => Ok(chatml(messages)),
        }
    }

    /// Tokenizes with special tokens parsed, adding BOS only where the model's
    /// metadata asks for it and the text does not already start with it.
    fn tokenize(&self, text: &str) -> Vec<LlamaToken> {
        let vocab = self.model.vocab();
        let add_bos = vocab.should_add_bos() && {
            let bos = vocab.token_to_piece(vocab.bos(), true, None);
            bos.is_empty() || !text.as_bytes().starts_with(&bos)
        };
        vocab.tokenize(text.as_bytes(), add_bos, true)
    }
}

/// ChatML, the fallback template.
fn chatml(messages: &[ChatMessage]) -> String {
    let mut out = String::new();
    for m in messages {
        out.push_str(&format!("<|im_start|>{}\n{}<|im_end|>\n", m.role, m.content));
    }
    out.push_str("<|im_start|>assistant\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chatml_ends_with_the_assistant_turn() {
        let text = chatml(&[ChatMessage {
            role: "user".into(),
            content: "hi".into(),
        }]);
        assert_eq!(text, "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n");
    }
}
