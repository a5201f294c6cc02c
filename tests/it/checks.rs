//! Test runs and checks understood, on real outputs captured by running the
//! real tools (`tests/fixtures/runners/`): Python 3.11 unittest, pytest 8 and 9,
//! cargo test and cargo build (Rust 1.95), go test (Go 1.19), node 20's test runner (TAP and
//! spec reporters), jest 29, vitest 3, mocha 12, bats 1.8 (TAP), tsc 5.9, mypy, eslint 9, ruff,
//! shellcheck 0.9 and go vet; and the formats whole families share, read
//! from real runs behind wrappers and pipes: RSpec 3, minitest 5 through
//! rake, PHPUnit 9, JUnit 4.13's JUnitCore, a Java runner of one's own that
//! prints its counts in JUnit's words, the JUnit 5 console launcher through a script, a TAP
//! harness (prove through `npm run`), Python's doctest through make, raco
//! test and HUnit through make (neither known by name), Guile's SRFI-64
//! in DejaGnu's words, and
//! `path:line:col: message` lines of flake8 and pylint, and Ant 1.10's
//! `<junit>` task.

use evolve_hud::hud::checks::{read, Counted, Failure, Report};

fn fixture(name: &str) -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/runners")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn report(name: &str) -> Report {
    read(&fixture(name)).unwrap_or_else(|| panic!("{name} not understood"))
}

fn failure(name: &str, detail: &str) -> Failure {
    Failure {
        name: name.into(),
        detail: Some(detail.into()),
    }
}

#[test]
fn unittest_runs() {
    let r = report("unittest-2-failed.txt");
    assert_eq!((r.tool, r.passed, r.failed), ("unittest", Some(2), 2));
    assert_eq!(
        r.failures,
        [
            failure("test_average", "AssertionError: 1.5 != 2"),
            failure("test_div", "AssertionError: 18 != 2")
        ]
    );
    assert_eq!(r.counts(), "2 of 4 failed");
    assert_eq!(report("unittest-1-failed.txt").counts(), "1 of 4 failed");
    let ok = report("unittest-passed.txt");
    assert!(ok.ok() && ok.failures.is_empty());
    assert_eq!(ok.counts(), "4 passed");
}

#[test]
fn pytest_runs() {
    for name in ["pytest-2-failed.txt", "pytest-2-failed-verbose.txt"] {
        let r = report(name);
        assert_eq!((r.tool, r.passed, r.failed), ("pytest", Some(2), 2), "{name}");
        assert_eq!(
            r.failures,
            [
                failure("test_average", "AssertionError: 1.5 != 2"),
                failure("test_div", "AssertionError: 18 != 2")
            ]
        );
    }
    assert_eq!(report("pytest-1-failed.txt").counts(), "1 of 4 failed");
    assert_eq!(report("pytest-passed.txt").counts(), "4 passed");

    // A collection error: no test ran, and the cause is the import error.
    let r = report("pytest-collection-error.txt");
    assert_eq!((r.passed, r.failed, r.counted), (Some(0), 1, Counted::Errors));
    assert_eq!(r.counts(), "1 error");
    assert_eq!(
        r.failures,
        [failure(
            "tests/test_parse.py",
            "ImportError: cannot import name 'parse_missing' from 'parse' (/tmp/pyt/parse.py)"
        )]
    );
    // Parametrized ids may hold spaces.
    let r = report("pytest-ids-with-spaces.txt");
    assert_eq!((r.passed, r.failed), (Some(2), 2));
    let names: Vec<&str> = r.failures.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(names, ["test_parse_number[1 000-1000]", "test_parse_number[7 7-77]"]);
}

#[test]
fn cargo_test_runs() {
    let r = report("cargo-test-2-failed.txt");
    assert_eq!((r.tool, r.passed, r.failed), ("cargo test", Some(1), 2));
    assert_eq!(
        r.failures,
        [
            failure(
                "tests::adds_negatives",
                "assertion `left == right` failed: negatives add up"
            ),
            failure("tests::averages", "assertion `left == right` failed"),
        ]
    );
    // Unit tests and doc tests are summed.
    assert_eq!(report("cargo-test-passed.txt").counts(), "3 passed");
}

