//! The HUD: per-session facts from OpenCode's messages, rendered at once into
//! a compact block the agent reads on every step, plus what the local model
//! found in failed outputs that no parser knows, checked against them.
//!
//! [`Hud::sync`] merges new messages and renders without waiting for the
//! model; a change that leaves a new question (see [`extract`]) schedules a
//! debounced, coalesced refresh through the engine.
//!
//! - ingest: [`opencode`] (OpenCode's message and event shapes), [`session`]
//!   (merging them into one session's facts), [`checks`] (test runs and
//!   checks read from their outputs), [`text`] (making event text safe);
//! - the store: this module (sessions, LRU and byte limits, the API) and
//!   `entry` (one session's facts, answers and refresh state, as types);
//! - the model's part: [`extract`] (the question and the check of its
//!   answer), `refresh` (asking in the background or within a deadline)
//!   and `deadline` (the compaction and heartbeat texts, asked for with one);
//! - output: [`render`] (the HUD), [`compose`] (compaction and heartbeat
//!   texts), `tokens` (the budget's token count), `view` (what the API
//!   answers).

pub mod checks;
pub mod command;
pub mod compose;
mod deadline;
mod entry;
pub mod extract;
pub mod mask;
pub mod opencode;
pub mod problems;
mod refresh;
pub mod render;
pub mod session;
pub mod text;
mod tokens;

use crate::api::SessionEvent;
pub use crate::api::{CompactionView, HeartbeatView, HudView, ModelStatus, SessionListing, GOAL_CHARS};
use crate::engine::Engine;
use entry::Entry;
use render::Budget;
use session::Limits;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
pub use tokens::TokenCounter;

/// Milliseconds since the Unix epoch, OpenCode's clock.
fn epoch_ms() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64() * 1000.0)
}

/// HUD settings.
#[derive(Debug, Clone)]
pub struct HudConfig {
    pub budget: Budget,
    pub limits: Limits,
    /// Sessions kept; the least recently synced go first.
    pub max_sessions: usize,
    /// Bytes of state kept over all sessions.
    pub max_bytes: usize,
    /// Let the model read failed outputs at all.
    pub extract: bool,
    /// Quiet time after a change before the model is asked: long enough
    /// for the few updates one agent step sends at once (the tool's result
    /// event, then the next sync), short against the answer itself, since
    /// an output is final once its call completed.
    pub debounce: Duration,
    /// Longest one answer of the model may take.
    pub extract_timeout: Duration,
}

impl Default for HudConfig {
    fn default() -> Self {
        HudConfig {
            budget: Budget::default(),
            limits: Limits::default(),
            max_sessions: 64,
            max_bytes: 64 << 20,
            extract: true,
            debounce: Duration::from_millis(100),
            extract_timeout: Duration::from_secs(20),
        }
    }
}

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
/// [`Hud::subscribe`]r; they render and compare, so a change that leaves
/// the HUD as it was shows nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    Updated(String),
    Removed(String),
}

/// One session held: its entry behind a lock of its own, so parsing one
/// session's new output never holds up another, and what eviction needs
/// to know, readable without that lock.
struct Held {
    entry: Mutex<Entry>,
    /// The HUD as last rendered. Taken before the entry's lock (never while
    /// holding it): readers of one version wait for its one render, and
    /// share it, instead of each rendering it again.
    rendered: Mutex<Option<Rendered>>,
    /// [`SessionState::bytes`] after the latest change.
    bytes: AtomicUsize,
    /// Milliseconds since the [`Hud`] started, at the latest sync or event.
    used: AtomicU64,
}

impl Held {
    fn lock(&self) -> std::sync::MutexGuard<'_, Entry> {
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
    masks: Arc<[crate::api::MaskedOutput]>,
}

/// All sessions. Cheap to share as `Arc<Hud>`.
pub struct Hud {
    config: HudConfig,
    counter: TokenCounter,
    engine: Option<Engine>,
    /// The session map's lock is held only to look up, add or remove.
    sessions: Mutex<HashMap<String, Arc<Held>>>,
    started: Instant,
    epochs: std::sync::atomic::AtomicU64,
    /// One background question at a time reaches the model's queue, so chat
    /// completions and compaction texts wait behind at most one of them,
    /// however many sessions changed.
    background: tokio::sync::Semaphore,
    /// Whether the questions' shared start is in the engine's cache (or
    /// being put there).
    warmed: std::sync::atomic::AtomicBool,
    changes: tokio::sync::broadcast::Sender<Change>,
    /// HUDs rendered: one per session version, however many read it.
    renders: AtomicU64,
}

