//! One check against the final page, the trajectory or the answer: the rule judge's
//! verdict on a fact, or the rubric's own error when the page cannot evaluate the check.

use std::collections::HashMap;

use super::{PageProbe, ProbeError, Trajectory};
use crate::normalize;
use crate::rubric::{AnswerMatch, Check, ElementExpect, PageUrl, TextMatch, UrlMatch, UrlScope};

fn rubric_miniwob() -> &'static str {
    crate::rubric::MINIWOB_REWARD_JS
}

fn text_matches(m: &TextMatch, actual: &str) -> bool {
    let actual = normalize::collapse(actual);
    match m {
        TextMatch::Equals {
            text,
            case_sensitive: true,
        } => actual == normalize::collapse(text),
        TextMatch::Equals { text, .. } => {
            actual.to_lowercase() == normalize::collapse(text).to_lowercase()
        }
        TextMatch::Contains {
            text,
            case_sensitive: true,
        } => actual.contains(&normalize::collapse(text)),
        TextMatch::Contains { text, .. } => actual
            .to_lowercase()
            .contains(&normalize::collapse(text).to_lowercase()),
        TextMatch::Regex(r) => r.is_match(&actual),
    }
}

fn describe_text(m: &TextMatch) -> String {
    match m {
        TextMatch::Equals { text, .. } => format!("equal to {text:?}"),
        TextMatch::Contains { text, .. } => format!("containing {text:?}"),
        TextMatch::Regex(r) => format!("matching /{}/", r.as_str().trim_start_matches("(?i)")),
    }
}

fn url_matches(m: &UrlMatch, url: &str) -> bool {
    match m {
        UrlMatch::Exact(u) => normalize::url(url) == normalize::url(u),
        UrlMatch::Prefix(p) => url.starts_with(p.as_str()),
        UrlMatch::Contains(c) => url.contains(c.as_str()),
        UrlMatch::Includes(u) => normalize::url_includes(url, u),
        UrlMatch::Regex(r) => r.is_match(url),
    }
}

fn short(s: &str, n: usize) -> String {
    let s = normalize::collapse(s);
    if s.chars().count() <= n {
        s
    } else {
        format!("{}…", s.chars().take(n).collect::<String>())
    }
}

/// Lazily fetched page texts, shared by the facts that need them.
pub(super) struct Page<'a, P> {
    pub(super) probe: &'a P,
    pub(super) texts: HashMap<Option<PageUrl>, String>,
}

impl<P: PageProbe> Page<'_, P> {
    async fn text(&mut self, page: Option<&PageUrl>) -> Result<&str, ProbeError> {
        let key = page.cloned();
        if !self.texts.contains_key(&key) {
            let text = self.probe.text(page).await?;
            self.texts.insert(key.clone(), text);
        }
        Ok(self.texts.get(&key).map_or("", String::as_str))
    }
}

/// A check's result: a verdict, or the rubric's own error.
pub(super) enum Outcome {
    Checked(bool, String, String),
    RubricError(String),
}

impl From<(bool, String, String)> for Outcome {
    fn from((passed, evidence, reason): (bool, String, String)) -> Outcome {
        Outcome::Checked(passed, evidence, reason)
    }
}

/// Whether a script's error is the expression's own fault (it cannot even be parsed),
/// rather than the page's state (an element missing, a value null).
fn is_syntax_error(message: &str) -> bool {
    message.trim_start().starts_with("SyntaxError")
}

