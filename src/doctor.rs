//! `evolve-hud doctor`: one screen that says whether everything a HUD needs
//! is in place (the binary, the model, the sidecar, the plugin, the port
//! and token), each with the command that fixes it.

use crate::cli::DoctorArgs;
use crate::client::{Sidecar, Trouble};
use crate::launch::Install;
use evolve_hud_api::{EngineDetails, HealthState};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

/// How a check came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mark {
    Ok,
    /// Works, but worth a change (the plugin loaded twice).
    Warn,
    Wrong,
}

/// One check's outcome: fine, or what is wrong and how to fix it.
struct Check {
    what: &'static str,
    mark: Mark,
    said: String,
    fix: Option<String>,
}

impl Check {
    fn ok(what: &'static str, said: String) -> Check {
        Check {
            what,
            mark: Mark::Ok,
            said,
            fix: None,
        }
    }

    fn warn(what: &'static str, said: String, fix: String) -> Check {
        Check {
            what,
            mark: Mark::Warn,
            said,
            fix: Some(fix),
        }
    }

    fn wrong(what: &'static str, said: String, fix: String) -> Check {
        Check {
            what,
            mark: Mark::Wrong,
            said,
            fix: Some(fix),
        }
    }
}

pub fn run(args: &DoctorArgs) -> ExitCode {
    let this = std::env::current_exe().ok();
    let on_path = crate::launch::find_on_path("evolve-hud");
    let install = Install::of(this.as_deref(), on_path.as_deref());
    let me = crate::launch::this_command();
    let plugin = plugin(&args.project, &me);
    let installed = plugin.mark != Mark::Wrong;
    let (sidecar, running) = sidecar(args, installed, &me);
    let recorded = crate::launch::recorded_launch().is_some_and(|l| Path::new(&l.binary).is_file());
    let checks = [
        binary(&install, on_path.as_deref(), recorded),
        cpu(),
        model(args, &me),
        sidecar,
        plugin,
        launch(&install, &me),
    ];
    for c in &checks {
        let mark = match c.mark {
            Mark::Ok => "✓",
            Mark::Warn => "!",
            Mark::Wrong => "✗",
        };
        println!("{mark} {:<8} {}", c.what, c.said);
        if let Some(fix) = &c.fix {
            println!("  fix: {fix}");
        }
    }
    if checks.iter().any(|c| c.mark == Mark::Wrong) {
        return ExitCode::FAILURE;
    }
    if running {
        println!("All set: `opencode` in a project with the plugin gets the HUD.");
    } else {
        println!("Ready: OpenCode's plugin starts the sidecar at its first step, and the agent gets the HUD from its second.");
    }
    ExitCode::SUCCESS
}

/// Whether the plugin starts a sidecar when none answers
/// (`EVOLVE_HUD_AUTOSTART`, on unless set off, as the plugin reads it).
fn autostart() -> bool {
    !matches!(
        std::env::var("EVOLVE_HUD_AUTOSTART")
            .map(|v| v.trim().to_ascii_lowercase())
            .as_deref(),
        Ok("0" | "false" | "off" | "no")
    )
}

/// This binary, its version, and how it was installed. The plugin runs its
/// npm package's binary where it came from npm, else the one the launch
/// record names, else `evolve-hud` on PATH: only in that last case must
/// PATH have this binary.
fn binary(install: &Install, on_path: Option<&Path>, recorded: bool) -> Check {
    let version = env!("CARGO_PKG_VERSION");
    let said = |path: &Path| format!("evolve-hud {version} at {}", path.display());
    match install {
        Install::OnPath => Check::ok(
            "binary",
            format!(
                "evolve-hud {version} (on PATH{})",
                on_path.map(|p| format!(": {}", p.display())).unwrap_or_default()
            ),
        ),
        Install::Npm { package, path } => Check::ok(
            "binary",
            format!(
                "{}, from the npm package {package}, which the plugin runs; your shell runs it by that path",
                said(path)
            ),
        ),
        Install::Elsewhere(path) => {
            let fix = "cargo install --locked --path .   (in the evolve-hud repository; or put this binary on PATH)"
                .to_owned();
            match on_path {
                Some(other) => Check::wrong(
                    "binary",
                    format!("{}; `evolve-hud` on PATH is another: {}", said(path), other.display()),
                    fix,
                ),
                None if recorded => Check::warn(
                    "binary",
                    format!(
                        "{}; not on PATH (the plugin runs the recorded binary; your shell needs the full path)",
                        said(path)
                    ),
                    fix,
                ),
                None => Check::wrong("binary", format!("{}; not on PATH", said(path)), fix),
            }
        }
    }
}