#[test]
fn node_test_runs() {
    for name in [
        "node-test-tap-1-failed.txt",
        "node-test-1-failed.txt",
        "node-test-spec-1-failed.txt",
    ] {
        let r = report(name);
        assert_eq!((r.tool, r.passed, r.failed), ("node test", Some(2), 1), "{name}");
        assert_eq!(r.failures.len(), 1, "{name}");
        assert_eq!(r.failures[0].name, "averages", "{name}");
    }
    assert_eq!(
        report("node-test-tap-1-failed.txt").failures[0].detail.as_deref(),
        Some("1.5 !== 2")
    );
}

#[test]
fn build_and_type_errors() {
    let r = report("cargo-build-error.txt");
    assert_eq!((r.tool, r.failed, r.counted), ("rustc", 2, Counted::Errors));
    assert_eq!(r.failures[0], failure("src/lib.rs:1", "E0308 mismatched types"));
    assert_eq!(r.counts(), "2 errors");
    let r = report("tsc-2-errors.txt");
    assert_eq!((r.tool, r.failed), ("tsc", 2));
    assert_eq!(
        r.failures[0],
        failure(
            "a.ts:4",
            "error TS2322: Type 'number' is not assignable to type 'string'."
        )
    );
    let r = report("mypy-2-errors.txt");
    assert_eq!((r.tool, r.failed), ("mypy", 2));
    assert_eq!(r.failures[1].name, "m.py:5");
}

#[test]
fn go_test_runs() {
    for name in ["go-test-2-failed.txt", "go-test-2-failed-verbose.txt"] {
        let r = report(name);
        assert_eq!((r.tool, r.failed, r.counted), ("go test", 2, Counted::Tests), "{name}");
        assert_eq!(
            r.failures,
            [
                failure("TestAverage", "calc_test.go:13: Average([1 2]) = 1, want 1.5"),
                failure("TestMax", "calc_test.go:19: Max([-3 -1]) = 0, want -1")
            ],
            "{name}"
        );
    }
    assert_eq!(report("go-test-2-failed.txt").counts(), "2 failed");
    assert_eq!(report("go-test-2-failed-verbose.txt").counts(), "2 of 3 failed");
    assert_eq!(report("go-test-passed-verbose.txt").counts(), "3 passed");
    let ok = report("go-test-passed.txt");
    assert!(ok.ok(), "{ok:?}");
    assert_eq!(ok.counts(), "passed");
    let r = report("go-test-build-failed.txt");
    assert_eq!((r.failed, r.counted), (1, Counted::Errors));
    assert_eq!(r.failures, [failure("calc.go:14", "undefined: undefinedName")]);
}

#[test]
fn plain_output_is_no_report() {
    for text in [
        "",
        "hello\n",
        "total 8\n-rw-r--r-- 1 a b 0 notes.txt\n",
        "error: something went wrong\n",
    ] {
        assert_eq!(read(text), None, "{text:?}");
    }
}

#[test]
fn jest_and_vitest_runs() {
    let r = report("jest-2-failed.txt");
    assert_eq!((r.tool, r.passed, r.failed), ("jest", Some(2), 2));
    assert_eq!(
        r.failures,
        [
            failure("calc › averages", "Expected: 2, Received: 1.5"),
            failure("calc › divides", "Expected: 2, Received: 18")
        ]
    );
    assert_eq!(report("jest-passed.txt").counts(), "4 passed");
    let r = report("vitest-2-failed.txt");
    assert_eq!((r.tool, r.passed, r.failed), ("vitest", Some(2), 2));
    assert_eq!(
        r.failures[0],
        failure(
            "calc > averages",
            "AssertionError: expected 1.5 to be 2 // Object.is equality"
        )
    );
    assert_eq!(report("vitest-passed.txt").counts(), "4 passed");
}

#[test]
fn eslint_errors() {
    let r = report("eslint-2-errors.txt");
    assert_eq!((r.tool, r.failed, r.counted), ("eslint", 2, Counted::Errors));
    assert_eq!(
        r.failures,
        [
            failure(
                "/tmp/js/l/bad.js:1",
                "'unused' is assigned a value but never used (no-unused-vars)"
            ),
            failure("/tmp/js/l/bad.js:2", "'x' is not defined (no-undef)"),
        ]
    );
}

#[test]
fn ruff_checks() {
    let r = report("ruff-4-errors.txt");
    assert_eq!((r.tool, r.failed, r.counted), ("ruff", 4, Counted::Errors));
    assert_eq!(
        r.failures[3],
        failure("report.py:21", "Undefined name `summarise` (F821)")
    );
    // After --fix, the remaining errors.
    let r = report("ruff-fix-2-remaining.txt");
    assert_eq!((r.failed, r.failures.len()), (2, 2));
    assert_eq!(r.counts(), "2 errors");
    let r = report("ruff-concise-1-error.txt");
    assert_eq!(
        r.failures,
        [failure(
            "report.py:9",
            "Local variable `average` is assigned to but never used (F841)"
        )]
    );
    assert!(report("ruff-passed.txt").ok());
}

