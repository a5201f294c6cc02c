//! `evolve-hud install-shim`: writes the OpenCode plugin embedded in this
//! binary into a project's `.opencode/plugins/` or the global plugin folder.

use crate::cli::InstallShimArgs;
use anyhow::{bail, Context};
use std::io::Write;
use std::path::{Path, PathBuf};

/// The plugin, as shipped in `plugin-shim/`.
pub const PLUGIN: &str = include_str!("../plugin-shim/evolve-hud.ts");
const FILE_NAME: &str = "evolve-hud.ts";

/// What an install did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Installed,
    Updated,
    AlreadyCurrent,
}

pub fn run(args: &InstallShimArgs) -> anyhow::Result<()> {
    if args.print {
        return say(PLUGIN);
    }
    let dir = plugin_dir(args)?;
    let path = dir.join(FILE_NAME);
    if args.uninstall {
        match std::fs::remove_file(&path) {
            Ok(()) => return say(&format!("removed {}\n", path.display())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return say(&format!("not installed at {}\n", path.display()))
            }
            Err(e) => return Err(e).with_context(|| format!("removing {}", path.display())),
        }
    }
    let outcome = install(&dir)?;
    let launch = record_launch(args.model.as_deref())?;
    let verb = match outcome {
        Outcome::Installed => "installed",
        Outcome::Updated => "updated",
        Outcome::AlreadyCurrent => "already current:",
    };
    say(&format!(
        "{verb} {}
OpenCode loads it on its next start. It talks to http://127.0.0.1:8377 and, when no
sidecar answers there, starts `{} serve{}` (recorded in {}; its log goes to
~/.local/state/evolve-hud/serve.log). For another address or a token, or to turn the
start off, set these in OpenCode's environment:
  EVOLVE_HUD_URL=http://127.0.0.1:PORT   (or EVOLVE_HUD_PORT=PORT)
  EVOLVE_HUD_AUTH_TOKEN=...
  EVOLVE_HUD_AUTOSTART=off
Remove it with `evolve-hud install-shim{} --uninstall`.
",
        path.display(),
        launch.binary,
        launch
            .model
            .as_deref()
            .map(|m| format!(" --model {m}"))
            .unwrap_or_default(),
        launch_path()?.display(),
        if args.global { " --global" } else { "" }
    ))
}

/// What the plugin starts when no sidecar answers: this binary, and the
/// model to serve (none: the registry's default model).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Launch {
    pub binary: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

/// `$XDG_CONFIG_HOME/evolve-hud/launch.json` (`~/.config/evolve-hud/`).
pub fn launch_path() -> anyhow::Result<PathBuf> {
    Ok(config_home()?.join("evolve-hud").join("launch.json"))
}

/// The recorded launch, if any.
pub fn recorded_launch() -> Option<Launch> {
    serde_json::from_slice(&std::fs::read(launch_path().ok()?).ok()?).ok()
}

/// Records this binary (and `model`, else the one recorded before) for the
/// plugin to start.
fn record_launch(model: Option<&str>) -> anyhow::Result<Launch> {
    let binary = std::env::current_exe().context("finding this binary's path")?;
    let launch = Launch {
        binary: binary.to_string_lossy().into_owned(),
        model: model
            .map(str::to_owned)
            .or_else(|| recorded_launch().and_then(|l| l.model)),
    };
    let path = launch_path()?;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let text = serde_json::to_string_pretty(&launch).context("writing the launch record")?;
    std::fs::write(&path, text + "\n").with_context(|| format!("writing {}", path.display()))?;
    Ok(launch)
}

/// OpenCode's global plugin folder: `$XDG_CONFIG_HOME/opencode/plugins/`.
pub fn global_dir() -> anyhow::Result<PathBuf> {
    Ok(config_home()?.join("opencode").join("plugins"))
}

/// `$XDG_CONFIG_HOME`, else `~/.config`.
pub fn config_home() -> anyhow::Result<PathBuf> {
    match std::env::var_os("XDG_CONFIG_HOME").filter(|v| !v.is_empty()) {
        Some(dir) => Ok(PathBuf::from(dir)),
        None => match std::env::var_os("HOME").filter(|v| !v.is_empty()) {
            Some(home) => Ok(PathBuf::from(home).join(".config")),
            None => bail!("neither XDG_CONFIG_HOME nor HOME is set"),
        },
    }
}

/// Writes to stdout; a reader that went away (`| head`) is not an error.
fn say(text: &str) -> anyhow::Result<()> {
    match std::io::stdout().lock().write_all(text.as_bytes()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e).context("writing to stdout"),
        _ => Ok(()),
    }
}

/// The folder OpenCode loads plugins from, for the project or globally.
fn plugin_dir(args: &InstallShimArgs) -> anyhow::Result<PathBuf> {
    if !args.global {
        if !args.project.is_dir() {
            bail!("project folder {} does not exist", args.project.display());
        }
        return Ok(args.project.join(".opencode").join("plugins"));
    }
    global_dir().context("use --project instead of --global")
}

/// Writes the plugin into `dir` unless it is already there, byte for byte.
/// The file is replaced atomically, so OpenCode never loads half of it.
pub fn install(dir: &Path) -> anyhow::Result<Outcome> {
    let path = dir.join(FILE_NAME);
    let outcome = match std::fs::read(&path) {
        Ok(current) if current == PLUGIN.as_bytes() => return Ok(Outcome::AlreadyCurrent),
        Ok(_) => Outcome::Updated,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Outcome::Installed,
        Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
    };
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut file = tempfile::NamedTempFile::new_in(dir).with_context(|| format!("writing into {}", dir.display()))?;
    file.write_all(PLUGIN.as_bytes())
        .with_context(|| format!("writing into {}", dir.display()))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        // Temporary files start private; a plugin is an ordinary readable file.
        file.as_file()
            .set_permissions(std::fs::Permissions::from_mode(0o644))
            .with_context(|| format!("writing into {}", dir.display()))?;
    }
    file.persist(&path)
        .with_context(|| format!("replacing {}", path.display()))?;
    Ok(outcome)
}
