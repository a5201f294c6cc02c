//! Test runs and checks understood: the result summaries of common test
//! runners and checkers (unittest, pytest, cargo test, go test, node's test
//! runner, jest, vitest, mocha, TAP producers such as bats, rustc through cargo, tsc, mypy, eslint, ruff,
//! shellcheck, go vet and the Go compiler), read from the kept head and tail of a
//! command's output. Every count, name and line in a [`Report`] is text of
//! that output; nothing is guessed.

use regex::Regex;
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
    /// Whether `failed` counts errors (a checker or a build) rather than tests.
    pub errors: bool,
    /// What failed, in output order: a test name or `file:line`, and its key line.
    pub failures: Vec<Failure>,
    /// Tests the runner listed as passed, where it lists them (TAP's `ok`,
    /// mocha's `✔`), up to [`MAX_PASSES`].
    pub passes: Vec<String>,
}

/// Passed tests kept per report.
const MAX_PASSES: usize = 200;

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
        match (self.errors, self.passed) {
            (true, _) if self.failed == 0 => "no errors".to_owned(),
            (true, _) => format!("{} error{}", self.failed, if self.failed == 1 { "" } else { "s" }),
            (false, Some(0)) if self.failed == 0 => "no tests ran".to_owned(),
            (false, Some(passed)) if self.failed == 0 => format!("{passed} passed"),
            (false, Some(passed)) => format!("{} of {} failed", self.failed, self.failed + passed),
            (false, None) if self.failed == 0 => "passed".to_owned(),
            (false, None) => format!("{} failed", self.failed),
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

/// `Ran 4 tests in 0.005s`, then `OK` or `FAILED (failures=2, errors=1)`;
/// `FAIL: test_div (test_calc.TestCalc.test_div)` blocks with their exception line.
fn unittest(lines: &[&str]) -> Option<Report> {
    static RAN: LazyLock<Regex> = LazyLock::new(|| re(r"^Ran (\d+) tests? in "));
    static STATUS: LazyLock<Regex> = LazyLock::new(|| re(r"^(OK|FAILED)(?: \((.*)\))?$"));
    static COUNT: LazyLock<Regex> =
        LazyLock::new(|| re(r"(failures|errors|skipped|expected failures|unexpected successes)=(\d+)"));
    static FAIL: LazyLock<Regex> = LazyLock::new(|| re(r"^(?:FAIL|ERROR): (\S+) \("));
    static EXCEPTION: LazyLock<Regex> = LazyLock::new(|| re(r"^\w+(?:\.\w+)*(?:Error|Exception|Failure|Exit)\b.*"));
    let ran = lines.iter().rposition(|l| RAN.is_match(l))?;
    let total = num(&RAN.captures(lines[ran])?[1]);
    let status = lines[ran + 1..].iter().find_map(|l| STATUS.captures(l))?;
    let (mut failed, mut skipped) = (0, 0);
    for c in COUNT.captures_iter(status.get(2).map_or("", |m| m.as_str())) {
        match &c[1] {
            "failures" | "errors" | "unexpected successes" => failed += num(&c[2]),
            _ => skipped += num(&c[2]),
        }
    }
    let mut failures = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        if let Some(c) = FAIL.captures(l) {
            let detail = first_line(
                lines,
                i + 1,
                |l| l.starts_with("=====") || FAIL.is_match(l),
                |l| EXCEPTION.is_match(l),
            );
            push(&mut failures, &c[1], detail);
        }
    }
    Some(Report {
        tool: "unittest",
        passed: Some(total.saturating_sub(failed + skipped)),
        failed,
        errors: false,
        failures,
        passes: Vec::new(),
    })
}

