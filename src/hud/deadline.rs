//! The texts asked for with a deadline: the compaction context and the
//! heartbeat prompt, with the model's verified findings as far as they can
//! be had before it.

use super::store::Held;
use super::ModelStatus;
use super::{Hud, HudError};
use evolve_hud_api::{CompactionView, HeartbeatView};
use evolve_hud_core::compose;
use evolve_hud_core::extract::Findings;
use evolve_hud_core::session::SessionState;
use std::sync::Arc;
use std::time::{Duration, Instant};

impl Hud {
    /// The compaction context for a session: its facts in the sections of
    /// OpenCode's compaction template, with the model's verified findings on
    /// its open problems, as far as they can be had before `deadline`.
    pub async fn compaction(&self, id: &str, deadline: Duration) -> Result<CompactionView, HudError> {
        let started = Instant::now();
        let until = tokio::time::Instant::now() + deadline;
        if self.store.held(id).is_none() {
            return Err(HudError::NotFound(id.to_owned()));
        }
        let (state, findings, model_status) = self.refresher.answer_now(id, until).await;
        let text = compose::compaction(&state, &findings);
        Ok(CompactionView {
            session_id: id.to_owned(),
            prompt: compose::compaction_prompt(&text),
            text,
            model_status,
            ms: started.elapsed().as_millis() as u64,
        })
    }

    /// The heartbeat prompt from the most recently active sessions (all but
    /// `exclude`): facts for the system prompt, and a user text leading with
    /// what needs attention, with the model's verified findings for the lead
    /// session as far as they can be had before `deadline`.
    pub async fn heartbeat(&self, exclude: &[String], deadline: Duration) -> HeartbeatView {
        const SESSIONS: usize = 5;
        let started = Instant::now();
        let until = tokio::time::Instant::now() + deadline;
        // (state, quiet seconds, agent idle, findings) of the most recently
        // active sessions: ranked by a look at each, then only those
        // copied out of their locks.
        let mut recent: Vec<(SessionState, u64, bool, Findings)> = {
            let held: Vec<Arc<Held>> = self.store.all_but(exclude);
            let mut ranked: Vec<(Instant, &Arc<Held>)> = held
                .iter()
                .map(|h| {
                    let e = h.lock();
                    (e.idle_since.unwrap_or(e.last_used), h)
                })
                .collect();
            // Most recent first, by the instant (whole seconds would tie).
            ranked.sort_by_key(|(quiet_since, _)| std::cmp::Reverse(*quiet_since));
            ranked.truncate(SESSIONS);
            ranked
                .into_iter()
                .map(|(_, h)| {
                    let e = h.lock();
                    let quiet_since = e.idle_since.unwrap_or(e.last_used);
                    (
                        e.state.clone(),
                        quiet_since.elapsed().as_secs(),
                        e.idle_since.is_some(),
                        e.findings(),
                    )
                })
                .collect()
        };
        // The session that needs attention first leads.
        if let Some(i) = recent.iter().position(|(s, ..)| !s.problems().open.is_empty()) {
            recent[..=i].rotate_right(1);
        }
        let model_status = match recent.first_mut() {
            None => ModelStatus::None,
            Some(lead) => {
                let (state, findings, status) = self.refresher.answer_now(&lead.0.id, until).await;
                if state.id == lead.0.id && !state.calls.is_empty() {
                    lead.0 = state;
                    lead.3 = findings;
                }
                status
            }
        };
        let quiet: Vec<compose::Quiet> = recent
            .iter()
            .map(|(state, quiet_secs, agent_idle, findings)| compose::Quiet {
                state,
                quiet_secs: *quiet_secs,
                agent_idle: *agent_idle,
                findings,
            })
            .collect();
        HeartbeatView {
            system: compose::heartbeat_system(&quiet),
            user: compose::heartbeat_user(&quiet),
            sessions: quiet.iter().map(|q| q.state.id.clone()).collect(),
            model_status,
            ms: started.elapsed().as_millis() as u64,
        }
    }
}
