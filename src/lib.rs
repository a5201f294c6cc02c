//! evolve-hud: a local-model sidecar for the OpenCode coding agent.
//!
//! The workspace's crates are its layers, each using only those below it:
//! - `evolve-hud-api` ([`api`]): the wire as types, with no I/O: the
//!   sidecar's HTTP API and its routes, the OpenAI chat protocol
//!   ([`openai`]), model work as engines take it, and [`clean`], the one
//!   cleaner of outside text;
//! - `evolve-hud-core` (re-exported in [`hud`]): the HUD's facts, their
//!   rendering and the model's checked question, with no I/O;
//! - this crate: everything that runs.
//!
//! Layout of this crate:
//! - [`cli`]: the command line and the configuration structs it fills.
//! - [`engine`]: where model work goes: the local llama.cpp thread, or a
//!   remote OpenAI-compatible engine, behind one seam.
//! - [`hud`]: sessions kept between syncs and the model asked in the
//!   background, over evolve-hud-core's facts.
//! - [`gguf`]: a pre-check of GGUF files before they reach llama.cpp.
//! - [`cpu`]: CPU-bound work of async code, on a few blocking threads.
//! - [`json`]: request bodies from JavaScript, lone surrogates tolerated.
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

pub mod bench;
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
pub mod private;
pub mod pull;
pub mod redact;
pub mod registry;
pub mod secret;
pub mod server;
pub mod service;
pub mod telemetry;
pub mod watch;

// The wire, from the crate below this one, under the names the rest of the
// code and its tests use.
pub use evolve_hud_api as api;
pub use evolve_hud_api::{clean, openai};
