//! The REST API as a whole (body limits, the OpenAPI document against the routes, the
//! dashboard) through the real router (no socket) over a real, freshly migrated Postgres
//! database per test.

// The root package's test set-up: one copy for every crate's end-to-end tests.
use crate::support;

use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use sqlx::PgPool;
use tower::ServiceExt;

use support::{app, call};

#[sqlx::test(migrator = "store::MIGRATOR")]
async fn oversized_bodies_are_refused(pool: PgPool) {
    let app = app(pool);
    let big = format!(
        "{{\"instruction\": \"{}\"}}",
        "x".repeat(web::JSON_LIMIT + 10)
    );
    let (s, _) = call(&app, Method::POST, "/api/tasks", Some(&big)).await;
    assert_eq!(s, StatusCode::PAYLOAD_TOO_LARGE);
}

/// The OpenAPI document lists exactly the router's routes: every documented operation
/// reaches a handler (not the no-route fallback), and every route in the router's source
/// is documented.
#[sqlx::test(migrator = "store::MIGRATOR")]
async fn openapi_matches_the_routes(pool: PgPool) {
    let app = app(pool);
    let (s, doc) = call(&app, Method::GET, "/api/openapi.json", None).await;
    assert_eq!(s, StatusCode::OK);
    let mut documented = Vec::new();
    for (path, ops) in doc["paths"].as_object().unwrap() {
        for method in ops.as_object().unwrap().keys() {
            documented.push((method.to_uppercase(), path.clone()));
        }
    }
    for (method, path) in &documented {
        let concrete = path
            .replace("{id}", "00000000-0000-0000-0000-000000000000")
            .replace("{hash}", &"0".repeat(64));
        let m = Method::from_bytes(method.as_bytes()).unwrap();
        let body = (m == Method::POST).then_some("{}");
        let (s, resp) = call(&app, m, &concrete, body).await;
        assert_ne!(s, StatusCode::METHOD_NOT_ALLOWED, "{method} {path}");
        assert_ne!(
            resp["error"]["type"], "no_route",
            "{method} {path} is documented but not routed"
        );
    }
    let src: String = include_str!("../../src/lib.rs")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    let mut routed = Vec::new();
    for (at, _) in src.match_indices(".route(") {
        // The call's text, up to its balanced closing parenthesis.
        let rest = &src[at + ".route(".len()..];
        let mut depth = 1;
        let end = rest
            .char_indices()
            .find(|(_, c)| {
                depth += match c {
                    '(' => 1,
                    ')' => -1,
                    _ => 0,
                };
                depth == 0
            })
            .map(|(i, _)| i)
            .unwrap();
        let call = &rest[..end];
        let path = call.split('"').nth(1).unwrap();
        if !path.starts_with("/api") && !path.starts_with("/openenv/") && path != "/metrics" {
            continue;
        }
        for m in ["get", "post", "delete", "put", "patch"] {
            let direct = call.contains(&format!(" {m}(")) || call.contains(&format!(".{m}("));
            if direct {
                routed.push((m.to_uppercase(), path.to_string()));
            }
        }
    }
    routed.sort();
    routed.dedup();
    documented.sort();
    assert_eq!(routed, documented);
    let (s, resp) = call(&app, Method::GET, "/api/nothing-here", None).await;
    assert_eq!(
        (s, resp["error"]["type"].as_str()),
        (StatusCode::NOT_FOUND, Some("no_route"))
    );
}

#[sqlx::test(migrator = "store::MIGRATOR")]
async fn the_dashboard_is_served(pool: PgPool) {
    let app = app(pool);
    for (uri, mime) in [
        ("/", "text/html"),
        ("/assets/app.js", "text/javascript"),
        ("/assets/style.css", "text/css"),
    ] {
        let resp = app
            .clone()
            .oneshot(Request::get(uri).body(Body::empty()).unwrap())
            .await
            .unwrap();
        assert_eq!(resp.status(), StatusCode::OK, "{uri}");
        assert!(
            resp.headers()["content-type"]
                .to_str()
                .unwrap()
                .starts_with(mime),
            "{uri}"
        );
    }
}
