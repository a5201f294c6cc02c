//! The model's part of the HUD, asked in the background: after a change of
//! facts leaves a question (see [`extract`]), a debounced, coalesced refresh
//! asks the engine, checks the answer, and records it on the session. The
//! compaction and heartbeat texts ask at once, within their deadline.

use super::entry::Entry;
use super::entry::{ModelStatus, Refresh};
use super::extract::{self, Finding, Findings};
use super::render;
use super::session::SessionState;
use super::Hud;
use crate::engine::{EngineError, Event};
use std::sync::Arc;

/// Whether an engine error says the question was not taken (engine busy,
/// down or stopping) rather than answered badly: such a question is asked
/// again later instead of being marked rejected.
fn not_taken(e: &EngineError) -> bool {
    matches!(
        e,
        EngineError::Unavailable(_) | EngineError::Overloaded(_) | EngineError::QueueTimeout(_)
    ) || matches!(e, EngineError::Upstream { status, .. } if *status == 429 || *status >= 500)
}

/// The KV cache key every question shares (see [`extract::warmup_request`]).
const QUESTIONS_KEY: &str = "hud:questions";

impl Hud {
    /// Before the first question: has the engine decode the start every
    /// question shares, once, in the background (counted in `/metrics` as
    /// `work="warmup"`). Tried again with the next new session when the
    /// engine could not take it.
    pub(super) fn warm_questions(self: &Arc<Self>) {
        let Some(engine) = self.engine.clone().filter(|_| self.config.extract) else {
            return;
        };
        if self.warmed.swap(true, std::sync::atomic::Ordering::AcqRel) {
            return;
        }
        let hud = self.clone();
        tokio::spawn(async move {
            let deadline = tokio::time::Instant::now() + hud.config.extract_timeout;
            let warmed = async {
                let _turn = hud.background.acquire().await.ok()?;
                let mut rx = engine.generate(extract::warmup_request(QUESTIONS_KEY)).ok()?;
                loop {
                    match tokio::time::timeout_at(deadline, rx.recv()).await.ok()?? {
                        Event::Text(_) => {}
                        Event::Done(done) => {
                            crate::server::metrics::count_completion(&done, "warmup");
                            return Some(());
                        }
                        Event::Failed(_) => return None,
                    }
                }
            };
            if warmed.await.is_none() {
                hud.warmed.store(false, std::sync::atomic::Ordering::Release);
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
                let hud = self.clone();
                let id = session_id.to_owned();
                let epoch = entry.epoch;
                tokio::spawn(async move { hud.refresh_loop(id, epoch).await });
            }
            Refresh::Busy { .. } => entry.refresh = Refresh::Busy { dirty: true },
        }
    }

    /// Asks the model about the session's new failures until no change is
    /// pending and every open problem worth a question has had one.
    async fn refresh_loop(self: Arc<Self>, id: String, epoch: u64) {
        loop {
            tokio::time::sleep(self.config.debounce).await;
            let outcome = self.refresh_once(&id, epoch).await;
            if let Some((_, answer)) = &outcome {
                crate::activity::note(answer.is_ok());
            }
            let done = {
                let mut sessions = self.lock();
                let Some(entry) = sessions.get_mut(&id).filter(|e| e.epoch == epoch) else {
                    return;
                };
                entry.finish_refresh(outcome)
            };
            self.changed(super::Change::Updated(id.clone()));
            if done {
                return;
            }
        }
    }

    /// One question: the call asked about and the answer. `None` when there
    /// was nothing to ask, more changes are coming, or the call went away.
    async fn refresh_once(&self, id: &str, epoch: u64) -> Option<(String, Result<Vec<Finding>, String>)> {
        let _turn = self.background.acquire().await.ok()?;
        let question = {
            let sessions = self.lock();
            let entry = sessions.get(id).filter(|e| e.epoch == epoch)?;
            if matches!(entry.refresh, Refresh::Busy { dirty: true }) {
                // More is coming; wait for it rather than ask about a call
                // that may be fixed by then.
                return None;
            }
            extract::question(entry.unasked().first()?)?
        };
        // An output never changes, so new facts do not make the answer
        // stale; but once the call's problem is closed (the command passed)
        // or the call is evicted, the answer would never be shown, and the
        // generation is cancelled.
        let gone = || {
            self.lock().get(id).is_none_or(|e| {
                e.epoch != epoch
                    || !render::open_failures(&e.state.work_calls())
                        .iter()
                        .any(|(c, _)| c.call_id == question.call_id)
            })
        };
        let deadline = tokio::time::Instant::now() + self.config.extract_timeout;
        let answer = self.ask(&question, id, epoch, deadline, &gone).await?;
        Some((question.call_id, answer))
    }

    /// Has the model answer `question` in the questions' KV slot, held to
    /// the answer's schema, and verifies the answer against the question's
    /// source. Each item is verified and shown on the session (of `epoch`)
    /// as soon as it is written, so the first is shown while the model
    /// writes the next; the question stays pending until the whole answer
    /// is in. `None` when there is no engine, `gone()` turned true while
    /// generating (which cancels the generation), or the engine could not
    /// take the question (busy, down): it is asked again at the next sync.
    async fn ask(
        &self,
        question: &extract::Question,
        id: &str,
        epoch: u64,
        deadline: tokio::time::Instant,
        gone: &(dyn Fn() -> bool + Sync),
    ) -> Option<Result<Vec<Finding>, String>> {
        let engine = self.engine.as_ref()?;
        // Every question starts with the same instructions and worked
        // example, and only that start is shared between questions: one slot
        // for all keeps it cached for every session's first question.
        let request = question.request(QUESTIONS_KEY);
        let mut rx = match engine.generate(request) {
            Ok(rx) => rx,
            Err(e) => {
                tracing::debug!(session = id, error = %e, "the engine did not take the question");
                return None;
            }
        };
        let mut text = String::new();
        let mut early = 0;
        loop {
            let event = match tokio::time::timeout_at(deadline, rx.recv()).await {
                Ok(Some(e)) => e,
                Ok(None) => return None,
                Err(_) => return Some(Err("timed out".into())),
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
                    crate::server::metrics::record_completion(&done, "hud");
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
                    return None;
                }
                Event::Failed(e) => return Some(Err(e.to_string())),
            }
            if gone() {
                return None;
            }
        }
        let verdict = extract::verify(&text, question).map_err(|r| r.to_string());
        if let Err(why) = &verdict {
            tracing::debug!(
                session = id,
                call = question.call_id,
                answer = text,
                why,
                "answer refused"
            );
        }
        Some(verdict)
    }

