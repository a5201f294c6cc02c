//! Test harness: the real `evolve-hud` binary serving the real test model on
//! an ephemeral port.
#![allow(dead_code)]

pub mod eval;
pub mod fake;
pub mod hud;

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// The real test model (SmolLM2-135M-Instruct Q4_1). `scripts/fetch-test-model.sh`
/// puts it here; `EVOLVE_HUD_TEST_MODEL` overrides the path.
pub fn test_model() -> PathBuf {
    if let Ok(p) = std::env::var("EVOLVE_HUD_TEST_MODEL") {
        return PathBuf::from(p);
    }
    let cache = std::env::var_os("EVOLVE_HUD_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            std::env::var_os("XDG_CACHE_HOME")
                .map(PathBuf::from)
                .unwrap_or_else(|| PathBuf::from(std::env::var("HOME").expect("HOME")).join(".cache"))
                .join("evolve-hud")
        });
    let path = cache.join("SmolLM2-135M-Instruct.Q4_1.gguf");
    assert!(
        path.exists(),
        "test model missing at {}; run scripts/fetch-test-model.sh",
        path.display()
    );
    path
}

/// The realistic model, Qwen2.5-Coder-0.5B-Instruct Q4_K_M:
/// `scripts/fetch-model.sh qwen-coder` puts it here; `EVOLVE_HUD_EVAL_MODEL`
/// overrides the path.
pub fn realistic_model() -> PathBuf {
    if let Ok(p) = std::env::var("EVOLVE_HUD_EVAL_MODEL") {
        return PathBuf::from(p);
    }
    let path = test_model().with_file_name("qwen2.5-coder-0.5b-instruct-q4_k_m.gguf");
    assert!(
        path.exists(),
        "the realistic model is missing at {}; run scripts/fetch-model.sh qwen-coder",
        path.display()
    );
    path
}

/// The real OpenCode 1.18.33 transform dumps in `tests/fixtures`: the
/// `transform-N.json` files of the `basic` and `compact` captures.
pub fn fixtures() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/opencode-1.18.33");
    assert!(dir.exists(), "fixtures missing at {}", dir.display());
    dir
}

/// `output.messages` of transform dump `n` of a fixture case.
pub fn transform(case: &str, n: usize) -> Vec<serde_json::Value> {
    let path = fixtures().join(case).join(format!("transform-{n}.json"));
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).expect("fixture")).expect("fixture JSON");
    v["output"]["messages"].as_array().expect("messages").clone()
}

/// A one-message chat completion request with `extra` fields, greedy.
pub fn chat(content: &str, extra: serde_json::Value) -> serde_json::Value {
    let mut body = serde_json::json!({ "messages": [{ "role": "user", "content": content }], "temperature": 0 });
    for (k, v) in extra.as_object().expect("object") {
        body[k] = v.clone();
    }
    body
}

/// The `evolve-hud` binary: the one named by `EVOLVE_HUD_BIN` when set (a
/// build carried to another machine, such as a GPU one: see
/// scripts/device-bench.sh), else the one cargo built with these tests.
/// The secret of every sidecar this test process starts, in the config
/// folder [`command`] gives them (the real user's is never touched).
pub const SECRET: &str = "evolve-hud-test-secret";

/// `XDG_CONFIG_HOME` of every evolve-hud this test process runs:
/// `evolve-hud/token` there holds [`SECRET`], `0600` in a `0700` folder.
pub fn config_home() -> &'static std::path::Path {
    static DIR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        use std::io::Write;
        use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
        let home = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("config-home");
        let dir = home.join("evolve-hud");
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&dir)
            .expect("the test config folder");
        // Written under a name of this process's, then renamed: test
        // processes running at once each write the same secret.
        let temp = dir.join(format!(".token.{}", std::process::id()));
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&temp)
            .expect("the test secret");
        writeln!(file, "{SECRET}").unwrap();
        std::fs::rename(&temp, dir.join("token")).expect("the test secret");
        home
    })
}

