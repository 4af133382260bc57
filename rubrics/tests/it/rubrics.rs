//! Every check kind passing and failing, validation errors with their paths, and scoring.
//! The page here is a recorded one (a `PageProbe` over fixed data); the end-to-end tests
//! run the same judge against live Chromium pages.

use std::collections::HashMap;

use rubrics::{ElementSnapshot, PageProbe, PageUrl, ProbeError, Rubric, Trajectory, judge};
use serde_json::{Value, json};

struct RecordedPage {
    url: String,
    text: String,
    elements: HashMap<String, ElementSnapshot>,
}

impl PageProbe for RecordedPage {
    async fn url(&self) -> Result<String, ProbeError> {
        Ok(self.url.clone())
    }
    async fn text(&self, page: Option<&PageUrl>) -> Result<String, ProbeError> {
        match page.map(PageUrl::as_str) {
            None => Ok(self.text.clone()),
            Some(ACCOUNT) => Ok("My account\nShipping to 12 Analytical Row".into()),
            Some(other) => Err(ProbeError(format!("{other} was not captured"))),
        }
    }
    async fn element(
        &self,
        page: Option<&PageUrl>,
        selector: &str,
    ) -> Result<Result<Option<ElementSnapshot>, String>, ProbeError> {
        // A selector the parser takes but this browser does not.
        if selector.contains(":-webkit-unheard-of") {
            return Ok(Err(format!(
                "SyntaxError: '{selector}' is not a valid selector."
            )));
        }
        Ok(match page.map(PageUrl::as_str) {
            None => Ok(self.elements.get(selector).cloned()),
            // The account page, opened after the episode, shows the saved address.
            Some(ACCOUNT) => Ok((selector == "#address").then(|| ElementSnapshot {
                text: "12 Analytical Row".into(),
                ..ElementSnapshot::default()
            })),
            Some(other) => Err(format!(
                "could not open {other}: net::ERR_NAME_NOT_RESOLVED"
            )),
        })
    }
    async fn eval(
        &self,
        page: Option<&PageUrl>,
        expression: &str,
    ) -> Result<Result<Value, String>, ProbeError> {
        match page.map(PageUrl::as_str) {
            None => {}
            Some(ACCOUNT) => {
                return Ok(Ok(match expression {
                    "document.title" => json!("My account"),
                    _ => Value::Null,
                }));
            }
            Some(other) => {
                return Ok(Err(format!(
                    "could not open {other}: net::ERR_NAME_NOT_RESOLVED"
                )));
            }
        }
        Ok(match expression {
            "document.title" => Ok(json!("Order confirmed")),
            "items.length" => Ok(json!(3)),
            "throw" => Err("ReferenceError: boom".into()),
            "1 +" => Err("SyntaxError: Unexpected end of input".into()),
            e if e == rubrics::MINIWOB_REWARD_JS => {
                Ok(json!({"raw": 1.0, "reward": 0.8, "done": true, "reason": "correct"}))
            }
            _ => Ok(Value::Null),
        })
    }
}

/// A page other than the final one that the recorded probe can open.
const ACCOUNT: &str = "http://shop.test/account";

fn page() -> RecordedPage {
    let mut elements = HashMap::new();
    elements.insert(
        "#qty".to_string(),
        ElementSnapshot {
            text: String::new(),
            value: Some("2".into()),
            checked: None,
        },
    );
    elements.insert(
        "#terms".to_string(),
        ElementSnapshot {
            text: String::new(),
            value: Some("on".into()),
            checked: Some(true),
        },
    );
    elements.insert(
        "h1".to_string(),
        ElementSnapshot {
            text: "  Order   confirmed\n#A-1042 ".into(),
            value: None,
            checked: None,
        },
    );
    RecordedPage {
        url: "http://shop.test/order.html?id=A-1042".into(),
        text: "Thank you, Ada Lovelace!\nOrder confirmed. Total: $1,234.50".into(),
        elements,
    }
}

fn traj(answer: Option<&str>) -> Trajectory {
    Trajectory {
        final_answer: answer.map(str::to_string),
        visited_urls: vec![
            "http://shop.test/".into(),
            "http://shop.test/cart.html".into(),
        ],
    }
}