/// `=== 1 failed, 3 passed in 0.03s ===` (or bare, with `-q`), and
/// `FAILED test_calc.py::TestCalc::test_average - AssertionError: 1.5 != 2`.
fn pytest(lines: &[&str]) -> Option<Report> {
    static SUMMARY: LazyLock<Regex> = LazyLock::new(|| {
        re(r"^=*\s*((?:\d+ (?:failed|passed|errors?|skipped|xfailed|xpassed|deselected|warnings?),? ?)+) in [\d.]+s\b")
    });
    static COUNT: LazyLock<Regex> = LazyLock::new(|| re(r"(\d+) (failed|passed|errors?)\b"));
    // A node id, with parameters that may hold spaces: `test_parse[1 000-1000]`.
    static FAILED: LazyLock<Regex> = LazyLock::new(|| re(r"^(?:FAILED|ERROR) ([^\s\[]+(?:\[[^\]]*\])?)(?: - (.*))?$"));
    static COLLECTING: LazyLock<Regex> = LazyLock::new(|| re(r"^_+ ERROR collecting (\S+) _+$"));
    let summary = lines.iter().rev().find_map(|l| SUMMARY.captures(l))?;
    let (mut passed, mut failed) = (0, 0);
    for c in COUNT.captures_iter(&summary[1]) {
        if &c[2] == "passed" {
            passed += num(&c[1]);
        } else {
            failed += num(&c[1]);
        }
    }
    // `Interrupted: 1 error during collection`: no test ran; each error is
    // a file that could not be imported, with its cause (`E   ImportError: …`).
    let collection = lines
        .iter()
        .any(|l| l.contains("Interrupted:") && l.contains("during collection"));
    let mut failures = Vec::new();
    if collection {
        for (i, l) in lines.iter().enumerate() {
            if let Some(c) = COLLECTING.captures(l) {
                let cause = first_line(lines, i + 1, |l| COLLECTING.is_match(l), |l| l.starts_with("E "))
                    .map(|l| l.trim_start_matches('E').trim());
                push(&mut failures, &c[1], cause);
            }
        }
    }
    for l in lines {
        if let Some(c) = FAILED.captures(l) {
            let name = c[1].rsplit("::").next().unwrap_or(&c[1]);
            if !(collection && failures.iter().any(|f| f.name == name)) {
                // The short summary cuts long reasons (`assert '30.0' =...`);
                // the test's own block has the whole `E   ` line.
                let reason = c.get(2).map(|m| m.as_str());
                let whole = reason.filter(|r| r.ends_with("...")).and_then(|_| {
                    let header = lines
                        .iter()
                        .position(|h| h.starts_with('_') && h.contains(&format!(" {name} ")))?;
                    first_line(lines, header + 1, |l| l.starts_with("___"), |l| l.starts_with("E "))
                        .map(|l| l.trim_start_matches('E').trim())
                });
                push(&mut failures, name, whole.or(reason));
            }
        }
    }
    Some(Report {
        tool: "pytest",
        passed: Some(passed),
        failed,
        errors: collection,
        failures,
        passes: Vec::new(),
    })
}

/// `test result: FAILED. 1 passed; 2 failed; …` per test binary (summed),
/// `test tests::averages ... FAILED`, and the panic message after
/// `---- tests::averages stdout ----`.
fn cargo_test(lines: &[&str]) -> Option<Report> {
    static RESULT: LazyLock<Regex> = LazyLock::new(|| re(r"^test result: (?:ok|FAILED)\. (\d+) passed; (\d+) failed;"));
    static FAILED: LazyLock<Regex> = LazyLock::new(|| re(r"^test (\S+) \.\.\. FAILED$"));
    static STDOUT: LazyLock<Regex> = LazyLock::new(|| re(r"^---- (\S+) stdout ----$"));
    let (mut passed, mut failed, mut seen) = (0, 0, false);
    for c in lines.iter().filter_map(|l| RESULT.captures(l)) {
        passed += num(&c[1]);
        failed += num(&c[2]);
        seen = true;
    }
    if !seen {
        return None;
    }
    let mut failures = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        if let Some(c) = STDOUT.captures(l) {
            // The message follows the `panicked at file:line:col:` line.
            let panicked = lines[i + 1..].iter().take(6).position(|l| l.contains(" panicked at "));
            let detail = panicked.and_then(|p| first_line(lines, i + 2 + p, |l| STDOUT.is_match(l), |_| true));
            push(&mut failures, &c[1], detail);
        }
    }
    for c in lines.iter().filter_map(|l| FAILED.captures(l)) {
        push(&mut failures, &c[1], None);
    }
    Some(Report {
        tool: "cargo test",
        passed: Some(passed),
        failed,
        errors: false,
        failures,
        passes: Vec::new(),
    })
}

