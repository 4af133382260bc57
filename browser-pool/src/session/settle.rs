//! After every action: waiting for the page to settle, so that the next observation sees
//! what the action led to. The document the action leads to has loaded, its DOM has been
//! quiet for `settle_quiet`, no short timeout its recent activity set is pending and no
//! recent request is in flight; at most `settle_max` (and at most `settle_restless` after
//! load, for pages that never go quiet).

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use serde::Deserialize;

use super::Session;
use super::tab::Life;
use crate::error::PoolError;
use crate::js;

/// Counts taken before an action of what can stop a page that started leaving from ever
/// leaving.
#[derive(Clone, Copy)]
pub(super) struct Stuck {
    /// Refused downloads in the session.
    downloads: u64,
    /// `beforeunload` dialogs the active tab answered "stay".
    stays: u64,
}

#[derive(Deserialize)]
pub(super) struct Probe {
    pub(super) state: String,
    #[serde(default)]
    pub(super) quiet_ms: f64,
    /// Short timeouts the page's recent activity has pending (see `js/timers.js`).
    #[serde(default)]
    pub(super) timers: u32,
    /// Endless animations running (spinners, animation-frame loops): see
    /// [`PoolConfig::frame_rate_limit`](crate::PoolConfig::frame_rate_limit).
    #[serde(default)]
    pub(super) endless: u32,
}

/// Once per process: a page with an endless animation renders flat out without the
/// frame-rate limit.
fn warn_endless_animation() {
    static WARNED: std::sync::Once = std::sync::Once::new();
    WARNED.call_once(|| {
        tracing::warn!(
            "a page keeps an animation running (a spinner, a carousel): without Chromium's \
             frame-rate limit (off by default, for fast screenshots) each such page renders as \
             fast as it can, about a core of CPU, also between steps; on real websites use \
             --frame-rate-limit (PoolConfig::frame_rate_limit)"
        );
    });
}

impl Session {
    /// The counts [`Session::settle`] compares against, taken before an action.
    pub(super) fn stuck_marks(&self) -> Stuck {
        Stuck {
            downloads: self.downloads.load(Ordering::SeqCst),
            stays: self.tab().stays(),
        }
    }

    /// Waits until the document that action `seq` leads to has loaded, its DOM has been
    /// quiet for `settle_quiet`, no short timeout its recent activity set is pending and no
    /// recent request is in flight; at most `settle_max`
    /// (and at most `settle_restless` after load, for pages that never go quiet).
    pub(super) async fn settle(&mut self, seq: u64, before: Stuck) -> Result<(), PoolError> {
        let start = Instant::now();
        let probe = js::settle(seq, self.cfg.settle_quiet, PROBE_WAIT);
        let mut loaded_at: Option<Instant> = None;
        loop {
            if start.elapsed() >= self.cfg.settle_max {
                tracing::debug!(seq, "page did not settle in time; observing anyway");
                return Ok(());
            }
            if self.tab().life() == Life::Closed {
                // The page closed its own tab: settle the one that is active now.
                self.absorb_tabs().await?;
                loaded_at = None;
            }
            match self.eval_within(&probe, self.page_limit()).await {
                Ok(Ok(v)) => match serde_json::from_value::<Probe>(v) {
                    Ok(p) if p.state == "leaving" => {
                        // A link that turned into a (refused) download never leaves, nor
                        // does a page whose "leave this page?" was answered "stay".
                        if self.downloads.load(Ordering::SeqCst) != before.downloads
                            || self.tab().stays() != before.stays
                        {
                            self.mark("window.__sgLeaving = null").await?;
                        }
                    }
                    Ok(p) if p.state == "complete" => {
                        if p.endless > 0 && !self.cfg.frame_rate_limit {
                            warn_endless_animation();
                        }
                        let loaded = *loaded_at.get_or_insert_with(Instant::now);
                        if self.quiet(&p) || loaded.elapsed() >= self.cfg.settle_restless {
                            return Ok(());
                        }
                    }
                    // Parsed, but a request that never ends (a hung image, a tracker)
                    // holds the load event back for good: settled once the rest is.
                    Ok(p) if p.state == "interactive" && self.tab().long_request_in_flight() => {
                        if self.quiet(&p) {
                            return Ok(());
                        }
                    }
                    // Still loading.
                    Ok(_) | Err(_) => {}
                },
                // The old document went away under the probe: wait for the next one.
                Ok(Err(_)) | Err(PoolError::Cdp { .. }) => {}
                Err(e) => return Err(e),
            }
            tokio::time::sleep(SETTLE_POLL).await;
        }
    }

    /// Whether the page as `probe` found it, and the tab's network, look settled. A
    /// navigation in progress is a page about to change, whatever started it (the action,
    /// a page script, a hung goto resent).
    fn quiet(&self, probe: &Probe) -> bool {
        probe.quiet_ms >= self.cfg.settle_quiet.as_millis() as f64
            && probe.timers == 0
            && !self.tab().network_busy(self.cfg.settle_quiet)
            && !self.tab().is_navigating()
    }
}

/// How often settling probes a page that is still loading or has requests in flight.
pub(super) const SETTLE_POLL: Duration = Duration::from_millis(15);

/// How long one settling probe may wait inside the page before reporting back (the Rust
/// side then checks the network, tabs and limits).
pub(super) const PROBE_WAIT: Duration = Duration::from_millis(250);
