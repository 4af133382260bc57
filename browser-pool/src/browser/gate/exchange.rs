//! The gate's CDP calls on one paused request: let it go, fail it, answer it from a
//! recorded exchange, or read its response into one.

use base64::Engine as _;
use chromiumoxide::cdp::browser_protocol::fetch::{
    ContinueRequestParams, EventRequestPaused, FailRequestParams, FulfillRequestParams,
    GetResponseBodyParams, HeaderEntry,
};
use chromiumoxide::cdp::browser_protocol::network::ErrorReason;
use chromiumoxide::error::CdpError;

use crate::browser::launch::Chromium;
use crate::traffic::Exchange;

type Call = Result<(), CdpError>;

/// Lets the request (or its response) go on unchanged.
pub(super) async fn go_on(live: &Chromium, ev: &EventRequestPaused) -> Call {
    let params = ContinueRequestParams::new(ev.request_id.clone());
    live.browser.read().await.execute(params).await.map(|_| ())
}

/// Fails the request with `reason`.
pub(super) async fn fail(live: &Chromium, ev: &EventRequestPaused, reason: ErrorReason) -> Call {
    let params = FailRequestParams::new(ev.request_id.clone(), reason);
    live.browser.read().await.execute(params).await.map(|_| ())
}

/// Answers 404 with a page saying the recording lacks it (an empty 404 would be
/// Chromium's own error page, a failed navigation).
pub(super) async fn not_found(live: &Chromium, ev: &EventRequestPaused) -> Call {
    let mut params = FulfillRequestParams::new(ev.request_id.clone(), 404);
    params.response_headers = Some(vec![HeaderEntry::new(
        "Content-Type",
        "text/html; charset=utf-8",
    )]);
    let page =
        "<!doctype html><title>Not recorded</title><p>This page is not in the recording.</p>";
    params.body = Some(
        base64::engine::general_purpose::STANDARD
            .encode(page)
            .into(),
    );
    live.browser.read().await.execute(params).await.map(|_| ())
}

/// Headers a replay must not repeat: the recorded body is already decoded and whole.
const NOT_REPLAYED: &[&str] = &["content-encoding", "content-length", "transfer-encoding"];

/// Answers the request with a recorded exchange.
pub(super) async fn fulfill(live: &Chromium, ev: &EventRequestPaused, e: &Exchange) -> Call {
    let headers = e
        .headers
        .iter()
        .filter(|(k, _)| !NOT_REPLAYED.iter().any(|n| k.eq_ignore_ascii_case(n)))
        .map(|(k, v)| HeaderEntry::new(k.clone(), v.clone()))
        .collect();
    let mut params = FulfillRequestParams::new(ev.request_id.clone(), i64::from(e.status));
    params.response_headers = Some(headers);
    params.body = Some(
        base64::engine::general_purpose::STANDARD
            .encode(&e.body)
            .into(),
    );
    if !e.status_text.is_empty() {
        params.response_phrase = Some(e.status_text.clone());
    }
    live.browser.read().await.execute(params).await.map(|_| ())
}

/// The request's body, if it has one (form posts, fetches with a body).
pub(super) fn request_body(ev: &EventRequestPaused) -> Option<String> {
    let entries = ev.request.post_data_entries.as_ref()?;
    let mut bytes = Vec::new();
    for entry in entries {
        if let Some(b) = &entry.bytes {
            let part: &str = b.as_ref();
            bytes.extend(
                base64::engine::general_purpose::STANDARD
                    .decode(part)
                    .unwrap_or_default(),
            );
        }
    }
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

/// The exchange a paused response completes. A body the browser cannot give (a
/// redirect's, a response to `HEAD`) is recorded empty.
pub(super) async fn read(live: &Chromium, ev: &EventRequestPaused) -> Exchange {
    let status = ev.response_status_code.unwrap_or(0);
    let body = if (300..400).contains(&status) {
        Vec::new()
    } else {
        let got = live
            .browser
            .read()
            .await
            .execute(GetResponseBodyParams::new(ev.request_id.clone()))
            .await;
        match got {
            Ok(r) if r.result.base64_encoded => base64::engine::general_purpose::STANDARD
                .decode(&r.result.body)
                .unwrap_or_default(),
            Ok(r) => r.result.body.clone().into_bytes(),
            Err(e) => {
                tracing::debug!(url = ev.request.url, error = %e, "no body to record");
                Vec::new()
            }
        }
    };
    Exchange {
        method: ev.request.method.clone(),
        url: ev.request.url.clone(),
        request_body: request_body(ev),
        status: u16::try_from(status).unwrap_or(0),
        status_text: ev.response_status_text.clone().unwrap_or_default(),
        headers: ev
            .response_headers
            .iter()
            .flatten()
            .map(|h| (h.name.clone(), h.value.clone()))
            .collect(),
        body,
    }
}
