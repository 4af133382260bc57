//! Importers for public task formats, each mapped onto surfgym tasks and rubrics. Every
//! item is converted on its own: a bad item is reported, the good ones are kept.
//!
//! - **WebVoyager** JSONL: `{"web_name", "id", "ques", "web"}`. The question becomes a
//!   model-judged fact (WebVoyager is judged by a model); a reference answer can be merged
//!   in with `reference_answers`.
//! - **WebArena / VisualWebArena** configs (a JSON array, or JSONL): `eval_types`
//!   `string_match` (`exact_match`, `must_include`, `fuzzy_match`), `url_match`
//!   (`reference_url`, compared as a normalised URL: path and query, any of `|OR|`) and
//!   `program_html` (`url`, `locator`, `required_contents`) become answer, URL and
//!   JavaScript rule checks; `__SHOPPING__`-style URL placeholders are replaced by the base
//!   URLs given. A `program_html` entry on `last` reads the final page; one with a URL
//!   becomes a check with that `page`, opened in the episode's browser context after the
//!   final page was captured (as WebArena's evaluator does). WebArena's Python helpers
//!   (`func:...`) cannot run here; such items are reported as errors, not imported with a
//!   wrong check. A JSON
//!   array with a syntax error keeps its well-formed items; the broken one is reported
//!   with its line and column.
//! - **MiniWoB++** suite: one task name per line (`click-test`, or BrowserGym's
//!   `miniwob.click-test`; `#` starts a comment), each a seeded MiniWoB++ episode judged
//!   by MiniWoB's own reward; the `MINIWOB` base is where MiniWoB++'s `html/` is served.
//! - **WebGym-style** JSONL: `{"id", "website", "start_url", "task", "fact_groups":
//!   [["fact", ...] | {"facts": [...]}, ...], "reference_answer"}`: facts in words, each a
//!   model-judged fact, grouped as given.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::import::ImportLine;
use crate::task::{FieldError, Task, TaskSpec};

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

fn err(field: impl Into<String>, message: impl Into<String>) -> Vec<FieldError> {
    vec![FieldError {
        field: field.into(),
        message: message.into(),
    }]
}

fn slug(s: &str) -> String {
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

fn str_field<'a>(v: &'a Value, key: &str) -> Result<&'a str, Vec<FieldError>> {
    match v.get(key) {
        Some(Value::String(s)) if !s.trim().is_empty() => Ok(s),
        Some(Value::Number(_)) => Err(err(key, "must be a string")),
        Some(_) => Err(err(key, "must be a non-empty string")),
        None => Err(err(key, "is required")),
    }
}

fn build(spec: Value) -> Result<Task, Vec<FieldError>> {
    Task::try_from(TaskSpec::from_json(spec)?)
}

/// Items of a file: JSON Lines, or one JSON array. Items are numbered by the line they
/// start on.
fn items(text: &str) -> Vec<(usize, Result<Value, Vec<FieldError>>)> {
    let trimmed = text.trim_start();
    if trimmed.starts_with('[') {
        let offset = text.len() - trimmed.len();
        return array_items(text, offset);
    }
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            (
                i + 1,
                serde_json::from_str(l).map_err(|e| err("", format!("invalid JSON: {e}"))),
            )
        })
        .collect()
}

fn line_of(text: &str, byte: usize) -> usize {
    text[..byte].matches('\n').count() + 1
}

