//! The analysis views' JSON: what the pages show, for notebooks and for the tests that
//! check the pages against it.

use axum::Json;
use axum::extract::{Path, State};
use serde::Serialize;
use store::analysis::{
    BreakdownBucket, CompareCounts, CompareRow, Dimension, LatencySummary, StepsBin, TaskStats,
    TimeBucket, breakdown,
};
use store::{CampaignView, EpisodeSummary};
use uuid::Uuid;

use super::params::{CompareQuery, Episodes, EpisodesQuery, PlotsQuery, Tasks, TasksQuery, uuid};
use crate::AppState;
use crate::error::{ApiError, field};
use crate::extract::ApiQuery;
use crate::page::Page;

/// The campaign named by the path, or a 404.
pub(super) async fn campaign(state: &AppState, id: &str) -> Result<CampaignView, ApiError> {
    let id = uuid("id", id, "a campaign id")?;
    state
        .engine
        .store()
        .get_campaign(id)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("no campaign {id}")))
}

/// A campaign's outcomes by each task attribute.
#[derive(Debug, Serialize)]
pub struct Breakdowns {
    /// By website.
    pub site: Vec<BreakdownBucket>,
    /// By difficulty.
    pub difficulty: Vec<BreakdownBucket>,
    /// By split.
    pub split: Vec<BreakdownBucket>,
    /// By tag.
    pub tag: Vec<BreakdownBucket>,
}

/// `GET /api/campaigns/{id}/analysis`.
#[derive(Debug, Serialize)]
pub struct Analysis {
    /// The campaign.
    pub campaign: Uuid,
    /// pass@k's k.
    pub k: i64,
    /// Each task across its rollouts.
    pub tasks: Vec<TaskStats>,
    /// Outcomes by site, difficulty, split and tag.
    pub breakdown: Breakdowns,
}

/// The campaign's rollouts per task (its request's), else 1.
fn rollouts(c: &CampaignView) -> i64 {
    c.config
        .get("rollouts_per_task")
        .and_then(serde_json::Value::as_i64)
        .filter(|k| *k >= 1)
        .unwrap_or(1)
}

pub(super) async fn analysis_of(
    state: &AppState,
    c: &CampaignView,
    t: &Tasks,
) -> Result<Analysis, ApiError> {
    let store = state.engine.store();
    let k = t.k.unwrap_or_else(|| rollouts(c));
    let tasks = store
        .campaign_task_stats(c.id, &t.scope, k, t.sort, t.descending)
        .await?;
    let by = |d| breakdown(&tasks, d);
    Ok(Analysis {
        campaign: c.id,
        k,
        breakdown: Breakdowns {
            site: by(Dimension::Site),
            difficulty: by(Dimension::Difficulty),
            split: by(Dimension::Split),
            tag: by(Dimension::Tag),
        },
        tasks,
    })
}

/// `GET /api/campaigns/{id}/analysis`: per task across its rollouts (success rate,
/// pass@k, mean score and steps, most common end reason) and the breakdowns.
pub async fn analysis(
    State(state): State<AppState>,
    Path(id): Path<String>,
    ApiQuery(q): ApiQuery<TasksQuery>,
) -> Result<Json<Analysis>, ApiError> {
    let t = q.checked()?;
    let c = campaign(&state, &id).await?;
    Ok(Json(analysis_of(&state, &c, &t).await?))
}

pub(super) async fn episodes_of(
    state: &AppState,
    c: &CampaignView,
    e: &Episodes,
) -> Result<Page<EpisodeSummary>, ApiError> {
    let (items, total) = state
        .engine
        .store()
        .search_episodes(c.id, &e.search, e.limit, e.offset)
        .await?;
    Ok(Page {
        items,
        total,
        limit: e.limit,
        offset: e.offset,
    })
}

/// `GET /api/campaigns/{id}/episodes`: a page of the campaign's episodes, searched,
/// filtered and ordered.
pub async fn episodes(
    State(state): State<AppState>,
    Path(id): Path<String>,
    ApiQuery(q): ApiQuery<EpisodesQuery>,
) -> Result<Json<Page<EpisodeSummary>>, ApiError> {
    let e = q.checked()?;
    let c = campaign(&state, &id).await?;
    Ok(Json(episodes_of(&state, &c, &e).await?))
}

/// `GET /api/campaigns/{id}/plots`.
#[derive(Debug, Serialize)]
pub struct Plots {
    /// Finished episodes over the campaign's time.
    pub timeline: Vec<TimeBucket>,
    /// Each phase's latency distribution.
    pub latency: Vec<LatencySummary>,
    /// Finished episodes by steps taken.
    pub steps: Vec<StepsBin>,
    /// Outcomes by difficulty.
    pub difficulty: Vec<BreakdownBucket>,
}

pub(super) async fn plots_of(
    state: &AppState,
    c: &CampaignView,
    buckets: i32,
) -> Result<Plots, ApiError> {
    let store = state.engine.store();
    Ok(Plots {
        timeline: store.campaign_timeline(c.id, buckets).await?,
        latency: store.campaign_latency(c.id).await?,
        steps: store.campaign_steps_histogram(c.id).await?,
        difficulty: store
            .campaign_breakdown_by(c.id, &Default::default(), Dimension::Difficulty)
            .await?,
    })
}

/// `GET /api/campaigns/{id}/plots`: what the plots page draws.
pub async fn plots(
    State(state): State<AppState>,
    Path(id): Path<String>,
    ApiQuery(q): ApiQuery<PlotsQuery>,
) -> Result<Json<Plots>, ApiError> {
    let buckets = q.checked()?;
    let c = campaign(&state, &id).await?;
    Ok(Json(plots_of(&state, &c, buckets).await?))
}

/// `GET /api/compare`.
#[derive(Debug, Serialize)]
pub struct Comparison {
    /// Campaign A.
    pub a: Uuid,
    /// Campaign B.
    pub b: Uuid,
    /// How the tasks split between them.
    pub counts: CompareCounts,
    /// Tasks, those exactly one campaign solved first.
    pub tasks: Page<CompareRow>,
}

pub(super) async fn compare_of(
    state: &AppState,
    a: Uuid,
    b: Uuid,
    limit: i64,
    offset: i64,
) -> Result<Comparison, ApiError> {
    let store = state.engine.store();
    for (name, id) in [("a", a), ("b", b)] {
        if store.get_campaign(id).await?.is_none() {
            return Err(ApiError::NotFound(format!("no campaign {id} ({name})")));
        }
    }
    let (items, counts) = store.compare_campaigns(a, b, limit, offset).await?;
    Ok(Comparison {
        a,
        b,
        tasks: Page {
            items,
            total: counts.tasks,
            limit,
            offset,
        },
        counts,
    })
}

/// `GET /api/compare?a=…&b=…`: two campaigns task by task.
pub async fn compare(
    State(state): State<AppState>,
    ApiQuery(q): ApiQuery<CompareQuery>,
) -> Result<Json<Comparison>, ApiError> {
    let q = q.checked()?;
    let (a, b) = q
        .pair
        .ok_or_else(|| field("a", "a and b are both required"))?;
    Ok(Json(compare_of(&state, a, b, q.limit, q.offset).await?))
}
