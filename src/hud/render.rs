//! Rendering a session into the HUD text. Every line is composed by the code
//! here: facts from the session's events, and, labelled, the failures the
//! model found in an output that code then checked against that output.

use super::checks::{Failure, Report};
use super::command;
use super::extract::{Finding, Findings};
use super::opencode::ToolStatus;
use super::problems::{Problems, FILE_TOOLS, MAX_PROBLEMS};
use super::session::{SessionState, ToolCall};
use super::text::{attribute, clean_line, TAG};
use std::collections::BTreeMap;

/// A rendered HUD.
#[derive(Debug, Clone, PartialEq)]
pub struct Rendered {
    pub text: String,
    pub tokens: usize,
}

/// How much detail one render may use.
#[derive(Debug, Clone, Copy)]
pub struct Budget {
    /// Tokens the whole HUD may take.
    pub tokens: usize,
    /// Tool calls listed at most.
    pub calls: usize,
}

impl Default for Budget {
    fn default() -> Self {
        Budget { tokens: 300, calls: 8 }
    }
}

/// Repeated test or check commands whose runs are traced, and runs per trace.
const MAX_TRACES: usize = 2;
const TRACE_RUNS: usize = 4;
const MAX_FILES: usize = 8;

/// Renders the HUD within `budget.tokens` as counted by `count`: the oldest
/// tool calls go first, then the least used files, then the model's
/// findings, then the goal is shortened. `findings` are shown with the open
/// problem of the call they were read from, and only while it is open.
///
/// Each trial is first estimated from per-line counts, which are cached
/// (most lines stay the same from one trial to the next); the whole text is
/// counted only once an estimate comes near the budget, so `tokens` is exact
/// and a render tokenises little more than the text it returns.
pub fn render(state: &SessionState, findings: &Findings, budget: Budget, count: &dyn Fn(&str) -> usize) -> Rendered {
    let calls = state.work_calls();
    let analysis = state.problems();
    let problems = open_problems(&analysis, findings);
    let bare_problems = if findings.is_empty() {
        None
    } else {
        Some(open_problems(&analysis, &Findings::new()))
    };
    let traces = run_traces(&calls);
    let mut lines = LineCounts::default();
    let mut first = true;
    // Calls carried over a compaction count in the problems, traces and
    // files, but are not listed as calls since it.
    let mut shown_calls = calls.iter().filter(|c| !c.before_compaction).count().min(budget.calls);
    let files = file_lines(&calls);
    let mut shown_files = files.len().min(MAX_FILES);
    let mut shown_traces = traces.len();
    let mut with_findings = bare_problems.is_some();
    let mut shown_problems = MAX_PROBLEMS;
    let mut goal_chars = 300;
    loop {
        let shown = Shown {
            calls: shown_calls,
            files: shown_files,
            problems: shown_problems,
            traces: shown_traces,
            goal_chars,
        };
        let text = compose(
            state,
            &calls,
            &files,
            match (&bare_problems, with_findings) {
                (Some(bare), false) => bare,
                _ => &problems,
            },
            &traces,
            shown,
        );
        // The first trial is counted whole (most HUDs fit at once). Later
        // ones are estimated from line sums, which run a little above
        // whole-text counts: past the margin a trial is over budget without
        // counting it whole.
        let exact = if first || lines.estimate(&text, count) <= budget.tokens + budget.tokens / 8 + 8 {
            Some(count(&text))
        } else {
            None
        };
        first = false;
        if let Some(tokens) = exact.filter(|&t| t <= budget.tokens) {
            return Rendered { text, tokens };
        }
        if shown_calls > 1 {
            shown_calls -= 1;
        } else if shown_files > 0 {
            shown_files -= 1;
        } else if shown_traces > 0 {
            shown_traces -= 1;
        } else if shown_problems > 1 {
            shown_problems -= 1;
        } else if with_findings {
            with_findings = false;
        } else if goal_chars > 40 {
            goal_chars /= 2;
        } else if shown_calls > 0 {
            shown_calls = 0;
        } else if shown_problems > 0 {
            shown_problems = 0;
        } else {
            // Nothing left to trim: the bare frame, whatever it costs.
            let tokens = exact.unwrap_or_else(|| count(&text));
            return Rendered { text, tokens };
        }
    }
}