/// The elements of a JSON array, each parsed on its own, so that one broken element (a
/// missing quote, a stray comma) costs only itself. Elements are split at the array's
/// top-level commas, found by a scan that follows strings and nesting.
fn array_items(text: &str, open: usize) -> Vec<(usize, Result<Value, Vec<FieldError>>)> {
    let bytes = text.as_bytes();
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    let mut spans: Vec<(usize, usize)> = Vec::new();
    let mut start = open + 1;
    let mut closed = false;
    for (i, &b) in bytes.iter().enumerate().skip(open + 1) {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => depth += 1,
            b']' | b'}' if depth > 0 => depth -= 1,
            b']' => {
                spans.push((start, i));
                closed = true;
                break;
            }
            b',' if depth == 0 => {
                spans.push((start, i));
                start = i + 1;
            }
            _ => {}
        }
    }
    if !closed {
        spans.push((start, text.len()));
    }
    let last = spans.len().saturating_sub(1);
    let mut out = Vec::new();
    for (k, (from, to)) in spans.into_iter().enumerate() {
        let piece = &text[from..to];
        let at = from + (piece.len() - piece.trim_start().len());
        let line = line_of(text, at);
        if piece.trim().is_empty() {
            // `[]` or a trailing comma hold no item; an empty one between commas is an error.
            if k < last {
                out.push((line, Err(err("", format!("invalid JSON in the array at line {line}: an empty item (a stray comma)")))));
            }
            continue;
        }
        let result = serde_json::from_str::<Value>(&text[at..to]).map_err(|e| {
            // serde's position is within the item: make it the file's.
            let file_line = line + e.line().saturating_sub(1);
            let column = if e.line() <= 1 {
                at - text[..at].rfind('\n').map_or(0, |n| n + 1) + e.column()
            } else {
                e.column()
            };
            err(
                "",
                format!("invalid JSON in the array at line {file_line}, column {column}: {e}"),
            )
        });
        out.push((line, result));
    }
    if !closed {
        let line = line_of(text, text.len().saturating_sub(1).max(open));
        out.push((
            line,
            Err(err("", "invalid JSON array: it is never closed with `]`")),
        ));
    }
    out
}

/// Imports a file in `format`. `bases` fills WebArena's URL placeholders (`SHOPPING` →
/// `http://...`), and `reference_answers` WebVoyager's answers by task id.
pub fn import(
    format: Format,
    text: &str,
    bases: &BTreeMap<String, String>,
    reference_answers: &BTreeMap<String, String>,
) -> Vec<ImportLine> {
    match format {
        Format::Surfgym => return crate::import::parse_jsonl(text),
        Format::MiniWob => return miniwob(text, bases),
        _ => {}
    }
    items(text)
        .into_iter()
        .map(|(line, item)| ImportLine {
            line,
            result: item.and_then(|v| match format {
                Format::WebVoyager => webvoyager(&v, reference_answers),
                Format::WebArena => webarena(&v, bases),
                Format::WebGym => webgym(&v),
                Format::Surfgym | Format::MiniWob => unreachable!("handled above"),
            }),
        })
        .collect()
}

fn miniwob(text: &str, bases: &BTreeMap<String, String>) -> Vec<ImportLine> {
    text.lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l.split('#').next().unwrap_or_default().trim()))
        .filter(|(_, l)| !l.is_empty())
        .map(|(line, name)| {
            let name = name.strip_prefix("miniwob.").unwrap_or(name);
            let valid = name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_'));
            let result = match bases.get("MINIWOB") {
                None => Err(err(
                    "name",
                    "no base URL for MiniWoB++ (give MINIWOB=http://... where its html/ is served)",
                )),
                Some(_) if !valid => Err(err(
                    "name",
                    format!("`{name}` is not a MiniWoB++ task name (like click-test)"),
                )),
                Some(base) => crate::import::miniwob_task(name, base),
            };
            ImportLine { line, result }
        })
        .collect()
}

fn webvoyager(v: &Value, answers: &BTreeMap<String, String>) -> Result<Task, Vec<FieldError>> {
    let id = str_field(v, "id")?;
    let web_name = str_field(v, "web_name")?;
    let ques = str_field(v, "ques")?;
    let web = str_field(v, "web")?;
    let mut spec = json!({
        "id": format!("webvoyager.{}", slug(id)),
        "site": slug(web_name),
        "instruction": ques,
        "start_url": web,
        "tags": ["webvoyager"],
        "rubric": {"groups": [{"id": "goal", "description": "the task is accomplished", "facts": [{
            "id": "goal.answered",
            "description": format!("The agent accomplished the task and its final answer correctly and completely answers: {ques}"),
            "check": {"type": "judge"}
        }]}]}
    });
    if let Some(a) = answers.get(id) {
        spec["reference_answer"] = json!(a);
    }
    build(spec)
}

