//! The live web's ways, on a local server that answers like them, in real Chromium:
//! pages that turn the agent away end their episodes as `blocked` with the right reason,
//! an infrastructure outcome (retried, never scored, listed by site in triage), while an
//! ordinary failure stays the agent's (a CAPTCHA, a bot wall, 403, 429, a login wall); a
//! domain's session cap holds under a 32-context campaign, measured from the site's own
//! log, each episode storing its wait; a recorded campaign replays step by step after its
//! site changed and stopped; network faults (a reset, a cut body, a silent server, a
//! redirect loop, a name that does not resolve) end every episode within its timeout; a
//! campaign kept to its domains never requests another.

use crate::common;

use std::collections::BTreeMap;

use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use engine::{CampaignSpec, Engine};
use sqlx::PgPool;
use store::{EpisodeFilter, TaskFilter};

/// A page: its status, extra headers, and body.
type Page = (
    StatusCode,
    &'static [(&'static str, &'static str)],
    &'static str,
);

const PAGES: &[(&str, Page)] = &[
    (
        "/captcha.html",
        (
            StatusCode::OK,
            &[],
            r#"<title>Shop</title><p>One more step.</p><div class="g-recaptcha" data-sitekey="k"></div>"#,
        ),
    ),
    (
        "/wall.html",
        (
            StatusCode::SERVICE_UNAVAILABLE,
            &[],
            "<title>Just a moment...</title><p>Checking your browser before accessing the shop.</p>",
        ),
    ),
    (
        "/forbidden.html",
        (
            StatusCode::FORBIDDEN,
            &[],
            "<title>Shop</title><h1>Forbidden</h1>",
        ),
    ),
    (
        "/busy.html",
        (
            StatusCode::TOO_MANY_REQUESTS,
            &[("retry-after", "30")],
            "<title>Shop</title><p>Slow down.</p>",
        ),
    ),
    (
        "/orders.html",
        (
            StatusCode::OK,
            &[],
            r#"<title>Orders</title><p>Please sign in to continue.</p>
               <input name="email"><input type="password" name="pw"><button>Sign in</button>"#,
        ),
    ),
    (
        "/plain.html",
        (
            StatusCode::OK,
            &[],
            r#"<title>Shop</title><p>Mugs</p><button id="buy">Buy</button>
               <a id="away" href="/">home</a>"#,
        ),
    ),
];

async fn serve() -> u16 {
    let mut app = axum::Router::new();
    for &(path, (status, headers, body)) in PAGES {
        app = app.route(
            path,
            axum::routing::get(move || async move {
                let mut h = axum::http::HeaderMap::new();
                h.insert(header::CONTENT_TYPE, "text/html".parse().unwrap());
                for &(k, v) in headers {
                    h.insert(header::HeaderName::from_static(k), v.parse().unwrap());
                }
                (status, h, body).into_response()
            }),
        );
    }
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move { axum::serve(listener, app).await });
    port
}

/// A task starting at `start`, whose scripted agent takes `solution`; its rubric wants the
/// Buy button clicked, which never happens: every episode that is scored fails.
async fn task(engine: &Engine, id: &str, instruction: &str, start: String, solution: &[&str]) {
    let task = tasks::parse_task(
        &serde_json::json!({
            "id": id, "site": "walls", "instruction": instruction, "start_url": start,
            "reference_solution": solution,
            "rubric": {"groups": [{"facts": [
                {"id": "bought", "check": {"type": "url", "contains": "/bought"}}]}]}
        })
        .to_string(),
    )
    .unwrap();
    engine.store().upsert_task(&task).await.unwrap();
}

