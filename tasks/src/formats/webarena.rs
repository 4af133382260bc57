//! WebArena / VisualWebArena configs: `eval_types` become rule checks (see the module
//! above for the mapping).

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::{Converted, err, slug, str_field};
use crate::task::FieldError;

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

pub(super) fn convert(
    v: &Value,
    bases: &BTreeMap<String, String>,
) -> Result<Converted, Vec<FieldError>> {
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
                // WebArena's one rule, "GOLD in PRED": the reference is contained in the
                // final URL (host and path, and each of its query parameters).
                match eval.get("url_note").and_then(Value::as_str).map(str::trim) {
                    None | Some("") | Some("GOLD in PRED") => {}
                    Some(other) => {
                        return Err(err(
                            "eval.url_note",
                            format!(
                                "unknown URL matching rule `{other}` (WebArena's is `GOLD in PRED`)"
                            ),
                        ));
                    }
                }
                // Several acceptable URLs are joined by " |OR| ": any of them will do.
                let facts: Vec<Value> = url
                    .split(" |OR| ")
                    .enumerate()
                    .map(|(i, u)| placeholder(u.trim(), bases, "eval.reference_url").map(|u| json!({"id": format!("url.{}", i + 1), "description": format!("the final URL includes {u}"), "check": {"type": "url", "includes": u}})))
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
    Ok(Converted {
        spec,
        warnings: login_warnings(v),
    })
}

/// WebArena's tasks that start logged in (`require_login`, with the cookies of
/// `storage_state`): surfgym does not restore a saved browser state, so the task is
/// imported with a warning saying how to log in instead.
fn login_warnings(v: &Value) -> Vec<FieldError> {
    let mut out = Vec::new();
    let how = "surfgym starts every episode in a fresh browser context; add a `setup` \
               of actions that log in (see docs/reference/formats.md) or the agent starts logged out";
    if v.get("require_login").and_then(Value::as_bool) == Some(true) {
        out.push(FieldError {
            field: "require_login".into(),
            message: format!("the task expects a logged-in session: {how}"),
        });
    }
    if let Some(state) = v
        .get("storage_state")
        .and_then(Value::as_str)
        .filter(|s| !s.trim().is_empty())
    {
        out.push(FieldError {
            field: "storage_state".into(),
            message: format!("`{state}` is not loaded: {how}"),
        });
    }
    out
}