fn placeholder(
    url: &str,
    bases: &BTreeMap<String, String>,
    field: &str,
) -> Result<String, Vec<FieldError>> {
    let mut out = url.to_string();
    while let Some(start) = out.find("__") {
        let Some(len) = out[start + 2..].find("__") else {
            break;
        };
        let key = out[start + 2..start + 2 + len].to_string();
        let base = bases.get(&key).ok_or_else(|| {
            err(
                field,
                format!("no base URL for __{key}__ (give {key}=http://...)"),
            )
        })?;
        out.replace_range(start..start + 4 + len, base.trim_end_matches('/'));
    }
    Ok(out)
}

fn webarena(v: &Value, bases: &BTreeMap<String, String>) -> Result<Task, Vec<FieldError>> {
    let task_id = v
        .get("task_id")
        .and_then(Value::as_u64)
        .ok_or_else(|| err("task_id", "is required (a number)"))?;
    let intent = str_field(v, "intent")?;
    let start_url = placeholder(
        str_field(v, "start_url")?
            .split(" |AND| ")
            .next()
            .unwrap_or_default(),
        bases,
        "start_url",
    )?;
    let eval = v.get("eval").ok_or_else(|| err("eval", "is required"))?;
    let types: Vec<&str> = eval
        .get("eval_types")
        .and_then(Value::as_array)
        .ok_or_else(|| err("eval.eval_types", "is required (a list)"))?
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let mut groups = Vec::new();
    for t in &types {
        match *t {
            "string_match" => {
                let refs = eval
                    .get("reference_answers")
                    .ok_or_else(|| err("eval.reference_answers", "is required for string_match"))?;
                let mut facts = Vec::new();
                if let Some(exact) = refs.get("exact_match") {
                    let text = exact
                        .as_str()
                        .map(str::to_string)
                        .unwrap_or_else(|| exact.to_string());
                    facts.push(json!({"id": "answer.exact", "description": format!("the answer is {text:?}"), "check": {"type": "answer", "equals": text}}));
                }
                for (i, item) in refs
                    .get("must_include")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .enumerate()
                {
                    let text = item
                        .as_str()
                        .map(str::to_string)
                        .unwrap_or_else(|| item.to_string());
                    facts.push(json!({"id": format!("answer.include{}", i + 1), "description": format!("the answer mentions {text:?}"), "check": {"type": "answer", "contains": text}}));
                }
                if let Some(fuzzy) = refs.get("fuzzy_match") {
                    let text = match fuzzy {
                        Value::Array(a) => a
                            .iter()
                            .filter_map(Value::as_str)
                            .collect::<Vec<_>>()
                            .join("; "),
                        Value::String(s) => s.clone(),
                        other => other.to_string(),
                    };
                    // WebArena judges fuzzy matches with a model too.
                    facts.push(json!({"id": "answer.fuzzy", "description": format!("the final answer is semantically equivalent to: {text}"), "check": {"type": "judge"}}));
                }
                if facts.is_empty() {
                    return Err(err(
                        "eval.reference_answers",
                        "has none of exact_match, must_include, fuzzy_match",
                    ));
                }
                groups.push(
                    json!({"id": "answer", "description": "the final answer", "facts": facts}),
                );
            }
            "url_match" => {
                let url = eval
                    .get("reference_url")
                    .and_then(Value::as_str)
                    .filter(|s| !s.is_empty())
                    .ok_or_else(|| err("eval.reference_url", "is required for url_match"))?;
                // Several acceptable URLs are joined by " |OR| "; each is compared with the
                // final URL as a normalised URL (path and query), as WebArena does.
                let facts: Vec<Value> = url
                    .split(" |OR| ")
                    .enumerate()
                    .map(|(i, u)| placeholder(u.trim(), bases, "eval.reference_url").map(|u| json!({"id": format!("url.{}", i + 1), "description": format!("the agent ends on {u}"), "check": {"type": "url", "exact": u}})))
                    .collect::<Result<_, _>>()?;
                groups.push(json!({"id": "url", "description": "the final page", "any": true, "facts": facts}));
            }
            "program_html" => {
                let programs = eval
                    .get("program_html")
                    .and_then(Value::as_array)
                    .ok_or_else(|| err("eval.program_html", "is required for program_html"))?;
                let mut facts = Vec::new();
                for (i, p) in programs.iter().enumerate() {
                    let at = format!("eval.program_html[{i}]");
                    let url = p.get("url").and_then(Value::as_str).unwrap_or("last");
                    if url.trim_start().starts_with("func:") {
                        return Err(err(
                            format!("{at}.url"),
                            format!(
                                "`{url}` is one of WebArena's Python helpers; they cannot run here"
                            ),
                        ));
                    }
                    // `last` is the final page; any other URL is opened in the episode's
                    // context after it, as WebArena's evaluator does.
                    let page = match url.trim() {
                        "last" | "" => None,
                        u => {
                            let u = placeholder(u, bases, &format!("{at}.url"))?;
                            rubrics::PageUrl::parse(&u).map_err(|e| err(format!("{at}.url"), e))?;
                            Some(u)
                        }
                    };
                    let locator = p.get("locator").and_then(Value::as_str).unwrap_or_default();
                    if locator.trim_start().starts_with("func:") {
                        return Err(err(
                            format!("{at}.locator"),
                            format!(
                                "`{locator}` is one of WebArena's Python helpers; they cannot run here"
                            ),
                        ));
                    }
                    // An empty locator means the page's whole text.
                    let expr = if locator.trim().is_empty() {
                        "document.body.innerText".to_string()
                    } else {
                        locator.to_string()
                    };
                    let contents = p.get("required_contents").ok_or_else(|| {
                        err(
                            format!("eval.program_html[{i}].required_contents"),
                            "is required",
                        )
                    })?;
                    let musts: Vec<String> = match contents.get("must_include") {
                        Some(Value::Array(a)) => a
                            .iter()
                            .map(|x| {
                                x.as_str()
                                    .map(str::to_string)
                                    .unwrap_or_else(|| x.to_string())
                            })
                            .collect(),
                        _ => Vec::new(),
                    };
                    for (j, m) in musts.iter().enumerate() {
                        let js = format!(
                            "(() => {{ try {{ return String({expr} ?? '').toLowerCase().includes({}); }} catch (e) {{ return false; }} }})()",
                            serde_json::to_string(&m.to_lowercase()).expect("strings serialize")
                        );
                        let mut check = json!({"type": "js", "expression": js});
                        if let Some(u) = &page {
                            check["page"] = json!(u);
                        }
                        facts.push(json!({"id": format!("page.{}.{}", i + 1, j + 1), "description": format!("{} shows {m:?}", page.as_deref().unwrap_or("the page")), "check": check}));
                    }
                    if let Some(exact) = contents.get("exact_match").and_then(Value::as_str) {
                        let js = format!(
                            "(() => {{ try {{ return String({expr} ?? '').trim() === {}; }} catch (e) {{ return false; }} }})()",
                            serde_json::to_string(exact).expect("strings serialize")
                        );
                        let mut check = json!({"type": "js", "expression": js});
                        if let Some(u) = &page {
                            check["page"] = json!(u);
                        }
                        facts.push(json!({"id": format!("page.{}.exact", i + 1), "description": format!("{} reads exactly {exact:?}", page.as_deref().unwrap_or("the page")), "check": check}));
                    }
                }
                if facts.is_empty() {
                    return Err(err(
                        "eval.program_html",
                        "has no required contents to check",
                    ));
                }
                groups
                    .push(json!({"id": "page", "description": "the page's state", "facts": facts}));
            }
            other => {
                return Err(err(
                    "eval.eval_types",
                    format!("unsupported eval type `{other}`"),
                ));
            }
        }
    }
    if groups.is_empty() {
        return Err(err("eval.eval_types", "is empty"));
    }
    let sites: Vec<String> = v
        .get("sites")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(slug)
        .collect();
    let mut spec = json!({
        "id": format!("webarena.{task_id}"),
        "instruction": intent,
        "start_url": start_url,
        "tags": ["webarena"],
        "rubric": {"groups": groups}
    });
    if let Some(site) = sites.first() {
        spec["site"] = json!(site);
    }
    if let Some(raw) = eval
        .get("reference_answer_raw_annotation")
        .and_then(Value::as_str)
    {
        spec["reference_answer"] = json!(raw);
    }
    build(spec)
}

