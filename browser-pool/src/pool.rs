//! The pool: warm browser processes, leased out one isolated browser context at a time.

use crate::politeness::{Domains, PolitenessStats};
use std::sync::Arc;
use std::sync::Mutex as StdMutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use tokio::sync::{Mutex, Semaphore};

use crate::browser::LiveBrowser;
use crate::browser::memory::{TreeMemory, process_tree};
use crate::config::{PoolConfig, PoolScreen, Screen};
use crate::error::PoolError;
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
    slots: Vec<Slot>,
    permits: Arc<Semaphore>,
    closed: AtomicBool,
    relaunches: AtomicU64,
    recycled: AtomicU64,
    leases: AtomicU64,
    from_standby: AtomicU64,
    /// Politeness per domain, shared with every browser's gate.
    domains: Arc<Domains>,
    /// Browsers replaced by recycling, finishing their last sessions before they close.
    retiring: Arc<StdMutex<Vec<Arc<LiveBrowser>>>>,
}

/// Where a slot's browser comes from.
#[derive(Debug, Clone)]
enum Source {
    Local,
    Remote(String),
}

struct Slot {
    source: Source,
    browser: Mutex<Option<Arc<LiveBrowser>>>,
}

impl Slot {
    async fn start(
        &self,
        cfg: &PoolConfig,
        domains: &Arc<Domains>,
    ) -> Result<Arc<LiveBrowser>, PoolError> {
        match &self.source {
            Source::Local => LiveBrowser::launch(cfg, domains).await,
            Source::Remote(url) => LiveBrowser::connect(cfg, url, domains).await,
        }
    }
}

/// Memory is read every this many sessions served by a browser (reading /proc is cheap,
/// but not free).
const MEMORY_CHECK_EVERY: u64 = 8;

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
    /// Of those, the ones that took a context opened ahead (see `standby_contexts`).
    pub from_standby: u64,
    /// Browsers replaced after serving `recycle_after` sessions or growing past the
    /// memory threshold.
    pub recycled: u64,
    /// What politeness per domain made wait.
    pub politeness: PolitenessStats,
}

impl BrowserPool {
    /// Launches every local browser and connects to every remote one up front, so that no
    /// episode waits for a launch.
    pub async fn launch(cfg: PoolConfig) -> Result<BrowserPool, PoolError> {
        cfg.validate().map_err(PoolError::Config)?;
        let cfg = Arc::new(cfg);
        let locals = if cfg.browsers == 0 && !cfg.remote.is_empty() {
            0
        } else {
            cfg.browsers.max(1)
        };
        let sources: Vec<Source> = std::iter::repeat_n(Source::Local, locals)
            .chain(cfg.remote.iter().cloned().map(Source::Remote))
            .collect();
        let domains = Arc::new(Domains::new(cfg.politeness.clone()));
        let starts = sources.iter().map(|s| async {
            match s {
                Source::Local => LiveBrowser::launch(&cfg, &domains).await,
                Source::Remote(url) => LiveBrowser::connect(&cfg, url, &domains).await,
            }
        });
        let browsers = futures::future::try_join_all(starts).await?;
        for b in &browsers {
            b.refill_standby(&cfg);
        }
        let slots = sources
            .into_iter()
            .zip(browsers)
            .map(|(source, b)| Slot {
                source,
                browser: Mutex::new(Some(b)),
            })
            .collect::<Vec<_>>();
        Ok(BrowserPool {
            inner: Arc::new(Inner {
                permits: Arc::new(Semaphore::new(
                    slots.len() * cfg.contexts_per_browser.max(1),
                )),
                cfg,
                slots,
                closed: AtomicBool::new(false),
                relaunches: AtomicU64::new(0),
                recycled: AtomicU64::new(0),
                leases: AtomicU64::new(0),
                from_standby: AtomicU64::new(0),
                domains,
                retiring: Arc::new(StdMutex::new(Vec::new())),
            }),
        })
    }

    /// The configuration the pool runs with.
    pub fn config(&self) -> &PoolConfig {
        &self.inner.cfg
    }