/// Judges one check and returns whether it passed.
async fn check(check: Value, answer: Option<&str>) -> bool {
    let rubric = Rubric::from_json(json!({"groups": [{"facts": [{"check": check}]}]}))
        .unwrap_or_else(|e| panic!("{e:?}"));
    let j = judge(&rubric, &traj(answer), &page()).await.unwrap();
    assert_eq!(j.verdicts.len(), 1);
    assert_eq!(j.success, j.verdicts[0].passed);
    assert_eq!(j.score(), if j.success { 1.0 } else { 0.0 });
    j.success
}

#[tokio::test]
async fn every_check_kind_passes_and_fails() {
    let cases: Vec<(Value, Option<&str>, bool)> = vec![
        (
            json!({"type": "url", "exact": "http://shop.test/order.html?id=A-1042"}),
            None,
            true,
        ),
        (
            json!({"type": "url", "exact": "http://shop.test/order.html"}),
            None,
            false,
        ),
        (
            json!({"type": "url", "prefix": "http://shop.test/order"}),
            None,
            true,
        ),
        (
            json!({"type": "url", "prefix": "http://shop.test/cart"}),
            None,
            false,
        ),
        (json!({"type": "url", "contains": "id=A-1042"}), None, true),
        (json!({"type": "url", "regex": "id=A-\\d+$"}), None, true),
        (json!({"type": "url", "regex": "id=B-\\d+$"}), None, false),
        (
            json!({"type": "url", "contains": "cart.html", "scope": "any"}),
            None,
            true,
        ),
        (json!({"type": "url", "contains": "cart.html"}), None, false),
        (
            json!({"type": "url", "contains": "checkout", "scope": "any"}),
            None,
            false,
        ),
        (
            json!({"type": "page_text", "contains": "order CONFIRMED"}),
            None,
            true,
        ),
        (
            json!({"type": "page_text", "contains": "order CONFIRMED", "case_sensitive": true}),
            None,
            false,
        ),
        (
            json!({"type": "page_text", "regex": "total: \\$1,234\\.50"}),
            None,
            true,
        ),
        (
            json!({"type": "page_text", "contains": "Grace Hopper"}),
            None,
            false,
        ),
        (
            json!({"type": "element", "selector": "#qty", "value": {"equals": "2"}}),
            None,
            true,
        ),
        (
            json!({"type": "element", "selector": "#qty", "value": {"equals": "3"}}),
            None,
            false,
        ),
        (
            json!({"type": "element", "selector": "#terms", "checked": true}),
            None,
            true,
        ),
        (
            json!({"type": "element", "selector": "#terms", "checked": false}),
            None,
            false,
        ),
        (
            json!({"type": "element", "selector": "#qty", "checked": true}),
            None,
            false,
        ),
        (
            json!({"type": "element", "selector": "h1", "text": {"equals": "order confirmed #a-1042"}}),
            None,
            true,
        ),
        (
            json!({"type": "element", "selector": "h1", "text": {"contains": "Order confirmed", "case_sensitive": true}}),
            None,
            true,
        ),
        (
            json!({"type": "element", "selector": "h1", "text": {"regex": "#A-\\d{4}$", "case_sensitive": true}}),
            None,
            true,
        ),
        (
            json!({"type": "element", "selector": "h1", "text": {"contains": "cancelled"}}),
            None,
            false,
        ),
        (
            json!({"type": "element", "selector": "#missing", "exists": false}),
            None,
            true,
        ),
        (
            json!({"type": "element", "selector": "#missing", "exists": true}),
            None,
            false,
        ),
        (
            json!({"type": "element", "selector": "#missing", "text": {"contains": "x"}}),
            None,
            false,
        ),
        (
            json!({"type": "element", "selector": "h1", "exists": true}),
            None,
            true,
        ),
        (
            json!({"type": "answer", "equals": "The Blue Mug"}),
            Some("  \"the blue  mug.\" "),
            true,
        ),
        (
            json!({"type": "answer", "equals": "The Blue Mug"}),
            Some("the red mug"),
            false,
        ),
        (json!({"type": "answer", "equals": "anything"}), None, false),
        (
            json!({"type": "answer", "contains": "blue"}),
            Some("It is the BLUE one"),
            true,
        ),
        (
            json!({"type": "answer", "regex": "^\\d{4}$"}),
            Some("1847"),
            true,
        ),
        (
            json!({"type": "answer", "regex": "^\\d{4}$"}),
            Some("in 1847"),
            false,
        ),
        (
            json!({"type": "answer", "any_of": ["yes", "true"]}),
            Some("Yes."),
            true,
        ),
        (
            json!({"type": "answer", "any_of": ["yes", "true"]}),
            Some("no"),
            false,
        ),
        (
            json!({"type": "answer", "number": 1234.5}),
            Some("$1,234.50"),
            true,
        ),
        (
            json!({"type": "answer", "number": 12.5, "tolerance": 0.01}),
            Some("12.509 dollars"),
            true,
        ),
        (
            json!({"type": "answer", "number": 12.5, "tolerance": 0.01}),
            Some("12.6"),
            false,
        ),
        (json!({"type": "answer", "number": 3}), Some("three"), false),
        (
            json!({"type": "js", "expression": "items.length", "value_equals": 3}),
            None,
            true,
        ),
        (
            json!({"type": "js", "expression": "items.length", "value_equals": 4}),
            None,
            false,
        ),
        (
            json!({"type": "js", "expression": "document.title", "value_equals": "Order confirmed"}),
            None,
            true,
        ),
        (
            json!({"type": "js", "expression": "undefinedThing"}),
            None,
            false,
        ),
        (json!({"type": "js", "expression": "throw"}), None, false),
        // The same expression read on another page: that page's value, not the final one's.
        (
            json!({"type": "js", "expression": "document.title", "value_equals": "My account", "page": ACCOUNT}),
            None,
            true,
        ),
        (
            json!({"type": "js", "expression": "document.title", "value_equals": "Order confirmed", "page": ACCOUNT}),
            None,
            false,
        ),
        (
            json!({"type": "element", "selector": "#address", "text": {"contains": "analytical"}, "page": ACCOUNT}),
            None,
            true,
        ),
        // Page text read on another page: that page's text, not the final one's.
        (
            json!({"type": "page_text", "contains": "analytical row", "page": ACCOUNT}),
            None,
            true,
        ),
        (
            json!({"type": "page_text", "contains": "order CONFIRMED", "page": ACCOUNT}),
            None,
            false,
        ),
        // `h1` exists on the final page but not on the account page.
        (
            json!({"type": "element", "selector": "h1", "exists": true, "page": ACCOUNT}),
            None,
            false,
        ),
        (
            json!({"type": "element", "selector": "h1", "exists": true}),
            None,
            true,
        ),
        // A page that cannot be opened fails the fact.
        (
            json!({"type": "js", "expression": "document.title", "value_equals": null, "page": "http://gone.test/"}),
            None,
            false,
        ),
        (json!({"type": "miniwob"}), None, true),
    ];
    for (c, answer, want) in cases {
        assert_eq!(
            check(c.clone(), answer).await,
            want,
            "{c} with answer {answer:?}"
        );
    }
}

