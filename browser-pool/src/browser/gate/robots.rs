//! Reading a site's robots.txt through the browser itself (so HTTPS, proxies and the
//! browser's own network settings apply, as for the pages): a blank tab in a context of
//! its own opens the file, and its text and status are read back. The tab belongs to no
//! session, so the gate lets its request through unchecked (no robots check of the
//! robots.txt, no session to report to), politeness's rate included.

use std::time::Duration;

use chromiumoxide::cdp::browser_protocol::target::{
    CreateBrowserContextParams, CreateTargetParams,
};

use super::super::launch::Chromium;
use crate::politeness::robots::Fetched;

/// The most time one robots.txt may take, load and read together.
const LIMIT: Duration = Duration::from_secs(20);

/// What `url` (an origin's `/robots.txt`) answers.
pub(crate) async fn fetch(live: &Chromium, url: String) -> Fetched {
    match tokio::time::timeout(LIMIT, read(live, &url)).await {
        Ok(Ok(f)) => f,
        Ok(Err(e)) => Fetched::Unreachable(e),
        Err(_) => Fetched::Unreachable(format!("no answer within {}s", LIMIT.as_secs())),
    }
}

async fn read(live: &Chromium, url: &str) -> Result<Fetched, String> {
    let (context, page) = {
        let browser = live.browser.read().await;
        let context = browser
            .create_browser_context(CreateBrowserContextParams::default())
            .await
            .map_err(|e| format!("opening a context: {e}"))?;
        let page = browser
            .new_page(CreateTargetParams {
                browser_context_id: Some(context.clone()),
                ..CreateTargetParams::new("about:blank")
            })
            .await
            .map_err(|e| format!("opening a tab: {e}"));
        (context, page)
    };
    let result = match page {
        Ok(page) => {
            let read = async {
                page.goto(url).await.map_err(|e| e.to_string())?;
                let v: serde_json::Value = page
                    .evaluate(
                        "(() => { const n = performance.getEntriesByType('navigation')[0]; \
                         return [n ? n.responseStatus || 0 : 0, \
                         document.body ? document.body.textContent : '']; })()",
                    )
                    .await
                    .map_err(|e| e.to_string())?
                    .into_value()
                    .map_err(|e| e.to_string())?;
                Ok::<_, String>(v)
            };
            let v = read.await;
            let _ = page.close().await;
            v
        }
        Err(e) => Err(e),
    };
    let _ = live
        .browser
        .read()
        .await
        .dispose_browser_context(context)
        .await;
    let v = result?;
    let status = v[0].as_u64().unwrap_or(0);
    let text = v[1].as_str().unwrap_or_default().to_string();
    Ok(match status {
        400..=499 => Fetched::Missing,
        500..=599 => Fetched::Unreachable(format!("HTTP {status}")),
        // 0: the browser did not say (an old one); the text is what came.
        _ => Fetched::Found(text),
    })
}
