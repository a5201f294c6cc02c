//! What a command checks: the key that matches a failure with a later
//! pass of the same check whatever form the command takes (options that
//! only change the output left out), what a passing chain passed, and
//! whether one run covers another's selection.

use super::shell::{basename, output_filter, split_outside_quotes, stages, steps, words};

/// Whether an option of `program` changes only how results are shown, not
/// what is run or checked (`pytest -v`, `--tb=short`, `ruff check --fix`;
/// `pytest -x` too: a run it stops early has failed anyway, and a passing
/// one ran everything).
fn output_only(program: &str, option: &str) -> bool {
    let flag = option.split('=').next().unwrap_or(option);
    // Colours, and a fix mode: `--fix` checks what the plain run checks,
    // and fixes what it can on the way.
    if matches!(
        flag,
        "--color"
            | "--colour"
            | "--colors"
            | "--no-color"
            | "--no-colors"
            | "--no-colour"
            | "--fix"
            | "--autofix"
            | "--autocorrect"
            | "--auto-correct"
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
    // A read of a file (`tail -n 4 pytest.log`, `cat build.log`): what it
    // checks is what that file holds, however much of it is shown; a later
    // read of the same file that shows a pass closes what an earlier one
    // showed failing.
    if matches!(
        basename(program),
        "cat" | "tail" | "head" | "less" | "more" | "tac" | "bat"
    ) {
        let mut files = Vec::new();
        let mut rest = words[1..].iter();
        while let Some(w) = rest.next() {
            if matches!(w.as_str(), "-n" | "-c" | "--lines" | "--bytes") {
                rest.next();
            } else if !w.starts_with('-') && !w.starts_with('+') && !w.chars().all(|c| c.is_ascii_digit()) {
                files.push(w.trim_start_matches("./").to_owned());
            }
        }
        if !files.is_empty() {
            return format!("read {}", files.join(" "));
        }
    }
    let mut kept = vec![program.clone()];
    // Settings given before the program may choose what runs
    // (`TEST_FILTER=push make test`, `CK_RUN_CASE=Parse make check`), as an
    // argument `NAME=value` may; those known to change no selection do not.
    for word in checked.split_whitespace().take_while(|w| {
        w.split_once('=')
            .is_some_and(|(var, _)| !var.is_empty() && var.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
    }) {
        let var = word.split('=').next().unwrap_or_default();
        let harmless = matches!(
            var,
            "PYTHONPATH"
                | "PATH"
                | "NODE_OPTIONS"
                | "NODE_ENV"
                | "CI"
                | "FORCE_COLOR"
                | "NO_COLOR"
                | "TERM"
                | "LANG"
                | "RUST_BACKTRACE"
                | "RUST_LOG"
                | "CARGO_TERM_COLOR"
                | "GOFLAGS"
                | "PYTHONDONTWRITEBYTECODE"
                | "PYTHONUNBUFFERED"
                | "HOME"
                | "TZ"
        ) || var.starts_with("LC_");
        if !harmless {
            kept.push(word.trim_matches(|c| c == '"' || c == '\'').to_owned());
        }
    }
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
    // `flake8 . || true` checks what flake8 checks: a step that always
    // succeeds after it only throws its status away.
    let checked: Vec<&str> = steps
        .iter()
        .copied()
        .filter(|s| !s.starts_with("cd ") && !always_succeeds(s))
        .collect();
    let Some(last) = checked.last() else {
        return command.trim().to_owned();
    };
    let key = step_key(&program_dir(last).1);
    // A step that shows the file an earlier one wrote (`green tests >
    // out.txt; cat out.txt`) checks what that one checked.
    let writer = file_read(&key).and_then(|shown| {
        checked
            .iter()
            .rev()
            .skip(1)
            .find(|s| output_file(s).as_deref() == Some(shown))
    });
    let key = writer.map_or(key, |w| step_key(&program_dir(w).1));
    format!("{}\u{1f}{key}", check_dirs(command))
}

/// The file the last step of `command` writes its output to (`pytest >
/// run.log 2>&1 &`, `make check &> build.log`), if any: a later read of
/// that file shows what this command said.
pub fn output_file(command: &str) -> Option<String> {
    let steps = steps(command);
    let last = stages(steps.last()?).last().copied()?;
    let mut tokens = last.split_whitespace();
    while let Some(t) = tokens.next() {
        let t = t.trim_end_matches('&');
        let redirect = t.trim_start_matches(['1', '&']);
        let Some(target) = redirect.strip_prefix('>') else {
            continue;
        };
        let target = target.trim_start_matches('>');
        if target.starts_with('&') {
            continue;
        }
        let file = if target.is_empty() { tokens.next()? } else { target };
        let file = file.trim_matches(|c| c == '"' || c == '\'');
        if file != "/dev/null" && !file.is_empty() {
            return Some(file.trim_start_matches("./").to_owned());
        }
    }
    None
}

/// The file a read (`tail -n 4 run.log`, `cat run.log`) shows, from its
/// [`check_key`].
pub fn file_read(key: &str) -> Option<&str> {
    let step = key.rsplit('\u{1f}').next()?;
    step.strip_prefix("read ").filter(|f| !f.contains(' '))
}

/// The directory a step's program is told to run in, in place of a `cd`
/// (`make -C dir`, `make --directory=dir`, `ninja -C dir`, `git -C dir`,
/// `npm --prefix dir`, `yarn --cwd dir`, `pnpm -C dir`), and the step
/// without that option: `make -C csrc test` checks what `cd csrc && make
/// test` does. Only the words before a pipe are the program's.
fn program_dir(step: &str) -> (Option<String>, std::borrow::Cow<'_, str>) {
    let own = split_outside_quotes(step, &["|"]).first().copied().unwrap_or(step);
    let words: Vec<&str> = own.split_whitespace().collect();
    let Some(at) = words.iter().position(|w| {
        !w.split_once('=')
            .is_some_and(|(var, _)| !var.is_empty() && !var.starts_with('-'))
    }) else {
        return (None, step.into());
    };
    let options: &[&str] = match basename(words[at]) {
        "make" | "gmake" => &["-C", "--directory"],
        "ninja" | "git" => &["-C"],
        "pnpm" => &["-C", "--dir"],
        "npm" => &["--prefix"],
        "yarn" => &["--cwd"],
        _ => return (None, step.into()),
    };
    for i in at + 1..words.len() {
        let w = words[i];
        let (dir, taken) = if options.contains(&w) {
            match words.get(i + 1) {
                Some(dir) => (*dir, 2),
                None => break,
            }
        } else if let Some(dir) = options.iter().find_map(|o| w.strip_prefix(&format!("{o}="))) {
            (dir, 1)
        } else if let Some(dir) = w
            .strip_prefix("-C")
            .filter(|d| !d.is_empty() && options.contains(&"-C"))
        {
            (dir, 1)
        } else {
            continue;
        };
        let dir = dir.trim_matches(|c| c == '"' || c == '\'').trim_end_matches('/');
        let mut kept: Vec<&str> = words[..i].to_vec();
        kept.extend(&words[i + taken..]);
        let rest = &step[own.len()..];
        return (Some(dir.to_owned()), format!("{}{rest}", kept.join(" ")).into());
    }
    (None, step.into())
}

/// Whether `step` always succeeds and checks nothing: `true`, `:`, an
/// `echo` or `printf`, `exit 0`.
pub(super) fn always_succeeds(step: &str) -> bool {
    let words = words(step);
    match words.first().map(String::as_str) {
        Some("true" | ":" | "echo" | "printf") => true,
        Some("exit") => words.get(1).map(String::as_str) == Some("0"),
        _ => false,
    }
}

/// The directories a command changes to, as [`check_key`] records them:
/// each `cd`, then the one its checked step's program is told to run in
/// (see [`program_dir`]).
pub fn check_dirs(command: &str) -> String {
    let steps = steps(command);
    let mut dirs: Vec<String> = steps
        .iter()
        .filter_map(|s| s.strip_prefix("cd "))
        .map(|d| d.trim().to_owned())
        .collect();
    let checked = steps
        .iter()
        .rev()
        .find(|s| !s.starts_with("cd ") && !always_succeeds(s));
    dirs.extend(checked.and_then(|s| program_dir(s).0));
    dirs.join("/")
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
            keys.push(located_key(&dirs, step));
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
        let key = step_key(&program_dir(step).1);
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
        keys.push(located_key(&dirs, step));
    }
    Vec::new()
}

/// The check of `step` run after `cd`s into `dirs`: those and the directory
/// its program is told to run in, and its [`step_key`].
fn located_key(dirs: &[&str], step: &str) -> String {
    let (dir, step) = program_dir(step);
    let mut all = dirs.to_vec();
    all.extend(dir.as_deref());
    format!("{}\u{1f}{}", all.join("/"), step_key(&step))
}

/// Whether the check of `wider` runs at least what that of `narrower`
/// does: the same program (and subcommand) in the same directory, with no
/// selecting option (`-k`, `-run`, `-t`, `--grep`, …) the other lacks, and
/// paths that hold the other's (`.`, `./...` or none: the whole project).
/// Options that make the check stricter (`-race`, `--strict`, `-Werror`,
/// `--max-warnings 0`, a coverage threshold: see [`stricter`]) the wider run
/// must have too: a pass without the race detector says nothing of a race
/// it found. Other options (`-p tsconfig.json`, `-v`) choose how results
/// are shown, not what is checked. `pytest` and `pytest tests` cover
/// `pytest tests/test_a.py -k parse`; `mypy --strict .` covers `mypy
/// orders.py` but `mypy .` does not cover `mypy --strict orders.py`;
/// `pytest -k parse` does not cover `pytest`. Both are [`check_key`]s (or
/// commands).
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
        && wide.unknown.iter().all(|o| narrow.unknown.contains(o))
        && narrow.strict.iter().all(|o| wide.strict.contains(o))
        && match (&wide.paths, &narrow.paths) {
            (None, _) => true,
            (Some(_), None) => false,
            (Some(wide), Some(narrow)) => {
                let holds = |w: &str, n: &str| {
                    n == w || n.strip_prefix(w).is_some_and(|r| r.starts_with('/')) || glob_holds(w, n)
                };
                // A word that holds none of the narrower run's adds nothing
                // known: it may be a pattern that narrows (`uvu tests slug`
                // runs the files of `tests` that match `slug`), or the
                // words before it a subcommand (`pyrefly check src/a.py`
                // checks one file where `pyrefly check` checks the project).
                narrow.iter().all(|n| wide.iter().any(|w| holds(w, n)))
                    && wide.iter().all(|w| narrow.iter().any(|n| holds(w, n)))
            }
        }
}

