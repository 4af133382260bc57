//! The task endpoints of the REST API (create, read, list, delete, validation, suite
//! import) through the real router (no socket) over a real, freshly migrated Postgres
//! database per test.

// The root package's test set-up: one copy for every crate's end-to-end tests.
use crate::support;

use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use serde_json::{Value, json};
use sqlx::PgPool;
use tower::ServiceExt;

use support::{app, call, error_fields, import, task};

#[sqlx::test(migrator = "store::MIGRATOR")]
async fn tasks_are_created_read_listed_and_deleted(pool: PgPool) {
    let app = app(pool);
    let (s, body) = call(
        &app,
        Method::POST,
        "/api/tasks",
        Some(&task("mug-price", "shop").to_string()),
    )
    .await;
    assert_eq!(s, StatusCode::CREATED, "{body}");
    assert_eq!(body["id"], "mug-price");
    assert_eq!(body["difficulty"], "easy");
    assert_eq!(
        body["spec"]["rubric"]["groups"][0]["id"], "g1",
        "defaults filled in"
    );

    let (s, body) = call(
        &app,
        Method::POST,
        "/api/tasks",
        Some(&task("mug-price", "shop").to_string()),
    )
    .await;
    assert_eq!(s, StatusCode::CONFLICT);
    assert_eq!(body["error"]["type"], "conflict");

    for (i, site) in ["wiki", "wiki", "booking"].iter().enumerate() {
        let (s, _) = call(
            &app,
            Method::POST,
            "/api/tasks",
            Some(&task(&format!("t{i}"), site).to_string()),
        )
        .await;
        assert_eq!(s, StatusCode::CREATED);
    }
    let (s, body) = call(&app, Method::GET, "/api/tasks/mug-price", None).await;
    assert_eq!((s, body["site"].as_str()), (StatusCode::OK, Some("shop")));

    let (_, body) = call(&app, Method::GET, "/api/tasks?site=wiki", None).await;
    assert_eq!(body["total"], 2);
    let (_, body) = call(&app, Method::GET, "/api/tasks?limit=2&offset=1", None).await;
    let ids: Vec<&str> = body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap())
        .collect();
    assert_eq!((ids, body["total"].as_i64()), (vec!["t0", "t1"], Some(4)));
    let (_, body) = call(
        &app,
        Method::GET,
        "/api/tasks?tag=search&difficulty=easy",
        None,
    )
    .await;
    assert_eq!(body["total"], 4);
    let (_, body) = call(&app, Method::GET, "/api/tasks?tag=nothing", None).await;
    assert_eq!(body["total"], 0);

    let (s, _) = call(&app, Method::DELETE, "/api/tasks/mug-price", None).await;
    assert_eq!(s, StatusCode::NO_CONTENT);
    let (s, body) = call(&app, Method::GET, "/api/tasks/mug-price", None).await;
    assert_eq!(
        (s, body["error"]["type"].as_str()),
        (StatusCode::NOT_FOUND, Some("not_found"))
    );
    let (s, _) = call(&app, Method::DELETE, "/api/tasks/mug-price", None).await;
    assert_eq!(s, StatusCode::NOT_FOUND);
    let (_, body) = call(&app, Method::GET, "/api/tasks", None).await;
    assert_eq!(body["total"], 3);
    // A deleted id can be registered again.
    let (s, _) = call(
        &app,
        Method::POST,
        "/api/tasks",
        Some(&task("mug-price", "shop").to_string()),
    )
    .await;
    assert_eq!(s, StatusCode::CREATED);
}

