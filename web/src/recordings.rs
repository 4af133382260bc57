//! `/api/recordings`: recordings of web state as HAR 1.2 files: list them, export one (or
//! one episode's part of it), import a HAR file (`/api/recordings/import`) as a recording
//! campaigns can replay
//! (`"replay": ID` in a campaign; docs/guides/live-web.md).

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::Deserialize;
use store::RecordingView;
use uuid::Uuid;

use crate::AppState;
use crate::error::{ApiError, field};
use crate::extract::ApiQuery;

fn uuid(name: &str, value: &str) -> Result<Uuid, ApiError> {
    Uuid::parse_str(value).map_err(|_| field(name, "is not an id (a UUID)"))
}

/// `GET /api/recordings`: every recording, newest first.
pub async fn list(State(state): State<AppState>) -> Result<Json<Vec<RecordingView>>, ApiError> {
    Ok(Json(state.engine.store().list_recordings().await?))
}

/// The query of `GET /api/recordings/{id}/har`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HarQuery {
    episode: Option<String>,
}

/// `GET /api/recordings/{id}/har[?episode=ID]`: the recording as HAR 1.2.
pub async fn har(
    State(state): State<AppState>,
    Path(id): Path<String>,
    ApiQuery(q): ApiQuery<HarQuery>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let id = uuid("id", &id)?;
    let episode = q.episode.map(|e| uuid("episode", &e)).transpose()?;
    engine::recordings::export_har(state.engine.store(), id, episode)
        .await?
        .map(Json)
        .ok_or_else(|| ApiError::NotFound(format!("no recording {id}")))
}

/// The query of `POST /api/recordings`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ImportQuery {
    name: Option<String>,
}

/// Names longer than this are refused (a label, not a document).
const NAME_MAX: usize = 200;

/// `POST /api/recordings/import[?name=N]` with a HAR 1.2 file as the body: 201 with the new
/// recording's id and how many exchanges it holds.
pub async fn import(
    State(state): State<AppState>,
    ApiQuery(q): ApiQuery<ImportQuery>,
    body: String,
) -> Result<(StatusCode, Json<serde_json::Value>), ApiError> {
    let name = q.name.unwrap_or_else(|| "imported HAR".into());
    if name.trim().is_empty() || name.chars().count() > NAME_MAX {
        return Err(field("name", format!("must be 1 to {NAME_MAX} characters")));
    }
    let har: serde_json::Value = serde_json::from_str(&body)
        .map_err(|e| field("", format!("the body is not a JSON HAR file: {e}")))?;
    let (id, exchanges) = engine::recordings::import_har(state.engine.store(), &name, &har).await?;
    Ok((
        StatusCode::CREATED,
        Json(serde_json::json!({"id": id, "name": name, "exchanges": exchanges})),
    ))
}
