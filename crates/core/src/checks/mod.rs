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
use families::{checker_counts, counts, dejagnu, diagnostics, doctest, minitest, rspec, tap_harness, xunit};
pub(crate) use report::re;
pub use report::{Counted, Failure, Report};
use runners::{cargo_test, ctest, go_test, jest, mocha, node_test, pytest, tap, unittest, vitest};

/// The report of the first runner or checker whose summary `text` holds:
/// the runners and checkers known by their own formats first, then the
/// formats whole families share, then any count summary by its shape, and
/// last the bare `path:line: message` lines of any compiler or linter.
///
/// A runner that prints one summary per run, found with several whole runs
/// in one output (`tox` over two environments, a `make` target that runs
/// the suite twice, a loop), gives a report of several runs
/// ([`Counted::Runs`]): whether one failed and the names they gave, no
/// count, since one run's is not the command's and the sum may not be
/// either.
pub fn read(text: &str) -> Option<Report> {
    let owned: Vec<String> = text
        .lines()
        .map(|l| crate::text::without_ansi(crate::text::as_shown(l)).into_owned())
        .collect();
    let lines: Vec<&str> = owned.iter().map(String::as_str).collect();
    let one_run: [Parser; 7] = [unittest, pytest, node_test, jest, vitest, mocha, ctest];
    let (parse, mut report) = PARSERS.iter().find_map(|parse| Some((*parse, parse(&lines)?)))?;
    // Failures counted and not named by the summary's parser: the lines
    // that say each failed name them.
    if report.counted == Counted::Tests && report.failed > 0 && report.failures.is_empty() {
        report.failures = families::verdicts(&lines, report.failed);
    }
    if report.counted == Counted::Runs || !one_run.iter().any(|p| std::ptr::fn_addr_eq(*p, parse)) {
        return Some(report);
    }
    // Each start is read again: the search is kept to outputs of the size
    // the plugin's clipping leaves (unittest finds an earlier run in any).
    if lines.len() > SPLIT_LINES {
        return Some(report);
    }
    let runs = runs(parse, &lines);
    Some(if runs.len() > 1 {
        Report::of_runs(&runs, false)
    } else {
        report
    })
}

type Parser = fn(&[&str]) -> Option<Report>;

/// Lines of an output searched for several runs, at most.
const SPLIT_LINES: usize = 400;

/// The whole runs `parse` reads in `lines`, in order: the shortest start
/// of them that it reads, then the same in the rest.
fn runs(parse: Parser, lines: &[&str]) -> Vec<Report> {
    let mut runs = Vec::new();
    let mut rest = lines;
    while let Some((end, run)) = (1..=rest.len()).find_map(|end| Some((end, parse(&rest[..end])?))) {
        runs.push(run);
        rest = &rest[end..];
    }
    runs
}

/// The runners and checkers known by their own formats first, then the
/// formats whole families share, a checker's count of its errors, then
/// any count summary by its shape, and last the bare `path:line: message`
/// lines of any compiler or linter.
const PARSERS: [Parser; 26] = [
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
    checker_counts,
    counts,
    diagnostics,
];

#[cfg(test)]
mod tests {
    use super::*;

    /// LLVM's lit: a count summary known only by its shape, its failures
    /// named by the lines that say each failed.
    #[test]
    fn a_count_known_by_its_shape_names_its_failures_by_their_verdict_lines() {
        let lit = "-- Testing: 5 tests, 2 workers --\nPASS: tally :: empty.test (1 of 5)\nFAIL: tally :: missing-file.test (4 of 5)\nFAIL: tally :: top.test (5 of 5)\n********************\nFailed Tests (2):\n  tally :: missing-file.test\n  tally :: top.test\n\n\nTesting Time: 0.05s\n\nTotal Discovered Tests: 5\n  Passed: 3 (60.00%)\n  Failed: 2 (40.00%)\n";
        let report = read(lit).expect("lit's counts are read");
        assert_eq!(report.counts(), "2 of 5 failed");
        assert_eq!(
            names(&report),
            [
                "FAIL: tally :: missing-file.test (4 of 5)",
                "FAIL: tally :: top.test (5 of 5)"
            ]
        );
    }

