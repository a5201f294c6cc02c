//! One session as the HUD holds it: its facts, the model's answers about
//! its calls, and where its refresh stands, as typed states.

use evolve_hud_api::ModelStatus;
use evolve_hud_core::extract::{self, Finding, Findings};
use evolve_hud_core::problems::MAX_PROBLEMS;
use evolve_hud_core::session::{self, SessionState};
use std::collections::{HashMap, HashSet};
use std::time::Instant;

/// What the model answered about one call's output: the outcome of one
/// question, and what the session keeps of it.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Reading {
    /// Verified findings.
    Found(Vec<Finding>),
    /// Nothing verifiable, and why.
    Rejected(String),
}

#[derive(Default, Clone, Copy, PartialEq, Eq)]
pub(super) enum Refresh {
    #[default]
    Idle,
    /// A refresh task is waiting or generating; `dirty` asks for another after it.
    Busy { dirty: bool },
}

pub(super) struct Entry {
    /// Unique per entry: a refresh loop of an evicted and re-created
    /// session sees a new epoch and ends.
    pub(super) epoch: u64,
    pub(super) state: SessionState,
    /// The model's answers, by call id: each call is asked about once.
    pub(super) readings: HashMap<String, Reading>,
    /// Items verified while an answer is still being written, by call id,
    /// until the whole answer is recorded.
    pub(super) written: HashMap<String, Vec<Finding>>,
    /// Findings accepted so far: the view version counts them with the facts.
    pub(super) accepted: u64,
    pub(super) refresh: Refresh,
    /// Calls whose question is with the engine now, whoever asked it (the
    /// background refresh, a compaction or a heartbeat): none is asked twice
    /// at once.
    pub(super) asking: HashSet<String>,
    pub(super) last_used: Instant,
    /// When the agent went idle; cleared by the next sync.
    pub(super) idle_since: Option<Instant>,
}

/// What a view is rendered from, copied out of the lock (the calls are
/// shared, so this is cheap) so rendering never holds up other sessions.
pub(super) struct Snapshot {
    pub(super) state: SessionState,
    pub(super) findings: Findings,
}

impl Entry {
    pub(super) fn new(id: &str, epoch: u64) -> Entry {
        Entry {
            epoch,
            state: SessionState::new(id),
            readings: HashMap::new(),
            written: HashMap::new(),
            accepted: 0,
            refresh: Refresh::Idle,
            asking: HashSet::new(),
            last_used: Instant::now(),
            idle_since: None,
        }
    }

    pub(super) fn snapshot(&self) -> Snapshot {
        Snapshot {
            state: self.state.clone(),
            findings: self.findings(),
        }
    }

    /// Verified findings of the calls still held. Rendering shows them only
    /// on their call's open problem, so a fixed problem takes them away.
    pub(super) fn findings(&self) -> Findings {
        if self.readings.is_empty() && self.written.is_empty() {
            return Findings::new();
        }
        self.state
            .calls
            .values()
            .filter_map(|call| match self.reading(call) {
                Some(Reading::Found(found)) => Some((call.call_id.clone(), found.clone())),
                Some(Reading::Rejected(_)) => None,
                None => Some((call.call_id.clone(), self.written.get(&call.call_id)?.clone())),
            })
            .collect()
    }

    /// The answer about `call`, or about an earlier run of the same command
    /// with the same output (a command retried unchanged is asked about once).
    pub(super) fn reading(&self, call: &session::ToolCall) -> Option<&Reading> {
        self.readings.get(&call.call_id).or_else(|| {
            self.readings.iter().find_map(|(id, reading)| {
                let twin = self.state.calls.get(id)?;
                (twin.command == call.command && twin.output == call.output).then_some(reading)
            })
        })
    }

