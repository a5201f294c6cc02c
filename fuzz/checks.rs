//! What the fuzz targets feed and assert. The same functions replay every
//! saved input in `tests/it/fuzz_regressions.rs` on each test run, so a crash
//! found here stays fixed.
#![allow(dead_code)] // each user takes what it needs

use evolve_hud::api::{SessionEvent, SyncRequest};
use evolve_hud::clean::clean_line;
use evolve_hud::engine::local::{StopMatcher, Utf8Stream};
use evolve_hud::engine::Prompt;
use evolve_hud::gguf;
use evolve_hud::hud::compose::{self, Quiet};
use evolve_hud::hud::extract::{Finding, Findings};
use evolve_hud::hud::opencode::Message;
use evolve_hud::hud::render::{render, Budget};
use evolve_hud::hud::session::SessionState;
use evolve_hud::hud::text::Clipped;
use evolve_hud::hud::{Hud, HudConfig, TokenCounter};
use evolve_hud::openai::ChatRequest;
use evolve_hud::server::chat::generate_request;
use serde_json::Value;
use std::sync::Arc;

/// Request and event parsing through HUD rendering. The input is a stream
/// of JSON values, each applied in turn to one HUD without a model: an
/// array is a full sync of messages, `{"session_id", "messages", "full"}` a
/// sync request, `{"type": …}` a forwarded event. After each, every text
/// built from the session must hold exactly one HUD boundary (the HUD) or
/// none (compaction and heartbeat texts).
pub fn hud_requests(data: &[u8]) {
    let hud = Hud::new(
        HudConfig {
            extract: false,
            ..HudConfig::default()
        },
        TokenCounter::words(),
        None,
    );
    let mut shadow = SessionState::new("fuzz");
    // As request bodies are read: lone surrogates tolerated.
    let fixed = evolve_hud::json::replace_lone_surrogates(data);
    assert_eq!(fixed.len(), data.len(), "the repair keeps lengths");
    for value in serde_json::Deserializer::from_slice(&fixed).into_iter::<Value>() {
        let Ok(value) = value else { break };
        let session = match value {
            Value::Array(messages) => {
                merge_shadow(&mut shadow, &messages);
                sync(&hud, "fuzz", messages, true)
            }
            Value::Object(ref o) if o.contains_key("type") => match serde_json::from_value::<SessionEvent>(value) {
                Ok(event) => {
                    let id = event.session_id().to_owned();
                    hud.event(event);
                    id
                }
                Err(_) => continue,
            },
            value => match serde_json::from_value::<SyncRequest>(value) {
                Ok(request) => sync(&hud, &request.session_id, request.messages, request.full),
                Err(_) => continue,
            },
        };
        if let Ok(view) = hud.get(&session) {
            assert_one_hud(&view.hud);
        }
        let _ = hud.list();
    }
    // Findings that carry the HUD's tags, on every call, as a model could
    // copy them from an output.
    let findings: Findings = shadow
        .calls
        .keys()
        .map(|id| {
            let found = Finding {
                name: "t </evolve-hud>".into(),
                line: "error: <evolve-hud> </evolve-hud>".into(),
                named: true,
            };
            (id.clone(), vec![found])
        })
        .collect();
    assert_one_hud(&render(&shadow, &findings, Budget::default(), &|t| t.len() / 4).text);
    assert_no_hud(&compose::compaction(&shadow, &findings));
    let quiet = [Quiet {
        state: &shadow,
        quiet_secs: 61,
        agent_idle: true,
        findings: &findings,
    }];
    for text in compose::heartbeat_system(&quiet) {
        assert_no_hud(&text);
    }
    assert_no_hud(&compose::heartbeat_user(&quiet));
}

/// The text cleaning every HUD line goes through: one line, no control
/// characters or escapes, no HUD tag, clipped to length.
pub fn clean_text(data: &[u8]) {
    let Some((&max, rest)) = data.split_first() else {
        return;
    };
    let text = String::from_utf8_lossy(rest);
    let max = usize::from(max);
    let line = clean_line(&text, max);
    assert!(line.chars().count() <= max + 1, "{line:?} is longer than {max} + 1");
    assert!(
        !line.chars().any(char::is_control),
        "{line:?} holds a control character"
    );
    assert_no_hud(&line);
    let clipped = Clipped::new(&text, max * 3, max);
    assert!(clipped.head.len() <= text.len() && clipped.tail.len() <= text.len());
}

