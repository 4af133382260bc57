//! Record and replay in campaigns: a recorded campaign replays step by step after its
//! site changed and stopped, through HAR too; a page the recording lacks is counted.

use crate::common;

use std::collections::BTreeMap;

use axum::http::header;
use engine::{CampaignSpec, Engine};
use sqlx::PgPool;
use store::{EpisodeFilter, TaskFilter};

/// A shop whose pages name their version; `version` changes them, aborting the handle
/// stops the site.
async fn versioned_shop() -> (
    String,
    std::sync::Arc<std::sync::atomic::AtomicU32>,
    tokio::task::JoinHandle<()>,
) {
    use std::sync::atomic::Ordering;
    let version = std::sync::Arc::new(std::sync::atomic::AtomicU32::new(1));
    let v = version.clone();
    let shop = move || {
        let n = v.load(Ordering::SeqCst);
        async move {
            axum::response::Html(format!(
                "<title>Shop v{n}</title><h1>Mugs, edition {n}</h1>\
                 <img src=\"/logo.svg?cb={n}\" width=10 height=10>\
                 <a id=\"item\" href=\"/item?id=7\">Blue mug v{n}</a>"
            ))
        }
    };
    let v = version.clone();
    let item = move || {
        let n = v.load(Ordering::SeqCst);
        async move {
            axum::response::Html(format!(
                "<title>Item</title><p>Blue mug, edition {n}</p><button>Buy v{n}</button>"
            ))
        }
    };
    let logo = || async {
        (
            [(header::CONTENT_TYPE, "image/svg+xml")],
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"10\" height=\"10\"/>",
        )
    };
    let app = axum::Router::new()
        .route("/shop", axum::routing::get(shop))
        .route("/item", axum::routing::get(item))
        .route("/logo.svg", axum::routing::get(logo));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let server = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (base, version, server)
}

/// Runs `spec` over the `shop` site's tasks; each episode's summary and stored steps
/// (URL, title, element list), by task and rollout.
async fn steps_by_episode(
    engine: &Engine,
    spec: CampaignSpec,
) -> BTreeMap<
    (String, i32),
    (
        store::EpisodeSummary,
        Vec<(String, String, serde_json::Value)>,
    ),
> {
    let id = engine.create_campaign(spec).await.unwrap();
    engine.run_campaign(id).await.unwrap();
    let (eps, _) = engine
        .store()
        .list_episodes(&EpisodeFilter::campaign(id), 100, 0)
        .await
        .unwrap();
    let mut out = BTreeMap::new();
    for e in eps {
        let d = engine.store().get_episode(e.id).await.unwrap().unwrap();
        let steps = d
            .steps
            .iter()
            .map(|s| {
                (
                    s.core.url.clone(),
                    s.core.title.clone(),
                    s.core.elements.clone(),
                )
            })
            .collect();
        out.insert((e.task_id.clone(), e.rollout), (e, steps));
    }
    out
}

fn shop_campaign(record: bool, replay: Option<uuid::Uuid>) -> CampaignSpec {
    CampaignSpec {
        policy: Some("scripted".into()),
        tasks: Some(TaskFilter {
            site: Some("shop-v".into()),
            ..Default::default()
        }),
        rollouts_per_task: Some(2),
        max_attempts: Some(1),
        record: Some(record),
        replay,
        ..Default::default()
    }
}

