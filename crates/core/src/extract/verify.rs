//! The check of an answer: every item must be grounded in the output the
//! model was shown, or it is dropped.

use super::question::{Finding, Question, MAX_ITEMS, MAX_NAME, NAME_REACH};
use crate::text::{explains_nothing, has_words, summary_line, LineSays};
use evolve_hud_api::clean::clean_line;
use serde::Deserialize;

/// Why an answer gave nothing to show.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Rejected {
    #[error("not an answer of the schema: {0}")]
    NotJson(String),
    #[error("named no failures")]
    Nothing,
    #[error("{0}")]
    Unverified(String),
}

/// The items of the answer `raw` to `question` that are grounded in its
/// source and add to what the facts show, in order, without repeats; an
/// error when none is.
pub fn verify(raw: &str, question: &Question) -> Result<Vec<Finding>, Rejected> {
    #[derive(Deserialize)]
    struct Answer {
        failures: Vec<Finding>,
    }
    let answer: Answer = serde_json::from_str(raw.trim()).map_err(|e| Rejected::NotJson(e.to_string()))?;
    if answer.failures.is_empty() {
        return Err(Rejected::Nothing);
    }
    let lines: Vec<&str> = question.source.lines().map(str::trim).collect();
    let mut kept: Vec<Finding> = Vec::new();
    let mut first_error = None;
    for item in answer.failures.into_iter().take(MAX_ITEMS) {
        match ground(&item, &lines) {
            Ok(found)
                if question
                    .shown
                    .as_deref()
                    .is_some_and(|s| s.contains(found.line.as_str())) =>
            {
                first_error.get_or_insert_with(|| "quotes only the line the facts already show".to_owned());
            }
            // One finding per quoted line.
            Ok(found) if !kept.iter().any(|k| k.line == found.line) => kept.push(found),
            Ok(_) => {}
            Err(why) => {
                first_error.get_or_insert(why);
            }
        }
    }
    if kept.is_empty() {
        return Err(Rejected::Unverified(first_error.unwrap_or_default()));
    }
    Ok(kept)
}

/// The verified items among those an answer still being written has
/// completed, so that the first can be shown before the last is written:
/// `partial` closed after its last `}` and checked as [`verify`] checks a
/// whole answer. Empty while no complete item is verified.
pub fn verify_written(partial: &str, question: &Question) -> Vec<Finding> {
    let Some(end) = partial.rfind('}') else {
        return Vec::new();
    };
    verify(&format!("{}]}}", &partial[..=end]), question).unwrap_or_default()
}

/// `item` with its text trimmed, if it is grounded in `lines`.
pub(super) fn ground(item: &Finding, lines: &[&str]) -> Result<Finding, String> {
    let name = item.name.trim();
    let line = item.line.trim();
    if !name.chars().any(char::is_alphanumeric) {
        return Err("a name with no letters or digits".into());
    }
    if name.contains(line) || line.len() < name.len() && line.contains(name) && name.len() > MAX_NAME / 2 {
        return Err("the name is the quoted line itself".into());
    }
    if !has_words(line) {
        return Err(format!("the line {line:?} is too short to say anything"));
    }
    if status_only(name, "") {
        return Err(format!(
            "the name {:?} is a status word, not what failed",
            clean_line(name, 80)
        ));
    }
    if summary_line(name) || option_like(name) {
        return Err(format!(
            "the name {:?} is a summary or an option, not what failed",
            clean_line(name, 80)
        ));
    }
    let Some(at) = lines.iter().position(|l| l.contains(line)) else {
        return Err(format!("the line {:?} is not in the output", clean_line(line, 80)));
    };
    if !LineSays::of(line).failed() {
        return Err(format!(
            "the line {:?} does not say that anything failed",
            clean_line(line, 80)
        ));
    }
    if explains_nothing(line) {
        return Err(format!(
            "the line {:?} is a summary, heading, banner or wrapper's line: it explains no failure",
            clean_line(line, 80)
        ));
    }
    if status_only(line, name) {
        return Err(format!(
            "the line {:?} says only that {:?} failed, not why",
            clean_line(line, 80),
            clean_line(name, 40)
        ));
    }
    if !owns(name, lines, at) {
        return Err(format!(
            "the name {:?} is not at its line in the output",
            clean_line(name, 80)
        ));
    }
    Ok(Finding {
        name: name.to_owned(),
        line: line.to_owned(),
        named: lines[at].contains(name),
    })
}

