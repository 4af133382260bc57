//! One page of a session and the watchers that keep it safe and observable.
//!
//! Each tab runs small background tasks fed by CDP events: answering JavaScript dialogs
//! (an open `alert` blocks every script in the page), noticing a crashed renderer (whose
//! calls would otherwise hang), counting requests in flight (for network-quiet settling)
//! and the main frame's committed documents (reads and navigations that a renderer swap
//! left unanswered are resent) and its navigation in progress (Chromium holds the page's
//! calls until it commits), listing the page's frames (downloads and refused
//! requests name the frame that made them), naming our isolated world in the current
//! document (where the session's own snippets run, out of the page's reach) and, while a
//! navigation of ours is in flight, refusing the page's own navigations that would
//! overtake it and noticing its commit where Chromium does not report it (`landing.rs`). URL lists are enforced per browser, in `gate.rs`. The
//! tasks end with the tab.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use chromiumoxide::Page;
use chromiumoxide::cdp::browser_protocol::emulation::SetDeviceMetricsOverrideParams;
use chromiumoxide::cdp::browser_protocol::fetch::{
    self, ContinueRequestParams, EventRequestPaused, FailRequestParams, RequestPattern,
};
use chromiumoxide::cdp::browser_protocol::inspector::EventTargetCrashed;
use chromiumoxide::cdp::browser_protocol::log::EventEntryAdded;
use chromiumoxide::cdp::browser_protocol::network::ErrorReason;
use chromiumoxide::cdp::browser_protocol::network::{
    EventLoadingFailed, EventLoadingFinished, EventRequestWillBeSent, ResourceType,
};
use chromiumoxide::cdp::browser_protocol::page::{
    AddScriptToEvaluateOnNewDocumentParams, CreateIsolatedWorldParams, DialogType,
    EventFrameAttached, EventFrameNavigated, EventFrameStartedNavigating,
    EventJavascriptDialogOpening, FrameId, FrameStartedNavigatingNavigationType,
    HandleJavaScriptDialogParams,
};
use chromiumoxide::cdp::browser_protocol::target::TargetId;
use chromiumoxide::cdp::js_protocol::runtime::{
    EventExecutionContextCreated, EventExecutionContextDestroyed,
};
use futures::StreamExt;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::config::{DialogPolicy, PoolConfig};
use crate::error::PoolError;
use crate::events::{EventLog, PageEvent};
use crate::js;
use crate::landing::Landing;

/// A request in flight longer than this is treated as long-lived (long polling, streaming)
/// and no longer holds up settling.
const LONG_REQUEST: Duration = Duration::from_secs(2);

/// The page's requests as the network events report them.
#[derive(Default)]
struct Requests {
    /// In flight: request id → when it started.
    started: HashMap<String, Instant>,
    /// When the last one finished or failed: its response may still be on its way to a
    /// callback that changes the page.
    last_done: Option<Instant>,
    /// When the last one started.
    last_started: Option<Instant>,
}

/// A navigation of the main frame that has started and not yet committed or failed.
#[derive(Debug, Clone)]
pub(crate) struct Navigating {
    /// The document request's id (redirects keep it).
    request: String,
    /// Where it is going (after redirects so far).
    pub(crate) url: String,
    /// When it started.
    pub(crate) since: Instant,
}

/// A URL without its fragment: the document it names.
pub(crate) fn without_fragment(url: &str) -> &str {
    url.split('#').next().unwrap_or_default()
}

