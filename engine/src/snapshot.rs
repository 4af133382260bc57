//! The final page as the rule judge reads it: what the runner captures before the browser
//! context is released (see `runner::capture`), stores with the episode, and the judge reads
//! back, off the rollout hot path. Plain data below both: it knows rubrics, never sessions,
//! episodes or the store.

use std::collections::BTreeMap;

use rubrics::{ElementSnapshot, PageProbe, PageUrl, ProbeError};

/// Selectors read on one page, with what each found.
pub(crate) type Elements = BTreeMap<String, Result<Option<ElementSnapshot>, String>>;
/// Expressions evaluated on one page, with each value.
pub(crate) type Values = BTreeMap<String, Result<serde_json::Value, String>>;

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

fn cap(text: &mut String) {
    if text.len() > STORED_TEXT_LIMIT {
        text.truncate(text.floor_char_boundary(STORED_TEXT_LIMIT));
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