/// Whether `command`'s checked step runs less than its program's whole
/// check: it names a selection (`-k`, `--filter`), an option not known to
/// leave the selection alone, a variable (`TESTS=unit`), or a target that
/// is a file (`make build/tests`: a build of that file, not a run).
pub fn narrows(command: &str) -> bool {
    let key = check_key(command);
    let step = key.split_once('\u{1f}').map_or(key.as_str(), |(_, step)| step);
    let Some(scope) = Scope::of(step) else {
        return false;
    };
    let script = scope.program.first().is_some_and(|p| is_interpreter(p));
    !scope.selecting.is_empty()
        || !scope.unknown.is_empty()
        || scope
            .paths
            .iter()
            .flatten()
            .any(|p| !(script && is_script(p)) && p.contains(['/', '.']))
}

/// Whether the checked steps of `a` and `b` run the same program (and
/// subcommand), in the same folder.
pub fn same_program(a: &str, b: &str) -> bool {
    let scope = |c: &str| {
        let key = check_key(c);
        let (dir, step) = key
            .split_once('\u{1f}')
            .map_or((String::new(), key.clone()), |(d, s)| (d.to_owned(), s.to_owned()));
        (
            dir,
            Scope::of(&step).map(|s| s.program.iter().map(|p| p.to_string()).collect::<Vec<_>>()),
        )
    };
    let (a, b) = (scope(a), scope(b));
    a.1.is_some() && a == b
}

