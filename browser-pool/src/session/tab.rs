//! One page of a session and the watchers that keep it safe and observable.
//!
//! Each tab runs small background tasks fed by CDP events (`tab/watchers.rs`): answering
//! JavaScript dialogs (an open `alert` blocks every script in the page), noticing a crashed
//! renderer (whose calls would otherwise hang), counting requests in flight (for
//! network-quiet settling) and the main frame's committed documents (reads and navigations
//! that a renderer swap left unanswered are resent) and its navigation in progress
//! (Chromium holds the page's calls until it commits), listing the page's frames
//! (downloads and refused requests name the frame that made them), naming our isolated
//! world in the current document (where the session's own snippets run, out of the page's
//! reach) and, while a navigation of ours is in flight, refusing the page's own
//! navigations that would overtake it (`tab/interception.rs`, `landing.rs`) and noticing
//! its commit where Chromium does not report it. This file keeps what they found. URL
//! lists are enforced per browser, in `browser/gate.rs`. The tasks end with the tab.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use chromiumoxide::Page;
use chromiumoxide::cdp::browser_protocol::emulation::SetDeviceMetricsOverrideParams;
use chromiumoxide::cdp::browser_protocol::inspector::EventTargetCrashed;
use chromiumoxide::cdp::browser_protocol::log::EventEntryAdded;
use chromiumoxide::cdp::browser_protocol::page::{
    AddScriptToEvaluateOnNewDocumentParams, EventFrameAttached, EventJavascriptDialogOpening,
};
use chromiumoxide::cdp::browser_protocol::target::TargetId;
use futures::StreamExt;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::numbering::Numbering;
use crate::config::PoolConfig;
use crate::error::PoolError;
use crate::events::{EventLog, PageEvent};
use crate::js;
use interception::{Interception, LandingGuard};
use watchers::{Navigating, Requests, Watch, answer_dialogs, track_requests};

mod interception;
mod watchers;

/// A request in flight longer than this is treated as long-lived (long polling, streaming)
/// and no longer holds up settling.
const LONG_REQUEST: Duration = Duration::from_secs(2);

/// How Chromium words a refused `file://` (or other local) navigation in the page's log.
const LOCAL_RESOURCE: &str = "Not allowed to load local resource: ";

/// Whether a tab's page can still be driven.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Life {
    Live,
    /// The renderer died: an infrastructure failure.
    Crashed,
    /// The page closed itself (`window.close()`): the session moves to another tab.
    Closed,
}

pub(crate) struct Tab {
    pub(crate) page: Page,
    pub(crate) target: TargetId,
    life: watch::Receiver<Life>,
    /// Set by the session when the browser reports the target destroyed.
    pub(crate) closer: Arc<watch::Sender<Life>>,
    inflight: Arc<Mutex<Requests>>,
    /// Documents the main frame has committed since the tab was attached.
    documents: watch::Receiver<u64>,
    /// The main frame's navigation in progress, if any.
    navigating: watch::Receiver<Option<Navigating>>,
    /// Their URLs, since the session last took them (web pages only).
    committed: Arc<Mutex<Vec<String>>>,
    /// The URL of the last one, whatever its scheme.
    last_committed: Arc<Mutex<String>>,
    /// The main frame's last document request, if it failed: the URL it was sent to and
    /// why (`net::ERR_...`).
    document_failed: Arc<Mutex<Option<(String, String)>>>,
    /// Times the page asked to confirm leaving (`beforeunload`) and was answered "stay".
    stays: watch::Receiver<u64>,
    /// Ids of the frames the page has attached (iframes, at any depth): a download names
    /// the frame that started it.
    pub(crate) frames: Arc<Mutex<HashSet<String>>>,
    /// Whether the client still waits for the load of a page the session navigated to
    /// (see [`Tab::client_holds_navigation`]).
    client_navigation: Arc<AtomicBool>,
    /// Where the last observation's element numbers live (cross-origin frames).
    pub(crate) numbering: Numbering,
    /// The unique id of our isolated world in the main frame's current document, once it
    /// is made there (see [`Tab::world`]).
    world: Arc<Mutex<Option<String>>>,
    /// Our navigations in flight and the page's own that must not overtake them.
    landing: Interception,
    tasks: Vec<JoinHandle<()>>,
}