#[sqlx::test(migrator = "store::MIGRATOR")]
async fn bad_tasks_get_a_400_naming_the_field_and_nothing_is_stored(pool: PgPool) {
    let app = app(pool);
    let with = |f: &str, v: Value| {
        let mut t = task("x", "shop");
        t[f] = v;
        t.to_string()
    };
    let without = |f: &str| {
        let mut t = task("x", "shop");
        t.as_object_mut().unwrap().remove(f);
        t.to_string()
    };
    let cases = vec![
        (with("start_url", json!("ftp://example.com/")), "start_url"),
        (with("start_url", json!("not a url")), "start_url"),
        (without("start_url"), "start_url"),
        (with("instruction", json!("  ")), "instruction"),
        (without("instruction"), "instruction"),
        (without("rubric"), "rubric"),
        (
            with(
                "rubric",
                json!({"groups": [{"facts": [{"check": {"type": "url", "regex": "(("}}]}]}),
            ),
            "rubric.groups[0].facts[0].check.regex",
        ),
        (
            with(
                "rubric",
                json!({"groups": [{"facts": [{"check": {"type": "teleport"}}]}]}),
            ),
            "rubric.groups[0].facts[0].check.type",
        ),
        (with("difficulty", json!("impossible")), "difficulty"),
        (with("split", json!("dev")), "split"),
        (with("id", json!("Has Spaces")), "id"),
        (with("tags", json!("not-a-list")), "tags"),
        (with("max_steps", json!(100000)), "max_steps"),
        (
            with(
                "screen",
                json!({"width": 332, "height": 214, "screenshot_scale": 2}),
            ),
            "screen.screenshot_scale",
        ),
        (
            with("reference_solution", json!(["clik(3)"])),
            "reference_solution[0]",
        ),
        (with("unexpected", json!(1)), "unexpected"),
        (
            with("instruction", json!("find \u{0000} it")),
            "instruction",
        ),
        (
            with(
                "rubric",
                json!({"groups": [{"facts": [{"check": {"type": "page_text", "contains": "a\u{0000}"}}]}]}),
            ),
            "rubric.groups[0].facts[0].check.contains",
        ),
    ];
    for (body, field) in cases {
        let (s, resp) = call(&app, Method::POST, "/api/tasks", Some(&body)).await;
        assert_eq!(s, StatusCode::BAD_REQUEST, "{body} -> {resp}");
        assert_eq!(resp["error"]["type"], "invalid_request");
        let fields = error_fields(&resp);
        assert!(
            fields.contains(&field.to_string()),
            "{body}: wanted {field}, got {fields:?}"
        );
        assert!(resp["error"]["message"].as_str().unwrap().contains(field));
    }
    let (s, resp) = call(&app, Method::POST, "/api/tasks", Some("{not json")).await;
    assert_eq!(
        (s, resp["error"]["type"].as_str()),
        (StatusCode::BAD_REQUEST, Some("invalid_json"))
    );
    let (s, resp) = call(&app, Method::POST, "/api/tasks", Some("[1,2]")).await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{resp}");
    let (_, list) = call(&app, Method::GET, "/api/tasks", None).await;
    assert_eq!(list["total"], 0, "nothing was stored");

    let (s, resp) = call(&app, Method::GET, "/api/tasks?difficulty=extreme", None).await;
    assert_eq!(
        (s, error_fields(&resp)),
        (StatusCode::BAD_REQUEST, vec!["difficulty".to_string()])
    );
    let (s, resp) = call(&app, Method::GET, "/api/tasks?limit=abc", None).await;
    assert_eq!(
        (s, error_fields(&resp)),
        (StatusCode::BAD_REQUEST, vec!["limit".to_string()])
    );
    let (s, resp) = call(&app, Method::GET, "/api/tasks?limit=100000", None).await;
    assert_eq!(
        (s, error_fields(&resp)),
        (StatusCode::BAD_REQUEST, vec!["limit".to_string()])
    );
}

