//! Importers for public task formats, each mapped onto surfgym tasks and rubrics. Every
//! item is converted on its own: a bad item is reported, the good ones are kept. JSON
//! formats take JSON Lines, one JSON array, one pretty-printed object (a WebArena
//! `config_files/N.json`), such objects one after another, or ([`import_path`]) a
//! directory of such files. Benchmark tasks are imported into the `test` split unless the
//! import names another ([`ImportOptions::split`]).
//!
//! - **WebVoyager** JSONL: `{"web_name", "id", "ques", "web"}`. The question becomes a
//!   model-judged fact (WebVoyager is judged by a model); a reference answer can be merged
//!   in with `reference_answers`.
//! - **WebArena / VisualWebArena** configs: `eval_types` `string_match` (`exact_match`,
//!   `must_include`, `fuzzy_match`), `url_match` (`reference_url`, any of `|OR|`, matched
//!   as WebArena's evaluator does: the reference contained in the normalised final URL, its
//!   query parameters among the URL's) and `program_html` (`url`, `locator`,
//!   `required_contents`) become answer, URL and JavaScript rule checks;
//!   `__SHOPPING__`-style URL placeholders are replaced by the base URLs given. A
//!   `program_html` entry on `last` reads the final page; one with a URL becomes a check
//!   with that `page`, opened in the episode's browser context after the final page was
//!   captured (as WebArena's evaluator does). WebArena's Python helpers (`func:...`)
//!   cannot run here; such items are reported as errors, not imported with a wrong check.
//!   `require_login` / `storage_state` (a saved logged-in browser state) are not restored:
//!   such tasks are imported with a warning. A JSON array with a syntax error keeps its
//!   well-formed items; the broken one is reported with its line and column.
//! - **MiniWoB++** suite: one task name per line (`click-test`, or BrowserGym's
//!   `miniwob.click-test`; `#` starts a comment), each a seeded MiniWoB++ episode judged
//!   by MiniWoB's own reward; the `MINIWOB` base is where MiniWoB++'s `html/` is served.
//! - **WebGym** task records as released (`task_name`, `website`, `evaluator_reference`
//!   fact groups, `definite_answer`, `difficulty`, `task_id`): see `webgym.rs`.

mod items;
mod webarena;
mod webgym;
mod webvoyager;

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::import::ImportLine;
use crate::task::{FieldError, Split, Task, TaskSpec};

/// A supported import format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// surfgym's own task JSON, one per line.
    Surfgym,
    /// WebVoyager's JSONL.
    WebVoyager,
    /// WebArena / VisualWebArena configs.
    WebArena,
    /// WebGym-style tasks with fact groups.
    WebGym,
    /// The MiniWoB++ suite: task names.
    MiniWob,
}

impl Format {
    /// Every format's name, for messages.
    pub const NAMES: &'static str = "surfgym, webvoyager, webarena, webgym, miniwob";

    /// Parses a format name (`surfgym`, `webvoyager`, `webarena`, `webgym`, `miniwob`).
    pub fn parse(s: &str) -> Option<Format> {
        match s.to_ascii_lowercase().as_str() {
            "surfgym" | "jsonl" => Some(Format::Surfgym),
            "webvoyager" => Some(Format::WebVoyager),
            "webarena" | "visualwebarena" => Some(Format::WebArena),
            "webgym" => Some(Format::WebGym),
            "miniwob" | "miniwob++" => Some(Format::MiniWob),
            _ => None,
        }
    }
}

pub(super) fn err(field: impl Into<String>, message: impl Into<String>) -> Vec<FieldError> {
    vec![FieldError {
        field: field.into(),
        message: message.into(),
    }]
}

pub(super) fn slug(s: &str) -> String {
    let mut out: String = s
        .to_ascii_lowercase()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '_' {
                c
            } else {
                '-'
            }
        })
        .collect();
    while out.contains("--") {
        out = out.replace("--", "-");
    }
    out.trim_matches('-').chars().take(100).collect()
}

pub(super) fn str_field<'a>(v: &'a Value, key: &str) -> Result<&'a str, Vec<FieldError>> {
    match v.get(key) {
        Some(Value::String(s)) if !s.trim().is_empty() => Ok(s),
        Some(Value::Number(_)) => Err(err(key, "must be a string")),
        Some(_) => Err(err(key, "must be a non-empty string")),
        None => Err(err(key, "is required")),
    }
}

/// A task converted from another format, before validation, with what the conversion
/// could not carry over.
struct Converted {
    spec: Value,
    warnings: Vec<FieldError>,
}

impl From<Value> for Converted {
    fn from(spec: Value) -> Converted {
        Converted {
            spec,
            warnings: Vec::new(),
        }
    }
}

