//! What the HUD's API answers: a session's HUD, its listing, and the
//! compaction and heartbeat texts.

use super::entry::ModelStatus;
use serde::{Deserialize, Serialize};

/// What a sync or a GET returns.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct HudView {
    pub session_id: String,
    pub version: u64,
    pub hud: String,
    pub tokens: usize,
    /// `none`, `pending`, `ready`, or `rejected` with the reason.
    pub model_status: ModelStatus,
    /// Entries that were not OpenCode messages and were skipped.
    #[serde(default)]
    pub skipped: usize,
}

/// What `POST /v1/hud/{session}/compaction` returns.
#[derive(Debug, Clone, Serialize)]
pub struct CompactionView {
    pub session_id: String,
    /// The facts (and the model's verified findings) in the template's
    /// sections, to add to a prompt.
    pub text: String,
    /// A complete compaction prompt holding `text`, to replace one.
    pub prompt: String,
    /// The model's part: `none`, `ready`, or `rejected` with the reason (see [`ModelStatus`]).
    pub model_status: ModelStatus,
    pub ms: u64,
}

/// What `POST /v1/heartbeat` returns.
#[derive(Debug, Clone, Serialize)]
pub struct HeartbeatView {
    pub system: Vec<String>,
    pub user: String,
    /// The sessions it describes, the one needing attention first.
    pub sessions: Vec<String>,
    /// The model's part, for the lead session.
    pub model_status: ModelStatus,
    pub ms: u64,
}

/// A session as listed.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SessionListing {
    pub session_id: String,
    pub version: u64,
    /// The user's latest request, clipped to [`GOAL_CHARS`].
    pub goal: Option<String>,
    pub tool_calls: usize,
    /// Of them, the failed ones (failed commands, tool errors).
    pub failed_calls: usize,
    /// Failures not yet followed by a pass, as the HUD lists them.
    pub open_problems: usize,
    pub model_status: ModelStatus,
    pub bytes: usize,
    /// Since the last sync or event.
    pub idle_ms: u64,
    /// Since the agent went idle (`session.idle`), while it stays idle.
    pub agent_idle_ms: Option<u64>,
}

/// Longest goal in a [`SessionListing`].
pub const GOAL_CHARS: usize = 120;
