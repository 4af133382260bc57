//! The OpenEnv protocol (meta-pytorch/OpenEnv's `http_server`) over environment sessions,
//! under `/openenv`: what TRL, SkyRL, ART, Unsloth and torchforge clients speak.
//!
//! OpenEnv's HTTP reset and step are stateless (a fresh environment per call); a web
//! episode is not, so here the session's id travels in `metadata.session_id` and back as
//! an extra field of the next request. The WebSocket holds one session per socket, as
//! OpenEnv's does; closing the socket ends its session (stored and judged). Observations
//! use BrowserGym's keys and actions are BrowserGym strings (`{"action_str": ...}`), as
//! OpenEnv's BrowserGym environment has them.

use axum::Json;
use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::extract::{Extension, State};
use axum::response::Response;
use engine::Engine;
use engine::sessions::{Client, Dialect, SessionError, Snapshot};
use serde::Deserialize;
use serde_json::{Value, json};
use uuid::Uuid;

use super::{OpenBody, client_of, parse_body, render};
use crate::AppState;
use crate::auth::Caller;
use crate::error::{ApiError, field};
use crate::extract::{ApiJson, ApiQuery};

/// The WebSocket's path, as `router` routes it (authentication treats its upgrade as a
/// write).
pub const WS_PATH: &str = "/openenv/ws";

/// `GET /openenv/health`.
pub async fn health() -> Json<Value> {
    Json(json!({"status": "healthy"}))
}

/// `GET /openenv/metadata`.
pub async fn metadata() -> Json<Value> {
    Json(json!({
        "name": "surfgym",
        "description": "Web tasks in real Chromium: registered tasks (bundled practice sites, MiniWoB++, imported suites) judged by their rubrics. Reset with a task_id; act with BrowserGym action strings.",
        "version": env!("CARGO_PKG_VERSION"),
        "documentation_url": "docs/reference/sessions.md",
    }))
}

/// `GET /openenv/schema`: the action, observation and state schemas.
pub async fn schema() -> Json<Value> {
    let s = |t: &str| json!({"type": t});
    Json(json!({
        "action": {"title": "BrowserGymAction", "type": "object",
            "properties": {"action_str": {"type": "string", "description": "a BrowserGym action, e.g. click('12')"}},
            "required": ["action_str"]},
        "observation": {"title": "BrowserGymObservation", "type": "object", "properties": {
            "goal": s("string"), "url": s("string"), "text": s("string"), "axtree_txt": s("string"),
            "screenshot": {"type": "string", "contentEncoding": "base64"},
            "open_pages_urls": {"type": "array", "items": s("string")},
            "last_action": s("string"), "last_action_error": s("string"), "error": s("string"),
            "done": s("boolean"), "reward": {"type": ["number", "null"]}}},
        "state": {"title": "State", "type": "object", "properties": {
            "episode_id": s("string"), "step_count": s("integer"), "session_id": s("string"),
            "task_id": s("string"), "max_steps": s("integer")}},
    }))
}

fn reset_request(mut body: Value) -> Result<(Option<Uuid>, OpenBody), ApiError> {
    let obj = body
        .as_object_mut()
        .ok_or_else(|| field("", "the request body is a JSON object"))?;
    // OpenEnv's own fields: `episode_id` names the episode on the client's side only.
    obj.remove("episode_id");
    let previous = match obj.remove("session_id") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => {
            Some(Uuid::parse_str(&s).map_err(|_| field("session_id", "is not a session id"))?)
        }
        Some(_) => return Err(field("session_id", "is a string")),
    };
    if obj.contains_key("dialect") {
        return Err(field(
            "dialect",
            "OpenEnv sessions speak BrowserGym's dialect",
        ));
    }
    obj.insert("dialect".into(), json!(Dialect::Browsergym));
    Ok((previous, parse_body(body)?))
}

fn result(s: &Snapshot) -> Value {
    json!({
        "observation": render::observation(s),
        "reward": s.ending.as_ref().map(|e| e.score),
        "done": s.ending.is_some(),
        "metadata": render::info(s),
    })
}

