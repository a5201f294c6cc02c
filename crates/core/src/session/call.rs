//! One tool call as the session holds it: what it ran, how it ended, and
//! what its output says beyond the exit status.

use crate::checks::Report;
use crate::opencode::ToolStatus;
use crate::text::Clipped;

/// What a tool does, by OpenCode's tool names. Tools of MCP servers and
/// plugins are `Other`: their calls are listed, and their errors are
/// failures like any other.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolKind {
    /// `bash`: a command, its exit code and output.
    Shell,
    /// `read`, `write`, `edit`, `patch`, `multiedit`: one file.
    File,
    /// `todowrite` and `todoread`: the todo list, never a call to list.
    Todo,
    Other,
}

impl ToolKind {
    pub fn of(tool: &str) -> ToolKind {
        match tool {
            "bash" => ToolKind::Shell,
            "read" | "write" | "edit" | "patch" | "multiedit" => ToolKind::File,
            "todowrite" | "todoread" => ToolKind::Todo,
            _ => ToolKind::Other,
        }
    }
}

/// One tool call, as far as it has got.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    pub call_id: String,
    /// The tool's name, as the agent knows it.
    pub tool: String,
    pub kind: ToolKind,
    pub status: ToolStatus,
    /// The shell command, for bash.
    pub command: Option<String>,
    /// The file path, for file tools (relative to the project root when inside it).
    pub path: Option<String>,
    /// A one-line gist of the input for other tools.
    pub detail: Option<String>,
    /// The part of the file a `read` asked for (`offset 40, limit 20`),
    /// when not all of it.
    pub range: Option<String>,
    /// The bytes of the whole content a `write` sent (its `content`), as
    /// far as the sync carried it (the plugin shortens long inputs).
    pub written: Option<usize>,
    /// Exit code of a shell command.
    pub exit: Option<i64>,
    pub output: Option<Clipped>,
    /// What a test runner or checker said in the output, when one did.
    pub report: Option<Report>,
    pub error: Option<String>,
    /// When the call started (ms since the epoch), and the order it was first seen.
    pub start: f64,
    pub seen: u64,
    /// Made before the session's last compaction, and kept because it is
    /// still true and open (see [`SessionState::set_compacted`]).
    pub before_compaction: bool,
    /// What the output and the command say beyond the exit status.
    pub said: Said,
}

/// What a call's output and command say beyond its exit status, read once
/// per change of the call (see `ToolCall::read_what_is_said`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Said {
    /// The shell tool killed the command at this timeout (OpenCode: "shell
    /// tool terminated command after exceeding timeout N ms").
    pub timeout_secs: Option<u64>,
    /// A non-zero exit that is not a failure, named.
    pub benign: Option<&'static str>,
    /// A crash report in the output of a command whose exit status is an
    /// output filter's (`python3 app.py 2>&1 | tail -3` exits 0 over a
    /// traceback).
    pub crashed_behind_a_filter: bool,
    /// The program whose exit status the shell returned in place of the
    /// command's (`tail` after a pipe, `true` after `||`, `echo` after `;`).
    pub masked_by: Option<String>,
    /// The status the command printed of itself (`; echo "exit: $?"`).
    pub echoed_exit: Option<i64>,
    /// The run ran no test (see [`ToolCall::ran_no_tests`]).
    pub ran_no_tests: bool,
    /// A line of the output that says a test or check failed
    /// ([`crate::text::says_a_test_failed`]) where the command's own exit
    /// status is 0 and no runner's summary settles it (Octave's `test`
    /// prints `!!!!! test failed` and exits 0): the status does not say
    /// that it passed.
    pub denied_by: Option<String>,
}

impl ToolCall {
    /// Finished and failed, by what the tool and the output say: an error
    /// part; a command the tool killed at its timeout; a runner or checker
    /// whose summary reports failures, whatever the exit status (a pipe into
    /// `tail` exits 0); else a non-zero exit that is not [`Self::benign`].
    pub fn failed(&self) -> bool {
        match self.status {
            ToolStatus::Error => true,
            ToolStatus::Completed if self.said.ran_no_tests => false,
            ToolStatus::Completed => {
                self.said.timeout_secs.is_some()
                    || self.report.as_ref().is_some_and(|r| !r.ok())
                    || self.exit.is_some_and(|e| e != 0) && self.said.benign.is_none()
                    || self.said.crashed_behind_a_filter
                    || self.said.echoed_exit.is_some_and(|e| e != 0)
            }
            _ => false,
        }
    }

