//! One truth for every command: the launch record's port is where `serve`,
//! `status`, `stop` and `install-shim` all look, and `service uninstall`
//! gives it back; a sidecar started with `--facts-without-model` serves the
//! HUD's facts when its model is missing, says why and how to get it, and
//! loads the model in place once it is on disk; `stop` is recorded for the
//! plugin and undone by the next `serve`; `install-shim --model` refuses
//! what no sidecar could load; llama-server's flag names work.

use crate::common;

use std::path::Path;
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

/// A config folder of its own (the launch record lives there), holding the
/// test sidecars' secret.
fn config_folder() -> tempfile::TempDir {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let own = dir.path().join("evolve-hud");
    std::fs::create_dir(&own).unwrap();
    std::fs::set_permissions(&own, std::fs::Permissions::from_mode(0o700)).unwrap();
    let token = own.join("token");
    std::fs::copy(common::config_home().join("evolve-hud/token"), &token).unwrap();
    std::fs::set_permissions(&token, std::fs::Permissions::from_mode(0o600)).unwrap();
    dir
}

fn run(config: &Path, state: &Path, args: &[&str]) -> Output {
    common::command()
        .args(args)
        .env("XDG_CONFIG_HOME", config)
        .env("XDG_STATE_HOME", state)
        .env_remove("EVOLVE_HUD_PORT")
        .env_remove("EVOLVE_HUD_URL")
        .stdin(Stdio::null())
        .output()
        .expect("evolve-hud")
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn the_recorded_port_is_where_every_command_looks_until_service_uninstall() {
    let config = config_folder();
    let state = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let port = common::free_port();
    let p = port.to_string();
    let installed = run(config.path(), state.path(), &["service", "install", "--port", &p]);
    assert!(installed.status.success(), "{}", text(&installed));

    // serve with no --port takes the recorded one; status and stop find it.
    let mut serve = common::command()
        .args(["serve", "--no-model"])
        .env("XDG_CONFIG_HOME", config.path())
        .env("XDG_STATE_HOME", state.path())
        .env_remove("EVOLVE_HUD_PORT")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("serve");
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        let status = run(config.path(), state.path(), &["status"]);
        if status.status.success() || Instant::now() > deadline {
            break status;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(
        status.status.success(),
        "status finds the recorded port: {}",
        text(&status)
    );
    assert!(
        text(&status).contains(&format!("127.0.0.1:{port}")),
        "{}",
        text(&status)
    );
    let shim = run(
        config.path(),
        state.path(),
        &["install-shim", "--project", project.path().to_str().unwrap()],
    );
    assert!(
        text(&shim).contains(&format!("It talks to http://127.0.0.1:{port}")),
        "{}",
        text(&shim)
    );
    let stopped = run(config.path(), state.path(), &["stop"]);
    assert!(
        text(&stopped).contains(&format!("stopped evolve-hud serve on port {port}")),
        "{}",
        text(&stopped)
    );
    let _ = serve.wait();
    // What `stop` recorded for the plugin, until the next serve.
    assert!(state.path().join(format!("evolve-hud/stopped-{port}")).is_file());

    let uninstalled = run(config.path(), state.path(), &["service", "uninstall"]);
    assert!(
        text(&uninstalled).contains(&format!("no longer look at port {port}: they use 8377 again")),
        "{}",
        text(&uninstalled)
    );
    let record = std::fs::read_to_string(config.path().join("evolve-hud/launch.json")).unwrap();
    assert!(!record.contains("\"port\""), "{record}");
    let shim = run(
        config.path(),
        state.path(),
        &["install-shim", "--project", project.path().to_str().unwrap()],
    );
    assert!(
        text(&shim).contains("It talks to http://127.0.0.1:8377"),
        "{}",
        text(&shim)
    );
}

#[test]
fn serve_removes_what_stop_recorded() {
    let state = tempfile::tempdir().unwrap();
    let port = common::free_port();
    let marker = state.path().join(format!("evolve-hud/stopped-{port}"));
    std::fs::create_dir_all(marker.parent().unwrap()).unwrap();
    std::fs::write(&marker, "{\"at\": 1}\n").unwrap();
    let server = common::Server::spawn_env(
        port,
        &["--no-model".into()],
        &[("XDG_STATE_HOME", state.path().as_os_str())],
    );
    server.wait_ready();
    assert!(!marker.exists(), "a sidecar runs again");
}

#[tokio::test(flavor = "multi_thread")]
async fn without_its_model_the_sidecar_serves_facts_then_loads_the_model_in_place() {
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("later.gguf");
    let server = common::Server::spawn_env(
        0,
        &[
            "--facts-without-model".into(),
            "--model".into(),
            model.clone().into_os_string(),
        ],
        &[],
    );
    server.wait_ready();
    let health = common::get_json(&server.url("/health")).await;
    assert_eq!(health["engine"], "none", "{health}");
    let missing = health["missing"].as_str().expect("why there is no model");
    assert!(missing.contains("later.gguf"), "{health}");
    assert!(
        health["fix"]
            .as_str()
            .unwrap()
            .starts_with("evolve-hud install-shim --model"),
        "{health}"
    );
    // The HUD's facts are served meanwhile.
    let sync = serde_json::json!({ "session_id": "ses_facts", "full": true, "messages": [
        { "info": { "id": "m1", "sessionID": "ses_facts", "role": "user", "time": { "created": 1 } },
          "parts": [{ "type": "text", "text": "fix the build" }] }] });
    let (status, view) = common::post_json(&server, "/v1/hud/sync", &sync).await;
    assert_eq!(status, 200);
    assert!(view["hud"].as_str().unwrap().contains("fix the build"), "{view}");

    // The model arrives: the same port serves it, without anyone restarting anything.
    std::fs::copy(common::test_model(), &model).unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let health = common::client().get(server.url("/health")).send().await;
        if let Ok(r) = health {
            let body: serde_json::Value = r.json().await.unwrap_or_default();
            if body["engine"] == "local" && body["status"] == "ready" {
                assert_eq!(body["model"], "later", "{body}");
                break;
            }
        }
        assert!(Instant::now() < deadline, "the model was not taken up");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[test]
fn install_shim_refuses_a_model_no_sidecar_could_load() {
    let config = config_folder();
    let state = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let not_gguf = project.path().join("notes.gguf");
    std::fs::write(&not_gguf, "not a model").unwrap();
    let dir = project.path().to_str().unwrap();
    for (model, says) in [
        ("/nonexistent/missing.gguf", "--model /nonexistent/missing.gguf"),
        (not_gguf.to_str().unwrap(), "notes.gguf"),
        ("no-such-registry-model", "no such model in the registry"),
    ] {
        let out = run(
            config.path(),
            state.path(),
            &["install-shim", "--project", dir, "--model", model],
        );
        assert!(!out.status.success(), "{model}: {}", text(&out));
        assert!(text(&out).contains(says), "{model}: {}", text(&out));
    }
    assert!(
        !config.path().join("evolve-hud/launch.json").exists(),
        "nothing recorded"
    );
    let out = run(
        config.path(),
        state.path(),
        &[
            "install-shim",
            "--project",
            dir,
            "--model",
            common::test_model().to_str().unwrap(),
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
}
