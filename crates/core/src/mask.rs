//! Which tool outputs the facts have superseded, and the stub that stands
//! for each in the agent's request: what the output said, what superseded
//! it, and how to get it back. The plugin replaces the output by the stub in
//! the request only (OpenCode's stored messages stay whole), and in batches
//! that pay for the prompt cache they invalidate (docs/plugin.md, "Masking").
//!
//! Supersession is decided by the facts, never by age alone, and only
//! where it is proven:
//! - a command's output, once a later run of the same check (the identity
//!   open problems are tracked by: where it ran, the program, what it
//!   selected) has passed with a status that settles it, whatever the
//!   masked run's own result;
//! - a `read` of a file, once the file was read again whole (or the same
//!   part of it again), or changed since: then the stub says by which call,
//!   that reading the file gives its text now, and the text given back is
//!   marked as the text from before that change ([`MaskedOutput::before`]);
//! - the content a `write` sent, once the next call on the file reads it
//!   whole (the read repeats it).
//!
//! A stub keeps what the output said: the HUD's line for the call, naming
//! up to [`STUB_FAILURES`] failures, and where the runner's report names
//! fewer than it counts, the output's own lines that say what failed. An
//! output whose failures do not fit is never masked.
//!
//! Never masked: the newest [`KEEP_RECENT`] calls (the agent may still be
//! working from them), a run whose failure is open, outputs under
//! [`MIN_BYTES`] (a stub would save nothing), and calls still running.
//!
//! A stub depends only on the masked call and the first call that
//! superseded it, both finished and never changed, so it is the same text
//! on every request: once masked, the request's new prefix is read from the
//! provider's cache from then on.

use super::problems::Problems;
use super::render::call_line_naming;
use super::session::{SessionState, ToolCall, ToolKind};
use crate::opencode::ToolStatus;
use evolve_hud_api::MaskedOutput;

/// The newest calls never masked.
pub const KEEP_RECENT: usize = 4;
/// Outputs shorter than this are never masked.
pub const MIN_BYTES: usize = 2048;
/// Failures a stub names, at most.
const STUB_FAILURES: usize = 8;
/// Characters of one failing line a stub quotes.
const STUB_LINE_CHARS: usize = 160;

/// The name of the plugin's tool that gives a masked output back.
pub const RECOVER_TOOL: &str = "evolve_output";

/// How a later call superseded an output.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum By {
    /// A later run of the same check passed.
    SameCheckPassed,
    /// The file was read again: whole, or the same part.
    ReadAgain,
    /// The file was changed since: the output is its text before that.
    Changed,
}

/// The outputs of `state` that later facts have superseded, oldest first.
pub fn superseded(state: &SessionState, problems: &Problems) -> Vec<MaskedOutput> {
    let calls = state.work_calls();
    let candidates = calls.len().saturating_sub(KEEP_RECENT);
    let mut masked = Vec::new();
    for (i, call) in calls.iter().enumerate().take(candidates) {
        if let Some(content) = written_superseded(call, &calls[i + 1..]) {
            masked.push(content);
            continue;
        }
        let Some(bytes) = call.output.as_ref().map(|o| o.total_bytes) else {
            continue;
        };
        if call.status != ToolStatus::Completed || bytes < MIN_BYTES || problems.is_open(&call.call_id) {
            continue;
        }
        let Some((later, by)) = calls[i + 1..].iter().find_map(|later| supersedes(call, later)) else {
            continue;
        };
        let Some(said) = said(call) else {
            continue;
        };
        let by_line = call_line_naming(later, 0);
        let (why, back) = match by {
            By::SameCheckPassed => (
                format!("superseded by a later passing run of the same check ({by_line})"),
                "Full text",
            ),
            By::ReadAgain => (
                format!("superseded by a later read of the same file ({by_line})"),
                "Full text",
            ),
            By::Changed => (
                format!("the file has changed since ({by_line}): read it for its text now"),
                "Its text before that change",
            ),
        };
        masked.push(MaskedOutput {
            call_id: call.call_id.clone(),
            bytes,
            stub: stub(call, &why, &said, bytes, back),
            input: None,
            before: (by == By::Changed).then_some(by_line),
        });
    }
    masked
}

