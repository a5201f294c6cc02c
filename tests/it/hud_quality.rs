//! The HUD quality evaluation's gate, with the realistic model
//! (Qwen2.5-Coder-0.5B-Instruct, `scripts/fetch-model.sh qwen-coder`): over
//! every captured session (`tests/common/eval.rs`), no HUD and no compaction
//! text states anything false or stale, every fact the code must produce is
//! there, and every quote of the model's part is a line of an output.

use crate::common;

use common::eval::{quantile, run_all};
use common::{realistic_model, Server};

#[tokio::test]
async fn no_false_or_stale_statement_with_the_realistic_model() {
    let server = Server::start_model(&realistic_model(), &["--hud-debounce-ms", "0", "--nice", "0"]);
    let out = run_all(&server).await;
    eprintln!(
        "facts {}/{}, model facts {}/{}, asked {}, shown {}, rejected {}, p50 {:?} s; missing: {:#?}",
        out.found,
        out.expected,
        out.model_found,
        out.model_expected,
        out.asked,
        out.shown,
        out.rejected,
        quantile(&out.latencies, 0.5),
        out.missing
    );
    assert!(out.false_statements.is_empty(), "{:#?}", out.false_statements);
    assert!(
        out.asked > 0,
        "the sessions hold outputs no parser knows: the model is asked"
    );
    assert_eq!(out.asked, out.shown + out.rejected, "every question ends");
    // Every fact the code must produce is there.
    assert_eq!(out.found, out.expected, "missing: {:#?}", out.missing);
}
