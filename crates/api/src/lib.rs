//! evolve-hud's wire: what crosses a boundary, as types, and nothing that
//! does I/O (no async runtime, no HTTP stack, no model).
//!
//! The crate root is the sidecar's own HTTP API: every request and answer,
//! `/health`, and the `/v1/events` stream. The server answers with them and
//! every client (evolve-hud's `client::Sidecar`) reads and writes them;
//! nothing else names a field. The JSON Schemas in `docs/api.schema.json`
//! are generated from them ([`schemas`]), and a test keeps that file
//! current.
//!
//! The OpenAI-compatible part (`/v1/chat/completions`, `/v1/models`, the
//! error body) is [`openai`]'s; model work as engines take it is
//! [`model`]'s; [`clean`] is the one cleaner of outside text that all of
//! them use.
//!
//! It is the lowest layer: the crates above build on it, and it on none of
//! them.
//!
//! ```compile_fail,E0433
//! let _ = evolve_hud_core::render::render;
//! ```

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::net::IpAddr;

pub mod clean;
pub mod model;
pub mod openai;
pub mod routes;

/// The API's paths; each route's is in [`routes::ROUTES`].
pub mod path {
    pub const HEALTH: &str = "/health";
    pub const IDENTITY: &str = "/v1/identity";
    pub const METRICS: &str = "/metrics";
    pub const MODELS: &str = "/v1/models";
    pub const SYNC: &str = "/v1/hud/sync";
    pub const EVENT: &str = "/v1/hud/event";
    pub const SESSIONS: &str = "/v1/hud";
    /// A session, by the server's pattern ([`session`] makes one).
    pub const SESSION: &str = "/v1/hud/{session}";
    pub const COMPACTION: &str = "/v1/hud/{session}/compaction";
    pub const HEARTBEAT: &str = "/v1/heartbeat";
    pub const STATUS: &str = "/v1/status";
    pub const EVENTS: &str = "/v1/events";
    pub const CHAT: &str = "/v1/chat/completions";

    /// The path of session `id` (`/v1/hud/{id}`) followed by `rest`, the id
    /// percent-encoded: session ids are the agent's, and may hold `/`, `?`,
    /// `#` or spaces; dots too, so `..` is never a dot segment.
    pub fn session(id: &str, rest: &str) -> String {
        const SEGMENT: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
            .remove(b'-')
            .remove(b'_')
            .remove(b'~');
        format!(
            "{SESSIONS}/{}{rest}",
            percent_encoding::utf8_percent_encode(id, SEGMENT)
        )
    }

    /// `POST` here for a session's compaction text.
    pub fn compaction(id: &str) -> String {
        session(id, "/compaction")
    }

    /// The identity challenge with `nonce`.
    pub fn identity(nonce: &str) -> String {
        format!("{IDENTITY}?nonce={nonce}")
    }
}

/// Whether a Host (`name`, `name:port`, `[v6]:port`) names this machine's
/// loopback: the only hosts the API answers unless bound elsewhere on
/// purpose, and those a client may ask who listens on.
pub fn loopback_host(host: &str) -> bool {
    if let Ok(ip) = host.parse::<IpAddr>() {
        // A bare address, IPv6 included (`::1`).
        return ip.is_loopback();
    }
    let name = match host.strip_prefix('[') {
        // [::1]:8377
        Some(rest) => rest.split(']').next().unwrap_or_default(),
        None => match host.rsplit_once(':') {
            Some((name, port)) if port.chars().all(|c| c.is_ascii_digit()) => name,
            _ => host,
        },
    };
    let name = name.trim_end_matches('.').to_ascii_lowercase();
    name == "localhost" || name.ends_with(".localhost") || name.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

// ---- requests ----

/// `POST /v1/hud/sync`: the session's messages new since the last sync
/// (OpenCode's `{info, parts}` entries), or all of them since the last
/// compaction with `full: true`. A sync that is not `full` for a session
/// the sidecar does not hold is answered 409: send it again with `full`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct SyncRequest {
    pub session_id: String,
    pub messages: Vec<Value>,
    #[serde(default)]
    pub full: bool,
    /// Longest wait (ms, at most [`MAX_SYNC_WAIT_MS`]) for the model's
    /// findings when a question about the session's newest call is pending,
    /// so the request the agent sends next carries them. 0 (the default):
    /// never waits.
    #[serde(default)]
    #[schemars(range(max = MAX_SYNC_WAIT_MS))]
    pub wait_ms: u64,
    /// What the agent's last request took of its model's context, as
    /// OpenCode reported it; the HUD shows it in one line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<ContextUse>,
}