    /// Current occupancy.
    pub fn stats(&self) -> PoolStats {
        let capacity = self.inner.slots.len() * self.inner.cfg.contexts_per_browser.max(1);
        PoolStats {
            browsers: self.inner.slots.len(),
            capacity,
            leased: capacity.saturating_sub(self.inner.permits.available_permits()),
            relaunches: self.inner.relaunches.load(Ordering::Relaxed),
            leases: self.inner.leases.load(Ordering::Relaxed),
            from_standby: self.inner.from_standby.load(Ordering::Relaxed),
            recycled: self.inner.recycled.load(Ordering::Relaxed),
            politeness: self.inner.domains.stats(),
        }
    }

    /// Leases a fresh, isolated browser context with one blank page.
    ///
    /// Waits up to the configured lease timeout for a free slot.
    pub async fn lease(&self) -> Result<Session, PoolError> {
        self.lease_with(None).await
    }

    /// [`lease_with`](Self::lease_with) for a session that starts at `url`: first waits
    /// for a session slot on its domain when the pool caps them
    /// ([`Politeness`](crate::Politeness)); the
    /// session holds the slot until it closes, and says how long it waited
    /// ([`Session::politeness_wait`]).
    pub async fn lease_for(
        &self,
        url: &str,
        screen: Option<&Screen>,
    ) -> Result<Session, PoolError> {
        let (permit, waited) = self.inner.domains.context(url).await;
        let mut session = self.lease_with(screen).await?;
        session.hold_domain(permit, waited);
        Ok(session)
    }