/// `ok  \tpkg\t0.01s` or `FAIL\tpkg\t0.01s` per package; `--- FAIL: TestMax
/// (0.00s)` per failed test with its `calc_test.go:19: …` log line (after it,
/// or before it with `-v`, which also lists `--- PASS:`); a package that
/// does not build is `FAIL\tpkg [build failed]` after `./calc.go:14:15: …`.
fn go_test(lines: &[&str]) -> Option<Report> {
    static PACKAGE: LazyLock<Regex> =
        LazyLock::new(|| re(r"^(ok|FAIL)\s+\S+\s+(?:[\d.]+s|\(cached\)|\[(build|setup) failed\])"));
    static RESULT: LazyLock<Regex> = LazyLock::new(|| re(r"^--- (PASS|FAIL): (\S+) \([\d.]+s\)$"));
    static LOG: LazyLock<Regex> = LazyLock::new(|| re(r"^\s+\S+\.go:\d+: .+$"));
    static BUILD: LazyLock<Regex> = LazyLock::new(|| re(r"^(?:\./)?(\S+\.go):(\d+):\d+: (.+)$"));
    let packages: Vec<_> = lines.iter().filter_map(|l| PACKAGE.captures(l)).collect();
    if packages.is_empty() {
        return None;
    }
    let mut failures = Vec::new();
    if packages.iter().any(|c| c.get(2).is_some()) {
        for c in lines.iter().filter_map(|l| BUILD.captures(l)) {
            push(&mut failures, &format!("{}:{}", &c[1], &c[2]), Some(&c[3]));
        }
        return Some(Report {
            tool: "go test",
            passed: None,
            failed: failures.len().max(1),
            errors: true,
            failures,
            passes: Vec::new(),
        });
    }
    let (mut passed, mut failed) = (0, 0);
    for (i, l) in lines.iter().enumerate() {
        let Some(c) = RESULT.captures(l) else { continue };
        if &c[1] == "PASS" {
            passed += 1;
            continue;
        }
        failed += 1;
        let after = lines[i + 1..]
            .iter()
            .take_while(|l| LOG.is_match(l) || l.starts_with("        "));
        let run = format!("=== RUN   {}", &c[2]);
        let before = lines[..i]
            .iter()
            .rev()
            .take_while(|l| **l != run)
            .filter(|l| LOG.is_match(l))
            .last();
        let detail = after.clone().find(|l| LOG.is_match(l)).or(before).map(|l| l.trim());
        push(&mut failures, &c[2], detail);
    }
    let verbose = lines.iter().any(|l| l.starts_with("=== RUN "));
    let failed_packages = packages.iter().filter(|c| &c[1] == "FAIL").count();
    Some(Report {
        tool: "go test",
        passed: verbose.then_some(passed),
        failed: failed.max(failed_packages),
        errors: false,
        failures,
        passes: Vec::new(),
    })
}