    /// Lines that count what is not tests: a code line under a linter's
    /// finding (`total = 0`, RuboCop), a label before what it counts
    /// (`Total: 3 warnings`, luacheck), one file's count of errors (PHP
    /// CodeSniffer), what an autofix fixed (phpcbf).
    #[test]
    fn lines_that_count_no_tests_give_no_count_of_tests() {
        let rubocop = "lib/invoice.rb:12:5: W: Lint/UselessAssignment: Useless assignment to variable - total.\n    total = 0\n    ^^^^^\n\n3 files inspected, 6 offenses detected, 4 offenses autocorrectable\n";
        let report = read(rubocop).expect("the finding is read");
        assert!(report.counts_findings() && !report.ran_none(), "{report:?}");
        let luacheck =
            "Checking src/util.lua                             OK\n\nTotal: 3 warnings / 0 errors in 3 files\n";
        assert!(read(luacheck).is_none_or(|r| r.passed.is_none() && !r.ran_none()));
        let phpcs = "FOUND 2 ERRORS AFFECTING 2 LINES\n 5 | ERROR | [x] Opening brace of a class must be on the line after\n\nFILE: src/Price.php\nFOUND 3 ERRORS AND 1 WARNING AFFECTING 2 LINES\n";
        assert!(read(phpcs).is_none_or(|r| r.counted != Counted::Tests));
        let phpcbf = "PHPCBF RESULT SUMMARY\nA TOTAL OF 4 ERRORS WERE FIXED IN 2 FILES\n";
        assert!(read(phpcbf).is_none_or(|r| r.ok()));
    }

    /// luacheck indents its findings under each file's heading, and gettext's
    /// msgfmt prints warnings of every file among its errors.
    #[test]
    fn indented_findings_are_read_and_warnings_come_last() {
        let luacheck = "Checking src/stack.lua                            2 warnings\n\n    src/stack.lua:14:15: accessing undefined variable n\n    src/stack.lua:17:20: unused argument unused\n";
        assert_eq!(
            names(&read(luacheck).expect("luacheck is read")),
            ["src/stack.lua:14", "src/stack.lua:17"]
        );
        let msgfmt = "po/es.po:2: warning: header field 'Project-Id-Version' missing in header\npo/es.po:18: 'msgid' and 'msgstr' entries do not both begin with '\\n'\nmsgfmt: found 1 fatal error\n";
        assert_eq!(
            names(&read(msgfmt).expect("msgfmt is read")),
            ["po/es.po:18", "po/es.po:2"]
        );
    }

    /// tox over two environments, each a unittest run that failed (3 of 5,
    /// then 1 of 3): neither run's count is the command's.
    const TOX: &str = include_str!("../../../../tests/fixtures/runners/tox-two-environments.txt");

    fn names(report: &Report) -> Vec<&str> {
        report.failures.iter().map(|f| f.name.as_str()).collect()
    }

    #[test]
    fn several_runs_of_a_runner_in_one_output_give_no_count() {
        let second = TOX.find("integration: commands[0]>").expect("the second environment");
        let one = read(&TOX[..second]).expect("one run is read");
        assert_eq!(
            (one.failed, one.passed, one.counts()),
            (3, Some(2), "3 of 5 failed".to_owned())
        );
        let both = read(TOX).expect("the runs are read");
        assert_eq!(both.label(), "unittest failed (several runs)");
        assert!(!both.ok());
        let all = [
            "test_dollar_sign",
            "test_whole_dollars",
            "test_single_digit_cents",
            "test_discount_rounds_to_nearest_cent",
        ];
        assert_eq!(names(&both), all);
        // Clipped as the sidecar keeps a long output: the first run's `Ran`
        // line is gone, its status line is kept.
        let long = TOX.replace("Traceback (most recent call last):", &"    frame\n".repeat(200));
        let kept = crate::text::Clipped::new(&long, 2048, 2048).kept_text();
        assert!(kept.contains("FAILED (failures=2, errors=1)") && !kept.contains("Ran 5 tests"));
        let clipped = read(&kept).expect("the runs are read");
        assert_eq!(clipped.label(), "unittest failed (several runs)");
        // Two pytest runs behind one command, and two that passed.
        let pytest = "F.\n=== 1 failed, 1 passed in 0.01s ===\n..\n=== 2 passed in 0.01s ===\n";
        assert_eq!(
            read(pytest).map(|r| r.counts()).as_deref(),
            Some("failed (several runs)")
        );
        let passed = "..\n=== 2 passed in 0.01s ===\n..\n=== 2 passed in 0.01s ===\n";
        assert_eq!(
            read(passed).map(|r| r.counts()).as_deref(),
            Some("passed (several runs)")
        );
        assert_eq!(
            read("F.\n=== 1 failed, 1 passed in 0.01s ===\n").map(|r| r.failed),
            Some(1)
        );
    }

