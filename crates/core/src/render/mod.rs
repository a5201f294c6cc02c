//! Rendering a session into the HUD text. Every line is composed by the code
//! here: facts from the session's events, and, labelled, the failures the
//! model found in an output that code then checked against that output.

mod lines;

pub use lines::call_line;
pub(super) use lines::{call_line_naming, confirmed_problems, file_lines, open_problems};

use super::extract::Findings;
use super::session::{SessionState, TodoStatus, ToolCall};
use evolve_hud_api::clean::{clean_line, TAG};
use lines::run_traces;

/// A rendered HUD.
#[derive(Debug, Clone, PartialEq)]
pub struct Rendered {
    pub text: String,
    pub tokens: usize,
}

/// How much detail one render may use.
#[derive(Debug, Clone, Copy)]
pub struct Budget {
    /// Tokens the whole HUD may take.
    pub tokens: usize,
    /// Tool calls listed at most.
    pub calls: usize,
}

impl Default for Budget {
    fn default() -> Self {
        Budget { tokens: 300, calls: 8 }
    }
}

const MAX_FILES: usize = 8;

/// Renders the HUD within `budget.tokens` as counted by `count`: the oldest
/// tool calls go first, then the least used files, then the model's
/// findings, then the goal is shortened. `findings` are shown with the open
/// problem of the call they were read from, and only while it is open.
///
/// Each trial is first estimated from per-line counts, which are cached
/// (most lines stay the same from one trial to the next); the whole text is
/// counted only once an estimate comes near the budget, so `tokens` is exact
/// and a render tokenises little more than the text it returns.
pub fn render(state: &SessionState, findings: &Findings, budget: Budget, count: &dyn Fn(&str) -> usize) -> Rendered {
    let calls = state.work_calls();
    let analysis = state.problems();
    let problems = open_problems(&analysis, findings);
    let bare_problems = if findings.is_empty() {
        None
    } else {
        Some(open_problems(&analysis, &Findings::new()))
    };
    // Those known to be open are listed first (open_problems' order).
    let confirmed = confirmed_problems(&analysis);
    let traces = run_traces(&calls);
    let mut lines = LineCounts::default();
    let mut first = true;
    // Calls carried over a compaction count in the problems, traces and
    // files, but are not listed as calls since it.
    let listed: Vec<&ToolCall> = calls.iter().filter(|c| is_listed(c, &analysis)).copied().collect();
    let mut shown_calls = listed.len().min(budget.calls);
    // What the files went through is in view until a compaction.
    let files = if state.compacted_at.is_some() {
        file_lines(&calls)
    } else {
        Vec::new()
    };
    let mut shown_files = files.len().min(MAX_FILES);
    let mut shown_traces = traces.len();
    let mut with_findings = bare_problems.is_some();
    let mut shown_problems = problems.len();
    let mut goal_chars = 300;
    loop {
        let shown = Shown {
            calls: shown_calls,
            files: shown_files,
            problems: shown_problems,
            traces: shown_traces,
            goal_chars,
        };
        let text = compose(
            state,
            Calls {
                all: &calls,
                listed: &listed,
            },
            &files,
            match (&bare_problems, with_findings) {
                (Some(bare), false) => bare,
                _ => &problems,
            },
            confirmed,
            &traces,
            shown,
        );
        // The first trial is counted whole (most HUDs fit at once). Later
        // ones are estimated from line sums, which run a little above
        // whole-text counts: past the margin a trial is over budget without
        // counting it whole.
        let exact = if first || lines.estimate(&text, count) <= budget.tokens + budget.tokens / 8 + 8 {
            Some(count(&text))
        } else {
            None
        };
        first = false;
        if let Some(tokens) = exact.filter(|&t| t <= budget.tokens) {
            return Rendered { text, tokens };
        }
        if shown_calls > 1 {
            shown_calls -= 1;
        } else if shown_files > 0 {
            shown_files -= 1;
        } else if shown_traces > 0 {
            shown_traces -= 1;
        } else if shown_problems > 1 {
            shown_problems -= 1;
        } else if with_findings {
            with_findings = false;
        } else if goal_chars > 40 {
            goal_chars /= 2;
        } else if shown_calls > 0 {
            shown_calls = 0;
        } else if shown_problems > 0 {
            shown_problems = 0;
        } else {
            // Nothing left to trim: the bare frame, whatever it costs.
            let tokens = exact.unwrap_or_else(|| count(&text));
            return Rendered { text, tokens };
        }
    }
}

