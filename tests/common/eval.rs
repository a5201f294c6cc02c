//! The HUD quality evaluation: real OpenCode sessions (captured by
//! `plugin-shim/eval/capture.ts` into `tests/fixtures/sessions/`) replayed
//! step by step into a real server, each HUD checked against hand-written
//! expectations: facts that must appear by a step, and claims that must not
//! (a failure still open after it passed). Every quote of the model's part
//! must also be a line of the session's outputs. Used by
//! `benches/hud_quality.rs` (the table) and `tests/it/hud_quality.rs` (the
//! "no false statement" gate).

use super::{client, post_json, Server};
use serde::Deserialize;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// What must and must not be in the HUD once `calls` tool calls are done.
/// `model` lists what only the model's part can supply (details of an
/// output no parser knows); it counts toward the model's recall.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    pub calls: usize,
    pub must: Vec<String>,
    pub model: Vec<String>,
    pub must_not: Vec<String>,
}

/// A captured session and its expectations. The last expectation also holds
/// for the compaction text asked for at the end.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Case {
    #[serde(skip)]
    pub name: String,
    /// The user's request, and the script of tool calls the capture's
    /// model makes (`plugin-shim/eval/sessions.ts` runs them).
    pub goal: String,
    pub compact_at: Option<usize>,
    pub step: Vec<toml::Table>,
    /// A session whose tools' output formats the HUD's authors had not
    /// looked at when it was captured (written from real output by a helper
    /// who did not read the HUD's code).
    pub held_out: bool,
    pub expect: Vec<Expect>,
}

/// The folder of the sessions: `<name>.toml` is the script and the
/// expectations, `<name>.json` the session captured from it.
pub fn sessions_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sessions")
}

/// Every session's expectations, by name. A file that does not parse fails
/// with its name and the parser's reason.
pub fn cases() -> Vec<Case> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(sessions_dir())
        .expect("the sessions folder")
        .map(|entry| entry.expect("a sessions folder entry").path())
        .filter(|path| path.extension().is_some_and(|e| e == "toml"))
        .collect();
    paths.sort();
    paths
        .iter()
        .map(|path| {
            let text = std::fs::read_to_string(path).expect("a session's TOML");
            let mut case: Case = toml::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            case.name = path
                .file_stem()
                .and_then(|stem| stem.to_str())
                .expect("a session's name")
                .to_owned();
            case
        })
        .collect()
}

/// What one case gave.
#[derive(Debug, Default, Clone)]
pub struct Outcome {
    /// Expected facts found, and expected in all.
    pub found: usize,
    pub expected: usize,
    /// The same for what only the model's part can supply.
    pub model_found: usize,
    pub model_expected: usize,
    /// False or stale statements, each described.
    pub false_statements: Vec<String>,
    /// Questions the model was asked, and how they ended.
    pub asked: usize,
    pub shown: usize,
    pub rejected: usize,
    /// Seconds from the sync that raised a question to the answer's first
    /// verified item being in the HUD (shown answers only).
    pub latencies: Vec<f64>,
    /// Expected facts that were missing, for the report.
    pub missing: Vec<String>,
    /// Per session: what the model's findings cost and gave.
    pub sessions: Vec<SessionFindings>,
}

/// What the model's findings cost one session and what they gave: the
/// seconds the plugin's default wait would have held the agent's requests,
/// the facts only the model's part supplies that were there, and each
/// distinct HUD line that carried a finding (for judging them).
#[derive(Debug, Default, Clone)]
pub struct SessionFindings {
    pub name: String,
    pub asked: usize,
    pub held_s: f64,
    pub model_found: usize,
    pub model_expected: usize,
    pub lines: Vec<String>,
}

/// The plugin's default wait for a finding (`waitMs` in
/// `plugin-shim/evolve-hud/config.ts`).
pub const DEFAULT_WAIT: Duration = Duration::from_secs(6);

impl Outcome {
    pub fn add(&mut self, other: &Outcome) {
        self.found += other.found;
        self.expected += other.expected;
        self.model_found += other.model_found;
        self.model_expected += other.model_expected;
        self.false_statements.extend(other.false_statements.iter().cloned());
        self.asked += other.asked;
        self.shown += other.shown;
        self.rejected += other.rejected;
        self.latencies.extend(&other.latencies);
        self.sessions.extend(other.sessions.iter().cloned());
        self.missing.extend(other.missing.iter().cloned());
    }
}

