//! How many cores other processes keep busy, so that the model decodes on
//! the cores that are free. llama.cpp's compute threads meet at a barrier
//! at every step: with one busy loop beside it on 2 cores, 2 threads
//! generated 14.5 tokens/s and 1 thread 30 (docs/performance.md), because
//! the second thread waits for a core at every step.

use std::time::Duration;

/// Samples of the run queue taken before a generation, and the pause
/// between them: a process that runs for less than the 30 ms they span is
/// not load. A first sample that finds none ends the look.
const SAMPLES: usize = 4;
const PAUSE: Duration = Duration::from_millis(10);

/// Threads to decode with: `max`, or fewer when other processes keep
/// `busy` of the `cores` busy; at least 1.
pub fn threads_for(max: u32, cores: usize, busy: usize) -> u32 {
    let free = cores.saturating_sub(busy).max(1);
    (max as usize).min(free) as u32
}

/// Cores kept busy by other processes: the fewest runnable tasks outside
/// this process over a few samples (one on a quiet machine). `None` where
/// the kernel does not tell.
pub fn busy_elsewhere() -> Option<usize> {
    let mut fewest: Option<usize> = None;
    for i in 0..SAMPLES {
        if i > 0 {
            std::thread::sleep(PAUSE);
        }
        let here = running_here()?;
        let all = running_everywhere()?;
        let elsewhere = all.saturating_sub(here);
        if elsewhere == 0 {
            // None can be fewer: a quiet machine costs one look.
            return Some(0);
        }
        fewest = Some(fewest.map_or(elsewhere, |f| f.min(elsewhere)));
    }
    fewest
}

/// Runnable tasks on the machine (`procs_running` of `/proc/stat`).
fn running_everywhere() -> Option<usize> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    stat.lines()
        .find_map(|l| l.strip_prefix("procs_running "))
        .and_then(|n| n.trim().parse().ok())
}

/// This process's runnable threads (state `R`), the calling one included.
fn running_here() -> Option<usize> {
    let tasks = std::fs::read_dir("/proc/self/task").ok()?;
    let running = tasks
        .filter_map(Result::ok)
        .filter_map(|task| std::fs::read_to_string(task.path().join("stat")).ok())
        .filter(|stat| {
            // `pid (comm) S ...`: the state follows the last `)`.
            stat.rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().next())
                == Some("R")
        })
        .count();
    Some(running)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threads_are_the_free_cores_within_the_maximum() {
        assert_eq!(threads_for(2, 2, 0), 2);
        assert_eq!(threads_for(2, 2, 1), 1);
        assert_eq!(threads_for(2, 2, 5), 1, "never none");
        assert_eq!(threads_for(4, 8, 3), 4);
        assert_eq!(threads_for(8, 8, 3), 5);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_busy_process_elsewhere_is_seen_and_this_ones_threads_are_counted_apart() {
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let spinner = {
            let stop = stop.clone();
            std::thread::spawn(move || while !stop.load(std::sync::atomic::Ordering::Relaxed) {})
        };
        // This thread and the spinner are this process's, not load from elsewhere.
        let here = running_here().expect("Linux tells");
        let mut child = std::process::Command::new("sh")
            .args(["-c", "while :; do :; done"])
            .spawn()
            .expect("sh");
        std::thread::sleep(Duration::from_millis(50));
        let busy = busy_elsewhere().expect("Linux tells");
        let _ = child.kill();
        let _ = child.wait();
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        spinner.join().unwrap();
        assert!(here >= 2, "this thread and the spinner run here: {here}");
        assert!(busy >= 1, "a busy loop elsewhere is seen: {busy}");
    }
}
