//! Summary formats shared by whole families of tools, read wherever they
//! stand in an output (behind `make`, `npm run`, `rake`, a script or a
//! pipe), never by the program's name: xUnit summaries (JUnit 4 and 5,
//! Maven Surefire, PHPUnit, a runner of one's own in their words), RSpec's and minitest's, a TAP harness's
//! (`prove`), doctest's, any runner's count summary by its shape (`2
//! tests, 1 passed, 1 failed`), a checker's count of its errors by its
//! shape (`2 errors, 0 warnings`), and `path:line[:col]: message`
//! diagnostics.

use super::report::*;
use regex::Regex;
use std::sync::LazyLock;

/// The numbered failure blocks of an xUnit or minitest report: `1) name`
/// (or `1) Failure:` then the name) and the first line under it that says
/// something.
fn numbered_failures(
    lines: &[&str],
    failures: &mut Vec<Failure>,
    name_of: impl Fn(&[&str], usize) -> Option<(String, usize)>,
) {
    static NUMBERED: LazyLock<Regex> = LazyLock::new(|| re(r"^\s*\d+\) \S"));
    for i in 0..lines.len() {
        if !NUMBERED.is_match(lines[i]) {
            continue;
        }
        let Some((name, body)) = name_of(lines, i) else {
            continue;
        };
        let detail = first_line(
            lines,
            body,
            |l| NUMBERED.is_match(l),
            |l| crate::text::has_words(l) && !l.starts_with("at ") && !l.ends_with(':'),
        );
        push(failures, &name, detail);
    }
}

/// JUnit 5's console launcher (`[ 2 tests failed ]`, with `JUnit
/// Jupiter:CalcTest:testAdd()` and `=> …` under `Failures (2):`), JUnit 4
/// and Maven Surefire (`Tests run: 6, Failures: 2, Errors: 0`, `OK (6
/// tests)`, `1) testAdd(CalcTest)`), PHPUnit (`Tests: 7, Assertions: 9,
/// Failures: 2.`, `OK (7 tests, 9 assertions)`, `1) InvoiceTest::testAdd`).
pub(super) fn xunit(lines: &[&str]) -> Option<Report> {
    static BOX: LazyLock<Regex> =
        LazyLock::new(|| re(r"^\[\s*(\d+) tests (successful|failed|aborted|found|skipped|started)\s*\]$"));
    static RUN: LazyLock<Regex> = LazyLock::new(|| {
        re(r"^(?:\[\w+\]\s+)?Tests run: (\d+),\s+Failures: (\d+)(?:,\s+Errors: (\d+))?(?:,\s+Skipped: (\d+))?")
    });
    static PHPUNIT: LazyLock<Regex> =
        LazyLock::new(|| re(r"^Tests: (\d+), Assertions: \d+((?:, [A-Z][a-z]+: \d+)*)\.$"));
    static PHP_COUNT: LazyLock<Regex> = LazyLock::new(|| re(r"(Errors|Failures|Skipped|Incomplete|Risky): (\d+)"));
    static OK: LazyLock<Regex> = LazyLock::new(|| re(r"^OK \((\d+) tests?(?:, \d+ assertions?)?\)$"));
    // The shape alone is any xUnit runner's (a home-made one prints `Tests
    // run: 4, Failures: 2` too): JUnit only where it says so, on every run
    // alike, pass or fail (JUnit 4's `JUnit version` header, Surefire's banner).
    let junit = lines.iter().any(|l| {
        let l = l.trim();
        l.starts_with("JUnit version ") || l.ends_with("T E S T S") || l.contains("maven-surefire-plugin")
    });
    let xunit = if junit { "junit" } else { "xunit" };
    let (tool, passed, failed) = if lines.iter().any(|l| BOX.is_match(l.trim())) {
        let (mut ok, mut failed) = (0, 0);
        for c in lines.iter().filter_map(|l| BOX.captures(l.trim())) {
            match &c[2] {
                "successful" => ok = num(&c[1]),
                "failed" | "aborted" => failed += num(&c[1]),
                _ => {}
            }
        }
        ("junit", ok, failed)
    } else if let Some(c) = lines.iter().rev().find_map(|l| RUN.captures(l.trim())) {
        let counts = |c: &regex::Captures| {
            let failed = num(&c[2]) + c.get(3).map_or(0, |m| num(m.as_str()));
            let skipped = c.get(4).map_or(0, |m| num(m.as_str()));
            (num(&c[1]).saturating_sub(failed + skipped), failed)
        };
        // A line with its time (`Time elapsed: 0.07 sec`) is one test
        // class's; the whole run's total (Surefire's `Results:`, JUnit 4's
        // runner) has none. With no total, several classes' lines (Ant's
        // `<junit>`, which may print each twice) say whether one failed,
        // and no count: neither one class's count nor their sum is known to
        // be the command's. A line printed twice in a row (Ant's summary,
        // then its formatter's) is one class's.
        let per_class = |l: &&&str| l.contains("Time elapsed");
        let runs: Vec<regex::Captures> = lines
            .iter()
            .enumerate()
            .filter(|&(i, l)| i == 0 || lines[i - 1] != *l)
            .filter_map(|(_, l)| RUN.captures(l.trim()))
            .collect();
        match lines
            .iter()
            .rev()
            .filter(|l| !per_class(l))
            .find_map(|l| RUN.captures(l.trim()))
        {
            Some(total) => {
                let (passed, failed) = counts(&total);
                (xunit, passed, failed)
            }
            None if runs.len() > 1 => {
                return Some(Report {
                    tool: xunit,
                    passed: None,
                    failed: usize::from(runs.iter().any(|c| counts(c).1 > 0)),
                    counted: Counted::Runs,
                    failures: xunit_failures(lines),
                    passes: Vec::new(),
                });
            }
            None => {
                let (passed, failed) = counts(&c);
                (xunit, passed, failed)
            }
        }
    } else if let Some(c) = lines.iter().rev().find_map(|l| PHPUNIT.captures(l.trim())) {
        let (mut failed, mut skipped) = (0, 0);
        for k in PHP_COUNT.captures_iter(&c[2]) {
            match &k[1] {
                "Errors" | "Failures" => failed += num(&k[2]),
                _ => skipped += num(&k[2]),
            }
        }
        ("phpunit", num(&c[1]).saturating_sub(failed + skipped), failed)
    } else {
        let c = lines.iter().rev().find_map(|l| OK.captures(l.trim()))?;
        let tool = if lines.iter().any(|l| l.starts_with("PHPUnit ")) {
            "phpunit"
        } else {
            xunit
        };
        (tool, num(&c[1]), 0)
    };
    Some(Report {
        tool,
        passed: Some(passed),
        failed,
        counted: Counted::Tests,
        failures: xunit_failures(lines),
        passes: Vec::new(),
    })
}