#[test]
fn tap_runs() {
    let r = report("tap-bats-3-failed.txt");
    assert_eq!((r.tool, r.passed, r.failed), ("tap", Some(2), 3));
    assert_eq!(r.counts(), "3 of 5 failed");
    assert_eq!(
        r.failures[0],
        failure(
            "slugify squeezes repeated spaces",
            "`[ \"$output\" = \"hello-world\" ]' failed"
        )
    );
    assert_eq!(
        r.passes,
        ["slugify lower-cases words", "truncate_slug keeps short slugs"]
    );
    // The tail of a run: no plan line, so no passed count to say.
    let r = report("tap-bats-cut-1-failed.txt");
    assert_eq!((r.passed, r.failed), (None, 1));
    assert_eq!(r.failures[0].name, "truncate_slug drops a trailing dash");
}

#[test]
fn mocha_runs() {
    let r = report("mocha-3-failing.txt");
    assert_eq!((r.tool, r.passed, r.failed), ("mocha", Some(2), 3));
    assert_eq!(
        r.failures[2],
        failure(
            "PriorityQueue when empty peek returns undefined",
            "TypeError: Cannot read properties of undefined (reading 'value')"
        )
    );
    assert_eq!(
        r.passes,
        ["keeps insertion order for equal priorities", "counts its items"]
    );
    let r = report("mocha-passed.txt");
    assert_eq!((r.passed, r.failed, r.passes.len()), (Some(5), 0, 5));
}

#[test]
fn shellcheck_and_go_vet_findings() {
    for name in ["shellcheck-4-findings.txt", "shellcheck-gcc-4-findings.txt"] {
        let r = report(name);
        assert_eq!(
            (r.tool, r.failed, r.counted),
            ("shellcheck", 4, Counted::Errors),
            "{name}"
        );
        assert_eq!(r.failures[0].name, "deploy.sh:7", "{name}");
        assert!(
            r.failures[0]
                .detail
                .as_deref()
                .unwrap()
                .starts_with("SC2034 (warning): backup appears unused"),
            "{name}: {:?}",
            r.failures[0]
        );
    }
    let r = report("go-vet-2-findings.txt");
    assert_eq!((r.tool, r.failed), ("go", 2));
    assert_eq!(
        r.failures[0],
        failure(
            "hits.go:30",
            "Get passes lock by value: example.com/hits.Counter contains sync.Mutex"
        )
    );
}

