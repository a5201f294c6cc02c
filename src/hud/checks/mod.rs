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
mod report;
mod runners;

use checkers::{eslint, go_vet, mypy, ruff, rustc, shellcheck, tsc};
pub use report::{Counted, Failure, Report};
use runners::{cargo_test, go_test, jest, mocha, node_test, pytest, tap, unittest, vitest};

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