/// Whether `command`'s checked step selects by paths alone, if at all: no
/// name filter, no option not known to leave the selection alone.
pub fn selects_paths_only(command: &str) -> bool {
    let key = check_key(command);
    let step = key.split_once('\u{1f}').map_or(key.as_str(), |(_, step)| step);
    Scope::of(step).is_some_and(|s| s.selecting.is_empty() && s.unknown.is_empty())
}

/// Whether the glob `wide` holds every file `narrow` (a path or a glob)
/// can name: `css/**/*.css` holds `css/*.css` and `css/a/b.css`;
/// `css/*.css` holds `css/a.css` but not `css/a/b.css`.
fn glob_holds(wide: &str, narrow: &str) -> bool {
    let name_holds = |pattern: &str, name: &str| {
        pattern == name
            || pattern == "*"
            || pattern
                .strip_prefix('*')
                .is_some_and(|tail| !tail.contains(['*', '?', '[']) && name.ends_with(tail))
    };
    let last = |p: &str| p.rsplit('/').next().unwrap_or(p).to_owned();
    if let Some((dir, pattern)) = wide.split_once("/**/") {
        return narrow.starts_with(&format!("{dir}/")) && name_holds(pattern, &last(narrow));
    }
    match (wide.rsplit_once('/'), narrow.rsplit_once('/')) {
        (Some((wide_dir, pattern)), Some((narrow_dir, name))) if pattern.contains('*') => {
            wide_dir == narrow_dir && name_holds(pattern, name)
        }
        _ => false,
    }
}

