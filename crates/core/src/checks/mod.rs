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
pub fn read(text: &str) -> Option<Report> {
    let owned: Vec<String> = text.lines().map(|l| strip_ansi(crate::text::as_shown(l))).collect();
    let lines: Vec<&str> = owned.iter().map(String::as_str).collect();
    [
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
    ]
    .iter()
    .find_map(|parse| parse(&lines))
}

/// `line` without terminal colour codes (`\x1b[31m`), which coloured
/// reporters (JUnit's console tree, RSpec) put around their words.
fn strip_ansi(line: &str) -> String {
    static ANSI: std::sync::LazyLock<regex::Regex> =
        std::sync::LazyLock::new(|| regex::Regex::new(r"\x1b\[[0-9;?]*[A-Za-z]").expect("a valid pattern"));
    ANSI.replace_all(line, "").into_owned()
}
