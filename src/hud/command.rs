//! What a shell command is, read the way the shell runs it: its steps
//! (`&&`, `||`, `;`), each step's pipeline stages (`|`), the program whose
//! exit status the shell returns (the last stage of the last step), what the
//! command checks (to match a failure with a later pass of the same check,
//! whatever form it takes), and exit statuses that say something other than
//! "failed".

/// A step's pipeline stages.
fn stages(step: &str) -> Vec<&str> {
    split_outside_quotes(step, &["|"])
        .into_iter()
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect()
}

/// The steps of a command line, in order.
fn steps(command: &str) -> Vec<&str> {
    split_outside_quotes(command, &["&&", "||", ";", "\n"])
        .into_iter()
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect()
}

/// `text` cut at each separator that stands outside quotes; `|` is never
/// taken from `||`.
fn split_outside_quotes<'a>(text: &'a str, separators: &[&str]) -> Vec<&'a str> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let (mut start, mut i, mut quote) = (0, 0, None::<u8>);
    while i < bytes.len() {
        let b = bytes[i];
        match quote {
            Some(q) if b == q => quote = None,
            Some(_) => {}
            None if b == b'\'' || b == b'"' => quote = Some(b),
            None if b == b'\\' => i += 1,
            None => {
                // Byte-wise: the separators are ASCII, so every cut is at a
                // character boundary.
                if let Some(sep) = separators.iter().find(|s| bytes[i..].starts_with(s.as_bytes())) {
                    let pipe_of_or = *sep == "|" && (bytes[i..].starts_with(b"||") || bytes[..i].ends_with(b"|"));
                    if !pipe_of_or {
                        out.push(&text[start..i]);
                        i += sep.len();
                        start = i;
                        continue;
                    }
                }
            }
        }
        i += 1;
    }
    out.push(&text[start..]);
    out
}

