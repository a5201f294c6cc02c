//! Test runs and checks understood: the result summaries of common test
//! runners and checkers (unittest, pytest, cargo test, go test, node's test
//! runner, jest, vitest, mocha, TAP producers such as bats, rustc through cargo, tsc, mypy, eslint, ruff,
//! shellcheck, go vet and the Go compiler), read from the kept head and tail of a
//! command's output. Every count, name and line in a [`Report`] is text of
//! that output; nothing is guessed.
//!
//! Here: which parser reads an output; `report`: the report and the
//! helpers the parsers share; `runners`: test runners; `checkers`:
//! compilers, type checkers and linters.

mod checkers;
mod families;
mod report;
mod runners;

use checkers::{eslint, go_vet, mypy, ruff, rustc, shellcheck, tsc};
use families::{counts, dejagnu, diagnostics, doctest, minitest, rspec, tap_harness, xunit};
pub(crate) use report::re;
pub use report::{Counted, Failure, Report};
use runners::{cargo_test, ctest, go_test, jest, mocha, node_test, pytest, tap, unittest, vitest};

/// The report of the first runner or checker whose summary `text` holds:
/// the runners and checkers known by their own formats first, then the
/// formats whole families share, then any count summary by its shape, and
/// last the bare `path:line: message` lines of any compiler or linter.
///
/// A runner that prints one summary per run, found with a whole run of its
/// own before the run it read (`tox` over two environments, a `make` target
/// that runs the suite twice, a loop), gives no report: its count is one
/// run's, not the command's, and the sum may not be either.
pub fn read(text: &str) -> Option<Report> {
    let owned: Vec<String> = text.lines().map(|l| strip_ansi(crate::text::as_shown(l))).collect();
    let lines: Vec<&str> = owned.iter().map(String::as_str).collect();
    let one_run: [Parser; 7] = [unittest, pytest, node_test, jest, vitest, mocha, ctest];
    for parse in PARSERS {
        if let Some(report) = parse(&lines) {
            let once = !one_run.iter().any(|p| std::ptr::fn_addr_eq(*p, parse)) || !runs_twice(parse, &lines);
            return once.then_some(report);
        }
    }
    None
}

type Parser = fn(&[&str]) -> Option<Report>;

/// Whether `lines` hold two whole runs that `parse` reads: the shortest
/// start of them that it reads, and the rest after it, each alone.
fn runs_twice(parse: Parser, lines: &[&str]) -> bool {
    (1..lines.len())
        .find(|&end| parse(&lines[..end]).is_some())
        .is_some_and(|end| parse(&lines[end..]).is_some())
}

/// The runners and checkers known by their own formats first, then the
/// formats whole families share, then any count summary by its shape, and
/// last the bare `path:line: message` lines of any compiler or linter.
const PARSERS: [Parser; 25] = [
    unittest,
    pytest,
    cargo_test,
    go_test,
    node_test,
    jest,
    vitest,
    mocha,
    ctest,
    rustc,
    tsc,
    mypy,
    eslint,
    ruff,
    shellcheck,
    go_vet,
    tap_harness,
    tap,
    xunit,
    rspec,
    minitest,
    doctest,
    dejagnu,
    counts,
    diagnostics,
];

/// `line` without terminal colour codes (`\x1b[31m`), which coloured
/// reporters (JUnit's console tree, RSpec) put around their words.
fn strip_ansi(line: &str) -> String {
    static ANSI: std::sync::LazyLock<regex::Regex> =
        std::sync::LazyLock::new(|| regex::Regex::new(r"\x1b\[[0-9;?]*[A-Za-z]").expect("a valid pattern"));
    ANSI.replace_all(line, "").into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// tox over two environments, each a unittest run that failed (3 of 5,
    /// then 1 of 3): neither run's count is the command's.
    const TOX: &str = include_str!("../../../../tests/fixtures/runners/tox-two-environments.txt");

    #[test]
    fn two_runs_of_a_runner_in_one_output_give_no_count() {
        let second = TOX.find("integration: commands[0]>").expect("the second environment");
        let one = read(&TOX[..second]).expect("one run is read");
        assert_eq!((one.failed, one.passed), (3, Some(2)));
        assert!(read(TOX).is_none());
        // Clipped as the sidecar keeps a long output: the first run's `Ran`
        // line is gone, its status line is kept.
        let long = TOX.replace("Traceback (most recent call last):", &"    frame\n".repeat(200));
        let kept = crate::text::Clipped::new(&long, 2048, 2048);
        assert!(kept.kept_text().contains("FAILED (failures=2, errors=1)"));
        assert!(!kept.kept_text().contains("Ran 5 tests"));
        assert!(read(&kept.kept_text()).is_none(), "{}", kept.kept_text());
        // Two pytest runs behind one command.
        let pytest = "F.\n=== 1 failed, 1 passed in 0.01s ===\n..\n=== 2 passed in 0.01s ===\n";
        assert!(read(pytest).is_none());
        assert_eq!(
            read("F.\n=== 1 failed, 1 passed in 0.01s ===\n").map(|r| r.failed),
            Some(1)
        );
    }
}
