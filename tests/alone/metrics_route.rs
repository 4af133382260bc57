//! Live progress and `/metrics` over a real campaign (real Chromium, Postgres and the
//! bundled sites): the event stream pushes growing progress until the campaign completes,
//! and the Prometheus counters grow by exactly the campaign's work. The counters are the
//! process's, so this test has a binary (a process) of its own: no other test's episodes
//! run beside it, and each counter's change from before the campaign to after it is exact.

use crate::common;

use std::time::{Duration, Instant};

use common::serve_web;
use engine::CampaignSpec;
use policy::PolicyRegistry;
use serde_json::Value;
use sqlx::PgPool;
use store::{EpisodeFilter, TaskFilter};

/// The samples of a Prometheus text exposition, by name with labels.
fn samples(text: &str) -> std::collections::BTreeMap<String, f64> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .filter_map(|l| {
            let (name, value) = l.rsplit_once(' ')?;
            Some((name.to_string(), value.parse().ok()?))
        })
        .collect()
}

async fn scrape(client: &reqwest::Client, addr: std::net::SocketAddr) -> String {
    client
        .get(format!("http://{addr}/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
}

#[sqlx::test(migrator = "store::MIGRATOR")]
async fn live_progress_is_pushed_and_metrics_count_exactly_the_work(pool: PgPool) {
    let _alone = crate::ALONE.lock().await;
    let (engine, _sites, report) = common::engine_with_sites(pool, PolicyRegistry::builtin()).await;
    assert!(report.errors.is_empty(), "{:?}", report.errors);
    let addr = serve_web(&engine).await;
    let id = engine
        .create_campaign(CampaignSpec {
            policy: Some("scripted".into()),
            tasks: Some(TaskFilter {
                site: Some("wiki".into()),
                difficulty: Some("easy".into()),
                ..Default::default()
            }),
            ..Default::default()
        })
        .await
        .unwrap();
    let client = reqwest::Client::new();
    let before = samples(&scrape(&client, addr).await);
    let mut resp = client
        .get(format!("http://{addr}/api/campaigns/{id}/events"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    assert!(
        resp.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/event-stream")
    );
    engine.start_scheduler().await;

    // Read the stream until the server ends it with the finished campaign (the deadline is
    // a hang guard, far above what the campaign takes).
    let mut text = String::new();
    let deadline = Instant::now() + Duration::from_secs(600);
    while let Some(chunk) = tokio::time::timeout_at(deadline.into(), resp.chunk())
        .await
        .expect("stream ended in time")
        .unwrap()
    {
        text.push_str(&String::from_utf8_lossy(&chunk));
    }
    let events: Vec<Value> = text
        .split("\n\n")
        .filter(|e| e.contains("event: campaign"))
        .map(|e| {
            serde_json::from_str(e.lines().find_map(|l| l.strip_prefix("data: ")).unwrap()).unwrap()
        })
        .collect();
    assert!(
        events.len() >= 3,
        "several progress updates: {}",
        events.len()
    );
    let progress: Vec<f64> = events
        .iter()
        .map(|e| e["progress"].as_f64().unwrap())
        .collect();
    assert!(
        progress.windows(2).all(|w| w[0] <= w[1]),
        "progress only grows: {progress:?}"
    );
    let last = events.last().unwrap();
    assert_eq!(
        (last["status"].as_str(), last["progress"].as_f64()),
        (Some("completed"), Some(1.0))
    );

    let metrics = scrape(&client, addr).await;
    let after = samples(&metrics);
    let delta = |name: &str| -> f64 {
        let now = after
            .get(name)
            .unwrap_or_else(|| panic!("{name} in /metrics:\n{metrics}"));
        now - before.get(name).copied().unwrap_or(0.0)
    };
    let (episodes, _) = engine
        .store()
        .list_episodes(&EpisodeFilter::campaign(id), 1000, 0)
        .await
        .unwrap();
    let n = episodes.len() as f64;
    assert_eq!(n, last["total_episodes"].as_f64().unwrap());
    assert!(episodes.iter().all(|e| e.success == Some(true)));
    let steps = last["steps"].as_f64().unwrap();
    // Every episode ends on an answer or a stop, the one step that acts on nothing.
    let ended_by_the_agent = episodes
        .iter()
        .filter(|e| matches!(e.end_reason.as_deref(), Some("answered" | "stopped")))
        .count() as f64;
    assert_eq!(ended_by_the_agent, n, "{episodes:?}");

    assert_eq!(
        delta("surfgym_episodes_finished_total{outcome=\"success\"}"),
        n
    );
    assert!(
        !after.contains_key("surfgym_episodes_finished_total{outcome=\"failure\"}"),
        "no failures counted:\n{metrics}"
    );
    assert_eq!(delta("surfgym_episodes_failed_total"), 0.0);
    assert_eq!(delta("surfgym_steps_total"), steps);
    assert_eq!(delta("surfgym_step_observe_seconds_count"), steps);
    assert_eq!(delta("surfgym_step_policy_seconds_count"), steps);
    assert_eq!(delta("surfgym_step_act_seconds_count"), steps - n);
    assert_eq!(delta("surfgym_episode_judge_seconds_count"), n);
    assert_eq!(delta("surfgym_episode_store_seconds_count"), n);
    assert_eq!(delta("surfgym_policy_parse_failures_total"), 0.0);
    // Gauges: the pool's size, and nothing left running or queued.
    let capacity = engine.pool_stats().expect("the pool was used").capacity as f64;
    assert_eq!(after["surfgym_pool_capacity"], capacity);
    assert_eq!(
        after["surfgym_sessions_max"],
        engine.session_limits().max_sessions as f64
    );
    for idle in [
        "surfgym_episodes_running",
        "surfgym_judge_queue_depth",
        "surfgym_store_queue_depth",
        "surfgym_sessions_open",
    ] {
        assert_eq!(after[idle], 0.0, "{idle}");
    }
    assert!(metrics.contains("surfgym_step_act_seconds_bucket{le=\"0.5\"}"));
    engine.shutdown().await;
}