/// Token counts of single lines, cached over the trials of one render.
#[derive(Default)]
struct LineCounts(std::collections::HashMap<String, usize>);

impl LineCounts {
    /// The sum of the counts of `text`'s lines (each with its newline).
    fn estimate(&mut self, text: &str, count: &dyn Fn(&str) -> usize) -> usize {
        text.split_inclusive('\n')
            .map(|line| match self.0.get(line) {
                Some(&n) => n,
                None => {
                    let n = count(line);
                    self.0.insert(line.to_owned(), n);
                    n
                }
            })
            .sum()
    }
}

/// How much of each section a render shows.
#[derive(Clone, Copy)]
struct Shown {
    calls: usize,
    files: usize,
    problems: usize,
    traces: usize,
    goal_chars: usize,
}

fn compose(
    state: &SessionState,
    calls: &[&ToolCall],
    files: &[String],
    problems: &[String],
    traces: &[String],
    shown: Shown,
) -> String {
    let Shown {
        calls: shown_calls,
        files: shown_files,
        problems: shown_problems,
        traces: shown_traces,
        goal_chars,
    } = shown;
    let all = calls;
    let calls: Vec<&ToolCall> = all.iter().filter(|c| !c.before_compaction).copied().collect();
    // No counter or clock in the text: the same facts give the same bytes,
    // which keeps the agent's prompt cache warm. The version is in the JSON.
    let mut out = format!("<{TAG} session=\"{}\">\n", attribute(&state.id, 64));
    match &state.goal {
        Some((_, goal)) => out.push_str(&format!(
            "Goal (latest user request): {}\n",
            clean_line(goal, goal_chars)
        )),
        None if state.compacted_at.is_some() => out.push_str("Goal: (stated before the last compaction)\n"),
        None => out.push_str("Goal: (no user request seen yet)\n"),
    }
    let since = if state.compacted_at.is_some() {
        " since the last compaction"
    } else {
        ""
    };
    if calls.is_empty() {
        out.push_str(&format!("Tool calls{since}: none yet\n"));
    } else {
        let earlier = calls.len() - shown_calls + state.dropped_calls;
        if shown_calls == 0 {
            out.push_str(&format!("Tool calls{since}: {earlier} (not shown)\n"));
        } else if earlier > 0 {
            out.push_str(&format!(
                "Last {shown_calls} tool calls{since} ({earlier} earlier not shown):\n"
            ));
        } else {
            out.push_str(&format!("Tool calls{since} ({}):\n", calls.len()));
        }
        // The same call line in a row (a command retried with the same
        // result) is listed once, with its count.
        let mut listed: Vec<(String, usize)> = Vec::new();
        for call in &calls[calls.len() - shown_calls..] {
            let line = call_line(call);
            match listed.last_mut() {
                Some((last, n)) if *last == line => *n += 1,
                _ => listed.push((line, 1)),
            }
        }
        for (line, n) in listed {
            if n > 1 {
                out.push_str(&format!("  {line} ×{n}\n"));
            } else {
                out.push_str(&format!("  {line}\n"));
            }
        }
    }
    if shown_files > 0 {
        let more = files.len() - shown_files;
        out.push_str(&format!("Files: {}", files[files.len() - shown_files..].join("; ")));
        if more > 0 {
            out.push_str(&format!("; +{more} more"));
        }
        out.push('\n');
    }
    for trace in &traces[traces.len() - shown_traces..] {
        out.push_str(trace);
        out.push('\n');
    }
    if shown_problems == 0 && !problems.is_empty() {
        out.push_str(&format!("Open problems: {}\n", problems.len()));
    } else if problems.is_empty() {
        if all.iter().any(|c| c.failed()) {
            out.push_str("Open problems: none (every failure has passed since)\n");
        }
    } else {
        out.push_str("Open problems:\n");
        for p in problems.iter().take(shown_problems) {
            out.push_str(&format!("  - {p}\n"));
        }
    }
    if let Some(todos) = &state.todos {
        let done = todos.iter().filter(|t| t.status == "completed").count();
        let mut line = format!("Todos: {done}/{} done", todos.len());
        if let Some(now) = todos.iter().find(|t| t.status == "in_progress") {
            line.push_str(&format!("; in progress: {}", clean_line(&now.content, 80)));
        } else if let Some(next) = todos.iter().find(|t| t.status == "pending") {
            line.push_str(&format!("; next: {}", clean_line(&next.content, 80)));
        }
        out.push_str(&line);
        out.push('\n');
    }
    out.push_str(&format!("</{TAG}>"));
    out
}

