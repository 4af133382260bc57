//! The tabs of a session's context: taking in those the pages opened or closed, opening a
//! blank one when none is left, switching and closing, listing them in observations, and
//! closing a tab whose URL the policy forbids.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use chromiumoxide::Page;
use chromiumoxide::cdp::browser_protocol::page::{BringToFrontParams, NavigateParams};
use chromiumoxide::cdp::browser_protocol::target::{
    CloseTargetParams, CreateTargetParams, GetTargetsParams, TargetId,
};

use super::observe::clip_title;
use super::tab::Tab;
use super::{ActReport, OurTab, Session};
use crate::error::PoolError;
use crate::events::PageEvent;
use crate::observation::TabInfo;

impl Session {
    /// Takes in the tabs the browser opened or closed for this context since last time.
    /// A new tab becomes the active one, as it would in front of a person.
    pub(super) async fn absorb_tabs(&mut self) -> Result<(), PoolError> {
        let (opened, destroyed) = {
            let mut s = self.signals.lock().expect("signal lock");
            (
                std::mem::take(&mut s.opened),
                std::mem::take(&mut s.destroyed),
            )
        };
        for target in destroyed {
            if let Some(i) = self.tabs.iter().position(|t| t.target == target) {
                self.remove_tab(i);
                self.events.push(PageEvent::TabClosed { tab: i as u32 + 1 });
            }
        }
        for (target, url) in opened {
            if self.tabs.iter().any(|t| t.target == target) {
                continue;
            }
            if self.tabs.len() >= self.cfg.max_tabs {
                self.close_unattached(target).await;
                self.events.push(PageEvent::Blocked {
                    url,
                    reason: format!(
                        "the page opened more than {} tabs; this one was closed",
                        self.cfg.max_tabs
                    ),
                });
                continue;
            }
            let Some(page) = self.find_page(&target).await? else {
                tracing::debug!(?target, "a new tab closed before it could be attached");
                continue;
            };
            let tab = Tab::attach(page, &self.cfg, &self.events, self.emulate).await?;
            self.adopt(tab);
            self.active = self.tabs.len() - 1;
            self.events.push(PageEvent::TabOpened {
                tab: self.tabs.len() as u32,
                url,
            });
        }
        if self.tabs.is_empty() {
            // Every tab closed itself: carry on in a blank one, as a browser window would.
            let page = self.open_blank_tab().await?;
            let tab = Tab::attach(page, &self.cfg, &self.events, self.emulate).await?;
            self.adopt(tab);
            self.active = 0;
        }
        self.page = self.tab().page.clone();
        Ok(())
    }

    /// Closes a tab the session never attached to.
    async fn close_unattached(&self, target: TargetId) {
        let browser = self.browser.browser().read().await;
        let close = browser.execute(CloseTargetParams::new(target));
        if !matches!(
            tokio::time::timeout(self.cfg.cdp_timeout, close).await,
            Ok(Ok(_))
        ) {
            tracing::debug!("a tab past the limit could not be closed");
        }
    }