/// Runs the scripted policy over every task of the `walls` site; each episode's success
/// and last error by task.
async fn run(
    engine: &Engine,
    detect_blocks: bool,
) -> BTreeMap<String, (Option<bool>, Option<String>, i32)> {
    let id = engine
        .create_campaign(CampaignSpec {
            policy: Some("scripted".into()),
            tasks: Some(TaskFilter {
                site: Some("walls".into()),
                ..Default::default()
            }),
            max_attempts: Some(2),
            detect_blocks: Some(detect_blocks),
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
        .list_episodes(&EpisodeFilter::campaign(id), 100, 0)
        .await
        .unwrap();
    let triage = engine.store().triage(Some(id)).await.unwrap();
    if detect_blocks {
        let mut kinds: Vec<(String, i64, i64)> = triage
            .blocked
            .iter()
            .map(|g| {
                (
                    g.kind.split(" at ").next().unwrap().to_string(),
                    g.episodes,
                    g.gave_up,
                )
            })
            .collect();
        kinds.sort();
        // `captcha` and `deeper` both met the CAPTCHA: one group per reason and site.
        let expect = [
            ("access_denied", 1),
            ("bot_wall", 1),
            ("captcha", 2),
            ("login_wall", 1),
            ("rate_limited", 1),
        ];
        assert_eq!(
            kinds,
            expect.map(|(k, n)| (k.to_string(), n, n)),
            "by reason and site: {:?}",
            triage.blocked
        );
        assert!(
            triage
                .blocked
                .iter()
                .all(|g| g.kind.ends_with("at http://127.0.0.1")
                    || g.kind.contains("at http://127.0.0.1:")),
            "{:?}",
            triage.blocked
        );
    } else {
        assert!(triage.blocked.is_empty(), "{:?}", triage.blocked);
    }
    eps.into_iter()
        .map(|e| (e.task_id, (e.success, e.last_error, e.attempts)))
        .collect()
}

#[sqlx::test(migrator = "store::MIGRATOR")]
async fn walls_end_as_blocked_with_their_reason_and_ordinary_failures_stay_failures(pool: PgPool) {
    let port = serve().await;
    let at = |path: &str| format!("http://127.0.0.1:{port}{path}");
    let (engine, _sites) = common::engine(pool, vec![]).await;
    let stop = ["stop()"];
    for (id, path) in [
        ("captcha", "/captcha.html"),
        ("wall", "/wall.html"),
        ("forbidden", "/forbidden.html"),
        ("busy", "/busy.html"),
        ("plain", "/plain.html"),
    ] {
        task(&engine, id, "Buy a mug.", at(path), &stop).await;
    }
    task(
        &engine,
        "orders",
        "Find my last order.",
        at("/orders.html"),
        &stop,
    )
    .await;
    // The same form where the task asks to sign in: the form is the task, not a wall.
    task(
        &engine,
        "sign-in",
        "Sign in as alice.",
        at("/orders.html"),
        &stop,
    )
    .await;
    // A wall the agent walks into on another site (localhost is not 127.0.0.1 by name):
    // the agent's doing, scored.
    let away = format!("goto(\"http://localhost:{port}/wall.html\")");
    task(
        &engine,
        "wander",
        "Buy a mug.",
        at("/plain.html"),
        &[away.as_str(), "stop()"],
    )
    .await;
    // A wall met after the start: blocked whenever it comes.
    let deeper = format!("goto(\"{}\")", at("/captcha.html"));
    task(
        &engine,
        "deeper",
        "Buy a mug.",
        at("/plain.html"),
        &[deeper.as_str(), "stop()"],
    )
    .await;

    let eps = run(&engine, true).await;
    let blocked = |task: &str, reason: &str, path: &str| {
        let (success, error, attempts) = &eps[task];
        assert_eq!(*success, None, "{task}: never scored");
        assert_eq!(
            *attempts, 2,
            "{task}: retried under the campaign's attempts"
        );
        let error = error.as_deref().unwrap_or_default();
        let want = format!("blocked: {reason} at {}", at(path));
        assert!(error.starts_with(&want), "{task}: {error}, not {want}");
    };
    blocked("captcha", "captcha", "/captcha.html");
    blocked("wall", "bot_wall", "/wall.html");
    blocked("forbidden", "access_denied", "/forbidden.html");
    blocked("busy", "rate_limited", "/busy.html");
    blocked("orders", "login_wall", "/orders.html");
    assert!(eps["forbidden"].1.as_deref().unwrap().contains("HTTP 403"));
    assert!(eps["busy"].1.as_deref().unwrap().contains("HTTP 429"));
    for task in ["plain", "sign-in", "wander"] {
        assert_eq!(
            eps[task].0,
            Some(false),
            "{task}: an ordinary failure, scored"
        );
        assert_eq!(eps[task].1, None, "{task}");
    }
    // `deeper` is blocked at its second observation, on the CAPTCHA page it went to.
    assert_eq!(eps["deeper"].0, None);
    assert!(
        eps["deeper"]
            .1
            .as_deref()
            .unwrap()
            .starts_with("blocked: captcha")
    );

    // With detection off, every wall is scored as the agent's failure.
    let eps = run(&engine, false).await;
    for (task, (success, error, _)) in &eps {
        assert_eq!(*success, Some(false), "{task}");
        assert_eq!(*error, None, "{task}");
    }
    engine.shutdown().await;
}

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
    let har = browser_pool::to_har(&engine_exchanges(&exchanges), "surfgym");
    let back = browser_pool::from_har(&har).unwrap();
    let imported = uuid::Uuid::new_v4();
    let records: Vec<store::ExchangeRecord> = back
        .into_iter()
        .map(|e| store::ExchangeRecord {
            method: e.method,
            url: e.url,
            request_body: e.request_body,
            status: e.status,
            status_text: e.status_text,
            headers: e.headers,
            body: e.body,
        })
        .collect();
    assert_eq!(records, exchanges);
    engine
        .store()
        .import_recording(imported, "shop.har", &records)
        .await
        .unwrap();
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

fn engine_exchanges(x: &[store::ExchangeRecord]) -> Vec<browser_pool::Exchange> {
    x.iter()
        .map(|e| browser_pool::Exchange {
            method: e.method.clone(),
            url: e.url.clone(),
            request_body: e.request_body.clone(),
            status: e.status,
            status_text: e.status_text.clone(),
            headers: e.headers.clone(),
            body: e.body.clone(),
        })
        .collect()
}

/// A server of network faults: `/reset` drops the connection unanswered, `/truncated`
/// promises 10000 bytes and sends 20, `/slow` answers after a minute, `/loop` redirects
/// to itself; `/ok` is a page.
async fn faulty() -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        while let Ok((mut sock, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = vec![0u8; 4096];
                let n = sock.read(&mut buf).await.unwrap_or(0);
                let req = String::from_utf8_lossy(&buf[..n]).into_owned();
                let path = req.split_whitespace().nth(1).unwrap_or("/").to_string();
                let reply = match path.as_str() {
                    "/reset" => return,
                    "/truncated" => "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 10000\r\n\r\n<p>the first twenty".to_string(),
                    "/slow" => {
                        tokio::time::sleep(std::time::Duration::from_secs(60)).await;
                        return;
                    }
                    "/loop" => "HTTP/1.1 302 Found\r\nLocation: /loop\r\nContent-Length: 0\r\n\r\n".to_string(),
                    _ => {
                        let body = "<title>OK</title><p>fine</p>";
                        format!("HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len())
                    }
                };
                let _ = sock.write_all(reply.as_bytes()).await;
            });
        }
    });
    base
}