/// TAP (`# pass 2`, `# fail 1`, `not ok 2 - averages` with its `error:`) or
/// the spec reporter (`ℹ pass 2`, `✖ averages (10ms)` and the next line).
fn node_test(lines: &[&str]) -> Option<Report> {
    static COUNT: LazyLock<Regex> = LazyLock::new(|| re(r"^(?:#|ℹ) (pass|fail) (\d+)$"));
    static TAP_FAIL: LazyLock<Regex> = LazyLock::new(|| re(r"^not ok \d+ - (.+)$"));
    static SPEC_FAIL: LazyLock<Regex> = LazyLock::new(|| re(r"^✖ (.+?) \([\d.]+m?s\)$"));
    let (mut passed, mut failed) = (None, None);
    for c in lines.iter().filter_map(|l| COUNT.captures(l.trim_end())) {
        if &c[1] == "pass" {
            passed = Some(num(&c[2]));
        } else {
            failed = Some(num(&c[2]));
        }
    }
    let (passed, failed) = (passed?, failed?);
    let mut failures = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        if let Some(c) = TAP_FAIL.captures(l) {
            // The YAML block's `error:` text: its last non-empty line holds
            // the comparison (`1.5 !== 2`) or the message.
            let block: Vec<&str> = lines[i + 1..]
                .iter()
                .take_while(|l| l.trim() != "...")
                .skip_while(|l| !l.trim_start().starts_with("error:"))
                .take_while(|l| {
                    let t = l.trim_start();
                    t.starts_with("error:") || !t.contains(": ") || l.starts_with("      ")
                })
                .map(|l| l.trim())
                .collect();
            let detail = block
                .iter()
                .rev()
                .map(|l| l.trim_start_matches("error:").trim().trim_matches('\''))
                .find(|l| !l.is_empty() && *l != "|-");
            push(&mut failures, &c[1], detail);
        } else if let Some(c) = SPEC_FAIL.captures(l) {
            let detail = first_line(
                lines,
                i + 1,
                |l| l.starts_with('✔') || l.starts_with('✖'),
                |l| !l.starts_with("at "),
            );
            push(&mut failures, &c[1], detail);
        }
    }
    Some(Report {
        tool: "node test",
        passed: Some(passed),
        failed,
        errors: false,
        failures,
        passes: Vec::new(),
    })
}

/// `passed` and `failed` from counts such as `2 failed, 2 passed` or `2 failed | 2 passed`.
fn tally(counts: &str) -> (usize, usize) {
    static COUNT: LazyLock<Regex> = LazyLock::new(|| re(r"(\d+) (failed|passed)\b"));
    let (mut passed, mut failed) = (0, 0);
    for c in COUNT.captures_iter(counts) {
        if &c[2] == "passed" {
            passed += num(&c[1]);
        } else {
            failed += num(&c[1]);
        }
    }
    (passed, failed)
}

/// `Tests:       2 failed, 2 passed, 4 total`, and `● calc › averages`
/// blocks with their `Expected:` and `Received:` lines.
fn jest(lines: &[&str]) -> Option<Report> {
    static SUMMARY: LazyLock<Regex> = LazyLock::new(|| re(r"^Tests:\s+(.*\d+ total)$"));
    static FAIL: LazyLock<Regex> = LazyLock::new(|| re(r"^\s*● (.+)$"));
    let summary = lines.iter().rev().find_map(|l| SUMMARY.captures(l))?;
    let (passed, failed) = tally(&summary[1]);
    let mut failures = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        let Some(c) = FAIL.captures(l) else { continue };
        if c[1].starts_with("Console") {
            continue;
        }
        let stop = |l: &str| FAIL.is_match(l) || l.starts_with("Test Suites:");
        let expected = first_line(lines, i + 1, stop, |l| l.starts_with("Expected"));
        let received = first_line(lines, i + 1, stop, |l| l.starts_with("Received"));
        let detail = match (expected, received) {
            (Some(e), Some(r)) => Some(format!("{e}, {r}")),
            _ => first_line(lines, i + 1, stop, |_| true).map(str::to_owned),
        };
        push(&mut failures, &c[1], detail.as_deref());
    }
    Some(Report {
        tool: "jest",
        passed: Some(passed),
        failed,
        errors: false,
        failures,
        passes: Vec::new(),
    })
}