    /// Type checkers and linters as one family: a checker's own count of
    /// its errors settles the run (also where a pipe threw its status
    /// away), `0 errors` is a clean run, and the names are its diagnostic
    /// lines, whatever the tool.
    #[test]
    fn a_checkers_count_of_its_errors_settles_the_run_with_its_lines_as_names() {
        macro_rules! fixture {
            ($name:literal) => {
                include_str!(concat!("../../../../tests/fixtures/runners/", $name))
            };
        }
        let pyright = read(fixture!("pyright-2-errors.txt")).expect("pyright is read");
        assert_eq!(
            (pyright.counts(), pyright.settles(), pyright.ok()),
            ("2 errors".to_owned(), true, false)
        );
        assert_eq!(
            names(&pyright),
            ["/tmp/capture/lint/report.py:10", "/tmp/capture/lint/report.py:17"]
        );
        assert!(pyright.failures[0]
            .detail
            .as_deref()
            .is_some_and(|d| d.starts_with("error: Operator \"+\"")));
        let clean = read(fixture!("pyright-passed.txt")).expect("a clean run is read");
        assert_eq!(
            (clean.counts(), clean.ok(), clean.settles()),
            ("no errors".to_owned(), true, true)
        );
        // `pyright | tail -n 3`: the count alone, exit status 0 (tail's).
        let tail =
            "    \"Literal['rows']\" is not assignable (reportArgumentType)\n1 error, 0 warnings, 0 informations \n";
        assert!(read(tail).is_some_and(|r| !r.ok() && r.settles() && r.failed == 1));
        let cpplint = read(fixture!("cpplint-findings.txt")).expect("cpplint is read");
        assert_eq!((cpplint.counts(), cpplint.failures.len()), ("6 errors".to_owned(), 6));
        let clang = read(fixture!("clang-werror-errors.txt")).expect("clang is read");
        assert_eq!((clang.counts(), clang.failures.len()), ("3 errors".to_owned(), 3));
        assert!(clang
            .failures
            .iter()
            .all(|f| f.detail.as_deref().is_some_and(|d| d.starts_with("error:"))));
        let stylelint = read(fixture!("stylelint-2-problems.txt")).expect("stylelint is read");
        assert_eq!(stylelint.label(), "stylelint 2 errors");
        assert_eq!(names(&stylelint), ["style.css:4", "style.css:5"]);
        // Two checkers' counts in one output: whether one had errors, no count.
        let two = "0 errors, 0 warnings, 0 informations\nTotal errors found: 2\n";
        assert_eq!(read(two).map(|r| r.counts()).as_deref(), Some("failed (several runs)"));
        // Warnings alone are findings of unknown weight, never a failure.
        let tidy = read(fixture!("clang-tidy-findings.txt")).expect("clang-tidy is read");
        assert!(tidy.counts_findings() && tidy.ok() && !tidy.settles());
    }

    /// A count summary claims a pass only with its proof: a count of
    /// failures, or a total that passes and skips make up. `Total: 6` over
    /// `Passed: 4` (uvu) is 2 failed; `Passed: 5` alone (`| grep Passed`)
    /// proves nothing.
    #[test]
    fn a_count_of_passes_alone_is_no_pass() {
        let uvu = "  Total:     6\n  Passed:    4\n  Skipped:   0\n  Duration:  15.08ms\n";
        let report = read(uvu).expect("uvu's summary is read");
        assert_eq!((report.failed, report.passed, report.ok()), (2, Some(4), false));
        let passes = read("  Passed:    5\n").expect("a count of passes is read");
        assert_eq!(
            (passes.counts(), passes.ok(), passes.settles()),
            ("5 passed".to_owned(), true, false)
        );
        assert_eq!(read("  Total:     6\n"), None);
        let all = read("  Total:     6\n  Passed:    6\n  Skipped:   0\n").expect("read");
        assert!(all.ok() && all.passed == Some(6));
    }
}
