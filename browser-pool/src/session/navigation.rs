//! Navigation the agent asks for: `goto` (landing where it was sent, whatever the page
//! being left does meanwhile: `landing.rs`), back and forward.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use chromiumoxide::cdp::browser_protocol::page::{
    GetNavigationHistoryParams, NavigateParams, NavigateToHistoryEntryParams,
};
use chromiumoxide::error::CdpError;

use super::cdp::{Outlasted, Rescue};
use super::landing::without_fragment;
use super::{ActReport, Session};
use crate::error::PoolError;
use crate::events::PageEvent;

impl Session {
    /// Opens `url`. A document the browser's gate refused (robots.txt, a campaign's
    /// allowed domains) fails with the gate's reason, whichever way the navigation ended.
    pub(super) async fn goto(&self, url: &str) -> Result<ActReport, PoolError> {
        let mut report = self.navigate_to(url).await?;
        if report
            .error
            .as_deref()
            .is_some_and(|e| e.contains("ERR_BLOCKED_BY_CLIENT"))
            && let Some(why) = self.events.refusal_of(url)
        {
            report.error = Some(format!("goto refused {url:?}: {why}"));
        }
        Ok(report)
    }

    async fn navigate_to(&self, url: &str) -> Result<ActReport, PoolError> {
        if let Err(reason) = self.cfg.urls.check(url) {
            self.events.push(PageEvent::Blocked {
                url: url.to_string(),
                reason: reason.clone(),
            });
            return Ok(ActReport::failed(format!("goto refused {url:?}: {reason}")));
        }
        // A fragment-only change is a same-document navigation: no load event follows, so
        // waiting for one (as Page.navigate does) would hang until the timeout.
        let current = self.url().await?;
        if url.contains('#') && without_fragment(url) == without_fragment(&current) {
            let js = format!(
                "location.href = {}",
                serde_json::to_string(url).expect("strings serialize")
            );
            return Ok(match self.evaluate(&js).await? {
                Ok(_) => ActReport::default(),
                Err(e) => ActReport::failed(format!("could not open {url}: {e}")),
            });
        }
        // Until it commits, a navigation the page being left starts must not overtake it.
        let _landing = self.tab().guard_landing(url).await;
        let overtaken = self.tab().overtaken();
        // Page.navigate answers once the navigation commits or fails; loading the rest is
        // what settling waits for. A page whose scripts hang keeps it from answering: then
        // the scripts are stopped and the navigation left to settling, never sent twice.
        let limit = self.page_limit();
        let (documents, sent) = (self.tab().documents(), Instant::now());
        if self.tab().client_holds_navigation() {
            // An earlier goto's page has not loaded (below: a goto returns at its commit);
            // a Page.navigate now would wait behind it for the client's timeout.
            tracing::debug!(
                url,
                "the client still holds a navigation; navigating from the page"
            );
            return self.navigate_from_page(url, documents).await;
        }
        let stays = self.tab().stays();
        // Sent from a task of its own, which outlives this call when the goto returns at
        // the commit, so that the tab knows while the client still holds it.
        let held = self.tab().client_navigation();
        held.store(true, Ordering::SeqCst);
        let (tx, rx) = tokio::sync::oneshot::channel();
        let (page, params) = (self.page.clone(), NavigateParams::new(url));
        tokio::spawn(async move {
            let answer = page.execute(params).await;
            held.store(false, Ordering::SeqCst);
            let _ = tx.send(answer);
        });
        let answer = async { rx.await.unwrap_or(Err(CdpError::NoResponse)) };
        let navigate = self.answer_of("Page.navigate", answer, limit);
        // The client answers Page.navigate only once the page has loaded, which a hung
        // subresource (an ad, a tracker) postpones forever; a committed document is enough,
        // loading the rest is settling's. A failed navigation commits an error page: its
        // answer (which names the error) follows at once.
        let committed = async {
            self.tab().our_document_after(documents).await;
            if self.tab().on_error_page() {
                futures::future::pending::<()>().await;
            }
        };
        let outcome = tokio::select! {
            r = navigate => r,
            () = committed => return Ok(ActReport::default()),
            // The page's own navigation cancelled ours and was refused: nothing is coming.
            // The client still holds ours (until its load), so it goes again from the page.
            () = self.tab().overtaken_after(overtaken) => {
                tracing::debug!(url, "the page being left cancelled the goto; going again from the page");
                let _again = self.tab().guard_landing(url).await;
                return self.navigate_from_page(url, self.tab().documents()).await;
            }
            // Page.navigate would wait for a commit that never comes.
            () = self.tab().stayed_after(stays) => {
                return Ok(ActReport::failed(format!(
                    "the page asked to confirm leaving and the dialog was dismissed: still on {current}"
                )));
            }
        };
        // Without Page.navigate's answer, which names a failure, the navigation may still
        // have failed meanwhile (a redirect loop on a loaded machine): its request says so.
        let unanswered = matches!(outcome, Err(PoolError::Timeout { .. }));
        let report = match outcome {
            Ok(ret) => Ok(match ret.error_text {
                Some(e) if !e.is_empty() => ActReport::failed(format!("could not open {url}: {e}")),
                _ => ActReport::default(),
            }),
            Err(PoolError::Cdp { message, .. }) => Ok(ActReport::failed(format!(
                "could not open {url}: {message}"
            ))),
            // Waiting for its server (a slow one): waited for up to the navigation timeout,
            // then stopped. (Chromium holds calls to the page meanwhile, so stopping scripts
            // would find it unresponsive, and the termination would reach the new page.)
            Err(PoolError::Timeout { .. }) if self.tab().is_navigating() => {
                Ok(match self.outlast_navigation().await {
                    Outlasted::Stopped => ActReport::failed(format!(
                        "{url} did not answer within {:?}; loading it was stopped",
                        self.cfg.navigation_timeout
                    )),
                    Outlasted::Ended | Outlasted::Nothing => ActReport::default(),
                })
            }
            Err(PoolError::Timeout { .. }) => match self.stop_scripts("Page.navigate").await {
                Rescue::Responsive if self.tab().documents() > documents => {
                    Ok(ActReport::default())
                }
                Rescue::Responsive if self.navigation_stuck(documents, sent, limit).await => {
                    // Nothing committed, nothing requested, yet the page answers: Chromium
                    // left Page.navigate hanging (it does after a download a page started
                    // while loading). Navigating from the page itself still works.
                    tracing::debug!(url, "Page.navigate hung; navigating from the page");
                    self.navigate_from_page(url, documents).await
                }
                // Requests were made since, but none is the navigation's: settling must
                // start on the new document, whose leaving mark on the old one may be
                // spent, so wait for it to commit. If none does, the navigation was
                // dropped after all; navigating from the page still works.
                Rescue::Responsive => {
                    let next = self.tab().document_after(documents);
                    if tokio::time::timeout(limit, next).await.is_ok() {
                        Ok(ActReport::default())
                    } else {
                        tracing::debug!(url, "Page.navigate dropped; navigating from the page");
                        self.navigate_from_page(url, documents).await
                    }
                }
                // Scripts were stopped, which lets the navigation go on: settling waits for it.
                Rescue::Stopped => Ok(ActReport::default()),
                Rescue::Failed if self.browser.is_alive() => Ok(ActReport::failed(format!(
                    "{url} did not start loading within {limit:?}"
                ))),
                Rescue::Failed => Err(PoolError::BrowserGone {
                    op: "Page.navigate",
                    message: "browser process exited".into(),
                }),
            },
            Err(e) => Err(e),
        }?;
        if unanswered
            && report.error.is_none()
            && let Some(why) = self.tab().navigation_failure(url)
        {
            return Ok(ActReport::failed(format!("could not open {url}: {why}")));
        }
        Ok(report)
    }

