//! `evolve-hud install-shim`: writes the OpenCode plugin embedded in this
//! binary into a project's `.opencode/plugins/` or the global plugin folder,
//! or (`--npm`) names its npm package in OpenCode's config file instead
//! ([`config`]).
//! The plugin is an entry file, `evolve-hud.ts`, and its modules in
//! `evolve-hud/` beside it. OpenCode loads only the top-level files of a
//! plugin folder as plugins, so the modules are imported, never loaded.

use crate::cli::InstallShimArgs;
use crate::launch::{config_home, launch_path, record_launch, sidecar_port};
pub mod config;

use anyhow::{bail, Context};
use std::io::Write;
use std::path::{Path, PathBuf};

/// The plugin's entry file, as shipped in `plugin-shim/`.
pub const PLUGIN: &str = include_str!("../../plugin-shim/evolve-hud.ts");
const FILE_NAME: &str = "evolve-hud.ts";
/// The folder of the entry file's modules, beside it.
const MODULE_DIR: &str = "evolve-hud";

/// A module of the plugin: its path in the plugin folder, and its contents.
macro_rules! module {
    ($name:literal) => {
        (
            concat!("evolve-hud/", $name),
            include_str!(concat!("../../plugin-shim/evolve-hud/", $name)),
        )
    };
}

/// Every file of the plugin: its path in the plugin folder, and its contents.
/// The entry file comes last, so an install writes it after its modules.
pub const FILES: &[(&str, &str)] = &[
    module!("address.ts"),
    module!("api-generated.ts"),
    module!("api.ts"),
    module!("config.ts"),
    module!("core.ts"),
    module!("heartbeat.ts"),
    module!("hud.ts"),
    module!("identity.ts"),
    module!("launcher.ts"),
    module!("log.ts"),
    module!("mask-state.ts"),
    module!("mask.ts"),
    module!("notify.ts"),
    module!("private.ts"),
    module!("sessions.ts"),
    module!("sidecar.ts"),
    module!("slim.ts"),
    module!("sync.ts"),
    module!("v2.ts"),
    (FILE_NAME, PLUGIN),
];

/// What an install did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Installed,
    Updated,
    AlreadyCurrent,
}

pub fn run(args: &InstallShimArgs) -> anyhow::Result<()> {
    if args.print {
        eprintln!(
            "evolve-hud: the plugin imports its modules from `{MODULE_DIR}/` beside it; `install-shim` writes them"
        );
        return say(PLUGIN);
    }
    let dir = plugin_dir(args)?;
    let config_dir = config_dir(args)?;
    let path = dir.join(FILE_NAME);
    if args.uninstall {
        let mut said = String::new();
        if uninstall(&dir)? {
            said += &format!("removed {} and {}\n", path.display(), dir.join(MODULE_DIR).display());
        }
        for file in config::unname_package(&config_dir, args.global)? {
            said += &format!(
                "removed {} from the plugins of {}\n",
                config::NPM_PACKAGE,
                file.display()
            );
        }
        if said.is_empty() {
            said = format!(
                "not installed at {} nor named in {}\n",
                path.display(),
                config_dir.join("opencode.json").display()
            );
        }
        return say(&said);
    }
    let warning = match &args.model {
        Some(model) => check_model(model, args.registry.as_deref())?,
        None => None,
    };
    // One form per place: the npm package replaces copied files, and copied
    // files replace the package (OpenCode would load both).
    let (head, replaced) = if args.npm {
        let head = match config::name_package(&config_dir, args.global)? {
            config::Named::Added(file) => format!("named {} in {}", config::NPM_PACKAGE, file.display()),
            config::Named::Already(file) => format!("already named: {} in {}", config::NPM_PACKAGE, file.display()),
        };
        let replaced = uninstall(&dir)?.then(|| {
            format!(
                "removed the copied plugin {} (the npm package replaces it)\n",
                path.display()
            )
        });
        (head, replaced)
    } else {
        let verb = match install(&dir)? {
            Outcome::Installed => "installed",
            Outcome::Updated => "updated",
            Outcome::AlreadyCurrent => "already current:",
        };
        let replaced = config::unname_package(&config_dir, args.global)?
            .iter()
            .map(|file| {
                format!(
                    "removed {} from the plugins of {} (the copied plugin replaces it)\n",
                    config::NPM_PACKAGE,
                    file.display()
                )
            })
            .collect::<String>();
        (
            format!("{verb} {}", path.display()),
            (!replaced.is_empty()).then_some(replaced),
        )
    };
    let launch = record_launch(args.model.as_deref(), args.port)?;
    // The secret the plugin and the sidecar share, made now so that the
    // plugin has it before the sidecar's first start.
    crate::secret::Secret::of_user()?;
    let secret = crate::secret::user_secret_path()?;
    let port = sidecar_port();
    let serve_port = if port == evolve_hud_api::DEFAULT_PORT {
        String::new()
    } else {
        format!(" --port {port}")
    };
    let model = launch
        .model
        .as_deref()
        .map(|m| format!(" --model {m}"))
        .unwrap_or_default();
    let starts = if args.npm {
        format!(
            "the sidecar of the package's platform package (`{}-<os>-<cpu>`; else `{}`) with `serve{serve_port}{model}`",
            config::NPM_PACKAGE,
            launch.binary
        )
    } else {
        format!("`{} serve{serve_port}{model}`", launch.binary)
    };
    let loads = if args.npm {
        "OpenCode installs it from npm and loads it on its next start."
    } else {
        "OpenCode loads it on its next start."
    };
    say(&(format!(
        "{head}
{}{loads} It talks to http://127.0.0.1:{port} and, when no
sidecar answers there, starts {starts} (recorded in {}; its log goes to
~/.local/state/evolve-hud/serve.log). Both use your secret in {} (yours alone):
the plugin sends nothing to a server that cannot prove it knows it. For another address,
or to turn the start off, set these in OpenCode's environment:
  EVOLVE_HUD_URL=http://127.0.0.1:PORT   (or EVOLVE_HUD_PORT=PORT)
  EVOLVE_HUD_AUTOSTART=off
Remove it with `evolve-hud install-shim{} --uninstall`.
",
        replaced.unwrap_or_default(),
        launch_path()?.display(),
        secret.display(),
        if args.global { " --global" } else { "" }
    ) + &warning.map(|w| format!("warning: {w}\n")).unwrap_or_default()))
}

