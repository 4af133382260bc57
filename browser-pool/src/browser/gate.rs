//! The URL policy and politeness at the browser's own door: browser-level `Fetch`
//! interception of every document request (main frames, frames, and tabs the pages open)
//! in every context, so a denied URL is never requested, not even as a popup's first
//! navigation (a tab's own interception can only start once the tab exists and is
//! attached, after that request). With a request rate per domain, every request is held
//! here until its domain has a token; with any politeness limit, documents' answers are
//! read for a 429's or 503's `Retry-After` (see `politeness.rs`). In a pool that
//! captures traffic, every request and response passes here, so that a session can record
//! them or have them answered from a recording (`traffic.rs`; the CDP calls in
//! `gate/exchange.rs`).
//!
//! A refused request is recorded as a `blocked` page event in the session whose tab or
//! frame made it; sessions register here by browser context, and are known by their event
//! logs and the frames they claim, never by type.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use chromiumoxide::cdp::browser_protocol::fetch::{self, EventRequestPaused, RequestPattern};
use chromiumoxide::cdp::browser_protocol::network::{ErrorReason, ResourceType};
use chromiumoxide::cdp::browser_protocol::target::{GetTargetInfoParams, TargetId};
use futures::StreamExt;

use super::launch::Chromium;
use crate::error::PoolError;
use crate::events::{EventLog, PageEvent};
use crate::politeness::{Domains, parse_retry_after};
use crate::traffic::{Answer, Traffic};
use crate::url_policy::UrlPolicy;

mod exchange;
mod robots;

/// Whether a frame or tab id belongs to a session.
pub(crate) type Owns = Box<dyn Fn(&str) -> bool + Send + Sync>;

/// What the gate knows of a session: where its refusals are reported, what frames are
/// its, its traffic mode.
pub(crate) struct Registered {
    pub(crate) events: EventLog,
    pub(crate) owns: Owns,
    pub(crate) traffic: Arc<Traffic>,
    /// The domains its pages may load documents from (empty: any the URL policy allows).
    pub(crate) allowed: Arc<std::sync::Mutex<Vec<String>>>,
}

/// A session as one request sees it.
#[derive(Clone)]
struct Owner {
    events: EventLog,
    traffic: Arc<Traffic>,
    allowed: Arc<std::sync::Mutex<Vec<String>>>,
}

/// The sessions of one browser, by browser context id, for reporting refused requests.
#[derive(Default)]
pub(crate) struct Gate {
    sessions: Mutex<HashMap<String, Registered>>,
}

impl Gate {
    /// Reports requests of `context` (and of the frames and tabs `owns` claims) to `events`.
    pub(crate) fn register(&self, context: &str, session: Registered) {
        self.lock().insert(context.to_string(), session);
    }

