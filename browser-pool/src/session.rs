//! A leased browser context: navigate, observe, act.
//!
//! The session is one [`Session`] split by concern, one `impl Session` per file:
//! - here: its state, leasing and release;
//! - `cdp.rs`: bounded page-level CDP calls, and the rescue of a call a hung page or a
//!   navigation held (every CDP call is bounded: chromiumoxide's own 30 s limit does not
//!   cover all of them, and a hung renderer would otherwise hang the episode forever);
//! - `settle.rs`: after every action, waiting for the page to settle (the next document
//!   loaded, and its DOM quiet for a moment, bounded by `settle_max`);
//! - `observe.rs`: observations and the page reads a runner makes;
//! - `act.rs`: running an action, and finding where its target is;
//! - `input.rs`: mouse and keyboard events;
//! - `tabs.rs`: the tabs of the context; `signals.rs`: what the browser reports of them;
//! - `navigation.rs`: `goto`, back and forward;
//! - `world.rs`, `frames.rs` and `numbering.rs`: where snippets run (our isolated world,
//!   cross-origin frames) and how element numbers map to documents;
//! - `tab.rs` (with `landing.rs`): one page and the watchers that keep it observable.
//!
//! Knows one browser's CDP connection (`browser.rs`), never the pool that leased it.

use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chromiumoxide::Page;
use chromiumoxide::cdp::browser_protocol::browser::BrowserContextId;
use serde::Deserialize;
use tokio::sync::OwnedSemaphorePermit;
use tokio::task::JoinHandle;

use crate::browser::LiveBrowser;
use crate::browser::gate::Registered;
use crate::config::{PoolConfig, PoolScreen};
use crate::error::PoolError;
use crate::events::EventLog;
use crate::politeness::DomainPermit;
use crate::traffic::{Exchange, Recording, Traffic, Unmatched};
use signals::{OurTab, TabSignals, watch_context};
use tab::Tab;

mod act;
mod cdp;
mod frames;
mod input;
mod landing;
mod navigation;
mod numbering;
mod observe;
mod settle;
mod signals;
mod tab;
mod tabs;
mod world;

/// What happened when an action ran.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ActReport {
    /// Why the action failed, in words for the policy; `None` when it worked.
    pub error: Option<String>,
    /// Where the mouse clicked, in viewport pixels (for replays).
    pub point: Option<(f64, f64)>,
}

impl ActReport {
    fn failed(message: impl Into<String>) -> Self {
        ActReport {
            error: Some(message.into()),
            point: None,
        }
    }
}

/// The state of one element, read by CSS selector.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ElementState {
    /// Lower-case tag name.
    pub tag: String,
    /// Rendered text.
    pub text: String,
    /// Current value (inputs, textareas, the selected option's text for selects).
    pub value: Option<String>,
    /// Checkbox / radio state.
    pub checked: Option<bool>,
}

/// One isolated browser context with one page, leased from the pool.
///
/// Dropping a session releases it; [`Session::close`] does the same but waits for the
/// context to be disposed.
pub struct Session {
    /// The active tab's page.
    page: Page,
    /// Open tabs in opening order; never empty while the session lives.
    tabs: Vec<Tab>,
    active: usize,
    context: Option<BrowserContextId>,
    browser: Arc<LiveBrowser>,
    cfg: Arc<PoolConfig>,
    /// Pages render at a lease's own screen, not the browser's default.
    emulate: bool,
    permit: Option<OwnedSemaphorePermit>,
    /// The session's slot on its start domain, and how long the lease waited for it.
    domain: Option<(DomainPermit, Duration)>,
    /// Whether its exchanges are recorded or answered from a recording.
    traffic: Arc<Traffic>,
    /// The domains its pages may load documents from (empty: any).
    allowed: Arc<Mutex<Vec<String>>>,
    action_seq: u64,
    /// An action whose document mark (`js::prepare`) rides along with its target's
    /// resolution, saving a round trip; 0: none pending.
    pending_prepare: AtomicU64,
    last_error: Option<String>,
    events: EventLog,
    /// Targets the browser reports for this context: opened and destroyed tabs.
    signals: Arc<Mutex<TabSignals>>,
    /// Downloads refused in this session so far.
    downloads: Arc<AtomicU64>,
    watchers: Vec<JoinHandle<()>>,
}

