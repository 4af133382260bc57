//! Politeness per domain in campaigns: a domain's session cap holds under a 32-context
//! campaign, measured from the site's own log, each episode storing its wait; a campaign
//! kept to its domains never requests another.

use crate::common;

use std::collections::BTreeMap;

use axum::http::header;
use axum::response::IntoResponse;
use engine::{CampaignSpec, Engine};
use sqlx::PgPool;
use store::{EpisodeFilter, TaskFilter};

use super::task;

/// A site that tells its visitors apart by a cookie it sets (each browser context has its
/// own jar) and logs when each visitor asked for what.
async fn visitors() -> (
    String,
    std::sync::Arc<std::sync::Mutex<Vec<(std::time::Instant, u32)>>>,
) {
    use std::sync::atomic::{AtomicU32, Ordering};
    type Log = std::sync::Arc<std::sync::Mutex<Vec<(std::time::Instant, u32)>>>;
    let log: Log = Default::default();
    let next = std::sync::Arc::new(AtomicU32::new(0));
    let handler = {
        let log = log.clone();
        move |uri: axum::http::Uri, headers: axum::http::HeaderMap| {
            let (log, next) = (log.clone(), next.clone());
            async move {
                let known = headers
                    .get(header::COOKIE)
                    .and_then(|c| c.to_str().ok())
                    .and_then(|c| c.split("visitor=").nth(1))
                    .and_then(|v| v.split(';').next())
                    .and_then(|v| v.parse::<u32>().ok());
                let visitor = known.unwrap_or_else(|| next.fetch_add(1, Ordering::SeqCst));
                log.lock()
                    .unwrap()
                    .push((std::time::Instant::now(), visitor));
                let mut h = axum::http::HeaderMap::new();
                h.insert(
                    header::SET_COOKIE,
                    format!("visitor={visitor}").parse().unwrap(),
                );
                let (kind, body) = match uri.path() {
                    "/pixel.svg" => ("image/svg+xml", "<svg xmlns=\"http://www.w3.org/2000/svg\"/>".to_string()),
                    "/done" => ("text/html", "<title>Done</title><p>thanks</p>".to_string()),
                    _ => ("text/html", "<title>Shop</title><img src=\"/pixel.svg\"><a id=\"next\" href=\"/done\">next</a>".to_string()),
                };
                h.insert(header::CONTENT_TYPE, kind.parse().unwrap());
                (h, body).into_response()
            }
        }
    };
    let app = axum::Router::new().fallback(handler);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (base, log)
}

#[sqlx::test(migrator = "store::MIGRATOR")]
async fn a_32_context_campaign_keeps_to_the_domains_session_cap_and_stores_each_wait(pool: PgPool) {
    let (base, log) = visitors().await;
    let cap = 4;
    let (engine, _sites) = common::engine_observing(
        pool,
        vec![],
        engine::RunnerConfig::for_this_process(),
        |cfg| {
            cfg.browsers = 2;
            cfg.contexts_per_browser = 16;
            cfg.politeness.contexts_per_domain = Some(cap as u32);
        },
    )
    .await;
    let t = tasks::parse_task(
        &serde_json::json!({
            "id": "visit", "site": "visitors", "instruction": "Go on.",
            "start_url": format!("{base}/shop"),
            "reference_solution": ["click(css=\"#next\")", "stop()"],
            "rubric": {"groups": [{"facts": [
                {"id": "done", "check": {"type": "url", "contains": "/done"}}]}]}
        })
        .to_string(),
    )
    .unwrap();
    engine.store().upsert_task(&t).await.unwrap();
    let id = engine
        .create_campaign(CampaignSpec {
            policy: Some("scripted".into()),
            tasks: Some(TaskFilter {
                ids: vec!["visit".into()],
                ..Default::default()
            }),
            rollouts_per_task: Some(32),
            concurrency: Some(32),
            ..Default::default()
        })
        .await
        .unwrap();
    engine.run_campaign(id).await.unwrap();
    let (eps, _) = engine
        .store()
        .list_episodes(&EpisodeFilter::campaign(id), 100, 0)
        .await
        .unwrap();
    assert_eq!(eps.len(), 32);
    assert!(
        eps.iter().all(|e| e.success == Some(true)),
        "every episode ran"
    );
    let waited = eps.iter().filter(|e| e.politeness_ms.unwrap() > 0).count();
    assert!(
        waited >= 32 - cap,
        "all but the first {cap} waited: {waited}"
    );

    // From the site's side: each visitor's first to last request.
    let mut spans: BTreeMap<u32, (std::time::Instant, std::time::Instant)> = BTreeMap::new();
    for (t, v) in log.lock().unwrap().iter() {
        let e = spans.entry(*v).or_insert((*t, *t));
        e.0 = e.0.min(*t);
        e.1 = e.1.max(*t);
    }
    assert_eq!(spans.len(), 32, "one visitor per episode");
    let most = spans
        .values()
        .map(|(start, _)| {
            spans
                .values()
                .filter(|(a, b)| a <= start && start <= b)
                .count()
        })
        .max()
        .unwrap();
    assert!(most <= cap, "{most} visitors at once, cap {cap}");
    assert!(most >= 2, "episodes did run side by side");
    let stats = engine.pool_stats().unwrap().politeness;
    assert!(stats.context_waits >= (32 - cap) as u64, "{stats:?}");
    engine.shutdown().await;
}

