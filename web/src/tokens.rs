//! `/api/tokens`: create, list and revoke API tokens (scope `admin`; the CLI's
//! `surfgym token` does the same against the database).

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use store::{Scope, TokenView};

use crate::AppState;
use crate::error::{ApiError, field};
use crate::extract::ApiJson;

/// The body of `POST /api/tokens`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewToken {
    scope: String,
    #[serde(default)]
    name: String,
}

/// A token just created: the only time its secret is shown.
#[derive(Debug, Serialize)]
pub struct Created {
    /// The secret, for `Authorization: Bearer`.
    token: String,
    #[serde(flatten)]
    view: TokenView,
}

/// Names longer than this are refused (a label, not a document).
const NAME_MAX: usize = 200;

/// `POST /api/tokens`: 201 with the secret (shown once).
pub async fn create(
    State(state): State<AppState>,
    ApiJson(body): ApiJson<NewToken>,
) -> Result<(StatusCode, Json<Created>), ApiError> {
    let scope: Scope = body.scope.parse().map_err(|e: String| field("scope", e))?;
    if body.name.chars().count() > NAME_MAX {
        return Err(field(
            "name",
            format!("is longer than {NAME_MAX} characters"),
        ));
    }
    let (view, token) = state.engine.store().create_token(scope, &body.name).await?;
    Ok((StatusCode::CREATED, Json(Created { token, view })))
}

/// `GET /api/tokens`: every token (never a secret), newest first.
pub async fn list(State(state): State<AppState>) -> Result<Json<Vec<TokenView>>, ApiError> {
    Ok(Json(state.engine.store().list_tokens().await?))
}

/// `DELETE /api/tokens/{id}`: revokes the token with this id (or unique prefix).
pub async fn revoke(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<TokenView>, ApiError> {
    state
        .engine
        .store()
        .revoke_token(&id)
        .await?
        .map(Json)
        .ok_or_else(|| ApiError::NotFound(format!("no token {id}")))
}