impl Session {
    /// Wraps a fresh context and its first page. On failure the caller disposes the context.
    pub(crate) async fn new(
        page: Page,
        context: BrowserContextId,
        browser: Arc<LiveBrowser>,
        cfg: Arc<PoolConfig>,
        emulate: bool,
        permit: OwnedSemaphorePermit,
    ) -> Result<Session, PoolError> {
        let events = EventLog::default();
        let first = Tab::attach(page.clone(), &cfg, &events, emulate).await?;
        let signals = Arc::new(Mutex::new(TabSignals::default()));
        signals
            .lock()
            .expect("signal lock")
            .ours
            .insert(first.target.inner().clone(), OurTab::of(&first));
        let downloads = Arc::new(AtomicU64::new(0));
        let tabs = signals.clone();
        let traffic = Arc::new(Traffic::default());
        let allowed: Arc<Mutex<Vec<String>>> = Arc::default();
        browser.gate.register(
            context.inner(),
            Registered {
                events: events.clone(),
                owns: Box::new(move |frame| {
                    let s = tabs.lock().unwrap_or_else(|p| p.into_inner());
                    s.has_frame(frame) || s.opened.iter().any(|(t, _)| t.inner() == frame)
                }),
                traffic: traffic.clone(),
                allowed: allowed.clone(),
            },
        );
        let watchers = match watch_context(
            &browser,
            &context,
            signals.clone(),
            events.clone(),
            downloads.clone(),
        )
        .await
        {
            Ok(w) => w,
            Err(e) => {
                browser.gate.unregister(context.inner());
                return Err(e);
            }
        };
        Ok(Session {
            page,
            tabs: vec![first],
            active: 0,
            context: Some(context),
            browser,
            cfg,
            emulate,
            permit: Some(permit),
            domain: None,
            traffic,
            allowed,
            action_seq: 0,
            pending_prepare: AtomicU64::new(0),
            last_error: None,
            events,
            signals,
            downloads,
            watchers,
        })
    }

    fn tab(&self) -> &Tab {
        &self.tabs[self.active]
    }

    /// The web pages (http and https) whose documents the session's tabs committed since
    /// the last call, in each tab's order, the tabs in opening order: every page visited,
    /// including those left before an observation saw them.
    pub fn take_visited(&self) -> Vec<String> {
        self.tabs.iter().flat_map(Tab::take_committed).collect()
    }

    /// Drops what the session has noted so far (page events, the last action's error,
    /// the pages visited), so that work done before an episode (a setup that logs in)
    /// shows in none of its observations and counts as none of its visits.
    pub fn forget(&mut self) {
        self.events.take();
        self.last_error = None;
        self.take_visited();
    }

    /// What this session's pages render at (the lease's screen, else the pool's).
    pub fn screen(&self) -> crate::config::Screen {
        crate::config::Screen::of(&self.cfg)
    }

    /// The process id of the browser this session runs in.
    pub fn browser_pid(&self) -> Option<u32> {
        self.browser.pid()
    }
    /// What this session's observations carry beyond the pool's settings: the
    /// set-of-marks screenshot and the accessibility tree. An environment session's client
    /// asks for them per session; drawing and reading them costs time only where wanted.
    pub fn set_observation_extras(&mut self, set_of_marks: bool, accessibility_tree: bool) {
        if self.cfg.set_of_marks != set_of_marks
            || self.cfg.accessibility_tree != accessibility_tree
        {
            let cfg = Arc::make_mut(&mut self.cfg);
            cfg.set_of_marks = set_of_marks;
            cfg.accessibility_tree = accessibility_tree;
        }
    }

    /// Shows an error in the next observation, as if an action had failed (used when a
    /// policy's output is not a valid action).
    pub fn report_error(&mut self, message: impl Into<String>) {
        self.last_error = Some(message.into());
    }

