//! The HUD: per-session facts from OpenCode's messages, rendered at once into
//! a compact block the agent reads on every step, plus a short summary the
//! local model writes in the background.
//!
//! [`Hud::sync`] merges new messages and renders without waiting for the
//! model; a change schedules a debounced, coalesced summary refresh on the
//! model thread, which keeps the session's prompt cache in a KV slot of its own.

pub mod checks;
pub mod compose;
pub mod opencode;
pub mod render;
pub mod session;
pub mod summary;
pub mod text;

use crate::model::{ChatMessage, Event, GenerateRequest, ModelHandle, Prompt, SamplingParams};
use opencode::SessionEvent;
use render::{Budget, SummaryLine};
use serde::Serialize;
use session::{Limits, SessionState};
use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

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
    /// Write model summaries at all.
    pub summaries: bool,
    /// Quiet time after a change before the summary is refreshed.
    pub debounce: Duration,
    /// Longest a summary generation may take.
    pub summary_timeout: Duration,
}

impl Default for HudConfig {
    fn default() -> Self {
        HudConfig {
            budget: Budget::default(),
            limits: Limits::default(),
            max_sessions: 64,
            max_bytes: 64 << 20,
            summaries: true,
            debounce: Duration::from_millis(1500),
            summary_timeout: Duration::from_secs(20),
        }
    }
}

/// Counts HUD tokens the way the agent's main model does.
pub enum TokenCounter {
    /// A `tokenizer.json` of the main model.
    Tokenizer(Box<tokenizers::Tokenizer>),
    /// The local model's vocabulary.
    Model(ModelHandle),
}

impl TokenCounter {
    /// Loads a `tokenizer.json`.
    pub fn from_file(path: &Path) -> anyhow::Result<Self> {
        let t = tokenizers::Tokenizer::from_file(path)
            .map_err(|e| anyhow::anyhow!("cannot load tokenizer {}: {e}", path.display()))?;
        Ok(TokenCounter::Tokenizer(Box::new(t)))
    }

    /// One token per whitespace-separated word: a stand-in for a tokenizer,
    /// so tests and fuzzing exercise the HUD's budget without a model file.
    pub fn words() -> Self {
        use tokenizers::models::wordlevel::WordLevel;
        use tokenizers::pre_tokenizers::whitespace::WhitespaceSplit;
        let model = WordLevel::builder()
            .vocab([("[UNK]".to_owned(), 0)].into_iter().collect())
            .unk_token("[UNK]".to_owned())
            .build()
            .expect("a one-word vocabulary builds: this is a bug");
        let mut tokenizer = tokenizers::Tokenizer::new(model);
        tokenizer.with_pre_tokenizer(Some(WhitespaceSplit));
        TokenCounter::Tokenizer(Box::new(tokenizer))
    }

    pub fn count(&self, text: &str) -> usize {
        match self {
            TokenCounter::Tokenizer(t) => t
                .encode(text, false)
                .map_or_else(|_| text.len().div_ceil(3), |e| e.len()),
            TokenCounter::Model(m) => m.count_tokens(text),
        }
    }
}

/// What a sync or a GET returns.
#[derive(Debug, Clone, Serialize)]
pub struct HudView {
    pub session_id: String,
    pub version: u64,
    pub hud: String,
    pub tokens: usize,
    /// Age of the model summary in the HUD, if one is shown.
    pub summary_age_ms: Option<u64>,
    /// `none`, `pending`, `ready` or `rejected: why`.
    pub summary_status: SummaryStatus,
    /// Entries that were not OpenCode messages and were skipped.
    pub skipped: usize,
}

/// What `POST /v1/hud/{session}/compaction` returns.
#[derive(Debug, Clone, Serialize)]
pub struct CompactionView {
    pub session_id: String,
    /// The facts (and note) in the template's sections, to add to a prompt.
    pub text: String,
    /// A complete compaction prompt holding `text`, to replace one.
    pub prompt: String,
    /// `current summary`, `written`, `rejected: why`, `summaries off` or `no model`.
    pub note_status: String,
    pub ms: u64,
}

/// What `POST /v1/heartbeat` returns.
#[derive(Debug, Clone, Serialize)]
pub struct HeartbeatView {
    pub system: Vec<String>,
    pub user: String,
    /// The sessions it describes, the one needing attention first.
    pub sessions: Vec<String>,
    pub note_status: String,
    pub ms: u64,
}

