//! evolve-hud: a local-model sidecar for the OpenCode coding agent.
//!
//! Layout:
//! - [`cli`]: the command line and the configuration structs it fills.
//! - [`engine`]: where model work goes: the local llama.cpp thread, or a
//!   remote OpenAI-compatible engine, behind one seam.
//! - [`hud`]: per-session facts from OpenCode's messages, rendered into the HUD.
//! - [`gguf`]: a pre-check of GGUF files before they reach llama.cpp.
//! - [`cpu`]: CPU-bound work of async code, on a few blocking threads.
//! - [`clean`]: the one cleaner of outside text (one line, no escapes, no
//!   forged HUD tags).
//! - [`json`]: request bodies from JavaScript, lone surrogates tolerated.
//! - [`api`]: the sidecar's own HTTP API as types, for the server and every
//!   client; its JSON Schemas are generated from them.
//! - [`openai`]: the OpenAI chat protocol's wire types, for the server and
//!   the remote engine.
//! - [`server`]: the HTTP API (axum).
//! - [`secret`]: the user's secret, bearer tokens that never show in logs,
//!   and the proof that a server knows the secret.
//! - [`private`]: folders and files of this user alone.
//! - [`holder`]: who holds a listening port on this machine.
//! - [`launch`]: the launch record, where the user's sidecar is and how it starts.
//! - [`redact`]: credentials masked in URLs that are shown or logged.
//! - [`logging`]: tracing set-up, llama.cpp's log included.
//! - [`install`]: `install-shim`, which writes the embedded OpenCode plugin.
//! - [`registry`]: models.toml, and what `--model` names.
//! - [`pull`]: downloads through hf-hub, checked by sha256.
//! - [`bench`]: `bench`, throughput as llama-bench measures it.
//! - [`hook`]: `hook`, the opencode-evolve hook protocol over the sidecar's API.
//! - [`client`]: the one client of a running sidecar, over [`api`], for
//!   `hook`, `doctor`, `status`, `watch` and `bench`.
//! - [`telemetry`]: what one server's model did lately, for `watch` and
//!   `/v1/status`, and its completion ids.
//! - [`watch`]: `watch` and `status`, what the agent sees, in a terminal.
//! - [`doctor`]: `doctor`, everything a HUD needs, checked with its fix.
//! - [`service`]: `service`, the sidecar as a systemd or launchd user service.

pub mod api;
pub mod bench;
pub mod clean;
pub mod cli;
pub mod client;
pub mod cpu;
pub mod doctor;
pub mod engine;
pub mod gguf;
pub mod holder;
pub mod hook;
pub mod hud;
pub mod install;
pub mod json;
pub mod launch;
pub mod logging;
pub mod openai;
pub mod private;
pub mod pull;
pub mod redact;
pub mod registry;
pub mod secret;
pub mod server;
pub mod service;
pub mod telemetry;
pub mod watch;