/// The content a `write` sent, masked once the next call that touched the
/// file read it whole (the read holds it). The stub says so and where the
/// call's content is; it stands in the call's input, so it says plainly
/// that it is not what was written.
fn written_superseded(call: &ToolCall, later: &[&ToolCall]) -> Option<MaskedOutput> {
    let bytes = call.written?;
    if call.tool != "write" || call.status != ToolStatus::Completed || call.failed() || bytes < MIN_BYTES {
        return None;
    }
    let path = call.path.as_ref()?;
    // The next call that touched the file (a failed change changed nothing).
    let next = later.iter().find(|l| {
        l.kind == ToolKind::File && l.path.as_ref() == Some(path) && l.status == ToolStatus::Completed && !l.failed()
    })?;
    if next.tool != "read" || next.range.is_some() {
        return None;
    }
    Some(MaskedOutput {
        call_id: call.call_id.clone(),
        bytes,
        stub: format!(
            "[evolve-hud: the content written is masked (this is not what was written): superseded by a later read of the whole file ({}). What was written: {RECOVER_TOOL} with id \"{}\".]",
            call_line_naming(next, 0),
            call.call_id,
        ),
        input: Some("content".to_owned()),
        before: None,
    })
}

/// What `call`'s output said, for its stub: the HUD's line for it, naming
/// up to [`STUB_FAILURES`] failures, and the output's own first lines that
/// say what failed (a runner's listing says it in its own words: a test's
/// description, a file and line), up to [`STUB_FAILURES`] of them. None
/// where the failures may not all be told: the runner's report names fewer
/// than it counts and the output's failing lines do not all fit, or the
/// output was clipped so that some may be missing. Then the output stays.
fn said(call: &ToolCall) -> Option<String> {
    let line = call_line_naming(call, STUB_FAILURES);
    if !call.failed() {
        return Some(line);
    }
    let output = call.output.as_ref()?;
    let failing: Vec<&str> = output
        .kept_lines()
        .map(str::trim)
        .filter(|l| {
            let says = crate::text::LineSays::of(l);
            (says.failed() || says.error_word()) && !crate::text::explains_nothing(l)
        })
        .collect();
    // (Several runs' names are not known to be all: no count says how many.)
    let named_all = call.report.as_ref().is_some_and(|r| {
        r.counted != crate::checks::Counted::Runs && r.failures.len() >= r.failed.min(STUB_FAILURES) && r.failed > 0
    });
    let all_kept = output.kept_lines().count() >= output.lines;
    if !named_all && (!all_kept || failing.len() > STUB_FAILURES) {
        return None;
    }
    let quoted: Vec<String> = failing
        .iter()
        .take(STUB_FAILURES)
        .filter(|l| !line.contains(**l))
        .map(|l| format!("`{}`", evolve_hud_api::clean::clean_line(l, STUB_LINE_CHARS)))
        .collect();
    Some(if quoted.is_empty() {
        line
    } else {
        format!("{line}; the lines that say what failed: {}", quoted.join(", "))
    })
}

/// Whether `later` supersedes `call`'s output, and how.
fn supersedes<'a>(call: &ToolCall, later: &'a ToolCall) -> Option<(&'a ToolCall, By)> {
    if later.status != ToolStatus::Completed {
        return None;
    }
    match call.kind {
        ToolKind::Shell => {
            // A later run of the same check that passed, with a status that
            // settles it: not one cut short by a timeout, that ran no test,
            // or whose status a pipe or `|| true` set.
            let passed = later.kind == ToolKind::Shell
                && later.exit == Some(0)
                && !later.failed()
                && later.timed_out().is_none()
                && !later.ran_no_tests()
                && later.unsettled().is_none();
            (passed && later.check() == call.check()).then_some((later, By::SameCheckPassed))
        }
        ToolKind::File if call.tool == "read" => {
            if later.kind != ToolKind::File || later.path.is_none() || later.path != call.path {
                return None;
            }
            match later.tool.as_str() {
                "read" if later.range.is_none() || later.range == call.range => Some((later, By::ReadAgain)),
                "read" => None,
                // A failed edit changed nothing.
                _ if later.failed() => None,
                _ => Some((later, By::Changed)),
            }
        }
        _ => None,
    }
}

