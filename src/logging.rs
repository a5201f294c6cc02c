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
    match format {
        LogFormat::Text => builder.init(),
        LogFormat::Json => builder.json().init(),
    }
    llama_cpp_2::send_logs_to_tracing(llama_cpp_2::LogOptions::default());
}
