//! The HUD quality evaluation: real OpenCode sessions (captured by
//! `plugin-shim/eval/capture.ts` into `tests/fixtures/sessions/`) replayed
//! step by step into a real server, each HUD checked against hand-written
//! expectations: facts that must appear by a step, and claims that must not
//! (a failure still open after it passed). Every quote of the model's part
//! must also be a line of the session's outputs. Used by
//! `benches/hud_quality.rs` (the table) and `tests/it/hud_quality.rs` (the
//! "no false statement" gate).

use super::{client, post_json, Server};
use serde_json::{json, Value};
use std::path::Path;
use std::time::{Duration, Instant};

/// What must and must not be in the HUD once `calls` tool calls are done.
/// `model` lists what only the model's part can supply (details of an
/// output no parser knows); it counts toward the model's recall.
pub struct Expect {
    pub calls: usize,
    pub must: &'static [&'static str],
    pub model: &'static [&'static str],
    pub must_not: &'static [&'static str],
}

/// A captured session and its expectations. The last expectation also holds
/// for the compaction text asked for at the end.
pub struct Case {
    pub name: &'static str,
    pub expect: &'static [Expect],
}

/// A claim that the work is broken; after the last fix it is false.
const STILL_OPEN: &[&str] = &["no pass since"];

/// The two ctest sessions run the same steps on 3 tests and on 24: CTest's
/// summary names both failing tests with their assertion lines, and all
/// closes once the tests pass.
const CTEST: &[Expect] = &[
    Expect {
        calls: 3,
        must: &[
            "exited 8",
            "average_of_three",
            "divide_by_zero_is_refused",
            "expected 2.333333",
        ],
        model: &[],
        must_not: &["Open problems: none"],
    },
    Expect {
        calls: 6,
        must: &["Open problems: none"],
        model: &[],
        must_not: STILL_OPEN,
    },
];