/// The failures an xUnit report names: JUnit 5's `Failures (N):` section,
/// the numbered blocks (`1) testAdd(CalcTest)`), or JUnit's plain and brief
/// formatters' `Testcase: name(Class): FAILED` (Ant's `<junit>`).
fn xunit_failures(lines: &[&str]) -> Vec<Failure> {
    static JUPITER: LazyLock<Regex> = LazyLock::new(|| re(r"^\s*JUnit (?:Jupiter|Vintage|Platform Suite):(.+)$"));
    static TESTCASE: LazyLock<Regex> =
        LazyLock::new(|| re(r"^(?:\[\w+\]\s+)?Testcase: (.+?):\s+(?:FAILED|Caused an ERROR)$"));
    let mut failures = Vec::new();
    // JUnit 5: the `Failures (N):` section.
    for (i, l) in lines.iter().enumerate() {
        if let Some(c) = JUPITER.captures(l) {
            let name = c[1].split(':').filter(|p| !p.is_empty()).collect::<Vec<_>>().join(".");
            let detail = lines[i + 1..]
                .iter()
                .take(6)
                .map(|l| l.trim())
                .find_map(|l| l.strip_prefix("=> "));
            push(&mut failures, &name, detail);
        }
    }
    if failures.is_empty() {
        numbered_failures(lines, &mut failures, |lines, i| {
            let name = lines[i].trim().split_once(") ")?.1.trim().to_owned();
            Some((name, i + 1))
        });
    }
    for (i, l) in lines.iter().enumerate() {
        if let Some(c) = TESTCASE.captures(l.trim()) {
            // The message under it, as the formatter prints it: `[junit]
            // expected:<…>`, or the exception's line where it has none.
            let detail = lines[i + 1..]
                .iter()
                .take(3)
                .map(|l| l.trim().trim_start_matches("[junit]").trim())
                .find(|l| crate::text::has_words(l) && *l != "null" && !l.starts_with("at "));
            push(&mut failures, &c[1], detail);
        }
    }
    failures
}