impl Tab {
    /// Starts the watchers on `page`. Fails only when the page's connection is gone.
    /// `emulate`: the session renders at another screen than the browser's default (a
    /// lease's [`Screen`](crate::Screen)), which every tab must be told.
    pub(crate) async fn attach(
        page: Page,
        cfg: &PoolConfig,
        events: &EventLog,
        emulate: bool,
    ) -> Result<Tab, PoolError> {
        let gone = |e: chromiumoxide::error::CdpError| PoolError::from_cdp("event listener", e);
        let target = page.target_id().clone();
        if emulate {
            let metrics = SetDeviceMetricsOverrideParams::new(
                cfg.viewport_width,
                cfg.viewport_height,
                cfg.device_scale_factor,
                false,
            );
            match tokio::time::timeout(cfg.cdp_timeout, page.execute(metrics)).await {
                Ok(Ok(_)) => {}
                Ok(Err(e)) => {
                    return Err(PoolError::from_cdp("Emulation.setDeviceMetricsOverride", e));
                }
                Err(_) => {
                    return Err(PoolError::Timeout {
                        op: "Emulation.setDeviceMetricsOverride",
                        after: cfg.cdp_timeout,
                    });
                }
            }
        }
        let mut tasks = Vec::new();

        let dialogs = page
            .event_listener::<EventJavascriptDialogOpening>()
            .await
            .map_err(gone)?;
        let (stays_tx, stays) = watch::channel(0u64);
        tasks.push(tokio::spawn(answer_dialogs(
            page.clone(),
            dialogs,
            cfg.dialogs,
            events.clone(),
            stays_tx,
        )));

        let (life_tx, life) = watch::channel(Life::Live);
        let life_tx = Arc::new(life_tx);
        let mut crashes = page
            .event_listener::<EventTargetCrashed>()
            .await
            .map_err(gone)?;
        let crash_tx = life_tx.clone();
        tasks.push(tokio::spawn(async move {
            if crashes.next().await.is_some() {
                crash_tx.send_replace(Life::Crashed);
            }
        }));

        let inflight = Arc::new(Mutex::new(Requests::default()));
        let (documents_tx, documents) = watch::channel(0u64);
        let (navigating_tx, navigating) = watch::channel(None);
        let committed = Arc::new(Mutex::new(Vec::new()));
        let last_committed = Arc::new(Mutex::new(String::new()));
        let document_failed = Arc::new(Mutex::new(None));
        let world = Arc::new(Mutex::new(None));
        let landing = Interception::new(page.clone(), cfg.cdp_timeout);
        let watch = Watch {
            landing: landing.clone(),
            world: world.clone(),
            last_committed: last_committed.clone(),
            document_failed: document_failed.clone(),
            inflight: inflight.clone(),
            documents: documents_tx,
            navigating: navigating_tx,
            // A page's main frame has its target's id.
            main_frame: target.inner().clone(),
            committed: committed.clone(),
        };
        tasks.push(track_requests(&page, watch).await.map_err(gone)?);
        let frames = Arc::new(Mutex::new(HashSet::new()));
        let mut attached = page
            .event_listener::<EventFrameAttached>()
            .await
            .map_err(gone)?;
        let seen = frames.clone();
        tasks.push(tokio::spawn(async move {
            // Detached frames stay listed: a frame may start a download and go away at once.
            while let Some(ev) = attached.next().await {
                seen.lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .insert(ev.frame_id.inner().clone());
            }
        }));

        let mut timers = AddScriptToEvaluateOnNewDocumentParams::new(js::timers());
        // The tab's current document (about:blank, or a popup's first page) gets it too.
        timers.run_immediately = Some(true);
        page.execute(timers)
            .await
            .map_err(|e| PoolError::from_cdp("Page.addScriptToEvaluateOnNewDocument", e))?;

        let mut log = page
            .event_listener::<EventEntryAdded>()
            .await
            .map_err(gone)?;
        let log_events = events.clone();
        tasks.push(tokio::spawn(async move {
            while let Some(entry) = log.next().await {
                if let Some(url) = entry.entry.text.strip_prefix(LOCAL_RESOURCE) {
                    log_events.push(PageEvent::Blocked {
                        url: url.trim().to_string(),
                        reason: "pages may not open local files or browser pages".into(),
                    });
                }
            }
        }));

        // The URL policy is enforced for every tab at the browser's door (`browser/gate.rs`).

        Ok(Tab {
            page,
            target,
            life,
            closer: life_tx,
            inflight,
            documents,
            navigating,
            committed,
            last_committed,
            document_failed,
            stays,
            frames,
            client_navigation: Arc::default(),
            numbering: Default::default(),
            world,
            landing,
            tasks,
        })
    }

