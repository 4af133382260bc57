//! Task suites as JSON Lines: one task per line, each line judged on its own.

use crate::task::{FieldError, Task, TaskSpec};

/// The outcome of one line of a JSONL import.
#[derive(Debug)]
pub struct ImportLine {
    /// 1-based line number.
    pub line: usize,
    /// The task, or every problem found on that line.
    pub result: Result<Task, Vec<FieldError>>,
}

/// Parses JSONL: blank lines are skipped; a bad line never affects the others.
pub fn parse_jsonl(text: &str) -> Vec<ImportLine> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| ImportLine {
            line: i + 1,
            result: parse_task(l),
        })
        .collect()
}

/// Parses and validates one task from JSON text.
pub fn parse_task(json: &str) -> Result<Task, Vec<FieldError>> {
    let value: serde_json::Value = serde_json::from_str(json).map_err(|e| {
        vec![FieldError {
            field: String::new(),
            message: format!("invalid JSON: {e}"),
        }]
    })?;
    Task::try_from(TaskSpec::from_json(value)?)
}
