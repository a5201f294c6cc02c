//! The model's part of the HUD: a narrow question whose answer code checks.
//!
//! When a command fails and no parser in [`checks`](super::checks) knows its
//! output, the model is asked which tests, checks or errors failed, as JSON
//! constrained by a grammar. Every item must be grounded: its `line` is
//! copied from one line of the output the model was shown and says that
//! something went wrong, and its `name` occurs in that line or in the line
//! that heads its block (see `owns`).
//! Items that are not are dropped; the HUD line is composed by code from what
//! is left. The model never writes free text into the HUD.

mod question;
mod verify;

pub use question::{question, schema, unasked, warmup_request, worth_asking, Finding, Findings, Question, MAX_TOKENS};
pub use verify::{verify, verify_written, Rejected};
