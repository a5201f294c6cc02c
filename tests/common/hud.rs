//! Helpers for tests of the HUD API.

use super::{client, post_json, Base, Server};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

pub async fn sync(server: &impl Base, body: &Value) -> (u16, Value) {
    post_json(server, "/v1/hud/sync", body).await
}

pub async fn get(server: &impl Base, path: &str) -> (u16, Value) {
    let r = client().get(server.url(path)).send().await.unwrap();
    let status = r.status().as_u16();
    (status, r.json().await.unwrap_or(Value::Null))
}

/// The HUD's view once the model has answered (or after two minutes).
pub async fn wait_model(server: &Server, session: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let (_, v) = get(server, &format!("/v1/hud/{session}")).await;
        if v["model_status"]["state"] != "pending" || Instant::now() > deadline {
            return v;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The HUD's warm-ups as `/metrics` counts them: the start every question
/// shares, decoded once when the first session arrives.
#[derive(Debug, Clone, Copy)]
pub struct Warmups {
    pub runs: f64,
    pub prompt_tokens: f64,
    pub prompt_seconds: f64,
}

/// The warm-ups once one has finished, or `None` after two minutes without.
pub async fn wait_warmed(server: &Server) -> Option<Warmups> {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let metrics = super::Metrics::of(server).await;
        let sum = |name: &str| metrics.sum(name, "work=\"warmup\"");
        if let (Some(runs), Some(prompt_tokens), Some(prompt_seconds)) = (
            sum("evolve_hud_prompt_seconds_count"),
            sum("evolve_hud_prompt_tokens_total"),
            sum("evolve_hud_prompt_seconds_sum"),
        ) {
            return Some(Warmups {
                runs,
                prompt_tokens,
                prompt_seconds,
            });
        }
        if Instant::now() > deadline {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A session whose `make` failed with a real link error, an output no
/// parser knows.
pub fn failed_make(session: &str) -> Vec<Value> {
    let output = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/outputs/make-link.txt"
    ))
    .unwrap();
    failed_call(session, "make", &output, 2)
}

/// The user's message that opens `session`, asking `text`.
pub fn user_request(session: &str, text: &str) -> Value {
    json!({ "info": { "id": "msg_m0", "sessionID": session, "role": "user", "time": { "created": 1.0 } },
            "parts": [{ "type": "text", "id": "prt_m0", "text": text }] })
}

/// A session whose one bash call, `command`, exited `exit` with `output`.
pub fn failed_call(session: &str, command: &str, output: &str, exit: i64) -> Vec<Value> {
    vec![
        user_request(session, "Build calc."),
        json!({ "info": { "id": "msg_m1", "sessionID": session, "role": "assistant", "path": { "cwd": "/p", "root": "/p" } },
                "parts": [{ "type": "tool", "id": "prt_m1", "callID": "call_m1", "tool": "bash",
                            "state": { "status": "completed", "input": { "command": command }, "output": output,
                                       "metadata": { "exit": exit }, "time": { "start": 2.0, "end": 3.0 } } }] }),
    ]
}

/// The quoted lines of the model's part of a HUD line, if it has one.
pub fn quoted_findings(line: &str) -> Option<Vec<String>> {
    let (_, found) = line.split_once("local model found in the output, each line checked there: ")?;
    Some(found.split('"').skip(1).step_by(2).map(str::to_owned).collect())
}