    /// Forgets a context.
    pub(crate) fn unregister(&self, context: &str) {
        self.lock().remove(context);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Registered>> {
        self.sessions.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn by_frame(&self, frame: &str) -> Option<Owner> {
        self.lock()
            .values()
            .find(|r| (r.owns)(frame))
            .map(Owner::of)
    }

    fn by_context(&self, context: &str) -> Option<Owner> {
        self.lock().get(context).map(Owner::of)
    }

    /// Whether any session is restricted to some domains.
    fn restricts(&self) -> bool {
        self.lock().values().any(|r| {
            !r.allowed
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .is_empty()
        })
    }
}

impl Owner {
    fn of(r: &Registered) -> Owner {
        Owner {
            events: r.events.clone(),
            traffic: r.traffic.clone(),
            allowed: r.allowed.clone(),
        }
    }
}

/// What the gate intercepts: documents' requests always (the URL policy), every request
/// with a rate to keep, documents' answers with any politeness limit; everything at both
/// stages in a pool that captures traffic.
fn patterns(domains: &Domains, capture: bool) -> Vec<RequestPattern> {
    let pattern = |resource_type, stage| RequestPattern {
        url_pattern: Some("*".into()),
        resource_type,
        request_stage: Some(stage),
    };
    let (request, response) = (fetch::RequestStage::Request, fetch::RequestStage::Response);
    if capture {
        return vec![pattern(None, request), pattern(None, response)];
    }
    let mut out = vec![if domains.config().gates_requests() {
        pattern(None, request)
    } else {
        pattern(Some(ResourceType::Document), request)
    }];
    if domains.config().is_on() {
        out.push(pattern(Some(ResourceType::Document), response));
    }
    out
}

/// What the gate answers by, besides its sessions.
#[derive(Clone)]
pub(crate) struct Rules {
    pub(crate) urls: UrlPolicy,
    pub(crate) domains: Arc<Domains>,
    /// Every request and response passes the gate (record and replay).
    pub(crate) capture: bool,
}

/// Starts interception on `live` and answers paused requests by `urls` and `domains`
/// until the browser's connection ends, reporting refusals to the sessions registered in
/// `gate`.
pub(crate) async fn open(
    live: &Arc<Chromium>,
    gate: &Arc<Gate>,
    rules: Rules,
) -> Result<(), PoolError> {
    let mut paused = {
        let browser = live.browser.read().await;
        let paused = browser
            .event_listener::<EventRequestPaused>()
            .await
            .map_err(|e| PoolError::from_cdp("event listener", e))?;
        browser
            .execute(fetch::EnableParams {
                patterns: Some(patterns(&rules.domains, rules.capture)),
                handle_auth_requests: None,
            })
            .await
            .map_err(|e| PoolError::from_cdp("Fetch.enable", e))?;
        paused
    };
    let weak = Arc::downgrade(live);
    let gate = gate.clone();
    let rules = Arc::new(rules);
    tokio::spawn(async move {
        while let Some(ev) = paused.next().await {
            // One at a time would make every context's navigation wait for the others'.
            tokio::spawn(answer(weak.clone(), gate.clone(), ev, rules.clone()));
        }
    });
    Ok(())
}

async fn answer(
    live: Weak<Chromium>,
    gate: Arc<Gate>,
    ev: Arc<EventRequestPaused>,
    rules: Arc<Rules>,
) {
    let Some(live) = live.upgrade() else {
        return;
    };
    let call = if ev.response_status_code.is_some() || ev.response_error_reason.is_some() {
        at_response(&live, &gate, &ev, &rules).await
    } else {
        at_request(&live, &gate, &ev, &rules).await
    };
    if let Err(e) = call {
        tracing::debug!(error = %e, "answering a paused request failed");
    }
}

/// A response: read for `Retry-After`, recorded where its session records, let go.
async fn at_response(
    live: &Chromium,
    gate: &Gate,
    ev: &EventRequestPaused,
    rules: &Rules,
) -> Result<(), chromiumoxide::error::CdpError> {
    if let Some(status) = ev.response_status_code
        && matches!(status, 429 | 503)
        && let Some(after) = ev
            .response_headers
            .iter()
            .flatten()
            .find(|h| h.name.eq_ignore_ascii_case("retry-after"))
            .and_then(|h| parse_retry_after(&h.value, std::time::SystemTime::now()))
    {
        rules.domains.retry_after(&ev.request.url, after);
    }
    if rules.capture
        && ev.response_status_code.is_some()
        && let Some(o) = owner(live, gate, ev.frame_id.inner()).await
        && o.traffic.recording()
    {
        o.traffic.push(exchange::read(live, ev).await);
    }
    exchange::go_on(live, ev).await
}

/// A request: refused by the URL policy, held by politeness, answered from a recording or
/// let go.
async fn at_request(
    live: &Chromium,
    gate: &Gate,
    ev: &EventRequestPaused,
    rules: &Rules,
) -> Result<(), chromiumoxide::error::CdpError> {
    let mut checked = if ev.resource_type == ResourceType::Document {
        rules.urls.check(&ev.request.url)
    } else {
        Ok(())
    };
    let document = ev.resource_type == ResourceType::Document;
    let session = match document && (gate.restricts() || rules.domains.checks_robots()) {
        true => tab_owner(live, gate, ev.frame_id.inner()).await,
        false => None,
    };
    if checked.is_ok()
        && gate.restricts()
        && let Some(o) = &session
    {
        checked = allowed(o, &ev.request.url);
    }
    // A session's documents only: the gate's own robots.txt tab has none. A replay answers
    // from its recording, offline: the network's robots.txt is not its web.
    if checked.is_ok() && session.as_ref().is_some_and(|o| !o.traffic.replaying()) {
        checked = rules
            .domains
            .robots_allow(&ev.request.url, |url| robots::fetch(live, url))
            .await;
    }
    if let Err(reason) = checked {
        // Recorded before the page learns of it, so the observation that follows the
        // failed navigation has the event.
        let event = PageEvent::Blocked {
            url: ev.request.url.clone(),
            reason,
        };
        match owner(live, gate, ev.frame_id.inner()).await {
            Some(o) => o.events.push(event),
            None => tracing::debug!(url = ev.request.url, "refused a request of no session"),
        }
        return exchange::fail(live, ev, ErrorReason::BlockedByClient).await;
    }
    let answer = match rules.capture {
        true => match owner(live, gate, ev.frame_id.inner()).await {
            Some(o) => {
                let body = exchange::request_body(ev);
                o.traffic
                    .answer(&ev.request.method, &ev.request.url, body.as_deref())
            }
            None => Answer::Continue,
        },
        false => Answer::Continue,
    };
    match answer {
        Answer::Fulfill(e) => exchange::fulfill(live, ev, &e).await,
        Answer::Fail => exchange::fail(live, ev, ErrorReason::InternetDisconnected).await,
        Answer::NotFound => exchange::not_found(live, ev).await,
        Answer::Continue => {
            if rules.domains.config().is_on() {
                // Held outside the browser's lock: others' requests go on meanwhile.
                rules.domains.request(&ev.request.url).await;
            }
            exchange::go_on(live, ev).await
        }
    }
}

/// Whether `url`'s domain is one of the session's allowed domains (or a subdomain of one).
fn allowed(o: &Owner, url: &str) -> Result<(), String> {
    let allowed = o.allowed.lock().unwrap_or_else(|p| p.into_inner());
    if allowed.is_empty() {
        return Ok(());
    }
    let Some(domain) = crate::politeness::domain_of(url) else {
        // about:blank, data: and the like load nothing from a site.
        return Ok(());
    };
    let ok = allowed
        .iter()
        .any(|d| domain == *d || domain.ends_with(&format!(".{d}")));
    if ok {
        Ok(())
    } else {
        Err(format!(
            "{domain} is not among the campaign's allowed domains ({})",
            allowed.join(", ")
        ))
    }
}

/// The session of a tab's document request (a frame or tab it knows, or a new tab's
/// context), without waiting for one to learn of a new frame: iframes of an allowed page
/// are its own affair.
async fn tab_owner(live: &Chromium, gate: &Gate, frame: &str) -> Option<Owner> {
    if let Some(o) = gate.by_frame(frame) {
        return Some(o);
    }
    // A tab's main frame has the tab's id.
    let info = live
        .browser
        .read()
        .await
        .execute(GetTargetInfoParams {
            target_id: Some(TargetId::from(frame.to_string())),
        })
        .await
        .ok()?;
    let context = info.result.target_info.browser_context_id.clone()?;
    gate.by_context(context.inner())
}

/// The session that made a request from `frame`: a frame or tab it knows, else (a tab so
/// new its session has not heard of it) the tab's context, else, after a moment, a frame
/// its session has just learnt of. The browser's lock is held only for the one call,
/// never across the wait below (a recycle waits for it).
async fn owner(live: &Chromium, gate: &Gate, frame: &str) -> Option<Owner> {
    if let Some(o) = tab_owner(live, gate, frame).await {
        return Some(o);
    }
    // A frame attached a moment ago: its session learns of it from its own events.
    tokio::time::sleep(Duration::from_millis(100)).await;
    gate.by_frame(frame)
}