/// The tokens the agent's last request used (input, cache reads and
/// writes), the model's context limit where known, and the tokens masking
/// took out of that request (estimated).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ContextUse {
    pub used: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u64>,
    #[serde(default)]
    pub masked: u64,
}

/// The longest a sync may wait for the model's findings.
pub const MAX_SYNC_WAIT_MS: u64 = 10_000;

/// The port a sidecar serves on when nothing names another.
pub const DEFAULT_PORT: u16 = 8377;

/// `POST /v1/hud/event`: an event the plugin forwards from OpenCode's hooks.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type")]
pub enum SessionEvent {
    /// `tool.execute.after`: a tool finished (OpenCode does not send this for
    /// tools that end in error; those arrive with the next sync).
    #[serde(rename = "tool.execute.after")]
    ToolExecuted {
        session_id: String,
        call_id: String,
        tool: String,
        #[serde(default)]
        args: Value,
        #[serde(default)]
        output: Option<String>,
        #[serde(default)]
        metadata: Option<Value>,
        #[serde(default)]
        clipped: Option<ClipInfo>,
    },
    /// `todo.updated`: the session's whole todo list.
    #[serde(rename = "todo.updated")]
    TodoUpdated {
        session_id: String,
        #[serde(default)]
        todos: Value,
    },
    /// `session.idle`: the agent finished its turn.
    #[serde(rename = "session.idle")]
    Idle { session_id: String },
    /// `session.compacted`: the transcript now starts at a summary.
    #[serde(rename = "session.compacted")]
    Compacted { session_id: String },
    /// `session.deleted`.
    #[serde(rename = "session.deleted")]
    Deleted { session_id: String },
}

impl SessionEvent {
    pub fn session_id(&self) -> &str {
        match self {
            SessionEvent::ToolExecuted { session_id, .. }
            | SessionEvent::TodoUpdated { session_id, .. }
            | SessionEvent::Idle { session_id }
            | SessionEvent::Compacted { session_id }
            | SessionEvent::Deleted { session_id } => session_id,
        }
    }
}

/// How a client clipped a tool output before sending it: `output` is the
/// first `head` bytes of the original followed by its last bytes; the
/// original had `bytes` bytes in `lines` lines; `middle` holds the lines
/// of the part left out that say something failed. Checked against the
/// text and held to this side's rule before use
/// (evolve-hud-core's `text::Clipped::from_client`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ClipInfo {
    pub head: usize,
    pub bytes: usize,
    pub lines: usize,
    #[serde(default)]
    pub middle: Vec<String>,
}

/// `POST /v1/hud/{session}/compaction`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CompactionRequest {
    /// How long the model's part may take (default [`DEFAULT_DEADLINE_MS`],
    /// at most [`MAX_DEADLINE_MS`]); past it, the facts-only text is returned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline_ms: Option<u64>,
}

/// `POST /v1/heartbeat`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HeartbeatRequest {
    /// Sessions to leave out, such as the heartbeat's own.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub exclude: Vec<String>,
    /// As [`CompactionRequest::deadline_ms`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline_ms: Option<u64>,
}

/// Default and longest deadline for the model's part of a compaction or
/// heartbeat text.
pub const DEFAULT_DEADLINE_MS: u64 = 8_000;
pub const MAX_DEADLINE_MS: u64 = 120_000;

// ---- answers ----

