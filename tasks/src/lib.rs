//! Web tasks: the task model, its validation, task-suite import, and the bundled practice
//! websites with their task suite.
//!
//! A [`TaskSpec`] is what users send (JSON, every field optional); `Task::try_from(spec)`
//! validates it into a [`Task`] or returns every [`FieldError`], each naming its field
//! (`start_url`, `rubric.groups[0].facts[1].check.regex`, `reference_solution[3]`).
//! [`parse_jsonl`] imports suites line by line. [`site_file`] serves the bundled sites'
//! files and [`bundled_tasks`] the tasks written for them; [`reviewed`] the labelled
//! episodes of other policies kept beside them.
//!
//! Plain models and logic: this crate knows nothing of HTTP servers, browsers or Postgres
//! (it uses `spaces`' action grammar for reference solutions; no browser behind it).
#![deny(missing_docs)]

pub mod audit;
mod bundled;
pub mod formats;
mod import;
pub mod reviewed;
mod sites;
mod task;

pub use bundled::{BundledLine, bundled_tasks};
pub use import::{ImportLine, miniwob_task, parse_jsonl, parse_task};
pub use sites::{SiteFile, site_file, site_names};
pub use task::{
    Difficulty, FieldError, MAX_STEPS_LIMIT, Setup, Split, Task, TaskId, TaskSpec, find_nul,
};
