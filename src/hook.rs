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
use crate::client::Sidecar;
use anyhow::{anyhow, bail};
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

/// Runs one hook with the parsed stdin; `Err` for a failed non-observational hook.
pub fn handle(args: &HookArgs, ctx: &Value) -> anyhow::Result<Output> {
    let mut out = Output::default();
    let session = ctx.pointer("/session/id").and_then(Value::as_str);
    let slow = Duration::from_millis(args.deadline_ms + 2_000);
    let (url, token) = (args.sidecar.url(), args.sidecar.token()?);
    let sidecar = |timeout| Sidecar::new(&url, token.clone(), timeout);
    match args.hook.as_str() {
        "discover" => {
            out.set("name", json!("evolve-hud"));
            out.set("tools", tools());
        }
        "heartbeat" => {
            let reply = sidecar(slow).ok("/v1/heartbeat", Some(&json!({ "deadline_ms": args.deadline_ms })))?;
            out.log(format!("heartbeat: model {}", model_words(&reply["model_status"])));
            out.set("system", reply["system"].clone());
            out.set("user", reply["user"].clone());
        }
        "compacting" => {
            let id = session.ok_or_else(|| anyhow!("compacting needs session.id"))?;
            let sidecar = sidecar(slow);
            if let Some(history) = ctx.get("history").and_then(Value::as_array) {
                let messages = history_messages(id, history);
                let (status, _) = sidecar.call(
                    "/v1/hud/sync",
                    Some(&json!({ "session_id": id, "messages": messages, "full": true })),
                )?;
                out.log(format!("compacting: synced {} messages ({status})", messages.len()));
            }
            let path = crate::client::session_path(id, "/compaction");
            let reply = sidecar.ok(&path, Some(&json!({ "deadline_ms": args.deadline_ms })))?;
            out.log(format!("compacting: model {}", model_words(&reply["model_status"])));
            out.set("prompt", reply["prompt"].clone());
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
                "callID": ctx.get("callID").cloned().unwrap_or(Value::Null),
                "tool": ctx.get("tool").cloned().unwrap_or(Value::Null),
                "state": { "status": "running", "input": ctx.get("args").cloned().unwrap_or(json!({})) },
            });
            match sync_calls(&sidecar(Duration::from_secs(2)), id, vec![part]) {
                Ok(status) => out.log(format!("tool_before: forwarded ({status})")),
                Err(e) => out.log(format!("tool_before: not forwarded: {e:#}")),
            }
        }
        "tool_after" => {
            let Some(id) = session else {
                out.log("tool_after without session.id; skipped");
                return Ok(out);
            };
            let event = json!({
                "type": "tool.execute.after", "session_id": id,
                "call_id": ctx.get("callID").cloned().unwrap_or(Value::Null),
                "tool": ctx.get("tool").cloned().unwrap_or(Value::Null),
                "args": ctx.get("args").cloned().unwrap_or(json!({})),
                "output": ctx.get("output").cloned().unwrap_or(Value::Null),
            });
            match sidecar(Duration::from_secs(2)).ok("/v1/hud/event", Some(&event)) {
                Ok(v) => out.log(format!("tool_after: forwarded (session known: {})", v["known"])),
                Err(e) => out.log(format!("tool_after: not forwarded: {e:#}")),
            }
        }
        "observe_message" => {
            let (Some(id), Some(calls)) = (session, ctx.get("calls").and_then(Value::as_array)) else {
                out.log("observe_message without session.id or calls; skipped");
                return Ok(out);
            };
            match sync_calls(&sidecar(Duration::from_secs(2)), id, calls.clone()) {
                Ok(status) => out.log(format!("observe_message: {} calls forwarded ({status})", calls.len())),
                Err(e) => out.log(format!("observe_message: not forwarded: {e:#}")),
            }
        }
        "execute_tool" => {
            let tool = ctx.get("tool").and_then(Value::as_str).unwrap_or_default();
            let sidecar = sidecar(Duration::from_secs(5));
            let result = match tool {
                "hud_show" => {
                    let id = session.ok_or_else(|| anyhow!("hud_show needs session.id"))?;
                    match sidecar.call(&crate::client::session_path(id, ""), None)? {
                        (200, v) => v["hud"].as_str().unwrap_or_default().to_owned(),
                        (404, _) => format!("no HUD for session {id} yet"),
                        (status, v) => bail!("the sidecar answered {status}: {v}"),
                    }
                }
                "hud_sessions" => {
                    let v = sidecar.ok("/v1/hud", None)?;
                    let sessions = v["sessions"].as_array().cloned().unwrap_or_default();
                    if sessions.is_empty() {
                        "no sessions tracked".to_owned()
                    } else {
                        sessions
                            .iter()
                            .map(|s| {
                                format!(
                                    "{}: {} tool calls, idle {} ms",
                                    s["session_id"].as_str().unwrap_or("?"),
                                    s["tool_calls"],
                                    s["idle_ms"]
                                )
                            })
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

/// A model status from the sidecar in a log line's words.
fn model_words(status: &Value) -> String {
    match serde_json::from_value::<crate::hud::ModelStatus>(status.clone()) {
        Ok(status) => status.to_string(),
        Err(_) => "?".to_owned(),
    }
}

/// Syncs tool parts as one assistant message; a session the sidecar does
/// not know (409) starts from them. Returns the final status.
fn sync_calls(sidecar: &Sidecar, id: &str, parts: Vec<Value>) -> anyhow::Result<u16> {
    let message = json!({ "info": { "id": "evolve-observed", "sessionID": id, "role": "assistant" }, "parts": parts });
    let sync = |full: bool| {
        sidecar.call(
            "/v1/hud/sync",
            Some(&json!({ "session_id": id, "messages": [message], "full": full })),
        )
    };
    let (status, _) = sync(false).and_then(|(s, v)| if s == 409 { sync(true) } else { Ok((s, v)) })?;
    Ok(status)
}

/// Evolve's history entries (`{role, agent, parts}`) as OpenCode messages.
fn history_messages(session: &str, history: &[Value]) -> Vec<Value> {
    history
        .iter()
        .enumerate()
        .filter_map(|(i, m)| {
            let role = m.get("role")?.as_str()?;
            Some(json!({
                "info": { "id": format!("evolve-history-{i}"), "sessionID": session, "role": role },
                "parts": m.get("parts").cloned().unwrap_or(json!([])),
            }))
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
