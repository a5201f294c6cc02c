//! HUD benchmarks with the real model (`cargo bench --bench hud`):
//! 1. sync-and-render latency over HTTP, p50/p99, with the model idle and
//!    with the model busy generating;
//! 2. the model's answer to one question about a failed output that no
//!    parser knows (grammar-constrained, then verified), with the questions' shared
//!    KV slot warm versus a fresh slot;
//! 3. the compaction and heartbeat texts for a session, findings included.

#[path = "../tests/common/mod.rs"]
mod common;

use evolve_hud::engine::local::{LocalConfig, ModelHandle};
use evolve_hud::engine::{Backend, Engine, Event};
use evolve_hud::hud::extract;
use evolve_hud::hud::opencode::Message;
use evolve_hud::hud::session::{Limits, SessionState};
use evolve_hud::hud::{Hud, HudConfig, TokenCounter};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

fn tool(i: usize) -> Value {
    let (name, input, exit) = match i % 4 {
        0 => (
            "bash",
            json!({ "command": format!("make -C crate{}", i % 7) }),
            Some(i.is_multiple_of(3) as i64),
        ),
        1 => (
            "read",
            json!({ "filePath": format!("/p/src/module_{}.rs", i % 13) }),
            None,
        ),
        2 => (
            "edit",
            json!({ "filePath": format!("/p/src/module_{}.rs", i % 13), "oldString": "a", "newString": "b" }),
            None,
        ),
        _ => (
            "bash",
            json!({ "command": format!("rg -n 'fn handler_{i}' src") }),
            Some(0),
        ),
    };
    let output = if exit == Some(1) {
        format!(
            "cc -Wall -c handler_{i}.c\nhandler_{i}.c:{i}:5: error: 'request_{i}' undeclared (first use in this function)\n\
             {i} |     return request_{i}->status;\nmake: *** [Makefile:3: handler_{i}.o] Error 1\n"
        )
    } else {
        "line\n".repeat(30)
    };
    let mut state = json!({ "status": "completed", "input": input, "output": output, "time": { "start": i as f64 } });
    if let Some(e) = exit {
        state["metadata"] = json!({ "exit": e });
    }
    json!({
        "info": { "id": format!("msg_{i:05}"), "sessionID": "bench", "role": "assistant", "path": { "root": "/p" } },
        "parts": [{ "type": "tool", "id": format!("prt_{i}"), "callID": format!("call_{i}"), "tool": name, "state": state }],
    })
}