/// A site that logs the `Host` each request names.
async fn hosts() -> (u16, std::sync::Arc<std::sync::Mutex<Vec<String>>>) {
    let log: std::sync::Arc<std::sync::Mutex<Vec<String>>> = Default::default();
    let seen = log.clone();
    let app = axum::Router::new().fallback(move |headers: axum::http::HeaderMap| {
        let seen = seen.clone();
        async move {
            let host = headers
                .get(header::HOST)
                .and_then(|h| h.to_str().ok())
                .unwrap_or("")
                .to_string();
            seen.lock().unwrap().push(host);
            axum::response::Html("<title>Page</title><p>a page</p>")
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (port, log)
}

#[sqlx::test(migrator = "store::MIGRATOR")]
async fn a_campaign_kept_to_its_domains_never_requests_another(pool: PgPool) {
    let (port, log) = hosts().await;
    let (engine, _sites) = common::engine(pool, vec![]).await;
    // The same server by another name: localhost is another domain than 127.0.0.1.
    let away = format!("goto(\"http://localhost:{port}/elsewhere\")");
    task(
        &engine,
        "wander",
        "Buy a mug.",
        format!("http://127.0.0.1:{port}/start"),
        &[away.as_str(), "stop()"],
    )
    .await;
    let spec = |allowed: Option<Vec<String>>| CampaignSpec {
        policy: Some("scripted".into()),
        tasks: Some(TaskFilter {
            ids: vec!["wander".into()],
            ..Default::default()
        }),
        allowed_domains: allowed,
        ..Default::default()
    };
    let kept = steps_of(&engine, spec(Some(vec!["127.0.0.1".into()]))).await;
    let error = kept[0].core.action_error.as_deref().unwrap_or("");
    assert!(
        error.contains("localhost"),
        "the navigation was refused: {error}"
    );
    assert!(
        kept[0].core.events.to_string().contains("allowed domains"),
        "a blocked event says why: {}",
        kept[0].core.events
    );
    let asked: Vec<String> = log.lock().unwrap().clone();
    assert!(
        asked.iter().all(|h| h.starts_with("127.0.0.1")),
        "nothing reached the other domain: {asked:?}"
    );
    // Without the list, the same walk goes there.
    let free = steps_of(&engine, spec(None)).await;
    assert_eq!(free[0].core.action_error, None);
    assert!(
        log.lock()
            .unwrap()
            .iter()
            .any(|h| h.starts_with("localhost"))
    );
    // A task outside the list is refused at creation, naming the field.
    let err = engine
        .create_campaign(spec(Some(vec!["shop.example".into()])))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("allowed_domains"), "{err}");
    let err = engine
        .create_campaign(spec(Some(vec!["not a host".into()])))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("allowed_domains[0]"), "{err}");
    engine.shutdown().await;
}

/// Runs `spec` (one episode) and returns its stored steps.
async fn steps_of(engine: &Engine, spec: CampaignSpec) -> Vec<store::StepView> {
    let id = engine.create_campaign(spec).await.unwrap();
    engine.run_campaign(id).await.unwrap();
    let (eps, _) = engine
        .store()
        .list_episodes(&EpisodeFilter::campaign(id), 10, 0)
        .await
        .unwrap();
    assert_eq!(eps.len(), 1);
    engine
        .store()
        .get_episode(eps[0].id)
        .await
        .unwrap()
        .unwrap()
        .steps
}