/// RSpec and runners that count in its words (Hspec): `3 examples, 1
/// failure` (`, 2 pending`), `rspec ./spec/cart_spec.rb:12
/// # Cart#total applies the discount`, and the numbered block's
/// `Failure/Error:` and `expected` lines.
pub(super) fn rspec(lines: &[&str]) -> Option<Report> {
    static SUMMARY: LazyLock<Regex> = LazyLock::new(|| {
        re(r"^(\d+) examples?, (\d+) failures?(?:, (\d+) pending)?(?:, (\d+) errors? occurred outside of examples)?")
    });
    static RERUN: LazyLock<Regex> = LazyLock::new(|| re(r"^rspec (\S+) # (.+)$"));
    static BLOCK: LazyLock<Regex> = LazyLock::new(|| re(r"^\s+\d+\) (.+)$"));
    let c = lines.iter().rev().find_map(|l| SUMMARY.captures(l.trim()))?;
    let examples = num(&c[1]);
    let failed = num(&c[2]) + c.get(4).map_or(0, |m| num(m.as_str()));
    let pending = c.get(3).map_or(0, |m| num(m.as_str()));
    let mut failures = Vec::new();
    for r in lines.iter().filter_map(|l| RERUN.captures(l.trim())) {
        let name = r[2].trim();
        let block = lines
            .iter()
            .position(|l| BLOCK.captures(l).is_some_and(|b| b[1].trim() == name));
        let detail = block.and_then(|b| {
            let stop = |l: &str| BLOCK.is_match(l) || l.starts_with("rspec ");
            let expected = first_line(lines, b + 1, stop, |l| l.starts_with("expected"));
            let got = first_line(lines, b + 1, stop, |l| l.starts_with("got:"));
            match (expected, got) {
                (Some(e), Some(g)) => Some(format!("{e}, {g}")),
                (Some(e), None) => Some(e.to_owned()),
                _ => first_line(lines, b + 1, stop, |l| l.starts_with("Failure/Error:"))
                    .map(|l| l.trim_start_matches("Failure/Error:").trim().to_owned()),
            }
        });
        push(&mut failures, name, detail.as_deref());
    }
    // Other runners count in RSpec's words (Hspec: `8 examples, 4
    // failures`): RSpec only where it says so, pass or fail (`Finished in
    // 0.01 seconds (files took 0.1 seconds to load)`, `rspec ./spec/…`).
    let own = lines
        .iter()
        .any(|l| (l.contains("(files took ") && l.contains(" to load)")) || RERUN.is_match(l.trim()));
    Some(Report {
        tool: if own { "rspec" } else { "" },
        passed: Some(examples.saturating_sub(num(&c[2]) + pending)),
        failed,
        counted: Counted::Tests,
        failures,
        passes: Vec::new(),
    })
}

/// minitest: `4 runs, 4 assertions, 1 failures, 0 errors, 0 skips`, and
/// `1) Failure:` blocks naming `TestCart#test_total [test/test_cart.rb:10]:`.
pub(super) fn minitest(lines: &[&str]) -> Option<Report> {
    static SUMMARY: LazyLock<Regex> =
        LazyLock::new(|| re(r"^(\d+) (?:runs|tests), (\d+) assertions, (\d+) failures, (\d+) errors, (\d+) skips"));
    static NAME: LazyLock<Regex> = LazyLock::new(|| re(r"^(\S+#\S+?)(?: \[.*\])?:?$"));
    let c = lines.iter().rev().find_map(|l| SUMMARY.captures(l.trim()))?;
    let failed = num(&c[3]) + num(&c[4]);
    let mut failures = Vec::new();
    numbered_failures(lines, &mut failures, |lines, i| {
        let header = lines[i].trim();
        if !(header.ends_with("Failure:") || header.ends_with("Error:")) {
            return None;
        }
        let name = NAME.captures(lines.get(i + 1)?.trim())?[1].to_owned();
        Some((name, i + 2))
    });
    Some(Report {
        tool: "minitest",
        passed: Some(num(&c[1]).saturating_sub(failed + num(&c[5]))),
        failed,
        counted: Counted::Tests,
        failures,
        passes: Vec::new(),
    })
}

