//! The model's part of the HUD, asked in the background: after a change of
//! facts leaves a question (see [`extract`]), a debounced, coalesced refresh
//! asks the engine, checks the answer, and records it on the session. The
//! compaction and heartbeat texts ask at once, within their deadline.
//!
//! The [`Refresher`] owns the engine handle and the scheduling (the
//! warm-up, one background question at a time, retries); it reaches the
//! sessions only through the store's narrow interface: an entry under its
//! lock ([`Store::with_entry`]) and the change feed ([`Store::changed`]).

use super::entry::{Entry, Reading, Refresh};
use super::store::{Change, Store};
use crate::engine::{Engine, EngineError, Event};
use evolve_hud_api::ModelStatus;
use evolve_hud_core::extract::{self, Findings};
use evolve_hud_core::session::SessionState;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Whether an engine error says the question was not taken (engine busy,
/// down or stopping) rather than answered badly: such a question is asked
/// again later instead of being marked rejected.
fn not_taken(e: &EngineError) -> bool {
    matches!(
        e,
        EngineError::Unavailable(_) | EngineError::Overloaded(_) | EngineError::QueueTimeout(_)
    ) || matches!(e, EngineError::Upstream { status, .. } if *status == 429 || *status >= 500)
}

/// What came of asking a question.
enum Asked {
    /// The model's verified findings, or why there are none.
    Answered(Reading),
    /// The engine did not take it (busy, down, stopping, or it was still
    /// waiting at its deadline): it is asked again.
    NotTaken,
    /// Its problem closed, or its session went, while it was answered.
    Gone,
}

/// The first pause before a question the engine did not take is asked
/// again, and the longest.
const RETRY_MIN: std::time::Duration = std::time::Duration::from_millis(500);
const RETRY_MAX: std::time::Duration = std::time::Duration::from_secs(10);
/// How often a compaction or heartbeat looks whether a question another
/// asker has in flight was answered.
const WAIT_STEP: std::time::Duration = std::time::Duration::from_millis(50);

/// A call's question marked in flight ([`Entry::asking`]) while this lives.
struct Asking<'h> {
    store: &'h Store,
    session: String,
    epoch: u64,
    call: String,
}

impl Drop for Asking<'_> {
    fn drop(&mut self) {
        self.store.with_entry(&self.session, Some(self.epoch), |entry| {
            entry.asking.remove(&self.call);
        });
    }
}

/// The KV cache key every question shares (see [`extract::warmup_request`]).
const QUESTIONS_KEY: &str = "hud:questions";

/// When and how long the model is asked.
#[derive(Debug, Clone, Copy)]
pub(super) struct RefreshSettings {
    /// Let the model read failed outputs at all.
    pub(super) extract: bool,
    /// Quiet time after a change before the model is asked.
    pub(super) debounce: Duration,
    /// Longest one answer of the model may take.
    pub(super) extract_timeout: Duration,
}

/// Asks the model about the sessions' failures, in the background or
/// within a deadline.
pub(super) struct Refresher {
    store: Arc<Store>,
    engine: Option<Engine>,
    config: RefreshSettings,
    /// One background question at a time reaches the model's queue, so chat
    /// completions and compaction texts wait behind at most one of them,
    /// however many sessions changed.
    background: tokio::sync::Semaphore,
    /// Whether the questions' shared start is in the engine's cache (or
    /// being put there).
    warmed: AtomicBool,
}

impl Refresher {
    pub(super) fn new(store: Arc<Store>, engine: Option<Engine>, config: RefreshSettings) -> Refresher {
        Refresher {
            store,
            engine,
            config,
            background: tokio::sync::Semaphore::new(1),
            warmed: AtomicBool::new(false),
        }
    }

    /// Before the first question: has the engine decode the start every
    /// question shares, once, in the background (counted in `/metrics` as
    /// `work="warmup"`). The server does it at start-up: a sidecar the
    /// plugin starts comes up at the agent's first step, whose tool result
    /// (often the failure worth a question) arrives with the first sync, so
    /// the shared start is decoded while the agent's model thinks rather
    /// than before that question. Tried again with the next new session when
    /// the engine could not take it.
    pub fn warm_questions(self: &Arc<Self>) {
        let Some(engine) = self.engine.clone().filter(|_| self.config.extract) else {
            return;
        };
        if self.warmed.swap(true, Ordering::AcqRel) {
            return;
        }
        let this = self.clone();
        tokio::spawn(async move {
            // A model still loading is warmed once it is in.
            let mut health = engine.watch_health();
            loop {
                let state = health.borrow_and_update().clone();
                match state {
                    // A released model loads again for the warm-up.
                    crate::engine::HealthState::Ready | crate::engine::HealthState::Released => break,
                    crate::engine::HealthState::Failed { .. } => {
                        this.warmed.store(false, Ordering::Release);
                        return;
                    }
                    crate::engine::HealthState::Loading => {}
                }
                if health.changed().await.is_err() {
                    return;
                }
            }
            let deadline = tokio::time::Instant::now() + this.config.extract_timeout;
            let warmed = async {
                let _turn = this.background.acquire().await.ok()?;
                let mut rx = engine.submit(extract::warmup_request(QUESTIONS_KEY)).await.ok()?;
                loop {
                    match tokio::time::timeout_at(deadline, rx.recv()).await.ok()?? {
                        Event::Text(_) => {}
                        Event::Done(done) => {
                            done.count("warmup");
                            return Some(());
                        }
                        Event::Failed(_) => return None,
                    }
                }
            };
            if warmed.await.is_none() {
                this.warmed.store(false, Ordering::Release);
            }
        });
    }

