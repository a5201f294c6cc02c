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

use super::checks::Counted;
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
    /// Commands that passed after the failure and may have run its check
    /// without naming it (a `make` target, `npm test`, a script), or whose
    /// check the failing wrapper may have run (a runner's summary that
    /// settles), in the folder or above it, the first two: what the HUD
    /// cannot tell of.
    pub maybe_since: Vec<String>,
}

impl Problem {
    /// Whether it is not known to be open: not rerun since, but a later
    /// pass may have run it ([`Self::maybe_since`]).
    pub fn unconfirmed(&self) -> bool {
        self.passed_since.is_empty() && !self.maybe_since.is_empty()
    }

    /// Whether the test `name` (of a finding about this failure) passed in
    /// a later run: listed there as passed, or selected by name or file by
    /// a run that passed tests.
    pub fn passed_since_named(&self, name: &str) -> bool {
        self.passed_after.iter().any(|call| {
            let selected = call.command.as_deref().is_some_and(|c| selects(c, name));
            let shown = call
                .output
                .as_ref()
                .is_some_and(|o| o.kept_lines().any(|l| pass_line_of(l, name)));
            match &call.report {
                Some(report) => {
                    shown
                        || report.passes.iter().any(|p| same_test(name, p))
                        || (report.passed.unwrap_or(0) > 0 && selected)
                }
                // No summary to count by: its own pass line, or a run that
                // selected it by name and passed.
                None => shown || selected,
            }
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

/// What a call checks: its tool, and the check's key (see [`ToolCall::check`]).
type Check<'a> = (&'a str, Option<String>);

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
        let mut tracks: HashMap<Check, Track> = HashMap::new();
        // Failures of a program that was not there (exit 127): the check and
        // the program's name, by the index of the call.
        let mut not_found: Vec<(usize, Check, String)> = Vec::new();
        // What each call checks: a read of a file another command wrote
        // (`pytest > run.log 2>&1 &`, then `tail -n 4 run.log`) checks what
        // that command checked.
        let mut writers: HashMap<String, Option<String>> = HashMap::new();
        let checks: Vec<Check> = calls
            .iter()
            .map(|call| {
                let (tool, key) = call.check();
                let Some(command) = call.command.as_deref() else {
                    return (tool, key);
                };
                if let Some(file) = key.as_deref().and_then(command::file_read) {
                    if let Some(writer) = writers.get(file) {
                        return (tool, writer.clone());
                    }
                }
                if let Some(file) = command::output_file(command) {
                    // Run in the background or not, it checks the same.
                    let ran = command.trim_end().trim_end_matches('&');
                    writers.insert(file, Some(command::check_key(ran)));
                }
                (tool, key)
            })
            .collect();
        for (i, call) in calls.iter().enumerate() {
            // A program not found before is found once a later call runs it,
            // whatever its result (that result is a problem of its own).
            if call.finished() && call.exit_code() != Some(127) {
                let check = checks[i].clone();
                for (j, key, program) in &not_found {
                    let runs_it = call.command.as_deref().is_some_and(|c| stands_in(c, program));
                    if *key != check && key.0 == check.0 && runs_it {
                        if let Some(track) = tracks.get_mut(key).filter(|t| t.last_failure == Some(*j)) {
                            track.last_pass = Some(i);
                        }
                    }
                }
            }
            if call.failed() {
                if call.exit_code() == Some(127) {
                    if let Some(program) = missing_program(call) {
                        not_found.push((i, checks[i].clone(), program));
                    }
                }
                let track = tracks.entry(checks[i].clone()).or_default();
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
                    pass(&mut tracks, calls, call, &before, i);
                }
                continue;
            }
            // Only a recognised pass closes a problem: a status thrown away
            // (`| tail`, `|| true`) with nothing else to go by is none.
            if !call.finished() || call.ran_no_tests() || call.unsettled().is_some() {
                continue;
            }
            // A passing chain passed each of its steps (`make && ./app`),
            // and a script runner the commands it echoed (`npm run lint`).
            // A read of a file passed only where what it shows says so: the
            // reader's own status says nothing of it.
            let own = call.check().1;
            if own.as_deref().and_then(command::file_read).is_some()
                && !call.report.as_ref().is_some_and(|r| r.settles() && r.ok())
            {
                continue;
            }
            match &call.command {
                // A read of a file a command wrote: that command's check.
                Some(_) if checks[i].1 != own => {
                    let keys: Vec<String> = checks[i].1.iter().cloned().collect();
                    pass(&mut tracks, calls, call, &keys, i)
                }
                Some(command) => {
                    let mut keys = command::checks_passed(command);
                    if let Some(out) = &call.output {
                        let dirs = command::check_dirs(command);
                        for echoed in command::echoed_scripts(out.kept_lines()) {
                            // A chain it ran passed each step (`deno lint &&
                            // deno test`); after a `;` only the last is known.
                            let echoed_keys = if echoed.contains(';') {
                                vec![command::check_key(&echoed)]
                            } else {
                                command::checks_passed(&echoed)
                            };
                            for key in echoed_keys {
                                keys.push(match key.split_once('\u{1f}') {
                                    Some((_, rest)) => format!("{dirs}\u{1f}{rest}"),
                                    None => key,
                                });
                            }
                        }
                    }
                    pass(&mut tracks, calls, call, &keys, i)
                }
                None => tracks.entry(checks[i].clone()).or_default().last_pass = Some(i),
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
                // The same runner, known by name or running the same script
                // (a summary known only by its shape may be any runner's).
                let same_script = failing
                    .command
                    .as_deref()
                    .and_then(command::script_run)
                    .is_some_and(|s| command::script_run(command) == Some(s));
                let Some(f) = failing.report.as_ref().filter(|f| {
                    f.tool == report.tool && (!f.tool.is_empty() || same_script) && f.counted == Counted::Tests
                }) else {
                    continue;
                };
                if failing.command.as_deref().map(command::check_dirs) != Some(dir.clone()) && !same_script {
                    continue;
                }
                let passed = report.passed.unwrap_or(0);
                // The same script run from another folder (`cd tests &&
                // tclsh all.tcl` after `tclsh tests/all.tcl`), with nothing
                // that narrows it, is the same check.
                if same_script && passed > 0 && !command::narrows(command) {
                    track.last_pass = Some(i);
                    continue;
                }
                // A run of the same runner that passed at least as many
                // tests as the failing run held in all ran as much: the same
                // program over paths only (`node --test` failed 2 of 4,
                // `node --test test/` passed 4), or a wrapper that names no
                // selection and printed that runner's summary (`make test`
                // after `python3 -m unittest`). Not where the failing run's
                // count is not its whole (it stopped at its first failure,
                // or selected some).
                let failing_command = failing.command.as_deref().unwrap_or_default();
                let whole = command::partial_run(failing_command).is_none()
                    && !command::narrows(failing_command)
                    && !command::wraps(failing_command);
                let runs_as_much = (command::same_program(failing_command, command)
                    && command::selects_paths_only(command))
                    || (command::runs_others(command) && !command::narrows(command));
                if whole
                    && runs_as_much
                    && passed > 0
                    && passed >= f.failed.saturating_add(f.passed.unwrap_or(usize::MAX))
                {
                    track.last_pass = Some(i);
                    continue;
                }
                // Any other run that is not the same check or a wider one
                // (it did not close the problem above) closes nothing,
                // however many tests it passed. The tests it selected by
                // name or file, or listed as passed, are told as passed
                // since, and the problem stays open until the failing check
                // itself passes again.
                for failure in &f.failures {
                    let listed = report.passes.iter().any(|p| same_test(&failure.name, p));
                    if listed || (passed > 0 && selects(command, &failure.name)) {
                        track.passed.insert(failure.name.clone());
                    }
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
                            && !c.ran_no_tests()
                            && c.unsettled().is_none()
                            && c.command.as_deref().map(command::check_dirs) == dirs
                    })
                    .map(|c| Arc::clone(c))
                    .collect();
                // A folder and the folders below it (`` is the project's).
                let within = |inner: &str, outer: &str| {
                    outer.is_empty() || inner == outer || inner.strip_prefix(outer).is_some_and(|r| r.starts_with('/'))
                };
                let here = dirs.clone().unwrap_or_default();
                // A failure may have been run again by a later wrapper
                // that names no selection and builds no file (`make test`,
                // `./check.sh`; not `make build/tests`, not `bash test.sh
                // --gtest_filter=…`), a wrapper's failure as a plain
                // check's: what the later one ran is not known.
                let mut maybe_since: Vec<String> = calls[i + 1..]
                    .iter()
                    .filter(|c| {
                        c.tool == call.tool
                            && c.finished()
                            && c.exit == Some(0)
                            && !c.failed()
                            && !c.ran_no_tests()
                            && c.unsettled().is_none()
                            && c.check() != call.check()
                            && c.command.as_deref().is_some_and(|cmd| {
                                let there = command::check_dirs(cmd);
                                command::runs_others(cmd) && within(&here, &there) && !command::narrows(cmd)
                            })
                    })
                    .filter_map(|c| c.command.clone())
                    .collect();
                maybe_since.dedup();
                maybe_since.truncate(2);
                Problem {
                    call,
                    failures: track.failures,
                    passed_since,
                    passed_after,
                    maybe_since,
                }
            })
            .collect();
        Problems { open }
    }
}

