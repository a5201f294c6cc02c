//! Faults in the model thread: a panic fails its request, /health says why,
//! the context is rebuilt and serving goes on; panics that keep coming fail
//! the model for good while HUD facts are still served. Needs a build with
//! `--features fault-injection` (scripts/test.sh passes it), where a prompt
//! holding `<<evolve-hud:panic>>` panics the thread mid-request.
#![cfg(feature = "fault-injection")]

use crate::common;

use common::{chat, client, post_json, transform, Server};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

const PANIC: &str = "<<evolve-hud:panic>>";

async fn health(server: &Server) -> (u16, Value) {
    let r = client().get(server.url("/health")).send().await.expect("health");
    (r.status().as_u16(), r.json().await.expect("health JSON"))
}

/// A request that panics the model thread; it fails alone, with the reason.
async fn panic_once(server: &Server) {
    let (status, body) = post_json(server, "/v1/chat/completions", &chat(PANIC, json!({ "max_tokens": 4 }))).await;
    assert_eq!(status, 500, "{body}");
    assert!(
        body["error"]["message"].as_str().unwrap().contains("panicked"),
        "{body}"
    );
}

/// Waits out a context rebuild: returns /health once it is ready again or
/// failed for good.
async fn settled(server: &Server) -> (u16, Value) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (code, h) = health(server).await;
        let rebuilding = h["reason"]
            .as_str()
            .is_some_and(|r| r.ends_with("rebuilding its context"));
        if !rebuilding || Instant::now() > deadline {
            return (code, h);
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Syncs the fixture session in full and checks its HUD has the facts.
async fn hud_still_served(server: &Server) {
    let messages = transform("basic", 7);
    let session = messages[0]["info"]["sessionID"].as_str().unwrap().to_owned();
    let (status, view) = post_json(
        server,
        "/v1/hud/sync",
        &json!({ "session_id": session, "messages": messages, "full": true }),
    )
    .await;
    assert_eq!(status, 200, "{view}");
    assert!(view["hud"].as_str().unwrap().contains("bash"), "{view}");
}

#[tokio::test]
async fn a_panic_fails_one_request_and_the_context_is_rebuilt() {
    let server = Server::start(&[]);
    panic_once(&server).await;

    // Ready again within moments, with the fault on record.
    let (code, h) = settled(&server).await;
    assert_eq!(code, 200, "{h}");
    assert_eq!(h["restarts"], 1, "{h}");
    assert!(h["last_fault"].as_str().unwrap().contains("fault injection"), "{h}");

    // Generation works on the new context, streamed and not.
    for stream in [false, true] {
        let r = client()
            .post(server.url("/v1/chat/completions"))
            .json(&chat("Say hello.", json!({ "max_tokens": 4, "stream": stream })))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        assert!(!r.text().await.unwrap().is_empty());
    }
    hud_still_served(&server).await;
}

#[tokio::test]
async fn repeated_panics_fail_the_model_but_not_the_hud() {
    let server = Server::start(&[]);
    for _ in 0..3 {
        // Each panic is followed by a rebuild; wait for it so the next
        // request reaches the thread rather than the 503 of the rebuild.
        panic_once(&server).await;
        settled(&server).await;
    }
    let (code, h) = health(&server).await;
    assert_eq!(code, 503, "{h}");
    assert_eq!(h["status"], "failed", "{h}");
    let reason = h["reason"].as_str().unwrap();
    assert!(reason.contains("3 panics") && reason.contains("restarted"), "{h}");

    // Model requests are refused at once, with the reason; none hangs.
    for stream in [false, true] {
        let started = Instant::now();
        let (status, body) = post_json(
            &server,
            "/v1/chat/completions",
            &chat("Say hello.", json!({ "max_tokens": 4, "stream": stream })),
        )
        .await;
        assert_eq!(status, 503, "{body}");
        assert!(body["error"]["message"].as_str().unwrap().contains("panic"), "{body}");
        assert!(started.elapsed() < Duration::from_secs(2), "{:?}", started.elapsed());
    }
    hud_still_served(&server).await;
    let status = server.terminate(Duration::from_secs(20)).expect("exited after SIGTERM");
    assert!(status.success(), "{status:?}");
}
