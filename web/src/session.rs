//! The dashboard's sign-in: a page where the user pastes a token, and `/api/session`,
//! which checks it and keeps it in an `HttpOnly`, `SameSite=Strict` cookie (`Secure`
//! beyond loopback) that the dashboard's pages and fetches then carry.

use std::sync::LazyLock;

use axum::Json;
use axum::extract::{Extension, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::json;
use store::TokenView;

use crate::AppState;
use crate::auth::{Access, COOKIE, Caller};
use crate::error::ApiError;
use crate::extract::ApiJson;

/// The sign-in page: `signin.html` (its body) in the page frame.
static SIGNIN: LazyLock<String> = LazyLock::new(|| {
    crate::page::frame(
        &crate::page::Frame {
            title: Some("Sign in"),
            ..Default::default()
        },
        include_str!("../dashboard/signin.html"),
    )
});
const SIGNIN_JS: &str = include_str!("../dashboard/signin.js");
/// How long a browser keeps the cookie (the token may be revoked sooner).
const MAX_AGE_SECS: u64 = 7 * 24 * 3600;

/// The body of `POST /api/session`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SignIn {
    token: String,
}

fn set_cookie(access: Access, value: &str, max_age: u64) -> String {
    let secure = if access == Access::Everything {
        "; Secure"
    } else {
        ""
    };
    format!("{COOKIE}={value}; Path=/; HttpOnly; SameSite=Strict; Max-Age={max_age}{secure}")
}

/// `GET /api/session`: the server's mode and the token this browser (or client) is
/// signed in with, if any.
pub async fn get(
    Extension(access): Extension<Access>,
    Extension(Caller(token)): Extension<Caller>,
) -> Json<serde_json::Value> {
    Json(json!({"access": access.as_str(), "token": token}))
}

/// `POST /api/session`: signs in with a token (any scope); 401 when it is not valid.
pub async fn create(
    State(state): State<AppState>,
    Extension(access): Extension<Access>,
    ApiJson(body): ApiJson<SignIn>,
) -> Result<Response, ApiError> {
    let secret = body.token.trim();
    // The cookie holds the token: only what a token can be may go into a header.
    let plausible = secret.starts_with(store::TOKEN_PREFIX)
        && secret
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    let token: Option<TokenView> = if plausible {
        state.engine.store().authenticate_token(secret).await?
    } else {
        None
    };
    let Some(token) = token else {
        return Err(ApiError::Unauthorized(
            "the token is not valid (unknown, mistyped or revoked): create one with \
             `surfgym token create --scope read` (or write, to pause and cancel campaigns)"
                .into(),
        ));
    };
    Ok((
        [(header::SET_COOKIE, set_cookie(access, secret, MAX_AGE_SECS))],
        Json(json!({"access": access.as_str(), "token": token})),
    )
        .into_response())
}

/// `DELETE /api/session`: signs out (clears the cookie).
pub async fn delete(Extension(access): Extension<Access>) -> Response {
    (
        [(header::SET_COOKIE, set_cookie(access, "", 0))],
        Json(json!({"access": access.as_str(), "token": null})),
    )
        .into_response()
}

/// The page `GET /signin` serves.
pub fn page_html() -> &'static str {
    SIGNIN.as_str()
}

/// `GET /signin`.
pub async fn page() -> impl IntoResponse {
    (
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        page_html(),
    )
}

/// `GET /assets/signin.js`.
pub async fn script() -> impl IntoResponse {
    (
        [
            (header::CONTENT_TYPE, "text/javascript; charset=utf-8"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        SIGNIN_JS,
    )
}
