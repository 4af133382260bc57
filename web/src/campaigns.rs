//! `/api/campaigns`: create (202), list, read, pause, resume, cancel, export, the policies
//! its episodes ran under.

use axum::Json;
use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use engine::CampaignSpec;
use futures::StreamExt;
use serde::Deserialize;
use serde_json::json;
use store::export::ExportFilter;
use store::{CampaignView, PolicyUse};
use uuid::Uuid;

use crate::AppState;
use crate::error::{ApiError, field};
use crate::extract::{ApiJson, ApiQuery};
use crate::page::{Page, PageQuery};

fn parse_id(id: &str) -> Result<Uuid, ApiError> {
    Uuid::parse_str(id).map_err(|_| field("id", "is not a campaign id (a UUID)"))
}

/// `POST /api/campaigns`: 202 with the id; the scheduler runs it in the background.
pub async fn create(
    State(state): State<AppState>,
    ApiJson(body): ApiJson<serde_json::Value>,
) -> Result<(StatusCode, Json<serde_json::Value>), ApiError> {
    if !body.is_object() {
        return Err(field("", "a campaign request is a JSON object"));
    }
    if let Some(path) = tasks::find_nul(&body, "") {
        return Err(field(&path, "contains a NUL character"));
    }
    let spec: CampaignSpec = serde_path_to_error::deserialize(body).map_err(|e| {
        let path = e.path().to_string();
        field(
            if path == "." { "" } else { &path },
            e.into_inner().to_string(),
        )
    })?;
    let id = state.engine.create_campaign(spec).await?;
    Ok((
        StatusCode::ACCEPTED,
        Json(
            json!({"id": id, "status": store::Status::Queued, "url": format!("/api/campaigns/{id}")}),
        ),
    ))
}

/// `GET /api/campaigns`.
pub async fn list(
    State(state): State<AppState>,
    ApiQuery(p): ApiQuery<PageQuery>,
) -> Result<Json<Page<CampaignView>>, ApiError> {
    let (limit, offset) = p.checked()?;
    let (items, total) = state.engine.store().list_campaigns(limit, offset).await?;
    Ok(Json(Page {
        items,
        total,
        limit,
        offset,
    }))
}

/// `GET /api/campaigns/{id}`.
pub async fn get(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<CampaignView>, ApiError> {
    let id = parse_id(&id)?;
    let c = state.engine.store().get_campaign(id).await?;
    c.map(Json)
        .ok_or_else(|| ApiError::NotFound(format!("no campaign {id}")))
}

/// `GET /api/campaigns/{id}/policies`: the policies its finished episodes ran under, with
/// counts (more than one: workers ran different models under its policy name).
pub async fn policies(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<Vec<PolicyUse>>, ApiError> {
    let id = parse_id(&id)?;
    let store = state.engine.store();
    if store.get_campaign(id).await?.is_none() {
        return Err(ApiError::NotFound(format!("no campaign {id}")));
    }
    Ok(Json(store.campaign_policies(id).await?))
}

async fn after(state: &AppState, id: Uuid) -> Result<Json<CampaignView>, ApiError> {
    let c = state.engine.store().get_campaign(id).await?;
    c.map(Json)
        .ok_or_else(|| ApiError::NotFound(format!("no campaign {id}")))
}

/// Filters of `GET /api/campaigns/{id}/export`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExportQuery {
    split: Option<String>,
    success: Option<bool>,
}

/// `GET /api/campaigns/{id}/export`: the campaign's finished episodes as JSON Lines, one
/// whole episode (the replay's schema) per line, streamed as they are read.
pub async fn export(
    State(state): State<AppState>,
    Path(id): Path<String>,
    ApiQuery(q): ApiQuery<ExportQuery>,
) -> Result<Response, ApiError> {
    let id = parse_id(&id)?;
    let filter = ExportFilter {
        campaign: Some(id),
        split: crate::tasks::checked_split(q.split)?,
        success: q.success,
    };
    let store = state.engine.store().clone();
    if store.get_campaign(id).await?.is_none() {
        return Err(ApiError::NotFound(format!("no campaign {id}")));
    }
    // A database error mid-stream ends the body early: the client sees a truncated
    // response (no final newline), never a made-up line.
    let lines = store::export::episodes(store, filter).map(|e| {
        e.map(|e| {
            let mut line = serde_json::to_vec(&e).expect("episodes serialize");
            line.push(b'\n');
            line
        })
    });
    Ok((
        [(header::CONTENT_TYPE, "application/x-ndjson")],
        Body::from_stream(lines),
    )
        .into_response())
}

/// `POST /api/campaigns/{id}/pause`.
pub async fn pause(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<CampaignView>, ApiError> {
    let id = parse_id(&id)?;
    state.engine.pause_campaign(id).await?;
    after(&state, id).await
}

/// `POST /api/campaigns/{id}/resume`.
pub async fn resume(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<CampaignView>, ApiError> {
    let id = parse_id(&id)?;
    state.engine.resume_campaign(id).await?;
    after(&state, id).await
}

/// `POST /api/campaigns/{id}/cancel`.
pub async fn cancel(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<CampaignView>, ApiError> {
    let id = parse_id(&id)?;
    state.engine.cancel_campaign(id).await?;
    after(&state, id).await
}