/// Whether `model` can be recorded for the plugin's sidecar: a file must be
/// a GGUF file on disk, a name one of the registry's. A registry model not
/// on disk yet is recorded, with the warning returned: the sidecar serves
/// the HUD's facts until it is pulled.
fn check_model(model: &str, registry: Option<&Path>) -> anyhow::Result<Option<String>> {
    let arg: crate::registry::ModelArg = model.parse().map_err(anyhow::Error::msg)?;
    match arg {
        crate::registry::ModelArg::Path(path) => {
            crate::gguf::check(&path).map_err(|e| {
                anyhow::anyhow!(
                    "--model {}: {e}. Give a GGUF file on disk, or a registry name (`evolve-hud models`)",
                    path.display()
                )
            })?;
            Ok(None)
        }
        crate::registry::ModelArg::Name(name) => {
            let registry = crate::registry::Registry::load(registry)?;
            let Some(entry) = registry.models.iter().find(|e| e.name == name) else {
                bail!(
                    "--model {name}: no such model in the registry (`evolve-hud models` lists them), and no such file"
                );
            };
            Ok(crate::pull::cached(entry).is_none().then(|| {
                format!(
                    "{name} is not on disk yet: `evolve-hud pull {name}`. Until then the sidecar serves the HUD's facts alone"
                )
            }))
        }
        crate::registry::ModelArg::Hub { .. } => Ok(None),
    }
}

