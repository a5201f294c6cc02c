//! The HUD's lines, each composed from facts: a call, a test report, the
//! traces of repeated runs, the files touched, the open problems and the
//! model's checked findings.

use crate::checks::{re, Failure, Report};
use crate::command;
use crate::extract::{Finding, Findings};
use crate::opencode::ToolStatus;
use crate::problems::Problems;
use crate::session::{ToolCall, ToolKind};
use evolve_hud_api::clean::clean_line;
use regex::Regex;
use std::collections::BTreeMap;
use std::sync::LazyLock;

/// Repeated test or check commands whose runs are traced, and runs per trace.
const MAX_TRACES: usize = 2;
const TRACE_RUNS: usize = 4;

/// `✓ bash `cargo test` (exit 0, 120 lines)`, `✗ edit src/a.rs: oldString not found`.
pub fn call_line(call: &ToolCall) -> String {
    call_line_naming(call, 3)
}

/// [`call_line`], naming up to `details` failures of a test report.
pub(crate) fn call_line_naming(call: &ToolCall, details: usize) -> String {
    let mark = match call.status {
        ToolStatus::Pending | ToolStatus::Running => "…",
        _ if call.failed() => "✗",
        _ if call.ran_no_tests() => "○",
        _ if call.unsettled().is_some() => "?",
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
                line.push_str(&format!(": {}", call_report_line(call, report, details)));
            }
        }
        ToolStatus::Completed if call.ran_no_tests() => {
            line.push_str(" → ran no tests");
            if let Some(exit) = call.exit_code().filter(|&e| e != 0) {
                line.push_str(&format!(" (exit {exit})"));
            }
            let said = call
                .output
                .as_ref()
                .and_then(|o| o.kept_lines().map(str::trim).find(|l| crate::text::no_tests_line(l)));
            match (said, &call.report) {
                (Some(said), _) => line.push_str(&format!(": {}", clean_line(said, 100))),
                (None, Some(report)) => line.push_str(&format!(": {}", report.label())),
                (None, None) => {}
            }
        }
        ToolStatus::Completed if call.denied().is_some() => {
            let denied = call.denied().unwrap_or_default();
            line.push_str(&format!(
                " → exit 0, but the output says otherwise: {}",
                clean_line(denied, 100)
            ));
        }
        ToolStatus::Completed if call.unsettled().is_some() => {
            let by = call.unsettled().unwrap_or_default();
            line.push_str(&format!(
                " → exit {} (set by {by}, not by the command)",
                call.exit.unwrap_or(0)
            ));
            if let Some(report) = &call.report {
                line.push_str(&format!(": {}", call_report_line(call, report, details)));
            } else if let Some(key) = call.output.as_ref().and_then(|o| o.key_line()) {
                line.push_str(&format!(": {}", clean_line(key, 100)));
                line.push_str(&verdicts_beside(call, key));
            }
        }
        ToolStatus::Completed if call.report.is_some() => {
            if let (Some(exit), Some(meaning)) = (call.exit, call.benign()) {
                line.push_str(&format!(" → exit {exit} ({meaning})"));
            } else if let Some(exit) = call.exit_code().filter(|&e| e != 0) {
                line.push_str(&format!(" → exit {exit}"));
            }
            if let Some(report) = &call.report {
                line.push_str(&format!(": {}", call_report_line(call, report, details)));
                // Failed with nothing named as failing: the key line says
                // what (with nothing counted as failing, the stated reason).
                let told_by_failure = call
                    .output
                    .as_ref()
                    .and_then(|o| o.failure_line())
                    .is_some_and(crate::text::says_a_check_failed)
                    && report.ok()
                    && report.settles();
                // Failures named by their verdict lines alone (a runner
                // known by its count's shape): the key line may say why.
                let named_only = report.failures.iter().all(|f| f.detail.is_none());
                if call.failed() && named_only && !told_by_failure {
                    let key = call.output.as_ref().and_then(|o| o.failure_line());
                    let named = |k: &str| report.failures.iter().any(|f| f.name == k.trim());
                    if let Some(key) = key.filter(|k| !crate::text::explains_nothing(k) && !named(k)) {
                        line.push_str(&format!("; {}", clean_line(key, 100)));
                    }
                }
            }
        }
        ToolStatus::Completed => {
            if let (Some(exit), Some(meaning)) = (call.exit, call.benign()) {
                line.push_str(&format!(" → exit {exit} ({meaning})"));
            } else if let Some(exit) = call.exit_code().filter(|&e| e != 0).or(call.failed().then_some(0)) {
                line.push_str(&format!(" → exit {exit}"));
                if let Some(why) = signal_of(exit).or_else(|| timed_out(call, exit)) {
                    line.push_str(&format!(" ({why})"));
                }
                if let Some(key) = call.output.as_ref().and_then(|o| o.key_line()) {
                    line.push_str(&format!(": {}", clean_line(key, 100)));
                    line.push_str(&verdicts_beside(call, key));
                }
            } else if call.tool == "read" {
                // A read's output is the file's lines between OpenCode's
                // own: how much of the file it holds is what OpenCode says,
                // and an error word in the file is no finding.
                if let Some(span) = call.output.as_ref().and_then(read_span) {
                    line.push_str(&format!(" ({span})"));
                }
            } else if let Some(out) = call.output.as_ref().filter(|o| o.lines > 20) {
                // OpenCode cuts a long output to its first lines and saves the
                // rest, without saying how many the command printed.
                let over = if out.cut_by_client() { "over " } else { "" };
                line.push_str(&format!(" ({over}{} lines", out.lines));
                // A bisect's or a rebase's output holds checks of other
                // commits: what it found is where it ended.
                let other_versions = call
                    .command
                    .as_deref()
                    .is_some_and(crate::command::checks_other_versions);
                if let Some(s) = if other_versions { out.last_told() } else { out.salient() } {
                    line.push_str(&format!("; {}", clean_line(s, 80)));
                }
                line.push(')');
            }
        }
    }
    line
}

