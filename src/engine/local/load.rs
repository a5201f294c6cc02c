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
        let before = running_here()?;
        let all = running_everywhere()?;
        let here = before.still_running(&running_here()?);
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

/// This process's runnable threads (state `R`) at one look, each with the
/// times it had gone to sleep by then.
struct RunningHere(Vec<(String, u64)>);

impl RunningHere {
    /// This process's share of a machine-wide count read between `self`
    /// and `after`: the threads that ran at both looks and never slept in
    /// between, the calling one always. A thread that parked meanwhile
    /// (the HTTP worker that handed over the request, just as the model
    /// thread looks) may be missing from the count, and taking it for this
    /// process's would hide a busy core elsewhere; counting it as load
    /// instead lasts one sample.
    fn still_running(&self, after: &RunningHere) -> usize {
        let me = std::fs::read_link("/proc/thread-self")
            .ok()
            .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()));
        let others = self
            .0
            .iter()
            .filter(|(tid, _)| Some(tid) != me.as_ref())
            .filter(|thread| after.0.contains(thread))
            .count();
        others + 1
    }
}

/// This process's threads in state `R`, the calling one included, with
/// their voluntary context switches (`/proc/self/task/*/status`).
fn running_here() -> Option<RunningHere> {
    let tasks = std::fs::read_dir("/proc/self/task").ok()?;
    let running = tasks
        .filter_map(Result::ok)
        .filter_map(|task| {
            let status = std::fs::read_to_string(task.path().join("status")).ok()?;
            let field = |name: &str| status.lines().find_map(|l| l.strip_prefix(name)).map(str::trim);
            if !field("State:")?.starts_with('R') {
                return None;
            }
            let slept = field("voluntary_ctxt_switches:")?.parse().ok()?;
            Some((task.file_name().to_string_lossy().into_owned(), slept))
        })
        .collect();
    Some(RunningHere(running))
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
        let first = running_here().expect("Linux tells");
        let here = first.still_running(&running_here().expect("Linux tells"));
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

    /// A thread of this process that wakes and sleeps while the run queue
    /// is read (the HTTP worker that handed over the request parks just as
    /// the model thread looks) is never taken for the busy loop elsewhere.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_thread_here_that_parks_meanwhile_hides_no_load_elsewhere() {
        use std::sync::atomic::{AtomicBool, Ordering};
        let stop = std::sync::Arc::new(AtomicBool::new(false));
        let flipper = {
            let stop = stop.clone();
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let until = std::time::Instant::now() + Duration::from_micros(15);
                    while std::time::Instant::now() < until {}
                    std::thread::sleep(Duration::from_micros(15));
                }
            })
        };
        let mut child = std::process::Command::new("sh")
            .args(["-c", "while :; do :; done"])
            .spawn()
            .expect("sh");
        std::thread::sleep(Duration::from_millis(50));
        let looks = 200;
        let missed = (0..looks).filter(|_| busy_elsewhere() == Some(0)).count();
        let _ = child.kill();
        let _ = child.wait();
        stop.store(true, Ordering::Relaxed);
        flipper.join().unwrap();
        assert_eq!(missed, 0, "{missed} of {looks} looks saw no load beside a busy loop");
    }
}