pub const CASES: &[Case] = &[
    Case {
        name: "python-two-rounds",
        expect: &[
            Expect {
                calls: 3,
                must: &["2 of 4 failed", "test_average", "test_div", "18 != 2"],
                model: &[],
                must_not: &["Open problems: none"],
            },
            Expect {
                calls: 5,
                must: &["✗ edit calc.py"],
                model: &[],
                must_not: &[],
            },
            Expect {
                calls: 7,
                must: &["1 of 4 failed", "1 != 1.5"],
                model: &[],
                must_not: &["Open problems: none"],
            },
            Expect {
                calls: 9,
                must: &["4 passed", "Open problems: none"],
                model: &[],
                must_not: STILL_OPEN,
            },
        ],
    },
    Case {
        name: "rust-build-then-tests",
        expect: &[
            Expect {
                calls: 3,
                must: &["1 error", "src/lib.rs:3", "E0277"],
                model: &[],
                must_not: &["Open problems: none"],
            },
            Expect {
                calls: 5,
                must: &["1 of 2 failed", "median_of_even_count"],
                model: &[],
                must_not: &["Open problems: none"],
            },
            Expect {
                calls: 7,
                must: &["2 passed", "Open problems: none"],
                model: &[],
                must_not: STILL_OPEN,
            },
        ],
    },
    Case {
        name: "js-node-tests",
        expect: &[
            Expect {
                calls: 4,
                must: &["1 of 2 failed", "discount takes a percentage off"],
                model: &[],
                must_not: &["Open problems: none"],
            },
            Expect {
                calls: 6,
                must: &["2 passed", "Open problems: none"],
                model: &[],
                must_not: STILL_OPEN,
            },
        ],
    },
    Case {
        name: "python-rename-refactor",
        expect: &[
            Expect {
                calls: 9,
                must: &["1 of 1 failed", "ImportError"],
                model: &[],
                must_not: &["Open problems: none"],
            },
            Expect {
                calls: 23,
                must: &["7 passed", "Open problems: none", "users.py"],
                model: &[],
                must_not: STILL_OPEN,
            },
        ],
    },
    Case {
        name: "retry-loop",
        expect: &[
            Expect {
                calls: 5,
                must: &["×4", "failed 4 times", "build/ready is missing"],
                model: &[],
                must_not: &["Open problems: none"],
            },
            Expect {
                calls: 7,
                must: &["Open problems: none"],
                model: &[],
                must_not: STILL_OPEN,
            },
        ],
    },
    Case {
        name: "python-through-compaction",
        expect: &[
            Expect {
                calls: 3,
                must: &["2 of 4 failed", "test_average", "test_div"],
                model: &[],
                must_not: &["Open problems: none"],
            },
            // The failures before the compaction are gone with it, so no
            // "none" line: nothing failed since.
            Expect {
                calls: 7,
                must: &["unittest 4 passed", "since the last compaction"],
                model: &[],
                must_not: STILL_OPEN,
            },
        ],
    },
    Case {
        name: "c-make-compile-error",
        expect: &[
            Expect {
                calls: 3,
                must: &["exited 2", "'count' undeclared"],
                model: &[],
                must_not: &["Open problems: none"],
            },
            Expect {
                calls: 5,
                must: &["Open problems: none"],
                model: &[],
                must_not: STILL_OPEN,
            },
        ],
    },
    Case {
        name: "c-ctest-failures",
        expect: CTEST,
    },
    Case {
        name: "c-ctest-many",
        expect: CTEST,
    },
    Case {
        name: "go-tests",
        expect: &[
            Expect {
                calls: 4,
                must: &["2 failed", "TestAverage", "TestMax", "want 1.5"],
                model: &[],
                must_not: &["Open problems: none"],
            },
            Expect {
                calls: 6,
                must: &["1 failed", "want -1"],
                model: &[],
                must_not: &["Open problems: none"],
            },
            Expect {
                calls: 8,
                must: &["go test passed", "Open problems: none"],
                model: &[],
                must_not: STILL_OPEN,
            },
        ],
    },
    Case {
        name: "shell-test-harness",
        expect: &[
            Expect {
                calls: 6,
                must: &["exited 1", "logout ... FAILED"],
                model: &["unbound variable", "refresh", "expected status 200, got 401"],
                must_not: &["Open problems: none"],
            },
            Expect {
                calls: 8,
                must: &["refresh ... FAILED"],
                model: &["expected status 200, got 401"],
                must_not: &["Open problems: none"],
            },
            Expect {
                calls: 10,
                must: &["Open problems: none"],
                model: &[],
                must_not: STILL_OPEN,
            },
        ],
    },
    Case {
        name: "python-agent-habits",
        expect: &[
            // A pipe into tail exits 0 over a failing run.
            Expect {
                calls: 3,
                must: &["✗ bash", "pytest 2 of 4 failed", "test_average", "test_div"],
                model: &[],
                must_not: &["Open problems: none", "✓ bash `python3 -m pytest"],
            },
            // Exits that are not failures are named and open nothing.
            Expect {
                calls: 5,
                must: &["exit 1 (no match)", "ran no tests (exit 5)", "no tests ran"],
                model: &[],
                must_not: &["TODO calc.py` exited", "smoke` exited", "0 passed"],
            },
            Expect {
                calls: 7,
                must: &["timed out after 2 s"],
                model: &[],
                must_not: &["✓ bash `python3 warm.py`"],
            },
            Expect {
                calls: 9,
                must: &["pytest 2 of 4 failed"],
                model: &[],
                must_not: &["timed out after 2 s; no pass since", "Open problems: none"],
            },
            // The passing run in another form closes the failure.
            Expect {
                calls: 12,
                must: &["Open problems: none", "pytest 4 passed"],
                model: &[],
                must_not: STILL_OPEN,
            },
        ],
    },
    // A script's traceback twice (the second through a pipe that exits 0),
    // then pytest: a run of one failing test passes and leaves the other open.
    Case {
        name: "python-script-traceback",
        expect: &[
            Expect {
                calls: 3,
                must: &["✗", "KeyError: 'quantity'"],
                model: &[],
                must_not: &["Open problems: none"],
            },
            Expect {
                calls: 5,
                must: &["ValueError: could not convert string to float: '0,05'", "no pass since"],
                model: &[],
                must_not: &["Open problems: none", "✓ bash `cd", "✓ bash `python3 inventory.py"],
            },
            Expect {
                calls: 7,
                must: &[
                    "2 of 4 failed",
                    "test_parse_price_decimal_comma",
                    "test_format_total",
                    "assert '30.0' == '30.00'",
                ],
                model: &[],
                must_not: &["Open problems: none"],
            },
            Expect {
                calls: 9,
                must: &["test_format_total", "no pass since"],
                model: &[],
                must_not: &["Open problems: none"],
            },
            Expect {
                calls: 11,
                must: &["no pass since"],
                model: &[],
                must_not: &["Open problems: none"],
            },
            Expect {
                calls: 12,
                must: &["4 passed", "Open problems: none"],
                model: &[],
                must_not: STILL_OPEN,
            },
        ],
    },
    // ruff: errors, a --fix that leaves two, a piped concise check that
    // exits 0 over the last one, then clean.
    Case {
        name: "python-ruff-lint",
        expect: &[
            Expect {
                calls: 3,
                must: &["✗", "ruff 4 errors"],
                model: &[],
                must_not: &["Open problems: none", "✓ bash `ruff check .`"],
            },
            Expect {
                calls: 4,
                must: &["Undefined name `summarise`", "ruff 2 errors"],
                model: &[],
                must_not: &["Open problems: none", "✓ bash `ruff check --fix"],
            },
            Expect {
                calls: 7,
                must: &[
                    "Local variable `average` is assigned to but never used",
                    "no pass since",
                ],
                model: &[],
                must_not: &[
                    "Open problems: none",
                    "✓ bash `cd",
                    "✓ bash `ruff check --output-format",
                ],
            },
            Expect {
                calls: 9,
                must: &["Open problems: none"],
                model: &[],
                must_not: STILL_OPEN,
            },
        ],
    },
    // node --test: two failures in two files; one file's run passes while
    // the other's test still fails; a tail that hides the failing name.
    Case {
        name: "js-node-two-files",
        expect: &[
            Expect {
                calls: 6,
                must: &[
                    "2 of 4 failed",
                    "formatEuros keeps two decimals",
                    "withTax adds the rate as a fraction",
                    "200.25 !== 250",
                ],
                model: &[],
                must_not: &["Open problems: none"],
            },
            Expect {
                calls: 8,
                must: &["formatEuros keeps two decimals", "no pass since"],
                model: &[],
                must_not: &["Open problems: none"],
            },
            Expect {
                calls: 9,
                must: &["1 of 4 failed", "no pass since"],
                model: &[],
                must_not: &["Open problems: none", "✓ bash `node --test test/ 2>&1"],
            },
            Expect {
                calls: 11,
                must: &["4 passed", "Open problems: none"],
                model: &[],
                must_not: STILL_OPEN,
            },
        ],
    },
    // A link error through make, retried unchanged, then a build whose
    // program fails at run time, then all good.
    Case {
        name: "c-make-link-error",
        expect: &[
            Expect {
                calls: 5,
                must: &["✗", "undefined reference to `parse_config'"],
                model: &[],
                must_not: &["Open problems: none"],
            },
            Expect {
                calls: 6,
                must: &["no pass since"],
                model: &[],
                must_not: &["Open problems: none", "✓ bash `make"],
            },
            Expect {
                calls: 9,
                must: &["app: bad config: missing port", "no pass since"],
                model: &[],
                must_not: &["Open problems: none", "✓ bash `make && ./app`"],
            },
            Expect {
                calls: 11,
                must: &["Open problems: none"],
                model: &[],
                must_not: STILL_OPEN,
            },
        ],
    },
    // shellcheck: four findings, the same in gcc format, two fixes, a
    // severity-filtered run piped into head (exit 0 over the warning left),
    // then clean.
    Case {
        name: "shell-shellcheck",
        expect: &[
            Expect {
                calls: 2,
                must: &["✗", "SC2045", "Iterating over ls output is fragile", "SC2086", "SC2034"],
                model: &[],
                must_not: &["Open problems: none", "✓ bash `shellcheck deploy.sh`"],
            },
            Expect {
                calls: 3,
                must: &["deploy.sh:10", "SC2045"],
                model: &[],
                must_not: &["Open problems: none", "✓ bash `shellcheck -f gcc"],
            },
            Expect {
                calls: 6,
                must: &["SC2034", "backup appears unused", "no pass since"],
                model: &[],
                must_not: &["Open problems: none", "✓ bash `cd", "✓ bash `shellcheck -S"],
            },
            Expect {
                calls: 8,
                must: &["Open problems: none"],
                model: &[],
                must_not: STILL_OPEN,
            },
        ],
    },
    // bats (TAP): three of five fail; a -f run of the fixed ones passes
    // while the third still fails; a piped tail exits 0 over it.
    Case {
        name: "shell-bats",
        expect: &[
            Expect {
                calls: 3,
                must: &[
                    "3 of 5 failed",
                    "slugify squeezes repeated spaces",
                    "slugify drops punctuation",
                    "truncate_slug drops a trailing dash",
                ],
                model: &[],
                must_not: &["Open problems: none"],
            },
            Expect {
                calls: 5,
                must: &["truncate_slug drops a trailing dash", "no pass since"],
                model: &[],
                must_not: &["Open problems: none"],
            },
            Expect {
                calls: 6,
                must: &["truncate_slug drops a trailing dash", "no pass since"],
                model: &[],
                must_not: &["Open problems: none", "✓ bash `cd", "✓ bash `bats --tap"],
            },
            Expect {
                calls: 8,
                must: &["5 passed", "Open problems: none"],
                model: &[],
                must_not: STILL_OPEN,
            },
        ],
    },
    // mypy: four errors in two files, a one-file run, a piped run (exit 0
    // over four errors, two of them new in the caller), then --strict clean.
    Case {
        name: "python-mypy",
        expect: &[
            Expect {
                calls: 3,
                must: &[
                    "4 errors",
                    "orders.py:17",
                    "report.py:6",
                    "Incompatible return value type",
                ],
                model: &[],
                must_not: &["Open problems: none", "✓ bash `mypy ."],
            },
            Expect {
                calls: 5,
                must: &["2 errors", "orders.py:21"],
                model: &[],
                must_not: &["Open problems: none"],
            },
            Expect {
                calls: 7,
                must: &["Argument 1 to \"total_euros\" has incompatible type", "no pass since"],
                model: &[],
                must_not: &["Open problems: none", "✓ bash `cd"],
            },
            Expect {
                calls: 10,
                must: &["Open problems: none"],
                model: &[],
                must_not: STILL_OPEN,
            },
        ],
    },
    // eslint: six problems, a --fix that leaves three, a piped run that
    // exits 0 over the last one, then clean.
    Case {
        name: "js-eslint",
        expect: &[
            Expect {
                calls: 4,
                must: &["6 errors", "'loadTodo' is not defined"],
                model: &[],
                must_not: &["Open problems: none", "✓ bash `npx eslint .`"],
            },
            Expect {
                calls: 5,
                must: &["3 errors", "'loadTodo' is not defined"],
                model: &[],
                must_not: &["Open problems: none", "✓ bash `npx eslint --fix"],
            },
            Expect {
                calls: 9,
                must: &["'loadTodo' is not defined", "no pass since"],
                model: &[],
                must_not: &["Open problems: none", "✓ bash `cd"],
            },
            Expect {
                calls: 11,
                must: &["Open problems: none"],
                model: &[],
                must_not: STILL_OPEN,
            },
        ],
    },
    // tsc: three errors, the same command twice, two fixes, a piped run
    // (exit 0 over the last error), then clean.
    Case {
        name: "ts-tsc",
        expect: &[
            Expect {
                calls: 5,
                must: &["error TS2339", "error TS2322", "error TS18048"],
                model: &[],
                must_not: &["Open problems: none", "✓ bash `npx tsc"],
            },
            Expect {
                calls: 6,
                must: &["failed 2 times", "no pass since"],
                model: &[],
                must_not: &["Open problems: none", "✓ bash `npx tsc"],
            },
            Expect {
                calls: 9,
                must: &["error TS18048", "no pass since"],
                model: &[],
                must_not: &["Open problems: none", "✓ bash `cd"],
            },
            Expect {
                calls: 11,
                must: &["Open problems: none"],
                model: &[],
                must_not: STILL_OPEN,
            },
        ],
    },
    // jest: two failures in one file; a -t run of the fixed one passes and
    // leaves the other open; a piped tail hides its name; npm test passes.
    Case {
        name: "js-jest",
        expect: &[
            Expect {
                calls: 6,
                must: &["2 of 7 failed", "parses hours", "formats minutes and seconds"],
                model: &[],
                must_not: &["Open problems: none"],
            },
            Expect {
                calls: 8,
                must: &["formats minutes and seconds", "no pass since"],
                model: &[],
                must_not: &["Open problems: none"],
            },
            Expect {
                calls: 9,
                must: &["1 of 7 failed", "no pass since"],
                model: &[],
                must_not: &["Open problems: none", "✓ bash `cd"],
            },
            Expect {
                calls: 11,
                must: &["7 passed", "Open problems: none"],
                model: &[],
                must_not: STILL_OPEN,
            },
        ],
    },
    // mocha: three failures (exit 3), two with the dot reporter (exit 2), a
    // --grep run of one fixed test while another still fails, then all pass.
    Case {
        name: "js-mocha",
        expect: &[
            Expect {
                calls: 4,
                must: &[
                    "3 of 5 failed",
                    "pops the highest priority first",
                    "pop returns undefined",
                    "peek returns undefined",
                ],
                model: &[],
                must_not: &["Open problems: none"],
            },
            Expect {
                calls: 6,
                must: &["2 of 5 failed", "Cannot read properties of undefined (reading 'value')"],
                model: &[],
                must_not: &["Open problems: none"],
            },
            Expect {
                calls: 8,
                must: &["peek returns undefined", "no pass since"],
                model: &[],
                must_not: &["Open problems: none"],
            },
            Expect {
                calls: 10,
                must: &["5 passed", "Open problems: none"],
                model: &[],
                must_not: STILL_OPEN,
            },
        ],
    },
    // clippy: three warnings (exit 0), the same as errors with -D warnings,
    // a fix, a quiet piped run (exit 0 over two errors), then clean and tested.
    Case {
        name: "rust-clippy",
        expect: &[
            Expect {
                calls: 3,
                must: &["3 warnings"],
                model: &[],
                must_not: &[],
            },
            Expect {
                calls: 4,
                must: &[
                    "✗",
                    "usage of `contains_key` followed by `insert` on a `HashMap`",
                    "src/lib.rs:8",
                    "unneeded `return` statement",
                ],
                model: &[],
                must_not: &["Open problems: none", "✓ bash `cargo clippy --all-targets"],
            },
            Expect {
                calls: 6,
                must: &["unneeded `return` statement", "no pass since"],
                model: &[],
                must_not: &["Open problems: none", "✓ bash `cd"],
            },
            Expect {
                calls: 8,
                must: &["2 passed", "Open problems: none"],
                model: &[],
                must_not: STILL_OPEN,
            },
        ],
    },
    // go vet, then go test: a -run subset of the fixed test passes while
    // the other still fails; a verbose piped subset exits 0 over it.
    Case {
        name: "go-vet-and-tests",
        expect: &[
            Expect {
                calls: 4,
                must: &[
                    "Get passes lock by value",
                    "hits.go:30",
                    "struct field tag `json:hits` not compatible",
                ],
                model: &[],
                must_not: &["Open problems: none", "✓ bash `go vet"],
            },
            Expect {
                calls: 7,
                must: &[
                    "2 failed",
                    "TestParseLine",
                    "TestTopOrdersByHits",
                    "want [{/b 7} {/c 4}]",
                ],
                model: &[],
                must_not: &["Open problems: none"],
            },
            Expect {
                calls: 9,
                must: &["TestTopOrdersByHits", "no pass since"],
                model: &[],
                must_not: &["Open problems: none"],
            },
            Expect {
                calls: 10,
                must: &["TestTopOrdersByHits", "no pass since"],
                model: &[],
                must_not: &["Open problems: none", "✓ bash `cd"],
            },
            Expect {
                calls: 12,
                must: &["Open problems: none"],
                model: &[],
                must_not: STILL_OPEN,
            },
        ],
    },
    // vitest: failures in two files; one file's run passes while the
    // other's test still fails; a piped dot-reporter tail exits 0 over it.
    Case {
        name: "js-vitest",
        expect: &[
            Expect {
                calls: 7,
                must: &[
                    "2 of 5 failed",
                    "merges quantities of the same sku",
                    "formats cents with two digits",
                ],
                model: &[],
                must_not: &["Open problems: none"],
            },
            Expect {
                calls: 9,
                must: &["merges quantities of the same sku", "no pass since"],
                model: &[],
                must_not: &["Open problems: none"],
            },
            Expect {
                calls: 10,
                must: &["1 of 5 failed", "no pass since"],
                model: &[],
                must_not: &["Open problems: none", "✓ bash `cd"],
            },
            Expect {
                calls: 12,
                must: &["5 passed", "Open problems: none"],
                model: &[],
                must_not: STILL_OPEN,
            },
        ],
    },
    // tsc through an auto-compaction (after call 6): one type error is
    // still open across it and fixed after it.
    Case {
        name: "ts-through-compaction",
        expect: &[
            Expect {
                calls: 4,
                must: &["error TS2322", "error TS2554"],
                model: &[],
                must_not: &["Open problems: none"],
            },
            Expect {
                calls: 6,
                must: &["error TS2322", "no pass since"],
                model: &[],
                must_not: &["Open problems: none"],
            },
            Expect {
                calls: 7,
                must: &["Type 'null' is not assignable to type 'Zone'"],
                model: &[],
                must_not: &["Open problems: none"],
            },
            Expect {
                calls: 9,
                must: &["Open problems: none"],
                model: &[],
                must_not: STILL_OPEN,
            },
        ],
    },
    // --- Sessions an independent helper wrote from the tools' real output
    // without reading the HUD's code: known families first, then held out.
    // rspec: three failures; --only-failures keeps two, then one (through a
    // piped tail that exits 0); --next-failure; the full run in another form.
    Case {
        name: "ruby-rspec",
        expect: &[
            Expect {
                calls: 3,
                must: &[
                    "exited 1",
                    "adds up repeated skus",
                    "is zero for an unknown sku",
                    "includes skus at the threshold",
                ],
                model: &[],
                must_not: &["Open problems: none", "exit 1: FF.F", "exit 1: Failures:"],
            },
            Expect {
                calls: 5,
                must: &[
                    "exited 1",
                    "is zero for an unknown sku",
                    "includes skus at the threshold",
                ],
                model: &[],
                must_not: &["Open problems: none", "exit 1: Run options", "exit 1: .FF"],
            },
            Expect {
                calls: 7,
                must: &["includes skus at the threshold", "no pass since"],
                model: &[],
                must_not: &["Open problems: none", "✓ bash `rspec"],
            },
            Expect {
                calls: 10,
                must: &["Open problems: none"],
                model: &[],
                must_not: STILL_OPEN,
            },
        ],
    },
    // minitest through `rake test`: three failures under rake's own lines;
    // a one-test run passes and leaves two open; `|| true` exits 0 over them.
    Case {
        name: "ruby-minitest-rake",
        expect: &[
            Expect {
                calls: 4,
                must: &[
                    "exited 1",
                    "test_drops_punctuation",
                    "test_truncate_drops_trailing_dash",
                    "test_squeezes_repeated_spaces",
                ],
                model: &[],
                must_not: &[
                    "Open problems: none",
                    "exit 1: rake aborted!",
                    "exit 1: Command failed with status",
                    "exit 1: Tasks: TOP",
                    "exit 1: Run options",
                ],
            },
            Expect {
                calls: 6,
                must: &["test_drops_punctuation", "no pass since"],
                model: &[],
                must_not: &["Open problems: none"],
            },
            Expect {
                calls: 7,
                must: &[
                    "test_drops_punctuation",
                    "test_truncate_drops_trailing_dash",
                    "no pass since",
                ],
                model: &[],
                must_not: &["Open problems: none", "✓ bash `rake test"],
            },
            Expect {
                calls: 9,
                must: &["Open problems: none"],
                model: &[],
                must_not: STILL_OPEN,
            },
        ],
    },
    // phpunit: three failures under a "There were 3 failures:" heading; a
    // --filter run of the fixed two passes; --stop-on-failure masked by
    // `; echo`; then --testdox passes.
    Case {
        name: "php-phpunit",
        expect: &[
            Expect {
                calls: 4,
                must: &[
                    "exited 1",
                    "testBoilingPointInCelsius",
                    "testBodyTemperatureInCelsius",
                    "testZeroIsFreezing",
                    "Failed asserting that 194.22222222222223 matches expected 100.0",
                ],
                model: &[],
                must_not: &[
                    "Open problems: none",
                    "exit 1: There were 3 failures",
                    "exit 1: PHPUnit 9.6.7",
                    "exit 1: FAILURES!",
                ],
            },
            Expect {
                calls: 6,
                must: &["testZeroIsFreezing", "no pass since"],
                model: &[],
                must_not: &["Open problems: none"],
            },
            Expect {
                calls: 7,
                must: &["testZeroIsFreezing", "no pass since"],
                model: &[],
                must_not: &["Open problems: none", "✓ bash `phpunit --stop-on-failure"],
            },
            Expect {
                calls: 9,
                must: &["Open problems: none"],
                model: &[],
                must_not: STILL_OPEN,
            },
        ],
    },
    // JUnit 5's console launcher (colored tree) through `bash test.sh`: two
    // failures; a piped tail that hides the failing name; then all pass.
    Case {
        name: "java-junit5",
        expect: &[
            Expect {
                calls: 4,
                must: &[
                    "exited 1",
                    "popReturnsLastPushed",
                    "pushBeyondCapacityThrows",
                    "expected: <2> but was: <1>",
                ],
                model: &[],
                must_not: &[
                    "Open problems: none",
                    "exit 1: Failures (2)",
                    "exit 1: Test run finished",
                ],
            },
            Expect {
                calls: 6,
                must: &["no pass since"],
                model: &[],
                must_not: &["Open problems: none", "✓ bash `bash test.sh"],
            },
            Expect {
                calls: 8,
                must: &["Open problems: none"],
                model: &[],
                must_not: STILL_OPEN,
            },
        ],
    },
    // flake8 then pylint: a `cd app &&` flake8 piped into head (exit 0 over
    // an error), pylint's exit 16 under its module heading, `|| true`.
    Case {
        name: "python-flake8-pylint",
        expect: &[
            Expect {
                calls: 3,
                must: &["exited 1", "F821 undefined name 'load_rows'"],
                model: &[],
                must_not: &["Open problems: none"],
            },
            Expect {
                calls: 5,
                must: &["no pass since"],
                model: &[],
                must_not: &["Open problems: none", "✓ bash `cd app"],
            },
            Expect {
                calls: 7,
                must: &["exited 16", "Missing module docstring"],
                model: &[],
                must_not: &["Open problems: none", "exit 16: *****", "exit 16: -----"],
            },
            Expect {
                calls: 8,
                must: &["no pass since"],
                model: &[],
                must_not: &["Open problems: none", "✓ bash `pylint"],
            },
            Expect {
                calls: 10,
                must: &["Open problems: none"],
                model: &[],
                must_not: STILL_OPEN,
            },
        ],
    },
    // doctest, then unittest, through `make test` (make's own error line
    // last); a masked `timeout 60 python3 -m unittest`; then make passes.
    Case {
        name: "python-doctest-make",
        expect: &[
            Expect {
                calls: 4,
                must: &["exited 2", "textstats.word_count"],
                model: &[],
                must_not: &[
                    "Open problems: none",
                    "exit 2: make: ***",
                    "exit 2: python3 -m doctest",
                    "exit 2: *****",
                ],
            },
            Expect {
                calls: 6,
                must: &["exited 2", "test_average_word_length", "test_longest_word", "2 != 2.5"],
                model: &[],
                must_not: &["Open problems: none", "exit 2: make: ***", "exit 2: python3 -m doctest"],
            },
            Expect {
                calls: 8,
                must: &["test_longest_word", "no pass since"],
                model: &[],
                must_not: &["Open problems: none", "✓ bash `timeout 60"],
            },
            Expect {
                calls: 10,
                must: &["3 passed", "Open problems: none"],
                model: &[],
                must_not: STILL_OPEN,
            },
        ],
    },
    // prove through `npm run test` (npm's notice last): two files fail; a
    // one-file prove passes while the other still fails; a piped verbose run.
    Case {
        name: "perl-prove",
        expect: &[
            Expect {
                calls: 5,
                must: &["exited 1", "t/range.t", "t/roman.t"],
                model: &[],
                must_not: &[
                    "Open problems: none",
                    "exit 1: npm notice",
                    "exit 1: > numerals",
                    "exit 1: Result: FAIL",
                ],
            },
            Expect {
                calls: 7,
                must: &["t/range.t", "no pass since"],
                model: &[],
                must_not: &["Open problems: none"],
            },
            Expect {
                calls: 8,
                must: &["t/range.t", "no pass since"],
                model: &[],
                must_not: &["Open problems: none", "✓ bash `prove -lv"],
            },
            Expect {
                calls: 10,
                must: &["Open problems: none"],
                model: &[],
                must_not: STILL_OPEN,
            },
        ],
    },
    // Held out. Test::More run directly by perl (exit 3), a piped tail.
    Case {
        name: "perl-test-more",
        expect: &[
            Expect {
                calls: 3,
                must: &["exited 3", "perl -Ilib t/duration.t"],
                model: &[],
                must_not: &["Open problems: none", "exit 3: ok 1 - seconds", "exit 3: 1..6"],
            },
            Expect {
                calls: 5,
                must: &["no pass since"],
                model: &[],
                must_not: &["Open problems: none", "✓ bash `perl -Ilib"],
            },
            Expect {
                calls: 7,
                must: &["Open problems: none"],
                model: &[],
                must_not: STILL_OPEN,
            },
        ],
    },
    // Held out. busted (Lua): a piped tail over two failures as the first
    // run, then a real exit 1, then pass.
    Case {
        name: "lua-busted",
        expect: &[
            Expect {
                calls: 3,
                must: &["busted 2>&1"],
                model: &[],
                must_not: &["Open problems: none", "✓ bash `busted"],
            },
            Expect {
                calls: 5,
                must: &["exited 1", "no pass since"],
                model: &[],
                must_not: &["Open problems: none", "exit 1: ++-"],
            },
            Expect {
                calls: 7,
                must: &["Open problems: none"],
                model: &[],
                must_not: STILL_OPEN,
            },
        ],
    },
    // Held out. javac: a syntax error, then two type errors, a piped head
    // over the last one, then it builds and runs.
    Case {
        name: "java-javac",
        expect: &[
            Expect {
                calls: 3,
                must: &["exited 1", "javac -d out"],
                model: &[],
                must_not: &["Open problems: none", "exit 1: 1 error"],
            },
            Expect {
                calls: 5,
                must: &["exited 1", "no pass since"],
                model: &[],
                must_not: &["Open problems: none", "exit 1: 2 errors"],
            },
            Expect {
                calls: 7,
                must: &["no pass since"],
                model: &[],
                must_not: &["Open problems: none", "✓ bash `javac"],
            },
            Expect {
                calls: 10,
                must: &["Open problems: none"],
                model: &[],
                must_not: STILL_OPEN,
            },
        ],
    },
    // Held out. cppcheck with --error-exitcode: three errors, two fixes, a
    // piped tail over the last, then clean.
    Case {
        name: "c-cppcheck",
        expect: &[
            Expect {
                calls: 2,
                must: &["exited 1", "cppcheck -q"],
                model: &[],
                must_not: &["Open problems: none"],
            },
            Expect {
                calls: 5,
                must: &["no pass since"],
                model: &[],
                must_not: &["Open problems: none", "✓ bash `cppcheck"],
            },
            Expect {
                calls: 7,
                must: &["Open problems: none"],
                model: &[],
                must_not: STILL_OPEN,
            },
        ],
    },
    // Held out. xmllint with a schema: not well-formed (exit 1), invalid
    // (exit 3), a grep over the last error (exit 0), then valid.
    Case {
        name: "xml-xmllint",
        expect: &[
            Expect {
                calls: 3,
                must: &["exited 1", "xmllint --noout"],
                model: &[],
                must_not: &["Open problems: none"],
            },
            Expect {
                calls: 5,
                must: &["exited 3", "no pass since"],
                model: &[],
                must_not: &["Open problems: none", "exit 3: catalog.xml fails to validate"],
            },
            Expect {
                calls: 7,
                must: &["no pass since"],
                model: &[],
                must_not: &["Open problems: none", "✓ bash `xmllint"],
            },
            Expect {
                calls: 9,
                must: &["Open problems: none"],
                model: &[],
                must_not: STILL_OPEN,
            },
        ],
    },
    // Held out. ExUnit through `mix test` (exit 2, compile lines first): a
    // piped tail over one failure, a --failed rerun, then the whole suite.
    Case {
        name: "elixir-exunit",
        expect: &[
            Expect {
                calls: 5,
                must: &["exited 2", "mix test"],
                model: &[],
                must_not: &[
                    "Open problems: none",
                    "exit 2: Compiling 1 file",
                    "exit 2: Generated wallet app",
                    "exit 2: Randomized with seed",
                ],
            },
            Expect {
                calls: 7,
                must: &["no pass since"],
                model: &[],
                must_not: &["Open problems: none", "✓ bash `mix test"],
            },
            Expect {
                calls: 10,
                must: &["Open problems: none"],
                model: &[],
                must_not: STILL_OPEN,
            },
        ],
    },
    // Held out. bandit -ll: three findings under INFO lines, a piped tail
    // that shows only the metrics, then clean.
    Case {
        name: "python-bandit",
        expect: &[
            Expect {
                calls: 2,
                must: &["exited 1", "bandit -r app/"],
                model: &[],
                must_not: &["Open problems: none", "exit 1: [main]", "exit 1: Run started"],
            },
            Expect {
                calls: 4,
                must: &["no pass since"],
                model: &[],
                must_not: &["Open problems: none", "✓ bash `bandit"],
            },
            Expect {
                calls: 6,
                must: &["Open problems: none"],
                model: &[],
                must_not: STILL_OPEN,
            },
        ],
    },
    // Held out. codespell (exit 65): a -w run that fixes all but one, a
    // piped head over it, a hand fix, then clean.
    Case {
        name: "docs-codespell",
        expect: &[
            Expect {
                calls: 3,
                must: &["exited 65", "codespell README.md docs/"],
                model: &[],
                must_not: &["Open problems: none"],
            },
            Expect {
                calls: 4,
                must: &["exited 65"],
                model: &[],
                must_not: &["Open problems: none", "exit 65: FIXED"],
            },
            Expect {
                calls: 5,
                must: &["no pass since"],
                model: &[],
                must_not: &["Open problems: none", "✓ bash `codespell"],
            },
            Expect {
                calls: 7,
                must: &["Open problems: none"],
                model: &[],
                must_not: STILL_OPEN,
            },
        ],
    },
    // Held out. EUnit through `make test` (exit 2): a one-module run by
    // SPEC= that passes, a piped tail over the rest, then all pass.
    Case {
        name: "erlang-eunit",
        expect: &[
            Expect {
                calls: 4,
                must: &["exited 2", "no pass since"],
                model: &[],
                must_not: &[
                    "Open problems: none",
                    "exit 2: erlc -o ebin",
                    "exit 2: erl -noshell",
                    "exit 2: make: *** [Makefile:7: test] Error 1",
                    "exit 2: ====",
                ],
            },
            Expect {
                calls: 5,
                must: &["no pass since"],
                model: &[],
                must_not: &["Open problems: none"],
            },
            Expect {
                calls: 6,
                must: &["no pass since"],
                model: &[],
                must_not: &["Open problems: none"],
            },
            Expect {
                calls: 7,
                must: &["no pass since"],
                model: &[],
                must_not: &["Open problems: none", "✓ bash `make test 2>&1 | tail -n 6`"],
            },
            Expect {
                calls: 8,
                must: &["no pass since"],
                model: &[],
                must_not: &["Open problems: none"],
            },
            Expect {
                calls: 9,
                must: &["Open problems: none"],
                model: &[],
                must_not: STILL_OPEN,
            },
        ],
    },
    // Held out. tcltest through `cd tests && tclsh all.tcl` (exit 1): a
    // -match run that passes, a `; echo "done"` run, then all pass.
    Case {
        name: "tcl-tcltest",
        expect: &[
            Expect {
                calls: 4,
                must: &["exited 1", "no pass since"],
                model: &[],
                must_not: &[
                    "Open problems: none",
                    "exit 1: Tests running in interp",
                    "exit 1: Tests located in",
                    "exit 1: Tests began at",
                    "exit 1: Tests ended at",
                    "exit 1: slug.test",
                    "exit 1: ==== Contents of test case",
                    "exit 1: Sourced 1 Test Files",
                ],
            },
            Expect {
                calls: 5,
                must: &["no pass since"],
                model: &[],
                must_not: &["Open problems: none"],
            },
            Expect {
                calls: 6,
                must: &["no pass since"],
                model: &[],
                must_not: &["Open problems: none"],
            },
            Expect {
                calls: 7,
                must: &["no pass since"],
                model: &[],
                must_not: &["Open problems: none", "✓ bash `tclsh tests/all.tcl; echo \"done\"`"],
            },
            Expect {
                calls: 8,
                must: &["no pass since"],
                model: &[],
                must_not: &["Open problems: none"],
            },
            Expect {
                calls: 9,
                must: &["Open problems: none"],
                model: &[],
                must_not: STILL_OPEN,
            },
        ],
    },
    // Held out. Ruby's test-unit under `timeout 60` (exit 1): a -n run of one
    // test that passes, an `|| true` run, then pass.
    Case {
        name: "ruby-test-unit",
        expect: &[
            Expect {
                calls: 3,
                must: &["exited 1", "no pass since"],
                model: &[],
                must_not: &[
                    "Open problems: none",
                    "exit 1: Loaded suite",
                    "exit 1: Started",
                    "exit 1: ..F",
                    "exit 1: ====",
                    "exit 1: Finished in",
                ],
            },
            Expect {
                calls: 4,
                must: &["no pass since"],
                model: &[],
                must_not: &["Open problems: none"],
            },
            Expect {
                calls: 5,
                must: &["no pass since"],
                model: &[],
                must_not: &["Open problems: none"],
            },
            Expect {
                calls: 6,
                must: &["no pass since"],
                model: &[],
                must_not: &["Open problems: none", "✓ bash `ruby -Ilib test/test_cart.rb || true`"],
            },
            Expect {
                calls: 7,
                must: &["no pass since"],
                model: &[],
                must_not: &["Open problems: none"],
            },
            Expect {
                calls: 8,
                must: &["Open problems: none"],
                model: &[],
                must_not: STILL_OPEN,
            },
        ],
    },
    // Held out. testthat through `cd tests && Rscript -e …` (exit 1): a
    // test_file run of one file that passes, an `|| true` run, then pass.
    Case {
        name: "r-testthat",
        expect: &[
            Expect {
                calls: 4,
                must: &["exited 1", "no pass since"],
                model: &[],
                must_not: &[
                    "Open problems: none",
                    "exit 1: v | F W S",
                    "exit 1: / |",
                    "exit 1: == Results",
                    "exit 1: Duration:",
                    "exit 1: Execution halted",
                ],
            },
            Expect {
                calls: 5,
                must: &["no pass since"],
                model: &[],
                must_not: &["Open problems: none"],
            },
            Expect {
                calls: 6,
                must: &["no pass since"],
                model: &[],
                must_not: &["Open problems: none"],
            },
            Expect {
                calls: 7,
                must: &["no pass since"],
                model: &[],
                must_not: &[
                    "Open problems: none",
                    "✓ bash `Rscript -e 'testthat::test_dir(\"tests/testthat\")' || true`",
                ],
            },
            Expect {
                calls: 8,
                must: &["no pass since"],
                model: &[],
                must_not: &["Open problems: none"],
            },
            Expect {
                calls: 9,
                must: &["Open problems: none"],
                model: &[],
                must_not: STILL_OPEN,
            },
        ],
    },
    // Held out. Alcotest through `timeout 60 dune test` (exit 1, dune's own
    // lines first): a `dune exec … -- test capitalize` run that passes, a
    // piped tail, then all pass.
    Case {
        name: "ocaml-alcotest",
        expect: &[
            Expect {
                calls: 4,
                must: &["exited 1", "no pass since"],
                model: &[],
                must_not: &[
                    "Open problems: none",
                    "exit 1: Info: Creating file dune-project",
                    "exit 1: | (lang dune 2.9)",
                    "exit 1: test_wordc alias runtest",
                    "exit 1: (cd _build/default",
                    "exit 1: Testing `wordc'",
                    "exit 1: This run has ID",
                    "exit 1: ┌",
                ],
            },
            Expect {
                calls: 5,
                must: &["no pass since"],
                model: &[],
                must_not: &["Open problems: none"],
            },
            Expect {
                calls: 6,
                must: &["no pass since"],
                model: &[],
                must_not: &["Open problems: none"],
            },
            Expect {
                calls: 7,
                must: &["no pass since"],
                model: &[],
                must_not: &["Open problems: none", "✓ bash `dune test 2>&1 | tail -n 5`"],
            },
            Expect {
                calls: 8,
                must: &["no pass since"],
                model: &[],
                must_not: &["Open problems: none"],
            },
            Expect {
                calls: 9,
                must: &["Open problems: none"],
                model: &[],
                must_not: STILL_OPEN,
            },
        ],
    },
    // Held out. stylelint through `npm run lint:css` (exit 2, npm's notices
    // after): a one-file run that passes, an `|| true` run, then clean.
    Case {
        name: "css-stylelint",
        expect: &[
            Expect {
                calls: 4,
                must: &["exited 2", "no pass since"],
                model: &[],
                must_not: &[
                    "Open problems: none",
                    "exit 2: > site@1.0.0 lint:css",
                    "exit 2: > stylelint",
                    "exit 2: npm notice",
                    "exit 2: 1 error potentially fixable",
                ],
            },
            Expect {
                calls: 5,
                must: &["no pass since"],
                model: &[],
                must_not: &["Open problems: none"],
            },
            Expect {
                calls: 6,
                must: &["no pass since"],
                model: &[],
                must_not: &["Open problems: none"],
            },
            Expect {
                calls: 7,
                must: &["no pass since"],
                model: &[],
                must_not: &["Open problems: none", "✓ bash `stylelint css/*.css || true`"],
            },
            Expect {
                calls: 8,
                must: &["no pass since"],
                model: &[],
                must_not: &["Open problems: none"],
            },
            Expect {
                calls: 9,
                must: &["Open problems: none"],
                model: &[],
                must_not: STILL_OPEN,
            },
        ],
    },
    // Held out. isort --check-only through `make lint` (exit 2): a one-file
    // check that passes, a piped head, an isort fix run, then clean.
    Case {
        name: "python-isort",
        expect: &[
            Expect {
                calls: 4,
                must: &["exited 2", "no pass since"],
                model: &[],
                must_not: &[
                    "Open problems: none",
                    "exit 2: isort --check-only app/",
                    "exit 2: make: *** [Makefile:3: lint] Error 1",
                ],
            },
            Expect {
                calls: 5,
                must: &["no pass since"],
                model: &[],
                must_not: &["Open problems: none"],
            },
            Expect {
                calls: 6,
                must: &["no pass since"],
                model: &[],
                must_not: &["Open problems: none"],
            },
            Expect {
                calls: 7,
                must: &["no pass since"],
                model: &[],
                must_not: &[
                    "Open problems: none",
                    "✓ bash `isort --check-only app/ 2>&1 | head -n 3`",
                ],
            },
            Expect {
                calls: 8,
                must: &["no pass since"],
                model: &[],
                must_not: &["Open problems: none"],
            },
            Expect {
                calls: 9,
                must: &["Open problems: none"],
                model: &[],
                must_not: STILL_OPEN,
            },
        ],
    },
    // Held out. tidy through `bash scripts/check.sh` (exit 1, a "checking"
    // line before each page): a one-page tidy that passes, a piped tail,
    // then clean.
    Case {
        name: "html-tidy",
        expect: &[
            Expect {
                calls: 4,
                must: &["exited 1", "no pass since"],
                model: &[],
                must_not: &[
                    "Open problems: none",
                    "exit 1: checking site/",
                    "exit 1: using HTML Tidy",
                ],
            },
            Expect {
                calls: 5,
                must: &["no pass since"],
                model: &[],
                must_not: &["Open problems: none"],
            },
            Expect {
                calls: 6,
                must: &["no pass since"],
                model: &[],
                must_not: &["Open problems: none"],
            },
            Expect {
                calls: 7,
                must: &["no pass since"],
                model: &[],
                must_not: &["Open problems: none", "✓ bash `bash scripts/check.sh 2>&1 | tail -n 4`"],
            },
            Expect {
                calls: 8,
                must: &["no pass since"],
                model: &[],
                must_not: &["Open problems: none"],
            },
            Expect {
                calls: 9,
                must: &["Open problems: none"],
                model: &[],
                must_not: STILL_OPEN,
            },
        ],
    },
    // Held out. pycodestyle through `make style` with @ recipes (exit 2, a
    // banner echo first): a one-file run that passes, a `| grep -v` run,
    // then clean.
    Case {
        name: "python-pycodestyle",
        expect: &[
            Expect {
                calls: 4,
                must: &["exited 2", "no pass since"],
                model: &[],
                must_not: &[
                    "Open problems: none",
                    "exit 2: == pycodestyle ==",
                    "exit 2: make: *** [Makefile:4: style] Error 1",
                ],
            },
            Expect {
                calls: 6,
                must: &["no pass since"],
                model: &[],
                must_not: &["Open problems: none"],
            },
            Expect {
                calls: 7,
                must: &["no pass since"],
                model: &[],
                must_not: &["Open problems: none", "✓ bash `make style 2>&1 | grep -v '^=='`"],
            },
            Expect {
                calls: 8,
                must: &["no pass since"],
                model: &[],
                must_not: &["Open problems: none"],
            },
            Expect {
                calls: 9,
                must: &["Open problems: none"],
                model: &[],
                must_not: STILL_OPEN,
            },
        ],
    },
    // Held out. php -l in a for loop whose last file passes (exit 0), a
    // hand-written PASS/FAIL runner (exit 1), the loop clean, then pass.
    Case {
        name: "php-lint-runner",
        expect: &[
            Expect {
                calls: 4,
                must: &[],
                model: &[],
                must_not: &[
                    "Open problems: none",
                    r#"✓ bash `for f in src/*.php; do php -l "$f"; done`"#,
                ],
            },
            Expect {
                calls: 6,
                must: &["exited 1", "no pass since"],
                model: &[],
                must_not: &["Open problems: none", "exit 1: PASS format_cents positive"],
            },
            Expect {
                calls: 7,
                must: &["no pass since"],
                model: &[],
                must_not: &["Open problems: none"],
            },
            Expect {
                calls: 9,
                must: &["Open problems: none"],
                model: &[],
                must_not: STILL_OPEN,
            },
        ],
    },
    // Held out. sqlite3 running an assertion script by `cd db && … <
    // check.sql` (exit 1), a `set -o pipefail; … | tail` run that keeps
    // the status (exit 1), then pass.
    Case {
        name: "sql-sqlite-asserts",
        expect: &[
            Expect {
                calls: 4,
                must: &["exited 1", "no pass since"],
                model: &[],
                must_not: &["Open problems: none"],
            },
            Expect {
                calls: 5,
                must: &["no pass since"],
                model: &[],
                must_not: &["Open problems: none"],
            },
            Expect {
                calls: 6,
                must: &["exited 1", "no pass since"],
                model: &[],
                must_not: &["Open problems: none"],
            },
            Expect {
                calls: 8,
                must: &["Open problems: none"],
                model: &[],
                must_not: STILL_OPEN,
            },
        ],
    },
    // Held out. A golden test by `awk … | diff -u expected -` (exit 1, the
    // diff's headers first), an `|| echo failed` run, then no diff.
    Case {
        name: "awk-golden-diff",
        expect: &[
            Expect {
                calls: 4,
                must: &["exited 1", "no pass since"],
                model: &[],
                must_not: &[
                    "Open problems: none",
                    "exit 1: --- tests/expected.txt",
                    "exit 1: +++ -",
                    "exit 1: @@ -1,3 +1,4 @@",
                ],
            },
            Expect {
                calls: 6,
                must: &["no pass since"],
                model: &[],
                must_not: &[
                    "Open problems: none",
                    "✓ bash `awk -F, -f report.awk sales.csv | diff -u tests/expected.txt - || echo failed`",
                ],
            },
            Expect {
                calls: 7,
                must: &["no pass since"],
                model: &[],
                must_not: &["Open problems: none"],
            },
            Expect {
                calls: 8,
                must: &["Open problems: none"],
                model: &[],
                must_not: STILL_OPEN,
            },
        ],
    },
    // Held out. A Node assert script with its own ok/not ok lines under
    // `timeout 30` (exit 1): a one-function run that passes, a `| tee` and
    // a `| grep -v '^ok'` run, then pass.
    Case {
        name: "js-assert-script",
        expect: &[
            Expect {
                calls: 3,
                must: &["exited 1", "no pass since"],
                model: &[],
                must_not: &[
                    "Open problems: none",
                    "exit 1: ok - parseDuration 1h30m",
                    "exit 1: Expected values to be strictly equal:",
                ],
            },
            Expect {
                calls: 5,
                must: &["no pass since"],
                model: &[],
                must_not: &["Open problems: none"],
            },
            Expect {
                calls: 6,
                must: &["no pass since"],
                model: &[],
                must_not: &[
                    "Open problems: none",
                    "✓ bash `node test/check.mjs 2>&1 | tee test.log`",
                ],
            },
            Expect {
                calls: 7,
                must: &["no pass since"],
                model: &[],
                must_not: &["Open problems: none", "✓ bash `node test/check.mjs | grep -v '^ok'`"],
            },
            Expect {
                calls: 9,
                must: &["Open problems: none"],
                model: &[],
                must_not: STILL_OPEN,
            },
        ],
    },
    // Held out. dash -n over bin/*.sh in a `set -e` for loop (exit 2, a
    // banner per file): a one-file check that passes, a `; echo "rc=$?"`
    // run, then clean.
    Case {
        name: "shell-dash-n",
        expect: &[
            Expect {
                calls: 3,
                must: &["exited 2", "no pass since"],
                model: &[],
                must_not: &["Open problems: none", "exit 2: == bin/backup.sh"],
            },
            Expect {
                calls: 5,
                must: &["no pass since"],
                model: &[],
                must_not: &["Open problems: none"],
            },
            Expect {
                calls: 6,
                must: &["no pass since"],
                model: &[],
                must_not: &[
                    "Open problems: none",
                    r#"✓ bash `for f in bin/*.sh; do dash -n "$f"; done; echo "rc=$?"`"#,
                ],
            },
            Expect {
                calls: 7,
                must: &["no pass since"],
                model: &[],
                must_not: &["Open problems: none"],
            },
            Expect {
                calls: 8,
                must: &["Open problems: none"],
                model: &[],
                must_not: STILL_OPEN,
            },
        ],
    },
    // --- Held-out tools, fourth set (libcheck, cmocka, ava, cucumber-js,
    // ward, markdownlint, yamllint, shunit2), written from the real output
    // of each call.
    // Held out. libcheck through `make -k check`: a compile error in one
    // test unit and a failing check in the other in one run (exit 2), a
    // CK_RUN_CASE that names no case (0 checks, exit 0), a subset, a piped
    // tail (exit 0), then all pass.
    Case {
        name: "c-libcheck",
        expect: &[
            Expect {
                calls: 6,
                must: &[
                    "exited 2",
                    "test_round_nearest_cent",
                    "round_cents(0.29) == 28",
                    "check_parse.c:16",
                    "'cent' undeclared",
                ],
                model: &[],
                must_not: &[
                    "Open problems: none",
                    "exit 2: cc -Wall",
                    "exit 2: ./tests/check_round",
                    "exit 2: Running suite(s)",
                    "exit 2: make: *** [Makefile:8: check-round] Error 1",
                ],
            },
            Expect {
                calls: 8,
                must: &["ran no tests", "test_round_nearest_cent", "no pass since"],
                model: &[],
                must_not: &["Open problems: none", "✓ bash `CK_RUN_CASE=Parse make check`"],
            },
            Expect {
                calls: 9,
                must: &["test_round_nearest_cent", "no pass since"],
                model: &[],
                must_not: &["Open problems: none"],
            },
            Expect {
                calls: 10,
                must: &["test_round_nearest_cent", "no pass since"],
                model: &[],
                must_not: &["Open problems: none", "✓ bash `make check 2>&1 | tail -n 3`"],
            },
            Expect {
                calls: 12,
                must: &["Open problems: none"],
                model: &[],
                must_not: STILL_OPEN,
            },
        ],
    },
    // Held out. cmocka and a demo through make: `make run` segfaults (make
    // exits 2 with "Segmentation fault"), `make test || true` (two tests
    // crash, exit 0), a fix, the demo runs, a TEST_FILTER subset passes, a
    // piped tail over the last failure (exit 0), then all pass.
    Case {
        name: "c-cmocka-crash",
        expect: &[
            Expect {
                calls: 6,
                must: &["exited 2", "Segmentation fault"],
                model: &[],
                must_not: &["Open problems: none", "exit 2: cc -Wall", "exit 2: ./demo"],
            },
            Expect {
                calls: 7,
                must: &["push_then_pop_keeps_order", "size_counts_pushes_and_pops"],
                model: &[],
                must_not: &["Open problems: none", "✓ bash `make test || true`"],
            },
            Expect {
                calls: 9,
                must: &[],
                model: &[],
                must_not: &["Open problems: none", "bash `make run` exited 2; no pass since"],
            },
            Expect {
                calls: 10,
                must: &["size_counts_pushes_and_pops"],
                model: &[],
                must_not: &["Open problems: none"],
            },
            Expect {
                calls: 11,
                must: &["size_counts_pushes_and_pops"],
                model: &[],
                must_not: &["Open problems: none", "✓ bash `make test 2>&1 | tail -n 6`"],
            },
            Expect {
                calls: 13,
                must: &["Open problems: none"],
                model: &[],
                must_not: STILL_OPEN,
            },
        ],
    },
    // Held out. ava through `npm test` (exit 1, two failures, npm notices
    // after): a fix, then a `test.only` edit makes `npm test` pass with "1
    // test passed" while "parses megabytes" is still broken; a --match
    // subset piped into tail (exit 0); a --match that matches nothing
    // ("Couldn't find any matching tests", exit 1); then all pass.
    Case {
        name: "js-ava",
        expect: &[
            Expect {
                calls: 4,
                must: &["exited 1", "formats exactly one kilobyte", "parses megabytes"],
                model: &[],
                must_not: &[
                    "Open problems: none",
                    "exit 1: npm notice",
                    "exit 1: > test",
                    "exit 1: Difference (- actual, + expected):",
                ],
            },
            Expect {
                calls: 7,
                must: &["parses megabytes"],
                model: &[],
                must_not: &["Open problems: none"],
            },
            Expect {
                calls: 9,
                must: &["parses megabytes"],
                model: &[],
                must_not: &[
                    "Open problems: none",
                    "✓ bash `npx ava --match 'parses*' 2>&1 | tail -n 15`",
                ],
            },
            Expect {
                calls: 10,
                must: &["ran no tests", "parses megabytes"],
                model: &[],
                must_not: &["Open problems: none", "✓ bash `npx ava --match '*gigabytes*'`"],
            },
            Expect {
                calls: 12,
                must: &["Open problems: none"],
                model: &[],
                must_not: STILL_OPEN,
            },
        ],
    },
    // Held out. cucumber-js through `npm test` (exit 1, two scenarios
    // fail), --fail-fast stops after the first (exit 1, "2 skipped"), a fix,
    // a --tags run that selects nothing ("0 scenarios", exit 0), one
    // scenario by file:line passes, a piped tail (exit 0), then all pass.
    Case {
        name: "js-cucumber",
        expect: &[
            Expect {
                calls: 5,
                must: &["exited 1", "Total counts quantities", "Amount due without a coupon"],
                model: &[],
                must_not: &[
                    "Open problems: none",
                    "exit 1: npm notice",
                    "exit 1: > test",
                    "exit 1: .....F......F",
                    "exit 1: Failures:",
                ],
            },
            Expect {
                calls: 6,
                must: &["Total counts quantities", "Amount due without a coupon"],
                model: &[],
                must_not: &["Open problems: none", "exit 1: .....F-------"],
            },
            Expect {
                calls: 8,
                must: &["ran no tests", "Amount due without a coupon"],
                model: &[],
                must_not: &["Open problems: none", "✓ bash `npx cucumber-js --tags @quantities`"],
            },
            Expect {
                calls: 9,
                must: &["Amount due without a coupon"],
                model: &[],
                must_not: &["Open problems: none"],
            },
            Expect {
                calls: 10,
                must: &["no pass since"],
                model: &[],
                must_not: &["Open problems: none", "✓ bash `npm test 2>&1 | tail -n 5`"],
            },
            Expect {
                calls: 12,
                must: &["Open problems: none"],
                model: &[],
                must_not: STILL_OPEN,
            },
        ],
    },
    // Held out. ward: not on PATH (exit 127), then from the tools venv with
    // --fail-limit 1 (stops after the first failure, exit 1), a wrapper
    // piped into tail (exit 0), a --search subset, then background runs
    // into ward.log read by `tail -n 30`: one failure, then all pass.
    Case {
        name: "python-ward",
        expect: &[
            Expect {
                calls: 3,
                must: &["exited 127", "command not found"],
                model: &[],
                must_not: &["Open problems: none"],
            },
            Expect {
                calls: 4,
                must: &["slugify drops trailing punctuation"],
                model: &[],
                must_not: &["Open problems: none", "bash `ward` exited 127"],
            },
            Expect {
                calls: 6,
                must: &["no pass since"],
                model: &[],
                must_not: &[
                    "Open problems: none",
                    "bash `ward` exited 127",
                    "✓ bash `bash scripts/test.sh 2>&1 | tail -n 6`",
                ],
            },
            Expect {
                calls: 8,
                must: &["no pass since"],
                model: &[],
                must_not: &["Open problems: none"],
            },
            Expect {
                calls: 10,
                must: &["shorten never ends on a dash"],
                model: &[],
                must_not: &["Open problems: none", "✓ bash `sleep 2; tail -n 30 ward.log`"],
            },
            Expect {
                calls: 13,
                // The background run's log, read again, shows the pass: its
                // problem closes. `ward --fail-limit 1` itself was not run
                // again, so "no pass since" stays true of it.
                must: &["ward --fail-limit 1` exited 1"],
                model: &[],
                must_not: &[
                    "bash `sleep 2; tail -n 30 ward.log` failed",
                    "bash `bash scripts/test.sh 2>&1 | tail -n 6` failed",
                ],
            },
        ],
    },
    // Held out. markdownlint through `npm run lint:md` (exit 1, eleven
    // errors in two files, npm notices after), a --fix run that leaves two
    // errors in docs/ (exit 1), a one-file run that passes with no output,
    // an `|| true` run (exit 0), hand fixes, then clean.
    Case {
        name: "docs-markdownlint",
        expect: &[
            Expect {
                calls: 4,
                must: &["exited 1", "MD001/heading-increment"],
                model: &[],
                must_not: &["Open problems: none", "exit 1: npm notice", "exit 1: > lint:md"],
            },
            Expect {
                calls: 5,
                must: &["MD025/single-title/single-h1", "no pass since"],
                model: &[],
                must_not: &["Open problems: none"],
            },
            Expect {
                calls: 6,
                must: &["no pass since"],
                model: &[],
                must_not: &["Open problems: none"],
            },
            Expect {
                calls: 7,
                must: &["no pass since"],
                model: &[],
                must_not: &["Open problems: none", "✓ bash `npx markdownlint docs/ || true`"],
            },
            Expect {
                calls: 10,
                must: &["Open problems: none"],
                model: &[],
                must_not: STILL_OPEN,
            },
        ],
    },
    // Held out. yamllint --strict through `make lint` (make exits 2,
    // findings under per-file headings), a one-file run that passes, a -d
    // relaxed run with `; echo "exit: $?"` (exit 0, prints exit: 1), a
    // piped tail (exit 0), then clean.
    Case {
        name: "yaml-yamllint",
        expect: &[
            Expect {
                calls: 5,
                must: &["exited 2", "duplication of key", "no pass since"],
                model: &[],
                must_not: &[
                    "Open problems: none",
                    "exit 2: yamllint --strict config/",
                    "exit 2: make: *** [Makefile:3: lint] Error 1",
                ],
            },
            Expect {
                calls: 8,
                must: &["no pass since"],
                model: &[],
                must_not: &["Open problems: none"],
            },
            Expect {
                calls: 9,
                must: &["no pass since"],
                model: &[],
                must_not: &[
                    "Open problems: none",
                    r#"✓ bash `/tmp/tools/venv/bin/yamllint -d relaxed config/app.yml; echo "exit: $?"`"#,
                ],
            },
            Expect {
                calls: 10,
                must: &["no pass since"],
                model: &[],
                must_not: &[
                    "Open problems: none",
                    "✓ bash `export PATH=/tmp/tools/venv/bin:$PATH; make lint 2>&1 | tail -n 4`",
                ],
            },
            Expect {
                calls: 12,
                // `make lint` passes; the `-d relaxed` run of yamllint (other
                // rules) was not run again, so "no pass since" stays true of it.
                must: &["make lint"],
                model: &[],
                must_not: &["make lint` exited"],
            },
        ],
    },
    // Held out. shunit2 through `make test` (exit 2; ANSI colours, each
    // failed assert also reported as "returned non-zero return code"), a
    // subset of two named tests that passes, a `; echo "exit: $?"` run
    // (exit 0, prints exit: 2), then all pass.
    Case {
        name: "shell-shunit2",
        expect: &[
            Expect {
                calls: 4,
                must: &[
                    "exited 2",
                    "testJoinTrailingSlash",
                    "expected:<a/b> but was:<a//b>",
                    "testExtOfDottedName",
                    "expected:<gz> but was:<tar.gz>",
                ],
                model: &[],
                must_not: &[
                    "Open problems: none",
                    "exit 2: bash tests/test_paths.sh",
                    "exit 2: testJoinPlain",
                    "exit 2: make: *** [Makefile:3: test] Error 1",
                ],
            },
            Expect {
                calls: 6,
                must: &["testJoinTrailingSlash", "no pass since"],
                model: &[],
                must_not: &["Open problems: none"],
            },
            Expect {
                calls: 7,
                must: &["expected:<a/b> but was:<a//b>", "no pass since"],
                model: &[],
                must_not: &["Open problems: none", r#"✓ bash `make test; echo "exit: $?"`"#],
            },
            Expect {
                calls: 9,
                must: &["Open problems: none"],
                model: &[],
                must_not: STILL_OPEN,
            },
        ],
    },
];

/// The sessions whose tools' output formats the HUD's authors had not
/// looked at when they were captured (written from real output by a helper
/// who did not read the HUD's code).
pub const HELD_OUT: &[&str] = &[
    "perl-test-more",
    "lua-busted",
    "java-javac",
    "c-cppcheck",
    "xml-xmllint",
    "elixir-exunit",
    "python-bandit",
    "docs-codespell",
    "erlang-eunit",
    "tcl-tcltest",
    "ruby-test-unit",
    "r-testthat",
    "ocaml-alcotest",
    "css-stylelint",
    "python-isort",
    "html-tidy",
    "python-pycodestyle",
    "php-lint-runner",
    "sql-sqlite-asserts",
    "awk-golden-diff",
    "js-assert-script",
    "shell-dash-n",
    "c-libcheck",
    "c-cmocka-crash",
    "js-ava",
    "js-cucumber",
    "python-ward",
    "docs-markdownlint",
    "yaml-yamllint",
    "shell-shunit2",
];

/// What one case gave.
#[derive(Debug, Default, Clone)]
pub struct Outcome {
    /// Expected facts found, and expected in all.
    pub found: usize,
    pub expected: usize,
    /// The same for what only the model's part can supply.
    pub model_found: usize,
    pub model_expected: usize,
    /// False or stale statements, each described.
    pub false_statements: Vec<String>,
    /// Questions the model was asked, and how they ended.
    pub asked: usize,
    pub shown: usize,
    pub rejected: usize,
    /// Seconds from the sync that raised a question to the answer's first
    /// verified item being in the HUD (shown answers only).
    pub latencies: Vec<f64>,
    /// Expected facts that were missing, for the report.
    pub missing: Vec<String>,
}

impl Outcome {
    pub fn add(&mut self, other: &Outcome) {
        self.found += other.found;
        self.expected += other.expected;
        self.model_found += other.model_found;
        self.model_expected += other.model_expected;
        self.false_statements.extend(other.false_statements.iter().cloned());
        self.asked += other.asked;
        self.shown += other.shown;
        self.rejected += other.rejected;
        self.latencies.extend(&other.latencies);
        self.missing.extend(other.missing.iter().cloned());
    }
}

fn session_file(name: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/sessions")
        .join(format!("{name}.json"));
    serde_json::from_slice(&std::fs::read(&path).expect("session fixture")).expect("session JSON")
}

fn tool_calls(message: &Value) -> usize {
    message["parts"]
        .as_array()
        .map_or(0, |parts| parts.iter().filter(|p| p["type"] == "tool").count())
}

/// Every shell output of the session, for checking the model's quotes.
fn outputs(messages: &[Value]) -> Vec<String> {
    messages
        .iter()
        .flat_map(|m| m["parts"].as_array().cloned().unwrap_or_default())
        .filter(|p| p["type"] == "tool")
        .filter_map(|p| p["state"]["output"].as_str().map(str::to_owned))
        .collect()
}

/// The quotes of the model's part in `text`.
pub fn quotes(text: &str) -> Vec<String> {
    const LABEL: &str = "local model found in the output, each line checked there: ";
    text.lines()
        .filter_map(|l| l.split_once(LABEL).map(|(_, found)| found))
        .flat_map(|found| {
            found
                .split('"')
                .skip(1)
                .step_by(2)
                .map(str::to_owned)
                .collect::<Vec<_>>()
        })
        .collect()
}

/// Replays one case into `server` (a fresh session per case): one sync per
/// assistant message, as the plugin sends them, waiting for the model after
/// each; then the compaction text.
pub async fn run_case(server: &Server, case: &Case) -> Outcome {
    let session = session_file(case.name);
    let messages = session["messages"].as_array().expect("messages").clone();
    let outputs = outputs(&messages);
    let id = messages[0]["info"]["sessionID"]
        .as_str()
        .expect("session id")
        .to_owned();
    let mut out = Outcome::default();
    let mut calls = 0;
    let mut sent = 0;
    let mut last_hud = String::new();
    for (i, message) in messages.iter().enumerate() {
        let n = tool_calls(message);
        if n == 0 {
            continue;
        }
        calls += n;
        let body = json!({ "session_id": id, "messages": messages[sent..=i], "full": sent == 0 });
        sent = i + 1;
        let started = Instant::now();
        let (status, mut view) = post_json(server, "/v1/hud/sync", &body).await;
        assert_eq!(status, 200, "{}: {view}", case.name);
        if view["model_status"]["state"] == "pending" {
            out.asked += 1;
            // The answer's first verified item is shown while the model
            // writes the rest; the question settles once the whole is in.
            let mut shown = None;
            let deadline = Instant::now() + Duration::from_secs(120);
            while view["model_status"]["state"] == "pending" && Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(20)).await;
                let r = client()
                    .get(server.url(&format!("/v1/hud/{id}")))
                    .send()
                    .await
                    .expect("GET");
                view = r.json().await.expect("view");
                if shown.is_none() && !quotes(view["hud"].as_str().unwrap_or_default()).is_empty() {
                    shown = Some(started.elapsed());
                }
            }
            match view["model_status"]["state"].as_str() {
                Some("ready") => {
                    out.shown += 1;
                    let shown = shown.unwrap_or_else(|| started.elapsed());
                    out.latencies.push(shown.as_secs_f64());
                }
                Some("rejected") => out.rejected += 1,
                _ => {}
            }
        }
        let hud = view["hud"].as_str().expect("hud").to_owned();
        check(case, calls, &hud, &outputs, &mut out, "HUD");
        last_hud = hud;
    }
    let (status, compaction) = post_json(
        server,
        &format!("/v1/hud/{id}/compaction"),
        &json!({ "deadline_ms": 60_000 }),
    )
    .await;
    assert_eq!(status, 200, "{compaction}");
    let text = compaction["text"].as_str().expect("text");
    if let Some(last) = case.expect.last() {
        for claim in last.must_not {
            if text.contains(claim) {
                out.false_statements
                    .push(format!("{}: compaction text says {claim:?}", case.name));
            }
        }
        // Where the session ends with everything fixed, the compaction
        // text must say so.
        if last.must.contains(&"Open problems: none") && !text.contains("No open problems") {
            out.false_statements.push(format!(
                "{}: compaction text lists an open problem after the fix",
                case.name
            ));
        }
    }
    assert!(!last_hud.is_empty(), "{}: no steps", case.name);
    out
}

