//! CPU-bound work of async code (tokenizing a prompt, merging a session and
//! rendering and counting its HUD) on blocking threads, a few at a time: the
//! async workers go on answering, and a burst of requests waits here for a
//! slot instead of starting a thread each.

use std::sync::LazyLock;
use tokio::sync::Semaphore;

/// Work running at once: one per core, at most 4. The model decodes on the
/// same cores, so more would only wait for them.
static SLOTS: LazyLock<Semaphore> = LazyLock::new(|| Semaphore::new(slots()));

fn slots() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get()).min(4)
}

/// Runs `work` on a blocking thread once a slot is free. The slot is held
/// until `work` ends, also where the caller stopped waiting for it. An
/// error is a panic in `work`, said in words.
pub async fn run<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> Result<T, String> {
    let slot = SLOTS
        .acquire()
        .await
        .map_err(|_| "the work queue is closed".to_owned())?;
    tokio::task::spawn_blocking(move || {
        let _slot = slot;
        work()
    })
    .await
    .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::time::Duration;

    #[tokio::test(flavor = "current_thread")]
    async fn at_most_the_slots_run_at_once_and_the_async_worker_stays_free() {
        let running = Arc::new(AtomicUsize::new(0));
        let most = Arc::new(AtomicUsize::new(0));
        let started = Arc::new(AtomicUsize::new(0));
        let total = 3 * slots();
        // Set by the async side while the first job blocks for it: on the
        // one async worker, that only happens if the job is not on it.
        let ticked = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let saw_tick = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        let jobs: Vec<_> = (0..total)
            .map(|i| {
                let (running, most, started) = (running.clone(), most.clone(), started.clone());
                let (ticked, saw_tick) = (ticked.clone(), saw_tick.clone());
                tokio::spawn(run(move || {
                    if i == 0 {
                        while !ticked.load(Ordering::SeqCst) && std::time::Instant::now() < deadline {
                            std::thread::sleep(Duration::from_millis(1));
                        }
                        saw_tick.store(ticked.load(Ordering::SeqCst), Ordering::SeqCst);
                    }
                    started.fetch_add(1, Ordering::SeqCst);
                    let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                    most.fetch_max(now, Ordering::SeqCst);
                    // Each waits until every slot is taken (or no work is
                    // left to start), so the count shows the bound however
                    // slowly threads start.
                    while running.load(Ordering::SeqCst) < slots()
                        && started.load(Ordering::SeqCst) < total
                        && std::time::Instant::now() < deadline
                    {
                        std::thread::sleep(Duration::from_millis(1));
                    }
                    std::thread::sleep(Duration::from_millis(2));
                    running.fetch_sub(1, Ordering::SeqCst);
                    i
                }))
            })
            .collect();
        tokio::time::sleep(Duration::from_millis(1)).await;
        ticked.store(true, Ordering::SeqCst);
        for (i, job) in jobs.into_iter().enumerate() {
            assert_eq!(job.await.unwrap(), Ok(i));
        }
        assert!(saw_tick.load(Ordering::SeqCst), "the work held the async worker");
        assert_eq!(most.load(Ordering::SeqCst), slots());
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_panic_in_the_work_is_an_error_and_frees_its_slot() {
        let failed = run(|| -> usize { panic!("boom") }).await;
        assert!(failed.is_err());
        for _ in 0..slots() + 1 {
            assert_eq!(run(|| 1).await, Ok(1));
        }
    }
}