/// `Tests  2 failed | 2 passed (4)`, and ` FAIL  file > calc > averages`
/// followed by its error line.
fn vitest(lines: &[&str]) -> Option<Report> {
    static SUMMARY: LazyLock<Regex> = LazyLock::new(|| re(r"^\s*Tests\s+(.+) \(\d+\)$"));
    static FAIL: LazyLock<Regex> = LazyLock::new(|| re(r"^\s*FAIL\s+\S+ > (.+)$"));
    let summary = lines.iter().rev().find_map(|l| SUMMARY.captures(l))?;
    let (passed, failed) = tally(&summary[1]);
    let mut failures = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        if let Some(c) = FAIL.captures(l) {
            let detail = first_line(lines, i + 1, |l| FAIL.is_match(l), |_| true);
            push(&mut failures, &c[1], detail);
        }
    }
    Some(Report {
        tool: "vitest",
        passed: Some(passed),
        failed,
        errors: false,
        failures,
        passes: Vec::new(),
    })
}

/// `error[E0308]: mismatched types` and its ` --> src/lib.rs:1:41`, from
/// cargo build, check or a test build that did not compile.
fn rustc(lines: &[&str]) -> Option<Report> {
    static ERROR: LazyLock<Regex> = LazyLock::new(|| re(r"^error(?:\[(E\d+)\])?: (.+)$"));
    static AT: LazyLock<Regex> = LazyLock::new(|| re(r"^\s*--> ([^:]+):(\d+):\d+$"));
    static COULD_NOT: LazyLock<Regex> =
        LazyLock::new(|| re(r"^error: could not compile `[^`]+`(?:.*due to (\d+) previous errors?)?"));
    let summary = lines.iter().find_map(|l| COULD_NOT.captures(l))?;
    let mut failures = Vec::new();
    let mut counted = 0;
    for (i, l) in lines.iter().enumerate() {
        let Some(c) = ERROR.captures(l) else { continue };
        if COULD_NOT.is_match(l) || l.starts_with("error: aborting") {
            continue;
        }
        counted += 1;
        let at = lines[i + 1..].iter().take(3).find_map(|l| AT.captures(l));
        let name = at.map_or_else(|| "build".to_owned(), |a| format!("{}:{}", &a[1], &a[2]));
        let detail = match c.get(1) {
            Some(code) => format!("{} {}", code.as_str(), &c[2]),
            None => c[2].to_owned(),
        };
        push_finding(&mut failures, &name, Some(&detail));
    }
    Some(Report {
        tool: "rustc",
        passed: None,
        failed: summary.get(1).map_or(counted.max(1), |n| num(n.as_str())),
        errors: true,
        failures,
        passes: Vec::new(),
    })
}

/// `a.ts(4,7): error TS2322: Type 'number' is not assignable to type 'string'.`
fn tsc(lines: &[&str]) -> Option<Report> {
    static ERROR: LazyLock<Regex> = LazyLock::new(|| re(r"^(.+?)\((\d+),\d+\): error (TS\d+): (.+)$"));
    static FOUND: LazyLock<Regex> = LazyLock::new(|| re(r"^Found (\d+) errors?"));
    let mut failures = Vec::new();
    let mut counted = 0;
    for c in lines.iter().filter_map(|l| ERROR.captures(l)) {
        counted += 1;
        push(
            &mut failures,
            &format!("{}:{}", &c[1], &c[2]),
            Some(&format!("error {}: {}", &c[3], &c[4])),
        );
    }
    let found = lines.iter().find_map(|l| FOUND.captures(l)).map(|c| num(&c[1]));
    (counted > 0).then(|| Report {
        tool: "tsc",
        passed: None,
        failed: found.unwrap_or(counted),
        errors: true,
        failures,
        passes: Vec::new(),
    })
}

