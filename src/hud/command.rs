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

/// Whether the check of `wider` runs at least what that of `narrower`
/// does: the same program in the same directory, with no selection the
/// other lacks, or a folder of one of its paths. `pytest` and `pytest
/// tests` cover `pytest tests/test_a.py -k parse`; `pytest -k parse` does
/// not cover `pytest`.
pub fn covers(wider: &str, narrower: &str) -> bool {
    let (wider, narrower) = (check_key(wider), check_key(narrower));
    let (Some((wide_dir, wide)), Some((narrow_dir, narrow))) =
        (wider.split_once('\u{1f}'), narrower.split_once('\u{1f}'))
    else {
        return wider == narrower;
    };
    let narrow: Vec<&str> = narrow.split(' ').collect();
    let mut wide = wide.split(' ');
    wide_dir == narrow_dir
        && wide.next() == narrow.first().copied()
        && wide.all(|w| {
            narrow[1..].iter().any(|n| {
                *n == w
                    || n.strip_prefix(w.trim_end_matches('/'))
                        .is_some_and(|r| r.starts_with('/'))
            })
        })
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
    fn a_wider_selection_covers_a_narrower_one() {
        assert!(covers("pytest", "pytest tests/test_a.py -k parse"));
        assert!(covers("python -m pytest -q tests", "pytest tests/test_a.py"));
        assert!(covers("pytest -v", "pytest -q"));
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
