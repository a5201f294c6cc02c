//! What one server tells of its own work, for people watching it
//! (`evolve-hud watch`, `status`): how fast the last generations ran and how
//! many of the HUD's recent questions gave a note that was shown, and the
//! ids of its chat completions. Each engine holds one ([`Telemetry`]), so
//! two servers in one process never mix theirs. Prometheus has the totals,
//! through the `metrics` facade's recorder.

use evolve_hud_api::Activity;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// Completions and HUD answers kept.
pub const WINDOW: usize = 20;

#[derive(Default)]
struct Recent {
    /// (generated tokens, generation ms) of the latest completions.
    completions: VecDeque<(u32, f64)>,
    /// Whether each of the latest HUD answers gave a shown note.
    notes: VecDeque<bool>,
}

fn push<T>(queue: &mut VecDeque<T>, item: T) {
    if queue.len() == WINDOW {
        queue.pop_front();
    }
    queue.push_back(item);
}

#[derive(Default)]
pub struct Telemetry {
    recent: Mutex<Recent>,
    /// The last chat completion id given.
    completion_ids: AtomicU64,
}

impl Telemetry {
    fn recent(&self) -> std::sync::MutexGuard<'_, Recent> {
        self.recent.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Records a finished generation.
    pub fn completion(&self, tokens: u32, generation_ms: f64) {
        if tokens > 0 && generation_ms > 0.0 {
            push(&mut self.recent().completions, (tokens, generation_ms));
        }
    }

    /// Records a HUD answer: a verified note (shown) or none (rejected).
    pub fn note(&self, shown: bool) {
        push(&mut self.recent().notes, shown);
    }

    /// The window as reported.
    pub fn snapshot(&self) -> Activity {
        let recent = self.recent();
        let (tokens, ms) = recent
            .completions
            .iter()
            .fold((0u64, 0.0), |(t, m), (tokens, ms)| (t + u64::from(*tokens), m + ms));
        let shown = recent.notes.iter().filter(|s| **s).count();
        Activity {
            generation_tps: (ms > 0.0).then(|| tokens as f64 * 1000.0 / ms),
            completions: recent.completions.len(),
            notes_shown: shown,
            notes_rejected: recent.notes.len() - shown,
        }
    }

    /// A fresh chat completion id: `chatcmpl-1`, `chatcmpl-2`, ...
    pub fn completion_id(&self) -> String {
        format!("chatcmpl-{}", self.completion_ids.fetch_add(1, Ordering::Relaxed) + 1)
    }
}
