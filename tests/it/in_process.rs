//! The HTTP side and the HUD in-process on port 0, with a scripted fake
//! engine where the model is not the subject: how the HUD treats an answer
//! (checked and shown, refused, or not taken and asked again) and how the
//! chat API maps engine errors.

use crate::common;

use common::fake::{InProcess, Script};
use common::hud::failed_call;
use evolve_hud::engine::EngineError;
use serde_json::{json, Value};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The API in-process on `script`, asking about a change after 10 ms.
async fn serve(script: &Arc<Script>) -> InProcess {
    InProcess::start_with(
        script.clone(),
        &["--hud-debounce-ms", "10", "--queue-timeout-ms", "5000"],
    )
    .await
}

async fn post(url: String, body: &Value) -> (u16, reqwest::header::HeaderMap, Value) {
    let r = common::client().post(url).json(body).send().await.unwrap();
    let (status, headers) = (r.status().as_u16(), r.headers().clone());
    (status, headers, r.json().await.unwrap_or(Value::Null))
}

/// The session's HUD once its question has been settled.
async fn settled(base: &str, id: &str) -> Value {
    when(base, id, |v| v["model_status"]["state"] != "pending").await
}

/// The session's HUD once `until` holds of it.
async fn when(base: &str, id: &str, until: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let v = common::get_json(&format!("{base}/v1/hud/{id}")).await;
        if until(&v) {
            return v;
        }
        assert!(Instant::now() < deadline, "never came: {v}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

const OUTPUT: &str = "running checks\ncheck_add ... ok\ncheck_div ... FAILED\n  div.c:7: expected 2 got 3\n\
check_avg ... FAILED\n  avg.c:3: expected 2.5 got 2\n2 checks failed";

async fn sync(base: &str, id: &str, messages: Vec<Value>, full: bool) -> Value {
    let (status, _, v) = post(
        format!("{base}/v1/hud/sync"),
        &json!({ "session_id": id, "messages": messages, "full": full }),
    )
    .await;
    assert_eq!(status, 200, "{v}");
    v
}

#[tokio::test]
async fn a_checked_answer_is_shown_and_an_unchecked_one_refused() {
    let script = Arc::new(Script::default());
    let server = serve(&script).await;
    let base = server.base.clone();

    script.push(Ok(
        r#"{"failures":[{"name":"check_avg","quote":"avg.c:3: expected 2.5 got 2"}]}"#,
    ));
    sync(&base, "good", failed_call("good", "./checks.sh", OUTPUT, 1), true).await;
    let v = settled(&base, "good").await;
    assert_eq!(v["model_status"]["state"], "ready", "{v}");
    assert!(
        v["hud"]
            .as_str()
            .unwrap()
            .contains("each line checked there: \"avg.c:3: expected 2.5 got 2\""),
        "{v}"
    );

    // A quote that is not in the output never reaches the HUD.
    script.push(Ok(
        r#"{"failures":[{"name":"check_avg","quote":"avg.c:3: rounding error in avg"}]}"#,
    ));
    sync(&base, "bad", failed_call("bad", "./checks.sh", OUTPUT, 1), true).await;
    let v = settled(&base, "bad").await;
    assert!(common::model_status_text(&v).starts_with("rejected: "), "{v}");
    assert!(!v["hud"].as_str().unwrap().contains("local model"), "{v}");
    assert_eq!(script.calls.load(Ordering::SeqCst), 2);

    // The engine was warmed once, before the first question, with the start
    // every question shares (the instructions and the worked example).
    let warmups = script.warmups.lock().unwrap().clone();
    assert_eq!(warmups.len(), 1, "{warmups:?}");
    let questions = script.questions.lock().unwrap().clone();
    assert_eq!(questions.len(), 2);
    let shared = warmups[0].len() - 1;
    assert_eq!(warmups[0][shared].role, "user");
    for question in questions {
        assert_eq!(question.len(), warmups[0].len());
        assert_eq!(question[..shared], warmups[0][..shared]);
        let (asked, warm) = (&question[shared].content, &warmups[0][shared].content);
        assert!(
            asked.starts_with("Command: `") && warm.starts_with("Command: `"),
            "{warm}"
        );
        assert!(asked.contains("avg.c:3: expected 2.5 got 2"));
    }
}

#[tokio::test]
async fn an_item_is_shown_as_soon_as_it_is_written_and_checked() {
    let script = Arc::new(Script::default());
    let server = serve(&script).await;
    let base = server.base.clone();
    // The names stand above their lines, not on them: the lines are shown alone.
    let div = "\"div.c:7: expected 2 got 3\"";
    let avg = "\"avg.c:3: expected 2.5 got 2\"";
    let hud = |v: &Value| v["hud"].as_str().unwrap().to_owned();

    // The first item is shown while the model is still writing the second,
    // and the question stays pending until the whole answer is in.
    script.hold(
        r#"{"failures":[{"name":"check_div","quote":"div.c:7: expected 2 got 3"},"#,
        Ok(r#"{"name":"check_avg","quote":"avg.c:3: expected 2.5 got 2"}]}"#),
    );
    sync(&base, "s", failed_call("s", "./checks.sh", OUTPUT, 1), true).await;
    let v = when(&base, "s", |v| hud(v).contains(div)).await;
    assert!(!hud(&v).contains(avg), "{v}");
    assert_eq!(v["model_status"]["state"], "pending", "{v}");
    script.release.notify_one();
    let v = settled(&base, "s").await;
    assert!(hud(&v).contains(div) && hud(&v).contains(avg), "{v}");
    assert_eq!(v["model_status"]["state"], "ready", "{v}");

    // An item once checked stays when the answer then fails.
    script.hold(
        r#"{"failures":[{"name":"check_avg","quote":"avg.c:3: expected 2.5 got 2"}, {"name":"#,
        Err(EngineError::Backend("decode failed".into())),
    );
    sync(&base, "t", failed_call("t", "./checks.sh", OUTPUT, 1), true).await;
    let v = when(&base, "t", |v| hud(v).contains(avg)).await;
    assert_eq!(v["model_status"]["state"], "pending", "{v}");
    let version = v["version"].clone();
    assert!(version.is_u64(), "{v}");
    script.release.notify_one();
    let v = settled(&base, "t").await;
    assert_eq!(v["model_status"]["state"], "ready", "{v}");
    assert!(hud(&v).contains(avg), "{v}");
    assert_eq!(v["version"], version, "{v}");
    assert_eq!(script.calls.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn a_question_the_engine_cannot_take_is_asked_again() {
    let script = Arc::new(Script::default());
    let server = serve(&script).await;
    let base = server.base.clone();
    // Refused once (engine down), then answered: with no new sync, the
    // question is asked again after a pause, not dropped or rejected.
    script.push(Err(EngineError::Unavailable("engine: cannot connect".into())));
    script.push(Ok(
        r#"{"failures":[{"name":"check_div","quote":"div.c:7: expected 2 got 3"}]}"#,
    ));
    let messages = failed_call("s", "./checks.sh", OUTPUT, 1);
    sync(&base, "s", messages.clone(), true).await;
    let v = settled(&base, "s").await;
    assert_eq!(v["model_status"]["state"], "ready", "{v}");
    assert_eq!(script.calls.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn the_chat_api_maps_engine_errors() {
    let script = Arc::new(Script::default());
    let server = serve(&script).await;
    let base = server.base.clone();
    let chat = json!({ "messages": [{ "role": "user", "content": "hi" }] });
    let url = || format!("{base}/v1/chat/completions");

    script.push(Ok("hello"));
    let (status, _, v) = post(url(), &chat).await;
    assert_eq!(
        (status, v["choices"][0]["message"]["content"].as_str()),
        (200, Some("hello")),
        "{v}"
    );

    let upstream = |status, retry_after| EngineError::Upstream {
        status,
        message: "engine says no".into(),
        retry_after,
    };
    script.push(Err(upstream(429, Some(9))));
    let (status, headers, v) = post(url(), &chat).await;
    assert_eq!((status, v["error"]["type"].as_str()), (429, Some("overloaded")), "{v}");
    assert_eq!(headers["retry-after"], "9");

    // The engine's own 401 is about the engine's token, not the client's.
    script.push(Err(upstream(401, None)));
    let (status, headers, v) = post(url(), &chat).await;
    assert_eq!(
        (status, v["error"]["type"].as_str()),
        (502, Some("engine_error")),
        "{v}"
    );
    assert!(headers.get("retry-after").is_none());

    script.push(Err(EngineError::ContextExceeded {
        prompt: 5000,
        ctx: 4096,
    }));
    let (status, _, v) = post(url(), &chat).await;
    assert_eq!(
        (status, v["error"]["type"].as_str()),
        (400, Some("context_length_exceeded")),
        "{v}"
    );
}

/// A sync with `wait_ms` returns once the question's first verified finding
/// is shown, so the agent's next request carries it; without it, a sync
/// never waits; a question about an older call than the newest holds no
/// sync (it has missed its request already); past the limit, the request is
/// refused.
#[tokio::test]
async fn a_sync_may_wait_for_the_findings_within_its_bound() {
    let script = Arc::new(Script::default());
    let server = serve(&script).await;
    let base = server.base.clone();
    let url = format!("{base}/v1/hud/sync");

    script.hold(
        r#"{"failures":[{"name":"check_avg","quote":"avg.c:3: expected 2.5 got 2"}"#,
        Ok("]}"),
    );
    let body = json!({ "session_id": "w", "messages": failed_call("w", "./checks.sh", OUTPUT, 1), "full": true, "wait_ms": 2000 });
    let started = Instant::now();
    let (status, _, v) = post(url.clone(), &body).await;
    assert_eq!(status, 200, "{v}");
    assert!(
        v["hud"]
            .as_str()
            .unwrap()
            .contains("each line checked there: \"avg.c:3: expected 2.5 got 2\""),
        "the first finding is in the sync's answer: {v}"
    );
    assert!(
        started.elapsed() < Duration::from_millis(1500),
        "{:?}",
        started.elapsed()
    );
    script.release.notify_one();
    assert_eq!(settled(&base, "w").await["model_status"]["state"], "ready");

    // No answer comes: the sync returns at its bound, still pending.
    script.hold("{", Ok("]}"));
    let body = json!({ "session_id": "x", "messages": failed_call("x", "./checks.sh", OUTPUT, 1), "full": true, "wait_ms": 300 });
    let started = Instant::now();
    let (_, _, v) = post(url.clone(), &body).await;
    assert_eq!(v["model_status"]["state"], "pending", "{v}");
    assert!(started.elapsed() >= Duration::from_millis(300) && started.elapsed() < Duration::from_secs(2));
    // The agent moves on while that question is still with the model: a
    // later call that passed raises nothing, and its sync does not wait for
    // the older call's answer.
    let next = json!([{ "info": { "id": "msg_m2", "sessionID": "x", "role": "assistant", "path": { "cwd": "/p", "root": "/p" } },
        "parts": [{ "type": "tool", "id": "prt_m2", "callID": "call_m2", "tool": "bash",
                    "state": { "status": "completed", "input": { "command": "ls" }, "output": "avg.c\n",
                               "metadata": { "exit": 0 }, "time": { "start": 4.0, "end": 5.0 } } }] }]);
    let body = json!({ "session_id": "x", "messages": next, "wait_ms": 10_000 });
    let started = Instant::now();
    let (status, _, v) = post(url.clone(), &body).await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(
        v["model_status"]["state"], "pending",
        "still asking about the older call: {v}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "a question about an older call holds no sync: {:?}",
        started.elapsed()
    );
    script.release.notify_one();

    // A held sync sends its head at once and its body when the wait ends,
    // so a client can bound the head by its own timeout.
    script.hold("{", Ok("]}"));
    let body = json!({ "session_id": "z", "messages": failed_call("z", "./checks.sh", OUTPUT, 1), "full": true, "wait_ms": 10_000 });
    let held = tokio::time::timeout(
        Duration::from_secs(5),
        common::client().post(url.clone()).json(&body).send(),
    )
    .await
    .expect("the head comes at once")
    .expect("a response");
    assert_eq!(held.status(), 200);
    let mut body = std::pin::pin!(held.json::<Value>());
    assert!(
        tokio::time::timeout(Duration::from_millis(200), body.as_mut())
            .await
            .is_err(),
        "the body waits for the model"
    );
    script.release.notify_one();
    let v = body.await.expect("the held view");
    assert_ne!(v["model_status"]["state"], "pending", "{v}");

    let body = json!({ "session_id": "y", "messages": [], "wait_ms": 60_000 });
    let (status, _, v) = post(url, &body).await;
    assert_eq!(status, 400, "{v}");
    assert!(v["error"]["message"].as_str().unwrap().contains("wait_ms"), "{v}");
}

#[tokio::test]
async fn two_servers_in_one_process_keep_their_own_activity_and_ids() {
    let (one, two) = (Arc::new(Script::default()), Arc::new(Script::default()));
    let (a, b) = (serve(&one).await, serve(&two).await);
    let chat = json!({ "messages": [{ "role": "user", "content": "hi" }] });
    let mut ids = Vec::new();
    for _ in 0..2 {
        one.push(Ok("hello"));
        let (status, _, v) = post(format!("{}/v1/chat/completions", a.base), &chat).await;
        assert_eq!(status, 200, "{v}");
        ids.push(v["id"].as_str().unwrap().to_owned());
    }
    two.push(Ok("hello"));
    let (_, _, v) = post(format!("{}/v1/chat/completions", b.base), &chat).await;
    assert_eq!(ids, ["chatcmpl-1", "chatcmpl-2"]);
    assert_eq!(v["id"], "chatcmpl-1", "the second server counts its own ids");
    let completions = |base: String| async move {
        common::get_json(&format!("{base}/v1/status")).await["activity"]["completions"].clone()
    };
    assert_eq!(completions(a.base.clone()).await, 2);
    assert_eq!(completions(b.base.clone()).await, 1);
}
