//! The HUD's running part: sessions kept between syncs, and the local
//! model asked about failed outputs in the background. The facts, their
//! rendering and the model's question and its check are evolve-hud-core's,
//! re-exported here under their names.
//!
//! [`Hud::sync`] merges new messages and renders without waiting for the
//! model; a change that leaves a new question (see [`extract`]) schedules a
//! debounced, coalesced refresh through the engine.
//!
//! - the store: `store` (sessions, the render cache, LRU and byte limits,
//!   the change feed) and `entry` (one session's facts, answers and refresh
//!   state, as types);
//! - the model's part: `refresh` (the refresher: asking in the background or
//!   within a deadline, through the store's narrow interface) and `deadline`
//!   (the compaction and heartbeat texts, asked for with one);
//! - the API: this module's [`Hud`], which joins the store and the
//!   refresher; `tokens` (the budget's token count).

mod deadline;
mod entry;
mod refresh;
mod store;
mod tokens;

pub use evolve_hud_core::{checks, command, compose, extract, mask, opencode, problems, render, session, text};

use crate::engine::Engine;
use evolve_hud_api::SessionEvent;
pub use evolve_hud_api::{CompactionView, HeartbeatView, HudView, ModelStatus, SessionListing, GOAL_CHARS};
use evolve_hud_core::render::Budget;
use evolve_hud_core::session::Limits;
use refresh::{RefreshSettings, Refresher};
use std::sync::Arc;
use std::time::{Duration, Instant};
pub use store::{Change, HudError};
use store::{Store, StoreLimits};
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

/// All sessions: the store, and the refresher that asks the model about
/// them. Cheap to share as `Arc<Hud>`.
pub struct Hud {
    limits: Limits,
    store: Arc<Store>,
    refresher: Arc<Refresher>,
}

impl Hud {
    pub fn new(config: HudConfig, counter: TokenCounter, engine: Option<Engine>) -> Arc<Hud> {
        let store = Arc::new(Store::new(
            StoreLimits {
                budget: config.budget,
                max_sessions: config.max_sessions,
                max_bytes: config.max_bytes,
            },
            counter,
        ));
        let refresher = Arc::new(Refresher::new(
            store.clone(),
            engine,
            RefreshSettings {
                extract: config.extract,
                debounce: config.debounce,
                extract_timeout: config.extract_timeout,
            },
        ));
        Arc::new(Hud {
            limits: config.limits,
            store,
            refresher,
        })
    }

    /// Changes from now on. A receiver that falls behind gets `Lagged` and
    /// should take all sessions afresh.
    pub fn subscribe(&self) -> tokio::sync::broadcast::Receiver<Change> {
        self.store.subscribe()
    }

    /// Has the engine decode the start every question shares, once, in the
    /// background (see [`Refresher::warm_questions`]).
    pub fn warm_questions(&self) {
        self.refresher.warm_questions();
    }

    /// Notes what the agent's last request took of its context, shown in
    /// the HUD from its next render; whether the session is held.
    pub fn note_context(&self, session_id: &str, context: evolve_hud_api::ContextUse) -> bool {
        self.store
            .with_entry(session_id, None, |entry| entry.state.set_context(context))
            .is_some()
    }

    /// Merges `messages` into the session and returns its HUD. Unknown
    /// sessions need `full` (the whole tail since the last compaction).
    pub fn sync(&self, session_id: &str, messages: Vec<serde_json::Value>, full: bool) -> Result<HudView, HudError> {
        let mut parsed = Vec::with_capacity(messages.len());
        let mut skipped = 0;
        for m in messages {
            match serde_json::from_value::<opencode::Message>(m) {
                Ok(m) if m.info.session_id.as_deref().is_none_or(|s| s == session_id) => parsed.push(m),
                _ => skipped += 1,
            }
        }
        let (held, new) = self.store.open(session_id, full)?;
        if new {
            self.refresher.warm_questions();
        }
        {
            let mut entry = held.lock();
            entry.idle_since = None;
            // New facts may raise a question; with none, a question the
            // engine could not take earlier (down, busy) is tried again.
            let changed = entry.state.merge(&parsed, &self.limits);
            self.store.touch(&held, &mut entry);
            if changed || entry.refresh == entry::Refresh::Idle {
                self.refresher.schedule_refresh(&mut entry, session_id);
            }
        }
        self.store.updated(session_id);
        Ok(self.store.view(&held, skipped))
    }