/// `m.py:4: error: Incompatible types … [assignment]`, then
/// `Found 2 errors in 1 file` or `Success: no issues found`.
fn mypy(lines: &[&str]) -> Option<Report> {
    static ERROR: LazyLock<Regex> = LazyLock::new(|| re(r"^(.+?):(\d+): error: (.+)$"));
    static FOUND: LazyLock<Regex> = LazyLock::new(|| re(r"^Found (\d+) errors? in \d+ files?"));
    static SUCCESS: LazyLock<Regex> = LazyLock::new(|| re(r"^Success: no issues found in \d+ source files?$"));
    let found = lines.iter().find_map(|l| FOUND.captures(l)).map(|c| num(&c[1]));
    let success = lines.iter().any(|l| SUCCESS.is_match(l));
    if found.is_none() && !success {
        return None;
    }
    let mut failures = Vec::new();
    for c in lines.iter().filter_map(|l| ERROR.captures(l)) {
        push_finding(&mut failures, &format!("{}:{}", &c[1], &c[2]), Some(&c[3]));
    }
    Some(Report {
        tool: "mypy",
        passed: None,
        failed: found.unwrap_or(0),
        errors: true,
        failures,
        passes: Vec::new(),
    })
}

/// `Found 4 errors.`, `Found 4 errors (2 fixed, 2 remaining).` or `All
/// checks passed!`; each error as `F841 Local variable … never used` over
/// ` --> report.py:10:5` (full format) or `report.py:9:5: F841 Local …`
/// (concise).
fn ruff(lines: &[&str]) -> Option<Report> {
    static FOUND: LazyLock<Regex> =
        LazyLock::new(|| re(r"^Found (\d+) errors?(?: \((\d+) fixed, (\d+) remaining\))?\.$"));
    static CODE: LazyLock<Regex> = LazyLock::new(|| re(r"^([A-Z]+\d+) (?:\[\*\] )?(.+)$"));
    static AT: LazyLock<Regex> = LazyLock::new(|| re(r"^\s*--> (\S+?):(\d+):\d+$"));
    static CONCISE: LazyLock<Regex> = LazyLock::new(|| re(r"^(\S+?):(\d+):\d+: ([A-Z]+\d+) (?:\[\*\] )?(.+)$"));
    let failed = match lines.iter().rev().find_map(|l| FOUND.captures(l)) {
        Some(c) => c.get(3).map_or_else(|| num(&c[1]), |m| num(m.as_str())),
        None if lines.iter().any(|l| *l == "All checks passed!") => 0,
        None => return None,
    };
    let mut failures = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        if let Some(c) = CONCISE.captures(l) {
            let file = c[1].rsplit('/').next().unwrap_or(&c[1]);
            push(
                &mut failures,
                &format!("{file}:{}", &c[2]),
                Some(&format!("{} ({})", &c[4], &c[3])),
            );
        } else if let (Some(c), Some(at)) = (CODE.captures(l), lines.get(i + 1).and_then(|n| AT.captures(n))) {
            let file = at[1].rsplit('/').next().unwrap_or(&at[1]);
            push(
                &mut failures,
                &format!("{file}:{}", &at[2]),
                Some(&format!("{} ({})", &c[2], &c[1])),
            );
        }
    }
    // After `--fix`, only the remaining errors are printed.
    failures.truncate(failed);
    Some(Report {
        tool: "ruff",
        passed: None,
        failed,
        errors: true,
        failures,
        passes: Vec::new(),
    })
}

