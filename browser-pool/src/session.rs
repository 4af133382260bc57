//! A leased browser context: navigate, observe, act.
//!
//! Every CDP call is bounded by a timeout (chromiumoxide's own 30 s limit does not cover
//! all of them, and a hung renderer would otherwise hang the episode forever). After every
//! action the session waits for the page to settle: the next document loaded, and its DOM
//! quiet for a moment, bounded by `settle_max`.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use chromiumoxide::Page;
use chromiumoxide::cdp::browser_protocol::accessibility::GetFullAxTreeParams;
use chromiumoxide::cdp::browser_protocol::browser::BrowserContextId;
use chromiumoxide::cdp::browser_protocol::browser::EventDownloadWillBegin;
use chromiumoxide::cdp::browser_protocol::dom::DescribeNodeParams;
use chromiumoxide::cdp::browser_protocol::input::{
    DispatchDragEventParams, DispatchDragEventType, DispatchKeyEventParams, DispatchKeyEventType,
    DispatchMouseEventParams, DispatchMouseEventType, DragData, EventDragIntercepted,
    InsertTextParams, MouseButton, SetInterceptDragsParams,
};
use chromiumoxide::cdp::browser_protocol::page::{
    BringToFrontParams, CaptureScreenshotFormat, CaptureScreenshotParams,
    GetNavigationHistoryParams, NavigateParams, NavigateToHistoryEntryParams, StopLoadingParams,
    Viewport,
};
use chromiumoxide::cdp::browser_protocol::target::{
    CloseTargetParams, CreateTargetParams, EventTargetCreated, EventTargetDestroyed,
    GetTargetsParams, TargetId,
};
use chromiumoxide::cdp::js_protocol::runtime::{
    EvaluateParams, ExecutionContextId, GetPropertiesParams, ReleaseObjectGroupParams,
    TerminateExecutionParams,
};
use chromiumoxide::error::CdpError;
use chromiumoxide::types::{Command, CommandResponse};
use futures::StreamExt;
use serde::Deserialize;
use serde_json::Value;
use tokio::sync::{OwnedSemaphorePermit, watch};
use tokio::task::JoinHandle;

use crate::action::{Action, Direction, Scroll, Target};
use crate::config::{ImageFormat, PoolConfig};
use crate::error::PoolError;
use crate::events::{EventLog, PageEvent};
use crate::js;
use crate::keys::{KeyCombo, Modifiers};
use crate::launch::LiveBrowser;
use crate::observation::{Element, Observation, Screenshot, ScrollState, TabInfo};
use crate::screen::PoolScreen;
use crate::tab::{Life, Tab, without_fragment};

pub(crate) mod frames;
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

/// What [`Session::outlast_navigation`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outlasted {
    /// No navigation in progress (or it could not be stopped): the call hung for another
    /// reason.
    Nothing,
    /// The navigation committed or ended without a document.
    Ended,
    /// It got no answer in time and was stopped.
    Stopped,
}

impl Outlasted {
    /// Whether a navigation held the call and is over now, so the call can be sent again.
    fn ended(self) -> bool {
        self != Outlasted::Nothing
    }
}

/// What [`Session::stop_scripts`] found.
enum Rescue {
    /// The page answered at once: the call was slow, not the page stuck.
    Responsive,
    /// A runaway script was terminated.
    Stopped,
    /// The page did not answer even that.
    Failed,
}

#[derive(Default)]
struct TabSignals {
    opened: Vec<(TargetId, String)>,
    destroyed: Vec<TargetId>,
    /// This session's tabs by target id (a download names the frame that started it: a
    /// tab's main frame has the tab's id).
    ours: HashMap<String, OurTab>,
}

struct OurTab {
    /// Marks the tab closed.
    closer: Arc<watch::Sender<Life>>,
    /// The tab's subframes.
    frames: Arc<Mutex<HashSet<String>>>,
}

impl OurTab {
    fn of(tab: &Tab) -> OurTab {
        OurTab {
            closer: tab.closer.clone(),
            frames: tab.frames.clone(),
        }
    }
}

impl TabSignals {
    /// Whether `frame` is one of this session's tabs or a frame inside one.
    fn has_frame(&self, frame: &str) -> bool {
        self.ours.contains_key(frame)
            || self.ours.values().any(|t| {
                t.frames
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .contains(frame)
            })
    }
}

/// Counts taken before an action of what can stop a page that started leaving from ever
/// leaving.
#[derive(Clone, Copy)]
struct Stuck {
    /// Refused downloads in the session.
    downloads: u64,
    /// `beforeunload` dialogs the active tab answered "stay".
    stays: u64,
}

#[derive(Deserialize)]
struct Probe {
    state: String,
    #[serde(default)]
    quiet_ms: f64,
    /// Short timeouts the page's recent activity has pending (see `js/timers.js`).
    #[serde(default)]
    timers: u32,
    /// Endless animations running (spinners, animation-frame loops): see
    /// [`PoolConfig::frame_rate_limit`].
    #[serde(default)]
    endless: u32,
}

#[derive(Deserialize)]
struct ObservedPage {
    url: String,
    title: String,
    scroll: ScrollState,
    elements: Vec<Element>,
    /// Cross-origin iframes the scan could not enter (see `session/frames.rs`).
    #[serde(default)]
    holes: Vec<frames::Hole>,
}

#[derive(Deserialize)]
struct Resolved {
    x: Option<f64>,
    y: Option<f64>,
    error: Option<String>,
    input_type: Option<String>,
    tag: Option<String>,
    #[serde(default)]
    disabled: bool,
    /// The cross-origin frame the element is in (see `session/frames.rs`).
    #[serde(skip)]
    frame: Option<usize>,
}

#[derive(Deserialize)]
struct ScrollArea {
    x: Option<f64>,
    y: Option<f64>,
    amount: Option<f64>,
    top: Option<f64>,
    error: Option<String>,
}

#[derive(Deserialize)]
struct Mode {
    mode: Option<String>,
    error: Option<String>,
}

/// An evaluation that awaits promises and returns the value itself, in `context` (an
/// isolated world) or else the page's main world.
fn by_value(expression: &str, context: Option<ExecutionContextId>) -> EvaluateParams {
    let mut params = EvaluateParams::new(expression);
    params.context_id = context;
    params.return_by_value = Some(true);
    params.await_promise = Some(true);
    params
}