async fn reset(engine: &Engine, client: &Client, body: Value) -> Result<Snapshot, ApiError> {
    let (previous, open) = reset_request(body)?;
    if let Some(id) = previous {
        match engine.close_session(client, id).await {
            Ok(_) | Err(SessionError::NotFound(_) | SessionError::Ended) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(engine.open_session(client, open.into_request()?).await?)
}

/// The body of `POST /openenv/step`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct StepRequest {
    action: ActionBody,
    session_id: Uuid,
    #[allow(dead_code)]
    timeout_s: Option<f64>,
    #[allow(dead_code)]
    request_id: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ActionBody {
    action_str: String,
    #[serde(default)]
    #[allow(dead_code)]
    metadata: Value,
}

/// `POST /openenv/reset`.
pub async fn http_reset(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    ApiJson(body): ApiJson<Value>,
) -> Result<Json<Value>, ApiError> {
    let snap = reset(&state.engine, &client_of(&caller), body).await?;
    Ok(Json(result(&snap)))
}

/// `POST /openenv/step`.
pub async fn http_step(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    ApiJson(body): ApiJson<Value>,
) -> Result<Json<Value>, ApiError> {
    let req: StepRequest = parse_body(body)?;
    let snap = state
        .engine
        .step_session(&client_of(&caller), req.session_id, &req.action.action_str)
        .await?;
    Ok(Json(result(&snap)))
}

/// The query of `GET /openenv/state`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StateQuery {
    session_id: Uuid,
}

/// `GET /openenv/state?session_id=...`.
pub async fn http_state(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    ApiQuery(q): ApiQuery<StateQuery>,
) -> Result<Json<Value>, ApiError> {
    let s = state
        .engine
        .session_state(&client_of(&caller), q.session_id)?;
    Ok(Json(serde_json::to_value(s).unwrap_or_default()))
}

/// `GET /openenv/ws`: one session per socket.
pub async fn ws(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    upgrade: WebSocketUpgrade,
) -> Response {
    let client = client_of(&caller);
    upgrade
        .max_message_size(crate::JSON_LIMIT)
        .on_upgrade(move |socket| serve_socket(socket, state.engine, client))
}

fn error(code: &str, message: impl Into<String>) -> Value {
    json!({"type": "error", "data": {"message": message.into(), "code": code}})
}

fn api_error_code(e: &ApiError) -> &'static str {
    match e {
        ApiError::Invalid(_) | ApiError::BadJson(_) => "VALIDATION_ERROR",
        ApiError::Capacity(_) => "CAPACITY_REACHED",
        _ => "EXECUTION_ERROR",
    }
}

async fn serve_socket(mut socket: WebSocket, engine: Engine, client: Client) {
    let mut session: Option<Uuid> = None;
    while let Some(Ok(message)) = socket.recv().await {
        let text = match message {
            Message::Text(t) => t.to_string(),
            Message::Binary(b) => String::from_utf8_lossy(&b).into_owned(),
            Message::Close(_) => break,
            Message::Ping(_) | Message::Pong(_) => continue,
        };
        let (answer, close) = answer(&engine, &client, &mut session, &text).await;
        if socket
            .send(Message::Text(answer.to_string().into()))
            .await
            .is_err()
            || close
        {
            break;
        }
    }
    if let Some(id) = session {
        // The socket's session ends with it: stored and judged as it stands.
        let _ = engine.close_session(&client, id).await;
    }
}

/// One message's answer, and whether the socket closes after it.
async fn answer(
    engine: &Engine,
    client: &Client,
    session: &mut Option<Uuid>,
    text: &str,
) -> (Value, bool) {
    let Ok(message) = serde_json::from_str::<Value>(text) else {
        return (error("INVALID_JSON", "the message is not JSON"), false);
    };
    let data = message.get("data").cloned().unwrap_or_else(|| json!({}));
    match message.get("type").and_then(Value::as_str) {
        Some("reset") => {
            let mut data = data;
            if let (Some(obj), Some(id)) = (data.as_object_mut(), *session) {
                obj.insert("session_id".into(), json!(id));
            }
            match reset(engine, client, data).await {
                Ok(snap) => {
                    *session = (snap.ending.is_none()).then_some(snap.session_id);
                    (json!({"type": "observation", "data": result(&snap)}), false)
                }
                Err(e) => {
                    *session = None;
                    (error(api_error_code(&e), e.message()), false)
                }
            }
        }
        Some("step") => {
            let Some(id) = *session else {
                return (
                    error("EXECUTION_ERROR", "send a reset before a step"),
                    false,
                );
            };
            let Some(action) = data.get("action_str").and_then(Value::as_str) else {
                return (
                    error(
                        "VALIDATION_ERROR",
                        "a step's data is {\"action_str\": \"...\"}",
                    ),
                    false,
                );
            };
            match engine.step_session(client, id, action).await {
                Ok(snap) => {
                    if snap.ending.is_some() {
                        *session = None;
                    }
                    (json!({"type": "observation", "data": result(&snap)}), false)
                }
                Err(e) => {
                    if !matches!(e, SessionError::Busy(_)) {
                        *session = None;
                    }
                    let e = ApiError::from(e);
                    (error(api_error_code(&e), e.message()), false)
                }
            }
        }
        Some("state") => match *session {
            Some(id) => match engine.session_state(client, id) {
                Ok(s) => (
                    json!({"type": "state", "data": serde_json::to_value(s).unwrap_or_default()}),
                    false,
                ),
                Err(e) => (error("EXECUTION_ERROR", e.to_string()), false),
            },
            None => (
                json!({"type": "state", "data": {"episode_id": null, "step_count": 0}}),
                false,
            ),
        },
        Some("close") => (json!({"type": "state", "data": {"closed": true}}), true),
        other => (
            error(
                "UNKNOWN_TYPE",
                format!("Unknown message type: {}", other.unwrap_or("")),
            ),
            false,
        ),
    }
}