/// What an import needs besides the file.
#[derive(Debug, Clone, Default)]
pub struct ImportOptions {
    /// WebArena's URL placeholders (`SHOPPING` → `http://...`) and MiniWoB++'s `MINIWOB`.
    pub bases: BTreeMap<String, String>,
    /// WebVoyager's reference answers, by task id.
    pub reference_answers: BTreeMap<String, String>,
    /// The split of every imported task. Unset: `test` for the benchmark formats (their
    /// tasks are evaluation sets), and for surfgym's own format each task's `split` (by
    /// default derived from its site). A surfgym task that names its own split keeps it.
    pub split: Option<Split>,
}

impl Format {
    /// The split a benchmark's tasks get unless the import names one: `None` for
    /// surfgym's own format, whose tasks carry (or derive) their own.
    pub fn default_split(self) -> Option<Split> {
        match self {
            Format::Surfgym => None,
            Format::WebVoyager | Format::WebArena | Format::WebGym | Format::MiniWob => {
                Some(Split::Test)
            }
        }
    }
}

/// Validates a converted (or surfgym) task, its split set unless it names one.
fn build(mut spec: Value, split: Option<Split>) -> Result<Task, Vec<FieldError>> {
    if let (Some(split), Some(fields)) = (split, spec.as_object_mut()) {
        fields
            .entry("split")
            .or_insert_with(|| json!(split.as_str()));
    }
    Task::try_from(TaskSpec::from_json(spec)?)
}

/// Imports a file in `format`: one [`ImportLine`] per item, numbered by the line it
/// starts on. JSON formats take JSON Lines, one JSON array, one (pretty-printed) object or
/// such objects one after another; see [`import_path`] for a directory of files.
pub fn import(format: Format, text: &str, opts: &ImportOptions) -> Vec<ImportLine> {
    if format == Format::MiniWob {
        return miniwob(text, opts);
    }
    let split = opts.split.or(format.default_split());
    items::items(text)
        .into_iter()
        .map(|(line, item)| {
            let converted = item.and_then(|v| match format {
                Format::Surfgym => Ok(Converted::from(v)),
                Format::WebVoyager => webvoyager::convert(&v, &opts.reference_answers),
                Format::WebArena => webarena::convert(&v, &opts.bases),
                Format::WebGym => webgym::convert(&v),
                Format::MiniWob => unreachable!("handled above"),
            });
            match converted {
                Ok(c) => ImportLine {
                    line,
                    result: build(c.spec, split),
                    warnings: c.warnings,
                },
                Err(errors) => ImportLine {
                    line,
                    result: Err(errors),
                    warnings: Vec::new(),
                },
            }
        })
        .collect()
}

fn miniwob(text: &str, opts: &ImportOptions) -> Vec<ImportLine> {
    let split = opts.split.or(Format::MiniWob.default_split());
    text.lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l.split('#').next().unwrap_or_default().trim()))
        .filter(|(_, l)| !l.is_empty())
        .map(|(line, name)| {
            let name = name.strip_prefix("miniwob.").unwrap_or(name);
            let valid = name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_'));
            let result = match opts.bases.get("MINIWOB") {
                None => Err(err(
                    "name",
                    "no base URL for MiniWoB++ (give MINIWOB=http://... where its html/ is served)",
                )),
                Some(_) if !valid => Err(err(
                    "name",
                    format!("`{name}` is not a MiniWoB++ task name (like click-test)"),
                )),
                Some(base) => {
                    let mut spec = crate::import::miniwob_spec(name, base);
                    if let Some(split) = split {
                        spec["split"] = json!(split.as_str());
                    }
                    build(spec, None)
                }
            };
            ImportLine {
                line,
                result,
                warnings: Vec::new(),
            }
        })
        .collect()
}

/// Imports `path`: a file, or every `.json` / `.jsonl` file directly in a directory
/// (WebArena's `config_files/`), in name order with numbers by value (`2.json` before
/// `10.json`). Each file's lines come with its path; an unreadable file is an error
/// naming it.
pub fn import_path(
    format: Format,
    path: &std::path::Path,
    opts: &ImportOptions,
) -> std::io::Result<Vec<(std::path::PathBuf, Vec<ImportLine>)>> {
    let named = |p: &std::path::Path, e: std::io::Error| {
        std::io::Error::new(e.kind(), format!("{}: {e}", p.display()))
    };
    let files = if path.is_dir() {
        let mut files = Vec::new();
        for entry in std::fs::read_dir(path).map_err(|e| named(path, e))? {
            let p = entry.map_err(|e| named(path, e))?.path();
            if p.is_file() && p.extension().is_some_and(|x| x == "json" || x == "jsonl") {
                files.push(p);
            }
        }
        let key = |p: &std::path::PathBuf| {
            let stem = p.file_stem().map(|s| s.to_string_lossy().into_owned());
            let number = stem.as_deref().and_then(|s| s.parse::<u64>().ok());
            (number.is_none(), number, p.clone())
        };
        files.sort_by_key(key);
        files
    } else {
        vec![path.to_path_buf()]
    };
    files
        .into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(&p).map_err(|e| named(&p, e))?;
            let lines = import(format, &text, opts);
            Ok((p, lines))
        })
        .collect()
}
