//! The integration tests, one crate so that llama.cpp is linked into one
//! test binary. Each module is what a test file used to be: the real
//! binary, model, OpenCode, llama-server and browser where they matter
//! (see docs/testing.md), the API in-process on a scripted engine where
//! they do not (`common::fake`).

#[path = "../common/mod.rs"]
mod common;
/// The fuzz targets' checks, replayed on saved inputs and used by `hostile`.
#[path = "../../fuzz/checks.rs"]
mod fuzz_checks;

mod api_schema;
mod checks;
mod engine;
mod engine_credentials;
mod evolve_hook;
mod faults;
mod first_hour;
mod footprint;
mod fuzz_regressions;
mod gguf_mutations;
mod hostile;
mod hud_api;
mod hud_facts;
mod hud_quality;
mod in_process;
mod install_shim;
mod layout;
mod load;
mod one_truth;
mod pull;
mod security;
mod serve;
mod shared_machine;
mod watch;
