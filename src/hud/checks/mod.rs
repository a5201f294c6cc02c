//! Test runs and checks understood: the result summaries of common test
//! runners and checkers (unittest, pytest, cargo test, go test, node's test
//! runner, jest, vitest, mocha, TAP producers such as bats, rustc through cargo, tsc, mypy, eslint, ruff,
//! shellcheck, go vet and the Go compiler), read from the kept head and tail of a
//! command's output. Every count, name and line in a [`Report`] is text of
//! that output; nothing is guessed.
//!
//! Here: the report and the helpers the parsers share; [`runners`]: test
//! runners; [`checkers`]: compilers, type checkers and linters.

mod checkers;
mod runners;

use checkers::{eslint, go_vet, mypy, ruff, rustc, shellcheck, tsc};
use regex::Regex;
use runners::{cargo_test, go_test, jest, mocha, node_test, pytest, tap, unittest, vitest};
use std::sync::LazyLock;

/// Failures kept per report.
const MAX_FAILURES: usize = 12;

/// What one run of a test runner or checker said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    /// The runner or checker: `unittest`, `pytest`, `cargo test`, `go test`, `node test`, `jest`, `vitest`,
    /// `rustc`, `tsc`, `mypy`, `eslint`, `ruff`.
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
const MAX_PASSES: usize = 200;

/// What a report counts: tests (a runner), or errors (a checker, a build).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Counted {
    Tests,
    Errors,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    pub name: String,
    pub detail: Option<String>,
}

impl Report {
    pub fn ok(&self) -> bool {
        self.failed == 0
    }

    /// `2 of 4 failed`, `4 passed`, `no tests ran`, `2 errors`, `no errors`.
    pub fn counts(&self) -> String {
        match (self.counted, self.passed) {
            (Counted::Errors, _) if self.failed == 0 => "no errors".to_owned(),
            (Counted::Errors, _) => format!("{} error{}", self.failed, if self.failed == 1 { "" } else { "s" }),
            (Counted::Tests, Some(0)) if self.failed == 0 => "no tests ran".to_owned(),
            (Counted::Tests, Some(passed)) if self.failed == 0 => format!("{passed} passed"),
            (Counted::Tests, Some(passed)) => format!("{} of {} failed", self.failed, self.failed + passed),
            (Counted::Tests, None) if self.failed == 0 => "passed".to_owned(),
            (Counted::Tests, None) => format!("{} failed", self.failed),
        }
    }
}

/// The report of the first runner or checker whose summary `text` holds.
pub fn read(text: &str) -> Option<Report> {
    let lines: Vec<&str> = text.lines().map(|l| l.trim_end_matches('\r')).collect();
    [
        unittest, pytest, cargo_test, go_test, node_test, jest, vitest, mocha, rustc, tsc, mypy, eslint, ruff,
        shellcheck, go_vet, tap,
    ]
    .iter()
    .find_map(|parse| parse(&lines))
}

fn re(pattern: &str) -> Regex {
    Regex::new(pattern).expect("a valid pattern: this is a bug")
}

fn num(s: &str) -> usize {
    s.parse().unwrap_or(0)
}

/// The first non-empty line at or after `from` that `keep` accepts, trimmed.
fn first_line<'a>(
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
fn push_finding(failures: &mut Vec<Failure>, at: &str, detail: Option<&str>) {
    let seen = failures.iter().any(|f| f.name == at && f.detail.as_deref() == detail);
    if failures.len() < MAX_FAILURES && !seen {
        failures.push(Failure {
            name: at.to_owned(),
            detail: detail.map(str::to_owned),
        });
    }
}

fn push(failures: &mut Vec<Failure>, name: &str, detail: Option<&str>) {
    if failures.len() < MAX_FAILURES && !failures.iter().any(|f| f.name == name) {
        failures.push(Failure {
            name: name.to_owned(),
            detail: detail.map(str::to_owned),
        });
    }
}