/// Which CPU code runs: the features ggml's CPU back-end was built with,
/// and, in the portable build, the module it picks for this CPU.
fn cpu() -> Check {
    match crate::engine::local::supervisor::cpu_code() {
        Ok((module, features)) => Check::ok("cpu", format!("{module}: {features}")),
        Err(e) => Check::wrong(
            "cpu",
            format!("llama.cpp's back-end does not start: {e}"),
            "see the log above; a build for another CPU fails so (docs/performance.md#building)".into(),
        ),
    }
}

/// The model the sidecar would serve: the recorded one, else the
/// registry's default, on disk.
fn model(args: &DoctorArgs, me: &str) -> Check {
    let recorded = crate::launch::recorded_launch().and_then(|l| l.model);
    let registry = match crate::registry::Registry::load(args.registry.as_deref()) {
        Ok(r) => r,
        Err(e) => {
            return Check::wrong(
                "model",
                format!("the registry does not load: {e:#}"),
                "fix models.toml".into(),
            )
        }
    };
    let name = recorded
        .clone()
        .or_else(|| registry.models.first().map(|e| e.name.clone()));
    let Some(name) = name else {
        return Check::wrong(
            "model",
            "no model named and no registry entry".into(),
            format!("{me} install-shim --model FILE.gguf"),
        );
    };
    match crate::registry::resolve(&name, &registry) {
        Ok(crate::registry::ModelSpec::Path(p)) if p.is_file() => {
            Check::ok("model", format!("{name} at {}", p.display()))
        }
        // A file path is not something to pull.
        Ok(crate::registry::ModelSpec::Path(p)) => Check::wrong(
            "model",
            format!("the recorded model file {} is not a file on disk", p.display()),
            format!("{me} install-shim --model FILE.gguf   (a GGUF file, or a registry name from `{me} models`)"),
        ),
        Ok(crate::registry::ModelSpec::Entry(e)) => match crate::pull::cached(&e) {
            Some(path) => Check::ok("model", format!("{name} at {}", path.display())),
            None => Check::wrong(
                "model",
                format!("{name} is not on disk"),
                format!(
                    "{me} pull {name}   (where the Hub cannot be reached: `{me} pull {name} --from FILE` with the file got some other way, or HF_ENDPOINT for a mirror; or a GGUF file you have: `{me} install-shim --model FILE.gguf`)"
                ),
            ),
        },
        Ok(crate::registry::ModelSpec::Hub { .. }) => Check::wrong(
            "model",
            format!("{name} is not on disk"),
            format!("{me} pull {name}"),
        ),
        Err(e) => Check::wrong(
            "model",
            format!("the recorded model `{name}` is not usable: {e:#}"),
            format!("{me} install-shim --model FILE.gguf"),
        ),
    }
}

/// The sidecar at the URL, with the checks the plugin makes: something
/// answers, it proves it is the user's sidecar, it takes the user's token,
/// and its model is ready. Nothing answering is the finished state when the
/// plugin is installed and starts one. Whether a sidecar of the user's
/// answers.
fn sidecar(args: &DoctorArgs, plugin_installed: bool, me: &str) -> (Check, bool) {
    let check = sidecar_check(args, plugin_installed, me);
    let running = check.mark == Mark::Ok && check.said.starts_with("ready at");
    (check, running)
}

