//! Test runners' summaries: unittest, pytest, cargo test, go test, node's
//! test runner, jest, vitest, mocha, CTest and TAP producers such as bats.

use super::report::*;
use regex::Regex;
use std::sync::LazyLock;

/// `Ran 4 tests in 0.005s`, then `OK` or `FAILED (failures=2, errors=1)`;
/// `FAIL: test_div (test_calc.TestCalc.test_div)` blocks with their exception line.
pub(super) fn unittest(lines: &[&str]) -> Option<Report> {
    static RAN: LazyLock<Regex> = LazyLock::new(|| re(r"^Ran (\d+) tests? in "));
    static STATUS: LazyLock<Regex> = LazyLock::new(|| re(r"^(OK|FAILED)(?: \((.*)\))?$"));
    static COUNT: LazyLock<Regex> =
        LazyLock::new(|| re(r"(failures|errors|skipped|expected failures|unexpected successes)=(\d+)"));
    static FAIL: LazyLock<Regex> = LazyLock::new(|| re(r"^(?:FAIL|ERROR): (\S+) \("));
    static EXCEPTION: LazyLock<Regex> = LazyLock::new(|| re(r"^\w+(?:\.\w+)*(?:Error|Exception|Failure|Exit)\b.*"));
    let ran = lines.iter().rposition(|l| RAN.is_match(l))?;
    let total = num(&RAN.captures(lines[ran])?[1]);
    let status = lines[ran + 1..].iter().find_map(|l| STATUS.captures(l))?;
    // An earlier run's status line (`tox` over two environments, its `Ran`
    // line clipped away): this count is one run's, not the command's.
    let earlier = lines[..ran].iter().find_map(|l| STATUS.captures(l));
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
    let report = Report {
        tool: "unittest",
        passed: Some(total.saturating_sub(failed + skipped)),
        failed,
        counted: Counted::Tests,
        failures,
        passes: Vec::new(),
    };
    Some(match earlier {
        Some(earlier) => Report::of_runs(&[report], &earlier[1] == "FAILED"),
        None => report,
    })
}
/// `=== 1 failed, 3 passed in 0.03s ===` (or bare, with `-q`), and
/// `FAILED test_calc.py::TestCalc::test_average - AssertionError: 1.5 != 2`.
pub(super) fn pytest(lines: &[&str]) -> Option<Report> {
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
        // A collection error: the run stopped before any test ran.
        counted: if collection { Counted::Errors } else { Counted::Tests },
        failures,
        passes: Vec::new(),
    })
}
/// `test result: FAILED. 1 passed; 2 failed; …` per test binary (summed),
/// `test tests::averages ... FAILED`, and the panic message after
/// `---- tests::averages stdout ----`.
pub(super) fn cargo_test(lines: &[&str]) -> Option<Report> {
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
        counted: Counted::Tests,
        failures,
        passes: Vec::new(),
    })
}
/// `ok  \tpkg\t0.01s` or `FAIL\tpkg\t0.01s` per package; `--- FAIL: TestMax
/// (0.00s)` per failed test with its `calc_test.go:19: …` log line (after it,
/// or before it with `-v`, which also lists `--- PASS:`); a package that
/// does not build is `FAIL\tpkg [build failed]` after `./calc.go:14:15: …`.
pub(super) fn go_test(lines: &[&str]) -> Option<Report> {
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
    // Packages that did not build: their compiler errors, named beside the
    // failing tests of the packages that did.
    let unbuilt = packages.iter().filter(|c| c.get(2).is_some()).count();
    if unbuilt > 0 {
        for c in lines.iter().filter_map(|l| BUILD.captures(l)) {
            push(&mut failures, &format!("{}:{}", &c[1], &c[2]), Some(&c[3]));
        }
    }
    let build_errors = if unbuilt > 0 { failures.len().max(unbuilt) } else { 0 };
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
    if unbuilt > 0 && failed == 0 {
        return Some(Report {
            tool: "go test",
            passed: None,
            failed: build_errors,
            counted: Counted::Errors,
            failures,
            passes: Vec::new(),
        });
    }
    let verbose = lines.iter().any(|l| l.starts_with("=== RUN "));
    let failed_packages = packages.iter().filter(|c| &c[1] == "FAIL").count() - unbuilt;
    // Every package that passed ran no test (`ok … [no tests to run]`).
    let ran_none = failed_packages == 0
        && passed == 0
        && packages.iter().all(|c| {
            &c[1] == "ok"
                && c.get(0).is_some_and(|m| {
                    lines
                        .iter()
                        .any(|l| l.starts_with(m.as_str()) && l.ends_with("[no tests to run]"))
                })
        });
    Some(Report {
        tool: "go test",
        passed: (verbose || ran_none).then_some(passed),
        failed: failed.max(failed_packages) + build_errors,
        counted: Counted::Tests,
        failures,
        passes: Vec::new(),
    })
}
/// TAP (`# pass 2`, `# fail 1`, `not ok 2 - averages` with its `error:`) or
/// the spec reporter (`ℹ pass 2`, `✖ averages (10ms)` and the next line).
pub(super) fn node_test(lines: &[&str]) -> Option<Report> {
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
        counted: Counted::Tests,
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
pub(super) fn jest(lines: &[&str]) -> Option<Report> {
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
        counted: Counted::Tests,
        failures,
        passes: Vec::new(),
    })
}
/// `Tests  2 failed | 2 passed (4)`, and ` FAIL  file > calc > averages`
/// followed by its error line.
pub(super) fn vitest(lines: &[&str]) -> Option<Report> {
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
        counted: Counted::Tests,
        failures,
        passes: Vec::new(),
    })
}
/// TAP (bats, prove, `node --test --test-reporter=tap` when node's own
/// summary is cut): `1..5`, `ok 1 name`, `not ok 2 name` with `#` lines
/// under it; the first `#` line that is not bats' location is the detail.
/// Without the plan line (a cut output) the passed count is unknown.
pub(super) fn tap(lines: &[&str]) -> Option<Report> {
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
        counted: Counted::Tests,
        failures,
        passes,
    })
}
/// mocha: `5 passing (8ms)`, `2 failing`, and each failure as `1) Suite`,
/// its nested titles over lines ending in `:`, then the error line; the
/// spec reporter lists passed tests as `✔ name`.
pub(super) fn mocha(lines: &[&str]) -> Option<Report> {
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
        counted: Counted::Tests,
        failures,
        passes,
    })
}
/// CTest: `33% tests passed, 2 tests failed out of 3`, the names under
/// `The following tests FAILED:` (`2 - average_of_three (Failed)`), and
/// each failed test's first line of output after its `Test #2: … ***Failed`.
pub(super) fn ctest(lines: &[&str]) -> Option<Report> {
    static SUMMARY: LazyLock<Regex> = LazyLock::new(|| re(r"^\d+% tests passed, (\d+) tests? failed out of (\d+)"));
    static FAILED: LazyLock<Regex> = LazyLock::new(|| re(r"^\s*\d+ - (\S+) \((.+)\)$"));
    static RESULT: LazyLock<Regex> = LazyLock::new(|| re(r"Test\s+#\d+: (\S+) \.*\s*(?:\*\*\*)?(\w+)"));
    let c = lines.iter().rev().find_map(|l| SUMMARY.captures(l.trim()))?;
    let (failed, total) = (num(&c[1]), num(&c[2]));
    let mut failures = Vec::new();
    let listed = lines.iter().position(|l| l.trim() == "The following tests FAILED:");
    for l in listed.map_or(&[][..], |at| &lines[at + 1..]) {
        let Some(f) = FAILED.captures(l) else { break };
        let name = &f[1];
        let result = lines
            .iter()
            .position(|l| RESULT.captures(l).is_some_and(|r| &r[1] == name && &r[2] != "Passed"));
        let detail = result.and_then(|at| {
            first_line(
                lines,
                at + 1,
                |l| RESULT.is_match(l) || l.trim_start().starts_with("Start "),
                |l| !l.contains("tests passed"),
            )
        });
        push(&mut failures, name, detail.or(Some(&f[2])));
    }
    Some(Report {
        tool: "ctest",
        passed: Some(total.saturating_sub(failed)),
        failed,
        counted: Counted::Tests,
        failures,
        passes: Vec::new(),
    })
}
