//! `serve --engine`: model work through a remote OpenAI-compatible engine.
//! The real one is llama.cpp's own llama-server on the real test model; the
//! faults (overload, garbage, a hung engine, an engine that goes away and
//! comes back) come from a small fake engine served here.
//!
//! The llama-server binary is named by `EVOLVE_HUD_LLAMA_SERVER`
//! (`scripts/llama-cpp.sh llama-server` builds it; `scripts/test.sh` sets it).

use crate::common;

use common::hud::{failed_make, get, quoted_findings, sync, wait_model};
use common::{assert_compaction_sections, chat, client, post_json, LlamaServer, Server};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The text of a chat completion.
fn text(v: &Value) -> &str {
    v["choices"][0]["message"]["content"].as_str().unwrap_or_default()
}

/// A streamed chat completion: the concatenated text and the chunks.
async fn stream(server: &Server, body: &Value) -> (String, Vec<Value>) {
    let r = client()
        .post(server.url("/v1/chat/completions"))
        .json(body)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let raw = r.text().await.unwrap();
    let chunks: Vec<Value> = raw
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter(|d| *d != "[DONE]")
        .map(|d| serde_json::from_str(d).unwrap())
        .collect();
    assert!(raw.trim_end().ends_with("data: [DONE]"), "{raw}");
    let text = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["content"].as_str())
        .collect();
    (text, chunks)
}

