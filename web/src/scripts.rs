//! The dashboard's scripts beyond `app.js` (the replay, triage, live progress, keyboard
//! navigation), compiled in like the rest of the dashboard. One route serves them all by
//! name, so a new view adds a line to [`SCRIPTS`] and a `<script>` tag, not a route.

use axum::extract::Path;
use axum::http::header;
use axum::response::{IntoResponse, Response};

use crate::error::ApiError;

/// Name under `/assets/` and source, in the order `index.html` loads them.
const SCRIPTS: &[(&str, &str)] = &[
    ("replay.js", include_str!("../dashboard/replay.js")),
    (
        "replay-a11y.js",
        include_str!("../dashboard/replay-a11y.js"),
    ),
    (
        "replay-policy.js",
        include_str!("../dashboard/replay-policy.js"),
    ),
    ("triage.js", include_str!("../dashboard/triage.js")),
    ("live.js", include_str!("../dashboard/live.js")),
    ("keys.js", include_str!("../dashboard/keys.js")),
];

/// `GET /assets/{name}`: one of [`SCRIPTS`], else 404.
pub async fn script(Path(name): Path<String>) -> Response {
    match SCRIPTS.iter().find(|(n, _)| *n == name) {
        Some((_, src)) => (
            [
                (header::CONTENT_TYPE, "text/javascript; charset=utf-8"),
                (header::CACHE_CONTROL, "no-cache"),
            ],
            *src,
        )
            .into_response(),
        None => ApiError::NotFound(format!("no dashboard asset {name}")).into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::SCRIPTS;

    /// Every script `index.html` loads is served, and every script served is loaded.
    #[test]
    fn index_loads_exactly_the_served_scripts() {
        let index = include_str!("../dashboard/index.html");
        let loaded: Vec<&str> = index
            .split("<script src=\"/assets/")
            .skip(1)
            .filter_map(|s| s.split('"').next())
            .filter(|s| *s != "app.js")
            .collect();
        let served: Vec<&str> = SCRIPTS.iter().map(|(n, _)| *n).collect();
        assert_eq!(loaded, served);
    }
}
