//! Folders and files of this user alone. What other local users can make or
//! write (a lock folder, a secret) could block `serve`, point `stop` at
//! another process, or hand them the sidecar's secret; so each is made with
//! modes that keep them out, and its owner and mode are checked before it
//! is trusted.

use anyhow::Context;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

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
