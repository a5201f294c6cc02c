//! `evolve-hud install-shim` in fresh folders: installs, is idempotent,
//! updates, prints, installs globally, uninstalls and refuses bad targets.

use crate::common;

use std::path::Path;
use std::process::Output;

/// Runs install-shim with its own config folder (where it records the
/// launch), unless `env` names one.
fn install_shim(args: &[&str], env: &[(&str, &Path)]) -> Output {
    let config = tempfile::tempdir().unwrap();
    let mut command = common::command();
    command
        .arg("install-shim")
        .args(args)
        .env("XDG_CONFIG_HOME", config.path());
    for (k, v) in env {
        command.env(k, v);
    }
    command.output().expect("running evolve-hud")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

const SHIPPED: &str = include_str!("../../plugin-shim/evolve-hud.ts");

/// The modules in a plugin folder's `evolve-hud/`: (file name, contents), sorted.
fn modules_in(plugins: &Path) -> Vec<(String, String)> {
    let mut modules: Vec<_> = std::fs::read_dir(plugins.join("evolve-hud"))
        .unwrap()
        .map(|e| {
            let path = e.unwrap().path();
            let name = path.file_name().unwrap().to_str().unwrap().to_owned();
            (name, std::fs::read_to_string(&path).unwrap())
        })
        .collect();
    modules.sort();
    modules
}

/// The modules shipped beside the entry file, in `plugin-shim/evolve-hud/`.
fn shipped_modules() -> Vec<(String, String)> {
    modules_in(&Path::new(env!("CARGO_MANIFEST_DIR")).join("plugin-shim"))
}

#[test]
fn installs_into_a_project_idempotently() {
    let project = tempfile::tempdir().unwrap();
    let dir = project.path().to_str().unwrap();
    let file = project.path().join(".opencode/plugins/evolve-hud.ts");

    let first = install_shim(&["--project", dir], &[]);
    assert!(first.status.success(), "{first:?}");
    assert!(stdout(&first).starts_with("installed "), "{}", stdout(&first));
    assert!(
        stdout(&first).contains("EVOLVE_HUD_URL"),
        "says how to point it elsewhere"
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), SHIPPED);
    let plugins = file.parent().unwrap();
    assert_eq!(modules_in(plugins), shipped_modules());

    let again = install_shim(&["--project", dir], &[]);
    assert!(stdout(&again).starts_with("already current: "), "{}", stdout(&again));

    std::fs::write(&file, "// an older plugin\n").unwrap();
    let update = install_shim(&["--project", dir], &[]);
    assert!(stdout(&update).starts_with("updated "), "{}", stdout(&update));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), SHIPPED);
    // A changed or missing module alone is an update too.
    std::fs::write(plugins.join("evolve-hud/hud.ts"), "// an older module\n").unwrap();
    std::fs::remove_file(plugins.join("evolve-hud/sync.ts")).unwrap();
    let update = install_shim(&["--project", dir], &[]);
    assert!(stdout(&update).starts_with("updated "), "{}", stdout(&update));
    assert_eq!(modules_in(plugins), shipped_modules());
    // Nothing else is left in the plugin folder (OpenCode loads every
    // top-level file there): the entry file and its module folder.
    let mut entries: Vec<_> = std::fs::read_dir(plugins)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    entries.sort();
    assert_eq!(entries, ["evolve-hud", "evolve-hud.ts"]);
    assert!(plugins.join("evolve-hud").is_dir());

    let removed = install_shim(&["--project", dir, "--uninstall"], &[]);
    assert!(stdout(&removed).starts_with("removed "), "{}", stdout(&removed));
    assert!(!file.exists());
    assert!(!plugins.join("evolve-hud").exists());
    let twice = install_shim(&["--project", dir, "--uninstall"], &[]);
    assert!(twice.status.success());
    assert!(stdout(&twice).starts_with("not installed"), "{}", stdout(&twice));
}