    /// Finished with an exit status that is not the command's (see
    /// [`Said::masked_by`]) and nothing else that settles it: no runner or
    /// checker summary, no status it printed of itself; or with a status of
    /// 0 that a line of its output denies ([`Said::denied_by`]). Neither a
    /// pass nor a failure: it closes no problem, and the HUD says what it
    /// saw. The program that set the status, or `the output`.
    pub fn unsettled(&self) -> Option<&str> {
        let settled = self.status != ToolStatus::Completed
            || self.said.ran_no_tests
            || self.failed()
            || ((self.report.as_ref().is_some_and(|r| r.settles()) || self.said.echoed_exit.is_some())
                && self.said.denied_by.is_none());
        if settled {
            return None;
        }
        self.said
            .masked_by
            .as_deref()
            .or(self.said.denied_by.as_ref().map(|_| "the output"))
    }

    /// The line of the output that denies a status of 0, where that is why
    /// the call is [`Self::unsettled`].
    pub fn denied(&self) -> Option<&str> {
        let by_output = self.unsettled().is_some() && self.said.masked_by.is_none();
        self.said.denied_by.as_deref().filter(|_| by_output)
    }

    /// The command's own exit status: the one it printed of itself where
    /// the shell's was thrown away (`; echo "exit: $?"`), else the shell's.
    pub fn exit_code(&self) -> Option<i64> {
        self.said.echoed_exit.or(self.exit)
    }

    /// Finished having run no test: a filter that matched none, a runner
    /// that found none (its report counts none, or, with none, a line says
    /// so and no other line says that anything failed). Neither a pass nor
    /// a failure: it closes no problem and opens none.
    pub fn ran_no_tests(&self) -> bool {
        self.status == ToolStatus::Completed && self.said.ran_no_tests
    }

    /// The timeout, in seconds, at which the shell tool killed the command.
    pub fn timed_out(&self) -> Option<u64> {
        self.said.timeout_secs
    }

