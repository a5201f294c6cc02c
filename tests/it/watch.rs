//! What a person sees: `GET /v1/events`, `evolve-hud status`, and
//! `evolve-hud watch` driven in a real terminal (tmux) against the real
//! sidecar and model, with sessions from real OpenCode captures.

use crate::common;

use common::hud::sync;
use common::{binary, client, free_port, transform, Server};
use eventsource_stream::Eventsource;
use futures_util::StreamExt;
use serde_json::{json, Value};
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The model's questions are off where a test counts events, so that only
/// the syncs change a HUD.
/// The session of the `basic` capture.
const SESSION: &str = "ses_dfe6277e3ffeQ2MFjzCtaurc8i";

/// The capture's messages before main-model request `n`.
fn step(n: usize) -> Value {
    json!({ "session_id": SESSION, "messages": transform("basic", n), "full": true })
}

/// A longer session, from its capture: the `python-rename-refactor` session
/// up to its failed test run, whose HUD (9 tool calls, a long files line,
/// an open problem) is longer than the HUD pane at 80×24.
fn long_session() -> (String, Value) {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sessions/python-git-bisect-run.json");
    let capture: Value = serde_json::from_slice(&std::fs::read(&path).expect("fixture")).expect("fixture JSON");
    let messages: Vec<Value> = capture["messages"].as_array().expect("messages")[..24].to_vec();
    let id = messages[0]["info"]["sessionID"]
        .as_str()
        .expect("a session id")
        .to_owned();
    let body = json!({ "session_id": id, "messages": messages, "full": true });
    (id, body)
}

/// Runs `evolve-hud` with `args`; see [`run_within`].
fn evolve_hud(args: &[&str], limit: Duration) -> Output {
    run_within(common::command().args(args), limit)
}

/// Runs `command`, killed past `limit`: a command that hangs fails the test
/// with its name instead of holding the run. (Its output is small enough
/// for the pipes' buffers.)
fn run_within(command: &mut Command, limit: Duration) -> Output {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("running evolve-hud");
    let deadline = Instant::now() + limit;
    while child.try_wait().expect("waiting for evolve-hud").is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("{command:?} ran past {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().expect("evolve-hud's output")
}

/// The events of one `GET /v1/events` stream, as (name, data).
struct Events {
    rx: tokio::sync::mpsc::UnboundedReceiver<(String, Value)>,
    task: tokio::task::JoinHandle<()>,
}

impl Events {
    async fn open(server: &Server) -> Events {
        let response = client().get(server.url("/v1/events")).send().await.unwrap();
        assert_eq!(response.status(), 200);
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        let task = tokio::spawn(async move {
            let mut events = response.bytes_stream().eventsource();
            while let Some(Ok(e)) = events.next().await {
                let data = serde_json::from_str(&e.data).expect("event data is JSON");
                if tx.send((e.event, data)).is_err() {
                    return;
                }
            }
        });
        Events { rx, task }
    }

    /// The next event not named `status`, if one comes within `wait`.
    async fn next_change(&mut self, wait: Duration) -> Option<(String, Value)> {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            match tokio::time::timeout_at(deadline, self.rx.recv()).await {
                Ok(Some((name, _))) if name == "status" => continue,
                Ok(Some(event)) => return Some(event),
                Ok(None) | Err(_) => return None,
            }
        }
    }
}

async fn streams_open(server: &Server) -> Option<f64> {
    common::Metrics::of(server).await.sum("evolve_hud_event_streams", "")
}