#[sqlx::test(migrator = "store::MIGRATOR")]
async fn import_keeps_good_lines_and_reports_bad_ones(pool: PgPool) {
    let app = app(pool);
    let body = format!(
        "{}\nnot json\n\n{}\n{}\n{}\n",
        task("a", "shop"),
        json!({"instruction": "x", "start_url": "gopher://x", "rubric": {"groups": []}}),
        task("b", "wiki"),
        task("a", "shop"),
    );
    let req = Request::post("/api/tasks/import")
        .header("content-type", "application/x-ndjson")
        .body(Body::from(body.clone()))
        .unwrap();
    let resp = app.clone().oneshot(req).await.unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    let report: Value = serde_json::from_slice(
        &axum::body::to_bytes(resp.into_body(), 1 << 20)
            .await
            .unwrap(),
    )
    .unwrap();
    assert_eq!(
        (report["imported"].as_i64(), report["failed"].as_i64()),
        (Some(2), Some(3)),
        "{report}"
    );
    let lines = report["lines"].as_array().unwrap();
    let by_line: Vec<(i64, &str)> = lines
        .iter()
        .map(|l| (l["line"].as_i64().unwrap(), l["status"].as_str().unwrap()))
        .collect();
    assert_eq!(
        by_line,
        vec![
            (1, "imported"),
            (2, "error"),
            (4, "error"),
            (5, "imported"),
            (6, "error")
        ]
    );
    let line4: Vec<&str> = lines[2]["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["field"].as_str().unwrap())
        .collect();
    assert!(
        line4.contains(&"start_url") && line4.contains(&"rubric.groups"),
        "{line4:?}"
    );
    assert!(
        lines[4]["errors"][0]["message"]
            .as_str()
            .unwrap()
            .contains("already exists")
    );
    let (_, list) = call(&app, Method::GET, "/api/tasks", None).await;
    assert_eq!(list["total"], 2);

    // replace=true overwrites instead of rejecting.
    let report = import(
        &app,
        "/api/tasks/import?replace=true",
        &task("a", "booking").to_string(),
    )
    .await;
    assert_eq!(report["imported"], 1);
    let (_, a) = call(&app, Method::GET, "/api/tasks/a", None).await;
    assert_eq!(a["site"], "booking");

    let req = Request::post("/api/tasks/import")
        .header("content-type", "application/x-ndjson")
        .body(Body::from("\n\n"))
        .unwrap();
    assert_eq!(
        app.clone().oneshot(req).await.unwrap().status(),
        StatusCode::BAD_REQUEST
    );

    // Public formats, through the same endpoint.
    let wv = r#"{"web_name": "Apple", "id": "Apple--0", "ques": "Find the price of the MacBook Air.", "web": "https://www.apple.com/"}"#;
    let report = import(&app, "/api/tasks/import?format=webvoyager", wv).await;
    assert_eq!(report["lines"][0]["id"], "webvoyager.apple-0", "{report}");
    let wa = r#"[{"task_id": 44, "sites": ["gitlab"], "start_url": "__GITLAB__", "intent": "Open my todos page",
        "eval": {"eval_types": ["url_match"], "reference_url": "__GITLAB__/dashboard/todos"}}]"#;
    let report = import(
        &app,
        "/api/tasks/import?format=webarena&bases=GITLAB=http://gitlab.test:8023",
        wa,
    )
    .await;
    assert_eq!(report["imported"], 1, "{report}");
    let (_, t) = call(&app, Method::GET, "/api/tasks/webarena.44", None).await;
    assert_eq!(t["start_url"], "http://gitlab.test:8023/");
    // The MiniWoB++ suite: task names, one per line.
    let report = import(
        &app,
        "/api/tasks/import?format=miniwob&bases=MINIWOB=http://127.0.0.1:9",
        "click-test\n# a comment\nnot a task\n",
    )
    .await;
    assert_eq!(
        (report["imported"].clone(), report["failed"].clone()),
        (json!(1), json!(1)),
        "{report}"
    );
    assert_eq!(report["lines"][1]["line"], 3, "{report}");
    assert_eq!(report["lines"][1]["errors"][0]["field"], "name", "{report}");
    let (_, t) = call(&app, Method::GET, "/api/tasks/miniwob.click-test", None).await;
    assert_eq!(t["start_url"], "http://127.0.0.1:9/miniwob/click-test.html");
    assert_eq!(
        t["spec"]["rubric"]["groups"][0]["facts"][0]["check"]["type"], "miniwob",
        "{t}"
    );
    let req = Request::post("/api/tasks/import?format=csv")
        .header("content-type", "application/x-ndjson")
        .body(Body::from("x"))
        .unwrap();
    let resp = app.clone().oneshot(req).await.unwrap();
    assert_eq!(resp.status(), StatusCode::BAD_REQUEST);
}
