//! The campaign analysis views (per-task table and breakdowns, episode search, plots,
//! compare) over a real, freshly migrated Postgres database, with campaigns whose
//! outcomes are known because the test stores them: the API's numbers and its 400s, and
//! the pages in real Chromium (through the project's pool) showing the API's numbers,
//! plots whose bars open their episodes, search that narrows the table, compare listing
//! the differing tasks first, and every string from tasks, pages and models as text.
//! Screenshots of each page are saved under the test target's `artifacts/`.

// The root package's test set-up: one copy for every crate's end-to-end tests.
use crate::analysis_fixture as fixture;
use crate::common;
use crate::support;

use std::time::{Duration, Instant};

use axum::http::{Method, StatusCode};
use browser_pool::{Action, Session};
use policy::PolicyRegistry;
use serde_json::{Value, json};
use sqlx::PgPool;
use store::Store;
use uuid::Uuid;

use common::{js, serve_web};
use fixture::{HOSTILE_INSTRUCTION, HOSTILE_THOUGHT, fixture};
use support::{call, error_fields};

async fn get(app: &axum::Router, uri: &str) -> (StatusCode, Value) {
    call(app, Method::GET, uri, None).await
}

async fn get_ok(app: &axum::Router, uri: &str) -> Value {
    let (s, v) = get(app, uri).await;
    assert_eq!(s, StatusCode::OK, "{uri}: {v}");
    v
}

fn row<'v>(tasks: &'v Value, id: &str) -> &'v Value {
    tasks
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["task_id"] == id)
        .unwrap_or_else(|| panic!("no row for {id} in {tasks}"))
}

fn ids(items: &Value, key: &str) -> Vec<String> {
    items
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t[key].as_str().unwrap().to_string())
        .collect()
}

