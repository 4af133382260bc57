//! What the rule judge needs of an episode's final page, captured before the browser
//! context is released, so that judging runs on its own queue, off the rollout hot path.
//! Checks that read another page (a rubric's `page`, WebArena's `program_html` URLs) get
//! it opened in the same context afterwards, so the agent's login and cookies apply.

use std::collections::BTreeMap;
use std::time::Duration;

use browser_pool::{Action, PoolError, Session};
use rubrics::{ElementSnapshot, PageProbe, PageUrl, ProbeError, Rubric};

use super::InfraError;

/// The final page as the rubric will read it (stored with the episode, so it can be
/// judged again).
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct PageSnapshot {
    /// Final URL.
    pub url: String,
    /// Visible text.
    pub text: String,
    /// Every selector the rubric's element checks use, with what it found.
    pub elements: BTreeMap<String, Result<Option<ElementSnapshot>, String>>,
    /// Every expression the rubric's `js` and `miniwob` checks evaluate, with its value.
    pub values: BTreeMap<String, Result<serde_json::Value, String>>,
    /// The other pages checks read, by the URL the rubric gives.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub pages: BTreeMap<String, PageCapture>,
}

/// What the checks on one page other than the final one read there.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct PageCapture {
    /// Where the page ended up (after redirects).
    pub url: String,
    /// Visible text, when a `page_text` check reads it (capped like the final page's).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub text: String,
    /// Selectors read there.
    pub elements: BTreeMap<String, Result<Option<ElementSnapshot>, String>>,
    /// Expressions evaluated there.
    pub values: BTreeMap<String, Result<serde_json::Value, String>>,
}

/// Stored page text is capped (a rubric reads far less).
pub const STORED_TEXT_LIMIT: usize = 64 * 1024;

impl PageSnapshot {
    /// The snapshot as stored: JSON, its text capped at [`STORED_TEXT_LIMIT`] bytes.
    pub fn to_stored(&self) -> serde_json::Value {
        let mut s = self.clone();
        cap(&mut s.text);
        for p in s.pages.values_mut() {
            cap(&mut p.text);
        }
        serde_json::to_value(s).unwrap_or_default()
    }
}

fn cap(text: &mut String) {
    if text.len() > STORED_TEXT_LIMIT {
        let cut = (0..=STORED_TEXT_LIMIT)
            .rev()
            .find(|i| text.is_char_boundary(*i))
            .unwrap_or(0);
        text.truncate(cut);
    }
}

/// How long a rubric's JavaScript predicate may run.
const JS_CHECK_LIMIT: Duration = Duration::from_secs(2);

type Elements = BTreeMap<String, Result<Option<ElementSnapshot>, String>>;
type Values = BTreeMap<String, Result<serde_json::Value, String>>;

/// Reads the selectors and expressions the rubric's checks use on `page` from the
/// session's current page.
async fn read(
    session: &Session,
    rubric: &Rubric,
    page: Option<&PageUrl>,
) -> Result<(Elements, Values), PoolError> {
    let mut elements = BTreeMap::new();
    for selector in rubric.selectors_on(page) {
        let found = session.query_selector(selector).await?.map(|o| {
            o.map(|s| ElementSnapshot {
                text: s.text,
                value: s.value,
                checked: s.checked,
            })
        });
        elements.insert(selector.to_string(), found);
    }
    let mut values = BTreeMap::new();
    for expression in rubric.expressions_on(page) {
        values.insert(
            expression.to_string(),
            session.evaluate_limited(expression, JS_CHECK_LIMIT).await?,
        );
    }
    Ok((elements, values))
}

impl PageSnapshot {
    /// Captures what `rubric` needs from the session's current page, then opens each
    /// other page its checks read, in rubric order. The session is left on the last page
    /// opened, so capture last.
    pub async fn capture(
        session: &mut Session,
        rubric: &Rubric,
    ) -> Result<PageSnapshot, InfraError> {
        let (elements, values) = read(session, rubric, None).await?;
        let mut snapshot = PageSnapshot {
            url: session.url().await?,
            text: session.page_text().await?,
            elements,
            values,
            pages: BTreeMap::new(),
        };
        for page in rubric.pages() {
            // The pool's own navigation: URL allow/deny lists, settling and timeouts
            // apply as they do to the agent's `goto`.
            let report = session.act(&Action::Goto(page.to_string())).await?;
            if let Some(message) = report.error {
                return Err(InfraError::CheckPage {
                    url: page.to_string(),
                    message,
                });
            }
            let (elements, values) = read(session, rubric, Some(page)).await?;
            let text = if rubric.reads_text_on(Some(page)) {
                session.page_text().await?
            } else {
                String::new()
            };
            snapshot.pages.insert(
                page.to_string(),
                PageCapture {
                    url: session.url().await?,
                    text,
                    elements,
                    values,
                },
            );
        }
        Ok(snapshot)
    }

    fn on(&self, page: Option<&PageUrl>) -> Result<(&str, &Elements, &Values), ProbeError> {
        match page {
            None => Ok((&self.text, &self.elements, &self.values)),
            Some(url) => self
                .pages
                .get(url.as_str())
                .map(|p| (p.text.as_str(), &p.elements, &p.values))
                .ok_or_else(|| ProbeError(format!("page {url} was not captured"))),
        }
    }
}

impl PageProbe for PageSnapshot {
    async fn url(&self) -> Result<String, ProbeError> {
        Ok(self.url.clone())
    }

    async fn text(&self, page: Option<&PageUrl>) -> Result<String, ProbeError> {
        Ok(self.on(page)?.0.to_string())
    }

    async fn element(
        &self,
        page: Option<&PageUrl>,
        selector: &str,
    ) -> Result<Result<Option<ElementSnapshot>, String>, ProbeError> {
        self.on(page)?
            .1
            .get(selector)
            .cloned()
            .ok_or_else(|| ProbeError(format!("selector `{selector}` was not captured")))
    }

    async fn eval(
        &self,
        page: Option<&PageUrl>,
        expression: &str,
    ) -> Result<Result<serde_json::Value, String>, ProbeError> {
        self.on(page)?
            .2
            .get(expression)
            .cloned()
            .ok_or_else(|| ProbeError(format!("expression `{expression}` was not captured")))
    }
}
