//! The rubric as users write it and as it is stored: plain serde data, unvalidated.
//! [`crate::Rubric::from_spec`] checks it and builds the form the judge runs.

use serde::{Deserialize, Serialize};

/// A rubric: fact groups, all of which must be satisfied for success.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RubricSpec {
    /// The fact groups.
    pub groups: Vec<GroupSpec>,
}

/// A group of related facts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GroupSpec {
    /// Identifier, unique in the rubric (default `g1`, `g2`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// What the group establishes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Satisfied when any fact passes, instead of all.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub any: bool,
    /// The facts.
    pub facts: Vec<FactSpec>,
}

/// One verifiable fact.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FactSpec {
    /// Identifier, unique in the rubric (default `<group>.f1`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The fact in words (shown in replays, given to model judges).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Weight for partial credit (default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weight: Option<f64>,
    /// How the fact is checked.
    pub check: CheckSpec,
}

/// A text comparison: exactly one of the three fields.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TextMatchSpec {
    /// Equal after collapsing whitespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub equals: Option<String>,
    /// Contains, after collapsing whitespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contains: Option<String>,
    /// Matches a regular expression.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub regex: Option<String>,
    /// Compare case-sensitively (default false).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub case_sensitive: bool,
}

/// A check, flat so that it reads well in JSON; `type` picks which fields apply.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CheckSpec {
    /// `url`, `page_text`, `element` or `answer`.
    #[serde(rename = "type")]
    pub kind: String,
    /// url: the whole URL, compared after normalising (host case, default ports, trailing
    /// `/`, query parameter order and fragments do not matter).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exact: Option<String>,
    /// url: the URL starts with this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix: Option<String>,
    /// url: includes this URL as WebArena's `url_match` counts it: its host and path
    /// contain this URL's (after normalising both), and each of its query parameters has
    /// one of this URL's values.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub includes: Option<String>,
    /// url, page_text, answer: contains this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contains: Option<String>,
    /// url, page_text, answer: matches this regular expression.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub regex: Option<String>,
    /// url: `final` (default) or `any`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// page_text: compare case-sensitively.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub case_sensitive: bool,
    /// element: CSS selector.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<String>,
    /// element: whether it exists.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exists: Option<bool>,
    /// element: checkbox state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checked: Option<bool>,
    /// element: value comparison.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<TextMatchSpec>,
    /// element: text comparison.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<TextMatchSpec>,
    /// answer: equal after normalisation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub equals: Option<String>,
    /// answer: equal to one of these.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub any_of: Option<Vec<String>>,
    /// answer: the first number in the answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub number: Option<f64>,
    /// answer: allowed absolute difference for `number`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tolerance: Option<f64>,
    /// js: a JavaScript expression evaluated on the final page; the fact holds when it is
    /// `true` (or, with `equals`, equal to that JSON value).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expression: Option<String>,
    /// element, js, page_text: read this page instead of the final one. The URL (absolute, http or
    /// https) is opened in the episode's own browser context after the final page was
    /// captured, so the agent's session and cookies apply (WebArena's `program_html` with a
    /// `url` other than `last`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page: Option<String>,
    /// js: the JSON value the expression must equal (default `true`).
    #[serde(
        default,
        rename = "value_equals",
        skip_serializing_if = "Option::is_none"
    )]
    pub value_equals: Option<serde_json::Value>,
}
