//! The session store: every session's entry behind a lock of its own, the
//! render cache (one render per session version, however many read it),
//! eviction by count and bytes, and the change feed. It knows nothing of the
//! model: the refresher reaches an entry through [`Store::with_entry`] and
//! tells watchers through [`Store::changed`].

use super::entry::Entry;
use super::tokens::TokenCounter;
use evolve_hud_api::{HudView, SessionListing, GOAL_CHARS};
use evolve_hud_core::mask;
use evolve_hud_core::render::{self, Budget};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

#[derive(Debug, thiserror::Error)]
pub enum HudError {
    #[error(
        "session {0} is unknown here (the sidecar restarted or evicted it); resend the full tail with \"full\": true"
    )]
    ResyncRequired(String),
    #[error("no session {0}")]
    NotFound(String),
}

/// A session whose HUD may have changed, or that is gone. Sent to every
/// [`Store::subscribe`]r; they render and compare, so a change that leaves
/// the HUD as it was shows nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    Updated(String),
    Removed(String),
}

/// What the store keeps and how it renders.
#[derive(Debug, Clone, Copy)]
pub(super) struct StoreLimits {
    pub(super) budget: Budget,
    /// Sessions kept; the least recently synced go first.
    pub(super) max_sessions: usize,
    /// Bytes of state kept over all sessions.
    pub(super) max_bytes: usize,
}

/// One session held: its entry behind a lock of its own, so parsing one
/// session's new output never holds up another, and what eviction needs
/// to know, readable without that lock.
pub(super) struct Held {
    entry: Mutex<Entry>,
    /// The HUD as last rendered. Taken before the entry's lock (never while
    /// holding it): readers of one version wait for its one render, and
    /// share it, instead of each rendering it again.
    rendered: Mutex<Option<Rendered>>,
    /// [`evolve_hud_core::session::SessionState::bytes`] after the latest change.
    bytes: AtomicUsize,
    /// Milliseconds since the store started, at the latest sync or event.
    used: AtomicU64,
}

impl Held {
    pub(super) fn lock(&self) -> std::sync::MutexGuard<'_, Entry> {
        // A panic while holding the lock leaves plain data; keep serving.
        self.entry.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// One version of a session's HUD, rendered.
struct Rendered {
    version: u64,
    /// Counted in real tokens (see [`TokenCounter::exact`]).
    exact: bool,
    hud: Arc<str>,
    tokens: usize,
    /// The outputs this version's facts have superseded ([`mask`]).
    masks: Arc<[evolve_hud_api::MaskedOutput]>,
}

/// All sessions.
pub(super) struct Store {
    limits: StoreLimits,
    counter: TokenCounter,
    /// The session map's lock is held only to look up, add or remove.
    sessions: Mutex<HashMap<String, Arc<Held>>>,
    started: Instant,
    epochs: AtomicU64,
    changes: tokio::sync::broadcast::Sender<Change>,
    /// HUDs rendered: one per session version, however many read it.
    renders: AtomicU64,
}

impl Store {
    pub(super) fn new(limits: StoreLimits, counter: TokenCounter) -> Store {
        Store {
            limits,
            counter,
            sessions: Mutex::new(HashMap::new()),
            started: Instant::now(),
            epochs: AtomicU64::new(0),
            changes: tokio::sync::broadcast::channel(256).0,
            renders: AtomicU64::new(0),
        }
    }

    /// Changes from now on. A receiver that falls behind gets `Lagged` and
    /// should take all sessions afresh.
    pub(super) fn subscribe(&self) -> tokio::sync::broadcast::Receiver<Change> {
        self.changes.subscribe()
    }

    /// Tells subscribers; nobody listening is fine.
    pub(super) fn changed(&self, change: Change) {
        let _ = self.changes.send(change);
    }

