//! The validated rubric the judge runs: its types and what the judge asks of it. Building
//! one from a [`RubricSpec`] (the validation) lives in `validate`.

mod validate;

use regex::Regex;

use crate::spec::RubricSpec;

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
    /// Includes this URL as WebArena's `url_match` does (see
    /// [`crate::normalize::url_includes`]).
    Includes(String),
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

impl Rubric {
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
