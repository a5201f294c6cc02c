//! Recent model work, for people watching the sidecar (`evolve-hud watch`,
//! `status`): how fast the last generations ran and how many of the HUD's
//! recent questions gave a note that was shown. Prometheus has the totals;
//! this keeps a short window, process-wide like the metrics registry.

use serde::Serialize;
use std::collections::VecDeque;
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

static RECENT: Mutex<Recent> = Mutex::new(Recent {
    completions: VecDeque::new(),
    notes: VecDeque::new(),
});

fn recent() -> std::sync::MutexGuard<'static, Recent> {
    RECENT.lock().unwrap_or_else(|p| p.into_inner())
}

fn push<T>(queue: &mut VecDeque<T>, item: T) {
    if queue.len() == WINDOW {
        queue.pop_front();
    }
    queue.push_back(item);
}

/// Records a finished generation.
pub fn completion(tokens: u32, generation_ms: f64) {
    if tokens > 0 && generation_ms > 0.0 {
        push(&mut recent().completions, (tokens, generation_ms));
    }
}

/// Records a HUD answer: a verified note (shown) or none (rejected).
pub fn note(shown: bool) {
    push(&mut recent().notes, shown);
}

/// The window as reported.
#[derive(Debug, Clone, Default, PartialEq, Serialize, serde::Deserialize)]
pub struct Activity {
    /// Generated tokens per second over the latest completions.
    pub generation_tps: Option<f64>,
    /// How many completions that covers.
    pub completions: usize,
    /// Of the latest HUD answers: notes shown, and answers with nothing verifiable.
    pub notes_shown: usize,
    pub notes_rejected: usize,
}

pub fn snapshot() -> Activity {
    let recent = recent();
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
