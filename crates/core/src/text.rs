//! Tool output as the HUD keeps it: clipped to a head and tail with the
//! lines between that say something failed, and what each line says.

use evolve_hud_api::ClipInfo;

/// A tool output kept as its head and tail, with its full size, and the
/// lines of the part between that say something failed ([`LineSays::anything`]),
/// up to [`MIDDLE_LINES`] lines and [`MIDDLE_BYTES`] bytes: a failure deep
/// inside a long output is seen without the whole.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Clipped {
    pub head: String,
    pub middle: Vec<String>,
    pub tail: String,
    pub lines: usize,
    pub total_bytes: usize,
}

/// Lines of a clipped output's middle kept at most, their bytes in all,
/// and the bytes of one.
pub const MIDDLE_LINES: usize = 64;
pub const MIDDLE_BYTES: usize = 6144;
pub const MIDDLE_LINE_BYTES: usize = 240;

/// The lines among `lines` that say something failed, trimmed, as a
/// clipped output keeps its middle: each at most [`MIDDLE_LINE_BYTES`]
/// (longer ones are left out, not cut, so every kept line is a line of the
/// output), [`MIDDLE_LINES`] and [`MIDDLE_BYTES`] in all.
pub fn middle_lines<'a>(lines: impl Iterator<Item = &'a str>) -> Vec<String> {
    let mut kept: Vec<String> = Vec::new();
    let mut bytes = 0;
    for line in lines.map(str::trim) {
        if kept.len() >= MIDDLE_LINES {
            break;
        }
        if line.len() > MIDDLE_LINE_BYTES || !LineSays::of(line).anything() || line.chars().any(char::is_control) {
            continue;
        }
        if bytes + line.len() > MIDDLE_BYTES {
            break;
        }
        bytes += line.len();
        kept.push(line.to_owned());
    }
    kept
}

impl Clipped {
    pub fn new(text: &str, head: usize, tail: usize) -> Self {
        let cut = |n: usize, from_end: bool| -> String {
            if text.len() <= n {
                return if from_end { String::new() } else { text.to_owned() };
            }
            if from_end {
                let mut at = text.len() - n;
                while !text.is_char_boundary(at) {
                    at += 1;
                }
                text[at..].to_owned()
            } else {
                let mut at = n;
                while !text.is_char_boundary(at) {
                    at -= 1;
                }
                text[..at].to_owned()
            }
        };
        let head_text = cut(head, false);
        let tail_text = if text.len() > head {
            cut(tail.min(text.len() - head_text.len()), true)
        } else {
            String::new()
        };
        let middle = if head_text.len() + tail_text.len() < text.len() {
            // Whole lines of the part between: the head's last line and the
            // tail's first may be cut.
            let between = &text[head_text.len()..text.len() - tail_text.len()];
            let mut lines: Vec<&str> = between.lines().collect();
            if !head_text.ends_with('\n') && !lines.is_empty() {
                lines.remove(0);
            }
            if !between.ends_with('\n') {
                lines.pop();
            }
            middle_lines(lines.into_iter())
        } else {
            Vec::new()
        };
        Clipped {
            head: head_text,
            middle,
            tail: tail_text,
            lines: text.lines().count(),
            total_bytes: text.len(),
        }
        .plain()
    }

    /// The kept text without a terminal's colour codes (`\x1b[31m`), which
    /// coloured output puts inside its words and numbers even through a
    /// pipe (`Total: \x1b[1m3\x1b[0m warnings`): every reader sees the
    /// words a terminal shows.
    fn plain(self) -> Self {
        Clipped {
            head: without_ansi(&self.head).into_owned(),
            middle: self.middle.iter().map(|l| without_ansi(l).into_owned()).collect(),
            tail: without_ansi(&self.tail).into_owned(),
            ..self
        }
    }

    /// Clips an output that the client already clipped as `info` says. The
    /// client is not trusted: its head and tail are clipped again to this
    /// side's limits, and sizes smaller than the text it sent are ignored.
    /// An `info` that does not fit the text falls back to [`Clipped::new`].
    pub fn from_client(text: &str, info: Option<&ClipInfo>, head: usize, tail: usize) -> Self {
        let Some(info) = info.filter(|i| text.is_char_boundary(i.head)) else {
            return Clipped::new(text, head, tail);
        };
        let (start, end) = text.split_at(info.head);
        let counted = text.lines().count();
        // The client's choice of middle lines is held to this side's rule.
        let middle = if info.bytes > text.len() {
            middle_lines(info.middle.iter().map(String::as_str))
        } else {
            Vec::new()
        };
        Clipped {
            head: Clipped::new(start, head, 0).head,
            middle,
            // (`new` puts a text that fits whole into the head.)
            tail: if end.len() <= tail {
                end.to_owned()
            } else {
                Clipped::new(end, 0, tail).tail
            },
            lines: info.lines.clamp(counted.saturating_sub(1), info.bytes.max(text.len())),
            total_bytes: info.bytes.max(text.len()),
        }
        .plain()
    }

    pub fn bytes(&self) -> usize {
        self.head.len() + self.middle.iter().map(|l| l.len() + 1).sum::<usize>() + self.tail.len()
    }

    /// The kept text: the head, then the middle's lines between `…` lines
    /// (where some are kept), then the tail on a line of its own.
    pub fn kept_text(&self) -> String {
        if self.tail.is_empty() {
            self.head.clone()
        } else if self.middle.is_empty() {
            format!("{}\n{}", self.head, self.tail)
        } else {
            format!("{}\n…\n{}\n…\n{}", self.head, self.middle.join("\n"), self.tail)
        }
    }

    /// Lines kept, head, middle, then tail, each as a terminal shows it
    /// ([`as_shown`]).
    pub fn kept_lines(&self) -> impl Iterator<Item = &str> {
        self.head
            .lines()
            .chain(self.middle.iter().map(String::as_str))
            .chain(self.tail.lines())
            .map(as_shown)
    }

    /// The line that best explains a failure: a crash report's message
    /// (see [`crash_line`]), else the first line that looks like an error,
    /// else the last non-empty one.
    ///
    /// Lines that explain nothing ([`explains_nothing`]) are passed over:
    /// empty lines, rules, progress dots, headings, banners, notices,
    /// result summaries and counts, lines an autofix marked fixed, and a
    /// wrapper's own word that the command it ran failed (`make: *** [test]
    /// Error 1`), which is taken only when nothing else is left. Where no
    /// line has an error word, a line in the words of a failure is the
    /// runner's stated reason (`Incomplete: fit() or fdescribe() was found`
    /// under `1 spec, 0 failures`).
    pub fn key_line(&self) -> Option<&str> {
        self.failure_line()
            .or_else(|| self.last_told())
            .or_else(|| self.last_kept(|l| !says_nothing(l) && !fixed_line(l) && !reports_a_pass(l)))
            .or_else(|| self.last_kept(|l| !reports_a_pass(l)))
    }

    /// The last kept line that tells something beyond a summary, a banner
    /// or one test's pass: where a run ended (`… is the first bad commit`).
    /// A test's pass tells nothing of why a run failed (a run that
    /// `timeout` killed shows only the tests that passed before).
    pub fn last_told(&self) -> Option<&str> {
        self.last_kept(|l| !explains_nothing(l) && !reports_a_pass(l))
    }

    /// The last kept line, as shown and trimmed, that is not empty and that
    /// `keep` takes.
    fn last_kept(&self, keep: impl Fn(&str) -> bool) -> Option<&str> {
        self.tail
            .lines()
            .rev()
            .chain(self.head.lines().rev())
            .map(|l| as_shown(l).trim())
            .find(|l| !l.is_empty() && keep(l))
    }