/// OpenCode's global plugin folder: `$XDG_CONFIG_HOME/opencode/plugins/`.
pub fn global_dir() -> anyhow::Result<PathBuf> {
    Ok(global_config_dir()?.join("plugins"))
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

/// The folder of OpenCode's config file, for the project (its root) or
/// globally (`$XDG_CONFIG_HOME/opencode/`).
fn config_dir(args: &InstallShimArgs) -> anyhow::Result<PathBuf> {
    if args.global {
        Ok(global_config_dir()?)
    } else {
        Ok(args.project.clone())
    }
}

/// OpenCode's global config folder: `$XDG_CONFIG_HOME/opencode/`.
pub fn global_config_dir() -> anyhow::Result<PathBuf> {
    Ok(config_home()?.join("opencode"))
}

/// Writes the plugin's files into `dir`, each unless it is already there
/// byte for byte. Each file is replaced atomically (a temporary file renamed
/// over it), modules before the entry file, so OpenCode never loads half of one.
pub fn install(dir: &Path) -> anyhow::Result<Outcome> {
    let mut stale = Vec::new();
    let mut present = 0;
    for &(name, contents) in FILES {
        let path = dir.join(name);
        match std::fs::read(&path) {
            Ok(current) if current == contents.as_bytes() => present += 1,
            Ok(_) => {
                present += 1;
                stale.push((path, contents));
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => stale.push((path, contents)),
            Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
        }
    }
    if stale.is_empty() {
        return Ok(Outcome::AlreadyCurrent);
    }
    for (path, contents) in stale {
        write_atomically(&path, contents)?;
    }
    Ok(if present == 0 {
        Outcome::Installed
    } else {
        Outcome::Updated
    })
}

/// Replaces the file `path` resolves to with `contents`, through a
/// temporary file beside it, so no reader sees half of it. An existing file
/// keeps its mode (a config file with provider keys stays private), a new
/// one is 0644, and a symlink stays a symlink: the file it points to is the
/// one replaced.
fn write_atomically(path: &Path, contents: &str) -> anyhow::Result<()> {
    let target = match std::fs::canonicalize(path) {
        Ok(target) => target,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => path.to_owned(),
        Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
    };
    let dir = target
        .parent()
        .expect("a file written here has a folder; this is a bug");
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut file = tempfile::NamedTempFile::new_in(dir).with_context(|| format!("writing into {}", dir.display()))?;
    file.write_all(contents.as_bytes())
        .with_context(|| format!("writing into {}", dir.display()))?;
    let permissions = match std::fs::metadata(&target) {
        Ok(existing) => Some(existing.permissions()),
        #[cfg(unix)]
        Err(_) => {
            use std::os::unix::fs::PermissionsExt;
            // Temporary files start private; a new file is an ordinary readable one.
            Some(std::fs::Permissions::from_mode(0o644))
        }
        #[cfg(not(unix))]
        Err(_) => None,
    };
    if let Some(permissions) = permissions {
        file.as_file()
            .set_permissions(permissions)
            .with_context(|| format!("writing into {}", dir.display()))?;
    }
    file.persist(&target)
        .with_context(|| format!("replacing {}", target.display()))?;
    Ok(())
}

/// What is installed in a plugin folder, against this binary's plugin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Installed {
    /// No entry file.
    Absent,
    /// Every file is this binary's.
    Current,
    /// This binary's entry file, with some of its modules not there at all.
    Missing(Vec<&'static str>),
    /// Another version's.
    Older,
}

/// The plugin in `dir`, file for file.
pub fn installed(dir: &Path) -> Installed {
    let Ok(entry) = std::fs::read(dir.join(FILE_NAME)) else {
        return Installed::Absent;
    };
    // An entry file of another version is an older install, whatever else is there.
    if !FILES
        .iter()
        .any(|&(name, contents)| name == FILE_NAME && entry == contents.as_bytes())
    {
        return Installed::Older;
    }
    let missing: Vec<&'static str> = FILES
        .iter()
        .filter(|(name, _)| !dir.join(name).exists())
        .map(|&(name, _)| name)
        .collect();
    if !missing.is_empty() {
        return Installed::Missing(missing);
    }
    let current = FILES
        .iter()
        .all(|&(name, contents)| std::fs::read(dir.join(name)).is_ok_and(|c| c == contents.as_bytes()));
    if current {
        Installed::Current
    } else {
        Installed::Older
    }
}

/// Removes the entry file and the module folder from `dir`; whether either was there.
fn uninstall(dir: &Path) -> anyhow::Result<bool> {
    let entry = dir.join(FILE_NAME);
    let modules = dir.join(MODULE_DIR);
    let removed_entry = match std::fs::remove_file(&entry) {
        Ok(()) => true,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => false,
        Err(e) => return Err(e).with_context(|| format!("removing {}", entry.display())),
    };
    let removed_modules = match std::fs::remove_dir_all(&modules) {
        Ok(()) => true,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => false,
        Err(e) => return Err(e).with_context(|| format!("removing {}", modules.display())),
    };
    Ok(removed_entry || removed_modules)
}