/// What a sync or `GET /v1/hud/{session}` answers: the session's HUD.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
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
    /// Tool outputs the facts have superseded, oldest first, each with the
    /// stub that may stand for it in the agent's request.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub masks: Vec<MaskedOutput>,
}

/// A tool output the facts have superseded (a later run of the same check
/// passed; the file read was read again or changed since), or the content
/// a `write` sent once the next call on the file read it whole, and the
/// stub that stands for it in the agent's request: what it said, what
/// superseded it, and how to get it back. The same call always gets the
/// same stub.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct MaskedOutput {
    /// The tool call's id (OpenCode's `callID`).
    pub call_id: String,
    /// The whole output's size (for an input, its size as the sync carried
    /// it: a long one was shortened).
    pub bytes: usize,
    pub stub: String,
    /// The input field the stub stands for (`content`); absent: the output.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<String>,
    /// For a read masked because the file changed since: the HUD's line of
    /// the call that changed it. The text given back is the text from
    /// before that change, and is marked so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before: Option<String>,
}

/// The model's part of a HUD or text: `{"state": "ready"}`, or
/// `{"state": "rejected", "reason": "…"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum ModelStatus {
    /// Nothing to ask the model (or no model, or the model part is off).
    None,
    /// A question is waiting or being answered.
    Pending,
    /// Verified findings are shown.
    Ready,
    /// The latest answer held nothing verifiable, or failed.
    Rejected { reason: String },
}

impl std::fmt::Display for ModelStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ModelStatus::None => f.write_str("none"),
            ModelStatus::Pending => f.write_str("pending"),
            ModelStatus::Ready => f.write_str("ready"),
            ModelStatus::Rejected { reason } => write!(f, "rejected: {reason}"),
        }
    }
}

/// `POST /v1/hud/event`'s answer (202): whether the session was held.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct EventAck {
    pub known: bool,
}

/// `GET /v1/hud`: the sessions held, most recently active first.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct SessionList {
    pub sessions: Vec<SessionListing>,
}

/// A session as listed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
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

/// `POST /v1/hud/{session}/compaction`'s answer.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct CompactionView {
    pub session_id: String,
    /// The facts (and the model's verified findings) in the template's
    /// sections, to add to a prompt.
    pub text: String,
    /// A complete compaction prompt holding `text`, to replace one.
    pub prompt: String,
    /// The model's part: `none`, `ready`, or `rejected` with the reason.
    pub model_status: ModelStatus,
    pub ms: u64,
}

/// `POST /v1/heartbeat`'s answer.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct HeartbeatView {
    pub system: Vec<String>,
    pub user: String,
    /// The sessions it describes, the one needing attention first.
    pub sessions: Vec<String>,
    /// The model's part, for the lead session.
    pub model_status: ModelStatus,
    pub ms: u64,
}

/// `GET /v1/identity?nonce=`'s answer: HMAC-SHA256 with the user's secret
/// over the port and the nonce (evolve-hud's `secret::Secret::proof`).
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Identity {
    pub proof: String,
}

/// `GET /health` with the token: 200 once the engine can take work, 503
/// with the reason otherwise, and what the sidecar serves. Without the
/// token the answer is [`PublicHealth`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Health {
    #[serde(flatten)]
    pub state: HealthState,
    /// The name the API serves the model under.
    pub model: String,
    /// `local`, `remote` or `none`.
    pub engine: String,
    /// The engine's own details.
    #[serde(flatten)]
    pub details: Option<EngineDetails>,
    /// The rule clients clip tool outputs by.
    pub hud_clip: ClipRule,
}

impl Health {
    /// Whether the engine can take work: a released model is ready, the
    /// next model work loads it.
    pub fn ready(&self) -> bool {
        self.state.ready()
    }

    /// What a request without the token is told: the state alone, a
    /// failure's reason (which may name the model's path, the engine's
    /// host) left out.
    pub fn public(&self) -> PublicHealth {
        let state = match &self.state {
            HealthState::Failed { .. } => HealthState::Failed {
                reason: PublicHealth::REASON_WITHHELD.to_owned(),
            },
            state => state.clone(),
        };
        PublicHealth { state }
    }
}