#[test]
fn xunit_summaries() {
    let r = report("phpunit-3-failed.txt");
    assert_eq!((r.tool, r.passed, r.failed), ("phpunit", Some(2), 3));
    assert_eq!(
        r.failures[0],
        failure(
            "TemperatureTest::testBoilingPointInCelsius",
            "Failed asserting that 194.22222222222223 matches expected 100.0."
        )
    );
    assert_eq!(r.failures.len(), 3);
    assert_eq!(report("phpunit-passed.txt").counts(), "2 passed");
    // Coloured, through `bash test.sh`.
    let r = report("junit5-2-failed.txt");
    assert_eq!((r.tool, r.passed, r.failed), ("junit", Some(1), 2));
    assert_eq!(
        r.failures[0],
        failure(
            "BoundedStackTest.popReturnsLastPushed()",
            "org.opentest4j.AssertionFailedError: expected: <2> but was: <1>"
        )
    );
    // Cut by `| tail -n 20`: the counts stand, the names went with the cut.
    let r = report("junit5-cut-1-failed.txt");
    assert_eq!((r.passed, r.failed), (Some(2), 1));
    assert!(report("junit5-passed.txt").ok());
    assert_eq!(report("junit5-passed.txt").counts(), "3 passed");
    // JUnit 4's JUnitCore (4.13.2), failing and passing: its header names it.
    let r = report("junit4-2-failed.txt");
    assert_eq!((r.tool, r.passed, r.failed), ("junit", Some(1), 2));
    assert_eq!(
        r.failures[0],
        failure(
            "halvesOdd(CalcTest)",
            "java.lang.AssertionError: expected:<2> but was:<3>"
        )
    );
    let r = report("junit4-passed.txt");
    assert_eq!((r.tool, r.counts().as_str()), ("junit", "3 passed"));
    // A Java class that tests in JUnit 4's words but is no JUnit: the same
    // counts, named by the family, never as JUnit; pass and fail alike, so
    // the pass closes what the failure opened.
    let r = report("java-own-runner-2-failed.txt");
    assert_eq!((r.tool, r.passed, r.failed), ("xunit", Some(2), 2));
    let r = report("java-own-runner-passed.txt");
    assert_eq!((r.tool, r.counts().as_str()), ("xunit", "4 passed"));
    // Ant 1.10's `<junit>` over two classes (3 tests, 1 failed; 4 tests, 2
    // failed), each class's `Tests run: …, Time elapsed: …` line printed
    // twice and no total: neither a class's count nor a sum is the run's.
    let r = report("ant-junit-2-classes-3-failed.txt");
    assert_eq!(
        (r.counted, r.failed, r.counts().as_str()),
        (Counted::Runs, 1, "failed (several runs)")
    );
    assert_eq!(
        r.failures,
        [
            failure(
                "keepsEmptyLastField(text.CsvLineTest)",
                "expected:<[a, b, ]> but was:<[a, b]>"
            ),
            failure("acceptsIsbn13(text.IsbnTest)", "junit.framework.AssertionFailedError"),
            failure(
                "acceptsIsbn10WithCheckDigitX(text.IsbnTest)",
                "check digit X stands for 10"
            ),
        ]
    );
    // One class, its line printed twice in a row: that class's count is
    // the run's.
    let class = classes_of_one(&fixture("ant-junit-2-classes-3-failed.txt"));
    assert_eq!(read(&class).expect("read").counts(), "1 of 3 failed");
    // A total after the classes' lines (Maven Surefire's `Results:`) is the
    // run's count.
    let classes = fixture("ant-junit-2-classes-3-failed.txt");
    let total = format!("{classes}\nResults:\n\nTests run: 7, Failures: 3, Errors: 0, Skipped: 0\n");
    let r = read(&total).expect("read");
    assert_eq!(r.counts(), "3 of 7 failed");
}

/// Erlang's common_test 1.23 (`ct_run`): `TEST COMPLETE, 2 ok, 3 failed of
/// 5 test cases`, after `TEST INFO: 1 test(s), 5 case(s) in 1 suite(s)`
/// and a `*** FAILED test case 3 of 5 ***` line per failure.
#[test]
fn common_test_counts() {
    let r = report("common-test-3-failed.txt");
    assert_eq!((r.passed, r.failed, r.counts().as_str()), (Some(2), 3, "3 of 5 failed"));
}

/// The lines of an Ant run up to the second class it ran.
fn classes_of_one(run: &str) -> String {
    let second = run.find("[junit] Running text.IsbnTest").expect("a second class");
    run[..second].to_owned()
}

/// Summaries no rule was written for, read by their shape, from real runs
/// through `make`: Racket 8.7's `raco test` (`2/5 test failures`: 2 of 5,
/// never 5), and HUnit 1.6 under `runghc`, whose progress line is written
/// over with carriage returns (`\rCases: 4  Tried: 1 …\rCases: 4  Tried: 4
/// …`): the count is what the terminal shows last, not every draft summed.
#[test]
fn counts_written_as_a_fraction_or_over_a_progress_line() {
    let r = report("raco-make-2-failed.txt");
    assert_eq!((r.passed, r.failed), (Some(3), 2), "{r:?}");
    assert_eq!(report("raco-make-passed.txt").counts(), "5 passed");
    let r = report("hunit-1-failed.txt");
    assert_eq!((r.passed, r.failed), (Some(3), 1), "{r:?}");
    // Two files of 4 cases each behind `make test`, each progress line
    // drawn over, each with its summary: the 4 of either is not the run's.
    assert!(read(&fixture("hunit-make-passed.txt")).is_none_or(|r| r.passed != Some(4)));
}

