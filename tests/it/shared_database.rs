//! Two surfgym processes on one database (a `serve` and a `worker`, two training runs),
//! each serving the practice sites on ports of its own and registering the bundled tasks
//! with them: each runs and judges the shared tasks on its own sites, so neither depends
//! on the other staying up. Real Chromium, real Postgres, the scripted policy.

use crate::common;

use engine::CampaignSpec;
use policy::PolicyRegistry;
use sqlx::PgPool;
use store::{EpisodeFilter, TaskFilter};

const TASK: &str = "shop-mug-capacity";

#[sqlx::test(migrator = "store::MIGRATOR")]
async fn each_process_runs_the_shared_tasks_on_its_own_sites(pool: PgPool) {
    let sites_a = common::sites().await;
    let a = common::new_engine(pool.clone(), PolicyRegistry::builtin());
    a.register_bundled(sites_a.bases()).await.unwrap();
    let shop_a = sites_a.bases()["shop"].trim_end_matches('/').to_string();

    // A second process registers the same tasks on its own ports, then exits.
    let shop_b = {
        let sites_b = common::sites().await;
        let b = common::new_engine(pool.clone(), PolicyRegistry::builtin());
        b.register_bundled(sites_b.bases()).await.unwrap();
        let shop_b = sites_b.bases()["shop"].trim_end_matches('/').to_string();
        assert_ne!(shop_a, shop_b);
        let (stored,): (String,) = sqlx::query_as("SELECT start_url FROM tasks WHERE id = $1")
            .bind(TASK)
            .fetch_one(&pool)
            .await
            .unwrap();
        assert!(
            stored.starts_with(&shop_b),
            "the rows hold the last registrant's ports: {stored}"
        );
        assert!(
            b.store()
                .load_task(TASK)
                .await
                .unwrap()
                .unwrap()
                .start_url
                .as_str()
                .starts_with(&shop_b)
        );
        // It runs and judges a campaign on its own sites while the first process is up.
        let final_url = run_the_task(&b).await;
        assert!(
            final_url.starts_with(&shop_b),
            "the second process ran on its own sites: {final_url}"
        );
        b.shutdown().await;
        shop_b
    };
    assert!(
        reqwest::get(format!("{shop_b}/")).await.is_err(),
        "the second process's sites are gone"
    );

    // The first reads, lists and runs them on its own sites, and judges them there.
    let task = a.store().load_task(TASK).await.unwrap().unwrap();
    assert!(
        task.start_url.as_str().starts_with(&shop_a),
        "{}",
        task.start_url
    );
    let spec = serde_json::to_string(&task.to_spec()).unwrap();
    assert!(
        !spec.contains(&shop_b),
        "no URL of the gone sites is left: {spec}"
    );
    let view = a.store().get_task(TASK).await.unwrap().unwrap();
    assert!(view.start_url.starts_with(&shop_a), "{}", view.start_url);
    let final_url = run_the_task(&a).await;
    assert!(final_url.starts_with(&shop_a), "{final_url}");
    a.shutdown().await;
}

/// Runs [`TASK`] once with the scripted policy on `engine`, asserts it succeeded, and
/// returns the URL it ended on.
async fn run_the_task(engine: &engine::Engine) -> String {
    let id = engine
        .create_campaign(CampaignSpec {
            policy: Some("scripted".into()),
            tasks: Some(TaskFilter {
                ids: vec![TASK.into()],
                ..Default::default()
            }),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(
        engine.run_campaign(id).await.unwrap(),
        store::Status::Completed
    );
    let (eps, _) = engine
        .store()
        .list_episodes(&EpisodeFilter::campaign(id), 10, 0)
        .await
        .unwrap();
    assert_eq!(eps.len(), 1);
    assert_eq!(eps[0].success, Some(true), "{:?}", eps[0]);
    let detail = engine
        .store()
        .get_episode(eps[0].id)
        .await
        .unwrap()
        .unwrap();
    detail.final_url.unwrap_or_default()
}