    /// After a change of facts: starts a refresh when there is something
    /// to ask the model, or marks the running one to go again.
    pub(super) fn schedule_refresh(self: &Arc<Self>, entry: &mut Entry, session_id: &str) {
        if !self.config.extract || self.engine.is_none() {
            return;
        }
        match entry.refresh {
            Refresh::Idle if entry.unasked().is_empty() => {}
            Refresh::Idle => {
                entry.refresh = Refresh::Busy { dirty: false };
                let this = self.clone();
                let id = session_id.to_owned();
                let epoch = entry.epoch;
                tokio::spawn(async move { this.refresh_loop(id, epoch).await });
            }
            Refresh::Busy { .. } => entry.refresh = Refresh::Busy { dirty: true },
        }
    }

    /// Asks the model about the session's new failures until no change is
    /// pending and every open problem worth a question has had one. A
    /// question the engine did not take (busy, down, or still queued at its
    /// deadline) is asked again after a pause that doubles up to
    /// [`RETRY_MAX`], for as long as its problem stays open.
    async fn refresh_loop(self: Arc<Self>, id: String, epoch: u64) {
        let mut pause = self.config.debounce;
        loop {
            tokio::time::sleep(pause).await;
            let (outcome, retry) = match self.refresh_once(&id, epoch).await {
                Some((call, Asked::Answered(answer))) => {
                    if let Some(engine) = &self.engine {
                        engine.telemetry().note(matches!(answer, Reading::Found(_)));
                    }
                    (Some((call, answer)), false)
                }
                Some((_, Asked::NotTaken)) => {
                    metrics::counter!("evolve_hud_hud_questions_not_taken_total").increment(1);
                    (None, true)
                }
                Some((_, Asked::Gone)) | None => (None, false),
            };
            pause = if retry {
                (pause * 2).clamp(RETRY_MIN, RETRY_MAX)
            } else {
                self.config.debounce
            };
            let Some(done) = self
                .store
                .with_entry(&id, Some(epoch), |entry| entry.finish_refresh(outcome, retry))
            else {
                return;
            };
            self.store.changed(Change::Updated(id.clone()));
            if done {
                return;
            }
        }
    }

    /// One question: the call asked about and what came of it. `None` when
    /// there was nothing to ask or more changes are coming.
    async fn refresh_once(&self, id: &str, epoch: u64) -> Option<(String, Asked)> {
        let _turn = self.background.acquire().await.ok()?;
        let (question, _asking) = self
            .store
            .with_entry(id, Some(epoch), |entry| {
                if matches!(entry.refresh, Refresh::Busy { dirty: true }) {
                    // More is coming; wait for it rather than ask about a
                    // call that may be fixed by then.
                    return None;
                }
                self.take_question(entry, id)
            })
            .flatten()?;
        // An output never changes, so new facts do not make the answer
        // stale; but once the call's problem is closed (the command passed)
        // or the call is evicted, the answer would never be shown, and the
        // generation is cancelled.
        let gone = || {
            self.store
                .with_entry(id, Some(epoch), |e| e.state.problems().is_open(&question.call_id))
                != Some(true)
        };
        let deadline = tokio::time::Instant::now() + self.config.extract_timeout;
        let asked = self
            .ask(&question, id, epoch, deadline, self.config.extract_timeout, &gone)
            .await;
        Some((question.call_id, asked))
    }

