//! What a shell command is, read the way the shell runs it: its steps
//! (`&&`, `||`, `;`), each step's pipeline stages (`|`), the program whose
//! exit status the shell returns (the last stage of the last step), what the
//! command checks (to match a failure with a later pass of the same check,
//! whatever form it takes), and exit statuses that say something other than
//! "failed".
//!
//! Here: what a command's exit status says; `shell`: reading the shell;
//! `check`: what a command checks.

mod check;
mod shell;

pub use check::{
    check_dirs, check_key, checks_passed, checks_passed_before, covers, file_read, narrows, output_file, same_program,
    selects_paths_only,
};
use shell::{output_filter, stages, steps, words};

/// The program whose exit status the shell returns for `command`.
pub fn exit_program(command: &str) -> Option<String> {
    let steps = steps(command);
    let last = stages(steps.last()?).last().copied()?;
    words(last).into_iter().next()
}

/// Whether `exit` is `timeout`'s status for a command it killed (124):
/// `timeout 60 pytest`, `ls tests/*.sh | timeout 5 xargs -n1 bash`.
pub fn killed_by_timeout(command: &str, exit: i64) -> bool {
    // The stage as written: `words` reads past `timeout` to what it runs.
    let last_stage = steps(command).last().and_then(|s| stages(s).last().copied());
    exit == 124
        && last_stage
            .and_then(|s| s.split_whitespace().next())
            .is_some_and(|p| shell::basename(p) == "timeout")
}

/// Whether the shell's exit status for `command` is an output filter's
/// (`… 2>&1 | tail -3`): then it says nothing of the command before it.
pub fn exit_is_a_filters(command: &str) -> bool {
    steps(command)
        .last()
        .map(|s| stages(s))
        .is_some_and(|st| st.len() > 1 && st.last().is_some_and(|s| output_filter(s)))
}

/// The program that sets the shell's exit status for `command` when that
/// status is not the status of what the command ran: an output filter after
/// a pipe (`make 2>&1 | tail -3` exits with tail's status), or a step that
/// always succeeds after `||` or `;` (`flake8 || true`, `pylint; echo
/// "exit: $?"`, `make; exit 0`). `None` when the status is the command's.
pub fn exit_masked_by(command: &str) -> Option<String> {
    // `cmd > run.log 2>&1 &`: the status is that of starting it.
    let trimmed = command.trim_end();
    if trimmed.ends_with('&') && !trimmed.ends_with("&&") && !trimmed.ends_with(">&") {
        return Some("`&`, which only started it".to_owned());
    }
    let steps = steps(command);
    let last = *steps.last()?;
    let stages = stages(last);
    let final_stage = *stages.last()?;
    let words = words(final_stage);
    let program = words.first()?.clone();
    // With `set -o pipefail` before it, a pipeline fails when any stage does.
    // `set` steps before the last: the shell options they turn on.
    let set = |on: &dyn Fn(&str) -> bool| {
        steps[..steps.len() - 1].iter().any(|s| {
            let w = shell::words(s);
            w.first().is_some_and(|p| p == "set") && w.iter().any(|o| on(o))
        })
    };
    let pipefail = set(&|o| o == "pipefail" || (o.starts_with('-') && o.contains("pipefail")));
    if stages.len() > 1 && output_filter(final_stage) && !pipefail {
        return Some(program);
    }
    // `for f in *.php; do php -l "$f"; done` exits with its last pass's
    // status: a failure of an earlier pass is thrown away, unless the body
    // stops the loop on it (`|| exit 1`, `|| break`) or `set -e` is on.
    let looped = steps
        .iter()
        .any(|s| s.starts_with("for ") || s.starts_with("while ") || s.starts_with("until "));
    let stops = command.contains("|| exit") || command.contains("|| break") || command.contains("|| return");
    let errexit = set(&|o| o.starts_with('-') && !o.starts_with("--") && o.contains('e'));
    if looped && last.trim() == "done" && !stops && !errexit {
        return Some("the loop's last pass".to_owned());
    }
    // What joins the last step to the one before: after `&&` it ran only
    // if that one passed, so its success says something.
    let offset = last.as_ptr() as usize - command.as_ptr() as usize;
    let before = command[..offset].trim_end();
    let unconditional = before.ends_with("||") || before.ends_with(';') || command[..offset].ends_with('\n');
    // `pytest > out.log 2>&1; cat out.log`: the status is the read's, which
    // says nothing of the run whose output it shows.
    let reads = matches!(
        program.rsplit('/').next().unwrap_or(&program),
        "cat" | "tail" | "head" | "less" | "more" | "tac" | "bat"
    ) && stages.len() == 1
        && words.len() > 1;
    (steps.len() > 1 && unconditional && (check::always_succeeds(last) || reads)).then_some(program)
}