/// A file's path line, then `  1:7  error  'unused' is assigned …  no-unused-vars`
/// lines, and `✖ 3 problems (2 errors, 1 warning)`. Errors count; warnings do not.
fn eslint(lines: &[&str]) -> Option<Report> {
    static SUMMARY: LazyLock<Regex> = LazyLock::new(|| re(r"^✖ \d+ problems? \((\d+) errors?, \d+ warnings?\)"));
    static PROBLEM: LazyLock<Regex> = LazyLock::new(|| re(r"^\s+(\d+):\d+\s+error\s+(.+?)\s{2,}(\S+)$"));
    let errors = lines
        .iter()
        .rev()
        .find_map(|l| SUMMARY.captures(l))
        .map(|c| num(&c[1]))?;
    let mut failures = Vec::new();
    let mut file = "";
    for l in lines {
        if !l.is_empty() && !l.starts_with(char::is_whitespace) && !l.starts_with('✖') {
            file = l.trim();
        } else if let Some(c) = PROBLEM.captures(l) {
            push(
                &mut failures,
                &format!("{file}:{}", &c[1]),
                Some(&format!("{} ({})", &c[2], &c[3])),
            );
        }
    }
    Some(Report {
        tool: "eslint",
        passed: None,
        failed: errors,
        errors: true,
        failures,
        passes: Vec::new(),
    })
}

/// TAP (bats, prove, `node --test --test-reporter=tap` when node's own
/// summary is cut): `1..5`, `ok 1 name`, `not ok 2 name` with `#` lines
/// under it; the first `#` line that is not bats' location is the detail.
/// Without the plan line (a cut output) the passed count is unknown.
fn tap(lines: &[&str]) -> Option<Report> {
    static PLAN: LazyLock<Regex> = LazyLock::new(|| re(r"^1\.\.(\d+)$"));
    static RESULT: LazyLock<Regex> = LazyLock::new(|| re(r"^(not ok|ok) \d+(?: -)? (.+?)(?: # (?i:skip|todo)\b.*)?$"));
    let plan = lines.iter().find_map(|l| PLAN.captures(l.trim())).map(|c| num(&c[1]));
    let (mut passed, mut failed) = (0, 0);
    let mut failures = Vec::new();
    let mut passes = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        let Some(c) = RESULT.captures(l) else { continue };
        let name = c[2].trim();
        if &c[1] == "ok" {
            passed += 1;
            if passes.len() < MAX_PASSES {
                passes.push(name.to_owned());
            }
            continue;
        }
        failed += 1;
        let detail = lines[i + 1..]
            .iter()
            .take_while(|l| l.starts_with('#'))
            .map(|l| l.trim_start_matches('#').trim())
            .find(|l| !l.is_empty() && !l.starts_with("(in test file") && !l.starts_with("(from function"));
        push(&mut failures, name, detail);
    }
    (passed + failed > 0 && (plan.is_some() || failed > 0)).then(|| Report {
        tool: "tap",
        passed: plan.filter(|&p| p == passed + failed).map(|_| passed),
        failed,
        errors: false,
        failures,
        passes,
    })
}

