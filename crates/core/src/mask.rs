//! Which tool outputs the facts have superseded, and the stub that stands
//! for each in the agent's request: what the output said, what superseded
//! it, and how to get it back. The plugin replaces the output by the stub in
//! the request only (OpenCode's stored messages stay whole), and in batches
//! that pay for the prompt cache they invalidate (docs/plugin.md, "Masking").
//!
//! Supersession is decided by the facts, never by age alone:
//! - a command's output, once a later run of the same check (the identity
//!   open problems are tracked by: where it ran, the program, what it
//!   selected) has ended with a status that settles it;
//! - a `read` of a file, once the file was written or edited since, or read
//!   again whole (or the same part of it again);
//! - a test runner's or checker's output whose summary the HUD read (its
//!   counts and what failed, all of it in the stub), once [`OLD_AFTER`]
//!   calls came after it;
//! - a build's log, once [`OLD_AFTER`] calls came after it, where its own
//!   exit status says it passed and no line of it warns or says that
//!   anything went wrong (the stub says it passed and quotes how it ended).
//!
//! A stub keeps what the output said: the HUD's line for the call, naming
//! up to [`STUB_FAILURES`] failures, and where the runner's report names
//! fewer than it counts, the output's own lines that say what failed. An
//! output whose failures do not fit is never masked.
//!
//! Never masked: the newest [`KEEP_RECENT`] calls (the agent may still be
//! working from them), the failing run of every open problem, outputs under
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
/// Calls after a runner's or checker's output before its stub, which holds
/// what it said, stands for it.
pub const OLD_AFTER: usize = 6;
/// Characters of one failing line a stub quotes.
const STUB_LINE_CHARS: usize = 160;

/// The name of the plugin's tool that gives a masked output back.
pub const RECOVER_TOOL: &str = "evolve_output";

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
        let old = calls.len() - 1 - i >= OLD_AFTER;
        let (why, said) = match calls[i + 1..].iter().find_map(|later| supersedes(call, later)) {
            Some((later, why)) => (
                format!("superseded by {why} ({})", call_line_naming(later, 0)),
                said(call),
            ),
            None if old && summarised(call) => (
                format!("{OLD_AFTER} or more calls old, and the runner's summary is here"),
                said(call),
            ),
            None if old => match built(call) {
                Some(said) => (
                    format!("{OLD_AFTER} or more calls old, and the build passed"),
                    Some(said),
                ),
                None => continue,
            },
            None => continue,
        };
        let Some(said) = said else {
            continue;
        };
        masked.push(MaskedOutput {
            call_id: call.call_id.clone(),
            bytes,
            stub: stub(call, &why, &said, bytes),
            input: None,
        });
    }
    masked
}

/// The content a `write` sent, masked once the file was changed since (the
/// content is no longer the file's) or read whole (the read holds it). The
/// stub says so and where the file's content and the call's are; it stands
/// in the call's input, so it says plainly that it is not what was written.
fn written_superseded(call: &ToolCall, later: &[&ToolCall]) -> Option<MaskedOutput> {
    let bytes = call.written?;
    if call.tool != "write" || call.status != ToolStatus::Completed || call.failed() || bytes < MIN_BYTES {
        return None;
    }
    let path = call.path.as_ref()?;
    let (by, why) = later.iter().find_map(|l| {
        if l.kind != ToolKind::File || l.path.as_ref() != Some(path) || l.status != ToolStatus::Completed || l.failed()
        {
            return None;
        }
        match l.tool.as_str() {
            "read" if l.range.is_none() => Some((l, "a later read of the whole file")),
            "read" => None,
            _ => Some((l, "a later change to the file")),
        }
    })?;
    Some(MaskedOutput {
        call_id: call.call_id.clone(),
        bytes,
        stub: format!(
            "[evolve-hud: the content written is masked (this is not what was written): superseded by {why} ({}). The file now: read it. What was written: {RECOVER_TOOL} with id \"{}\".]",
            call_line_naming(by, 0),
            call.call_id,
        ),
        input: Some("content".to_owned()),
    })
}