/// Verdicts shown per call whose output no summary counts.
const MAX_VERDICTS: usize = 3;

/// `; failed: test parse ... FAILED; FAIL: tally :: top.test`: the lines of
/// a failed call's output, with no summary that counts, that each say one
/// test or check failed ([`crate::text::verdict_lines`]), beside its key
/// line `key`; the last [`MAX_VERDICTS`] of them, and `…` where there are
/// more. Empty where none is left to tell.
fn verdicts_beside(call: &ToolCall, key: &str) -> String {
    let Some(out) = call.output.as_ref().filter(|_| call.failed()) else {
        return String::new();
    };
    let lines: Vec<&str> = out.kept_lines().collect();
    let verdicts: Vec<&str> = crate::text::verdict_lines(lines.into_iter())
        .into_iter()
        .filter(|v| *v != key.trim())
        .collect();
    if verdicts.is_empty() {
        return String::new();
    }
    let shown = &verdicts[verdicts.len().saturating_sub(MAX_VERDICTS)..];
    let more = if verdicts.len() > shown.len() { "; …" } else { "" };
    let told: Vec<String> = shown.iter().map(|v| clean_line(v, 80)).collect();
    format!("; failed: {}{more}", told.join("; "))
}

/// What part of the file a `read` holds, in OpenCode's words at the end of
/// its output: `661 lines` (all of a file over 20 lines), `lines 196–240 of 661`, `lines
/// 1–2000, more follow` (capped), `12 entries` (a folder). None where the
/// output does not say (another host's read): the HUD claims no length.
fn read_span(out: &crate::text::Clipped) -> Option<String> {
    static END: LazyLock<Regex> = LazyLock::new(|| re(r"^\(End of file - total (\d+) lines?\)$"));
    static SHOWING: LazyLock<Regex> = LazyLock::new(|| re(r"^\(Showing lines (\d+)-(\d+) of (\d+)\. Use offset="));
    static CAPPED: LazyLock<Regex> =
        LazyLock::new(|| re(r"^\(Output capped at .*\. Showing lines (\d+)-(\d+)\. Use offset="));
    static ENTRIES: LazyLock<Regex> = LazyLock::new(|| re(r"^\((\d+) entries\)$"));
    static FIRST: LazyLock<Regex> = LazyLock::new(|| re(r"^(\d+): "));
    let lines: Vec<&str> = out.kept_lines().map(str::trim).collect();
    let footer = |pattern: &Regex| lines.iter().rev().find_map(|l| pattern.captures(l));
    if let Some(c) = footer(&SHOWING) {
        return Some(format!("lines {}–{} of {}", &c[1], &c[2], &c[3]));
    }
    if let Some(c) = footer(&CAPPED) {
        return Some(format!("lines {}–{}, more follow", &c[1], &c[2]));
    }
    if let Some(c) = footer(&END) {
        // Read from an offset to the end: the lines from the first shown.
        let first = out
            .head
            .lines()
            .find_map(|l| FIRST.captures(l))
            .map(|f| f[1].to_owned());
        return Some(match first.as_deref() {
            Some(first) if first != "1" => format!("lines {first}–{} of {}", &c[1], &c[1]),
            // A short file whole: nothing worth the words.
            _ if c[1].parse::<usize>().is_ok_and(|n| n <= 20) => return None,
            _ => format!("{} lines", &c[1]),
        });
    }
    footer(&ENTRIES).map(|c| format!("{} entries", &c[1]))
}

