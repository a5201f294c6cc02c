//! What one run of a test runner or checker said, and the helpers every
//! parser shares to read it.

use regex::Regex;

/// Failures kept per report.
pub(super) const MAX_FAILURES: usize = 12;

/// What one run of a test runner or checker said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    /// The runner or checker: `unittest`, `pytest`, `cargo test`, `go test`, `node test`, `jest`, `vitest`,
    /// `rustc`, `tsc`, `mypy`, `eslint`, `ruff`; empty for a count summary known only by its shape.
    pub tool: &'static str,
    /// Tests that passed, where the runner says.
    pub passed: Option<usize>,
    /// Failed tests, or errors of a checker.
    pub failed: usize,
    /// What `failed` counts.
    pub counted: Counted,
    /// What failed, in output order: a test name or `file:line`, and its key line.
    pub failures: Vec<Failure>,
    /// Tests the runner listed as passed, where it lists them (TAP's `ok`,
    /// mocha's `✔`), up to [`MAX_PASSES`].
    pub passes: Vec<String>,
}

/// Passed tests kept per report.
pub(super) const MAX_PASSES: usize = 200;

/// What a report counts: tests (a runner), errors (a checker, a build), or
/// findings whose weight the output does not say (`path:line: CODE message`
/// lines of a linter no parser knows).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Counted {
    Tests,
    Errors,
    /// Never a failure by themselves: a warnings-only linter exits 0. Where
    /// the exit status is thrown away they settle nothing.
    Findings,
    /// Findings counted in the part of a clipped output that was kept: at
    /// least this many (see [`Report::read_from_part`]).
    FindingsAtLeast,
    /// Several runs of one runner in one output (`tox` over two
    /// environments, a loop), each with a summary of its own: whether one
    /// failed is known, and the names it gave, not how many tests in all
    /// (neither one run's count nor their sum is known to be the
    /// command's). `failed` is 1 where one failed, else 0.
    Runs,
    /// Tests counted as passed where the failures are not counted (AVA's
    /// `1 test passed`, a `Passed: 5` that `| grep` left): no failure is
    /// known, and none is known absent, so it settles nothing without the
    /// exit status.
    Passed,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    pub name: String,
    pub detail: Option<String>,
}

pub(crate) fn re(pattern: &str) -> Regex {
    Regex::new(pattern).expect("a valid pattern: this is a bug")
}

pub(super) fn num(s: &str) -> usize {
    s.parse().unwrap_or(0)
}

/// The first non-empty line at or after `from` that `keep` accepts, trimmed.
pub(super) fn first_line<'a>(
    lines: &[&'a str],
    from: usize,
    stop: impl Fn(&str) -> bool,
    keep: impl Fn(&str) -> bool,
) -> Option<&'a str> {
    lines[from.min(lines.len())..]
        .iter()
        .take_while(|l| !stop(l))
        .map(|l| l.trim())
        .find(|l| !l.is_empty() && keep(l))
}

/// A checker's finding: two on one line (`report.py:6`) are two findings.
pub(super) fn push_finding(failures: &mut Vec<Failure>, at: &str, detail: Option<&str>) {
    let seen = failures.iter().any(|f| f.name == at && f.detail.as_deref() == detail);
    if failures.len() < MAX_FAILURES && !seen {
        failures.push(Failure {
            name: at.to_owned(),
            detail: detail.map(str::to_owned),
        });
    }
}

impl Report {
    /// The report of several runs of one runner in one output, from those
    /// read whole (`runs`, in output order) and the status of any other
    /// (`failed_elsewhere`: a run whose status line is all that is left).
    pub(super) fn of_runs(runs: &[Report], failed_elsewhere: bool) -> Report {
        let mut failures = Vec::new();
        for f in runs.iter().flat_map(|r| &r.failures) {
            push(&mut failures, &f.name, f.detail.as_deref());
        }
        Report {
            tool: runs.first().map_or("", |r| r.tool),
            passed: None,
            failed: usize::from(failed_elsewhere || runs.iter().any(|r| !r.ok())),
            counted: Counted::Runs,
            failures,
            passes: Vec::new(),
        }
    }
}

pub(super) fn push(failures: &mut Vec<Failure>, name: &str, detail: Option<&str>) {
    if failures.len() < MAX_FAILURES && !failures.iter().any(|f| f.name == name) {
        failures.push(Failure {
            name: name.to_owned(),
            detail: detail.map(str::to_owned),
        });
    }
}

impl Report {
    /// Whether the report says nothing failed. Findings of unknown weight
    /// never say that anything did.
    pub fn ok(&self) -> bool {
        self.failed == 0 || self.counts_findings()
    }

    /// Whether it counts findings (exactly or at least).
    pub fn counts_findings(&self) -> bool {
        matches!(self.counted, Counted::Findings | Counted::FindingsAtLeast)
    }

    /// The report of one of several runs (a loop's pass): whether one
    /// failed and the names it gave, no count of tests.
    pub fn as_one_of_runs(&mut self) {
        if self.counted == Counted::Tests {
            self.counted = Counted::Runs;
            self.failed = usize::from(self.failed > 0);
            self.passed = None;
        }
    }

    /// Read from the part of a clipped output that was kept: findings
    /// counted line by line are then only a lower bound. A runner's
    /// summary states its own counts and stays as it is.
    pub fn read_from_part(&mut self) {
        if self.counted == Counted::Findings {
            self.counted = Counted::FindingsAtLeast;
        }
    }

    /// Whether the run ran no test: a runner's summary that counts none
    /// passed and none failed.
    pub fn ran_none(&self) -> bool {
        self.counted == Counted::Tests && self.failed == 0 && self.passed == Some(0)
    }

    /// Whether the report settles the run's outcome without its exit
    /// status: a runner's or checker's summary does, findings do not.
    pub fn settles(&self) -> bool {
        !self.counts_findings() && self.counted != Counted::Passed
    }

    /// `unittest 2 of 4 failed`: the tool, where it is known, and the counts.
    pub fn label(&self) -> String {
        if self.tool.is_empty() {
            self.counts()
        } else {
            format!("{} {}", self.tool, self.counts())
        }
    }

    /// `2 of 4 failed`, `4 passed`, `no tests ran`, `2 errors`, `no errors`,
    /// `failed (several runs)`.
    pub fn counts(&self) -> String {
        match (self.counted, self.passed) {
            (Counted::Findings, _) => format!("{} finding{}", self.failed, if self.failed == 1 { "" } else { "s" }),
            (Counted::FindingsAtLeast, _) => format!(
                "at least {} finding{}",
                self.failed,
                if self.failed == 1 { "" } else { "s" }
            ),
            (Counted::Errors, _) if self.failed == 0 => "no errors".to_owned(),
            (Counted::Errors, _) => format!("{} error{}", self.failed, if self.failed == 1 { "" } else { "s" }),
            (Counted::Tests, Some(0)) if self.failed == 0 => "no tests ran".to_owned(),
            (Counted::Tests, Some(passed)) if self.failed == 0 => format!("{passed} passed"),
            (Counted::Tests, Some(passed)) => format!("{} of {} failed", self.failed, self.failed + passed),
            (Counted::Runs, _) if self.failed == 0 => "passed (several runs)".to_owned(),
            (Counted::Runs, _) => "failed (several runs)".to_owned(),
            (Counted::Tests | Counted::Passed, None) if self.failed == 0 => "passed".to_owned(),
            (Counted::Passed, Some(passed)) => format!("{passed} passed"),
            (Counted::Passed, None) => "passed".to_owned(),
            (Counted::Tests, None) => format!("{} failed", self.failed),
        }
    }
}
