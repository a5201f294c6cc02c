//! Tracing set-up. `RUST_LOG` wins; the default keeps llama.cpp quiet.

use crate::cli::LogFormat;
use std::io::IsTerminal;
use tracing_subscriber::EnvFilter;

/// Default filter: our own info lines, and only warnings from anything else
/// (llama.cpp's log arrives under the targets `llama.cpp` and `ggml`).
const DEFAULT_FILTER: &str = "warn,evolve_hud=info";

/// Installs the global subscriber and routes llama.cpp's own log into tracing.
pub fn init(format: LogFormat) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(DEFAULT_FILTER));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal());
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    match format {
        LogFormat::Text => builder.finish().with(Harmless).init(),
        LogFormat::Json => builder.json().finish().with(Harmless).init(),
    }
    llama_cpp_2::send_logs_to_tracing(llama_cpp_2::LogOptions::default());
}

/// llama.cpp's warnings that the registry's models set off at every load
/// and that leave nothing to do (their tokenizer marks a few control
/// tokens as plain ones, which llama.cpp fixes as it loads): logged again
/// at debug level, shown with `RUST_LOG=llama.cpp=debug`.
const HARMLESS: &[&str] = &["control-looking token"];

/// The layer that turns [`HARMLESS`] warnings into debug lines.
struct Harmless;

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Harmless {
    fn event_enabled(&self, event: &tracing::Event<'_>, _: tracing_subscriber::layer::Context<'_, S>) -> bool {
        let meta = event.metadata();
        if *meta.level() != tracing::Level::WARN || !meta.target().starts_with("llama") {
            return true;
        }
        let mut message = Message(String::new());
        event.record(&mut message);
        if !HARMLESS.iter().any(|h| message.0.contains(h)) {
            return true;
        }
        tracing::debug!(target: "llama.cpp", "{}", message.0.trim_end());
        false
    }
}

/// An event's `message` field, as text.
struct Message(String);

impl tracing::field::Visit for Message {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            self.0 = format!("{value:?}");
        }
    }

    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        if field.name() == "message" {
            self.0 = value.to_owned();
        }
    }
}