#[sqlx::test(migrator = "store::MIGRATOR")]
async fn a_recorded_campaign_replays_step_by_step_after_its_site_changed_and_stopped(pool: PgPool) {
    let (base, version, server) = versioned_shop().await;
    let (engine, _sites) = common::engine_observing(
        pool,
        vec![],
        engine::RunnerConfig::for_this_process(),
        |cfg| cfg.capture_traffic = true,
    )
    .await;
    let task = tasks::parse_task(
        &serde_json::json!({
            "id": "mug", "site": "shop-v", "instruction": "Open the blue mug.",
            "start_url": format!("{base}/shop"),
            "reference_solution": ["click(css=\"#item\")", "stop()"],
            "rubric": {"groups": [{"facts": [
                {"id": "item", "check": {"type": "url", "contains": "/item?id=7"}},
                {"id": "edition", "check": {"type": "page_text", "contains": "edition 1"}}]}]}
        })
        .to_string(),
    )
    .unwrap();
    engine.store().upsert_task(&task).await.unwrap();

    let recorded = steps_by_episode(&engine, shop_campaign(true, None)).await;
    let recording = recorded.values().next().unwrap().0.campaign_id;
    assert!(recorded.values().all(|(e, _)| e.success == Some(true)));
    let exchanges = engine
        .store()
        .recording_exchanges(recording, None)
        .await
        .unwrap();
    let shop_pages = exchanges
        .iter()
        .filter(|x| x.url.ends_with("/shop"))
        .count();
    assert_eq!(shop_pages, 2, "each episode's own exchanges");
    let bodies: std::collections::BTreeSet<&[u8]> =
        exchanges.iter().map(|x| x.body.as_slice()).collect();
    assert!(
        bodies.len() < exchanges.len(),
        "repeated bodies are one blob"
    );

    // The site moves on to edition 2, then stops.
    version.store(2, std::sync::atomic::Ordering::SeqCst);
    server.abort();
    let _ = server.await;

    let replayed = steps_by_episode(&engine, shop_campaign(false, Some(recording))).await;
    assert_eq!(replayed.len(), 2);
    for (k, (e, steps)) in &replayed {
        assert_eq!(e.success, Some(true), "{k:?}: {:?}", e.last_error);
        assert_eq!(e.unmatched_requests, Some(0), "{k:?}");
        assert_eq!(steps, &recorded[k].1, "{k:?}: the same pages, step by step");
    }
    assert!(
        recorded
            .values()
            .all(|(e, _)| e.unmatched_requests.is_none())
    );

    // Exported as HAR and imported back, the recording replays the same.
    let store = engine.store();
    let har = engine::recordings::export_har(store, recording, None)
        .await
        .unwrap()
        .unwrap();
    // Through text, as a file would carry it.
    let har: serde_json::Value = serde_json::from_str(&har.to_string()).unwrap();
    let (imported, n) = engine::recordings::import_har(store, "shop.har", &har)
        .await
        .unwrap();
    assert_eq!(n, exchanges.len());
    assert_eq!(
        store.recording_exchanges(imported, None).await.unwrap(),
        exchanges,
        "every exchange, body and header came back"
    );
    let again = steps_by_episode(&engine, shop_campaign(false, Some(imported))).await;
    for (k, (e, steps)) in &again {
        assert_eq!(e.success, Some(true), "{k:?}: {:?}", e.last_error);
        assert_eq!(steps, &recorded[k].1, "{k:?}");
    }

    // A page the recording lacks fails as if offline, and is counted.
    let wander = tasks::parse_task(
        &serde_json::json!({
            "id": "wander", "site": "shop-v", "instruction": "Open the blue mug.",
            "start_url": format!("{base}/shop"),
            "reference_solution": [format!("goto(\"{base}/elsewhere\")"), "stop()"],
            "rubric": {"groups": [{"facts": [
                {"id": "item", "check": {"type": "url", "contains": "/item?id=7"}}]}]}
        })
        .to_string(),
    )
    .unwrap();
    engine.store().upsert_task(&wander).await.unwrap();
    let mut spec = shop_campaign(false, Some(recording));
    spec.tasks = Some(TaskFilter {
        ids: vec!["wander".into()],
        ..Default::default()
    });
    let lost = steps_by_episode(&engine, spec).await;
    for (k, (e, _)) in &lost {
        assert_eq!(e.success, Some(false), "{k:?}");
        assert!(e.unmatched_requests.unwrap() >= 1, "{k:?}");
    }
    // A replay of a recording that does not exist is refused by name.
    let err = engine
        .create_campaign(shop_campaign(false, Some(uuid::Uuid::new_v4())))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("replay"), "{err}");
    engine.shutdown().await;
}
