//! Only the local user reaches the sidecar: loopback Host names only (DNS
//! rebinding), an optional bearer token that never shows in logs, no CORS,
//! and no binding beyond loopback without an explicit flag.

mod common;

use common::{client, Server};
use std::io::Write;
use std::process::Command;

async fn status_with(server: &Server, path: &str, headers: &[(&str, &str)]) -> (u16, reqwest::header::HeaderMap) {
    let mut request = client().get(server.url(path));
    for (k, v) in headers {
        request = request.header(*k, *v);
    }
    let r = request.send().await.unwrap();
    (r.status().as_u16(), r.headers().clone())
}

#[tokio::test]
async fn foreign_host_headers_are_refused() {
    let server = Server::start(&["--hud-extract", "false"]);
    let port = server.url("").rsplit(':').next().unwrap().to_owned();
    for host in [
        "evil.example",
        &format!("evil.example:{port}"),
        "localhost.evil.example",
        "10.0.0.7",
    ] {
        let (status, _) = status_with(&server, "/v1/models", &[("host", host)]).await;
        assert_eq!(status, 403, "{host}");
    }
    for host in [
        format!("localhost:{port}"),
        format!("127.0.0.1:{port}"),
        format!("[::1]:{port}"),
    ] {
        let (status, _) = status_with(&server, "/v1/models", &[("host", &host)]).await;
        assert_eq!(status, 200, "{host}");
    }
    // No CORS: neither a preflight nor a cross-origin GET gets an allow header.
    let r = client()
        .request(reqwest::Method::OPTIONS, server.url("/v1/chat/completions"))
        .header("origin", "http://evil.example")
        .header("access-control-request-method", "POST")
        .send()
        .await
        .unwrap();
    assert!(
        r.headers().keys().all(|k| !k.as_str().starts_with("access-control-")),
        "{:?}",
        r.headers()
    );
    let (_, headers) = status_with(&server, "/v1/models", &[("origin", "http://evil.example")]).await;
    assert!(
        headers.keys().all(|k| !k.as_str().starts_with("access-control-")),
        "{headers:?}"
    );
}

#[tokio::test]
async fn a_token_is_required_when_configured_and_never_logged() {
    let token = "s3cret-token-value-123";
    let mut file = tempfile::NamedTempFile::new().unwrap();
    writeln!(file, "{token}").unwrap();
    let path = file.path().to_str().unwrap().to_owned();
    let server = Server::start(&["--hud-extract", "false", "--auth-token-file", &path]);

    assert_eq!(
        status_with(&server, "/health", &[]).await.0,
        200,
        "/health needs no token"
    );
    let (status, headers) = status_with(&server, "/v1/models", &[]).await;
    assert_eq!(status, 401);
    assert_eq!(headers["www-authenticate"], "Bearer");
    assert_eq!(
        status_with(&server, "/v1/models", &[("authorization", "Bearer wrong")])
            .await
            .0,
        401
    );
    assert_eq!(
        status_with(&server, "/v1/hud", &[("authorization", token)]).await.0,
        401,
        "scheme required"
    );
    let bearer = format!("Bearer {token}");
    assert_eq!(
        status_with(&server, "/v1/models", &[("authorization", &bearer)])
            .await
            .0,
        200
    );
    assert_eq!(
        status_with(&server, "/v1/hud", &[("authorization", &bearer)]).await.0,
        200
    );

    // The evolve adapter sends it too.
    let out = Command::new(env!("CARGO_BIN_EXE_evolve-hud"))
        .args(["hook", "execute_tool"])
        .env("EVOLVE_HUD_URL", server.url(""))
        .env("EVOLVE_HUD_AUTH_TOKEN", token)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            c.stdin.take().unwrap().write_all(br#"{"tool":"hud_sessions"}"#)?;
            c.wait_with_output()
        })
        .unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("no sessions tracked"));

    // Nothing the server logged holds the token.
    let logged: Vec<String> = server
        .startup_log
        .iter()
        .cloned()
        .chain(server.log.try_iter())
        .collect();
    assert!(!logged.is_empty());
    assert!(logged.iter().all(|l| !l.contains(token)), "{logged:?}");
}

#[test]
fn binding_beyond_loopback_needs_a_flag() {
    let out = Command::new(env!("CARGO_BIN_EXE_evolve-hud"))
        .args(["serve", "--host", "0.0.0.0", "--port", "0", "--model"])
        .arg(common::test_model())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--allow-remote"), "{err}");
}

#[test]
fn allowed_remote_binding_warns() {
    let server = Server::start_listening(&["--host", "0.0.0.0", "--allow-remote", "--hud-extract", "false"]);
    let warning = server
        .startup_log
        .iter()
        .find(|l| l.contains("listening beyond loopback"));
    assert!(warning.is_some_and(|l| l.contains("WARN")), "{:?}", server.startup_log);
}

#[test]
fn the_token_never_shows_in_debug_output() {
    use clap::Parser;
    let cli = evolve_hud::cli::Cli::try_parse_from([
        "evolve-hud",
        "serve",
        "--model",
        "m.gguf",
        "--auth-token",
        "hunter2-token",
    ])
    .unwrap();
    let debug = format!("{cli:?}");
    assert!(!debug.contains("hunter2-token"), "{debug}");
    assert!(debug.contains("[redacted]"), "{debug}");
}
