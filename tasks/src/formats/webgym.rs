//! WebGym's released task records (`train.jsonl` / `test.jsonl` of the `webgym_tasks`
//! dataset), read by the field names the release and WebGym's own loader use:
//!
//! - `task_name`: the instruction (`task` is the loader's fallback);
//! - `website`: where the task starts, a URL whose scheme may be missing (WebGym then
//!   prefixes `https://`, and so does this importer);
//! - `evaluator_reference`: the rubric. As released, a list of fact groups `{"id",
//!   "description", "facts": ["...", ...]}`; WebGym's loader also takes the older shapes,
//!   and so does this importer: a list of facts (strings, or `{"description", ...}`), or
//!   one fact as a string. Every fact is checked by a model judge, with its group as
//!   context (as WebGym's evaluator prefixes each fact with its group);
//! - `definite_answer` (or `reference_answer`): the expected answer, when there is one;
//! - `difficulty`: WebGym's level, 1-3 easy, 4-6 medium, 7 and up hard;
//! - `task_id`, `benchmark_name` (a tag), `domain` and `subdomain` (not kept).
//!
//! `fact_groups`, the name surfgym's earlier WebGym-style importer read, is still taken
//! for `evaluator_reference`.

use serde_json::{Map, Value, json};

use super::{Converted, err, slug};
use crate::task::FieldError;

/// The first present field among `names`, with the name it was found under.
fn field<'a>(v: &'a Value, names: &[&'static str]) -> Option<(&'static str, &'a Value)> {
    names
        .iter()
        .find_map(|n| v.get(*n).filter(|x| !x.is_null()).map(|x| (*n, x)))
}

/// A text field: a non-empty string (a number is taken as written, as pandas reads ids).
fn text(v: &Value, names: &[&'static str]) -> Result<Option<String>, Vec<FieldError>> {
    match field(v, names) {
        None => Ok(None),
        Some((_, Value::String(s))) if !s.trim().is_empty() => Ok(Some(s.trim().to_string())),
        Some((_, Value::String(_))) => Ok(None),
        Some((_, Value::Number(n))) => Ok(Some(n.to_string())),
        Some((name, _)) => Err(err(name, "must be a string")),
    }
}

pub(super) fn convert(v: &Value) -> Result<Converted, Vec<FieldError>> {
    if !v.is_object() {
        return Err(err("", "a WebGym task is a JSON object"));
    }
    let instruction =
        text(v, &["task_name", "task"])?.ok_or_else(|| err("task_name", "is required"))?;
    let website = text(v, &["website"])?.ok_or_else(|| err("website", "is required"))?;
    // WebGym opens `https://` + the website when it names no scheme.
    let start_url = if website.contains("://") {
        website
    } else {
        format!("https://{website}")
    };
    let (name, reference) = field(v, &["evaluator_reference", "fact_groups"])
        .ok_or_else(|| err("evaluator_reference", "is required (the task's facts)"))?;
    let groups = groups(name, reference)?;
    let mut spec = json!({
        "instruction": instruction,
        "start_url": start_url,
        "tags": ["webgym"],
        "rubric": {"groups": groups},
    });
    if let Some(id) = text(v, &["task_id", "id"])? {
        let id = slug(&id);
        if id.is_empty() {
            return Err(err("task_id", "has no letters or digits to make an id of"));
        }
        spec["id"] = json!(format!("webgym.{id}"));
    }
    if let Some(bench) = text(v, &["benchmark_name"])? {
        let tag: String = slug(&bench).chars().take(40).collect();
        if !tag.is_empty() && tag != "webgym" {
            spec["tags"] = json!(["webgym", tag]);
        }
    }
    if let Some(answer) = text(v, &["definite_answer", "reference_answer"])? {
        spec["reference_answer"] = json!(answer);
    }
    if let Some((_, d)) = field(v, &["difficulty"]) {
        spec["difficulty"] = json!(difficulty(d)?);
    }
    Ok(spec.into())
}

/// WebGym's difficulty level as surfgym's band (the bands WebGym sets its step limits by).
fn difficulty(d: &Value) -> Result<&'static str, Vec<FieldError>> {
    let level = match d {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => match s.trim().to_ascii_lowercase().as_str() {
            "easy" => return Ok("easy"),
            "medium" => return Ok("medium"),
            "hard" => return Ok("hard"),
            other => other.parse::<f64>().ok(),
        },
        _ => None,
    };
    match level {
        Some(l) if l.is_finite() && l <= 3.0 => Ok("easy"),
        Some(l) if l.is_finite() && l <= 6.0 => Ok("medium"),
        Some(l) if l.is_finite() => Ok("hard"),
        _ => Err(err(
            "difficulty",
            "must be WebGym's level (a number: 1-3 easy, 4-6 medium, 7+ hard) or easy, medium, hard",
        )),
    }
}

