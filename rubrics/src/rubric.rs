//! The validated rubric the judge runs, built from a [`RubricSpec`].

use std::collections::HashSet;

use regex::Regex;

use crate::spec::{CheckSpec, FactSpec, RubricSpec, TextMatchSpec};

/// A problem in a rubric, at a JSON path relative to the rubric (`groups[2].facts[0].check.regex`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {message}")]
pub struct RubricError {
    /// Where the problem is.
    pub path: String,
    /// What is wrong.
    pub message: String,
}

/// A validated rubric.
#[derive(Debug, Clone)]
pub struct Rubric {
    spec: RubricSpec,
    groups: Vec<Group>,
}

/// A validated fact group.
#[derive(Debug, Clone)]
pub struct Group {
    /// Identifier.
    pub id: String,
    /// Description, possibly empty.
    pub description: String,
    /// Satisfied when any fact passes (else all must).
    pub any: bool,
    /// The facts.
    pub facts: Vec<Fact>,
}

/// A validated fact.
#[derive(Debug, Clone)]
pub struct Fact {
    /// Identifier, unique in the rubric.
    pub id: String,
    /// Description, possibly empty.
    pub description: String,
    /// Weight for partial credit (positive).
    pub weight: f64,
    /// How it is checked.
    pub check: Check,
}

/// Where a URL check looks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UrlScope {
    /// The last page of the episode.
    Final,
    /// Any page the episode visited.
    Any,
}

/// How a URL is compared.
#[derive(Debug, Clone)]
pub enum UrlMatch {
    /// Equal after normalising both (see [`crate::normalize::url`]: host case, default
    /// ports, trailing `/`, query parameter order and fragments do not matter).
    Exact(String),
    /// Starts with.
    Prefix(String),
    /// Contains.
    Contains(String),
    /// Matches.
    Regex(Regex),
}

/// How a text is compared (after collapsing whitespace).
#[derive(Debug, Clone)]
pub enum TextMatch {
    /// Equal.
    Equals {
        /// Expected text.
        text: String,
        /// Case-sensitive comparison.
        case_sensitive: bool,
    },
    /// Contains.
    Contains {
        /// Expected fragment.
        text: String,
        /// Case-sensitive comparison.
        case_sensitive: bool,
    },
    /// Matches (case-insensitive unless asked otherwise, compiled in).
    Regex(Regex),
}

/// What an element check expects.
#[derive(Debug, Clone)]
pub enum ElementExpect {
    /// The element exists (or not).
    Exists(bool),
    /// The checkbox is (un)checked.
    Checked(bool),
    /// Its value matches.
    Value(TextMatch),
    /// Its text matches.
    Text(TextMatch),
}

/// How a final answer is compared (after normalisation).
#[derive(Debug, Clone)]
pub enum AnswerMatch {
    /// Equal.
    Equals(String),
    /// Contains.
    Contains(String),
    /// Matches (case-insensitive).
    Regex(Regex),
    /// Equal to one of these.
    AnyOf(Vec<String>),
    /// The first number in the answer is within `tolerance` of `value`.
    Number {
        /// Expected number.
        value: f64,
        /// Allowed absolute difference.
        tolerance: f64,
    },
}

/// A validated check.
#[derive(Debug, Clone)]
pub enum Check {
    /// The page URL.
    Url {
        /// Comparison.
        matcher: UrlMatch,
        /// Which URLs count.
        scope: UrlScope,
    },
    /// The visible text of the final page (or of `page`).
    PageText {
        /// Comparison.
        matcher: TextMatch,
        /// The page to read instead of the final one.
        page: Option<PageUrl>,
    },
    /// An element of the final page (or of `page`).
    Element {
        /// CSS selector.
        selector: String,
        /// Expectation.
        expect: ElementExpect,
        /// The page to read instead of the final one.
        page: Option<PageUrl>,
    },
    /// The final answer.
    Answer(AnswerMatch),
    /// A JavaScript expression on the final page (or on `page`; time-limited) equals a
    /// JSON value.
    Js {
        /// The expression.
        expression: String,
        /// The value it must equal.
        equals: serde_json::Value,
        /// The page to evaluate it on instead of the final one.
        page: Option<PageUrl>,
    },
    /// MiniWoB++'s own reward, read from the page as BrowserGym does: the fact holds when
    /// the raw reward is positive.
    MiniWob,
    /// A fact in words (the fact's description), verified by a model judge looking at the
    /// trajectory (WebGym's rubrics).
    Judge,
}

/// A page a check reads instead of the episode's final page: an absolute http(s) URL,
/// opened in the episode's browser context once the final page has been captured.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PageUrl(String);

impl PageUrl {
    /// Accepts an absolute `http://` or `https://` URL with a host.
    pub fn parse(url: &str) -> Result<PageUrl, String> {
        let url = url.trim();
        let rest = url
            .strip_prefix("http://")
            .or_else(|| url.strip_prefix("https://"))
            .ok_or_else(|| format!("`{url}` is not an absolute http(s) URL"))?;
        let host = rest.split(['/', '?', '#']).next().unwrap_or_default();
        if host.is_empty() || host.contains(char::is_whitespace) {
            return Err(format!("`{url}` has no host"));
        }
        Ok(PageUrl(url.to_string()))
    }

