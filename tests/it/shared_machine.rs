//! On a machine shared with other users: the lock folder is the user's own
//! (a folder another user made, or one others can write, is refused with
//! the reason), and `stop` signals only an `evolve-hud serve` of the same
//! user, whatever pid a lock file names.

use crate::common;

use std::os::unix::fs::PermissionsExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn evolve_hud(args: &[&str], state: &std::path::Path) -> std::process::Output {
    common::command()
        .args(args)
        .env("XDG_STATE_HOME", state)
        .stdin(Stdio::null())
        .output()
        .expect("running evolve-hud")
}

/// Whether this process runs as root (then the test can hand a folder to
/// another account).
fn root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

#[test]
fn a_lock_folder_others_can_write_or_own_is_refused() {
    let state = tempfile::tempdir().unwrap();
    let dir = state.path().join("evolve-hud");
    std::fs::create_dir(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    let port = common::free_port().to_string();
    let model = common::test_model();
    let serve = ["serve", "--port", &port, "--model", model.to_str().unwrap()];
    let out = evolve_hud(&serve, state.path());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("can be written by other users") && stderr.contains("chmod 700"),
        "{stderr}"
    );

    if !root() {
        eprintln!("skipped: handing the folder to another account needs root");
        return;
    }
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    // Another account's folder (nobody's).
    std::os::unix::fs::chown(&dir, Some(65534), Some(65534)).unwrap();
    let out = evolve_hud(&serve, state.path());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("is not a folder of yours (owner uid 65534"), "{stderr}");
    // `stop` reads no lock from it either.
    let out = evolve_hud(&["stop", "--port", &port], state.path());
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("no evolve-hud serve is running"),
        "{out:?}"
    );
}

#[test]
fn stop_signals_only_an_evolve_hud_serve_of_its_user() {
    let state = tempfile::tempdir().unwrap();
    let dir = state.path().join("evolve-hud");
    std::fs::create_dir(&dir).unwrap();
    let port = common::free_port();
    let lock = dir.join(format!("serve-{port}.lock"));
    // Another process holds the port's lock and names itself in it.
    let mut holder = {
        use std::os::unix::process::CommandExt;
        Command::new("flock")
            .arg(&lock)
            .args(["sh", "-c", &format!("echo $$ > {} && exec sleep 60", lock.display())])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .expect("flock")
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::fs::read_to_string(&lock).unwrap_or_default().trim().is_empty() {
        assert!(Instant::now() < deadline, "the holder never wrote its pid");
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = evolve_hud(&["stop", "--port", &port.to_string()], state.path());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("is not an evolve-hud serve of yours") && stderr.contains("sleep"),
        "{stderr}"
    );
    assert!(stderr.contains("it was not signalled"), "{stderr}");
    assert!(holder.try_wait().unwrap().is_none(), "the other process was signalled");
    // The holder and its sleep, as a group.
    // SAFETY: kill(2) on a process group this test made.
    unsafe { libc::kill(-(holder.id() as libc::pid_t), libc::SIGKILL) };
    let _ = holder.wait();
}