    /// What a non-zero exit says when it is not a failure: `no match`
    /// (`grep`), `files differ` (`diff`), `no tests selected` (`pytest`).
    pub fn benign(&self) -> Option<&'static str> {
        self.said.benign
    }

    /// Reads [`Said`] from the command, exit and output; called whenever
    /// one of them changes, so every reader of a call (each render, each
    /// open-problem pass) only looks it up.
    pub(super) fn read_what_is_said(&mut self) {
        static KILLED: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
            regex::Regex::new(r"terminated command after exceeding timeout (\d+) ?ms").expect("a valid pattern")
        });
        let command = self.command.as_deref();
        let timeout_secs = self.output.as_ref().and_then(|o| {
            let text = if o.tail.is_empty() { &o.head } else { &o.tail };
            let ms: u64 = KILLED.captures(text)?[1].parse().ok()?;
            Some(ms.div_ceil(1000))
        });
        let benign = match (command, self.exit.filter(|&e| e != 0)) {
            (Some(command), Some(exit)) if self.report.as_ref().is_none_or(|r| r.ok()) => {
                crate::command::benign_exit(command, exit)
            }
            _ => None,
        };
        let crashed_behind_a_filter = command.is_some_and(crate::command::exit_is_a_filters)
            && self.output.as_ref().is_some_and(|o| {
                let lines: Vec<&str> = o.kept_lines().collect();
                crate::text::crash_line(&lines).is_some()
            });
        let masked_by = command.and_then(crate::command::exit_masked_by);
        let echoed_exit = command
            .filter(|c| masked_by.is_some() && c.contains("$?"))
            .and_then(|_| {
                static ECHOED: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
                    regex::Regex::new(
                        r"(?i)^\s*(?:exit(?:[ _-]?(?:code|status))?|status|rc|code)\s*[:=]?\s*(-?\d{1,3})\s*$",
                    )
                    .expect("a valid pattern")
                });
                let out = self.output.as_ref()?;
                let lines: Vec<&str> = out.kept_lines().collect();
                lines.iter().rev().find_map(|l| ECHOED.captures(l)?[1].parse().ok())
            });
        let ran_no_tests = timeout_secs.is_none()
            && !crashed_behind_a_filter
            && (benign == Some("no tests selected")
                || match &self.report {
                    Some(r) => r.ran_none(),
                    None => self.output.as_ref().is_some_and(|o| {
                        use crate::text::{explains_nothing, no_tests_line, LineSays};
                        let said_none = o.kept_lines().map(str::trim).any(no_tests_line);
                        said_none
                            && !o
                                .kept_lines()
                                .map(str::trim)
                                .any(|l| !no_tests_line(l) && !explains_nothing(l) && LineSays::of(l).failed())
                    }),
                });
        // A status of 0 proves a pass only where no line says something
        // failed: a runner that exits 0 over its failures (CUnit's basic
        // run, Octave's `test`), a wrapper whose passing part's summary
        // was read while another of its checks failed (a coverage
        // threshold after the tests), a checker that reports errors and
        // exits 0 (cppcheck), a request answered with an error (`curl -s`).
        let denied_by = (self.status == ToolStatus::Completed
            && self.exit == Some(0)
            && self.report.as_ref().is_none_or(|r| r.ok())
            && timeout_secs.is_none()
            && !ran_no_tests
            && !crashed_behind_a_filter
            // A search's or a file's lines are data, unless a runner's
            // summary among them says they are a run's output (a log read
            // back), or the command wrote the file it shows.
            && command.is_some_and(|c| {
                !crate::command::shows_data(c)
                    || self.report.as_ref().is_some_and(|r| r.settles())
                    || crate::command::reads_its_own_output(c)
            }))
        .then(|| {
            let output = self.output.as_ref()?;
            let line = output.kept_lines().map(str::trim).find(|l| {
                crate::text::says_a_check_failed(l) || (self.report.is_none() && crate::text::says_a_request_failed(l))
            })?;
            Some(line.to_owned())
        })
        .flatten();
        self.said = Said {
            timeout_secs,
            benign,
            crashed_behind_a_filter,
            masked_by,
            echoed_exit,
            ran_no_tests,
            denied_by,
        };
    }

    pub fn finished(&self) -> bool {
        matches!(self.status, ToolStatus::Completed | ToolStatus::Error)
    }

    /// What the call acted on: the command, the path or the detail.
    pub fn subject(&self) -> Option<&str> {
        self.command
            .as_deref()
            .or(self.path.as_deref())
            .or(self.detail.as_deref())
    }

    /// Fills what this record lacks from `other`, a record of the same call.
    pub(super) fn fill_from(&mut self, other: &ToolCall) {
        if self.subject().is_none() {
            self.command.clone_from(&other.command);
            self.path.clone_from(&other.path);
            self.detail.clone_from(&other.detail);
            self.range.clone_from(&other.range);
        }
        self.written = self.written.or(other.written);
        self.exit = self.exit.or(other.exit);
        if self.output.is_none() {
            self.output.clone_from(&other.output);
            self.report.clone_from(&other.report);
        }
        if self.error.is_none() {
            self.error.clone_from(&other.error);
        }
        self.read_what_is_said();
    }

    /// What the call checks: its tool, and for a command the
    /// [`command::check_key`](crate::command::check_key), else its
    /// subject. A later run of the same check can fix its failure.
    pub fn check(&self) -> (&str, Option<String>) {
        let checks = match &self.command {
            Some(command) => Some(crate::command::check_key(command)),
            None => self.subject().map(str::to_owned),
        };
        (self.tool.as_str(), checks)
    }

    pub(super) fn bytes(&self) -> usize {
        self.call_id.len()
            + self.tool.len()
            + self.subject().map_or(0, str::len)
            + self.output.as_ref().map_or(0, Clipped::bytes)
            + self.error.as_ref().map_or(0, String::len)
            + 128
    }
}