fn webgym(v: &Value) -> Result<Task, Vec<FieldError>> {
    let id = v
        .get("id")
        .or_else(|| v.get("task_id"))
        .map(|x| {
            x.as_str()
                .map(str::to_string)
                .unwrap_or_else(|| x.to_string())
        })
        .ok_or_else(|| err("id", "is required"))?;
    let task = v
        .get("task")
        .or_else(|| v.get("question"))
        .or_else(|| v.get("intent"))
        .and_then(Value::as_str)
        .ok_or_else(|| err("task", "is required"))?;
    let start_url = v
        .get("start_url")
        .or_else(|| v.get("url"))
        .and_then(Value::as_str)
        .ok_or_else(|| err("start_url", "is required"))?;
    let groups_in = v
        .get("fact_groups")
        .and_then(Value::as_array)
        .ok_or_else(|| err("fact_groups", "is required (a list of fact groups)"))?;
    let mut groups = Vec::new();
    for (gi, g) in groups_in.iter().enumerate() {
        let (facts, desc) = match g {
            Value::Array(f) => (f.clone(), None),
            Value::Object(o) => (
                o.get("facts")
                    .and_then(Value::as_array)
                    .cloned()
                    .ok_or_else(|| err(format!("fact_groups[{gi}].facts"), "is required"))?,
                o.get("description").and_then(Value::as_str),
            ),
            _ => {
                return Err(err(
                    format!("fact_groups[{gi}]"),
                    "must be a list of facts or {\"facts\": [...]}",
                ));
            }
        };
        let facts: Vec<Value> = facts
            .iter()
            .enumerate()
            .map(|(fi, f)| match f.as_str() {
                Some(s) if !s.trim().is_empty() => Ok(json!({"id": format!("g{}.f{}", gi + 1, fi + 1), "description": s, "check": {"type": "judge"}})),
                _ => Err(err(format!("fact_groups[{gi}][{fi}]"), "a fact is a non-empty string")),
            })
            .collect::<Result<_, _>>()?;
        let mut group = json!({"id": format!("g{}", gi + 1), "facts": facts});
        if let Some(d) = desc {
            group["description"] = json!(d);
        }
        groups.push(group);
    }
    let mut spec = json!({
        "id": format!("webgym.{}", slug(&id)),
        "instruction": task,
        "start_url": start_url,
        "tags": ["webgym"],
        "rubric": {"groups": groups}
    });
    if let Some(site) = v
        .get("website")
        .or_else(|| v.get("web_name"))
        .and_then(Value::as_str)
    {
        spec["site"] = json!(slug(site));
    }
    if let Some(a) = v.get("reference_answer").and_then(Value::as_str) {
        spec["reference_answer"] = json!(a);
    }
    build(spec)
}
