//! The REST API and the dashboard, over the engine.
//!
//! [`router`] builds the axum app: `/api/...` JSON endpoints (documented in
//! `/api/openapi.json`, see [`openapi`]) and the dashboard at `/`. Handlers are thin: they
//! extract and validate, call one engine or store function, and answer JSON; every error
//! goes through [`ApiError`], whose 400s name the bad field. Limits, timeouts and request
//! tracing are tower layers; what every request must pass (no cross-origin writes, JSON
//! content types, clean parameters) and the security headers are `door`'s middleware.
//!
//! Authentication (API tokens, the dashboard's sign-in cookie) is `auth`'s middleware,
//! which runs after the door's checks; [`Access`] says which routes need a token.
//!
//! `web` depends on `engine`, never the reverse.
// The OpenAPI document's `json!` literals nest deeper than the default limit.
#![recursion_limit = "256"]
#![deny(missing_docs)]

mod analysis;
pub mod auth;
mod campaigns;
mod dashboard;
mod door;
mod episodes;
mod error;
mod extract;
mod live;
pub mod openapi;
mod page;
mod plot;
mod progress;
mod recordings;
mod scripts;
mod session;
mod sessions;
mod tasks;
mod tokens;
mod training;
mod triage;

use std::time::Duration;

use axum::extract::DefaultBodyLimit;
use axum::http::StatusCode;
use axum::routing::{delete, get, post};
use axum::{Json, Router, middleware};
use engine::Engine;
use serde_json::json;
use tower_http::timeout::TimeoutLayer;
use tower_http::trace::TraceLayer;

pub use auth::Access;
pub use door::CONTENT_SECURITY_POLICY;
pub use error::ApiError;

/// What handlers share.
#[derive(Clone)]
pub struct AppState {
    /// The engine.
    pub engine: Engine,
}

/// JSON bodies larger than this are refused (413).
pub const JSON_LIMIT: usize = 2 * 1024 * 1024;
/// Task-suite imports may be larger.
pub const IMPORT_LIMIT: usize = 64 * 1024 * 1024;

async fn health() -> Json<serde_json::Value> {
    Json(json!({"status": "ok"}))
}

async fn policies(
    axum::extract::State(state): axum::extract::State<AppState>,
) -> Json<serde_json::Value> {
    Json(json!({"policies": state.engine.policy_names()}))
}

async fn openapi_json() -> Json<serde_json::Value> {
    Json(openapi::document())
}

async fn no_route() -> ApiError {
    ApiError::NoRoute
}

/// The whole app without authentication ([`Access::Open`]): for tests and for embedding
/// behind something that authenticates. Servers use [`router_with`].
pub fn router(state: AppState) -> Router {
    router_with(state, Access::Open)
}

