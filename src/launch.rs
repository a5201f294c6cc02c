//! The launch record, `$XDG_CONFIG_HOME/evolve-hud/launch.json`: the one
//! record of where the user's sidecar is and how it starts (binary, model,
//! port). `install-shim` and `service install` write it; the plugin
//! (`config.ts`, `launcher.ts`), `serve`, `status`, `watch`, `doctor`,
//! `hook` and `stop` read it through [`sidecar_port`] and [`read_launch`].

use anyhow::Context;
use std::io::Write;
use std::path::{Path, PathBuf};

/// The program `name` on PATH, as a shell finds it.
pub fn find_on_path(name: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}

/// Whether two paths name the same file, links followed.
pub fn same_file(a: &std::path::Path, b: &std::path::Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// How a binary was installed: what the plugin runs, and what its fixes
/// name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Install {
    /// The binary of the plugin's npm platform package (`…/node_modules/
    /// opencode-evolve-hud-linux-x64/bin/evolve-hud`): OpenCode installed
    /// it with the plugin, and the plugin runs it.
    Npm { package: String, path: PathBuf },
    /// `evolve-hud` on PATH is this binary.
    OnPath,
    /// Anywhere else (a build in a checkout, a copy).
    Elsewhere(PathBuf),
}

impl Install {
    /// The install of the binary at `this`, with `evolve-hud` on PATH at
    /// `on_path`.
    pub fn of(this: Option<&Path>, on_path: Option<&Path>) -> Install {
        let Some(this) = this else {
            return Install::OnPath;
        };
        if on_path.is_some_and(|p| same_file(p, this)) {
            return Install::OnPath;
        }
        let parts: Vec<&str> = this.iter().filter_map(|p| p.to_str()).collect();
        let package = parts.windows(4).find_map(|w| {
            (w[0] == "node_modules" && w[1].starts_with("opencode-evolve-hud-") && w[2] == "bin")
                .then(|| w[1].to_owned())
        });
        match package {
            Some(package) => Install::Npm {
                package,
                path: this.to_owned(),
            },
            None => Install::Elsewhere(this.to_owned()),
        }
    }
}

/// How the user's shell runs this binary, for the commands a fix names:
/// `evolve-hud` where that is this binary on PATH, else its full path (the
/// sidecar of the npm platform package, a build in `target/`).
pub fn this_command() -> String {
    let this = std::env::current_exe().ok();
    match (find_on_path("evolve-hud"), &this) {
        (Some(p), Some(t)) if same_file(&p, t) => "evolve-hud".into(),
        (_, Some(t)) => shell_word(&t.to_string_lossy()),
        (_, None) => "evolve-hud".into(),
    }
}

/// `word` as one shell word: as it is where it holds nothing the shell
/// reads specially, else in single quotes.
fn shell_word(word: &str) -> String {
    if !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+:@%,=".contains(c))
    {
        word.into()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// What the plugin starts when no sidecar answers: this binary, and the
/// model to serve (none: the registry's default model).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Launch {
    pub binary: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The port the sidecar serves on (none: 8377), when `service install`
    /// or `install-shim --port` chose one: the plugin talks to it there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<u16>,
}

/// `$XDG_CONFIG_HOME/evolve-hud/launch.json` (`~/.config/evolve-hud/`).
pub fn launch_path() -> anyhow::Result<PathBuf> {
    Ok(config_home()?.join("evolve-hud").join("launch.json"))
}

/// The port of the user's sidecar, found the same way by every command and
/// by the plugin (`config.ts`): `EVOLVE_HUD_PORT`, else the launch record's
/// (written by `service install` and `install-shim --port`), else 8377.
pub fn sidecar_port() -> u16 {
    std::env::var("EVOLVE_HUD_PORT")
        .ok()
        .and_then(|p| p.trim().parse().ok())
        .or_else(|| recorded_launch().and_then(|l| l.port))
        .unwrap_or(evolve_hud_api::DEFAULT_PORT)
}

/// Takes the port out of the launch record (`service uninstall`): the
/// plugin and the commands go back to the default. The port it held, if any.
pub(crate) fn forget_port() -> anyhow::Result<Option<u16>> {
    let Some(mut launch) = read_launch()? else {
        return Ok(None);
    };
    let Some(port) = launch.port.take() else {
        return Ok(None);
    };
    write_launch(&launch)?;
    Ok(Some(port))
}

/// The recorded launch, if any.
pub fn recorded_launch() -> Option<Launch> {
    read_launch().ok().flatten()
}

/// The recorded launch: `None` when none is recorded, an error naming the
/// file when it cannot be read.
pub fn read_launch() -> anyhow::Result<Option<Launch>> {
    let path = launch_path()?;
    match std::fs::symlink_metadata(&path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        // It names a binary to run: only a record no one else can write.
        _ => crate::private::owned_file(&path, "the launch record")?,
    }
    let bytes = std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
    serde_json::from_slice(&bytes)
        .map(Some)
        .with_context(|| format!("{} is not a launch record", path.display()))
}

/// Records this binary (and `model` and `port`, else the ones recorded
/// before) for the plugin to start and talk to.
pub(crate) fn record_launch(model: Option<&str>, port: Option<u16>) -> anyhow::Result<Launch> {
    let binary = std::env::current_exe().context("finding this binary's path")?;
    let before = recorded_launch();
    let launch = Launch {
        binary: binary.to_string_lossy().into_owned(),
        model: model
            .map(str::to_owned)
            .or_else(|| before.as_ref().and_then(|l| l.model.clone())),
        port: port.or_else(|| before.as_ref().and_then(|l| l.port)),
    };
    write_launch(&launch)?;
    Ok(launch)
}

/// Writes the launch record whole, private to the user.
fn write_launch(launch: &Launch) -> anyhow::Result<()> {
    let path = launch_path()?;
    let dir = path.parent().expect("the launch record has a folder; this is a bug");
    crate::private::own_dir(
        dir,
        "evolve-hud's secret and launch record",
        crate::private::Base::Config.var(),
    )?;
    let text = serde_json::to_string_pretty(launch).context("writing the launch record")?;
    // A temporary file starts private (0600) and replaces the record whole.
    let mut file = tempfile::NamedTempFile::new_in(dir).with_context(|| format!("writing into {}", dir.display()))?;
    file.write_all((text + "\n").as_bytes())
        .with_context(|| format!("writing into {}", dir.display()))?;
    file.persist(&path)
        .with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}

/// `$XDG_CONFIG_HOME`, else `~/.config`.
pub fn config_home() -> anyhow::Result<PathBuf> {
    crate::private::Base::Config.dir("evolve-hud's launch record and OpenCode's plugins")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_is_one_shell_word() {
        assert_eq!(
            shell_word("/home/me/.cache/opencode/node_modules/x/bin/evolve-hud"),
            "/home/me/.cache/opencode/node_modules/x/bin/evolve-hud"
        );
        assert_eq!(shell_word("/home/my files/evolve-hud"), "'/home/my files/evolve-hud'");
        assert_eq!(shell_word("/tmp/it's/evolve-hud"), r"'/tmp/it'\''s/evolve-hud'");
    }
}
