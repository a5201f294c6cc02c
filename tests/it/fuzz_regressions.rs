//! Replays every saved input of `fuzz/regressions/<target>/` through the
//! fuzz targets' own checks (`fuzz/checks.rs`): the crashes fuzzing found,
//! and hand-written hostile inputs.

use crate::fuzz_checks as checks;

use std::path::PathBuf;

fn replay(target: &str, check: fn(&[u8])) {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/regressions")
        .join(target);
    let mut inputs: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("entry").path())
        .collect();
    inputs.sort();
    assert!(!inputs.is_empty(), "no inputs in {}", dir.display());
    for input in inputs {
        let data = std::fs::read(&input).expect("input");
        if std::panic::catch_unwind(|| check(&data)).is_err() {
            panic!("{} fails", input.display());
        }
    }
}

#[test]
fn hud_requests() {
    replay("hud_requests", checks::hud_requests);
}

#[test]
fn chat_request() {
    replay("chat_request", checks::chat_request);
}

#[test]
fn clean_text() {
    replay("clean_text", checks::clean_text);
}

#[test]
fn gguf_check() {
    replay("gguf_check", checks::gguf_check);
}
