//! The URL policy and politeness at the browser's own door: browser-level `Fetch`
//! interception of every document request (main frames, frames, and tabs the pages open)
//! in every context, so a denied URL is never requested, not even as a popup's first
//! navigation (a tab's own interception can only start once the tab exists and is
//! attached, after that request). With a request rate per domain, every request is held
//! here until its domain has a token; with any politeness limit, documents' answers are
//! read for a 429's or 503's `Retry-After` (see `politeness.rs`).
//!
//! A refused request is recorded as a `blocked` page event in the session whose tab or
//! frame made it; sessions register here by browser context, and are known by their event
//! logs and the frames they claim, never by type.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use chromiumoxide::cdp::browser_protocol::fetch::{
    self, ContinueRequestParams, EventRequestPaused, FailRequestParams, RequestPattern,
};
use chromiumoxide::cdp::browser_protocol::network::{ErrorReason, ResourceType};
use chromiumoxide::cdp::browser_protocol::target::{GetTargetInfoParams, TargetId};
use futures::StreamExt;

use super::launch::Chromium;
use crate::error::PoolError;
use crate::events::{EventLog, PageEvent};
use crate::politeness::{Domains, parse_retry_after};
use crate::url_policy::UrlPolicy;

/// Whether a frame or tab id belongs to a session.
pub(crate) type Owns = Box<dyn Fn(&str) -> bool + Send + Sync>;

/// The sessions of one browser, by browser context id, for reporting refused requests.
#[derive(Default)]
pub(crate) struct Gate {
    sessions: Mutex<HashMap<String, (EventLog, Owns)>>,
}

impl Gate {
    /// Reports requests of `context` (and of the frames and tabs `owns` claims) to `events`.
    pub(crate) fn register(&self, context: &str, events: EventLog, owns: Owns) {
        self.lock().insert(context.to_string(), (events, owns));
    }

    /// Forgets a context.
    pub(crate) fn unregister(&self, context: &str) {
        self.lock().remove(context);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, (EventLog, Owns)>> {
        self.sessions.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn by_frame(&self, frame: &str) -> Option<EventLog> {
        self.lock()
            .values()
            .find(|(_, owns)| owns(frame))
            .map(|(log, _)| log.clone())
    }

    fn by_context(&self, context: &str) -> Option<EventLog> {
        self.lock().get(context).map(|(log, _)| log.clone())
    }
}

/// What the gate intercepts: documents' requests always (the URL policy), every request
/// with a rate to keep, documents' answers with any politeness limit.
fn patterns(domains: &Domains) -> Vec<RequestPattern> {
    let request = |resource_type| RequestPattern {
        url_pattern: Some("*".into()),
        resource_type,
        request_stage: Some(fetch::RequestStage::Request),
    };
    let mut out = vec![if domains.config().gates_requests() {
        request(None)
    } else {
        request(Some(ResourceType::Document))
    }];
    if domains.config().is_on() {
        out.push(RequestPattern {
            url_pattern: Some("*".into()),
            resource_type: Some(ResourceType::Document),
            request_stage: Some(fetch::RequestStage::Response),
        });
    }
    out
}

/// Starts interception on `live` and answers paused requests by `urls` and `domains`
/// until the browser's connection ends, reporting refusals to the sessions registered in
/// `gate`.
pub(crate) async fn open(
    live: &Arc<Chromium>,
    gate: &Arc<Gate>,
    urls: UrlPolicy,
    domains: Arc<Domains>,
) -> Result<(), PoolError> {
    let mut paused = {
        let browser = live.browser.read().await;
        let paused = browser
            .event_listener::<EventRequestPaused>()
            .await
            .map_err(|e| PoolError::from_cdp("event listener", e))?;
        browser
            .execute(fetch::EnableParams {
                patterns: Some(patterns(&domains)),
                handle_auth_requests: None,
            })
            .await
            .map_err(|e| PoolError::from_cdp("Fetch.enable", e))?;
        paused
    };
    let weak = Arc::downgrade(live);
    let gate = gate.clone();
    let urls = Arc::new(urls);
    tokio::spawn(async move {
        while let Some(ev) = paused.next().await {
            // One at a time would make every context's navigation wait for the others'.
            tokio::spawn(answer(
                weak.clone(),
                gate.clone(),
                ev,
                urls.clone(),
                domains.clone(),
            ));
        }
    });
    Ok(())
}

async fn answer(
    live: Weak<Chromium>,
    gate: Arc<Gate>,
    ev: Arc<EventRequestPaused>,
    urls: Arc<UrlPolicy>,
    domains: Arc<Domains>,
) {
    if let Some(status) = ev.response_status_code {
        // A document's answer: only read.
        if matches!(status, 429 | 503)
            && let Some(after) = ev
                .response_headers
                .iter()
                .flatten()
                .find(|h| h.name.eq_ignore_ascii_case("retry-after"))
                .and_then(|h| parse_retry_after(&h.value, std::time::SystemTime::now()))
        {
            domains.retry_after(&ev.request.url, after);
        }
    }
    let checked = if ev.resource_type == ResourceType::Document && ev.response_status_code.is_none()
    {
        urls.check(&ev.request.url)
    } else {
        Ok(())
    };
    if checked.is_ok() && ev.response_status_code.is_none() && domains.config().is_on() {
        // Held outside the browser's lock: others' requests go on meanwhile.
        domains.request(&ev.request.url).await;
    }
    let Some(live) = live.upgrade() else {
        return;
    };
    let call = match checked {
        Ok(()) => live
            .browser
            .read()
            .await
            .execute(ContinueRequestParams::new(ev.request_id.clone()))
            .await
            .map(|_| ()),
        Err(reason) => {
            // Recorded before the page learns of it, so the observation that follows the
            // failed navigation has the event.
            let event = PageEvent::Blocked {
                url: ev.request.url.clone(),
                reason,
            };
            match owner(&live, &gate, ev.frame_id.inner()).await {
                Some(log) => log.push(event),
                None => tracing::debug!(url = ev.request.url, "refused a request of no session"),
            }
            live.browser
                .read()
                .await
                .execute(FailRequestParams::new(
                    ev.request_id.clone(),
                    ErrorReason::BlockedByClient,
                ))
                .await
                .map(|_| ())
        }
    };
    if let Err(e) = call {
        tracing::debug!(error = %e, "answering a paused request failed");
    }
}

/// The event log of the session that made a request from `frame`: a frame or tab it
/// knows, else (a tab so new its session has not heard of it) the tab's context. The
/// browser's lock is held only for the one call, never across the wait below (a recycle
/// waits for it).
async fn owner(live: &Chromium, gate: &Gate, frame: &str) -> Option<EventLog> {
    if let Some(log) = gate.by_frame(frame) {
        return Some(log);
    }
    // A tab's main frame has the tab's id.
    let info = live
        .browser
        .read()
        .await
        .execute(GetTargetInfoParams {
            target_id: Some(TargetId::from(frame.to_string())),
        })
        .await;
    if let Ok(info) = info
        && let Some(context) = &info.result.target_info.browser_context_id
        && let Some(log) = gate.by_context(context.inner())
    {
        return Some(log);
    }
    // A frame attached a moment ago: its session learns of it from its own events.
    tokio::time::sleep(Duration::from_millis(100)).await;
    gate.by_frame(frame)
}