/// Whether `command` runs a loop (`for i in 1 2 3; do pytest && break;
/// done`): its status is one pass's, and its output several runs'.
pub fn loops(command: &str) -> bool {
    steps(command)
        .iter()
        .any(|s| s.starts_with("for ") || s.starts_with("while ") || s.starts_with("until "))
}

/// Whether `command` runs several checks, or one several times: a build or
/// task runner, a script ([`runs_others`]) or a loop. Only its own rerun
/// settles its failure.
pub fn wraps(command: &str) -> bool {
    runs_others(command) || loops(command)
}

/// Whether `command` shows a file that an earlier step of it wrote
/// (`pytest > out.log 2>&1; cat out.log`): what it shows is that step's
/// output, not data.
pub fn reads_its_own_output(command: &str) -> bool {
    let steps = steps(command);
    let Some((last, before)) = steps.split_last() else {
        return false;
    };
    let key = check_key(last);
    let Some(shown) = file_read(&key) else {
        return false;
    };
    before.iter().any(|step| output_file(step).is_some_and(|f| f == shown))
}

/// The program and the script it runs, with the folders changed to
/// before it: `cd tests && tclsh all.tcl` and `tclsh tests/all.tcl` both run
/// `tclsh tests/all.tcl`. `None` without a script argument.
pub fn script_run(command: &str) -> Option<String> {
    let key = check_key(command);
    let (dirs, step) = key.split_once('\u{1f}')?;
    let mut words = step.split(' ');
    let program = words.next()?;
    let script = words.find(|w| !w.starts_with('-') && !w.contains('=') && (w.contains('/') || w.contains('.')))?;
    let path = if dirs.is_empty() {
        script.to_owned()
    } else {
        format!("{dirs}/{script}")
    };
    Some(format!("{program} {}", path.trim_start_matches("./")))
}

/// The checked step of `command` ([`check_key`] without its folders), as
/// words.
fn checked_words(command: &str) -> Vec<String> {
    let key = check_key(command);
    let step = key.split_once('\u{1f}').map_or(key.as_str(), |(_, s)| s);
    shell::words(step)
}

/// Whether `program` (a basename) is a build or task runner: it runs the
/// commands of a target or script it is given by name.
fn task_runner(program: &str) -> bool {
    matches!(
        program,
        "make"
            | "gmake"
            | "ninja"
            | "just"
            | "task"
            | "npm"
            | "yarn"
            | "pnpm"
            | "bun"
            | "tox"
            | "nox"
            | "rake"
            | "gradle"
            | "gradlew"
            | "mvn"
            | "ant"
            | "bazel"
            | "sbt"
            | "mix"
            | "invoke"
            | "cargo-make"
            | "scons"
    )
}

/// Whether `command`'s checked step runs other commands it does not name:
/// a build or task runner (`make doctest`, `npm test`, `tox -e lint`, `deno
/// task check`) or a script (`./check.sh`, `bash ci/test.sh`). Its pass may
/// or may not have run a check that failed before.
pub fn runs_others(command: &str) -> bool {
    let words = checked_words(command);
    let Some(program) = words.first() else {
        return false;
    };
    let script = |w: &str| w.ends_with(".sh") || w.starts_with("./");
    let shell_script =
        matches!(shell::basename(program), "sh" | "bash" | "zsh") && words.get(1).is_some_and(|w| script(w));
    // A program's own task runner (`deno task check`).
    let task = words.get(1).is_some_and(|w| w == "task");
    task_runner(shell::basename(program)) || task || shell_script || script(program)
}