/// DejaGnu's summary words, as Guile 3.0's SRFI-64 runner prints them
/// (`# of expected passes 2`, `# of unexpected failures 1`, a `file:line:
/// FAIL name` line each), read from real runs: one file, and a script
/// over two files, whose two blocks give no count of the whole (the
/// passing fixture is the first file's part of a real two-file run).
#[test]
fn dejagnu_summaries_as_srfi64_prints_them() {
    let r = report("srfi64-guile-1-failed.txt");
    assert_eq!((r.tool, r.passed, r.failed), ("", Some(2), 1));
    assert_eq!(r.failures.len(), 1);
    assert_eq!(r.failures[0].name, "slugify keeps digits");
    assert_eq!(report("srfi64-guile-one-file-passed.txt").counts(), "3 passed");
    let two = read(&fixture("srfi64-guile-two-files-3-failed.txt"));
    assert!(
        two.as_ref().is_none_or(|r| r.passed != Some(1) && r.passed != Some(2)),
        "{two:?}"
    );
    // The summary lines explain nothing: no key line, no quote of the model.
    assert!(evolve_hud::hud::text::explains_nothing("# of unexpected failures  1"));
    assert!(evolve_hud::hud::text::explains_nothing("# of expected passes      2"));
}

#[test]
fn rspec_and_minitest_summaries() {
    let r = report("rspec-3-failed.txt");
    assert_eq!((r.tool, r.passed, r.failed), ("rspec", Some(1), 3));
    assert_eq!(
        r.failures[0],
        failure("Inventory#add adds up repeated skus", "expected: 5, got: 3")
    );
    assert_eq!(report("rspec-passed.txt").label(), "rspec 4 passed");
    // Hspec 2.8 through make counts in RSpec's words and is no RSpec.
    let r = report("hspec-make-4-failed.txt");
    assert_eq!(r.label(), "4 of 8 failed");
    // Through `rake test`, whose own `rake aborted!` follows.
    let r = report("minitest-rake-3-failed.txt");
    assert_eq!((r.tool, r.passed, r.failed), ("minitest", Some(1), 3));
    assert_eq!(r.failures[0].name, "TestSlug#test_drops_punctuation");
    assert_eq!(report("minitest-rake-passed.txt").counts(), "4 passed");
}

#[test]
fn tap_harness_and_doctest_summaries() {
    // prove through `npm run test`, with npm's notice after it.
    let r = report("prove-npm-2-files-failed.txt");
    assert_eq!((r.tool, r.passed, r.failed), ("prove", Some(2), 5));
    assert_eq!(r.failures[0], failure("zero is refused", "at t/range.t line 6."));
    assert_eq!(r.failures[2], failure("4 is IV", "got: 'IIII', expected: 'IV'"));
    // Cut by `| tail -n 12`: the harness's verdict stands over the ok lines above it.
    let r = report("prove-cut-failed.txt");
    assert_eq!((r.tool, r.failed), ("prove", 2));
    assert!(!r.ok());
    let ok = report("prove-npm-passed.txt");
    assert!(ok.ok());
    assert_eq!(ok.counts(), "7 passed");
    // doctest through make.
    let r = report("doctest-make-1-failed.txt");
    assert_eq!((r.tool, r.failed), ("doctest", 1));
    assert_eq!(r.failures[0], failure("textstats.word_count", "expected 2, got 8"));
}

#[test]
fn path_line_diagnostics_of_any_linter() {
    let r = report("flake8-3-findings.txt");
    assert_eq!((r.tool, r.counted, r.failed), ("diagnostics", Counted::Findings, 3));
    assert_eq!(
        r.failures[2],
        failure("app/report.py:21", "F821 undefined name 'load_rows'")
    );
    // Findings of unknown weight never fail a run by themselves.
    assert!(r.ok() && !r.settles());
    assert_eq!(r.counts(), "3 findings");
    let r = report("pylint-5-findings.txt");
    assert_eq!((r.counted, r.failed), (Counted::Findings, 5));
    // A compiler's `error:` lines come first; its exit status says it failed.
    let gcc = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/outputs/make-gcc.txt"
    ))
    .unwrap();
    let r = read(&gcc).expect("gcc's lines read");
    assert_eq!((r.counted, r.failed), (Counted::Findings, 2));
    assert_eq!(
        r.failures[0],
        failure("calc.c:10", "error: ‘count’ undeclared (first use in this function)")
    );
    // The same lines found by a grep that succeeded fail nothing.
    let found = read("logs/build.log:12: error: undefined reference to `main'\n").expect("read");
    assert!(found.ok() && !found.settles());
}

