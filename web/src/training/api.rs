//! `/api/training-runs`: create (202, queued for a server's executor), list, read, pause,
//! resume and cancel (409 from a state the change does not apply to, like campaigns).

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde_json::json;
use store::{RunView, Status};
use trainloop::{RunConfig, RunError};
use uuid::Uuid;

use super::detail::{RunDetail, detail};
use crate::AppState;
use crate::error::{ApiError, field};
use crate::extract::{ApiJson, ApiQuery};
use crate::page::{Page, PageQuery};

pub(super) fn parse_id(id: &str) -> Result<Uuid, ApiError> {
    Uuid::parse_str(id).map_err(|_| field("id", "is not a training run id (a UUID)"))
}

/// trainloop's messages start with the field they are about ("train.split: ...").
fn run_error(e: RunError) -> ApiError {
    match e {
        RunError::Config(m) => match m.split_once(": ") {
            Some((f, rest)) if !f.contains(' ') => field(f, rest),
            _ => field("", m),
        },
        RunError::Store(e) => e.into(),
        RunError::Engine(e) => e.into(),
        other => ApiError::Internal(other.to_string()),
    }
}

/// A serde error's field: its path, or the field an unknown- or missing-field message
/// names at the top level.
fn serde_field(path: &str, message: &str) -> String {
    if path != "." {
        return path.to_string();
    }
    for prefix in ["unknown field `", "missing field `"] {
        if let Some(rest) = message.strip_prefix(prefix)
            && let Some((name, _)) = rest.split_once('`')
        {
            return name.to_string();
        }
    }
    String::new()
}

/// `POST /api/training-runs`: 202 with the id; a server's executor runs it.
pub async fn create(
    State(state): State<AppState>,
    ApiJson(body): ApiJson<serde_json::Value>,
) -> Result<(StatusCode, Json<serde_json::Value>), ApiError> {
    if !body.is_object() {
        return Err(field("", "a training run's configuration is a JSON object"));
    }
    if let Some(path) = tasks::find_nul(&body, "") {
        return Err(field(&path, "contains a NUL character"));
    }
    let cfg: RunConfig = serde_path_to_error::deserialize(body).map_err(|e| {
        let path = e.path().to_string();
        let message = e.into_inner().to_string();
        field(&serde_field(&path, &message), message)
    })?;
    let id = trainloop::executor::submit(state.engine.store(), &cfg)
        .await
        .map_err(run_error)?;
    Ok((
        StatusCode::ACCEPTED,
        Json(json!({"id": id, "state": Status::Queued, "url": format!("/api/training-runs/{id}")})),
    ))
}

/// `GET /api/training-runs`: newest first.
pub async fn list(
    State(state): State<AppState>,
    ApiQuery(p): ApiQuery<PageQuery>,
) -> Result<Json<Page<RunView>>, ApiError> {
    let (limit, offset) = p.checked()?;
    let (items, total) = state.engine.store().page_runs(limit, offset).await?;
    Ok(Json(Page {
        items,
        total,
        limit,
        offset,
    }))
}

/// `GET /api/training-runs/{id}`: config, state, iterations, curves, active campaigns.
pub async fn get(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<RunDetail>, ApiError> {
    let id = parse_id(&id)?;
    Ok(Json(detail(state.engine.store(), id).await?))
}

async fn transition(
    state: &AppState,
    id: &str,
    from: &[Status],
    to: Status,
    verb: &str,
) -> Result<Uuid, ApiError> {
    let id = parse_id(id)?;
    // Resuming hands the run to the servers' executors, whoever started it.
    let managed = to == Status::Queued;
    match state
        .engine
        .store()
        .transition_run(id, from, to, managed)
        .await?
    {
        None => Err(ApiError::NotFound(format!("no training run {id}"))),
        Some((old, false)) => Err(ApiError::Conflict(format!(
            "training run is {old}; cannot {verb} it"
        ))),
        Some(_) => Ok(id),
    }
}

/// `POST /api/training-runs/{id}/pause`: the run stops at the end of its current phase.
pub async fn pause(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<RunDetail>, ApiError> {
    let id = transition(
        &state,
        &id,
        &[Status::Queued, Status::Running],
        Status::Paused,
        "pause",
    )
    .await?;
    Ok(Json(detail(state.engine.store(), id).await?))
}

/// `POST /api/training-runs/{id}/resume`: queued again, for a server's executor, which
/// picks it up at the iteration and phase it stopped in (a failed run retries so too).
pub async fn resume(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<RunDetail>, ApiError> {
    let id = transition(
        &state,
        &id,
        &[Status::Paused, Status::Failed],
        Status::Queued,
        "resume",
    )
    .await?;
    Ok(Json(detail(state.engine.store(), id).await?))
}

/// `POST /api/training-runs/{id}/cancel`: for good, with the run's unfinished campaigns.
pub async fn cancel(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<RunDetail>, ApiError> {
    let id = transition(&state, &id, Status::UNFINISHED, Status::Cancelled, "cancel").await?;
    let d = detail(state.engine.store(), id).await?;
    for c in &d.active_campaigns {
        match state.engine.cancel_campaign(c.id).await {
            // Ended meanwhile: nothing to cancel.
            Ok(()) | Err(engine::EngineError::Conflict(_)) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(Json(detail(state.engine.store(), id).await?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn first_field(e: ApiError) -> String {
        match e {
            ApiError::Invalid(f) => f[0].field.clone(),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn trainloop_messages_become_the_field_they_name() {
        let f = |m: &str| first_field(run_error(RunError::Config(m.into())));
        assert_eq!(f("train.split: unknown split \"dev\""), "train.split");
        assert_eq!(f("model: the trainer cannot train it: bad"), "model");
        // A sentence, not a field: no field named.
        assert_eq!(f("campaign x ended failed, not completed"), "");
    }

    #[test]
    fn serde_errors_name_the_field_at_the_top_level_too() {
        assert_eq!(serde_field("eval_horizon", "invalid value"), "eval_horizon");
        assert_eq!(
            serde_field(".", "unknown field `sneaky`, expected one of `name`"),
            "sneaky"
        );
        assert_eq!(serde_field(".", "missing field `name`"), "name");
        assert_eq!(serde_field(".", "expected a map"), "");
    }
}