/// Each version of a session's HUD is rendered once, however many read it:
/// the syncs, three watchers and repeated GETs share one render per version.
#[tokio::test(flavor = "multi_thread")]
async fn each_hud_version_is_rendered_once_however_many_read_it() {
    let server = Server::facts_only(&[]);
    let mut watchers = Vec::new();
    for _ in 0..3 {
        watchers.push(Events::open(&server).await);
    }
    let mut versions = std::collections::BTreeSet::new();
    let mut reads = 0;
    for n in 1..=7 {
        let (code, view) = sync(&server, &step(n)).await;
        assert_eq!(code, 200, "{view}");
        versions.insert(view["version"].as_u64().expect("a version"));
        reads += 1;
        for _ in 0..2 {
            let got = common::get_json(&server.url(&format!("/v1/hud/{SESSION}"))).await;
            versions.insert(got["version"].as_u64().expect("a version"));
            reads += 1;
        }
    }
    let last = *versions.last().unwrap();
    for watcher in &mut watchers {
        // Each watcher reads every HUD it is told of, up to the last one.
        loop {
            let (name, data) = watcher
                .next_change(Duration::from_secs(5))
                .await
                .expect("the watcher sees the last version");
            assert_eq!(name, "hud");
            versions.insert(data["version"].as_u64().expect("a version"));
            reads += 1;
            if data["version"] == last {
                break;
            }
        }
    }
    let renders = common::Metrics::of(&server)
        .await
        .sum("evolve_hud_hud_renders_total", "")
        .expect("the render counter");
    assert_eq!(
        renders as usize,
        versions.len(),
        "one render per version ({versions:?}), over {reads} reads"
    );
    assert!(reads >= 3 * renders as usize, "{reads} reads, {renders} renders");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_event_stream_sends_one_event_per_hud_change() {
    let server = Server::facts_only(&[]);
    let mut events = Events::open(&server).await;
    let (name, status) = tokio::time::timeout(Duration::from_secs(5), events.rx.recv())
        .await
        .expect("a status at once")
        .expect("open");
    assert_eq!(name, "status");
    assert_eq!(status["ready"], true);

    let (code, first) = sync(&server, &step(2)).await;
    assert_eq!(code, 200, "{first}");
    let (name, data) = events.next_change(Duration::from_secs(2)).await.expect("a hud event");
    assert_eq!(name, "hud");
    assert_eq!(data["session_id"], SESSION);
    assert_eq!(data["version"], first["version"]);
    assert_eq!(
        data["hud"], first["hud"],
        "the event carries the HUD as the sync returned it"
    );

    // A re-sync that changes nothing sends nothing (status events go on).
    let (code, _) = sync(&server, &step(2)).await;
    assert_eq!(code, 200);
    let quiet = events.next_change(Duration::from_millis(2500)).await;
    assert!(quiet.is_none(), "no event for an unchanged HUD: {quiet:?}");

    let (_, next) = sync(&server, &step(6)).await;
    let (name, data) = events.next_change(Duration::from_secs(2)).await.expect("a hud event");
    assert_eq!((name.as_str(), &data["version"]), ("hud", &next["version"]));
    assert_ne!(data["hud"], first["hud"]);
    assert!(
        events.next_change(Duration::from_millis(500)).await.is_none(),
        "one event per change"
    );

    let deleted = client()
        .delete(server.url(&format!("/v1/hud/{SESSION}")))
        .send()
        .await
        .unwrap();
    assert_eq!(deleted.status(), 204);
    let (name, data) = events
        .next_change(Duration::from_secs(2))
        .await
        .expect("a removed event");
    assert_eq!((name.as_str(), &data), ("removed", &json!({ "session_id": SESSION })));

    // A client that goes away costs nothing: its stream is dropped.
    assert_eq!(streams_open(&server).await, Some(1.0));
    events.task.abort();
    drop(events);
    let deadline = Instant::now() + Duration::from_secs(8);
    while streams_open(&server).await != Some(0.0) {
        assert!(Instant::now() < deadline, "the stream outlived its client");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(common::http_status(&server.url("/health")), Some(200));
}

#[tokio::test(flavor = "multi_thread")]
async fn status_json_has_a_stable_shape_and_fails_when_the_sidecar_is_down() {
    let server = Server::facts_only(&[]);
    sync(&server, &step(6)).await;
    let out = evolve_hud(&["status", "--json", "--url", &server.base], Duration::from_secs(10));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let keys = |v: &Value| {
        let mut k: Vec<String> = v.as_object().expect("object").keys().cloned().collect();
        k.sort();
        k
    };
    assert_eq!(
        keys(&v),
        ["activity", "health", "queue", "reachable", "ready", "sessions", "url"]
    );
    assert_eq!((&v["reachable"], &v["url"]), (&json!(true), &json!(server.base)));
    assert_eq!(
        keys(&v["activity"]),
        ["completions", "generation_tps", "notes_rejected", "notes_shown"]
    );
    let session = &v["sessions"][0];
    assert_eq!(
        keys(session),
        [
            "agent_idle_ms",
            "bytes",
            "failed_calls",
            "goal",
            "idle_ms",
            "model_status",
            "open_problems",
            "session_id",
            "tool_calls",
            "version"
        ]
    );
    assert_eq!(v["ready"], true);
    assert_eq!(v["health"]["status"], "ready");
    assert_eq!(session["session_id"], SESSION);
    // bash `false` exited 1 and the first edit failed.
    assert_eq!(session["tool_calls"], 5);
    assert_eq!(session["failed_calls"], 2);
    assert!(session["goal"].as_str().is_some_and(|g| !g.is_empty()));

    let text = evolve_hud(&["status", "--url", &server.base], Duration::from_secs(10));
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("model ready: "), "{text}");
    assert!(
        text.contains(&format!(
            "{SESSION}  5 tool calls (2 failed) · 2 open problems · active "
        )),
        "{text}"
    );
    // The model was not asked (--hud-extract false): said so, not "none".
    assert!(text.contains(" · no questions for the model · goal: "), "{text}");
    assert!(text.contains("no model answers yet"), "{text}");
    assert!(!text.contains("model none") && !text.contains("gen –"), "{text}");

    // Without a terminal, watch says what to use instead.
    let piped = evolve_hud(&["watch", "--url", &server.base], Duration::from_secs(10));
    assert_eq!(piped.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&piped.stderr).contains("needs a terminal"));

    let port = server.port();
    drop(server);
    let down = evolve_hud(
        &["status", "--url", &format!("http://127.0.0.1:{port}")],
        Duration::from_secs(10),
    );
    assert_eq!(down.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&down.stderr);
    assert!(stderr.contains("no sidecar answers at"), "{stderr}");
    assert!(
        stderr.contains(&format!("`evolve-hud serve --port {port}`")),
        "{stderr}"
    );
}

