//! Per-session state: the tool calls and the goal taken from OpenCode's
//! messages, merged idempotently and kept within byte limits.

pub mod call;
pub mod todo;

pub use call::{Said, ToolCall, ToolKind};
pub use todo::{Todo, TodoStatus};

use super::checks::Report;
use super::opencode::{Message, Part, Role, ToolState, ToolStatus};
use super::problems::Problems;
use super::text::Clipped;
use evolve_hud_api::clean::clean_line;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;

/// Bounds on what one session keeps.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Tool calls kept per session; the oldest go first.
    pub max_calls: usize,
    /// Bytes kept from the start and from the end of each tool output.
    pub output_head: usize,
    pub output_tail: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_calls: 200,
            output_head: 2048,
            output_tail: 2048,
        }
    }
}

/// What one session's HUD is built from.
#[derive(Debug, Clone, Default)]
pub struct SessionState {
    pub id: String,
    /// The latest request of the user, and when it was made.
    pub goal: Option<(f64, String)>,
    /// Shared, so a snapshot of the state for rendering is cheap.
    pub calls: HashMap<String, Arc<ToolCall>>,
    /// Calls dropped by the limit, and the start time below which resent
    /// calls are ignored.
    pub dropped_calls: usize,
    dropped_before: f64,
    /// Project root, for shortening paths.
    pub root: Option<String>,
    /// Start of the newest compaction seen (ms).
    pub compacted_at: Option<f64>,
    /// The current todo list, from the newest `todowrite` call or
    /// `todo.updated` event, and when it was written (ms).
    pub todos: Option<Vec<Todo>>,
    todos_at: f64,
    /// What the agent's last request took of its model's context, as the
    /// plugin reported it.
    pub context: Option<evolve_hud_api::ContextUse>,
    /// Bumped whenever the facts change (see [`SessionState::changed`]).
    pub version: u64,
    /// The open problems of this version, computed on first use.
    pub(super) analysis: std::sync::OnceLock<Arc<Problems>>,
    seen: u64,
    bytes: usize,
}

/// A user message's text that a context plugin wrote in place of what the
/// user said: DCP's summary of a pruned stretch (`[Compressed conversation
/// section] … <dcp-message-id>…`). Not the user's request.
fn written_by_a_plugin(text: &str) -> bool {
    let text = text.trim_start();
    text.starts_with("[Compressed conversation section]") || text.contains("<dcp-message-id>")
}

impl SessionState {
    pub fn new(id: &str) -> Self {
        SessionState {
            id: id.to_owned(),
            ..Default::default()
        }
    }

    /// Approximate bytes held.
    pub fn bytes(&self) -> usize {
        self.bytes
            + self.goal.as_ref().map_or(0, |g| g.1.len())
            + self
                .todos
                .as_ref()
                .map_or(0, |t| t.iter().map(|t| t.content.len() + 16).sum())
    }

    /// Replaces the todo list unless a newer one is already held; returns
    /// whether it changed.
    pub fn set_todos(&mut self, todos: Vec<Todo>, at: f64) -> bool {
        if at < self.todos_at || self.todos.as_ref() == Some(&todos) {
            return false;
        }
        self.todos = Some(todos);
        self.todos_at = at;
        self.changed();
        true
    }

    /// Records a compaction at `at` (ms, from `session.compacted`) unless a
    /// later one is known; returns whether it changed anything.
    pub fn set_compacted(&mut self, at: f64) -> bool {
        let changed = self.mark_compaction(at);
        if changed {
            self.changed();
        }
        changed
    }

    /// A compaction boundary: the transcript now starts at OpenCode's summary,
    /// and resends of parts before it are ignored. Only what the summary
    /// made stale goes: the calls before it are dropped but for what is
    /// still true, which stays marked [`ToolCall::before_compaction`]: every
    /// run of a check that is still failing (its open problem and run
    /// trace), and the file operations (the files touched).
    fn mark_compaction(&mut self, at: f64) -> bool {
        if self.compacted_at.is_some_and(|c| c >= at) {
            return false;
        }
        self.compacted_at = Some(at);
        self.dropped_before = self.dropped_before.max(at);
        let (drop, keep): (Vec<String>, Vec<String>) = {
            // The facts are changing: computed afresh, not from the cache.
            let problems = self.compute_problems();
            let open: std::collections::HashSet<_> = problems.open.iter().map(|p| p.call.check()).collect();
            let before = self.calls.values().filter(|c| c.start < at);
            before.map(|c| c.call_id.clone()).partition(|id| {
                let c = &self.calls[id];
                !(open.contains(&c.check()) || c.kind == ToolKind::File)
            })
        };
        for id in drop {
            if let Some(c) = self.calls.remove(&id) {
                self.bytes -= c.bytes();
            }
        }
        for id in keep {
            if let Some(c) = self.calls.get_mut(&id).filter(|c| !c.before_compaction) {
                Arc::make_mut(c).before_compaction = true;
            }
        }
        true
    }

