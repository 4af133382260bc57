//! The `Fetch` interception of a tab's document requests that its [`Landing`] needs to
//! refuse the page's navigations that would overtake one of ours (see `landing.rs`).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use chromiumoxide::Page;
use chromiumoxide::cdp::browser_protocol::fetch::{
    self, ContinueRequestParams, EventRequestPaused, FailRequestParams, RequestPattern,
};
use chromiumoxide::cdp::browser_protocol::network::{ErrorReason, ResourceType};
use tokio::sync::watch;

use crate::session::landing::Landing;

/// A tab's [`Landing`] and the `Fetch` interception of its document requests that it
/// needs, switched on at the first navigation of ours (each intercepted request costs a
/// round trip) and left on (see `landing.rs`).
#[derive(Clone)]
pub(super) struct Interception {
    page: Page,
    landing: Arc<Mutex<Landing>>,
    /// Whether `Fetch` is enabled; held across the call that enables it.
    on: Arc<tokio::sync::Mutex<bool>>,
    limit: Duration,
    /// Times a navigation of ours was overtaken (see [`Landing::failed`]).
    pub(super) overtaken: Arc<watch::Sender<u64>>,
}

impl Interception {
    /// Interception for `page` (off until the first navigation of ours), its calls
    /// bounded by `limit`.
    pub(super) fn new(page: Page, limit: Duration) -> Interception {
        Interception {
            page,
            landing: Arc::default(),
            on: Arc::default(),
            limit,
            overtaken: Arc::new(watch::channel(0).0),
        }
    }

    pub(super) fn lock(&self) -> std::sync::MutexGuard<'_, Landing> {
        self.landing.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Intercepts the tab's document requests from now on (a no-op once on). Without it
    /// (the call failed) nothing is refused: the navigation goes as it did before this
    /// guard existed.
    pub(super) async fn intercept(&self) {
        let mut on = self.on.lock().await;
        if *on {
            return;
        }
        let pattern = RequestPattern {
            url_pattern: Some("*".into()),
            resource_type: Some(ResourceType::Document),
            request_stage: Some(fetch::RequestStage::Request),
        };
        let enable = fetch::EnableParams {
            patterns: Some(vec![pattern]),
            handle_auth_requests: None,
        };
        match tokio::time::timeout(self.limit, self.page.execute(enable)).await {
            Ok(Ok(_)) => *on = true,
            Ok(Err(e)) => tracing::debug!(error = %e, "Fetch.enable failed; landing unguarded"),
            Err(_) => tracing::debug!("Fetch.enable timed out; landing unguarded"),
        }
    }

    /// A request failed; see [`Landing::failed`].
    pub(super) fn failed(&self, request: &str) {
        if self.lock().failed(request) {
            self.overtaken.send_modify(|n| *n += 1);
        }
    }

    /// Answers an intercepted request: refused if it is one of the page's navigations that
    /// would overtake ours, else let go.
    pub(super) fn answer(&self, ev: &EventRequestPaused) {
        let referer = ev
            .request
            .headers
            .inner()
            .get("Referer")
            .and_then(|r| r.as_str());
        let refuse = ev
            .network_id
            .as_ref()
            .is_some_and(|id| self.lock().refuse(id.inner(), referer));
        if refuse {
            tracing::debug!(
                url = ev.request.url,
                "refused a navigation the page being left started while ours was on its way"
            );
        }
        let (this, id) = (self.clone(), ev.request_id.clone());
        tokio::spawn(async move {
            let call = async {
                if refuse {
                    this.page
                        .execute(FailRequestParams::new(id, ErrorReason::Aborted))
                        .await
                        .map(|_| ())
                } else {
                    this.page
                        .execute(ContinueRequestParams::new(id))
                        .await
                        .map(|_| ())
                }
            };
            if let Ok(Err(e)) = tokio::time::timeout(this.limit, call).await {
                tracing::debug!(error = %e, "answering an intercepted request failed");
            }
        });
    }
}

/// Held while the session waits for a navigation of its own; see
/// [`Tab::guard_landing`](super::Tab::guard_landing).
pub(crate) struct LandingGuard(pub(super) Interception);

impl Drop for LandingGuard {
    fn drop(&mut self) {
        self.0.lock().release();
    }
}
