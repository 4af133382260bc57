//! Extractors that turn rejections into [`ApiError`]s, so every 400 has the same shape.

use axum::extract::{FromRequest, FromRequestParts};

use crate::error::ApiError;

/// `Json<T>` whose rejection is an [`ApiError`].
#[derive(FromRequest)]
#[from_request(via(axum::Json), rejection(ApiError))]
pub struct ApiJson<T>(pub T);

/// `Query<T>` whose rejection names the bad parameter.
#[derive(FromRequestParts)]
#[from_request(via(axum::extract::Query), rejection(ApiError))]
pub struct ApiQuery<T>(pub T);