/// Whether what `call` said is a runner's or checker's summary the HUD
/// read, so the stub holds its facts: the counts and what failed.
fn summarised(call: &ToolCall) -> bool {
    call.kind == ToolKind::Shell
        && call.timed_out().is_none()
        && call.unsettled().is_none()
        && call.report.as_ref().is_some_and(|r| r.settles())
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

/// What a passing build's output said, for its stub: the HUD's line for
/// it and its key line, the last that says something (not make's
/// `Leaving directory`). None unless the call is a build
/// ([`crate::command::builds`]) whose own status says it passed, and no
/// kept line of its output says that anything went wrong or warns: a
/// passing build's log is the steps it took, which the stub need not hold.
fn built(call: &ToolCall) -> Option<String> {
    let passed = call.kind == ToolKind::Shell
        && call.exit == Some(0)
        && !call.failed()
        && call.unsettled().is_none()
        && call.said.masked_by.is_none()
        && call.report.is_none();
    if !passed || !call.command.as_deref().is_some_and(crate::command::builds) {
        return None;
    }
    let output = call.output.as_ref()?;
    let quiet = output.kept_lines().all(|l| {
        let l = l.trim();
        !crate::text::LineSays::of(l).anything() && !l.to_ascii_lowercase().contains("warn")
    });
    let last = output.key_line()?;
    quiet.then(|| {
        format!(
            "{}; it ended: `{}`",
            call_line_naming(call, 0),
            evolve_hud_api::clean::clean_line(last, STUB_LINE_CHARS)
        )
    })
}

/// Whether `later` supersedes `call`'s output, and how it is said.
fn supersedes<'a>(call: &ToolCall, later: &'a ToolCall) -> Option<(&'a ToolCall, &'static str)> {
    if later.status != ToolStatus::Completed {
        return None;
    }
    match call.kind {
        ToolKind::Shell => {
            // A later run that settled the same check: not one cut short by
            // a timeout, that ran no test, or whose status a pipe or `|| true`
            // set.
            let settled = later.kind == ToolKind::Shell
                && later.timed_out().is_none()
                && !later.ran_no_tests()
                && later.unsettled().is_none();
            (settled && later.check() == call.check()).then_some((later, "a later run of the same command"))
        }
        ToolKind::File if call.tool == "read" => {
            if later.kind != ToolKind::File || later.path.is_none() || later.path != call.path {
                return None;
            }
            match later.tool.as_str() {
                "read" if later.range.is_none() || later.range == call.range => {
                    Some((later, "a later read of the same file"))
                }
                "read" => None,
                // A failed edit changed nothing.
                _ if later.failed() => None,
                _ => Some((later, "a later change to the file")),
            }
        }
        _ => None,
    }
}