/// A check the page cannot evaluate because the rubric is wrong (a selector the browser
/// rejects, an expression that does not parse) is the rubric's error: neither a pass nor
/// the agent's failure, and no model is asked about the rest.
#[tokio::test]
async fn a_check_the_browser_rejects_is_a_rubric_error_not_a_failure() {
    let rubric = Rubric::from_json(json!({"groups": [
        {"id": "page", "facts": [
            {"id": "ok", "check": {"type": "url", "contains": "order.html"}},
            {"id": "bad-selector", "check": {"type": "element", "selector": "h1:-webkit-unheard-of", "exists": true}},
            {"id": "bad-script", "check": {"type": "js", "expression": "1 +"}},
            {"id": "runtime", "check": {"type": "js", "expression": "throw"}}
        ]},
        {"id": "words", "facts": [{"id": "said", "description": "the agent said thanks", "check": {"type": "judge"}}]}
    ]}))
    .unwrap();
    let j = judge(&rubric, &traj(None), &page()).await.unwrap();
    let errors: Vec<&str> = j.errors.iter().map(|e| e.fact_id.as_str()).collect();
    assert_eq!(errors, ["bad-selector", "bad-script"]);
    assert!(
        j.errors[0].message.contains("rejected the selector"),
        "{:?}",
        j.errors
    );
    let error = j.rubric_error().unwrap();
    assert!(
        error.contains("fact `bad-script`: the expression does not parse: SyntaxError"),
        "{error}"
    );
    assert!(!j.success);
    let checked: Vec<(&str, bool)> = j
        .verdicts
        .iter()
        .map(|v| (v.fact_id.as_str(), v.passed))
        .collect();
    assert_eq!(
        checked,
        [("ok", true), ("runtime", false)],
        "a script that throws on the page's state is still a failed fact"
    );
    let skipped: Vec<&str> = j.skipped.iter().map(|s| s.fact_id.as_str()).collect();
    assert_eq!(
        skipped,
        ["said"],
        "the model is not asked about an unscorable episode"
    );
    assert_eq!(j.model_calls, 0);

    // Without such errors there is none.
    let fine = Rubric::from_json(json!({"groups": [{"facts": [
        {"check": {"type": "url", "contains": "order.html"}}]}]}))
    .unwrap();
    let j = judge(&fine, &traj(None), &page()).await.unwrap();
    assert!(j.errors.is_empty() && j.rubric_error().is_none() && j.success);
}

