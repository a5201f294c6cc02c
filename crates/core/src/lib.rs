//! The HUD's facts, as code reads them from an agent's events, and the HUD
//! rendered from them: no I/O, no async runtime, no model. What the model
//! is asked ([`extract`]) is built and checked here; asking it, keeping
//! sessions and serving them are evolve-hud's.
//!
//! - ingest: [`opencode`] (OpenCode's message and event shapes), [`session`]
//!   (merging them into one session's facts), [`command`] (what a shell
//!   command runs), [`checks`] (test runs and checks read from their
//!   outputs), [`problems`] (failures tracked until a later run clears
//!   them), [`text`] (making event text safe);
//! - the model's part: [`extract`] (the question and the check of its
//!   answer);
//! - output: [`render`] (the HUD), [`compose`] (compaction and heartbeat
//!   texts), [`mask`] (old outputs that later facts supersede, as stubs).
//!
//! The compiler holds the layering. This crate builds on evolve-hud-api:
//!
//! ```
//! let _ = evolve_hud_api::path::HEALTH;
//! ```
//!
//! and on nothing above it, nor on anything that does I/O:
//!
//! ```compile_fail,E0433
//! let _ = evolve_hud::hud::Hud::new;
//! ```
//!
//! ```compile_fail,E0433
//! tokio::spawn(async {});
//! ```

pub mod checks;
pub mod command;
pub mod compose;
pub mod extract;
pub mod mask;
pub mod opencode;
pub mod problems;
pub mod render;
pub mod session;
pub mod text;