/// A session as listed.
#[derive(Debug, Clone, Serialize)]
pub struct SessionListing {
    pub session_id: String,
    pub version: u64,
    pub tool_calls: usize,
    pub bytes: usize,
    /// Since the last sync or event.
    pub idle_ms: u64,
    /// Since the agent went idle (`session.idle`), while it stays idle.
    pub agent_idle_ms: Option<u64>,
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

struct Summary {
    text: String,
    at: Instant,
    /// The facts version the summary was written for; it is shown only while
    /// the facts are still at that version.
    facts: u64,
}

/// Where a session's model summary stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SummaryStatus {
    /// None written (no model, summaries off, or no calls yet).
    None,
    /// A refresh is waiting or generating.
    Pending,
    /// The summary describes the current facts.
    Ready,
    /// The last refresh was refused by the guard, failed or timed out.
    Rejected(String),
}

impl std::fmt::Display for SummaryStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SummaryStatus::None => f.write_str("none"),
            SummaryStatus::Pending => f.write_str("pending"),
            SummaryStatus::Ready => f.write_str("ready"),
            SummaryStatus::Rejected(why) => write!(f, "rejected: {why}"),
        }
    }
}

impl Serialize for SummaryStatus {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

#[derive(Default, Clone, Copy, PartialEq, Eq)]
enum Refresh {
    #[default]
    Idle,
    /// A refresh task is waiting or generating; `dirty` asks for another after it.
    Busy { dirty: bool },
}

struct Entry {
    /// Unique per entry: a refresh loop of an evicted and re-created
    /// session sees a new epoch and ends.
    epoch: u64,
    state: SessionState,
    summary: Option<Summary>,
    summary_status: SummaryStatus,
    /// Summaries accepted so far: the view version counts them with the facts.
    summaries: u64,
    refresh: Refresh,
    last_used: Instant,
    /// When the agent went idle; cleared by the next sync.
    idle_since: Option<Instant>,
}

/// What a view is rendered from, copied out of the lock (the calls are
/// shared, so this is cheap) so rendering never holds up other sessions.
struct Snapshot {
    state: SessionState,
    /// The summary, when it describes the current facts.
    summary: Option<(String, Instant)>,
    summary_status: SummaryStatus,
    version: u64,
}

impl Entry {
    fn snapshot(&self) -> Snapshot {
        Snapshot {
            state: self.state.clone(),
            summary: self
                .summary
                .as_ref()
                .filter(|s| s.facts == self.state.version)
                .map(|s| (s.text.clone(), s.at)),
            summary_status: self.summary_status.clone(),
            version: self.version(),
        }
    }

    /// Takes a refresh's outcome (the facts version it was written for, and
    /// the note or why there is none). Returns whether the refresh loop is
    /// done; it goes on when a change came in meanwhile.
    fn finish_refresh(&mut self, outcome: Option<(u64, Result<String, String>)>) -> bool {
        match outcome {
            // Written for the facts that are still current: shown.
            Some((facts, Ok(text))) if facts == self.state.version => {
                self.summary = Some(Summary {
                    text,
                    at: Instant::now(),
                    facts,
                });
                self.summaries += 1;
                self.summary_status = SummaryStatus::Ready;
            }
            // The facts moved on while it was written: never shown (the
            // change that moved them asked for another refresh).
            Some((_, Ok(_))) | None => {}
            Some((_, Err(why))) => self.summary_status = SummaryStatus::Rejected(why),
        }
        if let Refresh::Busy { dirty: true } = self.refresh {
            self.refresh = Refresh::Busy { dirty: false };
            return false;
        }
        self.refresh = Refresh::Idle;
        if self.summary_status == SummaryStatus::Pending {
            self.summary_status = if self.current_summary().is_some() {
                SummaryStatus::Ready
            } else {
                SummaryStatus::None
            };
        }
        true
    }

    /// Changes whenever the HUD's content does: with the facts, and when a
    /// summary is accepted.
    fn version(&self) -> u64 {
        self.state.version + self.summaries
    }