/// The words of one stage that say what runs: without redirections,
/// leading `VAR=value` assignments and wrappers that only time, limit or
/// place it (`timeout 60`, `time`, `env`, `nice`, `npx`, `uv run`, …), and
/// with `python -m tool` as `tool`.
fn words(stage: &str) -> Vec<String> {
    let mut raw = Vec::new();
    let mut tokens = stage.split_whitespace();
    while let Some(t) = tokens.next() {
        let redirect = t.trim_start_matches(|c: char| c.is_ascii_digit() || c == '&');
        if let Some(target) = redirect.strip_prefix('>').or_else(|| redirect.strip_prefix('<')) {
            if target.trim_start_matches('>').is_empty() {
                tokens.next();
            }
            continue;
        }
        raw.push(t.trim_matches(|c| c == '"' || c == '\''));
    }
    let mut i = 0;
    loop {
        let Some(word) = raw.get(i) else { break };
        let name = basename(word);
        let assignment = word
            .split_once('=')
            .is_some_and(|(var, _)| !var.is_empty() && var.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'));
        if assignment {
            i += 1;
        } else if matches!(
            name,
            "time" | "env" | "nice" | "nohup" | "command" | "exec" | "npx" | "bunx" | "pnpx"
        ) {
            i += 1;
        } else if name == "timeout" {
            // timeout [-k N] [-s SIG] DURATION cmd
            i += 1;
            while raw.get(i).is_some_and(|w| w.starts_with('-')) {
                i += if matches!(raw[i], "-k" | "-s" | "--kill-after" | "--signal") {
                    2
                } else {
                    1
                };
            }
            i += 1;
        } else if matches!(name, "uv" | "poetry" | "pipenv" | "pdm" | "hatch") && raw.get(i + 1) == Some(&"run") {
            i += 2;
        } else if (name.starts_with("python") || name == "py") && raw.get(i + 1) == Some(&"-m") && raw.len() > i + 2 {
            i += 2;
        } else {
            break;
        }
    }
    let mut out: Vec<String> = raw[i.min(raw.len())..].iter().map(|w| w.to_string()).collect();
    if let Some(first) = out.first_mut() {
        *first = basename(first).to_owned();
    }
    out
}

fn basename(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

/// The program whose exit status the shell returns for `command`.
pub fn exit_program(command: &str) -> Option<String> {
    let steps = steps(command);
    let last = stages(steps.last()?).last().copied()?;
    words(last).into_iter().next()
}

/// Whether the shell's exit status for `command` is an output filter's
/// (`… 2>&1 | tail -3`): then it says nothing of the command before it.
pub fn exit_is_a_filters(command: &str) -> bool {
    steps(command)
        .last()
        .map(|s| stages(s))
        .is_some_and(|st| st.len() > 1 && st.last().is_some_and(|s| output_filter(s)))
}

/// Programs that only pick, cut or copy what another prints: a pipe into
/// them changes what is shown, not what was checked.
fn output_filter(stage: &str) -> bool {
    let w = words(stage);
    matches!(
        w.first().map(String::as_str),
        Some(
            "tail"
                | "head"
                | "grep"
                | "egrep"
                | "fgrep"
                | "rg"
                | "tee"
                | "less"
                | "more"
                | "cat"
                | "sort"
                | "uniq"
                | "wc"
                | "cut"
                | "sed"
                | "awk"
                | "column"
                | "tr"
                | "fold"
        )
    )
}

/// Whether an option of `program` changes only how results are shown, not
/// what is run or checked (`pytest -v`, `--tb=short`, `ruff check --fix`;
/// `pytest -x` too: a run it stops early has failed anyway, and a passing
/// one ran everything).
fn output_only(program: &str, option: &str) -> bool {
    let flag = option.split('=').next().unwrap_or(option);
    if matches!(
        flag,
        "--color" | "--colour" | "--colors" | "--no-color" | "--no-colors" | "--no-colour"
    ) {
        return true;
    }
    match program {
        "pytest" | "py.test" => {
            matches!(
                flag,
                "-x" | "--exitfirst"
                    | "--maxfail"
                    | "-v"
                    | "-vv"
                    | "-vvv"
                    | "-q"
                    | "-qq"
                    | "-s"
                    | "-l"
                    | "--verbose"
                    | "--quiet"
                    | "--tb"
                    | "--no-header"
                    | "--no-summary"
                    | "--disable-warnings"
                    | "--showlocals"
                    | "--capture"
                    | "--durations"
                    | "-rN"
            ) || (flag.starts_with("-r") && flag.len() <= 6 && flag[2..].chars().all(|c| c.is_ascii_alphabetic()))
                || flag.starts_with("--tb")
        }
        "ruff" | "eslint" | "stylelint" | "biome" => {
            matches!(
                flag,
                "--fix" | "--show-fixes" | "--statistics" | "--output-format" | "--format" | "--quiet" | "-q"
            )
        }
        "go" => matches!(flag, "-v" | "-count" | "-json"),
        "cargo" => matches!(
            flag,
            "-q" | "--quiet" | "-v" | "--verbose" | "--nocapture" | "--no-fail-fast"
        ),
        "mypy" => matches!(
            flag,
            "--pretty" | "--show-error-codes" | "--no-error-summary" | "--show-column-numbers"
        ),
        "jest" | "vitest" | "mocha" => matches!(flag, "--verbose" | "--silent" | "--reporter" | "--run" | "--ci"),
        "node" => flag == "--test-reporter",
        "make" => matches!(flag, "-s" | "--silent" | "--quiet" | "-k" | "--keep-going") || flag.starts_with("-j"),
        "shellcheck" => matches!(flag, "-f" | "--format" | "-C"),
        _ => false,
    }
}

/// What one step checks: its program and the words that choose what is
/// run, without output-only options and with pipes into output filters
/// dropped.
fn step_key(step: &str) -> String {
    let stages = stages(step);
    // The checked stage: the last one that is not an output filter.
    let checked = stages
        .iter()
        .rev()
        .find(|s| !output_filter(s))
        .or(stages.first())
        .copied()
        .unwrap_or(step);
    let words = words(checked);
    let Some(program) = words.first() else {
        return String::new();
    };
    let mut kept = vec![program.clone()];
    let mut rest = words[1..].iter();
    while let Some(w) = rest.next() {
        if w.starts_with('-') && output_only(program, w) {
            // `--tb short`, `-f json`: the option's value goes with it.
            if !w.contains('=')
                && matches!(
                    w.as_str(),
                    "--tb" | "--format" | "-f" | "--output-format" | "--reporter" | "--capture" | "--durations"
                )
            {
                rest.next();
            }
            continue;
        }
        kept.push(w.clone());
    }
    kept.join(" ")
}

/// What a shell command checks, to match a failure with a later pass: the
/// directories it changes to and its last step, in a form where commands
/// that differ only in how results are shown are the same.
/// `cmake --build build > /dev/null && cd build && ctest` and
/// `cd build && ctest --output-on-failure`… check the same; `cd web && npm
/// test` and `cd api && npm test` do not; `pytest -v`, `python -m pytest -q
/// 2>&1 | tail -n 15` and `pytest --tb=short` do; `pytest tests/a` and
/// `pytest tests/b` do not.
pub fn check_key(command: &str) -> String {
    let steps = steps(command);
    match steps.iter().rev().find(|s| !s.starts_with("cd ")) {
        Some(last) => format!("{}\u{1f}{}", check_dirs(command), step_key(last)),
        None => command.trim().to_owned(),
    }
}

/// The directories a command changes to, as [`check_key`] records them.
pub fn check_dirs(command: &str) -> String {
    steps(command)
        .iter()
        .filter_map(|s| s.strip_prefix("cd "))
        .map(str::trim)
        .collect::<Vec<_>>()
        .join("/")
}

/// What a command that exited 0 passed: the check of its last step and of
/// each step before it (`make && ./app` built, so `make` passed), each
/// with the directories changed to up to there. A `||` makes the steps
/// before it uncertain, so only the last counts then.
pub fn checks_passed(command: &str) -> Vec<String> {
    if !split_outside_quotes(command, &["||"]).len().eq(&1) {
        return vec![check_key(command)];
    }
    let steps = steps(command);
    let mut dirs: Vec<&str> = Vec::new();
    let mut keys = Vec::new();
    for step in steps {
        if let Some(dir) = step.strip_prefix("cd ") {
            dirs.push(dir.trim());
        } else {
            keys.push(format!("{}\u{1f}{}", dirs.join("/"), step_key(step)));
        }
    }
    keys.push(check_key(command));
    keys.dedup();
    keys
}

/// The checks that passed in a `&&` chain that failed at a later step:
/// the steps before the one whose program printed `tool`'s report. `go vet
/// ./... && go test ./...` that printed go test's failures passed `go vet
/// ./...`. Nothing when `tool` is not a later step's, or with `||`.
pub fn checks_passed_before(command: &str, tool: &str) -> Vec<String> {
    if split_outside_quotes(command, &["||", ";"]).len() != 1 {
        return Vec::new();
    }
    let mut dirs: Vec<&str> = Vec::new();
    let mut keys = Vec::new();
    for step in steps(command) {
        if let Some(dir) = step.strip_prefix("cd ") {
            dirs.push(dir.trim());
            continue;
        }
        let key = step_key(step);
        let program = key.split(' ').next().unwrap_or_default();
        let reports = key == tool
            || key.starts_with(&format!("{tool} "))
            || matches!(
                (tool, program),
                ("rustc", "cargo") | ("tap", "bats" | "prove") | ("node test", "node") | ("go", "go")
            );
        if reports {
            return keys;
        }
        keys.push(format!("{}\u{1f}{key}", dirs.join("/")));
    }
    Vec::new()
}

/// Whether the check of `wider` runs at least what that of `narrower`
/// does: the same program (and subcommand) in the same directory, with no
/// selecting option (`-k`, `-run`, `-t`, `--grep`, …) the other lacks, and
/// paths that hold the other's (`.`, `./...` or none: the whole project).
/// Other options (`--strict`, `--max-warnings 0`, `-p tsconfig.json`)
/// choose how strictly or how results are shown, not what is checked.
/// `pytest` and `pytest tests` cover `pytest tests/test_a.py -k parse`;
/// `mypy --strict .` covers `mypy orders.py`; `pytest -k parse` does not
/// cover `pytest`. Both are [`check_key`]s (or commands).
pub fn covers(wider: &str, narrower: &str) -> bool {
    let key = |k: &str| {
        if k.contains('\u{1f}') {
            k.to_owned()
        } else {
            check_key(k)
        }
    };
    let (wider, narrower) = (key(wider), key(narrower));
    let (Some((wide_dir, wide)), Some((narrow_dir, narrow))) =
        (wider.split_once('\u{1f}'), narrower.split_once('\u{1f}'))
    else {
        return wider == narrower;
    };
    let (Some(wide), Some(narrow)) = (Scope::of(wide), Scope::of(narrow)) else {
        return wider == narrower;
    };
    wide_dir == narrow_dir
        && wide.program == narrow.program
        && wide.selecting.iter().all(|o| narrow.selecting.contains(o))
        && match (&wide.paths, &narrow.paths) {
            (None, _) => true,
            (Some(_), None) => false,
            (Some(wide), Some(narrow)) => narrow.iter().all(|n| {
                wide.iter()
                    .any(|w| n == w || n.strip_prefix(w.as_str()).is_some_and(|r| r.starts_with('/')))
            }),
        }
}

/// What one step's words select: its program (with the subcommand, for
/// programs that have them), its selecting options with their values, and
/// its paths (`None`: the whole project).
struct Scope<'a> {
    program: Vec<&'a str>,
    selecting: Vec<(&'a str, &'a str)>,
    paths: Option<Vec<String>>,
}

impl<'a> Scope<'a> {
    fn of(step_key: &'a str) -> Option<Scope<'a>> {
        let mut words = step_key.split(' ').filter(|w| !w.is_empty());
        let program = words.next()?;
        let mut scope = Scope {
            program: vec![program],
            selecting: Vec::new(),
            paths: None,
        };
        let mut paths = Vec::new();
        let mut subcommand = matches!(
            program,
            "go" | "cargo" | "npm" | "pnpm" | "yarn" | "bun" | "ruff" | "deno"
        );
        while let Some(word) = words.next() {
            if let Some(option) = word.strip_prefix('-').map(|_| word) {
                let (flag, inline) = match option.split_once('=') {
                    Some((f, v)) => (f, Some(v)),
                    None => (option, None),
                };
                let selects = SELECTING.contains(&flag)
                    || matches!(
                        (program, flag),
                        ("cargo", "-p") | ("bats" | "mocha", "-f") | ("make", "-C")
                    );
                if selects {
                    let value = inline.or_else(|| words.next()).unwrap_or("");
                    scope.selecting.push((flag, value));
                } else if inline.is_none() && takes_a_value(program, flag) {
                    words.next();
                }
                continue;
            }
            if subcommand {
                scope.program.push(word);
                subcommand = false;
                continue;
            }
            // `vitest run` runs once what `vitest` watches.
            if program == "vitest" && matches!(word, "run" | "watch") {
                continue;
            }
            let path = word.trim_start_matches("./").trim_end_matches('/');
            // The whole project: `.`, `./...`, and mocha's default folder.
            let whole = matches!(path, "" | "." | "...") || (program == "mocha" && path == "test");
            if !whole {
                paths.push(path.to_owned());
            }
            if whole {
                return Some(scope.whole());
            }
        }
        // A bare `go test` or `go vet` checks the package in the folder only.
        if paths.is_empty() && program == "go" {
            paths.push(".".to_owned());
        }
        scope.paths = (!paths.is_empty()).then_some(paths);
        Some(scope)
    }

    /// The same scope over the whole project (a path of `.` selects
    /// everything, whatever other paths say).
    fn whole(mut self) -> Scope<'a> {
        self.paths = None;
        self
    }
}

/// Options that select which tests or targets run (with their value).
const SELECTING: &[&str] = &[
    "-k",
    "-m",
    "-run",
    "-bench",
    "-t",
    "--testNamePattern",
    "--test-name-pattern",
    "--testPathPattern",
    "-g",
    "--grep",
    "--fgrep",
    "--filter",
    "--package",
    "--test",
    "--lib",
    "--bin",
    "--example",
    "--manifest-path",
    "--deselect",
    "--ignore",
    "--only",
];

/// Whether `flag` of `program` takes the next word as its value (and does
/// not select: see [`SELECTING`]).
fn takes_a_value(program: &str, flag: &str) -> bool {
    matches!(
        flag,
        "-p" | "--project"
            | "-c"
            | "--config"
            | "-S"
            | "--severity"
            | "-f"
            | "--format"
            | "-R"
            | "--reporter"
            | "--max-warnings"
            | "-o"
            | "--output"
            | "--tb"
            | "--output-format"
            | "--ext"
            | "--timeout"
            | "-timeout"
            | "-n"
            | "-j"
            | "--jobs"
            | "-e"
            | "--shell"
            | "--test-reporter"
    ) && !(program == "make" && flag == "-n")
}

/// An exit status that does not mean the command failed, named for what it
/// says: `grep` finding no line, `diff` finding a difference, `pytest`
/// selecting no test.
pub fn benign_exit(command: &str, exit: i64) -> Option<&'static str> {
    let program = exit_program(command)?;
    match (program.as_str(), exit) {
        ("grep" | "egrep" | "fgrep" | "rg" | "ag" | "zgrep", 1) => Some("no match"),
        ("diff" | "cmp" | "colordiff", 1) => Some("files differ"),
        ("pytest" | "py.test", 5) => Some("no tests selected"),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
            );
        }
        assert_eq!(exit_program("日本 && 語 | grep 語").as_deref(), Some("grep"));
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
    fn a_wider_selection_covers_a_narrower_one() {
        assert!(covers("pytest", "pytest tests/test_a.py -k parse"));
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
    }

    #[test]
    fn a_passing_chain_passes_each_of_its_steps() {
        assert!(checks_passed("make && ./app").contains(&check_key("make")));
        assert!(checks_passed("cd build && make && ctest").contains(&check_key("cd build && make")));
        assert!(!checks_passed("make || true").contains(&check_key("make")));
    }

    #[test]
    fn the_exit_status_is_the_last_stages() {
        assert_eq!(exit_program("pytest -q 2>&1 | tail -n 15").as_deref(), Some("tail"));
        assert_eq!(exit_program("cd x && grep -rn foo src").as_deref(), Some("grep"));
        assert_eq!(exit_program("python3 -m pytest").as_deref(), Some("pytest"));
        assert_eq!(benign_exit("grep -q TODO notes.txt", 1), Some("no match"));
        assert_eq!(benign_exit("grep -q TODO notes.txt", 2), None);
        assert_eq!(benign_exit("diff -u a.txt b.txt", 1), Some("files differ"));
        assert_eq!(benign_exit("python -m pytest -k smoke", 5), Some("no tests selected"));
        assert_eq!(benign_exit("pytest -k smoke", 1), None);
        assert_eq!(benign_exit("grep foo log || make", 1), None);
    }
}