fn goal() -> Value {
    json!({ "info": { "id": "msg_00000", "sessionID": "bench", "role": "user", "time": { "created": 0.0 } },
            "parts": [{ "type": "text", "text": "Make the request handlers return typed errors and fix the failing tests." }] })
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

async fn sync_latency(server: &common::Server, session: &str, n: usize) -> (f64, f64, f64) {
    let c = common::client();
    let url = server.url("/v1/hud/sync");
    let mut first = vec![goal()];
    first.extend((1..=20).map(tool));
    c.post(&url)
        .json(&json!({ "session_id": session, "messages": first, "full": true }))
        .send()
        .await
        .unwrap();
    let mut times = Vec::with_capacity(n);
    for i in 0..n {
        let body = json!({ "session_id": session, "messages": [tool(21 + i)] });
        let t = Instant::now();
        let r = c.post(&url).json(&body).send().await.unwrap();
        assert_eq!(r.status(), 200);
        r.bytes().await.unwrap();
        times.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    times.sort_by(f64::total_cmp);
    (
        percentile(&times, 0.5),
        percentile(&times, 0.99),
        *times.last().unwrap(),
    )
}

/// Asks the model `question` in the KV slot `key`: (ms, prompt ms, prompt
/// tokens, cached tokens, whether the answer passed verification).
async fn answer(model: &ModelHandle, question: &extract::Question, key: &str) -> (f64, f64, u32, u32, bool) {
    let request = question.request(key);
    let started = Instant::now();
    let mut rx = model.generate(request).unwrap();
    let mut text = String::new();
    while let Some(e) = rx.recv().await {
        match e {
            Event::Done(d) => {
                return (
                    started.elapsed().as_secs_f64() * 1000.0,
                    d.prompt_ms,
                    d.prompt_tokens,
                    d.cached_tokens,
                    extract::verify(&text, question).is_ok(),
                )
            }
            Event::Failed(e) => panic!("{e}"),
            Event::Text(t) => text.push_str(&t),
        }
    }
    panic!("no result")
}

#[tokio::main]
async fn main() {
    let n = 500;
    // 1. Sync latency over HTTP, idle and with the model busy generating, at
    // the default model-thread niceness and with the model at full priority.
    for (label, args) in [("default --nice 0", &[][..]), ("--nice 10", &["--nice", "10"][..])] {
        let server = common::Server::start(&[&["--hud-extract", "false"], args].concat());
        let (p50, p99, max) = sync_latency(&server, "idle", n).await;
        println!("sync+render, {label}, model idle: p50 {p50:.2} ms, p99 {p99:.2} ms, max {max:.2} ms ({n} syncs)");
        let busy = {
            let url = server.url("/v1/chat/completions");
            tokio::spawn(async move {
                let body = json!({ "messages": [{ "role": "user", "content": "Write a long story." }], "max_tokens": 3000, "temperature": 0.8, "seed": 7 });
                let response = common::client().post(url).json(&body).send().await.unwrap();
                response.bytes().await.unwrap();
            })
        };
        tokio::time::sleep(Duration::from_millis(300)).await;
        let (p50, p99, max) = sync_latency(&server, "busy", n).await;
        println!("sync+render, {label}, model busy: p50 {p50:.2} ms, p99 {p99:.2} ms, max {max:.2} ms ({n} syncs)");
        busy.abort();
    }

    // 2. Summary refresh after one new tool call, in-process on the model thread.
    let config = LocalConfig {
        threads: 2,
        queue: 8,
        nice: 0,
        ..LocalConfig::new(common::test_model())
    };
    let (model, thread) = ModelHandle::start(&config).await.expect("model");
    let limits = Limits::default();
    let mut state = SessionState::new("bench");
    let mut messages = vec![goal()];
    messages.extend((1..=120).map(tool));
    let parsed: Vec<Message> = messages
        .iter()
        .map(|m| serde_json::from_value(m.clone()).unwrap())
        .collect();
    state.merge(&parsed, &limits);
    // Each failed make (every third) is a new question; the system prompt
    // stays in the questions' shared slot.
    let failed: Vec<extract::Question> = state
        .work_calls()
        .into_iter()
        .filter_map(extract::question)
        .take(6)
        .collect();
    assert!(failed.len() >= 5, "the session has failed outputs to ask about");
    let (mut warm, mut cold, mut verified) = (Vec::new(), Vec::new(), 0);
    for (i, q) in failed.iter().enumerate() {
        let (ms, prompt_ms, tokens, cached, ok) = answer(&model, q, "hud:bench").await;
        println!(
            "  warm slot: {ms:.0} ms (prompt {prompt_ms:.0} ms, {cached} of {tokens} tokens cached), verified: {ok}"
        );
        warm.push(ms);
        verified += usize::from(ok);
        let (ms, prompt_ms, tokens, _, _) = answer(&model, q, &format!("cold:{i}")).await;
        println!("  fresh slot: {ms:.0} ms (prompt {prompt_ms:.0} ms, {tokens} tokens)");
        cold.push(ms);
    }
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    println!(
        "answer to one question about a failed output: warm slot {:.0} ms, fresh slot {:.0} ms; {verified} of {} verified",
        mean(&warm),
        mean(&cold),
        warm.len()
    );

    // 3. Compaction and heartbeat texts; the first compaction asks the
    // model about the open problems the background has not reached.
    let hud_config = HudConfig {
        debounce: Duration::from_secs(3600), // no background refreshes meanwhile
        ..HudConfig::default()
    };
    let engine = Engine::new(model.clone());
    let hud = Hud::new(hud_config, TokenCounter::Engine(engine.clone()), Some(engine));
    let mut all = messages.clone();
    all.extend((121..=125).map(tool));
    hud.sync("bench", all, true).unwrap();
    for i in 0..3 {
        let started = Instant::now();
        let c = hud.compaction("bench", Duration::from_secs(60)).await.unwrap();
        println!(
            "  compaction {i}: {:.0} ms, {} chars, model {}",
            started.elapsed().as_secs_f64() * 1000.0,
            c.text.len(),
            c.model_status
        );
        let started = Instant::now();
        let h = hud.heartbeat(&[], Duration::from_secs(60)).await;
        println!(
            "  heartbeat {i}: {:.0} ms, model {}",
            started.elapsed().as_secs_f64() * 1000.0,
            h.model_status
        );
    }
    let started = Instant::now();
    let c = hud.compaction("bench", Duration::ZERO).await.unwrap();
    println!(
        "  compaction past its deadline: {:.1} ms, model {}",
        started.elapsed().as_secs_f64() * 1000.0,
        c.model_status
    );
    thread.shutdown().await;
}