#[sqlx::test(migrator = "store::MIGRATOR")]
async fn the_analysis_api_aggregates_searches_and_compares(pool: PgPool) {
    let store = Store::from_pool(pool.clone());
    let (a, b) = fixture(&store).await;
    let app = support::app(pool);

    // Per task across its rollouts, pass@k with k = rollouts per task by default.
    let an = get_ok(&app, &format!("/api/campaigns/{a}/analysis")).await;
    assert_eq!(an["k"], 4);
    let easy = row(&an["tasks"], "easy-a");
    assert_eq!(
        (&easy["episodes"], &easy["successes"], &easy["judged"]),
        (&json!(4), &json!(3), &json!(4))
    );
    assert_eq!(easy["success_rate"], 0.75);
    assert_eq!(easy["pass_at_k"], 1.0);
    assert_eq!(easy["mean_steps"], 2.75);
    assert_eq!(easy["end_reason"], "answered");
    assert_eq!(easy["tags"], json!(["alpha"]));
    let hard = row(&an["tasks"], "hard-c");
    assert_eq!(hard["success_rate"], 0.0);
    assert_eq!(hard["pass_at_k"], 0.0);
    assert_eq!(hard["end_reason"], "max_steps");
    assert_eq!(hard["mean_score"], 0.25);
    // The unbiased estimator: 1 - C(3,2)/C(4,2) = 0.5 for one success in four.
    let k2 = get_ok(&app, &format!("/api/campaigns/{a}/analysis?k=2")).await;
    let med = row(&k2["tasks"], "med-b");
    assert!(
        (med["pass_at_k"].as_f64().unwrap() - 0.5).abs() < 1e-9,
        "{med}"
    );
    assert_eq!(row(&k2["tasks"], "easy-a")["pass_at_k"], 1.0);
    // k above the rollouts: no estimate.
    let k9 = get_ok(&app, &format!("/api/campaigns/{a}/analysis?k=9")).await;
    assert_eq!(row(&k9["tasks"], "easy-a")["pass_at_k"], Value::Null);

    // Breakdowns: difficulty in its own order, a tag counts each task carrying it.
    let by = &an["breakdown"];
    assert_eq!(ids(&by["difficulty"], "key"), ["easy", "medium", "hard"]);
    let alpha = by["tag"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["key"] == "alpha")
        .unwrap();
    assert_eq!(
        (&alpha["tasks"], &alpha["episodes"], &alpha["successes"]),
        (&json!(2), &json!(8), &json!(4))
    );
    assert_eq!(ids(&by["site"], "key"), ["blog", "shop"]);
    assert_eq!(by["split"][1]["key"], "train");
    assert_eq!(by["split"][1]["episodes"], 8);

    // Sorted and filtered.
    let sorted = get_ok(
        &app,
        &format!("/api/campaigns/{a}/analysis?sort=success_rate&order=desc"),
    )
    .await;
    assert_eq!(
        ids(&sorted["tasks"], "task_id"),
        ["easy-a", "med-b", "hard-c"]
    );
    let blog = get_ok(&app, &format!("/api/campaigns/{a}/analysis?site=blog")).await;
    assert_eq!(ids(&blog["tasks"], "task_id"), ["hard-c"]);
    let beta = get_ok(
        &app,
        &format!("/api/campaigns/{a}/analysis?tag=beta&split=train"),
    )
    .await;
    assert_eq!(ids(&beta["tasks"], "task_id"), ["hard-c"]);

    // The episode table: searched (any case, LIKE's wildcards as plain text), sorted, paged.
    let eps = |q: &str| {
        let app = app.clone();
        let uri = format!("/api/campaigns/{a}/episodes{q}");
        async move { get_ok(&app, &uri).await }
    };
    assert_eq!(eps("").await["total"], 12);
    let needle = eps("?q=needle").await;
    assert_eq!(needle["total"], 2, "{needle}");
    assert!(
        needle["items"]
            .as_array()
            .unwrap()
            .iter()
            .all(|e| e["task_id"] == "easy-a")
    );
    assert_eq!(eps("?q=100%25").await["total"], 1);
    assert_eq!(
        eps("?q=%25").await["total"],
        1,
        "% is a character, not a wildcard"
    );
    assert_eq!(
        eps("?q=find%20the%20post").await["total"],
        4,
        "the instruction is searched"
    );
    assert_eq!(
        eps("?q=8701%2Fdone").await["total"],
        12,
        "the final URL is searched"
    );
    let by_steps = eps("?sort=steps&order=desc&limit=5").await;
    let steps: Vec<i64> = by_steps["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["step_count"].as_i64().unwrap())
        .collect();
    assert_eq!(steps, [6, 6, 6, 6, 6]);
    let mut seen = Vec::new();
    for offset in [0, 5, 10] {
        let page = eps(&format!("?sort=success&limit=5&offset={offset}")).await;
        seen.extend(ids(&page["items"], "id"));
    }
    seen.sort();
    seen.dedup();
    assert_eq!(seen.len(), 12, "pages neither repeat nor skip");
    assert_eq!(eps("?success=true&difficulty=easy").await["total"], 3);
    assert_eq!(eps("?end_reason=stopped").await["total"], 1);
    assert_eq!(eps("?steps_min=2&steps_max=2").await["total"], 2);
    assert_eq!(eps("?phase=act&ms_min=500&ms_max=1000").await["total"], 12);
    assert_eq!(eps("?phase=policy&ms_min=1000").await["total"], 0);
    assert_eq!(eps("?phase=judge&ms_min=10&ms_max=25").await["total"], 12);

    // Plots: counts that add up to the campaign.
    let plots = get_ok(&app, &format!("/api/campaigns/{a}/plots?buckets=5")).await;
    let tl = plots["timeline"].as_array().unwrap();
    assert_eq!(tl.len(), 5);
    let sum = |k: &str| tl.iter().map(|b| b[k].as_i64().unwrap()).sum::<i64>();
    assert_eq!((sum("finished"), sum("successes")), (12, 4));
    // Each time slice's link (finished in [from, to)) finds exactly its episodes.
    for bucket in tl {
        let at = |k: &str| bucket[k].as_str().unwrap().replace(':', "%3A");
        let found = eps(&format!(
            "?status=finished&from={}&to={}",
            at("from"),
            at("to")
        ))
        .await;
        assert_eq!(found["total"], bucket["finished"], "{bucket}");
    }
    let total_steps: i64 = [2, 2, 3, 4, 5, 6, 6, 6, 6, 6, 6, 6].iter().sum();
    let lat = plots["latency"].as_array().unwrap();
    assert_eq!(
        ids(&plots["latency"], "phase"),
        ["observe", "policy", "act", "judge"]
    );
    assert_eq!(lat[0]["count"], total_steps);
    assert_eq!(lat[0]["p50_ms"], 30.0);
    assert_eq!(lat[2]["p95_ms"], 600.0);
    assert_eq!(lat[3]["count"], 12);
    let act_bins = lat[2]["bins"].as_array().unwrap();
    let full = act_bins
        .iter()
        .find(|b| b["count"].as_i64().unwrap() > 0)
        .unwrap();
    assert_eq!(
        (&full["lo_ms"], &full["hi_ms"]),
        (&json!(500), &json!(1000))
    );
    let hist = plots["steps"].as_array().unwrap();
    assert_eq!(
        hist.iter()
            .map(|b| b["episodes"].as_i64().unwrap())
            .sum::<i64>(),
        12
    );
    assert_eq!(hist[0], json!({"steps": 2, "episodes": 2, "successes": 2}));
    assert_eq!(plots["difficulty"][0]["success_rate"], 0.75);

    // Compare: the tasks exactly one campaign solves first.
    let cmp = get_ok(&app, &format!("/api/compare?a={a}&b={b}")).await;
    assert_eq!(
        cmp["counts"],
        json!({"tasks": 3, "only_a": 1, "only_b": 1, "both": 1, "neither": 0})
    );
    let order = ids(&cmp["tasks"]["items"], "task_id");
    assert_eq!(order[2], "med-b", "{cmp}");
    assert_eq!(
        cmp["tasks"]["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["differs"].as_bool().unwrap())
            .collect::<Vec<_>>(),
        [true, true, false]
    );

    // Bad parameters: 400s naming them; unknown campaigns: 404.
    for (uri, field) in [
        (format!("/api/campaigns/{a}/analysis?k=0"), "k"),
        (format!("/api/campaigns/{a}/analysis?k=two"), "k"),
        (
            format!("/api/campaigns/{a}/analysis?sort=name;drop"),
            "sort",
        ),
        (format!("/api/campaigns/{a}/analysis?order=up"), "order"),
        (
            format!("/api/campaigns/{a}/analysis?difficulty=extreme"),
            "difficulty",
        ),
        (format!("/api/campaigns/{a}/analysis?split=dev"), "split"),
        (format!("/api/campaigns/{a}/analysis?nope=1"), "nope"),
        (format!("/api/campaigns/{a}/episodes?sort=e.id"), "sort"),
        (
            format!("/api/campaigns/{a}/episodes?success=yes"),
            "success",
        ),
        (format!("/api/campaigns/{a}/episodes?status=done"), "status"),
        (
            format!("/api/campaigns/{a}/episodes?end_reason=bored"),
            "end_reason",
        ),
        (
            format!("/api/campaigns/{a}/episodes?steps_min=-1"),
            "steps_min",
        ),
        (
            format!("/api/campaigns/{a}/episodes?steps_min=5&steps_max=2"),
            "steps_max",
        ),
        (
            format!("/api/campaigns/{a}/episodes?from=yesterday"),
            "from",
        ),
        (
            format!(
                "/api/campaigns/{a}/episodes?from=2026-01-02T00:00:00Z&to=2026-01-01T00:00:00Z"
            ),
            "to",
        ),
        (format!("/api/campaigns/{a}/episodes?ms_min=5"), "phase"),
        (format!("/api/campaigns/{a}/episodes?phase=think"), "phase"),
        (
            format!("/api/campaigns/{a}/episodes?phase=act&ms_min=9&ms_max=3"),
            "ms_max",
        ),
        (format!("/api/campaigns/{a}/episodes?limit=501"), "limit"),
        (format!("/api/campaigns/{a}/episodes?offset=-1"), "offset"),
        (
            format!("/api/campaigns/{a}/episodes?offset=9223372036854775807"),
            "offset",
        ),
        (
            format!("/api/campaigns/{a}/episodes?q={}", "x".repeat(501)),
            "q",
        ),
        (format!("/api/campaigns/{a}/plots?buckets=0"), "buckets"),
        ("/api/campaigns/not-a-uuid/analysis".into(), "id"),
        ("/api/campaigns/not-a-uuid/episodes".into(), "id"),
        ("/api/campaigns/not-a-uuid/plots".into(), "id"),
        (format!("/api/compare?a={a}"), "a"),
        (format!("/api/compare?a={a}&b=nope"), "b"),
        (format!("/api/compare?a={a}&b={b}&limit=0"), "limit"),
        (format!("/campaigns/{a}/episodes?sort=bogus"), "sort"),
    ] {
        let (s, body) = get(&app, &uri).await;
        assert_eq!(s, StatusCode::BAD_REQUEST, "{uri}: {body}");
        assert_eq!(error_fields(&body), [field], "{uri}: {body}");
    }
    let missing = Uuid::new_v4();
    for uri in [
        format!("/api/campaigns/{missing}/analysis"),
        format!("/api/campaigns/{missing}/episodes"),
        format!("/api/campaigns/{missing}/plots"),
        format!("/api/compare?a={a}&b={missing}"),
    ] {
        assert_eq!(get(&app, &uri).await.0, StatusCode::NOT_FOUND, "{uri}");
    }
    // Two rollouts side by side must be of one task.
    let e_a = ids(&eps("?task=easy-a").await["items"], "id");
    let e_b = ids(&eps("?task=med-b").await["items"], "id");
    let (s, body) = get(
        &app,
        &format!("/compare/episodes?a={}&b={}", e_a[0], e_b[0]),
    )
    .await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    assert_eq!(error_fields(&body), ["b"]);
}

fn artifact(name: &str) -> std::path::PathBuf {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("artifacts");
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

async fn save_png(s: &Session, name: &str) {
    let png = s.screenshot().await.unwrap();
    image::load_from_memory(&png.bytes)
        .unwrap()
        .save(artifact(name))
        .unwrap();
}

async fn goto(s: &mut Session, url: &str) {
    let r = s.act(&Action::Goto(url.to_string())).await.unwrap();
    assert_eq!(r.error, None, "{url}");
    assert_eq!(
        js(s, "typeof window.__xss").await,
        json!("undefined"),
        "{url}: no injected script ran"
    );
}

/// Waits until `expr` is true (the page may be navigating meanwhile).
async fn wait_for(s: &Session, expr: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Ok(Ok(v)) = s.evaluate(expr).await
            && v == json!(true)
        {
            return;
        }
        assert!(Instant::now() < deadline, "never true: {expr}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn text_of(rows: &Value) -> Vec<String> {
    serde_json::from_value(rows.clone()).unwrap()
}

#[sqlx::test(migrator = "store::MIGRATOR")]
async fn the_analysis_pages_show_the_apis_numbers_in_a_browser(pool: PgPool) {
    let store = Store::from_pool(pool.clone());
    let (a, b) = fixture(&store).await;
    let app = support::app(pool.clone());
    let engine = common::new_engine(pool, PolicyRegistry::builtin());
    let addr = serve_web(&engine).await;
    let base = format!("http://{addr}");
    let mut s = engine.pool().await.unwrap().lease().await.unwrap();

    // Tasks: each row's numbers are the API's.
    let api = get_ok(
        &app,
        &format!("/api/campaigns/{a}/analysis?sort=success_rate&order=desc"),
    )
    .await;
    goto(
        &mut s,
        &format!("{base}/campaigns/{a}/analysis?sort=success_rate&order=desc"),
    )
    .await;
    let rows = js(
        &s,
        "[...document.querySelectorAll('#tasks tbody tr')].map(r => [r.dataset.task,
            r.querySelector('.success').textContent, r.querySelector('.pass-at-k').textContent,
            r.querySelector('.mean-steps').textContent, r.querySelector('.end-reason').textContent])",
    )
    .await;
    let want: Vec<Value> = api["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            json!([
                t["task_id"],
                format!(
                    "{:.1}% ({}/{})",
                    t["success_rate"].as_f64().unwrap() * 100.0,
                    t["successes"],
                    t["judged"]
                ),
                format!("{:.1}%", t["pass_at_k"].as_f64().unwrap() * 100.0),
                format!("{:.1}", t["mean_steps"].as_f64().unwrap()),
                t["end_reason"]
            ])
        })
        .collect();
    assert_eq!(rows, json!(want));
    assert_eq!(
        js(
            &s,
            "document.querySelector('#by-tag tr[data-key=alpha] .rate').textContent"
        )
        .await,
        json!("50.0% (4/8)")
    );
    // Strings from tasks and campaigns are text, not markup.
    assert_eq!(
        js(&s, "document.getElementById('campaign-name').textContent").await,
        json!("<i>campaign A</i>")
    );
    assert_eq!(
        js(
            &s,
            "document.querySelectorAll('main i, main u, main img').length"
        )
        .await,
        json!(0)
    );
    // A column header sorts the other way.
    js(
        &s,
        "document.querySelector('#tasks th a[data-sort=success_rate]').click()",
    )
    .await;
    wait_for(
        &s,
        "location.search.includes('order=asc') && document.readyState === 'complete'",
    )
    .await;
    assert_eq!(
        js(
            &s,
            "[...document.querySelectorAll('#tasks tbody tr')].map(r => r.dataset.task)"
        )
        .await,
        json!(["hard-c", "med-b", "easy-a"])
    );
    save_png(&s, "analysis-tasks.png").await;

    // Episodes: searching narrows the table to what the API finds.
    goto(&mut s, &format!("{base}/campaigns/{a}/episodes")).await;
    assert_eq!(
        js(&s, "document.getElementById('episodes-total').textContent").await,
        json!("12")
    );
    js(
        &s,
        "document.getElementById('q').value = 'NEEDLE'; document.getElementById('episode-search').requestSubmit(); true",
    )
    .await;
    wait_for(
        &s,
        "location.search.includes('q=NEEDLE') && document.readyState === 'complete'",
    )
    .await;
    let found = get_ok(&app, &format!("/api/campaigns/{a}/episodes?q=NEEDLE")).await;
    assert_eq!(
        js(&s, "document.getElementById('episodes-total').textContent").await,
        json!(found["total"].to_string())
    );
    let shown = text_of(
        &js(
            &s,
            "[...document.querySelectorAll('#episodes tbody tr')].map(r => r.dataset.id)",
        )
        .await,
    );
    let mut want = ids(&found["items"], "id");
    let mut shown_sorted = shown.clone();
    want.sort();
    shown_sorted.sort();
    assert_eq!(shown_sorted, want);
    assert!(shown.len() < 12);
    assert_eq!(
        js(
            &s,
            "document.body.innerText.includes('<script>window.__xss=2</script>needle')"
        )
        .await,
        json!(true),
        "the answer is shown as text"
    );
    save_png(&s, "analysis-episodes.png").await;

    // Plots: present, and each bar opens the episodes it counts.
    goto(&mut s, &format!("{base}/campaigns/{a}/plots")).await;
    assert!(
        js(
            &s,
            "document.querySelectorAll('#outcome-plots svg rect.bar').length"
        )
        .await
        .as_u64()
        .unwrap()
            >= 6
    );
    assert!(
        js(
            &s,
            "document.querySelectorAll('#time-plots svg circle.dot').length"
        )
        .await
        .as_u64()
        .unwrap()
            >= 1
    );
    assert_eq!(
        js(&s, "document.querySelectorAll('#latency-plots svg').length").await,
        json!(4)
    );
    let plots = get_ok(&app, &format!("/api/campaigns/{a}/plots")).await;
    for (i, phase) in ["observe", "policy", "act", "judge"].iter().enumerate() {
        let l = &plots["latency"][i];
        let cells = js(
            &s,
            &format!(
                "[...document.querySelectorAll('#latency tr[data-phase={phase}] td')].map(td => td.textContent)"
            ),
        )
        .await;
        let want = json!([
            phase,
            l["count"].to_string(),
            format!("{:.0}", l["mean_ms"].as_f64().unwrap()),
            format!("{:.0}", l["p25_ms"].as_f64().unwrap()),
            format!("{:.0}", l["p50_ms"].as_f64().unwrap()),
            format!("{:.0}", l["p75_ms"].as_f64().unwrap()),
            format!("{:.0}", l["p95_ms"].as_f64().unwrap()),
            l["max_ms"].to_string(),
        ]);
        assert_eq!(cells, want, "{phase}");
    }
    assert_eq!(
        js(
            &s,
            "document.querySelector('#latency tr[data-phase=observe] .p50').textContent"
        )
        .await,
        json!("30")
    );
    // One bar per histogram bin and per step count, one per difficulty.
    assert_eq!(
        js(
            &s,
            "document.querySelectorAll('#outcome-plots svg')[0].querySelectorAll('rect.bar').length"
        )
        .await,
        json!(plots["steps"].as_array().unwrap().len())
    );
    let bar_links = text_of(&js(&s, "[...document.querySelectorAll('#outcome-plots a.bar-link')].map(a => a.getAttribute('href'))").await);
    assert!(
        bar_links
            .iter()
            .all(|h| h.starts_with(&format!("/campaigns/{a}/episodes?"))),
        "{bar_links:?}"
    );
    let point_links = js(
        &s,
        "[...document.querySelectorAll('#time-plots a.point')].length",
    )
    .await;
    assert!(point_links.as_u64().unwrap() >= 1);
    save_png(&s, "analysis-plots.png").await;
    // The first bar of the steps histogram: the episodes that took 2 steps.
    goto(&mut s, &format!("{base}{}", bar_links[0])).await;
    let two = get_ok(
        &app,
        &format!("/api/campaigns/{a}/episodes?status=finished&steps_min=2&steps_max=2"),
    )
    .await;
    assert_eq!(
        js(&s, "document.getElementById('episodes-total').textContent").await,
        json!(two["total"].to_string())
    );
    assert_eq!(
        js(&s, "[...document.querySelectorAll('#episodes td.steps')].every(td => td.textContent === '2')").await,
        json!(true)
    );

    // Compare: the differing tasks first, with the API's numbers.
    let cmp = get_ok(&app, &format!("/api/compare?a={a}&b={b}")).await;
    goto(&mut s, &format!("{base}/compare?a={a}&b={b}")).await;
    let rows = js(&s, "[...document.querySelectorAll('#compare tbody tr')].map(r => [r.dataset.task, r.className])").await;
    let want: Vec<Value> = cmp["tasks"]["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            json!([
                t["task_id"],
                if t["differs"] == true {
                    "differs"
                } else {
                    "same"
                }
            ])
        })
        .collect();
    assert_eq!(rows, json!(want));
    assert_eq!(rows[0][1], "differs");
    assert_eq!(rows[1][1], "differs");
    assert_eq!(rows[2][1], "same");
    for key in ["only_a", "only_b", "both", "neither"] {
        let id = key.replace('_', "-");
        assert_eq!(
            js(&s, &format!("document.getElementById('{id}').textContent")).await,
            json!(cmp["counts"][key].to_string()),
            "{key}"
        );
    }
    assert_eq!(
        js(&s, "document.getElementById('only-a').textContent").await,
        json!("1")
    );
    save_png(&s, "analysis-compare.png").await;

    // Two rollouts of easy-a side by side, step-aligned: A took 2 steps, B 3.
    js(
        &s,
        "document.querySelector('#compare tr[data-task=easy-a] a.pair').click(); true",
    )
    .await;
    wait_for(
        &s,
        "location.pathname === '/compare/episodes' && document.readyState === 'complete'",
    )
    .await;
    assert_eq!(
        js(&s, "document.querySelectorAll('#pair tbody tr').length").await,
        json!(3)
    );
    assert_eq!(
        js(&s, "document.querySelectorAll('#pair td.ended').length").await,
        json!(1)
    );
    assert_eq!(
        js(&s, "document.getElementById('instruction').textContent").await,
        json!(HOSTILE_INSTRUCTION)
    );
    assert_eq!(
        js(&s, "document.querySelector('#pair .thought').textContent").await,
        json!(HOSTILE_THOUGHT)
    );
    assert_eq!(
        js(
            &s,
            "document.querySelectorAll('main img:not(.shot), main b').length"
        )
        .await,
        json!(0)
    );
    assert_eq!(js(&s, "typeof window.__xss").await, json!("undefined"));
    save_png(&s, "analysis-pair.png").await;
    // Any other rollout of the task on either side: B's rollout 2 (3 steps, stopped).
    let chosen = js(
        &s,
        "const sel = document.querySelector('#pair-form select[name=b]');
         sel.selectedIndex = 2; document.getElementById('pair-form').requestSubmit(); sel.value",
    )
    .await;
    // The new page: its address names the chosen episode, its form has it selected.
    wait_for(
        &s,
        &format!(
            "location.search.includes({chosen}) && document.readyState === 'complete' \
             && document.querySelector('#pair-form select[name=b]').value === {chosen}"
        ),
    )
    .await;
    assert_eq!(
        js(
            &s,
            "document.querySelectorAll('#pair-form select[name=a] option').length"
        )
        .await,
        json!(4)
    );
    assert_eq!(
        js(&s, "document.querySelectorAll('#pair tbody tr').length").await,
        json!(3)
    );

    // The campaign's page in the dashboard links to the analysis.
    common::open_dashboard(&mut s, &format!("{base}/#/campaigns/{a}")).await;
    assert_eq!(
        js(
            &s,
            "document.getElementById('btn-analysis').getAttribute('href')"
        )
        .await,
        json!(format!("/campaigns/{a}/analysis"))
    );
    s.close().await;
    engine.shutdown().await;
}