/// Marks the checks `keys` (of a call at `i`) passed: every failing check
/// of the same tool that one of them covers (see [`command::covers`]).
/// A run that passed fewer tests than the failing run failed cannot have
/// run them all (a focused `test.only`, a filter): it closes nothing.
fn pass(tracks: &mut HashMap<Check, Track>, calls: &[&Arc<ToolCall>], call: &ToolCall, keys: &[String], i: usize) {
    for ((tool, key), track) in tracks.iter_mut() {
        let covered = key
            .as_deref()
            .is_some_and(|k| keys.iter().any(|p| command::covers(p, k)));
        let Some(failed) = track.last_failure.filter(|&f| f < i) else {
            continue;
        };
        let fewer = match (&call.report, &calls[failed].report) {
            (Some(now), Some(then))
                if matches!(now.counted, Counted::Tests | Counted::Passed) && then.counted == Counted::Tests =>
            {
                now.passed.is_some_and(|p| p < then.failed)
            }
            _ => false,
        };
        if *tool == call.tool.as_str() && covered && !fewer {
            track.last_pass = Some(i);
        }
    }
}

/// The program a shell could not find, by its name, from what the shell
/// said (`bash: line 1: ./vendor/bin/phpunit: No such file or directory`,
/// `phpunit: command not found`).
fn missing_program(call: &ToolCall) -> Option<String> {
    static MISSING: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"(?:^|: )([^\s:]+): (?:command not found|No such file or directory|not found)\s*$")
            .expect("a valid pattern")
    });
    let output = call.output.as_ref()?;
    let path = output
        .kept_lines()
        .find_map(|l| MISSING.captures(l.trim()).map(|c| c[1].to_owned()))?;
    let name = path.rsplit('/').next().unwrap_or(&path).to_owned();
    (name.len() >= 2).then_some(name)
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