    /// Answers, before `until`, the questions about the session's open
    /// problems that the background refresh has not reached yet, and returns
    /// the session's findings and model status after them.
    pub(super) async fn answer_now(
        &self,
        id: &str,
        until: tokio::time::Instant,
    ) -> (SessionState, Findings, ModelStatus) {
        loop {
            let (question, epoch) = {
                let sessions = self.lock();
                let Some(entry) = sessions.get(id) else {
                    return (SessionState::new(id), Findings::new(), ModelStatus::None);
                };
                let question = (self.config.extract && self.engine.is_some())
                    .then(|| entry.unasked().first().and_then(|c| extract::question(c)))
                    .flatten();
                match question {
                    Some(q) if tokio::time::Instant::now() < until => (q, entry.epoch),
                    _ => return (entry.state.clone(), entry.findings(), entry.model_status()),
                }
            };
            match self.ask(&question, id, epoch, until, &|| false).await {
                Some(answer) => self.update(id, epoch, |e| e.record(&question.call_id, answer)),
                None => {
                    let sessions = self.lock();
                    if let Some(entry) = sessions.get(id) {
                        return (entry.state.clone(), entry.findings(), entry.model_status());
                    }
                }
            }
        }
    }

    /// Records an answer, or its part, on the session `id` (of `epoch`),
    /// and tells the session's watchers.
    fn update(&self, id: &str, epoch: u64, record: impl FnOnce(&mut Entry)) {
        {
            let mut sessions = self.lock();
            let Some(entry) = sessions.get_mut(id).filter(|e| e.epoch == epoch) else {
                return;
            };
            record(entry);
        }
        self.changed(super::Change::Updated(id.to_owned()));
    }
}