/// The signal a shell's exit status 128+N says killed the command, for the
/// signals of a crash or a kill: `139` is `SIGSEGV`.
fn signal_of(exit: i64) -> Option<&'static str> {
    Some(match exit {
        132 => "SIGILL",
        134 => "SIGABRT",
        135 => "SIGBUS",
        136 => "SIGFPE",
        137 => "SIGKILL",
        139 => "SIGSEGV",
        _ => return None,
    })
}

/// `timed out` where the status is `timeout`'s own for a command it
/// killed.
fn timed_out(call: &ToolCall, exit: i64) -> Option<&'static str> {
    call.command
        .as_deref()
        .is_some_and(|c| command::killed_by_timeout(c, exit))
        .then_some("timed out")
}

/// [`report_line`] of a call's report, with what made the run partial when
/// an option says so (`rspec 1 of 2 failed, a rerun of earlier failures
/// only: …`): its counts are not the whole suite's.
fn call_report_line(call: &ToolCall, report: &Report, details: usize) -> String {
    // A failed run whose summary says everything passed ran more than that
    // summary's runner (nox's lint session failed, its tests session
    // passed): it is told by what failed, its passing part after.
    let failed_elsewhere = call
        .output
        .as_ref()
        .and_then(|o| o.failure_line())
        .filter(|k| crate::text::says_a_check_failed(k));
    if let Some(key) = failed_elsewhere.filter(|_| call.failed() && report.ok() && report.settles()) {
        let tool = if report.tool.is_empty() { "test" } else { report.tool };
        return format!("{}; its {tool} part: {}", clean_line(key, 100), report.counts());
    }
    let line = report_line(report, details);
    match call.command.as_deref().and_then(command::partial_run) {
        Some(partial) => {
            let counts = report.label();
            let room = 260 + 150 * (details.max(3) - 3);
            clean_line(&line.replacen(&counts, &format!("{counts} ({partial})"), 1), room)
        }
        None => line,
    }
}