/// `GET /health` without the token: whether the sidecar can take work, and
/// nothing a stranger may not know (no paths, no engine, no activity). A
/// client asks it before it has checked the server's identity, so it sends
/// no token; it asks [`Health`] (with the token) once the server proved it
/// is the user's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PublicHealth {
    #[serde(flatten)]
    pub state: HealthState,
}

impl PublicHealth {
    /// A failure's reason, as told without the token.
    pub const REASON_WITHHELD: &'static str =
        "the reason is told with the token: `evolve-hud doctor` or `evolve-hud status`";

    pub fn ready(&self) -> bool {
        self.state.ready()
    }
}

/// `/health`'s body: [`Health`] with the token, [`PublicHealth`] without.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum HealthAnswer {
    Full(Health),
    Public(PublicHealth),
}

/// Whether the engine can take work.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum HealthState {
    Loading,
    Ready,
    /// The local model was released after `--keep-alive` without model
    /// work; the next model work loads it again (and waits for it).
    Released,
    Failed {
        reason: String,
    },
}

impl HealthState {
    /// Whether the engine can take work: a released model is ready, the
    /// next model work loads it.
    pub fn ready(&self) -> bool {
        matches!(self, HealthState::Ready | HealthState::Released)
    }
}

/// The engine's own part of `/health`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum EngineDetails {
    /// No model could be had (`serve --facts-without-model`): the HUD's
    /// facts are served, and the sidecar restarts itself once the model is
    /// on disk.
    Missing {
        /// Why there is no model.
        missing: String,
        /// The one command that gets it.
        fix: String,
    },
    /// The local model is loading.
    Loading {
        /// The share of its weights loaded, 0 to 1.
        progress: f32,
    },
    Local {
        /// Times the model thread rebuilt its context after a panic.
        restarts: u32,
        /// Why it last did.
        last_fault: Option<String>,
        /// What ggml's CPU back-end was compiled with.
        cpu_features: Vec<String>,
        /// The CPU module ggml chose at start (`zen4`, `haswell`, `sse42`,
        /// …) where its back-ends are modules, as in the portable build;
        /// absent where the back-end is linked in.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cpu_variant: Option<String>,
    },
    Remote {
        /// The engine's base URL, its credentials (user and password,
        /// secret-looking query values) masked as `***`.
        engine_url: String,
        /// llama-server's slot count, when it said.
        slots: Option<u32>,
        in_flight: usize,
    },
}

/// How clients clip a long tool output before they send it: the first
/// `head` and last `tail` bytes, and from the part between, the lines that
/// hold one of `middle.words` (see evolve-hud-core's `text`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ClipRule {
    pub head: usize,
    pub tail: usize,
    pub middle: MiddleRule,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct MiddleRule {
    /// Words (lowercase, whole words) that make a line worth keeping.
    pub words: Vec<String>,
    /// At most this many lines, of at most `line_bytes` bytes each, and
    /// `bytes` in all.
    pub lines: usize,
    pub bytes: usize,
    pub line_bytes: usize,
}

/// `GET /v1/status`, and the `status` event.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct StatusView {
    /// Whether the engine can take work (`/health` answers 200).
    pub ready: bool,
    /// `/health`'s body.
    pub health: Health,
    /// Requests waiting for the engine.
    pub queue: usize,
    pub activity: Activity,
    /// Most recently active first.
    pub sessions: Vec<SessionListing>,
}

/// Recent model work: the last completions' speed and the last HUD answers'
/// outcome (Prometheus has the totals).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Activity {
    /// Generated tokens per second over the latest completions.
    pub generation_tps: Option<f64>,
    /// How many completions that covers.
    pub completions: usize,
    /// Of the latest HUD answers: notes shown, and answers with nothing verifiable.
    pub notes_shown: usize,
    pub notes_rejected: usize,
}

