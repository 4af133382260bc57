//! Contexts opened ahead of leases. Creating a browser context and its first page is
//! Chromium's slowest per-episode step (150-250 ms on two cores); a browser keeps a few
//! fresh ones ready so that a lease takes one at once. The next one is opened once the
//! leasing session's first action (its start page) is done, or when it closes: opened
//! right at the lease, it would compete with that first navigation for the same cores. A
//! standby context has never been leased: isolation is the same as opening it on demand.

use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use chromiumoxide::Page;
use chromiumoxide::cdp::browser_protocol::browser::BrowserContextId;

use super::launch::{Chromium, open_context};
use crate::config::PoolConfig;

/// How long a standby page has to answer before it is taken for dead.
const ANSWER_WITHIN: Duration = Duration::from_millis(500);

/// A fresh context with its one blank page.
pub(crate) type Opened = (Page, BrowserContextId);

/// One browser's ready contexts.
#[derive(Default)]
pub(crate) struct Standby {
    ready: Mutex<Vec<Opened>>,
    refilling: AtomicBool,
}

impl Standby {
    /// A ready context of `browser` whose page still answers, if there is one. Its
    /// renderer may have died while it waited (nothing watches a standby page): such
    /// contexts are disposed of and the next one is tried.
    pub(crate) async fn take(&self, browser: &Arc<Chromium>) -> Option<Opened> {
        loop {
            let (page, context) = self.ready.lock().expect("standby lock").pop()?;
            let ping = tokio::time::timeout(ANSWER_WITHIN, page.evaluate_expression("1")).await;
            if matches!(ping, Ok(Ok(_))) {
                return Some((page, context));
            }
            tracing::debug!("a standby context stopped answering; disposing of it");
            let browser = browser.clone();
            tokio::spawn(async move {
                let guard = browser.browser.read().await;
                let _ = tokio::time::timeout(
                    Duration::from_secs(2),
                    guard.dispose_browser_context(context),
                )
                .await;
            });
        }
    }

    /// How many are ready.
    pub(crate) fn ready(&self) -> usize {
        self.ready.lock().expect("standby lock").len()
    }

    /// Every ready context, to be disposed of (a remote browser outlives the pool).
    pub(crate) fn drain(&self) -> Vec<Opened> {
        std::mem::take(&mut *self.ready.lock().expect("standby lock"))
    }

    /// Opens contexts of `browser` in the background until `cfg.standby_contexts` are
    /// ready; does nothing while another refill of the same browser runs.
    pub(crate) fn refill(self: &Arc<Self>, browser: &Arc<Chromium>, cfg: &PoolConfig) {
        let want = cfg.standby_contexts;
        if want == 0 || self.refilling.swap(true, Ordering::SeqCst) {
            return;
        }
        let (standby, browser, cfg) = (self.clone(), browser.clone(), cfg.clone());
        tokio::spawn(async move {
            while browser.is_alive() && standby.ready() < want {
                match open_context(&cfg, &browser).await {
                    Ok(opened) => standby.ready.lock().expect("standby lock").push(opened),
                    Err(e) => {
                        // The next lease opens its own context and reports the problem.
                        tracing::debug!(error = %e, "opening a standby context failed");
                        break;
                    }
                }
            }
            standby.refilling.store(false, Ordering::SeqCst);
        });
    }
}