    /// The summary, when it describes the current facts.
    fn current_summary(&self) -> Option<String> {
        self.summary
            .as_ref()
            .filter(|s| s.facts == self.state.version)
            .map(|s| s.text.clone())
    }
}

/// All sessions. Cheap to share as `Arc<Hud>`.
pub struct Hud {
    config: HudConfig,
    counter: TokenCounter,
    model: Option<ModelHandle>,
    sessions: Mutex<HashMap<String, Entry>>,
    epochs: std::sync::atomic::AtomicU64,
    /// One background summary at a time reaches the model's queue, so chat
    /// completions and compaction notes wait behind at most one of them,
    /// however many sessions changed.
    background: tokio::sync::Semaphore,
}

impl Hud {
    pub fn new(config: HudConfig, counter: TokenCounter, model: Option<ModelHandle>) -> Arc<Hud> {
        Arc::new(Hud {
            config,
            counter,
            model,
            sessions: Mutex::new(HashMap::new()),
            epochs: std::sync::atomic::AtomicU64::new(0),
            background: tokio::sync::Semaphore::new(1),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Entry>> {
        // A panic while holding the lock leaves plain data; keep serving.
        self.sessions.lock().unwrap_or_else(|p| p.into_inner())
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
        let mut sessions = self.lock();
        if !sessions.contains_key(session_id) {
            if !full {
                return Err(HudError::ResyncRequired(session_id.to_owned()));
            }
            sessions.insert(
                session_id.to_owned(),
                Entry {
                    epoch: self.epochs.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
                    state: SessionState::new(session_id),
                    summary: None,
                    summary_status: SummaryStatus::None,
                    summaries: 0,
                    refresh: Refresh::Idle,
                    last_used: Instant::now(),
                    idle_since: None,
                },
            );
        }
        let entry = sessions.get_mut(session_id).expect("inserted above");
        entry.last_used = Instant::now();
        entry.idle_since = None;
        if entry.state.merge(&parsed, &self.config.limits) {
            self.schedule_refresh(entry, session_id);
        }
        let snapshot = entry.snapshot();
        Self::evict(&mut sessions, &self.config, session_id);
        drop(sessions);
        Ok(self.view(snapshot, skipped))
    }

    /// Applies a forwarded OpenCode event. Events for sessions the sidecar
    /// does not hold are ignored (the next sync brings them in whole);
    /// returns whether the session is held.
    pub fn event(self: &Arc<Self>, event: SessionEvent) -> bool {
        let id = event.session_id().to_owned();
        let mut sessions = self.lock();
        if let SessionEvent::Deleted { .. } = event {
            return sessions.remove(&id).is_some();
        }
        let Some(entry) = sessions.get_mut(&id) else {
            return false;
        };
        entry.last_used = Instant::now();
        let now = epoch_ms();
        let changed = match event {
            SessionEvent::ToolExecuted {
                session_id,
                call_id,
                tool,
                args,
                output,
                metadata,
                clipped,
            } => {
                let message = opencode::Message {
                    info: opencode::Info {
                        id: String::new(),
                        session_id: Some(session_id),
                        role: "assistant".into(),
                        time: None,
                        path: None,
                        summary: None,
                    },
                    parts: vec![opencode::Part::Tool {
                        id: None,
                        call_id,
                        tool,
                        state: Box::new(opencode::ToolState {
                            status: opencode::ToolStatus::Completed,
                            input: args,
                            output,
                            error: None,
                            metadata,
                            time: Some(opencode::ToolTime {
                                start: Some(now),
                                end: Some(now),
                            }),
                            clipped,
                        }),
                    }],
                };
                entry.state.merge(&[message], &self.config.limits)
            }
            SessionEvent::TodoUpdated { todos, .. } => entry.state.set_todos(session::Todo::list(&todos), now),
            SessionEvent::Idle { .. } => {
                entry.idle_since = Some(Instant::now());
                false
            }
            SessionEvent::Compacted { .. } => entry.state.set_compacted(now),
            SessionEvent::Deleted { .. } => unreachable!("handled above"),
        };
        if changed {
            self.schedule_refresh(entry, &id);
            Self::evict(&mut sessions, &self.config, &id);
        }
        true
    }

    /// After a change of facts: starts a summary refresh, or marks the
    /// running one to go again.
    fn schedule_refresh(self: &Arc<Self>, entry: &mut Entry, session_id: &str) {
        if !self.config.summaries || self.model.is_none() || entry.state.calls.is_empty() {
            return;
        }
        match entry.refresh {
            Refresh::Idle => {
                entry.refresh = Refresh::Busy { dirty: false };
                entry.summary_status = SummaryStatus::Pending;
                let hud = self.clone();
                let id = session_id.to_owned();
                let epoch = entry.epoch;
                tokio::spawn(async move { hud.refresh_loop(id, epoch).await });
            }
            Refresh::Busy { .. } => entry.refresh = Refresh::Busy { dirty: true },
        }
    }

    /// The current HUD of a session.
    pub fn get(&self, session_id: &str) -> Result<HudView, HudError> {
        let snapshot = self
            .lock()
            .get(session_id)
            .ok_or_else(|| HudError::NotFound(session_id.to_owned()))?
            .snapshot();
        Ok(self.view(snapshot, 0))
    }

    pub fn list(&self) -> Vec<SessionListing> {
        let sessions = self.lock();
        let mut out: Vec<_> = sessions
            .values()
            .map(|e| SessionListing {
                session_id: e.state.id.clone(),
                version: e.state.version,
                tool_calls: e.state.calls.len(),
                bytes: e.state.bytes(),
                idle_ms: e.last_used.elapsed().as_millis() as u64,
                agent_idle_ms: e.idle_since.map(|t| t.elapsed().as_millis() as u64),
            })
            .collect();
        out.sort_by_key(|s| s.idle_ms);
        out
    }

    pub fn drop_session(&self, session_id: &str) -> bool {
        self.lock().remove(session_id).is_some()
    }

    /// Renders a snapshot; called with the lock released.
    fn view(&self, snapshot: Snapshot, skipped: usize) -> HudView {
        let summary = snapshot
            .summary
            .as_ref()
            .map(|(text, _)| SummaryLine { text: text.clone() });
        let rendered = render::render(&snapshot.state, summary.as_ref(), self.config.budget, &|t| {
            self.counter.count(t)
        });
        let shown = summary.is_some() && rendered.text.contains("Summary (local model");
        HudView {
            session_id: snapshot.state.id,
            version: snapshot.version,
            hud: rendered.text,
            tokens: rendered.tokens,
            summary_age_ms: snapshot
                .summary
                .filter(|_| shown)
                .map(|(_, at)| at.elapsed().as_millis() as u64),
            summary_status: snapshot.summary_status,
            skipped,
        }
    }

    /// Drops least recently used sessions over the count or byte limits,
    /// never the one just synced.
    fn evict(sessions: &mut HashMap<String, Entry>, config: &HudConfig, keep: &str) {
        loop {
            let bytes: usize = sessions.values().map(|e| e.state.bytes()).sum();
            if sessions.len() <= config.max_sessions && bytes <= config.max_bytes {
                return;
            }
            let victim = sessions
                .iter()
                .filter(|(id, _)| id.as_str() != keep)
                .min_by_key(|(_, e)| e.last_used)
                .map(|(id, _)| id.clone());
            match victim {
                Some(id) => {
                    sessions.remove(&id);
                }
                None => return,
            }
        }
    }

    /// Refreshes the session's summary until no change is pending.
    async fn refresh_loop(self: Arc<Self>, id: String, epoch: u64) {
        loop {
            tokio::time::sleep(self.config.debounce).await;
            let outcome = self.refresh_once(&id, epoch).await;
            let mut sessions = self.lock();
            let Some(entry) = sessions.get_mut(&id).filter(|e| e.epoch == epoch) else {
                return;
            };
            if entry.finish_refresh(outcome) {
                return;
            }
        }
    }

    /// One generation, with the facts version it was written for. `None`
    /// when it was skipped or cancelled as stale.
    async fn refresh_once(&self, id: &str, epoch: u64) -> Option<(u64, Result<String, String>)> {
        let _turn = self.background.acquire().await.ok()?;
        let (version, state) = {
            let sessions = self.lock();
            let entry = sessions.get(id).filter(|e| e.epoch == epoch)?;
            if matches!(entry.refresh, Refresh::Busy { dirty: true }) {
                // More is coming; wait for it rather than summarise stale facts.
                return None;
            }
            (entry.state.version, entry.state.clone())
        };
        // Facts changed meanwhile: the generation is dropped, which cancels it.
        let stale = || {
            self.lock()
                .get(id)
                .is_none_or(|e| e.epoch != epoch || e.state.version != version)
        };
        let deadline = tokio::time::Instant::now() + self.config.summary_timeout;
        let note = self.note(summary::prompt(&state), id, &state, deadline, &stale).await?;
        Some((version, note))
    }

    /// Has the model write a note from `prompt` in the session's KV slot, and
    /// guards it against `state`. `None` when there is no model or `stale()`
    /// turned true while generating (which cancels the generation).
    async fn note(
        &self,
        prompt: Vec<ChatMessage>,
        id: &str,
        state: &SessionState,
        deadline: tokio::time::Instant,
        stale: &(dyn Fn() -> bool + Sync),
    ) -> Option<Result<String, String>> {
        let model = self.model.as_ref()?;
        let request = GenerateRequest {
            prompt: Prompt::Chat(prompt),
            params: SamplingParams {
                max_tokens: 80,
                temperature: 0.0,
                top_p: 1.0,
                seed: 0,
                stop: vec!["\n\n".into()],
            },
            cache_key: Some(format!("hud:{id}")),
        };
        let mut rx = match model.generate(request) {
            Ok(rx) => rx,
            Err(e) => return Some(Err(format!("model busy: {e}"))),
        };
        let mut text = String::new();
        loop {
            let event = match tokio::time::timeout_at(deadline, rx.recv()).await {
                Ok(Some(e)) => e,
                Ok(None) => return Some(Err("model thread stopped".into())),
                Err(_) => return Some(Err("timed out".into())),
            };
            match event {
                Event::Text(t) => text.push_str(&t),
                Event::Done(done) => {
                    tracing::debug!(
                        session = id,
                        cached = done.cached_tokens,
                        prompt = done.prompt_tokens,
                        ms = done.prompt_ms + done.generation_ms,
                        "note generated"
                    );
                    break;
                }
                Event::Failed(e) => return Some(Err(e.to_string())),
            }
            if stale() {
                return None;
            }
        }
        Some(summary::guard(&text, state).map_err(|r| r.to_string()))
    }

    /// The session's status note: `current` (the summary, when it describes
    /// the current facts), else one written now if it passes the guard before
    /// `until`. Returns the note and what happened (`current summary`,
    /// `written`, `rejected: why`, `summaries off`, `no model`).
    async fn session_note(
        &self,
        id: &str,
        state: &SessionState,
        current: Option<String>,
        until: tokio::time::Instant,
    ) -> (Option<String>, String) {
        match current {
            Some(text) => (Some(text), "current summary".into()),
            None if !self.config.summaries => (None, "summaries off".into()),
            None => match self.note(summary::prompt(state), id, state, until, &|| false).await {
                Some(Ok(text)) => (Some(text), "written".into()),
                Some(Err(why)) => (None, format!("rejected: {why}")),
                None => (None, "no model".into()),
            },
        }
    }

    /// The compaction context for a session: its facts in the sections of
    /// OpenCode's compaction template, plus the model's note when a current
    /// one exists or can be written before `deadline`.
    pub async fn compaction(&self, id: &str, deadline: Duration) -> Result<CompactionView, HudError> {
        let started = Instant::now();
        let until = tokio::time::Instant::now() + deadline;
        let (state, current) = {
            let sessions = self.lock();
            let entry = sessions.get(id).ok_or_else(|| HudError::NotFound(id.to_owned()))?;
            (entry.state.clone(), entry.current_summary())
        };
        let (note, note_status) = self.session_note(id, &state, current, until).await;
        let text = compose::compaction(&state, note.as_deref());
        Ok(CompactionView {
            session_id: id.to_owned(),
            prompt: compose::compaction_prompt(&text),
            text,
            note_status,
            ms: started.elapsed().as_millis() as u64,
        })
    }

    /// The heartbeat prompt from the most recently active sessions (all but
    /// `exclude`): facts for the system prompt, and a user text leading with
    /// what needs attention, plus the model's note when it passes the guard
    /// before `deadline`.
    pub async fn heartbeat(&self, exclude: &[String], deadline: Duration) -> HeartbeatView {
        const SESSIONS: usize = 5;
        let started = Instant::now();
        let until = tokio::time::Instant::now() + deadline;
        // (state, quiet seconds, agent idle, current summary) of the most
        // recently active sessions; only those are copied out of the lock.
        let mut recent: Vec<(SessionState, u64, bool, Option<String>)> = {
            let sessions = self.lock();
            let quiet_since = |e: &Entry| e.idle_since.unwrap_or(e.last_used);
            let mut list: Vec<&Entry> = sessions.values().filter(|e| !exclude.contains(&e.state.id)).collect();
            // Most recent first, by the instant (whole seconds would tie).
            list.sort_by_key(|e| std::cmp::Reverse(quiet_since(e)));
            list.truncate(SESSIONS);
            list.into_iter()
                .map(|e| {
                    let quiet = quiet_since(e).elapsed().as_secs();
                    (e.state.clone(), quiet, e.idle_since.is_some(), e.current_summary())
                })
                .collect()
        };
        // The session that needs attention first leads; the note is about it.
        if let Some(i) = recent
            .iter()
            .position(|(s, ..)| !render::open_problems(&s.work_calls()).is_empty())
        {
            recent[..=i].rotate_right(1);
        }
        let quiet: Vec<compose::Quiet> = recent
            .iter()
            .map(|(state, quiet_secs, agent_idle, _)| compose::Quiet {
                state,
                quiet_secs: *quiet_secs,
                agent_idle: *agent_idle,
            })
            .collect();
        let system = compose::heartbeat_system(&quiet);
        let (note, note_status) = match quiet.first() {
            None => (None, "no sessions".to_owned()),
            Some(lead) => {
                let current = recent[0].3.clone();
                self.session_note(&lead.state.id, lead.state, current, until).await
            }
        };
        HeartbeatView {
            user: compose::heartbeat_user(&quiet, note.as_deref()),
            system,
            sessions: quiet.iter().map(|q| q.state.id.clone()).collect(),
            note_status,
            ms: started.elapsed().as_millis() as u64,
        }
    }
}

#[cfg(test)]
mod tests {
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
            summaries: false,
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

    /// A summary finished after the facts moved on is never shown; one for
    /// the current facts is, until the facts move again; the text carries
    /// no clock, so it stays byte-identical meanwhile.
    #[tokio::test]
    async fn summaries_are_shown_only_for_the_facts_they_describe() {
        let hud = hud(HudConfig::default());
        hud.sync("s", vec![user("s")], true).expect("sync");
        assert!(hud.event(tool_event("s", "c1", "ok")));
        let written_for = hud.lock()["s"].state.version;
        // A change arrives while the note is being written.
        let changed = {
            let mut sessions = hud.lock();
            let entry = sessions.get_mut("s").expect("held");
            entry.refresh = Refresh::Busy { dirty: true };
            entry.summary_status = SummaryStatus::Pending;
            entry.state.merge(
                &[serde_json::from_value(
                    json!({ "info": { "id": "u2", "role": "user", "time": { "created": 5.0 } },
                    "parts": [{ "type": "text", "text": "Now the docs." }] }),
                )
                .expect("message")],
                &Limits::default(),
            )
        };
        assert!(changed);
        let done = hud
            .lock()
            .get_mut("s")
            .expect("held")
            .finish_refresh(Some((written_for, Ok("The build passes.".into()))));
        assert!(!done, "the change asks for another round");
        let view = hud.get("s").expect("view");
        assert!(!view.hud.contains("The build passes"), "{}", view.hud);
        assert_eq!(view.summary_status, SummaryStatus::Pending);

        // Written for the current facts: shown, and stable over time.
        let current = hud.lock()["s"].state.version;
        assert!(hud
            .lock()
            .get_mut("s")
            .expect("held")
            .finish_refresh(Some((current, Ok("Docs next.".into())))));
        let shown = hud.get("s").expect("view");
        assert!(
            shown.hud.contains("Summary (local model, unverified): Docs next."),
            "{}",
            shown.hud
        );
        assert_eq!(shown.summary_status, SummaryStatus::Ready);
        std::thread::sleep(Duration::from_millis(1100));
        let later = hud.get("s").expect("view");
        assert_eq!(later.hud, shown.hud, "byte-identical over time");
        assert_eq!(later.version, shown.version);

        // New facts: the note is gone at once, not shown as old.
        assert!(hud.event(tool_event("s", "c2", "ok")));
        let moved = hud.get("s").expect("view");
        assert!(!moved.hud.contains("Docs next"), "{}", moved.hud);
        assert!(moved.version > shown.version);
    }

    #[tokio::test]
    async fn a_recreated_session_gets_a_new_epoch() {
        let hud = hud(HudConfig {
            summaries: false,
            ..HudConfig::default()
        });
        hud.sync("s", vec![user("s")], true).expect("sync");
        let first = hud.lock()["s"].epoch;
        assert!(hud.drop_session("s"));
        hud.sync("s", vec![user("s")], true).expect("sync");
        assert_ne!(
            hud.lock()["s"].epoch,
            first,
            "a refresh loop of the old entry would end"
        );
    }
}