/// The session captured from a case's script.
pub fn session_file(name: &str) -> Value {
    let path = sessions_dir().join(format!("{name}.json"));
    serde_json::from_slice(&std::fs::read(&path).expect("session fixture")).expect("session JSON")
}

/// The number of tool calls in `message`.
pub fn tool_calls(message: &Value) -> usize {
    message["parts"]
        .as_array()
        .map_or(0, |parts| parts.iter().filter(|p| p["type"] == "tool").count())
}

/// Every shell output of the session as a terminal shows it, for checking
/// the model's quotes.
fn outputs(messages: &[Value]) -> Vec<String> {
    messages
        .iter()
        .flat_map(|m| m["parts"].as_array().cloned().unwrap_or_default())
        .filter(|p| p["type"] == "tool")
        // As a terminal shows it: without colour codes.
        .filter_map(|p| {
            p["state"]["output"]
                .as_str()
                .map(|o| evolve_hud_core::text::without_ansi(o).into_owned())
        })
        .collect()
}

/// The quotes of the model's part in `text`.
pub fn quotes(text: &str) -> Vec<String> {
    const LABEL: &str = "local model found in the output, each line checked there: ";
    text.lines()
        .filter_map(|l| l.split_once(LABEL).map(|(_, found)| found))
        .flat_map(|found| {
            found
                .split('"')
                .skip(1)
                .step_by(2)
                .map(str::to_owned)
                .collect::<Vec<_>>()
        })
        .collect()
}

/// Replays one case into `server` (a fresh session per case): one sync per
/// assistant message, as the plugin sends them, waiting for the model after
/// each; then the compaction text.
pub async fn run_case(server: &Server, case: &Case) -> Outcome {
    let session = session_file(&case.name);
    let messages = session["messages"].as_array().expect("messages").clone();
    let outputs = outputs(&messages);
    let id = messages[0]["info"]["sessionID"]
        .as_str()
        .expect("session id")
        .to_owned();
    let mut out = Outcome::default();
    let mut calls = 0;
    let mut sent = 0;
    let mut last_hud = String::new();
    let mut spent = SessionFindings {
        name: case.name.clone(),
        ..SessionFindings::default()
    };
    for (i, message) in messages.iter().enumerate() {
        let n = tool_calls(message);
        if n == 0 {
            continue;
        }
        calls += n;
        let body = json!({ "session_id": id, "messages": messages[sent..=i], "full": sent == 0 });
        sent = i + 1;
        let started = Instant::now();
        let (status, mut view) = post_json(server, "/v1/hud/sync", &body).await;
        assert_eq!(status, 200, "{}: {view}", case.name);
        if view["model_status"]["state"] == "pending" {
            out.asked += 1;
            // The answer's first verified item is shown while the model
            // writes the rest; the question settles once the whole is in.
            let mut shown = None;
            let deadline = Instant::now() + Duration::from_secs(120);
            while view["model_status"]["state"] == "pending" && Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(20)).await;
                let r = client()
                    .get(server.url(&format!("/v1/hud/{id}")))
                    .send()
                    .await
                    .expect("GET");
                view = r.json().await.expect("view");
                if shown.is_none() && !quotes(view["hud"].as_str().unwrap_or_default()).is_empty() {
                    shown = Some(started.elapsed());
                }
            }
            // The sync is held until the first verified item is shown or
            // the question settles, at most the default wait.
            spent.asked += 1;
            spent.held_s += shown
                .unwrap_or_else(|| started.elapsed())
                .min(DEFAULT_WAIT)
                .as_secs_f64();
            match view["model_status"]["state"].as_str() {
                Some("ready") => {
                    out.shown += 1;
                    let shown = shown.unwrap_or_else(|| started.elapsed());
                    out.latencies.push(shown.as_secs_f64());
                }
                Some("rejected") => out.rejected += 1,
                _ => {}
            }
        }
        let hud = view["hud"].as_str().expect("hud").to_owned();
        for line in hud.lines().filter(|l| !quotes(l).is_empty()) {
            if !spent.lines.iter().any(|l| l == line) {
                spent.lines.push(line.to_owned());
            }
        }
        let before = (out.model_found, out.model_expected);
        check(case, calls, &hud, &outputs, &mut out, "HUD");
        spent.model_found += out.model_found - before.0;
        spent.model_expected += out.model_expected - before.1;
        last_hud = hud;
    }
    let (status, compaction) = post_json(
        server,
        &format!("/v1/hud/{id}/compaction"),
        &json!({ "deadline_ms": 60_000 }),
    )
    .await;
    assert_eq!(status, 200, "{compaction}");
    let text = compaction["text"].as_str().expect("text");
    if let Some(last) = case.expect.last() {
        for claim in &last.must_not {
            if text.contains(claim) {
                out.false_statements
                    .push(format!("{}: compaction text says {claim:?}", case.name));
            }
        }
        // Where the session ends with everything fixed, the compaction
        // text lists no open problem; on the known formats it says so. (A
        // held-out session may leave a failure not known either way: not
        // rerun, and a later pass may have run it.)
        if last.must.iter().any(|m| m == "Open problems: none") {
            if text.contains("- Open problem:") {
                out.false_statements.push(format!(
                    "{}: compaction text lists an open problem after the fix",
                    case.name
                ));
            } else if !case.held_out && !text.contains("No open problems") {
                out.false_statements.push(format!(
                    "{}: compaction text does not say there is no open problem after the fix",
                    case.name
                ));
            }
        }
    }
    assert!(!last_hud.is_empty(), "{}: no steps", case.name);
    out.sessions.push(spent);
    out
}

