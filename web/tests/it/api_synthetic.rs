//! A synthetic history (`surfgym bench history`) is read by the real API as any other:
//! the campaigns list, a campaign's counts, its episodes and a replay.

use crate::support;

use axum::http::{Method, StatusCode};
use sqlx::PgPool;
use store::Store;
use store::synthetic::HistorySpec;

use support::{app, call};

#[sqlx::test(migrator = "store::MIGRATOR")]
async fn the_api_lists_and_replays_a_synthetic_history(pool: PgPool) {
    let spec = HistorySpec {
        episodes: 200,
        steps_per_episode: 5,
        campaigns: Some(4),
        tasks: 16,
        batch: 64,
        ..HistorySpec::default()
    };
    Store::from_pool(pool.clone())
        .generate_history(&spec, |_| {})
        .await
        .unwrap();
    let app = app(pool);

    let (status, list) = call(&app, Method::GET, "/api/campaigns?limit=10", None).await;
    assert_eq!(status, StatusCode::OK, "{list}");
    assert_eq!(list["total"], 4);
    let items = list["items"].as_array().unwrap();
    let planned: i64 = items
        .iter()
        .map(|c| c["total_episodes"].as_i64().unwrap())
        .sum();
    assert_eq!(planned, 200);
    // Each campaign's counts add up to its planned episodes, and its steps to what its
    // finished episodes stored.
    let mut steps = 0;
    for c in items {
        let k = &c["counts"];
        let counted: i64 = ["pending", "running", "finished", "failed", "cancelled"]
            .iter()
            .map(|s| k[s].as_i64().unwrap())
            .sum();
        assert_eq!(counted, c["total_episodes"].as_i64().unwrap(), "{c}");
        steps += c["steps"].as_i64().unwrap();
    }
    assert_eq!(steps, 1000);

    let big = items
        .iter()
        .max_by_key(|c| c["total_episodes"].as_i64().unwrap())
        .unwrap();
    let id = big["id"].as_str().unwrap();
    let (status, eps) = call(
        &app,
        Method::GET,
        &format!("/api/episodes?campaign={id}&status=finished&limit=500"),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{eps}");
    assert_eq!(eps["total"], big["counts"]["finished"]);
    let first = &eps["items"][0];
    assert!(first["task_id"].as_str().unwrap().starts_with("synthetic-"));

    let (status, replay) = call(
        &app,
        Method::GET,
        &format!("/api/episodes/{}", first["id"].as_str().unwrap()),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{replay}");
    let steps = replay["steps"].as_array().unwrap();
    assert_eq!(steps.len() as i64, first["step_count"].as_i64().unwrap());
    assert!(steps[0]["screenshot"].as_str().unwrap().len() == 64);
    // The screenshot it refers to is served.
    let (status, _) = call(
        &app,
        Method::GET,
        &format!("/api/blobs/{}", steps[0]["screenshot"].as_str().unwrap()),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
}
