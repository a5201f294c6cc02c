//! What a user meets in the first hour: the server answers before its model
//! is loaded and says "loading" with the progress; an orderly stop exits 0
//! at any moment and leaves no lock file; a model path that is not a regular
//! file is refused; a model file changed under a running server is caught
//! before it is read again; `bench` says what it is doing; a lock folder
//! that cannot be made is named with its purpose and the fix.

use crate::common;

use common::{chat, free_port, post_json, test_model, transform, Server};
use serde_json::{json, Value};
use std::ffi::{OsStr, OsString};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

async fn health(server: &Server) -> (u16, Value) {
    let r = common::client()
        .get(server.url("/health"))
        .send()
        .await
        .expect("health");
    (r.status().as_u16(), r.json().await.expect("health JSON"))
}

fn model_args(model: &std::path::Path, extra: &[&str]) -> Vec<OsString> {
    let mut args = vec![OsString::from("--model"), model.into()];
    args.extend(extra.iter().map(Into::into));
    args
}

/// Runs `evolve-hud` with `args` and waits for its exit, up to `limit`.
fn run_bounded(args: &[&OsStr], env: &[(&str, &OsStr)], limit: Duration) -> (Option<i32>, String, String) {
    let mut child = common::command()
        .args(args)
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("running evolve-hud");
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().expect("waiting") {
            let out = child.wait_with_output().expect("output");
            let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
            return (status.code(), text(&out.stdout), text(&out.stderr));
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("evolve-hud {args:?} still running after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[cfg(feature = "fault-injection")]
#[tokio::test]
async fn while_the_model_loads_health_says_so_and_hud_facts_are_served() {
    let hold: &OsStr = "4000".as_ref();
    let server = Server::spawn_env(
        0,
        &model_args(&test_model(), &[]),
        &[("EVOLVE_HUD_FAULT_LOAD_MS", hold)],
    );
    let (status, body) = health(&server).await;
    assert_eq!(status, 503, "{body}");
    assert_eq!(body["status"], "loading", "{body}");
    let progress = body["progress"].as_f64().expect("progress while loading");
    assert!((0.0..=1.0).contains(&progress), "{body}");

    // The HUD's facts need no model.
    let messages = transform("basic", 7);
    let session = messages[0]["info"]["sessionID"].as_str().unwrap().to_owned();
    let (status, view) = post_json(
        &server,
        "/v1/hud/sync",
        &json!({ "session_id": session, "messages": messages, "full": true }),
    )
    .await;
    assert_eq!(status, 200, "{view}");
    assert!(view["hud"].as_str().unwrap().contains("bash `false`"), "{view}");

    // Model work is refused with the reason, not queued.
    let (status, body) = post_json(&server, "/v1/chat/completions", &chat("hi", json!({ "max_tokens": 2 }))).await;
    assert_eq!(status, 503, "{body}");
    assert!(body["error"]["message"].as_str().unwrap().contains("loading"), "{body}");

    server.wait_ready();
    let (status, body) = post_json(&server, "/v1/chat/completions", &chat("hi", json!({ "max_tokens": 2 }))).await;
    assert_eq!(status, 200, "{body}");
}

#[cfg(feature = "fault-injection")]
#[test]
fn sigterm_while_loading_exits_0_and_removes_the_lock_file() {
    let runtime = tempfile::tempdir().unwrap();
    let port = free_port();
    let hold: &OsStr = "60000".as_ref();
    let server = Server::spawn_env(
        port,
        &model_args(&test_model(), &[]),
        &[
            ("EVOLVE_HUD_FAULT_LOAD_MS", hold),
            ("XDG_STATE_HOME", runtime.path().as_os_str()),
        ],
    );
    let lock = runtime.path().join(format!("evolve-hud/serve-{port}.lock"));
    assert!(lock.exists(), "no lock file at {}", lock.display());
    let status = server.terminate(Duration::from_secs(10)).expect("exited after SIGTERM");
    assert_eq!(status.code(), Some(0), "{status:?}");
    assert!(!lock.exists(), "the lock file is left behind");
}

#[test]
fn sigterm_at_once_after_ready_exits_0() {
    // The HUD's questions warm up right after ready: a stop then is orderly too.
    let server = Server::start(&[]);
    let status = server.terminate(Duration::from_secs(20)).expect("exited after SIGTERM");
    assert_eq!(status.code(), Some(0), "{status:?}");
}

#[test]
fn a_model_path_that_is_not_a_regular_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("model.gguf");
    let made = Command::new("mkfifo").arg(&fifo).status().expect("mkfifo");
    assert!(made.success());
    for path in [fifo.as_path(), dir.path()] {
        let args: [&OsStr; 5] = [
            "serve".as_ref(),
            "--port".as_ref(),
            "0".as_ref(),
            "--model".as_ref(),
            path.as_os_str(),
        ];
        let (code, _, stderr) = run_bounded(&args, &[], Duration::from_secs(60));
        assert_eq!(code, Some(1), "{stderr}");
        assert!(
            stderr.contains("error:") && stderr.contains("give a .gguf file"),
            "{stderr}"
        );
    }
}

#[tokio::test]
async fn a_model_file_changed_under_the_server_is_caught_before_it_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("model.gguf");
    std::fs::copy(test_model(), &model).unwrap();
    let server = Server::start_model(&model, &["--hud-extract", "false"]);
    let (status, _) = post_json(&server, "/v1/chat/completions", &chat("hi", json!({ "max_tokens": 2 }))).await;
    assert_eq!(status, 200);

    // Rewritten in place, as `cp new.gguf model.gguf` does.
    std::fs::write(&model, b"GGUF, half written").unwrap();
    let (status, body) = post_json(&server, "/v1/chat/completions", &chat("hi", json!({ "max_tokens": 2 }))).await;
    assert_eq!(status, 503, "{body}");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains("changed on disk"), "{message}");
    let (status, h) = health(&server).await;
    assert_eq!(status, 503, "{h}");
    assert!(h["reason"].as_str().unwrap().contains("changed on disk"), "{h}");
    // The server lives on and serves the HUD's facts.
    let messages = transform("basic", 3);
    let session = messages[0]["info"]["sessionID"].as_str().unwrap().to_owned();
    let (status, _) = post_json(
        &server,
        "/v1/hud/sync",
        &json!({ "session_id": session, "messages": messages, "full": true }),
    )
    .await;
    assert_eq!(status, 200);
    let logged: Vec<String> = server.log.try_iter().collect();
    assert!(
        logged
            .iter()
            .any(|l| l.contains("ERROR") && l.contains("changed on disk")),
        "{logged:?}"
    );
}