/// `evolve-hud` with the test config folder (see [`config_home`]).
pub fn command() -> Command {
    let mut command = Command::new(binary());
    command.env("XDG_CONFIG_HOME", config_home());
    command
}

pub fn binary() -> &'static str {
    static BIN: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    BIN.get_or_init(|| match std::env::var_os("EVOLVE_HUD_BIN") {
        Some(path) => path.into_string().expect("EVOLVE_HUD_BIN is UTF-8"),
        None => env!("CARGO_BIN_EXE_evolve-hud").to_owned(),
    })
}

/// A sidecar to send requests to: a real process or one in-process.
pub trait Base {
    /// `http://127.0.0.1:PORT`.
    fn base(&self) -> &str;

    fn url(&self, path: &str) -> String {
        format!("{}{}", self.base(), path)
    }
}

impl Base for Server {
    fn base(&self) -> &str {
        &self.base
    }
}

/// A running server, killed on drop.
pub struct Server {
    child: Child,
    pub base: String,
    /// stderr lines after "listening", for tests that read the log.
    pub log: mpsc::Receiver<String>,
    /// What the server logged up to its "listening" line.
    pub startup_log: Vec<String>,
}

impl Server {
    /// Starts `evolve-hud serve` on the test model with extra flags, and waits
    /// until `/health` says ready.
    pub fn start(extra: &[&str]) -> Server {
        Server::start_model(&test_model(), extra)
    }

    /// [`Server::start`] on another model.
    pub fn start_model(model: &std::path::Path, extra: &[&str]) -> Server {
        let mut args = vec![std::ffi::OsString::from("--model"), model.into()];
        args.extend(extra.iter().map(Into::into));
        let server = Server::spawn(&args);
        server.wait_ready();
        server
    }

    /// Starts `evolve-hud serve --no-model` (the HUD's facts only, ready at
    /// once) with extra flags, and waits until it is ready.
    pub fn facts_only(extra: &[&str]) -> Server {
        Server::facts_only_on(0, extra)
    }

    /// [`Server::facts_only`] on a given port, as a restarted sidecar is.
    pub fn facts_only_on(port: u16, extra: &[&str]) -> Server {
        let mut args = vec![std::ffi::OsString::from("--no-model")];
        args.extend(extra.iter().map(Into::into));
        let server = Server::spawn_on(port, &args);
        server.wait_ready();
        server
    }

    /// Starts `evolve-hud serve --engine URL` with extra flags, and returns
    /// as soon as it listens (the engine may be down).
    pub fn start_engine(url: &str, extra: &[&str]) -> Server {
        let mut args = vec![std::ffi::OsString::from("--engine"), url.into()];
        args.extend(extra.iter().map(Into::into));
        Server::spawn(&args)
    }