#[tokio::test]
async fn verdicts_carry_evidence_and_reasons() {
    let rubric = Rubric::from_json(json!({"groups": [{"id": "order", "facts": [
        {"id": "url", "check": {"type": "url", "prefix": "http://shop.test/order"}},
        {"id": "qty", "check": {"type": "element", "selector": "#qty", "value": {"equals": "3"}}}
    ]}]}))
    .unwrap();
    let j = judge(&rubric, &traj(None), &page()).await.unwrap();
    assert_eq!(
        j.verdicts[0].evidence,
        "http://shop.test/order.html?id=A-1042"
    );
    assert!(
        j.verdicts[0].reason.contains("is starting with"),
        "{}",
        j.verdicts[0].reason
    );
    assert_eq!(
        (
            j.verdicts[1].fact_id.as_str(),
            j.verdicts[1].evidence.as_str()
        ),
        ("qty", "2")
    );
    assert!(j.verdicts[1].reason.contains("is not equal to \"3\""));
}

#[tokio::test]
async fn success_needs_every_group_and_score_is_weighted() {
    let rubric = Rubric::from_json(json!({"groups": [
        {"id": "a", "facts": [
            {"weight": 3, "check": {"type": "page_text", "contains": "Ada"}},
            {"weight": 1, "check": {"type": "page_text", "contains": "Grace"}}
        ]},
        {"id": "b", "any": true, "facts": [
            {"check": {"type": "page_text", "contains": "Grace"}},
            {"check": {"type": "page_text", "contains": "Total"}}
        ]}
    ]}))
    .unwrap();
    assert_eq!(rubric.fact_count(), 4);
    let j = judge(&rubric, &traj(None), &page()).await.unwrap();
    assert!(!j.success, "group a has a failing fact");
    assert!((j.score() - 4.0 / 6.0).abs() < 1e-9, "{}", j.score());
    let ids: Vec<_> = j.verdicts.iter().map(|v| v.fact_id.as_str()).collect();
    assert_eq!(ids, ["a.f1", "a.f2", "b.f1", "b.f2"], "default ids");

    let any_only = Rubric::from_json(json!({"groups": [{"any": true, "facts": [
        {"check": {"type": "page_text", "contains": "Grace"}},
        {"check": {"type": "page_text", "contains": "Total"}}
    ]}]}))
    .unwrap();
    assert!(
        judge(&any_only, &traj(None), &page())
            .await
            .unwrap()
            .success
    );
}