/// Whether `command`'s checked step runs a check on other versions of the
/// code than the working tree's: `git bisect run pytest` (on each commit it
/// tries), `git rebase --exec 'make test'` (on each commit it replays).
/// What those runs reported is of those commits, not of the files now.
pub fn checks_other_versions(command: &str) -> bool {
    let words = checked_words(command);
    if words.first().is_none_or(|p| shell::basename(p) != "git") {
        return false;
    }
    // git's own options before the subcommand: `-C dir`, `-c key=value`.
    let mut rest = words[1..].iter().map(String::as_str);
    let subcommand = loop {
        match rest.next() {
            Some("-C" | "-c" | "--git-dir" | "--work-tree") => {
                rest.next();
            }
            Some(w) if w.starts_with('-') => {}
            other => break other,
        }
    };
    let rest: Vec<&str> = rest.collect();
    match subcommand {
        Some("bisect") => rest.first() == Some(&"run"),
        Some("rebase") => rest
            .iter()
            .any(|w| *w == "-x" || *w == "--exec" || w.starts_with("--exec=") || (w.starts_with("-x") && w.len() > 2)),
        _ => false,
    }
}

/// Whether `command`'s checked step builds: a build or task runner, a
/// compiler, or a toolchain's build command (`cmake --build`, `cargo
/// build`, `go build`). What its output says beyond its exit status is the
/// steps it took and what they warned of, not data the agent asked for (as
/// a `grep`, a `git log` or a script's report is).
pub fn builds(command: &str) -> bool {
    let words = checked_words(command);
    let Some(program) = words.first() else {
        return false;
    };
    let arg = |set: &[&str]| words[1..].iter().any(|w| set.contains(&w.as_str()));
    match shell::basename(program) {
        "cc" | "gcc" | "g++" | "c++" | "clang" | "clang++" | "rustc" | "javac" | "kotlinc" | "scalac" | "tsc"
        | "ghc" | "gfortran" | "nvcc" => true,
        "cmake" => arg(&["--build"]),
        "meson" => arg(&["compile"]),
        "cargo" | "go" | "dotnet" | "zig" | "swift" | "stack" | "cabal" | "dune" => arg(&["build"]),
        name => task_runner(name),
    }
}

/// Whether `command`'s checked step shows data the agent asked for: a
/// search, a file's text, a listing, a repository's history (`grep -rn
/// FAIL src`, `cat log.txt`, `git log`). Its lines are what it found, not
/// what happened when it ran.
pub fn shows_data(command: &str) -> bool {
    let words = checked_words(command);
    words.first().is_some_and(|program| {
        matches!(
            shell::basename(program),
            "read"
                | "grep"
                | "egrep"
                | "fgrep"
                | "rg"
                | "ag"
                | "cat"
                | "head"
                | "tail"
                | "less"
                | "more"
                | "bat"
                | "tac"
                | "sed"
                | "awk"
                | "cut"
                | "sort"
                | "uniq"
                | "wc"
                | "ls"
                | "find"
                | "tree"
                | "git"
                | "echo"
                | "printf"
                | "jq"
                | "diff"
                | "nl"
                | "column"
                | "stat"
                | "file"
        )
    })
}

/// The commands a script runner echoed before running them: a package
/// manager's (`> app@1.0.0 lint` then `> stylelint "css/**/*.css"`, as npm
/// and pnpm print them), a task runner's with the task's name (`Task check
/// deno lint && deno test`, deno; `task: [lint] ruff check .`, go-task):
/// what a passing `npm run lint` passed.
pub fn echoed_scripts<'a>(lines: impl Iterator<Item = &'a str>) -> Vec<String> {
    static HEADER: std::sync::LazyLock<regex::Regex> =
        std::sync::LazyLock::new(|| regex::Regex::new(r"^> (?:\S+@\S+ \S+|[\w:.\-]+)$").expect("a valid pattern"));
    static TASK: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"^(?:Task [\w:.\-]+|task: \[[\w:.\-]+\]) (\S.*)$").expect("a valid pattern")
    });
    let lines: Vec<&str> = lines.map(str::trim).collect();
    let npm = lines
        .windows(2)
        .filter(|pair| HEADER.is_match(pair[0]))
        .filter_map(|pair| pair[1].strip_prefix("> ").map(str::to_owned));
    let tasks = lines.iter().filter_map(|l| Some(TASK.captures(l)?[1].to_owned()));
    npm.chain(tasks).collect()
}