/// `✓ bash `cargo test` (exit 0, 120 lines)`, `✗ edit src/a.rs: oldString not found`.
pub(super) fn call_line(call: &ToolCall) -> String {
    let mark = match call.status {
        ToolStatus::Pending | ToolStatus::Running => "…",
        _ if call.failed() => "✗",
        _ => "✓",
    };
    let mut line = format!("{mark} {}", call.tool);
    match (&call.command, call.subject()) {
        (Some(cmd), _) => line.push_str(&format!(" `{}`", clean_line(cmd, 80))),
        (None, Some(s)) => line.push_str(&format!(" {}", clean_line(s, 80))),
        (None, None) => {}
    }
    match call.status {
        ToolStatus::Pending | ToolStatus::Running => line.push_str(" (running)"),
        ToolStatus::Error => {
            if let Some(e) = &call.error {
                line.push_str(&format!(": {}", clean_line(e, 100)));
            }
        }
        ToolStatus::Completed if call.timed_out().is_some() => {
            let secs = call.timed_out().unwrap_or_default();
            line.push_str(&format!(" → timed out after {secs} s"));
            if let Some(report) = &call.report {
                line.push_str(&format!(": {}", report_line(report, 3)));
            }
        }
        ToolStatus::Completed if call.report.is_some() => {
            if let (Some(exit), Some(meaning)) = (call.exit, call.benign()) {
                line.push_str(&format!(" → exit {exit} ({meaning})"));
            } else if let Some(exit) = call.exit.filter(|&e| e != 0) {
                line.push_str(&format!(" → exit {exit}"));
            }
            if let Some(report) = &call.report {
                line.push_str(&format!(": {}", report_line(report, 3)));
            }
        }
        ToolStatus::Completed => {
            if let (Some(exit), Some(meaning)) = (call.exit, call.benign()) {
                line.push_str(&format!(" → exit {exit} ({meaning})"));
            } else if let Some(exit) = call.exit.filter(|&e| e != 0).or(call.failed().then_some(0)) {
                line.push_str(&format!(" → exit {exit}"));
                if let Some(key) = call.output.as_ref().and_then(|o| o.key_line()) {
                    line.push_str(&format!(": {}", clean_line(key, 100)));
                }
            } else if let Some(out) = call.output.as_ref().filter(|o| o.lines > 20) {
                // OpenCode cuts a long output to its first lines and saves the
                // rest, without saying how many the command printed.
                let over = if out.cut_by_client() { "over " } else { "" };
                line.push_str(&format!(" ({over}{} lines", out.lines));
                if let Some(s) = out.salient() {
                    line.push_str(&format!("; {}", clean_line(s, 80)));
                }
                line.push(')');
            }
        }
    }
    line
}

/// `unittest 2 of 4 failed: test_average (AssertionError: 1.5 != 2); test_div (…)`;
/// the first `details` failures shown with their key line, the rest by
/// name. Failures are shown in [`display_order`].
fn report_line(report: &Report, details: usize) -> String {
    let mut line = format!("{} {}", report.tool, report.counts());
    let shown = display_order(&report.failures);
    let mut failures = shown.iter().take(3).enumerate().map(|(i, f)| match &f.detail {
        Some(d) if i < details => format!("{} ({})", clean_line(&f.name, 60), clean_line(d, 80)),
        _ => clean_line(&f.name, 60),
    });
    if let Some(first) = failures.next() {
        line.push_str(": ");
        line.push_str(&first);
        for more in failures {
            line.push_str("; ");
            line.push_str(&more);
        }
        // More failed than are named here.
        if report.failures.len() > 3 || report.failed > report.failures.len().min(3) {
            line.push_str("; …");
        }
    }
    clean_line(&line, 240)
}