/// `evolve_hud_prompt_tokens_cached_total{work="hud"}` from `/metrics`.
async fn hud_cached_tokens(server: &Server) -> f64 {
    common::Metrics::of(server)
        .await
        .sum("evolve_hud_prompt_tokens_cached_total", "work=\"hud\"")
        .unwrap_or(0.0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_hud_compaction_and_heartbeat_go_through_a_real_llama_server() {
    // Two slots of 4096 tokens each.
    let engine = LlamaServer::start(&common::test_model(), &["-c", "8192", "-np", "2"]);
    let server = Server::start_engine(
        &engine.v1(),
        &["--hud-debounce-ms", "50", "--hud-extract-timeout-ms", "120000"],
    );
    server.wait_ready();

    let (_, health) = get(&server, "/health").await;
    assert_eq!(health["engine"], "remote", "{health}");
    let listed = common::get_json(&format!("{}/models", engine.v1())).await;
    let engine_model = listed["data"][0]["id"].as_str().unwrap();
    assert_eq!(health["model"], engine_model, "{health}");
    let (_, models) = get(&server, "/v1/models").await;
    assert_eq!(models["data"][0]["id"], engine_model, "{models}");

    // Chat, plain and streamed: greedy sampling gives the same text.
    let greedy = json!({ "temperature": 0, "max_tokens": 24, "seed": 1 });
    let body = chat("Name three colours.", greedy.clone());
    let (status, plain) = post_json(&server, "/v1/chat/completions", &body).await;
    assert_eq!(status, 200, "{plain}");
    assert!(!text(&plain).is_empty(), "{plain}");
    assert!(plain["usage"]["prompt_tokens"].as_u64().unwrap() > 5, "{plain}");
    let mut streamed = body.clone();
    streamed["stream"] = json!(true);
    streamed["stream_options"] = json!({ "include_usage": true });
    let (streamed_text, chunks) = stream(&server, &streamed).await;
    assert_eq!(streamed_text, text(&plain));
    let last = chunks.last().unwrap();
    assert!(last["usage"]["completion_tokens"].as_u64().unwrap() > 0, "{last}");

    // OpenCode's title request: max_tokens far past the context, streamed.
    let mut title = chat(
        "Write a title for: fix the failing calc tests",
        json!({ "max_tokens": 32000 }),
    );
    title["stream"] = json!(true);
    let (title_text, _) = stream(&server, &title).await;
    assert!(!title_text.trim().is_empty());

    // A grown prompt reuses the engine's prefix cache.
    let long = "Here is a log line of the build that keeps going.\n".repeat(40);
    let first = chat(&format!("{long}Summarise."), greedy.clone());
    let (status, _) = post_json(&server, "/v1/chat/completions", &first).await;
    assert_eq!(status, 200);
    let second = chat(&format!("{long}Summarise. Then list the files."), greedy.clone());
    let (_, again) = post_json(&server, "/v1/chat/completions", &second).await;
    let cached = again["usage"]["prompt_tokens_details"]["cached_tokens"]
        .as_u64()
        .unwrap();
    assert!(cached > 300, "the shared prefix was not reused: {again}");

    // A JSON schema holds the answer through the engine.
    let schema = json!({ "type": "object", "properties": { "colour": { "type": "string" } },
                         "required": ["colour"], "additionalProperties": false });
    let body = chat(
        "Pick a colour.",
        json!({ "temperature": 0, "max_tokens": 40,
                "response_format": { "type": "json_schema", "json_schema": { "name": "c", "schema": schema } } }),
    );
    let (status, v) = post_json(&server, "/v1/chat/completions", &body).await;
    assert_eq!(status, 200, "{v}");
    let answer: Value = serde_json::from_str(text(&v)).unwrap_or_else(|e| panic!("{e}: {v}"));
    assert!(answer["colour"].is_string(), "{answer}");

    // The HUD: facts at once, then the engine's answer, checked here.
    let id = "ses_engine";
    let messages = failed_make(id);
    let output = messages[1]["parts"][0]["state"]["output"].as_str().unwrap().to_owned();
    let started = Instant::now();
    let (status, first) = sync(
        &server,
        &json!({ "session_id": id, "messages": messages, "full": true }),
    )
    .await;
    assert_eq!(status, 200, "{first}");
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "a sync never waits for the engine"
    );
    assert_eq!(first["model_status"]["state"], "pending", "{first}");
    let v = wait_model(&server, id).await;
    let status = common::model_status_text(&v);
    assert!(status == "ready" || status.starts_with("rejected: "), "{v}");
    assert!(!status.contains("engine"), "the engine answered: {v}");
    let hud = v["hud"].as_str().unwrap();
    let problem = hud.lines().find(|l| l.contains("bash `make` exited 2")).unwrap();
    for quote in quoted_findings(problem).unwrap_or_default() {
        assert!(
            output.lines().any(|l| l.contains(quote.as_str())),
            "{quote:?} is not in the output"
        );
    }

    // A second question (another build's link error) shares the first
    // one's start in the engine's cache.
    let next = json!({ "info": { "id": "msg_m2", "sessionID": id, "role": "assistant", "path": { "cwd": "/p", "root": "/p" } },
        "parts": [{ "type": "tool", "id": "prt_m2", "callID": "call_m2", "tool": "bash",
                    "state": { "status": "completed", "input": { "command": "make -C tools" }, "output": output,
                               "metadata": { "exit": 2 }, "time": { "start": 4.0, "end": 5.0 } } }] });
    let (status, _) = sync(&server, &json!({ "session_id": id, "messages": [next] })).await;
    assert_eq!(status, 200);
    let v = wait_model(&server, id).await;
    assert_ne!(v["model_status"]["state"], "pending", "{v}");
    assert!(
        hud_cached_tokens(&server).await > 200.0,
        "the questions' shared start was decoded again"
    );

    // Compaction and heartbeat texts.
    let (status, c) = post_json(&server, &format!("/v1/hud/{id}/compaction"), &json!({})).await;
    assert_eq!(status, 200, "{c}");
    assert_compaction_sections(c["text"].as_str().unwrap());
    let (status, h) = post_json(&server, "/v1/heartbeat", &json!({})).await;
    assert_eq!(status, 200, "{h}");
    assert_eq!(h["sessions"][0], id, "{h}");
}

/// How the fake engine answers chat completions.
const OK: u8 = 0;
const GARBAGE: u8 = 1;
const HANG: u8 = 2;
const OVERLOADED: u8 = 3;

/// A fake OpenAI-compatible engine on `port` whose chat answers follow
/// `mode`; it stops (closing every connection) when `stop` fires.
async fn fake_engine(port: u16, mode: Arc<AtomicU8>, stop: tokio::sync::oneshot::Receiver<()>) {
    use axum::http::{header, StatusCode};
    use axum::response::IntoResponse;
    use axum::routing::{get, post};
    let chat = move || {
        let mode = mode.clone();
        async move {
            match mode.load(Ordering::SeqCst) {
                OK => {
                    let chunk = |delta: Value, finish: Value| {
                        format!(
                            "data: {}\n\n",
                            json!({ "choices": [{ "index": 0, "delta": delta, "finish_reason": finish }] })
                        )
                    };
                    let body = chunk(json!({ "content": "hello" }), Value::Null)
                        + &chunk(json!({ "content": " world" }), Value::Null)
                        + &chunk(json!({}), json!("stop"))
                        + "data: [DONE]\n\n";
                    ([(header::CONTENT_TYPE, "text/event-stream")], body).into_response()
                }
                GARBAGE => (
                    [(header::CONTENT_TYPE, "text/event-stream")],
                    "data: <html>oops</html>\n\n",
                )
                    .into_response(),
                HANG => {
                    // Longer than the sidecar waits; short enough that the
                    // fake's graceful stop does not wait long for it.
                    tokio::time::sleep(Duration::from_secs(4)).await;
                    StatusCode::OK.into_response()
                }
                _ => (
                    StatusCode::SERVICE_UNAVAILABLE,
                    [(header::RETRY_AFTER, "7")],
                    axum::Json(json!({ "error": { "message": "all slots are busy" } })),
                )
                    .into_response(),
            }
        }
    };
    let app = axum::Router::new()
        .route(
            "/v1/models",
            get(|| async { axum::Json(json!({ "data": [{ "id": "fake-model" }] })) }),
        )
        .route("/v1/chat/completions", post(chat));
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await.unwrap();
    axum::serve(listener, app)
        .with_graceful_shutdown(async move {
            let _ = stop.await;
        })
        .await
        .unwrap();
}

/// Polls `/health` until its status is `want`; returns the body.
async fn health_becomes(server: &Server, want: u16, within: Duration) -> Value {
    let deadline = Instant::now() + within;
    loop {
        let (status, body) = get(server, "/health").await;
        // 503 while the first probe is out does not count: the test wants
        // the engine's verdict.
        if status == want && body["status"] != "loading" {
            return body;
        }
        assert!(Instant::now() < deadline, "/health stayed {status}: {body}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A sync answers at once with facts, whatever the engine does.
async fn sync_is_fast(server: &Server, id: &str, full: bool) {
    let started = Instant::now();
    let messages = if full { failed_make(id) } else { Vec::new() };
    let (status, v) = sync(server, &json!({ "session_id": id, "messages": messages, "full": full })).await;
    assert_eq!(status, 200, "{v}");
    assert!(v["hud"].as_str().unwrap().contains("bash `make` exited 2"), "{v}");
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "sync took {:?}",
        started.elapsed()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn engine_faults_keep_syncs_fast_and_health_says_why_until_it_recovers() {
    let port = common::free_port();
    let mode = Arc::new(AtomicU8::new(OK));
    let (stop, stopped) = tokio::sync::oneshot::channel();
    let fake = tokio::spawn(fake_engine(port, mode.clone(), stopped));
    let url = format!("http://127.0.0.1:{port}/v1");
    let server = Server::start_engine(&url, &["--engine-timeout-ms", "1500", "--hud-debounce-ms", "10"]);
    server.wait_ready();
    let body = chat("hi", json!({ "max_tokens": 8 }));
    let (status, v) = post_json(&server, "/v1/chat/completions", &body).await;
    assert_eq!((status, text(&v)), (200, "hello world"), "{v}");
    sync_is_fast(&server, "ses_faults", true).await;
    // The session's own question goes to the engine too: it must be
    // answered before the faults below, or it would count among them.
    let v = wait_model(&server, "ses_faults").await;
    assert_ne!(v["model_status"]["state"], "pending", "{v}");

    // Overload passes through with the engine's Retry-After.
    mode.store(OVERLOADED, Ordering::SeqCst);
    let r = client()
        .post(server.url("/v1/chat/completions"))
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 503);
    assert_eq!(r.headers()["retry-after"], "7");
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["error"]["type"], "overloaded", "{v}");
    assert!(
        v["error"]["message"].as_str().unwrap().contains("all slots are busy"),
        "{v}"
    );

    // Garbage: each request fails clearly; after three the breaker opens,
    // /health says why, and requests are refused at once.
    mode.store(GARBAGE, Ordering::SeqCst);
    for _ in 0..3 {
        let (status, v) = post_json(&server, "/v1/chat/completions", &body).await;
        assert_eq!(status, 500, "{v}");
        assert!(v["error"]["message"].as_str().unwrap().contains("not JSON"), "{v}");
    }
    let health = health_becomes(&server, 503, Duration::from_secs(2)).await;
    assert!(health["reason"].as_str().unwrap().contains("not JSON"), "{health}");
    let started = Instant::now();
    let (status, v) = post_json(&server, "/v1/chat/completions", &body).await;
    assert_eq!(status, 503, "{v}");
    assert!(started.elapsed() < Duration::from_millis(500), "refused at once");
    sync_is_fast(&server, "ses_faults", false).await;

    // Fixed: after the cooldown the engine is used again.
    mode.store(OK, Ordering::SeqCst);
    health_becomes(&server, 200, Duration::from_secs(15)).await;
    let (status, v) = post_json(&server, "/v1/chat/completions", &body).await;
    assert_eq!((status, text(&v)), (200, "hello world"), "{v}");

    // Hung: the request times out with a clear 503; syncs stay fast.
    mode.store(HANG, Ordering::SeqCst);
    let started = Instant::now();
    let (status, v) = post_json(&server, "/v1/chat/completions", &body).await;
    assert_eq!(status, 503, "{v}");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("did not answer within 1500 ms"),
        "{v}"
    );
    assert!(started.elapsed() < Duration::from_secs(5));
    sync_is_fast(&server, "ses_faults", false).await;
    mode.store(OK, Ordering::SeqCst);

    // Gone: /health says the engine cannot be reached; back: it recovers.
    stop.send(()).unwrap();
    fake.await.unwrap();
    let health = health_becomes(&server, 503, Duration::from_secs(12)).await;
    assert!(
        health["reason"].as_str().unwrap().contains("cannot connect"),
        "{health}"
    );
    sync_is_fast(&server, "ses_faults", false).await;
    let (stop, stopped) = tokio::sync::oneshot::channel();
    let fake = tokio::spawn(fake_engine(port, mode.clone(), stopped));
    health_becomes(&server, 200, Duration::from_secs(10)).await;
    let (status, v) = post_json(&server, "/v1/chat/completions", &body).await;
    assert_eq!((status, text(&v)), (200, "hello world"), "{v}");
    stop.send(()).unwrap();
    fake.await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_engine_url_or_model_is_a_clear_error() {
    let out = common::command()
        .args(["serve", "--port", "0", "--engine", "not a url"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("is not a URL"), "{err}");

    // A model the engine does not serve: /health names the ones it does.
    let port = common::free_port();
    let (stop, stopped) = tokio::sync::oneshot::channel();
    let fake = tokio::spawn(fake_engine(port, Arc::new(AtomicU8::new(OK)), stopped));
    let server = Server::start_engine(&format!("http://127.0.0.1:{port}/v1"), &["--engine-model", "qwen-7b"]);
    let health = health_becomes(&server, 503, Duration::from_secs(10)).await;
    let reason = health["reason"].as_str().unwrap_or_default();
    assert!(reason.contains("qwen-7b") && reason.contains("fake-model"), "{health}");
    stop.send(()).unwrap();
    fake.await.unwrap();
}