    pub(crate) fn life(&self) -> Life {
        *self.life.borrow()
    }

    /// Resolves when the tab crashes or closes; never, while it lives.
    pub(crate) async fn ended(&self) -> Life {
        let mut rx = self.life.clone();
        // Copied out at once: the borrow guard must not live across an await.
        let ended = rx.wait_for(|l| *l != Life::Live).await.map(|l| *l);
        match ended {
            Ok(l) => l,
            // The tab holds a sender itself, so this cannot happen; never end early.
            Err(_) => futures::future::pending().await,
        }
    }

    /// Whether a request of ours started after `t`.
    pub(crate) fn requested_since(&self, t: Instant) -> bool {
        self.inflight
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .last_started
            .is_some_and(|s| s > t)
    }

    /// The main frame's navigation in progress: one the page started (a link, a form) and
    /// whose next document has not committed yet.
    pub(crate) fn navigating(&self) -> Option<Navigating> {
        self.navigating.borrow().clone()
    }

    /// Whether [`Tab::navigating`] has one (without copying it: settling asks every poll).
    pub(crate) fn is_navigating(&self) -> bool {
        self.navigating.borrow().is_some()
    }

    /// Resolves once no navigation of the main frame is in progress.
    pub(crate) async fn navigation_over(&self) {
        let mut rx = self.navigating.clone();
        if rx.wait_for(Option::is_none).await.is_err() {
            futures::future::pending::<()>().await;
        }
    }

