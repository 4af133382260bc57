//! The campaign list follows a running campaign without a reload.

use super::*;

#[sqlx::test(migrator = "store::MIGRATOR")]
async fn a_running_campaign_updates_the_list_without_a_reload(pool: PgPool) {
    let (engine, _sites, _) = common::engine_with_sites(pool, PolicyRegistry::builtin()).await;
    let addr = serve_web(&engine).await;
    let mut s = engine.pool().await.unwrap().lease().await.unwrap();
    open_dashboard(&mut s, &format!("http://{addr}/#/")).await;
    assert_eq!(
        js(&s, "document.querySelectorAll('tr.campaign-row').length").await,
        json!(0)
    );
    // Were the page reloaded, this would be gone.
    js(&s, "window.__same_page = true").await;

    let id = engine
        .create_campaign(CampaignSpec {
            name: Some("live <b>one</b>".into()),
            policy: Some("scripted".into()),
            tasks: Some(TaskFilter {
                site: Some("wiki".into()),
                difficulty: Some("easy".into()),
                ..TaskFilter::default()
            }),
            rollouts_per_task: Some(2),
            ..CampaignSpec::default()
        })
        .await
        .unwrap();
    // The idle list polls every 15 s: the pushed event brings the new campaign first.
    until(
        &s,
        &format!("!!document.querySelector('tr.campaign-row[data-id=\"{id}\"]')"),
        "the new campaign appears in the list",
        Duration::from_secs(8),
    )
    .await;
    // A keyboard user's place in the list survives its redraws.
    js(
        &s,
        &format!("document.querySelector('tr.campaign-row[data-id=\"{id}\"]').focus()"),
    )
    .await;
    let runner = {
        let engine = engine.clone();
        tokio::spawn(async move { engine.run_campaign(id).await })
    };
    let total = engine
        .store()
        .get_campaign(id)
        .await
        .unwrap()
        .unwrap()
        .total_episodes;
    let label = format!(
        "(document.querySelector('tr.campaign-row[data-id=\"{id}\"] .progress-label') || {{}}).textContent || ''"
    );
    // Progress advances on the page as episodes finish, then the campaign completes.
    until(
        &s,
        &format!("({label}).startsWith('{total} / {total}') && !!document.querySelector('tr.campaign-row[data-id=\"{id}\"] .badge-completed')"),
        "the list follows the campaign to its end",
        Duration::from_secs(240),
    )
    .await;
    assert_eq!(runner.await.unwrap().unwrap(), store::Status::Completed);
    assert_eq!(js(&s, "window.__same_page === true").await, json!(true));
    assert_eq!(
        js(&s, "document.activeElement.dataset.id").await,
        json!(id.to_string()),
        "the redrawn row has the focus back"
    );
    assert_eq!(
        js(
            &s,
            "document.querySelectorAll('#campaigns b').length === 0 && document.body.innerText.includes('live <b>one</b>')"
        )
        .await,
        json!(true),
        "the campaign's name is text"
    );
    screenshot(&mut s, "live-list").await;
    s.close().await;
    engine.shutdown().await;
}