/// Validation errors, each at its path.
fn errors(rubric: Value) -> Vec<String> {
    Rubric::from_json(rubric)
        .expect_err("invalid")
        .into_iter()
        .map(|e| e.to_string())
        .collect()
}

#[test]
fn malformed_rubrics_are_rejected_with_the_path() {
    let fact = |check: Value| json!({"groups": [{"facts": [{"check": check}]}]});
    let cases: Vec<(Value, &str)> = vec![
        (json!({}), "missing field `groups`"),
        (
            json!({"groups": []}),
            "groups: a rubric needs at least one fact group",
        ),
        (
            json!({"groups": [{"facts": []}]}),
            "groups[0].facts: a group needs at least one fact",
        ),
        (
            json!({"groups": [{"facts": [{}]}]}),
            "groups[0].facts[0]: missing field `check`",
        ),
        (json!({"groups": "x"}), "groups: invalid type"),
        (
            json!({"groups": [{"facts": [{"check": {"type": "url", "exact": 5}}]}]}),
            "groups[0].facts[0].check.exact: invalid type",
        ),
        (
            json!({"groups": [{"facts": [{"check": {"type": "url", "exact": "x", "colour": 1}}]}]}),
            "groups[0].facts[0].check.colour: unknown field",
        ),
        (
            fact(json!({"type": "element", "selector": "div > ", "exists": true})),
            "groups[0].facts[0].check.selector: `div >` is not a valid CSS selector",
        ),
        (
            fact(json!({"type": "element", "selector": "button:hovr", "exists": true})),
            "unknown pseudo-class or pseudo-element `hovr`",
        ),
        (
            fact(json!({"type": "url", "includes": "https://"})),
            "groups[0].facts[0].check.includes: `https://` has no host",
        ),
        (
            fact(json!({"type": "smell"})),
            "groups[0].facts[0].check.type: unknown check type `smell`",
        ),
        (
            fact(json!({"type": "url"})),
            "groups[0].facts[0].check: needs one of exact, prefix, includes, contains, regex",
        ),
        (
            fact(json!({"type": "url", "exact": "a", "prefix": "b"})),
            "give only one of exact, prefix, includes, contains, regex (got exact and prefix)",
        ),
        (
            fact(json!({"type": "url", "regex": "(unclosed"})),
            "groups[0].facts[0].check.regex: invalid regular expression",
        ),
        (
            fact(json!({"type": "url", "prefix": "x", "scope": "some"})),
            "groups[0].facts[0].check.scope: must be `final` or `any`",
        ),
        (
            fact(json!({"type": "url", "prefix": "x", "selector": "a"})),
            "groups[0].facts[0].check.selector: not used by a `url` check",
        ),
        (
            fact(json!({"type": "element", "checked": true})),
            "groups[0].facts[0].check.selector: an element check needs a CSS selector",
        ),
        (
            fact(json!({"type": "element", "selector": "a"})),
            "needs one of exists, checked, value, text",
        ),
        (
            fact(json!({"type": "element", "selector": "a", "text": {"regex": "["}})),
            "groups[0].facts[0].check.text.regex: invalid regular expression",
        ),
        (
            fact(json!({"type": "element", "selector": "a", "value": {}})),
            "groups[0].facts[0].check.value: needs one of equals, contains, regex",
        ),
        (
            fact(json!({"type": "answer", "any_of": []})),
            "groups[0].facts[0].check.any_of: must list at least one answer",
        ),
        (
            fact(json!({"type": "answer", "equals": "x", "tolerance": 1})),
            "groups[0].facts[0].check.tolerance: only applies together with `number`",
        ),
        (
            fact(json!({"type": "answer", "number": 1, "tolerance": -1})),
            "groups[0].facts[0].check.tolerance: must be a finite number >= 0",
        ),
        (
            fact(json!({"type": "page_text", "contains": "  "})),
            "groups[0].facts[0].check.contains: must not be empty",
        ),
        (
            fact(json!({"type": "js"})),
            "groups[0].facts[0].check.expression: a js check needs a JavaScript expression",
        ),
        (
            fact(json!({"type": "miniwob", "contains": "x"})),
            "groups[0].facts[0].check.contains: not used by a `miniwob` check",
        ),
        (
            fact(json!({"type": "js", "expression": "1", "page": "/account"})),
            "groups[0].facts[0].check.page: `/account` is not an absolute http(s) URL",
        ),
        (
            fact(json!({"type": "element", "selector": "a", "exists": true, "page": "http:///x"})),
            "groups[0].facts[0].check.page: `http:///x` has no host",
        ),
        (
            fact(json!({"type": "url", "prefix": "http://a/", "page": "http://a/"})),
            "groups[0].facts[0].check.page: not used by a `url` check",
        ),
        (
            json!({"groups": [{"facts": [{"weight": 0, "check": {"type": "url", "prefix": "x"}}]}]}),
            "groups[0].facts[0].weight: must be a number > 0",
        ),
        (
            json!({"groups": [{"id": "a b", "facts": [{"check": {"type": "url", "prefix": "x"}}]}]}),
            "groups[0].id: use 1-64 letters",
        ),
        (
            json!({"groups": [{"id": "g", "facts": [{"check": {"type": "url", "prefix": "x"}}]}, {"id": "g", "facts": [{"check": {"type": "url", "prefix": "x"}}]}]}),
            "groups[1].id: duplicate group id `g`",
        ),
        (
            json!({"groups": [{"facts": [{"id": "f", "check": {"type": "url", "prefix": "x"}}, {"id": "f", "check": {"type": "url", "prefix": "y"}}]}]}),
            "groups[0].facts[1].id: duplicate fact id `f`",
        ),
    ];
    for (rubric, want) in cases {
        let got = errors(rubric.clone());
        assert!(
            got.iter().any(|e| e.contains(want)),
            "{rubric}\n  wanted {want:?}\n  got {got:?}"
        );
    }
}

