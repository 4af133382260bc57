//! Task suites as JSON Lines: one task per line, each line judged on its own.

use crate::task::{FieldError, Task, TaskSpec};

/// The outcome of one line of a JSONL import.
#[derive(Debug)]
pub struct ImportLine {
    /// 1-based line number.
    pub line: usize,
    /// The task, or every problem found on that line.
    pub result: Result<Task, Vec<FieldError>>,
    /// What the import could not carry over into a task it imported (e.g. WebArena's
    /// `require_login`), each naming its field in the source.
    pub warnings: Vec<FieldError>,
}

/// Parses JSONL: blank lines are skipped; a bad line never affects the others.
pub fn parse_jsonl(text: &str) -> Vec<ImportLine> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| ImportLine {
            line: i + 1,
            result: parse_task(l),
            warnings: Vec::new(),
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

/// The MiniWoB++ importer: one task per MiniWoB++ page, started as a seeded MiniWoB
/// episode (its utterance becomes the instruction) and judged by MiniWoB's own reward.
/// `base` is the URL where MiniWoB++'s `html/` directory is served.
pub fn miniwob_task(name: &str, base: &str) -> Result<Task, Vec<FieldError>> {
    Task::try_from(TaskSpec::from_json(miniwob_spec(name, base))?)
}

/// The spec of [`miniwob_task`], before validation.
pub(crate) fn miniwob_spec(name: &str, base: &str) -> serde_json::Value {
    serde_json::json!({
        "id": format!("miniwob.{name}"),
        "site": "miniwob",
        "instruction": format!("MiniWoB++ {name}: the page states the goal."),
        "start_url": format!("{}/miniwob/{name}.html", base.trim_end_matches('/')),
        "tags": ["miniwob"],
        "split": "test",
        "max_steps": 20,
        "setup": {"type": "miniwob"},
        // BrowserGym's screen for MiniWoB++: the 160x210 task area with a margin, so a
        // screenshot is the task, not a mostly blank 1280x720 page.
        "screen": {"width": 332, "height": 214, "device_scale": 1.5},
        "rubric": {"groups": [{"id": "reward", "facts": [{"id": "miniwob.reward",
            "description": "MiniWoB++ reports a positive reward", "check": {"type": "miniwob"}}]}]}
    })
}