#[test]
fn npm_names_the_package_in_opencode_json_and_replaces_a_copy() {
    let project = tempfile::tempdir().unwrap();
    let dir = project.path().to_str().unwrap();
    let config = project.path().join("opencode.json");
    let plugins = project.path().join(".opencode/plugins");
    std::fs::write(&config, "{\n  // my model\n  \"model\": \"x/y\",\n}\n").unwrap();
    assert!(install_shim(&["--project", dir], &[]).status.success());
    assert!(plugins.join("evolve-hud.ts").exists());

    // The package is named, the copy goes (OpenCode would load both), the rest stays.
    let named = install_shim(&["--project", dir, "--npm"], &[]);
    assert!(named.status.success(), "{named:?}");
    let said = stdout(&named);
    assert!(
        said.starts_with(&format!("named opencode-evolve-hud in {}", config.display())),
        "{said}"
    );
    assert!(said.contains("removed the copied plugin"), "{said}");
    assert!(!plugins.join("evolve-hud.ts").exists() && !plugins.join("evolve-hud").exists());
    let text = std::fs::read_to_string(&config).unwrap();
    assert!(text.starts_with("{\n  // my model\n  \"model\": \"x/y\","), "{text}");
    assert!(text.contains("\"plugin\": [\"opencode-evolve-hud\"]"), "{text}");
    let again = install_shim(&["--project", dir, "--npm"], &[]);
    assert!(stdout(&again).starts_with("already named"), "{}", stdout(&again));
    let home = tempfile::tempdir().unwrap();
    let doctor = common::command()
        .args([
            "doctor",
            "--url",
            &format!("http://127.0.0.1:{}", common::free_port()),
            "--project",
            dir,
        ])
        .env("XDG_CONFIG_HOME", home.path())
        .output()
        .unwrap();
    assert!(
        stdout(&doctor).contains(&format!("✓ plugin   current: {}", config.display())),
        "{}",
        stdout(&doctor)
    );
    assert_eq!(std::fs::read_to_string(&config).unwrap(), text);

    // Copying the files again takes the package's entry out.
    let copied = install_shim(&["--project", dir], &[]);
    assert!(
        stdout(&copied).contains("removed opencode-evolve-hud from the plugins of"),
        "{}",
        stdout(&copied)
    );
    assert!(!std::fs::read_to_string(&config)
        .unwrap()
        .contains("opencode-evolve-hud"));

    // Uninstall takes out either form.
    assert!(install_shim(&["--project", dir, "--npm"], &[]).status.success());
    let removed = install_shim(&["--project", dir, "--uninstall"], &[]);
    assert!(
        stdout(&removed).contains("removed opencode-evolve-hud"),
        "{}",
        stdout(&removed)
    );
    assert!(!std::fs::read_to_string(&config)
        .unwrap()
        .contains("opencode-evolve-hud"));

    // A config file it cannot read as JSON is refused, unchanged, and no copy is removed.
    assert!(install_shim(&["--project", dir], &[]).status.success());
    std::fs::write(&config, "{ \"plugin\": [").unwrap();
    let refused = install_shim(&["--project", dir, "--npm"], &[]);
    assert!(!refused.status.success());
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(
        err.contains("not valid JSON") && err.contains("nothing was changed"),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(&config).unwrap(), "{ \"plugin\": [");
    assert!(plugins.join("evolve-hud.ts").exists());
}

#[test]
fn installs_globally_and_prints() {
    let config = tempfile::tempdir().unwrap();
    let out = install_shim(&["--global"], &[("XDG_CONFIG_HOME", config.path())]);
    assert!(out.status.success(), "{out:?}");
    let file = config.path().join("opencode/plugins/evolve-hud.ts");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), SHIPPED);
    assert_eq!(modules_in(file.parent().unwrap()), shipped_modules());
    // What the plugin starts when no sidecar answers: this binary.
    let launch: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(config.path().join("evolve-hud/launch.json")).unwrap()).unwrap();
    let binary = std::fs::canonicalize(env!("CARGO_BIN_EXE_evolve-hud")).unwrap();
    assert_eq!(launch["binary"], binary.to_str().unwrap());
    assert!(launch.get("model").is_none());
    let with_model = install_shim(
        &["--global", "--model", "qwen2.5-coder-0.5b"],
        &[("XDG_CONFIG_HOME", config.path())],
    );
    assert!(with_model.status.success());
    let launch: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(config.path().join("evolve-hud/launch.json")).unwrap()).unwrap();
    assert_eq!(launch["model"], "qwen2.5-coder-0.5b");

    let printed = install_shim(&["--print"], &[]);
    assert!(printed.status.success());
    assert_eq!(stdout(&printed), SHIPPED);
}

