//! The HUD quality evaluation (`cargo bench --bench hud_quality`): every
//! captured session of `tests/fixtures/sessions/` replayed step by step into
//! the real server, facts only and with each model, against the
//! hand-written expectations of its `<name>.toml`. Prints one table
//! row per configuration: expected facts found, false or stale statements,
//! questions asked of the model and how they ended, and the time from the
//! sync that raised a question to the answer's first verified item in the
//! HUD (the default debounce included). Each server first sees a session
//! open with a user's request, as the plugin syncs before the agent's first
//! step, and the replay starts once the HUD has decoded the start its
//! questions share, as in a real session while the agent takes that step;
//! what that took is printed after the tables.
//! SmolLM2 is the test model; Qwen2.5-Coder-0.5B needs
//! `scripts/fetch-model.sh qwen-coder`. The last row serves Qwen through
//! llama.cpp's own llama-server (`serve --engine`), named by
//! `EVOLVE_HUD_LLAMA_SERVER` (`scripts/llama-cpp.sh llama-server`), on the
//! same machine. Words after `--` keep only the rows whose label contains
//! one of them: `cargo bench --bench hud_quality -- SmolLM2`.

#[path = "../tests/common/mod.rs"]
mod common;

use common::eval::{cases, quantile, run_all, warm_up};
use common::{realistic_model, test_model, LlamaServer, Server};

#[tokio::main]
async fn main() {
    let cases = cases();
    // (label, model, flags, whether llama-server serves the model)
    let configs: [(&str, std::path::PathBuf, &[&str], bool); 4] = [
        ("facts only", test_model(), &["--hud-extract", "false"], false),
        ("SmolLM2-135M Q4_1", test_model(), &[], false),
        ("Qwen2.5-Coder-0.5B Q4_K_M", realistic_model(), &[], false),
        ("Qwen2.5-Coder-0.5B via llama-server", realistic_model(), &[], true),
    ];
    println!(
        "{} sessions ({} of them held out: tools no rule was written for), replayed one assistant message at a time; model threads at --nice 0, default debounce\n",
        cases.len(),
        cases.iter().filter(|c| c.held_out).count()
    );
    println!("| HUD | facts found | details only the model can add | false or stale statements | questions | shown | rejected | sync to shown p50 / p90 | each (s) |");
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    let mut breakdowns = Vec::new();
    let mut warmups = Vec::new();
    // `cargo bench --bench hud_quality -- Qwen`: only the rows whose label
    // contains one of the words given.
    let only: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with('-')).collect();
    for (label, model, extra, remote) in configs {
        if !only.is_empty() && !only.iter().any(|w| label.contains(w.as_str())) {
            continue;
        }
        // The default debounce, as users get it.
        let args: Vec<&str> = ["--nice", "0"].iter().chain(extra).copied().collect();
        // Two slots of 4096 tokens, as evolve-hud keeps by default.
        let engine = remote.then(|| LlamaServer::start(&model, &["-c", "8192", "-np", "2"]));
        let server = match &engine {
            Some(engine) => {
                let server = Server::start_engine(&engine.v1(), &args);
                server.wait_ready();
                server
            }
            None => Server::start_model(&model, &args),
        };
        if !extra.contains(&"--hud-extract") {
            let warmup = warm_up(&server).await.expect("the HUD decoded its questions' start");
            warmups.push((label, warmup));
        }
        let (known, held_out) = run_all(&server, &cases).await;
        for (part, out) in [("", &known), (", held out", &held_out)] {
            let latency = match (quantile(&out.latencies, 0.5), quantile(&out.latencies, 0.9)) {
                (Some(p50), Some(p90)) => format!("{p50:.1} s / {p90:.1} s"),
                _ => "–".to_owned(),
            };
            let mut each = out.latencies.clone();
            each.sort_by(f64::total_cmp);
            let each: Vec<String> = each.iter().map(|s| format!("{s:.1}")).collect();
            println!(
                "| {label}{part} | {}/{} | {}/{} | {} | {} | {} | {} | {latency} | {} |",
                out.found,
                out.expected,
                out.model_found,
                out.model_expected,
                out.false_statements.len(),
                out.asked,
                out.shown,
                out.rejected,
                each.join(" ")
            );
            for f in &out.false_statements {
                eprintln!("  false: {f}");
            }
            for m in &out.missing {
                eprintln!("  missing: {}", m.lines().next().unwrap_or_default());
            }
        }
        if known.asked + held_out.asked > 0 {
            breakdowns.push((label, time_per_question(&server).await));
        }
    }
    println!("\nWhere a question's time goes (means over the questions, from /metrics):\n");
    println!("| HUD | prompt tokens | of them cached | prompt s | generated tokens | of them forced | generation s |");
    println!("|---|---:|---:|---:|---:|---:|---:|");
    for (label, row) in breakdowns {
        println!("| {label} | {row} |");
    }
    println!(
        "\nThe start every question shares, decoded once before the replay (a question asked sooner waits for it):\n"
    );
    for (label, w) in warmups {
        println!(
            "- {label}: {:.0} prompt tokens in {:.2} s",
            w.prompt_tokens, w.prompt_seconds
        );
    }
}

/// Means per HUD question of the engine's work: prompt tokens, cached ones,
/// prompt seconds, generated tokens, those the grammar decided (written in
/// batches), generation seconds.
async fn time_per_question(server: &Server) -> String {
    let metrics = common::Metrics::of(server).await;
    let value = |name: &str| metrics.sum(name, "work=\"hud\"").unwrap_or(0.0);
    let n = value("evolve_hud_prompt_seconds_count").max(1.0);
    format!(
        "{:.0} | {:.0} | {:.2} | {:.0} | {:.0} | {:.2}",
        value("evolve_hud_prompt_tokens_total") / n,
        value("evolve_hud_prompt_tokens_cached_total") / n,
        value("evolve_hud_prompt_seconds_sum") / n,
        value("evolve_hud_completion_tokens_total") / n,
        value("evolve_hud_completion_tokens_forced_total") / n,
        value("evolve_hud_generation_seconds_sum") / n,
    )
}
