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
        .with_writer(|| LogLine(Vec::new()))
        .with_ansi(std::io::stderr().is_terminal());
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    match format {
        LogFormat::Text => builder.finish().with(Harmless).init(),
        LogFormat::Json => builder.json().finish().with(Harmless).init(),
    }
    llama_cpp_2::send_logs_to_tracing(llama_cpp_2::LogOptions::default());
}

/// The progress line on a terminal's stderr ([`Progress`]), empty when
/// none is shown: log lines go above it, never onto it.
static PROGRESS: std::sync::Mutex<String> = std::sync::Mutex::new(String::new());

/// The line of one log event, written to stderr whole when it is dropped:
/// a progress line shown there is cleared first and drawn again after.
struct LogLine(Vec<u8>);

impl std::io::Write for LogLine {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for LogLine {
    fn drop(&mut self) {
        use std::io::Write;
        let progress = PROGRESS.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut err = std::io::stderr().lock();
        let _ = if progress.is_empty() {
            err.write_all(&self.0)
        } else {
            err.write_all(b"\r\x1b[2K")
                .and_then(|()| err.write_all(&self.0))
                .and_then(|()| err.write_all(progress.as_bytes()))
        };
        let _ = err.flush();
    }
}

/// What a long command is doing, on stderr: one line rewritten in place on
/// a terminal (log lines go above it), a line per step elsewhere (a log).
pub struct Progress {
    terminal: bool,
    /// What each line starts with (`bench: `).
    prefix: &'static str,
}

impl Progress {
    pub fn new(prefix: &'static str) -> Progress {
        Progress {
            terminal: std::io::stderr().is_terminal(),
            prefix,
        }
    }

    /// Shows `what` as the current step.
    pub fn say(&self, what: &str) {
        use std::io::Write;
        let mut progress = PROGRESS.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut err = std::io::stderr().lock();
        let line = format!("{}{what}", self.prefix);
        let _ = if self.terminal {
            *progress = line;
            write!(err, "\r\x1b[2K{progress}")
        } else {
            writeln!(err, "{line}")
        };
        let _ = err.flush();
    }

    /// Clears the progress line.
    pub fn done(&self) {
        use std::io::Write;
        let mut progress = PROGRESS.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if self.terminal && !progress.is_empty() {
            progress.clear();
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r\x1b[2K");
            let _ = err.flush();
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.done();
    }
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
