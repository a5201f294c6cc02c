//! The words `watch` and `status` both print: the health line, the model's
//! recent work, and a session's row.

use evolve_hud_api::{Activity, EngineDetails, HealthState, MaskedOutput, ModelStatus, SessionListing, StatusView};

/// `3s`, `4m`, `2h`: how long ago, coarsely.
pub fn ago(ms: u64) -> String {
    let s = ms / 1000;
    match s {
        0..=59 => format!("{s}s"),
        60..=3599 => format!("{}m", s / 60),
        _ => format!("{}h", s / 3600),
    }
}

/// `model ready: SmolLM2 (local, CPU)`, and how many questions wait when
/// any do.
pub fn health_line(status: &StatusView) -> String {
    let h = &status.health;
    let state = match (&h.state, &h.details) {
        (HealthState::Failed { reason }, _) => format!("model failed ({reason})"),
        (HealthState::Loading, Some(EngineDetails::Loading { progress })) => {
            format!("model loading ({:.0} %)", progress * 100.0)
        }
        (HealthState::Loading, _) => "model loading".to_owned(),
        (HealthState::Released, _) => "model released (idle; the next question loads it)".to_owned(),
        (HealthState::Ready, _) => "model ready".to_owned(),
    };
    let mut line = format!("{state}: {} ({})", h.model, h.engine);
    match status.queue {
        0 => {}
        1 => line.push_str(" · 1 question waiting"),
        n => line.push_str(&format!(" · {n} questions waiting")),
    }
    line
}

/// ` · 3 superseded (41.0 KB)`: outputs: what the plugin may mask in the
/// agent's requests; nothing when none is.
pub fn superseded_words(masks: &[MaskedOutput]) -> String {
    if masks.is_empty() {
        return String::new();
    }
    let bytes = masks.iter().map(|m| m.bytes).sum();
    format!(" · {} superseded ({})", masks.len(), kilobytes(bytes))
}

fn kilobytes(bytes: usize) -> String {
    format!("{:.1} KB", bytes as f64 / 1024.0)
}

/// The superseded outputs, each with the stub that stands for it where the
/// plugin masks (its setting `mask`); the tokens its last request saved are
/// in the HUD's context line.
pub fn mask_lines(masks: &[MaskedOutput]) -> Vec<String> {
    if masks.is_empty() {
        return vec!["No output is superseded yet: nothing can be masked.".to_owned()];
    }
    let total: usize = masks.iter().map(|m| m.bytes).sum();
    let mut lines = vec![
        format!(
            "{} outputs superseded, {} in all, about {} tokens. Where the plugin masks, these stubs stand for them in the agent's requests:",
            masks.len(),
            kilobytes(total),
            total / 4
        ),
        String::new(),
    ];
    for m in masks {
        lines.push(format!("{} ({})", m.call_id, kilobytes(m.bytes)));
        lines.push(format!("  {}", m.stub));
    }
    lines
}

/// `model writes 54.2 tok/s`, over the latest completions; nothing before
/// the first.
pub fn generation(a: &Activity) -> Option<String> {
    a.generation_tps.map(|tps| format!("model writes {tps:.1} tok/s"))
}

/// `last 5 model answers: 2 shown, 3 refused`: what became of the HUD's
/// latest questions (refused: nothing in it could be checked against the
/// output).
pub fn notes(a: &Activity) -> String {
    match a.notes_shown + a.notes_rejected {
        0 => "no model answers yet".to_owned(),
        1 if a.notes_shown == 1 => "last model answer: shown".to_owned(),
        1 => "last model answer: refused".to_owned(),
        answers => format!(
            "last {answers} model answers: {} shown, {} refused",
            a.notes_shown, a.notes_rejected
        ),
    }
}

/// The model's part of a session's HUD, in words: `none` is not "no model
/// loaded" but "nothing was asked".
pub fn model_words(status: &ModelStatus) -> String {
    match status {
        ModelStatus::None => "no questions for the model".to_owned(),
        ModelStatus::Pending => "model reading output…".to_owned(),
        ModelStatus::Ready => "model findings shown".to_owned(),
        ModelStatus::Rejected { reason } => format!("model answer refused: {reason}"),
    }
}

/// `12 tool calls (2 failed) · 1 open problem`.
pub fn calls(s: &SessionListing) -> String {
    let calls = match s.tool_calls {
        1 => "1 tool call".to_owned(),
        n => format!("{n} tool calls"),
    };
    let failed = if s.failed_calls > 0 {
        format!(" ({} failed)", s.failed_calls)
    } else {
        String::new()
    };
    let open = match s.open_problems {
        0 => "no open problems".to_owned(),
        1 => "1 open problem".to_owned(),
        n => format!("{n} open problems"),
    };
    format!("{calls}{failed} · {open}")
}

/// `agent idle 4m` when the agent went idle, else `active 3s ago`.
pub fn activity_of(s: &SessionListing) -> String {
    match s.agent_idle_ms {
        Some(ms) => format!("agent idle {}", ago(ms)),
        None => format!("active {} ago", ago(s.idle_ms)),
    }
}

/// `evolve-hud status`'s text: the health, the model's recent work, and one
/// line per session.
pub fn status_report(url: &str, status: &StatusView) -> String {
    let mut work = notes(&status.activity);
    if let Some(speed) = generation(&status.activity) {
        work = format!("{speed} · {work}");
    }
    let mut out = format!("evolve-hud at {url}: {}\n{work}\n", health_line(status));
    if status.sessions.is_empty() {
        out.push_str("no sessions\n");
    }
    for s in &status.sessions {
        out.push_str(&format!(
            "{}  {} · {} · {} · goal: {}\n",
            s.session_id,
            calls(s),
            activity_of(s),
            model_words(&s.model_status),
            s.goal.as_deref().unwrap_or("(none yet)")
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
        assert_eq!((generation(&a), notes(&a)), (None, "no model answers yet".into()));
        a.generation_tps = Some(54.25);
        a.notes_rejected = 1;
        assert_eq!(notes(&a), "last model answer: refused");
        a.notes_shown = 2;
        a.notes_rejected = 3;
        assert_eq!(generation(&a).as_deref(), Some("model writes 54.2 tok/s"));
        assert_eq!(notes(&a), "last 5 model answers: 2 shown, 3 refused");
    }

    #[test]
    fn model_states_are_said_in_words() {
        assert_eq!(model_words(&ModelStatus::None), "no questions for the model");
        assert_eq!(model_words(&ModelStatus::Pending), "model reading output…");
        assert_eq!(model_words(&ModelStatus::Ready), "model findings shown");
        assert_eq!(
            model_words(&ModelStatus::Rejected {
                reason: "the line is not in the output".into()
            }),
            "model answer refused: the line is not in the output"
        );
    }
}
