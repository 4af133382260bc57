//! A short run executed by the server's executor, through the real web server, real
//! Postgres, real Chromium and the tiny-text model: its page shows the API's numbers,
//! plots whose points open the iteration's episodes (with the update's health and the
//! baselines on the same held-out episodes), and the run's strings as text.

use crate::common;
use crate::train_api::{
    ExecutingServer, call, executing_server, open_run_page, save_png, tiny_text, wait_for_state,
};

use std::time::{Duration, Instant};

use browser_pool::Action;
use serde_json::{Value, json};
use sqlx::PgPool;
use store::EpisodeFilter;

use common::js;

#[sqlx::test(migrator = "store::MIGRATOR")]
async fn a_run_created_over_the_api_is_executed_and_shown_with_its_curves(pool: PgPool) {
    let ExecutingServer {
        engine,
        executor,
        addr,
        sites: _sites,
        root: _root,
    } = executing_server(pool).await;
    let http = reqwest::Client::new();
    // A name that would be markup if the page did not treat it as text.
    let name = "tiny <img src=x onerror=\"document.title='owned'\"> & run";
    let cfg = json!({
        "name": name, "model": tiny_text(),
        "train": {"ids": ["miniwob.click-test", "miniwob.click-test-2"]},
        "held_out": "seeds", "iterations": 1, "rollouts_per_task": 2,
        "curriculum": {"kind": "fixed", "horizon": 2}, "eval_horizon": 2, "eval_rollouts": 2,
        // The solver demonstrates iteration 1, so its update has successes to clone and
        // every curve has a point whatever the untrained model does.
        "objective": "fbc", "fbc_iterations": 1, "demonstrator": "miniwob-solver",
        "policy": {"max_new_tokens": 16},
        // A KL penalty to the base and a guard no update crosses: the update reports how
        // far it moved.
        "regularization": {"kl": 0.001}, "guard": {"max_clipped": 1.0},
        "best_constant": true
    });
    let (status, created) = call(
        &http,
        "POST",
        &format!("http://{addr}/api/training-runs"),
        Some(&cfg),
    )
    .await;
    assert_eq!(status, 202, "{created}");
    let id: uuid::Uuid = created["id"].as_str().unwrap().parse().unwrap();
    // The page, in a real browser through the project's pool, opened while the run works:
    // it follows the run's events and re-renders itself until the run completes.
    let mut s = open_run_page(&engine, addr, id).await;
    assert_ne!(
        js(&s, "document.getElementById('run-state').textContent").await,
        json!("completed"),
        "opened before the end"
    );
    let deadline = Instant::now() + Duration::from_secs(240);
    while js(&s, "document.getElementById('run-state').textContent").await != json!("completed") {
        let state = engine.store().get_run(id).await.unwrap().unwrap().state;
        assert!(state != store::Status::Failed, "the run failed");
        assert!(
            Instant::now() < deadline,
            "the page never showed the run complete ({state})"
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    let state = wait_for_state(engine.store(), id, Duration::from_secs(10)).await;
    let (_, run) = call(
        &http,
        "GET",
        &format!("http://{addr}/api/training-runs/{id}"),
        None,
    )
    .await;
    assert_eq!(state, store::Status::Completed, "{run}");
    executor.abort();
    let iterations = run["iterations"].as_array().unwrap();
    assert_eq!(iterations.len(), 2, "iteration 0 (untrained) and 1");
    assert!(iterations.iter().all(|i| i["phase"] == json!("done")));
    let update = &iterations[1]["report"]["update"];
    assert!(update["health"]["kl_ref"].as_f64().is_some(), "{update}");
    assert_eq!(update["guard"]["accepted"], json!(true), "{update}");
    assert_eq!(run["curve"].as_array().unwrap().len(), 2);
    assert_eq!(run["active_campaigns"], json!([]));

    // What the live page shows now (no reload: the script swapped it in) is the API's.
    assert_eq!(
        js(&s, "document.getElementById('run-name').textContent").await,
        json!(name),
        "the name is text"
    );
    assert_eq!(
        js(&s, "document.querySelectorAll('main img').length").await,
        json!(0)
    );
    assert_ne!(js(&s, "document.title").await, json!("owned"));
    assert!(
        js(&s, "document.getElementById('run-config').textContent")
            .await
            .as_str()
            .unwrap()
            .contains("onerror"),
        "the config is shown, as text"
    );
    for it in iterations {
        let idx = it["idx"].as_i64().unwrap();
        let cell = |class: &str| {
            format!(
                "document.querySelector('#iterations tr[data-iteration=\"{idx}\"] td.{class}').textContent"
            )
        };
        let want = |v: &Value| {
            v.as_f64()
                .map_or("–".to_string(), |v| format!("{:.1}%", v * 100.0))
        };
        assert_eq!(
            js(&s, &cell("held-out")).await,
            json!(want(&it["eval_success"]))
        );
        assert_eq!(
            js(&s, &cell("train")).await,
            json!(want(&it["train_success"]))
        );
    }
    assert_eq!(
        js(&s, "document.querySelectorAll('#curves svg').length").await,
        json!(6),
        "success by iteration and by steps, loss, horizons, samples, update health"
    );
    let curves = js(&s, "document.querySelector('#curves').textContent").await;
    let curves = curves.as_str().unwrap();
    assert!(
        curves.contains("KL to reference"),
        "the update's health is plotted"
    );
    // The random policy on the same held-out episodes, evaluated once, is a level line.
    assert!(
        run["baselines"]["random"].as_f64().is_some(),
        "{}",
        run["baselines"]
    );
    assert!(
        curves.contains("random policy (same held-out episodes)"),
        "{curves}"
    );
    // And the best constant action per task, among the first actions the untrained model
    // and the random policy took on it, each tried on the task's held-out episodes.
    let best = &iterations[0]["report"]["baselines"]["best_constant"];
    assert!(
        run["baselines"]["best_constant"].as_f64().is_some(),
        "{best}"
    );
    let per_task = best["per_task"].as_object().unwrap();
    assert_eq!(per_task.len(), 2, "{best}");
    for (task, b) in per_task {
        assert!(
            b["action"].as_str().is_some() && b["episodes"] == json!(2),
            "{task}: {b}"
        );
    }
    let candidates = best["candidates"].as_object().unwrap();
    assert_eq!(candidates.len(), 2, "{best}");
    assert!(
        candidates
            .values()
            .all(|c| !c.as_array().unwrap().is_empty()),
        "{best}"
    );
    assert!(curves.contains("best constant action per task"), "{curves}");
    // Each held-out point links to its iteration's evaluation episodes.
    let evals: Vec<String> = iterations
        .iter()
        .map(|i| format!("/#/campaigns/{}", i["eval_campaign"].as_str().unwrap()))
        .collect();
    let links = js(
        &s,
        "[...document.querySelectorAll('#curves figure:first-child a.point')].map(a => a.getAttribute('href'))",
    )
    .await;
    for e in &evals {
        assert!(links.as_array().unwrap().contains(&json!(e)), "{links}");
    }
    let png = s.screenshot().await.unwrap();
    save_png(&png.bytes, "training-run.png");

    // Clicking the last held-out point opens that campaign's episodes.
    js(
        &s,
        &format!("document.querySelector('#curves a.point[href=\"{}\"]').dispatchEvent(new MouseEvent('click', {{bubbles: true}})), true", evals[1]),
    )
    .await;
    let eval1 = iterations[1]["eval_campaign"].as_str().unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        // The page is navigating: a check may land between documents.
        let text = s
            .evaluate(
                "location.hash + ' ' + ((document.body && document.body.dataset.ready) || '')",
            )
            .await
            .ok()
            .and_then(Result::ok);
        if text == Some(json!(format!("#/campaigns/{eval1} 1"))) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the point did not open its campaign: {text:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    // Version against version: every held-out episode of both, linked to its replay.
    let (eps0, n0) = engine
        .store()
        .list_episodes(
            &EpisodeFilter::campaign(
                iterations[0]["eval_campaign"]
                    .as_str()
                    .unwrap()
                    .parse()
                    .unwrap(),
            ),
            1000,
            0,
        )
        .await
        .unwrap();
    let r = s
        .act(&Action::Goto(format!(
            "http://{addr}/training-runs/{id}/compare?a=0&b=1"
        )))
        .await
        .unwrap();
    assert_eq!(r.error, None);
    assert_eq!(
        js(&s, "document.querySelectorAll('#compare a.replay').length").await,
        json!(2 * n0)
    );
    let first = js(
        &s,
        "document.querySelector('#compare a.replay').getAttribute('href')",
    )
    .await;
    assert!(
        eps0.iter()
            .any(|e| first == json!(format!("/#/episodes/{}", e.id))),
        "{first}"
    );
    let png = s.screenshot().await.unwrap();
    save_png(&png.bytes, "training-compare.png");
}
