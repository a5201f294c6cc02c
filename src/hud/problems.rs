//! Open problems: the session's one analysis of which failures no later run
//! has fixed. It is computed once per version of the facts (see
//! [`SessionState::problems`](super::session::SessionState::problems)) and every reader (render, compose, entry,
//! refresh, listing, compaction, watch) uses it.
//!
//! A problem is keyed by what was checked, not by the command's text: the
//! tool, and for a shell command its [`command::check_key`] (where it ran,
//! the program and what it selected, without output-only options and
//! filters). Within a test run's problem each failing test is tracked: a
//! later passing run that selected it by name or file passed it.

use super::checks::{Counted, Report};
use super::command;
use super::session::call::ToolCall;
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

/// Open problems the local model is asked about at most (the HUD lists
/// as many as its budget holds, and counts the rest).
pub const MAX_PROBLEMS: usize = 3;

/// One open problem: the check's last failing run, and what is known since.
#[derive(Debug, Clone)]
pub struct Problem {
    pub call: Arc<ToolCall>,
    /// Failures of the check since its last pass.
    pub failures: usize,
    /// Tests named in the failing run's report that a later passing run
    /// selected and passed, in report order.
    pub passed_since: Vec<String>,
    /// The runs of the same tool in the same folders that passed after the
    /// failure: what a finding about one test is checked against.
    pub passed_after: Vec<Arc<ToolCall>>,
}

impl Problem {
    /// Whether the test `name` (of a finding about this failure) passed in
    /// a later run: listed there as passed, or selected by name or file by
    /// a run that passed tests.
    pub fn passed_since_named(&self, name: &str) -> bool {
        self.passed_after.iter().any(|call| {
            let Some(report) = &call.report else { return false };
            report.passes.iter().any(|p| same_test(name, p))
                || (report.passed.unwrap_or(0) > 0 && call.command.as_deref().is_some_and(|c| selects(c, name)))
        })
    }

    /// The failing run's named failures that have not passed since.
    pub fn still_failing(&self) -> impl Iterator<Item = &super::checks::Failure> {
        let report = self.call.report.as_ref();
        report
            .into_iter()
            .flat_map(|r| r.failures.iter())
            .filter(|f| !self.passed_since.contains(&f.name))
    }
}

/// Per check: failures since the last pass, the last failure and the last
/// pass, and the failing tests passed since the failure.
#[derive(Default)]
struct Track {
    failures: usize,
    last_failure: Option<usize>,
    last_pass: Option<usize>,
    passed: BTreeSet<String>,
}

/// The open problems of one version of a session, newest failure first.
#[derive(Debug, Clone, Default)]
pub struct Problems {
    pub open: Vec<Problem>,
}

impl Problems {
    /// Whether `call_id`'s failure is one of the open problems.
    pub fn is_open(&self, call_id: &str) -> bool {
        self.open.iter().any(|p| p.call.call_id == call_id)
    }

    /// The open problems among `calls` (in the order they started): the
    /// failures that no later run of the same check has fixed. One pass
    /// over the calls.
    pub fn of(calls: &[&Arc<ToolCall>]) -> Problems {
        let mut tracks: HashMap<(&str, Option<String>), Track> = HashMap::new();
        for (i, call) in calls.iter().enumerate() {
            if call.failed() {
                let track = tracks.entry(call.check()).or_default();
                // Failures since the last pass.
                if track.last_pass > track.last_failure {
                    track.failures = 0;
                }
                track.failures += 1;
                track.last_failure = Some(i);
                track.passed.clear();
                // A chain that failed at a later step passed the ones before.
                if let (Some(command), Some(report)) = (&call.command, &call.report) {
                    let before = command::checks_passed_before(command, report.tool);
                    pass(&mut tracks, call, &before, i);
                }
                continue;
            }
            // Only a recognised pass closes a problem: a status thrown away
            // (`| tail`, `|| true`) with nothing else to go by is none.
            if !call.finished() || call.report.as_ref().is_some_and(ran_nothing) || call.unsettled().is_some() {
                continue;
            }
            // A passing chain passed each of its steps (`make && ./app`),
            // and a script runner the commands it echoed (`npm run lint`).
            match &call.command {
                Some(command) => {
                    let mut keys = command::checks_passed(command);
                    if let Some(out) = &call.output {
                        let dirs = command::check_dirs(command);
                        for echoed in command::echoed_scripts(out.kept_lines()) {
                            let key = command::check_key(&echoed);
                            keys.push(match key.split_once('\u{1f}') {
                                Some((_, rest)) => format!("{dirs}\u{1f}{rest}"),
                                None => key,
                            });
                        }
                    }
                    pass(&mut tracks, call, &keys, i)
                }
                None => tracks.entry(call.check()).or_default().last_pass = Some(i),
            }
            let (Some(report), Some(command)) = (call.report.as_ref(), &call.command) else {
                continue;
            };
            let dir = command::check_dirs(command);
            for ((tool, _), track) in tracks.iter_mut() {
                let Some(failed) = track
                    .last_failure
                    .filter(|f| *tool == call.tool.as_str() && track.last_pass < Some(*f))
                else {
                    continue;
                };
                let failing = &calls[failed];
                let Some(f) = failing
                    .report
                    .as_ref()
                    .filter(|f| f.tool == report.tool && f.counted == Counted::Tests)
                else {
                    continue;
                };
                if failing.command.as_deref().map(command::check_dirs) != Some(dir.clone()) {
                    continue;
                }
                // A run of the same runner in the same directory that passed
                // at least as many tests as the failing run held ran them:
                // `node --test` failed 2 of 4, `node --test test/` passed 4.
                let passed = report.passed.unwrap_or(0);
                if passed > 0 && passed >= f.failed + f.passed.unwrap_or(usize::MAX) {
                    track.last_pass = Some(i);
                    continue;
                }
                // Otherwise it closes only the tests it selected by name or
                // file, or listed as passed.
                for failure in &f.failures {
                    let listed = report.passes.iter().any(|p| same_test(&failure.name, p));
                    if listed || (passed > 0 && selects(command, &failure.name)) {
                        track.passed.insert(failure.name.clone());
                    }
                }
                let all_named = f.failures.len() >= f.failed;
                if all_named && f.failures.iter().all(|x| track.passed.contains(&x.name)) {
                    track.last_pass = Some(i);
                }
            }
        }
        let mut open: Vec<(usize, &Track)> = tracks
            .values()
            .filter_map(|t| {
                let failed = t.last_failure?;
                (t.last_pass < Some(failed)).then_some((failed, t))
            })
            .collect();
        open.sort_unstable_by_key(|&(failed, _)| std::cmp::Reverse(failed));
        let open = open
            .into_iter()
            .map(|(i, track)| {
                let call = Arc::clone(calls[i]);
                let passed_since = call
                    .report
                    .iter()
                    .flat_map(|r| r.failures.iter())
                    .filter(|f| track.passed.contains(&f.name))
                    .map(|f| f.name.clone())
                    .collect();
                let dirs = call.command.as_deref().map(command::check_dirs);
                let passed_after = calls[i + 1..]
                    .iter()
                    .filter(|c| {
                        c.tool == call.tool
                            && c.finished()
                            && !c.failed()
                            && c.unsettled().is_none()
                            && c.command.as_deref().map(command::check_dirs) == dirs
                    })
                    .map(|c| Arc::clone(c))
                    .collect();
                Problem {
                    call,
                    failures: track.failures,
                    passed_since,
                    passed_after,
                }
            })
            .collect();
        Problems { open }
    }
}