    /// Waits until `/health` says ready.
    pub fn wait_ready(&self) {
        let deadline = Instant::now() + Duration::from_secs(120);
        let health = self.url("/health");
        while Instant::now() < deadline {
            if http_status(&health) == Some(200) {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("evolve-hud did not become ready");
    }

    /// Starts `evolve-hud serve` and returns as soon as it listens.
    pub fn start_listening(extra: &[&str]) -> Server {
        let mut args = vec![std::ffi::OsString::from("--model"), test_model().into()];
        args.extend(extra.iter().map(Into::into));
        Server::spawn(&args)
    }

    /// [`Server::start`] on a given port, as a restarted sidecar is.
    pub fn start_on(port: u16, extra: &[&str]) -> Server {
        let mut args = vec![std::ffi::OsString::from("--model"), test_model().into()];
        args.extend(extra.iter().map(Into::into));
        let server = Server::spawn_on(port, &args);
        server.wait_ready();
        server
    }

    /// Its exit status, once the process has ended and within `limit`.
    pub fn exited_within(&mut self, limit: std::time::Duration) -> Option<ExitStatus> {
        let deadline = std::time::Instant::now() + limit;
        loop {
            let status = self.child.try_wait().expect("asking whether the server ended");
            if status.is_some() || std::time::Instant::now() > deadline {
                return status;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.base
            .rsplit(':')
            .next()
            .and_then(|p| p.parse().ok())
            .expect("a port in the base URL")
    }

    fn spawn(args: &[std::ffi::OsString]) -> Server {
        Server::spawn_on(0, args)
    }

    fn spawn_on(port: u16, args: &[std::ffi::OsString]) -> Server {
        Server::spawn_env(port, args, &[])
    }

    /// `evolve-hud serve` on `port` with `args` and more environment,
    /// returned as soon as it listens.
    pub fn spawn_env(port: u16, args: &[std::ffi::OsString], env: &[(&str, &std::ffi::OsStr)]) -> Server {
        Server::spawn_with(port, args, env, |_| {})
    }

    /// [`Server::spawn_env`], with `configure` applied to the command
    /// (resource limits, say) before it runs.
    pub fn spawn_with(
        port: u16,
        args: &[std::ffi::OsString],
        env: &[(&str, &std::ffi::OsStr)],
        configure: impl FnOnce(&mut Command),
    ) -> Server {
        let mut command = command();
        command
            .arg("serve")
            .args(args)
            .args(["--port", &port.to_string(), "--threads", "2"])
            .env("RUST_LOG", "info")
            .envs(env.iter().copied())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        configure(&mut command);
        let mut child = command.spawn().expect("spawning evolve-hud");
        let stderr = child.stderr.take().expect("piped stderr");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let deadline = Instant::now() + Duration::from_secs(120);
        let mut startup_log = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match rx.recv_timeout(left) {
                Ok(line) => {
                    if let Some(at) = line.find("listening on http://") {
                        let base = line[at + "listening on ".len()..].trim().to_owned();
                        startup_log.push(line);
                        return Server {
                            child,
                            base,
                            log: rx,
                            startup_log,
                        };
                    }
                    startup_log.push(line);
                }
                Err(_) => {
                    let _ = child.kill();
                    panic!("evolve-hud did not start listening: {:?}", child.wait());
                }
            }
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.base, path)
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends SIGTERM and waits for the exit, up to `timeout`.
    pub fn terminate(mut self, timeout: Duration) -> Option<ExitStatus> {
        unsafe_kill(self.child.id(), "TERM");
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }
}

/// Status code of a plain `GET`, from a blocking context.
pub fn http_status(url: &str) -> Option<u16> {
    use std::io::{Read, Write};
    let rest = url.strip_prefix("http://")?;
    let (host, path) = rest
        .split_once('/')
        .map_or((rest, "/".to_owned()), |(h, p)| (h, format!("/{p}")));
    let mut stream = std::net::TcpStream::connect(host).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(stream, "GET {path} HTTP/1.0\r\nHost: {host}\r\n\r\n").ok()?;
    let mut head = [0u8; 12];
    stream.read_exact(&mut head).ok()?;
    std::str::from_utf8(&head[9..12]).ok()?.parse().ok()
}

fn unsafe_kill(pid: u32, signal: &str) {
    let _ = Command::new("kill")
        .args([&format!("-{signal}"), &pid.to_string()])
        .status();
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs `evolve-hud serve` on `model`, expecting it to fail before listening.
/// Returns the exit status and stderr.
pub fn serve_expecting_failure(model: &std::path::Path) -> (ExitStatus, String) {
    let out = command()
        .args(["serve", "--port", "0", "--model"])
        .arg(model)
        .stdin(Stdio::null())
        .output()
        .expect("running evolve-hud");
    (out.status, String::from_utf8_lossy(&out.stderr).into_owned())
}

/// An HTTP client that sends the test sidecars' token.
pub fn client() -> reqwest::Client {
    let mut headers = reqwest::header::HeaderMap::new();
    headers.insert(
        reqwest::header::AUTHORIZATION,
        format!("Bearer {SECRET}").parse().expect("a header value"),
    );
    reqwest::Client::builder()
        .default_headers(headers)
        .timeout(Duration::from_secs(300))
        .build()
        .expect("client")
}

/// The body of a plain `GET`.
pub async fn get_text(url: &str) -> String {
    client().get(url).send().await.unwrap().text().await.unwrap()
}

/// A server's `/metrics` text, read by sample name and label.
pub struct Metrics(String);

impl Metrics {
    pub async fn of(server: &Server) -> Metrics {
        Metrics(get_text(&server.url("/metrics")).await)
    }

    /// The sum of the samples named exactly `name` whose labels contain
    /// `label` (`""`: any), or `None` when there is no such sample.
    pub fn sum(&self, name: &str, label: &str) -> Option<f64> {
        self.0
            .lines()
            .filter(|l| {
                let end = l.find(['{', ' ']).unwrap_or(l.len());
                &l[..end] == name && l.contains(label)
            })
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .fold(None, |total, v| Some(total.unwrap_or(0.0) + v))
    }
}

/// The JSON answer of a plain `GET`.
pub async fn get_json(url: &str) -> serde_json::Value {
    client().get(url).send().await.unwrap().json().await.unwrap()
}

/// POSTs `body` as it is, labelled JSON (as every client of the sidecar
/// does), for tests of bodies a typed client would not send.
pub async fn post_raw(url: &str, body: impl Into<reqwest::Body>) -> reqwest::Response {
    client()
        .post(url)
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .expect("request")
}

/// POSTs JSON to the server; returns the status and the JSON answer (`Null`
/// when the body is not JSON).
pub async fn post_json(server: &impl Base, path: &str, body: &serde_json::Value) -> (u16, serde_json::Value) {
    let r = client()
        .post(server.url(path))
        .json(body)
        .send()
        .await
        .expect("request");
    let status = r.status().as_u16();
    (status, r.json().await.unwrap_or(serde_json::Value::Null))
}

/// A view's `model_status` in words: `ready`, `rejected: why`, ….
pub fn model_status_text(view: &serde_json::Value) -> String {
    let status = &view["model_status"];
    match (status["state"].as_str(), status["reason"].as_str()) {
        (Some(state), Some(reason)) => format!("{state}: {reason}"),
        (Some(state), None) => state.to_owned(),
        _ => panic!("no model status in {view}"),
    }
}

/// Asserts that a compaction text has every section of OpenCode's template.
pub fn assert_compaction_sections(text: &str) {
    for section in [
        "## Goal",
        "## Instructions",
        "## Discoveries",
        "## Accomplished",
        "## Relevant files / directories",
    ] {
        assert!(text.contains(section), "{section} missing:\n{text}");
    }
}

/// A free loopback port (bound and released: for servers that cannot be
/// told to pick one).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

/// llama.cpp's own `llama-server`, built by `scripts/llama-cpp.sh
/// llama-server` and named by `EVOLVE_HUD_LLAMA_SERVER` (scripts/test.sh
/// sets it); killed on drop.
pub struct LlamaServer {
    child: Child,
    /// `http://127.0.0.1:PORT`.
    pub base: String,
}

impl LlamaServer {
    /// Serves `model` with `extra` flags and waits until it is ready.
    pub fn start(model: &std::path::Path, extra: &[&str]) -> LlamaServer {
        let binary = std::env::var_os("EVOLVE_HUD_LLAMA_SERVER").expect(
            "EVOLVE_HUD_LLAMA_SERVER must name llama.cpp's llama-server: build it with \
             `scripts/llama-cpp.sh llama-server` (scripts/test.sh does)",
        );
        let port = free_port();
        let child = Command::new(binary)
            .arg("-m")
            .arg(model)
            .args(["--host", "127.0.0.1", "--port", &port.to_string(), "-t", "2"])
            .args(extra)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawning llama-server");
        let server = LlamaServer {
            child,
            base: format!("http://127.0.0.1:{port}"),
        };
        let deadline = Instant::now() + Duration::from_secs(120);
        while Instant::now() < deadline {
            if http_status(&format!("{}/health", server.base)) == Some(200) {
                return server;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("llama-server did not become ready");
    }

    /// The OpenAI-compatible API's base, for `--engine`.
    pub fn v1(&self) -> String {
        format!("{}/v1", self.base)
    }
}

impl Drop for LlamaServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
