//! One `serve` per port for a user: a lock file in a folder only that user
//! may write, held while the server runs, records its process id. A second `serve` on the same port (two
//! OpenCode processes starting the sidecar at once) finds the lock held and
//! leaves before loading a model; `evolve-hud stop` reads the id from it.
//! The kernel releases the lock when the process ends, however it ends.

use anyhow::Context;
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, Write};
use std::path::PathBuf;

/// The lock of a running server; its file is removed and the lock released
/// on drop.
pub struct Instance {
    file: File,
    path: PathBuf,
}

impl Drop for Instance {
    fn drop(&mut self) {
        // Removed while still locked: a server starting now either locked
        // this file before (and waits on us) or finds it gone and makes a
        // new one; `claim` checks that the file it locked is still the one
        // at the path.
        let _ = std::fs::remove_file(&self.path);
        let _ = self.file.unlock();
    }
}

/// The folder of the locks: `$XDG_STATE_HOME/evolve-hud/`, else
/// `~/.local/state/evolve-hud/`, the same for `serve`, `stop`, `doctor` and
/// the plugin whatever else their environments hold. There is no shared
/// fallback (a `/tmp` folder another user could make first).
pub fn lock_dir() -> anyhow::Result<PathBuf> {
    Ok(crate::private::Base::State
        .dir("evolve-hud's lock files")?
        .join("evolve-hud"))
}

/// Where the lock of `port` lives (see [`lock_dir`]).
pub fn lock_path(port: u16) -> anyhow::Result<PathBuf> {
    Ok(lock_dir()?.join(format!("serve-{port}.lock")))
}

/// Claims `port` for this process. `Ok(None)` for port 0 (a free port is
/// picked, no other server can want it); an error naming the running
/// server when another holds it.
pub fn claim(port: u16) -> anyhow::Result<Option<Instance>> {
    if port == 0 {
        return Ok(None);
    }
    let path = lock_path(port)?;
    crate::private::own_dir(
        &lock_dir()?,
        "evolve-hud serve's lock files (one per port, so that one sidecar runs per port)",
        crate::private::Base::State.var(),
    )?;
    loop {
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .with_context(|| format!("opening the lock file {}", path.display()))?;
        match file.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                let pid = read_pid(&mut file).map_or_else(String::new, |p| format!(" (process {p})"));
                anyhow::bail!(
                    "another evolve-hud serve is already running on port {port}{pid}; use it, stop it with \
`evolve-hud stop --port {port}`, or pick another --port"
                );
            }
            Err(std::fs::TryLockError::Error(e)) => {
                return Err(e).with_context(|| format!("locking {}", path.display()))
            }
        }
        // A server that just stopped removes its file: the one locked here
        // may no longer be at the path. Then lock the new one.
        if !same_file(&file, &path) {
            continue;
        }
        file.set_len(0)?;
        file.rewind()?;
        writeln!(file, "{}", std::process::id())?;
        file.flush()?;
        // A sidecar runs again: whatever `stop` recorded is over.
        if let Ok(stopped) = stopped_path(port) {
            let _ = std::fs::remove_file(stopped);
        }
        return Ok(Some(Instance { file, path }));
    }
}

/// Whether `path` names the open `file`.
fn same_file(file: &File, path: &std::path::Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (file.metadata(), std::fs::metadata(path)) {
        (Ok(a), Ok(b)) => (a.dev(), a.ino()) == (b.dev(), b.ino()),
        _ => false,
    }
}

/// The process id of the server holding `port`'s lock, if one runs.
pub fn running(port: u16) -> Option<u32> {
    // A lock in a folder another user controls names nothing of ours.
    crate::private::trusted_dir(&lock_dir().ok()?, "lock files", crate::private::Base::State.var()).ok()?;
    let mut file = File::open(lock_path(port).ok()?).ok()?;
    match file.try_lock_shared() {
        // Nobody holds it: no server runs (the id is a leftover).
        Ok(()) => None,
        Err(_) => read_pid(&mut file),
    }
}

