//! Validation: building a [`Rubric`] from a [`RubricSpec`], every problem reported with
//! its path; regexes compiled, ids checked unique, missing ids filled in.

use std::collections::HashSet;

use regex::Regex;

use super::{
    AnswerMatch, Check, ElementExpect, Fact, Group, PageUrl, Rubric, RubricError, TextMatch,
    UrlMatch, UrlScope,
};
use crate::spec::{CheckSpec, FactSpec, RubricSpec, TextMatchSpec};

struct Errors(Vec<RubricError>);

impl Errors {
    fn push(&mut self, path: impl Into<String>, message: impl Into<String>) {
        self.0.push(RubricError {
            path: path.into(),
            message: message.into(),
        });
    }
}

fn compile(
    errors: &mut Errors,
    path: String,
    pattern: &str,
    case_sensitive: bool,
) -> Option<Regex> {
    let full = if case_sensitive {
        pattern.to_string()
    } else {
        format!("(?i){pattern}")
    };
    match Regex::new(&full) {
        Ok(r) => Some(r),
        Err(e) => {
            errors.push(path, format!("invalid regular expression: {e}"));
            None
        }
    }
}

fn id_ok(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 64
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// The one non-empty field among `choices`, or an error naming them.
fn exactly_one<'a, T>(
    errors: &mut Errors,
    path: &str,
    choices: &[(&'a str, Option<T>)],
) -> Option<(&'a str, T)>
where
    T: Clone,
{
    let present: Vec<_> = choices.iter().filter(|(_, v)| v.is_some()).collect();
    let names: Vec<_> = choices.iter().map(|(n, _)| *n).collect();
    match present.as_slice() {
        [(name, Some(v))] => Some((name, v.clone())),
        [] => {
            errors.push(path, format!("needs one of {}", names.join(", ")));
            None
        }
        _ => {
            let given: Vec<_> = present.iter().map(|(n, _)| *n).collect();
            errors.push(
                path,
                format!(
                    "give only one of {} (got {})",
                    names.join(", "),
                    given.join(" and ")
                ),
            );
            None
        }
    }
}

fn text_match(errors: &mut Errors, path: &str, spec: &TextMatchSpec) -> Option<TextMatch> {
    let (name, text) = exactly_one(
        errors,
        path,
        &[
            ("equals", spec.equals.clone()),
            ("contains", spec.contains.clone()),
            ("regex", spec.regex.clone()),
        ],
    )?;
    let cs = spec.case_sensitive;
    Some(match name {
        "equals" => TextMatch::Equals {
            text,
            case_sensitive: cs,
        },
        "contains" => {
            if text.trim().is_empty() {
                errors.push(format!("{path}.contains"), "must not be empty");
                return None;
            }
            TextMatch::Contains {
                text,
                case_sensitive: cs,
            }
        }
        _ => TextMatch::Regex(compile(errors, format!("{path}.regex"), &text, cs)?),
    })
}

/// Lists the fields a check kind does not use but were given.
fn unused(errors: &mut Errors, path: &str, spec: &CheckSpec, allowed: &[&str]) {
    let given = [
        ("exact", spec.exact.is_some()),
        ("prefix", spec.prefix.is_some()),
        ("includes", spec.includes.is_some()),
        ("contains", spec.contains.is_some()),
        ("regex", spec.regex.is_some()),
        ("scope", spec.scope.is_some()),
        ("case_sensitive", spec.case_sensitive),
        ("selector", spec.selector.is_some()),
        ("exists", spec.exists.is_some()),
        ("checked", spec.checked.is_some()),
        ("value", spec.value.is_some()),
        ("text", spec.text.is_some()),
        ("equals", spec.equals.is_some()),
        ("any_of", spec.any_of.is_some()),
        ("number", spec.number.is_some()),
        ("tolerance", spec.tolerance.is_some()),
        ("expression", spec.expression.is_some()),
        ("value_equals", spec.value_equals.is_some()),
        ("page", spec.page.is_some()),
    ];
    for (name, present) in given {
        if present && !allowed.contains(&name) {
            errors.push(
                format!("{path}.{name}"),
                format!("not used by a `{}` check", spec.kind),
            );
        }
    }
}

/// The optional `page` of a check; `Err` when it is given but not a usable URL.
fn page_of(errors: &mut Errors, path: &str, spec: &CheckSpec) -> Result<Option<PageUrl>, ()> {
    match spec.page.as_deref() {
        None => Ok(None),
        Some(url) => PageUrl::parse(url).map(Some).map_err(|e| {
            errors.push(format!("{path}.page"), e);
        }),
    }
}

fn check(errors: &mut Errors, path: &str, spec: &CheckSpec) -> Option<Check> {
    match spec.kind.as_str() {
        "url" => {
            unused(
                errors,
                path,
                spec,
                &["exact", "prefix", "includes", "contains", "regex", "scope"],
            );
            let scope = match spec.scope.as_deref() {
                None | Some("final") => UrlScope::Final,
                Some("any") => UrlScope::Any,
                Some(other) => {
                    errors.push(
                        format!("{path}.scope"),
                        format!("must be `final` or `any`, not `{other}`"),
                    );
                    UrlScope::Final
                }
            };
            let (name, v) = exactly_one(
                errors,
                path,
                &[
                    ("exact", spec.exact.clone()),
                    ("prefix", spec.prefix.clone()),
                    ("includes", spec.includes.clone()),
                    ("contains", spec.contains.clone()),
                    ("regex", spec.regex.clone()),
                ],
            )?;
            if v.is_empty() {
                errors.push(format!("{path}.{name}"), "must not be empty");
                return None;
            }
            if matches!(name, "exact" | "includes")
                && let Some((_, rest)) = v.split_once("://")
                && (rest.is_empty() || rest.starts_with(['/', '?', '#']))
            {
                errors.push(
                    format!("{path}.{name}"),
                    format!("`{v}` has no host after `://`"),
                );
                return None;
            }
            let matcher = match name {
                "exact" => UrlMatch::Exact(v),
                "prefix" => UrlMatch::Prefix(v),
                "includes" => UrlMatch::Includes(v),
                "contains" => UrlMatch::Contains(v),
                _ => UrlMatch::Regex(compile(errors, format!("{path}.regex"), &v, true)?),
            };
            Some(Check::Url { matcher, scope })
        }
        "page_text" => {
            unused(
                errors,
                path,
                spec,
                &["contains", "regex", "case_sensitive", "page"],
            );
            let page = page_of(errors, path, spec);
            let m = text_match(
                errors,
                path,
                &TextMatchSpec {
                    equals: None,
                    contains: spec.contains.clone(),
                    regex: spec.regex.clone(),
                    case_sensitive: spec.case_sensitive,
                },
            )?;
            Some(Check::PageText {
                matcher: m,
                page: page.ok()?,
            })
        }
        "element" => {
            unused(
                errors,
                path,
                spec,
                &["selector", "exists", "checked", "value", "text", "page"],
            );
            let page = page_of(errors, path, spec);
            let selector = match spec.selector.as_deref().map(str::trim) {
                Some(s) if !s.is_empty() => {
                    if let Err(e) = crate::selector::check(s) {
                        errors.push(format!("{path}.selector"), format!("`{s}` {e}"));
                        return None;
                    }
                    s.to_string()
                }
                _ => {
                    errors.push(
                        format!("{path}.selector"),
                        "an element check needs a CSS selector",
                    );
                    return None;
                }
            };
            let (name, _) = exactly_one(
                errors,
                path,
                &[
                    ("exists", spec.exists.map(|_| ())),
                    ("checked", spec.checked.map(|_| ())),
                    ("value", spec.value.as_ref().map(|_| ())),
                    ("text", spec.text.as_ref().map(|_| ())),
                ],
            )?;
            let expect = match name {
                "exists" => ElementExpect::Exists(spec.exists.unwrap_or(true)),
                "checked" => ElementExpect::Checked(spec.checked.unwrap_or(true)),
                "value" => ElementExpect::Value(text_match(
                    errors,
                    &format!("{path}.value"),
                    spec.value.as_ref()?,
                )?),
                _ => ElementExpect::Text(text_match(
                    errors,
                    &format!("{path}.text"),
                    spec.text.as_ref()?,
                )?),
            };
            Some(Check::Element {
                selector,
                expect,
                page: page.ok()?,
            })
        }
        "answer" => {
            unused(
                errors,
                path,
                spec,
                &[
                    "equals",
                    "contains",
                    "regex",
                    "any_of",
                    "number",
                    "tolerance",
                ],
            );
            if spec.tolerance.is_some() && spec.number.is_none() {
                errors.push(
                    format!("{path}.tolerance"),
                    "only applies together with `number`",
                );
            }
            let (name, _) = exactly_one(
                errors,
                path,
                &[
                    ("equals", spec.equals.as_ref().map(|_| ())),
                    ("contains", spec.contains.as_ref().map(|_| ())),
                    ("regex", spec.regex.as_ref().map(|_| ())),
                    ("any_of", spec.any_of.as_ref().map(|_| ())),
                    ("number", spec.number.map(|_| ())),
                ],
            )?;
            let m = match name {
                "equals" => AnswerMatch::Equals(crate::normalize::answer(spec.equals.as_deref()?)),
                "contains" => {
                    let c = crate::normalize::answer(spec.contains.as_deref()?);
                    if c.is_empty() {
                        errors.push(format!("{path}.contains"), "must not be empty");
                        return None;
                    }
                    AnswerMatch::Contains(c)
                }
                "regex" => AnswerMatch::Regex(compile(
                    errors,
                    format!("{path}.regex"),
                    spec.regex.as_deref()?,
                    false,
                )?),
                "any_of" => {
                    let list = spec.any_of.clone()?;
                    if list.is_empty() {
                        errors.push(format!("{path}.any_of"), "must list at least one answer");
                        return None;
                    }
                    AnswerMatch::AnyOf(list.iter().map(|s| crate::normalize::answer(s)).collect())
                }
                _ => {
                    let value = spec.number?;
                    let tolerance = spec.tolerance.unwrap_or(0.0);
                    if !value.is_finite() {
                        errors.push(format!("{path}.number"), "must be a finite number");
                    }
                    if !(tolerance.is_finite() && tolerance >= 0.0) {
                        errors.push(format!("{path}.tolerance"), "must be a finite number >= 0");
                        return None;
                    }
                    AnswerMatch::Number { value, tolerance }
                }
            };
            Some(Check::Answer(m))
        }
        "js" => {
            unused(errors, path, spec, &["expression", "value_equals", "page"]);
            let page = page_of(errors, path, spec);
            match spec.expression.as_deref().map(str::trim) {
                Some(e) if !e.is_empty() => Some(Check::Js {
                    expression: e.to_string(),
                    equals: spec
                        .value_equals
                        .clone()
                        .unwrap_or(serde_json::Value::Bool(true)),
                    page: page.ok()?,
                }),
                _ => {
                    errors.push(
                        format!("{path}.expression"),
                        "a js check needs a JavaScript expression",
                    );
                    None
                }
            }
        }
        "miniwob" => {
            unused(errors, path, spec, &[]);
            Some(Check::MiniWob)
        }
        "judge" => {
            unused(errors, path, spec, &[]);
            Some(Check::Judge)
        }
        "" => {
            errors.push(
                format!("{path}.type"),
                "missing check type (url, page_text, element, answer, js, miniwob, judge)",
            );
            None
        }
        other => {
            errors.push(
                format!("{path}.type"),
                format!("unknown check type `{other}` (expected url, page_text, element, answer, js, miniwob or judge)"),
            );
            None
        }
    }
}

impl Rubric {
    /// Parses and validates a rubric from JSON, reporting type errors with their path.
    pub fn from_json(value: serde_json::Value) -> Result<Rubric, Vec<RubricError>> {
        // serde would take a struct's fields as an array too (`[[...]]`): not a rubric.
        if !value.is_object() {
            return Err(vec![RubricError {
                path: String::new(),
                message: "a rubric is a JSON object with `groups`".into(),
            }]);
        }
        let spec: RubricSpec = serde_path_to_error::deserialize(value).map_err(|e| {
            let path = e.path().to_string();
            vec![RubricError {
                path: if path == "." { String::new() } else { path },
                message: e.into_inner().to_string(),
            }]
        })?;
        Rubric::from_spec(spec)
    }

    /// Validates a spec: every check complete and unambiguous, regexes compiled, ids unique.
    /// Missing ids are filled in.
    pub fn from_spec(mut spec: RubricSpec) -> Result<Rubric, Vec<RubricError>> {
        let mut errors = Errors(Vec::new());
        if spec.groups.is_empty() {
            errors.push("groups", "a rubric needs at least one fact group");
        }
        let mut group_ids = HashSet::new();
        let mut fact_ids = HashSet::new();
        let mut groups = Vec::new();
        for (gi, g) in spec.groups.iter_mut().enumerate() {
            let gpath = format!("groups[{gi}]");
            let gid = g.id.clone().unwrap_or_else(|| format!("g{}", gi + 1));
            if !id_ok(&gid) {
                errors.push(
                    format!("{gpath}.id"),
                    "use 1-64 letters, digits, `-`, `_` or `.`",
                );
            } else if !group_ids.insert(gid.clone()) {
                errors.push(format!("{gpath}.id"), format!("duplicate group id `{gid}`"));
            }
            g.id = Some(gid.clone());
            if g.facts.is_empty() {
                errors.push(format!("{gpath}.facts"), "a group needs at least one fact");
            }
            let mut facts = Vec::new();
            for (fi, f) in g.facts.iter_mut().enumerate() {
                let fpath = format!("{gpath}.facts[{fi}]");
                if let Some(fact) = fact(&mut errors, &fpath, &gid, fi, f, &mut fact_ids) {
                    facts.push(fact);
                }
            }
            groups.push(Group {
                id: gid,
                description: g.description.clone().unwrap_or_default(),
                any: g.any,
                facts,
            });
        }
        if errors.0.is_empty() {
            Ok(Rubric { spec, groups })
        } else {
            Err(errors.0)
        }
    }
}

fn fact(
    errors: &mut Errors,
    path: &str,
    group_id: &str,
    index: usize,
    spec: &mut FactSpec,
    seen: &mut HashSet<String>,
) -> Option<Fact> {
    let id = spec
        .id
        .clone()
        .unwrap_or_else(|| format!("{group_id}.f{}", index + 1));
    if !id_ok(&id) {
        errors.push(
            format!("{path}.id"),
            "use 1-64 letters, digits, `-`, `_` or `.`",
        );
    } else if !seen.insert(id.clone()) {
        errors.push(format!("{path}.id"), format!("duplicate fact id `{id}`"));
    }
    spec.id = Some(id.clone());
    let weight = spec.weight.unwrap_or(1.0);
    if !(weight.is_finite() && weight > 0.0) {
        errors.push(format!("{path}.weight"), "must be a number > 0");
    }
    let check = check(errors, &format!("{path}.check"), &spec.check)?;
    if matches!(check, Check::Judge)
        && spec
            .description
            .as_deref()
            .is_none_or(|d| d.trim().is_empty())
    {
        errors.push(
            format!("{path}.description"),
            "a judge check verifies the fact's description, which is missing",
        );
        return None;
    }
    Some(Fact {
        id,
        description: spec.description.clone().unwrap_or_default(),
        weight,
        check,
    })
}