fn sidecar_check(args: &DoctorArgs, plugin_installed: bool, me: &str) -> Check {
    let url = args.sidecar.url();
    // What the checks say names the sidecar without credentials in its URL.
    let shown = crate::redact::url(&url);
    let token = match args.sidecar.token() {
        Ok(t) => t,
        Err(e) => {
            return Check::wrong(
                "sidecar",
                format!("the token does not load: {e:#}"),
                "fix what it says, or check --auth-token-file".into(),
            )
        }
    };
    let port = url
        .rsplit(':')
        .next()
        .and_then(|p| p.trim_end_matches('/').parse::<u16>().ok());
    let holder = port
        .and_then(crate::server::instance::running)
        .map_or_else(String::new, |pid| format!(", process {pid}"));
    let checked = crate::client::block_on(async {
        let client = Sidecar::new(&url, token, Duration::from_secs(3))?;
        let health = client.health().await;
        // Anything that answered HTTP is asked to prove it is the user's.
        let answered = match &health {
            Ok(_) => true,
            Err(trouble) => trouble.reachable() == Some(true) && !matches!(trouble, Trouble::Silent { .. }),
        };
        let identity = if answered {
            client.check_identity().await
        } else {
            Ok(())
        };
        let status = match (&health, &identity) {
            (Ok(_), Ok(())) => Some(client.status().await),
            _ => None,
        };
        Ok::<_, Trouble>((answered, health, identity, status))
    });
    let (answered, health, identity, status) = match checked.and_then(|c| c) {
        Ok(checked) => checked,
        Err(e) => return Check::wrong("sidecar", e.to_string(), "see its log".into()),
    };
    if let Err(e) = identity {
        return Check::wrong(
            "sidecar",
            e.to_string(),
            "the plugin sends this server nothing either: stop it, or run yours on another port".into(),
        );
    }
    if let Err(e) = health {
        if answered {
            return Check::wrong(
                "sidecar",
                format!("{e}"),
                format!(
                    "{me} stop   (the plugin starts a new one at its next step; or `{me} serve --facts-without-model`)"
                ),
            );
        }
        // A port held by something that does not speak HTTP.
        if let Some(who) = crate::client::listener_of(&url) {
            return Check::wrong(
                "sidecar",
                format!("{who}, but what listens there does not answer as a sidecar: {e}"),
                "stop that server, or serve the sidecar on another port (--port, EVOLVE_HUD_PORT)".into(),
            );
        }
        if plugin_installed && autostart() {
            return Check::ok(
                "sidecar",
                format!("not running yet at {shown}: the OpenCode plugin starts it when none answers"),
            );
        }
        return Check::wrong(
            "sidecar",
            format!("nothing answers at {shown}"),
            if plugin_installed {
                format!("{me} serve --facts-without-model   (EVOLVE_HUD_AUTOSTART is off, so the plugin starts none)")
            } else {
                format!("{me} install-shim   (then OpenCode's plugin starts the sidecar)")
            },
        );
    }
    match &status {
        Some(Err(Trouble::Unauthorized { .. })) => {
            return Check::wrong(
                "sidecar",
                format!("{shown} is yours but wants another token than the one given here"),
                "use the sidecar's --auth-token-file here too (EVOLVE_HUD_AUTH_TOKEN_FILE), or leave both out: \
then both use ~/.config/evolve-hud/token"
                    .into(),
            )
        }
        Some(Err(e)) => return Check::wrong("sidecar", e.to_string(), "see its log".into()),
        Some(Ok(_)) | None => {}
    }
    // `/health` tells a client without the token the state alone; the
    // sidecar proved it is the user's, and its status has the details.
    let Some(Ok(view)) = status else {
        return Check::wrong(
            "sidecar",
            format!("{shown} answered /health but not /v1/status"),
            "see its log".into(),
        );
    };
    let health = view.health;
    match (&health.state, &health.details) {
        (_, Some(EngineDetails::Missing { missing, fix })) => Check::wrong(
            "sidecar",
            format!("ready at {shown}{holder}, serving the HUD's facts alone: {missing}"),
            format!("{fix}   (the sidecar takes the model up by itself once it is on disk)"),
        ),
        (HealthState::Ready | HealthState::Released, _) => Check::ok(
            "sidecar",
            format!(
                "ready at {shown}{holder}: {} ({}); it proved it is yours",
                health.model, health.engine
            ),
        ),
        (HealthState::Loading, details) => {
            let progress = match details {
                Some(EngineDetails::Loading { progress }) => *progress,
                _ => 0.0,
            };
            Check::wrong(
                "sidecar",
                format!(
                    "{shown}{holder} is loading its model ({:.0} %); the HUD's facts are served meanwhile",
                    progress * 100.0
                ),
                "wait: it answers ready once the model is in".into(),
            )
        }
        (HealthState::Failed { reason }, _) => Check::wrong(
            "sidecar",
            format!("{shown} answers 503: {reason}"),
            format!("see ~/.local/state/evolve-hud/serve.log; `{me} stop` and start it again"),
        ),
    }
}

