//! One browser as the pool keeps it: its Chromium process and connection (`launch.rs`),
//! the contexts opened ahead of leases (`standby.rs`), the URL policy at its door
//! (`gate.rs`), and the counts the pool balances leases and recycles browsers by (the
//! memory they are read with: `memory.rs`).
//!
//! Knows nothing of sessions, tabs or pages beyond a context's first blank one: sessions
//! use a browser, never the other way round.

pub(crate) mod gate;
pub(crate) mod launch;
pub(crate) mod memory;
pub(crate) mod profiles;
pub(crate) mod standby;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize};
use std::time::Duration;

use chromiumoxide::browser::Browser;
use tokio::sync::{Mutex, RwLock};

use crate::config::PoolConfig;
use crate::error::PoolError;
use crate::politeness::Domains;
use gate::Gate;
use launch::Chromium;
use standby::{Opened, Standby};

/// A running browser and the state the pool keeps about it.
pub(crate) struct LiveBrowser {
    chromium: Arc<Chromium>,
    /// Sessions currently leased on this browser.
    pub(crate) active: AtomicUsize,
    /// Sessions ever leased on this browser.
    pub(crate) served: AtomicU64,
    /// `served / MEMORY_CHECK_EVERY` when memory was last read (pool recycling).
    pub(crate) memory_checked: AtomicU64,
    /// Contexts opened ahead of leases.
    standby: Arc<Standby>,
    /// Where the URL policy's refusals are reported (see `gate.rs`).
    pub(crate) gate: Arc<Gate>,
    /// What the gate answers by, and whether it is open: opened at launch when the pool's
    /// settings need it, else by the first session restricted to some domains.
    gate_rules: Mutex<Option<gate::Rules>>,
}

impl LiveBrowser {
    /// Launches a local browser.
    pub(crate) async fn launch(
        cfg: &PoolConfig,
        domains: &Arc<Domains>,
    ) -> Result<Arc<LiveBrowser>, PoolError> {
        LiveBrowser::around(Chromium::launch(cfg).await?, cfg, domains).await
    }

    /// Connects to a browser someone else runs (see [`Chromium::connect`]).
    pub(crate) async fn connect(
        cfg: &PoolConfig,
        url: &str,
        domains: &Arc<Domains>,
    ) -> Result<Arc<LiveBrowser>, PoolError> {
        LiveBrowser::around(Chromium::connect(cfg, url).await?, cfg, domains).await
    }

    /// Keeps the pool's state about `chromium` and puts the URL policy and politeness at
    /// its door (see `gate.rs`), unless neither has anything to do.
    async fn around(
        chromium: Chromium,
        cfg: &PoolConfig,
        domains: &Arc<Domains>,
    ) -> Result<Arc<LiveBrowser>, PoolError> {
        let live = Arc::new(LiveBrowser {
            chromium: Arc::new(chromium),
            active: AtomicUsize::new(0),
            served: AtomicU64::new(0),
            memory_checked: AtomicU64::new(0),
            standby: Default::default(),
            gate: Default::default(),
            gate_rules: Mutex::new(Some(gate::Rules {
                urls: cfg.urls.clone(),
                domains: domains.clone(),
                capture: cfg.capture_traffic,
            })),
        });
        if !cfg.urls.is_open() || cfg.politeness.is_on() || cfg.capture_traffic {
            live.open_gate().await?;
        }
        Ok(live)
    }

    /// Opens the gate (a no-op once open).
    pub(crate) async fn open_gate(&self) -> Result<(), PoolError> {
        let mut rules = self.gate_rules.lock().await;
        if let Some(r) = rules.take()
            && let Err(e) = gate::open(&self.chromium, &self.gate, r.clone()).await
        {
            *rules = Some(r);
            return Err(e);
        }
        Ok(())
    }

    /// The CDP connection to the browser.
    pub(crate) fn browser(&self) -> &RwLock<Browser> {
        &self.chromium.browser
    }

    /// The address of a remote browser; `None` for one this pool launched.
    pub(crate) fn remote(&self) -> Option<&str> {
        self.chromium.remote()
    }

    /// Whether the process runs and its connection is up.
    pub(crate) fn is_alive(&self) -> bool {
        self.chromium.is_alive()
    }

    pub(crate) fn mark_dead(&self) {
        self.chromium.mark_dead();
    }

    /// The browser's process id.
    pub(crate) fn pid(&self) -> Option<u32> {
        self.chromium.pid()
    }

    /// A fresh context with its blank page: one opened ahead if one is ready (and still
    /// answers), else `None`.
    pub(crate) async fn take_standby(&self) -> Option<Opened> {
        self.standby.take(&self.chromium).await
    }

    /// Contexts opened ahead and ready now.
    pub(crate) fn standby_ready(&self) -> usize {
        self.standby.ready()
    }

    /// Opens contexts ahead in the background, up to `cfg.standby_contexts`.
    pub(crate) fn refill_standby(&self, cfg: &PoolConfig) {
        self.standby.refill(&self.chromium, cfg);
    }

    /// Opens a fresh context with one blank page now.
    pub(crate) async fn open_context(&self, cfg: &PoolConfig) -> Result<Opened, PoolError> {
        launch::open_context(cfg, &self.chromium).await
    }

    /// Closes the browser (see [`Chromium::close`]); a remote one first gets back the
    /// contexts opened ahead in it, since it outlives the pool.
    pub(crate) async fn shutdown(&self) {
        self.chromium.mark_dead();
        if self.remote().is_some() {
            let browser = self.browser().read().await;
            for (_, context) in self.standby.drain() {
                let _ = tokio::time::timeout(
                    Duration::from_secs(2),
                    browser.dispose_browser_context(context),
                )
                .await;
            }
        }
        self.chromium.close().await;
    }
}