    /// Notes what the agent's last request took of its context; whether it changed.
    pub fn set_context(&mut self, context: evolve_hud_api::ContextUse) -> bool {
        if self.context == Some(context) {
            return false;
        }
        self.context = Some(context);
        self.changed();
        true
    }

    /// Marks a change of the facts: a new version, whose analysis is
    /// computed afresh.
    fn changed(&mut self) {
        self.version += 1;
        self.analysis = std::sync::OnceLock::new();
    }

    /// The calls the facts are about, in the order they started: all but
    /// the todo list's own (`todowrite`, `todoread`), which the Todos line
    /// shows instead.
    pub fn work_calls(&self) -> Vec<&ToolCall> {
        let mut calls = self.ordered_calls();
        calls.retain(|c| c.kind != ToolKind::Todo);
        calls
    }

    /// Tool calls in the order they started.
    pub fn ordered_calls(&self) -> Vec<&ToolCall> {
        let mut calls: Vec<&ToolCall> = self.calls.values().map(Arc::as_ref).collect();
        calls.sort_by(|a, b| a.start.total_cmp(&b.start).then(a.seen.cmp(&b.seen)));
        calls
    }

    /// Merges messages; returns whether any fact changed. Merging the same
    /// messages again, or older states of the same parts, changes nothing.
    pub fn merge(&mut self, messages: &[Message], limits: &Limits) -> bool {
        let mut changed = false;
        for message in messages {
            let created = message.info.time.as_ref().and_then(|t| t.created).unwrap_or(0.0);
            // Outside a git repository OpenCode's root is "/"; the working
            // directory is the project then.
            let usable = |p: &Option<String>| p.clone().filter(|p| p != "/" && !p.is_empty());
            if let Some(root) = message
                .info
                .path
                .as_ref()
                .and_then(|p| usable(&p.root).or_else(|| usable(&p.cwd)))
            {
                if self.root.as_deref() != Some(&root) {
                    self.root = Some(root);
                    changed |= self.rebase_calls();
                }
            }
            if message.info.role == Role::User {
                changed |= self.merge_user(message, created);
            }
            for part in &message.parts {
                match part {
                    Part::Tool {
                        call_id, tool, state, ..
                    } => {
                        changed |= self.merge_tool(call_id, tool, state, created, limits);
                    }
                    Part::Compaction { .. } => changed |= self.mark_compaction(created),
                    _ => {}
                }
            }
        }
        changed |= self.enforce(limits);
        if changed {
            self.changed();
        }
        changed
    }

    /// Records one tool call as it reached the sidecar outside a message: a
    /// forwarded `tool.execute.after` event, seen at `at` (ms). The same
    /// merge as a tool part of a message, so the call ends the same
    /// whichever way it came; returns whether any fact changed.
    pub fn record_call(&mut self, call_id: &str, tool: &str, state: &ToolState, at: f64, limits: &Limits) -> bool {
        let changed = self.merge_tool(call_id, tool, state, at, limits) | self.enforce(limits);
        if changed {
            self.changed();
        }
        changed
    }

    fn merge_user(&mut self, message: &Message, created: f64) -> bool {
        let text: Vec<&str> = message
            .parts
            .iter()
            .filter_map(|p| match p {
                Part::Text { text, synthetic, .. }
                    if synthetic != &Some(true) && !text.trim().is_empty() && !written_by_a_plugin(text) =>
                {
                    Some(text.as_str())
                }
                _ => None,
            })
            .collect();
        if text.is_empty() {
            return false;
        }
        let goal = text.join(" ");
        match &self.goal {
            Some((t, g)) if *t > created || (*t == created && *g == goal) => false,
            _ => {
                self.goal = Some((created, goal));
                true
            }
        }
    }

