//! `evolve-hud serve` with the real model: health, completions (plain and
//! streamed), models, metrics, bad model files; bad requests in-process.
//!
//! Also: exact usage and prefix-cache reuse, stop strings, `response_format`
//! (an answer of the schema, an enum value written whole, `max_tokens: 32000`
//! capped), the queue timeout (`503` with `Retry-After`), prompts over the
//! context, client disconnects, SIGTERM (idle and mid-generation), the AMX
//! guard (the loaded CPU back-end lists no AMX feature, and llama.cpp's
//! recorded build flags, given `-march=sapphirerapids`, define no AMX), and
//! the official `openai` Python client (`tests/clients/openai_client.py`),
//! and a native build started on an older CPU (qemu-user) naming the
//! instruction sets it lacks.

use crate::common;

use common::fake::InProcess;
use common::{chat, client, serve_expecting_failure, test_model, Base, Server};
use futures_util::StreamExt;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

async fn post(server: &impl Base, body: &Value) -> (u16, Value) {
    common::post_json(server, "/v1/chat/completions", body).await
}

/// Collects a streamed completion: (text, finish_reason, final chunk, saw [DONE] last).
async fn post_stream(server: &Server, body: &Value) -> (String, String, Value, bool) {
    let r = client()
        .post(server.url("/v1/chat/completions"))
        .json(body)
        .send()
        .await
        .expect("request");
    assert_eq!(r.status(), 200);
    assert!(r.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/event-stream"));
    let mut raw = String::new();
    let mut bytes = r.bytes_stream();
    while let Some(chunk) = bytes.next().await {
        raw.push_str(&String::from_utf8_lossy(&chunk.expect("chunk")));
    }
    let data: Vec<&str> = raw.lines().filter_map(|l| l.strip_prefix("data: ")).collect();
    let done_last = data.last() == Some(&"[DONE]");
    let mut text = String::new();
    let mut finish = String::new();
    let mut last = Value::Null;
    for d in data.iter().filter(|d| **d != "[DONE]") {
        let v: Value = serde_json::from_str(d).expect("chunk JSON");
        assert_eq!(v["object"], "chat.completion.chunk");
        if let Some(t) = v["choices"][0]["delta"]["content"].as_str() {
            text.push_str(t);
        }
        if let Some(f) = v["choices"][0]["finish_reason"].as_str() {
            finish = f.to_owned();
            last = v.clone();
        }
    }
    (text, finish, last, done_last)
}

#[tokio::test]
async fn health_goes_from_loading_to_ready() {
    let server = Server::start_listening(&[]);
    let c = client();
    let mut seen = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let r = c.get(server.url("/health")).send().await.expect("health");
        let status = r.status().as_u16();
        let body: Value = r.json().await.expect("health JSON");
        seen.push((status, body["status"].as_str().unwrap_or_default().to_owned()));
        if status == 200 || Instant::now() > deadline {
            break;
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    // Every answer before ready is a 503 that says "loading"; the last is 200 "ready".
    let (last, before) = seen.split_last().expect("at least one answer");
    assert_eq!(last, &(200, "ready".to_owned()), "{seen:?}");
    assert!(before.iter().all(|s| s == &(503, "loading".to_owned())), "{seen:?}");
    // And it stays ready.
    let r = c.get(server.url("/health")).send().await.unwrap();
    assert_eq!(r.status(), 200);
}

#[tokio::test]
async fn completion_returns_text_and_exact_usage() {
    let server = Server::start(&[]);
    let (status, body) = post(&server, &chat("hi", json!({ "max_tokens": 8 }))).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["object"], "chat.completion");
    let text = body["choices"][0]["message"]["content"].as_str().expect("content");
    assert!(!text.trim().is_empty(), "empty completion");
    assert_eq!(body["choices"][0]["message"]["role"], "assistant");
    let usage = &body["usage"];
    let prompt = usage["prompt_tokens"].as_u64().unwrap();
    let completion = usage["completion_tokens"].as_u64().unwrap();
    match body["choices"][0]["finish_reason"].as_str().unwrap() {
        "length" => assert_eq!(completion, 8),
        "stop" => assert!((1..8).contains(&completion)),
        other => panic!("finish_reason {other}"),
    }
    assert_eq!(usage["total_tokens"].as_u64().unwrap(), prompt + completion);
    // The same prompt again reuses the cached prefix: only the last token is decoded.
    let (_, again) = post(&server, &chat("hi", json!({ "max_tokens": 8 }))).await;
    assert_eq!(
        again["usage"]["prompt_tokens_details"]["cached_tokens"]
            .as_u64()
            .unwrap(),
        prompt - 1,
        "{again}"
    );
    assert_eq!(
        again["choices"][0]["message"]["content"], text,
        "greedy output must repeat"
    );
    // "hi hi hi" is "hi" plus two " hi" tokens: the prompt count moves by exactly two.
    let (_, longer) = post(&server, &chat("hi hi hi", json!({ "max_tokens": 1 }))).await;
    assert_eq!(
        longer["usage"]["prompt_tokens"].as_u64().unwrap(),
        prompt + 2,
        "{longer}"
    );
    assert_eq!(longer["usage"]["completion_tokens"], 1);
    assert!(body["timings"]["predicted_per_second"].as_f64().unwrap() > 0.0);
    // "hi hi hi" forked the cache instead of cutting it: "hi" is still cached.
    let (_, third) = post(&server, &chat("hi", json!({ "max_tokens": 1 }))).await;
    assert_eq!(
        third["usage"]["prompt_tokens_details"]["cached_tokens"]
            .as_u64()
            .unwrap(),
        prompt - 1,
        "{third}"
    );
}

#[tokio::test]
async fn streamed_text_equals_plain_text_under_greedy_sampling() {
    let server = Server::start(&[]);
    let prompt = "Write one sentence about the sea.";
    // Both answers below start from the same cached prompt. A first answer
    // decodes the whole prompt in one batch, a later one only its last
    // token over the cache; on some CPUs (AVX2 without AVX-512) ggml's
    // kernels for the two sizes round differently, and a greedy answer may
    // part ways after a few tokens, streamed or not.
    let (status, _) = post(&server, &chat(prompt, json!({ "max_tokens": 1 }))).await;
    assert_eq!(status, 200);
    let (status, plain) = post(&server, &chat(prompt, json!({ "max_tokens": 40 }))).await;
    assert_eq!(status, 200);
    let (text, finish, last, done_last) =
        post_stream(&server, &chat(prompt, json!({ "max_tokens": 40, "stream": true }))).await;
    assert!(done_last, "stream must end with [DONE]");
    assert_eq!(text, plain["choices"][0]["message"]["content"].as_str().unwrap());
    assert_eq!(finish, plain["choices"][0]["finish_reason"].as_str().unwrap());
    assert_eq!(last["usage"]["completion_tokens"], plain["usage"]["completion_tokens"]);
    assert_eq!(last["usage"]["prompt_tokens"], plain["usage"]["prompt_tokens"]);
}

#[tokio::test]
async fn stop_string_cuts_the_text() {
    let server = Server::start(&[]);
    let prompt = "List three colours, separated by commas.";
    let (_, full) = post(&server, &chat(prompt, json!({ "max_tokens": 30 }))).await;
    let full = full["choices"][0]["message"]["content"].as_str().unwrap().to_owned();
    // Stop on a word from the middle of the greedy answer.
    let word = full.split_whitespace().nth(2).expect("a few words").to_owned();
    let at = full.find(&word).unwrap();
    let (status, cut) = post(&server, &chat(prompt, json!({ "max_tokens": 30, "stop": [word] }))).await;
    assert_eq!(status, 200);
    assert_eq!(cut["choices"][0]["message"]["content"].as_str().unwrap(), &full[..at]);
    assert_eq!(cut["choices"][0]["finish_reason"], "stop");
}

#[tokio::test]
async fn response_format_holds_the_answer_to_the_schema() {
    let server = Server::start(&[]);
    let schema = json!({
        "type": "object",
        "properties": { "colour": { "type": "string", "maxLength": 20 }, "count": { "type": "integer" } },
        "required": ["colour", "count"],
        "additionalProperties": false
    });
    let format = json!({ "type": "json_schema", "json_schema": { "name": "pick", "schema": schema } });
    // OpenCode asks for 32000 tokens: capped at the context, not refused.
    let extra = json!({ "max_tokens": 32000, "temperature": 0, "response_format": format });
    let (status, v) = post(&server, &chat("Name a colour and a number.", extra)).await;
    assert_eq!(status, 200, "{v}");
    let content = v["choices"][0]["message"]["content"].as_str().unwrap();
    let answer: serde_json::Value = serde_json::from_str(content).expect("the answer is JSON");
    assert!(
        answer["colour"].as_str().is_some_and(|c| c.chars().count() <= 20),
        "{answer}"
    );
    assert!(answer["count"].is_i64(), "{answer}");
    assert_eq!(answer.as_object().unwrap().len(), 2, "{answer}");
    // json_object: any JSON object.
    let extra = json!({ "max_tokens": 64, "temperature": 0, "response_format": { "type": "json_object" } });
    let (status, v) = post(&server, &chat("Describe the sea as JSON.", extra)).await;
    assert_eq!(status, 200, "{v}");
    let content = v["choices"][0]["message"]["content"].as_str().unwrap();
    if v["choices"][0]["finish_reason"] == "stop" {
        assert!(
            serde_json::from_str::<serde_json::Value>(content).is_ok_and(|a| a.is_object()),
            "{content}"
        );
    } else {
        assert!(content.trim_start().starts_with('{'), "{content}");
    }
    // A schema that is not one is a clear 400 from the grammar's builder.
    let bad = json!({ "type": "json_schema", "json_schema": { "name": "x", "schema": { "type": "no-such-type" } } });
    let (status, v) = post(&server, &chat("hi", json!({ "response_format": bad }))).await;
    assert_eq!(status, 400, "{v}");
    assert!(v["error"]["message"].as_str().is_some_and(|m| !m.is_empty()), "{v}");
}

#[tokio::test]
async fn an_enum_value_is_written_whole_once_its_start_picks_it() {
    let server = Server::start(&[]);
    // Long values, each with a quote and a backslash to escape.
    let lines = [
        r#"disk "sda1" is full: 100% of 512 GB used under C:\data\logs"#,
        r#"network "eth0" is down: no carrier since the cable was moved"#,
        r#"memory "bank 2" failed its self test at boot with code 0x1f"#,
    ];
    let schema = json!({
        "type": "object",
        "properties": { "what": { "type": "string", "maxLength": 20 }, "line": { "type": "string", "enum": lines } },
        "required": ["what", "line"],
        "additionalProperties": false
    });
    let format = json!({ "type": "json_schema", "json_schema": { "name": "pick", "schema": schema } });
    let extra = json!({ "max_tokens": 200, "temperature": 0, "response_format": format });
    let prompt = format!("Which of these lines is about the disk?\n{}", lines.join("\n"));
    let (status, v) = post(&server, &chat(&prompt, extra)).await;
    assert_eq!(status, 200, "{v}");
    let content = v["choices"][0]["message"]["content"].as_str().unwrap();
    let answer: serde_json::Value = serde_json::from_str(content).expect("the answer is JSON");
    let line = answer["line"].as_str().expect("a line");
    assert!(lines.contains(&line), "{answer}");
    // Most of the line was decided by its first tokens and written in one
    // batch, checked by the grammar, not sampled token by token.
    let metrics = common::Metrics::of(&server).await;
    let forced = metrics.sum("evolve_hud_completion_tokens_forced_total", "work=\"chat\"");
    let generated = metrics.sum("evolve_hud_completion_tokens_total", "work=\"chat\"");
    let (forced, generated) = (forced.unwrap_or(0.0), generated.unwrap_or(0.0));
    assert!(
        forced >= 8.0 && forced < generated,
        "{forced} of {generated} tokens forced: {content}"
    );
}

#[tokio::test]
async fn a_request_left_waiting_in_the_queue_gets_503_with_retry_after() {
    // The chat queue alone: no HUD work (such as the start-up warm-up of
    // the HUD's questions) holds the model besides the long generation.
    let server = Server::start(&["--queue-timeout-ms", "300", "--hud-extract", "false"]);
    // A long generation holds the model.
    let long = {
        let url = server.url("/v1/chat/completions");
        let body = chat(
            "Write a long story.",
            json!({ "max_tokens": 3000, "temperature": 0.8, "seed": 7 }),
        );
        tokio::spawn(async move { client().post(url).json(&body).send().await.map(|r| r.status()) })
    };
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!long.is_finished(), "the long generation is still running");
    let started = std::time::Instant::now();
    let r = client()
        .post(server.url("/v1/chat/completions"))
        .json(&chat("hi", json!({ "max_tokens": 4 })))
        .send()
        .await
        .expect("request");
    assert_eq!(r.status(), 503);
    assert_eq!(r.headers().get("retry-after").and_then(|v| v.to_str().ok()), Some("1"));
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["error"]["type"], "queue_timeout", "{body}");
    assert!(started.elapsed() < Duration::from_secs(10), "{:?}", started.elapsed());
    // The long one goes on; cancelled, the model serves again.
    long.abort();
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let (status, v) = post(&server, &chat("hi", json!({ "max_tokens": 4 }))).await;
        if status == 200 {
            break;
        }
        assert_eq!(status, 503, "{v}");
        assert!(std::time::Instant::now() < deadline, "the model did not come back");
    }
}