    /// The line of [`Self::key_line`] that says what failed: a crash
    /// report's message, a line with an error word, or a stated reason;
    /// none where no kept line says so (a failing line a pipe's `tail` cut
    /// off leaves only lines that passed).
    pub fn failure_line(&self) -> Option<&str> {
        let lines: Vec<&str> = self.kept_lines().collect();
        let told = told_lines(&lines);
        crash_line(&lines)
            .or_else(|| told.iter().copied().find(|l| finding_line(l) && !fixed_line(l)))
            .or_else(|| {
                told.iter()
                    .copied()
                    .find(|l| LineSays::of(l).error_word() && !explains_nothing(l))
            })
            .or_else(|| told.iter().copied().find(|l| stated_reason(l) && !explains_nothing(l)))
    }

    /// Whether OpenCode cut this output and saved the whole elsewhere
    /// ("... output truncated; full content saved to …"): then the command
    /// printed more than the lines held.
    pub fn cut_by_client(&self) -> bool {
        const NOTE: &str = "output truncated; full content saved to";
        self.tail.contains(NOTE) || self.head.contains(NOTE)
    }

    /// Lines worth showing from a long successful output: a count of
    /// warnings (`warning: `x` (lib) generated 3 warnings`), else the first
    /// error or warning.
    pub fn salient(&self) -> Option<&str> {
        let warns = |l: &str| l.to_ascii_lowercase().contains("warning");
        let lines: Vec<&str> = self.kept_lines().collect();
        let told = told_lines(&lines);
        told.iter()
            .copied()
            .find(|l| warns(l) && l.contains(" generated ") && l.chars().any(|c| c.is_ascii_digit()))
            .or_else(|| told.iter().copied().find(|l| LineSays::of(l).error_word() || warns(l)))
    }
}

/// A line that states that one test or check passed: it heads no failure.
/// The verdict leads or ends the line, bare or framed (`ok 1 …`, `PASS …`,
/// `[       OK ] Ring.Full (0 ms)`, `… ... ok`, `Format Short Duration   |
/// PASS |`).
pub fn reports_a_pass(line: &str) -> bool {
    static FRAMED: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"(?i)^\[\s*(?:ok|pass(?:ed)?)\s*\]|[\s|:\[(]\s*(?:ok|pass(?:ed)?)\s*[|\])]?$")
            .expect("a valid pattern")
    });
    let l = line.trim();
    ["ok ", "PASS ", "PASSED ", "✓", "✔"].iter().any(|p| l.starts_with(p))
        || [" ok", " PASSED", " passed", "... ok"].iter().any(|s| l.ends_with(s))
        || FRAMED.is_match(l)
}

/// A line without the process marker a tool puts before each line of its
/// report (valgrind's `==5542== ` and `--5542-- `): the marker, and the rest.
fn unmarked(line: &str) -> (&str, &str) {
    static MARKER: std::sync::LazyLock<regex::Regex> =
        std::sync::LazyLock::new(|| regex::Regex::new(r"^(?:==|--)\d+(?:==|--) ?").expect("a valid pattern"));
    match MARKER.find(line) {
        Some(m) => (m.as_str().trim_end(), &line[m.end()..]),
        None => ("", line),
    }
}

/// `lines` without the frames of a stack trace ([`frame_line`]) and a
/// program's start-up banner: the paragraph (lines
/// with words, under the same process marker) that holds a copyright line
/// among the first [`BANNER_WITHIN`] lines (`==5542== Memcheck, a memory
/// error detector` / `Copyright (C) 2002-2022, …` / `Using
/// Valgrind-3.19.0 …`). A banner says what the program is, never what
/// happened: its words (`error detector`) are no error. A line that says
/// something failed (`missing copyright header`) is no copyright line.
fn told_lines<'a>(lines: &[&'a str]) -> Vec<&'a str> {
    const BANNER_WITHIN: usize = 10;
    static COPYRIGHT: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"(?i)\bcopyright\b|\(c\)\s*(?:19|20)\d\d").expect("a valid pattern")
    });
    let lines: Vec<&str> = lines.iter().copied().filter(|l| !frame_line(l)).collect();
    let Some(at) = lines
        .iter()
        .take(BANNER_WITHIN)
        .position(|l| COPYRIGHT.is_match(l) && !LineSays::of(l).anything())
    else {
        return lines;
    };
    let marker = unmarked(lines[at]).0;
    let same = |l: &&str| unmarked(l).0 == marker && has_words(unmarked(l).1);
    let start = lines[..at].iter().rposition(|l| !same(l)).map_or(0, |i| i + 1);
    let end = lines[at..]
        .iter()
        .position(|l| !same(l))
        .map_or(lines.len(), |i| at + i);
    lines[..start].iter().chain(&lines[end..]).copied().collect()
}

/// `text` without terminal colour codes (`\x1b[31m`, `\x1b[0m`).
pub fn without_ansi(text: &str) -> std::borrow::Cow<'_, str> {
    static ANSI: std::sync::LazyLock<regex::Regex> =
        std::sync::LazyLock::new(|| regex::Regex::new(r"\x1b\[[0-9;?]*[A-Za-z]").expect("a valid pattern"));
    ANSI.replace_all(text, "")
}

/// A line as a terminal shows it: where a program wrote over it with
/// carriage returns (a progress counter: `\rTried: 1 …\rTried: 4 …`), the
/// last text written, not every draft joined; a line that ends in `\r`
/// (CRLF) is the text before it.
pub fn as_shown(line: &str) -> &str {
    line.rsplit('\r').find(|s| !s.trim().is_empty()).unwrap_or(line)
}

/// Whether `line` says nothing of what failed: a rule, progress dots
/// (`.FF.`), a diff's legend (`+ expected - actual`), a heading over what follows (`Failures:`, `There were 2
/// failures:`, `1) Failure:`, `FAILURES!`), a package manager's notice or
/// the echo of the script it runs (`> prove -l t/`), make's notice of the
/// folder it runs in.
fn says_nothing(line: &str) -> bool {
    static HEADING: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"(?i)^(?:\d+\) )?(?:there (?:was|were) \d+ \w+|failures?|errors?|failed examples|failures \(\d+\))\s*:?$|^FAILURES!*$|^\d+\) (?:Failure|Error):$")
            .expect("a valid pattern")
    });
    // make's notice of the folder it runs in (`make[1]: Leaving directory '/p/csrc'`).
    static MAKE_DIRECTORY: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"^g?make(?:\[\d+\])?: (?:Entering|Leaving) directory ").expect("a valid pattern")
    });
    // A diff's legend (`+ expected - actual`, `Difference (- actual, +
    // expected):`): which side is which, not what differs.
    static LEGEND: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"(?i)^(?:difference|diff)?\W*(?:[-+]\s*(?:expected|actual|received|got|want)\W*){2}$")
            .expect("a valid pattern")
    });
    // What a run cost (`Time: 116ms; Memory: 6MB`).
    static COST: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"(?i)^(?:(?:time|memory|duration|elapsed)\s*:\s*[\d.:]+\s*[a-z]*\s*[,;]?\s*)+$")
            .expect("a valid pattern")
    });
    let l = line.trim();
    !has_words(l)
        || LEGEND.is_match(l)
        || COST.is_match(l)
        || l.chars().all(|c| matches!(c, '.' | 'F' | 'E' | 'S' | '*' | 'x' | ' '))
        || HEADING.is_match(l)
        || l.starts_with("npm notice")
        || MAKE_DIRECTORY.is_match(l)
        || l.starts_with("npm WARN")
        || (l.starts_with("> ") && !l.contains("Error"))
}

