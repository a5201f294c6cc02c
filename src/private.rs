//! Folders and files of this user alone. What other local users can make or
//! write (a lock folder, a secret) could block `serve`, point `stop` at
//! another process, or hand them the sidecar's secret; so each is made with
//! modes that keep them out, and its owner and mode are checked before it
//! is trusted.

use anyhow::Context;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// The user's base folders, by the XDG rule that every command and the
/// plugin (`plugin-shim/evolve-hud/identity.ts`) share.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Base {
    /// `$XDG_CONFIG_HOME`, else `~/.config`: the secret, the launch record.
    Config,
    /// `$XDG_STATE_HOME`, else `~/.local/state`: locks, the sidecar's log.
    State,
    /// `$XDG_CACHE_HOME`, else `~/.cache`: models.
    Cache,
    /// `$XDG_DATA_HOME`, else `~/.local/share`: the binary a user service
    /// runs.
    Data,
}

impl Base {
    /// The environment variable that moves it.
    pub fn var(self) -> &'static str {
        match self {
            Base::Config => "XDG_CONFIG_HOME",
            Base::State => "XDG_STATE_HOME",
            Base::Cache => "XDG_CACHE_HOME",
            Base::Data => "XDG_DATA_HOME",
        }
    }

    fn under_home(self) -> &'static str {
        match self {
            Base::Config => ".config",
            Base::State => ".local/state",
            Base::Cache => ".cache",
            Base::Data => ".local/share",
        }
    }

    /// The folder, or why there is none: neither its variable nor `HOME`
    /// is set (an empty value counts as unset). There is no shared
    /// fallback, such as a `/tmp` folder another user could make first.
    /// `purpose` names what the caller keeps there, for the error.
    pub fn dir(self, purpose: &str) -> anyhow::Result<PathBuf> {
        self.dir_in(purpose, |name| std::env::var_os(name))
    }

    /// [`Base::dir`] with the environment read through `env`.
    fn dir_in(self, purpose: &str, env: impl Fn(&str) -> Option<std::ffi::OsString>) -> anyhow::Result<PathBuf> {
        let var = |name: &str| env(name).filter(|v| !v.is_empty()).map(PathBuf::from);
        var(self.var())
            .or_else(|| var("HOME").map(|h| h.join(self.under_home())))
            .with_context(|| {
                format!(
                    "neither {} nor HOME is set, so there is no folder of this user's for {purpose}; set HOME (or {})",
                    self.var(),
                    self.var()
                )
            })
    }
}

/// This process's effective user id.
pub fn me() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// Makes `dir` (mode 0700) if it is missing, and checks it with
/// [`trusted_dir`]. `purpose` says what the folder is for, `var` the
/// environment variable that moves it.
pub fn own_dir(dir: &Path, purpose: &str, var: &str) -> anyhow::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .with_context(|| {
            format!(
                "cannot create {}, the folder of {purpose}. Remove or rename what is in the way, or set {var} \
to a folder you own",
                dir.display()
            )
        })?;
    // A folder of ours that others may read or enter but not write (made by
    // an older version, or with the default umask) is made ours alone. One
    // others could write is refused below: what they put in it stays.
    if let Ok(meta) = std::fs::symlink_metadata(dir) {
        let mode = meta.permissions().mode() & 0o777;
        if meta.is_dir() && meta.uid() == me() && mode & 0o077 != 0 && mode & 0o022 == 0 {
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
                .with_context(|| format!("making {} yours alone (chmod 700)", dir.display()))?;
            tracing::info!(folder = %dir.display(), "made the folder of {purpose} yours alone (was mode {mode:o}, now 700)");
        }
    }
    trusted_dir(dir, purpose, var)
}

/// Whether `dir` is a folder of this user's that no other user may write;
/// why not, with the fix.
pub fn trusted_dir(dir: &Path, purpose: &str, var: &str) -> anyhow::Result<()> {
    let meta = std::fs::symlink_metadata(dir).with_context(|| format!("reading {}", dir.display()))?;
    if !meta.is_dir() || meta.uid() != me() {
        anyhow::bail!(
            "{} (the folder of {purpose}) is not a folder of yours (owner uid {}, you are {}); it is not \
trusted. Remove it, or set {var} to a folder you own",
            dir.display(),
            meta.uid(),
            me()
        );
    }
    if meta.permissions().mode() & 0o022 != 0 {
        anyhow::bail!(
            "{} (the folder of {purpose}) can be written by other users (mode {:o}); it is not trusted. \
`chmod 700 {}` makes it yours alone",
            dir.display(),
            meta.permissions().mode() & 0o777,
            dir.display()
        );
    }
    Ok(())
}