// ---- the event stream ----

/// How often the event stream sends `status`.
pub const STATUS_EVERY: std::time::Duration = std::time::Duration::from_secs(2);

/// One server-sent event of `GET /v1/events`; the SSE event name is
/// [`StreamEvent::name`], the data its JSON.
///
/// - `status`: at once, every 2 s, and whenever the engine's health changes;
/// - `hud`: every session at once, then one whenever a session's HUD text
///   or model status changes;
/// - `removed`: when a session is dropped.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "event", content = "data", rename_all = "snake_case")]
pub enum StreamEvent {
    Status(Box<StatusView>),
    Hud(Box<HudEvent>),
    Removed(Removed),
}

impl StreamEvent {
    pub fn name(&self) -> &'static str {
        match self {
            StreamEvent::Status(_) => "status",
            StreamEvent::Hud(_) => "hud",
            StreamEvent::Removed(_) => "removed",
        }
    }

    /// The event's data as JSON.
    pub fn data(&self) -> String {
        let data = match self {
            StreamEvent::Status(s) => serde_json::to_string(s),
            StreamEvent::Hud(h) => serde_json::to_string(h),
            StreamEvent::Removed(r) => serde_json::to_string(r),
        };
        data.unwrap_or_else(|_| "{}".to_owned())
    }

    /// The event named `name` with `data`; `None` for an event this build
    /// does not know (a newer sidecar's), an error for data that does not
    /// fit its name.
    pub fn parse(name: &str, data: &str) -> Option<Result<StreamEvent, serde_json::Error>> {
        let event = match name {
            "status" => serde_json::from_str(data).map(StreamEvent::Status),
            "hud" => serde_json::from_str(data).map(StreamEvent::Hud),
            "removed" => serde_json::from_str(data).map(StreamEvent::Removed),
            _ => return None,
        };
        Some(event)
    }
}

/// A `hud` event: the session's HUD as the agent gets it, and its listing.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct HudEvent {
    #[serde(flatten)]
    pub view: HudView,
    pub session: SessionListing,
}

/// A `removed` event.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Removed {
    pub session_id: String,
}

/// Every type of the API by name, as one JSON Schema document (draft
/// 2020-12) whose `$defs` hold each: `docs/api.schema.json`.
pub fn schemas() -> Value {
    let mut generator = schemars::generate::SchemaSettings::draft2020_12().into_generator();
    let mut roots = serde_json::Map::new();
    macro_rules! root {
        ($($t:ty),*) => {$(
            let name = <$t as JsonSchema>::schema_name();
            roots.insert(
                name.to_string(),
                serde_json::json!({ "$ref": format!("#/$defs/{name}") }),
            );
            generator.subschema_for::<$t>();
        )*};
    }
    root!(
        SyncRequest,
        SessionEvent,
        CompactionRequest,
        HeartbeatRequest,
        HudView,
        EventAck,
        SessionList,
        CompactionView,
        HeartbeatView,
        Identity,
        Health,
        StatusView,
        StreamEvent,
        crate::openai::ErrorBody
    );
    let defs = generator.take_definitions(true);
    serde_json::json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "evolve-hud sidecar API",
        "description": "Generated from crates/api/src/lib.rs (see the test api_schema::the_checked_in_schemas_are_what_the_types_generate); the endpoints are in docs/api.md.",
        "oneOf": roots.values().collect::<Vec<_>>(),
        "$defs": defs,
    })
}

#[cfg(test)]
mod tests {
    /// The plugin's `sessionPath` (plugin-shim/evolve-hud/sidecar.ts) is
    /// pinned to the same string in its own test.
    #[test]
    fn a_session_path_escapes_every_byte_but_unreserved_ones() {
        assert_eq!(
            super::path::session("a/b .. c!*'()é", "/compaction"),
            "/v1/hud/a%2Fb%20%2E%2E%20c%21%2A%27%28%29%C3%A9/compaction"
        );
    }
}
