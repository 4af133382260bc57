//! The dashboard's static files, compiled in so it works offline from the one binary.

use std::sync::LazyLock;

use axum::http::header;
use axum::response::IntoResponse;

use crate::page::{Frame, frame};

/// The single page: `index.html` (its body) in the page frame.
static INDEX: LazyLock<String> =
    LazyLock::new(|| frame(&Frame::default(), include_str!("../dashboard/index.html")));

const APP_JS: &str = include_str!("../dashboard/app.js");
const STYLE: &str = include_str!("../dashboard/style.css");

/// The page `GET /` serves.
pub fn index_html() -> &'static str {
    INDEX.as_str()
}

/// `GET /`.
pub async fn index() -> impl IntoResponse {
    (
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        index_html(),
    )
}

/// `GET /assets/app.js`.
pub async fn app_js() -> impl IntoResponse {
    (
        [
            (header::CONTENT_TYPE, "text/javascript; charset=utf-8"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        APP_JS,
    )
}

/// `GET /assets/style.css`.
pub async fn style() -> impl IntoResponse {
    (
        [
            (header::CONTENT_TYPE, "text/css; charset=utf-8"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        STYLE,
    )
}
