//! What the rule judge needs of an episode's final page, captured before the browser
//! context is released, so that judging runs on its own queue, off the rollout hot path.

use std::collections::BTreeMap;
use std::time::Duration;

use browser_pool::{PoolError, Session};
use rubrics::{ElementSnapshot, PageProbe, ProbeError, Rubric};

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
}

/// Stored page text is capped (a rubric reads far less).
pub const STORED_TEXT_LIMIT: usize = 64 * 1024;

impl PageSnapshot {
    /// The snapshot as stored: JSON, its text capped at [`STORED_TEXT_LIMIT`] bytes.
    pub fn to_stored(&self) -> serde_json::Value {
        let mut s = self.clone();
        if s.text.len() > STORED_TEXT_LIMIT {
            let cut = (0..=STORED_TEXT_LIMIT)
                .rev()
                .find(|i| s.text.is_char_boundary(*i))
                .unwrap_or(0);
            s.text.truncate(cut);
        }
        serde_json::to_value(s).unwrap_or_default()
    }
}

/// How long a rubric's JavaScript predicate may run.
const JS_CHECK_LIMIT: Duration = Duration::from_secs(2);

impl PageSnapshot {
    /// Captures what `rubric` needs from the session's current page.
    pub async fn capture(session: &Session, rubric: &Rubric) -> Result<PageSnapshot, PoolError> {
        let mut elements = BTreeMap::new();
        for selector in rubric.selectors() {
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
        for expression in rubric.expressions() {
            values.insert(
                expression.to_string(),
                session.evaluate_limited(expression, JS_CHECK_LIMIT).await?,
            );
        }
        Ok(PageSnapshot {
            url: session.url().await?,
            text: session.page_text().await?,
            elements,
            values,
        })
    }
}

impl PageProbe for PageSnapshot {
    async fn url(&self) -> Result<String, ProbeError> {
        Ok(self.url.clone())
    }

    async fn text(&self) -> Result<String, ProbeError> {
        Ok(self.text.clone())
    }

    async fn element(
        &self,
        selector: &str,
    ) -> Result<Result<Option<ElementSnapshot>, String>, ProbeError> {
        self.elements
            .get(selector)
            .cloned()
            .ok_or_else(|| ProbeError(format!("selector `{selector}` was not captured")))
    }

    async fn eval(
        &self,
        expression: &str,
    ) -> Result<Result<serde_json::Value, String>, ProbeError> {
        self.values
            .get(expression)
            .cloned()
            .ok_or_else(|| ProbeError(format!("expression `{expression}` was not captured")))
    }
}