/// The whole app, asking for API tokens as `access` says.
pub fn router_with(state: AppState, access: Access) -> Router {
    let gate = auth::Gate {
        store: state.engine.store().clone(),
        access,
    };
    let api = Router::new()
        .route("/api/health", get(health))
        .route("/api/policies", get(policies))
        .route("/api/openapi.json", get(openapi_json))
        .route("/api/tasks", post(tasks::create).get(tasks::list))
        .route(
            "/api/tasks/import",
            post(tasks::import).layer(DefaultBodyLimit::max(IMPORT_LIMIT)),
        )
        .route("/api/tasks/{id}", get(tasks::get).delete(tasks::delete))
        .route(
            "/api/campaigns",
            post(campaigns::create).get(campaigns::list),
        )
        .route("/api/campaigns/events", get(progress::campaigns_events))
        .route("/api/campaigns/{id}", get(campaigns::get))
        .route("/api/campaigns/{id}/pause", post(campaigns::pause))
        .route("/api/campaigns/{id}/resume", post(campaigns::resume))
        .route("/api/campaigns/{id}/cancel", post(campaigns::cancel))
        .route("/api/campaigns/{id}/export", get(campaigns::export))
        .route("/api/campaigns/{id}/policies", get(campaigns::policies))
        .route("/api/campaigns/{id}/events", get(live::campaign_events))
        .route("/api/campaigns/{id}/analysis", get(analysis::analysis_json))
        .route("/api/campaigns/{id}/episodes", get(analysis::episodes_json))
        .route("/api/campaigns/{id}/plots", get(analysis::plots_json))
        .route("/api/compare", get(analysis::compare_json))
        .route(
            "/api/training-runs",
            post(training::create).get(training::list),
        )
        .route("/api/training-runs/{id}", get(training::get))
        .route("/api/training-runs/{id}/pause", post(training::pause))
        .route("/api/training-runs/{id}/resume", post(training::resume))
        .route("/api/training-runs/{id}/cancel", post(training::cancel))
        .route("/api/training-runs/{id}/events", get(training::run_events))
        .route("/api/episodes", get(episodes::list))
        .route("/api/episodes/{id}", get(episodes::get))
        .route("/api/blobs/{hash}", get(episodes::blob))
        .route("/api/triage", get(triage::get))
        .route("/api/recordings", get(recordings::list))
        .route(
            "/api/recordings/import",
            post(recordings::import).layer(DefaultBodyLimit::max(IMPORT_LIMIT)),
        )
        .route("/api/recordings/{id}/har", get(recordings::har))
        .route("/api/tokens", get(tokens::list).post(tokens::create))
        .route("/api/tokens/{id}", delete(tokens::revoke))
        .route(
            "/api/session",
            get(session::get)
                .post(session::create)
                .delete(session::delete),
        )
        .route("/api/sessions", post(sessions::open).get(sessions::list))
        .route(
            "/api/sessions/{id}",
            get(sessions::state).delete(sessions::close),
        )
        .route("/api/sessions/{id}/step", post(sessions::step))
        .route("/openenv/health", get(sessions::openenv::health))
        .route("/openenv/metadata", get(sessions::openenv::metadata))
        .route("/openenv/schema", get(sessions::openenv::schema))
        .route("/openenv/reset", post(sessions::openenv::http_reset))
        .route("/openenv/step", post(sessions::openenv::http_step))
        .route("/openenv/state", get(sessions::openenv::http_state))
        .route("/openenv/ws", get(sessions::openenv::ws))
        .route_layer(middleware::from_fn(door::path_params))
        .fallback(no_route);
    Router::new()
        .route("/", get(dashboard::index))
        .route("/assets/app.js", get(dashboard::app_js))
        .route("/assets/style.css", get(dashboard::style))
        .route("/assets/frame.js", get(page::script))
        .route("/assets/{name}", get(scripts::script))
        .route("/assets/training.js", get(training::script))
        .route("/assets/training.css", get(training::style))
        .route("/training-runs", get(training::list_page))
        .route("/training-runs/{id}", get(training::run_page))
        .route("/training-runs/{id}/compare", get(training::compare_page))
        .route("/assets/analysis.css", get(analysis::style))
        .route("/campaigns/{id}/analysis", get(analysis::analysis_page))
        .route("/campaigns/{id}/episodes", get(analysis::episodes_page))
        .route("/campaigns/{id}/plots", get(analysis::plots_page))
        .route("/compare", get(analysis::compare_page))
        .route("/compare/episodes", get(analysis::pair_page))
        .route("/signin", get(session::page))
        .route("/assets/signin.js", get(session::script))
        .route("/metrics", get(live::metrics))
        .merge(api)
        .layer(DefaultBodyLimit::max(JSON_LIMIT))
        .layer(TimeoutLayer::with_status_code(
            StatusCode::REQUEST_TIMEOUT,
            Duration::from_secs(30),
        ))
        .layer(middleware::from_fn_with_state(gate, auth::require))
        .layer(middleware::from_fn(door::guard))
        .layer(TraceLayer::new_for_http())
        .with_state(state)
}

/// Only `/metrics` and `/api/health`: what a `surfgym worker` serves, so workers on other
/// machines can be scraped without exposing the API there.
pub fn metrics_router(state: AppState) -> Router {
    Router::new()
        .route("/metrics", get(live::metrics))
        .route("/api/health", get(health))
        .layer(TimeoutLayer::with_status_code(
            StatusCode::REQUEST_TIMEOUT,
            Duration::from_secs(30),
        ))
        .with_state(state)
}

/// Serves [`router`] (no authentication) on a bound listener until the task is dropped.
pub async fn serve(listener: tokio::net::TcpListener, state: AppState) -> std::io::Result<()> {
    axum::serve(listener, router(state)).await
}

/// Serves [`router_with`] on a bound listener until the task is dropped.
pub async fn serve_with(
    listener: tokio::net::TcpListener,
    state: AppState,
    access: Access,
) -> std::io::Result<()> {
    axum::serve(listener, router_with(state, access)).await
}
