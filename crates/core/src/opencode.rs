//! The parts of OpenCode's message shape the HUD reads
//! (`experimental.chat.messages.transform`'s `output.messages`, 1.18.x).
//! Unknown fields and part types are accepted and ignored.

use serde::Deserialize;

use evolve_hud_api::ClipInfo;
use serde_json::Value;

/// One entry of the messages array: `{info, parts}`.
#[derive(Debug, Clone, Deserialize)]
pub struct Message {
    pub info: Info,
    #[serde(default)]
    pub parts: Vec<Part>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Info {
    pub id: String,
    #[serde(default, rename = "sessionID")]
    pub session_id: Option<String>,
    pub role: Role,
    #[serde(default)]
    pub time: Option<Time>,
    /// Assistant messages: the working directory and project root.
    #[serde(default)]
    pub path: Option<PathInfo>,
    /// Assistant messages written by compaction.
    #[serde(default)]
    pub summary: Option<Value>,
}

/// Who wrote a message; the HUD reads the user's requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    User,
    Assistant,
    /// A role this side does not know.
    #[serde(other)]
    Other,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct Time {
    #[serde(default)]
    pub created: Option<f64>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct PathInfo {
    #[serde(default)]
    pub cwd: Option<String>,
    #[serde(default)]
    pub root: Option<String>,
}

/// A message part. Only the kinds the HUD uses are typed.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum Part {
    Text {
        #[serde(default)]
        id: Option<String>,
        #[serde(default)]
        text: String,
        #[serde(default)]
        synthetic: Option<bool>,
    },
    Tool {
        #[serde(default)]
        id: Option<String>,
        #[serde(rename = "callID")]
        call_id: String,
        tool: String,
        state: Box<ToolState>,
    },
    Compaction {
        #[serde(default)]
        id: Option<String>,
    },
    #[serde(other)]
    Other,
}

/// `state` of a tool part.
#[derive(Debug, Clone, Deserialize)]
pub struct ToolState {
    pub status: ToolStatus,
    #[serde(default)]
    pub input: Value,
    #[serde(default)]
    pub output: Option<String>,
    #[serde(default)]
    pub error: Option<String>,
    #[serde(default)]
    pub metadata: Option<Value>,
    #[serde(default)]
    pub time: Option<ToolTime>,
    /// Set by a client that sent only the output's head and tail.
    #[serde(default)]
    pub clipped: Option<ClipInfo>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolStatus {
    Pending,
    Running,
    Completed,
    Error,
}

impl ToolStatus {
    /// Later states win when the same call arrives twice, in any order.
    pub fn rank(self) -> u8 {
        match self {
            ToolStatus::Pending => 0,
            ToolStatus::Running => 1,
            ToolStatus::Completed | ToolStatus::Error => 2,
        }
    }
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct ToolTime {
    #[serde(default)]
    pub start: Option<f64>,
    #[serde(default)]
    pub end: Option<f64>,
}