/// A fact in words, from a string or a `{"description": ...}` object.
fn fact(at: &str, f: &Value) -> Result<String, Vec<FieldError>> {
    let s = match f {
        Value::String(s) => s.as_str(),
        Value::Object(o) => match o.get("description") {
            Some(Value::String(s)) => s.as_str(),
            _ => return Err(err(format!("{at}.description"), "is required (the fact)")),
        },
        _ => return Err(err(at, "a fact is a string or {\"description\": ...}")),
    };
    if s.trim().is_empty() {
        return Err(err(at, "a fact is a non-empty string"));
    }
    Ok(s.trim().to_string())
}

fn judged(id: String, description: String) -> Value {
    json!({"id": id, "description": description, "check": {"type": "judge"}})
}

/// The rubric's groups from `evaluator_reference` (found under `name`).
fn groups(name: &str, reference: &Value) -> Result<Vec<Value>, Vec<FieldError>> {
    let list = match reference {
        // One fact, as older task files wrote it.
        Value::String(_) => {
            return Ok(vec![
                json!({"id": "g1", "facts": [judged("g1.f1".into(), fact(name, reference)?)]}),
            ]);
        }
        Value::Array(list) if !list.is_empty() => list,
        _ => {
            return Err(err(
                name,
                "must be a non-empty list of fact groups ({\"id\", \"description\", \"facts\"}) or facts",
            ));
        }
    };
    let is_group = |x: &Value| x.is_array() || x.get("facts").is_some();
    if !list.iter().any(is_group) {
        // A flat list of facts: one group that needs them all.
        let facts = list
            .iter()
            .enumerate()
            .map(|(i, f)| {
                Ok(judged(
                    format!("g1.f{}", i + 1),
                    fact(&format!("{name}[{i}]"), f)?,
                ))
            })
            .collect::<Result<Vec<_>, Vec<FieldError>>>()?;
        return Ok(vec![json!({"id": "g1", "facts": facts})]);
    }
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::new();
    for (gi, g) in list.iter().enumerate() {
        let at = format!("{name}[{gi}]");
        let (facts, fields): (&Vec<Value>, Option<&Map<String, Value>>) = match g {
            Value::Array(f) => (f, None),
            Value::Object(o) => match o.get("facts") {
                Some(Value::Array(f)) => (f, Some(o)),
                _ => return Err(err(format!("{at}.facts"), "is required (a list of facts)")),
            },
            _ => {
                return Err(err(
                    at,
                    "must be a fact group {\"id\", \"description\", \"facts\": [...]}",
                ));
            }
        };
        // The release's group id when it makes a usable, unique one; else by position.
        let given = fields
            .and_then(|o| o.get("id"))
            .map(|x| {
                x.as_str()
                    .map(str::to_string)
                    .unwrap_or_else(|| x.to_string())
            })
            .map(|s| slug(&s))
            .filter(|s| !s.is_empty() && s.len() <= 40 && !seen.contains(s));
        let gid = given.unwrap_or_else(|| format!("g{}", gi + 1));
        seen.insert(gid.clone());
        if facts.is_empty() {
            return Err(err(
                format!("{at}.facts"),
                "a group needs at least one fact",
            ));
        }
        let facts = facts
            .iter()
            .enumerate()
            .map(|(fi, f)| {
                let at = match fields {
                    Some(_) => format!("{at}.facts[{fi}]"),
                    None => format!("{at}[{fi}]"),
                };
                Ok(judged(format!("{gid}.f{}", fi + 1), fact(&at, f)?))
            })
            .collect::<Result<Vec<_>, Vec<FieldError>>>()?;
        let mut group = json!({"id": gid, "facts": facts});
        if let Some(d) = fields
            .and_then(|o| o.get("description"))
            .and_then(Value::as_str)
            .filter(|d| !d.trim().is_empty())
        {
            group["description"] = json!(d);
        }
        out.push(group);
    }
    Ok(out)
}