/// What makes a run of `command` cover less than the whole suite, when an
/// option known to do so says it: it reran only the failures of an earlier
/// run (`--only-failures`, `--lf`, `--failed`, `--rerun-failed`, …), or it
/// stops at the first failure (`-x`, `--exitfirst`, `--maxfail`,
/// `--stop-on-failure`, `--bail`, `--fail-fast`), so its counts are of the
/// tests run until then.
pub fn partial_run(command: &str) -> Option<&'static str> {
    let words: Vec<String> = steps(command)
        .iter()
        .flat_map(|step| stages(step))
        .flat_map(words)
        .collect();
    let flag = |w: &String| w.split('=').next().unwrap_or(w).to_owned();
    let has = |set: &[&str]| words.iter().any(|w| set.contains(&flag(w).as_str()));
    if has(&[
        "--only-failures",
        "--next-failure",
        "--lf",
        "--last-failed",
        "--failed",
        "--rerun-failed",
        "--rerun-failures",
        "--onlyFailures",
    ]) {
        Some("a rerun of earlier failures only")
    } else if has(check::STOP_EARLY) {
        Some("stopped at the first failure")
    } else {
        None
    }
}

/// An exit status that does not mean the command failed, named for what it
/// says: `grep` finding no line, `diff` finding a difference, `pytest`
/// selecting no test.
pub fn benign_exit(command: &str, exit: i64) -> Option<&'static str> {
    let program = exit_program(command)?;
    // A program's output piped into `diff expected.txt -` is a golden test:
    // a difference is its failure.
    let compares_output = steps(command).last().is_some_and(|s| stages(s).len() > 1);
    match (program.as_str(), exit) {
        ("grep" | "egrep" | "fgrep" | "rg" | "ag" | "zgrep", 1) => Some("no match"),
        ("diff" | "cmp" | "colordiff", 1) if !compares_output => Some("files differ"),
        ("pytest" | "py.test", 5) => Some("no tests selected"),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_runners_echo_of_what_it_ran_is_read() {
        let npm = "\n> app@1.0.0 lint\n> stylelint \"css/**/*.css\"\n";
        assert_eq!(echoed_scripts(npm.lines()), ["stylelint \"css/**/*.css\""]);
        let deno = "Task check deno lint && deno test\nChecked 4 files\nok | 6 passed | 0 failed (12ms)\n";
        assert_eq!(echoed_scripts(deno.lines()), ["deno lint && deno test"]);
        assert_eq!(echoed_scripts("task: [lint] ruff check .\n".lines()), ["ruff check ."]);
        assert!(echoed_scripts("Task: done\n+ pytest -q\n> not a header\n".lines()).is_empty());
    }

    /// A later run covers a failed one only where its words prove it:
    /// the same positional words, or folders that hold them. A word more
    /// may be a pattern or follow a subcommand, and proves nothing.
    #[test]
    fn a_word_more_proves_no_wider_run() {
        assert!(covers("pytest tests", "pytest tests/test_a.py tests/test_b.py"));
        assert!(covers("pytest", "pytest tests/test_a.py"));
        assert!(covers("uvu tests", "uvu tests; echo \"exit: $?\""));
        assert!(!covers("uvu tests slug", "uvu tests"));
        assert!(!covers("pyrefly check src/inventory/stock.py", "pyrefly check"));
        assert!(!covers("cd app && ty check main.py", "cd app && ty check"));
        assert!(!covers(
            "pytest tests/test_a.py tests/test_b.py",
            "pytest tests/test_a.py"
        ));
    }

    /// `green tests > out.txt; cat out.txt` checks what green checked: the
    /// file shown is that step's output.
    #[test]
    fn a_step_that_shows_what_an_earlier_one_wrote_checks_what_that_one_checked() {
        assert_eq!(
            check_key("green tests > out.txt; cat out.txt"),
            check_key("green tests")
        );
        assert_eq!(
            check_key("cd app && pytest -q > run.log 2>&1; tail -n 20 run.log"),
            check_key("cd app && pytest -q")
        );
        assert!(covers("green -vv tests", "green tests > out.txt; cat out.txt"));
        // A file no step of the command wrote is data the command read.
        assert_eq!(file_read(&check_key("pytest; cat notes.txt")), Some("notes.txt"));
    }

    #[test]
    fn commands_that_check_the_same_thing() {
        let same = [
            (
                "cmake -S . -B build > /dev/null && cmake --build build > /dev/null && cd build && ctest --output-on-failure",
                "cmake --build build > /dev/null && cd build && ctest --output-on-failure",
            ),
            ("npm install && npm test", "npm test"),
            ("make 2>&1", "make"),
            ("pytest -q >out.txt", "pytest -q"),
            ("pytest -v", "pytest -q"),
            ("python -m pytest -q", "pytest -q --tb=short"),
            ("python3 -m pytest -q 2>&1 | tail -n 15", "pytest"),
            ("pytest -rA --tb short tests", "pytest tests"),
            ("ruff check --fix .", "ruff check ."),
            ("timeout 60 pytest -x", "pytest -x"),
            ("pytest -x -q", "python3 -m pytest -q"),
            ("PYTHONPATH=. pytest", "pytest"),
            ("uv run pytest -q", "pytest"),
            ("go test -v -count=1 ./...", "go test ./..."),
            ("npx eslint --color src", "eslint src"),
            ("make -j4 2>&1 | grep -E 'error|warning'", "make"),
            ("./node_modules/.bin/jest --verbose", "jest"),
            ("sleep 3; tail -n 4 pytest.log", "tail -n 20 ./pytest.log"),
            ("cat pytest.log", "sleep 5 && tail -20 pytest.log"),
            // A program told where to run is run there.
            ("make -C csrc test 2>&1 | tail -30", "cd csrc && make test"),
            ("make -s --directory=csrc/ test", "cd csrc && make test"),
            ("make -Ccsrc test", "cd csrc; make test"),
            ("npm --prefix web test", "cd web && npm test"),
            ("yarn --cwd web test", "cd web && yarn test"),
            ("cd app && git -C sub status", "cd app/sub && git status"),
        ];
        for (a, b) in same {
            assert_eq!(check_key(a), check_key(b), "{a} / {b}");
        }
        let different = [
            ("cd web && npm test", "cd api && npm test"),
            ("pytest tests/a", "pytest tests/b"),
            ("pytest tests/test_a.py::test_x", "pytest"),
            ("pytest -k smoke", "pytest"),
            ("make", "make test"),
            ("python a.py", "python b.py"),
            ("echo 'a | b'", "echo a"),
            ("tail -n 4 pytest.log", "tail -n 4 build.log"),
            ("make -C csrc test", "make test"),
            ("make -C csrc test", "make -C web test"),
            // grep's -C after the pipe is not make's.
            ("make test | grep -C 3 error", "cd 3 && make test"),
        ];
        for (a, b) in different {
            assert_ne!(check_key(a), check_key(b), "{a} / {b}");
        }
    }

    #[test]
    fn any_text_is_read_without_a_panic() {
        for text in ["…|…&&é;ü\\", "a '…|' | b", "\\", "'", "x ||| y", "日本 && 語 | grep 語"] {
            let _ = (
                check_key(text),
                checks_passed(text),
                exit_program(text),
                benign_exit(text, 1),
                checks_other_versions(text),
                killed_by_timeout(text, 124),
            );
        }
        assert_eq!(exit_program("日本 && 語 | grep 語").as_deref(), Some("grep"));
    }

    #[test]
    fn a_bisect_or_a_rebase_that_runs_a_check_runs_it_on_other_commits() {
        for command in [
            "git bisect run python -m pytest -q tests/",
            "cd app && git -C lib bisect run make test",
            "git rebase -i --exec 'make test' main",
            "git rebase -x 'cargo test' HEAD~3",
            "git rebase --exec='npm test' main",
        ] {
            assert!(checks_other_versions(command), "{command}");
        }
        for command in [
            "git bisect start HEAD v0.1",
            "git bisect good",
            "git rebase main",
            "python -m pytest -q tests/",
            "make bisect run",
        ] {
            assert!(!checks_other_versions(command), "{command}");
        }
    }

    #[test]
    fn a_chain_that_failed_at_a_later_step_passed_the_steps_before() {
        assert_eq!(
            checks_passed_before("go vet ./... && go test ./...", "go test"),
            vec![check_key("go vet ./...")]
        );
        assert_eq!(
            checks_passed_before("cd app && make && pytest -q", "pytest"),
            vec![check_key("cd app && make")]
        );
        assert!(checks_passed_before("go vet ./... && go test ./...", "pytest").is_empty());
        assert!(checks_passed_before("make || pytest", "pytest").is_empty());
    }

    #[test]
    fn a_read_of_a_file_the_command_wrote_is_its_output() {
        assert!(reads_its_own_output("pytest > out.log 2>&1; cat out.log"));
        assert!(reads_its_own_output("make check &> build.log || tail -n 40 build.log"));
        assert!(!reads_its_own_output("cat out.log"));
        assert!(!reads_its_own_output("pytest > out.log 2>&1; cat other.log"));
    }

    #[test]
    fn a_run_that_names_a_selection_or_a_file_narrows() {
        for narrow in [
            "make build/tests",
            "bash test.sh --gtest_filter=Ring.PopEmpty*",
            "npx jasmine --filter=parse",
            "pytest -k parse",
            "cd app && make test TESTS=unit",
        ] {
            assert!(narrows(narrow), "{narrow}");
        }
        for whole in [
            "make test",
            "./check.sh",
            "npm test",
            "cd app && make check",
            "bash test.sh",
        ] {
            assert!(!narrows(whole), "{whole}");
        }
    }

    #[test]
    fn a_wider_selection_covers_a_narrower_one() {
        assert!(covers("pytest", "pytest tests/test_a.py -k parse"));
        // A subcommand's own verb is no path: a filter narrows the run.
        assert!(covers(
            "cd units && cargo nextest run",
            "cd units && cargo nextest run parses_"
        ));
        assert!(!covers(
            "cd units && cargo nextest run parses_",
            "cd units && cargo nextest run"
        ));
        assert!(!covers("npm run test", "npm run lint"));
        assert!(covers("python -m pytest -q tests", "pytest tests/test_a.py"));
        assert!(covers("pytest -v", "pytest -q"));
        assert!(covers("python3 -m mypy --strict .", "mypy orders.py"));
        assert!(covers("python3 -m mypy --strict .", "mypy . 2>&1 | tail -4"));
        assert!(covers(
            "npx tsc -p tsconfig.json --noEmit",
            "npx tsc --noEmit -p . 2>&1 | head -20"
        ));
        assert!(covers(
            "npx eslint . --max-warnings 0",
            "npx eslint src/ 2>&1 | tail -5"
        ));
        assert!(covers("npx mocha --reporter spec test/", "npx mocha --reporter dot"));
        assert!(covers("bats -r test", "bats test/"));
        assert!(!covers("bats -f slugify test/slug.bats", "bats test/"));
        assert!(covers("go test -count=1 ./...", "go test -v -run 'TestTop' ./..."));
        assert!(!covers("go test -run TestParseLine ./...", "go test ./..."));
        assert!(!covers("go test", "go test ./..."));
        assert!(!covers("go vet ./...", "go test ./..."));
        assert!(covers("shellcheck deploy.sh", "shellcheck -S warning -f gcc deploy.sh"));
        assert!(!covers("shellcheck a.sh", "shellcheck a.sh b.sh"));
        assert!(covers(
            "cargo clippy --all-targets -- -D warnings",
            "cargo clippy -q --all-targets -- -D warnings"
        ));
        assert!(!covers("cargo test -p core", "cargo test"));
        assert!(!covers("npx vitest run src/money.test.js", "npx vitest run"));
        assert!(covers("npx vitest --run", "npx vitest run --reporter=dot"));
        assert!(!covers("pytest -k parse", "pytest"));
        assert!(!covers("pytest tests/test_b.py", "pytest tests/test_a.py"));
        assert!(!covers("pytest test", "pytest tests/test_a.py"));
        assert!(!covers("cd web && npm test", "cd api && npm test"));
        assert!(!covers("cargo test", "pytest"));
        // A stricter run is not covered by a laxer one: the race detector,
        // a strict mode, warnings made errors, a coverage threshold.
        assert!(!covers("go test ./...", "go test -race ./..."));
        assert!(covers("go test -race -count=1 ./...", "go test -race ./..."));
        assert!(covers("go test -race ./...", "go test ./..."));
        assert!(!covers("mypy .", "mypy --strict orders.py"));
        assert!(!covers("npx eslint .", "npx eslint . --max-warnings 0"));
        assert!(!covers(
            "npx eslint . --max-warnings 5",
            "npx eslint . --max-warnings 0"
        ));
        assert!(!covers("pytest", "pytest --cov=app --cov-fail-under=90"));
        assert!(!covers(
            "cargo clippy --all-targets",
            "cargo clippy --all-targets -- -D warnings"
        ));
        // An option not known to leave the selection alone may select:
        // reruns of the failures never cover the whole run.
        for partial in [
            "rspec --only-failures",
            "rspec --next-failure",
            "pytest --lf",
            "pytest --last-failed",
            "mix test --failed",
            "go test --rerun-failed ./...",
            "sometool --whatever",
        ] {
            let whole = partial.split(" -").next().unwrap();
            assert!(!covers(partial, whole), "{partial} covers {whole}");
            assert!(covers(partial, partial), "{partial} covers itself");
        }
        // Options known to show results another way or stop early do not.
        assert!(covers("rspec --format documentation", "rspec"));
        assert!(covers("phpunit --testdox", "phpunit"));
        assert!(covers("phpunit --stop-on-failure", "phpunit"));
        assert!(covers("prove -lv t/", "prove -l t/"));
        assert!(!covers("prove -l t/roman.t", "prove -l t/"));
        assert!(!covers(
            "ruby -Ilib -Itest test/test_slug.rb -n test_x",
            "ruby -Ilib -Itest test/test_slug.rb"
        ));
        assert!(!covers("make test SPEC=label", "make test"));
        assert!(!covers(
            "node test/check.mjs parseDuration",
            "timeout 30 node test/check.mjs"
        ));
        assert!(covers(
            "timeout 30 node test/check.mjs",
            "node test/check.mjs 2>&1 | tee test.log"
        ));
        assert!(covers("make test SPEC=label", "make test SPEC=label"));
        // A status thrown away does not change what was checked.
        assert!(covers("flake8 app/", "flake8 app/ || true"));
        assert!(covers("stylelint css/*.css", "stylelint css/*.css; echo done"));
        assert!(covers("stylelint \"css/**/*.css\"", "stylelint css/*.css || true"));
        assert!(covers("stylelint css/*.css", "stylelint css/base.css"));
        assert!(!covers("stylelint css/*.css", "stylelint css/sub/base.css"));
        assert!(!covers("stylelint css/*.scss", "stylelint css/base.css"));
        assert_eq!(
            echoed_scripts("\n> app@1.0.0 lint:css\n> stylelint \"css/**/*.css\"\n\n".lines()),
            ["stylelint \"css/**/*.css\""]
        );
    }

    #[test]
    fn a_passing_chain_passes_each_of_its_steps() {
        assert!(checks_passed("make && ./app").contains(&check_key("make")));
        assert!(checks_passed("cd build && make && ctest").contains(&check_key("cd build && make")));
        assert!(!checks_passed("make || ./fallback.sh").contains(&check_key("make")));
        // `|| true` throws the status away: whether `make` passed is for
        // its output to say (see `exit_masked_by`), not for the chain.
        assert_eq!(check_key("make || true"), check_key("make"));
    }

    #[test]
    fn an_exit_status_thrown_away_is_named_for_what_set_it() {
        for (command, by) in [
            ("java -jar junit.jar --scan-classpath 2>&1 | tail -n 30", Some("tail")),
            ("flake8 inventory/ || true", Some("true")),
            ("python3 -m doctest units.py || :", Some(":")),
            ("pylint inventory; echo \"exit: $?\"", Some("echo")),
            ("make test; exit 0", Some("exit")),
            ("cd app && prove -l t/ 2>&1 | grep -v ok", Some("grep")),
            ("make test\necho done", Some("echo")),
            ("make && echo built", None),
            ("set -o pipefail; make 2>&1 | tail -n 5", None),
            (
                "for f in src/*.php; do php -l \"$f\"; done",
                Some("the loop's last pass"),
            ),
            ("for f in src/*.php; do php -l \"$f\" || exit 1; done", None),
            ("set -e; for f in bin/*.sh; do dash -n \"$f\"; done", None),
            ("set -euo pipefail && make | tail", None),
            ("make; exit 1", None),
            ("pytest -q", None),
            ("echo hello", None),
            ("cd app && pytest", None),
            ("make 2>&1 | tail -5 && ./app", None),
            ("bandit -q app.py > out.log 2>&1; cat out.log", Some("cat")),
            ("pytest > run.log 2>&1 || tail -n 30 run.log", Some("tail")),
            ("pytest > run.log 2>&1 && tail -n 30 run.log", None),
        ] {
            assert_eq!(exit_masked_by(command).as_deref(), by, "{command}");
        }
    }

    #[test]
    fn partial_runs_are_named() {
        assert_eq!(
            partial_run("rspec --only-failures 2>&1 | tail -n 15"),
            Some("a rerun of earlier failures only")
        );
        assert_eq!(
            partial_run("python -m pytest --lf -q"),
            Some("a rerun of earlier failures only")
        );
        assert_eq!(
            partial_run("phpunit --stop-on-failure; echo \"exit: $?\""),
            Some("stopped at the first failure")
        );
        assert_eq!(
            partial_run("cd app && phpunit --stop-on-failure"),
            Some("stopped at the first failure")
        );
        assert_eq!(partial_run("pytest -x tests/"), Some("stopped at the first failure"));
        assert_eq!(partial_run("pytest tests/"), None);
    }

    #[test]
    fn the_exit_status_is_the_last_stages() {
        assert_eq!(exit_program("pytest -q 2>&1 | tail -n 15").as_deref(), Some("tail"));
        assert_eq!(exit_program("cd x && grep -rn foo src").as_deref(), Some("grep"));
        assert_eq!(exit_program("python3 -m pytest").as_deref(), Some("pytest"));
        assert_eq!(benign_exit("grep -q TODO notes.txt", 1), Some("no match"));
        assert_eq!(benign_exit("grep -q TODO notes.txt", 2), None);
        assert_eq!(benign_exit("diff -u a.txt b.txt", 1), Some("files differ"));
        assert_eq!(
            benign_exit("awk -f r.awk data.csv | diff -u expected.txt -", 1),
            None,
            "a golden test"
        );
        assert_eq!(benign_exit("python -m pytest -k smoke", 5), Some("no tests selected"));
        assert_eq!(benign_exit("pytest -k smoke", 1), None);
        assert_eq!(benign_exit("grep foo log || make", 1), None);
    }

    #[test]
    fn builds_are_told_from_commands_that_show_data() {
        for command in [
            "make -C csrc",
            "make -C csrc clean all 2>&1",
            "cd web && npm run build",
            "cmake --build build -j2",
            "gcc -O2 -c a.c -o a.o",
            "cargo build --release",
            "timeout 300 go build ./...",
        ] {
            assert!(builds(command), "{command}");
        }
        for command in [
            "grep -rn make src",
            "git log --oneline",
            "./build.sh",
            "python3 report.py data.csv",
            "cmake -S . -B build",
            "cargo run",
            "go test ./...",
            "cat Makefile",
        ] {
            assert!(!builds(command), "{command}");
        }
    }
}
