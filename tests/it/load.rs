//! Load: many sessions syncing at once while chat completions and the HUD's
//! own questions keep the real model busy. Every request must be answered
//! (a HUD, a fast 429, or a 503 once it waited `--queue-timeout-ms` in the
//! queue; never a hang), and the server must stay healthy. The figures are printed (`--nocapture`).
//!
//! The default run is short: 50 sessions × 20 syncs. `EVOLVE_HUD_LOAD_SYNCS=200`
//! runs the full 50 × 200 (`scripts/long-tests.sh` does);
//! `EVOLVE_HUD_LOAD_KV_SLOTS=N` serves with `--kv-slots N` instead of the
//! default, to compare the prompt cache's hit rate (printed per kind of work).

use crate::common;

use common::{chat, client, Server};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const SESSIONS: usize = 50;
/// More chat clients than the model queue holds (`--queue 4`), so the
/// queue fills and some requests are refused.
const CHAT_CLIENTS: usize = 8;
const QUEUE: &str = "4";
/// A refusal of a full queue (429) must come at once; one slower than this
/// counts as a hang.
const FAST_REFUSAL: Duration = Duration::from_secs(2);
/// A request the model has not started by then is answered 503
/// (`--queue-timeout-ms`); that answer may take this long, and a little more.
const QUEUE_TIMEOUT: Duration = Duration::from_secs(10);
/// Longer than any answer may take; a request reaching it counts as hung.
const HANG: Duration = Duration::from_secs(30);

