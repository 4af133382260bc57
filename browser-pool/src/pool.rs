//! The pool: warm browser processes, leased out one isolated browser context at a time.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use chromiumoxide::cdp::browser_protocol::target::{
    CreateBrowserContextParams, CreateTargetParams,
};
use tokio::sync::{Mutex, Semaphore};

use crate::config::PoolConfig;
use crate::error::PoolError;
use crate::launch::LiveBrowser;
use crate::session::Session;

/// A pool of Chromium processes. Cloning is cheap and shares the pool.
///
/// Every [`lease`](BrowserPool::lease) gets a fresh browser context (its own cookies,
/// storage and cache) with one page, on the least busy live browser. A browser found dead
/// at lease time is relaunched; sessions on a browser that dies fail with
/// [`PoolError::BrowserGone`] or [`PoolError::Timeout`].
#[derive(Clone)]
pub struct BrowserPool {
    inner: Arc<Inner>,
}

struct Inner {
    cfg: Arc<PoolConfig>,
    slots: Vec<Mutex<Option<Arc<LiveBrowser>>>>,
    permits: Arc<Semaphore>,
    closed: AtomicBool,
    relaunches: AtomicU64,
    leases: AtomicU64,
}

/// A snapshot of the pool's state, for progress displays and metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolStats {
    /// Browser processes configured.
    pub browsers: usize,
    /// Sessions that can be leased at once.
    pub capacity: usize,
    /// Sessions leased right now.
    pub leased: usize,
    /// Browsers relaunched after dying.
    pub relaunches: u64,
    /// Sessions leased since start.
    pub leases: u64,
}

impl BrowserPool {
    /// Launches every browser up front, so that no episode waits for a launch.
    pub async fn launch(cfg: PoolConfig) -> Result<BrowserPool, PoolError> {
        let cfg = Arc::new(cfg);
        let launches = (0..cfg.browsers.max(1)).map(|_| LiveBrowser::launch(&cfg));
        let browsers = futures::future::try_join_all(launches).await?;
        let slots = browsers.into_iter().map(|b| Mutex::new(Some(b))).collect();
        Ok(BrowserPool {
            inner: Arc::new(Inner {
                permits: Arc::new(Semaphore::new(cfg.capacity())),
                cfg,
                slots,
                closed: AtomicBool::new(false),
                relaunches: AtomicU64::new(0),
                leases: AtomicU64::new(0),
            }),
        })
    }

    /// The configuration the pool runs with.
    pub fn config(&self) -> &PoolConfig {
        &self.inner.cfg
    }

    /// Current occupancy.
    pub fn stats(&self) -> PoolStats {
        let capacity = self.inner.cfg.capacity();
        PoolStats {
            browsers: self.inner.slots.len(),
            capacity,
            leased: capacity - self.inner.permits.available_permits(),
            relaunches: self.inner.relaunches.load(Ordering::Relaxed),
            leases: self.inner.leases.load(Ordering::Relaxed),
        }
    }

    /// Leases a fresh, isolated browser context with one blank page.
    ///
    /// Waits up to the configured lease timeout for a free slot.
    pub async fn lease(&self) -> Result<Session, PoolError> {
        let inner = &self.inner;
        if inner.closed.load(Ordering::SeqCst) {
            return Err(PoolError::Closed);
        }
        let permit = tokio::time::timeout(
            inner.cfg.lease_timeout,
            inner.permits.clone().acquire_owned(),
        )
        .await
        .map_err(|_| PoolError::LeaseTimeout(inner.cfg.lease_timeout))?
        .map_err(|_| PoolError::Closed)?;

        let mut last_err = None;
        // A browser that turns out dead is relaunched once; a second failure is reported.
        for _ in 0..2 {
            let browser = self.pick_browser().await?;
            match open_context(&inner.cfg, &browser).await {
                Ok((page, context)) => {
                    inner.leases.fetch_add(1, Ordering::Relaxed);
                    browser.served.fetch_add(1, Ordering::Relaxed);
                    return Ok(Session::new(
                        page,
                        context,
                        browser,
                        inner.cfg.clone(),
                        permit,
                    ));
                }
                Err(e) => {
                    tracing::warn!(error = %e, "opening a browser context failed");
                    if e.browser_is_dead() {
                        browser.mark_dead();
                    }
                    last_err = Some(e);
                }
            }
        }
        Err(last_err.expect("the loop ran at least once"))
    }