/// Whether `text`, without `name`, says no more than how and where
/// something went: it has a status word (`FAILED`, `not ok`, `ERROR`,
/// `exit status`), and beside them only numbers (`3/4`, `0.01s`) and
/// places (`ring_test.cpp:24`, `at …`, `on line 26`), no other word and no
/// comparison (`0m 45s != 45s` says why). `test tokenize ... FAILED` says
/// that `tokenize` failed, not why; `FAIL` is no name of what failed. A
/// quote that ends in a colon (`Expected:`, `stack traceback:`, `Test run
/// failed! Reason:`) heads what says why, below it.
fn status_only(text: &str, name: &str) -> bool {
    const STATUS: &[&str] = &[
        "fail", "failed", "failure", "failures", "failing", "error", "errors", "errored", "not", "ok", "ko", "test",
        "tests", "case", "exit", "exited", "status", "code", "crashed", "broken", "timeout", "timed", "out", "abort",
        "aborted", "x", "e", "f",
    ];
    // Of a quote, where it failed says no more than that it did; a name
    // (`line 8` of shellcheck) may be a place.
    const PLACES: &[&str] = &["at", "in", "on", "line", "file"];
    static PLACE: std::sync::LazyLock<regex::Regex> =
        std::sync::LazyLock::new(|| regex::Regex::new(r"[\w./\\-]+\.\w+:\d+(?::\d+)?").expect("a valid pattern"));
    if !name.is_empty() && text.trim_end().ends_with(':') {
        return true;
    }
    let rest = if name.is_empty() {
        text.to_owned()
    } else {
        text.replace(name, " ")
    };
    let rest = PLACE.replace_all(&rest, " ");
    let words: Vec<String> = rest
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty() && !w.starts_with(|c: char| c.is_ascii_digit()))
        .map(str::to_lowercase)
        .collect();
    let said = |w: &String| STATUS.contains(&w.as_str()) || !name.is_empty() && PLACES.contains(&w.as_str());
    !words.is_empty() && words.iter().all(said) && !rest.contains(['=', '<', '>'])
}

/// Whether `name` belongs to the line `at`: it stands on that line, or on
/// the line that heads its block (a test's header up to [`NAME_REACH`] lines
/// above, or a panic's first line just below). A line that reports a pass
/// of its own (`ok 1 …`, `PASS …`) heads no failure, and a header of the same
/// shape between the two (`In x.sh line 8:` below `In x.sh line 5:`) starts
/// another block.
fn owns(name: &str, lines: &[&str], at: usize) -> bool {
    if lines[at].contains(name) {
        return true;
    }
    let above = (at.saturating_sub(NAME_REACH)..at).rev();
    let below = at + 1..(at + 3).min(lines.len());
    let Some(head) = above.chain(below).find(|&i| lines[i].contains(name)) else {
        return false;
    };
    if crate::text::reports_a_pass(lines[head]) {
        return false;
    }
    let head_shape = shape(lines[head]);
    // A line of the quote's own form (`a.md:3 error MD001/…` above `a.md:12
    // error MD025/…`) is another item, not its header: its name is its own.
    if head_shape == shape(lines[at]) {
        return false;
    }
    let between = if head < at { head + 1..at } else { at + 1..head };
    !lines[between].iter().any(|l| shape(l) == head_shape)
}

/// Whether `name` is a command-line option or setting (`--verbose`,
/// `leak-check=full`), not a test or check.
fn option_like(name: &str) -> bool {
    static OPTION: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"^(?:--?[A-Za-z][\w-]*(?:=\S*)?|[A-Za-z][\w-]*=\S*)$").expect("a valid pattern")
    });
    OPTION.is_match(name)
}

/// A line's form without its words: `In check.sh line 8:` and `In
/// check.sh line 5:` are alike, as are two pytest test headers.
fn shape(line: &str) -> String {
    let mut out = String::new();
    let mut in_word = false;
    for c in line.trim().chars() {
        if c.is_alphanumeric() {
            if !in_word {
                out.push('w');
            }
            in_word = true;
        } else {
            in_word = false;
            if !out.ends_with(c) {
                out.push(c);
            }
        }
    }
    out
}