    /// Opens `url` by setting `location.href` in the page, for when `Page.navigate` hung or
    /// was dropped, and waits (up to `settle_max`) for the next document after `documents`.
    async fn navigate_from_page(&self, url: &str, documents: u64) -> Result<ActReport, PoolError> {
        let js = format!(
            "location.href = {}",
            serde_json::to_string(url).expect("strings serialize")
        );
        Ok(match self.evaluate(&js).await? {
            Ok(_) => {
                // Settling must start on the new document: the old one looks settled, and its
                // leaving mark may be gone (it was spent on the hung navigation, or cleared
                // for a download meanwhile).
                let next = self.tab().our_document_after(documents);
                if tokio::time::timeout(self.cfg.settle_max, next)
                    .await
                    .is_err()
                {
                    tracing::debug!(url, "no document committed after navigating from the page");
                }
                ActReport::default()
            }
            Err(e) => ActReport::failed(format!("could not open {url}: {e}")),
        })
    }

    /// Whether a navigation sent at `sent` is stuck: no document committed since (the tab
    /// had committed `documents`) and no request started, even after waiting `patience`
    /// more (a loaded machine can be that slow to send the request; a stuck navigation
    /// never sends it).
    async fn navigation_stuck(&self, documents: u64, sent: Instant, patience: Duration) -> bool {
        let quiet = || self.tab().documents() == documents && !self.tab().requested_since(sent);
        let deadline = Instant::now() + patience;
        while quiet() && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        quiet()
    }

    pub(super) async fn back(&self) -> Result<ActReport, PoolError> {
        self.history_step(true).await
    }

    pub(super) async fn forward(&self) -> Result<ActReport, PoolError> {
        self.history_step(false).await
    }

    /// One entry back or forward in the tab's history.
    async fn history_step(&self, back: bool) -> Result<ActReport, PoolError> {
        let history = self
            .call(
                "Page.getNavigationHistory",
                GetNavigationHistoryParams::default(),
            )
            .await?;
        let current = usize::try_from(history.current_index).unwrap_or(0);
        let target = if back {
            current.checked_sub(1)
        } else {
            current.checked_add(1)
        };
        // The blank page every session starts on does not count as a page to return to.
        let entry = target
            .and_then(|i| history.entries.get(i))
            .filter(|e| !back || e.url != "about:blank");
        let Some(entry) = entry else {
            return Ok(ActReport::failed(if back {
                "there is no previous page to go back to"
            } else {
                "there is no next page to go forward to"
            }));
        };
        self.call(
            "Page.navigateToHistoryEntry",
            NavigateToHistoryEntryParams::new(entry.id),
        )
        .await?;
        Ok(ActReport::default())
    }
}
