//! Captures what the rule judge needs of an episode's final page before the browser
//! context is released, so that judging runs on its own queue, off the rollout hot path.
//! Checks that read another page (a rubric's `page`, WebArena's `program_html` URLs) get
//! it opened in the same context afterwards, so the agent's login and cookies apply.
//!
//! The snapshot itself is plain data in [`crate::snapshot`], below the judge; capturing it
//! drives the browser and fails as an infrastructure failure, so it lives here.

use std::collections::BTreeMap;
use std::time::Duration;

use browser_pool::{Action, PoolError, Session};
use rubrics::{ElementSnapshot, PageUrl, Rubric};

use super::InfraError;
use crate::snapshot::{Elements, PageCapture, PageSnapshot, Values};

/// How long a rubric's JavaScript predicate may run.
const JS_CHECK_LIMIT: Duration = Duration::from_secs(2);

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
}