fn syncs_per_session() -> usize {
    std::env::var("EVOLVE_HUD_LOAD_SYNCS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20)
}

/// Message `k` of session `s`: the user's request first, then one finished
/// tool call per message, every fourth failing, with a 2 KB output.
fn message(s: usize, k: usize) -> Value {
    let session = format!("ses_load_{s:03}");
    let created = 1_700_000_000_000.0 + (k as f64) * 1000.0;
    if k == 0 {
        return json!({
            "info": { "id": format!("msg_{s}_0"), "sessionID": session, "role": "user", "time": { "created": created } },
            "parts": [{ "type": "text", "id": format!("prt_{s}_0"), "text": format!("Fix the failing tests of crate {s}.") }],
        });
    }
    let failed = k.is_multiple_of(4);
    let output = format!("line {k} of the build log\n").repeat(80);
    json!({
        "info": {
            "id": format!("msg_{s}_{k}"), "sessionID": session, "role": "assistant",
            "time": { "created": created }, "path": { "cwd": "/work/project", "root": "/work/project" },
        },
        "parts": [{
            "type": "tool", "id": format!("prt_{s}_{k}"), "callID": format!("call_{s}_{k}"), "tool": "bash",
            "state": {
                "status": "completed",
                "input": { "command": format!("cargo test -p crate{s} step{k}") },
                "output": output,
                "metadata": { "exit": if failed { 1 } else { 0 } },
                "time": { "start": created, "end": created + 500.0 },
            },
        }],
    })
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

/// Peak resident memory of a process, from /proc (Linux).
fn peak_rss_mib(pid: u32) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

#[derive(Default)]
struct ChatCounts {
    ok: usize,
    rejected: usize,
    rejected_without_retry_after: usize,
    slowest_rejection: Duration,
    /// 503s for a request left waiting in the queue.
    timed_out: usize,
    slowest_timeout: Duration,
    other: Vec<String>,
    hung: usize,
    tokens: u64,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifty_sessions_sync_while_the_model_serves_chat() {
    let queue_timeout = QUEUE_TIMEOUT.as_millis().to_string();
    let mut flags = vec![
        "--queue".to_owned(),
        QUEUE.to_owned(),
        "--queue-timeout-ms".to_owned(),
        queue_timeout,
    ];
    if let Ok(slots) = std::env::var("EVOLVE_HUD_LOAD_KV_SLOTS") {
        flags.extend(["--kv-slots".to_owned(), slots]);
    }
    let server = Server::start(&flags.iter().map(String::as_str).collect::<Vec<_>>());
    let base: Arc<str> = server.base.clone().into();
    let syncs = syncs_per_session();
    let http = client();
    let done = Arc::new(AtomicBool::new(false));
    let started = Instant::now();

    let mut sessions = Vec::new();
    for s in 0..SESSIONS {
        let (base, http) = (base.clone(), http.clone());
        sessions.push(tokio::spawn(async move {
            let mut latencies = Vec::with_capacity(syncs);
            let mut failures = Vec::new();
            for k in 0..syncs {
                // As the shim does: everything once, then only what is new.
                let messages: Vec<Value> = if k == 0 {
                    (0..2).map(|m| message(s, m)).collect()
                } else {
                    vec![message(s, k + 1)]
                };
                let body = json!({ "session_id": format!("ses_load_{s:03}"), "messages": messages, "full": k == 0 });
                let t = Instant::now();
                let r = tokio::time::timeout(HANG, http.post(format!("{base}/v1/hud/sync")).json(&body).send()).await;
                latencies.push(t.elapsed());
                match r {
                    Ok(Ok(r)) if r.status() == 200 => {
                        let view: Value = r.json().await.expect("HUD JSON");
                        let hud = view["hud"].as_str().unwrap_or_default();
                        if !hud.contains(&format!("step{}", k + 1)) {
                            failures.push(format!("sync {k}: the HUD lacks the newest call: {hud}"));
                        }
                    }
                    Ok(Ok(r)) => failures.push(format!("sync {k}: HTTP {}", r.status())),
                    Ok(Err(e)) => failures.push(format!("sync {k}: {e}")),
                    Err(_) => failures.push(format!("sync {k}: hung for {HANG:?}")),
                }
            }
            (latencies, failures)
        }));
    }

    let mut chats = Vec::new();
    for c in 0..CHAT_CLIENTS {
        let (base, http, done) = (base.clone(), http.clone(), done.clone());
        chats.push(tokio::spawn(async move {
            let mut counts = ChatCounts::default();
            let mut n = 0;
            while !done.load(Ordering::Acquire) || n == 0 {
                n += 1;
                let body = chat(
                    &format!("Client {c}, request {n}: name a prime number."),
                    json!({ "max_tokens": 16 }),
                );
                let t = Instant::now();
                let r = tokio::time::timeout(
                    HANG,
                    http.post(format!("{base}/v1/chat/completions")).json(&body).send(),
                )
                .await;
                match r {
                    Ok(Ok(r)) if r.status() == 200 => {
                        let v: Value = r.json().await.expect("completion JSON");
                        counts.ok += 1;
                        counts.tokens += v["usage"]["completion_tokens"].as_u64().unwrap_or(0);
                    }
                    Ok(Ok(r)) if r.status() == 429 || r.status() == 503 => {
                        if r.status() == 429 {
                            counts.rejected += 1;
                            counts.slowest_rejection = counts.slowest_rejection.max(t.elapsed());
                        } else {
                            counts.timed_out += 1;
                            counts.slowest_timeout = counts.slowest_timeout.max(t.elapsed());
                        }
                        if r.headers().get("retry-after").is_none() {
                            counts.rejected_without_retry_after += 1;
                        }
                        tokio::time::sleep(Duration::from_millis(200)).await;
                    }
                    Ok(Ok(r)) => counts.other.push(format!("HTTP {}", r.status())),
                    Ok(Err(e)) => counts.other.push(e.to_string()),
                    Err(_) => counts.hung += 1,
                }
            }
            counts
        }));
    }

    let mut latencies = Vec::new();
    let mut failures = Vec::new();
    for s in sessions {
        let (l, f) = s.await.expect("session task");
        latencies.extend(l);
        failures.extend(f);
    }
    let sync_secs = started.elapsed().as_secs_f64();
    done.store(true, Ordering::Release);
    let mut chat = ChatCounts::default();
    for c in chats {
        let c = c.await.expect("chat task");
        chat.ok += c.ok;
        chat.rejected += c.rejected;
        chat.rejected_without_retry_after += c.rejected_without_retry_after;
        chat.slowest_rejection = chat.slowest_rejection.max(c.slowest_rejection);
        chat.timed_out += c.timed_out;
        chat.slowest_timeout = chat.slowest_timeout.max(c.slowest_timeout);
        chat.other.extend(c.other);
        chat.hung += c.hung;
        chat.tokens += c.tokens;
    }
    let total_secs = started.elapsed().as_secs_f64();

    let health = http.get(server.url("/health")).send().await.expect("health");
    let health_status = health.status();
    let listing: Value = http
        .get(server.url("/v1/hud"))
        .send()
        .await
        .expect("listing")
        .json()
        .await
        .expect("listing JSON");
    let rss = peak_rss_mib(server.pid());
    let metrics = common::Metrics::of(&server).await;
    let cache = |work: &str| {
        let sum = |name: &str| metrics.sum(name, &format!("work=\"{work}\"")).unwrap_or(0.0);
        let (prompt, cached) = (
            sum("evolve_hud_prompt_tokens_total"),
            sum("evolve_hud_prompt_tokens_cached_total"),
        );
        format!(
            "{work}: {:.0} generations, {:.0} of {prompt:.0} prompt tokens cached ({:.0} %)",
            sum("evolve_hud_prompt_seconds_count"),
            cached,
            100.0 * cached / prompt.max(1.0)
        )
    };

    latencies.sort();
    eprintln!(
        "load: {SESSIONS} sessions x {syncs} syncs = {} syncs in {sync_secs:.1} s ({:.0} syncs/s); \
         sync p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms; sync failures {}",
        latencies.len(),
        latencies.len() as f64 / sync_secs,
        percentile(&latencies, 0.5).as_secs_f64() * 1e3,
        percentile(&latencies, 0.99).as_secs_f64() * 1e3,
        latencies.last().unwrap().as_secs_f64() * 1e3,
        failures.len(),
    );
    eprintln!(
        "load: chat {} completed ({} tokens, {:.1} tokens/s over {total_secs:.1} s), {} rejected \
         (slowest rejection {:.1} ms), {} given up in the queue (slowest {:.1} ms), {} other errors, \
         {} hung; peak RSS {rss:.0} MiB; /health {}; prompt cache: {}; {}",
        chat.ok,
        chat.tokens,
        chat.tokens as f64 / total_secs,
        chat.rejected,
        chat.slowest_rejection.as_secs_f64() * 1e3,
        chat.timed_out,
        chat.slowest_timeout.as_secs_f64() * 1e3,
        chat.other.len(),
        chat.hung,
        health_status,
        cache("chat"),
        cache("hud"),
    );

    assert!(
        failures.is_empty(),
        "{} sync failures, first: {:?}",
        failures.len(),
        failures.first()
    );
    assert_eq!(chat.hung, 0, "chat requests hung");
    assert!(chat.other.is_empty(), "chat errors: {:?}", chat.other);
    assert_eq!(chat.rejected_without_retry_after, 0, "a rejection lacked Retry-After");
    assert!(
        chat.slowest_rejection < FAST_REFUSAL,
        "a refusal took {:?}",
        chat.slowest_rejection
    );
    assert!(
        chat.slowest_timeout < QUEUE_TIMEOUT + FAST_REFUSAL,
        "a request given up in the queue was answered after {:?}",
        chat.slowest_timeout
    );
    assert!(chat.ok > 0, "no chat completion got through");
    assert_eq!(health_status, 200, "unhealthy after the load");
    let held = listing["sessions"].as_array().expect("sessions").len();
    assert_eq!(held, SESSIONS, "sessions held after the load");
}

/// Busy loops in other processes, ended when dropped.
struct BusyLoops(Vec<std::process::Child>);

impl BusyLoops {
    fn start(n: usize) -> BusyLoops {
        let spawn = || {
            std::process::Command::new("sh")
                .args(["-c", "while :; do :; done"])
                .spawn()
                .expect("sh")
        };
        BusyLoops((0..n).map(|_| spawn()).collect())
    }
}

impl Drop for BusyLoops {
    fn drop(&mut self) {
        for child in &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// A short chat: the threads the model decodes with after it, and the
/// prompt tokens its cache held.
async fn threads_after_chat(server: &Server) -> (f64, u64) {
    let r = client()
        .post(server.url("/v1/chat/completions"))
        .json(&chat("Say hi.", json!({ "max_tokens": 2 })))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let answer: Value = r.json().await.unwrap();
    let cached = answer["usage"]["prompt_tokens_details"]["cached_tokens"]
        .as_u64()
        .unwrap_or(0);
    let metrics = common::Metrics::of(server).await;
    let threads = metrics
        .sum("evolve_hud_decode_threads", "")
        .expect("the decode threads gauge");
    (threads, cached)
}

/// The same after two chats that see the same load longer apart than the
/// model thread waits before it changes the count (its cache is not empty).
async fn threads_after_settling(server: &Server) -> (f64, u64) {
    threads_after_chat(server).await;
    tokio::time::sleep(Duration::from_millis(2_100)).await;
    threads_after_chat(server).await
}

/// While other processes keep all cores but one busy, the model decodes on
/// one thread (two on two shared cores wait for each other at every step);
/// once they stop, on all it was given again. `--fixed-threads` keeps them.
#[tokio::test(flavor = "multi_thread")]
async fn decoding_threads_follow_the_machines_load() {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    if cores < 2 {
        eprintln!("skipped: one core leaves nothing to adapt");
        return;
    }
    let server = Server::start(&["--hud-extract", "false"]);
    assert_eq!(threads_after_chat(&server).await.0, 2.0, "a quiet machine");
    let busy = BusyLoops::start(cores - 1);
    let (threads, cached) = threads_after_settling(&server).await;
    assert_eq!(threads, 1.0, "{} busy loops", cores - 1);
    // The context was built again, and the cached prompt moved into it.
    assert!(cached > 0, "the prompt cache was lost with the change");
    drop(busy);
    assert_eq!(threads_after_settling(&server).await.0, 2.0, "quiet again");

    let fixed = Server::start(&["--hud-extract", "false", "--fixed-threads"]);
    let _busy = BusyLoops::start(cores - 1);
    assert_eq!(threads_after_settling(&fixed).await.0, 2.0, "--fixed-threads");
}