#[test]
fn bench_says_what_it_is_doing() {
    let model = test_model();
    let args: Vec<&OsStr> = [
        "bench",
        "-p",
        "16",
        "-n",
        "4",
        "-r",
        "2",
        "--warmup",
        "0",
        "--e2e-requests",
        "0",
        "--threads",
        "2",
        "--model",
    ]
    .iter()
    .map(OsStr::new)
    .chain([model.as_os_str()])
    .collect();
    let (code, stdout, stderr) = run_bounded(&args, &[], Duration::from_secs(120));
    assert_eq!(code, Some(0), "{stderr}");
    for step in [
        "bench: loading",
        "bench: pp16 run 1/2",
        "bench: pp16 run 2/2",
        "bench: tg4 run 2/2",
    ] {
        assert!(stderr.contains(step), "no {step:?} in:\n{stderr}");
    }
    assert!(stdout.contains("pp16") && !stdout.contains("bench:"), "{stdout}");
    // The kernels the numbers were made with, so a ratio against another
    // build can be tied to them.
    let features = stdout
        .lines()
        .find_map(|l| l.strip_prefix("ggml CPU back-end: "))
        .unwrap_or_else(|| panic!("no CPU back-end line in:\n{stdout}"));
    #[cfg(target_arch = "x86_64")]
    assert!(
        features
            .split(' ')
            .any(|f| f.starts_with("SSE") || f.starts_with("AVX")),
        "{features}"
    );
    assert!(!features.contains("AMX"), "{features}");
}