/// Whether `line` is a runner's stated reason for failing where nothing
/// counted failed: a focused test (`Incomplete: fit() or fdescribe() was
/// found`, `.only`), a bail-out, an interruption.
fn stated_reason(line: &str) -> bool {
    let l = line.to_ascii_lowercase();
    [
        "incomplete",
        "focused",
        "fit()",
        "fdescribe",
        ".only",
        "bail",
        "aborted",
        "interrupted",
    ]
    .iter()
    .any(|w| l.contains(w))
}

/// Whether `line` explains no failure, whatever its words: it says
/// nothing ([`says_nothing`]), it is a wrapper's word ([`wrapper_line`]), a
/// result summary or count ([`summary_line`]), a banner over a block
/// ([`banner_line`]), or a line an autofix marked fixed ([`fixed_line`]).
/// The one rule for a call's key line and for what the model may quote.
pub fn explains_nothing(line: &str) -> bool {
    says_nothing(line)
        || wrapper_line(line)
        || summary_line(line)
        || banner_line(line)
        || fixed_line(line)
        || frame_line(line)
}

/// Whether `line` is a frame of a stack trace or a line of a code excerpt:
/// where a failure passed through or stands, not what it was (`at assert (file:///…/index.mjs:33:8)`, `File
/// "/usr/lib/python3.11/unittest/case.py", line 1253, in
/// assertMultiLineEqual`, `…/testing.zig:93:17: 0x124ee44 in expectEqual
/// (std.zig)`, `#0 0x4f5a in main t.c:9`, `main.go:12 +0x1d`).
pub fn frame_line(line: &str) -> bool {
    static FRAME: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(concat!(
            r"^\s*at\s+(?:async\s+)?\S*(?:\s+\(.*:\d+(?::\d+)?\)|:\d+(?::\d+)?|\(\w+\.java:\d+\)|\(Native Method\))$",
            r#"|^\s*File "[^"]+", line \d+(?:, in \S+)?$"#,
            r"|:\d+(?::\d+)?: 0x[0-9a-fA-F]+ in \S",
            r"|^\s*#\d+\s+0x[0-9a-fA-F]+ in \S",
            r"|^\s*\S+\.go:\d+ \+0x[0-9a-fA-F]+$",
        ))
        .expect("a valid pattern")
    });
    // A line of a code excerpt under its line number's rule (`17 │ return
    // undefined;`, `> 12 | x = 1`); a table whose columns go on is no excerpt
    // (` 5 | ERROR | [x] Opening brace …`).
    static EXCERPT: std::sync::LazyLock<regex::Regex> =
        std::sync::LazyLock::new(|| regex::Regex::new(r"^\s*>?\s*\d+\s*[│|](.*)$").expect("a valid pattern"));
    FRAME.is_match(line) || EXCERPT.captures(line).is_some_and(|c| !c[1].contains(['|', '│']))
}

/// Whether `line` says what failed and explains it: a line in the words of
/// a failure ([`LineSays::quotable`]) that is not one of
/// [`explains_nothing`]'s. The lines a model's finding may quote.
pub fn explains(line: &str) -> bool {
    LineSays::quotable(line) && !explains_nothing(line)
}

/// Whether `line` is a result summary or a count: `2 tests, 1 passed, 1
/// failed`, `test cases: 8 | 7 passed | 1 failed`, `0 features passed, 1
/// failed, 0 skipped`, `Tests run: 6, Failures: 2`, `1 failing`, `FAILED
/// (failures=1)`, `Errored scenarios:`, `# of unexpected failures  1`
/// (DejaGnu, SRFI-64). Two counts make a summary; one
/// does where little else is on the line.
pub fn summary_line(line: &str) -> bool {
    static COUNT: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(
            r"(?i)\b\d+\s+(?:\w+\s+)?(?:passed|failed|failures?|errors?|errored|skipped|pending|tests?|specs?|examples?|scenarios?|features?|steps?|test cases?|cases?|assertions?|passing|failing|passes|succeeded|broken|ok|undefined|warnings?|offenses?|problems?|issues?|violations?|findings?|files?|lines?)\b|\b(?:passed|failed|failures?|errors?|skipped|pending|tests?(?: run)?|specs?|examples?|scenarios?|cases?|checks?|assertions?|ok|pass|fail|total)(?:\s*:\s*|=)\d+",
        )
        .expect("a valid pattern")
    });
    static LEFT: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"(?i)\b(?:in|took|time|finished|total|of|and|with|were|was|ran|result|summary|encountered|found|collected|executed|selected|expected|unexpected|info|all|[a-z]|[\d.]+\s*m?s(?:ec(?:onds?)?)?)\b|[^A-Za-z]+")
            .expect("a valid pattern")
    });
    static HEADER: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"(?i)^(?:errored|failed|failing|passed|skipped|pending) (?:scenarios|steps|features|tests|specs|examples|test cases)\s*:$|^\[\s*(?:PASSED|FAILED)\s*\]\s+\d+ tests?(?:\(s\))?|^#\s+of\s+(?:expected|unexpected|unresolved|untested|unsupported|skipped)\s+\w+\s+\d+$")
            .expect("a valid pattern")
    });
    let l = line.trim();
    if HEADER.is_match(l) {
        return true;
    }
    let counts = COUNT.find_iter(l).count();
    if counts >= 2 {
        return true;
    }
    if counts == 0 {
        return false;
    }
    // One count: a summary where, without it, no word of substance is left
    // (`1 failing`, `FAILED (failures=1)`, `=== 3 failed in 0.2s ===`).
    let rest = COUNT.replace_all(l, " ");
    let rest = LEFT.replace_all(&rest, " ");
    rest.split_whitespace()
        .filter(|w| {
            !matches!(
                w.to_ascii_uppercase().as_str(),
                "FAILED"
                    | "FAIL"
                    | "OK"
                    | "PASSED"
                    | "PASS"
                    | "ERROR"
                    | "TOTAL"
                    | "RESULTS"
                    | "RESULT"
                    | "SUCCESS"
                    | "FAILURE"
                    | "SUCCEEDED"
            )
        })
        .count()
        == 0
}

/// Whether `line` is a banner over a block of output rather than what
/// happened in it: a line framed by rules (`== [queries/orders.sql] FAIL`,
/// `===== FAILURES =====`, `---- test_x ----`, `**** Suite ****`).
pub fn banner_line(line: &str) -> bool {
    static BANNER: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(
            r"^(?:={2,}|-{4,}|\*{3,}|#{3,}|_{3,}|~{3,}|\+{3,})\s|\s(?:={2,}|-{4,}|\*{3,}|#{3,}|_{3,}|~{3,}|\+{3,})$",
        )
        .expect("a valid pattern")
    });
    BANNER.is_match(line.trim())
}

/// Whether `line` reports what an autofix fixed in the same run
/// (`app.rb:3:5: C: [Corrected] Style/StringLiterals: …`, `Fixed 2 files`,
/// `A TOTAL OF 4 ERRORS WERE FIXED IN 2 FILES`, `4 offenses corrected`):
/// never what failed.
pub fn fixed_line(line: &str) -> bool {
    static FIXED: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(
            r"(?i)\[(?:corrected|fixed|autocorrected|auto-?fixed|fixable)\]|^\s*(?:fixed|fixing|autofixed|corrected)\b|\b(?:were|was|been) (?:auto-?)?(?:fixed|corrected)\b|\b\d+\s+(?:\w+\s+)?(?:fixed|corrected|autocorrected)\b",
        )
        .expect("a valid pattern")
    });
    FIXED.is_match(line)
}