/// A test's name without its parameters (`test_x[1-2]` is `test_x`), and
/// its own name under its suites and file (`Cart › adds item` is `adds
/// item`, `tests/test_a.py::test_x` is `test_x`).
fn test_names(name: &str) -> (&str, &str) {
    let bare = name.split('[').next().unwrap_or(name).trim();
    let own = bare
        .rsplit(['›', '>', ':', '/', '.'])
        .map(str::trim)
        .find(|s| !s.is_empty())
        .unwrap_or(bare);
    (bare, own)
}

/// Whether `line` is the test `name`'s own line saying it passed: it
/// names the test (whole, or its own name under its suites), and the rest
/// says pass (`ok`, `PASS`, `passed`, `✓`, `[       OK ]`) and no failure.
fn pass_line_of(line: &str, name: &str) -> bool {
    static PASS: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"(?i)\b(?:ok|pass|passed|succeeded|success)\b|[✓✔]").expect("a valid pattern")
    });
    static FAIL: std::sync::LazyLock<regex::Regex> =
        std::sync::LazyLock::new(|| regex::Regex::new(r"(?i)fail|error|[✗✖✘]|\bnot ok\b").expect("a valid pattern"));
    let (bare, own) = test_names(name);
    let word = if line.contains(bare) { bare } else { own };
    if word.len() < 4 || !stands_in(line, word) {
        return false;
    }
    let rest = line.replacen(word, " ", 1);
    PASS.is_match(&rest) && !FAIL.is_match(&rest)
}

/// Whether `command` selects the test `name` by its own name or by its
/// file: `pytest tests/test_a.py::test_x`, `pytest -k test_x`, `go test
/// -run TestX`, `jest -t "adds item"` or `pytest tests/test_a.py` select
/// `tests/test_a.py::test_x`, `TestX` or `Cart › adds item`. Parameters
/// (`test_x[1-2]`) go with the name: selecting `test_x` runs each.
fn selects(command: &str, name: &str) -> bool {
    let (bare, own) = test_names(name);
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
        assert!(selects(
            "./build/tests --gtest_filter=StatsTest.Median",
            "StatsTest.Median"
        ));
    }

    #[test]
    fn a_tests_own_pass_line_names_it_passing() {
        assert!(pass_line_of("[       OK ] StatsTest.Median (0 ms)", "StatsTest.Median"));
        assert!(pass_line_of(
            "Checkout Applies Discount                                   | PASS |",
            "Checkout Applies Discount"
        ));
        assert!(pass_line_of(
            "  ✓ median of an even count",
            "Stats › median of an even count"
        ));
        assert!(!pass_line_of(
            "[  FAILED  ] StatsTest.Median (0 ms)",
            "StatsTest.Median"
        ));
        assert!(!pass_line_of(
            "StatsTest.Median: expected 2.5, got 2",
            "StatsTest.Median"
        ));
        assert!(!pass_line_of("ok 3 - StatsTest.Mean", "StatsTest.Median"));
    }
}