/// `unittest 2 of 4 failed: test_average (AssertionError: 1.5 != 2); test_div (…)`;
/// the first `details` failures shown with their key line, the rest by
/// name, up to `details` named where that is more than three (a masked
/// output's stub), else three. Failures are shown in [`display_order`].
pub(super) fn report_line(report: &Report, details: usize) -> String {
    let names = details.max(3);
    let mut line = report.label();
    let shown = display_order(&report.failures);
    // The same name told twice (two failing examples of one doctest) is
    // told once, with how many times.
    let mut told: Vec<(String, usize)> = Vec::new();
    for (i, f) in shown.iter().take(names).enumerate() {
        let item = match &f.detail {
            Some(d) if i < details => format!("{} ({})", clean_line(&f.name, 60), clean_line(d, 80)),
            _ => clean_line(&f.name, 60),
        };
        match told.iter_mut().find(|(t, _)| *t == item) {
            Some((_, n)) => *n += 1,
            None => told.push((item, 1)),
        }
    }
    let mut failures = told
        .into_iter()
        .map(|(item, n)| if n > 1 { format!("{item} ×{n}") } else { item });
    if let Some(first) = failures.next() {
        line.push_str(": ");
        line.push_str(&first);
        for more in failures {
            line.push_str("; ");
            line.push_str(&more);
        }
        // More failed than are named here.
        if report.failures.len() > names || report.failed > report.failures.len().min(names) {
            line.push_str("; …");
        }
    }
    // Room for each named failure beyond three: its name and key line.
    clean_line(&line, 240 + 150 * (names - 3))
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
pub(super) fn run_traces(calls: &[&ToolCall]) -> Vec<String> {
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
pub(crate) fn file_lines(calls: &[&ToolCall]) -> Vec<String> {
    let mut files: BTreeMap<&str, (usize, BTreeMap<&str, usize>, usize)> = BTreeMap::new();
    for (i, call) in calls.iter().enumerate() {
        if call.kind != ToolKind::File || !call.finished() {
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

/// The open problems known to be open, those that come first in
/// [`open_problems`]; the rest are unconfirmed ([`crate::problems::Problem::unconfirmed`]).
pub(crate) fn confirmed_problems(problems: &Problems) -> usize {
    problems.open.iter().filter(|p| !p.unconfirmed()).count()
}

/// One line per open problem, with the model's verified findings for its
/// call where there are some: those known to be open first, then those a
/// later pass may have run.
pub(crate) fn open_problems(problems: &Problems, findings: &Findings) -> Vec<String> {
    let (confirmed, unconfirmed): (Vec<_>, Vec<_>) = problems.open.iter().partition(|p| !p.unconfirmed());
    confirmed
        .into_iter()
        .chain(unconfirmed)
        .map(|problem| {
            let call = &problem.call;
            let subject = call
                .command
                .as_deref()
                .map(|c| format!("`{}`", clean_line(c, 60)))
                .or_else(|| call.subject().map(|s| clean_line(s, 60)));
            let subject = subject.unwrap_or_default();
            let mut what = match (call.timed_out(), call.exit_code().filter(|&e| e != 0)) {
                (Some(secs), _) => format!("{} {subject} timed out after {secs} s", call.tool),
                (None, Some(exit)) => format!("{} {subject} exited {exit}", call.tool),
                (None, None) => format!("{} {subject} failed", call.tool),
            };
            if let Some(report) = &call.report {
                // Its key line, where the call itself is no longer listed.
                let details = usize::from(call.before_compaction);
                what.push_str(&format!(" ({})", call_report_line(call, report, details)));
            }
            let no_pass = if problem.passed_since.is_empty() && !problem.maybe_since.is_empty() {
                // A later pass that may have run it: not claimed either way.
                let maybe: Vec<String> = problem
                    .maybe_since
                    .iter()
                    .map(|c| format!("`{}`", clean_line(c, 50)))
                    .collect();
                format!(
                    "not rerun since; since then {} passed, which may have run it",
                    maybe.join(" and ")
                )
            } else if problem.passed_since.is_empty() {
                "no pass since".to_owned()
            } else {
                let passed: Vec<String> = problem.passed_since.iter().map(|n| clean_line(n, 60)).collect();
                let rest: Vec<String> = problem
                    .still_failing()
                    .take(3)
                    .map(|f| clean_line(&f.name, 60))
                    .collect();
                if rest.is_empty() {
                    // Every named failure passed in runs narrower than the
                    // failing one: what else it checked has not run again.
                    format!(
                        "{} passed since in a narrower run; the whole check has not passed since",
                        passed.join(", ")
                    )
                } else {
                    format!(
                        "{} passed since; no pass since for {}",
                        passed.join(", "),
                        rest.join(", ")
                    )
                }
            };
            if problem.failures > 1 {
                what.push_str(&format!("; failed {} times, {no_pass}", problem.failures));
            } else {
                what.push_str(&format!("; {no_pass}"));
            }
            if call.before_compaction {
                what.push_str("; from before the last compaction");
            }
            // A finding about a test that has passed since goes with it.
            if let Some(found) = findings.get(&call.call_id) {
                let standing: Vec<Finding> = found
                    .iter()
                    .filter(|f| !problem.passed_since_named(&f.name))
                    .cloned()
                    .collect();
                if !standing.is_empty() {
                    what.push_str(&format!("; {}", findings_line(&standing)));
                }
            }
            what
        })
        .collect()
}

/// `local model found in the output, each line checked there: calc.c:
/// "calc.c:12:16: error: …"; "expected 3, got 4"`: a name only where it
/// stands on its line ([`Finding::named`]).
pub(super) fn findings_line(found: &[Finding]) -> String {
    let items: Vec<String> = found
        .iter()
        .map(|f| {
            let line = format!("\"{}\"", clean_line(&f.line, 140));
            if f.named {
                format!("{}: {line}", clean_line(&f.name, 60))
            } else {
                line
            }
        })
        .collect();
    format!(
        "local model found in the output, each line checked there: {}",
        items.join("; ")
    )
}