/// `[evolve-hud: output masked …]`: why, what it said, and how to get it
/// back.
fn stub(call: &ToolCall, why: &str, said: &str, bytes: usize, back: &str) -> String {
    let lines = call.output.as_ref().map_or(0, |o| o.lines);
    let size = if bytes >= 10 * 1024 {
        format!("{} KB", bytes / 1024)
    } else {
        format!("{:.1} KB", bytes as f64 / 1024.0)
    };
    let range = call.range.as_deref().map(|r| format!(" ({r})")).unwrap_or_default();
    format!(
        "[evolve-hud: this output ({size}, {lines} lines){range} is masked: {why}. It said: {said}. {back}: {RECOVER_TOOL} with id \"{}\".]",
        call.call_id,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::opencode::Message;
    use crate::session::Limits;
    use serde_json::json;

    /// A session of tool calls: (id, tool, input, output, exit).
    fn session(calls: &[(&str, &str, serde_json::Value, String, Option<i64>)]) -> SessionState {
        let parts: Vec<serde_json::Value> = calls
            .iter()
            .enumerate()
            .map(|(i, (id, tool, input, output, exit))| {
                let mut metadata = json!({});
                if let Some(exit) = exit {
                    metadata["exit"] = json!(exit);
                }
                json!({
                    "id": format!("prt_{i}"), "sessionID": "ses_m", "messageID": "msg_a", "type": "tool",
                    "callID": id, "tool": tool,
                    "state": {
                        "status": "completed", "input": input, "output": output, "metadata": metadata,
                        "title": "", "time": { "start": 1000.0 + i as f64, "end": 1000.5 + i as f64 }
                    }
                })
            })
            .collect();
        let message: Message = serde_json::from_value(json!({
            "info": { "id": "msg_a", "sessionID": "ses_m", "role": "assistant", "time": { "created": 1000.0 } },
            "parts": parts
        }))
        .unwrap();
        let mut state = SessionState::new("ses_m");
        state.merge(&[message], &Limits::default());
        state
    }

    fn failing_tests(n: usize) -> String {
        let mut out = String::new();
        for i in 0..200 {
            out += &format!("test tests::case_{i} ... ok\n");
        }
        for i in 0..n {
            out += &format!("test tests::broken_{i} ... FAILED\n");
        }
        out += &format!(
            "\nfailures:\n{}\ntest result: FAILED. 200 passed; {n} failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.01s\n",
            (0..n).map(|i| format!("    tests::broken_{i}\n")).collect::<String>()
        );
        out
    }

    fn passing_tests() -> String {
        failing_tests(0).replace("test result: FAILED", "test result: ok")
    }

    fn filler(id: &str) -> (&str, &'static str, serde_json::Value, String, Option<i64>) {
        (
            id,
            "bash",
            json!({ "command": format!("echo {id}") }),
            "ok\n".to_owned(),
            Some(0),
        )
    }

    fn masked(state: &SessionState) -> Vec<MaskedOutput> {
        superseded(state, &state.problems())
    }

    #[test]
    fn a_run_is_masked_once_a_later_run_of_the_same_check_passed() {
        let pass = passing_tests();
        let state = session(&[
            (
                "c1",
                "bash",
                json!({ "command": "cargo test" }),
                failing_tests(3),
                Some(101),
            ),
            (
                "c2",
                "bash",
                json!({ "command": "cargo test 2>&1 | tail -5" }),
                pass.clone(),
                Some(0),
            ),
            ("c3", "bash", json!({ "command": "cargo test 2>&1" }), pass, Some(0)),
            filler("f1"),
            filler("f2"),
            filler("f3"),
            filler("f4"),
        ]);
        let masks = masked(&state);
        assert_eq!(
            masks.iter().map(|m| m.call_id.as_str()).collect::<Vec<_>>(),
            ["c1", "c2"]
        );
        let stub = &masks[0].stub;
        // What it said: the exit status, the counts and the failing names.
        assert!(stub.contains("exit 101") && stub.contains("3 of 203 failed"), "{stub}");
        for name in ["broken_0", "broken_1", "broken_2"] {
            assert!(stub.contains(name), "{stub}");
        }
        assert!(
            stub.contains("superseded by a later passing run of the same check (✓ bash `cargo test 2>&1 | tail -5`"),
            "{stub}"
        );
        assert!(stub.contains("Full text: evolve_output with id \"c1\""), "{stub}");
        assert_eq!(masks[0].before, None);
    }

    #[test]
    fn a_build_log_is_masked_by_a_later_pass_of_the_same_build_never_by_age() {
        let log: String = (0..120)
            .map(|i| format!("gcc -std=c99 -Wall -O2 -Iinclude -c gen/table_{i:02}.c -o build/gen/table_{i:02}.o\n"))
            .chain(["built build/libutil.a from 120 objects\n".to_owned()])
            .collect();
        let data: String = (0..200).map(|i| format!("src/m{i}.c:{i}: make_table(x);\n")).collect();
        let mut calls = vec![
            ("b1", "bash", json!({ "command": "make -C csrc" }), log.clone(), Some(0)),
            (
                "all",
                "bash",
                json!({ "command": "cd csrc && make all" }),
                log.clone(),
                Some(0),
            ),
            (
                "grep",
                "bash",
                json!({ "command": "grep -rn make_table src" }),
                data,
                Some(0),
            ),
            ("failed", "bash", json!({ "command": "make" }), log.clone(), Some(2)),
        ];
        calls.extend(["f1", "f2", "f3", "f4", "f5", "f6", "f7", "f8"].map(filler));
        // However old, a passing log, a search and a failing build stay.
        assert_eq!(masked(&session(&calls)), []);
        // A later run of the same build passed: the first is masked. Another
        // target, and a failure a later pass of another build did not
        // cover, stay.
        calls.push(("b2", "bash", json!({ "command": "make -C csrc" }), log, Some(0)));
        calls.extend(["g1", "g2", "g3", "g4"].map(filler));
        let masks = masked(&session(&calls));
        assert_eq!(masks.iter().map(|m| m.call_id.as_str()).collect::<Vec<_>>(), ["b1"]);
        let stub = &masks[0].stub;
        assert!(
            stub.contains("superseded by a later passing run of the same check (✓ bash `make -C csrc`"),
            "{stub}"
        );
    }

    #[test]
    fn what_is_kept_whole() {
        let pass = passing_tests();
        // A failure still open; a run whose later rerun's status a pipe set;
        // a subset rerun; a short output; the newest calls.
        let state = session(&[
            (
                "open1",
                "bash",
                json!({ "command": "cargo test" }),
                failing_tests(2),
                Some(101),
            ),
            (
                "open2",
                "bash",
                json!({ "command": "cargo test" }),
                failing_tests(1),
                Some(101),
            ),
            (
                "piped",
                "bash",
                json!({ "command": "python3 tools/lint.py" }),
                "x\n".repeat(2000),
                Some(0),
            ),
            (
                "piped2",
                "bash",
                json!({ "command": "python3 tools/lint.py | tail -3" }),
                "x\n".repeat(2000),
                Some(0),
            ),
            (
                "subset",
                "bash",
                json!({ "command": "cargo test case_1" }),
                pass.clone(),
                Some(0),
            ),
            (
                "short",
                "bash",
                json!({ "command": "ls" }),
                "a\nb\n".to_owned(),
                Some(0),
            ),
            (
                "short2",
                "bash",
                json!({ "command": "ls" }),
                "a\nb\n".to_owned(),
                Some(0),
            ),
            (
                "new",
                "bash",
                json!({ "command": "cargo build" }),
                "y\n".repeat(2000),
                Some(0),
            ),
            (
                "new2",
                "bash",
                json!({ "command": "cargo build" }),
                "y\n".repeat(2000),
                Some(0),
            ),
        ]);
        // A later run that failed again supersedes nothing; a pass whose
        // status a pipe set, or of a subset, neither; new is among the newest four.
        assert_eq!(masked(&state), []);
    }

    #[test]
    fn a_read_is_masked_by_a_change_or_a_read_of_the_same_part() {
        let text = "let x = 1;\n".repeat(400);
        let read = |id: &'static str, input: serde_json::Value| (id, "read", input, text.clone(), None);
        let state = session(&[
            read("r1", json!({ "filePath": "src/a.rs" })),
            read("r2", json!({ "filePath": "src/b.rs", "offset": 10, "limit": 300 })),
            read("r3", json!({ "filePath": "src/b.rs", "offset": 400, "limit": 300 })),
            read("r4", json!({ "filePath": "src/c.rs" })),
            (
                "e1",
                "edit",
                json!({ "filePath": "src/a.rs", "oldString": "x", "newString": "y" }),
                "Edit applied successfully.".to_owned(),
                None,
            ),
            read("r5", json!({ "filePath": "src/b.rs", "offset": 10, "limit": 300 })),
            filler("f1"),
            filler("f2"),
            filler("f3"),
            filler("f4"),
        ]);
        let masks = masked(&state);
        assert_eq!(
            masks.iter().map(|m| m.call_id.as_str()).collect::<Vec<_>>(),
            ["r1", "r2"]
        );
        // A change: the stub says which, and that the text given back is the
        // text from before it.
        let stub = &masks[0].stub;
        assert!(
            stub.contains("the file has changed since (✓ edit src/a.rs): read it for its text now"),
            "{stub}"
        );
        assert!(
            stub.contains("Its text before that change: evolve_output with id \"r1\""),
            "{stub}"
        );
        assert_eq!(masks[0].before.as_deref(), Some("✓ edit src/a.rs"));
        assert!(
            masks[1].stub.contains("superseded by a later read of the same file"),
            "{}",
            masks[1].stub
        );
        assert_eq!(masks[1].before, None);
        assert!(masks[1].stub.contains("(offset 10, limit 300)"), "{}", masks[1].stub);
    }

    #[test]
    fn a_runners_summary_never_stands_for_its_output_by_age_alone() {
        let mut calls = vec![
            (
                "t1",
                "bash",
                json!({ "command": "cargo test -p parser" }),
                failing_tests(2),
                Some(101),
            ),
            (
                "t2",
                "bash",
                json!({ "command": "cargo test -p parser" }),
                failing_tests(0),
                Some(0),
            ),
        ];
        calls.extend(["f0", "f1", "f2", "f3", "f4", "f5", "f6", "f7", "f8", "f9"].map(filler));
        // t1 is superseded by t2's pass; t2, however old, by nothing.
        let ids = masked(&session(&calls))
            .into_iter()
            .map(|m| m.call_id)
            .collect::<Vec<_>>();
        assert_eq!(ids, ["t1"]);
    }

    #[test]
    fn a_stub_quotes_the_failing_lines_a_report_does_not_name() {
        // A runner whose summary the HUD reads but whose failing lines it
        // does not name: the stub quotes them. Nine of them do not fit.
        let output = |failing: usize| {
            let mut out = String::new();
            for i in 0..80 {
                if i < failing {
                    out += &format!(
                        "check pipeline::f{i} ... FAILED: expected {}, got {}\n",
                        i + 1,
                        1 - i as i64
                    );
                } else {
                    out += &format!("check pipeline::f{i} ... ok, one plus {i} is {}\n", i + 1);
                }
            }
            out + &format!("\ntest result: FAILED. {} passed; {failing} failed\n", 80 - failing)
        };
        let run = |id: &'static str, failing: usize| {
            (
                id,
                "bash",
                json!({ "command": "node suite.js" }),
                output(failing),
                Some(1),
            )
        };
        let fillers = ["f0", "f1", "f2", "f3"].map(filler);
        let passed = (
            "passed",
            "bash",
            json!({ "command": "node suite.js" }),
            output(0).replace("test result: FAILED", "test result: ok"),
            Some(0),
        );
        let mut calls = vec![run("three", 3), run("nine", 9), passed];
        calls.extend(fillers);
        let masks = masked(&session(&calls));
        assert_eq!(masks.iter().map(|m| m.call_id.as_str()).collect::<Vec<_>>(), ["three"]);
        for i in 0..3 {
            assert!(
                masks[0].stub.contains(&format!("pipeline::f{i} ...")),
                "{}",
                masks[0].stub
            );
        }
    }

    #[test]
    fn a_stub_stays_the_same_as_the_session_goes_on() {
        let pass = passing_tests();
        let mut calls = vec![
            (
                "c1",
                "bash",
                json!({ "command": "cargo test" }),
                failing_tests(3),
                Some(101),
            ),
            ("c2", "bash", json!({ "command": "cargo test" }), pass.clone(), Some(0)),
            filler("f1"),
            filler("f2"),
            filler("f3"),
            filler("f4"),
        ];
        let before = masked(&session(&calls));
        calls.push((
            "c3",
            "bash",
            json!({ "command": "cargo test" }),
            failing_tests(1),
            Some(101),
        ));
        calls.extend([filler("g1"), filler("g2"), filler("g3"), filler("g4")]);
        let after = masked(&session(&calls));
        assert_eq!(before[0], after[0]);
    }

    #[test]
    fn a_writes_content_is_masked_once_the_next_call_on_the_file_reads_it_whole() {
        let content = "def f():\n    return 1\n".repeat(200);
        let write = |id: &'static str, path: &str| {
            (
                id,
                "write",
                json!({ "filePath": path, "content": content.clone() }),
                "Wrote file successfully.".to_owned(),
                None,
            )
        };
        let read = |id: &'static str, input: serde_json::Value| (id, "read", input, "1: x\n".to_owned(), None);
        let state = session(&[
            write("w1", "src/a.py"),
            write("w2", "src/b.py"),
            write("w3", "src/c.py"),
            (
                "small",
                "write",
                json!({ "filePath": "src/e.py", "content": "x = 1\n" }),
                "Wrote file successfully.".to_owned(),
                None,
            ),
            read("r1", json!({ "filePath": "src/a.py" })),
            read("r2", json!({ "filePath": "src/b.py", "offset": 10, "limit": 20 })),
            (
                "e1",
                "edit",
                json!({ "filePath": "src/c.py", "oldString": "1", "newString": "2" }),
                "Edit applied successfully.".to_owned(),
                None,
            ),
            write("e2", "src/e.py"),
            filler("f1"),
            filler("f2"),
            filler("f3"),
            filler("f4"),
        ]);
        let masks = masked(&state);
        // Read whole: masked. Read in part, changed (no read repeats it),
        // or too short: kept.
        assert_eq!(
            masks
                .iter()
                .map(|m| (m.call_id.as_str(), m.input.as_deref()))
                .collect::<Vec<_>>(),
            [("w1", Some("content"))]
        );
        assert!(
            masks[0]
                .stub
                .contains("superseded by a later read of the whole file (✓ read src/a.py"),
            "{}",
            masks[0].stub
        );
        assert!(
            masks[0].stub.contains("this is not what was written"),
            "{}",
            masks[0].stub
        );
        assert!(
            masks[0].stub.contains("evolve_output with id \"w1\""),
            "{}",
            masks[0].stub
        );
        // The write's output was never the masked text.
        assert!(masked(&state).iter().all(|m| m.call_id != "e2"));
    }

    #[test]
    fn a_stub_quotes_a_runners_own_lines_of_what_failed() {
        // unittest -v: the listing line says what failed in the test's own
        // description, the report names it by its method.
        let mut failing = String::new();
        for i in 0..60 {
            failing += &format!("test_ok_{i} (t.T.test_ok_{i})\nworks {i}. ... ok\n");
        }
        failing += "test_month (t.T.test_month)\nmonth_key pads the month. ... FAIL\n";
        failing += "\n======\nFAIL: test_month (t.T.test_month)\nmonth_key pads the month.\n------\nTraceback (most recent call last):\n  File \"t.py\", line 3, in test_month\nAssertionError: '2024-3' != '2024-03'\n\n------\nRan 61 tests in 0.01s\n\nFAILED (failures=1)\n";
        let passing = "test_month (t.T.test_month)\nmonth_key pads the month. ... ok\n".repeat(61)
            + "\nRan 61 tests in 0.01s\n\nOK\n";
        let state = session(&[
            (
                "c1",
                "bash",
                json!({ "command": "python3 -m unittest -v t" }),
                failing,
                Some(1),
            ),
            (
                "c2",
                "bash",
                json!({ "command": "python3 -m unittest -v t" }),
                passing,
                Some(0),
            ),
            filler("f1"),
            filler("f2"),
            filler("f3"),
            filler("f4"),
        ]);
        let masks = masked(&state);
        assert_eq!(masks.len(), 1, "{masks:?}");
        let stub = &masks[0].stub;
        assert!(stub.contains("test_month"), "{stub}");
        assert!(stub.contains("`month_key pads the month. ... FAIL`"), "{stub}");
    }
}
