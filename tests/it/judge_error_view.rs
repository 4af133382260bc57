//! The dashboard in real Chromium shows an episode whose rubric could not be evaluated as
//! such: a `judge_error` badge in the campaign's episode list, and on the replay the
//! outcome, the badge and the rubric's error, never a plain failure.

use crate::common;

use browser_pool::Action;
use common::{js, open_dashboard};
use engine::CampaignSpec;
use policy::PolicyRegistry;
use serde_json::json;
use sqlx::PgPool;
use store::{EpisodeStatus, TaskFilter};

#[sqlx::test(migrator = "store::MIGRATOR")]
async fn the_dashboard_shows_judge_errors_apart(pool: PgPool) {
    let engine = common::new_engine(pool.clone(), PolicyRegistry::builtin());
    let task = tasks::parse_task(
        &json!({
            "id": "t", "site": "shop", "start_url": "http://127.0.0.1:9/", "instruction": "x",
            "rubric": {"groups": [{"facts": [{"check": {"type": "answer", "number": 1}}]}]}
        })
        .to_string(),
    )
    .unwrap();
    engine.store().insert_task(&task).await.unwrap();
    let campaign = engine
        .create_campaign(CampaignSpec {
            tasks: Some(TaskFilter {
                ids: vec!["t".into()],
                ..TaskFilter::default()
            }),
            ..CampaignSpec::default()
        })
        .await
        .unwrap();
    // Stored as the runner stores a rubric the browser rejected.
    let (episode,): (uuid::Uuid,) = sqlx::query_as(
        "UPDATE episodes SET status = $2, judge_error = 'invalid selector `a[`', \
         started_at = now(), finished_at = now() WHERE campaign_id = $1 RETURNING id",
    )
    .bind(campaign)
    .bind(EpisodeStatus::Finished)
    .fetch_one(&pool)
    .await
    .unwrap();
    let addr = common::serve_web(&engine).await;

    let mut s = engine.pool().await.unwrap().lease().await.unwrap();
    open_dashboard(&mut s, &format!("http://{addr}/#/campaigns/{campaign}")).await;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while js(
        &s,
        "!!document.querySelector('#episodes .badge-judge_error')",
    )
    .await
        != json!(true)
    {
        assert!(
            std::time::Instant::now() < deadline,
            "no judge_error badge in the episode list"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }

    let r = s.act(&Action::Goto("about:blank".into())).await.unwrap();
    assert_eq!(r.error, None);
    open_dashboard(&mut s, &format!("http://{addr}/#/episodes/{episode}")).await;
    let error = js(&s, "document.getElementById('judge-error').textContent").await;
    assert!(
        error.as_str().unwrap().contains("invalid selector `a[`"),
        "{error}"
    );
    let outcome = js(&s, "document.getElementById('outcome-success').textContent").await;
    assert!(
        outcome.as_str().unwrap().contains("judge error"),
        "{outcome}"
    );
    assert_eq!(
        js(&s, "!!document.querySelector('h1 .badge-judge_error')").await,
        json!(true)
    );
}
