//! The HUD quality evaluation's gate, with the realistic model
//! (Qwen2.5-Coder-0.5B-Instruct, `scripts/fetch-model.sh qwen-coder`): over
//! every captured session (`tests/common/eval.rs`), no HUD and no compaction
//! text states anything false or stale, and every quote of the model's part
//! is a line of an output. On the sessions whose formats the HUD was
//! written for, every fact the code must produce is there; the held-out
//! sessions (tools no rule was written for) are reported apart, where a
//! fact may be missing but nothing may be false.

use crate::common;

use common::eval::{quantile, run_all, Outcome};
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
    let (known, held_out) = run_all(&server).await;
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