/// Marks the checks `keys` (of a call at `i`) passed: every failing check
/// of the same tool that one of them covers (see [`command::covers`]).
fn pass(tracks: &mut HashMap<(&str, Option<String>), Track>, call: &ToolCall, keys: &[String], i: usize) {
    for ((tool, key), track) in tracks.iter_mut() {
        let covered = key
            .as_deref()
            .is_some_and(|k| keys.iter().any(|p| command::covers(p, k)));
        if *tool == call.tool.as_str() && covered && track.last_failure.is_some_and(|f| f < i) {
            track.last_pass = Some(i);
        }
    }
}

/// A run that ran no test (`no tests ran`, a selection of none) passed
/// nothing.
fn ran_nothing(report: &Report) -> bool {
    report.counted == Counted::Tests && report.failed == 0 && report.passed == Some(0)
}

/// Whether a passing test listed as `passed` is the failing test `name`:
/// the same, or `name` is it under its suites (`Queue when empty pops`
/// and `pops`).
fn same_test(name: &str, passed: &str) -> bool {
    name == passed
        || (passed.len() >= 3
            && name
                .strip_suffix(passed)
                .is_some_and(|r| r.ends_with([' ', '>', '›', ':', '.'])))
}

/// Whether `command` selects the test `name` by its own name or by its
/// file: `pytest tests/test_a.py::test_x`, `pytest -k test_x`, `go test
/// -run TestX`, `jest -t "adds item"` or `pytest tests/test_a.py` select
/// `tests/test_a.py::test_x`, `TestX` or `Cart › adds item`. Parameters
/// (`test_x[1-2]`) go with the name: selecting `test_x` runs each.
fn selects(command: &str, name: &str) -> bool {
    let bare = name.split('[').next().unwrap_or(name).trim();
    let own = bare
        .rsplit(['›', '>', ':', '/', '.'])
        .map(str::trim)
        .find(|s| !s.is_empty())
        .unwrap_or(bare);
    let file = bare.split_once("::").map(|(file, _)| file);
    [Some(own), file]
        .into_iter()
        .flatten()
        .any(|word| stands_in(command, word))
}

/// Whether `word` (at least 3 bytes) stands in `text` as a whole word: not
/// a part of a longer name.
fn stands_in(text: &str, word: &str) -> bool {
    if word.len() < 3 {
        return false;
    }
    let joins = |c: char| c.is_alphanumeric() || c == '_';
    text.match_indices(word).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + word.len()..].chars().next();
        !before.is_some_and(joins) && !after.is_some_and(joins)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_subset_run_selects_tests_by_name_or_file() {
        let pytest = "tests/test_parse.py::test_number[1 000-1000]";
        assert!(selects("pytest -q tests/test_parse.py::test_number", pytest));
        assert!(selects("pytest -k test_number", pytest));
        assert!(selects("pytest tests/test_parse.py", pytest));
        assert!(!selects("pytest -k test_numbers", pytest));
        assert!(!selects("pytest tests/test_other.py", pytest));
        assert!(selects("go test -run TestMean ./...", "TestMean"));
        assert!(!selects("go test -run TestMeanOfThree ./...", "TestMean"));
        assert!(selects("npx jest -t 'adds item'", "Cart › adds item"));
        assert!(!selects("npx jest cart", "Cart › adds item"));
    }
}
