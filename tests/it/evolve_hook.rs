//! `evolve-hud hook`, driven the way opencode-evolve drives a workspace hook:
//! the example executable in `examples/evolve-workspace/hooks/`, the hook name
//! in argv, one JSON object on stdin, JSONL on stdout; against the real
//! sidecar with the real model, and against a stopped one.

use crate::common;

use common::Server;
use serde_json::{json, Map, Value};
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

struct Run {
    code: i32,
    result: Map<String, Value>,
    logs: Vec<String>,
    stderr: String,
}

/// Runs the example hook as evolve does (`spawn(hookPath, [name])`, stdin piped).
fn hook(name: &str, stdin: &str, url: &str) -> Run {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let bin_dir = PathBuf::from(env!("CARGO_BIN_EXE_evolve-hud"))
        .parent()
        .unwrap()
        .to_owned();
    let path = format!("{}:{}", bin_dir.display(), std::env::var("PATH").unwrap_or_default());
    let mut child = Command::new(root.join("examples/evolve-workspace/hooks/evolve-hud"))
        .arg(name)
        .current_dir(root.join("examples/evolve-workspace"))
        .env("PATH", path)
        .env("EVOLVE_HUD_URL", url)
        .env("XDG_CONFIG_HOME", common::config_home())
        .env("EVOLVE_HUD_DEADLINE_MS", "15000")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("running the example hook");
    child.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    // Evolve's parser: every line is JSON; {log} lines are debug, the rest merge.
    let mut result = Map::new();
    let mut logs = Vec::new();
    for line in String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
    {
        let v: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSONL: {line}: {e}"));
        match v.get("log") {
            Some(l) => logs.push(l.as_str().unwrap().to_owned()),
            None => result.extend(v.as_object().unwrap().clone()),
        }
    }
    Run {
        code: out.status.code().unwrap_or(-1),
        result,
        logs,
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn fixture(n: usize) -> Vec<Value> {
    common::transform("basic", n)
}

/// The fixture as evolve's `history` (`{role, agent, parts}` per message).
fn history(messages: &[Value]) -> Value {
    messages
        .iter()
        .map(|m| json!({ "role": m["info"]["role"], "agent": m["info"]["agent"], "parts": m["parts"] }))
        .collect()
}

#[test]
fn every_hook_against_the_real_sidecar() {
    let server = Server::start(&[]);
    let url = server.url("");
    let messages = fixture(7);
    let session = messages[0]["info"]["sessionID"].as_str().unwrap().to_owned();

    let discover = hook("discover", r#"{"hook":"discover","prompts":{}}"#, &url);
    assert_eq!(discover.code, 0);
    assert_eq!(discover.result["name"], json!("evolve-hud"));
    let tools: Vec<&str> = discover.result["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(tools, ["hud_show", "hud_sessions"]);

    // compacting brings the session in from evolve's history and answers with a prompt.
    let ctx =
        json!({ "hook": "compacting", "prompts": {}, "session": { "id": session }, "history": history(&messages) });
    let compacting = hook("compacting", &ctx.to_string(), &url);
    assert_eq!(compacting.code, 0, "{}", compacting.stderr);
    let prompt = compacting.result["prompt"].as_str().unwrap();
    common::assert_compaction_sections(prompt);
    assert!(
        prompt.contains("- Open problem: bash `false` exited 1; no pass since"),
        "{prompt}"
    );
    assert!(
        compacting
            .logs
            .iter()
            .any(|l| l.starts_with("compacting: synced 7 messages")),
        "{:?}",
        compacting.logs
    );

    let beat = hook("heartbeat", r#"{"hook":"heartbeat","sessions":[],"prompts":{}}"#, &url);
    assert_eq!(beat.code, 0, "{}", beat.stderr);
    assert!(
        beat.result["user"]
            .as_str()
            .unwrap()
            .contains(r#"open problem: "bash `false` exited 1;"#),
        "{:?}",
        beat.result
    );
    assert_eq!(beat.result["system"].as_array().unwrap().len(), 2);

    // Observational hooks feed the HUD.
    let after = json!({ "hook": "tool_after", "session": { "id": session }, "tool": "bash", "callID": "call_evolve_1",
                        "title": "make", "output": "make: *** [all] Error 2", "args": { "command": "make" } });
    // With a lone surrogate, as JavaScript writes a string cut inside an emoji.
    let after = after.to_string().replace("Error 2", r"Error 2 \ud83d");
    let r = hook("tool_after", &after, &url);
    assert_eq!(r.code, 0);
    assert!(r.logs[0].contains("forwarded (session known: true)"), "{:?}", r.logs);
    let observed = json!({ "hook": "observe_message", "session": { "id": session, "agent": "build" }, "answer": "",
        "calls": [{ "type": "tool", "callID": "call_evolve_2", "tool": "bash",
                    "state": { "status": "completed", "input": { "command": "cargo check" }, "output": "ok", "metadata": { "exit": 0 } } }] });
    let r = hook("observe_message", &observed.to_string(), &url);
    assert_eq!(r.code, 0);
    assert!(r.logs[0].contains("1 calls forwarded (HUD version"), "{:?}", r.logs);

    let show = json!({ "hook": "execute_tool", "tool": "hud_show", "args": {}, "session": { "id": session } });
    let r = hook("execute_tool", &show.to_string(), &url);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let hud = r.result["result"].as_str().unwrap();
    assert!(hud.starts_with("<evolve-hud"), "{hud}");
    assert!(hud.contains("✓ bash `make`"), "{hud}");
    assert!(hud.contains("✓ bash `cargo check`"), "{hud}");
    let r = hook("execute_tool", r#"{"tool":"hud_sessions","args":{}}"#, &url);
    assert!(
        r.result["result"].as_str().unwrap().contains(&session),
        "{:?}",
        r.result
    );
    let r = hook("execute_tool", r#"{"tool":"nope","args":{}}"#, &url);
    assert_eq!(r.result["result"], json!("unknown tool: nope"));

    // Hooks evolve-hud does not handle answer nothing, successfully.
    let r = hook("mutate_request", "{}", &url);
    assert_eq!((r.code, r.result.len()), (0, 0));

    // Garbage on stdin: observational hooks log and succeed, others fail with one line.
    let r = hook("tool_after", "{not json", &url);
    assert_eq!(r.code, 0);
    assert!(r.logs[0].contains("stdin is not JSON"), "{:?}", r.logs);
    let r = hook("compacting", "[1,2]", &url);
    assert_eq!(r.code, 1);
    assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
    assert!(r.stderr.contains("one JSON object"), "{}", r.stderr);
}

/// What opencode-evolve sends: `tool_before` with the args, `tool_after`
/// without them, and at compaction a history of full parts. The compaction
/// facts name the commands and files either way: the most complete record of
/// a call wins, whichever came first.
#[tokio::test]
async fn evolve_calls_keep_their_subjects() {
    let server = Server::facts_only(&[]);
    let url = server.url("");
    let calls = [
        (
            "call_1",
            "bash",
            json!({ "command": "echo hello && ls" }),
            "hello\nnotes.txt\n",
        ),
        (
            "call_2",
            "write",
            json!({ "filePath": "notes.txt", "content": "hi\n" }),
            "Wrote file successfully.",
        ),
        ("call_3", "read", json!({ "filePath": "notes.txt" }), "1\thi\n"),
    ];
    // Session A: tool_before and tool_after only.
    let a = "ses_evolve_a";
    let sync = json!({ "session_id": a, "full": true, "messages": [{ "info": { "id": "u", "sessionID": a, "role": "user" },
        "parts": [{ "type": "text", "text": "Say hello and keep notes." }] }] });
    let (status, _) = common::post_json(&server, "/v1/hud/sync", &sync).await;
    assert_eq!(status, 200);
    for (id, tool, args, output) in &calls {
        let before = json!({ "hook": "tool_before", "session": { "id": a }, "tool": tool, "callID": id, "args": args });
        let r = hook("tool_before", &before.to_string(), &url);
        assert_eq!(r.code, 0, "{}", r.stderr);
        assert!(r.logs[0].contains("forwarded (HUD version"), "{:?}", r.logs);
        let after = json!({ "hook": "tool_after", "session": { "id": a }, "tool": tool, "callID": id, "title": "", "output": output });
        assert_eq!(hook("tool_after", &after.to_string(), &url).code, 0);
    }
    // Session B: tool_after first, then compacting with the full history.
    let b = "ses_evolve_b";
    let sync = json!({ "session_id": b, "full": true, "messages": [] });
    assert_eq!(common::post_json(&server, "/v1/hud/sync", &sync).await.0, 200);
    let mut parts = Vec::new();
    for (id, tool, args, output) in &calls {
        let after = json!({ "hook": "tool_after", "session": { "id": b }, "tool": tool, "callID": id, "title": "", "output": output });
        assert_eq!(hook("tool_after", &after.to_string(), &url).code, 0);
        parts.push(json!({ "type": "tool", "callID": id, "tool": tool,
            "state": { "status": "completed", "input": args, "output": output, "metadata": { "exit": 0 } } }));
    }
    let history = json!([{ "role": "user", "parts": [{ "type": "text", "text": "Say hello and keep notes." }] },
                         { "role": "assistant", "parts": parts }]);
    for (session, history) in [(a, Value::Null), (b, history)] {
        let mut ctx = json!({ "hook": "compacting", "prompts": {}, "session": { "id": session } });
        if !history.is_null() {
            ctx["history"] = history;
        }
        let r = hook("compacting", &ctx.to_string(), &url);
        assert_eq!(r.code, 0, "{}", r.stderr);
        let prompt = r.result["prompt"].as_str().unwrap();
        for fact in [
            "✓ bash `echo hello && ls`",
            "✓ write notes.txt",
            "✓ read notes.txt",
            "- notes.txt (read 1, write 1)",
        ] {
            assert!(prompt.contains(fact), "{session}: {fact} missing from\n{prompt}");
        }
        assert!(!prompt.contains("none touched"), "{session}: {prompt}");
    }
}

#[test]
fn a_stopped_sidecar_fails_only_the_hooks_that_need_it() {
    let url = "http://127.0.0.1:9"; // discard port: nothing listens
    let discover = hook("discover", "{}", url);
    assert_eq!(discover.code, 0);
    for name in ["tool_before", "tool_after", "observe_message"] {
        let ctx = json!({ "session": { "id": "s" }, "tool": "bash", "callID": "c", "calls": [] });
        let r = hook(name, &ctx.to_string(), url);
        assert_eq!(r.code, 0, "{name}");
        assert!(
            r.logs.iter().any(|l| l.contains("no sidecar answers")),
            "{name}: {:?}",
            r.logs
        );
    }
    for (name, ctx) in [
        ("heartbeat", json!({ "sessions": [] })),
        ("compacting", json!({ "session": { "id": "s" } })),
        ("execute_tool", json!({ "tool": "hud_show", "session": { "id": "s" } })),
    ] {
        let r = hook(name, &ctx.to_string(), url);
        assert_eq!(r.code, 1, "{name}");
        assert_eq!(r.stderr.lines().count(), 1, "{name}: {}", r.stderr);
        assert!(r.stderr.contains("no sidecar answers"), "{name}: {}", r.stderr);
        assert!(r.result.is_empty(), "{name}");
    }
}