/// `Context: 84,120 of 200,000 tokens used (42 %); masking took out about 12,000 …`,
/// as of the last request.
fn context_line(context: &evolve_hud_api::ContextUse) -> String {
    let mut line = format!("Context: {}", thousands(context.used));
    match context.limit.filter(|&l| l > 0) {
        Some(limit) => line.push_str(&format!(
            " of {} tokens used ({} %)",
            thousands(limit),
            context.used * 100 / limit
        )),
        None => line.push_str(" tokens used"),
    }
    if context.masked > 0 {
        line.push_str(&format!(
            "; masking took out about {} of superseded outputs",
            thousands(context.masked)
        ));
    }
    line.push('\n');
    line
}

/// `84120` as `84,120`.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Token counts of single lines, cached over the trials of one render.
#[derive(Default)]
struct LineCounts(std::collections::HashMap<String, usize>);

impl LineCounts {
    /// The sum of the counts of `text`'s lines (each with its newline).
    fn estimate(&mut self, text: &str, count: &dyn Fn(&str) -> usize) -> usize {
        text.split_inclusive('\n')
            .map(|line| match self.0.get(line) {
                Some(&n) => n,
                None => {
                    let n = count(line);
                    self.0.insert(line.to_owned(), n);
                    n
                }
            })
            .sum()
    }
}

/// How much of each section a render shows.
#[derive(Clone, Copy)]
struct Shown {
    calls: usize,
    files: usize,
    problems: usize,
    traces: usize,
    goal_chars: usize,
}

/// Whether `call` is listed among the tool calls: one since the last
/// compaction that ran a command or is still running, and a failure while
/// it is one of the `problems`. A read, edit or search that succeeded says
/// nothing its own message in view does not; a failure fixed since (or
/// failed again since) is told by its check's runs and problem, not as a
/// ✗ that reads as the state now.
fn is_listed(call: &ToolCall, problems: &crate::problems::Problems) -> bool {
    use crate::opencode::ToolStatus;
    if call.before_compaction {
        return false;
    }
    if call.failed() || call.status == ToolStatus::Error {
        return problems.is_open(&call.call_id);
    }
    call.command.is_some() || matches!(call.status, ToolStatus::Pending | ToolStatus::Running)
}

/// What is said of a failure not rerun since that a later pass may have run.
pub(crate) const UNCONFIRMED: &str = "not known to be open (a later pass may have run it)";

/// The session's calls, and those the call list may show.
struct Calls<'a> {
    all: &'a [&'a ToolCall],
    listed: &'a [&'a ToolCall],
}