#[test]
fn ctest_runs() {
    let text =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/outputs/ctest.txt")).unwrap();
    let r = read(&text).expect("ctest's summary read");
    assert_eq!((r.tool, r.passed, r.failed), ("ctest", Some(1), 2));
    assert_eq!(
        r.failures,
        [
            failure(
                "average_of_three",
                "test_calc.c:9: average(1, 2, 4) = 2.000000, expected 2.333333"
            ),
            failure(
                "divide_by_zero_is_refused",
                "test_calc.c:10: divide(1, 0) returned 0, expected -1 (division by zero)"
            )
        ]
    );
    assert_eq!(r.counts(), "2 of 3 failed");
}

/// Runners no parser was written for, read by the shape of their count
/// summaries (outputs as GoogleTest, Catch2, Robot Framework, behave,
/// Cucumber, Jasmine, AVA, Check and shunit2 print them); a count of none
/// is a run of no test.
#[test]
fn count_summaries_of_any_runner() {
    let cases: [(&str, Option<usize>, usize); 15] = [
        (
            "[==========] 3 tests from 1 test suite ran. (0 ms total)\n[  PASSED  ] 1 test.\n[  FAILED  ] 2 tests, listed below:\n[  FAILED  ] Stats.Median\n[  FAILED  ] Stats.Mean\n\n 2 FAILED TESTS\n",
            Some(1),
            2,
        ),
        ("[==========] 0 tests from 0 test suites ran. (0 ms total)\n[  PASSED  ] 0 tests.\n", Some(0), 0),
        ("===============================================================================\ntest cases: 8 | 7 passed | 1 failed\nassertions: 9 | 8 passed | 1 failed\n", Some(7), 1),
        ("Checkout                                                 | FAIL |\n2 tests, 1 passed, 1 failed\n==============\nOutput:  /p/output.xml\n", Some(1), 1),
        ("0 features passed, 1 failed, 0 skipped\n1 scenario passed, 1 failed, 0 skipped\n5 steps passed, 1 failed, 1 skipped\nTook 0.002s\n", Some(1), 1),
        ("4 scenarios (2 failed, 2 passed)\n14 steps (2 failed, 12 passed)\n0m00.012s (executing steps: 0m00.002s)\n", Some(2), 2),
        ("0 scenarios\n0 steps\n0m00.000s (executing steps: 0m00.000s)\n", Some(0), 0),
        ("Started\nF.\n\nFailures:\n1) Stats median\n  Message:\n    Expected 2 to equal 2.5.\n\n2 specs, 1 failure\nFinished in 0.01 seconds\n", Some(1), 1),
        ("  ✘ [fail]: formats one kilobyte\n  ─\n\n  2 tests failed\n", None, 2),
        ("Running suite(s): Money\n50%: Checks: 2, Failures: 1, Errors: 0\n", Some(1), 1),
        ("Running suite(s):100%: Checks: 0, Failures: 0, Errors: 0\n", Some(0), 0),
        ("Ran 4 tests.\n\nFAILED (failures=2)\n", Some(2), 2),
        ("login ... ok\nlogout ... FAILED\n2 of 3 tests failed\n", Some(1), 2),
        ("login ... ok\n0 of 3 tests failed\n", Some(3), 0),
        ("all.tcl:\tTotal\t6\tPassed\t4\tSkipped\t0\tFailed\t2\n", Some(4), 2),
    ];
    for (text, passed, failed) in cases {
        let r = read(text).unwrap_or_else(|| panic!("not understood: {text}"));
        assert_eq!(
            (r.passed, r.failed, r.counted),
            (passed, failed, Counted::Tests),
            "{text}"
        );
    }
    assert_eq!(
        read("[  PASSED  ] 0 tests.\n").map(|r| r.counts()),
        Some("no tests ran".into())
    );
    // Counts of anything but tests are no test summary.
    for text in [
        "2 files changed, 10 insertions(+), 3 deletions(-)\n",
        "added 120 packages in 3s\n",
        "found 0 vulnerabilities\n",
    ] {
        assert_eq!(read(text), None, "{text:?}");
    }
}

#[test]
fn a_script_that_runs_several_runners_gets_no_count_of_its_own() {
    // `./check.sh` ran prove, a JUnit-style runner, cargo test, doctest and
    // gcc, each printing its own summary (the cost harness's polyglot
    // session): no count is the script's.
    assert!(read(&fixture("check-sh-five-suites.txt")).is_none());
    // Findings counted in the part of a clipped output that was kept are
    // a lower bound.
    let mut r = report("flake8-3-findings.txt");
    r.read_from_part();
    assert_eq!(r.counts(), "at least 3 findings");
    assert!(r.ok() && !r.settles());
}