pub(super) async fn verdict<P: PageProbe>(
    check: &Check,
    traj: &Trajectory,
    page: &mut Page<'_, P>,
    final_url: &str,
) -> Result<Outcome, ProbeError> {
    if let Check::Element {
        selector, page: on, ..
    } = check
        && let Err(e) = page.probe.element(on.as_ref(), selector).await?
    {
        // The page could be read (else a ProbeError): the browser refused the selector.
        return Ok(Outcome::RubricError(format!(
            "the browser rejected the selector `{selector}`: {e}"
        )));
    }
    if let Check::Js {
        expression,
        page: on,
        ..
    } = check
        && let Err(e) = page.probe.eval(on.as_ref(), expression).await?
        && is_syntax_error(&e)
    {
        return Ok(Outcome::RubricError(format!(
            "the expression does not parse: {e}"
        )));
    }
    Ok(Outcome::from(match check {
        Check::Url { matcher, scope } => {
            let (what, describe) = match matcher {
                UrlMatch::Exact(u) => ("equal to", u.clone()),
                UrlMatch::Prefix(p) => ("starting with", p.clone()),
                UrlMatch::Contains(c) => ("containing", c.clone()),
                UrlMatch::Includes(u) => ("including", u.clone()),
                UrlMatch::Regex(r) => ("matching", format!("/{}/", r.as_str())),
            };
            match scope {
                UrlScope::Final => {
                    let ok = url_matches(matcher, final_url);
                    let reason = format!(
                        "final URL {} {what} {describe}",
                        if ok { "is" } else { "is not" }
                    );
                    (ok, final_url.to_string(), reason)
                }
                UrlScope::Any => {
                    let hit = traj
                        .visited_urls
                        .iter()
                        .chain(std::iter::once(&final_url.to_string()))
                        .find(|u| url_matches(matcher, u))
                        .cloned();
                    let ok = hit.is_some();
                    let reason = format!(
                        "{} visited URL {what} {describe}",
                        if ok { "a" } else { "no" }
                    );
                    (
                        ok,
                        hit.unwrap_or_else(|| traj.visited_urls.join(" ")),
                        reason,
                    )
                }
            }
        }
        Check::PageText {
            matcher: m,
            page: on,
        } => {
            let text = page.text(on.as_ref()).await?;
            let ok = text_matches(m, text);
            let evidence = match m {
                TextMatch::Contains { text: needle, .. } if ok => {
                    let hay = normalize::collapse(text);
                    let lower = hay.to_lowercase();
                    let at = lower
                        .find(&normalize::collapse(needle).to_lowercase())
                        .unwrap_or(0);
                    // A little context before the match, cut at a character boundary.
                    let start = hay
                        .char_indices()
                        .rev()
                        .map(|(i, _)| i)
                        .find(|i| *i <= at.saturating_sub(40))
                        .unwrap_or(0);
                    short(&hay[start..], 160)
                }
                _ => short(text, 160),
            };
            let place = match on {
                Some(url) => format!("the text of {url}"),
                None => "page text".into(),
            };
            let reason = format!(
                "{place} {} {}",
                if ok { "is" } else { "is not" },
                describe_text(m)
            );
            (ok, evidence, reason)
        }
        Check::Element {
            selector,
            expect,
            page: on,
        } => match page.probe.element(on.as_ref(), selector).await? {
            Err(e) => (false, String::new(), e),
            Ok(None) => {
                let ok = matches!(expect, ElementExpect::Exists(false));
                let place = match on {
                    Some(url) => url.to_string(),
                    None => "the final page".into(),
                };
                (
                    ok,
                    "no such element".into(),
                    format!("nothing on {place} matches `{selector}`"),
                )
            }
            Ok(Some(el)) => match expect {
                ElementExpect::Exists(want) => (
                    *want,
                    "element present".into(),
                    format!("`{selector}` exists"),
                ),
                ElementExpect::Checked(want) => {
                    let ok = el.checked == Some(*want);
                    let state = match el.checked {
                        Some(true) => "checked",
                        Some(false) => "unchecked",
                        None => "not a checkbox",
                    };
                    (
                        ok,
                        state.into(),
                        format!(
                            "`{selector}` is {state}, expected {}",
                            if *want { "checked" } else { "unchecked" }
                        ),
                    )
                }
                ElementExpect::Value(m) => {
                    let v = el.value.unwrap_or_default();
                    let ok = text_matches(m, &v);
                    let reason = format!(
                        "value of `{selector}` {} {}",
                        if ok { "is" } else { "is not" },
                        describe_text(m)
                    );
                    (ok, short(&v, 160), reason)
                }
                ElementExpect::Text(m) => {
                    let ok = text_matches(m, &el.text);
                    let reason = format!(
                        "text of `{selector}` {} {}",
                        if ok { "is" } else { "is not" },
                        describe_text(m)
                    );
                    (ok, short(&el.text, 160), reason)
                }
            },
        },
        Check::Js {
            expression,
            equals,
            page: on,
        } => match page.probe.eval(on.as_ref(), expression).await? {
            Err(e) => (false, String::new(), format!("the expression failed: {e}")),
            Ok(v) => {
                let ok = &v == equals;
                let evidence = short(&v.to_string(), 200);
                let place = on.as_ref().map(|u| format!(" on {u}")).unwrap_or_default();
                (
                    ok,
                    evidence,
                    format!(
                        "the expression{place} {} {equals}",
                        if ok { "equals" } else { "does not equal" }
                    ),
                )
            }
        },
        Check::MiniWob => match page.probe.eval(None, rubric_miniwob()).await? {
            Err(e) => (
                false,
                String::new(),
                format!("MiniWoB's reward could not be read: {e}"),
            ),
            Ok(v) => {
                let raw = v.get("raw").and_then(serde_json::Value::as_f64);
                let ok = raw.is_some_and(|r| r > 0.0);
                let reason = match (raw, v.get("reason").and_then(|r| r.as_str())) {
                    (None, _) => "no MiniWoB episode ran on this page".to_string(),
                    (Some(r), Some(why)) => format!("MiniWoB raw reward {r}: {why}"),
                    (Some(r), None) => format!("MiniWoB raw reward {r}"),
                };
                (ok, short(&v.to_string(), 200), reason)
            }
        },
        // Model facts are verified by the judge's FactVerifier, never here.
        Check::Judge => (false, String::new(), "needs a model judge".into()),
        Check::Answer(m) => match &traj.final_answer {
            None => (
                false,
                String::new(),
                "the agent gave no final answer".into(),
            ),
            Some(raw) => {
                let a = normalize::answer(raw);
                let (ok, want) = match m {
                    AnswerMatch::Equals(e) => (a == *e, format!("equal to {e:?}")),
                    AnswerMatch::Contains(c) => {
                        (a.contains(c.as_str()), format!("containing {c:?}"))
                    }
                    AnswerMatch::Regex(r) => (
                        r.is_match(&a),
                        format!("matching /{}/", r.as_str().trim_start_matches("(?i)")),
                    ),
                    AnswerMatch::AnyOf(list) => (list.contains(&a), format!("one of {list:?}")),
                    AnswerMatch::Number { value, tolerance } => {
                        let ok = normalize::first_number(&a)
                            .is_some_and(|n| (n - value).abs() <= *tolerance + 1e-9);
                        (ok, format!("the number {value} (±{tolerance})"))
                    }
                };
                (
                    ok,
                    short(raw, 200),
                    format!("answer {} {want}", if ok { "is" } else { "is not" }),
                )
            }
        },
    }))
}