    /// Applies a forwarded OpenCode event. Events for sessions the sidecar
    /// does not hold are ignored (the next sync brings them in whole);
    /// returns whether the session is held.
    pub fn event(&self, event: SessionEvent) -> bool {
        let id = event.session_id().to_owned();
        if let SessionEvent::Deleted { .. } = event {
            return self.drop_session(&id);
        }
        let Some(held) = self.store.held(&id) else {
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
                entry.state.record_call(&call_id, &tool, &state, now, &self.limits)
            }
            SessionEvent::TodoUpdated { todos, .. } => entry.state.set_todos(session::Todo::list(&todos), now),
            SessionEvent::Idle { .. } => {
                entry.idle_since = Some(Instant::now());
                false
            }
            SessionEvent::Compacted { .. } => entry.state.set_compacted(now),
            SessionEvent::Deleted { .. } => unreachable!("handled above"),
        };
        self.store.touch(&held, &mut entry);
        if changed {
            self.refresher.schedule_refresh(&mut entry, &id);
        }
        drop(entry);
        if changed {
            self.store.updated(&id);
        }
        true
    }

    /// Whether the session's newest call has a question with the model or
    /// about to go to it (see [`Entry::pending_on_newest`]): what a sync may
    /// wait for.
    pub fn pending_on_newest(&self, session_id: &str) -> bool {
        self.store
            .with_entry(session_id, None, |entry| entry.pending_on_newest())
            == Some(true)
    }

    pub fn get(&self, session_id: &str) -> Result<HudView, HudError> {
        let held = self
            .store
            .held(session_id)
            .ok_or_else(|| HudError::NotFound(session_id.to_owned()))?;
        Ok(self.store.view(&held, 0))
    }

    /// HUDs rendered so far: one per session version, however many clients
    /// read it.
    pub fn renders(&self) -> u64 {
        self.store.renders()
    }

    /// How a client should clip tool outputs before sending them, as this
    /// side keeps them (see [`text::Clipped`]): the bytes of the head and
    /// tail, and the rule for the lines of the middle.
    pub fn clip_rule(&self) -> evolve_hud_api::ClipRule {
        let limits = &self.limits;
        evolve_hud_api::ClipRule {
            head: limits.output_head,
            tail: limits.output_tail,
            middle: evolve_hud_api::MiddleRule {
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
        self.store.list()
    }

    /// One session as [`Hud::list`] lists it.
    pub fn listed(&self, session_id: &str) -> Option<SessionListing> {
        self.store.listed(session_id)
    }

    pub fn drop_session(&self, session_id: &str) -> bool {
        self.store.remove(session_id)
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
        let context = evolve_hud_api::ContextUse {
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
                "\nContext: 84,120 of 200,000 tokens used (42 %); masking took out about 12,000 of superseded outputs\n"
            ),
            "{}",
            view.hud
        );
        hud.note_context(
            "s",
            evolve_hud_api::ContextUse {
                used: 999,
                limit: None,
                masked: 0,
            },
        );
        let view = hud.get("s").expect("held");
        assert!(view.hud.contains("\nContext: 999 tokens used\n"), "{}", view.hud);
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
        // A link error: no parser knows its lines, and the key line shows
        // one of its two reasons.
        let output = "cc -o app calc.o\n/usr/bin/ld: calc.o: in function `main':\ncalc.c:(.text+0x15): undefined reference to `count'\n/usr/bin/ld: calc.c:(.text+0x2a): undefined reference to `total'\ncollect2: error: ld returned 1 exit status\nmake: *** [app] Error 1";
        assert!(hud.event(make_run("s", "c1", 2, output)));
        let found = vec![Finding {
            name: "calc.c".into(),
            line: "calc.c:(.text+0x15): undefined reference to `count'".into(),
            named: true,
        }];
        hud.store
            .with_entry("s", None, |entry| {
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
        assert_eq!(hud.store.with_entry("s", None, |e| e.unasked().len()), Some(0));
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
        let epoch = |hud: &Hud| hud.store.with_entry("s", None, |e| e.epoch).expect("held");
        let first = epoch(&hud);
        assert!(hud.drop_session("s"));
        hud.sync("s", vec![user("s")], true).expect("sync");
        assert_ne!(epoch(&hud), first, "a refresh loop of the old entry would end");
    }
}