/// Whether `line` says that a run ran no test: `No tests ran`, `[no tests
/// to run]`, `0 specs, 0 failures`, `[  PASSED  ] 0 tests.`, `Ran 0 tests`,
/// `collected 0 items`, `No tests found`, `0 passing`.
pub fn no_tests_line(line: &str) -> bool {
    static NONE: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(
            r"(?i)\bno (?:tests?|specs?|examples?|scenarios?|features?|test (?:cases?|files?|suites?))(?: were)? (?:ran|run|to run|found|executed|collected|selected|matched|match)\b|^\W*(?:ran|executed|collected|running|found) 0 (?:tests?|items?|specs?|examples?|test cases?)\b|^\W*0 (?:tests?|specs?|examples?|scenarios?|features?|test cases?|passing)\b[^1-9]*$|\[\s*PASSED\s*\]\s+0 tests?\b|\b0 tests? (?:ran|run|executed|selected|collected)\b|\bfind any (?:matching )?(?:tests?|specs?|examples?|scenarios?)\b|\bno matching (?:tests?|specs?|examples?|scenarios?)\b",
        )
        .expect("a valid pattern")
    });
    static TIMING: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"\(?\b(?:in )?[\d.]+\s*(?:ms|s|sec|seconds?)\b\)?").expect("a valid pattern")
    });
    NONE.is_match(TIMING.replace_all(line, "").trim())
}

/// Whether `line` is a wrapper's own word that the command it ran failed,
/// which says less than that command's own lines above it.
fn wrapper_line(line: &str) -> bool {
    static WRAPPER: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(
            r"^(?:g?make(?:\[\d+\])?: \*\*\* |rake aborted!|Command failed with status|npm ERR! |npm error |error Command failed with exit code|ELIFECYCLE|Tasks: TOP|\(See full trace|Error: Process completed with exit code|ERROR: .* returned non-zero exit status)",
        )
        .expect("a valid pattern")
    });
    // A program's echo of a child's status (`collect2: error: ld returned
    // 1 exit status`, `Process finished with exit code 1`, `error: the
    // following test command failed with exit code 1:`, `task: Failed to
    // run task "check": …`, nimble's `Error: execution of an external
    // program failed: '…'`, an agent's own `; echo "exit: $?"`): the
    // child's own lines say what went wrong.
    static STATUS_ECHO: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(
            r"(?i)\b(?:returned|exited with|finished with|failed with)(?: exit)?(?: code| status)?\s+-?\d+(?: exit status)?\.?:?$|^\S+: failed to run\b|\bexecution of an external program failed\b|^exit(?: code| status)?\s*[:=]\s*-?\d+$",
        )
        .expect("a valid pattern")
    });
    WRAPPER.is_match(line.trim()) || STATUS_ECHO.is_match(line.trim())
}

/// Words (lower case) of a line that says something went wrong: an error.
pub const ERROR_WORDS: &[&str] = &[
    "error",
    "fail",
    "panic",
    "exception",
    "fatal",
    "denied",
    "not found",
    "cannot",
    "traceback",
    "undefined reference",
    "undefined symbol",
    "segmentation fault",
    "core dumped",
];

/// Further words (lower case) of a line that says something failed: the
/// wording of a failed assertion, a missing name, a timeout.
pub const FAILURE_WORDS: &[&str] = &[
    "assert",
    "expected",
    "!=",
    "mismatch",
    "undefined",
    "undeclared",
    "missing",
    "no such",
    "invalid",
    "unexpected",
    "timed out",
    "timeout",
    "not ok",
    "aborted",
    "segmentation",
    "incomplete",
    "focused",
];

/// What one line of output says about failure, by its words. The one
/// classifier every reader uses: the kept middle of an output, a call's key
/// line, the lines the model may quote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineSays {
    /// No word of [`ERROR_WORDS`] or [`FAILURE_WORDS`].
    Nothing,
    /// A compiler's note, warning, hint or help that uses such words, and
    /// not the word "error": not itself a failure.
    Remark {
        /// Whether one of its words is an [`ERROR_WORDS`] one.
        error_word: bool,
    },
    /// The wording of a failed assertion, a missing name, a timeout.
    Failure,
    /// An error: a word of [`ERROR_WORDS`].
    Error,
}

impl LineSays {
    pub fn of(line: &str) -> LineSays {
        // A command's options name errors without saying one happened
        // (long options such as `--error-exitcode=1` and `--fail-fast`, a
        // compiler's `-Werror` and `-fno-exceptions`): an echoed command
        // line is no error. A diff's `-expected` line keeps its word.
        static OPTION: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
            regex::Regex::new(r"(?:^|\s)(?:--[A-Za-z]|-W[A-Za-z]|-f[a-z]+[-=])[\w=.,:/-]*").expect("a valid pattern")
        });
        let l = OPTION.replace_all(line, " ").to_ascii_lowercase();
        let error_word = ERROR_WORDS.iter().any(|k| l.contains(k));
        if !error_word && !FAILURE_WORDS.iter().any(|k| l.contains(k)) {
            return LineSays::Nothing;
        }
        let remark = ["note:", "warning:", "hint:", "help:"].iter().any(|k| l.contains(k)) && !l.contains("error");
        match (remark, error_word) {
            (true, error_word) => LineSays::Remark { error_word },
            (false, true) => LineSays::Error,
            (false, false) => LineSays::Failure,
        }
    }

    /// Whether the line says that something went wrong, in a remark or not.
    pub fn anything(self) -> bool {
        self != LineSays::Nothing
    }

    /// Whether the line has an error word, in a remark or not.
    pub fn error_word(self) -> bool {
        matches!(self, LineSays::Error | LineSays::Remark { error_word: true })
    }

    /// Whether the line says that something failed, and is not a remark.
    pub fn failed(self) -> bool {
        matches!(self, LineSays::Error | LineSays::Failure)
    }

    /// Whether `line` says what failed in words enough to quote: a line an
    /// answer may quote, and one a long output is shown around.
    pub fn quotable(line: &str) -> bool {
        has_words(line) && LineSays::of(line).failed()
    }
}