    /// The URL.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for PageUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// The expression the `miniwob` check reads: MiniWoB++'s reward globals.
pub const MINIWOB_REWARD_JS: &str = "(() => ({raw: typeof WOB_RAW_REWARD_GLOBAL === 'number' ? WOB_RAW_REWARD_GLOBAL : null, \
reward: typeof WOB_REWARD_GLOBAL === 'number' ? WOB_REWARD_GLOBAL : null, \
done: typeof WOB_DONE_GLOBAL === 'boolean' ? WOB_DONE_GLOBAL : null, \
reason: typeof WOB_REWARD_REASON === 'undefined' || WOB_REWARD_REASON === null ? null : String(WOB_REWARD_REASON)}))()";

impl Check {
    /// The check kind's name, as written in the rubric.
    pub fn kind(&self) -> &'static str {
        match self {
            Check::Url { .. } => "url",
            Check::PageText { .. } => "page_text",
            Check::Element { .. } => "element",
            Check::Answer(_) => "answer",
            Check::Js { .. } => "js",
            Check::MiniWob => "miniwob",
            Check::Judge => "judge",
        }
    }
}

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
                &["exact", "prefix", "contains", "regex", "scope"],
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
                    ("contains", spec.contains.clone()),
                    ("regex", spec.regex.clone()),
                ],
            )?;
            if v.is_empty() {
                errors.push(format!("{path}.{name}"), "must not be empty");
                return None;
            }
            let matcher = match name {
                "exact" => UrlMatch::Exact(v),
                "prefix" => UrlMatch::Prefix(v),
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
                Some(s) if !s.is_empty() => s.to_string(),
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

    /// The spec, with defaulted ids filled in (what gets stored).
    pub fn spec(&self) -> &RubricSpec {
        &self.spec
    }

    /// The groups.
    pub fn groups(&self) -> &[Group] {
        &self.groups
    }

    /// Number of facts, which sets a task's difficulty.
    pub fn fact_count(&self) -> usize {
        self.groups.iter().map(|g| g.facts.len()).sum()
    }

    /// The CSS selectors its element checks read on the final page, deduplicated, in rubric
    /// order: what a snapshot of the final page must capture so it can be judged after the
    /// browser is gone.
    pub fn selectors(&self) -> Vec<&str> {
        self.selectors_on(None)
    }

    /// The JavaScript expressions its `js` and `miniwob` checks evaluate on the final page,
    /// deduplicated: what a snapshot of the final page must capture.
    pub fn expressions(&self) -> Vec<&str> {
        self.expressions_on(None)
    }

    /// The pages other than the final one that checks read, deduplicated, in rubric order.
    pub fn pages(&self) -> Vec<&PageUrl> {
        let mut out: Vec<&PageUrl> = Vec::new();
        for f in self.groups.iter().flat_map(|g| &g.facts) {
            if let Check::Element { page: Some(p), .. }
            | Check::Js { page: Some(p), .. }
            | Check::PageText { page: Some(p), .. } = &f.check
                && !out.contains(&p)
            {
                out.push(p);
            }
        }
        out
    }

    /// Whether a `page_text` check reads `page` (`None`: the final page).
    pub fn reads_text_on(&self, page: Option<&PageUrl>) -> bool {
        self.groups
            .iter()
            .flat_map(|g| &g.facts)
            .any(|f| matches!(&f.check, Check::PageText { page: p, .. } if p.as_ref() == page))
    }

    /// The selectors element checks read on `page` (`None`: the final page).
    pub fn selectors_on(&self, page: Option<&PageUrl>) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for f in self.groups.iter().flat_map(|g| &g.facts) {
            if let Check::Element {
                selector, page: p, ..
            } = &f.check
                && p.as_ref() == page
                && !out.contains(&selector.as_str())
            {
                out.push(selector);
            }
        }
        out
    }

    /// The expressions `js` (and, on the final page, `miniwob`) checks evaluate on `page`.
    pub fn expressions_on(&self, page: Option<&PageUrl>) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for f in self.groups.iter().flat_map(|g| &g.facts) {
            let e = match &f.check {
                Check::Js {
                    expression,
                    page: p,
                    ..
                } if p.as_ref() == page => expression.as_str(),
                Check::MiniWob if page.is_none() => MINIWOB_REWARD_JS,
                _ => continue,
            };
            if !out.contains(&e) {
                out.push(e);
            }
        }
        out
    }

    /// Whether any fact needs a model judge.
    pub fn needs_model(&self) -> bool {
        self.groups
            .iter()
            .flat_map(|g| &g.facts)
            .any(|f| matches!(f.check, Check::Judge))
    }

    /// Whether any fact needs the agent's final answer.
    pub fn needs_answer(&self) -> bool {
        self.groups
            .iter()
            .flat_map(|g| &g.facts)
            .any(|f| matches!(f.check, Check::Answer(_)))
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