/// A TAP harness's summary (Perl's `prove`, `Test::Harness`): `Result:
/// FAIL` or `PASS`, `Files=2, Tests=6`, and under `Test Summary Report`
/// each file with `Failed: N` and its `Failed tests:` numbers. Its verdict
/// stands over the TAP lines of the files it ran.
pub(super) fn tap_harness(lines: &[&str]) -> Option<Report> {
    static RESULT: LazyLock<Regex> = LazyLock::new(|| re(r"^Result: (PASS|FAIL|NOTESTS)$"));
    static FILES: LazyLock<Regex> = LazyLock::new(|| re(r"^Files=(\d+), Tests=(\d+),"));
    static FILE: LazyLock<Regex> = LazyLock::new(|| re(r"^(\S+) \(Wstat: .*Tests: (\d+) Failed: (\d+)\)$"));
    static FAILED_TESTS: LazyLock<Regex> = LazyLock::new(|| re(r"^Failed tests?:\s+(.+)$"));
    static NOT_OK: LazyLock<Regex> = LazyLock::new(|| re(r"^\s*not ok \d+(?: -)? (.+?)(?: # .*)?$"));
    static FAILED_N: LazyLock<Regex> = LazyLock::new(|| re(r"^Failed (\d+)/(\d+) (?:test programs|subtests)"));
    static FAILED_TEST: LazyLock<Regex> = LazyLock::new(|| re(r#"^#\s+Failed test ['"](.+)['"]$"#));
    let result = lines.iter().rev().find_map(|l| RESULT.captures(l.trim()))?;
    let tests = lines
        .iter()
        .rev()
        .find_map(|l| FILES.captures(l.trim()))
        .map(|c| num(&c[2]));
    let mut failures = Vec::new();
    let mut failed = 0;
    for (i, l) in lines.iter().enumerate() {
        if let Some(c) = FILE.captures(l.trim()) {
            failed += num(&c[3]);
            let which = lines
                .get(i + 1)
                .and_then(|n| FAILED_TESTS.captures(n.trim()))
                .map(|t| format!("failed tests {}", t[1].trim()));
            push(&mut failures, &c[1], which.as_deref());
        }
    }
    // Names of the failed tests, where the TAP lines or Test::More's
    // diagnostics (`#   Failed test 'name'`, then `#   at t/x.t line 6.`
    // and its `got:` and `expected:`) are in the output.
    let mut named = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        if let Some(c) = FAILED_TEST.captures(l) {
            let below: Vec<&str> = lines[i + 1..]
                .iter()
                .take_while(|l| l.starts_with('#') && !FAILED_TEST.is_match(l))
                .map(|l| l.trim_start_matches('#').trim())
                .collect();
            let got = below.iter().find(|l| l.starts_with("got:"));
            let expected = below.iter().find(|l| l.starts_with("expected:"));
            let detail = match (got, expected) {
                (Some(g), Some(e)) => Some(format!("{g}, {e}")),
                _ => below.first().map(|l| (*l).to_owned()),
            };
            push(&mut named, &c[1], detail.as_deref());
        } else if let Some(c) = NOT_OK.captures(l) {
            push(&mut named, c[1].trim(), None);
        }
    }
    if !named.is_empty() {
        failures = named;
    }
    if &result[1] == "FAIL" && failed == 0 {
        // A file that died before its plan (`Failed 1/3 test programs`).
        failed = lines
            .iter()
            .find_map(|l| FAILED_N.captures(l.trim()))
            .map_or(1, |c| num(&c[1]).max(1));
    }
    if &result[1] == "PASS" {
        failed = 0;
    }
    Some(Report {
        tool: "prove",
        passed: tests.map(|t| t.saturating_sub(failed)),
        failed,
        counted: Counted::Tests,
        failures,
        passes: Vec::new(),
    })
}

/// The summary DejaGnu prints and SRFI-64's test runners (Guile, Chibi,
/// Gauche) print in its words: `# of expected passes      2`, `# of
/// unexpected failures  1`, with `FAIL: name` (DejaGnu) or `file:line: FAIL
/// name` (SRFI-64) lines. Expected failures (XFAIL), untested and
/// unsupported cases are not failures; unexpected successes (XPASS) are
/// neither passes nor failures here. One block is one run's; where the
/// output holds several (a script over several files, or one printed
/// twice), the sum or one of them may be the command's: no count then.
pub(super) fn dejagnu(lines: &[&str]) -> Option<Report> {
    static COUNT: LazyLock<Regex> = LazyLock::new(|| {
        re(
            r"^#\s+of\s+(expected passes|unexpected failures|expected failures|unexpected successes|unresolved testcases|untested testcases|unsupported tests|skipped tests)\s+(\d+)$",
        )
    });
    static FAIL: LazyLock<Regex> = LazyLock::new(|| re(r"^(?:\S+:\d+:\s+)?FAIL:?\s+(.+)$"));
    let at: Vec<usize> = (0..lines.len()).filter(|&i| COUNT.is_match(lines[i].trim())).collect();
    // Counts on consecutive lines make one block.
    if at.is_empty() || at.windows(2).any(|w| w[1] != w[0] + 1) {
        return None;
    }
    let (mut passed, mut failed) = (0, 0);
    for c in at.iter().filter_map(|&i| COUNT.captures(lines[i].trim())) {
        match &c[1] {
            "expected passes" => passed += num(&c[2]),
            "unexpected failures" | "unresolved testcases" => failed += num(&c[2]),
            _ => {}
        }
    }
    let mut failures = Vec::new();
    if failed > 0 {
        for c in lines.iter().filter_map(|l| FAIL.captures(l.trim())) {
            push(&mut failures, c[1].trim(), None);
        }
    }
    Some(Report {
        tool: "",
        passed: Some(passed),
        failed,
        counted: Counted::Tests,
        failures,
        passes: Vec::new(),
    })
}

/// Python's doctest: `***Test Failed*** 2 failures.` with `File "units.py",
/// line 5, in units.to_km` blocks (their `Expected:` and `Got:`), or with
/// `-v` `3 passed and 0 failed.` and `Test passed.`
pub(super) fn doctest(lines: &[&str]) -> Option<Report> {
    static FAILED: LazyLock<Regex> = LazyLock::new(|| re(r"^\*\*\*Test Failed\*\*\* (\d+) failures?\.$"));
    static VERBOSE: LazyLock<Regex> = LazyLock::new(|| re(r"^(\d+) passed and (\d+) failed\.$"));
    static AT: LazyLock<Regex> = LazyLock::new(|| re(r#"^File ".+", line \d+, in (\S+)$"#));
    let verbose = lines.iter().rev().find_map(|l| VERBOSE.captures(l.trim()));
    let failed = lines
        .iter()
        .rev()
        .find_map(|l| FAILED.captures(l.trim()))
        .map(|c| num(&c[1]));
    let (passed, failed) = match (verbose, failed) {
        (Some(v), _) => (Some(num(&v[1])), num(&v[2])),
        (None, Some(f)) => (None, f),
        (None, None) => return None,
    };
    let mut failures = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        let Some(c) = AT.captures(l.trim()) else { continue };
        let block: Vec<&str> = lines[i + 1..]
            .iter()
            .take_while(|l| !l.starts_with("*****"))
            .map(|l| l.trim())
            .collect();
        let after = |label: &str| {
            let at = block.iter().position(|l| *l == label)?;
            block.get(at + 1).copied()
        };
        let detail = match (after("Expected:"), after("Got:")) {
            (Some(e), Some(g)) => Some(format!("expected {e}, got {g}")),
            _ => block
                .iter()
                .find(|l| crate::text::LineSays::quotable(l))
                .map(|l| (*l).to_owned()),
        };
        push_finding(&mut failures, &c[1], detail.as_deref());
    }
    Some(Report {
        tool: "doctest",
        passed,
        failed,
        counted: Counted::Tests,
        failures,
        passes: Vec::new(),
    })
}

/// What a count in a summary counts.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Tally {
    Failed,
    Passed,
    Skipped,
    /// Tests in all, by their noun's rank: scenarios, tests, specs,
    /// examples, cases and checks (2) before features (1) and steps (0).
    Total(u8),
}

/// Whether a count line counts tests or how they went, where it counts
/// errors: `Some(false)` for errors and warnings alone (`3 errors, 1
/// warning`), `None` where it counts no errors.
fn counts_tests(line: &str) -> Option<bool> {
    static ERRORS: LazyLock<Regex> = LazyLock::new(|| re(r"(?i)\b\d+\s+(?:\w+\s+)?errors?\b|\berrors?\s*[:=]\s*\d"));
    static TESTS: LazyLock<Regex> = LazyLock::new(|| {
        re(
            r"(?i)\b(?:pass(?:ed|es|ing)?|fail(?:ed|ures?|ing)?|tests?|specs?|examples?|scenarios?|cases?|checks?|assertions?|ok|skipped|pending)\b",
        )
    });
    ERRORS.is_match(line).then(|| TESTS.is_match(line))
}

fn tally(noun: &str) -> Option<Tally> {
    let noun = noun.to_ascii_lowercase();
    Some(match noun.as_str() {
        "failed" | "failure" | "failures" | "error" | "errors" | "errored" | "failing" | "broken" | "fail" => {
            Tally::Failed
        }
        "passed" | "passing" | "passes" | "ok" | "succeeded" | "successful" | "pass" => Tally::Passed,
        "skipped" | "pending" | "undefined" | "ignored" | "todo" => Tally::Skipped,
        "feature" | "features" => Tally::Total(1),
        "step" | "steps" => Tally::Total(0),
        "test" | "tests" | "spec" | "specs" | "example" | "examples" | "scenario" | "scenarios" | "case" | "cases"
        | "check" | "checks" | "total" => Tally::Total(2),
        _ => return None,
    })
}

/// Any runner's count summary, by its shape rather than its name: `2
/// tests, 1 passed, 1 failed` (Robot), `test cases: 8 | 7 passed | 1
/// failed` (Catch2), `4 scenarios (2 failed, 2 passed)` (Cucumber), `1
/// spec, 0 failures` (Jasmine), `Checks: 2, Failures: 0, Errors: 0` (Check),
/// `[  FAILED  ] 2 tests, listed below:` (GoogleTest), `2 tests failed`
/// (AVA). Read from the last summary line that counts tests and the ones
/// just above it of the same kind; a line of steps or features counts only
/// where none counts tests. No names: [`super::read`] takes the lines that
/// say each one failed ([`verdicts`]).
pub(super) fn counts(lines: &[&str]) -> Option<Report> {
    static COUNT: LazyLock<Regex> = LazyLock::new(|| {
        re(
            r"(?i)\b(\d+)\s+(?:(\w+)\s+)?([a-z]+)\b|\b([a-z]+)(?: run)?(?:\s*:\s*|=)(\d+)\b|\[\s*(PASSED|FAILED)\s*\]\s+(\d+) tests?\b",
        )
    });
    static LABEL: LazyLock<Regex> = LazyLock::new(|| re(r"(?i)\b([a-z]+)(?::|=)?\s+(\d+)\b"));
    static NUMBER_FIRST: LazyLock<Regex> = LazyLock::new(|| re(r"(?i)\b\d+\s+([a-z]+)\b"));
    static OF: LazyLock<Regex> =
        LazyLock::new(|| re(r"(?i)\b(\d+)(?:\s+(?:of|out of)\s+|\s*/\s*)(\d+)\s+([a-z]+)(?:\s+([a-z]+))?"));
    // The counts of one line, summed by what they count, and the rank of
    // the tests they count.
    let read = |line: &str| -> ([Option<usize>; 4], Option<u8>) {
        let mut sums = [None; 4];
        let mut rank = None;
        // The rank of tests named only beside how they went (`1 scenario passed`).
        let mut named: Option<u8> = None;
        let mut add = |t: Tally, n: usize| {
            let slot = match t {
                Tally::Failed => 0,
                Tally::Passed => 1,
                Tally::Skipped => 2,
                Tally::Total(r) => {
                    rank = rank.max(Some(r));
                    3
                }
            };
            *sums[slot].get_or_insert(0) += n;
        };
        // `2 of 3 tests failed`, `1 out of 4 specs passed`, `2/5 test
        // failures` (raco test): a count of a total.
        for c in OF.captures_iter(line) {
            let (n, of) = (num(&c[1]), num(&c[2]));
            let named = tally(&c[3]);
            let how = c.get(4).and_then(|w| tally(w.as_str()));
            match (named, how) {
                (Some(Tally::Total(r)), Some(t @ (Tally::Failed | Tally::Passed | Tally::Skipped))) => {
                    add(t, n);
                    add(Tally::Total(r), of);
                }
                (Some(t @ (Tally::Failed | Tally::Passed | Tally::Skipped)), _) => {
                    add(t, n);
                    add(Tally::Total(2), of);
                }
                _ => {}
            }
        }
        let line = OF.replace_all(line, " ");
        // `Total 6 Passed 4 Skipped 0 Failed 2` (tcltest): each word before
        // its number, where that reads more counts than the other way.
        let before: Vec<(Tally, usize)> = LABEL
            .captures_iter(&line)
            .filter_map(|c| Some((tally(&c[1])?, num(&c[2]))))
            .collect();
        let after = NUMBER_FIRST
            .captures_iter(&line)
            .filter(|c| tally(&c[1]).is_some())
            .count();
        if before.len() >= 2 && before.len() > after {
            for (t, n) in before {
                add(t, n);
            }
            return (sums, rank.max(named));
        }
        for c in COUNT.captures_iter(&line) {
            if let (Some(word), Some(n)) = (c.get(6), c.get(7)) {
                let t = if word.as_str().eq_ignore_ascii_case("PASSED") {
                    Tally::Passed
                } else {
                    Tally::Failed
                };
                add(t, num(n.as_str()));
                named = named.max(Some(2));
            } else if let (Some(n), Some(noun)) = (c.get(1), c.get(3)) {
                // `2 tests failed`, `2 FAILED TESTS`, `1 scenario passed`: the
                // word that says how they went counts them; the other names them.
                let middle = c.get(2).map(|m| tally(m.as_str()));
                match (middle, tally(noun.as_str())) {
                    (Some(Some(Tally::Total(r))), Some(t @ (Tally::Failed | Tally::Passed | Tally::Skipped)))
                    | (Some(Some(t @ (Tally::Failed | Tally::Passed | Tally::Skipped))), Some(Tally::Total(r))) => {
                        add(t, num(n.as_str()));
                        named = named.max(Some(r));
                    }
                    (None, Some(t)) => add(t, num(n.as_str())),
                    // `3 failed of 5 test cases` (common_test): the word
                    // after the count says how they went.
                    (Some(Some(t @ (Tally::Failed | Tally::Passed | Tally::Skipped))), None) => {
                        add(t, num(n.as_str()));
                    }
                    // `of 5 test cases`: a total in two words.
                    (Some(Some(Tally::Total(r))), Some(Tally::Total(_))) => add(Tally::Total(r), num(n.as_str())),
                    // `4 Tests Encountered` (ward), `6 tests from 2 test
                    // suites ran` (GoogleTest): tests in all, by a word that
                    // says so (not `6 tests containing 9 assertions`, whose
                    // failures count assertions, nor `2 test suites`).
                    (Some(Some(Tally::Total(r))), None)
                        if matches!(
                            noun.as_str().to_ascii_lowercase().as_str(),
                            "encountered" | "found" | "collected" | "executed" | "run" | "ran" | "from"
                        ) =>
                    {
                        add(Tally::Total(r), num(n.as_str()))
                    }
                    _ => {}
                }
            } else if let (Some(noun), Some(n)) = (c.get(4), c.get(5)) {
                // `Total: 3 warnings`: the number counts the word after it,
                // not what the label names.
                let counts_next = line[c.get(0).map_or(line.len(), |m| m.end())..]
                    .split_whitespace()
                    .next()
                    .is_some_and(|w| w.starts_with(|ch: char| ch.is_ascii_alphabetic()) && tally(w).is_none());
                if let Some(t) = tally(noun.as_str()).filter(|_| !counts_next) {
                    add(t, num(n.as_str()));
                }
            }
        }
        (sums, rank.max(named))
    };
    static EXPECTED: LazyLock<Regex> = LazyLock::new(|| re(r"(?i)\b(?:expected|unexpected)(?:ly)?\s+(?:fail|pass)"));
    // Summary lines that count how tests went, with their counts and rank.
    let summaries: Vec<(usize, [Option<usize>; 4], Option<u8>)> = lines
        .iter()
        .enumerate()
        // A count of what an autofix fixed is no count of failures, and a
        // count of errors and warnings alone is a checker's, not of tests
        // (`FOUND 3 ERRORS AND 1 WARNING AFFECTING 2 LINES`, one file's).
        // An expected failure or an unexpected pass (meson's `Expected Fail:
        // 0`, `Unexpected Pass: 0`) is neither a failure nor a pass.
        .filter(|(_, l)| {
            crate::text::summary_line(l)
                && !crate::text::fixed_line(l)
                && counts_tests(l).is_none_or(|t| t)
                && !EXPECTED.is_match(l)
        })
        .map(|(i, l)| {
            let (sums, rank) = read(l);
            (i, sums, rank)
        })
        .filter(|(_, sums, _)| sums[0].is_some() || sums[1].is_some() || sums[3].is_some())
        .collect();
    let best = summaries.iter().filter_map(|(_, _, r)| *r).max();
    let &(last, _, _) = summaries.iter().rev().find(|(_, _, r)| *r == best)?;
    // The last such line and those near it of the same rank or of none
    // (GoogleTest's `[  PASSED  ] 1 test.` over its `[  FAILED  ] 2 tests`,
    // `Ran 4 tests.` over `FAILED (failures=2)`), each count taken from the
    // latest line that has it.
    let mut counts: [Option<usize>; 4] = [None; 4];
    let near = summaries.iter().rev().filter(|(i, _, _)| i.abs_diff(last) <= 6);
    // Lines that count the tests first; lines that count nothing named
    // (`assertions: 9 | 8 passed`, `FAILED (failures=2)`) fill what they lack.
    // A line that counts differently what is already taken is another
    // suite's summary (a script that runs several runners), not more of
    // this one: it adds nothing.
    let agrees = |counts: &[Option<usize>; 4], sums: &[Option<usize>; 4]| {
        counts
            .iter()
            .zip(sums)
            .all(|(have, n)| have.is_none() || n.is_none() || have == n)
    };
    let ranked = near.clone().filter(|(_, _, r)| *r == best);
    let unranked = near.filter(|(_, _, r)| r.is_none() && best.is_some());
    let mut taken: Vec<usize> = Vec::new();
    // The line with its numbers left out: two summaries of one shape.
    let shape = |i: usize| lines[i].trim().replace(|c: char| c.is_ascii_digit(), "");
    for (i, sums, _) in ranked.chain(unranked) {
        if !agrees(&counts, sums) {
            continue;
        }
        // A line apart from one taken that says the same again in the same
        // words is a second summary: two suites of 4 tests each (HUnit's
        // `Cases: 4  Tried: 4  Errors: 0  Failures: 0` per file behind
        // `make`) or one printed twice. Either count may be the command's
        // (a sum or not), so none is claimed, unless both say 0.
        if sums.iter().any(|n| n.is_some_and(|n| n > 0))
            && taken.iter().any(|t| t.abs_diff(*i) > 1 && shape(*t) == shape(*i))
        {
            return None;
        }
        taken.push(*i);
        for (slot, n) in counts.iter_mut().zip(sums) {
            if slot.is_none() {
                *slot = *n;
            }
        }
    }
    // Several suites' summaries that count differently: no count is the
    // whole command's, so none is claimed. A line next to one taken counts
    // another unit of the same summary (Catch2's assertions under its test
    // cases, Cucumber's steps under its scenarios).
    let apart = |i: usize| taken.iter().all(|t| t.abs_diff(i) > 1);
    if summaries.iter().any(|(i, sums, _)| {
        !taken.contains(i) && apart(*i) && (sums[0].is_some() || sums[1].is_some()) && !agrees(&counts, sums)
    }) {
        return None;
    }
    let [failed, passed, skipped, total] = counts;
    let skipped = skipped.unwrap_or(0);
    let (failed, passed) = match (failed, passed, total) {
        (Some(failed), passed, total) => (
            failed,
            passed.or_else(|| total.map(|t| t.saturating_sub(failed + skipped))),
        ),
        // `Total: 6` over `Passed: 4` (uvu): what neither passed nor was
        // skipped failed.
        (None, Some(passed), Some(total)) => (total.saturating_sub(passed + skipped), Some(passed)),
        // A count of tests alone says nothing of how they went; none at
        // all, or none passed and none said to fail (`[  PASSED  ] 0
        // tests.`), is a run of no tests.
        (None, _, Some(0)) | (None, Some(0), None) => (0, Some(0)),
        // A count of passes alone proves no absence of failures (`… |
        // grep Passed` shows that line and hides the others): it is told,
        // and settles nothing without the exit status.
        (None, Some(passed), None) => {
            return Some(Report {
                tool: "",
                passed: Some(passed),
                failed: 0,
                counted: Counted::Passed,
                failures: Vec::new(),
                passes: Vec::new(),
            })
        }
        (None, _, _) => return None,
    };
    if failed == 0 && passed.is_none() {
        return None;
    }
    Some(Report {
        tool: "",
        passed,
        failed,
        counted: Counted::Tests,
        failures: Vec::new(),
        passes: Vec::new(),
    })
}

/// The failed items of a summary that counts them and names none: the lines
/// that give one test's or check's verdict of failure
/// ([`crate::text::verdict_lines`]), each as it stands, since no format
/// says where its name ends. A runner that names each failure twice (as it
/// runs, then in a list at the end) is told by its last `failed` lines.
pub(super) fn verdicts(lines: &[&str], failed: usize) -> Vec<Failure> {
    let verdicts = crate::text::verdict_lines(lines.iter().copied());
    let mut failures = Vec::new();
    for line in &verdicts[verdicts.len().saturating_sub(failed)..] {
        push(&mut failures, line, None);
    }
    failures
}

/// `path:line[:col]: message` lines of compilers and linters (gcc and
/// clang, clang-tidy, flake8, pylint, cpplint, javac, cppcheck, yamllint's
/// parsable format, …), and the indented `path:line:col - error: message`
/// of pyright, also indented under a file's heading (luacheck): the
/// findings, `error:` ones first and `warning:` ones last, and how many
/// there are.
fn diagnostic_lines(lines: &[&str]) -> (Vec<Failure>, usize) {
    static LINE: LazyLock<Regex> = LazyLock::new(|| {
        re(r"^\s*((?:\.{0,2}/)?[\w.\-/]*\w\.[A-Za-z]\w{0,8}|(?:\.{0,2}/)?[\w.\-]+/[\w.\-/]+):(\d+)(?::\d+)?:\s*(.+)$")
    });
    static DASHED: LazyLock<Regex> =
        LazyLock::new(|| re(r"^\s+(\S+\.[A-Za-z]\w{0,8}):(\d+):\d+ - ((?:error|warning|information): .+)$"));
    static ERROR: LazyLock<Regex> = LazyLock::new(|| re(r"^(?:fatal )?error\b[:\s]"));
    let mut errors = Vec::new();
    let mut others = Vec::new();
    let mut warnings = Vec::new();
    let mut count = 0;
    for c in lines
        .iter()
        .filter_map(|l| DASHED.captures(l).or_else(|| LINE.captures(l)))
    {
        let at = format!("{}:{}", c[1].trim_start_matches("./"), &c[2]);
        let message = c[3].trim();
        let lower = message.to_ascii_lowercase();
        // A note, or what an autofix fixed in this same run (`C: [Corrected] …`).
        if lower.starts_with("note") || crate::text::fixed_line(message) {
            continue;
        }
        count += 1;
        let list = if ERROR.is_match(&lower) {
            &mut errors
        } else if lower.starts_with("warning") {
            &mut warnings
        } else {
            &mut others
        };
        push_finding(list, &at, Some(message));
    }
    errors.extend(others);
    errors.extend(warnings);
    errors.truncate(MAX_FAILURES);
    (errors, count)
}

/// A checker's own count of its errors, by the shape of its summary line:
/// `2 errors, 0 warnings, 0 informations` (pyright), `Total errors found:
/// 6` (cpplint), `3 errors generated.` (clang). The count settles the run
/// whatever its exit status (`pyright | tail -n 3` exits 0 over `1
/// error`), and `0 errors` is a clean run; the names are its diagnostic
/// lines. Several such lines (two checkers, or one per file) are several
/// runs: whether one had errors, no count.
pub(super) fn checker_counts(lines: &[&str]) -> Option<Report> {
    static SUMMARY: LazyLock<Regex> = LazyLock::new(|| {
        re(
            r"^(?:(\d+) errors?, \d+ warnings?(?:, \d+ (?:informations?|infos?|notes?))?\.?|Total errors found: (\d+)|(\d+) errors? generated\.)$",
        )
    });
    let counts: Vec<usize> = lines
        .iter()
        .filter_map(|l| SUMMARY.captures(l.trim()))
        .map(|c| num(c.get(1).or(c.get(2)).or(c.get(3)).map_or("0", |m| m.as_str())))
        .collect();
    let (&last, rest) = counts.split_last()?;
    let (failures, _) = diagnostic_lines(lines);
    let (failed, counted) = if rest.is_empty() {
        (last, Counted::Errors)
    } else {
        (usize::from(counts.iter().any(|&n| n > 0)), Counted::Runs)
    };
    Some(Report {
        tool: "",
        passed: None,
        failed,
        counted,
        failures,
        passes: Vec::new(),
    })
}

/// The diagnostic lines of any compiler or linter, without a count of its
/// own. Every one is a finding whose weight the output alone does not
/// settle: the same lines stand in a `grep -rn "error:" logs/` that
/// succeeded, so they never make a run fail by themselves, and its exit
/// status (or its absence) says how it went.
pub(super) fn diagnostics(lines: &[&str]) -> Option<Report> {
    let (failures, count) = diagnostic_lines(lines);
    (count > 0).then(|| Report {
        tool: "diagnostics",
        passed: None,
        failed: count,
        counted: Counted::Findings,
        failures,
        passes: Vec::new(),
    })
}
