//! Compilers, type checkers and linters: rustc through cargo, tsc, mypy,
//! ruff, eslint, shellcheck, go vet and the Go compiler.

use super::report::*;
use regex::Regex;
use std::sync::LazyLock;

/// `error[E0308]: mismatched types` and its ` --> src/lib.rs:1:41`, from
/// cargo build, check or a test build that did not compile.
pub(super) fn rustc(lines: &[&str]) -> Option<Report> {
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
        counted: Counted::Errors,
        failures,
        passes: Vec::new(),
    })
}
/// `a.ts(4,7): error TS2322: Type 'number' is not assignable to type 'string'.`
pub(super) fn tsc(lines: &[&str]) -> Option<Report> {
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
        counted: Counted::Errors,
        failures,
        passes: Vec::new(),
    })
}
/// `m.py:4: error: Incompatible types … [assignment]`, then
/// `Found 2 errors in 1 file` or `Success: no issues found`.
pub(super) fn mypy(lines: &[&str]) -> Option<Report> {
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
        counted: Counted::Errors,
        failures,
        passes: Vec::new(),
    })
}
/// `Found 4 errors.`, `Found 4 errors (2 fixed, 2 remaining).` or `All
/// checks passed!`; each error as `F841 Local variable … never used` over
/// ` --> report.py:10:5` (full format) or `report.py:9:5: F841 Local …`
/// (concise).
pub(super) fn ruff(lines: &[&str]) -> Option<Report> {
    static FOUND: LazyLock<Regex> =
        LazyLock::new(|| re(r"^Found (\d+) errors?(?: \((\d+) fixed, (\d+) remaining\))?\.$"));
    static CODE: LazyLock<Regex> = LazyLock::new(|| re(r"^([A-Z]+\d+) (?:\[\*\] )?(.+)$"));
    static AT: LazyLock<Regex> = LazyLock::new(|| re(r"^\s*--> (\S+?):(\d+):\d+$"));
    static CONCISE: LazyLock<Regex> = LazyLock::new(|| re(r"^(\S+?):(\d+):\d+: ([A-Z]+\d+) (?:\[\*\] )?(.+)$"));
    let failed = match lines.iter().rev().find_map(|l| FOUND.captures(l)) {
        Some(c) => c.get(3).map_or_else(|| num(&c[1]), |m| num(m.as_str())),
        None if lines.contains(&"All checks passed!") => 0,
        None => return None,
    };
    // `All checks passed!` alone is ty's line too, and `Found 2 errors.`
    // Biome's: ruff is named by its own words, a finding with its code or
    // the count of what `--fix` fixed.
    let fix_count = lines
        .iter()
        .any(|l| FOUND.captures(l).is_some_and(|c| c.get(2).is_some()));
    let coded = lines
        .iter()
        .enumerate()
        .any(|(i, l)| CONCISE.is_match(l) || (CODE.is_match(l) && lines.get(i + 1).is_some_and(|n| AT.is_match(n))));
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
        tool: if fix_count || coded { "ruff" } else { "" },
        passed: None,
        failed,
        counted: Counted::Errors,
        failures,
        passes: Vec::new(),
    })
}
/// A file's path line, then `  1:7  error  'unused' is assigned …  no-unused-vars`
/// lines, and `✖ 3 problems (2 errors, 1 warning)`. Errors count; warnings do not.
pub(super) fn eslint(lines: &[&str]) -> Option<Report> {
    static SUMMARY: LazyLock<Regex> = LazyLock::new(|| re(r"^✖ \d+ problems? \((\d+) errors?, \d+ warnings?\)"));
    static PROBLEM: LazyLock<Regex> = LazyLock::new(|| re(r"^\s+(\d+):\d+\s+(error|✖)\s+(.+?)\s{2,}(\S+)$"));
    let errors = lines
        .iter()
        .rev()
        .find_map(|l| SUMMARY.captures(l))
        .map(|c| num(&c[1]))?;
    let mut failures = Vec::new();
    let mut file = "";
    let mut marked = false;
    for l in lines {
        if !l.is_empty() && !l.starts_with(char::is_whitespace) && !l.starts_with('✖') {
            file = l.trim();
        } else if let Some(c) = PROBLEM.captures(l) {
            marked |= &c[2] == "✖";
            push(
                &mut failures,
                &format!("{file}:{}", &c[1]),
                Some(&format!("{} ({})", &c[3], &c[4])),
            );
        }
    }
    Some(Report {
        // stylelint's form marks an error `✖` instead of naming it.
        tool: if marked { "stylelint" } else { "eslint" },
        passed: None,
        failed: errors,
        counted: Counted::Errors,
        failures,
        passes: Vec::new(),
    })
}
/// shellcheck's findings, in its default form (`In deploy.sh line 7:`, the
/// code line, then `^-- SC2034 (warning): …`) or `-f gcc`
/// (`deploy.sh:7:1: warning: … [SC2034]`). Every finding makes it exit 1.
pub(super) fn shellcheck(lines: &[&str]) -> Option<Report> {
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
        counted: Counted::Errors,
        failures,
        passes: Vec::new(),
    })
}
/// go vet, and the Go compiler outside go test: a `# package` line, then
/// `./hits.go:30:9: message` lines.
pub(super) fn go_vet(lines: &[&str]) -> Option<Report> {
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
        counted: Counted::Errors,
        failures,
        passes: Vec::new(),
    })
}