#[sqlx::test(migrator = "store::MIGRATOR")]
async fn network_faults_end_every_episode_within_its_timeout(pool: PgPool) {
    let base = faulty().await;
    let (engine, _sites) = common::engine_observing(
        pool,
        vec![],
        engine::RunnerConfig::for_this_process(),
        |cfg| {
            cfg.contexts_per_browser = 8;
            cfg.navigation_timeout = std::time::Duration::from_secs(3);
        },
    )
    .await;
    let dns = "http://no-such-host.invalid/".to_string();
    let faults = [
        ("reset", format!("{base}/reset")),
        ("truncated", format!("{base}/truncated")),
        ("slow", format!("{base}/slow")),
        ("loop", format!("{base}/loop")),
        ("dns", dns.clone()),
    ];
    // The agent walks into each fault from a page that works; and each fault is a start
    // page too.
    for (name, url) in &faults {
        let go = format!("goto(\"{url}\")");
        task(
            &engine,
            &format!("to-{name}"),
            "Buy a mug.",
            format!("{base}/ok"),
            &[go.as_str(), "stop()"],
        )
        .await;
        task(
            &engine,
            &format!("at-{name}"),
            "Buy a mug.",
            url.clone(),
            &["stop()"],
        )
        .await;
    }
    let t0 = std::time::Instant::now();
    let id = engine
        .create_campaign(CampaignSpec {
            policy: Some("scripted".into()),
            tasks: Some(TaskFilter {
                site: Some("walls".into()),
                ..Default::default()
            }),
            max_attempts: Some(1),
            ..Default::default()
        })
        .await
        .unwrap();
    let status = tokio::time::timeout(std::time::Duration::from_secs(120), engine.run_campaign(id))
        .await
        .expect("no episode hangs")
        .unwrap();
    assert_eq!(status, store::Status::Completed);
    let (eps, _) = engine
        .store()
        .list_episodes(&EpisodeFilter::campaign(id), 100, 0)
        .await
        .unwrap();
    assert_eq!(eps.len(), 10);
    // What each fault is reported as; on a loaded machine a name lookup or twenty
    // redirects may also outlast the timeout, which is reported as such.
    let reported = |task: &str, error: &str| {
        let marker = match task.split_once('-').map(|(_, f)| f) {
            Some("reset") => "ERR_EMPTY_RESPONSE",
            Some("loop") => "ERR_TOO_MANY_REDIRECTS",
            Some("dns") => "ERR_NAME_NOT_RESOLVED",
            _ => "did not answer within 3s",
        };
        error.contains(marker) || error.contains("did not answer within 3s")
    };
    for e in &eps {
        let d = engine.store().get_episode(e.id).await.unwrap().unwrap();
        let t = e.task_id.as_str();
        if t.ends_with("truncated") {
            // A cut body renders what came: a page like any, the agent's to judge.
            assert_eq!(
                (e.success, e.last_error.as_deref()),
                (Some(false), None),
                "{t}"
            );
        } else if t.starts_with("to-") {
            // The agent's navigation failed; it saw why, and the episode went on.
            assert_eq!(e.success, Some(false), "{t}: {:?}", e.last_error);
            let error = d.steps[0].core.action_error.as_deref().unwrap_or("");
            assert!(reported(t, error), "{t}: {error}");
        } else {
            // A start page that never loads is the site's fault: not scored.
            assert_eq!(e.success, None, "{t}");
            let error = e.last_error.as_deref().unwrap_or("");
            assert!(
                error.starts_with("start_page") && reported(t, error),
                "{t}: {error}"
            );
        }
    }
    assert!(
        t0.elapsed() < std::time::Duration::from_secs(60),
        "{:?}",
        t0.elapsed()
    );
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
