//! Live views: server-sent events for a running campaign, and `/metrics` for Prometheus.

use std::convert::Infallible;
use std::time::Duration;

use axum::extract::{Path, State};
use axum::http::header;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::Stream;
use uuid::Uuid;

use crate::AppState;
use crate::error::{ApiError, field};

/// `GET /api/campaigns/{id}/events`: a `campaign` event with the campaign's JSON whenever
/// it changes (checked every second), ending after the campaign does.
pub async fn campaign_events(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, ApiError> {
    let id = Uuid::parse_str(&id).map_err(|_| field("id", "is not a campaign id (a UUID)"))?;
    let store = state.engine.store().clone();
    if store.get_campaign(id).await?.is_none() {
        return Err(ApiError::NotFound(format!("no campaign {id}")));
    }
    let stream = futures::stream::unfold(
        (store, None::<String>, false),
        move |(store, last, done)| async move {
            if done {
                return None;
            }
            loop {
                let view = match store.get_campaign(id).await {
                    Ok(Some(v)) => v,
                    // Gone or unreadable: end the stream; the client falls back to polling.
                    _ => return None,
                };
                let json = serde_json::to_string(&view).unwrap_or_default();
                let ended = view.status.is_ended();
                if last.as_deref() != Some(json.as_str()) {
                    let event = Event::default().event("campaign").data(json.clone());
                    return Some((Ok(event), (store, Some(json), ended)));
                }
                if ended {
                    return None;
                }
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        },
    );
    Ok(Sse::new(stream).keep_alive(KeepAlive::default()))
}

/// `GET /metrics`: the engine's counters, gauges and latency histograms.
pub async fn metrics(State(state): State<AppState>) -> Response {
    let mut politeness = String::new();
    if let Some(stats) = state.engine.pool_stats() {
        metrics::METRICS.pool_leased.set(stats.leased as i64);
        metrics::METRICS.pool_capacity.set(stats.capacity as i64);
        let p = stats.politeness;
        politeness = politeness_text(
            [p.context_waits, p.request_waits],
            [p.context_wait_ms, p.request_wait_ms],
            p.retry_afters,
        ) + &robots_text(p.robots_fetches, p.robots_refusals);
    }
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        metrics::METRICS.render()
            + &sessions_text(&state.engine)
            + &politeness
            + &crate::training::metrics_text(state.engine.store()).await,
    )
        .into_response()
}

/// Environment sessions open on this server, and its limit.
/// What politeness per domain made wait (`--per-domain-sessions`, `--per-domain-rps`).
/// `waits` and `wait_ms` of leases, then of requests.
fn politeness_text(waits: [u64; 2], wait_ms: [u64; 2], retry_afters: u64) -> String {
    format!(
        "# HELP surfgym_politeness_waits_total Leases (kind=session) and requests (kind=request) held by politeness per domain.\n\
         # TYPE surfgym_politeness_waits_total counter\n\
         surfgym_politeness_waits_total{{kind=\"session\"}} {}\n\
         surfgym_politeness_waits_total{{kind=\"request\"}} {}\n\
         # HELP surfgym_politeness_wait_seconds_total Time they were held.\n\
         # TYPE surfgym_politeness_wait_seconds_total counter\n\
         surfgym_politeness_wait_seconds_total{{kind=\"session\"}} {:.3}\n\
         surfgym_politeness_wait_seconds_total{{kind=\"request\"}} {:.3}\n\
         # HELP surfgym_politeness_retry_after_total Retry-After answers honoured.\n\
         # TYPE surfgym_politeness_retry_after_total counter\n\
         surfgym_politeness_retry_after_total {}\n",
        waits[0],
        waits[1],
        wait_ms[0] as f64 / 1000.0,
        wait_ms[1] as f64 / 1000.0,
        retry_afters
    )
}

/// What the robots.txt check did (`--robots-txt`).
fn robots_text(fetches: u64, refusals: u64) -> String {
    format!(
        "# HELP surfgym_politeness_robots_fetches_total robots.txt files read (once per site and day).\n\
         # TYPE surfgym_politeness_robots_fetches_total counter\n\
         surfgym_politeness_robots_fetches_total {fetches}\n\
         # HELP surfgym_politeness_robots_refusals_total Documents a robots.txt disallowed, refused before they were requested.\n\
         # TYPE surfgym_politeness_robots_refusals_total counter\n\
         surfgym_politeness_robots_refusals_total {refusals}\n"
    )
}

fn sessions_text(engine: &engine::Engine) -> String {
    format!(
        "# HELP surfgym_sessions_open Environment sessions open on this server.\n\
         # TYPE surfgym_sessions_open gauge\n\
         surfgym_sessions_open {}\n\
         # HELP surfgym_sessions_max The limit on open environment sessions (--max-sessions).\n\
         # TYPE surfgym_sessions_max gauge\n\
         surfgym_sessions_max {}\n",
        engine.open_sessions(),
        engine.session_limits().max_sessions
    )
}