/// Stops the server on `port`: SIGTERM, then up to 10 s for the process to
/// end. The lock goes before the process does (its model and runtime are
/// freed after), and whoever runs `stop` may next replace the binary or
/// count processes: the wait is for the process.
pub fn stop(port: u16) -> anyhow::Result<String> {
    let Some(pid) = running(port) else {
        return Ok(format!("no evolve-hud serve is running on port {port}"));
    };
    if let Err(what) = is_our_serve(pid) {
        anyhow::bail!(
            "the lock of port {port} names process {pid}, which is not an evolve-hud serve of yours ({what}); \
it was not signalled"
        );
    }
    let started = proc_stat(pid).map_or(0, |(_, at)| at);
    let pid_t = libc::pid_t::try_from(pid).context("process id out of range")?;
    // SAFETY: kill(2) with a process id and a signal number has no memory effects.
    if unsafe { libc::kill(pid_t, libc::SIGTERM) } != 0 {
        return Err(std::io::Error::last_os_error()).with_context(|| format!("signalling process {pid}"));
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while running(port).is_some() || !ended(pid, started) {
        if std::time::Instant::now() > deadline {
            anyhow::bail!("process {pid} on port {port} did not stop within 10 s");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    // The plugin does not start it again in the OpenCode that runs now.
    let marked = mark_stopped(port);
    Ok(format!(
        "stopped evolve-hud serve on port {port} (process {pid}){}",
        match marked {
            Ok(()) => "; the OpenCode plugin leaves it stopped until OpenCode starts again (or `evolve-hud serve`)",
            Err(_) => "; the OpenCode plugin may start it again at its next step",
        }
    ))
}

/// Process `pid`'s state letter and start time (in clock ticks after boot),
/// from `/proc/PID/stat`; `None` once it is gone.
fn proc_stat(pid: u32) -> Option<(char, u64)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The fields follow the command's name, which is in parentheses and may
    // itself hold any character: the state first, the start time 20th.
    let mut fields = stat.rsplit_once(')')?.1.split_whitespace();
    let state = fields.next()?.chars().next()?;
    Some((state, fields.nth(18)?.parse().ok()?))
}

/// Whether the process that was `pid` when it started at `started` has
/// ended: gone (or its id taken by another process), or a zombie whose
/// threads have all ended, left for its parent to reap.
fn ended(pid: u32, started: u64) -> bool {
    match proc_stat(pid) {
        Some((state, at)) if at == started => {
            matches!(state, 'Z' | 'X')
                && std::fs::read_dir(format!("/proc/{pid}/task")).map_or(true, |tasks| tasks.count() <= 1)
        }
        _ => true,
    }
}

/// Where `stop` records that the user stopped the sidecar of `port`: the
/// plugin starts none while this is newer than itself, and `serve` removes
/// it when it starts.
pub fn stopped_path(port: u16) -> anyhow::Result<PathBuf> {
    Ok(lock_dir()?.join(format!("stopped-{port}")))
}

fn mark_stopped(port: u16) -> anyhow::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let path = stopped_path(port)?;
    let at = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    let mut file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&path)
        .with_context(|| format!("writing {}", path.display()))?;
    writeln!(file, "{{\"at\": {at}}}").with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}

/// Whether process `pid` is an `evolve-hud serve` of this user: its owner,
/// its executable's name and its first arguments, from `/proc`. What it is
/// otherwise, in words.
fn is_our_serve(pid: u32) -> Result<(), String> {
    use std::os::unix::fs::MetadataExt;
    let proc = PathBuf::from(format!("/proc/{pid}"));
    let owner = std::fs::metadata(&proc)
        .map_err(|e| format!("it cannot be looked at: {e}"))?
        .uid();
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    if owner != me {
        return Err(format!("it belongs to uid {owner}"));
    }
    let exe = std::fs::read_link(proc.join("exe")).map_err(|e| format!("its executable cannot be read: {e}"))?;
    let name = exe
        .file_name()
        .map(|n| n.to_string_lossy().trim_end_matches(" (deleted)").to_owned());
    let args = std::fs::read(proc.join("cmdline")).unwrap_or_default();
    let serves = args.split(|&b| b == 0).nth(1) == Some(b"serve".as_slice());
    match (name.as_deref(), serves) {
        (Some("evolve-hud"), true) => Ok(()),
        _ => Err(format!("it runs {}", exe.display())),
    }
}

fn read_pid(file: &mut File) -> Option<u32> {
    let mut text = String::new();
    file.rewind().ok()?;
    file.read_to_string(&mut text).ok()?;
    text.trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_claim_of_a_port_is_refused_until_the_first_ends() {
        let dir = tempfile::tempdir().unwrap();
        // SAFETY: this test alone sets XDG_STATE_HOME in this process.
        unsafe { std::env::set_var("XDG_STATE_HOME", dir.path()) };
        let port = 45_123;
        let first = claim(port).unwrap().expect("a lock");
        assert_eq!(running(port), Some(std::process::id()));
        let second = claim(port).err().expect("refused").to_string();
        assert!(second.contains("already running on port 45123"), "{second}");
        drop(first);
        assert_eq!(running(port), None);
        assert!(!lock_path(port).unwrap().exists(), "the lock file is removed on exit");
        assert!(claim(port).unwrap().is_some());
        assert!(claim(0).unwrap().is_none());
    }
}