/// The order in which a report's failures are shown when not all fit:
/// errors before warnings and notes (a checker's severities), then one of
/// each file and kind (`SC2045`, `no-undef`, `TS2322`, `[return-value]`)
/// before the second of any, so a cut list still shows each kind of
/// problem; otherwise the output's order.
fn display_order(failures: &[Failure]) -> Vec<&Failure> {
    // An error among warnings, or a name that does not resolve (it fails
    // at run time, where a style finding does not).
    let severe = |f: &Failure| {
        f.detail.as_deref().is_some_and(|d| {
            let d = d.to_ascii_lowercase();
            d.contains("(error)")
                || d.starts_with("error")
                || [
                    "not defined",
                    "undefined",
                    "undeclared",
                    "cannot find",
                    "does not exist",
                    "has no attribute",
                    "no member",
                    "unresolved",
                ]
                .iter()
                .any(|w| d.contains(w))
        })
    };
    let any_milder = failures.iter().any(|f| !severe(f));
    let mut seen = std::collections::HashSet::new();
    let mut first = Vec::new();
    let mut rest = Vec::new();
    for f in failures {
        let kind = (
            f.name.split(':').next().unwrap_or_default(),
            kind_of(f.detail.as_deref()),
        );
        if seen.insert(kind) {
            first.push(f);
        } else {
            rest.push(f);
        }
    }
    first.extend(rest);
    if any_milder {
        first.sort_by_key(|f| !severe(f));
    }
    first
}

/// The code a checker gives a finding: `SC2045`, `TS2322`, `E0308`, a
/// trailing `(no-undef)` or `[union-attr]`; the whole detail otherwise.
fn kind_of(detail: Option<&str>) -> &str {
    let Some(d) = detail else { return "" };
    let code = d.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-')).find(|w| {
        w.len() >= 4
            && w.starts_with(|c: char| c.is_ascii_uppercase())
            && w[1..].chars().any(|c| c.is_ascii_digit())
            && w.chars().all(|c| c.is_ascii_alphanumeric())
    });
    let trailing = d
        .trim_end()
        .strip_suffix([')', ']'])
        .and_then(|r| r.rsplit(['(', '[']).next());
    code.or(trailing).unwrap_or(d)
}

/// For each test or check command run more than once, the course of its
/// results, newest command last: `Runs of `pytest -q`: 2 of 4 failed → 1 of
/// 4 failed (test_average) → 4 passed`.
fn run_traces(calls: &[&ToolCall]) -> Vec<String> {
    // By what is checked, shown as its latest command.
    let mut commands: Vec<(String, &str, Vec<&Report>)> = Vec::new();
    for call in calls {
        let (Some(command), Some(report)) = (call.command.as_deref(), call.report.as_ref()) else {
            continue;
        };
        let key = command::check_key(command);
        match commands.iter().position(|(k, ..)| *k == key) {
            Some(i) => {
                let mut entry = commands.remove(i);
                entry.1 = command;
                entry.2.push(report);
                commands.push(entry);
            }
            None => commands.push((key, command, vec![report])),
        }
    }
    commands.retain(|(_, _, runs)| runs.len() > 1);
    let from = commands.len().saturating_sub(MAX_TRACES);
    commands[from..]
        .iter()
        .map(|(_, command, runs)| {
            let shown = &runs[runs.len().saturating_sub(TRACE_RUNS)..];
            let steps: Vec<String> = shown
                .iter()
                .map(|r| {
                    let mut names: Vec<String> = r.failures.iter().take(2).map(|f| clean_line(&f.name, 40)).collect();
                    if r.failed > names.len() && !names.is_empty() {
                        names.push("…".into());
                    }
                    if r.ok() || names.is_empty() {
                        r.counts()
                    } else {
                        format!("{} ({})", r.counts(), names.join(", "))
                    }
                })
                .collect();
            let earlier = if runs.len() > shown.len() { "… → " } else { "" };
            format!("Runs of `{}`: {earlier}{}", clean_line(command, 60), steps.join(" → "))
        })
        .collect()
}

