//! A scripted fake engine, and the whole API served in-process on it: for
//! tests where the model is not the subject (HTTP behaviour, limits,
//! security, error mapping, how the HUD treats an answer). They run in
//! milliseconds; the real model is kept for the tests where it matters.

use evolve_hud::engine::{
    Backend, ChatMessage, Completion, Details, Engine, EngineError, EngineInfo, Event, FinishReason, GenerateRequest,
    HealthState, Prompt,
};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc;

/// Answers scripted one per request; with none left, "unavailable". The
/// HUD's warm-up (one token, no schema) is answered at once and kept apart.
/// A held answer sends its start, then waits for `release` before it sends
/// its end.
#[derive(Default)]
pub struct Script {
    pub answers: Mutex<VecDeque<Result<String, EngineError>>>,
    pub held: Mutex<Option<(String, Result<String, EngineError>)>>,
    pub release: tokio::sync::Notify,
    pub calls: AtomicUsize,
    /// The prompts of the warm-ups and of the questions, in order.
    pub warmups: Mutex<Vec<Vec<ChatMessage>>>,
    pub questions: Mutex<Vec<Vec<ChatMessage>>>,
}

impl Script {
    pub fn push(&self, answer: Result<&str, EngineError>) {
        self.answers.lock().unwrap().push_back(answer.map(str::to_owned));
    }

    /// The next answer: `start`, then `end` once released.
    pub fn hold(&self, start: &str, end: Result<&str, EngineError>) {
        *self.held.lock().unwrap() = Some((start.to_owned(), end.map(str::to_owned)));
    }
}

pub fn done() -> Event {
    Event::Done(Completion {
        prompt_tokens: 10,
        cached_tokens: 0,
        completion_tokens: 5,
        forced_tokens: 0,
        finish_reason: FinishReason::Stop,
        prompt_ms: 1.0,
        generation_ms: 1.0,
    })
}

pub struct Fake(pub Arc<Script>);

impl Backend for Fake {
    fn generate(&self, request: GenerateRequest) -> Result<mpsc::UnboundedReceiver<Event>, EngineError> {
        let warmup = request.params.json_schema.is_none() && request.params.max_tokens == 1;
        if let Prompt::Chat(messages) = request.prompt {
            let asked = if warmup { &self.0.warmups } else { &self.0.questions };
            asked.lock().unwrap().push(messages);
        }
        let (tx, rx) = mpsc::unbounded_channel();
        if !warmup {
            self.0.calls.fetch_add(1, Ordering::SeqCst);
        }
        let held = (!warmup).then(|| self.0.held.lock().unwrap().take()).flatten();
        if let Some((start, end)) = held {
            let script = self.0.clone();
            tokio::spawn(async move {
                let _ = tx.send(Event::Text(start));
                script.release.notified().await;
                let _ = tx.send(match end {
                    Ok(text) => Event::Text(text),
                    Err(e) => Event::Failed(e),
                });
                let _ = tx.send(done());
            });
            return Ok(rx);
        }
        let text = if warmup {
            "{".to_owned()
        } else {
            let answer = self.0.answers.lock().unwrap().pop_front();
            answer.unwrap_or_else(|| Err(EngineError::Unavailable("nothing scripted".into())))?
        };
        let _ = tx.send(Event::Text(text));
        let _ = tx.send(done());
        Ok(rx)
    }
    fn health(&self) -> HealthState {
        HealthState::Ready
    }
    fn watch_health(&self) -> tokio::sync::watch::Receiver<HealthState> {
        tokio::sync::watch::channel(HealthState::Ready).1
    }
    fn info(&self) -> EngineInfo {
        EngineInfo {
            kind: "fake",
            model: "fake".into(),
            ctx: Some(4096),
        }
    }
    fn details(&self) -> Details {
        Details::default()
    }
    fn count_tokens(&self, _text: &str) -> Option<usize> {
        None
    }
    fn queued(&self) -> usize {
        0
    }
    fn begin_shutdown(&self) {}
}

/// The API on the scripted engine, in this process on a free port, built
/// by the same code and from the same flags as `evolve-hud serve`.
pub struct InProcess {
    pub base: String,
    pub script: Arc<Script>,
    shutdown: tokio_util::sync::CancellationToken,
}

impl InProcess {
    /// Serves with `serve`'s flags (`--model` and engine flags aside).
    pub async fn start(flags: &[&str]) -> InProcess {
        InProcess::start_with(Arc::default(), flags).await
    }

    /// [`InProcess::start`] on a given script.
    pub async fn start_with(script: Arc<Script>, flags: &[&str]) -> InProcess {
        // The test sidecars' secret, unless the flags name another (the
        // user's own is never read or made).
        let token_file = super::config_home().join("evolve-hud/token");
        let token_file = token_file.to_str().expect("a UTF-8 path");
        let own = flags.iter().any(|f| f.starts_with("--auth-token") || *f == "--no-auth");
        let default: &[&str] = if own { &[] } else { &["--auth-token-file", token_file] };
        // Bound first, so the server knows its port (its identity proof names it).
        let listener = evolve_hud::server::listen::Listeners::bind("127.0.0.1:0".parse().expect("an address"))
            .await
            .expect("a free port");
        let port = listener.local_addr().expect("bound").port().to_string();
        let args = ["evolve-hud", "serve", "--port", &port]
            .into_iter()
            .chain(flags.iter().copied())
            .chain(default.iter().copied());
        let cli = <evolve_hud::cli::Cli as clap::Parser>::try_parse_from(args).expect("serve's flags");
        let evolve_hud::cli::Command::Serve(config) = cli.command else {
            unreachable!("serve was given")
        };
        let api = config.api(None).expect("the API's settings");
        let metrics = metrics_exporter_prometheus::PrometheusBuilder::new()
            .build_recorder()
            .handle();
        let engine = Engine::new(Fake(script.clone()));
        let (app, shutdown) = evolve_hud::server::app(api, metrics, engine);
        let base = format!("http://{}", listener.local_addr().expect("bound"));
        let ended = shutdown.clone();
        let token_required = !flags.contains(&"--no-auth");
        tokio::spawn(evolve_hud::server::listen::serve(listener, app, token_required, ended));
        InProcess { base, script, shutdown }
    }
}

impl Drop for InProcess {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

impl super::Base for InProcess {
    fn base(&self) -> &str {
        &self.base
    }
}
