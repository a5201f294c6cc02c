//! `evolve-hud hook <name>`: the opencode-evolve hook protocol, forwarded to
//! the running sidecar. Evolve runs the hook with the hook name in argv and
//! one JSON object on stdin; the answer is JSONL on stdout, one object per
//! result key, with `{"log": …}` lines as debug output. Exit code 0 means
//! success.
//!
//! Observational hooks (`tool_after`, `observe_message`) never fail the
//! caller: when the sidecar is down they log and exit 0. The others exit
//! non-zero with one line on stderr. Hooks this adapter does not handle
//! answer nothing and exit 0, as evolve expects.

use crate::cli::HookArgs;
use crate::client::{Sidecar, Synced, Trouble};
use anyhow::anyhow;
use evolve_hud_api::{CompactionRequest, HeartbeatRequest, HudView, SessionEvent, SyncRequest};
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use std::io::{Read, Write};
use std::time::Duration;

/// What a hook wrote, before it goes out as JSONL.
#[derive(Debug, Default)]
pub struct Output {
    pub logs: Vec<String>,
    pub result: Map<String, Value>,
}

impl Output {
    fn log(&mut self, line: impl Into<String>) {
        self.logs.push(line.into());
    }

    fn set(&mut self, key: &str, value: Value) {
        self.result.insert(key.to_owned(), value);
    }

    /// JSONL: the log lines, then one line per result key.
    pub fn to_jsonl(&self) -> String {
        let mut out = String::new();
        for l in &self.logs {
            out.push_str(&json!({ "log": l }).to_string());
            out.push('\n');
        }
        for (k, v) in &self.result {
            let mut line = Map::new();
            line.insert(k.clone(), v.clone());
            out.push_str(&Value::Object(line).to_string());
            out.push('\n');
        }
        out
    }
}

/// Tools this adapter offers through `discover` and runs in `execute_tool`.
fn tools() -> Value {
    json!([
        {
            "name": "hud_show",
            "description": "show the evolve-hud HUD of this session: the goal, recent tool calls with their outcome, files touched and open problems, as recorded from the session's events",
            "parameters": {}
        },
        {
            "name": "hud_sessions",
            "description": "list the sessions the evolve-hud sidecar tracks, with their tool-call counts and idle times",
            "parameters": {}
        }
    ])
}

const OBSERVATIONAL: [&str; 3] = ["tool_before", "tool_after", "observe_message"];

/// What evolve sends on stdin, as far as these hooks read it.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Context {
    session: Option<SessionRef>,
    /// `compacting`: the transcript, as `{role, agent, parts}` entries.
    history: Option<Vec<HistoryEntry>>,
    #[serde(rename = "callID")]
    call_id: Option<String>,
    tool: Option<String>,
    args: Option<Value>,
    output: Option<Value>,
    /// `observe_message`: the message's tool parts.
    calls: Option<Vec<Value>>,
}

#[derive(Debug, Deserialize)]
struct SessionRef {
    id: String,
}

#[derive(Debug, Deserialize)]
struct HistoryEntry {
    role: Option<String>,
    #[serde(default)]
    parts: Vec<Value>,
}

/// An OpenCode message (`{info, parts}`) as the sidecar's sync reads it.
#[derive(Debug, Serialize)]
struct OpenCodeMessage<'a> {
    info: MessageInfo<'a>,
    parts: Vec<Value>,
}

#[derive(Debug, Serialize)]
struct MessageInfo<'a> {
    id: String,
    #[serde(rename = "sessionID")]
    session_id: &'a str,
    role: &'a str,
}

impl OpenCodeMessage<'_> {
    fn value(&self) -> Value {
        serde_json::to_value(self).unwrap_or_default()
    }
}

