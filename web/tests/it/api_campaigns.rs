//! The campaign endpoints of the REST API (validation, queueing, control, the JSON Lines
//! export) through the real router (no socket) over a real, freshly migrated Postgres
//! database per test.

// The root package's test set-up: one copy for every crate's end-to-end tests.
use crate::support;

use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use serde_json::{Value, json};
use sqlx::PgPool;
use store::Store;
use tower::ServiceExt;

use support::{app, call, error_fields, task};

#[sqlx::test(migrator = "store::MIGRATOR")]
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
        (json!({"answer_checks": 0}), "answer_checks"),
        (json!({"answer_checks": 17}), "answer_checks"),
        (json!({"concurrency": 100000}), "concurrency"),
        (json!({"tasks": {"difficulty": "x"}}), "tasks.difficulty"),
        (json!({"tasks": {"site": "nowhere"}}), "tasks"),
        // Not guessed: an array is no filter, a list of names no object.
        (json!({"tasks": ["shop"]}), "tasks"),
        (json!({"tasks": ["x"]}), "tasks"),
        (json!({"tasks": "shop"}), "tasks"),
        // Every named task must exist, or nothing runs.
        (
            json!({"tasks": {"ids": ["a", "nope", "zilch"]}}),
            "tasks.ids",
        ),
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
    // The unknown ids are listed, the known one is not.
    let (_, resp) = call(
        &app,
        Method::POST,
        "/api/campaigns",
        Some(r#"{"tasks": {"ids": ["a", "nope", "zilch"]}}"#),
    )
    .await;
    let text = resp.to_string();
    assert!(
        text.contains("nope, zilch") && !text.contains("a, nope"),
        "{resp}"
    );
    let (_, resp) = call(
        &app,
        Method::POST,
        "/api/campaigns",
        Some(r#"{"tasks": ["shop"]}"#),
    )
    .await;
    assert!(
        resp.to_string().contains("an object of task filters"),
        "{resp}"
    );
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
    // Its never-run episodes end as cancelled, not pending for ever.
    assert_eq!(
        (
            c["counts"]["pending"].as_i64(),
            c["counts"]["cancelled"].as_i64()
        ),
        (Some(0), Some(6)),
        "{c}"
    );
    let (_, eps) = call(
        &app,
        Method::GET,
        &format!("/api/episodes?campaign={id}&status=cancelled"),
        None,
    )
    .await;
    assert_eq!(eps["total"], 6, "{eps}");
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
/// A finished episode as a runner would store it: one step with token log-probabilities.
fn finished(id: uuid::Uuid, success: bool) -> store::EpisodeRecord {
    use store::{EndReason, EpisodeRecord, StepCore, StepRecord};
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
                ax_tree: None,
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
        judge_time: None,
        politeness_wait: None,
        recorded: None,
        unmatched_requests: None,
        judge_calls: 0,
        judge_facts: 0,
        judge_exhaustive_calls: 0,
        screen: None,
        policy: Some(store::PolicyCard::new("scripted", "builtin").with("note", "test")),
        visited_urls: vec![],
        judge_error: None,
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

#[sqlx::test(migrator = "store::MIGRATOR")]
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
