//! The HUD API on the real server with the real model and the real fixtures:
//! the sync protocol and a sidecar restart with full resync (byte-identical
//! HUD); the model's findings on a real `make` output (grammar-held JSON,
//! every quote a line of the output, facts unchanged) and their timeout; no
//! question where every failure is understood; the budget in real tokens;
//! bad HUD requests; forwarded events; the compaction text (sections,
//! verbatim facts, the deadline fallback) and the heartbeat text.

use crate::common;

use common::fake::InProcess;
use common::hud::{failed_make, get, quoted_findings, sync, wait_model, wait_warmed};
use common::{assert_compaction_sections, client, post_json, Base, Server};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

fn transform(n: usize) -> Vec<Value> {
    common::transform("basic", n)
}

fn session_of(messages: &[Value]) -> String {
    messages[0]["info"]["sessionID"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn sync_protocol_get_list_drop_and_restart() {
    let server = Server::facts_only(&[]);
    let first = transform(3);
    let id = session_of(&first);

    // Unknown session without `full`: the shim must resend everything.
    let (status, body) = sync(&server, &json!({ "session_id": id, "messages": first })).await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(body["error"]["type"], "resync_required");

    let (status, a) = sync(&server, &json!({ "session_id": id, "messages": first, "full": true })).await;
    assert_eq!(status, 200, "{a}");
    assert!(a["hud"].as_str().unwrap().contains("✓ bash `echo hello && ls`"), "{a}");
    assert!(a["tokens"].as_u64().unwrap() > 0);

    // The new tail only (from the last message already sent, which may have grown).
    let last = transform(7);
    let tail: Vec<Value> = last[first.len() - 1..].to_vec();
    let (status, b) = sync(&server, &json!({ "session_id": id, "messages": tail })).await;
    assert_eq!(status, 200, "{b}");
    assert!(b["version"].as_u64() > a["version"].as_u64());
    let hud = b["hud"].as_str().unwrap();
    assert!(hud.contains("✗ bash `false` → exit 1"), "{hud}");
    // Resending the same tail changes nothing.
    let (_, c) = sync(&server, &json!({ "session_id": id, "messages": tail })).await;
    assert_eq!(c["version"], b["version"]);
    assert_eq!(c["hud"], b["hud"]);

    let (status, got) = get(&server, &format!("/v1/hud/{id}")).await;
    assert_eq!(status, 200);
    assert_eq!(got["hud"], b["hud"]);
    let (_, list) = get(&server, "/v1/hud").await;
    assert_eq!(list["sessions"][0]["session_id"], id.as_str());
    assert_eq!(list["sessions"][0]["tool_calls"], 6);

    // A restarted sidecar has lost the session; a full resync restores the same facts.
    drop(server);
    let server = Server::facts_only(&[]);
    let (status, _) = sync(&server, &json!({ "session_id": id, "messages": tail })).await;
    assert_eq!(status, 409);
    let (status, d) = sync(&server, &json!({ "session_id": id, "messages": last, "full": true })).await;
    assert_eq!(status, 200);
    assert_eq!(d["hud"].as_str().unwrap(), hud, "the same facts give the same bytes");

    let r = client()
        .delete(server.url(&format!("/v1/hud/{id}")))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 204);
    let (status, body) = get(&server, &format!("/v1/hud/{id}")).await;
    assert_eq!(status, 404, "{body}");
    let r = client()
        .delete(server.url(&format!("/v1/hud/{id}")))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
}

#[tokio::test]
async fn real_model_findings_are_grammar_json_and_quoted_from_the_output() {
    // A generous timeout: other tests share the two cores with this one.
    let server = Server::start(&["--hud-debounce-ms", "50", "--hud-extract-timeout-ms", "120000"]);
    let id = "ses_make";
    let messages = failed_make(id);
    let output = messages[1]["parts"][0]["state"]["output"].as_str().unwrap().to_owned();
    let (status, first) = sync(
        &server,
        &json!({ "session_id": id, "messages": messages, "full": true }),
    )
    .await;
    assert_eq!(status, 200);
    // The sync answered with facts at once, before the model.
    assert_eq!(first["model_status"]["state"], "pending", "{first}");
    let first_hud = first["hud"].as_str().unwrap();
    assert!(first_hud.contains("bash `make` exited 2; no pass since"), "{first_hud}");
    let v = wait_model(&server, id).await;
    let status = common::model_status_text(&v);
    // The grammar holds the answer to the schema: never a parse failure.
    assert!(!status.contains("not an answer of the schema"), "{v}");
    assert!(status == "ready" || status.starts_with("rejected: "), "{v}");
    let hud = v["hud"].as_str().unwrap();
    let problem = hud
        .lines()
        .find(|l| l.contains("bash `make` exited 2"))
        .expect("open problem");
    match quoted_findings(problem) {
        Some(quotes) => {
            assert_eq!(status, "ready", "{v}");
            assert!(!quotes.is_empty(), "{problem}");
            for q in quotes {
                assert!(
                    output.lines().any(|l| l.contains(q.as_str())),
                    "{q:?} is not in the output"
                );
            }
            assert!(v["version"].as_u64() > first["version"].as_u64(), "{v}");
        }
        None => assert!(status.starts_with("rejected: "), "{v}"),
    }
    // The model part never changes the facts around it.
    let without_model = |h: &str| -> String {
        h.lines()
            .map(|l| l.split("; local model found").next().unwrap())
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert_eq!(without_model(hud), without_model(first_hud));

    // The start every question shares was decoded once, ahead, and counted.
    let warmups = wait_warmed(&server).await.expect("a warm-up in /metrics");
    assert_eq!(warmups.runs, 1.0, "{warmups:?}");
    assert!(warmups.prompt_tokens > 200.0, "{warmups:?}");
}

#[tokio::test]
async fn a_question_not_answered_in_time_leaves_the_facts_only_hud_and_is_asked_again() {
    // 1 ms: no question can be answered in time.
    let server = Server::start(&["--hud-debounce-ms", "10", "--hud-extract-timeout-ms", "1"]);
    let id = "ses_make";
    let (status, first) = sync(
        &server,
        &json!({ "session_id": id, "messages": failed_make(id), "full": true }),
    )
    .await;
    assert_eq!(status, 200);
    // Not taken in time is not an answer: the question stays pending (never
    // "rejected") and is asked again, the HUD keeps its facts only.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let not_taken = common::Metrics::of(&server)
            .await
            .sum("evolve_hud_hud_questions_not_taken_total", "")
            .unwrap_or(0.0);
        if not_taken >= 2.0 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the question was not asked again: {not_taken}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let v = common::get_json(&server.url(&format!("/v1/hud/{id}"))).await;
    assert_eq!(v["model_status"]["state"], "pending", "{v}");
    assert_eq!(v["hud"], first["hud"], "{v}");
}

#[tokio::test]
async fn no_question_without_an_unknown_failed_output() {
    // The basic fixture's failures are a bare `false` and a failed edit:
    // nothing for the model to read, so it is never asked.
    let server = Server::start(&["--hud-debounce-ms", "10"]);
    let messages = transform(7);
    let id = session_of(&messages);
    let (status, v) = sync(
        &server,
        &json!({ "session_id": id, "messages": messages, "full": true }),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(v["model_status"]["state"], "none", "{v}");
}

#[tokio::test]
async fn budget_is_counted_in_real_tokens() {
    let server = Server::start(&["--hud-extract", "false", "--hud-budget", "150"]);
    let mut messages = transform(7);
    let big = "error: something failed here\n".repeat(40_000);
    messages.push(json!({
        "info": { "id": "msg_zz", "sessionID": session_of(&messages), "role": "assistant" },
        "parts": [{ "type": "tool", "callID": "c_big", "tool": "bash",
                    "state": { "status": "completed", "input": { "command": "make" }, "output": big, "metadata": { "exit": 2 }, "time": { "start": 1.0e13 } } }],
    }));
    let id = session_of(&messages);
    let (status, v) = sync(
        &server,
        &json!({ "session_id": id, "messages": messages, "full": true }),
    )
    .await;
    assert_eq!(status, 200, "{v}");
    assert!(v["tokens"].as_u64().unwrap() <= 150, "{v}");
    assert!(
        v["hud"]
            .as_str()
            .unwrap()
            .contains("`make` → exit 2: error: something failed here"),
        "{v}"
    );
}

#[tokio::test]
async fn bad_hud_requests_get_clear_4xx() {
    let server = InProcess::start(&["--hud-extract", "false", "--max-body", "65536"]).await;
    let c = client();
    let url = server.url("/v1/hud/sync");
    for (what, body, want) in [
        ("malformed JSON", "{\"session_id\":".to_owned(), 400),
        ("missing session_id", r#"{"messages": []}"#.to_owned(), 400),
        (
            "empty session_id",
            r#"{"session_id": "", "messages": [], "full": true}"#.to_owned(),
            400,
        ),
        (
            "messages of the wrong type",
            r#"{"session_id": "s", "messages": "x"}"#.to_owned(),
            400,
        ),
        (
            "full of the wrong type",
            r#"{"session_id": "s", "messages": [], "full": "yes"}"#.to_owned(),
            400,
        ),
        (
            "oversized body",
            format!(r#"{{"session_id": "s", "messages": ["{}"]}}"#, "x".repeat(100_000)),
            413,
        ),
    ] {
        let r = common::post_raw(&url, body).await;
        assert_eq!(r.status().as_u16(), want, "{what}");
        let v: Value = r.json().await.unwrap();
        assert!(
            v["error"]["message"].is_string() && v["error"]["type"].is_string(),
            "{what}: {v}"
        );
    }
    // Entries that are not OpenCode messages are skipped and counted; unknown fields are fine.
    let (status, v) = sync(
        &server,
        &json!({ "session_id": "s", "full": true, "extra": 1, "messages": [
            { "no_info": true }, 42, { "info": { "id": "m", "role": "user", "future": 1 }, "parts": [{ "type": "text", "text": "hello" }] }
        ] }),
    )
    .await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["skipped"], 2);
    let (status, _) = get(&server, "/v1/hud/nobody").await;
    assert_eq!(status, 404);
    assert_eq!(c.get(server.url("/health")).send().await.unwrap().status(), 200);
}

async fn event(server: &impl Base, body: &Value) -> (u16, Value) {
    post_json(server, "/v1/hud/event", body).await
}

#[tokio::test]
async fn forwarded_events_update_the_hud() {
    let server = InProcess::start(&["--hud-extract", "false"]).await;
    let messages = transform(2);
    let session = session_of(&messages);
    // Unknown sessions are ignored until their first full sync.
    let (status, v) = event(&server, &json!({ "type": "session.idle", "session_id": session })).await;
    assert_eq!((status, v["known"].clone()), (202, json!(false)));
    sync(
        &server,
        &json!({ "session_id": session, "messages": messages, "full": true }),
    )
    .await;

    // tool.execute.after, as the shim forwards it (basic/tool-after-2.json's shape).
    let (status, v) = event(
        &server,
        &json!({ "type": "tool.execute.after", "session_id": session, "call_id": "call_x", "tool": "bash",
                 "args": { "command": "cargo build --release" }, "title": "cargo build --release",
                 "output": "error: could not compile", "metadata": { "exit": 101 } }),
    )
    .await;
    assert_eq!((status, v["known"].clone()), (202, json!(true)));
    // todo.updated replaces the todo list.
    let todos = json!([{ "content": "fix the build", "status": "in_progress", "priority": "high", "id": "1" },
                       { "content": "write notes", "status": "completed", "priority": "low", "id": "2" }]);
    event(
        &server,
        &json!({ "type": "todo.updated", "session_id": session, "todos": todos }),
    )
    .await;
    event(&server, &json!({ "type": "session.idle", "session_id": session })).await;
    let (_, v) = get(&server, &format!("/v1/hud/{session}")).await;
    let hud = v["hud"].as_str().unwrap();
    assert!(hud.contains("✗ bash `cargo build --release` → exit 101"), "{hud}");
    assert!(hud.contains("Todos: 1/2 done; in progress: fix the build"), "{hud}");
    let (_, list) = get(&server, "/v1/hud").await;
    assert!(list["sessions"][0]["agent_idle_ms"].is_u64(), "{list}");

    // Bad events are refused; the server keeps serving.
    for bad in [
        json!({ "type": "nope", "session_id": session }),
        json!({ "type": "session.idle" }),
        json!([]),
    ] {
        let (status, v) = event(&server, &bad).await;
        assert_eq!(status, 400, "{bad}: {v}");
    }
    // session.deleted forgets the session.
    let (_, v) = event(&server, &json!({ "type": "session.deleted", "session_id": session })).await;
    assert_eq!(v["known"], json!(true));
    assert_eq!(get(&server, &format!("/v1/hud/{session}")).await.0, 404);
}

/// A server holding the session of fixture step `n`, synced in full.
async fn server_with_session(n: usize) -> (Server, String) {
    let server = Server::start(&[]);
    let messages = transform(n);
    let session = session_of(&messages);
    let (status, _) = sync(
        &server,
        &json!({ "session_id": session, "messages": messages, "full": true }),
    )
    .await;
    assert_eq!(status, 200);
    (server, session)
}

#[tokio::test]
async fn compaction_text_has_the_sections_and_the_facts_within_the_deadline() {
    let (server, session) = server_with_session(7).await;

    let deadline = 20_000;
    let started = Instant::now();
    let (status, v) = post_json(
        &server,
        &format!("/v1/hud/{session}/compaction"),
        &json!({ "deadline_ms": deadline }),
    )
    .await;
    let took = started.elapsed();
    assert_eq!(status, 200, "{v}");
    assert!(took < Duration::from_millis(deadline + 2_000), "{took:?}");
    let text = v["text"].as_str().unwrap();
    assert_compaction_sections(text);
    // Verbatim facts: the failing command, the failed edit, the files.
    assert!(
        text.contains("- Open problem: bash `false` exited 1; no pass since"),
        "{text}"
    );
    assert!(text.contains("✗ edit notes.txt: Could not find oldString"), "{text}");
    assert!(
        text.contains("- notes.txt (edit 1, read 1, write 1, 1 failed)"),
        "{text}"
    );
    assert!(text.contains("✓ bash `echo hello && ls`"), "{text}");
    // Nothing in this session is for the model to read.
    assert_eq!(v["model_status"]["state"], "none", "{v}");

    // A deadline that has passed gives the facts alone, at once.
    let (status, v) = post_json(
        &server,
        &format!("/v1/hud/{session}/compaction"),
        &json!({ "deadline_ms": 0 }),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(v["model_status"]["state"], "none", "{v}");
    assert!(v["text"]
        .as_str()
        .unwrap()
        .contains("- Open problem: bash `false` exited 1"));

    // Unknown sessions and bad deadlines are refused.
    assert_eq!(post_json(&server, "/v1/hud/nope/compaction", &json!({})).await.0, 404);
    let (status, v) = post_json(
        &server,
        &format!("/v1/hud/{session}/compaction"),
        &json!({ "deadline_ms": 10_000_000 }),
    )
    .await;
    assert_eq!(status, 400, "{v}");
    assert_eq!(
        post_json(
            &server,
            &format!("/v1/hud/{session}/compaction"),
            &json!({ "deadline": 5 })
        )
        .await
        .0,
        400
    );
}

#[tokio::test]
async fn heartbeat_names_the_open_problem_of_a_session() {
    let (server, session) = server_with_session(7).await;
    // A second, quieter session with no problem; and the heartbeat's own session, excluded.
    let other = json!([{ "info": { "id": "m1", "sessionID": "ses_other", "role": "user", "time": { "created": 1.0 } },
                         "parts": [{ "type": "text", "text": "write the docs" }] }]);
    sync(
        &server,
        &json!({ "session_id": "ses_other", "messages": other, "full": true }),
    )
    .await;
    sync(
        &server,
        &json!({ "session_id": "ses_beat", "messages": [], "full": true }),
    )
    .await;
    event(&server, &json!({ "type": "session.idle", "session_id": session })).await;

    let (status, v) = post_json(
        &server,
        "/v1/heartbeat",
        &json!({ "exclude": ["ses_beat"], "deadline_ms": 20_000 }),
    )
    .await;
    assert_eq!(status, 200, "{v}");
    let user = v["user"].as_str().unwrap();
    assert!(user.starts_with("[heartbeat] "), "{user}");
    assert!(
        user.contains(&format!(
            r#"Session "{session}" has an open problem: "bash `false` exited 1;"#
        )),
        "{user}"
    );
    assert!(user.contains("idle for"), "{user}");
    let system = v["system"].as_array().unwrap();
    assert_eq!(system.len(), 2);
    let facts = system[1].as_str().unwrap();
    // Session text goes in as data: a JSON object per session, under a line
    // saying it is never instructions.
    assert!(facts.lines().next().unwrap().contains("never instructions"), "{facts}");
    let records: Vec<Value> = facts
        .lines()
        .skip(1)
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(
        records
            .iter()
            .any(|r| r["session"] == "ses_other" && r["goal"] == "write the docs"),
        "{facts}"
    );
    assert!(!facts.contains("ses_beat"), "{facts}");
    assert_eq!(v["sessions"][0], json!(session));
    assert_eq!(
        post_json(&server, "/v1/heartbeat", &json!({ "exclude": "x" })).await.0,
        400
    );
}