#[tokio::test]
async fn models_and_metrics() {
    let server = Server::start(&["--model-name", "smol"]);
    let c = client();
    let models = common::get_json(&server.url("/v1/models")).await;
    assert_eq!(models["object"], "list");
    assert_eq!(models["data"][0]["id"], "smol");
    // SmolLM2's own Jinja template, rendered as written.
    assert_eq!(models["data"][0]["meta"]["template"], "jinja");
    assert_eq!(models["data"][0]["meta"]["add_bos"], false);
    for _ in 0..3 {
        let (status, _) = post(&server, &chat("hi", json!({ "max_tokens": 2 }))).await;
        assert_eq!(status, 200);
    }
    let (status, _) = post(&server, &json!({ "messages": [] })).await;
    assert_eq!(status, 400);
    // Made-up methods share one label value: a client cannot create series.
    for i in 0..5 {
        let method = reqwest::Method::from_bytes(format!("BREW{i}").as_bytes()).unwrap();
        let r = c.request(method, server.url("/health")).send().await.unwrap();
        assert_eq!(r.status(), 405);
    }
    let text = common::get_text(&server.url("/metrics")).await;
    let count = |status: &str| -> f64 {
        text.lines()
            .find(|l| {
                l.starts_with("evolve_hud_http_requests_total{")
                    && l.contains(r#"path="/v1/chat/completions""#)
                    && l.contains(&format!(r#"status="{status}""#))
            })
            .and_then(|l| l.rsplit(' ').next())
            .and_then(|v| v.parse().ok())
            .unwrap_or(0.0)
    };
    assert_eq!(count("200"), 3.0, "{text}");
    assert!(!text.contains("BREW"), "{text}");
    assert!(
        text.lines().any(|l| l.starts_with("evolve_hud_http_requests_total{")
            && l.contains(r#"method="other""#)
            && l.ends_with(" 5")),
        "{text}"
    );
    assert_eq!(count("400"), 1.0, "{text}");
    assert!(text.contains("evolve_hud_completion_tokens_total"), "{text}");
}

#[tokio::test]
async fn bad_requests_get_clear_4xx_and_the_server_keeps_serving() {
    let server = InProcess::start(&["--max-body", "2048"]).await;
    let c = client();
    let url = server.url("/v1/chat/completions");
    let cases: Vec<(&str, String, u16)> = vec![
        ("malformed JSON", "{\"messages\": [".into(), 400),
        ("empty body", String::new(), 400),
        ("missing messages", "{}".into(), 400),
        ("empty messages", r#"{"messages": []}"#.into(), 400),
        ("messages of the wrong type", r#"{"messages": "hi"}"#.into(), 400),
        (
            "content of the wrong type",
            r#"{"messages": [{"role": "user", "content": 5}]}"#.into(),
            400,
        ),
        (
            "temperature of the wrong type",
            r#"{"messages": [{"role": "user", "content": "hi"}], "temperature": "hot"}"#.into(),
            400,
        ),
        (
            "negative max_tokens",
            r#"{"messages": [{"role": "user", "content": "hi"}], "max_tokens": -1}"#.into(),
            400,
        ),
        (
            "a response format of no known type",
            r#"{"messages": [{"role": "user", "content": "hi"}], "response_format": {"type": "yaml"}}"#.into(),
            400,
        ),
        (
            "body over the limit",
            format!(
                r#"{{"messages": [{{"role": "user", "content": "{}"}}]}}"#,
                "x".repeat(4096)
            ),
            413,
        ),
    ];
    for (what, body, want) in cases {
        let r = common::post_raw(&url, body).await;
        assert_eq!(r.status().as_u16(), want, "{what}");
        let v: Value = r
            .json()
            .await
            .unwrap_or_else(|e| panic!("{what}: error body is not JSON: {e}"));
        assert!(
            v["error"]["message"].as_str().is_some_and(|e| !e.is_empty()),
            "{what}: {v}"
        );
        assert!(v["error"]["type"].as_str().is_some(), "{what}: {v}");
    }
    let r = c.get(server.url("/nope")).send().await.unwrap();
    assert_eq!(r.status(), 404);
    let r = c.get(&url).send().await.unwrap();
    assert_eq!(r.status(), 405);
    // Still healthy, still answering.
    assert_eq!(c.get(server.url("/health")).send().await.unwrap().status(), 200);
    server.script.push(Ok("hello"));
    let (status, body) = post(&server, &chat("hi", json!({ "max_tokens": 4 }))).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["choices"][0]["message"]["content"], "hello", "{body}");
}

#[tokio::test]
async fn prompt_longer_than_the_context_is_a_clear_error() {
    let server = Server::start(&["--ctx", "256"]);
    let long = "word ".repeat(400);
    for stream in [false, true] {
        let (status, body) = post(&server, &chat(&long, json!({ "max_tokens": 8, "stream": stream }))).await;
        assert_eq!(status, 400, "{body}");
        assert_eq!(body["error"]["type"], "context_length_exceeded");
        assert!(body["error"]["message"].as_str().unwrap().contains("256"), "{body}");
    }
    // A prompt that fits still works, and generation stops at the context's end.
    let (status, body) = post(&server, &chat(&"word ".repeat(200), json!({ "max_tokens": 200 }))).await;
    assert_eq!(status, 200, "{body}");
    let total = body["usage"]["total_tokens"].as_u64().unwrap();
    assert!(total <= 256, "{body}");
}

/// A chat prompt of several MiB is refused on its size, before any
/// tokenizing, and holds up none of the agent's HUD syncs meanwhile.
#[tokio::test(flavor = "multi_thread")]
async fn a_huge_prompt_is_refused_at_once_and_holds_up_no_hud_sync() {
    let server = Server::start(&["--hud-extract", "false"]);
    let huge = "word ".repeat(700 * 1024);
    let chat_started = Instant::now();
    let big = {
        let url = server.url("/v1/chat/completions");
        let body = chat(&huge, json!({ "max_tokens": 8 }));
        tokio::spawn(async move {
            let r = client().post(url).json(&body).send().await.unwrap();
            (
                r.status().as_u16(),
                r.json::<Value>().await.unwrap_or_default(),
                chat_started.elapsed(),
            )
        })
    };
    let messages = common::transform("basic", 3);
    let id = messages[0]["info"]["sessionID"].clone();
    for full in [true, false, false, false, false] {
        let started = Instant::now();
        let (status, view) = common::post_json(
            &server,
            "/v1/hud/sync",
            &json!({ "session_id": id, "messages": messages, "full": full }),
        )
        .await;
        assert_eq!(status, 200, "{view}");
        // Bound: a sync takes milliseconds; one second means it waited.
        assert!(
            started.elapsed() < Duration::from_secs(1),
            "a sync took {:?}",
            started.elapsed()
        );
    }
    let (status, body, took) = big.await.unwrap();
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"]["type"], "context_length_exceeded", "{body}");
    assert!(body["error"]["message"].as_str().unwrap().contains("bytes"), "{body}");
    assert!(took < Duration::from_secs(5), "refused after {took:?}");
}

/// Starts a streamed completion of thousands of tokens and returns its
/// stream once the first chunk has come.
async fn long_story(server: &Server) -> impl futures_util::Stream<Item = reqwest::Result<axum::body::Bytes>> + Unpin {
    let body = chat(
        "Tell me a very long story about a dragon.",
        json!({ "max_tokens": 4000, "stream": true, "temperature": 0.9, "seed": 1 }),
    );
    let r = client()
        .post(server.url("/v1/chat/completions"))
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let mut s = Box::pin(r.bytes_stream());
    s.next().await.expect("first chunk").expect("bytes");
    s
}

#[tokio::test]
async fn client_disconnect_cancels_generation() {
    let server = Server::start(&[]);
    let s = long_story(&server).await;
    drop(s);
    // The model thread is free again at once, not after 4000 tokens (minutes
    // on two cores); the bound leaves room for a machine busy with other tests.
    let started = Instant::now();
    let (status, _) = post(&server, &chat("hi", json!({ "max_tokens": 2 }))).await;
    assert_eq!(status, 200);
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "waited {:?}",
        started.elapsed()
    );
}

#[test]
fn bad_model_files_fail_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.gguf");
    let foreign = dir.path().join("notes.gguf");
    std::fs::write(&foreign, b"this is not a model\n".repeat(100)).unwrap();
    let truncated = dir.path().join("truncated.gguf");
    let real = std::fs::read(test_model()).unwrap();
    std::fs::write(&truncated, &real[..real.len() / 3]).unwrap();
    let header_only = dir.path().join("header.gguf");
    std::fs::write(&header_only, &real[..100]).unwrap();

    for (path, expect) in [
        (&missing, "does not exist"),
        (&foreign, "not a GGUF file"),
        (&truncated, "truncated or corrupt"),
        (&header_only, "truncated or corrupt"),
    ] {
        let (status, stderr) = serve_expecting_failure(path);
        // A normal exit with code 1: no signal, no core dump.
        assert_eq!(status.code(), Some(1), "{}: {status:?}\n{stderr}", path.display());
        assert!(
            stderr.contains("error:") && stderr.contains(expect),
            "{}: {stderr}",
            path.display()
        );
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
}

#[test]
fn sigterm_stops_the_server_cleanly() {
    let server = Server::start(&[]);
    let status = server.terminate(Duration::from_secs(20)).expect("exited after SIGTERM");
    assert!(status.success(), "{status:?}");
}

#[tokio::test]
async fn sigterm_during_generation_cancels_it_and_exits_cleanly() {
    let server = Server::start(&[]);
    let mut s = long_story(&server).await;
    // A request queued behind it is refused, not left waiting.
    let url = server.url("/v1/chat/completions");
    let queued = tokio::spawn(async move {
        let r = client()
            .post(url)
            .json(&chat("hi", json!({ "max_tokens": 2 })))
            .send()
            .await;
        // 0: the connection closed without an answer.
        r.map_or(0, |r| r.status().as_u16())
    });
    tokio::time::sleep(Duration::from_millis(100)).await;

    let started = Instant::now();
    let status = tokio::task::spawn_blocking(move || server.terminate(Duration::from_secs(20)))
        .await
        .unwrap()
        .expect("exited within 20 s of SIGTERM");
    assert!(status.success(), "{status:?}");
    let took = started.elapsed();
    assert!(took < Duration::from_secs(2), "SIGTERM took {took:?}");
    // The stream ends (rather than running on for 4000 tokens) ...
    let rest = tokio::time::timeout(Duration::from_secs(5), async {
        let mut text = String::new();
        while let Some(Ok(chunk)) = s.next().await {
            text.push_str(&String::from_utf8_lossy(&chunk));
        }
        text
    })
    .await
    .expect("the stream ended");
    eprintln!(
        "exit {:?} after SIGTERM; stream tail: {:?}",
        started.elapsed(),
        &rest[rest.len().saturating_sub(200)..]
    );
    // ... and the queued request got an answer or a closed connection, not a hang.
    let code = tokio::time::timeout(Duration::from_secs(5), queued)
        .await
        .expect("the queued request ended")
        .unwrap();
    assert_ne!(code, 200, "a queued request was served after SIGTERM");
}

/// ggml's AMX kernels crash on AMX CPUs (Intel Sapphire Rapids and later) at
/// the first decode, so no build may run them. Two checks, so that a
/// regression fails on any CPU: the CPU back-end the server loaded lists no
/// AMX feature (what ggml was compiled with, whatever this machine has), and
/// the flags llama.cpp was built with, given what `-march=native` gives on
/// an AMX CPU, still define no AMX.
#[tokio::test]
async fn the_build_runs_no_amx_kernels() {
    let server = Server::start(&[]);
    let health = common::get_json(&server.url("/health")).await;
    let features: Vec<&str> = health["cpu_features"]
        .as_array()
        .expect("cpu_features in /health")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(!features.is_empty(), "{health}");
    assert!(!features.iter().any(|f| f.starts_with("AMX")), "{features:?}");
    if cfg!(not(target_arch = "x86_64")) {
        return;
    }

    // The newest llama.cpp build beside this test binary's.
    let build = std::env::current_exe()
        .unwrap()
        .ancestors()
        .nth(2)
        .unwrap()
        .join("build");
    let cache = std::fs::read_dir(&build)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with("llama-cpp-sys-2-"))
        .map(|e| e.path().join("out/build/CMakeCache.txt"))
        .filter(|p| p.exists())
        .max_by_key(|p| p.metadata().and_then(|m| m.modified()).ok())
        .expect("llama.cpp's CMakeCache.txt under target/*/build");
    let cache = std::fs::read_to_string(&cache).unwrap();
    let entry = |key: &str| {
        cache
            .lines()
            .find_map(|l| {
                l.strip_prefix(key)?
                    .strip_prefix(':')?
                    .split_once('=')
                    .map(|(_, v)| v.to_owned())
            })
            .unwrap_or_default()
    };
    if entry("GGML_CPU_ALL_VARIANTS") == "ON" {
        // dynamic-backends: ggml's sapphirerapids variant exists; the
        // server keeps weights out of its AMX buffers (engine::local::cpu).
        return;
    }
    // ggml puts its architecture flags after CMAKE_<LANG>_FLAGS: -march=native,
    // which on an AMX CPU means sapphirerapids, or its explicit AMX options.
    let arch: Vec<&str> = if entry("GGML_NATIVE") == "ON" {
        vec!["-march=sapphirerapids"]
    } else {
        [
            ("GGML_AMX_TILE", "-mamx-tile"),
            ("GGML_AMX_INT8", "-mamx-int8"),
            ("GGML_AMX_BF16", "-mamx-bf16"),
        ]
        .into_iter()
        .filter(|(key, _)| entry(key) == "ON")
        .map(|(_, flag)| flag)
        .collect()
    };
    for (compiler, flags, lang) in [
        ("CMAKE_C_COMPILER", "CMAKE_C_FLAGS", "c"),
        ("CMAKE_CXX_COMPILER", "CMAKE_CXX_FLAGS", "c++"),
    ] {
        let flags = entry(flags);
        let out = std::process::Command::new(entry(compiler))
            .args(flags.split_whitespace())
            .args(&arch)
            .args(["-dM", "-E", "-x", lang, "/dev/null"])
            .output()
            .expect("running llama.cpp's compiler");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let defines = String::from_utf8_lossy(&out.stdout);
        assert!(
            !defines.contains("__AMX_INT8__"),
            "llama.cpp's {lang} flags `{flags}` with {arch:?} compile ggml's AMX kernels"
        );
    }
}

/// A native build run on a CPU that lacks some of its instruction sets stops
/// at start with a message naming them, instead of dying of SIGILL. The CPU
/// is qemu-user's Haswell (AVX2, none of the later sets; installed by
/// `scripts/setup.sh --test`): a build that assumes any of its later sets
/// (AVX-512 or SHA on the CPUs that run this suite) must name each of them;
/// one that assumes none must run there.
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
#[test]
fn a_native_build_on_a_cpu_without_its_instruction_sets_says_so() {
    let later = [
        ("adx", cfg!(target_feature = "adx")),
        ("sha", cfg!(target_feature = "sha")),
        ("vaes", cfg!(target_feature = "vaes")),
        ("gfni", cfg!(target_feature = "gfni")),
        ("avxvnni", cfg!(target_feature = "avxvnni")),
        ("avx512f", cfg!(target_feature = "avx512f")),
        ("avx512bw", cfg!(target_feature = "avx512bw")),
        ("avx512vnni", cfg!(target_feature = "avx512vnni")),
    ];
    let out = std::process::Command::new("timeout")
        .args(["60", "qemu-x86_64", "-cpu", "Haswell"])
        .arg(common::binary())
        .arg("--version")
        .output()
        .expect("running qemu-x86_64 (scripts/setup.sh --test installs qemu-user)");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let assumed: Vec<&str> = later.iter().filter(|(_, on)| *on).map(|(name, _)| *name).collect();
    if assumed.is_empty() {
        assert!(out.status.success(), "{:?}: {stderr}", out.status);
        assert!(String::from_utf8_lossy(&out.stdout).starts_with("evolve-hud "));
        return;
    }
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let line = stderr
        .lines()
        .find(|l| {
            l.starts_with("error: this evolve-hud was built for a CPU with instruction sets that this CPU lacks:")
        })
        .unwrap_or_else(|| panic!("no message naming the missing sets: {stderr}"));
    let named: Vec<&str> = line.rsplit(':').next().unwrap().split_whitespace().collect();
    for set in &assumed {
        assert!(named.contains(set), "{set} is not named: {line}");
    }
    assert!(stderr.contains("cargo install --locked --path ."), "{stderr}");
}

/// The official `openai` Python client (installed by `scripts/setup.sh
/// --test`): "hi" with the server's defaults gets a greeting, an error shows
/// its message, streaming and `json_schema` work.
#[tokio::test(flavor = "multi_thread")]
async fn the_official_openai_client_works() {
    let server = Server::start(&["--hud-extract", "false"]);
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients/openai_client.py");
    let base = server.base.clone();
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new("timeout")
            .args(["120", "python3"])
            .arg(script)
            .arg(base)
            .arg(common::SECRET)
            .output()
            .expect("running python3")
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.ends_with("ok\n"),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!("{stdout}");
}

/// One server per port on a machine: a second `serve` on a port in use
/// leaves at once, before loading its model, naming the running one (two
/// OpenCode processes starting the sidecar at the same moment keep one);
/// `evolve-hud stop` ends the running one.
#[test]
fn a_second_server_on_a_port_leaves_and_stop_ends_the_first() {
    let free = common::free_port();
    let port = free.to_string();
    let mut first = Server::start_on(free, &[]);
    let started = std::time::Instant::now();
    let second = common::command()
        .args([
            "serve",
            "--model",
            common::test_model().to_str().unwrap(),
            "--port",
            &port,
        ])
        .output()
        .expect("running a second serve");
    let err = String::from_utf8_lossy(&second.stderr);
    assert_eq!(second.status.code(), Some(1), "{err}");
    assert!(err.contains(&format!("already running on port {port}")), "{err}");
    assert!(!err.contains("loading model"), "left before loading: {err}");
    assert!(started.elapsed() < std::time::Duration::from_secs(5));

    let stop = common::command()
        .args(["stop", "--port", &port])
        .output()
        .expect("running stop");
    assert!(stop.status.success(), "{stop:?}");
    assert!(String::from_utf8_lossy(&stop.stdout).contains("stopped evolve-hud serve"));
    // `stop` returns once the process has ended; its parent (this test)
    // reaps it the moment the last of its threads is gone.
    assert!(
        first.exited_within(std::time::Duration::from_secs(2)).is_some(),
        "`stop` returned while the process still ran"
    );
    let again = common::command()
        .args(["stop", "--port", &port])
        .output()
        .expect("running stop");
    assert!(String::from_utf8_lossy(&again.stdout).contains("no evolve-hud serve is running"));
}