fn check(case: &Case, calls: usize, text: &str, outputs: &[String], out: &mut Outcome, what: &str) {
    // The HUD writes each line with its runs of spaces squeezed to one.
    let squeeze = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    for quote in quotes(text) {
        // A long quote is shortened at its end, never changed.
        let quote_squeezed = squeeze(quote.strip_suffix('…').unwrap_or(&quote));
        if !outputs
            .iter()
            .any(|o| o.lines().any(|l| squeeze(l).contains(&quote_squeezed)))
        {
            out.false_statements.push(format!(
                "{} at {calls} calls: {what} quotes {quote:?}, not in any output",
                case.name
            ));
        }
    }
    for e in case.expect.iter().filter(|e| e.calls == calls) {
        for fact in &e.must {
            out.expected += 1;
            if text.contains(fact) {
                out.found += 1;
            } else {
                out.missing
                    .push(format!("{} at {calls} calls: {fact:?} in\n{text}", case.name));
            }
        }
        for fact in &e.model {
            out.model_expected += 1;
            if text.contains(fact) {
                out.model_found += 1;
            }
        }
        for claim in &e.must_not {
            if text.contains(claim) {
                out.false_statements
                    .push(format!("{} at {calls} calls: {what} says {claim:?}\n{text}", case.name));
            }
        }
    }
}

/// Opens a session holding only a user's request, as the plugin syncs
/// before the agent's first step, and waits until the HUD has decoded the
/// start its questions share, as it does in a real session while the agent
/// takes that step. The warm-up, or `None` when none came.
pub async fn warm_up(server: &Server) -> Option<super::hud::Warmups> {
    let id = "ses_warmup";
    let request = super::hud::user_request(id, "Run the tests and fix what fails.");
    let (status, view) = super::hud::sync(
        server,
        &json!({ "session_id": id, "messages": [request], "full": true }),
    )
    .await;
    assert_eq!(status, 200, "{view}");
    super::hud::wait_warmed(server).await
}

/// Every case on one server: the sessions whose formats the HUD was
/// written for, and apart from them the held-out ones.
pub async fn run_all(server: &Server, cases: &[Case]) -> (Outcome, Outcome) {
    let (mut known, mut held_out) = (Outcome::default(), Outcome::default());
    for case in cases {
        let part = if case.held_out { &mut held_out } else { &mut known };
        part.add(&run_case(server, case).await);
    }
    (known, held_out)
}

/// The `p`-quantile of `values` (nearest rank).
pub fn quantile(values: &[f64], p: f64) -> Option<f64> {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    (!v.is_empty()).then(|| v[((v.len() as f64 - 1.0) * p).round() as usize])
}