    /// Our isolated world ([`js::WORLD`]) in the main frame's current document, by its
    /// unique id: unlike a numeric context id, which a new renderer process may hand out
    /// again after a cross-site navigation, it cannot name a context of another process.
    /// `None` until the world is made in this document (the tab asks for it as each
    /// document commits; a snippet that finds none makes it); for a moment after a new
    /// document commits it may still name the old one's (gone: an evaluation there fails,
    /// and the session makes the new one).
    pub(crate) fn world(&self) -> Option<String> {
        self.world.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Whether a `Page.navigate` sent through the client is still unanswered. The client
    /// answers one only once its page has loaded, and sends the next only after that (or
    /// its own timeout): a page whose subresource never answers would hold the next
    /// navigation back for that long.
    pub(crate) fn client_holds_navigation(&self) -> bool {
        self.client_navigation.load(Ordering::SeqCst)
    }

    /// The flag behind [`Tab::client_holds_navigation`], for the task that sends one.
    pub(crate) fn client_navigation(&self) -> Arc<AtomicBool> {
        self.client_navigation.clone()
    }

    /// Keeps a navigation of ours to `url` from being overtaken by one the page it leaves
    /// starts meanwhile (`landing.rs`), until the returned guard is dropped: call it before
    /// sending the navigation, drop the guard once the session stops waiting for it.
    pub(crate) async fn guard_landing(&self, url: &str) -> LandingGuard {
        let left = self
            .last_committed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        self.landing.lock().begin(url, &left);
        self.landing.intercept().await;
        LandingGuard(self.landing.clone())
    }

    /// Whether a navigation the session sent (see [`Tab::guard_landing`]) has started and
    /// not yet committed or failed: a document committing meanwhile is the page's own.
    pub(crate) fn awaiting_our_commit(&self) -> bool {
        self.landing.lock().awaiting_ours()
    }

    /// How many navigations of ours were overtaken so far: cancelled by one the page being
    /// left started, whose request is refused, so that nothing of either would commit.
    pub(crate) fn overtaken(&self) -> u64 {
        *self.landing.overtaken.borrow()
    }

    /// Resolves once more than `seen` navigations of ours were overtaken.
    pub(crate) async fn overtaken_after(&self, seen: u64) {
        let mut rx = self.landing.overtaken.subscribe();
        if rx.wait_for(|n| *n > seen).await.is_err() {
            futures::future::pending::<()>().await;
        }
    }

    /// Resolves once a document of ours commits after the `seen`-th: not one that the page
    /// being left got in first (its own navigation, ready before ours) while ours is still
    /// coming.
    pub(crate) async fn our_document_after(&self, seen: u64) {
        let mut seen = seen;
        loop {
            self.document_after(seen).await;
            seen = self.documents();
            if !self.awaiting_our_commit() {
                return;
            }
        }
    }

    /// How many times the page was kept from leaving so far.
    pub(crate) fn stays(&self) -> u64 {
        *self.stays.borrow()
    }

    /// Resolves once the page has been kept from leaving more than `seen` times.
    pub(crate) async fn stayed_after(&self, seen: u64) {
        let mut rx = self.stays.clone();
        if rx.wait_for(|n| *n > seen).await.is_err() {
            futures::future::pending::<()>().await;
        }
    }

    /// The URLs of the documents the main frame committed since the last call.
    pub(crate) fn take_committed(&self) -> Vec<String> {
        std::mem::take(&mut *self.committed.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// How many documents the main frame has committed so far.
    pub(crate) fn documents(&self) -> u64 {
        *self.documents.borrow()
    }

    /// Resolves once the main frame has committed more than `seen` documents.
    pub(crate) async fn document_after(&self, seen: u64) {
        let mut rx = self.documents.clone();
        if rx.wait_for(|n| *n > seen).await.is_err() {
            // The watcher ended with the tab: no document will come.
            futures::future::pending::<()>().await;
        }
    }

    /// Whether a request has been in flight so long that it no longer counts as busy (a
    /// hung tracker, an image from a server that never answers): such a request also
    /// keeps the page's load event from ever firing.
    pub(crate) fn long_request_in_flight(&self) -> bool {
        let r = self.inflight.lock().unwrap_or_else(|p| p.into_inner());
        r.started
            .values()
            .any(|started| started.elapsed() >= LONG_REQUEST)
    }

    /// Whether the main frame's last committed document is Chromium's error page (a
    /// navigation that failed commits one).
    pub(crate) fn on_error_page(&self) -> bool {
        self.last_committed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .starts_with("chrome-error:")
    }

    /// Why a navigation to `url` failed, when it did: the network's reason for its
    /// document request (`net::ERR_TOO_MANY_REDIRECTS`), or the error page the main frame
    /// is on. A download or a stopped load (`net::ERR_ABORTED`) is no failure of the page,
    /// nor is another navigation's failure (one the page started meanwhile).
    pub(crate) fn navigation_failure(&self, url: &str) -> Option<String> {
        let failed = self
            .document_failed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        match failed {
            Some((sent_to, why))
                if !why.is_empty() && why != "net::ERR_ABORTED" && same_url(&sent_to, url) =>
            {
                Some(why)
            }
            _ if self.on_error_page() => Some("the browser showed its error page".into()),
            _ => None,
        }
    }

    /// Whether a request that started recently is still in flight, or one finished less
    /// than `grace` ago (the page's callback for it may not have run yet: the DOM looks
    /// quiet only because the change is still coming).
    pub(crate) fn network_busy(&self, grace: Duration) -> bool {
        let r = self.inflight.lock().unwrap_or_else(|p| p.into_inner());
        r.last_done.is_some_and(|t| t.elapsed() < grace)
            || r.started
                .values()
                .any(|started| started.elapsed() < LONG_REQUEST)
    }
}

impl Drop for Tab {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

/// Whether two URLs are the same once parsed (`http://host` is sent as `http://host/`).
fn same_url(a: &str, b: &str) -> bool {
    a == b || matches!((url::Url::parse(a), url::Url::parse(b)), (Ok(x), Ok(y)) if x == y)
}