#[test]
fn several_problems_are_reported_together_and_spec_round_trips() {
    let got = errors(json!({"groups": [{"facts": [
        {"check": {"type": "url"}},
        {"check": {"type": "answer", "regex": "("}}
    ]}]}));
    assert_eq!(got.len(), 2, "{got:?}");

    let input = json!({"groups": [{"id": "g", "description": "d", "facts": [
        {"id": "f", "description": "x", "weight": 2.0, "check": {"type": "element", "selector": "#a", "value": {"contains": "b"}}}
    ]}]});
    let rubric = Rubric::from_json(input.clone()).unwrap();
    assert_eq!(
        serde_json::to_value(rubric.spec()).unwrap(),
        input,
        "stored form equals the input"
    );
}

#[tokio::test]
async fn checks_on_other_pages_are_listed_by_page_and_explain_where_they_looked() {
    let rubric = Rubric::from_json(json!({"groups": [{"facts": [
        {"id": "a", "check": {"type": "element", "selector": "#address", "exists": true, "page": ACCOUNT}},
        {"id": "b", "check": {"type": "element", "selector": "h1", "exists": true}},
        {"id": "c", "check": {"type": "js", "expression": "document.title", "page": ACCOUNT}},
        {"id": "d", "check": {"type": "js", "expression": "document.title", "page": "http://shop.test/cart"}},
        {"id": "e", "check": {"type": "element", "selector": "#missing", "exists": true, "page": ACCOUNT}},
        {"id": "f", "check": {"type": "miniwob"}},
        {"id": "g", "check": {"type": "page_text", "contains": "Shipping", "page": ACCOUNT}}
    ]}]}))
    .unwrap();
    let pages: Vec<&str> = rubric.pages().iter().map(|p| p.as_str()).collect();
    assert_eq!(pages, [ACCOUNT, "http://shop.test/cart"]);
    let cart = PageUrl::parse("http://shop.test/cart").unwrap();
    assert!(rubric.reads_text_on(Some(&PageUrl::parse(ACCOUNT).unwrap())));
    assert!(!rubric.reads_text_on(Some(&cart)));
    assert!(!rubric.reads_text_on(None));
    assert_eq!(rubric.selectors(), ["h1"]);
    let account = PageUrl::parse(ACCOUNT).unwrap();
    assert_eq!(
        rubric.selectors_on(Some(&account)),
        ["#address", "#missing"]
    );
    assert_eq!(rubric.expressions(), [rubrics::MINIWOB_REWARD_JS]);
    assert_eq!(rubric.expressions_on(Some(&account)), ["document.title"]);
    let j = judge(&rubric, &traj(None), &page()).await.unwrap();
    let e = j.verdicts.iter().find(|v| v.fact_id == "e").unwrap();
    assert!(!e.passed);
    assert_eq!(e.reason, format!("nothing on {ACCOUNT} matches `#missing`"));
    let c = j.verdicts.iter().find(|v| v.fact_id == "c").unwrap();
    assert!(c.reason.contains(&format!("on {ACCOUNT}")), "{}", c.reason);
    let g = j.verdicts.iter().find(|v| v.fact_id == "g").unwrap();
    assert!(g.passed);
    assert_eq!(
        g.reason,
        format!("the text of {ACCOUNT} is containing \"Shipping\"")
    );
    let d = j.verdicts.iter().find(|v| v.fact_id == "d").unwrap();
    assert!(!d.passed);
    assert!(
        d.reason.contains("could not open http://shop.test/cart"),
        "{}",
        d.reason
    );
}

