//! The agent's todo list, as OpenCode's todo tools and events carry it.

use evolve_hud_api::clean::clean_line;
use serde_json::Value;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Todo {
    pub content: String,
    pub status: TodoStatus,
}

/// A todo's state, as OpenCode's todo tools name them; another word (a
/// plugin's) is kept, cleaned, and counts as not done.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TodoStatus {
    Pending,
    InProgress,
    Completed,
    Cancelled,
    Other(String),
}

impl TodoStatus {
    fn of(word: &str) -> TodoStatus {
        match word {
            "pending" => TodoStatus::Pending,
            "in_progress" => TodoStatus::InProgress,
            "completed" => TodoStatus::Completed,
            "cancelled" => TodoStatus::Cancelled,
            other => TodoStatus::Other(clean_line(other, 24)),
        }
    }

    /// Completed or cancelled: nothing left to do.
    pub fn closed(&self) -> bool {
        matches!(self, TodoStatus::Completed | TodoStatus::Cancelled)
    }
}

impl std::fmt::Display for TodoStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            TodoStatus::Pending => "pending",
            TodoStatus::InProgress => "in_progress",
            TodoStatus::Completed => "completed",
            TodoStatus::Cancelled => "cancelled",
            TodoStatus::Other(word) => word,
        })
    }
}

impl Todo {
    /// Parses OpenCode's todo array (`[{content, status, …}]`), skipping
    /// entries without content.
    pub fn list(items: &Value) -> Vec<Todo> {
        items
            .as_array()
            .map(|items| {
                items
                    .iter()
                    .filter_map(|t| {
                        Some(Todo {
                            content: t.get("content")?.as_str()?.to_owned(),
                            status: TodoStatus::of(t.get("status").and_then(Value::as_str).unwrap_or("pending")),
                        })
                    })
                    .collect()
            })
            .unwrap_or_default()
    }
}
