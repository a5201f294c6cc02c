//! The HUD quality evaluation's gate, with the realistic model
//! (Qwen2.5-Coder-0.5B-Instruct, `scripts/fetch-model.sh qwen-coder`): over
//! every captured session (`tests/fixtures/sessions/`, run by
//! `tests/common/eval.rs`), no HUD and no compaction
//! text states anything false or stale, and every quote of the model's part
//! is a line of an output. On the sessions whose formats the HUD was
//! written for, every fact the code must produce is there; the held-out
//! sessions (tools no rule was written for) are reported apart, where a
//! fact may be missing but nothing may be false.

use crate::common;

use common::eval::{cases, quantile, run_all, session_file, tool_calls, Outcome};
use common::{realistic_model, Server};

fn report(part: &str, out: &Outcome) {
    eprintln!(
        "{part}: facts {}/{}, model facts {}/{}, false {}, asked {}, shown {}, rejected {}, p50 {:?} s; missing: {:#?}",
        out.found,
        out.expected,
        out.model_found,
        out.model_expected,
        out.false_statements.len(),
        out.asked,
        out.shown,
        out.rejected,
        quantile(&out.latencies, 0.5),
        out.missing
    );
}

#[tokio::test]
async fn no_false_or_stale_statement_with_the_realistic_model() {
    let server = Server::start_model(&realistic_model(), &["--hud-debounce-ms", "0", "--nice", "0"]);
    let (known, held_out) = run_all(&server, &cases()).await;
    report("known formats", &known);
    report("held out", &held_out);
    for out in [&known, &held_out] {
        assert!(out.false_statements.is_empty(), "{:#?}", out.false_statements);
        assert_eq!(out.asked, out.shown + out.rejected, "every question ends");
    }
    assert!(
        known.asked + held_out.asked > 0,
        "the sessions hold outputs no parser knows: the model is asked"
    );
    // Every fact the code must produce is there.
    assert_eq!(known.found, known.expected, "missing: {:#?}", known.missing);
}

/// The session files hold together: every script was captured (its
/// `.json` has one tool call per step and the script's request), every
/// capture has its script, and every expectation falls where the replay
/// checks it, after an assistant message that ends at that many calls (one
/// anywhere else would never be checked).
#[test]
fn every_session_is_captured_and_each_expectation_is_checked() {
    let cases = cases();
    assert!(cases.len() >= 60, "{} sessions", cases.len());
    let captured = std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/sessions"))
        .expect("the sessions folder")
        .filter_map(|entry| {
            let path = entry.expect("an entry").path();
            (path.extension()? == "json").then(|| path.file_stem()?.to_str().map(str::to_owned))?
        })
        .count();
    assert_eq!(captured, cases.len(), "a capture without its script");
    for case in &cases {
        let session = session_file(&case.name);
        assert_eq!(session["goal"], case.goal.as_str(), "{}", case.name);
        let mut boundaries = Vec::new();
        let mut calls = 0;
        for message in session["messages"].as_array().expect("messages") {
            let n = tool_calls(message);
            if n > 0 {
                calls += n;
                boundaries.push(calls);
            }
        }
        assert_eq!(calls, case.step.len(), "{}: one tool call per step", case.name);
        assert!(!case.expect.is_empty(), "{}: no expectation", case.name);
        for e in &case.expect {
            assert!(
                boundaries.contains(&e.calls),
                "{}: an expectation at {} calls, where the replay checks only at {boundaries:?}",
                case.name,
                e.calls
            );
            assert!(
                !e.must.is_empty() || !e.must_not.is_empty(),
                "{}: an empty expectation",
                case.name
            );
        }
    }
}
