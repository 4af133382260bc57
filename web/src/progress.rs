//! `GET /api/campaigns/events`: live progress for the dashboard's campaign list. One
//! stream for every campaign (the per-campaign stream is `live`'s): a `campaigns` event
//! whenever the set of unfinished campaigns, their progress, or the number of campaigns
//! changes (checked every second), so the list shows a campaign that starts, advances or
//! ends without being reloaded. With nothing unfinished the stream ends after its event
//! and the browser's `EventSource` reconnects after the event's `retry` (2 s): an idle
//! server holds no stream open and does no work between reconnections.

use std::convert::Infallible;
use std::time::Duration;

use axum::extract::State;
use axum::response::sse::{Event, KeepAlive, Sse};
use futures::Stream;
use serde_json::json;
use store::{Status, Store};

use crate::AppState;

/// Unfinished campaigns sent per event (the oldest first); the count says how many more.
const MAX_ACTIVE: usize = 50;

/// How soon a browser reconnects once an idle stream ended.
const RETRY: Duration = Duration::from_secs(2);

/// The event's JSON: `{"total", "unfinished", "active": [Campaign…]}` and whether any
/// campaign is unfinished; `None` when the store cannot be read.
async fn snapshot(store: &Store) -> Option<(String, bool)> {
    let ids = store.campaigns_with_status(Status::UNFINISHED).await.ok()?;
    let (_, total) = store.list_campaigns(1, 0).await.ok()?;
    let mut active = Vec::new();
    for id in ids.iter().take(MAX_ACTIVE) {
        // One that ended or vanished between the two reads is simply left out.
        if let Ok(Some(view)) = store.get_campaign(*id).await {
            active.push(view);
        }
    }
    let json = json!({"total": total, "unfinished": ids.len(), "active": active});
    Some((serde_json::to_string(&json).ok()?, !ids.is_empty()))
}

/// `GET /api/campaigns/events`: ends once nothing is unfinished (after saying so), or when
/// the store cannot be read (the dashboard then falls back to polling).
pub async fn campaigns_events(
    State(state): State<AppState>,
) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    let store = state.engine.store().clone();
    let stream = futures::stream::unfold(
        (store, None::<String>, false),
        |(store, last, done)| async move {
            if done {
                return None;
            }
            loop {
                let (json, busy) = snapshot(&store).await?;
                if last.as_deref() != Some(json.as_str()) {
                    let event = Event::default()
                        .event("campaigns")
                        .retry(RETRY)
                        .data(json.clone());
                    return Some((Ok(event), (store, Some(json), !busy)));
                }
                if !busy {
                    return None;
                }
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        },
    );
    Sse::new(stream).keep_alive(KeepAlive::default())
}