/// An evaluation's value, or the page's exception as text.
fn value_of(
    ret: chromiumoxide::cdp::js_protocol::runtime::EvaluateReturns,
) -> Result<Value, String> {
    match ret.exception_details {
        Some(ex) => Err(ex.exception.and_then(|e| e.description).unwrap_or(ex.text)),
        None => Ok(ret.result.value.unwrap_or(Value::Null)),
    }
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

/// What `js/resolve.js` answered, as a point to act at or the reason there is none.
fn resolved(answer: Result<Value, String>) -> Result<Resolved, String> {
    match answer {
        Ok(v) => match serde_json::from_value::<Resolved>(v) {
            Ok(r) if r.error.is_some() => Err(r.error.unwrap_or_default()),
            Ok(r) if r.x.is_some() && r.y.is_some() => Ok(r),
            Ok(_) | Err(_) => Err("could not locate the element".into()),
        },
        Err(e) => Err(format!("could not locate the element: {e}")),
    }
}

/// Inputs whose value is set directly: clicking them opens pickers that swallow keys.
const VALUE_INPUTS: &[&str] = &[
    "date",
    "time",
    "datetime-local",
    "month",
    "week",
    "color",
    "range",
];

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
        browser.gate.register(
            context.inner(),
            events.clone(),
            Box::new(move |frame| {
                let s = tabs.lock().unwrap_or_else(|p| p.into_inner());
                s.has_frame(frame) || s.opened.iter().any(|(t, _)| t.inner() == frame)
            }),
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
    pub fn screen(&self) -> crate::Screen {
        crate::Screen::of(&self.cfg)
    }

    /// The process id of the browser this session runs in.
    pub fn browser_pid(&self) -> Option<u32> {
        self.browser.pid()
    }

    /// The limit for one page-level call: past it the page's scripts are stopped.
    fn page_limit(&self) -> Duration {
        self.cfg.script_timeout.min(self.cfg.cdp_timeout)
    }

    async fn call<C: Command + Clone>(
        &self,
        op: &'static str,
        cmd: C,
    ) -> Result<C::Response, PoolError> {
        self.call_within(op, cmd, self.page_limit()).await
    }

    /// A read of the page as the browser shows it (screenshot, accessibility tree). While a
    /// navigation swaps the page's renderer (a cross-site hop, a redirect the page started
    /// after settling) Chromium has no page to read for a moment, or no frame to capture
    /// until the new renderer paints, and a read sent to the old renderer may never be
    /// answered; the read is tried again until the new page is there, within
    /// `settle_max`, instead of failing the episode.
    async fn read_page<C: Command + Clone>(
        &self,
        op: &'static str,
        cmd: C,
    ) -> Result<C::Response, PoolError> {
        let deadline = Instant::now() + self.cfg.settle_max;
        loop {
            let late = Instant::now() >= deadline;
            let tab = self.tab();
            let seen = tab.documents();
            let swapped = async {
                if late {
                    return futures::future::pending().await;
                }
                tab.document_after(seen).await;
                tokio::time::sleep(SWAPPED_READ_GRACE).await;
            };
            let outcome = tokio::select! {
                r = self.call(op, cmd.clone()) => r,
                () = swapped => continue,
            };
            match outcome {
                Err(PoolError::Cdp { message, .. }) if between_renderers(&message) && !late => {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                other => return other,
            }
        }
    }

    /// One page-level CDP call. When it hangs, the page's running script is terminated and
    /// the call tried once more; a page that still does not answer is reported unresponsive.
    /// For calls that must not run twice (input events) use [`Session::input`].
    async fn call_within<C: Command + Clone>(
        &self,
        op: &'static str,
        cmd: C,
        limit: Duration,
    ) -> Result<C::Response, PoolError> {
        let mut outcome = self.call_once(op, cmd.clone(), limit).await;
        if matches!(outcome, Err(PoolError::Timeout { .. }))
            && self.outlast_navigation().await.ended()
        {
            outcome = self.call_once(op, cmd.clone(), limit).await;
        }
        match outcome {
            Err(PoolError::Timeout { after, .. }) => match self.stop_scripts(op).await {
                Rescue::Stopped | Rescue::Responsive => {
                    match self.call_once(op, cmd, limit).await {
                        Err(PoolError::Timeout { after, .. }) => {
                            Err(PoolError::PageUnresponsive { op, after })
                        }
                        other => other,
                    }
                }
                Rescue::Failed if self.browser.is_alive() => {
                    Err(PoolError::PageUnresponsive { op, after })
                }
                Rescue::Failed => Err(PoolError::BrowserGone {
                    op,
                    message: "browser process exited".into(),
                }),
            },
            other => other,
        }
    }

    /// An input event: when the page's handler hangs on it, the script is stopped and the
    /// event counts as delivered (sending it again would click twice).
    async fn input<C: Command + Clone>(&self, op: &'static str, cmd: C) -> Result<(), PoolError> {
        let limit = self.page_limit();
        match self.call_once(op, cmd, limit).await {
            Ok(_) => Ok(()),
            // Held for a navigation, then delivered to one page or the other.
            Err(PoolError::Timeout { .. }) if self.outlast_navigation().await.ended() => Ok(()),
            Err(PoolError::Timeout { after, .. }) => match self.stop_scripts(op).await {
                Rescue::Stopped | Rescue::Responsive => Ok(()),
                Rescue::Failed => Err(PoolError::PageUnresponsive { op, after }),
            },
            // Delivered, and the page closed its tab in answer (see `inputs`).
            Err(_) if self.tab().life() == Life::Closed => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Input events sent back to back without waiting for each acknowledgement (Chromium
    /// queues and delivers them in order), saving a round trip per event. Timeouts are
    /// handled once for the group, as [`Session::input`] does for one event.
    async fn inputs<C: Command + Clone>(
        &self,
        op: &'static str,
        cmds: Vec<C>,
    ) -> Result<(), PoolError> {
        let limit = self.page_limit();
        let results =
            futures::future::join_all(cmds.into_iter().map(|c| self.call_once(op, c, limit))).await;
        let mut timed_out = None;
        for r in results {
            match r {
                Ok(_) => {}
                Err(PoolError::Timeout { after, .. }) => timed_out = Some(after),
                // The page closed its own tab in answer to the event (a "close" button):
                // the input was delivered; settling moves on to the tab left active.
                Err(_) if self.tab().life() == Life::Closed => return Ok(()),
                Err(e) => return Err(e),
            }
        }
        match timed_out {
            None => Ok(()),
            Some(_) if self.outlast_navigation().await.ended() => Ok(()),
            Some(after) => match self.stop_scripts(op).await {
                Rescue::Stopped | Rescue::Responsive => Ok(()),
                Rescue::Failed => Err(PoolError::PageUnresponsive { op, after }),
            },
        }
    }

    async fn call_once<C: Command>(
        &self,
        op: &'static str,
        cmd: C,
        limit: Duration,
    ) -> Result<C::Response, PoolError> {
        self.answer_of(op, self.page.execute(cmd), limit).await
    }

    /// A call's answer within `limit`, or the infrastructure error that kept it away.
    async fn answer_of<R: std::fmt::Debug>(
        &self,
        op: &'static str,
        answer: impl Future<Output = Result<CommandResponse<R>, CdpError>>,
        limit: Duration,
    ) -> Result<R, PoolError> {
        let tab = self.tab();
        let ended = |life| match life {
            Life::Crashed => PoolError::TargetCrashed { op },
            // Recoverable: settling and observing move on to another tab.
            Life::Closed | Life::Live => PoolError::Cdp {
                op,
                message: "the tab was closed".into(),
            },
        };
        if tab.life() != Life::Live {
            return Err(ended(tab.life()));
        }
        let call = tokio::time::timeout(limit, answer);
        let outcome = tokio::select! {
            r = call => r,
            life = tab.ended() => return Err(ended(life)),
        };
        match outcome {
            Err(_) => {
                // A hung call usually means a hung renderer or a dead browser.
                if !self.browser.is_alive() {
                    return Err(PoolError::BrowserGone {
                        op,
                        message: "browser process exited".into(),
                    });
                }
                Err(PoolError::Timeout { op, after: limit })
            }
            Ok(Err(e)) => Err(PoolError::from_cdp(op, e)),
            Ok(Ok(resp)) => Ok(resp.result),
        }
    }

    /// After a call timed out: Chromium holds the calls to a page whose main frame is
    /// between documents (a navigation the page started, such as a form submission, whose
    /// server has not answered yet) until the next document commits. Waits for that until
    /// the navigation has taken `navigation_timeout`, else stops it (reported in the next
    /// observation), after which the page it was leaving answers again. Checked before
    /// stopping scripts: a termination held back like the call would reach the new
    /// document and kill its scripts.
    async fn outlast_navigation(&self) -> Outlasted {
        let tab = self.tab();
        let Some(navigating) = tab.navigating() else {
            return Outlasted::Nothing;
        };
        let deadline = navigating.since + self.cfg.navigation_timeout;
        if tokio::time::timeout_at(deadline.into(), tab.navigation_over())
            .await
            .is_ok()
        {
            return Outlasted::Ended;
        }
        let stop = self.page.execute(StopLoadingParams::default());
        if !matches!(
            tokio::time::timeout(self.cfg.cdp_timeout, stop).await,
            Ok(Ok(_))
        ) {
            return Outlasted::Nothing;
        }
        tracing::debug!(
            url = navigating.url,
            "stopped a navigation that got no answer"
        );
        // Its request fails as cancelled, which ends it here too.
        let _ = tokio::time::timeout(Duration::from_millis(500), tab.navigation_over()).await;
        self.events.push(PageEvent::NavigationStopped {
            url: navigating.url,
            after_ms: navigating.since.elapsed().as_millis() as u64,
        });
        Outlasted::Stopped
    }

    /// After a call timed out: when the page's main thread is busy (an infinite loop, an
    /// alert storm), terminates the running script; `Runtime.terminateExecution`
    /// interrupts even a busy main thread.
    async fn stop_scripts(&self, during: &'static str) -> Rescue {
        if !self.browser.is_alive() || self.tab().life() != Life::Live {
            return Rescue::Failed;
        }
        let ping = self.page.execute(EvaluateParams::new("1"));
        if let Ok(Ok(_)) = tokio::time::timeout(Duration::from_millis(300), ping).await {
            return Rescue::Responsive;
        }
        let stop = self.page.execute(TerminateExecutionParams::default());
        match tokio::time::timeout(Duration::from_secs(2), stop).await {
            Ok(Ok(_)) => {
                tracing::info!(during, "terminated a runaway page script");
                self.events.push(PageEvent::ScriptStopped {
                    during: during.to_string(),
                });
                Rescue::Stopped
            }
            _ => Rescue::Failed,
        }
    }

    /// Shows an error in the next observation, as if an action had failed (used when a
    /// policy's output is not a valid action).
    pub fn report_error(&mut self, message: impl Into<String>) {
        self.last_error = Some(message.into());
    }

    /// Evaluates a JavaScript expression in the page (promises are awaited).
    ///
    /// The outer error is an infrastructure failure; the inner one a JavaScript exception.
    pub async fn evaluate(&self, expression: &str) -> Result<Result<Value, String>, PoolError> {
        self.eval_within(expression, self.page_limit()).await
    }

    /// Evaluates an expression whose script must finish within `limit` (a busy loop is
    /// terminated by the page's VM, not just abandoned).
    pub async fn evaluate_limited(
        &self,
        expression: &str,
        limit: Duration,
    ) -> Result<Result<Value, String>, PoolError> {
        let mut params = by_value(expression, None);
        params.timeout = Some(chromiumoxide::cdp::js_protocol::runtime::TimeDelta::new(
            limit.as_millis() as f64,
        ));
        let started = std::time::Instant::now();
        let timed_out = || {
            format!(
                "timed out after {}s (the script was stopped)",
                limit.as_secs_f64()
            )
        };
        let ret = match self
            .call_within("Runtime.evaluate", params, limit + self.cfg.cdp_timeout)
            .await
        {
            Ok(ret) => ret,
            // Chromium stops the script at `timeout` and answers with an internal error:
            // the page's script failed, not the browser.
            Err(PoolError::Cdp { .. }) if started.elapsed() >= limit => {
                return Ok(Err(timed_out()));
            }
            Err(e) => return Err(e),
        };
        if let Some(ex) = ret.exception_details {
            if started.elapsed() >= limit {
                return Ok(Err(timed_out()));
            }
            return Ok(Err(ex
                .exception
                .and_then(|e| e.description)
                .unwrap_or(ex.text)));
        }
        Ok(Ok(ret.result.value.unwrap_or(Value::Null)))
    }

    async fn eval_within(
        &self,
        expression: &str,
        limit: Duration,
    ) -> Result<Result<Value, String>, PoolError> {
        let ret = self
            .call_within("Runtime.evaluate", by_value(expression, None), limit)
            .await?;
        Ok(value_of(ret))
    }

    /// Runs one of the marks settling reads in the page's main world. A document on its
    /// way out ("Inspected target navigated or closed") needs no mark: the next one is
    /// settled from its own load.
    async fn mark(&self, expression: &str) -> Result<(), PoolError> {
        match self.evaluate(expression).await {
            Ok(_) | Err(PoolError::Cdp { .. }) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Reads the first element matching `css`, or `None` when nothing matches: in the top
    /// document, its open shadow roots and same-origin frames, else in the cross-origin
    /// frames the last observation scanned.
    pub async fn query_selector(
        &self,
        css: &str,
    ) -> Result<Result<Option<ElementState>, String>, PoolError> {
        let mut found = self.eval_ours(&js::query(css)).await?;
        if let Ok(Value::Null) = found
            && let Some((_, v)) = self.query_frames(css).await?
        {
            found = Ok(v);
        }
        Ok(match found {
            Ok(Value::Null) => Ok(None),
            Ok(v) => serde_json::from_value(v)
                .map(Some)
                .map_err(|e| e.to_string()),
            Err(e) => Err(format!("invalid selector {css:?}: {e}")),
        })
    }

    /// The visible text of the page body.
    pub async fn page_text(&self) -> Result<String, PoolError> {
        let v = self
            .eval_ours("document.body ? document.body.innerText : ''")
            .await?
            .unwrap_or(Value::Null);
        Ok(v.as_str().unwrap_or_default().to_string())
    }

    /// The current URL.
    pub async fn url(&self) -> Result<String, PoolError> {
        let v = self
            .eval_ours("location.href")
            .await?
            .unwrap_or(Value::Null);
        Ok(v.as_str().unwrap_or_default().to_string())
    }

    /// Waits until the document that action `seq` leads to has loaded, its DOM has been
    /// quiet for `settle_quiet`, no short timeout its recent activity set is pending and no
    /// recent request is in flight; at most `settle_max`
    /// (and at most [`RESTLESS_MAX`] after load, for pages that never go quiet).
    fn stuck_marks(&self) -> Stuck {
        Stuck {
            downloads: self.downloads.load(Ordering::SeqCst),
            stays: self.tab().stays(),
        }
    }

    async fn settle(&mut self, seq: u64, before: Stuck) -> Result<(), PoolError> {
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
                        if self.quiet(&p) || loaded.elapsed() >= RESTLESS_MAX {
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

    /// Numbers and describes the page's interactive elements, without a screenshot or
    /// settling: the element half of an observation in one evaluation (benchmarks use it
    /// as a floor). Cross-origin frames are not entered: `observe` lists theirs.
    pub async fn scan_elements(&self) -> Result<Vec<Element>, PoolError> {
        Ok(self.scan().await?.elements)
    }

    async fn scan(&self) -> Result<ObservedPage, PoolError> {
        let raw = match self.eval_ours(js::observe()).await? {
            Ok(v) => v,
            Err(e) => {
                return Err(PoolError::Cdp {
                    op: "observe",
                    message: e,
                });
            }
        };
        serde_json::from_value(raw).map_err(|e| PoolError::Cdp {
            op: "observe",
            message: format!("unexpected observation shape: {e}"),
        })
    }

    /// Takes an observation of the active tab, after taking in tabs the page opened or
    /// closed and closing any tab whose URL the policy forbids.
    pub async fn observe(&mut self) -> Result<Observation, PoolError> {
        self.absorb_tabs().await?;
        let mut page = match self.scan().await {
            // The tab closed itself just now; observe the one that takes its place.
            Err(_) if self.tab().life() == Life::Closed => {
                self.absorb_tabs().await?;
                self.scan().await?
            }
            other => other?,
        };
        if self.enforce_url_policy(&page.url).await? {
            page = self.scan().await?;
        }
        page.title = clip_title(&page.title);
        let holes = std::mem::take(&mut page.holes);
        let (elements, numbering) = self
            .with_frames(std::mem::take(&mut page.elements), holes)
            .await?;
        page.elements = elements;
        self.tabs[self.active].numbering = numbering;
        let screenshot = self.screenshot().await?;
        let marked = if self.cfg.set_of_marks {
            Some(
                crate::marks::overlay(&screenshot, &page.elements, self.cfg.jpeg_quality).map_err(
                    |message| PoolError::Cdp {
                        op: "set-of-marks",
                        message,
                    },
                )?,
            )
        } else {
            None
        };
        let ax_tree = if self.cfg.accessibility_tree {
            Some(self.accessibility_tree().await?)
        } else {
            None
        };
        let tabs = self.tab_list(&page.url, &page.title).await?;
        Ok(Observation {
            url: page.url,
            title: page.title,
            screenshot,
            elements: page.elements,
            scroll: page.scroll,
            last_action_error: self.last_error.take(),
            marked,
            ax_tree,
            tabs,
            events: self.events.take(),
        })
    }

    /// The accessibility tree of the active tab as indented text, the nodes of the last
    /// observation's numbered elements marked `[N]` (an agent reading the tree acts on
    /// them by number, as on the element list).
    pub async fn accessibility_tree(&self) -> Result<String, PoolError> {
        let numbers = self.numbered_nodes().await?;
        let nodes = self
            .read_page(
                "Accessibility.getFullAXTree",
                GetFullAxTreeParams::default(),
            )
            .await?
            .nodes;
        let frames = self.frame_trees(&nodes, &numbers, 1).await?;
        Ok(crate::ax_tree::render(&nodes, &numbers, &frames))
    }

    /// The rendered trees of the iframes among `nodes` (the top document's tree shows an
    /// iframe as a leaf), nested ones too up to [`AX_FRAME_DEPTH`], by the iframe element's
    /// backend node id. Out-of-process frames (a remote browser's cross-site ones) have no
    /// tree in this page's session and stay leaves.
    async fn frame_trees(
        &self,
        nodes: &[chromiumoxide::cdp::browser_protocol::accessibility::AxNode],
        numbers: &HashMap<i64, usize>,
        depth: usize,
    ) -> Result<HashMap<i64, String>, PoolError> {
        let mut out = HashMap::new();
        if depth > AX_FRAME_DEPTH {
            return Ok(out);
        }
        let iframes = nodes.iter().filter_map(|n| {
            let role = n.role.as_ref()?.value.as_ref()?.as_str()?;
            (role == "Iframe").then_some(n.backend_dom_node_id?)
        });
        for backend in iframes.take(AX_MAX_FRAMES) {
            let describe = DescribeNodeParams {
                backend_node_id: Some(backend),
                ..Default::default()
            };
            let frame_id = match self.call("DOM.describeNode", describe).await {
                Ok(r) => r.node.frame_id,
                Err(PoolError::Cdp { .. }) => None,
                Err(e) => return Err(e),
            };
            let Some(frame_id) = frame_id else { continue };
            let params = GetFullAxTreeParams {
                frame_id: Some(frame_id),
                ..Default::default()
            };
            let sub = match self.call("Accessibility.getFullAXTree", params).await {
                Ok(r) => r.nodes,
                Err(PoolError::Cdp { .. }) => continue,
                Err(e) => return Err(e),
            };
            let inner = Box::pin(self.frame_trees(&sub, numbers, depth + 1)).await?;
            out.insert(
                *backend.inner(),
                crate::ax_tree::render(&sub, numbers, &inner),
            );
        }
        Ok(out)
    }

    /// Element numbers by DOM node (backend node id), from the elements `observe.js` keeps
    /// in the page and in the isolated worlds of cross-origin frames. Elements gone from
    /// their documents since are left out, and a page that navigated meanwhile has none
    /// (its tree is of a document no number points into).
    async fn numbered_nodes(&self) -> Result<HashMap<i64, usize>, PoolError> {
        let mut out = self.numbered_in(None).await?;
        let frames: Vec<_> = self.tab().numbering.contexts().collect();
        for (frame, context) in frames {
            out.extend(self.numbered_in(Some((frame, context))).await?);
        }
        Ok(out)
    }

    /// [`Session::numbered_nodes`] of one document: the top one, or a frame's world.
    async fn numbered_in(
        &self,
        frame: Option<(usize, ExecutionContextId)>,
    ) -> Result<HashMap<i64, usize>, PoolError> {
        const GROUP: &str = "surfgym-numbered";
        let mut params = EvaluateParams::new("window[Symbol.for('surfgym.elements')] || []");
        params.object_group = Some(GROUP.into());
        let evaluated = self.eval_object(params, frame.map(|(_, c)| c)).await?;
        let numbering = &self.tab().numbering;
        let array = evaluated.and_then(|ret| ret.result.object_id);
        let Some(array) = array else {
            return Ok(HashMap::new());
        };
        let mut props = GetPropertiesParams::new(array);
        props.own_properties = Some(true);
        let props = self.call("Runtime.getProperties", props).await;
        let elements: Vec<(usize, _)> = props
            .as_ref()
            .map(|p| p.result.as_slice())
            .unwrap_or_default()
            .iter()
            .filter_map(|p| {
                let index: u32 = p.name.parse().ok()?;
                let n = numbering.global(frame.map(|(f, _)| f), index + 1)?;
                Some((n, p.value.as_ref()?.object_id.clone()?))
            })
            .collect();
        // One round trip for all: the describes are sent together.
        let described = futures::future::join_all(elements.into_iter().map(|(n, id)| async move {
            let params = DescribeNodeParams {
                object_id: Some(id),
                ..Default::default()
            };
            let node = self.call("DOM.describeNode", params).await.ok()?;
            Some((*node.node.backend_node_id.inner(), n))
        }))
        .await;
        let _ = self
            .call(
                "Runtime.releaseObjectGroup",
                ReleaseObjectGroupParams::new(GROUP),
            )
            .await;
        match props {
            Ok(_) | Err(PoolError::Cdp { .. }) => Ok(described.into_iter().flatten().collect()),
            Err(e) => Err(e),
        }
    }

    /// Captures the viewport in the configured format, size and scale.
    pub async fn screenshot(&self) -> Result<Screenshot, PoolError> {
        let cfg = &self.cfg;
        let (format, quality) = match cfg.screenshot_format {
            ImageFormat::Jpeg => (
                CaptureScreenshotFormat::Jpeg,
                Some(i64::from(cfg.jpeg_quality)),
            ),
            ImageFormat::Png => (CaptureScreenshotFormat::Png, None),
        };
        let scaled = (cfg.screenshot_scale - 1.0).abs() > f64::EPSILON;
        let clip = scaled.then(|| Viewport {
            x: 0.0,
            y: 0.0,
            width: f64::from(cfg.viewport_width),
            height: f64::from(cfg.viewport_height),
            scale: cfg.screenshot_scale,
        });
        let params = CaptureScreenshotParams {
            format: Some(format),
            quality,
            clip,
            ..Default::default()
        };
        let ret = self.read_page("Page.captureScreenshot", params).await?;
        let b64: &str = ret.data.as_ref();
        use base64::Engine;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(b64)
            .map_err(|e| PoolError::Cdp {
                op: "Page.captureScreenshot",
                message: format!("bad base64: {e}"),
            })?;
        let scale = cfg.device_scale_factor * cfg.screenshot_scale;
        Ok(Screenshot {
            bytes,
            mime: cfg.screenshot_format.mime(),
            width: (f64::from(cfg.viewport_width) * scale).round() as u32,
            height: (f64::from(cfg.viewport_height) * scale).round() as u32,
            scale,
        })
    }

    /// Runs one action and waits for the page to settle.
    ///
    /// A failed action is not an error: its message is returned in the report and shown in
    /// the next observation. `answer` and `stop` do nothing here; they end the episode.
    pub async fn act(&mut self, action: &Action) -> Result<ActReport, PoolError> {
        self.action_seq += 1;
        let seq = self.action_seq;
        if action.is_terminal() {
            return Ok(ActReport::default());
        }
        // Actions that first locate an element in the page mark the document in that same
        // evaluation (see `resolve`); the others mark it here. Best effort: a page that is
        // mid-navigation has no document to mark.
        let first_target = match action {
            Action::Click(t)
            | Action::DoubleClick(t)
            | Action::RightClick(t)
            | Action::Hover(t)
            | Action::Drag { from: t, .. }
            | Action::Type { target: t, .. }
            | Action::Select { target: t, .. } => Some(t),
            _ => None,
        };
        let deferred = matches!(first_target, Some(Target::Element(_) | Target::Selector(_)));
        // An action on an element of a cross-origin frame waits for that frame to settle too.
        let in_frame = match action {
            Action::ScrollElement { target, .. } => Some(target),
            _ => first_target,
        }
        .and_then(|t| self.locate(t).frame);
        let started = Instant::now();
        self.pending_prepare
            .store(if deferred { seq } else { 0 }, Ordering::SeqCst);
        if !deferred {
            self.mark(&js::prepare(seq)).await?;
        }
        let before = self.stuck_marks();
        let tab_before = self.tab().target.clone();
        let report = match action {
            Action::Click(target) => self.click(target).await?,
            Action::DoubleClick(target) => self.double_click(target).await?,
            Action::RightClick(target) => self.right_click(target).await?,
            Action::Hover(target) => self.hover(target).await?,
            Action::Drag { from, to } => self.drag(from, to).await?,
            Action::Type {
                target,
                text,
                clear,
            } => self.type_text(target, text, *clear).await?,
            Action::Select { target, option } => self.select(target, option).await?,
            Action::Press(keys) => self.press(keys).await?,
            Action::Scroll(s) => self.scroll(s).await?,
            Action::ScrollElement { target, direction } => {
                self.scroll_element(target, *direction).await?
            }
            Action::Goto(url) => self.goto(url).await?,
            Action::Back => self.back().await?,
            Action::Forward => self.forward().await?,
            Action::Wait(ms) => {
                let ms = (*ms).min(crate::action::MAX_WAIT_MS);
                tokio::time::sleep(Duration::from_millis(u64::from(ms))).await;
                ActReport::default()
            }
            Action::SwitchTab(n) => self.switch_tab(*n).await?,
            Action::CloseTab(n) => self.close_tab(*n).await?,
            Action::Answer(_) | Action::Stop => unreachable!("terminal actions return early"),
        };
        self.pending_prepare.store(0, Ordering::SeqCst);
        self.settle(seq, before).await?;
        if let Some(frame) = in_frame
            && self.tab().target == tab_before
        {
            self.settle_frame(frame, seq, started).await?;
        }
        // A popup the action opened becomes the active tab; it must settle too.
        self.absorb_tabs().await?;
        if self.tab().target != tab_before {
            self.settle(seq, before).await?;
        }
        self.last_error = report.error.clone();
        if seq == 1 {
            // The episode's first page is up: the browser can open the next episode's
            // context now without slowing that navigation down.
            crate::standby::Standby::refill(&self.browser, &self.cfg);
        }
        Ok(report)
    }

    /// Takes in the tabs the browser opened or closed for this context since last time.
    /// A new tab becomes the active one, as it would in front of a person.
    async fn absorb_tabs(&mut self) -> Result<(), PoolError> {
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
        let browser = self.browser.browser.read().await;
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
                let browser = self.browser.browser.read().await;
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
        let browser = self.browser.browser.read().await;
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
    /// the URL policy. Document requests are refused at the browser's door (`gate.rs`);
    /// this catches what makes no request (a URL the page writes itself, `about:`, `blob:`).
    /// True when something was done and the page must be scanned again.
    async fn enforce_url_policy(&mut self, url: &str) -> Result<bool, PoolError> {
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
    async fn tab_list(&self, url: &str, title: &str) -> Result<Vec<TabInfo>, PoolError> {
        let mut infos: HashMap<String, (String, String)> = HashMap::new();
        if self.tabs.len() > 1 {
            let browser = self.browser.browser.read().await;
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

    async fn switch_tab(&mut self, n: u32) -> Result<ActReport, PoolError> {
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

    async fn close_tab(&mut self, n: u32) -> Result<ActReport, PoolError> {
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

    async fn resolve(&self, target: &Target) -> Result<Result<Resolved, String>, PoolError> {
        if let Target::Point { x, y } = target {
            if let Some(e) = self.outside_viewport(*x, *y) {
                return Ok(Err(e));
            }
            return Ok(Ok(Resolved {
                x: Some(*x),
                y: Some(*y),
                error: None,
                input_type: None,
                tag: None,
                disabled: false,
                frame: None,
            }));
        }
        let mut at = self.locate(target);
        let resolve = js::resolve(&at.target);
        let first = match self.pending_prepare.swap(0, Ordering::SeqCst) {
            0 => self.eval_at(at.frame, &resolve).await?,
            // The mark goes to the page's main world, the resolution to our world: sent
            // together, they cost one round trip (a session's calls run in order).
            seq => {
                let prepare = js::prepare(seq);
                let (marked, found) =
                    tokio::join!(self.evaluate(&prepare), self.eval_at(at.frame, &resolve));
                let _ = marked?;
                found?
            }
        };
        let mut r = match resolved(first) {
            Ok(r) => r,
            Err(e) => {
                // A selector the top document (and its same-origin frames) does not match
                // may match in a cross-origin frame the last observation saw.
                let frame = match &at.target {
                    Target::Selector(css)
                        if at.frame.is_none() && e.starts_with("no element matches") =>
                    {
                        self.frame_matching(css).await?
                    }
                    _ => None,
                };
                let Some(frame) = frame else {
                    return Ok(Err(e));
                };
                at.frame = Some(frame);
                match resolved(self.eval_at(at.frame, &resolve).await?) {
                    Ok(r) => r,
                    Err(e) => return Ok(Err(e)),
                }
            }
        };
        r.frame = at.frame;
        if let Some(frame) = at.frame {
            // The point is in the frame's own viewport: add where the frame sits now.
            let (ox, oy) = match self.frame_origin(frame, true).await? {
                Ok(o) => o,
                Err(e) => return Ok(Err(e)),
            };
            let (x, y) = (r.x.unwrap_or_default() + ox, r.y.unwrap_or_default() + oy);
            if x < 0.0 || y < 0.0 || self.outside_viewport(x, y).is_some() {
                return Ok(Err(
                    "the element's frame cannot be scrolled into view".into()
                ));
            }
            (r.x, r.y) = (Some(x), Some(y));
        }
        Ok(Ok(r))
    }

    /// Why a point (action coordinates are never negative) cannot be acted at, if it
    /// lies past the viewport's right or bottom edge.
    fn outside_viewport(&self, x: f64, y: f64) -> Option<String> {
        let (w, h) = (
            f64::from(self.cfg.viewport_width),
            f64::from(self.cfg.viewport_height),
        );
        (x >= w || y >= h).then(|| format!("point ({x}, {y}) is outside the {w}x{h} viewport"))
    }

    /// One mouse event with the button state spelled out: `buttons` is the bit field of
    /// buttons held after the event (1 left, 2 right), `click_count` 2 for a double click.
    async fn mouse_with(
        &self,
        kind: DispatchMouseEventType,
        x: f64,
        y: f64,
        button: MouseButton,
        buttons: i64,
        click_count: i64,
    ) -> Result<(), PoolError> {
        let params = DispatchMouseEventParams {
            button: Some(button),
            buttons: Some(buttons),
            click_count: Some(click_count),
            ..DispatchMouseEventParams::new(kind, x, y)
        };
        self.input("Input.dispatchMouseEvent", params).await
    }

    async fn click_at(&self, x: f64, y: f64) -> Result<(), PoolError> {
        use DispatchMouseEventType::{MouseMoved, MousePressed, MouseReleased};
        let event = |kind, button, buttons| DispatchMouseEventParams {
            button: Some(button),
            buttons: Some(buttons),
            click_count: Some(1),
            ..DispatchMouseEventParams::new(kind, x, y)
        };
        self.inputs(
            "Input.dispatchMouseEvent",
            vec![
                event(MouseMoved, MouseButton::None, 0),
                event(MousePressed, MouseButton::Left, 1),
                event(MouseReleased, MouseButton::Left, 0),
            ],
        )
        .await
    }

    async fn click(&self, target: &Target) -> Result<ActReport, PoolError> {
        let r = match self.resolve(target).await? {
            Ok(r) => r,
            Err(e) => return Ok(ActReport::failed(e)),
        };
        let (x, y) = (r.x.unwrap_or_default(), r.y.unwrap_or_default());
        self.click_at(x, y).await?;
        Ok(ActReport {
            error: r
                .disabled
                .then(|| "the element is disabled; the click did nothing".to_string()),
            point: Some((x, y)),
        })
    }

    async fn double_click(&self, target: &Target) -> Result<ActReport, PoolError> {
        use DispatchMouseEventType::{MouseMoved, MousePressed, MouseReleased};
        let r = match self.resolve(target).await? {
            Ok(r) => r,
            Err(e) => return Ok(ActReport::failed(e)),
        };
        let (x, y) = (r.x.unwrap_or_default(), r.y.unwrap_or_default());
        self.mouse_with(MouseMoved, x, y, MouseButton::None, 0, 0)
            .await?;
        // As a person's double click arrives: click (count 1), click (count 2), dblclick.
        for count in [1, 2] {
            self.mouse_with(MousePressed, x, y, MouseButton::Left, 1, count)
                .await?;
            self.mouse_with(MouseReleased, x, y, MouseButton::Left, 0, count)
                .await?;
        }
        Ok(ActReport {
            error: r
                .disabled
                .then(|| "the element is disabled; the double click did nothing".to_string()),
            point: Some((x, y)),
        })
    }

    async fn right_click(&self, target: &Target) -> Result<ActReport, PoolError> {
        use DispatchMouseEventType::{MouseMoved, MousePressed, MouseReleased};
        let r = match self.resolve(target).await? {
            Ok(r) => r,
            Err(e) => return Ok(ActReport::failed(e)),
        };
        let (x, y) = (r.x.unwrap_or_default(), r.y.unwrap_or_default());
        self.mouse_with(MouseMoved, x, y, MouseButton::None, 0, 0)
            .await?;
        self.mouse_with(MousePressed, x, y, MouseButton::Right, 2, 1)
            .await?;
        self.mouse_with(MouseReleased, x, y, MouseButton::Right, 0, 1)
            .await?;
        Ok(ActReport {
            error: r
                .disabled
                .then(|| "the element is disabled; the right click did nothing".to_string()),
            point: Some((x, y)),
        })
    }

    async fn hover(&self, target: &Target) -> Result<ActReport, PoolError> {
        let r = match self.resolve(target).await? {
            Ok(r) => r,
            Err(e) => return Ok(ActReport::failed(e)),
        };
        let (x, y) = (r.x.unwrap_or_default(), r.y.unwrap_or_default());
        self.mouse_with(
            DispatchMouseEventType::MouseMoved,
            x,
            y,
            MouseButton::None,
            0,
            0,
        )
        .await?;
        Ok(ActReport {
            error: None,
            point: Some((x, y)),
        })
    }

    /// Presses on `from`, moves to `to` in steps and releases there. Drags are intercepted
    /// meanwhile: when the page starts an HTML5 drag (which synthesized mouse events cannot
    /// carry on their own), the rest of it is played as CDP drag events (enter, over, drop);
    /// otherwise the page sees an ordinary press, moves and release (mouse-event drags).
    async fn drag(&self, from: &Target, to: &Target) -> Result<ActReport, PoolError> {
        let a = match self.resolve(from).await? {
            Ok(r) => r,
            Err(e) => return Ok(ActReport::failed(format!("drag source: {e}"))),
        };
        let b = match self.resolve(to).await? {
            Ok(r) => r,
            Err(e) => return Ok(ActReport::failed(format!("drag destination: {e}"))),
        };
        // Bringing the destination into view may have scrolled the source away.
        let a2 = match self.resolve(from).await? {
            Ok(r) => r,
            Err(e) => return Ok(ActReport::failed(format!("drag source: {e}"))),
        };
        if (a2.x, a2.y) != (a.x, a.y) {
            return Ok(ActReport::failed(
                "the drag source and destination do not fit in the viewport together",
            ));
        }
        let start = (a.x.unwrap_or_default(), a.y.unwrap_or_default());
        let end = (b.x.unwrap_or_default(), b.y.unwrap_or_default());
        if a.disabled {
            return Ok(ActReport {
                error: Some("the drag source is disabled".into()),
                point: Some(start),
            });
        }
        let mut intercepted = match self.page.event_listener::<EventDragIntercepted>().await {
            Ok(l) => Some(l),
            Err(e) => {
                tracing::debug!(error = %e, "no dragIntercepted listener; mouse events only");
                None
            }
        };
        if intercepted.is_some() {
            // A browser without drag interception still gets the mouse-event drag.
            match self
                .call(
                    "Input.setInterceptDrags",
                    SetInterceptDragsParams::new(true),
                )
                .await
            {
                Ok(_) => {}
                Err(PoolError::Cdp { message, .. }) => {
                    tracing::debug!(message, "drag interception unavailable");
                    intercepted = None;
                }
                Err(e) => return Err(e),
            }
        }
        let result = self.drag_moves(start, end, intercepted.as_mut()).await;
        if intercepted.is_some() {
            let off = self
                .call(
                    "Input.setInterceptDrags",
                    SetInterceptDragsParams::new(false),
                )
                .await;
            result?;
            off?;
        } else {
            result?;
        }
        Ok(ActReport {
            error: None,
            point: Some(start),
        })
    }

    async fn drag_moves(
        &self,
        start: (f64, f64),
        end: (f64, f64),
        mut intercepted: Option<&mut chromiumoxide::listeners::EventStream<EventDragIntercepted>>,
    ) -> Result<(), PoolError> {
        use DispatchMouseEventType::{MouseMoved, MousePressed, MouseReleased};
        const STEPS: usize = 12;
        self.mouse_with(MouseMoved, start.0, start.1, MouseButton::None, 0, 0)
            .await?;
        self.mouse_with(MousePressed, start.0, start.1, MouseButton::Left, 1, 1)
            .await?;
        let mut data: Option<DragData> = None;
        let mut entered = false;
        for i in 1..=STEPS {
            let t = i as f64 / STEPS as f64;
            let (x, y) = (
                start.0 + (end.0 - start.0) * t,
                start.1 + (end.1 - start.1) * t,
            );
            match &data {
                None => {
                    self.mouse_with(MouseMoved, x, y, MouseButton::Left, 1, 0)
                        .await?;
                    if let Some(events) = intercepted.as_deref_mut() {
                        // The event follows the move that started the drag by a hair.
                        let wait = if i == STEPS { 150 } else { 15 };
                        if let Ok(Some(ev)) =
                            tokio::time::timeout(Duration::from_millis(wait), events.next()).await
                        {
                            data = Some(ev.data.clone());
                        }
                    }
                }
                Some(d) => {
                    let kind = if entered {
                        DispatchDragEventType::DragOver
                    } else {
                        DispatchDragEventType::DragEnter
                    };
                    entered = true;
                    self.input(
                        "Input.dispatchDragEvent",
                        DispatchDragEventParams::new(kind, x, y, d.clone()),
                    )
                    .await?;
                }
            }
        }
        if let Some(d) = data {
            for kind in [
                DispatchDragEventType::DragEnter,
                DispatchDragEventType::DragOver,
                DispatchDragEventType::Drop,
            ] {
                if kind == DispatchDragEventType::DragEnter && entered {
                    continue;
                }
                self.input(
                    "Input.dispatchDragEvent",
                    DispatchDragEventParams::new(kind, end.0, end.1, d.clone()),
                )
                .await?;
            }
        }
        self.mouse_with(MouseReleased, end.0, end.1, MouseButton::Left, 0, 1)
            .await
    }

    async fn scroll_element(
        &self,
        target: &Target,
        direction: Direction,
    ) -> Result<ActReport, PoolError> {
        let at = self.locate(target);
        let (id, css, x, y) = match &at.target {
            Target::Element(n) => (
                n.to_string(),
                "null".to_string(),
                "null".into(),
                "null".into(),
            ),
            Target::Selector(c) => (
                "null".to_string(),
                serde_json::to_string(c).expect("strings always serialize"),
                "null".into(),
                "null".into(),
            ),
            Target::Point { x, y } => {
                if let Some(e) = self.outside_viewport(*x, *y) {
                    return Ok(ActReport::failed(e));
                }
                (
                    "null".to_string(),
                    "null".to_string(),
                    x.to_string(),
                    y.to_string(),
                )
            }
        };
        let down = direction == Direction::Down;
        let js = js::scroll_area(&id, &css, &x, &y, down);
        let area = match self.eval_at(at.frame, &js).await? {
            Ok(v) => match serde_json::from_value::<ScrollArea>(v) {
                Ok(a) if a.error.is_some() => {
                    return Ok(ActReport::failed(a.error.unwrap_or_default()));
                }
                Ok(a) => a,
                Err(e) => return Ok(ActReport::failed(format!("could not scroll: {e}"))),
            },
            Err(e) => return Ok(ActReport::failed(format!("could not scroll: {e}"))),
        };
        let (Some(mut px), Some(mut py), Some(amount)) = (area.x, area.y, area.amount) else {
            return Ok(ActReport::failed("could not locate the scrollable area"));
        };
        if let Some(frame) = at.frame {
            match self.frame_origin(frame, true).await? {
                Ok((ox, oy)) => (px, py) = (px + ox, py + oy),
                Err(e) => return Ok(ActReport::failed(e)),
            }
        }
        let delta = if down { amount } else { -amount };
        let params = DispatchMouseEventParams {
            delta_x: Some(0.0),
            delta_y: Some(delta),
            ..DispatchMouseEventParams::new(DispatchMouseEventType::MouseWheel, px, py)
        };
        self.input("Input.dispatchMouseEvent", params).await?;
        let read = "(window.__sgScrollArea || {}).scrollTop";
        let before = area.top.map(Value::from);
        let mut moved = false;
        for _ in 0..10 {
            tokio::time::sleep(Duration::from_millis(20)).await;
            let now = self.eval_at(at.frame, read).await?.ok();
            if now.as_ref().and_then(Value::as_f64) != before.as_ref().and_then(Value::as_f64) {
                moved = true;
                break;
            }
        }
        let _ = self
            .eval_at(at.frame, "delete window.__sgScrollArea")
            .await?;
        Ok(ActReport {
            error: (!moved).then(|| {
                "the area did not scroll (something else is under the pointer)".to_string()
            }),
            point: Some((px, py)),
        })
    }

    async fn type_text(
        &self,
        target: &Target,
        text: &str,
        clear: bool,
    ) -> Result<ActReport, PoolError> {
        let r = match self.resolve(target).await? {
            Ok(r) => r,
            Err(e) => return Ok(ActReport::failed(e)),
        };
        let point = (r.x.unwrap_or_default(), r.y.unwrap_or_default());
        if r.disabled {
            return Ok(ActReport {
                error: Some("the element is disabled".into()),
                point: Some(point),
            });
        }
        if let Target::Point { .. } = target {
            self.click_at(point.0, point.1).await?;
            if clear {
                self.press(&KeyCombo::parse("Control+a").expect("valid combo"))
                    .await?;
            }
            if !text.is_empty() {
                self.input("Input.insertText", InsertTextParams::new(text))
                    .await?;
            }
            return Ok(ActReport {
                error: None,
                point: Some(point),
            });
        }
        let picker = r
            .input_type
            .as_deref()
            .is_some_and(|t| VALUE_INPUTS.contains(&t));
        if !picker && r.tag.as_deref() != Some("select") {
            self.click_at(point.0, point.1).await?;
        }
        let local = self.locate(target).target;
        let mode = match self
            .eval_at(r.frame, &js::fill(&local, text, clear))
            .await?
        {
            Ok(v) => serde_json::from_value::<Mode>(v).unwrap_or(Mode {
                mode: None,
                error: Some("could not prepare the element for typing".into()),
            }),
            Err(e) => Mode {
                mode: None,
                error: Some(e),
            },
        };
        if let Some(e) = mode.error {
            return Ok(ActReport {
                error: Some(e),
                point: Some(point),
            });
        }
        if mode.mode.as_deref() == Some("type") && !text.is_empty() {
            self.input("Input.insertText", InsertTextParams::new(text))
                .await?;
        }
        Ok(ActReport {
            error: None,
            point: Some(point),
        })
    }

    async fn select(&self, target: &Target, option: &str) -> Result<ActReport, PoolError> {
        if let Target::Point { .. } = target {
            return Ok(ActReport::failed(
                "select needs an element number or css=, not a point",
            ));
        }
        let r = match self.resolve(target).await? {
            Ok(r) => r,
            Err(e) => return Ok(ActReport::failed(e)),
        };
        let point = r.x.zip(r.y);
        let local = self.locate(target).target;
        let outcome = match self.eval_at(r.frame, &js::select(&local, option)).await? {
            Ok(v) => serde_json::from_value::<Mode>(v).ok().and_then(|m| m.error),
            Err(e) => Some(e),
        };
        Ok(ActReport {
            error: outcome,
            point,
        })
    }

    async fn key_event(
        &self,
        kind: DispatchKeyEventType,
        key: &str,
        code: &str,
        key_code: i64,
        text: Option<&str>,
        modifiers: Modifiers,
    ) -> Result<(), PoolError> {
        let params = DispatchKeyEventParams {
            modifiers: Some(modifiers.bits()),
            key: Some(key.to_string()),
            code: (!code.is_empty()).then(|| code.to_string()),
            windows_virtual_key_code: Some(key_code),
            native_virtual_key_code: Some(key_code),
            text: text.map(str::to_string),
            unmodified_text: text.map(str::to_string),
            ..DispatchKeyEventParams::new(kind)
        };
        self.input("Input.dispatchKeyEvent", params).await
    }

    async fn press(&self, keys: &KeyCombo) -> Result<ActReport, PoolError> {
        const MODS: [(Modifiers, &str, i64); 4] = [
            (Modifiers::CONTROL, "Control", 17),
            (Modifiers::ALT, "Alt", 18),
            (Modifiers::SHIFT, "Shift", 16),
            (Modifiers::META, "Meta", 91),
        ];
        let held: Vec<_> = MODS
            .iter()
            .filter(|(m, ..)| keys.modifiers.contains(*m))
            .collect();
        for (_, name, code) in &held {
            self.key_event(
                DispatchKeyEventType::RawKeyDown,
                name,
                &format!("{name}Left"),
                *code,
                None,
                keys.modifiers,
            )
            .await?;
        }
        let def = keys.key_def();
        let down = if def.text.is_some() {
            DispatchKeyEventType::KeyDown
        } else {
            DispatchKeyEventType::RawKeyDown
        };
        self.key_event(
            down,
            &def.key,
            &def.code,
            def.key_code,
            def.text.as_deref(),
            keys.modifiers,
        )
        .await?;
        self.key_event(
            DispatchKeyEventType::KeyUp,
            &def.key,
            &def.code,
            def.key_code,
            None,
            keys.modifiers,
        )
        .await?;
        for (_, name, code) in held.iter().rev() {
            self.key_event(
                DispatchKeyEventType::KeyUp,
                name,
                &format!("{name}Left"),
                *code,
                None,
                Modifiers::default(),
            )
            .await?;
        }
        Ok(ActReport::default())
    }

    async fn scroll(&self, scroll: &Scroll) -> Result<ActReport, PoolError> {
        let (w, h) = (
            f64::from(self.cfg.viewport_width),
            f64::from(self.cfg.viewport_height),
        );
        let (dx, dy) = match scroll {
            Scroll::Down => (0.0, h * 0.8),
            Scroll::Up => (0.0, -h * 0.8),
            Scroll::By { dx, dy } => (*dx, *dy),
        };
        let before = self
            .eval_ours("[window.scrollX, window.scrollY]")
            .await?
            .ok();
        let params = DispatchMouseEventParams {
            delta_x: Some(dx),
            delta_y: Some(dy),
            ..DispatchMouseEventParams::new(DispatchMouseEventType::MouseWheel, w / 2.0, h / 2.0)
        };
        self.input("Input.dispatchMouseEvent", params).await?;
        // Wheel scrolling is applied asynchronously by the compositor.
        let mut after = before.clone();
        for _ in 0..10 {
            tokio::time::sleep(Duration::from_millis(20)).await;
            after = self
                .eval_ours("[window.scrollX, window.scrollY]")
                .await?
                .ok();
            if after != before {
                break;
            }
        }
        let error = (after == before).then(|| "the page did not scroll (already at the edge, or nothing scrollable under the pointer)".to_string());
        Ok(ActReport { error, point: None })
    }

    async fn goto(&self, url: &str) -> Result<ActReport, PoolError> {
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
        match outcome {
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
        }
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

    async fn back(&self) -> Result<ActReport, PoolError> {
        self.history_step(true).await
    }

    async fn forward(&self) -> Result<ActReport, PoolError> {
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
            crate::standby::Standby::refill(&self.browser, &self.cfg);
        }
        self.permit.take();
    }
}

async fn dispose(browser: &LiveBrowser, context: BrowserContextId, limit: Duration) {
    if !browser.is_alive() {
        return;
    }
    let guard = browser.browser.read().await;
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

/// Listens on the browser connection for what concerns this session's context: tabs the
/// pages open (popups, `target=_blank`), tabs that close, and downloads (refused by the
/// context's download behaviour, recorded here).
async fn watch_context(
    browser: &LiveBrowser,
    context: &BrowserContextId,
    signals: Arc<Mutex<TabSignals>>,
    events: EventLog,
    downloads: Arc<AtomicU64>,
) -> Result<Vec<JoinHandle<()>>, PoolError> {
    let guard = browser.browser.read().await;
    let gone = |e| PoolError::from_cdp("event listener", e);
    let mut created = guard
        .event_listener::<EventTargetCreated>()
        .await
        .map_err(gone)?;
    let mut destroyed = guard
        .event_listener::<EventTargetDestroyed>()
        .await
        .map_err(gone)?;
    let mut download = guard
        .event_listener::<EventDownloadWillBegin>()
        .await
        .map_err(gone)?;
    drop(guard);
    let ctx = context.clone();
    let tabs = signals.clone();
    let on_created = tokio::spawn(async move {
        while let Some(ev) = created.next().await {
            let info = &ev.target_info;
            if info.r#type == "page" && info.browser_context_id.as_ref() == Some(&ctx) {
                let mut s = tabs.lock().expect("signal lock");
                if !s.ours.contains_key(info.target_id.inner()) {
                    s.opened.push((info.target_id.clone(), info.url.clone()));
                }
            }
        }
    });
    let tabs = signals.clone();
    let on_destroyed = tokio::spawn(async move {
        while let Some(ev) = destroyed.next().await {
            let mut s = tabs.lock().expect("signal lock");
            if let Some(OurTab { closer, .. }) = s.ours.get(ev.target_id.inner()) {
                // Calls waiting on the tab give up now instead of timing out.
                closer.send_if_modified(|life| {
                    let live = *life == Life::Live;
                    if live {
                        *life = Life::Closed;
                    }
                    live
                });
                s.destroyed.push(ev.target_id.clone());
            }
            // A popup that closed before it was taken in is forgotten.
            s.opened.retain(|(t, _)| *t != ev.target_id);
        }
    });
    let on_download = tokio::spawn(async move {
        while let Some(ev) = download.next().await {
            let ours = signals
                .lock()
                .expect("signal lock")
                .has_frame(ev.frame_id.inner());
            if ours {
                downloads.fetch_add(1, Ordering::SeqCst);
                events.push(PageEvent::Download {
                    url: ev.url.clone(),
                    filename: ev.suggested_filename.clone(),
                });
            }
        }
    });
    Ok(vec![on_created, on_destroyed, on_download])
}

/// Iframes nested deeper than this keep their trees out of the accessibility text.
const AX_FRAME_DEPTH: usize = 3;

/// Iframes per document whose trees are read (ad-heavy pages have dozens).
const AX_MAX_FRAMES: usize = 10;

/// How long a read may still take once a new document committed while it waited, before
/// it is sent again (a screenshot normally answers in tens of ms, a loaded 2-core machine
/// in a few hundred).
const SWAPPED_READ_GRACE: Duration = Duration::from_secs(1);

/// Chromium's answers to a page-level read while the page's frame is between renderers:
/// the old one detached, or the new one not painted yet.
fn between_renderers(message: &str) -> bool {
    message.contains("Not attached to an active page")
        || message.contains("Unable to capture screenshot")
}

/// Whether an evaluation failed because the document went away under it (a navigation),
/// rather than because the script threw.
fn navigating(message: &str) -> bool {
    ["context", "navigated", "closed", "detached"]
        .iter()
        .any(|w| message.contains(w))
}

/// Longest page title an observation reports, in characters: a page must not make every
/// stored step and prompt huge through its title.
const TITLE_CHARS: usize = 300;

/// `title`, cut to [`TITLE_CHARS`] (the last one an ellipsis) when longer.
fn clip_title(title: &str) -> String {
    // `end`: where the last character allowed starts; it gives way to the ellipsis when
    // more follow.
    match title.char_indices().nth(TITLE_CHARS - 1) {
        Some((end, _)) if title[end..].chars().nth(1).is_some() => format!("{}…", &title[..end]),
        _ => title.to_string(),
    }
}

/// How often settling probes a page that is still loading or has requests in flight.
const SETTLE_POLL: Duration = Duration::from_millis(15);

/// How long one settling probe may wait inside the page before reporting back (the Rust
/// side then checks the network, tabs and limits).
const PROBE_WAIT: Duration = Duration::from_millis(250);

/// Once loaded, a page that never goes quiet (animations, tickers) is not waited for longer.
const RESTLESS_MAX: Duration = Duration::from_millis(1500);

#[cfg(test)]
mod tests {
    use super::{TITLE_CHARS, clip_title};

    #[test]
    fn titles_are_cut_only_past_the_limit_and_by_characters() {
        let exact = "é".repeat(TITLE_CHARS);
        assert_eq!(clip_title(&exact), exact);
        let long = clip_title(&"é".repeat(TITLE_CHARS + 1));
        assert_eq!(long.chars().count(), TITLE_CHARS);
        assert!(long.ends_with("é…"));
        assert_eq!(clip_title("short"), "short");
    }
}