/// Against a port where nothing listens: plain words and the command that
/// starts a sidecar, as text and as JSON, exit 1 both ways.
#[test]
fn status_against_a_stopped_sidecar_says_how_to_start_one() {
    let port = free_port();
    let url = format!("http://127.0.0.1:{port}");
    let started = Instant::now();
    let text = evolve_hud(&["status", "--url", &url], Duration::from_secs(10));
    assert_eq!(text.status.code(), Some(1));
    assert!(text.stdout.is_empty(), "nothing on stdout: {text:?}");
    let stderr = String::from_utf8_lossy(&text.stderr);
    assert_eq!(
        stderr.lines().collect::<Vec<_>>(),
        [
            format!("error: no sidecar answers at {url} (connection refused)"),
            format!(
                "hint: start one with `evolve-hud serve --port {port}`; the OpenCode plugin starts one \
                 itself unless its autostart is off"
            ),
        ],
    );

    let json = evolve_hud(&["status", "--json", "--url", &url], Duration::from_secs(10));
    assert_eq!(json.status.code(), Some(1));
    let v: Value = serde_json::from_slice(&json.stdout)
        .unwrap_or_else(|e| panic!("JSON on stdout ({e}): {}", String::from_utf8_lossy(&json.stdout)));
    let mut keys: Vec<&String> = v.as_object().expect("an object").keys().collect();
    keys.sort();
    assert_eq!(keys, ["error", "hint", "reachable", "url"]);
    assert_eq!(v["url"], url);
    assert_eq!(v["reachable"], false);
    assert_eq!(v["error"], format!("no sidecar answers at {url} (connection refused)"));
    assert!(
        v["hint"]
            .as_str()
            .is_some_and(|h| h.contains(&format!("`evolve-hud serve --port {port}`"))),
        "{v}"
    );
    // The default port needs no flag. Nothing is expected there, but a
    // sidecar could be running on it: then only the hint's command is left
    // unchecked.
    let default = evolve_hud(
        &["status", "--json", "--url", "http://127.0.0.1:8377"],
        Duration::from_secs(10),
    );
    let v: Value = serde_json::from_slice(&default.stdout).expect("JSON on stdout");
    if v["reachable"] == false {
        assert!(
            v["hint"]
                .as_str()
                .is_some_and(|h| h.starts_with("start one with `evolve-hud serve`;")),
            "{v}"
        );
    }
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "a refused connection is told at once"
    );
}

