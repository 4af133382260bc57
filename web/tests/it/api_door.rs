//! What every request must pass before a handler sees it (no cross-origin writes, JSON
//! content types, no typos in parameters or filters, no NULs), and the security headers on
//! every response, through the real router (no socket) over a real, freshly migrated
//! Postgres database per test.

// The root package's test set-up: one copy for every crate's end-to-end tests.
use crate::support;

use axum::http::{Method, StatusCode};
use serde_json::{Value, json};
use sqlx::PgPool;

use support::{app, call, error_fields, send, task};

const HOST: &str = "127.0.0.1:8080";

/// What an attempt is, the headers it sends, and the status it must get.
type Attack<'a> = (&'a str, Vec<(&'a str, &'a str)>, StatusCode);

/// What the database holds that a write could change: tasks and campaigns' statuses.
async fn state(app: &axum::Router) -> (Value, Value) {
    let (_, tasks) = call(app, Method::GET, "/api/tasks?limit=500", None).await;
    let (_, campaigns) = call(app, Method::GET, "/api/campaigns", None).await;
    let ids: Vec<Value> = tasks["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].clone())
        .collect();
    let statuses: Vec<Value> = campaigns["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| json!([c["id"], c["status"], c["counts"]]))
        .collect();
    (json!(ids), json!(statuses))
}

/// Every write route, as a hostile page (or a careless client) would send it: simple
/// requests (form and `no-cors` content types, no content type), and JSON from another
/// origin. Nothing is stored or changed, and each refusal says why.
#[sqlx::test(migrator = "store::MIGRATOR")]
async fn cross_site_and_non_json_writes_are_refused(pool: PgPool) {
    let app = app(pool);
    let (s, _) = call(
        &app,
        Method::POST,
        "/api/tasks",
        Some(&task("kept", "shop").to_string()),
    )
    .await;
    assert_eq!(s, StatusCode::CREATED);
    let (s, c) = call(
        &app,
        Method::POST,
        "/api/campaigns",
        Some(r#"{"policy": "random", "tasks": {"ids": ["kept"]}}"#),
    )
    .await;
    assert_eq!(s, StatusCode::ACCEPTED, "{c}");
    let campaign = c["id"].as_str().unwrap().to_string();
    let before = state(&app).await;

    let new_task = task("planted", "shop").to_string();
    let writes: Vec<(Method, String, String)> = vec![
        (Method::POST, "/api/tasks".into(), new_task.clone()),
        (Method::POST, "/api/tasks/import".into(), new_task.clone()),
        (Method::DELETE, "/api/tasks/kept".into(), String::new()),
        (
            Method::POST,
            "/api/campaigns".into(),
            r#"{"policy": "random"}"#.into(),
        ),
        (
            Method::POST,
            format!("/api/campaigns/{campaign}/pause"),
            String::new(),
        ),
        (
            Method::POST,
            format!("/api/campaigns/{campaign}/cancel"),
            String::new(),
        ),
        (
            Method::POST,
            format!("/api/campaigns/{campaign}/resume"),
            "{}".into(),
        ),
    ];
    let json = ("content-type", "application/json");
    let host = ("host", HOST);
    let attacks: Vec<Attack> = vec![
        (
            "no content type",
            vec![host],
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
        ),
        (
            "no-cors fetch",
            vec![host, ("content-type", "text/plain;charset=UTF-8")],
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
        ),
        (
            "form post",
            vec![host, ("content-type", "application/x-www-form-urlencoded")],
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
        ),
        (
            "multipart form",
            vec![host, ("content-type", "multipart/form-data; boundary=x")],
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
        ),
        (
            "other origin",
            vec![host, json, ("origin", "http://evil.example")],
            StatusCode::FORBIDDEN,
        ),
        (
            "other port of this host",
            vec![host, json, ("origin", "http://127.0.0.1:8701")],
            StatusCode::FORBIDDEN,
        ),
        (
            "sandboxed frame",
            vec![host, json, ("origin", "null")],
            StatusCode::FORBIDDEN,
        ),
        (
            "cross-site fetch metadata",
            vec![host, json, ("sec-fetch-site", "cross-site")],
            StatusCode::FORBIDDEN,
        ),
        (
            "same-site fetch metadata",
            vec![host, json, ("sec-fetch-site", "same-site")],
            StatusCode::FORBIDDEN,
        ),
        // The browser's view wins over a matching Origin.
        (
            "cross-site with a forged-looking origin",
            vec![
                host,
                json,
                ("origin", "http://127.0.0.1:8080"),
                ("sec-fetch-site", "cross-site"),
            ],
            StatusCode::FORBIDDEN,
        ),
    ];
    for (method, uri, body) in &writes {
        for (what, headers, expected) in &attacks {
            let (s, _, resp) = send(&app, method.clone(), uri, headers, body).await;
            assert_eq!(s, *expected, "{what}: {method} {uri}: {resp}");
            let kind = if *expected == StatusCode::FORBIDDEN {
                "cross_origin"
            } else {
                "unsupported_media_type"
            };
            assert_eq!(resp["error"]["type"], kind, "{what}: {method} {uri}");
            let message = resp["error"]["message"].as_str().unwrap();
            assert!(
                message.contains("Content-Type") || message.contains("cross-origin"),
                "{what}: {message}"
            );
        }
    }
    assert_eq!(
        state(&app).await,
        before,
        "a refused write changed something"
    );

    // The dashboard's own requests (same origin, as Chromium labels them) and clients that
    // are not browsers (no Origin) get through; the import takes JSON Lines types.
    let same_origin = [
        host,
        json,
        ("origin", "http://127.0.0.1:8080"),
        ("sec-fetch-site", "same-origin"),
    ];
    let (s, _, resp) = send(
        &app,
        Method::POST,
        &format!("/api/campaigns/{campaign}/pause"),
        &same_origin,
        "{}",
    )
    .await;
    assert!(
        s == StatusCode::OK || s == StatusCode::CONFLICT,
        "{s}: {resp}"
    );
    let (s, _, resp) = send(&app, Method::POST, "/api/tasks", &same_origin, &new_task).await;
    assert_eq!(s, StatusCode::CREATED, "{resp}");
    for (i, mime) in ["application/x-ndjson", "application/jsonl; charset=utf-8"]
        .iter()
        .enumerate()
    {
        let line = task(&format!("imported-{i}"), "shop").to_string();
        let (s, _, resp) = send(
            &app,
            Method::POST,
            "/api/tasks/import",
            &[("content-type", mime)],
            &line,
        )
        .await;
        assert_eq!((s, resp["imported"].clone()), (StatusCode::OK, json!(1)));
    }
    let (s, _, _) = send(
        &app,
        Method::DELETE,
        "/api/tasks/planted",
        &[("content-type", "application/json")],
        "",
    )
    .await;
    assert_eq!(s, StatusCode::NO_CONTENT);
}

/// Every response, the dashboard's and the API's, errors included, carries the security
/// headers; the dashboard has no inline script for its policy to forbid.
#[sqlx::test(migrator = "store::MIGRATOR")]
async fn every_response_carries_the_security_headers(pool: PgPool) {
    let app = app(pool);
    for (method, uri, headers) in [
        (Method::GET, "/", vec![]),
        (Method::GET, "/assets/app.js", vec![]),
        (Method::GET, "/api/health", vec![]),
        (Method::GET, "/api/tasks/nothing", vec![]),
        (Method::GET, "/api/nowhere", vec![]),
        (Method::GET, "/metrics", vec![]),
        (
            Method::POST,
            "/api/tasks",
            vec![("content-type", "text/plain")],
        ),
    ] {
        let (_, h, _) = send(&app, method.clone(), uri, &headers, "").await;
        let csp = h["content-security-policy"].to_str().unwrap();
        assert_eq!(csp, web::CONTENT_SECURITY_POLICY, "{method} {uri}");
        assert!(
            csp.contains("script-src 'self'") && !csp.contains("unsafe-inline"),
            "{csp}"
        );
        assert!(csp.contains("frame-ancestors 'none'"), "{csp}");
        assert_eq!(h["x-frame-options"], "DENY", "{method} {uri}");
        assert_eq!(h["x-content-type-options"], "nosniff", "{method} {uri}");
    }
    let html = include_str!("../../dashboard/index.html").to_lowercase();
    for (at, _) in html.match_indices("<script") {
        let tag = &html[at..at + html[at..].find('>').unwrap()];
        assert!(tag.contains(" src="), "an inline script: {tag}");
        assert!(
            html[at..].starts_with(&format!("{tag}></script>")),
            "a script with a body: {tag}"
        );
    }
    for handler in [" onclick=", " onload=", " onerror=", "javascript:"] {
        assert!(!html.contains(handler), "inline handler {handler}");
    }
}

/// A typo in a list's query or a campaign's task filter is a 400 naming it, not a run or a
/// list of everything.
#[sqlx::test(migrator = "store::MIGRATOR")]
async fn unknown_parameters_and_filter_keys_are_named(pool: PgPool) {
    let app = app(pool);
    for id in ["a", "b"] {
        call(
            &app,
            Method::POST,
            "/api/tasks",
            Some(&task(id, if id == "a" { "shop" } else { "wiki" }).to_string()),
        )
        .await;
    }
    let id = "00000000-0000-0000-0000-000000000000";
    for (uri, name) in [
        ("/api/tasks?sitee=shop".to_string(), "sitee"),
        ("/api/tasks?site=shop&limt=1".to_string(), "limt"),
        ("/api/episodes?sucess=true".to_string(), "sucess"),
        ("/api/episodes?limit=5&campain=x".to_string(), "campain"),
        ("/api/campaigns?ofset=1".to_string(), "ofset"),
        (format!("/api/campaigns/{id}/export?succes=true"), "succes"),
    ] {
        let (s, resp) = call(&app, Method::GET, &uri, None).await;
        assert_eq!(s, StatusCode::BAD_REQUEST, "{uri}: {resp}");
        assert_eq!(error_fields(&resp), vec![name.to_string()], "{uri}: {resp}");
        assert!(
            resp["error"]["message"]
                .as_str()
                .unwrap()
                .contains("not a parameter"),
            "{resp}"
        );
    }
    let (s, resp) = call(
        &app,
        Method::POST,
        "/api/tasks/import?formt=webarena",
        Some(""),
    )
    .await;
    assert_eq!(
        (s, error_fields(&resp)),
        (StatusCode::BAD_REQUEST, vec!["formt".to_string()])
    );
    // Known parameters still filter.
    let (s, resp) = call(&app, Method::GET, "/api/tasks?site=shop&limit=5", None).await;
    assert_eq!((s, resp["total"].clone()), (StatusCode::OK, json!(1)));

    let (s, resp) = call(
        &app,
        Method::POST,
        "/api/campaigns",
        Some(r#"{"tasks": {"sitee": "shop"}}"#),
    )
    .await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{resp}");
    assert_eq!(error_fields(&resp), vec!["tasks.sitee".to_string()]);
    let (_, list) = call(&app, Method::GET, "/api/campaigns", None).await;
    assert_eq!(list["total"], 0, "a campaign was created: {list}");
}

/// A NUL character (or invalid UTF-8) in a path or query parameter is a 400 naming it; the
/// database never sees it.
#[sqlx::test(migrator = "store::MIGRATOR")]
async fn nul_in_parameters_is_a_400_naming_them(pool: PgPool) {
    let app = app(pool);
    call(
        &app,
        Method::POST,
        "/api/tasks",
        Some(&task("a", "shop").to_string()),
    )
    .await;
    for (method, uri, name) in [
        (Method::GET, "/api/tasks/a%00b", "id"),
        (Method::DELETE, "/api/tasks/a%00", "id"),
        (Method::GET, "/api/tasks/%FF", "id"),
        (Method::GET, "/api/tasks?site=%00", "site"),
        (Method::GET, "/api/tasks?tag=x%00y", "tag"),
        (Method::GET, "/api/episodes?task=%00", "task"),
        (Method::GET, "/api/tasks?site=%C3", "site"),
        (Method::GET, "/api/campaigns/%00", "id"),
        (Method::GET, "/api/blobs/%00", "hash"),
    ] {
        let (s, resp) = call(&app, method.clone(), uri, None).await;
        assert_eq!(s, StatusCode::BAD_REQUEST, "{method} {uri}: {resp}");
        assert_eq!(error_fields(&resp), vec![name.to_string()], "{uri}");
    }
    let (s, _) = call(&app, Method::GET, "/api/tasks/a", None).await;
    assert_eq!(s, StatusCode::OK, "the NUL delete removed the task");
}