    /// The session's first unasked question, marked as being asked until the
    /// returned guard drops.
    fn take_question<'h>(&'h self, entry: &mut Entry, id: &str) -> Option<(extract::Question, Asking<'h>)> {
        let question = extract::question(entry.unasked().first()?)?;
        entry.asking.insert(question.call_id.clone());
        let asking = Asking {
            store: &self.store,
            session: id.to_owned(),
            epoch: entry.epoch,
            call: question.call_id.clone(),
        };
        Some((question, asking))
    }

    /// Has the model answer `question` in the questions' KV slot, held to
    /// the answer's schema, and verifies the answer against the question's
    /// source. Each item is verified and shown on the session (of `epoch`)
    /// as soon as it is written, so the first is shown while the model
    /// writes the next; the question stays pending until the whole answer
    /// is in. `gone()` turning true while generating cancels the generation.
    ///
    /// An answer still being written at `deadline` (a busy machine writes
    /// slowly) gets `grace` more; one not done by then is not taken, and
    /// the question is asked again later. The items verified so far stay
    /// shown either way.
    async fn ask(
        &self,
        question: &extract::Question,
        id: &str,
        epoch: u64,
        deadline: tokio::time::Instant,
        grace: std::time::Duration,
        gone: &(dyn Fn() -> bool + Sync),
    ) -> Asked {
        let Some(engine) = self.engine.as_ref() else {
            return Asked::NotTaken;
        };
        // Every question starts with the same instructions and worked
        // example, and only that start is shared between questions: one slot
        // for all keeps it cached for every session's first question.
        let request = question.request(QUESTIONS_KEY);
        let mut rx = match engine.submit(request).await {
            Ok(rx) => rx,
            Err(e) => {
                tracing::debug!(session = id, error = %e, "the engine did not take the question");
                return Asked::NotTaken;
            }
        };
        let mut text = String::new();
        let mut early = 0;
        let mut until = deadline;
        loop {
            let event = match tokio::time::timeout_at(until, rx.recv()).await {
                Ok(Some(e)) => e,
                Ok(None) => return Asked::NotTaken,
                // Being written: it gets its grace once.
                Err(_) if !text.is_empty() && until == deadline && !grace.is_zero() => {
                    until = deadline + grace;
                    continue;
                }
                // Nothing written yet (still queued, or its prompt still
                // being decoded on a busy machine), or not done in its
                // grace. Dropping `rx` takes it off the queue or stops it;
                // it is asked again, never counted as refused.
                Err(_) => {
                    tracing::debug!(
                        session = id,
                        written = text.len(),
                        "the question was not answered in time; asking again later"
                    );
                    return Asked::NotTaken;
                }
            };
            match event {
                Event::Text(t) => {
                    text.push_str(&t);
                    if t.contains('}') {
                        let found = extract::verify_written(&text, question);
                        if found.len() > early {
                            early = found.len();
                            self.update(id, epoch, |e| e.record_written(&question.call_id, found));
                        }
                    }
                }
                Event::Done(done) => {
                    done.record("hud", engine.telemetry());
                    tracing::debug!(
                        session = id,
                        call = question.call_id,
                        cached = done.cached_tokens,
                        prompt = done.prompt_tokens,
                        prompt_ms = done.prompt_ms,
                        generated = done.completion_tokens,
                        forced = done.forced_tokens,
                        generation_ms = done.generation_ms,
                        answer = text,
                        "model answered"
                    );
                    break;
                }
                Event::Failed(e) if not_taken(&e) => {
                    tracing::debug!(session = id, error = %e, "the engine did not answer the question");
                    return Asked::NotTaken;
                }
                Event::Failed(e) => return Asked::Answered(Reading::Rejected(e.to_string())),
            }
            if gone() {
                return Asked::Gone;
            }
        }
        match extract::verify(&text, question) {
            Ok(found) => Asked::Answered(Reading::Found(found)),
            Err(why) => {
                let why = why.to_string();
                tracing::debug!(
                    session = id,
                    call = question.call_id,
                    answer = text,
                    why,
                    "answer refused"
                );
                Asked::Answered(Reading::Rejected(why))
            }
        }
    }

    /// Answers, before `until`, the questions about the session's open
    /// problems that the background refresh has not reached yet, waits for
    /// those it is asking now, and returns the session's findings and model
    /// status after them.
    pub(super) async fn answer_now(
        &self,
        id: &str,
        until: tokio::time::Instant,
    ) -> (SessionState, Findings, ModelStatus) {
        let ask = self.config.extract && self.engine.is_some();
        loop {
            let now = tokio::time::Instant::now();
            let step = self.store.with_entry(id, None, |entry| {
                match (now < until && ask).then(|| self.take_question(entry, id)).flatten() {
                    Some(taken) => (Some((taken, entry.epoch)), false),
                    // Another asker has it: wait for its answer.
                    None => (None, ask && now < until && !entry.asking.is_empty()),
                }
            });
            let Some((taken, wait)) = step else {
                return (SessionState::new(id), Findings::new(), ModelStatus::None);
            };
            if wait {
                tokio::time::sleep(WAIT_STEP.min(until - now)).await;
                continue;
            }
            let Some(((question, _asking), epoch)) = taken else {
                return self.outcome(id);
            };
            // The sync waits no longer than it said: no grace.
            match self
                .ask(&question, id, epoch, until, std::time::Duration::ZERO, &|| false)
                .await
            {
                Asked::Answered(answer) => self.update(id, epoch, |e| e.record(&question.call_id, answer)),
                Asked::NotTaken | Asked::Gone => {
                    drop(_asking);
                    return self.outcome(id);
                }
            }
        }
    }

    /// Records an answer, or its part, on the session `id` (of `epoch`),
    /// and tells the session's watchers.
    fn update(&self, id: &str, epoch: u64, record: impl FnOnce(&mut Entry)) {
        if self.store.with_entry(id, Some(epoch), record).is_some() {
            self.store.changed(Change::Updated(id.to_owned()));
        }
    }

    /// The session's facts, findings and model status as they are now.
    fn outcome(&self, id: &str) -> (SessionState, Findings, ModelStatus) {
        self.store
            .with_entry(id, None, |e| (e.state.clone(), e.findings(), e.model_status()))
            .unwrap_or_else(|| (SessionState::new(id), Findings::new(), ModelStatus::None))
    }
}