/// A tmux server of its own, with one shell window of a fixed size.
pub(crate) struct Tmux {
    socket: PathBuf,
}

impl Tmux {
    pub(crate) fn start(width: u16, height: u16) -> Tmux {
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let socket = std::env::temp_dir().join(format!("evolve-hud-watch-{}-{n}", std::process::id()));
        let tmux = Tmux { socket };
        let ok = tmux
            .cmd(&[
                "new-session",
                "-d",
                "-x",
                &width.to_string(),
                "-y",
                &height.to_string(),
                // The shell's commands see the test sidecars' secret.
                "env",
                &format!("XDG_CONFIG_HOME={}", common::config_home().display()),
                "sh",
            ])
            .status()
            .expect("tmux must be installed (scripts/test.sh installs it)")
            .success();
        assert!(ok, "tmux new-session failed");
        tmux
    }

    fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new("tmux");
        c.arg("-S").arg(&self.socket).args(args);
        c
    }

    pub(crate) fn send(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", "0"];
        args.extend_from_slice(keys);
        assert!(self.cmd(&args).status().unwrap().success());
    }

    fn screen(&self) -> String {
        let out = self.cmd(&["capture-pane", "-p", "-t", "0"]).output().unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Everything the pane showed, its history too, wrapped lines joined.
    pub(crate) fn history(&self) -> String {
        let out = self
            .cmd(&["capture-pane", "-p", "-J", "-S", "-", "-t", "0"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// The screen once `check` holds, within `wait`; fails with the screen.
    pub(crate) fn wait_for(&self, what: &str, wait: Duration, check: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + wait;
        loop {
            let screen = self.screen();
            if check(&screen) {
                return screen;
            }
            assert!(
                Instant::now() < deadline,
                "the screen did not show {what} within {wait:?}:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The pane's size, columns and rows, as the program in it sees it.
    fn size(&self) -> (u16, u16) {
        let out = self
            .cmd(&["display-message", "-p", "-t", "0", "#{pane_width} #{pane_height}"])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        let mut numbers = text.split_whitespace().map(|n| n.parse().expect("a size"));
        (numbers.next().expect("a width"), numbers.next().expect("a height"))
    }

    fn resize(&self, width: u16, height: u16) {
        let ok = self
            .cmd(&[
                "resize-window",
                "-t",
                "0",
                "-x",
                &width.to_string(),
                "-y",
                &height.to_string(),
            ])
            .status()
            .unwrap()
            .success();
        assert!(ok, "tmux resize-window failed");
    }

    /// The name of the process in the pane's foreground.
    fn foreground(&self) -> String {
        let out = self
            .cmd(&["display-message", "-p", "-t", "0", "#{pane_current_command}"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }

    fn watch(&self, server_base: &str) {
        self.send(&[
            &format!("{} watch --url {server_base}; echo watch-exit=$?", binary()),
            "Enter",
        ]);
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.cmd(&["kill-server"]).status();
        let _ = std::fs::remove_file(&self.socket);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn watch_shows_live_huds_in_a_terminal_and_quits_cleanly() {
    let server = Server::facts_only(&[]);
    let tmux = Tmux::start(80, 24);
    tmux.send(&["clear; echo before-watch", "Enter"]);
    tmux.watch(&server.base);
    tmux.wait_for("the empty list", Duration::from_secs(10), |s| {
        s.contains("No sessions yet")
    });

    let (_, first) = sync(&server, &step(2)).await;
    let title = format!("version {} ·", first["version"]);
    let screen = tmux.wait_for("the session and its HUD", Duration::from_secs(5), |s| {
        s.contains(&SESSION[..12]) && s.contains(&title)
    });
    assert!(screen.contains("✓ bash `echo hello && ls`"), "{screen}");
    assert!(screen.contains("● model ready: "), "{screen}");
    assert!(screen.contains("· no questions for the model"), "{screen}");

    // The next step shows with no key pressed.
    let (_, next) = sync(&server, &step(6)).await;
    let title = format!("version {} ·", next["version"]);
    let started = Instant::now();
    let screen = tmux.wait_for("the next step", Duration::from_secs(2), |s| s.contains(&title));
    assert!(screen.contains("5 tool calls (2 failed) · 2 open problems"), "{screen}");
    eprintln!("screen updated {:?} after the sync", started.elapsed());

    // `c` shows the compaction text, `c` again the HUD.
    tmux.send(&["c"]);
    tmux.wait_for("the compaction text", Duration::from_secs(15), |s| {
        s.contains("## Goal")
    });
    tmux.send(&["c"]);
    tmux.wait_for("the HUD again", Duration::from_secs(2), |s| s.contains(&title));

    tmux.send(&["q"]);
    // `watch-exit=` followed by a digit: the echo, not the command line.
    let exited = |s: &str| {
        s.match_indices("watch-exit=")
            .any(|(at, m)| s[at + m.len()..].starts_with(|c: char| c.is_ascii_digit()))
    };
    let screen = tmux.wait_for("the shell", Duration::from_secs(5), exited);
    assert!(screen.contains("watch-exit=0"), "{screen}");
    assert!(screen.contains("before-watch"), "the shell's screen is back:\n{screen}");
    assert!(!screen.contains("sessions ("), "the watch screen is gone:\n{screen}");
}

/// At 80×24 with two sessions, the HUD pane has 14 rows; the long session's
/// HUD needs about 17. Its open problem stays in view, with a row saying
/// what was hidden, and ⏎ shows the whole HUD.
#[tokio::test(flavor = "multi_thread")]
async fn watch_keeps_a_long_huds_open_problems_in_view_at_80_by_24() {
    let server = Server::facts_only(&[]);
    let (_, basic) = sync(&server, &step(6)).await;
    assert_eq!(basic["version"].as_u64().map(|v| v > 0), Some(true));
    let (id, body) = long_session();
    let (code, long) = sync(&server, &body).await;
    assert_eq!(code, 200, "{long}");
    let hud = long["hud"].as_str().expect("a HUD");
    let problem = hud
        .lines()
        .skip_while(|l| *l != "Open problems:")
        .nth(1)
        .expect("an open problem listed");
    // Rows in the pane, 78 columns wide inside its frame.
    let rows: usize = hud.lines().map(|l| l.chars().count().div_ceil(78).max(1)).sum();
    assert!(rows > 14, "the HUD is longer than the pane:\n{hud}");

    let tmux = Tmux::start(80, 24);
    tmux.watch(&server.base);
    tmux.wait_for("both sessions", Duration::from_secs(10), |s| s.contains("sessions (2)"));
    // The long session, synced last, is listed first; else select it.
    let title = format!("HUD {}…", &id[..15]);
    if !tmux.screen().contains(&title) {
        tmux.send(&["j"]);
    }
    let screen = tmux.wait_for("the long HUD", Duration::from_secs(5), |s| s.contains(&title));
    assert!(screen.contains("Open problems:"), "{screen}");
    let start: String = problem.chars().take(60).collect();
    assert!(screen.contains(&start), "the problem itself ({problem}):\n{screen}");
    assert!(
        screen.contains("tool calls hidden to fit the pane · ⏎ shows all"),
        "{screen}"
    );
    assert!(screen.contains("· no questions for the model"), "{screen}");
    assert!(!screen.contains("model none"), "{screen}");

    // ⏎: the whole HUD from its top, and how much is below.
    tmux.send(&["Enter"]);
    let screen = tmux.wait_for("the whole HUD", Duration::from_secs(5), |s| s.contains("more rows"));
    assert!(screen.contains("Document units"), "{screen}");
    assert!(!screen.contains("hidden"), "{screen}");
    assert!(screen.contains("↑↓ scroll"), "{screen}");
    tmux.send(&["q"]);
    tmux.wait_for("the shell", Duration::from_secs(5), |s| s.contains("watch-exit=0"));
}

#[tokio::test(flavor = "multi_thread")]
async fn watch_says_when_the_sidecar_is_down_and_recovers() {
    let server = Server::facts_only(&[]);
    let port = server.port();
    sync(&server, &step(2)).await;
    let tmux = Tmux::start(100, 30);
    tmux.watch(&server.base);
    tmux.wait_for("the session", Duration::from_secs(10), |s| s.contains(&SESSION[..12]));

    drop(server);
    let screen = tmux.wait_for("the sidecar down", Duration::from_secs(10), |s| {
        s.contains("no sidecar answers at")
    });
    assert!(screen.contains("retrying"), "{screen}");
    assert!(
        screen.contains(&format!("hint: start one with `evolve-hud serve --port {port}`")),
        "{screen}"
    );
    assert!(
        screen.contains(&SESSION[..12]),
        "the last known sessions stay:\n{screen}"
    );

    let server = Server::facts_only_on(port, &[]);
    tmux.wait_for("the sidecar back", Duration::from_secs(10), |s| {
        s.contains("● model ready") && !s.contains("no sidecar answers") && !s.contains("hint:")
    });
    // The restarted sidecar knows no session until the plugin syncs again.
    let (_, view) = sync(&server, &step(6)).await;
    let title = format!("version {} ·", view["version"]);
    tmux.wait_for("the session again", Duration::from_secs(5), |s| s.contains(&title));
    tmux.send(&["q"]);
    tmux.wait_for("the shell", Duration::from_secs(5), |s| s.contains("watch-exit=0"));
}

#[tokio::test(flavor = "multi_thread")]
async fn watch_and_status_send_the_sidecars_token() {
    let mut file = tempfile::NamedTempFile::new().unwrap();
    std::io::Write::write_all(&mut file, b"watch-token-42\n").unwrap();
    let path = file.path().to_str().unwrap().to_owned();
    let server = Server::facts_only(&["--auth-token-file", &path]);

    let status = |env: Option<&str>, args: &[&str]| {
        let mut c = common::command();
        c.args(["status", "--url", &server.base]).args(args);
        c.env_remove("EVOLVE_HUD_AUTH_TOKEN");
        if let Some(token) = env {
            c.env("EVOLVE_HUD_AUTH_TOKEN", token);
        }
        run_within(&mut c, Duration::from_secs(10))
    };
    // Without the token, the sidecar cannot be told from another server:
    // nothing is sent to it, and the message names the fix.
    let refused = status(None, &[]);
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("is not your evolve-hud sidecar"), "{refused:?}");
    assert!(stderr.contains("--auth-token-file"), "{refused:?}");
    assert_eq!(refused.status.code(), Some(1));
    assert!(status(Some("watch-token-42"), &[]).status.success());
    assert!(status(None, &["--auth-token-file", &path]).status.success());

    let tmux = Tmux::start(100, 30);
    tmux.send(&[
        &format!(
            "env -u EVOLVE_HUD_AUTH_TOKEN {} watch --url {}; echo watch-exit=$?",
            binary(),
            server.base
        ),
        "Enter",
    ]);
    tmux.wait_for("the refusal", Duration::from_secs(10), |s| {
        s.contains("is not your evolve-hud sidecar")
    });
    tmux.send(&["q"]);
    tmux.wait_for("the shell", Duration::from_secs(5), |s| s.contains("watch-exit=0"));
    tmux.send(&[
        &format!(
            "clear; env -u EVOLVE_HUD_AUTH_TOKEN {} watch --url {} --auth-token-file {path}; echo watch-exit=$?",
            binary(),
            server.base
        ),
        "Enter",
    ]);
    tmux.wait_for("the sidecar with the token", Duration::from_secs(10), |s| {
        s.contains("● model ready") && s.contains("No sessions yet")
    });
    tmux.send(&["q"]);
}

/// An event stream never ends by itself; SIGTERM must end the sidecar anyway,
/// within 2 s, with `watch` and a raw stream (as `curl -N`) connected.
#[tokio::test(flavor = "multi_thread")]
async fn sigterm_ends_the_sidecar_within_two_seconds_while_watch_is_connected() {
    let server = Server::facts_only(&[]);
    sync(&server, &step(2)).await;
    let tmux = Tmux::start(100, 30);
    tmux.watch(&server.base);
    tmux.wait_for("the session", Duration::from_secs(10), |s| s.contains(&SESSION[..12]));
    let mut events = Events::open(&server).await;
    events
        .next_change(Duration::from_secs(5))
        .await
        .expect("the stream's first HUD");

    let started = Instant::now();
    let status = tokio::task::spawn_blocking(move || server.terminate(Duration::from_secs(10)))
        .await
        .unwrap()
        .expect("exited within 10 s of SIGTERM");
    let took = started.elapsed();
    assert!(status.success(), "{status:?}");
    assert!(took < Duration::from_secs(2), "SIGTERM took {took:?}");
    // The raw stream was ended, not left hanging.
    tokio::time::timeout(Duration::from_secs(2), &mut events.task)
        .await
        .expect("the event stream ended")
        .unwrap();
    // watch sees the sidecar gone and keeps running until asked to quit.
    tmux.wait_for("the sidecar down", Duration::from_secs(10), |s| {
        s.contains("no sidecar answers at")
    });
    tmux.send(&["q"]);
    tmux.wait_for("the shell", Duration::from_secs(5), |s| s.contains("watch-exit=0"));
}

/// A terminal too small for the panes gets a line that says so, not a
/// panic; watch keeps running and draws the panes once the terminal grows.
#[tokio::test(flavor = "multi_thread")]
async fn watch_in_a_tiny_terminal_says_so_and_draws_the_panes_once_resized() {
    let server = Server::facts_only(&[]);
    sync(&server, &step(2)).await;
    let name = std::path::Path::new(binary())
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .expect("the binary's name");
    // The screen's words, rows joined: the message wraps in a narrow pane.
    let words = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    for (width, height) in [(20, 5), (40, 10)] {
        let tmux = Tmux::start(width, height);
        let (width, height) = tmux.size();
        tmux.watch(&server.base);
        let message = format!("terminal too small: {width}×{height}, evolve-hud watch needs at least");
        tmux.wait_for("the size message", Duration::from_secs(10), |s| {
            words(s).contains(&message)
        });
        // Still running a while later (a panic would end it, and the shell
        // would say `watch-exit=101`), and still saying so.
        std::thread::sleep(Duration::from_millis(1500));
        let screen = tmux.screen();
        assert!(words(&screen).contains(&message), "{screen}");
        assert!(!screen.contains("watch-exit="), "{screen}");
        assert_eq!(tmux.foreground(), name, "watch runs on:\n{screen}");

        tmux.resize(120, 40);
        let screen = tmux.wait_for("the panes", Duration::from_secs(5), |s| {
            s.contains("sessions (1)") && s.contains("● model ready")
        });
        assert!(screen.contains(&SESSION[..12]), "{screen}");
        assert!(!screen.contains("too small"), "{screen}");
        tmux.send(&["q"]);
        tmux.wait_for("the shell", Duration::from_secs(5), |s| s.contains("watch-exit=0"));
    }
}