    /// Derived from the open problems and the answers about them, so it
    /// never describes facts that have moved on.
    pub(super) fn model_status(&self) -> ModelStatus {
        // Busy with a question not yet answered. (A refresh can also be
        // busy waiting out its debounce after a compaction answered all.)
        if !self.asking.is_empty() || matches!(self.refresh, Refresh::Busy { .. }) && !self.unasked().is_empty() {
            return ModelStatus::Pending;
        }
        let problems = self.state.problems();
        let readings: Vec<&Reading> = problems
            .open
            .iter()
            .take(MAX_PROBLEMS)
            .filter_map(|p| self.reading(&p.call))
            .collect();
        if readings.iter().any(|r| matches!(r, Reading::Found(_))) {
            return ModelStatus::Ready;
        }
        match readings.first() {
            Some(Reading::Rejected(why)) => ModelStatus::Rejected { reason: why.clone() },
            _ => ModelStatus::None,
        }
    }

    /// Whether a question about the session's newest call is with the model
    /// or about to be: the failure the agent has just seen, whose findings
    /// its next request can still carry. A question about an older call has
    /// missed that request; waiting for it would hold every later one.
    pub(super) fn pending_on_newest(&self) -> bool {
        let Some(newest) = self
            .state
            .calls
            .values()
            .max_by(|a, b| a.start.total_cmp(&b.start).then(a.seen.cmp(&b.seen)))
        else {
            return false;
        };
        self.asking.contains(&newest.call_id)
            || matches!(self.refresh, Refresh::Busy { .. })
                && self.unasked().iter().any(|c| c.call_id == newest.call_id)
    }

    /// Calls worth a question that were not asked about yet, nor are being
    /// asked about now.
    pub(super) fn unasked(&self) -> Vec<&session::ToolCall> {
        extract::unasked(&self.state, &|call| {
            self.asking.contains(&call.call_id) || self.reading(call).is_some()
        })
    }

    /// Takes a refresh's outcome (the call asked about, and its findings or
    /// why there are none). Returns whether the refresh loop is done; it goes
    /// on when a change came in meanwhile, another call awaits a question,
    /// or the engine did not take the question (`retry`: it is asked again).
    pub(super) fn finish_refresh(&mut self, outcome: Option<(String, Reading)>, retry: bool) -> bool {
        let answered = outcome.is_some() || retry;
        if let Some((call, result)) = outcome {
            self.record(&call, result);
            let calls = &self.state.calls;
            self.readings.retain(|id, _| calls.contains_key(id));
            self.written.retain(|id, _| calls.contains_key(id));
        }
        if let Refresh::Busy { dirty: true } = self.refresh {
            self.refresh = Refresh::Busy { dirty: false };
            return false;
        }
        if answered && !self.unasked().is_empty() {
            return false;
        }
        self.refresh = Refresh::Idle;
        true
    }

    /// Takes the items about `call` verified so far while the model is
    /// still writing its answer: shown at once, while the question stays
    /// pending.
    pub(super) fn record_written(&mut self, call: &str, found: Vec<Finding>) {
        if self.state.calls.contains_key(call) {
            self.accepted += 1;
            self.written.insert(call.to_owned(), found);
        }
    }

    /// Takes the model's whole answer about `call`. The items verified
    /// while it was written stay when the rest fails; answers about calls
    /// no longer held are dropped with them.
    pub(super) fn record(&mut self, call: &str, result: Reading) {
        let written = self.written.remove(call);
        if !self.state.calls.contains_key(call) {
            return;
        }
        let reading = match (result, written) {
            (Reading::Found(found), written) => {
                if written.as_ref() != Some(&found) {
                    self.accepted += 1;
                }
                Reading::Found(found)
            }
            (Reading::Rejected(_), Some(written)) => Reading::Found(written),
            (rejected @ Reading::Rejected(_), None) => rejected,
        };
        self.readings.insert(call.to_owned(), reading);
    }

    /// Changes whenever the HUD's content does: with the facts, and when
    /// findings are accepted.
    pub(super) fn version(&self) -> u64 {
        self.state.version + self.accepted
    }
}
