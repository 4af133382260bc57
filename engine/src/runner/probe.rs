//! The rule judge reads the final page through this adapter over a live session.

use browser_pool::{PoolError, Session};
use rubrics::{ElementSnapshot, PageProbe, ProbeError};

/// A [`PageProbe`] over a browser session.
pub struct SessionProbe<'a>(pub &'a Session);

fn probe_err(e: PoolError) -> ProbeError {
    ProbeError(e.to_string())
}

impl PageProbe for SessionProbe<'_> {
    async fn url(&self) -> Result<String, ProbeError> {
        self.0.url().await.map_err(probe_err)
    }

    async fn text(&self) -> Result<String, ProbeError> {
        self.0.page_text().await.map_err(probe_err)
    }

    async fn element(
        &self,
        selector: &str,
    ) -> Result<Result<Option<ElementSnapshot>, String>, ProbeError> {
        let found = self.0.query_selector(selector).await.map_err(probe_err)?;
        Ok(found.map(|o| {
            o.map(|s| ElementSnapshot {
                text: s.text,
                value: s.value,
                checked: s.checked,
            })
        }))
    }
}
