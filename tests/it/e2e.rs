//! End to end across every crate, with real Chromium, a real Postgres server and the
//! bundled practice sites: the scripted policy solves every bundled task, the rows of a
//! campaign add up, the dashboard's replay page shows the episode in a real browser (and
//! it and the triage escape what pages and tasks wrote), and the random policy scores
//! clearly lower. (That the agent that does nothing fails every bundled task is
//! `rewards.rs`: the audit judges each task's start page.)

use crate::common;

use std::time::Duration;

use browser_pool::Action;
use common::{js, open_dashboard, serve_web};
use engine::SitesServer;
use engine::{CampaignSpec, Engine};
use policy::PolicyRegistry;
use serde_json::json;
use sqlx::PgPool;
use store::{EpisodeFilter, TaskFilter};
use uuid::Uuid;

async fn setup(pool: PgPool) -> (Engine, SitesServer, usize) {
    let (engine, sites, report) = common::engine_with_sites(pool, PolicyRegistry::builtin()).await;
    assert!(report.errors.is_empty(), "{:?}", report.errors);
    (engine, sites, report.registered)
}

fn artifact(name: &str) -> std::path::PathBuf {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("artifacts");
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

#[sqlx::test(migrator = "store::MIGRATOR")]
async fn scripted_solves_every_bundled_task_and_the_replay_shows_it(pool: PgPool) {
    let (engine, _sites, registered) = setup(pool).await;
    assert!(registered >= 30, "{registered} bundled tasks");
    let store = engine.store().clone();

    let id = engine
        .create_campaign(CampaignSpec {
            policy: Some("scripted".into()),
            max_steps: Some(60),
            // Half-size screenshots: the page lays out as usual, the panel shows the screen.
            screen: Some(browser_pool::Screen {
                width: 1280,
                height: 720,
                device_scale: 1.0,
                screenshot_scale: 0.5,
            }),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(
        engine.run_campaign(id).await.unwrap(),
        store::Status::Completed
    );
    let view = store.get_campaign(id).await.unwrap().unwrap();
    let (episodes, _) = store
        .list_episodes(&EpisodeFilter::campaign(id), 1000, 0)
        .await
        .unwrap();
    let mut failed = Vec::new();
    for e in episodes.iter().filter(|e| e.success != Some(true)) {
        // What each step saw and did, and which facts failed: enough to tell a flaky page
        // from a broken solution.
        let d = store.get_episode(e.id).await.unwrap().unwrap();
        let steps: Vec<String> = d
            .steps
            .iter()
            .map(|s| {
                format!(
                    "{} @ {} {:?}",
                    s.core.action, s.core.url, s.core.action_error
                )
            })
            .collect();
        let facts: Vec<&str> = d
            .verdicts
            .iter()
            .filter(|v| v.passed != Some(true))
            .map(|v| v.fact_id.as_str())
            .collect();
        failed.push(format!(
            "{} ({:?}, {:?}): failed facts {facts:?}; steps {steps:#?}",
            e.task_id, e.end_reason, e.last_error
        ));
    }
    assert!(
        failed.is_empty(),
        "reference solutions that fail:\n{}",
        failed.join("\n")
    );
    assert_eq!(view.total_episodes as usize, registered);
    assert_eq!(view.success_rate, Some(1.0));

    // The rows add up: one episode per task, one step per reference action (plus the stop
    // that ends a solution without answer/stop), a screenshot per step, a verdict per fact.
    let tasks = store.load_tasks(&TaskFilter::default()).await.unwrap();
    let mut want_steps = 0i64;
    let mut want_verdicts = 0i64;
    for t in &tasks {
        let ends = t.reference_solution.last().is_some_and(Action::is_terminal);
        let steps = t.reference_solution.len() as i64 + i64::from(!ends);
        let ep = episodes
            .iter()
            .find(|e| e.task_id == t.id.as_str())
            .unwrap();
        assert_eq!(i64::from(ep.steps), steps, "{}", t.id);
        want_steps += steps;
        want_verdicts += t.rubric.fact_count() as i64;
    }
    let (n_eps, n_steps, n_shots, n_verdicts) = store.campaign_row_counts(id).await.unwrap();
    assert_eq!(
        (n_eps, n_steps, n_verdicts),
        (tasks.len() as i64, want_steps, want_verdicts)
    );
    assert!(
        n_shots > tasks.len() as i64 && n_shots <= n_steps,
        "{n_shots} distinct screenshots"
    );
    let (null_shots,): (i64,) =
        sqlx::query_as("SELECT count(*) FROM steps WHERE screenshot IS NULL")
            .fetch_one(store.pool())
            .await
            .unwrap();
    assert_eq!(null_shots, 0);

    // The replay of the longest episode, in a real browser through our own pool.
    let longest = episodes.iter().max_by_key(|e| e.steps).unwrap();
    let detail = store.get_episode(longest.id).await.unwrap().unwrap();
    let addr = serve_web(&engine).await;
    let mut s = engine.pool().await.unwrap().lease().await.unwrap();
    open_dashboard(&mut s, &format!("http://{addr}/#/episodes/{}", longest.id)).await;
    assert_eq!(
        js(&s, "document.querySelectorAll('#steps li.step').length").await,
        json!(detail.steps.len())
    );
    assert_eq!(
        js(
            &s,
            "document.querySelectorAll('#verdicts tr.verdict.pass').length"
        )
        .await,
        json!(detail.verdicts.len())
    );
    assert_eq!(
        js(
            &s,
            "document.querySelectorAll('#verdicts tr.verdict.fail').length"
        )
        .await,
        json!(0)
    );
    let instruction = js(&s, "document.getElementById('instruction').textContent").await;
    assert!(
        instruction.as_str().unwrap().contains(&detail.instruction),
        "{instruction}"
    );
    let shot = "new Promise(r => { const i = document.getElementById('shot'); \
        const done = () => r(i.naturalWidth); if (i.complete) done(); else { i.onload = done; i.onerror = () => r(0); } })";
    assert_eq!(
        js(&s, shot).await,
        json!(640),
        "the step's screenshot loaded from /api/blobs, at the campaign's half scale"
    );
    assert_eq!(
        js(&s, "document.getElementById('episode-screen').textContent").await,
        json!("1280×720, screenshots at 0.5"),
        "the replay names the screen its episode rendered at"
    );
    assert_eq!(
        js(&s, "document.getElementById('episode-policy').textContent").await,
        json!("scripted"),
        "and the policy that ran it"
    );
    let first_clicks = detail.steps[0].click_x.is_some();
    assert_eq!(
        js(&s, "!!document.getElementById('click-marker')").await,
        json!(first_clicks)
    );
    let action = js(&s, "document.getElementById('action').textContent").await;
    assert!(
        action
            .as_str()
            .unwrap()
            .contains(&detail.steps[0].core.action),
        "{action}"
    );
    let png = s.observe().await.unwrap().screenshot.bytes;
    std::fs::write(artifact("replay.jpg"), png).unwrap();

    // The campaign page lists every episode.
    open_dashboard(&mut s, &format!("http://{addr}/#/campaigns/{id}")).await;
    let rows = js(&s, "document.body.innerText").await;
    assert!(rows.as_str().unwrap().contains(&longest.task_id));
    let config = js(&s, "document.getElementById('campaign-config').innerText").await;
    assert!(
        config
            .as_str()
            .unwrap()
            .contains("1280×720, screenshots at 0.5"),
        "{config}"
    );
    assert!(
        config
            .as_str()
            .unwrap()
            .contains(&format!("scripted ({})", episodes.len())),
        "the policy its episodes ran under: {config}"
    );
    assert_eq!(
        js(&s, "!!document.getElementById('campaign-mixed-policies')").await,
        json!(false),
        "one policy: no warning"
    );
    // An episode run under another model (a worker with another checkpoint behind the
    // same policy name): the page warns that the campaign's data mixes policies.
    sqlx::query(
        "UPDATE episodes SET policy = jsonb_set(policy, '{model}', '\"other\"') WHERE id = $1",
    )
    .bind(longest.id)
    .execute(store.pool())
    .await
    .unwrap();
    // A new document (the query differs), not the same page's hash again.
    open_dashboard(&mut s, &format!("http://{addr}/?again#/campaigns/{id}")).await;
    let warning = js(
        &s,
        "(document.getElementById('campaign-mixed-policies') || {}).innerText || ''",
    )
    .await;
    assert!(
        warning.as_str().unwrap().contains("2 different policies"),
        "{warning}"
    );
    // Its export link downloads every finished episode, a JSON line each.
    let exported = js(
        &s,
        "fetch(document.getElementById('btn-export').href).then(r => r.text())
            .then(t => t.trim().split('\\n').map(l => JSON.parse(l).id))",
    )
    .await;
    let finished: Vec<String> = episodes
        .iter()
        .filter(|e| e.status == store::EpisodeStatus::Finished)
        .map(|e| e.id.to_string())
        .collect();
    let mut exported: Vec<String> = serde_json::from_value(exported).unwrap();
    exported.sort();
    let mut want = finished.clone();
    want.sort();
    assert_eq!(exported, want);
    s.close().await;
    engine.shutdown().await;
}

#[sqlx::test(migrator = "store::MIGRATOR")]
async fn page_and_task_strings_are_escaped_in_the_replay(pool: PgPool) {
    let (engine, sites, _) = setup(pool).await;
    let hostile = r#"<img src=x onerror="window.__xss=1">Find <b>it</b> & "quote""#;
    let task = json!({
        "id": "hostile", "instruction": hostile, "start_url": format!("{}/", sites.bases()["shop"]),
        "rubric": {"groups": [{"facts": [{"description": "<script>window.__xss=2</script>",
            "check": {"type": "page_text", "contains": "<b>not there</b>"}}]}]},
        "reference_solution": ["answer(\"<img src=y onerror=window.__xss=3>\")"]
    });
    engine
        .store()
        .insert_task(&tasks::parse_task(&task.to_string()).unwrap())
        .await
        .unwrap();
    let id = engine
        .create_campaign(CampaignSpec {
            policy: Some("scripted".into()),
            tasks: Some(TaskFilter {
                ids: vec!["hostile".into()],
                ..Default::default()
            }),
            ..Default::default()
        })
        .await
        .unwrap();
    engine.run_campaign(id).await.unwrap();
    let (eps, _) = engine
        .store()
        .list_episodes(&EpisodeFilter::campaign(id), 10, 0)
        .await
        .unwrap();
    let addr = serve_web(&engine).await;
    let mut s = engine.pool().await.unwrap().lease().await.unwrap();
    open_dashboard(&mut s, &format!("http://{addr}/#/episodes/{}", eps[0].id)).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        js(&s, "typeof window.__xss").await,
        json!("undefined"),
        "no injected script ran"
    );
    assert_eq!(
        js(
            &s,
            "document.getElementById('instruction').textContent.includes('<img src=x')"
        )
        .await,
        json!(true)
    );
    assert_eq!(
        js(
            &s,
            "document.querySelectorAll('#instruction img, #instruction b').length"
        )
        .await,
        json!(0)
    );
    assert_eq!(
        js(
            &s,
            "document.body.innerText.includes('<script>window.__xss=2</script>')"
        )
        .await,
        json!(true)
    );
    assert_eq!(
        js(
            &s,
            "document.body.innerText.includes('<img src=y onerror=window.__xss=3>')"
        )
        .await,
        json!(true)
    );
    // The triage lists the failing fact by its description, as text too.
    let r = s.act(&Action::Goto("about:blank".into())).await.unwrap();
    assert_eq!(r.error, None);
    open_dashboard(&mut s, &format!("http://{addr}/#/triage?campaign={id}")).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(js(&s, "typeof window.__xss").await, json!("undefined"));
    assert_eq!(
        js(
            &s,
            "document.querySelector('#failing-facts .c-description').textContent"
        )
        .await,
        json!("<script>window.__xss=2</script>")
    );
    assert_eq!(
        js(
            &s,
            "document.querySelectorAll('#triage-body script, #triage-body img').length"
        )
        .await,
        json!(0)
    );
    // The analysis views (tasks, episode search, plots, compare, two rollouts side by
    // side) show the same strings as text.
    let e = eps[0].id;
    for (view, shows) in [
        (format!("/campaigns/{id}/analysis"), "hostile"),
        (
            format!("/campaigns/{id}/episodes?q=onerror"),
            "<img src=y onerror=window.__xss=3>",
        ),
        (format!("/campaigns/{id}/plots"), "Steps per episode"),
        (format!("/compare?a={id}&b={id}"), "hostile"),
        (
            format!("/compare/episodes?a={e}&b={e}"),
            "<img src=x onerror",
        ),
    ] {
        let r = s
            .act(&Action::Goto(format!("http://{addr}{view}")))
            .await
            .unwrap();
        assert_eq!(r.error, None, "{view}");
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert_eq!(
            js(&s, "typeof window.__xss").await,
            json!("undefined"),
            "{view}"
        );
        assert_eq!(
            js(
                &s,
                "document.querySelectorAll('main img:not(.shot), main b, main script').length"
            )
            .await,
            json!(0),
            "{view}"
        );
        let has = format!("document.body.innerText.includes({})", json!(shows));
        assert_eq!(js(&s, &has).await, json!(true), "{view} shows {shows}");
    }
    s.close().await;
    engine.shutdown().await;
}

#[sqlx::test(migrator = "store::MIGRATOR")]
async fn random_policy_scores_clearly_lower(pool: PgPool) {
    let (engine, _sites, registered) = setup(pool).await;
    let id: Uuid = engine
        .create_campaign(CampaignSpec {
            policy: Some("random".into()),
            // Enough steps to end episodes in different ways (a random stop, 9% a step,
            // ends about one in four); more only cost CI time.
            max_steps: Some(3),
            seed: Some(1),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(
        engine.run_campaign(id).await.unwrap(),
        store::Status::Completed
    );
    let view = engine.store().get_campaign(id).await.unwrap().unwrap();
    assert_eq!(
        view.counts.finished as usize, registered,
        "every episode ran and was judged"
    );
    let rate = view.success_rate.unwrap();
    assert!(
        rate <= 0.25,
        "random succeeds on {:.0}% of tasks",
        rate * 100.0
    );
    assert!(
        view.mean_score.unwrap() < 0.6,
        "random's mean partial credit {:?}",
        view.mean_score
    );
    let (eps, _) = engine
        .store()
        .list_episodes(&EpisodeFilter::campaign(id), 1000, 0)
        .await
        .unwrap();
    let distinct_actions: std::collections::HashSet<_> =
        eps.iter().map(|e| e.end_reason.clone()).collect();
    assert!(
        distinct_actions.len() >= 2,
        "random episodes end in different ways: {distinct_actions:?}"
    );
    engine.shutdown().await;
}