/// Whether `line` is a verdict that a test or check failed, in a runner's
/// words: `!!!!! test failed`, `FAIL: test_x`, `not ok 3 - parse`, `2
/// checks failed`, a test's line that ends in its verdict (`Test: wraps
/// ...FAILED`, `test_x (t.T) ... FAIL`); not a count of none (`0 tests
/// failed`, `[ FAIL 0 | PASS 3 ]`).
pub fn says_a_test_failed(line: &str) -> bool {
    // The verdict last, in capitals, after the dots, dashes or column rule
    // that lead to it from the test's name, and before what a runner may
    // put after it: a closing rule, the failure's number, the time it took
    // and its exit status (`Parse Hours | FAIL |`, `calls zero freezing
    // FAILED [4]`, `3/4 netmask FAIL 0.01s exit status 1`).
    static LAST: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(concat!(
            r"\w[\w)\]]*\s*(?:\.{2,}|\s-+|\s)\s*\|?\s*(?:FAILED|FAIL|FAILURE|ERROR)\s*!*",
            r"(?:\s*\||\s*\[\d+\]|\s+\(?[\d.]+\s*m?s\)?(?:\s+exit status \d+)?)?$"
        ))
        .expect("a valid pattern")
    });
    static VERDICT: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(
            r"(?i)^\W*(?:fail(?:ed|ure)?|not ok)\b|\b(?:tests?|checks?|assertions?|cases?|specs?|examples?)\s+(?:(?:has|have)\s+)?failed\b",
        )
        .expect("a valid pattern")
    });
    static COUNTED: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"(?i)\b[1-9]\d*\s+(?:\w+\s+)?(?:failed|failures?|failing)\b").expect("a valid pattern")
    });
    // `[ FAIL 0 | WARN 0 | SKIP 0 | PASS 3 ]` (testthat), `failures: 0`.
    static NONE: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(
            r"(?i)\bfail(?:ed|ures?|ing)?\s*[:=]?\s*0(?:$|[^\d.])|(?:^|[^\d.])0\s+(?:of\s+\d+\s+)?(?:\w+\s+)?(?:failed|failures?|failing)\b",
        )
        .expect("a valid pattern")
    });
    let l = as_shown(line).trim();
    // TAP's `not ok 3 - later # TODO` is a test expected to fail.
    let todo = ["# todo", "# skip"].iter().any(|d| l.to_ascii_lowercase().contains(d));
    // A line with a colon and no dots is a message that may end in any word
    // (`error: see FAILED`); the dots lead from a test's name to its verdict.
    let last = LAST.is_match(l) && (l.contains("...") || !l.contains(':'));
    let verdict = VERDICT.is_match(l) || last;
    verdict && (!summary_line(l) || COUNTED.is_match(l)) && !NONE.is_match(l) && !no_tests_line(l) && !todo
}

/// Whether a verdict line names what failed: a word beyond the verdict's
/// own and outside brackets (`error: Test failed`, `!!!!! test failed` and
/// zig's `FAIL (TestExpectedEqual)` name nothing).
fn names_one(line: &str) -> bool {
    // What a runner puts in brackets after a verdict is its kind or time
    // (`FAIL (TestExpectedEqual)`, `(0 ms)`), not a name.
    static BRACKETED: std::sync::LazyLock<regex::Regex> =
        std::sync::LazyLock::new(|| regex::Regex::new(r"\([^()]*\)").expect("a valid pattern"));
    BRACKETED
        .replace_all(line, " ")
        .split(|c: char| !c.is_alphanumeric() && c != '_')
        .filter(|w| w.chars().filter(|c| c.is_alphanumeric()).count() >= 2)
        .any(|w| {
            !matches!(
                w.to_ascii_lowercase().as_str(),
                "error"
                    | "errors"
                    | "fail"
                    | "failed"
                    | "failure"
                    | "failures"
                    | "test"
                    | "tests"
                    | "check"
                    | "checks"
                    | "not"
                    | "ok"
                    | "has"
                    | "have"
                    | "some"
                    | "the"
                    | "run"
                    | "status"
            )
        })
}

/// The lines of `lines` that give one test's or check's verdict of failure
/// ([`says_a_test_failed`], not a summary that counts them), trimmed, each
/// once where it stands last: a runner that names each failure as it runs
/// and again in a list at the end gives that list last.
pub fn verdict_lines<'a>(lines: impl DoubleEndedIterator<Item = &'a str>) -> Vec<&'a str> {
    let mut last: Vec<&str> = Vec::new();
    for line in lines.rev().map(|l| as_shown(l).trim()) {
        // A heading over a list of them (`Failed Tests (2):`) is none, nor
        // a verdict that names nothing (`error: Test failed`).
        let heading = line.ends_with(':');
        if says_a_test_failed(line) && !summary_line(line) && !heading && names_one(line) && !last.contains(&line) {
            last.push(line);
        }
    }
    last.reverse();
    last
}

/// Whether `line` is a checker's finding at a place in a file, not a
/// warning or a note: `app/report.py:1:1: F401 'os' imported but unused`,
/// `calc.c:4:5: error: …`. What a failed lint or build found is such a
/// line, where a wrapper's own lines (`nox > uv binary not found.`,
/// `Command flake8 app failed`) only say that it ran.
pub fn finding_line(line: &str) -> bool {
    static FINDING: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"^[^\s:]+\.[A-Za-z0-9]{1,5}:\d+(?::\d+)?:\s*\S").expect("a valid pattern")
    });
    let lower = line.to_ascii_lowercase();
    FINDING.is_match(line) && !lower.contains("warning") && !lower.contains(": note:") && !lower.contains(": info")
}

/// Whether `line` says that a test or a check failed: a test's verdict
/// ([`says_a_test_failed`]), a diagnostic of an error (`calc.c:10:5: error:
/// …`, as a checker prints it whatever its exit status), a coverage
/// threshold missed, a memory checker's errors (`ERROR SUMMARY: 2 errors`),
/// a path's verdict (`tests/a.scm:5: FAIL slugify`).
pub fn says_a_check_failed(line: &str) -> bool {
    static CHECK: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(concat!(
            r"^[^\s:]+:\d+(?::\d+)?:\s*(?:fatal\s+)?error\b",
            r"|^[^\s:]+:\d+(?::\d+)?:\s*(?:FAIL|FAILED|FAILURE)\b",
            r"|(?i:\bcoverage\b.*\b(?:does not meet|is less than|not reached|below (?:the )?(?:threshold|minimum)))",
            r"|(?i:^coverage failure\b)",
            r"|ERROR SUMMARY: [1-9]",
            // A runner of several checks on one that failed: nox's `Session
            // lint failed.` and `* lint: failed`, tox's `py311: FAIL code 1`.
            r"|(?i:\b(?:session|environment|job|step|stage|task|target)\s+[\w.:-]+\s+failed\b)",
            r"|(?:^|[\s*])[\w.-]+:\s+(?:failed\b|FAIL code \d+)",
        ))
        .expect("a valid pattern")
    });
    let line = as_shown(line).trim();
    says_a_test_failed(line) || CHECK.is_match(line) || finding_line(line)
}

/// Whether `line` shows a request answered with an error: an HTTP status
/// line of 400 or more (`HTTP/1.1 500 Internal Server Error`) or such a
/// status with its reason (`<h1>502 Bad Gateway</h1>`).
pub fn says_a_request_failed(line: &str) -> bool {
    static STATUS: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(concat!(
            r"^HTTP/\d(?:\.\d)?\s+[45]\d\d\b",
            r"|\b[45]\d\d\s+(?:Internal Server Error|Bad Request|Not Found|Unauthorized|Forbidden|Method Not Allowed",
            r"|Conflict|Gone|Unprocessable (?:Entity|Content)|Too Many Requests|Service Unavailable|Bad Gateway",
            r"|Gateway Time-?out|Not Implemented|Payload Too Large)\b",
        ))
        .expect("a valid pattern")
    });
    STATUS.is_match(as_shown(line).trim())
}

/// Whether `line` has letters or digits enough to say anything.
pub fn has_words(line: &str) -> bool {
    line.chars().filter(|c| c.is_alphanumeric()).count() >= 4
}