    /// The live browser with the fewest active sessions, relaunching dead ones on the way.
    async fn pick_browser(&self) -> Result<Arc<LiveBrowser>, PoolError> {
        let mut best: Option<Arc<LiveBrowser>> = None;
        for slot in &self.inner.slots {
            let mut guard = slot.lock().await;
            let alive = guard.as_ref().is_some_and(|b| b.is_alive());
            if !alive {
                if let Some(dead) = guard.take() {
                    tracing::warn!(pid = dead.pid(), "browser died; relaunching");
                    tokio::spawn(async move { dead.shutdown().await });
                    self.inner.relaunches.fetch_add(1, Ordering::Relaxed);
                }
                *guard = Some(LiveBrowser::launch(&self.inner.cfg).await?);
            }
            let candidate = guard.as_ref().expect("slot was just filled").clone();
            let load = candidate.active.load(Ordering::SeqCst);
            if best
                .as_ref()
                .is_none_or(|b| load < b.active.load(Ordering::SeqCst))
            {
                best = Some(candidate);
            }
        }
        best.ok_or(PoolError::Closed)
    }

    /// Process ids of the live browsers (for diagnostics and crash tests).
    pub async fn browser_pids(&self) -> Vec<u32> {
        let mut out = Vec::new();
        for slot in &self.inner.slots {
            if let Some(pid) = slot.lock().await.as_ref().and_then(|b| b.pid()) {
                out.push(pid);
            }
        }
        out
    }

    /// Memory of the pool's local browser process trees (remote browsers are not counted).
    pub async fn memory(&self) -> crate::memory::TreeMemory {
        let mut total = crate::memory::TreeMemory::default();
        for pid in self.browser_pids().await {
            if let Some(m) = crate::memory::process_tree(pid) {
                total += m;
            }
        }
        total
    }

    /// Closes every browser. Outstanding sessions fail from here on.
    pub async fn shutdown(&self) {
        self.inner.closed.store(true, Ordering::SeqCst);
        self.inner.permits.close();
        for slot in &self.inner.slots {
            if let Some(browser) = slot.lock().await.take() {
                browser.shutdown().await;
            }
        }
    }
}

async fn open_context(
    cfg: &PoolConfig,
    browser: &Arc<LiveBrowser>,
) -> Result<
    (
        chromiumoxide::Page,
        chromiumoxide::cdp::browser_protocol::browser::BrowserContextId,
    ),
    PoolError,
> {
    let guard = browser.browser.read().await;
    let context = tokio::time::timeout(
        cfg.cdp_timeout,
        guard.create_browser_context(CreateBrowserContextParams::default()),
    )
    .await
    .map_err(|_| PoolError::Timeout {
        op: "Target.createBrowserContext",
        after: cfg.cdp_timeout,
    })?
    .map_err(|e| PoolError::from_cdp("Target.createBrowserContext", e))?;
    let params = CreateTargetParams {
        browser_context_id: Some(context.clone()),
        ..CreateTargetParams::new("about:blank")
    };
    let page = match tokio::time::timeout(cfg.cdp_timeout, guard.new_page(params)).await {
        Ok(Ok(page)) => page,
        failure => {
            let _ =
                tokio::time::timeout(cfg.cdp_timeout, guard.dispose_browser_context(context)).await;
            return Err(match failure {
                Err(_) => PoolError::Timeout {
                    op: "Target.createTarget",
                    after: cfg.cdp_timeout,
                },
                Ok(Err(e)) => PoolError::from_cdp("Target.createTarget", e),
                Ok(Ok(_)) => unreachable!("handled above"),
            });
        }
    };
    browser.active.fetch_add(1, Ordering::SeqCst);
    Ok((page, context))
}
