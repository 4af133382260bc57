//! Episodes whose rubric could not be evaluated (`judge_error`): listed as such, and left
//! out of exports (they have no outcome to learn from), over a real Postgres database.

// The root package's test set-up: one copy for every crate's end-to-end tests.
use crate::support;

use axum::http::{Method, StatusCode};
use sqlx::PgPool;
use store::EpisodeStatus;

use support::{app, call, task};

#[sqlx::test(migrator = "store::MIGRATOR")]
async fn judge_errors_are_listed_apart_and_not_exported(pool: PgPool) {
    let app = app(pool.clone());
    let (s, _) = call(
        &app,
        Method::POST,
        "/api/tasks",
        Some(&task("t", "shop").to_string()),
    )
    .await;
    assert_eq!(s, StatusCode::CREATED);
    let (s, c) = call(
        &app,
        Method::POST,
        "/api/campaigns",
        Some(r#"{"policy": "random", "tasks": {"ids": ["t"]}, "rollouts_per_task": 3}"#),
    )
    .await;
    assert_eq!(s, StatusCode::ACCEPTED, "{c}");
    let campaign = c["id"].as_str().unwrap().to_string();
    // Finish two of the three episodes by hand, as the runner would store them: one
    // judged (a failure), one whose rubric the browser rejected.
    let ids: Vec<(uuid::Uuid,)> =
        sqlx::query_as("SELECT id FROM episodes WHERE campaign_id = $1::uuid ORDER BY rollout")
            .bind(&campaign)
            .fetch_all(&pool)
            .await
            .unwrap();
    sqlx::query(
        "UPDATE episodes SET status = $2, success = false, score = 0, \
         finished_at = now() WHERE id = $1",
    )
    .bind(ids[0].0)
    .bind(EpisodeStatus::Finished)
    .execute(&pool)
    .await
    .unwrap();
    sqlx::query(
        "UPDATE episodes SET status = $2, judge_error = 'invalid selector `a[`', \
         finished_at = now() WHERE id = $1",
    )
    .bind(ids[1].0)
    .bind(EpisodeStatus::Finished)
    .execute(&pool)
    .await
    .unwrap();

    let listed = |status: &'static str| {
        let app = app.clone();
        let campaign = campaign.clone();
        async move {
            let (s, page) = call(
                &app,
                Method::GET,
                &format!("/api/episodes?campaign={campaign}&status={status}"),
                None,
            )
            .await;
            assert_eq!(s, StatusCode::OK, "{page}");
            page["items"]
                .as_array()
                .unwrap()
                .iter()
                .map(|e| e["id"].as_str().unwrap().to_string())
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(listed("finished").await.len(), 2);
    assert_eq!(listed("judged").await, vec![ids[0].0.to_string()]);
    assert_eq!(listed("judge_error").await, vec![ids[1].0.to_string()]);

    let resp = tower::ServiceExt::oneshot(
        app.clone(),
        axum::http::Request::get(format!("/api/campaigns/{campaign}/export"))
            .body(axum::body::Body::empty())
            .unwrap(),
    )
    .await
    .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    let body = axum::body::to_bytes(resp.into_body(), 1 << 24)
        .await
        .unwrap();
    let lines: Vec<serde_json::Value> = String::from_utf8(body.to_vec())
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 1, "only the judged episode is exported");
    assert_eq!(lines[0]["id"], ids[0].0.to_string());
}