/// The message of a crash report a runtime printed: the exception of
/// Python's last traceback (`KeyError: 'quantity'`, not `Traceback (most
/// recent call last):`), Rust's panic message, Go's `panic:` line, a
/// sanitizer's report, a process killed by a signal (`Segmentation fault
/// (core dumped)`, also in a wrapper's line), a JavaScript error above its
/// `at` frames.
pub fn crash_line<'a>(lines: &[&'a str]) -> Option<&'a str> {
    static PYTHON: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"^(?:\w+\.)*\w*(?:Error|Exception|Exit|Interrupt|Warning|Iteration|Failure)(?::.*)?$")
            .expect("a valid pattern")
    });
    static JAVASCRIPT: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"^(?:Uncaught )?\w*(?:Error|Exception)(?: \[\w+\])?: .+").expect("a valid pattern")
    });
    if let Some(at) = lines
        .iter()
        .rposition(|l| l.trim_start().starts_with("Traceback (most recent call last):"))
    {
        // Frames are indented; the exception is the first line that is not.
        let exception = lines[at + 1..]
            .iter()
            .find(|l| !l.trim().is_empty() && !l.starts_with(char::is_whitespace));
        if let Some(line) = exception.filter(|l| PYTHON.is_match(l.trim_end())) {
            return Some(line.trim_end());
        }
    }
    // The traceback's head cut away (`… 2>&1 | tail -3`): an exception as
    // the last line, under a frame's indented code.
    let mut ends = lines.iter().enumerate().rev().filter(|(_, l)| !l.trim().is_empty());
    if let (Some((_, last)), Some((_, before))) = (ends.next(), ends.next()) {
        if PYTHON.is_match(last.trim_end()) && last.contains(": ") && before.starts_with(char::is_whitespace) {
            return Some(last.trim_end());
        }
    }
    if let Some(i) = lines.iter().position(|l| l.contains(" panicked at ")) {
        // Since Rust 1.73 the message is on the line after `panicked at file:line:col:`.
        let message = lines.get(i + 1).map(|l| l.trim()).filter(|m| !m.is_empty());
        return Some(match message {
            Some(m) if lines[i].trim_end().ends_with(':') => m,
            _ => lines[i].trim(),
        });
    }
    if let Some(line) = lines.iter().find(|l| l.starts_with("panic: ")) {
        return Some(line.trim_end());
    }
    // A sanitizer's report (`==12==ERROR: AddressSanitizer: heap-buffer-overflow …`),
    // then a process killed by a signal, as the shell or a wrapper says it
    // (`Segmentation fault (core dumped)`, `make: *** [run] Aborted`).
    static SANITIZER: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(
            r"^==\d+==\s*ERROR: \w*Sanitizer\b|^\w*Sanitizer:? (?:DEADLYSIGNAL|SEGV)|^SUMMARY: \w*Sanitizer: ",
        )
        .expect("a valid pattern")
    });
    static SIGNAL: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"\b(?:Segmentation fault|Bus error|Illegal instruction|Floating point exception)(?: \(core dumped\))?\s*$|\bAborted \(core dumped\)\s*$|^Aborted$")
            .expect("a valid pattern")
    });
    if let Some(line) = lines.iter().find(|l| SANITIZER.is_match(l.trim())) {
        return Some(line.trim());
    }
    if let Some(line) = lines.iter().find(|l| SIGNAL.is_match(l.trim())) {
        return Some(line.trim());
    }
    lines
        .windows(2)
        .find_map(|pair| {
            (JAVASCRIPT.is_match(pair[0]) && pair[1].trim_start().starts_with("at ")).then(|| pair[0].trim_end())
        })
        .or_else(|| {
            // A checker's record above the frames where it happened
            // (valgrind: `==12== Invalid write of size 1` over `==12==    at
            // 0x109425: join_words (words.c:40)`).
            lines.windows(2).find_map(|pair| {
                let (record, frame) = (unmarked(pair[0]).1, unmarked(pair[1]).1);
                (!record.starts_with(char::is_whitespace)
                    && LineSays::of(record).failed()
                    && !explains_nothing(record)
                    && frame.starts_with(char::is_whitespace)
                    && frame.trim_start().starts_with("at 0x"))
                .then(|| record.trim_end())
            })
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// cargo-nextest names each failure as it runs, under it libtest's
    /// own line, and again in a list at the end.
    #[test]
    fn the_verdicts_of_an_output_are_its_lines_that_say_one_failed_each_where_it_stands_last() {
        let out = "    Starting 7 tests across 2 binaries\n        FAIL [   0.009s] (1/7) units tests::parses_kibibytes\n    test tests::parses_kibibytes ... FAILED\n    test result: FAILED. 0 passed; 1 failed; 0 ignored\n        PASS [   0.012s] (2/7) units tests::parses_plain_bytes\n     Summary [   0.033s] 7 tests run: 6 passed, 1 failed, 0 skipped\n        FAIL [   0.009s] (1/7) units tests::parses_kibibytes\nerror: test run failed\n";
        assert_eq!(
            verdict_lines(out.lines()),
            [
                "test tests::parses_kibibytes ... FAILED",
                "FAIL [   0.009s] (1/7) units tests::parses_kibibytes"
            ]
        );
    }

    #[test]
    fn the_frames_of_a_stack_trace_explain_nothing() {
        for frame in [
            "    at assert (file:///usr/lib/node_modules/uvu/assert/index.mjs:33:8)",
            "    at Object.<anonymous> (/home/dev/project/test/a.test.js:4:10)",
            "\tat com.acme.CalcTest.testAdd(CalcTest.java:12)",
            "  File \"/root/.pyenv/versions/3.11.7/lib/python3.11/unittest/case.py\", line 1253, in assertMultiLineEqual",
            "/usr/lib/zig/std/testing.zig:93:17: 0x124ee44 in expectEqualInner__func_962 (std.zig)",
            "    #0 0x4f5a3c in join_words /home/dev/project/words.c:40",
            "\t/home/dev/project/stack.go:12 +0x1d",
            "  17 │ return undefined;",
            "> 12 |   const total = items.reduce(add);",
        ] {
            assert!(frame_line(frame) && explains_nothing(frame), "{frame}");
        }
        for reason in [
            "AssertionError: '-1.50' != '-0.50'",
            "src/temp.zig:4:11: error: unused local constant",
            "expected 10, found 0",
            "at least 2 failures were expected",
            " 5 | ERROR | [x] Opening brace of a class must be on the line after",
        ] {
            assert!(!frame_line(reason), "{reason}");
        }
    }

    /// luacheck colours its counts even through a pipe.
    #[test]
    fn the_kept_text_has_no_colour_codes() {
        let coloured = "Checking src/util.lua      \x1b[0m\x1b[32m\x1b[1mOK\x1b[0m\nTotal: \x1b[0m\x1b[31m\x1b[1m3\x1b[0m warnings / \x1b[0m\x1b[0m\x1b[1m0\x1b[0m errors in 3 files\n";
        let kept = Clipped::new(coloured, 4096, 4096);
        assert_eq!(
            kept.kept_text(),
            "Checking src/util.lua      OK\nTotal: 3 warnings / 0 errors in 3 files\n"
        );
        assert!(summary_line(kept.kept_lines().last().unwrap_or_default()));
    }

    #[test]
    fn legends_wrappers_and_labelled_counts_explain_nothing() {
        for nothing in [
            "+ expected - actual",
            "Difference (- actual, + expected):",
            "Expected Fail: 0",
            "INFO 1 error",
            "1 FAILED TEST(S)",
            "task: Failed to run task \"check\": task: Failed to run task \"deadcode\": exit status 3",
            "Error: execution of an external program failed: '/home/dev/project/tests/tfrom_roman '",
            "error: the following test command failed with exit code 1:",
            "collect2: error: ld returned 1 exit status",
            "exit: 1",
            "Time: 116ms; Memory: 6MB",
            "All 2 tests passed.",
            "FOUND 2 ERRORS AFFECTING 2 LINES",
        ] {
            assert!(explains_nothing(nothing), "{nothing}");
        }
        for reason in [
            "- expected 6, + actual 7 in total()",
            "Expected: 6 but was 7",
            "expected 2 to equal 6",
        ] {
            assert!(!explains_nothing(reason), "{reason}");
        }
    }

    #[test]
    fn a_count_of_what_an_autofix_fixed_is_a_fixed_line() {
        for fixed in [
            "A TOTAL OF 4 ERRORS WERE FIXED IN 2 FILES",
            "3 files inspected, 6 offenses detected, 4 offenses corrected",
            "Fixed 2 files",
        ] {
            assert!(fixed_line(fixed), "{fixed}");
        }
        assert!(!fixed_line("FOUND 3 ERRORS AND 1 WARNING AFFECTING 2 LINES"));
        assert!(!fixed_line("test_fixed_point ... FAILED"));
    }

    #[test]
    fn one_classifier_tells_errors_failures_and_remarks_apart() {
        assert_eq!(LineSays::of("building 3 crates"), LineSays::Nothing);
        assert_eq!(
            LineSays::of("src/a.rs:3: error[E0425]: cannot find value"),
            LineSays::Error
        );
        assert!(LineSays::of("AssertionError: 1 != 2").failed());
        assert_eq!(LineSays::of("expected 3, got 4"), LineSays::Failure);
        let remark = LineSays::of("warning: unused variable `failed`");
        assert_eq!(remark, LineSays::Remark { error_word: true });
        assert!(remark.anything() && remark.error_word() && !remark.failed());
        let note = LineSays::of("note: expected type `u32`");
        assert_eq!(note, LineSays::Remark { error_word: false });
        assert!(!note.error_word());
        // A remark that names an error is an error.
        assert_eq!(LineSays::of("note: this error originates in a macro"), LineSays::Error);
        // Options name errors without one happening; a diff's line keeps its word.
        for command in [
            "valgrind --leak-check=full --error-exitcode=1 ./build/test_words",
            "cc -Wall -Werror -fno-exceptions -c calc.c",
            "pytest --maxfail=1 --fail-fast tests/",
        ] {
            assert_eq!(LineSays::of(command), LineSays::Nothing, "{command}");
        }
        assert_eq!(LineSays::of("-expected total"), LineSays::Failure);
        assert_eq!(LineSays::of("cc -Werror x.c: error: bad"), LineSays::Error);
    }

    #[test]
    fn a_start_up_banner_is_no_error_and_a_failing_line_about_a_copyright_is_one() {
        let run = |text: &str| Clipped::new(text, usize::MAX, 0).key_line().map(str::to_owned);
        let banner = "==7== Memcheck, a memory error detector\n==7== Copyright (C) 2002-2022\n==7== \n==7== 9 bytes in 3 blocks are definitely lost\n";
        assert_eq!(
            run(banner).as_deref(),
            Some("==7== 9 bytes in 3 blocks are definitely lost")
        );
        let license = "src/a.c: error: missing copyright header\nsrc/b.c: error: missing copyright header\n";
        assert_eq!(
            run(license).as_deref(),
            Some("src/a.c: error: missing copyright header")
        );
    }

    #[test]
    fn verdicts_that_a_test_failed() {
        for verdict in [
            "!!!!! test failed",
            "FAIL: test_div (test_calc.TestCalc.test_div)",
            "not ok 3 - parse rejects junk",
            "2 checks failed",
            "Some tests have failed",
            "Test: clamp_high ...FAILED",
            "test_div (test_calc.TestCalc.test_div) ... FAIL",
            "  Test: wraps ...FAILED",
            "parse_dates ... ERROR",
            "Parse Hours And Minutes                       | FAIL |",
            "calls zero freezing FAILED [4]",
            "3/4 netmask        FAIL            0.01s   exit status 1",
        ] {
            assert!(says_a_test_failed(verdict), "{verdict}");
        }
        for other in [
            "0 tests failed",
            "4 passed, 0 failed",
            "test_failed_login_is_rejected ... ok",
            "PASSES 5 out of 5 tests",
            "rendering the failure page",
            "[ FAIL 0 | WARN 0 | SKIP 0 | PASS 3 ]",
            "FAILED: 0",
            "not ok 4 - parses leap seconds # TODO not yet",
            "100% tests passed, 0 tests failed out of 3",
            "0 of 3 tests failed",
            "Test: clamp_low ...passed",
            "error: could not compile: see FAILED",
            "BUILD SUCCESSFUL",
        ] {
            assert!(!says_a_test_failed(other), "{other}");
        }
    }

    #[test]
    fn verdicts_that_a_check_or_a_request_failed() {
        for verdict in [
            "tidy.c:10:5: error: Null pointer dereference: p [nullPointer]",
            "/home/dev/project/tests/slug-test.scm:5: FAIL slugify collapses separators",
            "ERROR: Coverage for lines (66.66%) does not meet global threshold (95%)",
            "Coverage failure: total of 77 is less than fail-under=90",
            "FAIL Required test coverage of 90% not reached. Total coverage: 77.00%",
            "==4242== ERROR SUMMARY: 2 errors from 2 contexts (suppressed: 0 from 0)",
            "Test: wraps ...FAILED",
            "nox > Session lint failed.",
            "nox > * lint: failed",
            "  py311: FAIL code 1 (0.52 seconds)",
            "app/report.py:1:1: F401 'os' imported but unused",
        ] {
            assert!(says_a_check_failed(verdict), "{verdict}");
        }
        for other in [
            "==4242== ERROR SUMMARY: 0 errors from 0 contexts (suppressed: 0 from 0)",
            "calc.c:4:1: warning: unused variable 'x' [-Wunused-variable]",
            "Coverage: 97% of lines",
            "error handling is tested in tests/test_errors.py",
            "nox > * tests: success, took 2 seconds",
            "tests/test_x.py:10: DeprecationWarning: use y",
        ] {
            assert!(!says_a_check_failed(other), "{other}");
        }
        for answer in [
            "HTTP/1.1 500 Internal Server Error",
            "<html><body><h1>500 Internal Server Error</h1></body></html>",
            "404 Not Found",
        ] {
            assert!(says_a_request_failed(answer), "{answer}");
        }
        for other in ["HTTP/1.1 200 OK", "served 500 requests", "status: ok"] {
            assert!(!says_a_request_failed(other), "{other}");
        }
    }

    #[test]
    fn summaries_banners_and_fixes_explain_nothing() {
        for notice in [
            "make: Leaving directory '/p/csrc'",
            "make[2]: Entering directory '/home/dev/project/build'",
        ] {
            assert!(explains_nothing(notice), "{notice}");
        }
        for summary in [
            "0 features passed, 1 failed, 0 skipped",
            "2 tests, 1 passed, 1 failed",
            "test cases: 8 | 7 passed | 1 failed",
            "Tests run: 6, Failures: 2, Errors: 0",
            "1 failing",
            "FAILED (failures=1)",
            "Errored scenarios:",
            "1 spec, 0 failures",
            "=== 3 failed, 5 passed in 0.21s ===",
        ] {
            assert!(summary_line(summary) && explains_nothing(summary), "{summary}");
        }
        for banner in [
            "== [queries/orders.sql] FAIL",
            "===== FAILURES =====",
            "---- test_total ----",
        ] {
            assert!(banner_line(banner) && explains_nothing(banner), "{banner}");
        }
        assert!(fixed_line(
            "app.rb:3:5: C: [Corrected] Style/StringLiterals: Prefer single quotes"
        ));
        assert!(explains_nothing("make: *** [Makefile:18: test] Error 124"));
        for failure in [
            "test_calc.c:9: average(1, 2, 4) = 2.000000, expected 2.333333",
            "AssertionError: 3 != 4",
            "Expected 5 to equal 4.",
            "error: 2 passed arguments but 3 expected",
            "stats_test.go:12: Mean([1 2 3]) = 1, want 2: assertion failed",
            "app.rb:7:3: W: Lint/UselessAssignment: Useless assignment to variable - x.",
        ] {
            assert!(!explains_nothing(failure), "{failure}");
        }
        assert!(explains("AssertionError: 3 != 4") && !explains("2 tests, 1 passed, 1 failed"));
    }

    #[test]
    fn runs_that_ran_no_test_say_so() {
        for none in [
            "No tests ran",
            "ok  \texample.com/stats\t0.002s [no tests to run]",
            "0 specs, 0 failures",
            "[  PASSED  ] 0 tests.",
            "Ran 0 tests in 0.000s",
            "collected 0 items",
            "No tests found",
            "0 passing (1ms)",
            "No specs found",
        ] {
            assert!(no_tests_line(none), "{none}");
        }
        for some in [
            "1 spec, 0 failures",
            "Ran 10 tests in 0.1s",
            "[  PASSED  ] 3 tests.",
            "10 passing (2ms)",
        ] {
            assert!(!no_tests_line(some), "{some}");
        }
    }

    #[test]
    fn a_key_line_is_the_stated_reason_not_the_summary_nor_a_fix() {
        let jasmine = "Randomized with seed 1\nStarted\n.\n\n\n1 spec, 0 failures\nFinished in 0.006 seconds\nIncomplete: fit() or fdescribe() was found\nRandomized with seed 1 (jasmine --random=true --seed=1)\n";
        assert_eq!(
            Clipped::new(jasmine, 4096, 0).key_line(),
            Some("Incomplete: fit() or fdescribe() was found")
        );
        let rubocop = "Inspecting 1 file\nW\n\nOffenses:\n\napp.rb:1:1: C: [Corrected] Style/FrozenStringLiteralComment: Missing frozen string literal comment.\napp.rb:7:3: W: Lint/UselessAssignment: Useless assignment to variable - x.\n\n1 file inspected, 2 offenses detected, 1 offense corrected\n";
        assert_eq!(
            Clipped::new(rubocop, 4096, 0).key_line(),
            Some("app.rb:7:3: W: Lint/UselessAssignment: Useless assignment to variable - x.")
        );
        let segfault = "cc -o app app.c\n./app\nmake: *** [Makefile:5: run] Segmentation fault (core dumped)\n";
        assert_eq!(
            Clipped::new(segfault, 4096, 0).key_line(),
            Some("make: *** [Makefile:5: run] Segmentation fault (core dumped)")
        );
        let asan = "=================================================================\n==4242==ERROR: AddressSanitizer: heap-buffer-overflow on address 0x602000000014\nREAD of size 4 at 0x602000000014 thread T0\n";
        assert_eq!(
            Clipped::new(asan, 4096, 0).key_line(),
            Some("==4242==ERROR: AddressSanitizer: heap-buffer-overflow on address 0x602000000014")
        );
    }

    #[test]
    fn crash_reports_give_their_message() {
        let python = "Traceback (most recent call last):\n  File \"app.py\", line 3, in <module>\n    total += row[\"quantity\"]\n             ~~~^^^^^^^^^^^^\nKeyError: 'quantity'\n";
        let rust = "thread 'main' panicked at src/main.rs:4:5:\nindex out of bounds: the len is 3 but the index is 5\nnote: run with `RUST_BACKTRACE=1`";
        let go = "goroutine 1 [running]:\npanic: runtime error: index out of range [5] with length 3\n\tmain.go:8";
        let js = "/app/index.js:2\n  x();\n  ^\n\nTypeError: x is not a function\n    at Object.<anonymous> (/app/index.js:2:3)";
        let tail_of_traceback = "    return float(text.strip(\"$\"))\n           ^^^^^^^^^^^^^^^^^^^^^^\nValueError: could not convert string to float: '0,05'\n";
        let chained = "Traceback (most recent call last):\n  File \"a.py\", line 1\nValueError: could not convert string to float: 'n/a'\n\nDuring handling of the above exception, another exception occurred:\n\nTraceback (most recent call last):\n  File \"a.py\", line 4\nRuntimeError: bad row 3";
        for (text, want) in [
            (python, "KeyError: 'quantity'"),
            (rust, "index out of bounds: the len is 3 but the index is 5"),
            (go, "panic: runtime error: index out of range [5] with length 3"),
            (js, "TypeError: x is not a function"),
            (chained, "RuntimeError: bad row 3"),
            (
                tail_of_traceback,
                "ValueError: could not convert string to float: '0,05'",
            ),
        ] {
            let lines: Vec<&str> = text.lines().collect();
            assert_eq!(crash_line(&lines), Some(want));
            assert_eq!(Clipped::new(text, 4096, 0).key_line(), Some(want));
        }
        assert_eq!(
            crash_line(&["all good", "Traceback (most recent call last):", "  File \"x\""]),
            None
        );
    }

    #[test]
    fn a_key_line_says_what_failed() {
        for (text, want) in [
            // The tool's own line, not make's above or below it.
            (
                "flake8 app/\napp/report.py:21:12: F821 undefined name 'load_rows'\nmake: *** [Makefile:3: lint] Error 1\n",
                "app/report.py:21:12: F821 undefined name 'load_rows'",
            ),
            // npm's notice after the run is not what failed.
            (
                "> prove -l t/\n#   Failed test 'zero is refused'\nResult: FAIL\nnpm notice\nnpm notice New minor version of npm available!\nnpm notice\n",
                "#   Failed test 'zero is refused'",
            ),
            // Nor a heading, progress dots, or rake's own word.
            (
                ".FFF\n\nThere were 3 failures:\n\n1) TemperatureTest::testBoiling\nFailed asserting that 194.2 matches expected 100.0.\n",
                "Failed asserting that 194.2 matches expected 100.0.",
            ),
            (
                "  1) Failure:\nTestSlug#test_drops [t.rb:14]:\nExpected \"a\" got \"b\"\nrake aborted!\nCommand failed with status (1)\n",
                "Expected \"a\" got \"b\"",
            ),
            // With nothing else, the wrapper's word is better than nothing.
            ("make: *** [Makefile:2: all] Error 1\n", "make: *** [Makefile:2: all] Error 1"),
        ] {
            assert_eq!(Clipped::new(text, 4096, 0).key_line(), Some(want), "{text}");
        }
    }

    #[test]
    fn clipping_keeps_head_and_tail() {
        let text = format!("start\n{}\nend error here\n", "middle\n".repeat(10_000));
        let c = Clipped::new(&text, 100, 100);
        assert!(c.head.starts_with("start") && c.tail.ends_with("end error here\n"));
        assert_eq!(c.lines, 10_003);
        assert_eq!(c.key_line(), Some("end error here"));
        // With no failing line, the last line of the tail that says something.
        let built = format!(
            "{}built libutil.a from 72 objects\n\n",
            "cc -O2 -c gen/t.c -o build/t.o\n".repeat(500)
        );
        assert_eq!(
            Clipped::new(&built, 2048, 2048).key_line(),
            Some("built libutil.a from 72 objects")
        );
        let multibyte = "é".repeat(1000);
        let c = Clipped::new(&multibyte, 101, 101);
        assert!(c.head.len() <= 101 && c.tail.len() <= 101);
    }
}
