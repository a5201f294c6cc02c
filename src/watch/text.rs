//! The words `watch` and `status` both print: the health line, the model's
//! recent work, and a session's row.

use crate::activity::Activity;
use crate::hud::SessionListing;
use crate::server::events::StatusView;
use serde_json::Value;

/// `3s`, `4m`, `2h`: how long ago, coarsely.
pub fn ago(ms: u64) -> String {
    let s = ms / 1000;
    match s {
        0..=59 => format!("{s}s"),
        60..=3599 => format!("{}m", s / 60),
        _ => format!("{}h", s / 3600),
    }
}

/// `ready · SmolLM2 (local, CPU) · queue 0`.
pub fn health_line(status: &StatusView) -> String {
    let h = &status.health;
    let text = |k: &str| h.get(k).and_then(Value::as_str).unwrap_or_default();
    let state = match text("status") {
        "failed" => format!("failed: {}", text("reason")),
        "" => "unknown".to_owned(),
        s => s.to_owned(),
    };
    let mut engine = text("engine").to_owned();
    if !text("backend").is_empty() {
        engine = format!("{engine}, {}", text("backend"));
    }
    format!("{state} · {} ({engine}) · queue {}", text("model"), status.queue)
}

/// `gen 54.2 tok/s`: over the latest completions.
pub fn generation(a: &Activity) -> String {
    match a.generation_tps {
        Some(tps) => format!("gen {tps:.1} tok/s"),
        None => "gen –".to_owned(),
    }
}

/// `notes 2 shown, 3 rejected (last 5)`: the HUD's latest answers.
pub fn notes(a: &Activity) -> String {
    match a.notes_shown + a.notes_rejected {
        0 => "notes: none asked yet".to_owned(),
        answers => format!(
            "notes {} shown, {} rejected (last {answers})",
            a.notes_shown, a.notes_rejected
        ),
    }
}

/// `12 calls (2 failed) · 1 open`.
pub fn calls(s: &SessionListing) -> String {
    let failed = if s.failed_calls > 0 {
        format!(" ({} failed)", s.failed_calls)
    } else {
        String::new()
    };
    format!("{} calls{failed} · {} open", s.tool_calls, s.open_problems)
}

/// `idle 4m` when the agent went idle, else `active 3s ago`.
pub fn activity_of(s: &SessionListing) -> String {
    match s.agent_idle_ms {
        Some(ms) => format!("idle {}", ago(ms)),
        None => format!("active {} ago", ago(s.idle_ms)),
    }
}

/// `evolve-hud status`'s text: the health, the model's recent work, and one
/// line per session.
pub fn status_report(url: &str, status: &StatusView) -> String {
    let mut out = format!(
        "evolve-hud at {url}: {}\n{} · {}\n",
        health_line(status),
        generation(&status.activity),
        notes(&status.activity)
    );
    if status.sessions.is_empty() {
        out.push_str("no sessions\n");
    }
    for s in &status.sessions {
        out.push_str(&format!(
            "{}  {}  {}  model {}  {}\n",
            s.session_id,
            calls(s),
            activity_of(s),
            s.model_status,
            s.goal.as_deref().unwrap_or("(no goal yet)")
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ago_is_coarse() {
        assert_eq!(ago(999), "0s");
        assert_eq!(ago(59_000), "59s");
        assert_eq!(ago(61_000), "1m");
        assert_eq!(ago(7_300_000), "2h");
    }

    #[test]
    fn activity_counts_answers() {
        let mut a = Activity::default();
        assert_eq!(
            (generation(&a), notes(&a)),
            ("gen –".into(), "notes: none asked yet".into())
        );
        a.generation_tps = Some(54.25);
        a.notes_shown = 2;
        a.notes_rejected = 3;
        assert_eq!(generation(&a), "gen 54.2 tok/s");
        assert_eq!(notes(&a), "notes 2 shown, 3 rejected (last 5)");
    }
}