/// Runs one hook with the parsed stdin; `Err` for a failed non-observational hook.
pub fn handle(args: &HookArgs, ctx: &Value) -> anyhow::Result<Output> {
    let ctx: Context =
        serde_json::from_value(ctx.clone()).map_err(|e| anyhow!("stdin does not fit the hook protocol: {e}"))?;
    let (url, token) = (args.sidecar.url(), args.sidecar.token()?);
    let sidecar = |timeout| Sidecar::new(&url, token.clone(), timeout);
    crate::client::block_on(run_hook(&args.hook, args.deadline_ms, ctx, sidecar))?
}

async fn run_hook(
    hook: &str,
    deadline_ms: u64,
    ctx: Context,
    sidecar: impl Fn(Duration) -> Result<Sidecar, Trouble>,
) -> anyhow::Result<Output> {
    let mut out = Output::default();
    let session = ctx.session.as_ref().map(|s| s.id.as_str());
    let quick = Duration::from_secs(2);
    match hook {
        "discover" => {
            out.set("name", json!("evolve-hud"));
            out.set("tools", tools());
        }
        "heartbeat" => {
            let request = HeartbeatRequest {
                exclude: Vec::new(),
                deadline_ms: Some(deadline_ms),
            };
            let reply = sidecar(quick)?.heartbeat(&request).await?;
            out.log(format!("heartbeat: model {}", reply.model_status));
            out.set("system", json!(reply.system));
            out.set("user", json!(reply.user));
        }
        "compacting" => {
            let id = session.ok_or_else(|| anyhow!("compacting needs session.id"))?;
            let sidecar = sidecar(quick)?;
            if let Some(history) = &ctx.history {
                let messages = history_messages(id, history);
                let count = messages.len();
                let request = SyncRequest {
                    session_id: id.to_owned(),
                    messages,
                    full: true,
                    wait_ms: 0,
                    context: None,
                };
                let synced = sidecar.sync(&request).await?;
                out.log(format!(
                    "compacting: synced {count} messages ({})",
                    synced_words(&synced)
                ));
            }
            let request = CompactionRequest {
                deadline_ms: Some(deadline_ms),
            };
            let reply = sidecar.compaction(id, &request).await?;
            out.log(format!("compacting: model {}", reply.model_status));
            out.set("prompt", json!(reply.prompt));
        }
        "tool_before" => {
            // The only hook that carries the call's input (`tool_after` has
            // none): sent as a running tool part, which the completed call
            // from `tool_after` then keeps.
            let Some(id) = session else {
                out.log("tool_before without session.id; skipped");
                return Ok(out);
            };
            let part = json!({
                "type": "tool",
                "callID": ctx.call_id,
                "tool": ctx.tool,
                "state": { "status": "running", "input": ctx.args.unwrap_or_else(|| json!({})) },
            });
            match sync_calls(&sidecar(quick)?, id, vec![part]).await {
                Ok(view) => out.log(format!("tool_before: forwarded (HUD version {})", view.version)),
                Err(e) => out.log(format!("tool_before: not forwarded: {e}")),
            }
        }
        "tool_after" => {
            let (Some(id), Some(call_id), Some(tool)) = (session, ctx.call_id, ctx.tool) else {
                out.log("tool_after without session.id, callID or tool; skipped");
                return Ok(out);
            };
            let event = SessionEvent::ToolExecuted {
                session_id: id.to_owned(),
                call_id,
                tool,
                args: ctx.args.unwrap_or_else(|| json!({})),
                output: ctx.output.map(|o| match o {
                    Value::String(text) => text,
                    other => other.to_string(),
                }),
                metadata: None,
                clipped: None,
            };
            match sidecar(quick)?.event(&event).await {
                Ok(ack) => out.log(format!("tool_after: forwarded (session known: {})", ack.known)),
                Err(e) => out.log(format!("tool_after: not forwarded: {e}")),
            }
        }
        "observe_message" => {
            let (Some(id), Some(calls)) = (session, ctx.calls) else {
                out.log("observe_message without session.id or calls; skipped");
                return Ok(out);
            };
            let count = calls.len();
            match sync_calls(&sidecar(quick)?, id, calls).await {
                Ok(view) => out.log(format!(
                    "observe_message: {count} calls forwarded (HUD version {})",
                    view.version
                )),
                Err(e) => out.log(format!("observe_message: not forwarded: {e}")),
            }
        }
        "execute_tool" => {
            let sidecar = sidecar(Duration::from_secs(5))?;
            let result = match ctx.tool.as_deref().unwrap_or_default() {
                "hud_show" => {
                    let id = session.ok_or_else(|| anyhow!("hud_show needs session.id"))?;
                    match sidecar.hud(id).await? {
                        Some(view) => view.hud,
                        None => format!("no HUD for session {id} yet"),
                    }
                }
                "hud_sessions" => {
                    let sessions = sidecar.sessions().await?;
                    if sessions.is_empty() {
                        "no sessions tracked".to_owned()
                    } else {
                        sessions
                            .iter()
                            .map(|s| format!("{}: {} tool calls, idle {} ms", s.session_id, s.tool_calls, s.idle_ms))
                            .collect::<Vec<_>>()
                            .join("\n")
                    }
                }
                other => format!("unknown tool: {other}"),
            };
            out.set("result", json!(result));
        }
        other => out.log(format!("hook {other} is not handled by evolve-hud")),
    }
    Ok(out)
}

