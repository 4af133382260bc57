//! `POST /api/tasks/import` with the public benchmark files as published: a WebArena
//! config file (one pretty-printed object), the split the tasks land in, the warnings an
//! import gives, and an import that stores nothing answered as an error, line by line.

// The root package's test set-up: one copy for every crate's end-to-end tests.
use crate::support;

use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use serde_json::{Value, json};
use sqlx::PgPool;
use tower::ServiceExt;

use support::{app, call};

async fn post(app: &axum::Router, uri: &str, body: &str) -> (StatusCode, Value) {
    let req = Request::post(uri)
        .header("content-type", "application/x-ndjson")
        .body(Body::from(body.to_string()))
        .unwrap();
    let resp = app.clone().oneshot(req).await.unwrap();
    let status = resp.status();
    let bytes = axum::body::to_bytes(resp.into_body(), 1 << 20)
        .await
        .unwrap();
    (status, serde_json::from_slice(&bytes).unwrap())
}

/// WebArena's `config_files/44.json`, pretty-printed as published.
fn config_44() -> String {
    serde_json::to_string_pretty(&json!({
        "sites": ["gitlab"], "task_id": 44, "require_login": true,
        "storage_state": "./.auth/gitlab_state.json", "start_url": "__GITLAB__",
        "geolocation": null, "intent_template": "Open my todos page", "instantiation_dict": {},
        "intent": "Open my todos page", "require_reset": false,
        "eval": {"eval_types": ["url_match"], "reference_answers": null,
                 "reference_url": "__GITLAB__/dashboard/todos", "program_html": [],
                 "url_note": "GOLD in PRED"},
        "intent_template_id": 303
    }))
    .unwrap()
}

#[sqlx::test(migrator = "store::MIGRATOR")]
async fn a_published_webarena_config_file_imports_as_a_test_task_with_warnings(pool: PgPool) {
    let app = app(pool);
    let uri = "/api/tasks/import?format=webarena&bases=GITLAB=http://gitlab.test:8023";
    let (status, report) = post(&app, uri, &config_44()).await;
    assert_eq!(status, StatusCode::OK, "{report}");
    assert_eq!(
        (report["imported"].clone(), report["failed"].clone()),
        (json!(1), json!(0))
    );
    let warned: Vec<&str> = report["lines"][0]["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["field"].as_str().unwrap())
        .collect();
    assert_eq!(warned, ["require_login", "storage_state"], "{report}");
    let (_, t) = call(&app, Method::GET, "/api/tasks/webarena.44", None).await;
    assert_eq!(t["split"], "test", "a benchmark's tasks are test tasks");
    assert_eq!(
        t["spec"]["rubric"]["groups"][0]["facts"][0]["check"]["includes"],
        "http://gitlab.test:8023/dashboard/todos",
        "{t}"
    );

    // `split` names another split.
    let (status, report) = post(
        &app,
        &format!("{uri}&split=train&replace=true"),
        &config_44(),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{report}");
    let (_, t) = call(&app, Method::GET, "/api/tasks/webarena.44", None).await;
    assert_eq!(t["split"], "train");
    let (status, body) = post(&app, &format!("{uri}&split=dev"), &config_44()).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(body["error"]["fields"][0]["field"], "split", "{body}");
}

#[sqlx::test(migrator = "store::MIGRATOR")]
async fn an_import_that_stores_nothing_is_an_error_listing_each_line(pool: PgPool) {
    let app = app(pool);
    let body = "not json\n{\"instruction\": \"x\", \"start_url\": \"gopher://x\", \"rubric\": {\"groups\": []}}\n";
    let (status, err) = post(&app, "/api/tasks/import", body).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{err}");
    assert_eq!(err["error"]["type"], "invalid_request");
    let fields: Vec<&str> = err["error"]["fields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["field"].as_str().unwrap())
        .collect();
    assert!(fields.contains(&"line 1"), "{fields:?}");
    assert!(fields.contains(&"line 2: start_url"), "{fields:?}");
    let (_, list) = call(&app, Method::GET, "/api/tasks", None).await;
    assert_eq!(list["total"], 0);

    // Every item's id already taken: a conflict.
    let uri = "/api/tasks/import?format=webarena&bases=GITLAB=http://gitlab.test:8023";
    let (status, _) = post(&app, uri, &config_44()).await;
    assert_eq!(status, StatusCode::OK);
    let (status, err) = post(&app, uri, &config_44()).await;
    assert_eq!(status, StatusCode::CONFLICT, "{err}");

    // A MiniWoB++ suite of unknown names stores nothing either.
    let (status, err) = post(
        &app,
        "/api/tasks/import?format=miniwob&bases=MINIWOB=http://127.0.0.1:9",
        "not a task\n",
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{err}");
    assert_eq!(err["error"]["fields"][0]["field"], "line 1: name", "{err}");
}

/// `POST /api/recordings/import` takes a HAR file as a recording, `GET /api/recordings`
/// lists it, `GET /api/recordings/{id}/har` gives it back; a HAR entry that cannot be
/// replayed is a 400 naming it, and stores nothing.
#[sqlx::test(migrator = "store::MIGRATOR")]
async fn a_har_file_imports_as_a_recording_and_exports_back(pool: PgPool) {
    let app = app(pool);
    let json_type = [("content-type", "application/json")];
    let har = json!({"log": {"version": "1.2", "entries": [
        {"request": {"method": "GET", "url": "http://docs.har.test/"},
         "response": {"status": 200, "headers": [{"name": "Content-Type", "value": "text/html"}],
            "content": {"mimeType": "text/html", "text": "<p>hello</p>"}}}]}});
    let (s, _, created) = support::send(
        &app,
        Method::POST,
        "/api/recordings/import?name=docs",
        &json_type,
        &har.to_string(),
    )
    .await;
    assert_eq!(s, StatusCode::CREATED, "{created}");
    assert_eq!(created["exchanges"], 1);
    let id = created["id"].as_str().unwrap().to_string();
    let (s, _, list) = support::send(&app, Method::GET, "/api/recordings", &[], "").await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(list[0]["id"], id.as_str());
    assert_eq!(list[0]["name"], "docs");
    let uri = format!("/api/recordings/{id}/har");
    let (s, _, back) = support::send(&app, Method::GET, &uri, &[], "").await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(
        back["log"]["entries"][0]["response"]["content"]["text"],
        "<p>hello</p>"
    );

    let mut bad = har.clone();
    bad["log"]["entries"][0]["request"]["url"] = json!("not absolute");
    let (s, _, e) = support::send(
        &app,
        Method::POST,
        "/api/recordings/import",
        &json_type,
        &bad.to_string(),
    )
    .await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{e}");
    assert_eq!(
        e["error"]["fields"][0]["field"],
        "log.entries[0].request.url"
    );
    let (_, _, list) = support::send(&app, Method::GET, "/api/recordings", &[], "").await;
    assert_eq!(list.as_array().unwrap().len(), 1, "nothing stored");
    let missing = format!("/api/recordings/{}/har", uuid::Uuid::new_v4());
    let (s, _, _) = support::send(&app, Method::GET, &missing, &[], "").await;
    assert_eq!(s, StatusCode::NOT_FOUND);
}
