//! `evolve-hud service install|uninstall`: the sidecar as a user service,
//! for those who prefer one to the plugin starting it: a systemd user unit
//! on Linux, a launchd agent on macOS. Writes the file and says how to
//! enable it; it runs nothing as root.

use crate::cli::{ServiceAction, ServiceArgs};
use anyhow::Context;
use std::path::PathBuf;

const UNIT: &str = "evolve-hud.service";
const AGENT: &str = "dev.evolve-hud.serve.plist";

/// The binary a service may run: this one, unless it lives where an
/// update or a cleanup replaces it (the npm package OpenCode installed in
/// its cache, any cache folder). Then it is copied, with the libraries
/// beside it, to `~/.local/share/evolve-hud/bin/`, and what was copied is
/// said; `service install` again after an update copies the new one.
fn stable_binary(binary: &std::path::Path) -> anyhow::Result<(PathBuf, Option<String>)> {
    let packaged = matches!(
        crate::launch::Install::of(Some(binary), None),
        crate::launch::Install::Npm { .. }
    );
    let cached = crate::private::Base::Cache
        .dir("models")
        .is_ok_and(|cache| binary.starts_with(cache));
    if !packaged && !cached {
        return Ok((binary.to_owned(), None));
    }
    let from = binary.parent().context("the binary's folder")?;
    let dir = crate::private::Base::Data
        .dir("the service's binary")?
        .join("evolve-hud/bin");
    crate::private::own_dir(&dir, "the service's binary", crate::private::Base::Data.var())?;
    let mut files = 0;
    for entry in std::fs::read_dir(from).with_context(|| format!("reading {}", from.display()))? {
        let entry = entry?;
        // Regular files only (the binary, its libraries and modules):
        // links followed to what they name.
        let source = entry.path();
        if !std::fs::metadata(&source).is_ok_and(|m| m.is_file()) {
            continue;
        }
        let target = dir.join(entry.file_name());
        let temp = dir.join(format!(
            ".{}.{}",
            entry.file_name().to_string_lossy(),
            std::process::id()
        ));
        std::fs::copy(&source, &temp)
            .and_then(|_| std::fs::rename(&temp, &target))
            .with_context(|| format!("copying {} to {}", source.display(), target.display()))?;
        files += 1;
    }
    let stable = dir.join(binary.file_name().context("the binary's name")?);
    Ok((
        stable.clone(),
        Some(format!(
            "copied {} ({files} files with its libraries) to {}: the service runs that copy, since {} is replaced by \
updates of the plugin and by cache cleanups; run `service install` again after an update\n",
            binary.display(),
            dir.display(),
            from.display()
        )),
    ))
}

pub fn run(args: &ServiceArgs) -> anyhow::Result<String> {
    let path = file()?;
    match &args.action {
        ServiceAction::Install { model, port } => {
            let (binary, copied) = stable_binary(&std::env::current_exe().context("finding this binary's path")?)?;
            let mut command = vec![
                binary.to_string_lossy().into_owned(),
                "serve".into(),
                "--port".into(),
                port.to_string(),
            ];
            if let Some(model) = model {
                command.extend(["--model".into(), model.clone()]);
            }
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
            }
            let unit = text(&command);
            let replaced = match std::fs::read_to_string(&path) {
                Ok(old) if old == unit => format!("already current: {}\n", path.display()),
                Ok(old) => format!(
                    "replaced {} (it ran: {})\n",
                    path.display(),
                    ran(&old).unwrap_or("something else")
                ),
                Err(_) => format!("wrote {}\n", path.display()),
            };
            std::fs::write(&path, &unit).with_context(|| format!("writing {}", path.display()))?;
            // The plugin talks to the service's port, and starts the same binary and model.
            crate::launch::record_launch(model.as_deref(), Some(*port))?;
            let mut said = copied.unwrap_or_default() + &replaced;
            said += &format!(
                "the plugin talks to it on port {port} (recorded in {})\n",
                crate::launch::launch_path()?.display()
            );
            match manager() {
                Ok(()) => said += enable(),
                Err(why) => {
                    said += &format!(
                        "warning: {why}, so nothing here will run this service. Start the sidecar by hand \
(`evolve-hud serve --port {port}`), or leave it to the plugin, which starts one when none answers.\n"
                    );
                }
            }
            Ok(said)
        }
        ServiceAction::Uninstall => {
            let mut said = match std::fs::remove_file(&path) {
                Ok(()) => format!("removed {}\n{}", path.display(), disable()),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => format!("not installed at {}\n", path.display()),
                Err(e) => return Err(e).with_context(|| format!("removing {}", path.display())),
            };
            // What `install` recorded goes too: the plugin and the commands
            // look at the default port again.
            if let Some(port) = crate::launch::forget_port()? {
                said += &format!(
                    "the plugin and the commands no longer look at port {port}: they use {} again (recorded in {})\n",
                    crate::launch::sidecar_port(),
                    crate::launch::launch_path()?.display()
                );
            }
            Ok(said)
        }
    }
}

