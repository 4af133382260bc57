//! Helpers shared by the REST API tests (`api_*.rs`): the router over a test database,
//! requests through it, and the task and error shapes the tests build and read.
// Each test file uses its own part of this module.
#![allow(dead_code)]

use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use policy::PolicyRegistry;
use serde_json::{Value, json};
use sqlx::PgPool;
use tower::ServiceExt;

use crate::common;

pub fn app(pool: PgPool) -> axum::Router {
    let engine = common::new_engine(pool, PolicyRegistry::builtin());
    web::router(web::AppState { engine })
}

/// Posts a task-suite file (declared as JSON Lines) to the import endpoint and returns its
/// report.
pub async fn import(app: &axum::Router, uri: &str, body: &str) -> Value {
    let req = Request::post(uri)
        .header("content-type", "application/x-ndjson")
        .body(Body::from(body.to_string()))
        .unwrap();
    let resp = app.clone().oneshot(req).await.unwrap();
    serde_json::from_slice(
        &axum::body::to_bytes(resp.into_body(), 1 << 20)
            .await
            .unwrap(),
    )
    .unwrap()
}

/// A request as a well-behaved client sends it: writes (body-less ones too) and bodies
/// declare JSON.
pub async fn call(
    app: &axum::Router,
    method: Method,
    uri: &str,
    body: Option<&str>,
) -> (StatusCode, Value) {
    let write = method != Method::GET && method != Method::HEAD;
    let mut req = Request::builder().method(method).uri(uri);
    if body.is_some() || write {
        req = req.header("content-type", "application/json");
    }
    let req = req
        .body(
            body.map(|b| Body::from(b.to_string()))
                .unwrap_or_else(Body::empty),
        )
        .unwrap();
    let resp = app.clone().oneshot(req).await.unwrap();
    let status = resp.status();
    let bytes = axum::body::to_bytes(resp.into_body(), 64 * 1024 * 1024)
        .await
        .unwrap();
    let json = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    (status, json)
}

pub fn task(id: &str, site: &str) -> Value {
    json!({
        "id": id, "site": site, "instruction": "Find the price of the blue mug",
        "start_url": "http://127.0.0.1:8701/", "tags": ["search"],
        "rubric": {"groups": [{"facts": [{"check": {"type": "answer", "number": 12.5}}]}]},
        "reference_solution": ["answer(\"12.50\")"]
    })
}

pub fn error_fields(body: &Value) -> Vec<String> {
    body["error"]["fields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["field"].as_str().unwrap().to_string())
        .collect()
}

/// A raw request with the given headers; the status and the response's JSON.
pub async fn send(
    app: &axum::Router,
    method: Method,
    uri: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (StatusCode, axum::http::HeaderMap, Value) {
    let mut req = Request::builder().method(method).uri(uri);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let resp = app
        .clone()
        .oneshot(req.body(Body::from(body.to_string())).unwrap())
        .await
        .unwrap();
    let status = resp.status();
    let headers = resp.headers().clone();
    let bytes = axum::body::to_bytes(resp.into_body(), 64 * 1024 * 1024)
        .await
        .unwrap();
    (
        status,
        headers,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}