    fn map(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Held>>> {
        self.sessions.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(super) fn held(&self, session_id: &str) -> Option<Arc<Held>> {
        self.map().get(session_id).cloned()
    }

    /// The session, added as a new entry when it is not held and `full`
    /// says the messages are its whole tail; with whether it is new.
    pub(super) fn open(&self, session_id: &str, full: bool) -> Result<(Arc<Held>, bool), HudError> {
        let mut sessions = self.map();
        if let Some(held) = sessions.get(session_id) {
            return Ok((held.clone(), false));
        }
        if !full {
            return Err(HudError::ResyncRequired(session_id.to_owned()));
        }
        let epoch = self.epochs.fetch_add(1, Ordering::Relaxed);
        let held = Arc::new(Held {
            entry: Mutex::new(Entry::new(session_id, epoch)),
            rendered: Mutex::new(None),
            bytes: AtomicUsize::new(0),
            used: AtomicU64::new(self.started.elapsed().as_millis() as u64),
        });
        sessions.insert(session_id.to_owned(), held.clone());
        Ok((held, true))
    }

    /// Runs `f` on the session's entry (of `epoch`, when given) under its
    /// own lock; `None` when it is not held.
    pub(super) fn with_entry<R>(
        &self,
        session_id: &str,
        epoch: Option<u64>,
        f: impl FnOnce(&mut Entry) -> R,
    ) -> Option<R> {
        let held = self.held(session_id)?;
        let mut entry = held.lock();
        if epoch.is_some_and(|e| e != entry.epoch) {
            return None;
        }
        Some(f(&mut entry))
    }

    /// Notes a sync or event on the session, for eviction.
    pub(super) fn touch(&self, held: &Held, entry: &mut Entry) {
        entry.last_used = Instant::now();
        held.used
            .store(self.started.elapsed().as_millis() as u64, Ordering::Relaxed);
        held.bytes.store(entry.state.bytes(), Ordering::Relaxed);
    }

    /// After a change to `session_id`: evicts what is over the limits (never
    /// that session) and tells the watchers of both.
    pub(super) fn updated(&self, session_id: &str) {
        let evicted = self.evict(session_id);
        self.changed(Change::Updated(session_id.to_owned()));
        evicted.into_iter().for_each(|id| self.changed(Change::Removed(id)));
    }

    /// HUDs rendered so far.
    pub(super) fn renders(&self) -> u64 {
        self.renders.load(Ordering::Relaxed)
    }

    pub(super) fn list(&self) -> Vec<SessionListing> {
        let held: Vec<Arc<Held>> = self.map().values().cloned().collect();
        let mut out: Vec<_> = held.iter().map(|h| listing(&h.lock())).collect();
        out.sort_by_key(|s| s.idle_ms);
        out
    }

    pub(super) fn listed(&self, session_id: &str) -> Option<SessionListing> {
        self.with_entry(session_id, None, |e| listing(e))
    }

    /// Every session but `exclude`.
    pub(super) fn all_but(&self, exclude: &[String]) -> Vec<Arc<Held>> {
        self.map()
            .iter()
            .filter(|(id, _)| !exclude.contains(id))
            .map(|(_, h)| h.clone())
            .collect()
    }

    pub(super) fn remove(&self, session_id: &str) -> bool {
        let held = self.map().remove(session_id).is_some();
        if held {
            self.changed(Change::Removed(session_id.to_owned()));
        }
        held
    }

    /// The session's HUD at its current version: rendered once per version
    /// (from a snapshot, with the entry's lock released), then shared.
    pub(super) fn view(&self, held: &Held, skipped: usize) -> HudView {
        let mut cache = held.rendered.lock().unwrap_or_else(|p| p.into_inner());
        let exact = self.counter.exact();
        let (version, model_status, session_id, snapshot) = {
            let entry = held.lock();
            let version = entry.version();
            let fresh = cache.as_ref().is_some_and(|c| c.version == version && c.exact == exact);
            (
                version,
                entry.model_status(),
                entry.state.id.clone(),
                (!fresh).then(|| entry.snapshot()),
            )
        };
        if let Some(snapshot) = snapshot {
            let rendered = render::render(&snapshot.state, &snapshot.findings, self.limits.budget, &|t| {
                self.counter.count(t)
            });
            self.renders.fetch_add(1, Ordering::Relaxed);
            metrics::counter!("evolve_hud_hud_renders_total").increment(1);
            *cache = Some(Rendered {
                version,
                exact,
                hud: Arc::from(rendered.text),
                tokens: rendered.tokens,
                masks: mask::superseded(&snapshot.state, &snapshot.state.problems()).into(),
            });
        }
        let rendered = cache.as_ref().expect("rendered above when missing");
        HudView {
            session_id,
            version,
            hud: rendered.hud.to_string(),
            tokens: rendered.tokens,
            model_status,
            skipped,
            masks: rendered.masks.to_vec(),
        }
    }

    /// Drops least recently used sessions over the count or byte limits,
    /// never the one just synced; returns the dropped ids. Reads what each
    /// session noted of itself, without taking its lock.
    fn evict(&self, keep: &str) -> Vec<String> {
        let limits = &self.limits;
        let mut sessions = self.map();
        let mut evicted = Vec::new();
        loop {
            let bytes: usize = sessions.values().map(|h| h.bytes.load(Ordering::Relaxed)).sum();
            if sessions.len() <= limits.max_sessions && bytes <= limits.max_bytes {
                return evicted;
            }
            let victim = sessions
                .iter()
                .filter(|(id, _)| id.as_str() != keep)
                .min_by_key(|(_, h)| h.used.load(Ordering::Relaxed))
                .map(|(id, _)| id.clone());
            match victim {
                Some(id) => {
                    sessions.remove(&id);
                    evicted.push(id);
                }
                None => return evicted,
            }
        }
    }
}

/// One session as the list shows it.
fn listing(e: &Entry) -> SessionListing {
    SessionListing {
        session_id: e.state.id.clone(),
        version: e.version(),
        goal: e
            .state
            .goal
            .as_ref()
            .map(|(_, g)| evolve_hud_api::clean::clean_line(g, GOAL_CHARS)),
        tool_calls: e.state.calls.len(),
        failed_calls: e.state.calls.values().filter(|c| c.failed()).count(),
        open_problems: e.state.problems().open.len(),
        model_status: e.model_status(),
        bytes: e.state.bytes(),
        idle_ms: e.last_used.elapsed().as_millis() as u64,
        agent_idle_ms: e.idle_since.map(|t| t.elapsed().as_millis() as u64),
    }
}