fn synced_words(synced: &Synced) -> String {
    match synced {
        Synced::Hud(view) => format!("HUD version {}", view.version),
        Synced::Unknown => "the sidecar did not take it".to_owned(),
    }
}

/// Syncs tool parts as one assistant message; a session the sidecar does
/// not hold starts from them.
async fn sync_calls(sidecar: &Sidecar, id: &str, parts: Vec<Value>) -> Result<HudView, Trouble> {
    let message = OpenCodeMessage {
        info: MessageInfo {
            id: "evolve-observed".to_owned(),
            session_id: id,
            role: "assistant",
        },
        parts,
    };
    let request = SyncRequest {
        session_id: id.to_owned(),
        messages: vec![message.value()],
        full: false,
        wait_ms: 0,
        context: None,
    };
    sidecar.sync_or_start(request).await
}

/// Evolve's history entries (`{role, agent, parts}`) as OpenCode messages.
fn history_messages(session: &str, history: &[HistoryEntry]) -> Vec<Value> {
    history
        .iter()
        .enumerate()
        .filter_map(|(i, entry)| {
            let message = OpenCodeMessage {
                info: MessageInfo {
                    id: format!("evolve-history-{i}"),
                    session_id: session,
                    role: entry.role.as_deref()?,
                },
                parts: entry.parts.clone(),
            };
            Some(message.value())
        })
        .collect()
}

/// The command: reads stdin, runs the hook, writes JSONL. Returns the exit code.
pub fn run(args: &HookArgs) -> std::process::ExitCode {
    let observational = OBSERVATIONAL.contains(&args.hook.as_str());
    let mut input = String::new();
    let ctx = std::io::stdin()
        .read_to_string(&mut input)
        .map_err(anyhow::Error::from)
        .and_then(|_| match input.trim() {
            "" => Ok(json!({})),
            text => match crate::json::from_slice::<Value>(text.as_bytes()) {
                Ok(v) if v.is_object() => Ok(v),
                Ok(_) => Err(anyhow!("stdin must hold one JSON object")),
                Err(e) => Err(anyhow!("stdin is not JSON: {e}")),
            },
        });
    let outcome = ctx.and_then(|ctx| handle(args, &ctx));
    let (output, failure) = match outcome {
        Ok(out) => (out, None),
        Err(e) if observational => {
            let mut out = Output::default();
            out.log(format!("{}: {e:#}", args.hook));
            (out, None)
        }
        Err(e) => (Output::default(), Some(e)),
    };
    let _ = std::io::stdout().lock().write_all(output.to_jsonl().as_bytes());
    match failure {
        None => std::process::ExitCode::SUCCESS,
        Some(e) => {
            eprintln!("evolve-hud hook {}: {e:#}", args.hook);
            std::process::ExitCode::FAILURE
        }
    }
}