/// Where the unit or agent goes.
fn file() -> anyhow::Result<PathBuf> {
    if cfg!(target_os = "macos") {
        let home = std::env::var_os("HOME").context("HOME is not set")?;
        return Ok(PathBuf::from(home).join("Library/LaunchAgents").join(AGENT));
    }
    Ok(crate::launch::config_home()?.join("systemd/user").join(UNIT))
}

/// The unit (or agent) running `command`.
fn text(command: &[String]) -> String {
    if cfg!(target_os = "macos") {
        let args: String = command
            .iter()
            .map(|a| format!("    <string>{}</string>\n", xml(a)))
            .collect();
        return format!(
            r#"<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<plist version="1.0">
<dict>
  <key>Label</key><string>dev.evolve-hud.serve</string>
  <key>ProgramArguments</key>
  <array>
{args}  </array>
  <key>RunAtLoad</key><true/>
  <key>KeepAlive</key><true/>
</dict>
</plist>
"#
        );
    }
    let exec: Vec<String> = command.iter().map(|a| systemd_quote(a)).collect();
    format!(
        "[Unit]\nDescription=evolve-hud sidecar for OpenCode\n\n[Service]\nExecStart={}\nRestart=on-failure\n\n[Install]\nWantedBy=default.target\n",
        exec.join(" ")
    )
}

/// What an existing unit or agent runs.
fn ran(unit: &str) -> Option<&str> {
    if cfg!(target_os = "macos") {
        return unit
            .find("<array>")
            .map(|at| unit[at..].lines().nth(1).unwrap_or_default().trim());
    }
    unit.lines().find_map(|l| l.strip_prefix("ExecStart="))
}

/// Whether the user's service manager answers: a user systemd instance
/// (`systemctl --user`), or launchd on macOS. Why not, in words.
fn manager() -> Result<(), String> {
    let (program, args): (&str, &[&str]) = if cfg!(target_os = "macos") {
        ("launchctl", &["list"])
    } else {
        ("systemctl", &["--user", "show-environment"])
    };
    match std::process::Command::new(program)
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .output()
    {
        Ok(out) if out.status.success() => Ok(()),
        Ok(out) => Err(format!(
            "no user service manager answers (`{program} {}` failed: {})",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr)
                .lines()
                .next()
                .unwrap_or("no reason given")
                .trim()
        )),
        Err(e) => Err(format!("`{program}` cannot be run here ({e})")),
    }
}

fn enable() -> &'static str {
    if cfg!(target_os = "macos") {
        "Start it now and at each login: launchctl load -w ~/Library/LaunchAgents/dev.evolve-hud.serve.plist\n"
    } else {
        "Start it now and at each login: systemctl --user daemon-reload && systemctl --user enable --now evolve-hud\n"
    }
}

fn disable() -> &'static str {
    if cfg!(target_os = "macos") {
        "If it was loaded: launchctl unload ~/Library/LaunchAgents/dev.evolve-hud.serve.plist\n"
    } else {
        "If it was enabled: systemctl --user disable --now evolve-hud && systemctl --user daemon-reload\n"
    }
}

/// A word of `ExecStart=`, quoted where systemd would split it.
fn systemd_quote(word: &str) -> String {
    if word
        .chars()
        .any(|c| c.is_whitespace() || c == '"' || c == '\\' || c == '%')
    {
        format!(
            "\"{}\"",
            word.replace('\\', "\\\\").replace('"', "\\\"").replace('%', "%%")
        )
    } else {
        word.to_owned()
    }
}

fn xml(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_unit_runs_serve_with_its_words_quoted() {
        let unit = text(&[
            "/opt/my tools/evolve-hud".into(),
            "serve".into(),
            "--port".into(),
            "8377".into(),
        ]);
        if !cfg!(target_os = "macos") {
            assert!(
                unit.contains("ExecStart=\"/opt/my tools/evolve-hud\" serve --port 8377\n"),
                "{unit}"
            );
            assert!(unit.contains("WantedBy=default.target"));
        }
    }
}