#[test]
fn refuses_a_missing_project_with_a_clear_error() {
    let out = install_shim(&["--project", "/nonexistent/evolve-hud-project"], &[]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("does not exist"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

/// `evolve-hud doctor` says what is missing with its fix: a stopped
/// sidecar, a stale plugin; then, with the real sidecar running and the
/// plugin updated, that all is set.
#[test]
fn doctor_names_what_is_missing_and_how_to_fix_it() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let plugin = project.path().join(".opencode/plugins/evolve-hud.ts");
    std::fs::create_dir_all(plugin.parent().unwrap()).unwrap();
    std::fs::write(&plugin, "// an older plugin\n").unwrap();
    let doctor = |url: &str| {
        common::command()
            .args(["doctor", "--url", url, "--project", project.path().to_str().unwrap()])
            .env("XDG_CONFIG_HOME", home.path().join("config"))
            .output()
            .expect("running doctor")
    };
    let dead = format!("http://127.0.0.1:{}", common::free_port());
    let out = doctor(&dead);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains(&format!("✗ sidecar  nothing answers at {dead}")),
        "{text}"
    );
    // No plugin that would start one: the fix is the plugin.
    assert!(
        text.contains(&format!(
            "fix: {} install-shim   (then OpenCode's plugin starts the sidecar)",
            me()
        )),
        "{text}"
    );
    assert!(text.contains("✗ plugin   older than this binary's"), "{text}");
    assert!(text.contains(&format!("fix: {} install-shim", me())), "{text}");

    let installed = install_shim(
        &[
            "--project",
            project.path().to_str().unwrap(),
            "--model",
            common::test_model().to_str().unwrap(),
        ],
        &[("XDG_CONFIG_HOME", &home.path().join("config"))],
    );
    assert!(installed.status.success(), "{installed:?}");
    // install-shim made the user's secret; a sidecar that knows another
    // one is not the user's.
    let secret = home.path().join("config/evolve-hud/token");
    assert!(std::fs::read_to_string(&secret).unwrap().trim().len() >= 32);
    let foreign = common::Server::facts_only(&[]);
    let text = stdout(&doctor(&foreign.base));
    assert!(text.contains("✗ sidecar  the server at"), "{text}");
    assert!(
        text.contains("is not your evolve-hud sidecar: it does not know your secret"),
        "{text}"
    );
    assert!(text.contains("is held by a process of yours"), "{text}");
    drop(foreign);
    let server = common::Server::start(&["--auth-token-file", secret.to_str().unwrap()]);
    let text = stdout(&doctor(&server.base));
    assert!(text.contains("✓ sidecar  ready at"), "{text}");
    assert!(text.contains("it proved it is yours"), "{text}");
    assert!(text.contains("✓ plugin   current:"), "{text}");
    assert!(text.contains("✓ model    "), "{text}");
    assert!(text.contains("✓ start    the plugin starts"), "{text}");
    // A stale module makes the whole plugin stale.
    std::fs::write(
        plugin.parent().unwrap().join("evolve-hud/hud.ts"),
        "// an older module\n",
    )
    .unwrap();
    let text = stdout(&doctor(&server.base));
    assert!(text.contains("✗ plugin   older than this binary's"), "{text}");
}

/// `service install` writes a user unit that runs this binary's `serve`,
/// says what it replaces, records its port for the plugin, and warns when
/// no user service manager would run it.
#[test]
fn service_install_says_what_it_replaces_and_where_the_plugin_finds_it() {
    let home = tempfile::tempdir().unwrap();
    let no_tools = tempfile::tempdir().unwrap();
    let service = |args: &[&str]| {
        common::command()
            .arg("service")
            .args(args)
            .env("XDG_CONFIG_HOME", home.path().join("config"))
            // No systemctl to ask: the warning path, on any machine.
            .env("PATH", no_tools.path())
            .output()
            .unwrap()
    };
    let unit = service(&["install", "--port", "8399"]);
    assert!(unit.status.success(), "{unit:?}");
    let said = stdout(&unit);
    let path = home.path().join("config/systemd/user/evolve-hud.service");
    assert!(said.starts_with(&format!("wrote {}", path.display())), "{said}");
    assert!(said.contains("warning: `systemctl` cannot be run here"), "{said}");
    assert!(said.contains("the plugin talks to it on port 8399"), "{said}");
    let written = std::fs::read_to_string(&path).unwrap();
    assert!(written.contains(" serve --port 8399"), "{written}");

    let again = stdout(&service(&["install", "--port", "8400"]));
    assert!(again.contains(&format!("replaced {}", path.display())), "{again}");
    assert!(again.contains("--port 8399)"), "it names what it replaced: {again}");
    let launch: serde_json::Value =
        serde_json::from_slice(&std::fs::read(home.path().join("config/evolve-hud/launch.json")).unwrap()).unwrap();
    assert_eq!(launch["port"], 8400, "{launch}");
    assert!(stdout(&service(&["install", "--port", "8400"])).starts_with("already current: "));

    let removed = service(&["uninstall"]);
    assert!(stdout(&removed).starts_with("removed "));
}

/// `doctor` on what goes wrong after an install: a module folder deleted, a
/// recorded model file that is gone (not something to pull), a launch
/// record that is not one. Each has its own line and fix.
#[test]
fn doctor_tells_a_broken_install_as_it_is() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let config = home.path().join("config");
    let installed = install_shim(
        &["--project", project.path().to_str().unwrap()],
        &[("XDG_CONFIG_HOME", &config)],
    );
    assert!(installed.status.success(), "{installed:?}");
    // install-shim refuses a model file that is not there; one that went
    // away after it was recorded is what doctor meets.
    let record = config.join("evolve-hud/launch.json");
    let mut launch: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&record).unwrap()).unwrap();
    launch["model"] = "/nope.gguf".into();
    std::fs::write(&record, launch.to_string()).unwrap();
    std::fs::remove_dir_all(project.path().join(".opencode/plugins/evolve-hud")).unwrap();
    let doctor = || {
        let dead = format!("http://127.0.0.1:{}", common::free_port());
        stdout(
            &common::command()
                .args(["doctor", "--url", &dead, "--project", project.path().to_str().unwrap()])
                .env("XDG_CONFIG_HOME", &config)
                .output()
                .unwrap(),
        )
    };
    let text = doctor();
    assert!(text.contains("✗ plugin   incomplete in "), "{text}");
    assert!(text.contains("evolve-hud/") && text.contains("missing"), "{text}");
    assert!(!text.contains("older than"), "{text}");
    assert!(
        text.contains("✗ model    the recorded model file /nope.gguf is not a file on disk"),
        "{text}"
    );
    assert!(!text.contains("evolve-hud pull /nope.gguf"), "{text}");
    assert!(
        text.contains(&format!("fix: {} install-shim --model FILE.gguf", me())),
        "{text}"
    );

    std::fs::write(config.join("evolve-hud/launch.json"), "{ not json").unwrap();
    let text = doctor();
    assert!(
        text.contains("✗ start    ") && text.contains("launch.json is not a launch record"),
        "{text}"
    );
}

/// How `doctor` names the binary under test in its fixes: `evolve-hud` where
/// that is it on PATH, else its path.
fn me() -> String {
    let bin = std::path::Path::new(common::binary());
    let on_path = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|dir| dir.join("evolve-hud"))
            .find(|candidate| candidate.is_file())
    });
    match on_path {
        Some(p) if std::fs::canonicalize(&p).ok() == std::fs::canonicalize(bin).ok() => "evolve-hud".into(),
        _ => bin.display().to_string(),
    }
}