/// `[evolve-hud: output masked …]`: why, what it said, and how to get it
/// back.
fn stub(call: &ToolCall, why: &str, said: &str, bytes: usize) -> String {
    let lines = call.output.as_ref().map_or(0, |o| o.lines);
    let size = if bytes >= 10 * 1024 {
        format!("{} KB", bytes / 1024)
    } else {
        format!("{:.1} KB", bytes as f64 / 1024.0)
    };
    let range = call.range.as_deref().map(|r| format!(" ({r})")).unwrap_or_default();
    format!(
        "[evolve-hud: this output ({size}, {lines} lines){range} is masked: {why}. It said: {said}. Full text: {RECOVER_TOOL} with id \"{}\".]",
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
    fn a_run_is_masked_once_a_later_run_of_the_same_check_settled_it() {
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
            stub.contains("superseded by a later run of the same command (✓ bash `cargo test"),
            "{stub}"
        );
        assert!(stub.contains("evolve_output with id \"c1\""), "{stub}");
    }

    #[test]
    fn a_passing_builds_log_is_masked_once_old_and_data_never_is() {
        let log = |warning: &str| {
            let mut out: String = (0..120)
                .map(|i| {
                    format!(
                        "gcc -std=c99 -Wall -Wextra -O2 -Iinclude -c gen/table_{i:02}.c -o build/gen/table_{i:02}.o\n"
                    )
                })
                .collect();
            out += warning;
            out + "ar rcs build/libutil.a build/gen/*.o\nbuilt build/libutil.a from 120 objects\nmake: Leaving directory '/p/csrc'\n"
        };
        let data: String = (0..200).map(|i| format!("src/m{i}.c:{i}: make_table(x);\n")).collect();
        let state = session(&[
            ("b1", "bash", json!({ "command": "make -C csrc" }), log(""), Some(0)),
            (
                "warned",
                "bash",
                json!({ "command": "cd csrc && make all" }),
                log("src/a.c:3:5: warning: unused variable 'x'\n"),
                Some(0),
            ),
            (
                "piped",
                "bash",
                json!({ "command": "make -C csrc 2>&1 | tail -400" }),
                log(""),
                Some(0),
            ),
            (
                "grep",
                "bash",
                json!({ "command": "grep -rn make_table src" }),
                data,
                Some(0),
            ),
            ("failed", "bash", json!({ "command": "make" }), log(""), Some(2)),
            filler("f1"),
            (
                "b2",
                "bash",
                json!({ "command": "make -C csrc clean all" }),
                log(""),
                Some(0),
            ),
            filler("f2"),
            filler("f3"),
            filler("f4"),
            filler("f5"),
            filler("f6"),
        ]);
        let masks = masked(&state);
        // `failed` is superseded by `b2`? No: `make` and `make -C csrc clean
        // all` are not the same check, and its failure is open.
        assert_eq!(masks.iter().map(|m| m.call_id.as_str()).collect::<Vec<_>>(), ["b1"]);
        let stub = &masks[0].stub;
        assert!(stub.contains("6 or more calls old, and the build passed"), "{stub}");
        assert!(stub.contains("✓ bash `make -C csrc`"), "{stub}");
        assert!(
            stub.contains("it ended: `built build/libutil.a from 120 objects`"),
            "{stub}"
        );
        assert!(stub.contains("evolve_output with id \"b1\""), "{stub}");
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
        // open1 is superseded by open2, which is still failing; new is among the newest four.
        let masks = masked(&state);
        assert_eq!(masks.iter().map(|m| m.call_id.as_str()).collect::<Vec<_>>(), ["open1"]);
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
        assert!(
            masks[0]
                .stub
                .contains("superseded by a later change to the file (✓ edit src/a.rs)"),
            "{}",
            masks[0].stub
        );
        assert!(masks[1].stub.contains("(offset 10, limit 300)"), "{}", masks[1].stub);
    }

    #[test]
    fn a_runners_summary_stands_for_its_output_once_old() {
        let mut calls = vec![
            (
                "t1",
                "bash",
                json!({ "command": "cargo test -p parser" }),
                failing_tests(2),
                Some(101),
            ),
            (
                "log",
                "bash",
                json!({ "command": "cat build.log" }),
                "compiled\n".repeat(400),
                Some(0),
            ),
            (
                "t2",
                "bash",
                json!({ "command": "cargo test -p parser" }),
                failing_tests(0),
                Some(0),
            ),
        ];
        calls.extend((0..OLD_AFTER - 2).map(|i| filler(["f0", "f1", "f2", "f3", "f4", "f5", "f6", "f7", "f8"][i])));
        // t2 is OLD_AFTER - 2 calls old: kept; t1 is superseded by t2.
        let ids = |state: &SessionState| masked(state).into_iter().map(|m| m.call_id).collect::<Vec<_>>();
        assert_eq!(ids(&session(&calls)), ["t1"]);
        calls.push(filler("f9"));
        calls.push(filler("fa"));
        // Now OLD_AFTER calls came after t2: its summary stands for it. A
        // plain log is never masked by age.
        let state = session(&calls);
        assert_eq!(ids(&state), ["t1", "t2"]);
        let stub = &masked(&state)[1].stub;
        assert!(
            stub.contains(&format!("{OLD_AFTER} or more calls old"))
                && stub.contains("✓ bash `cargo test -p parser`: cargo test 200 passed"),
            "{stub}"
        );
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
        let mut calls = vec![run("three", 3), run("nine", 9), run("one", 1)];
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
    fn a_writes_content_is_masked_once_the_file_was_changed_or_read_whole() {
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
        // Read whole, or changed since: masked. Read in part, or too short: kept.
        assert_eq!(
            masks
                .iter()
                .map(|m| (m.call_id.as_str(), m.input.as_deref()))
                .collect::<Vec<_>>(),
            [("w1", Some("content")), ("w3", Some("content"))]
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
        assert!(
            masks[1]
                .stub
                .contains("superseded by a later change to the file (✓ edit src/c.py)"),
            "{}",
            masks[1].stub
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
