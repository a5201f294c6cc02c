//! Hostile model files: mutated copies of the real test model either load or
//! are refused with a clear error and exit 1, never a crash inside llama.cpp;
//! the Rust pre-check never panics on thousands of mutated headers.

use crate::common;

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::time::{Duration, Instant};

/// A fixed pseudo-random sequence (the same mutations on every run).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
}

/// Changes 1 to 16 bytes among the first 2 MB (metadata and tensor infos).
fn mutate(original: &[u8], rng: &mut Lcg) -> Vec<u8> {
    let mut bytes = original.to_vec();
    let limit = bytes.len().min(2_000_000) as u64;
    for _ in 0..[1, 4, 16][(rng.next() % 3) as usize] {
        let at = 8 + (rng.next() % (limit - 8)) as usize;
        bytes[at] = rng.next() as u8;
    }
    bytes
}

#[test]
fn the_pre_check_never_panics_on_mutated_headers() {
    let original = std::fs::read(common::test_model()).unwrap();
    let header = &original[..original.len().min(4_000_000)];
    let mut rng = Lcg(7);
    let (mut accepted, mut refused) = (0, 0);
    for _ in 0..2000 {
        match evolve_hud::gguf::check_bytes(&mutate(header, &mut rng)) {
            Ok(_) => accepted += 1,
            Err(e) => {
                assert!(!e.to_string().is_empty());
                refused += 1;
            }
        }
    }
    assert!(refused > 0, "no mutation was caught ({accepted} accepted)");
}

#[test]
fn mutated_models_load_or_fail_cleanly() {
    let original = std::fs::read(common::test_model()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Lcg(42);
    let (mut loaded, mut refused) = (0, 0);
    for i in 0..10 {
        let path = dir.path().join(format!("mutated-{i}.gguf"));
        std::fs::write(&path, mutate(&original, &mut rng)).unwrap();
        let mut child = common::command()
            .args(["serve", "--port", "0", "--threads", "2", "--model"])
            .arg(&path)
            .env("RUST_LOG", "info")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let stderr = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        let deadline = Instant::now() + Duration::from_secs(120);
        let mut lines = Vec::new();
        loop {
            if let Ok(line) = rx.recv_timeout(Duration::from_millis(100)) {
                let listening = line.contains("listening on");
                lines.push(line);
                if listening {
                    child.kill().unwrap();
                    child.wait().unwrap();
                    loaded += 1;
                    break;
                }
            }
            if let Some(status) = child.try_wait().unwrap() {
                lines.extend(rx.try_iter());
                assert_eq!(
                    status.code(),
                    Some(1),
                    "mutation {i} did not exit cleanly: {status:?}\n{}",
                    lines.join("\n")
                );
                assert!(
                    lines.iter().any(|l| l.starts_with("error: ")),
                    "mutation {i}: {}",
                    lines.join("\n")
                );
                refused += 1;
                break;
            }
            assert!(Instant::now() < deadline, "mutation {i} hung");
        }
    }
    assert_eq!(loaded + refused, 10);
}
