//! What the browser reports about a session's context: tabs the pages open (popups,
//! `target=_blank`), tabs that close, and downloads (refused by the context's download
//! behaviour, recorded here). Filled by watchers on the browser connection, taken in by
//! the session (`tabs.rs`).

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use chromiumoxide::cdp::browser_protocol::browser::{BrowserContextId, EventDownloadWillBegin};
use chromiumoxide::cdp::browser_protocol::target::{
    EventTargetCreated, EventTargetDestroyed, TargetId,
};
use futures::StreamExt;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::tab::{Life, Tab};
use crate::browser::LiveBrowser;
use crate::error::PoolError;
use crate::events::{EventLog, PageEvent};

#[derive(Default)]
pub(super) struct TabSignals {
    pub(super) opened: Vec<(TargetId, String)>,
    pub(super) destroyed: Vec<TargetId>,
    /// This session's tabs by target id (a download names the frame that started it: a
    /// tab's main frame has the tab's id).
    pub(super) ours: HashMap<String, OurTab>,
}

pub(super) struct OurTab {
    /// Marks the tab closed.
    closer: Arc<watch::Sender<Life>>,
    /// The tab's subframes.
    frames: Arc<Mutex<HashSet<String>>>,
}

impl OurTab {
    pub(super) fn of(tab: &Tab) -> OurTab {
        OurTab {
            closer: tab.closer.clone(),
            frames: tab.frames.clone(),
        }
    }
}

impl TabSignals {
    /// Whether `frame` is one of this session's tabs or a frame inside one.
    pub(super) fn has_frame(&self, frame: &str) -> bool {
        self.ours.contains_key(frame)
            || self.ours.values().any(|t| {
                t.frames
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .contains(frame)
            })
    }
}

/// Listens on the browser connection for what concerns this session's context: tabs the
/// pages open (popups, `target=_blank`), tabs that close, and downloads (refused by the
/// context's download behaviour, recorded here).
pub(super) async fn watch_context(
    browser: &LiveBrowser,
    context: &BrowserContextId,
    signals: Arc<Mutex<TabSignals>>,
    events: EventLog,
    downloads: Arc<AtomicU64>,
) -> Result<Vec<JoinHandle<()>>, PoolError> {
    let guard = browser.browser().read().await;
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