/// Whether `file` is a regular file of this user's that no other user may
/// read or write; why not, with the fix.
pub fn trusted_secret(file: &Path) -> anyhow::Result<()> {
    let meta = std::fs::symlink_metadata(file).with_context(|| format!("reading {}", file.display()))?;
    if !meta.is_file() || meta.uid() != me() {
        anyhow::bail!(
            "{} is not a file of yours (owner uid {}, you are {}); it is not used as a secret. Remove it \
and the sidecar makes a new one",
            file.display(),
            meta.uid(),
            me()
        );
    }
    if meta.permissions().mode() & 0o077 != 0 {
        anyhow::bail!(
            "{} can be read or written by other users (mode {:o}); it is not used as a secret. \
`chmod 600 {}` makes it yours alone; then restart the sidecar, since others may have read it, \
or remove the file and the sidecar makes a new one",
            file.display(),
            meta.permissions().mode() & 0o777,
            file.display()
        );
    }
    Ok(())
}

/// Whether `file` (a token file named by a flag or the environment; a link
/// is followed) is a regular file of this user's that no other user may
/// read or write; why not, with the fix.
pub fn private_file(file: &Path) -> anyhow::Result<()> {
    let meta = std::fs::metadata(file).with_context(|| format!("reading the token file {}", file.display()))?;
    if !meta.is_file() || meta.uid() != me() {
        anyhow::bail!(
            "the token file {} is not a file of yours (owner uid {}, you are {}); it is not used. Make your \
own: `(umask 077; od -An -tx1 -N32 /dev/urandom | tr -d ' \\n' > FILE)`",
            file.display(),
            meta.uid(),
            me()
        );
    }
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        anyhow::bail!(
            "the token file {} can be read or written by other users (mode {mode:o}); it is not used. \
`chmod 600 {}` makes it yours alone; then make a new token, since others may have read this one",
            file.display(),
            file.display()
        );
    }
    Ok(())
}

/// Whether `file` is a regular file of this user's that no other user may
/// write; why not, with the fix. `what` names it.
pub fn owned_file(file: &Path, what: &str) -> anyhow::Result<()> {
    let meta = std::fs::symlink_metadata(file).with_context(|| format!("reading {}", file.display()))?;
    if !meta.is_file() || meta.uid() != me() {
        anyhow::bail!(
            "{} ({what}) is not a file of yours (owner uid {}, you are {}); it is not used. Remove it, and \
`evolve-hud install-shim` writes a new one",
            file.display(),
            meta.uid(),
            me()
        );
    }
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o022 != 0 {
        anyhow::bail!(
            "{} ({what}) can be written by other users (mode {mode:o}); it is not used. `chmod 600 {}` makes \
it yours alone",
            file.display(),
            file.display()
        );
    }
    Ok(())
}

#[cfg(test)]
mod base_tests {
    use super::Base;
    use std::ffi::OsString;

    /// The rule's cases, shared with the plugin's test of `baseDir`.
    const CASES: &str = include_str!("../tests/fixtures/xdg-bases.json");

    #[test]
    fn each_base_is_its_variable_else_its_folder_under_home_else_an_error() {
        let table: serde_json::Value = serde_json::from_str(CASES).expect("the cases are JSON");
        let cases = table["cases"].as_array().expect("a list of cases");
        assert!(cases.len() >= 10, "the shared table is there");
        for case in cases {
            let env = case["env"].as_object().expect("an environment");
            let lookup = |name: &str| env.get(name).and_then(|v| v.as_str()).map(OsString::from);
            let base = match case["base"].as_str() {
                Some("config") => Base::Config,
                Some("state") => Base::State,
                Some("cache") => Base::Cache,
                other => panic!("no base {other:?}"),
            };
            match case["dir"].as_str() {
                Some(dir) => assert_eq!(base.dir_in("x", lookup).unwrap(), std::path::Path::new(dir), "{case}"),
                None => {
                    let why = base.dir_in("lock files", lookup).unwrap_err().to_string();
                    assert!(
                        why.contains(base.var()) && why.contains("HOME") && why.contains("lock files"),
                        "{case}: {why}"
                    );
                }
            }
        }
    }
}
