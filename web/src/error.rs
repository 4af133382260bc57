//! The API's one error type: a status and a JSON body, chosen in one place.

use axum::Json;
use axum::extract::rejection::{JsonRejection, QueryRejection};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use engine::EngineError;
use serde_json::json;
use store::StoreError;
use tasks::FieldError;

/// An error answered to an API client.
#[derive(Debug)]
pub enum ApiError {
    /// 400: the request names bad fields.
    Invalid(Vec<FieldError>),
    /// 400: the body is not the JSON the endpoint takes.
    BadJson(String),
    /// 413: the body is over the endpoint's limit.
    TooLarge(String),
    /// 403: a write from another origin.
    Forbidden(String),
    /// 401: no API token, or one that is unknown or revoked, where the route needs one.
    Unauthorized(String),
    /// 403: a token whose scope is below the route's.
    InsufficientScope {
        /// The scope the route needs.
        needed: store::Scope,
        /// What to do about it.
        message: String,
    },
    /// 415: a write without the content type its route takes.
    UnsupportedMediaType(String),
    /// 404.
    NotFound(String),
    /// 404: no such route.
    NoRoute,
    /// 409.
    Conflict(String),
    /// 403: another token's environment session.
    NotYours(String),
    /// 429: a limit on open environment sessions.
    Capacity(String),
    /// 503: the browser or the store failed the request.
    Unavailable(String),
    /// 500: logged in full, masked for the client.
    Internal(String),
}

impl ApiError {
    /// The message a client is shown.
    pub(crate) fn message(&self) -> String {
        self.parts().2
    }

    fn parts(&self) -> (StatusCode, &'static str, String) {
        match self {
            ApiError::Invalid(f) => (
                StatusCode::BAD_REQUEST,
                "invalid_request",
                format!(
                    "invalid request: {}",
                    f.iter()
                        .map(ToString::to_string)
                        .collect::<Vec<_>>()
                        .join("; ")
                ),
            ),
            ApiError::BadJson(m) => (StatusCode::BAD_REQUEST, "invalid_json", m.clone()),
            ApiError::TooLarge(m) => (StatusCode::PAYLOAD_TOO_LARGE, "too_large", m.clone()),
            ApiError::Forbidden(m) => (StatusCode::FORBIDDEN, "cross_origin", m.clone()),
            ApiError::Unauthorized(m) => (StatusCode::UNAUTHORIZED, "unauthorized", m.clone()),
            ApiError::InsufficientScope { message, .. } => {
                (StatusCode::FORBIDDEN, "insufficient_scope", message.clone())
            }
            ApiError::UnsupportedMediaType(m) => (
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "unsupported_media_type",
                m.clone(),
            ),
            ApiError::NotFound(m) => (StatusCode::NOT_FOUND, "not_found", m.clone()),
            ApiError::NoRoute => (
                StatusCode::NOT_FOUND,
                "no_route",
                "no such endpoint; see /api/openapi.json".into(),
            ),
            ApiError::Conflict(m) => (StatusCode::CONFLICT, "conflict", m.clone()),
            ApiError::NotYours(m) => (StatusCode::FORBIDDEN, "forbidden", m.clone()),
            ApiError::Capacity(m) => (StatusCode::TOO_MANY_REQUESTS, "capacity", m.clone()),
            ApiError::Unavailable(m) => (StatusCode::SERVICE_UNAVAILABLE, "unavailable", m.clone()),
            ApiError::Internal(_) => (
                StatusCode::INTERNAL_SERVER_ERROR,
                "internal",
                "internal error; the server log has the details".into(),
            ),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let (status, kind, message) = self.parts();
        if let ApiError::Internal(detail) = &self {
            tracing::error!(error = %detail, "internal error answering a request");
        }
        let fields = match &self {
            ApiError::Invalid(f) => f.clone(),
            _ => Vec::new(),
        };
        let mut resp = (
            status,
            Json(json!({"error": {"type": kind, "message": message, "fields": fields}})),
        )
            .into_response();
        let needed = match &self {
            ApiError::Unauthorized(_) => Some(None),
            ApiError::InsufficientScope { needed, .. } => Some(Some(*needed)),
            _ => None,
        };
        if let Some(needed) = needed
            && let Ok(v) = crate::auth::challenge(status, needed).parse()
        {
            resp.headers_mut().insert(header::WWW_AUTHENTICATE, v);
        }
        resp
    }
}

impl From<EngineError> for ApiError {
    fn from(e: EngineError) -> ApiError {
        match e {
            EngineError::Invalid(f) => ApiError::Invalid(f),
            EngineError::NotFound(what) => ApiError::NotFound(format!("{what} not found")),
            EngineError::Conflict(m) => ApiError::Conflict(m),
            other => ApiError::Internal(other.to_string()),
        }
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> ApiError {
        ApiError::from(EngineError::from(e))
    }
}

impl From<JsonRejection> for ApiError {
    fn from(r: JsonRejection) -> ApiError {
        if r.status() == StatusCode::PAYLOAD_TOO_LARGE {
            return ApiError::TooLarge(format!(
                "request body too large (limit {} bytes)",
                crate::JSON_LIMIT
            ));
        }
        ApiError::BadJson(r.body_text())
    }
}

impl From<QueryRejection> for ApiError {
    fn from(r: QueryRejection) -> ApiError {
        // "Failed to deserialize query string: limit: invalid digit found in string"
        let text = r.body_text();
        let detail = text.split_once(": ").map_or(text.as_str(), |(_, d)| d);
        let (field, message) = detail.split_once(": ").unwrap_or(("", detail));
        // "unknown field `sucess`, expected one of ...": a typo, said as such.
        let message = match message.strip_prefix("unknown field ") {
            Some(rest) => format!(
                "is not a parameter of this endpoint ({})",
                rest.split_once(", ").map_or("", |(_, e)| e)
            ),
            None => message.to_string(),
        };
        ApiError::Invalid(vec![FieldError {
            field: field.to_string(),
            message,
        }])
    }
}

/// A field error in one line.
pub fn field(field: &str, message: impl Into<String>) -> ApiError {
    ApiError::Invalid(vec![FieldError {
        field: field.to_string(),
        message: message.into(),
    }])
}