    /// The page of a target the browser just created; the handler attaches to it
    /// asynchronously, so it may take a moment to appear.
    async fn find_page(&self, target: &TargetId) -> Result<Option<Page>, PoolError> {
        let deadline = Instant::now() + Duration::from_secs(3);
        loop {
            let found = {
                let browser = self.browser.browser().read().await;
                browser.get_page(target.clone()).await
            };
            match found {
                Ok(page) => return Ok(Some(page)),
                Err(chromiumoxide::error::CdpError::NotFound) if Instant::now() < deadline => {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                Err(chromiumoxide::error::CdpError::NotFound) => return Ok(None),
                Err(e) => return Err(PoolError::from_cdp("Target.attachToTarget", e)),
            }
        }
    }

    async fn open_blank_tab(&self) -> Result<Page, PoolError> {
        let params = CreateTargetParams {
            browser_context_id: self.context.clone(),
            ..CreateTargetParams::new("about:blank")
        };
        let browser = self.browser.browser().read().await;
        match tokio::time::timeout(self.cfg.cdp_timeout, browser.new_page(params)).await {
            Ok(Ok(page)) => Ok(page),
            Ok(Err(e)) => Err(PoolError::from_cdp("Target.createTarget", e)),
            Err(_) => Err(PoolError::Timeout {
                op: "Target.createTarget",
                after: self.cfg.cdp_timeout,
            }),
        }
    }

    fn adopt(&mut self, tab: Tab) {
        self.signals
            .lock()
            .expect("signal lock")
            .ours
            .insert(tab.target.inner().clone(), OurTab::of(&tab));
        self.tabs.push(tab);
    }

    fn remove_tab(&mut self, i: usize) {
        let tab = self.tabs.remove(i);
        self.signals
            .lock()
            .expect("signal lock")
            .ours
            .remove(tab.target.inner());
        if self.active > i || self.active >= self.tabs.len() {
            self.active = self.active.saturating_sub(1);
        }
    }

    /// Closes the active tab (or, for the only tab, leaves its page) when its URL breaks
    /// the URL policy. Document requests are refused at the browser's door (`browser/gate.rs`);
    /// this catches what makes no request (a URL the page writes itself, `about:`, `blob:`).
    /// True when something was done and the page must be scanned again.
    pub(super) async fn enforce_url_policy(&mut self, url: &str) -> Result<bool, PoolError> {
        // Chromium's own error page is where refused navigations end up; it is harmless.
        if url.starts_with("chrome-error:") {
            return Ok(false);
        }
        let Err(reason) = self.cfg.urls.check(url) else {
            return Ok(false);
        };
        self.events.push(PageEvent::Blocked {
            url: url.to_string(),
            reason: reason.clone(),
        });
        if self.tabs.len() > 1 {
            let i = self.active;
            let page = self.tabs[i].page.clone();
            self.remove_tab(i);
            self.events.push(PageEvent::TabClosed { tab: i as u32 + 1 });
            let _ = tokio::time::timeout(self.cfg.cdp_timeout, page.close()).await;
            self.page = self.tab().page.clone();
        } else {
            let _ = self
                .call_within(
                    "Page.navigate",
                    NavigateParams::new("about:blank"),
                    self.cfg.navigation_timeout,
                )
                .await?;
            let now = self.stuck_marks();
            self.settle(self.action_seq, now).await?;
        }
        Ok(true)
    }

    /// The tab list; the inactive tabs' URLs and titles come from the browser, which
    /// answers even when their pages are busy.
    pub(super) async fn tab_list(&self, url: &str, title: &str) -> Result<Vec<TabInfo>, PoolError> {
        let mut infos: HashMap<String, (String, String)> = HashMap::new();
        if self.tabs.len() > 1 {
            let browser = self.browser.browser().read().await;
            let targets = tokio::time::timeout(
                self.cfg.cdp_timeout,
                browser.execute(GetTargetsParams::default()),
            )
            .await
            .map_err(|_| PoolError::Timeout {
                op: "Target.getTargets",
                after: self.cfg.cdp_timeout,
            })?
            .map_err(|e| PoolError::from_cdp("Target.getTargets", e))?;
            for t in &targets.result.target_infos {
                infos.insert(
                    t.target_id.inner().clone(),
                    (t.url.clone(), clip_title(&t.title)),
                );
            }
        }
        Ok(self
            .tabs
            .iter()
            .enumerate()
            .map(|(i, tab)| {
                let active = i == self.active;
                let (u, t) = if active {
                    (url.to_string(), title.to_string())
                } else {
                    infos.remove(tab.target.inner()).unwrap_or_default()
                };
                TabInfo {
                    number: i as u32 + 1,
                    url: u,
                    title: t,
                    active,
                }
            })
            .collect())
    }

    fn tab_index(&self, n: u32) -> Result<usize, String> {
        let i = (n as usize).wrapping_sub(1);
        if i < self.tabs.len() {
            Ok(i)
        } else {
            Err(format!(
                "there is no tab {n}; the open tabs are 1 to {}",
                self.tabs.len()
            ))
        }
    }

    pub(super) async fn switch_tab(&mut self, n: u32) -> Result<ActReport, PoolError> {
        self.absorb_tabs().await?;
        let i = match self.tab_index(n) {
            Ok(i) => i,
            Err(e) => return Ok(ActReport::failed(e)),
        };
        self.active = i;
        self.page = self.tab().page.clone();
        // Background tabs are throttled; the active one must render and run at full speed.
        self.call("Page.bringToFront", BringToFrontParams::default())
            .await?;
        Ok(ActReport::default())
    }

    pub(super) async fn close_tab(&mut self, n: u32) -> Result<ActReport, PoolError> {
        self.absorb_tabs().await?;
        let i = match self.tab_index(n) {
            Ok(i) => i,
            Err(e) => return Ok(ActReport::failed(e)),
        };
        if self.tabs.len() == 1 {
            return Ok(ActReport::failed(
                "cannot close the only tab; use stop() to end the episode",
            ));
        }
        let page = self.tabs[i].page.clone();
        self.remove_tab(i);
        self.page = self.tab().page.clone();
        match tokio::time::timeout(self.cfg.cdp_timeout, page.close()).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::debug!(error = %e, "closing a tab failed"),
            Err(_) => tracing::debug!("closing a tab timed out"),
        }
        self.call("Page.bringToFront", BringToFrontParams::default())
            .await?;
        Ok(ActReport::default())
    }
}