/// The plugin in the project and globally, against the one this binary
/// ships.
fn plugin(project: &Path, me: &str) -> Check {
    let places = [
        Some(project.join(".opencode/plugins")),
        crate::install::global_dir().ok(),
    ];
    use crate::install::Installed;
    let mut current = Vec::new();
    let mut stale = Vec::new();
    // The npm package named in a config file counts as an install; npm
    // keeps its version.
    let configs = [
        Some((project.to_owned(), false)),
        crate::install::global_config_dir().ok().map(|dir| (dir, true)),
    ];
    for (dir, global) in configs.into_iter().flatten() {
        if let Some(file) = crate::install::config::named_in(&dir, global) {
            current.push(file);
        }
    }
    for dir in places.into_iter().flatten() {
        // The entry file names the install; its modules are checked with it.
        match crate::install::installed(&dir) {
            Installed::Current => current.push(dir.join("evolve-hud.ts")),
            Installed::Older => stale.push(dir.join("evolve-hud.ts")),
            Installed::Missing(files) => {
                return Check::wrong(
                    "plugin",
                    format!(
                        "incomplete in {}: {} missing",
                        dir.display(),
                        files.iter().take(3).copied().collect::<Vec<_>>().join(", ")
                            + if files.len() > 3 { ", …" } else { "" }
                    ),
                    format!("{me} install-shim   (--global for the global one)"),
                );
            }
            Installed::Absent => {}
        }
    }
    let list = |paths: &[PathBuf]| {
        paths
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    if current.len() + stale.len() > 1 {
        return Check::warn(
            "plugin",
            format!(
                "installed twice, so OpenCode loads it twice (two syncs a step, every log line doubled): {}",
                list(&[current.clone(), stale.clone()].concat())
            ),
            format!(
                "{me} install-shim --uninstall --project {}   (keeps the global one; or `{me} install-shim --uninstall --global`)",
                project.display()
            ),
        );
    }
    match (current.is_empty(), stale.is_empty()) {
        (_, false) => Check::wrong(
            "plugin",
            format!("older than this binary's: {}", list(&stale)),
            format!("{me} install-shim   (--global for the global one)"),
        ),
        (false, true) => Check::ok("plugin", format!("current: {}", list(&current))),
        (true, true) => Check::wrong(
            "plugin",
            format!("not installed in {} nor globally", project.display()),
            format!("{me} install-shim   (in the project; --global for every project)"),
        ),
    }
}

/// What the plugin starts when no sidecar answers: its npm package's
/// binary, else the recorded one, else `evolve-hud` on PATH.
fn launch(install: &Install, me: &str) -> Check {
    let recorded = match crate::launch::read_launch() {
        Ok(recorded) => recorded,
        Err(e) => {
            return Check::wrong(
                "start",
                format!("{e:#}"),
                format!("{me} install-shim   (writes the record again)"),
            )
        }
    };
    let missing_model = recorded.as_ref().and_then(|l| l.model.as_deref()).and_then(|m| {
        let mut model = crate::cli::ModelConfig::from_name(m).ok()?;
        model.resolve_on_disk().err().map(|e| format!("{e:#}"))
    });
    if let Install::Npm { path, .. } = install {
        let model = recorded
            .as_ref()
            .and_then(|l| l.model.as_deref())
            .map(|m| format!(" --model {m}"))
            .unwrap_or_default();
        return Check::ok(
            "start",
            format!(
                "the plugin starts its npm package's `{} serve --port {} --facts-without-model{model}` when none answers",
                path.display(),
                crate::launch::sidecar_port()
            ),
        );
    }
    match recorded {
        Some(l) if Path::new(&l.binary).is_file() && missing_model.is_some() => Check::wrong(
            "start",
            format!(
                "the plugin starts `{} serve --model {}`, whose model cannot be had ({}); it would serve the HUD's facts alone",
                l.binary,
                l.model.as_deref().unwrap_or_default(),
                missing_model.unwrap_or_default()
            ),
            format!("{me} install-shim --model FILE.gguf   (a GGUF file on disk, or a registry name that is)"),
        ),
        Some(l) if Path::new(&l.binary).is_file() => Check::ok(
            "start",
            format!(
                "the plugin starts `{} serve --port {} --facts-without-model{}` when none answers",
                l.binary,
                crate::launch::sidecar_port(),
                l.model.map(|m| format!(" --model {m}")).unwrap_or_default()
            ),
        ),
        Some(l) => Check::wrong(
            "start",
            format!("the recorded binary {} is gone", l.binary),
            format!("{me} install-shim   (records this binary)"),
        ),
        None => Check::ok(
            "start",
            "nothing recorded: the plugin starts `evolve-hud` from PATH when none answers".into(),
        ),
    }
}
