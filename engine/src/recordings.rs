//! Recordings of web state between the store's rows and the browser pool's exchanges:
//! HAR 1.2 out (a recording, or one episode's part of it) and in (a file becomes a
//! recording campaigns can replay), and the exchanges an episode replays.

use browser_pool::Exchange;
use serde_json::Value;
use store::{ExchangeRecord, Store};
use tasks::FieldError;
use uuid::Uuid;

use crate::error::EngineError;

/// The store's exchanges as the browser replays them.
pub(crate) fn to_pool(exchanges: Vec<ExchangeRecord>) -> Vec<Exchange> {
    exchanges
        .into_iter()
        .map(|e| Exchange {
            method: e.method,
            url: e.url,
            request_body: e.request_body,
            status: e.status,
            status_text: e.status_text,
            headers: e.headers,
            body: e.body,
        })
        .collect()
}

/// The browser's exchanges as the store keeps them.
pub(crate) fn to_store(exchanges: Vec<Exchange>) -> Vec<ExchangeRecord> {
    exchanges
        .into_iter()
        .map(|e| ExchangeRecord {
            method: e.method,
            url: e.url,
            request_body: e.request_body,
            status: e.status,
            status_text: e.status_text,
            headers: e.headers,
            body: e.body,
        })
        .collect()
}

/// A recording (or `episode`'s exchanges in it) as a HAR 1.2 log; `None` when there is no
/// such recording.
pub async fn export_har(
    store: &Store,
    recording: Uuid,
    episode: Option<Uuid>,
) -> Result<Option<Value>, EngineError> {
    if store.get_recording(recording).await?.is_none() {
        return Ok(None);
    }
    let exchanges = store.recording_exchanges(recording, episode).await?;
    Ok(Some(browser_pool::to_har(&to_pool(exchanges), "surfgym")))
}

/// Stores a HAR 1.2 log as a new recording named `name`; its id and how many exchanges
/// it holds. A log that cannot be replayed is refused naming the entry and field.
pub async fn import_har(
    store: &Store,
    name: &str,
    har: &Value,
) -> Result<(Uuid, usize), EngineError> {
    let exchanges = browser_pool::from_har(har).map_err(|e| {
        let field = match &e {
            browser_pool::HarError::Shape(_) => "log".to_string(),
            browser_pool::HarError::Entry { index, field, .. } => {
                format!("log.entries[{index}].{field}")
            }
        };
        EngineError::Invalid(vec![FieldError {
            field,
            message: e.to_string(),
        }])
    })?;
    let id = Uuid::new_v4();
    let records = to_store(exchanges);
    store.import_recording(id, name, &records).await?;
    Ok((id, records.len()))
}
