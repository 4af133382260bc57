//! The event watchers of one tab: what its page's CDP events tell of its dialogs, its
//! requests, and its main frame's navigations, commits and worlds, kept up to date in the
//! shared state its [`Tab`](super::Tab) reads.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use chromiumoxide::Page;
use chromiumoxide::cdp::browser_protocol::fetch::EventRequestPaused;
use chromiumoxide::cdp::browser_protocol::network::{
    EventLoadingFailed, EventLoadingFinished, EventRequestWillBeSent, ResourceType,
};
use chromiumoxide::cdp::browser_protocol::page::{
    CreateIsolatedWorldParams, DialogType, EventFrameNavigated, EventFrameStartedNavigating,
    EventJavascriptDialogOpening, FrameId, FrameStartedNavigatingNavigationType,
    HandleJavaScriptDialogParams,
};
use chromiumoxide::cdp::js_protocol::runtime::{
    EventExecutionContextCreated, EventExecutionContextDestroyed,
};
use futures::StreamExt;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::interception::Interception;
use crate::config::DialogPolicy;
use crate::events::{EventLog, PageEvent};
use crate::js;

/// The page's requests as the network events report them.
#[derive(Default)]
pub(super) struct Requests {
    /// In flight: request id → when it started.
    pub(super) started: HashMap<String, Instant>,
    /// When the last one finished or failed: its response may still be on its way to a
    /// callback that changes the page.
    pub(super) last_done: Option<Instant>,
    /// When the last one started.
    pub(super) last_started: Option<Instant>,
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

/// How long a world made ahead for a new document may take (the session makes its own if
/// it is not there when needed).
const WORLD_AHEAD_WAIT: Duration = Duration::from_secs(10);

pub(super) async fn answer_dialogs(
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
pub(super) struct Watch {
    pub(super) inflight: Arc<Mutex<Requests>>,
    pub(super) documents: watch::Sender<u64>,
    pub(super) navigating: watch::Sender<Option<Navigating>>,
    pub(super) main_frame: String,
    pub(super) committed: Arc<Mutex<Vec<String>>>,
    pub(super) last_committed: Arc<Mutex<String>>,
    pub(super) document_failed: Arc<Mutex<Option<(String, String)>>>,
    pub(super) world: Arc<Mutex<Option<String>>>,
    pub(super) landing: Interception,
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
    // Recorded before anyone is woken (by the navigation's end, by the new count): a goto
    // asking whether its navigation ended on Chromium's error page reads this document's
    // URL, not the last one's.
    url.clone_into(&mut w.last_committed.lock().unwrap_or_else(|p| p.into_inner()));
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
    // A page passed through between two observations (a client-side redirect, a link
    // followed while the machine was slow to show it) was still visited. Blank and error
    // pages are not places.
    if url.starts_with("http:") || url.starts_with("https:") {
        w.committed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(url.to_string());
    }
    w.documents.send_modify(|n| *n += 1);
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

pub(super) async fn track_requests(
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
        // The main frame's last document request and the URL it was first sent to (before
        // any redirect): its failure is that navigation's.
        let mut last_document: Option<(String, String)> = None;
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
                        if last_document.as_ref().is_none_or(|(last, _)| last != id) {
                            *w.document_failed.lock().unwrap_or_else(|p| p.into_inner()) = None;
                            last_document = Some((id.clone(), ev.request.url.clone()));
                        }
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
                    if let Some((id, sent_to)) = &last_document
                        && id == ev.request_id.inner()
                    {
                        *w.document_failed.lock().unwrap_or_else(|p| p.into_inner()) =
                            Some((sent_to.clone(), ev.error_text.clone()));
                    }
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