impl Hud {
    pub fn new(config: HudConfig, counter: TokenCounter, engine: Option<Engine>) -> Arc<Hud> {
        Arc::new(Hud {
            config,
            counter,
            engine,
            sessions: Mutex::new(HashMap::new()),
            started: Instant::now(),
            epochs: std::sync::atomic::AtomicU64::new(0),
            background: tokio::sync::Semaphore::new(1),
            warmed: std::sync::atomic::AtomicBool::new(false),
            changes: tokio::sync::broadcast::channel(256).0,
            renders: AtomicU64::new(0),
        })
    }

    /// Changes from now on. A receiver that falls behind gets `Lagged` and
    /// should take all sessions afresh.
    pub fn subscribe(&self) -> tokio::sync::broadcast::Receiver<Change> {
        self.changes.subscribe()
    }

    /// Tells subscribers; nobody listening is fine.
    fn changed(&self, change: Change) {
        let _ = self.changes.send(change);
    }

    fn map(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Held>>> {
        self.sessions.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn held(&self, session_id: &str) -> Option<Arc<Held>> {
        self.map().get(session_id).cloned()
    }

    /// Runs `f` on the session's entry (of `epoch`, when given) under its
    /// own lock; `None` when it is not held.
    fn with_entry<R>(&self, session_id: &str, epoch: Option<u64>, f: impl FnOnce(&mut Entry) -> R) -> Option<R> {
        let held = self.held(session_id)?;
        let mut entry = held.lock();
        if epoch.is_some_and(|e| e != entry.epoch) {
            return None;
        }
        Some(f(&mut entry))
    }

    /// Notes a sync or event on the session, for eviction.
    fn touch(&self, held: &Held, entry: &mut Entry) {
        entry.last_used = Instant::now();
        held.used
            .store(self.started.elapsed().as_millis() as u64, Ordering::Relaxed);
        held.bytes.store(entry.state.bytes(), Ordering::Relaxed);
    }

    /// Notes what the agent's last request took of its context, shown in
    /// the HUD from its next render; whether the session is held.
    pub fn note_context(&self, session_id: &str, context: crate::api::ContextUse) -> bool {
        self.with_entry(session_id, None, |entry| entry.state.set_context(context))
            .is_some()
    }

    /// Merges `messages` into the session and returns its HUD. Unknown
    /// sessions need `full` (the whole tail since the last compaction).
    pub fn sync(
        self: &Arc<Self>,
        session_id: &str,
        messages: Vec<serde_json::Value>,
        full: bool,
    ) -> Result<HudView, HudError> {
        let mut parsed = Vec::with_capacity(messages.len());
        let mut skipped = 0;
        for m in messages {
            match serde_json::from_value::<opencode::Message>(m) {
                Ok(m) if m.info.session_id.as_deref().is_none_or(|s| s == session_id) => parsed.push(m),
                _ => skipped += 1,
            }
        }
        let held = {
            let mut sessions = self.map();
            match sessions.get(session_id) {
                Some(held) => held.clone(),
                None if !full => return Err(HudError::ResyncRequired(session_id.to_owned())),
                None => {
                    self.warm_questions();
                    let epoch = self.epochs.fetch_add(1, Ordering::Relaxed);
                    let held = Arc::new(Held {
                        entry: Mutex::new(Entry::new(session_id, epoch)),
                        rendered: Mutex::new(None),
                        bytes: AtomicUsize::new(0),
                        used: AtomicU64::new(self.started.elapsed().as_millis() as u64),
                    });
                    sessions.insert(session_id.to_owned(), held.clone());
                    held
                }
            }
        };
        {
            let mut entry = held.lock();
            entry.idle_since = None;
            // New facts may raise a question; with none, a question the
            // engine could not take earlier (down, busy) is tried again.
            let changed = entry.state.merge(&parsed, &self.config.limits);
            self.touch(&held, &mut entry);
            if changed || entry.refresh == entry::Refresh::Idle {
                self.schedule_refresh(&mut entry, session_id);
            }
        }
        let evicted = self.evict(session_id);
        self.changed(Change::Updated(session_id.to_owned()));
        evicted.into_iter().for_each(|id| self.changed(Change::Removed(id)));
        Ok(self.view(&held, skipped))
    }

    /// Applies a forwarded OpenCode event. Events for sessions the sidecar
    /// does not hold are ignored (the next sync brings them in whole);
    /// returns whether the session is held.
    pub fn event(self: &Arc<Self>, event: SessionEvent) -> bool {
        let id = event.session_id().to_owned();
        if let SessionEvent::Deleted { .. } = event {
            return self.drop_session(&id);
        }
        let Some(held) = self.held(&id) else {
            return false;
        };
        let mut entry = held.lock();
        let now = epoch_ms();
        let changed = match event {
            SessionEvent::ToolExecuted {
                call_id,
                tool,
                args,
                output,
                metadata,
                clipped,
                ..
            } => {
                let state = opencode::ToolState {
                    status: opencode::ToolStatus::Completed,
                    input: args,
                    output,
                    error: None,
                    metadata,
                    time: None,
                    clipped,
                };
                entry
                    .state
                    .record_call(&call_id, &tool, &state, now, &self.config.limits)
            }
            SessionEvent::TodoUpdated { todos, .. } => entry.state.set_todos(session::Todo::list(&todos), now),
            SessionEvent::Idle { .. } => {
                entry.idle_since = Some(Instant::now());
                false
            }
            SessionEvent::Compacted { .. } => entry.state.set_compacted(now),
            SessionEvent::Deleted { .. } => unreachable!("handled above"),
        };
        self.touch(&held, &mut entry);
        if changed {
            self.schedule_refresh(&mut entry, &id);
        }
        drop(entry);
        if changed {
            let evicted = self.evict(&id);
            self.changed(Change::Updated(id));
            evicted.into_iter().for_each(|id| self.changed(Change::Removed(id)));
        }
        true
    }

    /// Whether the session's newest call has a question with the model or
    /// about to go to it (see [`Entry::pending_on_newest`]): what a sync may
    /// wait for.
    pub fn pending_on_newest(&self, session_id: &str) -> bool {
        self.with_entry(session_id, None, |entry| entry.pending_on_newest()) == Some(true)
    }

    pub fn get(&self, session_id: &str) -> Result<HudView, HudError> {
        let held = self
            .held(session_id)
            .ok_or_else(|| HudError::NotFound(session_id.to_owned()))?;
        Ok(self.view(&held, 0))
    }

    /// HUDs rendered so far: one per session version, however many clients
    /// read it.
    pub fn renders(&self) -> u64 {
        self.renders.load(Ordering::Relaxed)
    }

    /// How a client should clip tool outputs before sending them, as this
    /// side keeps them (see [`text::Clipped`]): the bytes of the head and
    /// tail, and the rule for the lines of the middle.
    pub fn clip_rule(&self) -> crate::api::ClipRule {
        let limits = &self.config.limits;
        crate::api::ClipRule {
            head: limits.output_head,
            tail: limits.output_tail,
            middle: crate::api::MiddleRule {
                words: text::ERROR_WORDS
                    .iter()
                    .chain(text::FAILURE_WORDS)
                    .map(|w| (*w).to_owned())
                    .collect(),
                lines: text::MIDDLE_LINES,
                bytes: text::MIDDLE_BYTES,
                line_bytes: text::MIDDLE_LINE_BYTES,
            },
        }
    }

    pub fn list(&self) -> Vec<SessionListing> {
        let held: Vec<Arc<Held>> = self.map().values().cloned().collect();
        let mut out: Vec<_> = held.iter().map(|h| Self::listing(&h.lock())).collect();
        out.sort_by_key(|s| s.idle_ms);
        out
    }

    /// One session as [`Hud::list`] lists it.
    pub fn listed(&self, session_id: &str) -> Option<SessionListing> {
        self.with_entry(session_id, None, |e| Self::listing(e))
    }

    fn listing(e: &Entry) -> SessionListing {
        SessionListing {
            session_id: e.state.id.clone(),
            version: e.version(),
            goal: e
                .state
                .goal
                .as_ref()
                .map(|(_, g)| crate::clean::clean_line(g, GOAL_CHARS)),
            tool_calls: e.state.calls.len(),
            failed_calls: e.state.calls.values().filter(|c| c.failed()).count(),
            open_problems: e.state.problems().open.len(),
            model_status: e.model_status(),
            bytes: e.state.bytes(),
            idle_ms: e.last_used.elapsed().as_millis() as u64,
            agent_idle_ms: e.idle_since.map(|t| t.elapsed().as_millis() as u64),
        }
    }

    pub fn drop_session(&self, session_id: &str) -> bool {
        let held = self.map().remove(session_id).is_some();
        if held {
            self.changed(Change::Removed(session_id.to_owned()));
        }
        held
    }

    /// The session's HUD at its current version: rendered once per version
    /// (from a snapshot, with the entry's lock released), then shared.
    fn view(&self, held: &Held, skipped: usize) -> HudView {
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
            let rendered = render::render(&snapshot.state, &snapshot.findings, self.config.budget, &|t| {
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
        let config = &self.config;
        let mut sessions = self.map();
        let mut evicted = Vec::new();
        loop {
            let bytes: usize = sessions.values().map(|h| h.bytes.load(Ordering::Relaxed)).sum();
            if sessions.len() <= config.max_sessions && bytes <= config.max_bytes {
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

#[cfg(test)]
mod tests {
    use super::entry::{Reading, Refresh};
    use super::extract::Finding;
    use super::*;
    use serde_json::json;

    /// A model-less HUD.
    fn hud(config: HudConfig) -> Arc<Hud> {
        Hud::new(config, TokenCounter::words(), None)
    }

    fn user(session: &str) -> serde_json::Value {
        json!({ "info": { "id": "u", "sessionID": session, "role": "user", "time": { "created": 1.0 } },
                "parts": [{ "type": "text", "text": "Fix it." }] })
    }

    fn tool_event(session: &str, call: &str, output: &str) -> SessionEvent {
        serde_json::from_value(json!({
            "type": "tool.execute.after", "session_id": session, "call_id": call, "tool": "bash",
            "args": { "command": "make" }, "output": output, "metadata": { "exit": 0 },
        }))
        .expect("event")
    }

    #[tokio::test]
    async fn events_keep_the_byte_and_session_limits() {
        let hud = hud(HudConfig {
            max_bytes: 64 << 10,
            max_sessions: 3,
            extract: false,
            ..HudConfig::default()
        });
        for s in ["a", "b", "c"] {
            hud.sync(s, vec![user(s)], true).expect("sync");
        }
        // Only events from here on: each grows session "c" by about 4 KiB.
        let output = "x".repeat(10_000);
        for i in 0..40 {
            assert!(hud.event(tool_event("c", &format!("call_{i}"), &output)));
            let held: usize = hud.list().iter().map(|s| s.bytes).sum();
            let sessions = hud.list().len();
            assert!(sessions <= 3);
            // The session being written is never evicted, so it alone may
            // exceed the limit; the others go first.
            assert!(
                held <= (64 << 10) || sessions == 1,
                "{held} bytes in {sessions} sessions"
            );
        }
        let left: Vec<String> = hud.list().into_iter().map(|s| s.session_id).collect();
        assert_eq!(left, ["c"], "the least recently used sessions went");
    }

    #[tokio::test]
    async fn the_context_line_says_what_the_last_request_used() {
        let hud = hud(HudConfig::default());
        let context = crate::api::ContextUse {
            used: 84_120,
            limit: Some(200_000),
            masked: 12_000,
        };
        assert!(!hud.note_context("s", context), "no session held yet");
        let before = hud.sync("s", vec![user("s")], true).expect("sync");
        assert!(!before.hud.contains("Context:"), "unknown, so not claimed");
        assert!(hud.note_context("s", context));
        let view = hud.sync("s", vec![user("s")], false).expect("sync");
        assert!(view.version > before.version);
        assert!(
            view.hud.contains(
                "\nContext: the last request used 84,120 of 200,000 tokens (42 %); masking took out about 12,000 of superseded outputs\n"
            ),
            "{}",
            view.hud
        );
        hud.note_context(
            "s",
            crate::api::ContextUse {
                used: 999,
                limit: None,
                masked: 0,
            },
        );
        let view = hud.get("s").expect("held");
        assert!(
            view.hud.contains("\nContext: the last request used 999 tokens\n"),
            "{}",
            view.hud
        );
    }

    fn make_run(session: &str, call: &str, exit: i64, output: &str) -> SessionEvent {
        serde_json::from_value(json!({
            "type": "tool.execute.after", "session_id": session, "call_id": call, "tool": "bash",
            "args": { "command": "make" }, "output": output, "metadata": { "exit": exit },
        }))
        .expect("event")
    }

    /// Findings are shown on the open problem of the call they were read
    /// from, stay byte-identical while it is open, and go when it is fixed;
    /// an answer about a call no longer held is dropped.
    #[tokio::test]
    async fn findings_are_shown_only_while_their_problem_is_open() {
        let hud = hud(HudConfig::default());
        hud.sync("s", vec![user("s")], true).expect("sync");
        // A link error: no parser knows its lines.
        let output = "cc -o app calc.o\n/usr/bin/ld: calc.o: in function `main':\ncalc.c:(.text+0x15): undefined reference to `count'\ncollect2: error: ld returned 1 exit status\nmake: *** [app] Error 1";
        assert!(hud.event(make_run("s", "c1", 2, output)));
        let found = vec![Finding {
            name: "calc.c".into(),
            line: "calc.c:(.text+0x15): undefined reference to `count'".into(),
        }];
        hud.with_entry("s", None, |entry| {
            assert_eq!(entry.unasked().len(), 1, "the failed make is worth a question");
            entry.refresh = Refresh::Busy { dirty: true };
            // A change came in meanwhile: the loop goes on.
            assert!(!entry.finish_refresh(Some(("gone".into(), Reading::Found(found.clone()))), false));
            assert!(entry.readings.is_empty(), "an answer about an unknown call is dropped");
            assert!(
                !entry.finish_refresh(Some(("c1".into(), Reading::Found(found.clone()))), false)
                    || entry.unasked().is_empty()
            );
            assert!(entry.unasked().is_empty(), "each call is asked about once");
            entry.refresh = Refresh::Idle;
        })
        .expect("held");
        let shown = hud.get("s").expect("view");
        assert!(
            shown.hud.contains(
                "local model found in the output, each line checked there: calc.c: \"calc.c:(.text+0x15): undefined reference to `count'\""
            ),
            "{}",
            shown.hud
        );
        assert_eq!(shown.model_status, ModelStatus::Ready);
        std::thread::sleep(Duration::from_millis(1100));
        let later = hud.get("s").expect("view");
        assert_eq!(later.hud, shown.hud, "byte-identical over time");
        assert_eq!(later.version, shown.version);

        // The same command failing the same way again is not asked about
        // again, and its problem shows the same findings.
        assert!(hud.event(make_run("s", "c1b", 2, output)));
        assert_eq!(hud.with_entry("s", None, |e| e.unasked().len()), Some(0));
        let again = hud.get("s").expect("view");
        assert!(
            again.hud.contains("failed 2 times, no pass since; local model found"),
            "{}",
            again.hud
        );

        // The same command passes: the problem closes and the findings go.
        assert!(hud.event(make_run("s", "c2", 0, "ok")));
        let fixed = hud.get("s").expect("view");
        assert!(!fixed.hud.contains("local model"), "{}", fixed.hud);
        assert!(fixed.hud.contains("Open problems: none"), "{}", fixed.hud);
        assert_eq!(fixed.model_status, ModelStatus::None);
        let compaction = hud.compaction("s", Duration::from_secs(1)).await.expect("compaction");
        assert!(!compaction.text.contains("local model"), "{}", compaction.text);
    }

    #[tokio::test]
    async fn a_recreated_session_gets_a_new_epoch() {
        let hud = hud(HudConfig {
            extract: false,
            ..HudConfig::default()
        });
        hud.sync("s", vec![user("s")], true).expect("sync");
        let epoch = |hud: &Hud| hud.with_entry("s", None, |e| e.epoch).expect("held");
        let first = epoch(&hud);
        assert!(hud.drop_session("s"));
        hud.sync("s", vec![user("s")], true).expect("sync");
        assert_ne!(epoch(&hud), first, "a refresh loop of the old entry would end");
    }
}
