//! The REST API through the real router (no socket) over a real, freshly migrated Postgres
//! database per test.

// The root package's test set-up: one copy for every crate's end-to-end tests.
#[path = "../../tests/common/mod.rs"]
mod common;

use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use engine::policy::PolicyRegistry;
use engine::store::Store;
use serde_json::{Value, json};
use sqlx::PgPool;
use tower::ServiceExt;

fn app(pool: PgPool) -> axum::Router {
    let engine = common::new_engine(pool, PolicyRegistry::builtin());
    web::router(web::AppState { engine })
}

/// Posts a task-suite file to the import endpoint and returns its report.
async fn import(app: &axum::Router, uri: &str, body: &str) -> Value {
    let req = Request::post(uri)
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

async fn call(
    app: &axum::Router,
    method: Method,
    uri: &str,
    body: Option<&str>,
) -> (StatusCode, Value) {
    let mut req = Request::builder().method(method).uri(uri);
    if body.is_some() {
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

fn task(id: &str, site: &str) -> Value {
    json!({
        "id": id, "site": site, "instruction": "Find the price of the blue mug",
        "start_url": "http://127.0.0.1:8701/", "tags": ["search"],
        "rubric": {"groups": [{"facts": [{"check": {"type": "answer", "number": 12.5}}]}]},
        "reference_solution": ["answer(\"12.50\")"]
    })
}

fn error_fields(body: &Value) -> Vec<String> {
    body["error"]["fields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["field"].as_str().unwrap().to_string())
        .collect()
}

#[sqlx::test(migrator = "engine::store::MIGRATOR")]
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

#[sqlx::test(migrator = "engine::store::MIGRATOR")]
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

#[sqlx::test(migrator = "engine::store::MIGRATOR")]
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
        .body(Body::from("x"))
        .unwrap();
    let resp = app.clone().oneshot(req).await.unwrap();
    assert_eq!(resp.status(), StatusCode::BAD_REQUEST);
}

#[sqlx::test(migrator = "engine::store::MIGRATOR")]
async fn campaigns_are_validated_queued_and_controlled(pool: PgPool) {
    let app = app(pool);
    for id in ["a", "b", "c"] {
        call(
            &app,
            Method::POST,
            "/api/tasks",
            Some(&task(id, "shop").to_string()),
        )
        .await;
    }
    let cases = vec![
        (json!({"policy": "gpt-9"}), "policy"),
        (json!({"rollouts_per_task": 0}), "rollouts_per_task"),
        (json!({"max_steps": 0}), "max_steps"),
        (json!({"concurrency": 100000}), "concurrency"),
        (json!({"tasks": {"difficulty": "x"}}), "tasks.difficulty"),
        (json!({"tasks": {"site": "nowhere"}}), "tasks"),
        (json!({"rollouts_per_task": "two"}), "rollouts_per_task"),
        (json!({"colour": "red"}), "colour"),
        (json!({"name": ""}), "name"),
        (
            json!({"screen": {"width": 50, "height": 720}}),
            "screen.width",
        ),
        (
            json!({"screen": {"width": 800, "height": 600, "device_scale": 9}}),
            "screen.device_scale",
        ),
        (json!({"screen": {"width": 800}}), "screen"),
        (
            json!({"screen": {"width": 800, "height": 600, "dpi": 2}}),
            "screen.dpi",
        ),
    ];
    for (body, field) in cases {
        let (s, resp) = call(
            &app,
            Method::POST,
            "/api/campaigns",
            Some(&body.to_string()),
        )
        .await;
        assert_eq!(s, StatusCode::BAD_REQUEST, "{body} -> {resp}");
        assert!(
            error_fields(&resp).contains(&field.to_string()),
            "{body}: wanted {field}: {resp}"
        );
    }
    let (_, list) = call(&app, Method::GET, "/api/campaigns", None).await;
    assert_eq!(list["total"], 0, "no campaign stored by a bad request");

    let (s, created) = call(
        &app,
        Method::POST,
        "/api/campaigns",
        Some(
            r#"{"policy": "scripted", "rollouts_per_task": 2, "name": "two each", "screen": {"width": 332, "height": 214, "device_scale": 1.5}}"#,
        ),
    )
    .await;
    assert_eq!(s, StatusCode::ACCEPTED, "{created}");
    let id = created["id"].as_str().unwrap();
    let (s, c) = call(&app, Method::GET, &format!("/api/campaigns/{id}"), None).await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(
        (
            c["status"].as_str(),
            c["total_episodes"].as_i64(),
            c["counts"]["pending"].as_i64()
        ),
        (Some("queued"), Some(6), Some(6))
    );
    assert_eq!(c["config"]["rollouts_per_task"], 2);
    assert_eq!(
        c["config"]["screen"],
        json!({"width": 332, "height": 214, "device_scale": 1.5, "screenshot_scale": 1.0})
    );
    assert_eq!(c["progress"], 0.0);

    let (_, eps) = call(
        &app,
        Method::GET,
        &format!("/api/episodes?campaign={id}"),
        None,
    )
    .await;
    assert_eq!(eps["total"], 6);
    let seeds: std::collections::HashSet<i64> = eps["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["seed"].as_i64().unwrap())
        .collect();
    assert_eq!(seeds.len(), 6, "every episode has its own seed");
    let ep = eps["items"][0]["id"].as_str().unwrap();
    let (s, detail) = call(&app, Method::GET, &format!("/api/episodes/{ep}"), None).await;
    assert_eq!(
        (s, detail["status"].as_str()),
        (StatusCode::OK, Some("pending"))
    );
    assert_eq!(detail["steps"], json!([]), "the step list");
    assert_eq!(
        detail["step_count"], 0,
        "the count has its own key (no duplicate `steps`)"
    );
    let resp = app
        .clone()
        .oneshot(
            Request::get(format!("/api/episodes/{ep}"))
                .body(Body::empty())
                .unwrap(),
        )
        .await
        .unwrap();
    let raw = String::from_utf8(
        axum::body::to_bytes(resp.into_body(), 1 << 20)
            .await
            .unwrap()
            .to_vec(),
    )
    .unwrap();
    assert_eq!(raw.matches("\"steps\"").count(), 1, "{raw}");
    assert!(
        seeds.iter().all(|s| (0..1i64 << 53).contains(s)),
        "seeds are exact in JavaScript"
    );

    let (s, c) = call(
        &app,
        Method::POST,
        &format!("/api/campaigns/{id}/pause"),
        None,
    )
    .await;
    assert_eq!((s, c["status"].as_str()), (StatusCode::OK, Some("paused")));
    let (s, _) = call(
        &app,
        Method::POST,
        &format!("/api/campaigns/{id}/pause"),
        None,
    )
    .await;
    assert_eq!(s, StatusCode::CONFLICT);
    let (_, c) = call(
        &app,
        Method::POST,
        &format!("/api/campaigns/{id}/resume"),
        None,
    )
    .await;
    assert_eq!(c["status"], "queued");
    let (_, c) = call(
        &app,
        Method::POST,
        &format!("/api/campaigns/{id}/cancel"),
        None,
    )
    .await;
    assert_eq!(c["status"], "cancelled");
    assert!(c["finished_at"].is_string());
    let (s, _) = call(
        &app,
        Method::POST,
        &format!("/api/campaigns/{id}/resume"),
        None,
    )
    .await;
    assert_eq!(s, StatusCode::CONFLICT);

    let (s, resp) = call(&app, Method::GET, "/api/campaigns/not-a-uuid", None).await;
    assert_eq!(
        (s, error_fields(&resp)),
        (StatusCode::BAD_REQUEST, vec!["id".to_string()])
    );
    let (s, _) = call(
        &app,
        Method::GET,
        "/api/campaigns/00000000-0000-0000-0000-000000000000",
        None,
    )
    .await;
    assert_eq!(s, StatusCode::NOT_FOUND);
    let (s, resp) = call(&app, Method::GET, "/api/episodes?campaign=zzz", None).await;
    assert_eq!(
        (s, error_fields(&resp)),
        (StatusCode::BAD_REQUEST, vec!["campaign".to_string()])
    );
    let (s, resp) = call(&app, Method::GET, "/api/episodes?status=bogus", None).await;
    assert_eq!(
        (s, error_fields(&resp)),
        (StatusCode::BAD_REQUEST, vec!["status".to_string()])
    );
    let (s, resp) = call(&app, Method::GET, "/api/blobs/xyz", None).await;
    assert_eq!(
        (s, error_fields(&resp)),
        (StatusCode::BAD_REQUEST, vec!["hash".to_string()])
    );
    let (s, _) = call(
        &app,
        Method::GET,
        &format!("/api/blobs/{}", "0".repeat(64)),
        None,
    )
    .await;
    assert_eq!(s, StatusCode::NOT_FOUND);
}

#[sqlx::test(migrator = "engine::store::MIGRATOR")]
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
#[sqlx::test(migrator = "engine::store::MIGRATOR")]
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
    let src: String = include_str!("../src/lib.rs")
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
        if !path.starts_with("/api") && path != "/metrics" {
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

#[sqlx::test(migrator = "engine::store::MIGRATOR")]
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

/// A finished episode as a runner would store it: one step with token log-probabilities.
fn finished(id: uuid::Uuid, success: bool) -> engine::store::EpisodeRecord {
    use engine::store::{EndReason, EpisodeRecord, StepCore, StepRecord};
    EpisodeRecord {
        id,
        end_reason: EndReason::Answered,
        instruction: None,
        final_answer: Some("12.50".into()),
        final_url: None,
        final_screenshot: None,
        final_page: None,
        steps: vec![StepRecord {
            core: StepCore {
                url: "http://127.0.0.1:8701/".into(),
                title: "Shop".into(),
                screenshot: None,
                elements: json!([]),
                events: json!([]),
                tabs: json!([]),
                action: "answer(\"12.50\")".into(),
                thought: None,
                raw_output: Some("answer(\"12.50\")".into()),
                action_error: None,
                logprob: Some(-0.75),
                prompt: Some("Task: find the price".into()),
                observe_ms: 1,
                policy_ms: 1,
                act_ms: 1,
            },
            click: None,
            token_logprobs: vec![-0.5, -0.25],
            token_ids: vec![151_643, 12],
        }],
        verdicts: vec![],
        blobs: vec![],
        success,
        credit: rubrics::Credit::Exact(if success { 1.0 } else { 0.0 }),
        duration: std::time::Duration::from_millis(3),
        judge_calls: 0,
        judge_facts: 0,
        judge_exhaustive_calls: 0,
        screen: None,
        policy: Some(engine::policy::PolicyCard::new("scripted", "builtin").with("note", "test")),
        visited_urls: vec![],
    }
}

/// The body of a JSON Lines response, a value per line.
async fn lines(app: &axum::Router, uri: &str) -> (StatusCode, String, Vec<Value>) {
    let resp = app
        .clone()
        .oneshot(Request::get(uri).body(Body::empty()).unwrap())
        .await
        .unwrap();
    let status = resp.status();
    let kind = resp.headers()["content-type"].to_str().unwrap().to_string();
    let bytes = axum::body::to_bytes(resp.into_body(), 1 << 20)
        .await
        .unwrap();
    let text = String::from_utf8(bytes.to_vec()).unwrap();
    let values = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    (status, kind, values)
}

#[sqlx::test(migrator = "engine::store::MIGRATOR")]
async fn a_campaign_exports_its_finished_episodes_as_json_lines(pool: PgPool) {
    let store = Store::from_pool(pool.clone());
    let app = app(pool);
    let mut test_task = task("b", "shop");
    test_task["split"] = json!("test");
    for t in [task("a", "shop"), test_task, task("c", "shop")] {
        let (s, _) = call(&app, Method::POST, "/api/tasks", Some(&t.to_string())).await;
        assert_eq!(s, StatusCode::CREATED);
    }
    let (s, created) = call(
        &app,
        Method::POST,
        "/api/campaigns",
        Some(r#"{"policy": "scripted", "rollouts_per_task": 1}"#),
    )
    .await;
    assert_eq!(s, StatusCode::ACCEPTED, "{created}");
    let id = uuid::Uuid::parse_str(created["id"].as_str().unwrap()).unwrap();
    // Tasks a and b finish (b unsuccessfully); c is claimed but never finishes.
    let mut finished_n = 0;
    while let Some(e) = store
        .claim_episode(id, "test", std::time::Duration::from_secs(60))
        .await
        .unwrap()
    {
        let task = store
            .get_episode(e.id)
            .await
            .unwrap()
            .unwrap()
            .summary
            .task_id;
        if task == "c" {
            continue;
        }
        assert!(
            store
                .finish_episode("test", &finished(e.id, task == "a"))
                .await
                .unwrap()
        );
        finished_n += 1;
    }
    assert_eq!(finished_n, 2);

    let uri = format!("/api/campaigns/{id}/export");
    let (s, kind, all) = lines(&app, &uri).await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(kind, "application/x-ndjson");
    let tasks: Vec<&str> = all.iter().map(|e| e["task_id"].as_str().unwrap()).collect();
    assert_eq!(
        tasks,
        ["a", "b"],
        "finished episodes only, in campaign order"
    );
    assert_eq!(all[0]["split"], "train");
    assert_eq!(all[1]["split"], "test");
    assert_eq!(all[0]["steps"][0]["token_logprobs"], json!([-0.5, -0.25]));
    assert_eq!(all[0]["steps"][0]["token_ids"], json!([151_643, 12]));
    assert_eq!(
        all[0]["policy"],
        json!({"name": "scripted", "backend": "builtin", "settings": {"note": "test"}}),
        "the policy that ran it"
    );
    assert_eq!(all[0]["steps"][0]["raw_output"], "answer(\"12.50\")");
    assert_eq!(all[0]["steps"][0]["prompt"], "Task: find the price");
    assert_eq!(all[0]["instruction"], "Find the price of the blue mug");
    // Created without a screen: the server's browser options, recorded with the campaign.
    assert_eq!(
        all[0]["screen"],
        json!({"width": 1280, "height": 720, "device_scale": 1.0, "screenshot_scale": 1.0})
    );

    let (_, _, test) = lines(&app, &format!("{uri}?split=test")).await;
    assert_eq!(test.len(), 1);
    assert_eq!(test[0]["task_id"], "b");
    let (_, _, wins) = lines(&app, &format!("{uri}?success=true")).await;
    assert_eq!(wins.len(), 1);
    assert_eq!(wins[0]["task_id"], "a");

    let (s, body) = call(&app, Method::GET, &format!("{uri}?split=dev"), None).await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    assert_eq!(error_fields(&body), ["split"]);
    let (s, body) = call(&app, Method::GET, "/api/campaigns/nope/export", None).await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    assert_eq!(error_fields(&body), ["id"]);
    let other = uuid::Uuid::new_v4();
    let (s, _) = call(
        &app,
        Method::GET,
        &format!("/api/campaigns/{other}/export"),
        None,
    )
    .await;
    assert_eq!(s, StatusCode::NOT_FOUND);
    // The episode list filters by split too.
    let (_, listed) = call(
        &app,
        Method::GET,
        &format!("/api/episodes?campaign={id}&split=test"),
        None,
    )
    .await;
    assert_eq!(listed["total"], 1);
    assert_eq!(listed["items"][0]["split"], "test");
    // The policies its finished episodes ran under, with counts.
    let (s, policies) = call(
        &app,
        Method::GET,
        &format!("/api/campaigns/{id}/policies"),
        None,
    )
    .await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(
        policies,
        json!([{"card": {"name": "scripted", "backend": "builtin", "settings": {"note": "test"}}, "episodes": 2}])
    );
    let (s, _) = call(
        &app,
        Method::GET,
        &format!("/api/campaigns/{other}/policies"),
        None,
    )
    .await;
    assert_eq!(s, StatusCode::NOT_FOUND);
}