    fn merge_tool(&mut self, call_id: &str, tool: &str, state: &ToolState, created: f64, limits: &Limits) -> bool {
        let start = state.time.as_ref().and_then(|t| t.start).unwrap_or(created);
        if start < self.dropped_before {
            return false;
        }
        // A resend of a call already held whole (the common case of a full
        // sync) adds nothing: skip clipping and reading its output again.
        if let Some(old) = self.calls.get(call_id) {
            let exit_known = old.exit.is_some() || state.metadata.as_ref().and_then(|m| m.get("exit")).is_none();
            if old.status.rank() >= state.status.rank()
                && old.subject().is_some()
                && (old.output.is_some() || state.output.is_none())
                && (old.error.is_some() || state.error.is_none())
                && exit_known
            {
                return false;
            }
        }
        let input = &state.input;
        let field = |k: &str| input.get(k).and_then(Value::as_str).map(str::to_owned);
        let path = field("filePath").or_else(|| field("path")).map(|p| self.relative(&p));
        let kind = ToolKind::of(tool);
        let command = if kind == ToolKind::Shell {
            field("command").map(|c| self.without_cd_root(&c))
        } else {
            None
        };
        let detail = if command.is_none() && path.is_none() {
            field("pattern")
                .or_else(|| field("url"))
                .or_else(|| field("description"))
                .or_else(|| field("query"))
                .or_else(|| {
                    input
                        .as_object()
                        .and_then(|o| o.values().find_map(Value::as_str))
                        .map(str::to_owned)
                })
        } else {
            None
        };
        let exit = state
            .metadata
            .as_ref()
            .and_then(|m| m.get("exit"))
            .and_then(Value::as_i64);
        if tool == "todowrite" && state.status == ToolStatus::Completed && start >= self.todos_at {
            let todos = Todo::list(input.get("todos").unwrap_or(&Value::Null));
            if self.todos.as_ref() != Some(&todos) {
                self.todos = Some(todos);
                self.todos_at = start;
            }
        }
        let seen = self.calls.get(call_id).map_or_else(
            || {
                self.seen += 1;
                self.seen
            },
            |c| c.seen,
        );
        let output = state
            .output
            .as_deref()
            .map(|o| Clipped::from_client(o, state.clipped.as_ref(), limits.output_head, limits.output_tail));
        // The runner's summary and failures from the whole output where the
        // sidecar has it (a long failing run names its failures in the
        // middle); from what the plugin kept where it clipped the output.
        // None from runs of other commits (`git bisect run`).
        let mut report = match (&output, state.output.as_deref()) {
            (Some(kept), Some(whole))
                if command
                    .as_deref()
                    .is_some_and(|c| !crate::command::checks_other_versions(c)) =>
            {
                match state.clipped {
                    Some(_) => super::checks::read(&kept.kept_text()).map(|mut r| {
                        if kept.kept_lines().count() < kept.lines {
                            r.read_from_part();
                        }
                        r
                    }),
                    None => super::checks::read(whole),
                }
            }
            _ => None,
        };
        if let Some(report) = &mut report {
            self.relative_names(report);
            // A loop runs its body several times: one summary in its output
            // is one pass's, not the command's count.
            if command.as_deref().is_some_and(crate::command::loops) {
                report.as_one_of_runs();
            }
        }
        let mut call = ToolCall {
            call_id: call_id.to_owned(),
            tool: clean_line(tool, 40),
            kind,
            status: state.status,
            command: command.map(|c| clean_line(&c, 400)),
            path: path.map(|p| clean_line(&p, 400)),
            detail: detail.map(|d| clean_line(&d, 200)),
            range: (tool == "read")
                .then(|| {
                    let number = |k: &str| input.get(k).and_then(Value::as_u64).map(|n| format!("{k} {n}"));
                    let parts: Vec<String> = ["offset", "limit"].into_iter().filter_map(number).collect();
                    (!parts.is_empty()).then(|| parts.join(", "))
                })
                .flatten(),
            written: (tool == "write")
                .then(|| input.get("content").and_then(Value::as_str).map(str::len))
                .flatten(),
            exit,
            output,
            report,
            error: state
                .error
                .as_deref()
                .map(|e| Clipped::new(e, limits.output_head, 0).head),
            start,
            seen,
            before_compaction: false,
            said: Said::default(),
        };
        call.read_what_is_said();
        // The most complete record of a call wins: the later state, with
        // what only the other record holds filled in (a `tool.execute.after`
        // event or evolve's `tool_after` carries no input; the sync or
        // `tool_before` that does may come before or after it).
        if let Some(old) = self.calls.get(call_id) {
            if old.status.rank() >= call.status.rank() {
                let mut kept = (**old).clone();
                kept.fill_from(&call);
                if kept == **old {
                    return false;
                }
                call = kept;
            } else {
                call.fill_from(old);
            }
            call.start = old.start.min(call.start);
        }
        if let Some(old) = self.calls.insert(call_id.to_owned(), Arc::new(call)) {
            self.bytes -= old.bytes();
        }
        self.bytes += self.calls[call_id].bytes();
        true
    }

