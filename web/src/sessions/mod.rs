//! `/api/sessions`: environment sessions, episodes an API client drives one action at a
//! time (open, step, state, close, list), and the OpenEnv protocol over them
//! ([`openenv`]). The engine runs them (`engine::sessions`); this module validates the
//! requests, maps callers to clients and renders the answers ([`render`]).

pub mod openenv;
pub mod render;

use axum::Json;
use axum::extract::{Extension, Path, State};
use axum::http::StatusCode;
use engine::sessions::{
    Client, Dialect, ObserveOptions, OpenRequest, SessionError, SessionState, TaskChoice,
};
use serde::Deserialize;
use serde_json::{Value, json};
use tasks::{Task, TaskSpec};
use uuid::Uuid;

use crate::AppState;
use crate::auth::Caller;
use crate::error::{ApiError, field};
use crate::extract::ApiJson;

/// The body of `POST /api/sessions` (and the session part of OpenEnv's reset).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OpenBody {
    task_id: Option<String>,
    task: Option<Value>,
    #[serde(default)]
    seed: u64,
    max_steps: Option<u32>,
    #[serde(default)]
    dialect: Dialect,
    #[serde(default)]
    observe: ObserveOptions,
}

/// The body of a step.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StepBody {
    action: String,
}

/// Who is asking: the token's owner, or the loopback user when the server asks none.
pub fn client_of(caller: &Caller) -> Client {
    match &caller.0 {
        Some(token) => Client {
            key: token.id.to_string(),
            name: if token.name.is_empty() {
                token.prefix.clone()
            } else {
                token.name.clone()
            },
        },
        None => Client::local(),
    }
}

/// A JSON value as `T`, with a 400 naming the bad field.
pub(crate) fn parse_body<T: serde::de::DeserializeOwned>(body: Value) -> Result<T, ApiError> {
    if !body.is_object() {
        return Err(field("", "the request body is a JSON object"));
    }
    if let Some(path) = tasks::find_nul(&body, "") {
        return Err(field(&path, "contains a NUL character"));
    }
    serde_path_to_error::deserialize(body).map_err(|e| {
        let path = e.path().to_string();
        field(
            if path == "." { "" } else { &path },
            e.into_inner().to_string(),
        )
    })
}

impl OpenBody {
    /// The engine's request, the inline task validated.
    pub(crate) fn into_request(self) -> Result<OpenRequest, ApiError> {
        let task = match (self.task_id, self.task) {
            (Some(_), Some(_)) => {
                return Err(field("task", "give task_id or task, not both"));
            }
            (None, None) => {
                return Err(field(
                    "task_id",
                    "is required (a registered task's id), or give the task inline as `task`",
                ));
            }
            (Some(id), None) if id.trim().is_empty() => {
                return Err(field("task_id", "must not be empty"));
            }
            (Some(id), None) => TaskChoice::Registered(id),
            (None, Some(spec)) => TaskChoice::Inline(Box::new(inline_task(spec)?)),
        };
        if let Some(screen) = &self.observe.screen
            && let Some((f, message)) = screen.problems().into_iter().next()
        {
            return Err(field(&format!("observe.screen.{f}"), message));
        }
        Ok(OpenRequest {
            task,
            seed: self.seed,
            max_steps: self.max_steps,
            dialect: self.dialect,
            observe: self.observe,
        })
    }
}

/// An inline task, validated as `POST /api/tasks` validates one, under an id derived from
/// its content (so it can never replace a registered task) and tagged `inline`.
fn inline_task(spec: Value) -> Result<Task, ApiError> {
    let prefixed = |errors: Vec<tasks::FieldError>| {
        ApiError::Invalid(
            errors
                .into_iter()
                .map(|e| tasks::FieldError {
                    field: format!("task.{}", e.field),
                    message: e.message,
                })
                .collect(),
        )
    };
    let digest = store::blob_hash(spec.to_string().as_bytes());
    let mut spec = TaskSpec::from_json(spec).map_err(prefixed)?;
    spec.id = Some(format!("inline-{}", &digest[..16]));
    if !spec.tags.iter().any(|t| t == "inline") {
        spec.tags.push("inline".into());
    }
    Task::try_from(spec).map_err(prefixed)
}

fn parse_id(id: &str) -> Result<Uuid, ApiError> {
    Uuid::parse_str(id).map_err(|_| field("id", "is not a session id (a UUID)"))
}

impl From<SessionError> for ApiError {
    fn from(e: SessionError) -> ApiError {
        let message = e.to_string();
        match e {
            SessionError::NotFound(_) | SessionError::Ended => ApiError::NotFound(message),
            SessionError::Forbidden(_) => ApiError::NotYours(message),
            SessionError::Capacity { .. } | SessionError::Stopping => ApiError::Capacity(message),
            SessionError::Busy(_) => ApiError::Conflict(message),
            SessionError::Invalid { field: f, message } => field(&f, message),
            SessionError::Infra(_) => ApiError::Unavailable(message),
        }
    }
}

/// `POST /api/sessions`: 201 with the first observation.
pub async fn open(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    ApiJson(body): ApiJson<Value>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let request = parse_body::<OpenBody>(body)?.into_request()?;
    let snap = state
        .engine
        .open_session(&client_of(&caller), request)
        .await?;
    Ok((
        StatusCode::CREATED,
        Json(json!({
            "session_id": snap.session_id,
            "episode_id": snap.episode_id,
            "campaign_id": snap.campaign_id,
            "task_id": snap.task_id,
            "observation": render::observation(&snap),
            "info": render::info(&snap),
        })),
    ))
}

/// `POST /api/sessions/{id}/step`.
pub async fn step(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<Value>,
) -> Result<Json<Value>, ApiError> {
    let id = parse_id(&id)?;
    let StepBody { action } = parse_body(body)?;
    let snap = state
        .engine
        .step_session(&client_of(&caller), id, &action)
        .await?;
    Ok(Json(render::step(&snap)))
}

/// `GET /api/sessions/{id}`.
pub async fn state(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
) -> Result<Json<SessionState>, ApiError> {
    let id = parse_id(&id)?;
    Ok(Json(state.engine.session_state(&client_of(&caller), id)?))
}

/// `DELETE /api/sessions/{id}`: ends it now; answers the final step's info.
pub async fn close(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let id = parse_id(&id)?;
    let snap = state.engine.close_session(&client_of(&caller), id).await?;
    Ok(Json(render::step(&snap)))
}

/// `GET /api/sessions`: the caller's open sessions, and the limits.
pub async fn list(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
) -> Json<Value> {
    let limits = state.engine.session_limits();
    Json(json!({
        "items": state.engine.list_sessions(&client_of(&caller)),
        "open_on_server": state.engine.open_sessions(),
        "limits": {
            "max_sessions": limits.max_sessions,
            "sessions_per_token": limits.per_client,
            "idle_secs": limits.idle.as_secs_f64(),
            "step_secs": limits.step.as_secs_f64(),
        },
    }))
}