    /// [`lease`](Self::lease), with the session's pages (popups included) rendered at
    /// `screen` instead of the pool's own: a campaign pins what its policy sees, whichever
    /// worker runs its episodes.
    pub async fn lease_with(&self, screen: Option<&Screen>) -> Result<Session, PoolError> {
        let inner = &self.inner;
        let (cfg, emulate) = match screen {
            Some(s) if *s != Screen::of(&inner.cfg) => {
                if let Some((field, message)) = s.problems().into_iter().next() {
                    return Err(PoolError::Config(format!("screen {field} {message}")));
                }
                let mut cfg = (*inner.cfg).clone();
                s.apply(&mut cfg);
                (Arc::new(cfg), true)
            }
            _ => (inner.cfg.clone(), false),
        };
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
            // The pick reserves a place on the browser (`active`), so that leases taken at
            // the same moment spread over the browsers; every failure below gives it back.
            let browser = self.pick_browser().await?;
            let opened = match browser.take_standby().await {
                Some(ready) => {
                    inner.from_standby.fetch_add(1, Ordering::Relaxed);
                    Ok(ready)
                }
                None => browser.open_context(&inner.cfg).await,
            };
            match opened {
                Ok((page, context)) => {
                    inner.leases.fetch_add(1, Ordering::Relaxed);
                    browser.served.fetch_add(1, Ordering::Relaxed);
                    let (b, ctx) = (browser.clone(), context.clone());
                    let session =
                        Session::new(page, context, browser, cfg.clone(), emulate, permit).await;
                    if session.is_err() {
                        let guard = b.browser().read().await;
                        let _ = tokio::time::timeout(
                            inner.cfg.cdp_timeout,
                            guard.dispose_browser_context(ctx),
                        )
                        .await;
                        b.active.fetch_sub(1, Ordering::SeqCst);
                    }
                    return session;
                }
                Err(e) => {
                    tracing::warn!(error = %e, "opening a browser context failed");
                    browser.active.fetch_sub(1, Ordering::SeqCst);
                    if e.browser_is_dead() {
                        browser.mark_dead();
                    }
                    last_err = Some(e);
                }
            }
        }
        Err(last_err.expect("the loop ran at least once"))
    }

    /// The live browser with the fewest active sessions, relaunching dead ones and
    /// recycling worn ones on the way.
    async fn pick_browser(&self) -> Result<Arc<LiveBrowser>, PoolError> {
        let mut best: Option<Arc<LiveBrowser>> = None;
        for slot in &self.inner.slots {
            let mut guard = slot.browser.lock().await;
            let alive = guard.as_ref().is_some_and(|b| b.is_alive());
            if !alive {
                if let Some(dead) = guard.take() {
                    tracing::warn!(
                        pid = dead.pid(),
                        remote = dead.remote(),
                        "browser died; replacing it"
                    );
                    tokio::spawn(async move { dead.shutdown().await });
                    self.inner.relaunches.fetch_add(1, Ordering::Relaxed);
                }
                *guard = Some(slot.start(&self.inner.cfg, &self.inner.domains).await?);
            } else if let Some(why) = guard.as_ref().and_then(|b| self.worn_out(b)) {
                let fresh = slot.start(&self.inner.cfg, &self.inner.domains).await?;
                if let Some(old) = guard.replace(fresh) {
                    tracing::info!(pid = old.pid(), why, "recycling a browser");
                    self.inner.recycled.fetch_add(1, Ordering::Relaxed);
                    self.retire(old);
                }
            }
            let candidate = guard.as_ref().expect("slot was just filled").clone();
            drop(guard);
            let load = candidate.active.load(Ordering::SeqCst);
            if best
                .as_ref()
                .is_none_or(|b| load < b.active.load(Ordering::SeqCst))
            {
                best = Some(candidate);
            }
        }
        let best = best.ok_or(PoolError::Closed)?;
        best.active.fetch_add(1, Ordering::SeqCst);
        Ok(best)
    }

    /// Why a live local browser should be replaced now, if it should.
    fn worn_out(&self, b: &LiveBrowser) -> Option<&'static str> {
        let cfg = &self.inner.cfg;
        let pid = b.pid()?; // remote browsers are not ours to restart
        let served = b.served.load(Ordering::Relaxed);
        if cfg.recycle_after.is_some_and(|n| served >= n) {
            return Some("served its quota of sessions");
        }
        let limit = cfg.recycle_above_bytes?;
        let due = served / MEMORY_CHECK_EVERY;
        if due > b.memory_checked.swap(due, Ordering::Relaxed) {
            let used = process_tree(pid).map_or(0, |m| m.pss);
            if used > limit {
                return Some("grew past the memory threshold");
            }
        }
        None
    }

    /// Lets a replaced browser finish its sessions, then closes it.
    fn retire(&self, old: Arc<LiveBrowser>) {
        let retiring = self.inner.retiring.clone();
        retiring.lock().expect("retiring lock").push(old.clone());
        tokio::spawn(async move {
            // Sessions have their own time limits; this bound only guards against leaks.
            let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(600);
            while old.active.load(Ordering::SeqCst) > 0 && tokio::time::Instant::now() < deadline {
                tokio::time::sleep(std::time::Duration::from_millis(200)).await;
            }
            old.shutdown().await;
            retiring
                .lock()
                .expect("retiring lock")
                .retain(|b| !Arc::ptr_eq(b, &old));
        });
    }

    /// Contexts opened ahead of leases and ready now, over all browsers.
    pub async fn standby_ready(&self) -> usize {
        let mut n = 0;
        for slot in &self.inner.slots {
            if let Some(b) = slot.browser.lock().await.as_ref() {
                n += b.standby_ready();
            }
        }
        n
    }

    /// Process ids of the local browsers, retiring ones included (for diagnostics, memory
    /// accounting and crash tests).
    pub async fn browser_pids(&self) -> Vec<u32> {
        let mut out = Vec::new();
        for slot in &self.inner.slots {
            if let Some(pid) = slot.browser.lock().await.as_ref().and_then(|b| b.pid()) {
                out.push(pid);
            }
        }
        let retiring = self.inner.retiring.lock().expect("retiring lock");
        out.extend(retiring.iter().filter_map(|b| b.pid()));
        out
    }

    /// Memory of the pool's local browser process trees (remote browsers are not counted).
    pub async fn memory(&self) -> TreeMemory {
        let mut total = TreeMemory::default();
        for pid in self.browser_pids().await {
            if let Some(m) = process_tree(pid) {
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
            if let Some(browser) = slot.browser.lock().await.take() {
                browser.shutdown().await;
            }
        }
        let retiring: Vec<_> = self
            .inner
            .retiring
            .lock()
            .expect("retiring lock")
            .drain(..)
            .collect();
        for browser in retiring {
            browser.shutdown().await;
        }
    }
}
