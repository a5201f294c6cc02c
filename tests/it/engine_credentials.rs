//! `serve --engine http://user:PASSWORD@host/v1?api_key=KEY`: the engine
//! gets its credentials (basic auth, the query on every request), and
//! nobody else sees them: not `/health` (which needs no token), not the
//! log, not `status`, `status --json` or `doctor`, whether the engine
//! answers or is down. The engine is a small fake served here that refuses
//! requests without the credentials.

use crate::common;

use common::{chat, post_json, Server};
use serde_json::{json, Value};
use std::process::Output;
use std::time::{Duration, Instant};

const PASSWORD: &str = "s3cr3t-PASSWORD";
const KEY: &str = "sk-live-KEY-0042";
/// `Basic` and base64 of `user:s3cr3t-PASSWORD`.
const BASIC: &str = "Basic dXNlcjpzM2NyM3QtUEFTU1dPUkQ=";

/// A fake OpenAI-compatible engine on `port` that answers only requests
/// with the user, password and key; it stops when `stop` fires.
async fn engine_wanting_credentials(port: u16, stop: tokio::sync::oneshot::Receiver<()>) {
    use axum::extract::{Query, Request};
    use axum::http::{header, StatusCode};
    use axum::middleware::Next;
    use axum::response::IntoResponse;
    use axum::routing::{get, post};
    use std::collections::HashMap;
    async fn credentials(
        Query(query): Query<HashMap<String, String>>,
        request: Request,
        next: Next,
    ) -> axum::response::Response {
        let basic = request
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok());
        if basic != Some(BASIC) || query.get("api_key").map(String::as_str) != Some(KEY) {
            return (StatusCode::UNAUTHORIZED, "credentials wanted").into_response();
        }
        next.run(request).await
    }
    let answer = || async {
        let chunk = |delta: Value, finish: Value| {
            format!(
                "data: {}\n\n",
                json!({ "choices": [{ "index": 0, "delta": delta, "finish_reason": finish }] })
            )
        };
        let body =
            chunk(json!({ "content": "hello" }), Value::Null) + &chunk(json!({}), json!("stop")) + "data: [DONE]\n\n";
        ([(header::CONTENT_TYPE, "text/event-stream")], body).into_response()
    };
    let app = axum::Router::new()
        .route(
            "/v1/models",
            get(|| async { axum::Json(json!({ "data": [{ "id": "fake-model" }] })) }),
        )
        .route("/v1/chat/completions", post(answer))
        .layer(axum::middleware::from_fn(credentials));
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await.unwrap();
    axum::serve(listener, app)
        .with_graceful_shutdown(async move {
            let _ = stop.await;
        })
        .await
        .unwrap();
}

/// Fails naming `what` when `text` holds the password or the key.
fn assert_clean(what: &str, text: &str) {
    assert!(
        !text.contains(PASSWORD) && !text.contains(KEY),
        "{what} shows a credential:\n{text}"
    );
}

fn evolve_hud(args: &[&str]) -> Output {
    let output = common::command().args(args).output().expect("running evolve-hud");
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert_clean(&format!("evolve-hud {}", args.join(" ")), &all);
    output
}

/// `/health`'s body once its status is `want` (the first probe's "loading"
/// does not count).
async fn health_becomes(server: &Server, want: u16) -> Value {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let response = common::client().get(server.url("/health")).send().await.unwrap();
        let status = response.status().as_u16();
        let text = response.text().await.unwrap();
        assert_clean("/health", &text);
        let body: Value = serde_json::from_str(&text).expect("/health is JSON");
        if status == want && body["status"] != "loading" {
            return body;
        }
        assert!(Instant::now() < deadline, "/health stayed {status}: {body}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn engine_credentials_reach_the_engine_and_nobody_else() {
    let port = common::free_port();
    let (stop, stopped) = tokio::sync::oneshot::channel();
    let fake = tokio::spawn(engine_wanting_credentials(port, stopped));
    let url = format!("http://user:{PASSWORD}@127.0.0.1:{port}/v1?api_key={KEY}");
    let server = Server::start_engine(&url, &["--engine-timeout-ms", "2000"]);
    let shown = format!("http://***@127.0.0.1:{port}/v1?api_key=***");

    // Ready means the probe got through with the credentials.
    let health = health_becomes(&server, 200).await;
    assert_eq!(health["engine_url"], shown, "{health}");
    let (status, answer) = post_json(&server, "/v1/chat/completions", &chat("hi", json!({ "max_tokens": 8 }))).await;
    assert_eq!(status, 200, "the engine got the credentials: {answer}");
    assert_eq!(answer["choices"][0]["message"]["content"], "hello", "{answer}");
    let status = evolve_hud(&["status", "--url", &server.base]);
    assert!(status.status.success(), "{status:?}");
    let json = evolve_hud(&["status", "--json", "--url", &server.base]);
    let json: Value = serde_json::from_slice(&json.stdout).expect("JSON");
    assert_eq!(json["health"]["engine_url"], shown, "{json}");

    // Down: the reasons name the engine's URL, masked.
    stop.send(()).unwrap();
    fake.await.unwrap();
    let health = health_becomes(&server, 503).await;
    let reason = health["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains(&format!(
            "cannot connect to http://***@127.0.0.1:{port}/v1/models?api_key=***"
        )),
        "{health}"
    );
    let (status, refused) = post_json(&server, "/v1/chat/completions", &chat("hi", json!({ "max_tokens": 8 }))).await;
    assert_ne!(status, 200, "{refused}");
    assert_clean("a refused chat completion", &refused.to_string());
    let status = evolve_hud(&["status", "--url", &server.base]);
    let text = String::from_utf8_lossy(&status.stdout);
    assert!(text.contains("cannot connect to http://***@"), "{status:?}");
    evolve_hud(&["status", "--json", "--url", &server.base]);
    evolve_hud(&["doctor", "--url", &server.base]);

    // The log: a warning that points to the token file, and no credential.
    let mut log = server.startup_log.clone();
    let deadline = Instant::now() + Duration::from_secs(2);
    while Instant::now() < deadline {
        match server.log.recv_timeout(Duration::from_millis(100)) {
            Ok(line) => log.push(line),
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
        }
    }
    let log = log.join("\n");
    assert_clean("the server's log", &log);
    assert!(
        log.contains("carries credentials") && log.contains("--engine-token-file"),
        "{log}"
    );
    assert!(
        log.contains("engine unavailable"),
        "the log had the engine down:\n{log}"
    );
}