fn compose(
    state: &SessionState,
    calls: Calls<'_>,
    files: &[String],
    problems: &[String],
    confirmed: usize,
    traces: &[String],
    shown: Shown,
) -> String {
    let Shown {
        calls: shown_calls,
        files: shown_files,
        problems: shown_problems,
        traces: shown_traces,
        goal_chars,
    } = shown;
    let Calls { all, listed: calls } = calls;
    let since_compaction = all.iter().filter(|c| !c.before_compaction).count() + state.dropped_calls;
    // No counter or clock in the text: the same facts give the same bytes,
    // which keeps the agent's prompt cache warm. The version is in the JSON.
    // Nothing the agent has in view is repeated: the user's request is
    // told only once a compaction took it out of the messages.
    let mut out = format!("<{TAG}>\n");
    if let (Some((at, goal)), Some(compacted)) = (&state.goal, state.compacted_at) {
        if *at <= compacted {
            out.push_str(&format!(
                "Goal (latest user request, before the last compaction): {}\n",
                clean_line(goal, goal_chars)
            ));
        }
    }
    if let Some(context) = &state.context {
        out.push_str(&context_line(context));
    }
    let since = if state.compacted_at.is_some() {
        " since the last compaction"
    } else {
        ""
    };
    if since_compaction == 0 {
        out.push_str(&format!("Tool calls{since}: none yet\n"));
    } else if calls.is_empty() {
        out.push_str(&format!(
            "Tool calls{since}: {since_compaction}; no runs or open failures\n"
        ));
    } else {
        let left_out = since_compaction - shown_calls;
        if shown_calls == 0 {
            out.push_str(&format!("Tool calls{since}: {since_compaction} (not shown)\n"));
        } else if left_out > 0 && shown_calls == 1 {
            out.push_str(&format!(
                "Tool calls{since}: {since_compaction}; listed: the last run or open failure:\n"
            ));
        } else if left_out > 0 {
            out.push_str(&format!(
                "Tool calls{since}: {since_compaction}; listed: the last {shown_calls} runs and open failures:\n"
            ));
        } else {
            out.push_str(&format!("Tool calls{since} ({since_compaction}):\n"));
        }
        // The same call line in a row (a command retried with the same
        // result) is listed once, with its count.
        let mut listed: Vec<(String, usize)> = Vec::new();
        for call in &calls[calls.len() - shown_calls..] {
            let line = call_line(call);
            match listed.last_mut() {
                Some((last, n)) if *last == line => *n += 1,
                _ => listed.push((line, 1)),
            }
        }
        for (line, n) in listed {
            if n > 1 {
                out.push_str(&format!("  {line} ×{n}\n"));
            } else {
                out.push_str(&format!("  {line}\n"));
            }
        }
    }
    if shown_files > 0 {
        let more = files.len() - shown_files;
        out.push_str(&format!("Files: {}", files[files.len() - shown_files..].join("; ")));
        if more > 0 {
            out.push_str(&format!("; +{more} more"));
        }
        out.push('\n');
    }
    for trace in &traces[traces.len() - shown_traces..] {
        out.push_str(trace);
        out.push('\n');
    }
    // The first `confirmed` are known to be open; the rest a later pass may
    // have run, so neither "open" nor "none" is said of them.
    let unconfirmed = problems.len() - confirmed;
    if shown_problems == 0 && !problems.is_empty() {
        out.push_str(&format!("Open problems: {confirmed}"));
        if unconfirmed > 0 {
            out.push_str(&format!(", and {unconfirmed} {UNCONFIRMED}"));
        }
        out.push('\n');
    } else if problems.is_empty() {
        if all.iter().any(|c| c.failed()) {
            out.push_str("Open problems: none (every failure has passed since)\n");
        }
    } else {
        for (i, p) in problems.iter().take(shown_problems).enumerate() {
            if i == 0 && confirmed > 0 {
                out.push_str("Open problems:\n");
            }
            if i == confirmed {
                out.push_str(&format!("Failed, {UNCONFIRMED}:\n"));
            }
            out.push_str(&format!("  - {p}\n"));
        }
        // The list is never cut silently: the rest are counted and named.
        let rest: Vec<String> = problems
            .iter()
            .skip(shown_problems)
            .map(|p| clean_line(p, 50))
            .collect();
        if !rest.is_empty() {
            let line = format!("  - +{} more: {}", rest.len(), rest.join("; "));
            out.push_str(&clean_line(&line, 240));
            out.push('\n');
        }
    }
    if let Some(todos) = &state.todos {
        let done = todos.iter().filter(|t| t.status == TodoStatus::Completed).count();
        let mut line = format!("Todos: {done}/{} done", todos.len());
        if let Some(now) = todos.iter().find(|t| t.status == TodoStatus::InProgress) {
            line.push_str(&format!("; in progress: {}", clean_line(&now.content, 80)));
        } else if let Some(next) = todos.iter().find(|t| t.status == TodoStatus::Pending) {
            line.push_str(&format!("; next: {}", clean_line(&next.content, 80)));
        }
        out.push_str(&line);
        out.push('\n');
    }
    out.push_str(&format!("</{TAG}>"));
    out
}