    /// Drops the oldest calls over the limit.
    fn enforce(&mut self, limits: &Limits) -> bool {
        if self.calls.len() <= limits.max_calls {
            return false;
        }
        let excess = self.calls.len() - limits.max_calls;
        let drop: Vec<(String, f64)> = self
            .ordered_calls()
            .into_iter()
            .take(excess)
            .map(|c| (c.call_id.clone(), c.start))
            .collect();
        for (id, start) in drop {
            if let Some(c) = self.calls.remove(&id) {
                self.bytes -= c.bytes();
            }
            self.dropped_before = self.dropped_before.max(start);
            self.dropped_calls += 1;
        }
        true
    }

    /// Calls recorded before the project root was known, rewritten as if it
    /// had been: `cd <root> && sh check.sh` is then `sh check.sh`, the same
    /// check as the calls after it, and paths are relative.
    fn rebase_calls(&mut self) -> bool {
        let stale: Vec<String> = self
            .calls
            .iter()
            .filter(|(_, c)| {
                c.command.as_deref().is_some_and(|cmd| self.without_cd_root(cmd) != cmd)
                    || c.path.as_deref().is_some_and(|p| self.relative(p) != p)
                    || c.report
                        .as_ref()
                        .is_some_and(|r| r.failures.iter().any(|f| self.relative(&f.name) != f.name))
            })
            .map(|(id, _)| id.clone())
            .collect();
        for id in &stale {
            let mut call = (*self.calls[id]).clone();
            call.command = call.command.map(|c| self.without_cd_root(&c));
            call.path = call.path.map(|p| self.relative(&p));
            if let Some(report) = &mut call.report {
                self.relative_names(report);
            }
            call.read_what_is_said();
            self.bytes += call.bytes();
            if let Some(old) = self.calls.insert(id.clone(), Arc::new(call)) {
                self.bytes -= old.bytes();
            }
        }
        !stale.is_empty()
    }

    /// `command` without a leading `cd <project root> &&` (or `;`): the
    /// agent's shell starts there already, so it says nothing, and it would
    /// take the start of every command line in the HUD.
    fn without_cd_root(&self, command: &str) -> String {
        let Some(root) = self.root.as_deref() else {
            return command.to_owned();
        };
        let Some(rest) = command.trim_start().strip_prefix("cd ") else {
            return command.to_owned();
        };
        let rest = rest.trim_start();
        let forms = [
            format!("\"{root}\""),
            format!("'{root}'"),
            format!("{root}/"),
            root.to_owned(),
        ];
        forms
            .iter()
            .filter_map(|form| rest.strip_prefix(form.as_str()))
            .filter_map(|after| {
                let after = after.trim_start();
                after.strip_prefix("&&").or_else(|| after.strip_prefix(';'))
            })
            .map(str::trim_start)
            .find(|tail| !tail.is_empty())
            .map_or_else(|| command.to_owned(), str::to_owned)
    }

    /// A report's failures named by paths under the project root, named
    /// relative to it (`src/todo.js:16`).
    fn relative_names(&self, report: &mut Report) {
        for failure in &mut report.failures {
            failure.name = self.relative(&failure.name);
        }
    }

    fn relative(&self, path: &str) -> String {
        match &self.root {
            Some(root) => path
                .strip_prefix(root.as_str())
                .and_then(|rest| rest.strip_prefix('/'))
                .filter(|rest| !rest.is_empty())
                .map_or_else(|| path.to_owned(), str::to_owned),
            None => path.to_owned(),
        }
    }
}

impl SessionState {
    /// The open problems of this version of the facts, computed once.
    pub fn problems(&self) -> Arc<Problems> {
        Arc::clone(self.analysis.get_or_init(|| Arc::new(self.compute_problems())))
    }

    /// The open problems computed afresh (while the facts are changing).
    fn compute_problems(&self) -> Problems {
        let mut calls: Vec<&Arc<ToolCall>> = self.calls.values().filter(|c| c.kind != ToolKind::Todo).collect();
        calls.sort_by(|a, b| a.start.total_cmp(&b.start).then(a.seen.cmp(&b.seen)));
        Problems::of(&calls)
    }
}