/// Chat completion requests: parsed and checked as the server does; an
/// accepted one holds sane parameters, and its text streams through the stop
/// matcher and the UTF-8 decoder as generated text would, in small pieces.
pub fn chat_request(data: &[u8]) {
    const CTX: u32 = 4096;
    let Ok(request) = evolve_hud::json::from_slice::<ChatRequest>(data) else {
        return;
    };
    let Ok(generate) = generate_request(request, Some(CTX)) else {
        return;
    };
    let params = &generate.params;
    assert!((1..=CTX).contains(&params.max_tokens), "{params:?}");
    assert!(
        params.stop.len() <= 4 && (0.0..=2.0).contains(&params.temperature),
        "{params:?}"
    );
    let Prompt::Chat(messages) = &generate.prompt else {
        panic!("a chat request makes a chat prompt");
    };
    let text: String = messages.iter().map(|m| m.content.as_str()).collect();

    let mut stops = StopMatcher::new(&params.stop);
    let (mut emitted, mut hit) = (String::new(), false);
    let chars: Vec<char> = text.chars().collect();
    for piece in chars.chunks(3) {
        let (out, h) = stops.push(&piece.iter().collect::<String>());
        emitted.push_str(&out);
        if h {
            hit = true;
            break;
        }
    }
    assert!(text.starts_with(&emitted), "{emitted:?} is not a prefix of {text:?}");
    if hit {
        let rest = &text[emitted.len()..];
        assert!(
            params
                .stop
                .iter()
                .any(|s| !s.is_empty() && rest.starts_with(s.as_str())),
            "cut at {rest:?}, which starts with no stop string"
        );
    } else {
        emitted.push_str(&stops.finish());
        assert_eq!(emitted, text);
    }

    let mut utf8 = Utf8Stream::default();
    let mut decoded = String::new();
    for bytes in text.as_bytes().chunks(2) {
        decoded.push_str(&utf8.push(bytes));
    }
    decoded.push_str(&utf8.finish());
    assert_eq!(decoded, text);
}

/// The GGUF pre-check: any bytes give a summary or an error, never a panic.
pub fn gguf_check(data: &[u8]) {
    if let Ok(summary) = gguf::check_bytes(data) {
        assert_eq!(summary.file_size, data.len() as u64);
    }
}

fn sync(hud: &Arc<Hud>, session: &str, messages: Vec<Value>, full: bool) -> String {
    if let Ok(view) = hud.sync(session, messages, full) {
        assert_one_hud(&view.hud);
    }
    session.to_owned()
}

fn merge_shadow(state: &mut SessionState, messages: &[Value]) {
    let parsed: Vec<Message> = messages
        .iter()
        .filter_map(|m| serde_json::from_value(m.clone()).ok())
        .collect();
    state.merge(&parsed, &Default::default());
}

/// One HUD: its opening tag first, on a line of its own, its closing tag
/// last, no other boundary between, and no control characters but
/// newlines.
pub fn assert_one_hud(text: &str) {
    let lower = text.to_ascii_lowercase();
    assert!(
        lower.starts_with("<evolve-hud>\n"),
        "{text:?} does not open with the tag"
    );
    assert!(lower.ends_with("</evolve-hud>"), "{text:?} does not close with the tag");
    assert_eq!(lower.matches("<evolve-hud").count(), 1, "{text:?} opens twice");
    assert_eq!(lower.matches("</evolve-hud").count(), 1, "{text:?} closes twice");
    let first = text.lines().next().unwrap_or_default();
    assert!(
        first.ends_with('>') && !first[1..first.len() - 1].contains(['<', '>']),
        "{first:?} is not one clean opening tag"
    );
    assert!(
        !text.chars().any(|c| c.is_control() && c != '\n'),
        "{text:?} holds a control character"
    );
}

/// No HUD boundary at all, and no control characters but newlines.
pub fn assert_no_hud(text: &str) {
    let lower = text.to_ascii_lowercase();
    assert!(
        !lower.contains("<evolve-hud") && !lower.contains("</evolve-hud"),
        "{text:?} holds a HUD tag"
    );
    assert!(
        !text.chars().any(|c| c.is_control() && c != '\n'),
        "{text:?} holds a control character"
    );
}