fn check(case: &Case, calls: usize, text: &str, outputs: &[String], out: &mut Outcome, what: &str) {
    // The HUD writes each line with its runs of spaces squeezed to one.
    let squeeze = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    for quote in quotes(text) {
        let quote_squeezed = squeeze(&quote);
        if !outputs
            .iter()
            .any(|o| o.lines().any(|l| squeeze(l).contains(&quote_squeezed)))
        {
            out.false_statements.push(format!(
                "{} at {calls} calls: {what} quotes {quote:?}, not in any output",
                case.name
            ));
        }
    }
    for e in case.expect.iter().filter(|e| e.calls == calls) {
        for fact in e.must {
            out.expected += 1;
            if text.contains(fact) {
                out.found += 1;
            } else {
                out.missing
                    .push(format!("{} at {calls} calls: {fact:?} in\n{text}", case.name));
            }
        }
        for fact in e.model {
            out.model_expected += 1;
            if text.contains(fact) {
                out.model_found += 1;
            }
        }
        for claim in e.must_not {
            if text.contains(claim) {
                out.false_statements
                    .push(format!("{} at {calls} calls: {what} says {claim:?}\n{text}", case.name));
            }
        }
    }
}

/// Opens a session holding only a user's request, as the plugin syncs
/// before the agent's first step, and waits until the HUD has decoded the
/// start its questions share, as it does in a real session while the agent
/// takes that step. The warm-up, or `None` when none came.
pub async fn warm_up(server: &Server) -> Option<super::hud::Warmups> {
    let id = "ses_warmup";
    let request = super::hud::user_request(id, "Run the tests and fix what fails.");
    let (status, view) = super::hud::sync(
        server,
        &json!({ "session_id": id, "messages": [request], "full": true }),
    )
    .await;
    assert_eq!(status, 200, "{view}");
    super::hud::wait_warmed(server).await
}

/// Every case on one server: the sessions whose formats the HUD was
/// written for, and apart from them the [`HELD_OUT`] ones.
pub async fn run_all(server: &Server) -> (Outcome, Outcome) {
    let (mut known, mut held_out) = (Outcome::default(), Outcome::default());
    for case in CASES {
        let part = if HELD_OUT.contains(&case.name) {
            &mut held_out
        } else {
            &mut known
        };
        part.add(&run_case(server, case).await);
    }
    (known, held_out)
}

/// The `p`-quantile of `values` (nearest rank).
pub fn quantile(values: &[f64], p: f64) -> Option<f64> {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    (!v.is_empty()).then(|| v[((v.len() as f64 - 1.0) * p).round() as usize])
}