/// How long a world made ahead for a new document may take (the session makes its own if
/// it is not there when needed).
const WORLD_AHEAD_WAIT: Duration = Duration::from_secs(10);

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
    /// Times the page asked to confirm leaving (`beforeunload`) and was answered "stay".
    stays: watch::Receiver<u64>,
    /// Ids of the frames the page has attached (iframes, at any depth): a download names
    /// the frame that started it.
    pub(crate) frames: Arc<Mutex<HashSet<String>>>,
    /// Whether the client still waits for the load of a page the session navigated to
    /// (see [`Tab::client_holds_navigation`]).
    client_navigation: Arc<AtomicBool>,
    /// Where the last observation's element numbers live (cross-origin frames).
    pub(crate) numbering: crate::session::frames::Numbering,
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
        let world = Arc::new(Mutex::new(None));
        let landing = Interception {
            page: page.clone(),
            landing: Arc::default(),
            on: Arc::default(),
            limit: cfg.cdp_timeout,
            overtaken: Arc::new(watch::channel(0).0),
        };
        let watch = Watch {
            landing: landing.clone(),
            world: world.clone(),
            last_committed: last_committed.clone(),
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

        // The URL policy is enforced for every tab at the browser's door (`gate.rs`).

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

async fn answer_dialogs(
    page: Page,
    mut dialogs: chromiumoxide::listeners::EventStream<EventJavascriptDialogOpening>,
    policy: DialogPolicy,
    events: EventLog,
    stays: watch::Sender<u64>,
) {
    let accept = policy == DialogPolicy::Accept;
    while let Some(ev) = dialogs.next().await {
        let leaving = ev.r#type == DialogType::Beforeunload;
        events.push(PageEvent::Dialog {
            dialog: ev.r#type.as_ref().to_string(),
            message: ev.message.chars().take(300).collect(),
            accepted: accept,
            count: 1,
        });
        let mut answer = HandleJavaScriptDialogParams::new(accept);
        if accept {
            answer.prompt_text = ev.default_prompt.clone();
        }
        let _ = tokio::time::timeout(Duration::from_secs(5), page.execute(answer)).await;
        if leaving && !accept {
            stays.send_modify(|n| *n += 1);
        }
    }
}

/// A request ended; only ours count (not, say, the favicon we never tracked).
fn done(inflight: &Mutex<Requests>, id: &str) {
    let mut r = inflight.lock().unwrap_or_else(|p| p.into_inner());
    if r.started.remove(id).is_some() {
        r.last_done = Some(Instant::now());
    }
}

/// What [`track_requests`] keeps up to date.
struct Watch {
    inflight: Arc<Mutex<Requests>>,
    documents: watch::Sender<u64>,
    navigating: watch::Sender<Option<Navigating>>,
    main_frame: String,
    committed: Arc<Mutex<Vec<String>>>,
    last_committed: Arc<Mutex<String>>,
    world: Arc<Mutex<Option<String>>>,
    landing: Interception,
}

/// A tab's [`Landing`] and the `Fetch` interception of its document requests that it
/// needs, switched on at the first navigation of ours (each intercepted request costs a
/// round trip) and left on (see `landing.rs`).
#[derive(Clone)]
struct Interception {
    page: Page,
    landing: Arc<Mutex<Landing>>,
    /// Whether `Fetch` is enabled; held across the call that enables it.
    on: Arc<tokio::sync::Mutex<bool>>,
    limit: Duration,
    /// Times a navigation of ours was overtaken (see [`Landing::failed`]).
    overtaken: Arc<watch::Sender<u64>>,
}

impl Interception {
    fn lock(&self) -> std::sync::MutexGuard<'_, Landing> {
        self.landing.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Intercepts the tab's document requests from now on (a no-op once on). Without it
    /// (the call failed) nothing is refused: the navigation goes as it did before this
    /// guard existed.
    async fn intercept(&self) {
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
    fn failed(&self, request: &str) {
        if self.lock().failed(request) {
            self.overtaken.send_modify(|n| *n += 1);
        }
    }

    /// Answers an intercepted request: refused if it is one of the page's navigations that
    /// would overtake ours, else let go.
    fn answer(&self, ev: &EventRequestPaused) {
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

/// Held while the session waits for a navigation of its own; see [`Tab::guard_landing`].
pub(crate) struct LandingGuard(Interception);

impl Drop for LandingGuard {
    fn drop(&mut self) {
        self.0.lock().release();
    }
}

/// Whether a started navigation loads another document into the frame.
fn new_document(kind: &FrameStartedNavigatingNavigationType) -> bool {
    !matches!(
        kind,
        FrameStartedNavigatingNavigationType::SameDocument
            | FrameStartedNavigatingNavigationType::HistorySameDocument
    )
}

/// The main frame committed the document `loader` at `url`: everything the tab knows of
/// the old one is over.
fn commit(w: &Watch, page: &Page, loader: &str, url: &str) {
    w.landing.lock().committed(loader, url);
    // Whatever the old document had in flight will never report finishing to this session.
    w.inflight
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .started
        .clear();
    w.navigating.send_replace(None);
    // Our world was the old document's, which may live on in the back-forward cache of a
    // remote browser. Seen after the new document's world (another stream brings it), this
    // only costs the session one more `Page.createIsolatedWorld`.
    *w.world.lock().unwrap_or_else(|p| p.into_inner()) = None;
    // Made now, while the page loads and settles, the world is there for the first
    // observation instead of costing it a round trip.
    let mut world = CreateIsolatedWorldParams::new(FrameId::new(w.main_frame.clone()));
    world.world_name = Some(js::WORLD.into());
    let page = page.clone();
    tokio::spawn(async move {
        let _ = tokio::time::timeout(WORLD_AHEAD_WAIT, page.execute(world)).await;
    });
    w.documents.send_modify(|n| *n += 1);
    // A page passed through between two observations (a client-side redirect, a link
    // followed while the machine was slow to show it) was still visited. Blank and error
    // pages are not places.
    url.clone_into(&mut w.last_committed.lock().unwrap_or_else(|p| p.into_inner()));
    if url.starts_with("http:") || url.starts_with("https:") {
        w.committed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(url.to_string());
    }
}

/// The navigation whose commit went unreported, if a new main world created in `origin`
/// can only be its document: the one navigation to another document on its way, to that
/// origin.
fn unreported_commit(uncommitted: &[(String, String)], origin: &str) -> Option<(String, String)> {
    let [(loader, url)] = uncommitted else {
        return None;
    };
    let same = url::Url::parse(url).is_ok_and(|u| u.origin().ascii_serialization() == origin);
    same.then(|| (loader.clone(), url.clone()))
}

async fn track_requests(
    page: &Page,
    w: Watch,
) -> Result<JoinHandle<()>, chromiumoxide::error::CdpError> {
    let mut sent = page.event_listener::<EventRequestWillBeSent>().await?;
    let mut finished = page.event_listener::<EventLoadingFinished>().await?;
    let mut failed = page.event_listener::<EventLoadingFailed>().await?;
    let mut committed = page.event_listener::<EventFrameNavigated>().await?;
    let mut starting = page.event_listener::<EventFrameStartedNavigating>().await?;
    let mut paused = page.event_listener::<EventRequestPaused>().await?;
    let mut created = page
        .event_listener::<EventExecutionContextCreated>()
        .await?;
    let mut destroyed = page
        .event_listener::<EventExecutionContextDestroyed>()
        .await?;
    let page = page.clone();
    Ok(tokio::spawn(async move {
        let inflight = &w.inflight;
        // A navigation that ends without a document (a download, a 204, a stop) ends here.
        let ended = |id: &str| {
            w.navigating
                .send_if_modified(|n| n.take_if(|n| n.request == id).is_some());
        };
        // The last document committed (loader id), and the main frame's navigations to
        // another document started since, neither committed nor ended.
        let mut last_loader: Option<String> = None;
        let mut uncommitted: Vec<(String, String)> = Vec::new();
        loop {
            tokio::select! {
                // Commits (and worlds created, which may stand for one), then starts, then
                // intercepted requests: of events already here, a commit must be known
                // before a start is judged (a start taken in late is left alone, never a
                // new document's navigation refused), and a start before its request.
                biased;
                Some(ev) = committed.next() => {
                    if ev.frame.parent_id.is_none() {
                        let loader = ev.frame.loader_id.inner();
                        tracing::trace!(loader, url = ev.frame.url, "main frame committed");
                        if last_loader.as_deref() != Some(loader.as_str()) {
                            commit(&w, &page, loader, &ev.frame.url);
                        }
                        last_loader = Some(loader.clone());
                        uncommitted.clear();
                    }
                }
                Some(ev) = created.next() => {
                    let c = &ev.context;
                    let aux = c.aux_data.as_ref();
                    let frame = aux.and_then(|a| a.get("frameId")).and_then(|f| f.as_str());
                    let default = aux.and_then(|a| a.get("isDefault")).and_then(serde_json::Value::as_bool);
                    if frame == Some(w.main_frame.as_str()) {
                        if c.name == js::WORLD {
                            *w.world.lock().unwrap_or_else(|p| p.into_inner()) = Some(c.unique_id.clone());
                        } else if default == Some(true)
                            && let Some((loader, url)) = unreported_commit(&uncommitted, &c.origin)
                            && w.landing.lock().awaits(&loader)
                        {
                            // Chromium sometimes reports no commit for our document when it
                            // commits right after a navigation of the old one was refused
                            // (landing.rs); its main world, created in its origin while ours
                            // was the only navigation on its way, gives it away. Only ours:
                            // a page's own navigation may be the one on its way while a
                            // world is made for a document whose start is still queued.
                            tracing::debug!(loader, url, "a commit went unreported; taken from the new document's main world");
                            commit(&w, &page, &loader, &url);
                            last_loader = Some(loader);
                            uncommitted.clear();
                        }
                    }
                }
                Some(ev) = starting.next() => {
                    if *ev.frame_id.inner() == w.main_frame && new_document(&ev.navigation_type) {
                        tracing::trace!(loader = ev.loader_id.inner(), url = ev.url, "main frame navigation started");
                        w.landing.lock().started(ev.loader_id.inner(), &ev.url);
                        uncommitted.push((ev.loader_id.inner().clone(), ev.url.clone()));
                    }
                }
                Some(ev) = paused.next() => w.landing.answer(&ev),
                Some(ev) = sent.next() => {
                    // Streams never finish; they must not hold up settling.
                    let streaming = matches!(
                        ev.r#type,
                        Some(ResourceType::EventSource | ResourceType::WebSocket | ResourceType::Media)
                    );
                    // The browser fetches favicons for itself; their end is not always reported.
                    let favicon = ev.request.url.ends_with("/favicon.ico");
                    if !streaming && !favicon && !ev.request.url.starts_with("data:") {
                        let mut r = inflight.lock().unwrap_or_else(|p| p.into_inner());
                        r.started.insert(ev.request_id.inner().clone(), Instant::now());
                        r.last_started = Some(Instant::now());
                    }
                    let main_document = ev.r#type == Some(ResourceType::Document)
                        && ev.frame_id.as_ref().is_some_and(|f| *f.inner() == w.main_frame);
                    if main_document {
                        let id = ev.request_id.inner();
                        w.navigating.send_modify(|n| match n {
                            // A redirect: the same navigation, going elsewhere.
                            Some(n) if n.request == *id => n.url.clone_from(&ev.request.url),
                            _ => {
                                *n = Some(Navigating {
                                    request: id.clone(),
                                    url: ev.request.url.clone(),
                                    since: Instant::now(),
                                });
                            }
                        });
                    }
                }
                Some(ev) = destroyed.next() => {
                    let mut world = w.world.lock().unwrap_or_else(|p| p.into_inner());
                    if world.as_deref() == Some(ev.execution_context_unique_id.as_str()) {
                        *world = None;
                    }
                }
                Some(ev) = finished.next() => {
                    w.landing.lock().finished(ev.request_id.inner());
                    uncommitted.retain(|(l, _)| l != ev.request_id.inner());
                    done(inflight, ev.request_id.inner());
                    ended(ev.request_id.inner());
                }
                Some(ev) = failed.next() => {
                    w.landing.failed(ev.request_id.inner());
                    uncommitted.retain(|(l, _)| l != ev.request_id.inner());
                    done(inflight, ev.request_id.inner());
                    ended(ev.request_id.inner());
                }
                else => break,
            }
        }
    }))
}

#[cfg(test)]
mod tests {
    use super::unreported_commit;

    fn on_its_way(ids: &[(&str, &str)]) -> Vec<(String, String)> {
        ids.iter()
            .map(|(l, u)| ((*l).to_string(), (*u).to_string()))
            .collect()
    }

    #[test]
    fn an_unreported_commit_is_taken_only_where_it_can_be_no_other() {
        let one = on_its_way(&[("A", "http://127.0.0.1:9/second.html#x")]);
        assert_eq!(
            unreported_commit(&one, "http://127.0.0.1:9"),
            Some(("A".into(), "http://127.0.0.1:9/second.html#x".into()))
        );
        assert_eq!(unreported_commit(&one, "http://localhost:9"), None);
        assert_eq!(unreported_commit(&one, "null"), None);
        assert_eq!(unreported_commit(&[], "http://127.0.0.1:9"), None);
        let two = on_its_way(&[
            ("A", "http://127.0.0.1:9/second.html"),
            ("B", "http://127.0.0.1:9/third.html"),
        ]);
        assert_eq!(unreported_commit(&two, "http://127.0.0.1:9"), None);
    }
}
