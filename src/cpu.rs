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
        let jobs: Vec<_> = (0..3 * slots())
            .map(|i| {
                let (running, most) = (running.clone(), most.clone());
                tokio::spawn(run(move || {
                    let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                    most.fetch_max(now, Ordering::SeqCst);
                    std::thread::sleep(Duration::from_millis(30));
                    running.fetch_sub(1, Ordering::SeqCst);
                    i
                }))
            })
            .collect();
        // The one async worker is not held by the work: a timer fires
        // while every slot is taken.
        tokio::time::sleep(Duration::from_millis(5)).await;
        assert!(running.load(Ordering::SeqCst) >= 1);
        for (i, job) in jobs.into_iter().enumerate() {
            assert_eq!(job.await.unwrap(), Ok(i));
        }
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
