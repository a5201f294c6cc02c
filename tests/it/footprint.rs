//! What the sidecar holds while it waits. `--keep-alive`: after that long
//! without model work the model and its buffers are released (the process
//! shrinks to what the HUD needs), HUD facts go on, `/health` says
//! "released", and the next model work loads it again and is answered.
//! `--no-model`: facts only, nothing loaded.

use crate::common::{self, chat, get_json, post_json, transform, Server};
use serde_json::json;
use std::time::{Duration, Instant};

/// The server's resident memory, in MiB.
fn rss_mib(server: &Server) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{}/status", server.pid())).expect("/proc status");
    let kib: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS");
    kib / 1024.0
}

/// `/health`'s status once it is `want`, within `wait`.
async fn health_becomes(server: &Server, want: &str, wait: Duration) -> serde_json::Value {
    let deadline = Instant::now() + wait;
    loop {
        let health = get_json(&server.url("/health")).await;
        if health["status"] == want {
            return health;
        }
        assert!(
            Instant::now() < deadline,
            "/health never said {want} within {wait:?}: {health}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A session's HUD, with the facts of its tool calls, needs no model.
async fn facts_are_served(server: &Server) {
    let messages = transform("basic", 3);
    let id = messages[0]["info"]["sessionID"].clone();
    let sync = json!({ "session_id": id, "messages": messages, "full": true });
    let (status, view) = post_json(server, "/v1/hud/sync", &sync).await;
    assert_eq!(status, 200, "{view}");
    assert!(view["hud"].as_str().unwrap().contains("bash"), "{view}");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_idle_model_is_released_facts_go_on_and_the_next_question_loads_it() {
    let server = Server::start(&["--keep-alive", "1s", "--hud-extract", "false"]);
    let (status, body) = post_json(&server, "/v1/chat/completions", &chat("hi", json!({ "max_tokens": 4 }))).await;
    assert_eq!(status, 200, "{body}");
    let loaded = rss_mib(&server);

    let health = health_becomes(&server, "released", Duration::from_secs(10)).await;
    assert_eq!(
        common::http_status(&server.url("/health")),
        Some(200),
        "released is not down: {health}"
    );
    // The pages go back to the system just after `/health` says released;
    // on a loaded machine that takes a moment, so RSS is read until it has
    // fallen, for at most 10 s.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let mut released = rss_mib(&server);
    while !(released < 100.0 && released < loaded / 2.0) && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
        released = rss_mib(&server);
    }
    assert!(
        released < 100.0 && released < loaded / 2.0,
        "RSS {released:.0} MiB after the release, {loaded:.0} MiB loaded"
    );

    // HUD facts need no model.
    facts_are_served(&server).await;
    let status_view = get_json(&server.url("/v1/status")).await;
    assert_eq!(status_view["health"]["status"], "released", "{status_view}");

    // The next model work loads it again and is answered, its prompt
    // cached: the cache was kept across the release.
    let (status, body) = post_json(&server, "/v1/chat/completions", &chat("hi", json!({ "max_tokens": 4 }))).await;
    assert_eq!(status, 200, "{body}");
    assert!(
        !body["choices"][0]["message"]["content"]
            .as_str()
            .unwrap_or_default()
            .is_empty(),
        "{body}"
    );
    assert_eq!(cached_share(&body), (true, true), "{body}");
    assert_eq!(get_json(&server.url("/health")).await["status"], "ready");
    assert!(rss_mib(&server) > released, "the model is back in memory");
}

/// Of a chat answer's prompt: whether any of it, and whether all but the
/// last token (which always runs), came from the cache.
fn cached_share(body: &serde_json::Value) -> (bool, bool) {
    let prompt = body["usage"]["prompt_tokens"].as_u64().expect("prompt_tokens");
    let cached = body["usage"]["prompt_tokens_details"]["cached_tokens"]
        .as_u64()
        .expect("cached_tokens");
    (cached > 0, cached + 1 == prompt)
}

/// The cache kept across a release belongs to one file: when the file
/// changes while the model is out, the reload starts with an empty cache.
#[tokio::test(flavor = "multi_thread")]
async fn a_model_file_changed_while_released_gets_no_kept_cache() {
    let dir = tempfile::tempdir().expect("tempdir");
    let model = dir.path().join("model.gguf");
    std::fs::copy(common::test_model(), &model).expect("copy the test model");
    let server = Server::start_model(&model, &["--keep-alive", "1s", "--hud-extract", "false"]);
    let request = chat("hi", json!({ "max_tokens": 2 }));
    let (status, body) = post_json(&server, "/v1/chat/completions", &request).await;
    assert_eq!((status, cached_share(&body).0), (200, false), "{body}");

    health_becomes(&server, "released", Duration::from_secs(10)).await;
    // Rewritten in place: the same bytes, a new modification time.
    let bytes = std::fs::read(&model).expect("read");
    std::thread::sleep(Duration::from_millis(20));
    std::fs::write(&model, bytes).expect("rewrite");
    let (status, body) = post_json(&server, "/v1/chat/completions", &request).await;
    assert_eq!((status, cached_share(&body).0), (200, false), "{body}");
}

#[tokio::test(flavor = "multi_thread")]
async fn keep_alive_0_releases_after_each_piece_of_work_and_a_negative_one_never() {
    let now = Server::start(&["--keep-alive", "0", "--hud-extract", "false"]);
    for _ in 0..2 {
        let (status, body) = post_json(&now, "/v1/chat/completions", &chat("hi", json!({ "max_tokens": 2 }))).await;
        assert_eq!(status, 200, "{body}");
        health_becomes(&now, "released", Duration::from_secs(5)).await;
    }

    let never = Server::start(&["--keep-alive", "-1", "--hud-extract", "false"]);
    let (status, body) = post_json(&never, "/v1/chat/completions", &chat("hi", json!({ "max_tokens": 2 }))).await;
    assert_eq!(status, 200, "{body}");
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(get_json(&never.url("/health")).await["status"], "ready");
}

/// With `--keep-alive 0` the work that ends last releases the model, while
/// new work may be taking it. Work that saw it loaded counts itself in
/// under the same lock the release checks, so it is never refused as if
/// the server were shutting down. Here the moment between seeing the phase
/// and counting in is widened to 1 s (`EVOLVE_HUD_FAULT_TAKE_MS`), and a
/// request with a long prompt is cut off by its client while a short
/// request is in that moment: the cut ends the only counted work, and its
/// release comes while the short request holds the loaded engine. (Counted
/// in outside that lock, the short request was refused.)
#[tokio::test(flavor = "multi_thread")]
async fn work_racing_a_release_is_never_told_the_server_is_shutting_down() {
    let args: Vec<std::ffi::OsString> = vec![
        "--model".into(),
        common::test_model().into(),
        "--keep-alive".into(),
        "0".into(),
        "--hud-extract".into(),
        "false".into(),
    ];
    let server = Server::spawn_env(0, &args, &[("EVOLVE_HUD_FAULT_TAKE_MS", std::ffi::OsStr::new("1000"))]);
    server.wait_ready();
    let short = chat("hi", json!({ "max_tokens": 2 }));
    for round in 0..3 {
        // A prompt of its own each round (none is cached), decoded for
        // seconds on 2 cores.
        let long = chat(&format!("{round} {}", "word ".repeat(800)), json!({ "max_tokens": 1 }));
        // Boxed, so that dropping it drops the request.
        let mut first = Box::pin(post_json(&server, "/v1/chat/completions", &long));
        // The long answer is being written once the model is loaded for it.
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            tokio::select! {
                (status, body) = &mut first => panic!("round {round}: the long answer ended first: {status} {body}"),
                () = tokio::time::sleep(Duration::from_millis(20)) => {}
            }
            if get_json(&server.url("/health")).await["status"] == "ready" {
                break;
            }
            assert!(Instant::now() < deadline, "round {round}: the model never loaded");
        }
        let mut second = Box::pin(post_json(&server, "/v1/chat/completions", &short));
        tokio::select! {
            (status, body) = &mut second => panic!("round {round}: answered inside the widened moment: {status} {body}"),
            (status, body) = &mut first => panic!("round {round}: the long answer ended first: {status} {body}"),
            () = tokio::time::sleep(Duration::from_millis(100)) => {}
        }
        // The client of the long answer goes: its work ends.
        drop(first);
        let (status, body) = second.await;
        assert_eq!(status, 200, "round {round}: {body}");
    }
}

#[test]
fn a_keep_alive_that_is_not_a_duration_is_refused_with_the_forms_it_takes() {
    let out = common::command()
        .args(["serve", "--keep-alive", "5 minutes", "--port", "0"])
        .output()
        .expect("serve");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("30s, 5m, 1h"), "{stderr}");
}

/// `serve --no-model`: the HUD's facts at once in a few MiB, model work
/// refused with the reason.
#[tokio::test(flavor = "multi_thread")]
async fn no_model_serves_facts_only_and_refuses_model_work_with_the_reason() {
    let server = Server::spawn_env(0, &["--no-model".into()], &[]);
    server.wait_ready();
    let health = get_json(&server.url("/health")).await;
    assert_eq!(
        (health["status"].as_str(), health["engine"].as_str()),
        (Some("ready"), Some("none")),
        "{health}"
    );

    facts_are_served(&server).await;

    let (status, body) = post_json(&server, "/v1/chat/completions", &chat("hi", json!({}))).await;
    assert_eq!(status, 503, "{body}");
    assert!(
        body["error"]["message"].as_str().unwrap().contains("--no-model"),
        "{body}"
    );
    assert!(rss_mib(&server) < 60.0, "{} MiB", rss_mib(&server));

    let out = common::command()
        .args(["serve", "--no-model", "--model", "x.gguf", "--port", "0"])
        .output()
        .expect("serve");
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
}