/// What one step's words select: its program (with the subcommand, for
/// programs that have them), its selecting options with their values, and
/// its paths (`None`: the whole project).
struct Scope<'a> {
    program: Vec<&'a str>,
    selecting: Vec<(&'a str, &'a str)>,
    /// Options not known to leave the selection alone: they may select
    /// (`--only-failures`, `--failed`, `--lf`), so a run with one covers
    /// only a run with the same.
    unknown: Vec<&'a str>,
    /// Options that make the check stricter, with their values.
    strict: Vec<String>,
    paths: Option<Vec<String>>,
}

impl<'a> Scope<'a> {
    fn of(step_key: &'a str) -> Option<Scope<'a>> {
        let mut words = step_key.split(' ').filter(|w| !w.is_empty());
        let program = words.next()?;
        let mut scope = Scope {
            program: vec![program],
            selecting: Vec::new(),
            unknown: Vec::new(),
            strict: Vec::new(),
            paths: None,
        };
        let mut paths = Vec::new();
        let mut script_seen = false;
        let mut everything = false;
        let mut verb = false;
        let mut subcommand = takes_a_subcommand(program);
        let named_by_subcommand = subcommand;
        while let Some(word) = words.next() {
            if let Some(option) = word.strip_prefix('-').map(|_| word) {
                let (flag, inline) = match option.split_once('=') {
                    Some((f, v)) => (f, Some(v)),
                    None => (option, None),
                };
                // `node --test` is a mode, not cargo's `--test NAME`: it
                // runs the test files it finds, as a path would say.
                if program == "node" && flag == "--test" {
                    continue;
                }
                let selects = SELECTING.contains(&flag)
                    || matches!(
                        (program, flag),
                        ("cargo", "-p")
                            | ("bats" | "mocha", "-f")
                            | ("make", "-C")
                            | ("ruby", "-n" | "--name")
                            | ("ctest", "-R" | "-E" | "-L" | "-LE" | "-I" | "-N")
                            | ("tox", "-e")
                            | ("nox", "-s" | "-e" | "-k" | "--session" | "--sessions")
                    );
                if selects {
                    let value = inline.or_else(|| words.next()).unwrap_or("");
                    scope.selecting.push((flag, value));
                } else if stricter(flag) {
                    let value = match inline {
                        Some(v) => Some(v),
                        None if takes_a_value(program, flag) || matches!(flag, "-D" | "--deny") => words.next(),
                        None => None,
                    };
                    scope.strict.push(match value {
                        Some(v) => format!("{flag}={v}"),
                        None => flag.to_owned(),
                    });
                } else {
                    if !leaves_the_selection(flag) {
                        scope.unknown.push(option);
                    }
                    if inline.is_none() && takes_a_value(program, flag) {
                        words.next();
                    }
                }
                continue;
            }
            if subcommand {
                scope.program.push(word);
                subcommand = false;
                // A subcommand with a verb of its own: `cargo nextest run`,
                // `npm run test`; the verb is no path.
                verb = true;
                continue;
            }
            let after_verb = std::mem::take(&mut verb);
            if after_verb && matches!(word, "run" | "test" | "exec" | "list") {
                scope.program.push(word);
                continue;
            }
            // `deno task check`, `npm run lint`: the task a runner's own
            // task verb runs is what is checked, as `make check`'s target.
            let task_verb = scope
                .program
                .last()
                .is_some_and(|w| *w == "task" || (*w == "run" && matches!(program, "npm" | "pnpm" | "yarn" | "bun")));
            if after_verb && task_verb {
                scope.program.push(word);
                continue;
            }
            // `make test SPEC=label`: a variable may select, like an
            // option not known.
            if word.split_once('=').is_some_and(|(name, _)| {
                !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            }) {
                scope.unknown.push(word);
                continue;
            }
            // After a subcommand, a word that is no path names tests or
            // targets to run (`cargo test parses_`, `meson test add`).
            if named_by_subcommand && !word.contains(['/', '.', '*']) {
                scope.selecting.push(("", word));
                continue;
            }
            // `vitest run` runs once what `vitest` watches.
            if program == "vitest" && matches!(word, "run" | "watch") {
                continue;
            }
            // After the script an interpreter runs, the words are the
            // script's own arguments: they may select, as an option not
            // known (`node test/check.mjs parseDuration`).
            if script_seen {
                scope.unknown.push(word);
                continue;
            }
            script_seen = is_interpreter(program) && is_script(word);
            let path = word.trim_start_matches("./").trim_end_matches('/');
            // The whole project: `.`, `./...`, and mocha's default folder.
            let whole = matches!(path, "" | "." | "...") || (program == "mocha" && path == "test");
            if whole {
                everything = true;
            } else {
                paths.push(path.to_owned());
            }
        }
        // A path of `.` selects everything, whatever other paths say; the
        // options after it still count.
        if everything {
            return Some(scope.whole());
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

/// Programs whose first word is a subcommand (`cargo test`, `meson
/// test`): the words after it that are no paths name what it runs (`cargo
/// test parses_`, `meson test -C build add`), a selection.
fn takes_a_subcommand(program: &str) -> bool {
    matches!(
        program,
        "go" | "cargo"
            | "npm"
            | "pnpm"
            | "yarn"
            | "bun"
            | "ruff"
            | "deno"
            | "coverage"
            | "mix"
            | "dub"
            | "dotnet"
            | "swift"
            | "gradle"
            | "./gradlew"
            | "bundle"
            | "poetry"
            | "uv"
            | "meson"
            | "tox"
            | "nox"
    )
}

/// Programs that run a script file given to them, passing it the words
/// after it.
fn is_interpreter(program: &str) -> bool {
    matches!(
        program,
        "node"
            | "deno"
            | "bun"
            | "ruby"
            | "perl"
            | "php"
            | "bash"
            | "sh"
            | "dash"
            | "zsh"
            | "Rscript"
            | "tclsh"
            | "lua"
    ) || program.starts_with("python")
}

/// Whether `word` names a script file by its extension.
fn is_script(word: &str) -> bool {
    word.rsplit_once('.').is_some_and(|(_, ext)| {
        matches!(
            ext,
            "js" | "mjs" | "cjs" | "ts" | "py" | "rb" | "pl" | "t" | "php" | "sh" | "bash" | "R" | "r" | "tcl" | "lua"
        )
    })
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

/// Options that stop a run at its first failure: a run that passes with
/// one ran everything, one that fails counts only the tests run until then.
pub(super) const STOP_EARLY: &[&str] = &[
    "-x",
    "--exitfirst",
    "--maxfail",
    "--stop-on-failure",
    "--stop-on-error",
    "--stop-on-defect",
    "--bail",
    "--fail-fast",
    "--failfast",
    "-failfast",
    "--stop-on-first-failure",
    "--halt-on-failure",
    "--abort-on-failure",
    "--exit-on-failure",
];

/// Whether `flag` is known to leave what runs alone: it shows results
/// another way, sets strictness, configuration, parallelism or a timeout,
/// or stops at the first failure (a run that passes with it ran
/// everything). Any other option may select, and a run with it covers only
/// runs with the same option. Bundled short flags (`-lv`) are read letter
/// by letter.
fn leaves_the_selection(flag: &str) -> bool {
    const KNOWN: &[&str] = &[
        "-v",
        "-vv",
        "-vvv",
        "-q",
        "-qq",
        "-s",
        "-l",
        "-r",
        "-x",
        "-b",
        "-w",
        "--verbose",
        "--quiet",
        "--silent",
        "--strict",
        "--noEmit",
        "--no-emit",
        "-p",
        "--project",
        "-c",
        "--config",
        "-S",
        "--severity",
        "-f",
        "--format",
        "-R",
        "--reporter",
        "--max-warnings",
        "-o",
        "--output",
        "--tb",
        "--output-format",
        "--ext",
        "--timeout",
        "-timeout",
        "-j",
        "--jobs",
        "-e",
        "--shell",
        "--test-reporter",
        "--pretty",
        "--show-error-codes",
        "--no-error-summary",
        "--show-column-numbers",
        "--all-targets",
        "--all-features",
        "--workspace",
        "--release",
        "--locked",
        "--offline",
        "--frozen",
        "-D",
        "-W",
        "--deny",
        "--warn",
        "--fix",
        "--show-fixes",
        "--statistics",
        "--ci",
        "--run",
        "-count",
        "--count",
        "-race",
        "-json",
        "--json",
        "--color",
        "--colour",
        "--colors",
        "--no-color",
        "--no-colors",
        "--nocapture",
        "--no-fail-fast",
        "--testdox",
        "--no-coverage",
        "--trace",
        "--backtrace",
        "--no-header",
        "--no-summary",
        "--disable-warnings",
        "--showlocals",
        "--capture",
        "--durations",
        "--warnings",
        "--recursive",
        "--max-line-length",
        "--error-exitcode",
        "--enable",
        "--inconclusive",
        "--noout",
        "--nonet",
        "--summary",
        "--write-changes",
        "--pedantic",
        "-O2",
        "-O0",
        "-g",
    ];
    let flag = flag.split('=').next().unwrap_or(flag);
    if KNOWN.contains(&flag)
        || STOP_EARLY.contains(&flag)
        || flag.starts_with("-I")
        || flag.starts_with("-W")
        || flag.starts_with("--tb")
    {
        return true;
    }
    // `-lv`: each letter a known flag.
    let bundled = flag
        .strip_prefix('-')
        .filter(|f| !f.starts_with('-') && f.len() > 1 && f.len() <= 4);
    bundled.is_some_and(|letters| {
        letters
            .chars()
            .all(|c| c.is_ascii_alphabetic() && KNOWN.contains(&format!("-{c}").as_str()))
    })
}

/// Whether `flag` makes a check stricter: a failure found with it need
/// not be found without it (the race detector, strict modes, warnings
/// made errors, a warning or coverage threshold, sanitizers).
fn stricter(flag: &str) -> bool {
    matches!(
        flag,
        "-race"
            | "--race"
            | "--strict"
            | "--strict-markers"
            | "--strict-config"
            | "--pedantic"
            | "-pedantic-errors"
            | "--max-warnings"
            | "-D"
            | "--deny"
            | "--warnings-as-errors"
            | "--cov-fail-under"
            | "--fail-under"
            | "--check-coverage"
            | "--lines"
            | "--branches"
            | "--functions"
            | "--statements"
            | "--error-on-warnings"
            | "--werror"
            | "-Werror"
    ) || flag.starts_with("-Werror")
        || flag.starts_with("-fsanitize")
        || flag.starts_with("--warnings-as-errors")
}

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
        || (program == "meson" && flag == "-C")
}
