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

    // install-shim --port records another port: every command looks there.
    let other = common::free_port();
    let shim = run(
        config.path(),
        state.path(),
        &[
            "install-shim",
            "--project",
            project.path().to_str().unwrap(),
            "--port",
            &other.to_string(),
        ],
    );
    assert!(
        text(&shim).contains(&format!("It talks to http://127.0.0.1:{other}"))
            && text(&shim).contains(&format!("serve --port {other}")),
        "{}",
        text(&shim)
    );
    let status = run(config.path(), state.path(), &["status"]);
    assert!(
        text(&status).contains(&format!("127.0.0.1:{other}")),
        "{}",
        text(&status)
    );
    let refused = run(config.path(), state.path(), &["install-shim", "--port", "0"]);
    assert!(!refused.status.success(), "{}", text(&refused));
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
            // The binary by its path: the test build is not `evolve-hud` on PATH.
            .contains("evolve-hud install-shim --model"),
        "{health}"
    );
    // The HUD's facts are served meanwhile.
    let sync = serde_json::json!({ "session_id": "ses_facts", "full": true, "messages": [
        { "info": { "id": "m1", "sessionID": "ses_facts", "role": "user", "time": { "created": 1 } },
          "parts": [{ "type": "text", "text": "fix the build" }] }] });
    let (status, view) = common::post_json(&server, "/v1/hud/sync", &sync).await;
    assert_eq!(status, 200);
    assert!(view["hud"].as_str().unwrap().contains("Tool calls: none yet"), "{view}");

    // The model arrives: the same port serves it, without anyone restarting
    // anything, and no client is refused while it restarts in place: the
    // listening sockets go on from one process to the next.
    std::fs::copy(common::test_model(), &model).unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut refused = Vec::new();
    loop {
        // A new connection each time, as a client that comes during the
        // restart makes one.
        let fresh = reqwest::Client::builder()
            .pool_max_idle_per_host(0)
            .timeout(Duration::from_secs(30))
            .build()
            .unwrap();
        // With the token: `/health` names the engine and the model to it.
        match fresh
            .get(server.url("/health"))
            .bearer_auth(common::SECRET)
            .send()
            .await
        {
            Ok(r) => {
                let body: serde_json::Value = r.json().await.unwrap_or_default();
                if body["engine"] == "local" && body["status"] == "ready" {
                    assert_eq!(body["model"], "later", "{body}");
                    break;
                }
            }
            Err(e) => refused.push(format!("{e:?}")),
        }
        assert!(Instant::now() < deadline, "the model was not taken up");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(refused.is_empty(), "clients failed during the restart: {refused:#?}");
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

/// `doctor` in each state a user meets, with its exit code; every fix it
/// prints, run in that state (a `pull` stands in for the other fix it
/// names, a model file the user has), leads to a ready state.
#[test]
fn doctor_is_true_in_every_state_and_its_fixes_lead_to_ready() {
    let config = config_folder();
    let state = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let bin_dir = Path::new(common::binary()).parent().unwrap().to_owned();
    let path = format!("{}:/usr/bin:/bin", bin_dir.display());
    let model = common::test_model();
    let doctor = |env: &[(&str, &str)]| {
        let out = common::command()
            .arg("doctor")
            .current_dir(project.path())
            .env("XDG_CONFIG_HOME", config.path())
            .env("XDG_STATE_HOME", state.path())
            .env("PATH", &path)
            .env("EVOLVE_HUD_PORT", common::free_port().to_string())
            .env_remove("EVOLVE_HUD_URL")
            .envs(env.iter().copied())
            .output()
            .expect("doctor");
        (out.status.code(), String::from_utf8_lossy(&out.stdout).into_owned())
    };
    // Each printed fix is a command line, up to its first double space.
    let fixes = |said: &str| -> Vec<String> {
        said.lines()
            .filter_map(|l| l.trim().strip_prefix("fix: "))
            .map(|f| f.split("   ").next().unwrap().trim().to_owned())
            .collect()
    };
    let apply = |fix: &str| {
        let mut words: Vec<String> = fix.split_whitespace().map(str::to_owned).collect();
        assert_eq!(words.first().map(String::as_str), Some("evolve-hud"), "{fix}");
        if words.get(1).map(String::as_str) == Some("pull") {
            words = vec![
                "evolve-hud".into(),
                "install-shim".into(),
                "--model".into(),
                model.display().to_string(),
            ];
        }
        let words: Vec<String> = words
            .into_iter()
            .map(|w| {
                if w == "FILE.gguf" {
                    model.display().to_string()
                } else {
                    w
                }
            })
            .collect();
        let out = common::command()
            .args(&words[1..])
            .current_dir(project.path())
            .env("XDG_CONFIG_HOME", config.path())
            .env("XDG_STATE_HOME", state.path())
            .output()
            .expect("a fix");
        assert!(out.status.success(), "{fix}: {}", text(&out));
    };

    // Nothing installed: not ready, and the fixes make it so.
    let (code, said) = doctor(&[]);
    assert_eq!(code, Some(1), "{said}");
    assert!(said.contains("✗ plugin"), "{said}");
    for fix in fixes(&said) {
        apply(&fix);
    }
    // Installed, the sidecar not started yet: the finished state.
    let (code, said) = doctor(&[]);
    assert_eq!(code, Some(0), "{said}");
    assert!(said.contains("✓ sidecar  not running yet"), "{said}");
    assert!(said.contains("Ready: OpenCode's plugin starts the sidecar"), "{said}");
    assert!(fixes(&said).is_empty(), "no fix to run: {said}");
    assert!(
        said.contains(" serve --port ") && said.contains(" --facts-without-model"),
        "the start as the plugin runs it: {said}"
    );

    // Not on PATH, where the plugin runs the recorded binary: the user's
    // shell needs the full path, the HUD does not. A warning.
    let (code, said) = doctor(&[("PATH", "/usr/bin:/bin")]);
    assert_eq!(code, Some(0), "{said}");
    assert!(said.contains("! binary") && said.contains("not on PATH"), "{said}");

    // Installed twice: a warning, with the command that removes one.
    apply("evolve-hud install-shim --global");
    let (code, said) = doctor(&[]);
    assert_eq!(code, Some(0), "{said}");
    assert!(said.contains("! plugin   installed twice"), "{said}");
    for fix in fixes(&said) {
        apply(&fix);
    }
    let (code, said) = doctor(&[]);
    assert_eq!(code, Some(0), "{said}");
    assert!(!said.contains("installed twice"), "{said}");

    // A recorded model that is gone.
    let record = config.path().join("evolve-hud/launch.json");
    let mut launch: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&record).unwrap()).unwrap();
    launch["model"] = "/nonexistent/gone.gguf".into();
    std::fs::write(&record, launch.to_string()).unwrap();
    let (code, said) = doctor(&[]);
    assert_eq!(code, Some(1), "{said}");
    assert!(said.contains("✗ start"), "{said}");
    for fix in fixes(&said) {
        apply(&fix);
    }
    let (code, said) = doctor(&[]);
    assert_eq!(code, Some(0), "{said}");

    // No autostart: the sidecar must run, and the fix runs one.
    let port = common::free_port().to_string();
    let (code, said) = doctor(&[("EVOLVE_HUD_AUTOSTART", "off"), ("EVOLVE_HUD_PORT", &port)]);
    assert_eq!(code, Some(1), "{said}");
    let fix = fixes(&said)
        .into_iter()
        .find(|f| f.contains("serve"))
        .expect("a serve fix");
    assert_eq!(fix, "evolve-hud serve --facts-without-model", "{said}");
    let server = common::Server::spawn_env(
        port.parse().unwrap(),
        &[
            "--facts-without-model".into(),
            "--model".into(),
            model.clone().into_os_string(),
        ],
        &[("XDG_CONFIG_HOME", config.path().as_os_str())],
    );
    server.wait_ready();
    let (code, said) = doctor(&[("EVOLVE_HUD_AUTOSTART", "off"), ("EVOLVE_HUD_PORT", &port)]);
    assert_eq!(code, Some(0), "{said}");
    assert!(said.contains("All set"), "{said}");
}

