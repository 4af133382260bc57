//! What an episode renders and records of its pages, with real Chromium, real Postgres and
//! the bundled practice sites: the screen it renders at (the campaign's, or its task's
//! own), the pages it passes through without an observation landing on them, and a task's
//! setup, which prepares the site but is no part of the episode.

use crate::common;

use browser_pool::Screen;
use common::{engine, engine_observing, wiki_easy};
use engine::RunnerConfig;
use engine::{CampaignSpec, Engine};
use sqlx::PgPool;
use store::{EpisodeFilter, EpisodeSummary, TaskFilter};

fn screen(width: u32, height: u32, device_scale: f64, screenshot_scale: f64) -> Screen {
    Screen {
        width,
        height,
        device_scale,
        screenshot_scale,
    }
}

/// Runs the easy wiki tasks with the scripted policy at `screen`: the campaign and its
/// episodes.
async fn run_wiki_easy_at(engine: &Engine, screen: Screen) -> (uuid::Uuid, Vec<EpisodeSummary>) {
    let id = engine
        .create_campaign(CampaignSpec {
            screen: Some(screen),
            ..wiki_easy("scripted")
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
    (id, eps)
}

/// A campaign that pins a screen gets it on a pool launched with another, and stores it
/// with its configuration; every stored screenshot has its size.
#[sqlx::test(migrator = "store::MIGRATOR")]
async fn a_campaign_renders_at_its_own_screen(pool: PgPool) {
    let (engine, _sites) = engine(pool, vec![]).await;
    let screen = screen(640, 400, 1.0, 0.5);
    let (id, eps) = run_wiki_easy_at(&engine, screen).await;
    let view = engine.store().get_campaign(id).await.unwrap().unwrap();
    assert_eq!(view.success_rate, Some(1.0));
    assert_eq!(
        view.config["screen"],
        serde_json::json!({"width": 640, "height": 400, "device_scale": 1.0, "screenshot_scale": 0.5})
    );
    let mut shots = 0;
    for e in &eps {
        let detail = engine.store().get_episode(e.id).await.unwrap().unwrap();
        assert_eq!(detail.screen, Some(screen), "the replay's coordinate frame");
        let card = detail
            .policy
            .clone()
            .expect("the episode records its policy");
        assert_eq!(
            (card.name.as_str(), card.backend.as_str()),
            ("scripted", "builtin")
        );
        let hashes = detail
            .steps
            .iter()
            .filter_map(|s| s.core.screenshot.clone());
        for hash in hashes.chain(detail.final_screenshot.clone()) {
            let (_, bytes) = engine.store().get_blob(&hash).await.unwrap().unwrap();
            let img = image::load_from_memory(&bytes).unwrap();
            assert_eq!((img.width(), img.height()), (320, 200), "episode {}", e.id);
            shots += 1;
        }
    }
    assert!(
        shots > eps.len(),
        "steps and final pages were checked: {shots}"
    );
    engine.shutdown().await;
}

/// A task made for a screen (as MiniWoB++'s tasks are) renders at it in any campaign, and
/// its episodes record it; the campaign's screen applies to the other tasks.
#[sqlx::test(migrator = "store::MIGRATOR")]
async fn a_task_renders_at_its_own_screen_whatever_the_campaign(pool: PgPool) {
    let (engine, _sites) = engine(pool, vec![]).await;
    let filter = wiki_easy("scripted").tasks.unwrap();
    let mut tasks = engine.store().load_tasks(&filter).await.unwrap();
    assert!(tasks.len() >= 2, "{} wiki tasks", tasks.len());
    let own = screen(400, 300, 2.0, 0.25);
    tasks[0].screen = Some(own);
    engine.store().upsert_task(&tasks[0]).await.unwrap();
    let special = tasks[0].id.to_string();
    let campaign = screen(640, 400, 1.0, 0.5);
    let (_, eps) = run_wiki_easy_at(&engine, campaign).await;
    assert_eq!(eps.len(), tasks.len());
    for e in &eps {
        assert_eq!(e.success, Some(true), "{}", e.task_id);
        let detail = engine.store().get_episode(e.id).await.unwrap().unwrap();
        // 400x300 CSS pixels at 2x, captured at a quarter: 200x150; the others 320x200.
        let (screen, size) = if e.task_id == special {
            (own, (200, 150))
        } else {
            (campaign, (320, 200))
        };
        assert_eq!(detail.screen, Some(screen), "{}", e.task_id);
        let hash = detail.steps[0].core.screenshot.clone().unwrap();
        let (_, bytes) = engine.store().get_blob(&hash).await.unwrap().unwrap();
        let img = image::load_from_memory(&bytes).unwrap();
        assert_eq!((img.width(), img.height()), size, "{}", e.task_id);
    }
    // The task keeps its screen through the store (its spec round-trips).
    let stored = engine.store().load_tasks(&filter).await.unwrap();
    assert_eq!(
        stored
            .iter()
            .find(|t| t.id.to_string() == special)
            .unwrap()
            .screen,
        Some(own)
    );
    engine.shutdown().await;
}

/// Serves fixed HTML pages on loopback; returns the base URL.
async fn serve_pages(pages: &[(&'static str, &'static str)]) -> String {
    let mut app = axum::Router::new();
    for &(path, body) in pages {
        app = app.route(
            path,
            axum::routing::get(move || async move { axum::response::Html(body) }),
        );
    }
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    base
}

/// Runs the `scripted` policy over the tasks `filter` picks and lists the episodes.
async fn run_scripted(engine: &Engine, filter: TaskFilter) -> Vec<EpisodeSummary> {
    let id = engine
        .create_campaign(CampaignSpec {
            policy: Some("scripted".into()),
            tasks: Some(filter),
            ..Default::default()
        })
        .await
        .unwrap();
    common::run_to_end(engine, id).await
}

/// The steps of an episode whose browsers read the accessibility tree (`--ax-tree`) store
/// the tree the policy was shown, its numbered elements marked as in the element list; the
/// steps of one whose browsers do not store none.
#[sqlx::test(migrator = "store::MIGRATOR")]
async fn a_step_stores_the_accessibility_tree_when_the_browsers_read_it(pool: PgPool) {
    let one_task = || TaskFilter {
        ids: vec!["wiki-aster-length".into()],
        ..Default::default()
    };
    let (on, _sites) = engine_observing(
        pool.clone(),
        vec![],
        RunnerConfig::for_this_process(),
        |c| c.accessibility_tree = true,
    )
    .await;
    let eps = run_scripted(&on, one_task()).await;
    assert_eq!(eps.len(), 1);
    let detail = on.store().get_episode(eps[0].id).await.unwrap().unwrap();
    assert!(detail.steps.len() >= 2, "{} steps", detail.steps.len());
    for step in &detail.steps {
        let tree = step
            .core
            .ax_tree
            .as_deref()
            .expect("recorded with the tree on");
        // Every numbered element the policy was shown is in the tree under its number.
        let elements = step.core.elements.as_array().unwrap();
        assert!(!elements.is_empty());
        for e in elements {
            let n = e["id"].as_u64().unwrap();
            assert!(
                tree.contains(&format!("[{n}] ")),
                "step {}: [{n}] in {tree}",
                step.idx
            );
        }
    }
    // The wiki's search box: its number in the list the policy was shown, its role, its
    // accessible name.
    let first = &detail.steps[0];
    let search = first.core.elements.as_array().unwrap().iter();
    let search = search
        .filter(|e| e["label"] == "Search Openpedia")
        .map(|e| e["id"].as_u64().unwrap())
        .next()
        .expect("the home page lists its search box");
    let line = format!("[{search}] searchbox \"Search Openpedia\"");
    let tree = first.core.ax_tree.as_deref().unwrap();
    assert!(tree.contains(&line), "{line} in {tree}");
    on.shutdown().await;

    let (off, _sites) = engine(pool, vec![]).await;
    let eps = run_scripted(&off, one_task()).await;
    let detail = off.store().get_episode(eps[0].id).await.unwrap().unwrap();
    assert!(!detail.steps.is_empty());
    assert!(
        detail.steps.iter().all(|s| s.core.ax_tree.is_none()),
        "not read: null"
    );
    off.shutdown().await;
}

/// A page the agent passed through without an observation landing on it (a client-side
/// redirect) counts as visited for URL checks over the whole episode (`"scope": "any"`).
#[sqlx::test(migrator = "store::MIGRATOR")]
async fn pages_passed_through_count_as_visited(pool: PgPool) {
    let base = serve_pages(&[
        (
            "/start.html",
            r#"<title>Start</title><a id="go" href="/hop.html">go</a>"#,
        ),
        (
            "/hop.html",
            r#"<title>Hop</title><script>location.replace('/end.html')</script>"#,
        ),
        ("/end.html", "<title>End</title><p>arrived</p>"),
    ])
    .await;

    let (engine, _sites) = engine(pool, vec![]).await;
    let task = tasks::parse_task(
        &serde_json::json!({
            "id": "redirect-hop", "site": "hop", "instruction": "Follow the link.",
            "start_url": format!("{base}/start.html"),
            "reference_solution": ["click(css=\"#go\")", "stop()"],
            "rubric": {"groups": [{"facts": [
                {"id": "hop", "check": {"type": "url", "contains": "/hop.html", "scope": "any"}},
                {"id": "end", "check": {"type": "url", "contains": "/end.html"}}]}]}
        })
        .to_string(),
    )
    .unwrap();
    engine.store().upsert_task(&task).await.unwrap();
    let eps = run_scripted(
        &engine,
        TaskFilter {
            ids: vec!["redirect-hop".into()],
            ..Default::default()
        },
    )
    .await;
    let detail = engine
        .store()
        .get_episode(eps[0].id)
        .await
        .unwrap()
        .unwrap();
    assert!(
        detail
            .steps
            .iter()
            .all(|s| !s.core.url.contains("/hop.html")),
        "no observation saw the hop"
    );
    let verdicts: Vec<(&str, Option<bool>)> = detail
        .verdicts
        .iter()
        .map(|v| (v.fact_id.as_str(), v.passed))
        .collect();
    assert_eq!(verdicts, [("hop", Some(true)), ("end", Some(true))]);
    assert_eq!(eps[0].success, Some(true));
    engine.shutdown().await;
}

/// A task's setup actions prepare the site in the episode's own browser context (here:
/// storage the start page reads), and are no part of the episode: no step, no page event,
/// no visited page. A setup action that fails ends the episode as an infrastructure
/// failure naming the action, never scored.
#[sqlx::test(migrator = "store::MIGRATOR")]
async fn a_setup_prepares_the_site_and_is_no_part_of_the_episode(pool: PgPool) {
    let base = serve_pages(&[
        (
            "/setup.html",
            r#"<title>Setup</title><script>localStorage.setItem('prepared', 'yes'); alert('welcome')</script>
<button id="mark" onclick="localStorage.setItem('clicked', 'yes')">Mark</button>"#,
        ),
        (
            "/start.html",
            r#"<title>Start</title><p id="state"></p><script>
document.getElementById('state').textContent = 'prepared=' + localStorage.getItem('prepared') + ' clicked=' + localStorage.getItem('clicked');
</script>"#,
        ),
    ])
    .await;

    let (engine, _sites) = engine(pool, vec![]).await;
    let task = |id: &str, click: &str| {
        tasks::parse_task(
            &serde_json::json!({
                "id": id, "site": "prepared", "instruction": "Read the state.",
                "start_url": format!("{base}/start.html"),
                "setup": {"type": "actions", "actions": [
                    format!("goto(\"{base}/setup.html\")"), format!("click(css=\"{click}\")")
                ]},
                "reference_solution": ["stop()"],
                "rubric": {"groups": [{"facts": [
                    {"id": "state", "check": {"type": "element", "selector": "#state",
                        "text": {"contains": "prepared=yes clicked=yes"}}},
                    {"id": "setup-seen", "check": {"type": "url", "contains": "/setup.html", "scope": "any"}}]}]}
            })
            .to_string(),
        )
        .unwrap()
    };
    for t in [
        task("prepared-ok", "#mark"),
        task("prepared-bad", "#missing"),
    ] {
        engine.store().upsert_task(&t).await.unwrap();
    }
    let eps = run_scripted(
        &engine,
        TaskFilter {
            site: Some("prepared".into()),
            ..Default::default()
        },
    )
    .await;
    assert_eq!(eps.len(), 2);

    let ok = eps.iter().find(|e| e.task_id == "prepared-ok").unwrap();
    let detail = engine.store().get_episode(ok.id).await.unwrap().unwrap();
    assert_eq!(detail.steps.len(), 1, "the setup's actions are not steps");
    assert!(detail.steps[0].core.url.ends_with("/start.html"));
    assert_eq!(
        detail.steps[0].core.events,
        serde_json::json!([]),
        "the setup page's dialog is not the episode's"
    );
    let verdicts: Vec<(&str, Option<bool>)> = detail
        .verdicts
        .iter()
        .map(|v| (v.fact_id.as_str(), v.passed))
        .collect();
    assert_eq!(
        verdicts,
        [("state", Some(true)), ("setup-seen", Some(false))],
        "prepared in the episode's context; the setup page was not visited by the agent"
    );

    let bad = eps.iter().find(|e| e.task_id == "prepared-bad").unwrap();
    assert_eq!(bad.status, store::EpisodeStatus::Failed);
    assert_eq!(bad.success, None, "a setup failure is never scored");
    let error = bad.last_error.clone().unwrap();
    assert!(
        error.contains("setup action 2 of 2") && error.contains("#missing"),
        "{error}"
    );
    engine.shutdown().await;
}

/// The replay lists what a page did under the step whose action made it do it (the start
/// page's own events under the first step), including the last action's, which no
/// observation followed; a `window.open` tab is listed with the page it loaded.
#[sqlx::test(migrator = "store::MIGRATOR")]
async fn page_events_are_listed_under_the_step_that_caused_them(pool: PgPool) {
    let base = serve_pages(&[
        (
            "/events.html",
            r#"<title>Events</title><script>alert('hello')</script>
<button id="a" onclick="alert('from a')">A</button>
<button id="pop" onclick="window.open('/other.html')">Pop</button>"#,
        ),
        ("/other.html", r#"<title>Other</title><p>other</p>"#),
    ])
    .await;
    let (engine, _sites) = engine(pool, vec![]).await;
    let task = tasks::parse_task(
        &serde_json::json!({
            "id": "events", "site": "events", "instruction": "Click A, then Pop.",
            "start_url": format!("{base}/events.html"),
            // The episode ends on the step limit right after the popup: no observation
            // follows the last action.
            "max_steps": 2,
            "reference_solution": ["click(css=\"#a\")", "click(css=\"#pop\")"],
            "rubric": {"groups": [{"facts": [
                {"check": {"type": "url", "contains": "/other.html"}}]}]}
        })
        .to_string(),
    )
    .unwrap();
    engine.store().upsert_task(&task).await.unwrap();
    let eps = run_scripted(
        &engine,
        TaskFilter {
            site: Some("events".into()),
            ..Default::default()
        },
    )
    .await;
    let detail = engine
        .store()
        .get_episode(eps[0].id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(detail.steps.len(), 2);
    let kinds = |i: usize| -> Vec<String> {
        detail.steps[i]
            .core
            .events
            .as_array()
            .unwrap()
            .iter()
            .map(|e| {
                format!(
                    "{} {}",
                    e["kind"].as_str().unwrap_or_default(),
                    e["message"]
                        .as_str()
                        .or(e["url"].as_str())
                        .unwrap_or_default()
                )
            })
            .collect()
    };
    assert_eq!(
        kinds(0),
        ["dialog hello", "dialog from a"],
        "the start page's alert, then the one step 0's click raised"
    );
    let step1 = kinds(1);
    assert_eq!(step1.len(), 1, "{step1:?}");
    assert!(
        step1[0].starts_with("tab_opened ") && step1[0].ends_with("/other.html"),
        "step 1's popup, with its URL: {step1:?}"
    );
    assert_eq!(eps[0].success, Some(true));
    engine.shutdown().await;
}

/// A selector that passes registration but that this browser rejects when the episode is
/// judged makes the episode a rubric error: stored finished, without success or score,
/// the reason named; the campaign's success rate leaves it out.
#[sqlx::test(migrator = "store::MIGRATOR")]
async fn a_selector_the_browser_rejects_is_a_judge_error_not_a_failure(pool: PgPool) {
    let base = serve_pages(&[("/plain.html", r#"<title>Plain</title><h1>Plain</h1>"#)]).await;
    let (engine, _sites) = engine(pool, vec![]).await;
    let task = tasks::parse_task(
        &serde_json::json!({
            "id": "rejected-selector", "site": "plain", "instruction": "Stop.",
            "start_url": format!("{base}/plain.html"),
            "reference_solution": ["stop()"],
            "rubric": {"groups": [{"facts": [
                {"id": "title", "check": {"type": "url", "contains": "/plain.html"}},
                // Vendor-prefixed names pass registration; Chromium knows no such one.
                {"id": "odd", "check": {"type": "element", "selector": "h1:-webkit-no-such-state", "exists": true}}]}]}
        })
        .to_string(),
    )
    .unwrap();
    engine.store().upsert_task(&task).await.unwrap();
    let eps = run_scripted(
        &engine,
        TaskFilter {
            site: Some("plain".into()),
            ..Default::default()
        },
    )
    .await;
    let e = &eps[0];
    assert_eq!(e.status, store::EpisodeStatus::Finished);
    assert_eq!((e.success, e.score), (None, None), "not scored");
    let error = e.judge_error.as_deref().unwrap_or_default();
    assert!(
        error.contains("fact `odd`") && error.contains("rejected the selector"),
        "{error}"
    );
    let view = engine
        .store()
        .get_campaign(e.campaign_id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!((view.judge_errors, view.success_rate), (1, None));
    engine.shutdown().await;
}