/// mocha: `5 passing (8ms)`, `2 failing`, and each failure as `1) Suite`,
/// its nested titles over lines ending in `:`, then the error line; the
/// spec reporter lists passed tests as `✔ name`.
fn mocha(lines: &[&str]) -> Option<Report> {
    static PASSING: LazyLock<Regex> = LazyLock::new(|| re(r"^\s*(\d+) passing \(\d+(?:\.\d+)?m?s\)$"));
    static FAILING: LazyLock<Regex> = LazyLock::new(|| re(r"^\s*(\d+) failing$"));
    static HEADER: LazyLock<Regex> = LazyLock::new(|| re(r"^\s*(\d+)\) (.+)$"));
    static PASSED: LazyLock<Regex> = LazyLock::new(|| re(r"^\s*[✔✓] (.+?)(?: \(\d+ms\))?$"));
    let summary = lines.iter().position(|l| PASSING.is_match(l))?;
    let passed = num(&PASSING.captures(lines[summary])?[1]);
    let failed = lines[summary..]
        .iter()
        .find_map(|l| FAILING.captures(l))
        .map_or(0, |c| num(&c[1]));
    let mut failures = Vec::new();
    let mut i = summary + 1;
    while i < lines.len() {
        let Some(c) = HEADER.captures(lines[i]) else {
            i += 1;
            continue;
        };
        // `1) Suite` then `     when empty` … `       pop returns undefined:`.
        let mut title = vec![c[2].trim().trim_end_matches(':').to_owned()];
        let mut end = c[2].trim().ends_with(':');
        i += 1;
        while !end && i < lines.len() && !lines[i].trim().is_empty() {
            let t = lines[i].trim();
            end = t.ends_with(':');
            title.push(t.trim_end_matches(':').to_owned());
            i += 1;
        }
        let detail = lines[i.min(lines.len())..]
            .iter()
            .map(|l| l.trim())
            .find(|l| !l.is_empty());
        push(&mut failures, &title.join(" "), detail);
    }
    let passes = lines[..summary]
        .iter()
        .filter_map(|l| PASSED.captures(l))
        .map(|c| c[1].trim().to_owned())
        .take(MAX_PASSES)
        .collect();
    Some(Report {
        tool: "mocha",
        passed: Some(passed),
        failed,
        errors: false,
        failures,
        passes,
    })
}

/// shellcheck's findings, in its default form (`In deploy.sh line 7:`, the
/// code line, then `^-- SC2034 (warning): …`) or `-f gcc`
/// (`deploy.sh:7:1: warning: … [SC2034]`). Every finding makes it exit 1.
fn shellcheck(lines: &[&str]) -> Option<Report> {
    static AT: LazyLock<Regex> = LazyLock::new(|| re(r"^In (.+) line (\d+):$"));
    static FINDING: LazyLock<Regex> = LazyLock::new(|| re(r"^\s*\^-*\^?\s+(SC\d{4}) \((\w+)\): (.+)$"));
    static GCC: LazyLock<Regex> = LazyLock::new(|| re(r"^(.+?):(\d+):\d+: (\w+): (.+) \[(SC\d{4})\]$"));
    let mut failures = Vec::new();
    let mut count = 0;
    let mut at: Option<(String, String)> = None;
    for l in lines {
        if let Some(c) = AT.captures(l) {
            at = Some((c[1].to_owned(), c[2].to_owned()));
        } else if let (Some(c), Some((file, line))) = (FINDING.captures(l), &at) {
            count += 1;
            push(
                &mut failures,
                &format!("{file}:{line}"),
                Some(&format!("{} ({}): {}", &c[1], &c[2], &c[3])),
            );
        } else if let Some(c) = GCC.captures(l) {
            count += 1;
            push(
                &mut failures,
                &format!("{}:{}", &c[1], &c[2]),
                Some(&format!("{} ({}): {}", &c[5], &c[3], &c[4])),
            );
        }
    }
    (count > 0).then(|| Report {
        tool: "shellcheck",
        passed: None,
        failed: count,
        errors: true,
        failures,
        passes: Vec::new(),
    })
}

/// go vet, and the Go compiler outside go test: a `# package` line, then
/// `./hits.go:30:9: message` lines.
fn go_vet(lines: &[&str]) -> Option<Report> {
    static FINDING: LazyLock<Regex> = LazyLock::new(|| re(r"^(?:\./)?(\S+\.go):(\d+):\d+: (.+)$"));
    let package = lines
        .iter()
        .position(|l| l.starts_with("# ") && l.split_whitespace().count() == 2)?;
    let mut failures = Vec::new();
    let mut count = 0;
    for c in lines[package + 1..].iter().filter_map(|l| FINDING.captures(l)) {
        count += 1;
        push_finding(&mut failures, &format!("{}:{}", &c[1], &c[2]), Some(&c[3]));
    }
    (count > 0).then(|| Report {
        tool: "go",
        passed: None,
        failed: count,
        errors: true,
        failures,
        passes: Vec::new(),
    })
}
