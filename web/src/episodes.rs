//! `/api/episodes` and `/api/blobs`: what the replay reads.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use store::{EpisodeDetail, EpisodeFilter, EpisodeSummary, StatusFilter};
use uuid::Uuid;

use crate::AppState;
use crate::error::{ApiError, field};
use crate::extract::ApiQuery;
use crate::page::{Page, PageQuery};

/// Filters and page of `GET /api/episodes`; any other parameter is a 400.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EpisodeQuery {
    campaign: Option<String>,
    task: Option<String>,
    status: Option<String>,
    success: Option<bool>,
    split: Option<String>,
    limit: Option<i64>,
    offset: Option<i64>,
}

/// `GET /api/episodes?campaign=…`.
pub async fn list(
    State(state): State<AppState>,
    ApiQuery(q): ApiQuery<EpisodeQuery>,
) -> Result<Json<Page<EpisodeSummary>>, ApiError> {
    let (limit, offset) = PageQuery {
        limit: q.limit,
        offset: q.offset,
    }
    .checked()?;
    let campaign = q
        .campaign
        .map(|c| {
            Uuid::parse_str(&c).map_err(|_| field("campaign", "is not a campaign id (a UUID)"))
        })
        .transpose()?;
    let status = q
        .status
        .map(|s| {
            s.parse::<StatusFilter>().map_err(|_| {
                field(
                    "status",
                    format!(
                        "must be one of {} (judged: finished and scored; judge_error: finished, \
                         rubric not evaluable)",
                        StatusFilter::words().join(", ")
                    ),
                )
            })
        })
        .transpose()?;
    let filter = EpisodeFilter {
        campaign,
        task: q.task,
        status,
        success: q.success,
        split: crate::tasks::checked_split(q.split)?,
    };
    let (items, total) = state
        .engine
        .store()
        .list_episodes(&filter, limit, offset)
        .await?;
    Ok(Json(Page {
        items,
        total,
        limit,
        offset,
    }))
}

/// `GET /api/episodes/{id}`: steps and verdicts for the replay.
pub async fn get(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<EpisodeDetail>, ApiError> {
    let id = Uuid::parse_str(&id).map_err(|_| field("id", "is not an episode id (a UUID)"))?;
    let e = state.engine.store().get_episode(id).await?;
    e.map(Json)
        .ok_or_else(|| ApiError::NotFound(format!("no episode {id}")))
}

/// `GET /api/blobs/{hash}`: a screenshot; immutable, so cached forever.
pub async fn blob(
    State(state): State<AppState>,
    Path(hash): Path<String>,
) -> Result<Response, ApiError> {
    if hash.len() != 64 || !hash.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(field("hash", "is not a sha256 hex digest"));
    }
    let (mime, bytes) = state
        .engine
        .store()
        .get_blob(&hash)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("no blob {hash}")))?;
    Ok((
        [
            (header::CONTENT_TYPE, mime),
            (
                header::CACHE_CONTROL,
                "public, max-age=31536000, immutable".to_string(),
            ),
        ],
        bytes,
    )
        .into_response())
}