/// A page whose MiniWoB++ reward globals are given.
struct MiniWobPage(Result<Value, String>);

impl PageProbe for MiniWobPage {
    async fn url(&self) -> Result<String, ProbeError> {
        Ok("http://127.0.0.1:1/miniwob/click-test.html".into())
    }
    async fn text(&self, _: Option<&PageUrl>) -> Result<String, ProbeError> {
        Ok(String::new())
    }
    async fn element(
        &self,
        _: Option<&PageUrl>,
        _: &str,
    ) -> Result<Result<Option<ElementSnapshot>, String>, ProbeError> {
        Ok(Ok(None))
    }
    async fn eval(
        &self,
        page: Option<&PageUrl>,
        expression: &str,
    ) -> Result<Result<Value, String>, ProbeError> {
        assert_eq!(page, None, "MiniWoB's reward is read on the final page");
        assert_eq!(expression, rubrics::MINIWOB_REWARD_JS);
        Ok(self.0.clone())
    }
}

#[tokio::test]
async fn the_miniwob_check_fails_without_a_positive_raw_reward() {
    let rubric = Rubric::from_json(
        json!({"groups": [{"facts": [{"id": "r", "check": {"type": "miniwob"}}]}]}),
    )
    .unwrap();
    let verdict = |globals: Result<Value, String>| {
        let rubric = rubric.clone();
        async move {
            let j = judge(&rubric, &Trajectory::default(), &MiniWobPage(globals))
                .await
                .unwrap();
            assert_eq!(j.success, j.verdicts[0].passed);
            (j.verdicts[0].passed, j.verdicts[0].reason.clone())
        }
    };
    let (ok, why) = verdict(Ok(
        json!({"raw": -1.0, "reward": -1.0, "done": true, "reason": "wrong button"}),
    ))
    .await;
    assert!(!ok);
    assert_eq!(why, "MiniWoB raw reward -1: wrong button");
    let (ok, why) = verdict(Ok(
        json!({"raw": 0.0, "reward": 0.0, "done": false, "reason": null}),
    ))
    .await;
    assert!(!ok, "an episode that has not ended has no reward");
    assert_eq!(why, "MiniWoB raw reward 0");
    let (ok, why) = verdict(Ok(
        json!({"raw": null, "reward": null, "done": null, "reason": null}),
    ))
    .await;
    assert!(!ok);
    assert_eq!(why, "no MiniWoB episode ran on this page");
    let (ok, why) = verdict(Err("ReferenceError: core is not defined".into())).await;
    assert!(!ok);
    assert!(
        why.contains("could not be read") && why.contains("core is not defined"),
        "{why}"
    );
    let (ok, _) = verdict(Ok(
        json!({"raw": 0.6, "reward": 0.4, "done": true, "reason": null}),
    ))
    .await;
    assert!(ok, "any positive raw reward holds");
}