/// `service install` run by the npm package's binary (inside OpenCode's
/// cache, which an update or a cleanup replaces) writes a unit that runs a
/// copy in `~/.local/share/evolve-hud/bin/`, the files beside the binary
/// copied with it, and says so.
#[test]
fn a_service_runs_a_copy_of_a_binary_that_updates_replace() {
    let config = config_folder();
    let state = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let bin = cache
        .path()
        .join("opencode/packages/opencode-evolve-hud@latest/node_modules/opencode-evolve-hud-linux-x64/bin");
    std::fs::create_dir_all(&bin).unwrap();
    let packaged = bin.join("evolve-hud");
    std::fs::copy(common::binary(), &packaged).unwrap();
    std::fs::write(bin.join("libggml-cpu-test.so"), b"a library beside it").unwrap();
    let port = common::free_port().to_string();
    let out = std::process::Command::new(&packaged)
        .args(["service", "install", "--port", &port])
        .env("XDG_CONFIG_HOME", config.path())
        .env("XDG_STATE_HOME", state.path())
        .env("XDG_DATA_HOME", data.path())
        .env("XDG_CACHE_HOME", cache.path())
        .env_remove("EVOLVE_HUD_PORT")
        .env_remove("EVOLVE_HUD_URL")
        .stdin(Stdio::null())
        .output()
        .expect("service install");
    let said = text(&out);
    assert!(out.status.success(), "{said}");
    let copy = data.path().join("evolve-hud/bin/evolve-hud");
    assert!(
        said.contains("copied") && said.contains(&copy.parent().unwrap().display().to_string()),
        "{said}"
    );
    assert_eq!(std::fs::read(&copy).unwrap(), std::fs::read(&packaged).unwrap());
    assert!(data.path().join("evolve-hud/bin/libggml-cpu-test.so").is_file());
    let unit = std::fs::read_to_string(config.path().join("systemd/user/evolve-hud.service")).unwrap();
    assert!(unit.contains(&copy.display().to_string()), "{unit}");
    assert!(!unit.contains(&cache.path().display().to_string()), "{unit}");
    let uninstalled = std::process::Command::new(&copy)
        .args(["service", "uninstall"])
        .env("XDG_CONFIG_HOME", config.path())
        .env("XDG_STATE_HOME", state.path())
        .stdin(Stdio::null())
        .output()
        .expect("service uninstall");
    assert!(uninstalled.status.success(), "{}", text(&uninstalled));
}