/// `notes.txt (write 1, read 1, edit 2, 1 failed)`, ordered by last use.
pub(super) fn file_lines(calls: &[&ToolCall]) -> Vec<String> {
    let mut files: BTreeMap<&str, (usize, BTreeMap<&str, usize>, usize)> = BTreeMap::new();
    for (i, call) in calls.iter().enumerate() {
        if !FILE_TOOLS.contains(&call.tool.as_str()) || !call.finished() {
            continue;
        }
        let Some(path) = call.path.as_deref() else { continue };
        let entry = files.entry(path).or_default();
        entry.0 = i;
        if call.failed() {
            entry.2 += 1;
        } else {
            *entry.1.entry(call.tool.as_str()).or_default() += 1;
        }
    }
    let mut list: Vec<_> = files.into_iter().collect();
    list.sort_by_key(|(_, (last, _, _))| *last);
    list.into_iter()
        .map(|(path, (_, ops, failed))| {
            let mut parts: Vec<String> = ops.iter().map(|(op, n)| format!("{op} {n}")).collect();
            if failed > 0 {
                parts.push(format!("{failed} failed"));
            }
            format!("{} ({})", clean_line(path, 80), parts.join(", "))
        })
        .collect()
}

/// One line per open problem, with the model's verified findings for its
/// call where there are some.
pub(super) fn open_problems(problems: &Problems, findings: &Findings) -> Vec<String> {
    problems
        .open
        .iter()
        .map(|problem| {
            let call = &problem.call;
            let subject = call
                .command
                .as_deref()
                .map(|c| format!("`{}`", clean_line(c, 60)))
                .or_else(|| call.subject().map(|s| clean_line(s, 60)));
            let subject = subject.unwrap_or_default();
            let mut what = match (call.timed_out(), call.exit.filter(|&e| e != 0)) {
                (Some(secs), _) => format!("{} {subject} timed out after {secs} s", call.tool),
                (None, Some(exit)) => format!("{} {subject} exited {exit}", call.tool),
                (None, None) => format!("{} {subject} failed", call.tool),
            };
            if let Some(report) = &call.report {
                // Its key line, where the call itself is no longer listed.
                let details = usize::from(call.before_compaction);
                what.push_str(&format!(" ({})", report_line(report, details)));
            }
            let no_pass = if problem.passed_since.is_empty() {
                "no pass since".to_owned()
            } else {
                let passed: Vec<String> = problem.passed_since.iter().map(|n| clean_line(n, 60)).collect();
                let rest: Vec<String> = problem
                    .still_failing()
                    .take(3)
                    .map(|f| clean_line(&f.name, 60))
                    .collect();
                let rest = if rest.is_empty() {
                    "the rest".to_owned()
                } else {
                    rest.join(", ")
                };
                format!("{} passed since; no pass since for {rest}", passed.join(", "))
            };
            if problem.failures > 1 {
                what.push_str(&format!("; failed {} times, {no_pass}", problem.failures));
            } else {
                what.push_str(&format!("; {no_pass}"));
            }
            if call.before_compaction {
                what.push_str("; from before the last compaction");
            }
            if let Some(found) = findings.get(&call.call_id) {
                what.push_str(&format!("; {}", findings_line(found)));
            }
            what
        })
        .collect()
}

/// `local model found in the output, each line checked there: calc.c:
/// "calc.c:12:16: error: …"; …`
fn findings_line(found: &[Finding]) -> String {
    let items: Vec<String> = found
        .iter()
        .map(|f| format!("{}: \"{}\"", clean_line(&f.name, 60), clean_line(&f.line, 140)))
        .collect();
    format!(
        "local model found in the output, each line checked there: {}",
        items.join("; ")
    )
}