    /// Lets the session's pages load documents (pages, frames, popups) only from
    /// `domains` and their subdomains from now on, checked at the browser's gate before
    /// the request leaves (the gate is opened for it if the pool's settings had not); a
    /// refusal is a `blocked` page event and a failed navigation. Empty: no restriction.
    pub async fn restrict_domains(&self, domains: Vec<String>) -> Result<(), PoolError> {
        if !domains.is_empty() {
            self.browser.open_gate().await?;
        }
        let domains = domains
            .into_iter()
            .map(|d| {
                d.trim()
                    .trim_start_matches("*.")
                    .trim_matches('.')
                    .to_ascii_lowercase()
            })
            .collect();
        *self.allowed.lock().unwrap_or_else(|p| p.into_inner()) = domains;
        Ok(())
    }

    /// Records every exchange of the session's pages from now on (see
    /// [`take_traffic`](Self::take_traffic)). Needs a pool that captures traffic.
    pub fn record_traffic(&self) -> Result<(), PoolError> {
        self.captures()?;
        self.traffic.record();
        Ok(())
    }

    /// Answers every request of the session's pages from `recording` from now on; what it
    /// lacks is answered as `unmatched` says and counted
    /// ([`unmatched_requests`](Self::unmatched_requests)). Needs a pool that captures
    /// traffic.
    pub fn replay_traffic(
        &self,
        recording: Arc<Recording>,
        unmatched: Unmatched,
    ) -> Result<(), PoolError> {
        self.captures()?;
        self.traffic.replay(recording, unmatched);
        Ok(())
    }

    /// The exchanges recorded since the last call, in the order their responses came.
    pub fn take_traffic(&self) -> Vec<Exchange> {
        self.traffic.take()
    }

    /// Requests a replay could not answer from its recording.
    pub fn unmatched_requests(&self) -> u64 {
        self.traffic.unmatched()
    }

    /// The URLs of the first 50 of them.
    pub fn unmatched_urls(&self) -> Vec<String> {
        self.traffic.unmatched_urls()
    }

    fn captures(&self) -> Result<(), PoolError> {
        if self.cfg.capture_traffic {
            Ok(())
        } else {
            Err(PoolError::Config(
                "recording or replaying traffic needs a pool started with capture_traffic (--capture-traffic)".into(),
            ))
        }
    }

    /// Keeps a slot on the session's start domain until the session closes.
    pub(crate) fn hold_domain(&mut self, permit: DomainPermit, waited: Duration) {
        self.domain = Some((permit, waited));
    }

    /// How long the lease waited for a slot on its start domain (politeness); `None`
    /// where the pool caps no domain's sessions.
    pub fn politeness_wait(&self) -> Option<Duration> {
        self.domain
            .as_ref()
            .filter(|(p, _)| p.caps())
            .map(|(_, w)| *w)
    }

    /// Releases the session and waits until its browser context is gone.
    pub async fn close(mut self) {
        self.release().await;
    }

    async fn release(&mut self) {
        for w in self.watchers.drain(..) {
            w.abort();
        }
        self.tabs.clear();
        if let Some(context) = self.context.take() {
            self.browser.gate.unregister(context.inner());
            dispose(&self.browser, context, self.cfg.cdp_timeout).await;
            self.browser
                .active
                .fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
            // In case the session never acted.
            self.browser.refill_standby(&self.cfg);
        }
        self.permit.take();
    }
}

async fn dispose(browser: &LiveBrowser, context: BrowserContextId, limit: Duration) {
    if !browser.is_alive() {
        return;
    }
    let guard = browser.browser().read().await;
    match tokio::time::timeout(limit, guard.dispose_browser_context(context)).await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => tracing::debug!(error = %e, "disposing a browser context failed"),
        Err(_) => {
            tracing::warn!("disposing a browser context timed out; marking the browser dead");
            browser.mark_dead();
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        for w in self.watchers.drain(..) {
            w.abort();
        }
        self.tabs.clear();
        let Some(context) = self.context.take() else {
            return;
        };
        self.browser.gate.unregister(context.inner());
        let browser = self.browser.clone();
        let limit = self.cfg.cdp_timeout;
        let permit = self.permit.take();
        // Dropped without close(): dispose in the background, keeping the slot taken until done.
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(async move {
                dispose(&browser, context, limit).await;
                browser
                    .active
                    .fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
                drop(permit);
            });
        } else {
            browser
                .active
                .fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
        }
    }
}