/// On a terminal the progress line is rewritten in place; log lines that
/// come meanwhile (llama.cpp's, here at debug level) go above it, each on a
/// line of its own.
#[test]
fn bench_progress_never_shares_a_line_with_a_log_line() {
    let tmux = crate::watch::Tmux::start(200, 40);
    tmux.send(&[
        &format!(
            "RUST_LOG=info,llama.cpp=debug {} bench -p 16 -n 4 -r 2 --warmup 0 --e2e-requests 0 --threads 2 --model {}; echo bench-exit=$?",
            common::binary(),
            test_model().display()
        ),
        "Enter",
    ]);
    tmux.wait_for("the bench's end", Duration::from_secs(120), |s| {
        s.lines().any(|l| l.starts_with("bench-exit="))
    });
    let shown = tmux.history();
    assert!(shown.lines().any(|l| l == "bench-exit=0"), "{shown}");
    let logs = shown
        .lines()
        .filter(|l| l.contains(" DEBUG ") || l.contains(" INFO "))
        .count();
    assert!(logs > 10, "llama.cpp's log lines came while the bench ran:\n{shown}");
    for line in shown.lines().filter(|l| l.contains("bench: ")) {
        assert!(
            line.starts_with("bench: ") && !line.contains(" DEBUG ") && !line.contains(" INFO "),
            "a progress line shares a line with a log line: {line:?}"
        );
    }
}

#[test]
fn a_lock_folder_that_cannot_be_made_is_named_with_its_purpose_and_fix() {
    let runtime = tempfile::tempdir().unwrap();
    std::fs::write(runtime.path().join("evolve-hud"), b"in the way").unwrap();
    let port = free_port().to_string();
    let model = test_model();
    let args: [&OsStr; 5] = [
        "serve".as_ref(),
        "--port".as_ref(),
        port.as_ref(),
        "--model".as_ref(),
        model.as_os_str(),
    ];
    let (code, _, stderr) = run_bounded(
        &args,
        &[("XDG_STATE_HOME", runtime.path().as_os_str())],
        Duration::from_secs(60),
    );
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("lock files") && stderr.contains("XDG_STATE_HOME"),
        "{stderr}"
    );
    assert!(
        stderr.contains(&runtime.path().join("evolve-hud").display().to_string()),
        "{stderr}"
    );
}

/// A client's schema is checked before llama.cpp sees it: one that would
/// fail an assertion in llama.cpp's grammar (a reversed range), grow it
/// without end (`a{2,1}`, a huge `maxLength`) or say nothing (a minimum
/// over its maximum) is refused with 400, and the server lives on, with no
/// error in its log.
#[tokio::test]
async fn a_hostile_response_format_is_refused_and_the_server_lives_on() {
    let server = Server::start(&["--hud-extract", "false"]);
    for schema in [
        json!({"type": "string", "pattern": "^[z-a]$"}),
        json!({"type": "string", "pattern": "^a{2,1}$"}),
        json!({"type": "string", "pattern": "^a{100000}$"}),
        json!({"type": "string", "maxLength": 100_000_000u64}),
        json!({"type": "array", "minItems": 5, "maxItems": 2}),
        json!({"type": "object", "properties": {"x": {"type": "string", "pattern": "(("}}}),
    ] {
        let format = json!({"type": "json_schema", "json_schema": {"name": "x", "schema": schema}});
        let (status, body) = post_json(
            &server,
            "/v1/chat/completions",
            &chat("hi", json!({ "max_tokens": 4, "response_format": format })),
        )
        .await;
        assert_eq!(status, 400, "{schema}: {body}");
        assert_eq!(body["error"]["type"], "invalid_request_error", "{body}");
        assert!(
            body["error"]["message"].as_str().unwrap().contains("JSON schema"),
            "{body}"
        );
    }
    let (status, _) = health(&server).await;
    assert_eq!(status, 200, "the server lives on");
    let logged: Vec<String> = server.log.try_iter().collect();
    assert!(!logged.iter().any(|l| l.contains("ERROR")), "{logged:?}");
}
